"""On a real NVIDIA GPU: NVML energy of sustained GEMMs by size, and of device copies by size.

Each entry is :func:`archsim.measure.probe.measure_energy` around ~4 s of back-to-back calls
(joules per call, mean watts, the clock read halfway), so a mid-size GEMM's board power and
clock are read in the steady state rather than from a 0.1 s window. Writes ``energy_sizes.json``
in the shape of ``device_memory_energy.json``'s ``energy`` block.

Usage (on the GPU machine)::

    python benchmarks/gpu_energy_sizes.py -o DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from archsim.measure.loader import load_backend
from archsim.measure.plan import square_gemm
from archsim.measure.probe import measure_energy


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    b = load_backend("torch")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc: dict = {"device": b.device_info(), "energy": {}}
    cases = [(f"gemm_fp16_{s}", square_gemm(s, "fp16")) for s in (1024, 2048, 3072, 4096)]
    for key, shape in cases:
        e = measure_energy(b, b.gemm(shape), args.seconds)
        b.release()
        e["flops_per_call"] = shape.flops
        e["pj_per_flop"] = e["joules_per_call"] / shape.flops * 1e12
        doc["energy"][key] = e
        us = e["seconds"] / e["calls"] * 1e6
        mhz = e["smi_mid"][0]["clocks.sm"]
        print(f"{key}: {e['watts']:.0f} W, {mhz} MHz, {us:.2f} us/call", file=sys.stderr)
    for mb in (1024, 4096):
        e = measure_energy(b, b.copy(mb << 20), args.seconds)
        b.release()
        e["bytes_per_call"] = 2 * (mb << 20)
        e["pj_per_byte"] = e["joules_per_call"] / e["bytes_per_call"] * 1e12
        doc["energy"][f"hbm_copy_{mb}MB"] = e
        print(f"copy {mb} MB: {e['watts']:.0f} W, {e['pj_per_byte']:.1f} pJ/B", file=sys.stderr)
    b.sleep(2.0)
    doc["energy"]["idle_watts"] = sum(b.telemetry()[1] for _ in range(3)) / 3
    (out / "energy_sizes.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
