"""On a real NVIDIA GPU: NVML energy of sustained GEMMs by size, and of device copies by size.

Each entry is :func:`archsim.measure.probe.measure_energy` around ~4 s of back-to-back calls
(joules per call, mean watts, the clock read halfway), so a mid-size GEMM's board power and
clock are read in the steady state rather than from a 0.1 s window. Writes ``energy_sizes.json``
in the shape of ``device_memory_energy.json``'s ``energy`` block.

Usage (on the GPU machine)::

    python benchmarks/gpu_energy_sizes.py -o DIR [--gemms fp16:1536,bf16:2048] [--seconds 4]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from archsim.measure.loader import load_backend
from archsim.measure.plan import FULL
from archsim.measure.probe import energy_readings


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument(
        "--gemms",
        default="fp16:1024,fp16:2048,fp16:3072,fp16:4096",
        help="precision:size of each square GEMM (default: fp16 1024-4096)",
    )
    ap.add_argument("--no-4gb-copy", action="store_true", help="skip the 4 GB copy")
    args = ap.parse_args()
    b = load_backend("torch")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gemms = tuple((g.split(":")[0], int(g.split(":")[1]), False) for g in args.gemms.split(","))
    plan = replace(FULL, energy_gemms=gemms, energy_copy_mb=1024, energy_seconds=args.seconds)
    energy = energy_readings(b, plan, progress)  # the GEMMs, a 1 GB copy, idle watts
    if not args.no_4gb_copy:
        copy_4gb = energy_readings(b, replace(plan, energy_gemms=(), energy_copy_mb=4096), progress)
        energy["hbm_copy_4096MB"] = copy_4gb["hbm_copy_4096MB"]
    doc = {"device": b.device_info(), "energy": energy}
    (out / "energy_sizes.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
