"""The run report's figures as SVG text (``svg_charts``), from the result's rows, no pandas.

Each figure draws what its matplotlib twin in ``plots`` / ``accel_plots`` draws (same data,
colours, captions and axis conventions); ``figures_for_run`` picks them as ``figures_for``
does. ``layer_records`` gives the rows as ``to_dataframe().to_dict(orient="records")``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from archsim.csv_rows import frame_records
from archsim.report.formatting import energy_unit, si_format
from archsim.report.svg_charts import (
    TAB10,
    TAB20,
    Bars,
    HLine,
    Line,
    Marks,
    Panel,
    Point,
    Scatter,
    layer_chart,
    scatter_chart,
)
from archsim.results import RunResult

__all__ = ["CAPTIONS", "CLOCK_LIMITS", "Table", "clock_limits", "layer_records", "run_figures"]


def layer_records(result: RunResult) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of ``result.to_dataframe().to_dict(orient="records")``, no pandas."""
    return frame_records([lr.row() for lr in result.layers])


BAR_COLOR = "#4c72b0"
MARK_COLOR = "#c44e52"
_IDLE_COLOR = "#e8a5a5"
_PAD_COLOR = "#dd8452"
_BOUND_COLORS = {"compute": "#4c72b0", "memory": "#dd8452", "latency": "#8c8c8c"}
#: SM-clock bar colours and legend names by ``tc_clock_limit`` (what holds the clock down)
CLOCK_LIMITS = {
    "max_clock": ("#55a868", "at max boost"),
    "locked_clock": ("#64b5cd", "at the locked clock"),
    "tensor_current": ("#8172b3", "tensor peak-current cap"),
    "power": ("#c44e52", "held at the power limit"),
}
_ENERGY_COL = re.compile(r"^energy_(?P<comp>.+)_pj$")
_SPEEDUP = re.compile(r"^speedup_vs_(?P<hw>.+)$")

#: column name -> one value per layer
Table = dict[str, list[Any]]


def _num(t: Table, col: str) -> list[float]:
    out = []
    for v in t[col]:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            out.append(float("nan"))
    return out


def _percent(decimals: int | None) -> Callable[[float], str]:
    if decimals is None:
        return lambda v: f"{v:g}%"
    return lambda v: f"{v:.{decimals}f}%"


def _labels(t: Table, n: int) -> list[str]:
    return [str(x) for x in t["layer"]] if "layer" in t else [str(i) for i in range(n)]


def plot_time(t: Table, n: int) -> str:
    p = Panel("Time per layer", "time (\u00b5s)", si_format)
    if n:
        t_us = [v * 1e6 for v in _num(t, "time_s")]
        p.bars.append(Bars(t_us, BAR_COLOR, "simulated" if "eie_ideal_cycles" in t else ""))
        if "eie_ideal_cycles" in t:
            cycles = _num(t, "cycles")
            per = [u / c if c > 0 else 0.0 for u, c in zip(t_us, cycles, strict=True)]
            ideal = [i * q for i, q in zip(_num(t, "eie_ideal_cycles"), per, strict=True)]
            p.marks.append(Marks(ideal, MARK_COLOR, "imbalance-free"))
    return layer_chart(_labels(t, n), [p])


def plot_utilization(t: Table, n: int) -> str:
    p = Panel("MAC utilization per layer", "utilization", _percent(0))
    if n:
        util = [100.0 * u for u in _num(t, "utilization")]
        p.bars.append(Bars(util, BAR_COLOR))
        cycles = _num(t, "cycles")
        if sum(cycles) > 0:
            mean = math.fsum(u * c for u, c in zip(util, cycles, strict=True)) / math.fsum(cycles)
            p.lines.append(HLine(mean, MARK_COLOR, f"run average {mean:.1f} % (cycle-weighted)"))
        p.ylim = (0.0, max(100.0, max(util, default=0.0) * 1.05))
    return layer_chart(_labels(t, n), [p])


def energy_columns(columns: Sequence[str]) -> list[str]:
    return [c for c in columns if _ENERGY_COL.match(str(c))]


def plot_energy(t: Table, n: int) -> str:
    p = Panel(
        "Energy per layer by component", "energy", si_format, height=300.0, legend_right="component"
    )
    # each column converted once: once per layer and column made 10,000 layers take 260 s
    nums = {c: _num(t, c) for c in energy_columns(list(t))}
    cols = [c for c, v in nums.items() if math.fsum(abs(x) for x in v) > 0.0]
    if n and cols:
        totals = [math.fsum(nums[c][i] for c in cols) for i in range(n)]
        top = max(totals)
        unit, scale = energy_unit(top)
        p.ylabel = f"energy ({unit})"
        colors = TAB10 if len(cols) <= 10 else TAB20
        bottom = [0.0] * n
        for i, col in enumerate(cols):
            values = [v / scale for v in nums[col]]
            name = _ENERGY_COL.match(col).group("comp").replace("_", " ")  # type: ignore[union-attr]
            p.bars.append(Bars(values, colors[i % len(colors)], name, bottoms=list(bottom)))
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    return layer_chart(_labels(t, n if cols else 0), [p])


