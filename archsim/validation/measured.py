"""Measured silicon vs archsim: every row of a measurement folder simulated and compared.

Each GEMM row becomes a ``gemm`` layer: the stored shapes give the transpose flags (``a_stored``
``"k x m"`` -> ``transpose_a``, ``b_stored`` ``"n x k"`` -> ``transpose_b``: archsim's
``GemmLayer.a_shape`` / ``b_shape`` are those stored shapes; fp8 rows always have B stored
n x k, since ``torch._scaled_mm`` accepts only a column-major B -- shared/data/h100/README.md
-- whatever their ``b_stored`` says), ``precision`` the operand type and
:data:`ACCUMULATE` the accumulator (FP32 for floating point, as PyTorch does; INT32 for int8).
Each conv row becomes a dense ``conv`` layer. A row that this archsim cannot express (a precision
its ``GemmLayer`` or the preset lacks) is kept with its reason and left out of the statistics.

Errors are relative, ``(simulated - measured) / measured``; the statistics are the median and
90th percentile of ``|error|`` and Spearman's rank correlation of the times.
"""

from __future__ import annotations

import math
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from archsim.config.io import load_hardware
from archsim.config.messages import validation_to_config_error
from archsim.config.workload import ConvLayer, GemmLayer, WorkloadSpec
from archsim.errors import ArchsimError, one_line
from archsim.measure.folder import MeasuredFolder
from archsim.simulate import simulate
from archsim.validation.measured_device import device_notes
from archsim.validation.measured_memory import copy_energy, memory_rows

__all__ = [
    "ACCUMULATE",
    "skipped_notes",
    "GOALS",
    "LONG_CALL_S",
    "Comparison",
    "compare",
    "error_stats",
    "load_gpu",
    "measured_rows",
    "network_totals",
    "simulate_rows",
    "spearman",
]

#: accumulator of each measured precision (torch.mm accumulates fp16/bf16 in FP32; _int_mm and
#: _scaled_mm: see shared/data/h100/README.md "How each GEMM was timed")
ACCUMULATE = {"fp16": "fp32", "bf16": "fp32", "tf32": "fp32", "fp32": "fp32", "fp8": "fp32",
              "int8": "int32"}  # fmt: skip
#: type of C/D each measured precision writes (torch.mm: the operand type, FP32 for tf32/fp32;
#: _scaled_mm: bf16; _int_mm: int32), set where this archsim's gemm layers have ``output``
OUTPUT = {"fp16": "fp16", "bf16": "bf16", "tf32": "fp32", "fp32": "fp32", "fp8": "bf16",
          "int8": "int32"}  # fmt: skip
#: archsim names tried, in order, for a measured precision (fp8 rows are e4m3)
PRECISION_NAMES = {"fp8": ("fp8_e4m3", "fp8")}
#: Issue 16's goals for H100 time (median |error|, p90 |error|, Spearman).
GOALS = {"median_abs_error": 0.10, "p90_abs_error": 0.25, "spearman": 0.97}
#: Rows whose board power is trusted: one call lasts at least this long (s). NVML's board power
#: is a running average over about a second (shared/data/h100/README.md: "trust them only for
#: the long runs (large shapes)"; it names the 8192-16384 square rows, 0.93 ms per call and
#: up, as sustained load). Every row's 5 replays last only ~0.1 s, so a short kernel's reading
#: still carries earlier, different work; 0.5 ms keeps all of those rows with margin.
LONG_CALL_S = 0.5e-3


def spearman(x: Iterable[float], y: Iterable[float]) -> float:
    """Spearman's rank correlation (ties get their average rank); NaN below two points."""
    a, b = np.asarray(list(x), float), np.asarray(list(y), float)
    if len(a) < 2:
        return math.nan
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(v: np.ndarray) -> np.ndarray:
    """1-based ranks of ``v``; equal values share the mean of their ranks."""
    order = np.argsort(v, kind="mergesort")
    _, first, counts = np.unique(v[order], return_index=True, return_counts=True)
    ranks = np.empty(len(v))
    ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
    return ranks


