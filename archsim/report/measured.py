"""HTML page of measured-vs-simulated kernel times (``archsim validate --measured --html``).

Input: the rows of ``validation.measured.simulate_rows`` (``file``, ``label``, ``precision``,
``layout``, ``time_s``, ``sim_time_s``, ``error``, ``reason``), per-group statistics and notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from archsim.report.page import environment, write_page
from archsim.report.plots import figure_to_svg, new_figure

__all__ = ["plot_measured_scatter", "render_measured_report", "write_measured_report"]

_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def plot_measured_scatter(rows: pd.DataFrame) -> Figure:
    """Log-log scatter of measured vs simulated time per call (us), colour = precision,
    marker = file; the diagonal is agreement, dashed lines +-25 %."""
    fig = new_figure(0, height=5.6)
    ax = fig.add_subplot()
    ax.set_title("Time per call: measured vs archsim", loc="left", fontsize=11)
    done = rows[rows["sim_time_s"].notna()]
    if done.empty:
        ax.text(0.5, 0.5, "no simulated rows", ha="center", va="center", transform=ax.transAxes)
        return fig
    x, y = done["time_s"].to_numpy() * 1e6, done["sim_time_s"].to_numpy() * 1e6
    lo, hi = min(x.min(), y.min()) / 1.5, max(x.max(), y.max()) * 1.5
    line = np.array([lo, hi])
    ax.plot(line, line, color="#333333", linewidth=1.0, zorder=1)
    for f in (0.75, 1.25):
        ax.plot(line, line * f, color="#999999", linewidth=0.8, linestyle="--", zorder=1)
    precisions = list(dict.fromkeys(done["precision"]))
    files = list(dict.fromkeys(done["file"]))
    for (prec, file), block in done.groupby(["precision", "file"], sort=False):
        ax.scatter(
            block["time_s"] * 1e6, block["sim_time_s"] * 1e6, s=22, alpha=0.85, linewidths=0,
            color=_COLORS[precisions.index(prec) % len(_COLORS)],
            marker=_MARKERS[files.index(file) % len(_MARKERS)], label=f"{file} {prec}", zorder=3,
        )  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time per call (\u00b5s)")
    ax.set_ylabel("archsim time per call (\u00b5s)")
    ax.grid(which="major", color="#e4e4e4", linewidth=0.6)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(fontsize=7.5, frameon=False, ncols=2, loc="upper left")
    return fig


def _pct(value: Any, signed: bool = False) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "\u2013"
    if math.isnan(v):
        return "\u2013"
    return f"{100 * v:+.1f} %" if signed else f"{100 * v:.1f} %"


def _row_cells(r: dict[str, Any]) -> list[str]:
    sim = r["sim_time_s"]
    return [
        r["file"], r["label"], r["precision"], r["layout"], f"{r['time_s'] * 1e6:.2f}",
        "\u2013" if math.isnan(sim) else f"{sim * 1e6:.2f}", _pct(r["error"], signed=True),
        f"{r['flops'] / r['time_s'] / 1e12:.1f}",
        "\u2013" if math.isnan(sim) else f"{r['flops'] / sim / 1e12:.1f}", r.get("reason") or "",
    ]  # fmt: skip


def _fmt(value: Any, spec: str, scale: float = 1.0) -> str:
    try:
        v = float(value) / scale
    except (TypeError, ValueError):
        return "\u2013"
    return "\u2013" if math.isnan(v) else format(v, spec)


def _power_table(power: pd.DataFrame | None) -> list[list[str]]:
    """Sustained rows: measured / simulated clock, board power and energy per call."""
    if power is None or power.empty:
        return []
    out = []
    for r in power.to_dict(orient="records"):
        err = (r["sim_energy_j"] - r["energy_j"]) / r["energy_j"]
        out.append([
            r["file"], r["label"], r["precision"], _fmt(r["sm_mhz"], ".0f"),
            _fmt(r.get("sim_clock_hz"), ".0f", 1e6), _fmt(r["board_w"], ".0f"),
            _fmt(r.get("sim_board_w"), ".0f"), _fmt(r["energy_j"], ".4g"),
            _fmt(r["sim_energy_j"], ".4g"), _pct(err, signed=True),
        ])  # fmt: skip
    return out


def _energy_table(energy: pd.DataFrame | None) -> list[list[str]]:
    """The folder's NVML energy readings against the model (or why not compared)."""
    if energy is None or energy.empty:
        return []
    out = []
    for e in energy.to_dict(orient="records"):
        err = (e["sim_energy_j"] - e["joules_per_call"]) / e["joules_per_call"]
        out.append([
            e["entry"], _fmt(e["joules_per_call"], ".4g"), _fmt(e["sim_energy_j"], ".4g"),
            _pct(err, signed=True), _fmt(e["watts"], ".0f"), _fmt(e["sim_power_w"], ".0f"),
            _fmt(e["sm_mhz"], ".0f"), _fmt(e["sim_clock_hz"], ".0f", 1e6), e["reason"],
        ])  # fmt: skip
    return out