def plot_eie_balance(t: Table, n: int) -> str:
    top = Panel(
        "EIE load balance: PE busy vs starved", "share of cycles", _percent(None), height=220.0
    )
    if not n:
        return layer_chart([], [top])
    busy = [100.0 * v for v in _num(t, "eie_load_balance")]
    top.bars.append(Bars(busy, BAR_COLOR, "busy (average PE)"))
    top.bars.append(Bars([100.0 - b for b in busy], _IDLE_COLOR, "starved", bottoms=busy))
    if "eie_max_pe_busy_cycles" in t:
        cycles = _num(t, "cycles")
        peak = [
            100.0 * m / c if c > 0 else 0.0
            for m, c in zip(_num(t, "eie_max_pe_busy_cycles"), cycles, strict=True)
        ]
        top.marks.append(Marks(peak, "#222222", "busiest PE", stroke=1.6))
    floor = min([b for b in busy if not math.isnan(b)], default=100.0)
    top.ylim = (max(0.0, 10.0 * math.floor(floor / 10.0) - 10.0), 100.0)
    pad = [100.0 * (1.0 - v) for v in _num(t, "eie_real_work")]
    bottom = Panel(
        "Padding share (zero entries stored to bridge index gaps)",
        "of stored entries",
        _percent(1 if max(pad) < 5 else 0),
        height=140.0,
    )
    bottom.bars.append(Bars(pad, _PAD_COLOR))
    return layer_chart(_labels(t, n), [top, bottom])


def plot_scnn_barrier(t: Table, n: int) -> str:
    p = Panel(
        "SCNN: multiplier utilization vs barrier idle", "share", _percent(0), ylim=(0.0, 100.0)
    )
    if n:
        p.bars.append(
            Bars(
                [100.0 * v for v in _num(t, "utilization")],
                BAR_COLOR,
                "utilization",
                offset=-0.19,
                width=0.38,
            )
        )
        p.bars.append(
            Bars(
                [100.0 * v for v in _num(t, "scnn_barrier_idle")],
                _IDLE_COLOR,
                "idle at group barriers",
                offset=0.19,
                width=0.38,
            )
        )
    return layer_chart(_labels(t, n), [p])


def plot_speedup(t: Table, n: int) -> str:
    cols = [c for c in t if _SPEEDUP.match(str(c))]
    names = [_SPEEDUP.match(c).group("hw") for c in cols]  # type: ignore[union-attr]
    p = Panel(
        f"Speed-up vs {', '.join(names) or 'baseline'} per layer",
        "baseline / this (\u00d7)",
        lambda v: f"{v:g}",
    )
    if not n or not cols:
        return layer_chart([], [p])
    series = []
    for col, hw in zip(cols, names, strict=True):
        series.append((col, f"speed-up vs {hw}"))
        if f"energy_ratio_vs_{hw}" in t:
            series.append((f"energy_ratio_vs_{hw}", f"energy ratio vs {hw}"))
    width = 0.76 / len(series)
    palette = [BAR_COLOR, "#55a868", "#8172b3", "#937860"]
    for i, (col, label) in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width
        p.bars.append(Bars(_num(t, col), palette[i % 4], label, offset=offset, width=width))
    p.lines.append(HLine(1.0, "#555555", stroke=1.0))
    return layer_chart(_labels(t, n), [p])


def clock_limits(limits: Sequence[str]) -> list[str]:
    """The ``tc_clock_limit`` values present, known ones first (the legend's order)."""
    present = set(limits)
    return [k for k in CLOCK_LIMITS if k in present] + sorted(present - set(CLOCK_LIMITS))


def plot_clock(t: Table, n: int) -> str:
    top = Panel("SM clock per layer, solved under the power limit", "SM clock (MHz)",
                lambda v: f"{v:g}", height=220.0)  # fmt: skip
    if not n:
        return layer_chart([], [top])
    mhz = [v / 1e6 for v in _num(t, "clock_hz")]
    limit = [str(x) for x in t["tc_clock_limit"]] if "tc_clock_limit" in t else [""] * n
    for name in clock_limits(limit):
        color, label = CLOCK_LIMITS.get(name, ("#937860", name or "clock"))
        values = [m if lim == name else 0.0 for m, lim in zip(mhz, limit, strict=True)]
        top.bars.append(Bars(values, color, label))
    bottom = Panel("Board power at that clock", "board power (W)", lambda v: f"{v:g}",
                   height=160.0)  # fmt: skip
    bottom.bars.append(Bars(_num(t, "board_power_w"), BAR_COLOR))
    return layer_chart(_labels(t, n), [top, bottom])


