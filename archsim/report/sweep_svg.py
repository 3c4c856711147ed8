"""The sweep report's figures as SVG text: the Pareto scatter and the metric grid.

They draw what their matplotlib twins in ``sweep_plots`` draw (same data, colours, scales and
captions; those stay for the Python API and PNG export), written directly as text: importing
matplotlib and rendering the two figures was 0.9-1.3 s of a 1,000-point EIE sweep's 7-12 s, all
of it after the last point (or, with workers, stolen from them while they ran). A dot cloud is
one path per colour, each dot a zero-length segment with a round cap, at 0.5 px resolution and
without repeats, so 1,000 points in nine panels stay small. Output depends only on the inputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from archsim.report.formatting import si_format
from archsim.report.svg_charts import (
    GRID,
    TAB10,
    coord,
    legend_above,
    nice_ticks,
    svg_root,
    svg_text,
    text_width,
)
from archsim.report.sweep_axes import (
    AxisValues,
    axis_label,
    axis_values,
    colour_classes,
    metric_unit,
    ok_points,
    spans_wide,
)

__all__ = ["metric_grid_svgs", "pareto_svg", "MAX_GRID_COLUMNS"]

#: Panels per row of the metric grid; more axes start a new figure (as ``sweep_plots``).
MAX_GRID_COLUMNS = 4
_WIDTH = 1100.0
_LEFT, _RIGHT = 72.0, 16.0
_LINE, _DOT, _FRONT = "#4c72b0", "#8c8c8c", "#c44e52"
#: matplotlib's viridis at nine evenly spaced points (colour bars of continuous axes)
_VIRIDIS = (
    (0x44, 0x01, 0x54), (0x47, 0x2D, 0x7B), (0x3B, 0x52, 0x8B), (0x2C, 0x72, 0x8E),
    (0x21, 0x91, 0x8C), (0x28, 0xAE, 0x80), (0x5E, 0xC9, 0x62), (0xAD, 0xDC, 0x30),
    (0xFD, 0xE7, 0x25),
)  # fmt: skip


@dataclass(frozen=True)
class _Scale:
    """Data range [lo, hi] on a linear or logarithmic axis, mapped onto pixels [p0, p1]."""

    lo: float
    hi: float
    log: bool
    p0: float = 0.0
    p1: float = 1.0

    def at(self, p0: float, p1: float) -> _Scale:
        return _Scale(self.lo, self.hi, self.log, p0, p1)

    def __call__(self, v: float | np.ndarray) -> float | np.ndarray:
        f = np.log if self.log else (lambda a: a)
        span = (f(self.hi) - f(self.lo)) or 1.0
        return self.p0 + (f(v) - f(self.lo)) / span * (self.p1 - self.p0)


def _range(values: np.ndarray, log: bool) -> _Scale:
    """The range of the finite ``values`` with matplotlib's 5 % margins (in log space if log)."""
    v = values[np.isfinite(values) & ((values > 0) if log else True)]
    if not len(v):
        return _Scale(0.0, 1.0, False)
    lo, hi = float(v.min()), float(v.max())
    if log:
        a, b = math.log(lo), math.log(hi)
        pad = (b - a) * 0.05 or 0.1
        return _Scale(math.exp(a - pad), math.exp(b + pad), True)
    pad = (hi - lo) * 0.05 or (abs(lo) * 0.05 or 0.5)
    return _Scale(lo - pad, hi + pad, False)


def _ticks(s: _Scale, base: float = 10.0, target: int = 5) -> list[float]:
    """Tick values inside the range: round steps, or the powers of ``base`` on a log axis (with
    2x and 5x between them when the range holds fewer than two)."""
    if not s.log:
        return [t for t in nice_ticks(s.lo, s.hi, target) if s.lo <= t <= s.hi]
    k0, k1 = math.floor(math.log(s.lo, base)), math.ceil(math.log(s.hi, base))
    out = [base**k for k in range(k0, k1 + 1) if s.lo <= base**k <= s.hi]
    if len(out) < 2 and base == 10.0:
        out = [m * 10.0**k for k in range(k0, k1 + 1) for m in (1, 2, 5)]
        out = [t for t in out if s.lo <= t <= s.hi]
    return out


def _rotated(labels: Sequence[str] | None, width: float) -> bool:
    """Whether tick labels need turning (30 degrees) to fit ``width`` px side by side."""
    return bool(labels) and sum(len(s) + 3 for s in labels) * 5.2 > width  # type: ignore[union-attr]


