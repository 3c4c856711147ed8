"""Fit a GPU preset's documented calibration fields to a measurement folder.

Only the fields of :data:`FIELDS` are fitted, each inside its bounds, by a deterministic
coordinate search: one field at a time (in registry order), a golden-section search of
:data:`STEPS` evaluations over its bounds, kept only if it lowers the objective. The objective
is the mean of ``|ln(simulated / measured)|`` over the *fit* rows: every other row of each
file x precision group (the 1st, 3rd, ...); the rows in between are held out, so the before/after
residuals show whether the fit generalises. No scipy; the same folder always gives the same YAML.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from archsim.config.base import get_dotted as _get
from archsim.config.io import _resolve, load_hardware, read_yaml
from archsim.config.names import fit_name
from archsim.errors import ArchsimError, ConfigError, one_line
from archsim.measure.folder import DEVICE_FILE, MeasuredFolder, MeasurementError
from archsim.validation.measured import (
    error_stats,
    measured_rows,
    require_simulated,
    simulate_rows,
)

__all__ = [
    "FIELDS",
    "check_measured_fields",
    "MEASURED_FIELDS",
    "STEPS",
    "CalibrationField",
    "Fit",
    "fields_for",
    "fit",
    "residuals",
    "write_yaml",
]

#: evaluations of the objective per field (golden section: bracket shrinks to 0.618^(STEPS-2))
STEPS = 6
_GOLD = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True)
class CalibrationField:
    """One fittable field: dotted path in the GPU config, bounds, what it stands for."""

    path: str
    low: float
    high: float
    meaning: str


#: The documented calibration fields; a field the config does not have (or leaves unset) is
#: skipped (and said). ``*`` in a path stands for every kernel family of the preset
#: (:func:`fields_for` expands it). The ``power.*`` fields move the solved clock, so they
#: change times only when the clock is modelled (``--clock model``).
FIELDS: tuple[CalibrationField, ...] = (
    CalibrationField(
        "launch.graph_s", 0.0, 20e-6,
        "per kernel in a CUDA graph (s): the floor of the smallest GEMMs",
    ),
    CalibrationField(
        "hbm_achievable_fraction", 0.5, 1.0,
        "achievable / peak HBM bandwidth: memory-bound rows (LLM projections at few tokens)",
    ),
    CalibrationField(
        "l2.achievable_fraction", 0.3, 1.0,
        "achievable / peak L2 bandwidth: mid-size GEMMs whose operands stay in L2",
    ),
    CalibrationField(
        "tensor_cores.sustained_fraction", 0.5, 1.0,
        "sustained / peak tensor-core MMA throughput: large compute-bound GEMMs",
    ),
    CalibrationField(
        "cuda_cores.sustained_fraction", 0.5, 1.0,
        "sustained / peak FMA issue of CUDA-core (FP32) GEMM kernels: large fp32 GEMMs",
    ),
    CalibrationField(
        "library.families.*.mma_rate_fraction", 0.25, 1.0,
        "a kernel family's MMA throughput / the part's tensor rate: its large GEMMs "
        "(H100's 4-warp mma.sync kernels: 0.37)",
    ),
    CalibrationField(
        "library.families.*.fill_bytes_per_clock", 1.0, 256.0,
        "a kernel family's global->shared fill rate per SM (B/clk): its memory-fed GEMMs",
    ),
    CalibrationField(
        "conv_library.narrow_channel_families.*.cta_fill_bytes_per_clock", 0.5, 64.0,
        "one CTA's element-wise gather rate (B/clk) of the narrow-channel conv kernels: C = 3 "
        "convs at batch 1 (AlexNet conv1)",
    ),
    CalibrationField(
        "power.tensor_current_clock_hz", 1.0e9, 1.98e9,
        "peak-current clock of busy tensor pipes (Hz): sustained light-power tensor GEMMs",
    ),
    CalibrationField(
        "power.sm_active_energy_pj_per_cycle", 0.0, 2000.0,
        "energy per active SM-cycle (pJ): the power-limited clock of sustained GEMMs",
    ),
    CalibrationField(
        "power.mma_fp16_energy_pj", 0.3, 5.0,
        "FP16 tensor-core FMA energy (pJ): the power-limited clock of large GEMMs",
    ),
    CalibrationField(
        "power.mma_multiplier_fraction", 0.0, 1.0,
        "multiplier-array share of an FMA's energy: power-limited clocks across precisions",
    ),
)  # fmt: skip


def fields_for(hw: Any) -> tuple[CalibrationField, ...]:
    """:data:`FIELDS` with ``*`` expanded to each entry (by index) of the family list it
    follows in ``hw`` (``library.families``, ``conv_library.narrow_channel_families``)."""
    out: list[CalibrationField] = []
    for f in FIELDS:
        if "*" not in f.path:
            out.append(f)
            continue
        n = len(_get(hw, f.path.split(".*")[0]) or [])
        out += [replace(f, path=f.path.replace("*", str(i))) for i in range(n)]
    return tuple(out)


@dataclass(frozen=True)
class Fit:
    """Fitted values, their starting values, the objective before/after and the rows."""

    before: dict[str, float]
    after: dict[str, float]
    objective_before: float
    objective_after: float
    evaluations: int
    skipped: tuple[str, ...]  # registry fields this config does not have
    rows_before: pd.DataFrame  # every row, simulated with the starting values
    rows_after: pd.DataFrame


def _objective(rows: pd.DataFrame) -> float:
    done = rows[rows["sim_time_s"].notna()]
    if done.empty:
        return math.inf
    return float(np.mean(np.abs(np.log(done["sim_time_s"] / done["time_s"]))))


def _fit_mask(rows: pd.DataFrame) -> pd.Series:
    """True for every other row of each file x precision group (1st, 3rd, ...)."""
    position = rows.groupby(["file", "precision"], sort=False).cumcount()
    return position % 2 == 0


def fit(
    hw: Any,
    folder: MeasuredFolder,
    clock: str = "model",
    progress: Callable[[str], None] | None = None,
) -> Fit:
    """Fit :func:`fields_for` ``hw`` to ``folder``; see the module docstring."""
    rows = measured_rows(folder)
    rows = rows[rows["layer"].notna()].reset_index(drop=True)
    if rows.empty:
        raise ArchsimError(f"{folder.path}: no row this archsim can simulate; nothing to fit")
    rows["fit"] = _fit_mask(rows)
    fit_rows, held_rows = rows[rows["fit"]], rows[~rows["fit"]]
    fields = [f for f in fields_for(hw) if _get(hw, f.path) is not None]
    skipped = tuple(f.path for f in fields_for(hw) if f not in fields)
    values = {f.path: float(_get(hw, f.path)) for f in fields}
    cache: dict[tuple[float, ...], tuple[float, pd.DataFrame]] = {}

    def evaluate(trial: dict[str, float]) -> float:
        key = tuple(trial[f.path] for f in fields)
        if key not in cache:
            sim = simulate_rows(_with(hw, trial), fit_rows, clock)
            cache[key] = (_objective(sim), sim)
        return cache[key][0]

    start = dict(values)
    best = first = evaluate(values)
    require_simulated(cache[tuple(values[f.path] for f in fields)][1], hw, folder.path)
    for f in fields:
        value, score = _golden(lambda x, f=f: evaluate({**values, f.path: x}), f.low, f.high)
        if score < best:
            values[f.path], best = value, score
        if progress:
            progress(f"{f.path} = {values[f.path]:.4g} (objective {best:.4f})")

    def every_row(trial: dict[str, float]) -> pd.DataFrame:
        fitted = cache[tuple(trial[f.path] for f in fields)][1]
        held = simulate_rows(_with(hw, trial), held_rows, clock) if len(held_rows) else held_rows
        return pd.concat([fitted, held]).sort_index()

    return Fit(
        before=start,
        after=values,
        objective_before=first,
        objective_after=best,
        evaluations=len(cache),
        skipped=skipped,
        rows_before=every_row(start),
        rows_after=every_row(values),
    )


def _with(hw: Any, values: dict[str, float]) -> Any:
    """``hw`` with the fitted values (a family's field set inside its list, which is
    overridden whole)."""
    over: dict[str, Any] = {}
    for path, value in values.items():
        head, _, name = path.rpartition(".")
        where, _, index = head.rpartition(".")
        if not index.isdigit():
            over[path] = value
            continue
        if where not in over:
            over[where] = [f.model_dump() for f in _get(hw, where)]
        over[where][int(index)][name] = value
    return hw.with_overrides(over, source="calibrate")


def _golden(
    f: Callable[[float], float], low: float, high: float, steps: int = STEPS
) -> tuple[float, float]:
    """Minimise ``f`` on [low, high] with ``steps`` evaluations; (best x, best f)."""
    a, b = low, high
    c, d = b - _GOLD * (b - a), a + _GOLD * (b - a)
    fc, fd = f(c), f(d)
    seen = [(fc, c), (fd, d)]
    for _ in range(steps - 2):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLD * (b - a)
            fc = f(c)
            seen.append((fc, c))
        else:
            a, c, fc = c, d, fd
            d = a + _GOLD * (b - a)
            fd = f(d)
            seen.append((fd, d))
    score, x = min(seen)
    return x, score


def residuals(result: Fit) -> pd.DataFrame:
    """Median / p90 |error| per file x precision, fit and held-out rows, before and after."""
    recs = []
    before, after = result.rows_before, result.rows_after
    for (file, precision), idx in before.groupby(["file", "precision"], sort=False).groups.items():
        for subset, mask in (
            ("fit", before.loc[idx, "fit"]),
            ("held out", ~before.loc[idx, "fit"]),
        ):
            rows = idx[mask.to_numpy()]
            if len(rows) == 0:
                continue
            b = error_stats(before.loc[rows, "time_s"], before.loc[rows, "sim_time_s"])
            a = error_stats(after.loc[rows, "time_s"], after.loc[rows, "sim_time_s"])
            recs.append({
                "file": file, "precision": precision, "rows": subset, "n": a["n"],
                "median_before": b["median_abs_error"], "p90_before": b["p90_abs_error"],
                "median_after": a["median_abs_error"], "p90_after": a["p90_abs_error"],
            })  # fmt: skip
    return pd.DataFrame(recs)


def _set(data: Any, path: str, value: float) -> None:
    *parents, leaf = path.split(".")
    for key in parents:
        data = data[int(key)] if isinstance(data, list) else data.setdefault(key, {})
    data[int(leaf) if isinstance(data, list) else leaf] = value


#: config fields a measurement folder holds directly: path -> (``memory_eager`` entry, meaning)
MEASURED_FIELDS = {
    "launch.eager_s": (
        "tiny_kernel_back_to_back_s",
        "memory_eager.tiny_kernel_back_to_back_s: the host's interval between eager launches",
    ),
}


def _measured_fields(folder: MeasuredFolder) -> dict[str, tuple[float, str]]:
    """``{path: (value, where it comes from)}`` of :data:`MEASURED_FIELDS` the folder has."""
    out = {}
    for path, (entry, why) in MEASURED_FIELDS.items():
        value = folder.memory_eager.get(entry)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            out[path] = (float(value), why)
    return out


def check_measured_fields(hw: Any, folder: MeasuredFolder) -> None:
    """Refuse a folder reading (:data:`MEASURED_FIELDS`) that its config field cannot take,
    naming the folder's file and entry, before anything is fitted."""
    for path, (value, _) in _measured_fields(folder).items():
        try:
            hw.with_overrides({path: value}, source="calibrate")
        except ConfigError as exc:
            entry = MEASURED_FIELDS[path][0]
            raise MeasurementError(
                folder.path / DEVICE_FILE, f"memory_eager.{entry}",
                f"{value!r} cannot be the preset's {path} ({exc.problem})",
            ) from None  # fmt: skip