def plot_roofline(t: Table, n: int) -> str:
    title = "Roofline: achieved TFLOP/s of each GEMM"
    need = ("tc_arithmetic_intensity", "tc_tflops", "tc_peak_tflops")
    empty = layer_chart([], [Panel(title, "achieved TFLOP/s", si_format)])
    if not n or any(c not in t for c in need):
        return empty
    ai, perf = _num(t, "tc_arithmetic_intensity"), _num(t, "tc_tflops")
    good = [
        math.isfinite(a) and math.isfinite(f) and a > 0 and f > 0
        for a, f in zip(ai, perf, strict=True)
    ]
    if not any(good):
        return empty
    bw = _num(t, "tc_hbm_bandwidth_bytes_per_s") if "tc_hbm_bandwidth_bytes_per_s" in t else None
    lo = min(a for a, g in zip(ai, good, strict=True) if g) / 2
    hi = max(a for a, g in zip(ai, good, strict=True) if g) * 2
    xs = [lo * (hi / lo) ** (i / 199) for i in range(200)]
    chart = Scatter(
        title, "arithmetic intensity (FLOP per DRAM byte)", "achieved TFLOP/s", (lo, hi)
    )
    peaks_col = _num(t, "tc_peak_tflops")
    for peak in sorted({p for p in peaks_col if math.isfinite(p) and p > 0}):
        rows = [p == peak for p in peaks_col]
        bws = [b for b, r in zip(bw, rows, strict=True) if r and math.isfinite(b)] if bw else []
        roof = [min(peak, x * max(bws) / 1e12) for x in xs] if bws else [peak] * len(xs)
        chart.lines.append(Line(xs, roof, "#333333", f"peak {peak:,.4g} TFLOP/s"))
        if bws:
            ridge = peak * 1e12 / max(bws)
            if lo < ridge < hi:
                chart.lines.append(
                    Line([ridge, ridge], [min(perf) / 1.5, peak * 1.5], "#bbbbbb", dotted=True)
                )
    bound = [str(b) for b in t["tc_bound"]] if "tc_bound" in t else [""] * n
    for name in [*_BOUND_COLORS, *sorted(set(bound) - set(_BOUND_COLORS))]:
        sel = [g and b == name for g, b in zip(good, bound, strict=True)]
        if any(sel):
            xs_sel = [a for a, s in zip(ai, sel, strict=True) if s]
            ys_sel = [f for f, s in zip(perf, sel, strict=True) if s]
            chart.points.append(
                Point(
                    xs_sel, ys_sel, _BOUND_COLORS.get(name, "#937860"), f"{name}-bound ({sum(sel)})"
                )
            )
    return scatter_chart(chart)


#: figure id -> caption (the HTML report's, also ``accel_plots.figures_for``'s)
CAPTIONS = {
    "time": "Time per layer (time_s: the layer's cycles at the clock).",
    "utilization": "Effective MACs / (cycles \u00d7 peak MACs per cycle); the dashed line is the "
    "cycle-weighted average over the layers.",
    "energy": "Energy per layer, stacked by priced component.",
    "eie-balance": "Top: share of each layer's cycles the average PE spends on its entries (busy) "
    "or waiting for activations (starved); the black mark is the busiest PE, which sets the "
    "layer's time (the axis may start above 0 % to show the starved part). Bottom: padding "
    "zeros among the stored entries (1 \u2212 eie_real_work).",
    "scnn-barrier": "Multiplier utilization and the share of PE time spent idle at "
    "output-channel group barriers (scnn_barrier_idle), per layer.",
    "speedup": "Speed-up (baseline time / this time) and energy ratio (baseline energy / this "
    "energy) per layer; above the dashed line this accelerator wins.",
    "clock": "Top: the SM clock each layer runs at when run back to back, coloured by what "
    "limits it (max boost, the tensor pipes' peak-current cap, or the board power limit); "
    "bottom: the board power there (static + priced actions / time).",
    "roofline": "Each GEMM at its arithmetic intensity and achieved throughput, under the roofs "
    "min(peak, intensity \u00d7 HBM bandwidth); the dotted line is the ridge point.",
}
#: (id, figure) of every run's figures, in page order
_COMMON: tuple[tuple[str, Callable[[Table, int], str]], ...] = (
    ("time", plot_time),
    ("utilization", plot_utilization),
    ("energy", plot_energy),
)
#: (id, figure, applies-to(accelerator, table)) as ``accel_plots.figures_for``
_SPECIFIC: tuple[tuple[str, Callable[[Table, int], str], Callable[[str, Table], bool]], ...] = (
    (
        "eie-balance",
        plot_eie_balance,
        lambda acc, t: "eie_load_balance" in t and "eie_real_work" in t,
    ),
    ("scnn-barrier", plot_scnn_barrier, lambda acc, t: "scnn_barrier_idle" in t),
    ("speedup", plot_speedup, lambda acc, t: any(_SPEEDUP.match(str(c)) for c in t)),
    ("clock", plot_clock, lambda acc, t: "clock_hz" in t and "board_power_w" in t),
    (
        "roofline",
        plot_roofline,
        lambda acc, t: acc == "tensor_core" or "tc_arithmetic_intensity" in t,
    ),
)


def run_figures(
    accelerator: str, columns: list[str], records: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """(id, SVG text) of the figures of a run, common ones first."""
    table: Table = {c: [r[c] for r in records] for c in columns}
    n = len(records)
    chosen = [*_COMMON, *((i, fn) for i, fn, ok in _SPECIFIC if ok(accelerator, table))]
    return [(fig_id, fn(table, n)) for fig_id, fn in chosen]
