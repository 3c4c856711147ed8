"""Small SVG charts written directly as text: per-layer bar panels and a log-log scatter.

The run report draws its figures with these instead of matplotlib: importing matplotlib and
pandas and rendering four figures was 1.5-2.5 s of a 3-8 s ``archsim run``; writing the same
charts as SVG text takes milliseconds. The output depends only on the inputs (no ids, no
timestamps), text is ``<text>`` in a sans-serif font, and every number is rounded to 0.1 px.
The matplotlib figures (``archsim.report.plots``) stay for PNG export and the Python API.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

__all__ = [
    "Bars",
    "Marks",
    "HLine",
    "Panel",
    "Point",
    "Line",
    "Scatter",
    "TAB10",
    "TAB20",
    "layer_chart",
    "scatter_chart",
    "nice_ticks",
    "coord",
    "svg_text",
    "svg_root",
    "legend_above",
    "text_width",
    "GRID",
]

#: matplotlib's ``tab10`` and ``tab20`` colour cycles (energy components).
TAB10 = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
TAB20 = (
    "#1f77b4",
    "#aec7e8",
    "#ff7f0e",
    "#ffbb78",
    "#2ca02c",
    "#98df8a",
    "#d62728",
    "#ff9896",
    "#9467bd",
    "#c5b0d5",
    "#8c564b",
    "#c49c94",
    "#e377c2",
    "#f7b6d2",
    "#7f7f7f",
    "#c7c7c7",
    "#bcbd22",
    "#dbdb8d",
    "#17becf",
    "#9edae5",
)
_FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'
GRID = "#dddddd"
#: Most layer names written under a chart; beyond that only every k-th layer is named.
_MAX_LABELS = 80
_LEFT, _RIGHT, _TOP = 72.0, 24.0, 44.0


@dataclass(frozen=True)
class Bars:
    """One bar per layer: ``values`` from ``bottoms`` (0 when empty), shifted by ``offset``
    layer widths and ``width`` wide; ``label`` goes into the legend when not empty."""

    values: Sequence[float]
    color: str
    label: str = ""
    bottoms: Sequence[float] = ()
    offset: float = 0.0
    width: float = 0.7


@dataclass(frozen=True)
class Marks:
    """A short horizontal mark over each layer's bar at ``values`` (NaN: none)."""

    values: Sequence[float]
    color: str
    label: str = ""
    stroke: float = 2.0


@dataclass(frozen=True)
class HLine:
    """A line across the panel at ``y``."""

    y: float
    color: str
    label: str = ""
    dashed: bool = True
    stroke: float = 1.2


@dataclass
class Panel:
    """One per-layer axes: bars, marks and lines over the layers, y from ``ylim`` (None: 0 to
    the data's top with a 5 % margin)."""

    title: str
    ylabel: str
    yfmt: Callable[[float], str]
    bars: list[Bars] = field(default_factory=list)
    marks: list[Marks] = field(default_factory=list)
    lines: list[HLine] = field(default_factory=list)
    ylim: tuple[float, float] | None = None
    height: float = 260.0
    legend_right: str | None = None  # legend beside the axes with this title (else above)