def _network_table(networks: pd.DataFrame | None) -> list[list[str]]:
    """Each network's conv layers summed, measured and simulated."""
    if networks is None or networks.empty:
        return []
    return [
        [w["file"], str(w["net"]), str(w["batch"]), w["precision"], str(w["layers"]),
         _fmt(w["time_s"], ".1f", 1e-6), _fmt(w["sim_time_s"], ".1f", 1e-6),
         _pct(w["error"], signed=True)]
        for w in networks.to_dict(orient="records")
    ]  # fmt: skip


def _memory_table(memory: pd.DataFrame | None) -> list[list[str]]:
    """The folder's eager device copies (``validation.measured_memory``), measured and simulated."""
    if memory is None or memory.empty:
        return []
    return [
        [m["entry"], _fmt(m["bytes_moved"], ".0f", 2**20), _fmt(m["time_s"], ".2f", 1e-6),
         _fmt(m["sim_time_s"], ".2f", 1e-6), _pct(m["error"], signed=True), m["reason"]]
        for m in memory.to_dict(orient="records")
    ]  # fmt: skip


def render_measured_report(
    rows: pd.DataFrame,
    groups: pd.DataFrame,
    overall: dict[str, float],
    *,
    title: str,
    folder: str,
    hardware: str,
    clock: str,
    goals: Sequence[tuple[bool, str]] = (),
    notes: Sequence[str] = (),
    power: pd.DataFrame | None = None,
    energy: pd.DataFrame | None = None,
    networks: pd.DataFrame | None = None,
    memory: pd.DataFrame | None = None,
) -> str:
    """The page's HTML text (self-contained, deterministic). ``power``: sustained rows with
    ``energy_j`` / ``sim_energy_j`` (and ``sim_clock_hz`` / ``sim_board_w`` when the model
    reports them); ``energy``: the folder's energy readings vs the model; ``networks``:
    ``validation.measured.network_totals``; ``memory``: ``validation.measured_memory``'s
    device copies."""
    from archsim.simulate import archsim_version

    spear = overall["spearman"]
    context = {
        "title": title,
        "version": archsim_version(),
        "folder": folder,
        "hardware": hardware,
        "clock": clock,
        "cards": [
            ("rows", str(len(rows))),
            ("simulated", str(overall["n"])),
            ("median |error|", _pct(overall["median_abs_error"])),
            ("p90 |error|", _pct(overall["p90_abs_error"])),
            ("Spearman", "\u2013" if math.isnan(spear) else f"{spear:.4f}"),
        ],
        "goals": [{"ok": ok, "text": text} for ok, text in goals],
        "notes": list(notes),
        "scatter": figure_to_svg(plot_measured_scatter(rows), "scatter-"),
        "groups": [
            {"file": g["file"], "precision": g["precision"], "n": g["n"],
             "median": _pct(g["median_abs_error"]), "p90": _pct(g["p90_abs_error"]),
             "spearman": "\u2013" if math.isnan(g["spearman"]) else f"{g['spearman']:.4f}"}
            for g in groups.to_dict(orient="records")
        ],  # fmt: skip
        "row_header": ["file", "shape", "precision", "layout", "measured \u00b5s",
                       "archsim \u00b5s", "error", "measured TFLOPS", "archsim TFLOPS", "note"],
        "rows": [_row_cells(r) for r in rows.to_dict(orient="records")],
        "power_header": ["file", "shape", "precision", "MHz", "archsim MHz", "board W",
                         "archsim W", "J/call (W \u00d7 s)", "archsim J/call", "energy error"],
        "power_rows": _power_table(power),
        "energy_header": ["reading", "J/call", "archsim J/call", "error", "W", "archsim W",
                          "MHz", "archsim MHz", "not compared because"],
        "energy_rows": _energy_table(energy),
        "network_header": ["file", "network", "batch", "precision", "layers",
                           "measured \u00b5s", "archsim \u00b5s", "error"],
        "network_rows": _network_table(networks),
        "memory_header": ["reading", "MB moved", "measured \u00b5s", "archsim \u00b5s", "error",
                          "not compared because"],
        "memory_rows": _memory_table(memory),
    }  # fmt: skip
    from markupsafe import Markup

    context["scatter"] = Markup(context["scatter"])
    return environment().get_template("measured.html.j2").render(**context)


def write_measured_report(path: str | Path, text: str) -> Path:
    """Write the page atomically (a directory gets ``measured.html``)."""
    return write_page(text, path, "measured.html")
