"""Self-contained HTML report of a sweep: metric vs parameter, Pareto front, table of points.

The figures are SVG written as text (``sweep_svg``): the report imports neither matplotlib nor
anything that does.

Input is the sweep's totals frame: one row per point with ``point``, ``point_key``, ``seed``,
one column per swept axis (its dotted path), ``status`` ("ok"/"error"), ``error`` and metric
columns (``total_time_s``, ``total_energy_pj``, ...). The page loads nothing from the network;
its only script sorts and filters the table of points in place.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup, escape

from archsim.errors import ArchsimError, one_line
from archsim.report.formatting import MISSING, fmt_int, fmt_num, fmt_value
from archsim.report.page import environment, write_page
from archsim.report.pareto import metric_sense, pareto_mask
from archsim.report.sweep_axes import metric_unit
from archsim.report.sweep_svg import metric_grid_svgs, pareto_svg

__all__ = ["render_sweep_report", "write_sweep_report", "SWEEP_TEMPLATE", "DEFAULT_PARETO"]

SWEEP_TEMPLATE = "sweep.html.j2"
#: Metrics of the Pareto scatter when the caller names none (both minimised).
DEFAULT_PARETO = ("total_time_s", "total_energy_pj")
#: Distinct error messages listed above the table.
_MAX_ERRORS_LISTED = 8


@dataclass(frozen=True)
class _Cell:
    text: str
    key: str | None = None  # sort key: a number as text, "" when missing, None: sort by text


@dataclass(frozen=True)
class _Col:
    header: str | Markup
    title: str
    numeric: bool = True
    extra: bool = False
    css: str = ""  # class of the column's cells


@dataclass
class _Table:
    columns: list[_Col] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def body(self) -> Markup:
        """The rows as ``<tr>`` lines, escaped as the template escapes. Built here rather than
        in a template loop over every cell (about 0.03 s more per 1,000 points of ten cells)."""
        starts = [
            '<td class="num"' if c.numeric else f'<td class="{escape(c.css)}"' if c.css else "<td"
            for c in self.columns
        ]
        lines = []
        for row in self.rows:
            cls = ("error" if row["error"] else "ok") + (" front" if row["front"] else "")
            parts = [f'<tr class="{cls}">']
            for i, (cell, start) in enumerate(zip(row["cells"], starts, strict=True)):
                key = "" if cell.key is None else f' data-v="{escape(cell.key)}"'
                title = f' title="{escape(row["key"])}"' if i == 0 and row["key"] else ""
                parts.append(f"{start}{key}{title}>{escape(cell.text)}</td>")
            parts.append("</tr>\n")
            lines.append("".join(parts))
        return Markup("".join(lines))


def _check(points: pd.DataFrame, axes: Sequence[str], metrics: Sequence[str]) -> None:
    missing = [c for c in [*axes, *metrics] if c not in points.columns]
    if missing:
        raise ArchsimError(
            f"sweep report: column(s) {', '.join(missing)} missing from the points frame; "
            f"available: {', '.join(map(str, points.columns))}"
        )


def _with_failed_metrics(points: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """``points`` with an empty (NaN) column for each metric none of them has when no point
    succeeded: failed points hold no metric values, so a sweep whose every point failed has
    no column for a metric only its successes would have written."""
    missing = [m for m in metrics if m not in points.columns]
    if not missing or _is_ok(points).any():
        return points
    return points.assign(**{m: np.nan for m in missing})


def _is_ok(points: pd.DataFrame) -> pd.Series:
    if "status" not in points:
        return pd.Series(True, index=points.index)
    return points["status"].astype(str) == "ok"


def _pareto_pair(points: pd.DataFrame, metrics: Sequence[str]) -> tuple[str, str] | None:
    """The two metrics the Pareto chart plots: the spec's first two (the CLI's front is over
    the spec's metrics), else time and energy."""
    if "accuracy" in metrics and "total_energy_pj" in points:  # a compress.* sweep
        return ("total_energy_pj", "accuracy")
    if len(metrics) >= 2 and all(m in points for m in metrics[:2]):
        return (metrics[0], metrics[1])
    if all(m in points for m in DEFAULT_PARETO):
        return DEFAULT_PARETO
    return None


def _breakable(path: str) -> Markup:
    """A dotted path that may wrap after its dots in a narrow table header."""
    return Markup(".<wbr>").join(escape(part) for part in path.split("."))


