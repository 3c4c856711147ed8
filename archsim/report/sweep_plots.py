"""Figures of a sweep's totals frame (one row per point): metric vs parameter, Pareto scatter.

The frame has one column per swept axis (dotted config path) and one per metric; only rows with
``status == "ok"`` are plotted. Like :mod:`archsim.report.plots`, every function returns a
:class:`~matplotlib.figure.Figure` on the Agg canvas without touching pyplot's global state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import BoundaryNorm, LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullFormatter

from archsim.report.formatting import si_format
from archsim.report.sweep_axes import (
    AxisValues,
    MetricUnit,
    axis_values,
    colour_classes,
    metric_unit,
    ok_points,
    spans_wide,
)

__all__ = [
    "MetricUnit",
    "metric_unit",
    "axis_values",
    "plot_metric_grid",
    "plot_pareto",
    "MAX_GRID_COLUMNS",
]

#: Panels per row of the metric grid; more axes start a new figure.
MAX_GRID_COLUMNS = 4
#: Dot clouds of more points than this are drawn as one embedded image per panel (fronts,
#: lines, axes and text stay vector): on the 1,000-point EIE sweep the metric grid's SVG
#: goes from 1,090 kB to 160 kB and draws about 0.2 s faster.
RASTER_ABOVE_POINTS = 500
_LINE = "#4c72b0"
_DOT = "#8c8c8c"
_FRONT = "#c44e52"
#: Distinct values up to which an axis is coloured with discrete colours (else a colour bar).


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _style(ax: Axes) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)


def _set_x(ax: Axes, xv: AxisValues, columns: int = 1) -> None:
    if xv.log:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_formatter(NullFormatter())
    if xv.ticks:
        ax.set_xticks(xv.ticks)
        many = sum(len(s) + 3 for s in xv.labels) > 150 / columns
        ax.set_xticklabels(xv.labels, rotation=30 if many else 0, ha="right" if many else "center")
        ax.set_xticks([], minor=True)
    elif not xv.log:
        ax.xaxis.set_major_formatter(FuncFormatter(si_format))
    if not xv.numeric and xv.ticks:
        ax.set_xlim(-0.5, len(xv.ticks) - 0.5)


def _log_if_wide(ax: Axes, values: np.ndarray, span: float = 50.0, axis: str = "y") -> None:
    """Log scale on ``axis`` when the finite values are all positive and span > ``span`` x."""
    if spans_wide(values, span):
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")


def _no_data(fig: Figure, text: str) -> Figure:
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def plot_metric_grid(
    points: pd.DataFrame, axes: Sequence[str], metrics: Sequence[str]
) -> list[Figure]:
    """Small multiples: one panel per (metric row, swept-axis column).

    Each panel shows every successful point (grey dots), the median over the other axes (line)
    and their min-max range (band). Axes whose values span 8x or more use a log2 scale. At most
    :data:`MAX_GRID_COLUMNS` axes per figure; more axes give more figures.
    """
    ok = ok_points(points)
    if ok.empty or not axes or not metrics:
        return [_no_data(_new_figure(12.5, 2.0), "no successful points to plot")]
    figures = []
    for first in range(0, len(axes), MAX_GRID_COLUMNS):
        chunk = list(axes[first : first + MAX_GRID_COLUMNS])
        n_rows, n_cols = len(metrics), len(chunk)
        fig = _new_figure(12.5, 0.6 + 2.1 * n_rows)
        grid = fig.subplots(n_rows, n_cols, squeeze=False, sharex="col", sharey="row")
        for c, axis in enumerate(chunk):
            xv = axis_values(ok[axis])
            for r, metric in enumerate(metrics):
                ax = grid[r][c]
                unit = metric_unit(metric, ok[metric])
                y = pd.to_numeric(ok[metric], errors="coerce").to_numpy(dtype=float) * unit.scale
                finite = np.isfinite(y) & np.isfinite(xv.positions)
                x, yy = xv.positions[finite], y[finite]
                ax.scatter(
                    x, yy, s=9, color=_DOT, alpha=0.45, linewidths=0, zorder=2,
                    rasterized=len(x) > RASTER_ABOVE_POINTS,
                )  # fmt: skip
                if len(x):
                    stats = pd.DataFrame({"x": x, "y": yy}).groupby("x")["y"]
                    med, lo, hi = stats.median(), stats.min(), stats.max()
                    ax.fill_between(med.index, lo, hi, color=_LINE, alpha=0.13, linewidth=0)
                    ax.plot(med.index, med.values, color=_LINE, marker="o", ms=3.5, lw=1.6)
                _style(ax)
                _set_x(ax, xv, n_cols)
                if c == 0:
                    _log_if_wide(ax, pd.to_numeric(ok[metric], errors="coerce").to_numpy(float))
                if c == 0:
                    ax.yaxis.set_major_formatter(FuncFormatter(si_format))
                    ax.set_ylabel(unit.label, fontsize=9)
                if r == n_rows - 1:
                    ax.set_xlabel(axis, fontsize=9)
        handles = [
            Line2D([], [], color=_DOT, marker="o", ls="", ms=4, alpha=0.6, label="point"),
            Line2D([], [], color=_LINE, marker="o", ms=4, label="median over other axes"),
            matplotlib.patches.Patch(color=_LINE, alpha=0.2, label="min\u2013max"),
        ]
        fig.legend(handles=handles, loc="outside upper right", ncols=3, fontsize=8, frameon=False)
        figures.append(fig)
    return figures


def _colour(ax: Axes, fig: Figure, column: pd.Series, name: str) -> Any:
    """Colours of the points by ``column``, with a legend (few values) or a colour bar."""
    xv = axis_values(column)
    classes = colour_classes(xv)
    uniq = classes.values
    if classes.discrete:
        cmap = matplotlib.colormaps["tab10"]
        colours = ["#bbbbbb" if i is None else cmap(i % 10) for i in classes.index]
        handles = [
            Line2D([], [], color=cmap(i % 10), marker="o", ls="", ms=5, label=lab)
            for i, lab in enumerate(classes.labels)
        ]
        fig.legend(
            handles=handles, title=name, fontsize=8, title_fontsize=8, frameon=False,
            loc="outside right upper",
        )  # fmt: skip
        return colours
    norm: Normalize = LogNorm(uniq[0], uniq[-1]) if xv.log else Normalize(uniq[0], uniq[-1])
    if len(uniq) <= 24:
        mids = [(a + b) / 2 for a, b in zip(uniq[:-1], uniq[1:], strict=True)]
        edges = [uniq[0] - 0.5, *mids, uniq[-1] + 0.5]
        norm = BoundaryNorm(edges, 256)
    sm = matplotlib.cm.ScalarMappable(norm=norm, cmap="viridis")
    bar = fig.colorbar(sm, ax=ax, pad=0.01, fraction=0.04)
    bar.set_label(name, fontsize=8)
    bar.ax.tick_params(labelsize=7)
    return sm.to_rgba(xv.positions)


def plot_pareto(
    points: pd.DataFrame,
    x: str,
    y: str,
    front: pd.Series,
    color_by: str | None = None,
    senses: tuple[str, str] = ("min", "min"),
) -> Figure:
    """Scatter of metric ``y`` vs metric ``x`` over the successful points, front highlighted.

    ``front`` is a boolean Series aligned with ``points`` (see ``pareto_mask``); the front is
    drawn as red-edged markers joined by a staircase (a line unless both ``senses`` are
    "min"). Points are coloured by ``color_by`` (a swept axis) when given. Axes spanning more
    than 50x use a log scale.
    """
    fig = _new_figure(12.5, 5.2)
    ok = ok_points(points)
    xs = pd.to_numeric(ok[x], errors="coerce") if x in ok else pd.Series(dtype=float)
    ys = pd.to_numeric(ok[y], errors="coerce") if y in ok else pd.Series(dtype=float)
    good = np.isfinite(xs.to_numpy(dtype=float)) & np.isfinite(ys.to_numpy(dtype=float))
    if not good.any():
        return _no_data(fig, f"no successful points with finite {x} and {y}")
    ok, xs, ys = ok[good], xs[good], ys[good]
    ux, uy = metric_unit(x, xs), metric_unit(y, ys)
    xd, yd = xs.to_numpy(dtype=float) * ux.scale, ys.to_numpy(dtype=float) * uy.scale
    ax = fig.add_subplot()
    colours: Any = _DOT
    if color_by is not None and color_by in ok:
        colours = _colour(ax, fig, ok[color_by], color_by)
    ax.scatter(
        xd, yd, s=22, c=colours, alpha=0.75, linewidths=0, zorder=2,
        rasterized=len(xd) > RASTER_ABOVE_POINTS,
    )  # fmt: skip
    on = front.reindex(ok.index).fillna(False).to_numpy(dtype=bool)
    if on.any():
        fx, fy = xd[on], yd[on]
        order = np.argsort(fx, kind="stable")
        if senses == ("min", "min"):
            ax.step(fx[order], fy[order], where="post", color=_FRONT, lw=1.3, zorder=3)
        else:
            ax.plot(fx[order], fy[order], color=_FRONT, lw=1.3, zorder=3)
        ax.scatter(
            fx, fy, s=60, facecolors="none", edgecolors=_FRONT, linewidths=1.6, zorder=4,
            label=f"Pareto front ({int(on.sum())} of {len(xd)} points)",
        )  # fmt: skip
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=8, frameon=False)
    _log_if_wide(ax, xd, axis="x")
    _log_if_wide(ax, yd, axis="y")
    ax.set_xlabel(ux.label, fontsize=9)
    ax.set_ylabel(uy.label, fontsize=9)
    _style(ax)
    return fig