def coord(x: float) -> str:
    """A coordinate with at most one decimal."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def text_width(text: str, size: float) -> float:
    return 0.58 * size * len(text)


def svg_text(
    x: float,
    y: float,
    text: str,
    size: float = 10.0,
    anchor: str = "start",
    rotate: float = 0.0,
    weight: str = "",
) -> str:
    extra = f' transform="rotate({coord(rotate)} {coord(x)} {coord(y)})"' if rotate else ""
    bold = f' font-weight="{weight}"' if weight else ""
    return (
        f'<text x="{coord(x)}" y="{coord(y)}" font-size="{coord(size)}" text-anchor="{anchor}"'
        f"{bold}{extra} {_FONT}>{escape(text)}</text>"
    )


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round tick values covering [lo, hi] (steps 1, 2, 2.5, 5 x 10^k), at most ~target."""
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        return [lo] if math.isfinite(lo) else [0.0]
    raw = (hi - lo) / max(1, target - 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    k = 0
    while first + k * step <= hi * (1 + 1e-9) + 1e-12 and k < 100:
        ticks.append(round(first + k * step, 12))
        k += 1
    return ticks


def legend_above(items: list[tuple[str, str, str]], right: float, y: float) -> list[str]:
    """Legend entries (kind, colour, label) right-aligned on one row ending at ``right``."""
    out: list[str] = []
    x = right
    for kind, color, label in reversed(items):
        w = text_width(label, 9.0)
        x -= w
        out.append(svg_text(x, y + 4, label, 9.0))
        x -= 18
        out.append(_swatch(kind, color, x, y))
        x -= 14
    return out


def _swatch(kind: str, color: str, x: float, y: float) -> str:
    if kind == "bar":
        return f'<rect x="{coord(x)}" y="{coord(y - 5)}" width="14" height="9" fill="{color}"/>'
    if kind == "dot":
        return f'<circle cx="{coord(x + 7)}" cy="{coord(y)}" r="3" fill="{color}"/>'
    dash = ' stroke-dasharray="5 3"' if kind == "dash" else ""
    return (
        f'<line x1="{coord(x)}" y1="{coord(y)}" x2="{coord(x + 14)}" y2="{coord(y)}" '
        f'stroke="{color}" stroke-width="2"{dash}/>'
    )


def _layer_label_layout(labels: Sequence[str]) -> tuple[int, float, float, float]:
    """(step, font size, rotation, height) of the layer names under a chart."""
    n = len(labels)
    longest = max((len(s) for s in labels), default=0)
    step = max(1, math.ceil(n / _MAX_LABELS))
    if n * (longest + 2) <= 120:
        return step, 9.0, 0.0, 16.0
    if n <= 30:
        return step, 8.0, 45.0, 0.71 * text_width("x" * longest, 8.0) + 14
    return step, 7.0, 90.0, text_width("x" * longest, 7.0) + 10


def _panel_svg(
    p: Panel, labels: Sequence[str], top: float, width: float, show_labels: bool
) -> tuple[list[str], float]:
    """SVG elements of one panel drawn from ``top``; returns them and the panel's bottom."""
    n = len(labels)
    right_pad = 0.0
    legend: list[tuple[str, str, str]] = []
    for b in p.bars:
        if b.label:
            legend.append(("bar", b.color, b.label))
    for m in p.marks:
        if m.label:
            legend.append(("line", m.color, m.label))
    for ln in p.lines:
        if ln.label:
            legend.append(("dash" if ln.dashed else "line", ln.color, ln.label))
    if p.legend_right is not None and legend:
        right_pad = max(text_width(lab, 9.0) for _, _, lab in legend) + 40
    x0, x1 = _LEFT, width - _RIGHT - right_pad
    y0, y1 = top + 26.0, top + 26.0 + p.height
    out = [svg_text(x0, top + 14, p.title, 11.0)]
    if n == 0:
        out.append(svg_text((x0 + x1) / 2, (y0 + y1) / 2, "no layers", 10.0, "middle"))
        return out, y1
    if p.ylim is not None:
        lo, hi = p.ylim
    else:
        tops = [0.0]
        for b in p.bars:
            base = list(b.bottoms) or [0.0] * len(b.values)
            tops += [v + z for v, z in zip(b.values, base, strict=True) if math.isfinite(v + z)]
        tops += [v for m in p.marks for v in m.values if math.isfinite(v)]
        tops += [ln.y for ln in p.lines if math.isfinite(ln.y)]
        lo, hi = 0.0, max(tops) * 1.05 or 1.0
    span = (hi - lo) or 1.0

    def ypix(v: float) -> float:
        return y1 - (min(max(v, lo), hi) - lo) / span * (y1 - y0)

    def xpix(i: float) -> float:  # layer i's centre; the axis runs from -0.6 to n - 0.4
        return x0 + (i + 0.6) / n * (x1 - x0)

    unit = (x1 - x0) / n
    for t in nice_ticks(lo, hi):
        y = ypix(t)
        out.append(
            f'<line x1="{coord(x0)}" y1="{coord(y)}" x2="{coord(x1)}" y2="{coord(y)}" '
            f'stroke="{GRID}" stroke-width="0.6"/>'
        )
        out.append(svg_text(x0 - 6, y + 3.5, p.yfmt(t), 9.0, "end"))
    mid = (y0 + y1) / 2
    out.append(svg_text(16, mid, p.ylabel, 10.0, "middle", rotate=-90))
    for b in p.bars:
        base = list(b.bottoms) or [0.0] * len(b.values)
        for i, (v, z) in enumerate(zip(b.values, base, strict=True)):
            if not math.isfinite(v) or not math.isfinite(z) or v == 0:
                continue
            ya, yb = ypix(z), ypix(z + v)
            xl = xpix(i + b.offset - b.width / 2)
            out.append(
                f'<rect x="{coord(xl)}" y="{coord(min(ya, yb))}" width="{coord(b.width * unit)}" '
                f'height="{coord(abs(ya - yb))}" fill="{b.color}"/>'
            )
    for m in p.marks:
        for i, v in enumerate(m.values):
            if math.isfinite(v) and lo <= v <= hi:
                y = ypix(v)
                out.append(
                    f'<line x1="{coord(xpix(i - 0.35))}" y1="{coord(y)}" '
                    f'x2="{coord(xpix(i + 0.35))}" y2="{coord(y)}" stroke="{m.color}" '
                    f'stroke-width="{coord(m.stroke)}"/>'
                )
    for ln in p.lines:
        if math.isfinite(ln.y) and lo <= ln.y <= hi:
            y = ypix(ln.y)
            dash = ' stroke-dasharray="5 3"' if ln.dashed else ""
            out.append(
                f'<line x1="{coord(x0)}" y1="{coord(y)}" x2="{coord(x1)}" y2="{coord(y)}" '
                f'stroke="{ln.color}" stroke-width="{coord(ln.stroke)}"{dash}/>'
            )
    out.append(
        f'<path d="M{coord(x0)} {coord(y0)}V{coord(y1)}H{coord(x1)}" fill="none" stroke="#000" '
        'stroke-width="0.8"/>'
    )
    if legend and p.legend_right is not None:
        lx, ly = x1 + 16, y0 + 4
        out.append(svg_text(lx, ly, p.legend_right, 9.0))
        for kind, color, label in reversed(legend):
            ly += 15
            out.append(_swatch(kind, color, lx, ly - 3))
            out.append(svg_text(lx + 20, ly + 1, label, 9.0))
    elif legend:
        out += legend_above(legend, x1, top + 12)
    bottom = y1
    if show_labels:
        step, size, rot, height = _layer_label_layout(labels)
        for i in range(0, n, step):
            x = xpix(i)
            out.append(
                f'<line x1="{coord(x)}" y1="{coord(y1)}" x2="{coord(x)}" y2="{coord(y1 + 4)}" '
                'stroke="#000" stroke-width="0.8"/>'
            )
            if rot == 0:
                out.append(svg_text(x, y1 + 16, labels[i], size, "middle"))
            else:
                out.append(svg_text(x + 2, y1 + 10, labels[i], size, "end", rotate=-rot))
        bottom = y1 + height + 6
        out.append(svg_text((x0 + x1) / 2, bottom + 10, "layer", 10.0, "middle"))
        bottom += 14
    return out, bottom


def svg_root(width: float, height: float, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{coord(width)}pt" '
        f'height="{coord(height)}pt" viewBox="0 0 {coord(width)} {coord(height)}" version="1.1">'
        f'<rect width="100%" height="100%" fill="#fff"/>' + "".join(body) + "</svg>"
    )


def layer_chart(labels: Sequence[str], panels: Sequence[Panel]) -> str:
    """Panels stacked over the same layers (names under the last one) as one SVG element."""
    width = min(1250.0, max(1100.0, 200.0 + 18.0 * len(labels)))
    body: list[str] = []
    top = 4.0
    for k, panel in enumerate(panels):
        elements, top = _panel_svg(panel, labels, top, width, k == len(panels) - 1)
        body += elements
        top += 8.0
    return svg_root(width, top + 4.0, body)


@dataclass(frozen=True)
class Point:
    """Scatter points of one colour (one legend entry)."""

    x: Sequence[float]
    y: Sequence[float]
    color: str
    label: str


@dataclass(frozen=True)
class Line:
    """A polyline (``dotted`` vertical lines are drawn as such), with an optional note at its
    right end."""

    x: Sequence[float]
    y: Sequence[float]
    color: str
    note: str = ""
    dotted: bool = False


@dataclass
class Scatter:
    """A log-log scatter with lines (the roofline)."""

    title: str
    xlabel: str
    ylabel: str
    xlim: tuple[float, float]
    points: list[Point] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)