def _number_key(value: Any) -> str | None:
    """Sort key of a cell: the number, "" for a missing value, None for text (sort by text)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, bool | np.bool_):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return repr(v) if np.isfinite(v) else ""


def _axis_cell(seen: dict[tuple[type, str], _Cell], value: Any) -> _Cell:
    """The cell of an axis value, formatted once per distinct value (by type and repr, so
    that 0.0 and -0.0, or 1 and 1.0, keep their own text)."""
    key = (type(value), repr(value))
    cell = seen.get(key)
    if cell is None:
        cell = seen[key] = _Cell(fmt_value(value), _number_key(value))
    return cell


def _points_table(
    points: pd.DataFrame,
    axes: Sequence[str],
    metrics: Sequence[str],
    front: pd.Series,
    ok: pd.Series,
) -> _Table:
    units = {m: metric_unit(m, points.loc[ok, m]) for m in metrics}
    show_seed = "seed" in points and points["seed"].nunique(dropna=False) > 1
    table = _Table()
    table.columns.append(_Col("point", "point number (hover a number for its key)"))
    table.columns += [_Col(_breakable(a), f"swept axis {a}", extra=True) for a in axes]
    if show_seed:
        table.columns.append(_Col("seed", "seed of the point"))
    table.columns.append(_Col("status", "ok or error", numeric=False))
    table.columns += [_Col(units[m].label, m) for m in metrics]
    table.columns.append(_Col("Pareto", "on the Pareto front of the scatter above", False))
    show_error = not bool(ok.all())
    if show_error:
        table.columns.append(_Col("error", "why the point failed", numeric=False, css="msg"))
    # each metric converted once per column, not once per cell (1,000 points: 0.5 s -> 0.05 s)
    numbers = {m: pd.to_numeric(points[m], errors="coerce").to_numpy(dtype=float) for m in metrics}
    good_rows = ok.reindex(points.index, fill_value=False).to_numpy(dtype=bool)
    records = points.to_dict(orient="records")
    axis_cells: list[dict[tuple[type, str], _Cell]] = [{} for _ in axes]  # few values each
    for pos, (idx, rec) in enumerate(zip(points.index, records, strict=True)):
        good = bool(good_rows[pos])
        number = rec.get("point", idx)
        cells = [_Cell(fmt_value(number), _number_key(number))]
        cells += [_axis_cell(seen, rec[a]) for seen, a in zip(axis_cells, axes, strict=True)]
        if show_seed:
            cells.append(_Cell(fmt_int(rec["seed"]), _number_key(rec["seed"])))
        cells.append(_Cell(str(rec.get("status", "ok"))))
        for m in metrics:
            v = numbers[m][pos] if good else None
            shown = MISSING if v is None or np.isnan(v) else fmt_num(float(v) * units[m].scale)
            cells.append(_Cell(shown, _number_key(v)))
        on = bool(front.get(idx, False))
        cells.append(_Cell("\u2605" if on else "", "0" if on else "1"))  # ascending: front first
        err = rec.get("error")
        err_text = "" if good or err is None or pd.isna(err) else " ".join(str(err).split())
        if show_error:
            cells.append(_Cell(err_text))
        key = rec.get("point_key")
        table.rows.append(
            {
                "cells": cells,
                "error": not good,
                "front": on,
                "key": "" if key is None or pd.isna(key) else str(key),
            }
        )
    return table


def _axis_summary(points: pd.DataFrame, axes: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for a in axes:
        values = list(dict.fromkeys(points[a].tolist()))
        with contextlib.suppress(TypeError):
            values = sorted(values)
        shown = ", ".join(fmt_value(v) for v in values[:12])
        if len(values) > 12:
            shown += f", \u2026 ({len(values)} values)"
        out.append((a, shown))
    return out


def _as_tuple(value: Any) -> Any:
    """A list or array cell (nested too) as a tuple, so that it can be counted and sorted."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return tuple(_as_tuple(v) for v in value)
    return value


def _sense(metric: str, senses: Mapping[str, str] | None) -> str:
    """The spec's ``min``/``max`` for ``metric``, else the name's (``metric_sense``)."""
    return (senses or {}).get(metric) or metric_sense(metric)


def _best(
    points: pd.DataFrame, metrics: Sequence[str], ok: pd.Series, senses: Mapping[str, str] | None
) -> list[tuple[str, str]]:
    out = []
    good = points[ok]
    for m in metrics:
        vals = pd.to_numeric(good[m], errors="coerce").dropna()
        if vals.empty:
            continue
        sense = _sense(m, senses)
        unit = metric_unit(m, vals)
        best = vals.max() if sense == "max" else vals.min()
        out.append((f"best {unit.label}", fmt_num(float(best) * unit.scale)))
    return out


def _what_ran(points: pd.DataFrame) -> list[tuple[str, str]]:
    """Cards naming the base hardware, the workloads and the seeds of the points."""

    def listed(column: str) -> str:
        values = [str(v) for v in dict.fromkeys(points[column].dropna().tolist())]
        shown = ", ".join(values[:4])
        return shown + (f" and {len(values) - 4} more" if len(values) > 4 else "")

    pairs = (("hardware", "hardware"), ("workload", "workload"), ("seeds", "seed"))
    cards = [(label, listed(col)) for label, col in pairs if col in points]
    return [(label, text) for label, text in cards if text]


