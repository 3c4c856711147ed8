"""The H100 model against every measured conv whose input channels break the tensor-op rule.

Reads each ``conv_*.csv`` of the given measurement folders (recursively), keeps the rows whose
C is not a multiple of ``conv_library.tensor_op_channel_alignment_elements`` (C = 3 image
inputs), simulates each at its measured clock (``sm_mhz``; the model's when absent) and prints
one line per row (measured and simulated us, signed error, the kernel family the model ran)
and the median / p90 of |error| (p90 as ``np.percentile``, like ``validation.measured``).

Usage::

    python benchmarks/gpu_narrow_convs.py ../shared/data/h100 benchmarks/measured/h100_2026-11-27
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

import numpy as np

import archsim
from archsim.config.workload import ConvLayer

FIELDS = ("c", "k", "h", "w", "r", "s", "stride", "pad", "groups")


def rows(folders: list[Path], align: int) -> list[tuple[str, dict[str, str]]]:
    out = []
    for folder in folders:
        for path in sorted(folder.rglob("conv_*.csv")):
            with path.open() as f:
                for r in csv.DictReader(f):
                    if int(r["c"]) % align:
                        out.append((str(path.relative_to(folder.parent)), r))
    return out


def simulate(hw: archsim.GpuConfig, r: dict[str, str]) -> tuple[float, str]:
    dims = {k: int(r[k]) for k in FIELDS}
    layer = ConvLayer(kind="conv", name=r["layer"], n=int(r["batch"]), **dims)
    wl = archsim.WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "x", "source": "t", "layers": [layer.model_dump()]}
    )
    if r.get("sm_mhz"):
        hw = hw.with_overrides({"power.locked_clock_hz": float(r["sm_mhz"]) * 1e6})
    got = archsim.simulate(hw, wl).to_dataframe().iloc[0]
    return float(got["time_s"]), str(got.get("tc_kernel_family"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--hardware", default="h100")
    args = ap.parse_args()
    hw = archsim.load_hardware(args.hardware)
    errs = []
    for where, r in rows(args.folders, hw.conv_library.tensor_op_channel_alignment_elements):
        sim, family = simulate(hw, r)
        meas = float(r["time_s"])
        errs.append(abs(sim / meas - 1))
        shape = f"n={r['batch']} C={r['c']} K={r['k']} {r['h']}px {r['r']}x{r['s']}/{r['stride']}"
        print(f"{where:48.48s} {r['layer']:14.14s} {shape:34s} {meas * 1e6:8.1f} {sim * 1e6:8.1f} "
              f"{sim / meas - 1:+7.1%}  {family}")  # fmt: skip
    p90 = float(np.percentile(errs, 90))  # as archsim.validation.measured.error_stats
    print(f"{len(errs)} rows: median |error| {statistics.median(errs):.1%}, p90 {p90:.1%}")


if __name__ == "__main__":
    main()