def _decades(lo: float, hi: float) -> list[float]:
    """Powers of ten within [lo, hi]; none for a limit that is not a positive finite float (a
    hand-edited results.json with 1e308 in a log-scaled column)."""
    if not (0 < lo <= hi < 1e308):
        return []
    return [
        10.0**k
        for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
        if lo <= 10.0**k <= hi
    ]


def _pow10(v: float) -> str:
    k = round(math.log10(v))
    return f"{v:g}" if -2 <= k <= 3 else f"1e{k}"


def scatter_chart(s: Scatter) -> str:
    """A log-log chart of points and lines as one SVG element."""
    width, height = 1100.0, 500.0
    x0, x1, y0, y1 = _LEFT, width - _RIGHT, _TOP, height - 56.0
    ys = [v for p in s.points for v in p.y] + [v for ln in s.lines for v in ln.y]
    ys = [v for v in ys if math.isfinite(v) and v > 0]
    ylo, yhi = min(ys) / 1.6, max(ys) * 1.6
    lx0, lx1 = math.log10(s.xlim[0]), math.log10(s.xlim[1])
    ly0, ly1 = math.log10(ylo), math.log10(yhi)

    def px(v: float) -> float:
        return x0 + (math.log10(v) - lx0) / ((lx1 - lx0) or 1.0) * (x1 - x0)

    def py(v: float) -> float:
        return y1 - (math.log10(v) - ly0) / ((ly1 - ly0) or 1.0) * (y1 - y0)

    out = [svg_text(x0, 18, s.title, 11.0)]
    for t in _decades(*s.xlim):
        out.append(
            f'<line x1="{coord(px(t))}" y1="{coord(y0)}" x2="{coord(px(t))}" y2="{coord(y1)}" '
            f'stroke="#e4e4e4" stroke-width="0.6"/>'
        )
        out.append(svg_text(px(t), y1 + 16, _pow10(t), 9.0, "middle"))
    for t in _decades(ylo, yhi):
        out.append(
            f'<line x1="{coord(x0)}" y1="{coord(py(t))}" x2="{coord(x1)}" y2="{coord(py(t))}" '
            f'stroke="#e4e4e4" stroke-width="0.6"/>'
        )
        out.append(svg_text(x0 - 6, py(t) + 3.5, _pow10(t), 9.0, "end"))
    for ln in s.lines:
        pts = " ".join(
            f"{coord(px(a))},{coord(py(b))}"
            for a, b in zip(ln.x, ln.y, strict=True)
            if a > 0 and b > 0
        )
        dash = ' stroke-dasharray="1.5 2.5"' if ln.dotted else ""
        stroke = "1" if ln.dotted else "1.4"
        out.append(
            f'<polyline points="{pts}" fill="none" stroke="{ln.color}" '
            f'stroke-width="{stroke}"{dash}/>'
        )
        if ln.note:
            out.append(svg_text(px(ln.x[-1]) - 4, py(ln.y[-1]) - 4, ln.note, 8.0, "end"))
    legend = []
    for p in s.points:
        for a, b in zip(p.x, p.y, strict=True):
            out.append(
                f'<circle cx="{coord(px(a))}" cy="{coord(py(b))}" r="3" fill="{p.color}" '
                'fill-opacity="0.8"/>'
            )
        legend.append(("bar", p.color, p.label))
    out += legend_above(legend, x1, 34)
    out.append(
        f'<path d="M{coord(x0)} {coord(y0)}V{coord(y1)}H{coord(x1)}" fill="none" stroke="#000" '
        'stroke-width="0.8"/>'
    )
    out.append(svg_text((x0 + x1) / 2, height - 16, s.xlabel, 10.0, "middle"))
    out.append(svg_text(16, (y0 + y1) / 2, s.ylabel, 10.0, "middle", rotate=-90))
    return svg_root(width, height, out)
