"""Reports of runs: matplotlib figures (SVG/PNG) and a self-contained HTML page."""

from __future__ import annotations

from archsim.report.html import render_run_report, write_run_report
from archsim.report.plots import (
    figure_to_png,
    figure_to_svg,
    plot_cycles_per_layer,
    plot_energy_breakdown,
    plot_utilization,
)

__all__ = [
    "render_run_report",
    "write_run_report",
    "plot_cycles_per_layer",
    "plot_energy_breakdown",
    "plot_utilization",
    "figure_to_svg",
    "figure_to_png",
]