def error_stats(measured: pd.Series, simulated: pd.Series) -> dict[str, float]:
    """n, median and p90 of |relative error|, and Spearman of the two series, over the rows
    both have (a row that was not simulated is not counted)."""
    both = measured.notna() & simulated.notna()
    measured, simulated = measured[both], simulated[both]
    err = ((simulated - measured) / measured).abs()
    return {
        "n": int(len(err)),
        "median_abs_error": float(err.median()) if len(err) else math.nan,
        "p90_abs_error": float(np.percentile(err, 90)) if len(err) else math.nan,
        "spearman": spearman(measured, simulated),
    }


def _precision_name(measured: str) -> tuple[str | None, str]:
    allowed = typing.get_args(GemmLayer.model_fields["precision"].annotation)
    for name in PRECISION_NAMES.get(measured, (measured,)):
        if name in allowed:
            return name, ""
    return None, (
        f"precision {measured!r}: this archsim's gemm layers have no such precision "
        f"(allowed: {', '.join(allowed)})"
    )


def _gemm_layer(rec: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    precision, why = _precision_name(rec["precision"])
    if precision is None:
        return None, why
    layer = {
        "kind": "gemm", "m": rec["m"], "n": rec["n"], "k": rec["k"],
        "transpose_a": rec["a_stored"] == "k x m",
        "transpose_b": rec["b_stored"] == "n x k" or rec["precision"] == "fp8",
        "precision": precision, "accumulate": ACCUMULATE[rec["precision"]],
    }  # fmt: skip
    if "output" in GemmLayer.model_fields:
        layer["output"] = OUTPUT[rec["precision"]]
    return layer, ""


def _conv_layer(rec: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    layer: dict[str, Any] = {
        "kind": "conv", "n": rec["batch"],
        **{f: rec[f] for f in ("c", "k", "h", "w", "r", "s", "stride", "pad", "groups")},
        "weight_density": 1.0, "activation_density": 1.0,  # a GPU computes dense
    }  # fmt: skip
    if "precision" in ConvLayer.model_fields:
        layer["precision"] = rec["precision"]
    elif rec["precision"] != "fp16":
        return None, f"precision {rec['precision']!r}: this archsim's conv layers are fp16 only"
    try:
        conv = ConvLayer.model_validate({"name": "x", **layer})
    except ValidationError as exc:
        return None, " ".join(str(exc.errors()[0]["msg"]).split())
    if (rec["p"], rec["q"]) != (conv.out_h, conv.out_w):
        return None, "p, q disagree with h, w, r, s, stride and pad"
    return layer, ""


def _layout(rec: dict[str, Any]) -> str:
    """BLAS layout letters: T where the operand is stored transposed."""
    a = "T" if rec["a_stored"] == "k x m" else "N"
    return a + ("T" if rec["b_stored"] == "n x k" else "N")


def measured_rows(folder: MeasuredFolder) -> pd.DataFrame:
    """One row per measured kernel: label, precision, measured values and its archsim layer.

    Columns: ``file``, ``line``, ``label``, ``kind``, ``precision``, ``layout``, ``flops``,
    ``time_s``, ``sm_mhz``, ``board_w``, ``long_window`` (board power trustworthy),
    ``layer`` (dict, or None), ``reason`` (why there is no layer), and for conv rows ``net``
    and ``batch`` (None for GEMMs).
    """
    out = []
    for name, frame in folder.tables.items():
        is_conv = name.startswith("conv_")
        for i, rec in enumerate(frame.to_dict(orient="records")):
            if is_conv:
                layer, why = _conv_layer(rec)
                label = f"{rec['net']} {rec['layer']} n={rec['batch']}"
                groups = rec["groups"]
                flops = 2 * rec["batch"] * rec["k"] * rec["p"] * rec["q"] * (
                    rec["c"] // groups) * rec["r"] * rec["s"]  # fmt: skip
                layout = "NHWC"
            else:
                layer, why = _gemm_layer(rec)
                label = f"{rec['m']}x{rec['n']}x{rec['k']}"
                if rec.get("model_projection"):
                    label = f"{rec['model_projection']} m={rec['m']}"
                flops = 2 * rec["m"] * rec["n"] * rec["k"]
                layout = _layout(rec)
            out.append({
                "file": name, "line": folder.line(name, i), "label": label,
                "kind": "conv" if is_conv else "gemm",
                "precision": rec["precision"], "layout": layout, "flops": flops,
                "time_s": rec["time_s"], "sm_mhz": rec["sm_mhz"], "board_w": rec["board_w"],
                "long_window": rec["time_s"] >= LONG_CALL_S,
                "layer": layer, "reason": why,
                "net": rec["net"] if is_conv else None,
                "batch": rec["batch"] if is_conv else None,
            })  # fmt: skip
    return pd.DataFrame(out)


#: result columns of the clock/power model, used when the model reports them
_MODEL_COLUMNS = {"clock_hz": "sim_clock_hz", "board_power_w": "sim_board_w"}


def _run_group(hw: Any, layers: list[dict[str, Any]], names: list[str]) -> pd.DataFrame:
    try:  # a row's shape past the layer fields' bounds is that row's reason, not a traceback
        wl = WorkloadSpec.model_validate({
            "schema_version": 1, "name": "measured", "source": "measurement folder",
            "layers": [{"name": n, **lay} for n, lay in zip(names, layers, strict=True)],
        })  # fmt: skip
    except ValidationError as exc:
        raise validation_to_config_error(exc, "measured row", WorkloadSpec) from None
    return simulate(hw, wl, seed=0).to_dataframe().set_index("layer")


def _simulated(df: pd.DataFrame) -> dict[str, pd.Series]:
    out = {
        "sim_time_s": df["time_s"],
        "sim_energy_j": df["energy_pj"] * 1e-12,
        "sim_power_w": df["power_w"],
    }
    for col, name in _MODEL_COLUMNS.items():
        if col in df.columns:
            out[name] = df[col]
    return out


#: board power limit of a preset whose clock is pinned: none that any kernel reaches, W
_NO_LIMIT_W = 1.0e9


def _at_clock(hw: Any, mhz: float) -> Any:
    """``hw`` with its SM clock pinned to a measured ``mhz`` (the one place a clock is pinned).
    A preset with a ``power`` block keeps it, with the clock locked there and no limit that
    could lower it, so its board power and energy are priced at the measured clock."""
    if getattr(hw, "power", None) is None:
        return hw.with_overrides({"clock.frequency_hz": float(mhz) * 1e6}, "--clock measured")
    p = hw.power
    lock = min(max(float(mhz) * 1e6, p.min_clock_hz), p.max_clock_hz)
    pin: dict[str, Any] = {
        "power.locked_clock_hz": lock,
        "power.tensor_current_clock_hz": None,
        "power.power_limit_w": _NO_LIMIT_W,
    }
    return hw.with_overrides(pin, source="--clock measured")


def require_simulated(rows: pd.DataFrame, hw: Any, path: Any) -> None:
    """Refuse a folder none of whose timed rows ``hw`` could simulate (statistics over no row
    are NaN, a fit over none is no fit), naming the first row's reason."""
    if rows.empty or rows["sim_time_s"].notna().any():
        return
    why = _cause(str(rows["reason"].iloc[0])) or "no reason given"
    raise ArchsimError(
        f"{path}: none of its {len(rows)} timed row(s) can be simulated on {hw.name} (first: "
        f"{rows['file'].iloc[0]} line {rows['line'].iloc[0]}: {why}); allowed: rows of the "
        f"precisions and layers {hw.name} runs, or --hardware a GPU that runs them"
    )


def _clamped_note(hw: Any, done: pd.DataFrame) -> list[str]:
    """A note on the rows whose measured clock lies outside the preset's V/F range (``_at_clock``
    locks them at its nearer end), so that a clamp is never silent."""
    p = getattr(hw, "power", None)
    if p is None:
        return []
    hz = done.loc[done["clock_source"] == "measured", "sm_mhz"].astype(float) * 1e6
    out = hz[(hz < p.min_clock_hz) | (hz > p.max_clock_hz)]
    if out.empty:
        return []
    return [
        f"{len(out)} row(s) read an sm_mhz outside {hw.name}'s clock range "
        f"{p.min_clock_hz / 1e6:g}-{p.max_clock_hz / 1e6:g} MHz (power.vf_curve): simulated at "
        f"the nearer end ({out.min() / 1e6:g}-{out.max() / 1e6:g} MHz read)"
    ]


def simulate_rows(
    hw: Any,
    rows: pd.DataFrame,
    clock: str = "model",
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """``rows`` (from :func:`measured_rows`) with ``sim_*`` columns and ``error``.

    ``clock="model"`` runs the preset as it is; ``"measured"`` pins each row's SM clock to its
    ``sm_mhz`` with any power solve off (rows without one keep the preset as it is;
    ``clock_source`` says which). Rows
    are simulated in groups of one file and precision; a group that fails is re-run row by row
    so that each failing row gets its own reason.
    """
    out = rows.copy()
    out["clock_source"] = "preset"
    for col in ("sim_time_s", "sim_energy_j", "sim_power_w", *_MODEL_COLUMNS.values()):
        out[col] = math.nan
    ok = out["layer"].notna()
    keys: list[tuple[Any, ...]] = []
    for i in out.index[ok]:
        mhz = out.at[i, "sm_mhz"]
        pin = clock == "measured" and not math.isnan(mhz)
        if pin:
            out.at[i, "clock_source"] = "measured"
        keys.append((out.at[i, "file"], out.at[i, "precision"], mhz if pin else None, i))
    groups: dict[tuple[Any, ...], list[int]] = {}
    for *key, i in keys:
        groups.setdefault(tuple(key), []).append(i)
    for (file, precision, mhz), idx in groups.items():
        if progress:
            progress(f"{file} {precision}" + (f" at {mhz:g} MHz" if mhz else ""))
        group_hw = hw if mhz is None else _at_clock(hw, mhz)
        _fill(out, group_hw, idx)
    out["error"] = (out["sim_time_s"] - out["time_s"]) / out["time_s"]
    return out


def _fill(out: pd.DataFrame, hw: Any, idx: list[int]) -> None:
    names = [f"row{i}" for i in idx]
    try:
        sims = {None: _run_group(hw, [out.at[i, "layer"] for i in idx], names)}
    except ArchsimError:
        sims = {}
        for i, name in zip(idx, names, strict=True):
            try:
                sims[i] = _run_group(hw, [out.at[i, "layer"]], [name])
            except ArchsimError as exc:
                out.at[i, "reason"] = one_line(exc)
    for i, name in zip(idx, names, strict=True):
        df = sims.get(None, sims.get(i))
        if df is None:
            continue
        for col, series in _simulated(df).items():
            out.at[i, col] = float(series.loc[name])


@dataclass(frozen=True)
class Comparison:
    """Rows with their simulated values, and the statistics over the simulated ones."""

    rows: pd.DataFrame
    overall: dict[str, float]
    groups: pd.DataFrame  # file, precision, n, median/p90 |error|, spearman
    power: pd.DataFrame  # long-window rows: measured vs simulated clock / board power
    energy: pd.DataFrame  # the JSON's energy entries vs the model
    notes: tuple[str, ...]
    networks: pd.DataFrame = field(default_factory=pd.DataFrame)  # see network_totals
    memory: pd.DataFrame = field(default_factory=pd.DataFrame)  # see measured_memory


def network_totals(rows: pd.DataFrame) -> pd.DataFrame:
    """Each network of the conv files at each batch and precision: its layers' times summed,
    measured and simulated (each layer was timed alone, back to back). Columns ``file``,
    ``net``, ``batch``, ``precision``, ``layers``, ``simulated`` (layers the model ran),
    ``time_s``, ``sim_time_s`` (NaN unless every layer ran) and ``error``."""
    conv = rows[rows["kind"] == "conv"]
    recs = []
    for (file, net, batch, prec), block in conv.groupby(
        ["file", "net", "batch", "precision"], sort=False
    ):
        ran = int(block["sim_time_s"].notna().sum())
        sim = float(block["sim_time_s"].sum()) if ran == len(block) else math.nan
        meas = float(block["time_s"].sum())
        recs.append({
            "file": file, "net": net, "batch": int(batch), "precision": prec,
            "layers": len(block),
            "simulated": ran, "time_s": meas, "sim_time_s": sim, "error": (sim - meas) / meas,
        })  # fmt: skip
    return pd.DataFrame(recs)


def _group_stats(rows: pd.DataFrame) -> pd.DataFrame:
    recs = []
    for (file, precision), block in rows.groupby(["file", "precision"], sort=False):
        recs.append({"file": file, "precision": precision,
                     **error_stats(block["time_s"], block["sim_time_s"])})  # fmt: skip
    return pd.DataFrame(recs)


def _power_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Long-window rows: measured clock, board power and energy per call (board_w x time_s)
    next to the model's (clock and board power only where the model reports them)."""
    keep = rows[rows["long_window"] & rows["sim_time_s"].notna() & rows["board_w"].notna()]
    cols = [c for c in _MODEL_COLUMNS.values() if keep[c].notna().any()]
    out = keep[["file", "label", "precision", "sm_mhz", "board_w", *cols, "sim_energy_j"]].copy()
    out.insert(out.columns.get_loc("sim_energy_j"), "energy_j", keep["board_w"] * keep["time_s"])
    return out.reset_index(drop=True)


_ROW_PREFIX = re.compile(r"^<api>: layers\.\d+(\.|: )")
_ROW_NAME = re.compile(r"layer 'row\d+'(: )?")


def _cause(reason: str) -> str:
    """A skipped row's reason without the row's own layer name and index."""
    reason = _ROW_PREFIX.sub("", reason)
    return _ROW_NAME.sub(lambda m: "" if m.group(1) else "the row's layer", reason)


def skipped_notes(rows: pd.DataFrame) -> list[str]:
    """One note per cause for the rows of ``rows`` (:func:`simulate_rows`) that were not
    simulated: the row's own layer name and index are not part of the cause."""
    skipped = rows[rows["sim_time_s"].isna()]
    causes = skipped["reason"].astype(str).map(_cause)
    notes = []
    for why, block in skipped.groupby(causes, sort=False):
        files = ", ".join(sorted(set(block["file"])))
        notes.append(f"not simulated: {len(block)} row(s) of {files}: {why}")
    return notes


def _energy_layer(key: str) -> tuple[dict[str, Any] | None, str]:
    """``gemm_<precision>_<size>[_zeros]`` -> a square NN gemm layer (the data's naming)."""
    parts = key.split("_")
    if len(parts) < 3 or parts[0] != "gemm" or not (parts[2].isascii() and parts[2].isdigit()):
        return None, "no archsim kernel for this operation"
    if len(parts[2]) > 9:  # a size past a billion (int() reads no more than 4,300 digits)
        return None, "a size of more than 9 digits (no GPU runs such a GEMM)"
    if parts[3:] not in ([], ["zeros"]):
        return None, "unknown operand kind"
    if parts[3:] == ["zeros"] and "operand_activity" not in GemmLayer.model_fields:
        return None, "this archsim's gemm layers have no operand_activity (zeros) setting"
    size = int(parts[2])
    rec = {"m": size, "n": size, "k": size, "a_stored": "m x k", "b_stored": "k x n",
           "precision": parts[1]}  # fmt: skip
    if rec["precision"] not in ACCUMULATE:
        return None, f"unknown precision {parts[1]!r}"
    layer, why = _gemm_layer(rec)
    if layer is not None and parts[3:] == ["zeros"]:
        layer["operand_activity"] = "zeros"
    return layer, why


def _smi_mhz(entry: dict[str, Any]) -> float:
    """The SM clock of an energy entry's mid-run nvidia-smi snapshot, MHz (NaN: none; the
    folder reader checked the snapshots)."""
    snaps = entry.get("smi_mid")
    if not snaps or "clocks.sm" not in snaps[0]:
        return math.nan
    return float(snaps[0]["clocks.sm"])


def _energy_rows(hw: Any, energy: dict[str, Any]) -> pd.DataFrame:
    recs = []
    for key, entry in energy.items():
        if not isinstance(entry, dict) or "joules_per_call" not in entry:
            continue
        rec: dict[str, Any] = {
            "entry": key, "joules_per_call": entry["joules_per_call"],
            "watts": entry.get("watts", math.nan),
            "sm_mhz": _smi_mhz(entry), "sim_energy_j": math.nan,
            "sim_power_w": math.nan, "sim_clock_hz": math.nan, "reason": "",
        }  # fmt: skip
        copy = copy_energy(hw, key, entry)
        if copy is not None:
            rec.update(copy)
            recs.append(rec)
            continue
        layer, why = _energy_layer(key)
        if layer is None:
            rec["reason"] = why
        else:
            try:
                sim = _simulated(_run_group(hw, [layer], ["e"]))
                rec["sim_energy_j"] = float(sim["sim_energy_j"].iloc[0])
                power = sim.get("sim_board_w", sim["sim_power_w"])
                rec["sim_power_w"] = float(power.iloc[0])
                if "sim_clock_hz" in sim:
                    rec["sim_clock_hz"] = float(sim["sim_clock_hz"].iloc[0])
            except ArchsimError as exc:
                rec["reason"] = one_line(exc)
        recs.append(rec)
    return pd.DataFrame(recs)


def load_gpu(hardware: str) -> Any:
    """A tensor_core preset or YAML (one-line error for any other accelerator)."""
    hw = load_hardware(hardware)
    if getattr(hw, "accelerator", None) != "tensor_core":
        raise ArchsimError(
            f"--hardware: {hardware!r} is not a GPU (accelerator {hw.accelerator}); allowed: "
            "a tensor_core GPU preset (v100, a100, h100) or YAML"
        )
    return hw


def compare(
    hw: Any,
    folder: MeasuredFolder,
    clock: str = "model",
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    """Simulate every row of ``folder`` on ``hw`` and summarise the errors."""
    if clock not in ("model", "measured"):
        raise ArchsimError(f"--clock: {clock!r} is not valid; allowed: model, measured")
    rows = simulate_rows(hw, measured_rows(folder), clock, progress)
    require_simulated(rows, hw, folder.path)
    done = rows[rows["sim_time_s"].notna()]
    notes = device_notes(hw, folder.device) + skipped_notes(rows)
    if not rows[list(_MODEL_COLUMNS.values())].notna().any().any():
        at = (
            "rows with an sm_mhz reading ran at it, the others"
            if clock == "measured"
            else "it runs"
        )
        notes.append(
            "the model reports no per-layer clock or board power (no clock_hz / board_power_w "
            f"columns): {at} at the preset's {hw.clock.frequency_hz / 1e6:g} MHz"
        )
    if clock == "measured":
        blank = int((done["clock_source"] == "preset").sum())
        if blank:
            notes.append(f"{blank} row(s) have no sm_mhz reading: simulated at the preset clock")
        notes += _clamped_note(hw, done)
    return Comparison(
        rows=rows,
        overall=error_stats(done["time_s"], done["sim_time_s"]),
        groups=_group_stats(done),
        power=_power_rows(rows),
        energy=_energy_rows(hw, folder.energy),
        notes=tuple(notes),
        networks=network_totals(rows),
        memory=memory_rows(hw, folder.memory_eager),
    )
