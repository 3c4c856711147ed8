#!/usr/bin/env bash
# The prepared GPU checks for one `device` call (issues 16 and 20), the most wanted first, each
# under its own timeout inside one overall budget, so a slow step cannot starve the others.
# Everything lands in one archive, $OUT/session.tar.gz, with $OUT/session.log beside it (the
# tool brings back at most 8 files).
#
#   1. gap    gpu_cupti_gap.py: does a profiler session add the ~0.4 us per call that makes the
#             model 8-10 % fast on the random GEMM sets? (RESULTS.md, thirty-sixth session)
#   2. train  gpu_train_step.py --trace at batch 256: every kernel of one AMP and one TF32
#             ResNet-50 step with its phase: where the ~10 ms the model's step lacks goes
#             (RESULTS.md, thirty-eighth session)
#   3. beta   gpu_beta_epilogue.py: what reading C costs, and output-bound GEMMs' store rate
#   4. probe  archsim probe gpu --quick: a held-out check of the model on this part; on an H200
#             hold it against h100 with the H200's memory (README, `validate --measured --set`)
#             and against benchmarks/predictions/h200_probe_quick.csv, written before it ran
#   5. groups gpu_conv_random.py --nets alexnet: AlexNet's convs with their kernels: which kernel
#             cuDNN runs for the grouped conv2 at batch 32, where it takes 2x the model's time
#             on both cards (issue 16, the forty-first session's note)
#   6. convs  gpu_conv_random.py --benchmark-limit 0: the random convs with every cuDNN engine
#             timed, to tell which of the model's misses are cuDNN's heuristics
#
# Here, once (the device image has PyTorch, numba and pandas but not simpy, pydantic or
# platformdirs, and can download nothing):
#   python3 -m pip download --dest .wheels --only-binary=:all: --python-version 3.12 \
#       --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 simpy pydantic platformdirs
#   echo /.wheels/ >> .git/info/exclude
# then one device call: command "bash benchmarks/gpu_session.sh", carry [".wheels"],
# timeout_s 590 (BUDGET_S, default 540, bounds the steps).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_session_out}
W=$(mktemp -d)
START=$(date +%s)
BUDGET=${BUDGET_S:-540}

log() { echo "[$(date -u +%T)] $*" | tee -a "$W/session.log"; }
left() { echo $((BUDGET - ($(date +%s) - START))); }
step() { # step NAME SECONDS COMMAND...: run COMMAND for at most SECONDS (less if the budget is)
  local name=$1 secs=$2 l
  shift 2
  l=$(left)
  if [ "$l" -lt 20 ]; then
    log "skip $name: ${l} s of the budget left"
    return
  fi
  if [ "$secs" -gt "$l" ]; then secs=$l; fi
  log "start $name (at most ${secs} s): $*"
  PYTHONUNBUFFERED=1 timeout "$secs" "$@" >"$W/$name.log" 2>&1
  log "end $name: exit $?"
}

export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if [ -d .wheels ]; then
  python3 -m pip install --quiet --no-index --find-links .wheels simpy pydantic platformdirs \
    >>"$W/session.log" 2>&1
fi
python3 -c "import archsim, torch; print('archsim', archsim.__version__, 'torch', torch.__version__,
      torch.cuda.get_device_name())" >>"$W/session.log" 2>&1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv >>"$W/session.log" 2>&1

step gap 100 python3 benchmarks/gpu_cupti_gap.py -o "$W/gap"
step train 150 python3 benchmarks/gpu_train_step.py -o "$W/train" --batches 256 --trace
step beta 120 python3 benchmarks/gpu_beta_epilogue.py -o "$W/beta"
step probe 60 python3 -m archsim probe gpu --quick -o "$W/probe_quick"
step groups 45 python3 benchmarks/gpu_conv_random.py -o "$W/alexnet_kernels" \
  --from-folder benchmarks/measured/h100_2026-11-27 --nets alexnet --budget-s 35
step convs 150 python3 benchmarks/gpu_conv_random.py -o "$W/convs_limit0" \
  --from-folder benchmarks/measured/h100_2026-11-27/random_convs --benchmark-limit 0

mkdir -p "$OUT"
tar -czf "$OUT/session.tar.gz" -C "$W" .
cp "$W/session.log" "$OUT/session.log"
log "wrote $OUT/session.tar.gz"
