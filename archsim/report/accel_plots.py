"""Per-accelerator figures of a run: EIE load balance, SCNN barrier idle, speed-ups, roofline.

Each function takes ``RunResult.to_dataframe()`` and returns a Figure (Agg canvas, no pyplot);
``figures_for`` picks the ones that apply to a run from its accelerator and columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, PercentFormatter

from archsim.report.plots import (
    BAR_COLOR,
    MARK_COLOR,
    empty_figure,
    layer_axis,
    layer_figure,
    layer_labels,
    new_figure,
    si_format,
)
from archsim.report.run_figures import CAPTIONS, CLOCK_LIMITS, clock_limits

__all__ = [
    "plot_time_per_layer",
    "plot_eie_load_balance",
    "plot_scnn_barrier",
    "plot_speedup",
    "plot_clock",
    "plot_roofline",
    "speedup_columns",
    "figures_for",
]

_IDLE_COLOR = "#e8a5a5"
_PAD_COLOR = "#dd8452"
_SPEEDUP = re.compile(r"^speedup_vs_(?P<hw>.+)$")
#: Roofline point colours by ``tc_bound``.
_BOUND_COLORS = {"compute": "#4c72b0", "memory": "#dd8452", "latency": "#8c8c8c"}


def _legend_above(ax: Axes, ncols: int = 3) -> None:
    ax.legend(fontsize=8, frameon=False, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=ncols)


def _num(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)


def plot_time_per_layer(df: pd.DataFrame) -> Figure:
    """Bars of time per layer in microseconds; EIE also marks its imbalance-free time."""
    fig, ax = layer_figure(df, "Time per layer")
    if df.empty:
        return fig
    x = np.arange(len(df))
    t_us = _num(df, "time_s") * 1e6
    ax.bar(x, t_us, color=BAR_COLOR, width=0.7, label="simulated")
    if "eie_ideal_cycles" in df:
        cycles = _num(df, "cycles")
        per_cycle = np.divide(t_us, cycles, out=np.zeros_like(t_us), where=cycles > 0)
        ideal = _num(df, "eie_ideal_cycles") * per_cycle
        ax.hlines(ideal, x - 0.35, x + 0.35, colors=MARK_COLOR, linewidths=2.0, zorder=3,
                  label="imbalance-free")  # fmt: skip
        _legend_above(ax, 2)
    ax.set_ylabel("time (\u00b5s)")
    ax.yaxis.set_major_formatter(FuncFormatter(si_format))
    layer_axis(ax, layer_labels(df))
    return fig


def _two_panels(df: pd.DataFrame, title: str, height: float) -> tuple[Figure, Axes, Axes]:
    """A per-layer figure of two stacked axes (3:2) sharing the layer axis; ``title`` on top."""
    fig = new_figure(len(df), height=height)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    top.set_title(title, loc="left", fontsize=11)
    return fig, top, bottom


def plot_eie_load_balance(df: pd.DataFrame) -> Figure:
    """EIE per layer: average PE busy vs starved share of the layer's cycles (busiest PE marked),
    and the share of stored entries that are padding zeros."""
    fig, top, bottom = _two_panels(df, "EIE load balance: PE busy vs starved", 5.4)
    if df.empty:
        return empty_figure(fig, top)
    x = np.arange(len(df))
    busy = 100.0 * _num(df, "eie_load_balance")
    top.bar(x, busy, color=BAR_COLOR, width=0.7, label="busy (average PE)")
    top.bar(x, 100.0 - busy, bottom=busy, color=_IDLE_COLOR, width=0.7, label="starved")
    if "eie_max_pe_busy_cycles" in df:
        cycles = _num(df, "cycles")
        peak = 100.0 * np.divide(
            _num(df, "eie_max_pe_busy_cycles"), cycles, out=np.zeros(len(df)), where=cycles > 0
        )
        top.hlines(peak, x - 0.35, x + 0.35, colors="#222222", linewidths=1.6, zorder=3,
                   label="busiest PE")  # fmt: skip
    floor = float(np.nanmin(busy, initial=100.0))
    top.set_ylim(max(0.0, 10.0 * np.floor(floor / 10.0) - 10.0), 100.0)  # zoom on the idle part
    top.set_ylabel("share of cycles")
    top.yaxis.set_major_formatter(PercentFormatter(decimals=None))
    top.grid(axis="y", color="#dddddd", linewidth=0.6)
    top.spines[["top", "right"]].set_visible(False)
    _legend_above(top)
    pad = 100.0 * (1.0 - _num(df, "eie_real_work"))
    bottom.bar(x, pad, color=_PAD_COLOR, width=0.7)
    bottom.set_title("Padding share (zero entries stored to bridge index gaps)", loc="left",
                     fontsize=10)  # fmt: skip
    bottom.set_ylabel("of stored entries")
    bottom.yaxis.set_major_formatter(PercentFormatter(decimals=1 if pad.max() < 5 else 0))
    layer_axis(bottom, layer_labels(df))
    return fig


def speedup_columns(df: pd.DataFrame) -> list[str]:
    """The ``speedup_vs_<baseline>`` columns of ``df`` (added by ``simulate(baseline=...)``)."""
    return [c for c in df.columns if _SPEEDUP.match(str(c))]


def plot_scnn_barrier(df: pd.DataFrame) -> Figure:
    """SCNN per layer: multiplier utilisation beside the share of PE time idle at barriers."""
    fig, ax = layer_figure(df, "SCNN: multiplier utilization vs barrier idle")
    if df.empty:
        return fig
    x = np.arange(len(df))
    ax.bar(x - 0.19, 100.0 * _num(df, "utilization"), width=0.38, color=BAR_COLOR,
           label="utilization")  # fmt: skip
    ax.bar(x + 0.19, 100.0 * _num(df, "scnn_barrier_idle"), width=0.38, color=_IDLE_COLOR,
           label="idle at group barriers")  # fmt: skip
    ax.set_ylim(0, 100)
    ax.set_ylabel("share")
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    _legend_above(ax, 2)
    layer_axis(ax, layer_labels(df))
    return fig


def plot_speedup(df: pd.DataFrame) -> Figure:
    """Speed-up (and energy ratio, when present) against each baseline per layer; 1x dashed."""
    fig = new_figure(len(df))
    ax = fig.add_subplot()
    cols = speedup_columns(df)
    names = [_SPEEDUP.match(c).group("hw") for c in cols]  # type: ignore[union-attr]
    ax.set_title(f"Speed-up vs {', '.join(names) or 'baseline'} per layer", loc="left",
                 fontsize=11)  # fmt: skip
    if df.empty or not cols:
        return empty_figure(fig, ax)
    series = []
    for col, hw in zip(cols, names, strict=True):
        series.append((col, f"speed-up vs {hw}"))
        if f"energy_ratio_vs_{hw}" in df:
            series.append((f"energy_ratio_vs_{hw}", f"energy ratio vs {hw}"))
    x = np.arange(len(df))
    width = 0.76 / len(series)
    palette = [BAR_COLOR, "#55a868", "#8172b3", "#937860"]
    for i, (col, label) in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar(x + offset, _num(df, col), width=width, color=palette[i % 4], label=label)
    ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1.0)
    ax.set_ylabel("baseline / this (\u00d7)")
    _legend_above(ax, len(series))
    layer_axis(ax, layer_labels(df))
    return fig


def plot_clock(df: pd.DataFrame) -> Figure:
    """GPU with a power block: each layer's solved SM clock, coloured by what limits it, and
    the board power there."""
    fig, top, bottom = _two_panels(df, "SM clock per layer, solved under the power limit", 5.0)
    if df.empty:
        return empty_figure(fig, top)
    x = np.arange(len(df))
    mhz = _num(df, "clock_hz") / 1e6
    limit = df["tc_clock_limit"].astype(str).tolist() if "tc_clock_limit" in df else [""] * len(df)
    for name in clock_limits(limit):
        color, label = CLOCK_LIMITS.get(name, ("#937860", name or "clock"))
        sel = np.array([lim == name for lim in limit])
        top.bar(x[sel], mhz[sel], color=color, width=0.7, label=label)
    top.set_ylabel("SM clock (MHz)")
    top.grid(axis="y", color="#dddddd", linewidth=0.6)
    top.spines[["top", "right"]].set_visible(False)
    _legend_above(top)
    bottom.bar(x, _num(df, "board_power_w"), color=BAR_COLOR, width=0.7)
    bottom.set_title("Board power at that clock", loc="left", fontsize=10)
    bottom.set_ylabel("board power (W)")
    layer_axis(bottom, layer_labels(df))
    return fig


def plot_roofline(df: pd.DataFrame) -> Figure:
    """Tensor Core roofline: each GEMM at (FLOP per DRAM byte, achieved TFLOP/s) under the roofs
    min(peak, intensity x HBM bandwidth), coloured by its bound (compute, memory, latency)."""
    fig = new_figure(0, height=5.0)
    ax = fig.add_subplot()
    ax.set_title("Roofline: achieved TFLOP/s of each GEMM", loc="left", fontsize=11)
    need = ("tc_arithmetic_intensity", "tc_tflops", "tc_peak_tflops")
    if df.empty or any(c not in df for c in need):
        return empty_figure(fig, ax)
    ai, perf = _num(df, "tc_arithmetic_intensity"), _num(df, "tc_tflops")
    good = np.isfinite(ai) & np.isfinite(perf) & (ai > 0) & (perf > 0)
    if not good.any():
        return empty_figure(fig, ax)
    bw = _num(df, "tc_hbm_bandwidth_bytes_per_s") if "tc_hbm_bandwidth_bytes_per_s" in df else None
    lo, hi = ai[good].min() / 2, ai[good].max() * 2
    xs = np.geomspace(lo, hi, 200)
    peaks = sorted({float(p) for p in _num(df, "tc_peak_tflops") if np.isfinite(p) and p > 0})
    for peak in peaks:
        rows = _num(df, "tc_peak_tflops") == peak
        bws = bw[rows & np.isfinite(bw)] if bw is not None else np.array([])
        roof = np.minimum(peak, xs * bws.max() / 1e12) if len(bws) else np.full_like(xs, peak)
        ax.plot(xs, roof, color="#333333", linewidth=1.4, zorder=2)
        ax.annotate(f"peak {peak:,.4g} TFLOP/s", (hi, peak), xytext=(-4, 4),
                    textcoords="offset points", ha="right", va="bottom", fontsize=8)  # fmt: skip
        if len(bws):
            ridge = peak * 1e12 / bws.max()
            if lo < ridge < hi:
                ax.axvline(ridge, color="#bbbbbb", linestyle=":", linewidth=1.0, zorder=1)
    bound = df["tc_bound"].astype(str).to_numpy() if "tc_bound" in df else np.full(len(df), "")
    for name in [*_BOUND_COLORS, *sorted(set(bound) - set(_BOUND_COLORS))]:
        sel = good & (bound == name)
        if sel.any():
            ax.scatter(ai[sel], perf[sel], s=18, alpha=0.8, linewidths=0, zorder=3,
                       color=_BOUND_COLORS.get(name, "#937860"),
                       label=f"{name}-bound ({int(sel.sum())})")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.grid(which="major", color="#e4e4e4", linewidth=0.6)
    ax.spines[["top", "right"]].set_visible(False)
    _legend_above(ax, 3)
    return fig


#: (id, caption, function, applies-to(accelerator, frame)) of the accelerator-specific figures.
_SPECIFIC: tuple[tuple[str, str, Callable[[pd.DataFrame], Figure], Callable[..., bool]], ...] = (
    (
        "eie-balance",
        CAPTIONS["eie-balance"],
        plot_eie_load_balance,
        lambda acc, df: "eie_load_balance" in df and "eie_real_work" in df,
    ),
    (
        "scnn-barrier",
        CAPTIONS["scnn-barrier"],
        plot_scnn_barrier,
        lambda acc, df: "scnn_barrier_idle" in df,
    ),
    ("speedup", CAPTIONS["speedup"], plot_speedup, lambda acc, df: bool(speedup_columns(df))),
    (
        "clock",
        CAPTIONS["clock"],
        plot_clock,
        lambda acc, df: "clock_hz" in df and "board_power_w" in df,
    ),
    (
        "roofline",
        CAPTIONS["roofline"],
        plot_roofline,
        lambda acc, df: acc == "tensor_core" or "tc_arithmetic_intensity" in df,
    ),
)


def figures_for(
    accelerator: str, df: pd.DataFrame
) -> list[tuple[str, str, Callable[[pd.DataFrame], Figure]]]:
    """(id, caption, plot function) of the accelerator-specific figures that apply to a run."""
    return [(i, cap, fn) for i, cap, fn, applies in _SPECIFIC if applies(accelerator, df)]
