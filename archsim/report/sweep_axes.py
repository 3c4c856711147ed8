"""How a sweep's figures show its columns: metric units and swept-axis positions (no matplotlib).

Shared by the matplotlib figures of ``sweep_plots`` (the Python API) and the SVG figures of
``sweep_svg`` (the sweep report, which must not import matplotlib: see ``sweep_svg``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from archsim.report.formatting import MISSING, energy_unit, si_format

__all__ = [
    "MetricUnit",
    "AxisValues",
    "metric_unit",
    "axis_values",
    "axis_label",
    "ok_points",
    "spans_wide",
    "ColourClasses",
    "colour_classes",
    "MAX_DISCRETE",
]

#: Distinct values up to which a numeric colouring axis gets one colour per value (else a bar).
MAX_DISCRETE = 10


@dataclass(frozen=True)
class MetricUnit:
    """How to show a metric: ``label`` (with unit) and ``scale`` (display = value * scale)."""

    label: str
    scale: float


def metric_unit(metric: str, values: Sequence[float] | pd.Series) -> MetricUnit:
    """A readable unit for ``metric`` given the values it takes (s -> ms/us, pJ -> uJ, ...)."""
    arr = pd.to_numeric(pd.Series(values), errors="coerce").abs()
    top = float(arr.max()) if arr.notna().any() else 0.0
    name = metric.removeprefix("total_").replace("_", " ")
    if metric.endswith("_pj"):
        unit, per = energy_unit(top)
        return MetricUnit(f"{name[:-3]} ({unit})", 1.0 / per)
    if metric.endswith("_per_s"):  # a rate (samples_per_s), not a time
        return MetricUnit(f"{name[:-6]}/s", 1.0)
    if metric.endswith("_s"):
        for unit, per in (("s", 1.0), ("ms", 1e-3), ("\u00b5s", 1e-6), ("ns", 1e-9)):
            if top >= per or unit == "ns":
                return MetricUnit(f"{name[:-2]} ({unit})", 1.0 / per)
    if metric.endswith("_w"):
        if top >= 1.0 or top == 0.0:
            return MetricUnit(f"{name[:-2]} (W)", 1.0)
        return MetricUnit(f"{name[:-2]} (mW)", 1e3)
    if metric.endswith("_mm2"):
        return MetricUnit(f"{name[:-4]} (mm\u00b2)", 1.0)
    if metric.endswith("_gops"):
        return MetricUnit(f"{name[:-5]} GOP/s", 1.0)
    if metric.endswith("_bytes"):
        return MetricUnit(f"{name[:-6]} (bytes)", 1.0)
    return MetricUnit(name, 1.0)


@dataclass(frozen=True)
class AxisValues:
    """Plot positions of one swept axis: numeric (maybe log2) or categorical."""

    positions: np.ndarray
    ticks: list[float]
    labels: list[str]
    log: bool
    numeric: bool


def axis_label(value: Any) -> str:
    """Tick label of an axis value: compact numbers (``400M``, ``64``, ``0.5``), else text."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        return str(value)
    return si_format(float(value))


def axis_values(column: pd.Series) -> AxisValues:
    """Positions of ``column``'s values on a plot axis, with its tick positions and labels."""
    values = column.tolist()
    present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    numeric = bool(present) and all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool | np.bool_)
        for v in present
    )
    if numeric:
        pos = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
        uniq = sorted(set(pos[np.isfinite(pos)].tolist()))
        log = bool(uniq) and uniq[0] > 0 and uniq[-1] / uniq[0] >= 8
        if len(uniq) > 12:  # let matplotlib choose the ticks
            return AxisValues(pos, [], [], log, True)
        return AxisValues(pos, uniq, [axis_label(u) for u in uniq], log, True)

    def text(v: Any) -> str:  # a value left unset (null) shows as the tables show it
        return MISSING if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)

    order: list[str] = []
    for v in values:
        if text(v) not in order:
            order.append(text(v))
    with contextlib.suppress(ValueError):  # numbers as text sort as numbers
        order = sorted(order, key=lambda s: (float(s), s))
    index = {s: i for i, s in enumerate(order)}
    pos = np.array([index[text(v)] for v in values], dtype=float)
    return AxisValues(pos, [float(i) for i in range(len(order))], order, False, False)


def ok_points(points: pd.DataFrame) -> pd.DataFrame:
    """The rows of a totals frame whose ``status`` is ``ok`` (all rows when it has none)."""
    if "status" not in points:
        return points
    return points[points["status"].astype(str) == "ok"]


def spans_wide(values: np.ndarray, span: float = 50.0) -> bool:
    """Whether an axis of ``values`` is drawn on a log scale: its finite values are all
    positive and span more than ``span`` x."""
    v = values[np.isfinite(values)]
    return bool(len(v)) and v.min() > 0 and v.max() / v.min() > span


@dataclass(frozen=True)
class ColourClasses:
    """How points are coloured by a swept axis: its distinct finite ``values`` (ascending) and
    their ``labels``; ``discrete``: one tab10 colour per value (text, or at most
    :data:`MAX_DISCRETE` numbers; else a colour bar), ``index``: each point's value number
    (None where the point has no finite value)."""

    values: list[float]
    labels: list[str]
    discrete: bool
    index: list[int | None]


def colour_classes(xv: AxisValues) -> ColourClasses:
    """The :class:`ColourClasses` of a colouring axis's positions."""
    pos = xv.positions
    uniq = sorted(set(pos[np.isfinite(pos)].tolist()))
    labels = (
        xv.labels if xv.labels and len(xv.labels) == len(uniq) else [axis_label(u) for u in uniq]
    )
    number = {u: i for i, u in enumerate(uniq)}
    index = [number[p] if np.isfinite(p) else None for p in pos.tolist()]
    return ColourClasses(
        uniq, [str(lab) for lab in labels], not xv.numeric or len(uniq) <= MAX_DISCRETE, index
    )