def _context(
    points: pd.DataFrame,
    axes: Sequence[str],
    metrics: Sequence[str],
    title: str,
    pareto: tuple[str, str] | None,
    senses: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    from archsim.provenance import archsim_version

    ok = _is_ok(points)
    pair = pareto if pareto is not None else _pareto_pair(points, metrics)
    over = list(pair or ())
    if pair is not None:
        _check(points, [], list(pair))
        pair_senses = (_sense(pair[0], senses), _sense(pair[1], senses))
        objectives = dict(zip(pair, pair_senses, strict=True))
        if pareto is None and len(metrics) > 2 and all(m in points for m in metrics):
            over = list(metrics)  # the front the CLI prints: over every metric of the spec
            objectives = {m: _sense(m, senses) for m in metrics}
        front = pareto_mask(points[ok], objectives)
    else:
        pair_senses, front = ("min", "min"), pd.Series(False, index=points.index[ok])
    front = front.reindex(points.index, fill_value=False)
    figures = []
    if pair is not None:
        colour = next((a for a in axes if points.loc[ok, a].nunique() > 1), None)
        svg = pareto_svg(points, pair[0], pair[1], front, color_by=colour, senses=pair_senses)
        word = {"min": "lower", "max": "higher"}
        better = (
            f"{word[pair_senses[0]]} is better for both"
            if pair_senses[0] == pair_senses[1]
            else f"{word[pair_senses[1]]} {pair[1]} and {word[pair_senses[0]]} {pair[0]} are better"
        )
        scope = "both" if len(over) == 2 else f"every one of {', '.join(over)}"
        figures.append(
            {
                "id": "pareto",
                "svg": Markup(svg),
                "caption": f"{pair[1]} vs {pair[0]} ({better}) over the successful points"
                + (f", coloured by {colour}" if colour else "")
                + "; circled points are Pareto-optimal (no other point is at least as good in "
                f"{scope} and better in one).",
            }
        )
    for i, svg in enumerate(metric_grid_svgs(points, axes, metrics)):
        figures.append(
            {
                "id": f"grid-{i}",
                "svg": Markup(svg),
                "caption": "Each metric (rows) against each swept parameter (columns): grey dots "
                "are points, the line is the median over the other axes and the band their "
                "min\u2013max.",
            }
        )
    errors = (  # a frame without an error column (the API's) lists none: no KeyError
        Counter(one_line(e) for e in points.loc[~ok, "error"].fillna("(no message)"))
        if "error" in points
        else Counter()
    )
    n_ok = int(ok.sum())
    cards = [
        *_what_ran(points),
        ("points", fmt_int(len(points))),
        ("ok", fmt_int(n_ok)),
        ("errors", fmt_int(len(points) - n_ok)),
        ("Pareto front", fmt_int(int(front.sum()))),
        *_best(points, metrics, ok, senses),
    ]
    return {
        "title": title,
        "version": archsim_version(),
        "cards": cards,
        "axes": _axis_summary(points, axes),
        "pair": pair,
        "figures": figures,
        "errors": errors.most_common(_MAX_ERRORS_LISTED),
        "errors_more": max(0, len(errors) - _MAX_ERRORS_LISTED),
        "n_errors": len(points) - n_ok,
        "table": _points_table(points, axes, metrics, front, ok),
    }


def render_sweep_report(
    points: pd.DataFrame,
    *,
    axes: list[str],
    metrics: list[str],
    title: str,
    pareto: tuple[str, str] | None = None,
    senses: Mapping[str, str] | None = None,
) -> str:
    """The HTML text of the sweep report (self-contained, deterministic).

    ``pareto`` names the two metrics of the scatter (default ``total_time_s`` vs
    ``total_energy_pj``, else the first two ``metrics``); ``senses`` gives each metric's
    ``min``/``max`` as the sweep spec does; a metric it lacks is maximised when
    throughput-like, else minimised (see :func:`archsim.report.pareto.metric_sense`).
    """
    points = _with_failed_metrics(points, metrics)
    _check(points, axes, metrics)
    # the page reads no attrs, but pandas deep-copies them into every derived frame: a
    # sweep's (its provenance) cost 0.13 s of copies over 1,000 points
    points = points.copy(deep=False)
    points.attrs = {}
    for a in axes:  # a list-valued field's axis (a NumPy array after Parquet): hashable tuples
        if points[a].map(lambda v: isinstance(v, list | tuple | np.ndarray)).any():
            points[a] = points[a].map(_as_tuple)
    template = environment().get_template(SWEEP_TEMPLATE)
    return template.render(**_context(points, axes, metrics, title, pareto, senses))


def write_sweep_report(
    points: pd.DataFrame,
    path: str | Path,
    *,
    axes: list[str],
    metrics: list[str],
    title: str,
    pareto: tuple[str, str] | None = None,
    senses: Mapping[str, str] | None = None,
) -> Path:
    """Write the sweep report atomically to ``path`` (a directory gets ``report.html``)."""
    text = render_sweep_report(
        points, axes=axes, metrics=metrics, title=title, pareto=pareto, senses=senses
    )
    return write_page(text, path, "report.html")
