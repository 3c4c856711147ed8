"""Leave-one-group-out cross-validation of the H100 preset's calibration fields.

``python benchmarks/gpu_crossval.py DIR`` (``DIR``: a measurement folder such as
``../shared/data/h100``) prints, for each held-out group of rows (one file, one precision, one
layout, one size band), the median and 90th percentile |time error| of the held-out rows when
the fields that ``hw_configs/h100.yaml`` set from measured rows (:data:`ROW_FITTED`; each of
them cites its file and row there) are fitted ONLY to the other groups' rows.

Every fold starts from the fields' uncalibrated values (:data:`ROW_FITTED`: the schema default,
or for the launch floor the middle of its range), not from the preset's values (which were set
from every row, held-out ones included), and fits them one at a time, in the order of
``archsim.validation.calibrate.FIELDS``, by the same golden-section search within the same
bounds (more steps: :data:`STEPS`) on the same objective, mean ``|ln(sim / measured)|``. A
field that no training row informs (int8 held out: no int8 row left for the int8 kernel
family's rate) stays at its uncalibrated value: the held-out error then shows what the
structure predicts without that measurement.

Clock: the model's (``--clock model``, the clock/power solve), as ``archsim validate
tensor_core`` reports. The power fields (static power, V/f curve, energies, peak-current clock)
come from ``device_memory_energy.json``'s NVML energy entries, not from the timed rows, and are
kept. Row simulation is memoised per field values, and each field's search re-simulates only
the rows that field changes (found once by simulating every row at both ends of its bounds).

Runs in about 5-10 minutes on one core.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from archsim.measure.folder import read_folder
from archsim.validation.calibrate import _golden
from archsim.validation.measured import error_stats, load_gpu, measured_rows, simulate_rows

#: The preset fields set from measured rows (path, low, high, uncalibrated value, the row that
#: set it in hw_configs/h100.yaml). Bounds are calibrate.FIELDS's where it has the field;
#: the launch floor's range is narrowed to 0-6 us (calibrate's 0-20 us with 14 steps still
#: leaves a 0.06 us bracket, but costs twice the time).
ROW_FITTED: tuple[tuple[str, float, float, float | None, str], ...] = (
    ("launch.graph_s", 0.0, 6e-6, 3e-6, "gemm_square 128^3 fp8"),
    ("cuda_cores.sustained_fraction", 0.5, 1.0, 1.0, "gemm_square 8192^3 fp32"),
    ("library.families.1.mma_rate_fraction", 0.5, 1.0, 1.0, "gemm_square 16384^3 int8"),
    ("library.families.2.fill_bytes_per_clock", 1.0, 256.0, None, "gemm_unaligned 4095^3 fp16"),
    ("conv_library.grouped_families.0.mma_rate_fraction", 0.2, 1.0, 1.0,
     "conv_alexnet conv4 n=256"),
)  # fmt: skip
#: golden-section evaluations per field (bracket 0.618 ** (STEPS - 2) of the bounds)
STEPS = 12
#: size bands by FLOPs per GEMM / conv
BANDS = ((0, 1e9, "<1 GFLOP"), (1e9, 1e11, "1-100 GFLOP"), (1e11, 1e12, "0.1-1 TFLOP"),
         (1e12, math.inf, ">=1 TFLOP"))  # fmt: skip


def _apply(hw: Any, values: dict[str, float | None]) -> Any:
    """``hw`` with dotted ``values`` set (list indices allowed), re-validated."""
    data = hw.model_dump(mode="python")
    for path, value in values.items():
        *parents, leaf = path.split(".")
        node: Any = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(leaf) if isinstance(node, list) else leaf] = value
    return type(hw).model_validate(data)


class Sim:
    """Per-row simulated times, memoised on the field values."""

    def __init__(self, hw: Any, rows: pd.DataFrame) -> None:
        self.hw, self.rows = hw, rows
        self.memo: dict[tuple[Any, ...], dict[int, float]] = {}
        self.runs = 0

    def times(self, values: dict[str, float | None], idx: list[int]) -> pd.Series:
        key = tuple(sorted(values.items()))
        have = self.memo.setdefault(key, {})
        need = [i for i in idx if i not in have]
        if need:
            self.runs += 1
            sim = simulate_rows(_apply(self.hw, values), self.rows.loc[need], "model")
            have.update(sim["sim_time_s"].to_dict())
        return pd.Series({i: have[i] for i in idx}, dtype=float)


def _objective(sim: pd.Series, measured: pd.Series) -> float:
    ok = sim.notna()
    return float(np.mean(np.abs(np.log(sim[ok] / measured[ok])))) if ok.any() else 0.0


def fit(sim: Sim, start: dict[str, float | None], train: list[int], touched: dict[str, set[int]]):
    """Coordinate golden-section fit of :data:`ROW_FITTED` on the ``train`` rows."""
    values = dict(start)
    measured = sim.rows["time_s"]
    for path, low, high, _, _ in ROW_FITTED:
        idx = [i for i in train if i in touched[path]]
        if not idx:
            continue  # no training row informs this field: keep its uncalibrated value

        def f(x: float, path: str = path, idx: list[int] = idx) -> float:
            return _objective(sim.times({**values, path: x}, idx), measured[idx])

        best = f(values[path]) if values[path] is not None else math.inf
        x, score = _golden(f, low, high, STEPS)
        if score < best:
            values[path] = x
    return values


def folds(rows: pd.DataFrame) -> list[tuple[str, str, list[int]]]:
    out = []
    for name, col in (("file", "file"), ("precision", "precision"), ("layout", "layout")):
        for value in rows[col].unique():
            out.append((name, str(value), list(rows.index[rows[col] == value])))
    for lo, hi, label in BANDS:
        mask = (rows["flops"] >= lo) & (rows["flops"] < hi)
        out.append(("size", label, list(rows.index[mask])))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="measurement folder (e.g. ../shared/data/h100)")
    ap.add_argument("--hardware", default="h100")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    hw = load_gpu(args.hardware)
    rows = measured_rows(read_folder(args.folder))
    rows = rows[rows["layer"].notna()].reset_index(drop=True)
    sim = Sim(hw, rows)
    every = list(rows.index)
    preset = {p: _get(hw, p) for p, *_ in ROW_FITTED}
    start = {p: prior for p, _, _, prior, _ in ROW_FITTED}
    # rows each field changes: simulated at both ends of its bounds (others uncalibrated)
    touched: dict[str, set[int]] = {}
    for path, low, high, _, _ in ROW_FITTED:
        a, b = sim.times({**start, path: low}, every), sim.times({**start, path: high}, every)
        touched[path] = set(rows.index[(a - b).abs() > 1e-12 * b.abs()])
        print(f"  ... {path}: changes {len(touched[path])} rows", file=sys.stderr, flush=True)

    def stats(values: dict[str, float | None], idx: list[int]) -> dict[str, float]:
        return error_stats(rows.loc[idx, "time_s"], sim.times(values, idx))

    print(f"Leave-one-group-out cross-validation of {hw.name}'s row-fitted fields on "
          f"{args.folder} ({len(rows)} rows), clock: model")  # fmt: skip
    print("fields refitted per fold (preset value; row that set it):")
    for path, *_, why in ROW_FITTED:
        print(f"  {path} = {preset[path]} ({why})")
    base = stats(preset, every)
    unc = stats(start, every)
    full = fit(sim, start, every, touched)
    ins = stats(full, every)
    print(f"\npreset, all rows in-sample: median {100 * base['median_abs_error']:.1f} %, "
          f"p90 {100 * base['p90_abs_error']:.1f} %, Spearman {base['spearman']:.4f}")  # fmt: skip
    print(f"uncalibrated (no row-fitted field): median {100 * unc['median_abs_error']:.1f} %, "
          f"p90 {100 * unc['p90_abs_error']:.1f} %")  # fmt: skip
    print(f"this fit on all rows (in-sample): median {100 * ins['median_abs_error']:.1f} %, "
          f"p90 {100 * ins['p90_abs_error']:.1f} %  " + _fmt(full))  # fmt: skip
    head = (f"{'held out':<24}{'n':>4}{'preset':>20}{'in-sample':>20}{'held-out':>20}"
            "  fitted on the rest")  # fmt: skip
    print(f"\n{'':<28}{'median / p90':>20}{'median / p90':>20}{'median / p90':>20}\n{head}")
    pooled: list[float] = []
    for kind, value, held in folds(rows):
        train = [i for i in every if i not in set(held)]
        fitted = fit(sim, start, train, touched)
        out = stats(fitted, held)
        inn = stats(full, held)
        pre = stats(preset, held)
        if kind == "file":
            pooled += list(
                ((sim.times(fitted, held) - rows.loc[held, "time_s"]) / rows.loc[held, "time_s"])
                .abs()
                .to_numpy()
            )
        print(
            f"{kind + ' ' + value:<24}{len(held):>4}"
            f"{_pair(pre):>20}{_pair(inn):>20}{_pair(out):>20}  {_fmt(fitted)}",
            flush=True,
        )
    p = np.asarray(pooled)
    print(f"\nleave-one-file-out, every row held out once: n={len(p)}, median "
          f"{100 * np.median(p):.1f} %, p90 {100 * np.percentile(p, 90):.1f} %")  # fmt: skip
    print(f"(wall {time.perf_counter() - t0:.0f} s, {sim.runs} simulate_rows calls)")
    return 0


def _pair(s: dict[str, float]) -> str:
    return f"{100 * s['median_abs_error']:5.1f} / {100 * s['p90_abs_error']:5.1f} %"


def _short(path: str) -> str:
    return {
        "launch.graph_s": "graph",
        "cuda_cores.sustained_fraction": "fp32",
        "library.families.1.mma_rate_fraction": "int8",
        "library.families.2.fill_bytes_per_clock": "fill",
        "conv_library.grouped_families.0.mma_rate_fraction": "grp",
    }.get(path, path)


def _fmt(values: dict[str, float | None]) -> str:
    parts = []
    for p, v in values.items():
        if v is None:
            parts.append(f"{_short(p)}=-")
        elif p == "launch.graph_s":
            parts.append(f"{_short(p)}={v * 1e6:.2f}us")
        else:
            parts.append(f"{_short(p)}={v:.3g}")
    return " ".join(parts)


def _get(hw: Any, path: str) -> Any:
    node = hw
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else getattr(node, part)
    return node


if __name__ == "__main__":
    raise SystemExit(main())
