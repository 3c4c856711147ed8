#!/usr/bin/env bash
# First `archsim run` (empty numba cache), warm run and `--no-report` run: an older archsim
# against the installed one, alternating, whole processes, from /tmp; wall (CPU) seconds.
#
#   git archive <old-commit> | tar -x -C /tmp/old-src
#   pip install --no-deps --target /tmp/oldpkg /tmp/old-src
#   PY=/path/to/venv/bin/python OLD=/tmp/oldpkg ROUNDS=3 bash benchmarks/first_run_ab.sh
#
# Use a venv made as the README says (`pip install .`): the test extra brings SciPy, which numba
# imports on its first dispatch (0.5-0.9 s more per process).
set -euo pipefail
PY=${PY:-python3}
OLD=${OLD:?set OLD to a folder holding an older archsim (pip install --no-deps --target)}
ROUNDS=${ROUNDS:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
# wall seconds, and CPU seconds (user + sys) in parentheses: on a shared machine the CPU time
# moves much less with the load than the wall time does
t() {
  /usr/bin/time -f "%e %U %S" -o "$WORK/time" "$@" >/dev/null 2>&1
  awk '{ printf "%.2f (%.2f)", $1, $2 + $3 }' "$WORK/time"
}
run() {  # run TREE(old|new) CACHE OUT [extra args]
  local tree=$1 cache=$2 out=$3; shift 3
  if [ "$tree" = old ]; then
    t env NUMBA_CACHE_DIR="$cache" PYTHONPATH="$OLD" "$PY" -m archsim run -q -o "$out" "$@"
  else
    t env NUMBA_CACHE_DIR="$cache" "$PY" -m archsim run -q -o "$out" "$@"
  fi
  rm -rf "$out"
}
for i in $(seq "$ROUNDS"); do
  rm -rf "$WORK"/nb-old "$WORK"/nb-new
  oc=$(run old "$WORK/nb-old" "$WORK/o"); nc=$(run new "$WORK/nb-new" "$WORK/n")
  ow=$(run old "$WORK/nb-old" "$WORK/o"); nw=$(run new "$WORK/nb-new" "$WORK/n")
  onr=$(run old "$WORK/nb-old" "$WORK/o" --no-report); nnr=$(run new "$WORK/nb-new" "$WORK/n" --no-report)
  echo "round $i: cold old $oc new $nc | warm old $ow new $nw | --no-report old $onr new $nnr | load $(cut -d' ' -f1 /proc/loadavg)"
done
