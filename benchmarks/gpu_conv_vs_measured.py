"""Measured H100 cuDNN conv layers vs archsim's conv algorithm choice, per layer.

Reads ``conv_alexnet.csv`` (or any CSV of the same columns) from the measured H100 folder,
simulates each row on the ``h100`` preset at the row's measured SM clock (``sm_mhz``) and prints
measured vs simulated time, the chosen algorithm with its main kernel family and CTA tile, and
median / p90 |error|.

    python benchmarks/gpu_conv_vs_measured.py [--data ../shared/data/h100] [--hw h100]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

import archsim
from archsim.accelerators.gpu_conv import best_conv, candidate_runs
from archsim.config.workload import ConvLayer

_HERE = Path(__file__).resolve().parent


def rows(data: Path) -> list[dict[str, str]]:
    """Every conv_*.csv row of the measurement folder."""
    out: list[dict[str, str]] = []
    for path in sorted(data.glob("conv_*.csv")):
        with path.open(newline="") as fh:
            out += list(csv.DictReader(fh))
    return out


def layer_of(row: dict[str, str]) -> ConvLayer:
    """The measured conv as a workload layer (no densities: a GPU computes dense)."""
    ints = {f: int(row[f]) for f in ("c", "k", "h", "w", "r", "s", "stride", "pad", "groups")}
    return ConvLayer(
        kind="conv", name=f"{row['net']}.{row['layer']}", n=int(row["batch"]),
        precision=row["precision"], **ints,  # type: ignore[arg-type]
    )  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=_HERE.parent.parent / "shared/data/h100")
    ap.add_argument("--hw", default="h100")
    args = ap.parse_args()
    hw = archsim.load_hardware(args.hw)
    errs = []
    print(f"{'layer':16} {'batch':>5} {'MHz':>6} {'meas us':>9} {'sim us':>9} {'err':>7}  algo")
    for row in rows(args.data):
        clock = float(row["sm_mhz"]) * 1e6
        cfg = hw.with_overrides({"clock.frequency_hz": clock})
        choice = best_conv(cfg, layer_of(row))
        sim, meas = choice.cycles / clock, float(row["time_s"])
        err = sim / meas - 1
        errs.append(abs(err))
        plans = [run.plan for _, _, run in candidate_runs(cfg, choice.candidate) if run]
        kernel = f" {plans[0].family} {plans[0].tile.m}x{plans[0].tile.n}" if plans else ""
        print(
            f"{row['net'] + '.' + row['layer']:16} {row['batch']:>5} {row['sm_mhz']:>6} "
            f"{meas * 1e6:9.1f} {sim * 1e6:9.1f} {err * 100:+6.1f}%  "
            f"{choice.candidate.algorithm}{kernel}"
        )
    e = np.array(errs)
    med, p90 = np.median(e) * 100, np.percentile(e, 90) * 100
    print(f"rows {e.size}: median |error| {med:.1f} %, p90 {p90:.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