def _x_axis(xv: AxisValues) -> tuple[_Scale, list[float], list[str]]:
    """A swept axis's scale, tick positions and labels (log2 when its values span >= 8x)."""
    if not xv.numeric:
        return _Scale(-0.5, len(xv.ticks) - 0.5, False), xv.ticks, xv.labels
    s = _range(xv.positions, xv.log)
    if xv.ticks:
        return s, xv.ticks, xv.labels
    ticks = _ticks(s, 2.0 if xv.log else 10.0)
    return s, ticks, [axis_label(t) for t in ticks]


def _dots(xs: np.ndarray, ys: np.ndarray, color: str, radius: float, opacity: float) -> str:
    """One path of round dots (zero-length segments) at 0.5 px resolution, repeats dropped."""
    pts = np.unique(np.round(np.column_stack([xs, ys]) * 2.0).astype(np.int64), axis=0)
    d = "".join(f"M{coord(a / 2.0)} {coord(b / 2.0)}h0" for a, b in pts.tolist())
    return (
        f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{coord(2 * radius)}" '
        f'stroke-linecap="round" stroke-opacity="{opacity}"/>'
    )


def _frame(
    x: _Scale, y: _Scale, xticks: Sequence[float], xlabels: Sequence[str] | None, yfmt: bool
) -> list[str]:
    """Grid lines, the left and bottom axis lines, and tick labels (none where None/False)."""
    out: list[str] = []
    for t in _ticks(y):
        py = y(t)
        out.append(
            f'<line x1="{coord(x.p0)}" y1="{coord(py)}" x2="{coord(x.p1)}" y2="{coord(py)}" '
            f'stroke="{GRID}" stroke-width="0.6"/>'
        )
        if yfmt:
            out.append(svg_text(x.p0 - 5, py + 3.2, si_format(t), 8.0, "end"))
    rotate = _rotated(xlabels, x.p1 - x.p0)
    for i, t in enumerate(xticks):
        px = x(t)
        out.append(
            f'<line x1="{coord(px)}" y1="{coord(y.p1)}" x2="{coord(px)}" y2="{coord(y.p0)}" '
            f'stroke="{GRID}" stroke-width="0.6"/>'
        )
        if xlabels is not None and i < len(xlabels):
            if rotate:
                out.append(svg_text(px + 3, y.p0 + 12, xlabels[i], 8.0, "end", rotate=-30))
            else:
                out.append(svg_text(px, y.p0 + 12, xlabels[i], 8.0, "middle"))
    out.append(
        f'<path d="M{coord(x.p0)} {coord(y.p1)}V{coord(y.p0)}H{coord(x.p1)}" fill="none" '
        'stroke="#000" stroke-width="0.8"/>'
    )
    return out


def _pairs(xs: np.ndarray, ys: np.ndarray) -> list[str]:
    """``x,y`` pixel pairs of a polyline or polygon."""
    return [f"{coord(a)},{coord(b)}" for a, b in zip(xs, ys, strict=True)]


def _no_data(text: str, height: float = 120.0) -> str:
    return svg_root(_WIDTH, height, [svg_text(_WIDTH / 2, height / 2, text, 11.0, "middle")])


def _numbers(column: pd.Series) -> np.ndarray:
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)


def metric_grid_svgs(
    points: pd.DataFrame, axes: Sequence[str], metrics: Sequence[str]
) -> list[str]:
    """Small multiples, one panel per (metric row, swept-axis column), as ``plot_metric_grid``:
    every successful point (grey dots), the median over the other axes (line) and their
    min-max range (band); at most ``MAX_GRID_COLUMNS`` axes per figure."""
    ok = ok_points(points)
    if ok.empty or not axes or not metrics:
        return [_no_data("no successful points to plot")]
    return [
        _grid(ok, list(axes[i : i + MAX_GRID_COLUMNS]), metrics)
        for i in range(0, len(axes), MAX_GRID_COLUMNS)
    ]


