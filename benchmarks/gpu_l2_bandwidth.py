"""On a real NVIDIA GPU: read and copy bandwidth by buffer size in CUDA graphs (L2 and HBM).

``memory_eager`` in the probe times these ops one launch at a time, so buffers that L2 holds
are launch-bound there. Here each op runs back to back in a CUDA graph, the probe's way
(:func:`archsim.measure.probe.time_in_graph`), so a buffer L2 keeps across calls streams at
L2 speed: ``torch.sum`` over an FP32 buffer (bytes read) and ``y.copy_(x)`` (bytes read +
written), sizes 1 MB to 1 GB; ``l2_bandwidth.csv`` with the NVML clock of each row.

Usage (on the GPU machine)::

    python benchmarks/gpu_l2_bandwidth.py -o DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
from gpu_common import log, script_parser

from archsim.measure.loader import load_backend
from archsim.measure.probe import time_in_graph

SIZES_MB = (1, 2, 4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 256, 1024)


def main() -> int:
    ap = script_parser(__doc__)
    args = ap.parse_args()
    b = load_backend(args.backend)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for mb in SIZES_MB:
        n = mb << 20
        for op, make, moved in (("read", b.read, n), ("copy", b.copy, 2 * n)):
            t = time_in_graph(b, make(n))
            b.release()
            if t is None:
                continue
            rows.append({"op": op, "size_bytes": n, "bytes_moved": moved, "time_s": t.time_s,
                         "min_s": t.min_s, "GBps": moved / t.time_s / 1e9,
                         "sm_mhz": t.sm_mhz})  # fmt: skip
            log(f"{op} {mb} MB: {t.time_s * 1e6:.2f} us, {moved / t.time_s / 1e9:.0f} GB/s")
            pd.DataFrame(rows).to_csv(out / "l2_bandwidth.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