def write_yaml(hardware: str, result: Fit, folder: MeasuredFolder, out: str | Path) -> Path:
    """The preset ``hardware`` with the fitted values, and the fields the folder measures
    directly (:data:`MEASURED_FIELDS`: the eager launch interval), as a hardware YAML at ``out``.

    A comment header says what was fitted from which folder. The file is checked with
    :func:`archsim.load_hardware` before it is renamed into place (nothing half-written).
    """
    raw = read_yaml(_resolve(hardware, "hardware"))
    for path, value in result.after.items():
        _set(raw, path, float(f"{value:.6g}"))
    measured = _measured_fields(folder)
    for path, (value, _) in measured.items():
        _set(raw, path, float(f"{value:.6g}"))
    raw["name"] = fit_name(f"{raw.get('name', hardware)}_calibrated")
    device = folder.device.get("name", "?")  # printable (the folder reader checks it)
    source = one_line(folder.path)  # a newline in it would end the comment line
    fields = {f.path: f for f in fields_for(load_hardware(hardware))}
    header = [
        f"# {raw['name']}: preset {hardware!r} with calibration fields fitted by",
        f"# `archsim calibrate tensor_core` to the measurement folder {source}",
        f"# ({device}; fit on every other row of each file x precision, objective mean",
        f"# |ln(sim/measured)| {result.objective_before:.4f} -> {result.objective_after:.4f}).",
        "# Fitted (start -> fitted, bounds): every other field is the preset's.",
        *(f"#   {p}: {result.before[p]:.6g} -> {v:.6g} in [{fields[p].low:g}, {fields[p].high:g}]"
          f" ({fields[p].meaning})" for p, v in result.after.items()),
        *(["# Measured, not fitted (the folder's own reading):"] if measured else []),
        *(f"#   {p}: {v:.6g} ({why})" for p, (v, why) in measured.items()),
    ]  # fmt: skip
    text = "\n".join(header) + "\n" + yaml.safe_dump(raw, sort_keys=False, width=100)
    from archsim.output import write_text_atomically

    # a calibrated preset must load before it replaces anything; not over a device or a FIFO
    return write_text_atomically(out, text, "-o", check=load_hardware)