def _grid(ok: pd.DataFrame, axes: list[str], metrics: Sequence[str]) -> str:
    n_cols, gap, panel_h, row_gap = len(axes), 26.0, 130.0, 16.0
    panel_w = (_WIDTH - _LEFT - _RIGHT - gap * (n_cols - 1)) / n_cols
    top = 34.0
    out = legend_above(
        [("dot", _DOT, "point"), ("line", _LINE, "median over other axes"),
         ("bar", "#c8d3e8", "min\u2013max")],
        _WIDTH - _RIGHT, 16.0,
    )  # fmt: skip
    columns = [(a, xv, *_x_axis(xv)) for a in axes for xv in [axis_values(ok[a])]]
    for r, metric in enumerate(metrics):
        unit = metric_unit(metric, ok[metric])
        raw = _numbers(ok[metric])
        y_all = raw * unit.scale
        ys = _range(y_all, spans_wide(raw)).at(top + panel_h, top)
        out.append(svg_text(16, top + panel_h / 2, unit.label, 9.0, "middle", rotate=-90))
        last = r == len(metrics) - 1
        for c, (axis, xv, xs0, ticks, labels) in enumerate(columns):
            x0 = _LEFT + c * (panel_w + gap)
            xs = xs0.at(x0, x0 + panel_w)
            xpos = xv.positions
            out += _frame(xs, ys, ticks, labels if last else None, c == 0)
            if last:
                below = 48 if _rotated(labels, panel_w) else 30
                out.append(svg_text(x0 + panel_w / 2, top + panel_h + below, axis, 9.0, "middle"))
            good = np.isfinite(y_all) & np.isfinite(xpos)
            if ys.log:
                good &= y_all > 0
            x, y = xpos[good], y_all[good]
            if not len(x):
                continue
            out.append(_dots(xs(x), ys(y), _DOT, 1.6, 0.45))
            stats = pd.DataFrame({"x": x, "y": y}).groupby("x")["y"]
            med, lo, hi = stats.median(), stats.min(), stats.max()
            px = xs(med.index.to_numpy(dtype=float))
            top_edge, low_edge = _pairs(px, ys(hi.to_numpy())), _pairs(px, ys(lo.to_numpy()))
            band = " ".join([*top_edge, *reversed(low_edge)])
            out.append(f'<polygon points="{band}" fill="{_LINE}" fill-opacity="0.13"/>')
            line = " ".join(_pairs(px, ys(med.to_numpy())))
            out.append(
                f'<polyline points="{line}" fill="none" stroke="{_LINE}" stroke-width="1.6"/>'
            )
            out.append(_dots(px, ys(med.to_numpy()), _LINE, 2.2, 1))
        top += panel_h + row_gap
    rotated = any(_rotated(labels, panel_w) for *_, labels in columns)
    return svg_root(_WIDTH, top - row_gap + (56 if rotated else 38), out)


