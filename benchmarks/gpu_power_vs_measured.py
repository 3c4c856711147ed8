"""Predicted vs measured H100 clock, board power and energy per GEMM (issue 16).

Rows: the long runs of ``../shared/data/h100/gemm_square.csv`` (sizes >= 4096, where NVML's ~1 s
power average is trustworthy) and the GEMM entries of ``device_memory_energy.json`` ``energy``.
Each row is simulated as ``archsim validate tensor_core --measured`` builds it (its layouts,
FP8's transposed B, the output type torch writes), so the two print the same figures.
Run: ``python benchmarks/gpu_power_vs_measured.py [--data DIR]``.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import archsim
from archsim.config.workload import WorkloadSpec
from archsim.validation.measured import _energy_layer, _gemm_layer

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "h100"
MIN_SIZE = 4096


def _predict(hw, layer: dict | None) -> dict:
    if layer is None:
        raise SystemExit("a row archsim cannot build a GEMM layer for")
    spec = {"schema_version": 1, "name": "probe", "source": "measured rows",
            "layers": [{"name": "g", **layer}]}  # fmt: skip
    row = archsim.simulate(hw, WorkloadSpec.model_validate(spec)).to_dataframe().iloc[0]
    clock = row.get("clock_hz", hw.clock.frequency_hz)
    return {"mhz": clock / 1e6, "w": row["power_w"], "j": row["energy_pj"] * 1e-12}


def _err(pred: float, meas: float) -> str:
    return f"{100 * (pred / meas - 1):+6.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--hardware", default="h100")
    ap.add_argument(
        "--fixed-clock", action="store_true", help="before: no power block (preset clock)"
    )
    args = ap.parse_args()
    hw = archsim.load_hardware(args.hardware)
    if args.fixed_clock:
        hw = hw.model_copy(update={"power": None})
    supported = set(hw.tensor_cores.precision_rate) | {"fp32"}
    head = f"{'row':<28}{'MHz meas':>9}{'pred':>7}{'err':>8}{'W meas':>8}{'pred':>7}{'err':>8}"
    print(head + f"{'J meas':>9}{'pred':>8}{'err':>8}{'W x t_meas':>11}")
    with open(args.data / "gemm_square.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if int(r["m"]) >= MIN_SIZE and r["board_w"]]
    for r in rows:
        m, n, k, prec = int(r["m"]), int(r["n"]), int(r["k"]), r["precision"]
        name = f"{m}x{n}x{k} {prec}"
        if prec not in supported:
            print(f"{name:<28}  (precision not in the {args.hardware} preset yet)")
            continue
        rec = {**r, "m": m, "n": n, "k": k}
        p = _predict(hw, _gemm_layer(rec)[0])
        mhz, w = float(r["sm_mhz"]), float(r["board_w"])
        j = w * float(r["time_s"])  # board power x time per call
        print(
            f"{name:<28}{mhz:>9.0f}{p['mhz']:>7.0f}{_err(p['mhz'], mhz)}{w:>8.0f}{p['w']:>7.0f}"
            f"{_err(p['w'], w)}{j:>9.4f}{p['j']:>8.4f}{_err(p['j'], j)}"
            f"{_err(p['w'] * float(r['time_s']), j):>11}"
        )
    energy = json.loads((args.data / "device_memory_energy.json").read_text())["energy"]
    for key in ("gemm_fp16_8192", "gemm_fp16_8192_zeros"):
        e = energy[key]
        mhz, w, j = float(e["smi_mid"][0]["clocks.sm"]), e["watts"], e["joules_per_call"]
        p = _predict(hw, _energy_layer(key)[0])
        t = e["seconds"] / e["calls"]
        print(
            f"{'json ' + key:<28}{mhz:>9.0f}{p['mhz']:>7.0f}{_err(p['mhz'], mhz)}{w:>8.0f}"
            f"{p['w']:>7.0f}{_err(p['w'], w)}{j:>9.4f}{p['j']:>8.4f}{_err(p['j'], j)}"
            f"{_err(p['w'] * t, j):>11}"
        )
    print("json hbm_copy_4GB: calibration entry (sm_active_energy_pj_per_cycle); no copy layer")
    print("W x t_meas: predicted board power x measured time per call vs measured J")


if __name__ == "__main__":
    main()
