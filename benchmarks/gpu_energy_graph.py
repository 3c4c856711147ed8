"""On a real NVIDIA GPU: NVML energy of square GEMMs replayed back to back in a CUDA graph.

``gpu_energy_sizes.py`` (and the probe's ``energy`` block) launch calls one by one, so a GEMM
shorter than the host's launch interval (~20 us) runs at a fraction of the duty it has in the
probe's CUDA-graph timings. Here each GEMM is captured as the probe captures it (n calls per
replay, one replay >= 20 ms) and replayed for ``--seconds`` after 2 s of idle: joules and time
per call, mean watts, the NVML clock read halfway, and the time per call of the first and last
replays (``energy_graph.csv``).

Usage (on the GPU machine)::

    python benchmarks/gpu_energy_graph.py -o DIR [--gemms fp16:1536,bf16:1536] [--seconds 3]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pandas as pd
from gpu_common import log, script_parser

from archsim.measure.loader import load_backend
from archsim.measure.plan import square_gemm
from archsim.measure.probe import calls_per_replay


def main() -> int:
    ap = script_parser(__doc__)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--gemms", default="fp16:1024,fp16:1536,bf16:1536,fp8:1536")
    args = ap.parse_args()
    b = load_backend(args.backend)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for item in args.gemms.split(","):
        precision, size = item.split(":")
        shape = square_gemm(int(size), precision)
        op = b.gemm(shape)
        b.round_trip(op)
        calls = calls_per_replay(b.round_trip(op))
        replay = b.graph(op, calls)
        calls = calls_per_replay(replay() / calls)
        replay = b.graph(op, calls)
        b.sleep(2.0)
        e0, t0, times, mid = b.energy_j(), b.now(), [], None
        while b.now() - t0 < args.seconds:
            times.append(replay())
            if mid is None and b.now() - t0 >= args.seconds / 2:
                mid = b.telemetry()
        seconds, joules = b.now() - t0, b.energy_j() - e0
        n = calls * len(times)
        rows.append({"precision": precision, "size": int(size), "calls": n,
                     "seconds": seconds, "joules_per_call": joules / n, "watts": joules / seconds,
                     "time_per_call_s": statistics.median(times) / calls,
                     "first_replay_per_call_s": times[0] / calls,
                     "last_replay_per_call_s": times[-1] / calls,
                     "sm_mhz_mid": mid[0] if mid else None,
                     "board_w_mid": mid[1] if mid else None})  # fmt: skip
        r = rows[-1]
        first, last = r["first_replay_per_call_s"] * 1e6, r["last_replay_per_call_s"] * 1e6
        log(f"{item}: {r['watts']:.0f} W, {r['time_per_call_s'] * 1e6:.2f} us per call (first "
            f"{first:.2f}, last {last:.2f}), NVML {r['sm_mhz_mid']} MHz")  # fmt: skip
        pd.DataFrame(rows).to_csv(out / "energy_graph.csv", index=False)
        b.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