def _viridis(f: float) -> str:
    f = min(max(f, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(f), len(_VIRIDIS) - 2)
    a, b, t = _VIRIDIS[i], _VIRIDIS[i + 1], f - i
    return "#" + "".join(f"{round(p + (q - p) * t):02x}" for p, q in zip(a, b, strict=True))


def _colours(column: pd.Series, name: str, right: float, y0: float, y1: float):
    """Each point's colour by ``column`` (a swept axis), and the legend or colour bar drawn
    right of ``right`` between ``y0`` and ``y1``."""
    xv = axis_values(column)
    pos = xv.positions
    classes = colour_classes(xv)
    uniq = classes.values
    out = [svg_text(right + 14, y0 + 4, name, 9.0)]
    if classes.discrete:
        colours = ["#bbbbbb" if i is None else TAB10[i % 10] for i in classes.index]
        for i, lab in enumerate(classes.labels):
            y = y0 + 20 + 15 * i
            out.append(_dots(np.array([right + 20.0]), np.array([y - 3.0]), TAB10[i % 10], 3, 1))
            out.append(svg_text(right + 30, y, lab, 9.0))
        return colours, out
    if len(uniq) <= 24:  # one colour per value (matplotlib's BoundaryNorm between them)
        rank = {u: i / (len(uniq) - 1) for i, u in enumerate(uniq)}
        colours = [_viridis(rank[p]) if np.isfinite(p) else "#bbbbbb" for p in pos]
        steps = [_viridis(rank[u]) for u in uniq]
    else:
        s = _Scale(uniq[0], uniq[-1], xv.log)
        colours = [_viridis(float(s(p))) if np.isfinite(p) else "#bbbbbb" for p in pos]
        steps = [_viridis(i / 31) for i in range(32)]
    h = (y1 - y0 - 20) / len(steps)
    for i, c in enumerate(reversed(steps)):
        out.append(
            f'<rect x="{coord(right + 14)}" y="{coord(y0 + 14 + i * h)}" width="12" '
            f'height="{coord(h + 0.3)}" fill="{c}"/>'
        )
    if len(uniq) <= 24:  # a label at each value's step (every other one past 12)
        every = 2 if len(uniq) > 12 else 1
        labels = [(y1 - 6 - (k + 0.5) * h, v) for k, v in enumerate(uniq) if k % every == 0]
    else:  # round values where they fall on the bar
        bar = _Scale(uniq[0], uniq[-1], xv.log, y1 - 6, y0 + 14)
        labels = [(float(bar(v)), v) for v in _ticks(_Scale(uniq[0], uniq[-1], xv.log))]
    out += [svg_text(right + 30, y + 3, axis_label(v), 8.0) for y, v in labels]
    return colours, out


def pareto_svg(
    points: pd.DataFrame,
    x: str,
    y: str,
    front: pd.Series,
    color_by: str | None = None,
    senses: tuple[str, str] = ("min", "min"),
) -> str:
    """Metric ``y`` against metric ``x`` over the successful points, as ``plot_pareto``: the
    front (``pareto_mask``, aligned with ``points``) circled and joined (a staircase when both
    are minimised), points coloured by the swept axis ``color_by``; axes spanning more than
    50x on a log scale."""
    ok = ok_points(points)
    xr = _numbers(ok[x]) if x in ok else np.zeros(0)
    yr = _numbers(ok[y]) if y in ok else np.zeros(0)
    good = np.isfinite(xr) & np.isfinite(yr)
    if not good.any():
        return _no_data(f"no successful points with finite {x} and {y}", 200.0)
    ok, xr, yr = ok[good], xr[good], yr[good]
    ux, uy = metric_unit(x, xr), metric_unit(y, yr)
    xd, yd = xr * ux.scale, yr * uy.scale
    height, top = 520.0, 40.0
    legend_w = 0.0
    if color_by is not None and color_by in ok:
        legend_w = 40.0 + max(text_width(color_by, 9.0), 60.0)
    right = _WIDTH - _RIGHT - legend_w
    bottom = height - 50.0
    xs = _range(xd, spans_wide(xd)).at(_LEFT, right)
    ys = _range(yd, spans_wide(yd)).at(bottom, top)
    xticks = _ticks(xs, target=8)
    out: list[str] = _frame(xs, ys, xticks, [si_format(t) for t in xticks], True)
    if legend_w:
        colours, legend = _colours(ok[color_by], color_by, right, top, bottom)  # type: ignore[index]
        out += legend
        by = np.array(colours)
        for c in dict.fromkeys(colours):
            out.append(_dots(xs(xd[by == c]), ys(yd[by == c]), c, 2.4, 0.75))
    else:
        out.append(_dots(xs(xd), ys(yd), _DOT, 2.4, 0.75))
    on = front.reindex(ok.index).fillna(False).to_numpy(dtype=bool)
    if on.any():
        fx, fy = xd[on], yd[on]
        order = np.argsort(fx, kind="stable")
        px, py = xs(fx[order]), ys(fy[order])
        if senses == ("min", "min"):  # a staircase: horizontal, then down to the next point
            d = f"M{coord(px[0])} {coord(py[0])}" + "".join(
                f"H{coord(a)}V{coord(b)}" for a, b in zip(px[1:], py[1:], strict=True)
            )
        else:
            d = "M" + "L".join(f"{coord(a)} {coord(b)}" for a, b in zip(px, py, strict=True))
        out.append(f'<path d="{d}" fill="none" stroke="{_FRONT}" stroke-width="1.3"/>')
        out += [
            f'<circle cx="{coord(a)}" cy="{coord(b)}" r="4.2" fill="none" stroke="{_FRONT}" '
            'stroke-width="1.6"/>'
            for a, b in zip(px, py, strict=True)
        ]
        label = f"Pareto front ({int(on.sum())} of {len(xd)} points)"
        out.append(
            f'<circle cx="{coord(_LEFT + 7)}" cy="{coord(top - 14)}" r="4.2" fill="none" '
            f'stroke="{_FRONT}" stroke-width="1.6"/>'
        )
        out.append(svg_text(_LEFT + 18, top - 10.5, label, 9.0))
    out.append(svg_text((_LEFT + right) / 2, height - 12, ux.label, 10.0, "middle"))
    out.append(svg_text(16, (top + bottom) / 2, uy.label, 10.0, "middle", rotate=-90))
    return svg_root(_WIDTH, height, out)
