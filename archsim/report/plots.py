"""Matplotlib figures of a run's per-layer results, and their SVG / PNG serialisation.

Every function takes the DataFrame of ``RunResult.to_dataframe()`` and returns a
:class:`matplotlib.figure.Figure` built on the Agg canvas; pyplot's global state is never used,
so the functions are safe in threads, worker processes and headless machines.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, PercentFormatter

from archsim.report.formatting import energy_unit, si_format

__all__ = [
    "plot_cycles_per_layer",
    "plot_energy_breakdown",
    "plot_utilization",
    "energy_component_columns",
    "energy_unit",
    "figure_to_svg",
    "figure_to_png",
]

#: Bar colour of single-series charts.
BAR_COLOR = "#4c72b0"
MARK_COLOR = "#c44e52"
#: Most layer names written under a chart; beyond that only every k-th layer is named.
_MAX_LABELS = 80
_ENERGY_COL = re.compile(r"^energy_(?P<comp>.+)_pj$")


def new_figure(n_layers: int, height: float = 3.6) -> Figure:
    """A figure about as wide as the report column, a little wider for many layers."""
    width = min(12.5, max(11.0, 2.0 + 0.18 * n_layers))
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def layer_axis(ax: Axes, labels: Sequence[str]) -> None:
    """Put layer names on the x axis, rotated and shrunk when there are many or long ones."""
    n = len(labels)
    longest = max((len(s) for s in labels), default=0)
    step = max(1, math.ceil(n / _MAX_LABELS))
    ax.set_xticks(range(0, n, step))
    shown = list(labels[::step])
    if n * (longest + 2) <= 120:
        ax.set_xticklabels(shown, fontsize=9)
    elif n <= 30:
        ax.set_xticklabels(shown, rotation=45, ha="right", rotation_mode="anchor", fontsize=8)
    else:
        ax.set_xticklabels(shown, rotation=90, fontsize=7)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xlabel("layer")
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def layer_labels(df: pd.DataFrame) -> list[str]:
    return [str(x) for x in df["layer"]] if "layer" in df else [str(i) for i in range(len(df))]


def layer_figure(df: pd.DataFrame, title: str) -> tuple[Figure, Axes]:
    """A titled per-layer figure sized for ``df``; already marked "no layers" when empty."""
    fig = new_figure(len(df))
    ax = fig.add_subplot()
    ax.set_title(title, loc="left", fontsize=11)
    if df.empty:
        empty_figure(fig, ax)
    return fig, ax


def empty_figure(fig: Figure, ax: Axes) -> Figure:
    ax.text(0.5, 0.5, "no layers", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def plot_cycles_per_layer(df: pd.DataFrame) -> Figure:
    """Bar chart of cycles per layer; EIE runs also mark ``eie_ideal_cycles`` (imbalance-free)."""
    fig, ax = layer_figure(df, "Cycles per layer")
    if df.empty:
        return fig
    x = list(range(len(df)))
    ax.bar(x, df["cycles"].astype(float), color=BAR_COLOR, width=0.7, label="simulated")
    if "eie_ideal_cycles" in df:
        ideal = pd.to_numeric(df["eie_ideal_cycles"], errors="coerce")
        ax.hlines(
            ideal,
            [i - 0.35 for i in x],
            [i + 0.35 for i in x],
            colors=MARK_COLOR,
            linewidths=2.0,
            zorder=3,
            label="imbalance-free",
        )
        ax.legend(fontsize=8, frameon=False, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=2)
    ax.set_ylabel("cycles")
    ax.yaxis.set_major_formatter(FuncFormatter(si_format))
    layer_axis(ax, layer_labels(df))
    return fig


def energy_component_columns(df: pd.DataFrame) -> list[str]:
    """The ``energy_<component>_pj`` columns of ``df`` (not the total ``energy_pj``)."""
    return [c for c in df.columns if _ENERGY_COL.match(str(c))]


def plot_energy_breakdown(df: pd.DataFrame) -> Figure:
    """Stacked bars of energy per layer by component, in a readable unit (nJ, uJ, ...)."""
    fig = new_figure(len(df), height=4.0)
    ax = fig.add_subplot()
    ax.set_title("Energy per layer by component", loc="left", fontsize=11)
    cols = [c for c in energy_component_columns(df) if float(df[c].abs().sum()) > 0.0]
    if df.empty or not cols:
        return empty_figure(fig, ax)
    totals = df[cols].sum(axis=1)
    unit, scale = energy_unit(float(totals.max()))
    cmap = matplotlib.colormaps["tab10" if len(cols) <= 10 else "tab20"]
    x = list(range(len(df)))
    bottom = [0.0] * len(df)
    for i, col in enumerate(cols):
        values = [float(v) / scale for v in df[col]]
        name = _ENERGY_COL.match(col).group("comp").replace("_", " ")  # type: ignore[union-attr]
        ax.bar(x, values, bottom=bottom, width=0.7, color=cmap(i % cmap.N), label=name)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel(f"energy ({unit})")
    ax.yaxis.set_major_formatter(FuncFormatter(si_format))
    layer_axis(ax, layer_labels(df))
    ax.legend(
        fontsize=8,
        frameon=False,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        reverse=True,
        title="component",
        title_fontsize=8,
    )
    return fig


def plot_utilization(df: pd.DataFrame) -> Figure:
    """Bar chart of MAC utilization per layer (%), with the cycle-weighted run average."""
    fig, ax = layer_figure(df, "MAC utilization per layer")
    if df.empty:
        return fig
    util = [100.0 * float(u) for u in df["utilization"]]
    x = list(range(len(df)))
    ax.bar(x, util, color=BAR_COLOR, width=0.7)
    cycles = [float(c) for c in df["cycles"]]
    if sum(cycles) > 0:
        mean = math.fsum(u * c for u, c in zip(util, cycles, strict=True)) / math.fsum(cycles)
        ax.axhline(
            mean,
            color=MARK_COLOR,
            linestyle="--",
            linewidth=1.2,
            label=f"run average {mean:.1f} % (cycle-weighted)",
        )
        ax.legend(fontsize=8, frameon=False, loc="lower right", bbox_to_anchor=(1.0, 1.0))
    ax.set_ylim(0, max(100.0, max(util, default=0.0) * 1.05))
    ax.set_ylabel("utilization")
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    layer_axis(ax, layer_labels(df))
    return fig


_SVG_PREAMBLE = re.compile(r"\A.*?(?=<svg\b)", re.S)
_SVG_COMMENT = re.compile(r"<!--.*?-->", re.S)
_SVG_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)


@contextmanager
def _no_glyph_warnings() -> Iterator[None]:
    """Silence matplotlib's one-warning-per-character "Glyph ... missing from font" (a layer
    named in CJK or with emoji flooded stderr); such characters are drawn as boxes."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"Glyph \d+ .* missing from", category=UserWarning
        )
        yield


def figure_to_svg(fig: Figure, id_prefix: str = "") -> str:
    """The figure as inline SVG text: no XML header, comments or metadata, text as paths.

    ``id_prefix`` is prepended to every element id (and reference to it) so that several
    figures can be inlined in one HTML document without id clashes.
    """
    buf = io.StringIO()
    with (
        matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "archsim"}),
        _no_glyph_warnings(),
    ):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = _SVG_PREAMBLE.sub("", buf.getvalue(), count=1)
    text = _SVG_COMMENT.sub("", text)
    text = _SVG_METADATA.sub("", text)
    if id_prefix:
        text = re.sub(r'\bid="', f'id="{id_prefix}', text)
        text = text.replace('href="#', f'href="#{id_prefix}').replace("url(#", f"url(#{id_prefix}")
    return text.strip()


def figure_to_png(fig: Figure, path: str | Path, dpi: int = 150) -> Path:
    """Write the figure as a PNG file; returns the path."""
    out = Path(path)
    with _no_glyph_warnings():
        fig.savefig(out, format="png", dpi=dpi, metadata={"Software": None})
    return out
