#!/usr/bin/env bash
# First `archsim run --from-scalesim` into an empty numba cache (the systolic kernels' cold
# compile): an older archsim against the installed one, alternating, whole processes, from a
# temporary folder; wall (CPU) seconds, and whether results.csv / COMPUTE_REPORT.csv match.
#
#   PY=/path/to/venv/bin/python OLD=/tmp/oldpkg CASE=gemm256_os_32x32_user ROUNDS=3 \
#     bash benchmarks/scalesim_cold_ab.sh
set -euo pipefail
PY=${PY:-python3}
OLD=${OLD:?set OLD to a folder holding an older archsim (pip install --no-deps --target)}
CASE=${CASE:-gemm256_os_32x32_user}
ROUNDS=${ROUNDS:-3}
FIX=$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/scalesim
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
t() {
  /usr/bin/time -f "%e %U %S" -o "$WORK/time" "$@" >/dev/null 2>&1
  awk '{ printf "%.2f (%.2f)", $1, $2 + $3 }' "$WORK/time"
}
args=(run --from-scalesim "$FIX/$CASE.cfg" "$FIX/$CASE.csv" -q --no-report)
for i in $(seq "$ROUNDS"); do
  rm -rf "$WORK"/nb-o "$WORK"/nb-n "$WORK"/o "$WORK"/n
  o=$(t env NUMBA_CACHE_DIR="$WORK/nb-o" PYTHONPATH="$OLD" "$PY" -m archsim "${args[@]}" -o "$WORK/o")
  n=$(t env NUMBA_CACHE_DIR="$WORK/nb-n" "$PY" -m archsim "${args[@]}" -o "$WORK/n")
  same=identical
  for f in results.csv COMPUTE_REPORT.csv; do cmp -s "$WORK/o/$f" "$WORK/n/$f" || same=DIFFERENT; done
  echo "round $i $CASE: cold old $o new $n | $same | load $(cut -d' ' -f1 /proc/loadavg)"
done
