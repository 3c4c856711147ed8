"""Reports of runs, sweeps and validations: matplotlib figures and self-contained HTML pages."""

from __future__ import annotations

from archsim.report.accel_plots import (
    plot_eie_load_balance,
    plot_roofline,
    plot_scnn_barrier,
    plot_speedup,
    plot_time_per_layer,
)
from archsim.report.html import render_run_report, write_run_report
from archsim.report.pareto import pareto_mask
from archsim.report.plots import (
    figure_to_png,
    figure_to_svg,
    plot_cycles_per_layer,
    plot_energy_breakdown,
    plot_utilization,
)
from archsim.report.sweep import render_sweep_report, write_sweep_report
from archsim.report.sweep_plots import plot_metric_grid, plot_pareto
from archsim.report.validation import render_validation_report, write_validation_report

__all__ = [
    "render_run_report",
    "write_run_report",
    "render_sweep_report",
    "write_sweep_report",
    "render_validation_report",
    "write_validation_report",
    "pareto_mask",
    "plot_time_per_layer",
    "plot_eie_load_balance",
    "plot_scnn_barrier",
    "plot_speedup",
    "plot_roofline",
    "plot_metric_grid",
    "plot_pareto",
    "plot_cycles_per_layer",
    "plot_energy_breakdown",
    "plot_utilization",
    "figure_to_svg",
    "figure_to_png",
]
