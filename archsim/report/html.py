"""Self-contained HTML report of one run: summary, warnings, inline SVG plots, per-layer table.

The page has no scripts and loads nothing from the network: CSS is inline and the plots are SVG
written directly (``run_figures``: no matplotlib, no pandas, milliseconds instead of 1.5-2.5 s
per run). The output depends only on the ``RunResult`` (no timestamps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from archsim.report.formatting import (
    fmt_energy,
    fmt_int,
    fmt_num,
    fmt_percent,
    fmt_power,
    fmt_throughput,
    fmt_time,
    fmt_value,
)
from archsim.report.page import environment, write_page
from archsim.report.run_figures import CAPTIONS, energy_columns, layer_records, run_figures
from archsim.results import BASE_COLUMNS, RunResult

__all__ = ["render_run_report", "write_run_report", "accelerator_columns", "RUN_TEMPLATE"]

#: Template file inside ``archsim/report/templates``.
RUN_TEMPLATE = "run.html.j2"
#: Columns that are neither base nor energy columns but are not accelerator-specific either.
_GENERIC_COLUMNS = frozenset(BASE_COLUMNS) | {"start_cycle", "end_cycle"}

#: Column prefix of an accelerator's extras when it is not the accelerator's name.
_EXTRA_PREFIX = {"tensor_core": "tc_"}


@dataclass(frozen=True)
class _Column:
    key: str
    header: str
    title: str
    numeric: bool = True
    extra: bool = False


def accelerator_columns(df: Any) -> list[str]:
    """Accelerator-specific columns of ``df`` (e.g. ``eie_load_balance``), in frame order;
    ``df``: a DataFrame or its column names."""
    names = [str(c) for c in getattr(df, "columns", df)]
    energy = set(energy_columns(names))
    return [c for c in names if c not in _GENERIC_COLUMNS and c not in energy]


def _extra_header(column: str, accelerator: str) -> str:
    prefix = _EXTRA_PREFIX.get(accelerator, f"{accelerator}_")
    name = column[len(prefix) :] if column.startswith(prefix) else column
    return name.replace("_", " ")


def _layer_table(
    result: RunResult, names: list[str], records: list[dict[str, Any]]
) -> tuple[list[_Column], list[list[str]]]:
    columns = [
        _Column("layer", "layer", "layer name", numeric=False),
        _Column("kind", "kind", "layer kind", numeric=False),
        _Column("cycles", "cycles", "cycles (clock ticks) of the layer"),
        _Column("time_us", "time (\u00b5s)", "time_s in microseconds"),
        _Column("macs", "MACs", "macs_effective: multiplies performed on non-zero operands"),
        _Column("util", "utilization", "effective MACs / (cycles x peak MACs per cycle)"),
        _Column("energy_uj", "energy (\u00b5J)", "energy_pj in microjoules"),
        _Column("power_mw", "power (mW)", "power_w in milliwatts"),
        _Column("dram", "DRAM bytes", "dram_bytes"),
    ]
    extras = accelerator_columns(names)
    columns += [_Column(c, _extra_header(c, result.accelerator), c, extra=True) for c in extras]
    rows: list[list[str]] = []
    for rec in records:
        row = [
            str(rec["layer"]),
            str(rec["kind"]),
            fmt_int(rec["cycles"]),
            fmt_num(rec["time_s"] * 1e6),
            fmt_int(rec["macs_effective"]),
            fmt_percent(rec["utilization"]),
            fmt_num(rec["energy_pj"] * 1e-6),
            fmt_num(rec["power_w"] * 1e3),
            fmt_int(rec["dram_bytes"]),
        ]
        row += [fmt_value(rec[c]) for c in extras]
        rows.append(row)
    return columns, rows


def _shares(values: dict[str, float], fmt: Callable[[float], str]) -> list[dict[str, str]]:
    total = sum(values.values())
    ordered = sorted(values.items(), key=lambda kv: -kv[1])
    return [
        {
            "name": name.replace("_", " "),
            "value": fmt(v),
            "share": fmt_percent(v / total) if total > 0 else "\u2013",
        }
        for name, v in ordered
    ]


def _actions_only(result: RunResult) -> str:
    """A note for a GPU priced without a board power model (v100, a100): its energy and power
    are the priced actions alone, far below what the board draws."""
    hw = result.metadata.get("hardware_config") or {}
    if result.accelerator == "tensor_core" and hw.get("power") is None:
        return " (priced actions only: no static power, no power: block)"
    return ""


def _context(result: RunResult) -> dict[str, Any]:
    names, records = layer_records(result)
    summary = result.summary()
    meta = result.metadata
    hw_cfg = meta.get("hardware_config")
    hw_description = hw_cfg.get("description", "") if isinstance(hw_cfg, dict) else ""
    figures = []
    for fig_id, svg in run_figures(result.accelerator, names, records):
        caption = CAPTIONS[fig_id]
        if fig_id == "time" and "eie_ideal_cycles" in names:
            caption += " The red mark is the layer's time with perfect load balance."
        figures.append({"id": fig_id, "caption": caption, "svg": Markup(svg)})  # noqa: S704
    columns, rows = _layer_table(result, names, records)
    actions_only = _actions_only(result)  # v100, a100: no board power model
    totals = [
        ("layers", fmt_int(summary["layers"])),
        ("cycles", fmt_int(summary["total_cycles"])),
        ("time", fmt_time(summary["total_time_s"])),
        ("throughput", fmt_throughput(summary)),
        ("energy", fmt_energy(summary["total_energy_pj"]) + actions_only),
        ("average power", fmt_power(summary["average_power_w"]) + actions_only),
        (
            "area",
            f"{fmt_num(summary['total_area_mm2'])} mm\u00b2 (priced components)"
            if result.area_mm2
            else "not modelled",
        ),  # fmt: skip
        ("clock", f"{fmt_num(result.clock_hz / 1e6)} MHz"),
    ]
    base = meta.get("baseline")
    if isinstance(base, dict):
        for key, value in base.items():
            if key.startswith(("speedup_vs_", "energy_ratio_vs_")):
                what, hw = key.split("_vs_", 1)
                totals.append((f"{what.replace('_', ' ')} vs {hw}", f"{fmt_num(value)}\u00d7"))
    info = [
        ("accelerator", result.accelerator),
        ("hardware", result.hardware),
        ("workload", result.workload),
        ("seed", str(result.seed)),
        ("archsim", str(meta.get("archsim_version", "unknown"))),
    ]
    return {
        "accelerator": result.accelerator,
        "title": f"archsim: {result.workload} on {result.hardware}",
        "info": info,
        "hw_description": hw_description,
        "workload_source": str(meta.get("workload_source", "")),
        "totals": totals,
        "warnings": list(result.warnings),
        "figures": figures,
        "columns": columns,
        "rows": rows,
        "energy_shares": _shares(result.energy_by_component_pj, fmt_energy),
        "area_shares": _shares(result.area_mm2, lambda a: f"{fmt_num(a)} mm\u00b2"),
        "total_time": fmt_time(result.total_time_s),
        "version": str(meta.get("archsim_version", "unknown")),
    }


def render_run_report(result: RunResult) -> str:
    """The HTML text of the report of ``result`` (self-contained, deterministic)."""
    template = environment().get_template(RUN_TEMPLATE)
    return template.render(**_context(result))


def write_run_report(result: RunResult, path: str | Path) -> Path:
    """Write the report of ``result`` to ``path`` atomically; returns the file written.

    When ``path`` is an existing directory the report goes to ``path/report.html``; nothing
    half-written or temporary is ever left behind.
    """
    return write_page(render_run_report(result), path, "report.html")
