"""Reports of runs, sweeps and validations: matplotlib figures and self-contained HTML pages.

The public names load on first use (PEP 562): ``archsim.report.html`` (the run report, SVG
written directly) is imported by every ``archsim run`` and must not pull in matplotlib or
pandas, which the sweep report and the ``plot_*`` functions need.
"""

from __future__ import annotations

from archsim.lazy import lazy_names

#: public name -> module that defines it
_WHERE = {
    "render_run_report": "archsim.report.html",
    "write_run_report": "archsim.report.html",
    "render_sweep_report": "archsim.report.sweep",
    "write_sweep_report": "archsim.report.sweep",
    "render_validation_report": "archsim.report.validation",
    "write_validation_report": "archsim.report.validation",
    "pareto_mask": "archsim.report.pareto",
    "plot_time_per_layer": "archsim.report.accel_plots",
    "plot_eie_load_balance": "archsim.report.accel_plots",
    "plot_scnn_barrier": "archsim.report.accel_plots",
    "plot_speedup": "archsim.report.accel_plots",
    "plot_roofline": "archsim.report.accel_plots",
    "plot_metric_grid": "archsim.report.sweep_plots",
    "plot_pareto": "archsim.report.sweep_plots",
    "plot_cycles_per_layer": "archsim.report.plots",
    "plot_energy_breakdown": "archsim.report.plots",
    "plot_utilization": "archsim.report.plots",
    "figure_to_svg": "archsim.report.plots",
    "figure_to_png": "archsim.report.plots",
}

__all__ = list(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
