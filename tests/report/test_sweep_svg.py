"""The sweep report's SVG figures (``sweep_svg``): what they draw, and no matplotlib."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pandas as pd
from report_data import AXES, METRICS, make_points

from archsim.report import pareto_mask
from archsim.report.sweep_svg import MAX_GRID_COLUMNS, metric_grid_svgs, pareto_svg

#: the left and bottom axis lines of one panel
_FRAME = re.compile(r'<path d="M[\d.]+ [\d.]+V[\d.]+H[\d.]+" fill="none" stroke="#000"')


def _front(points: pd.DataFrame) -> pd.Series:
    ok = points[points["status"] == "ok"]
    mask = pareto_mask(ok, {"total_time_s": "min", "total_energy_pj": "min"})
    return mask.reindex(points.index, fill_value=False)


def _dots(svg: str) -> int:
    return sum(d.count("h0") for d in re.findall(r'<path d="([^"]*)"', svg))


def test_pareto_circles_the_front_and_colours_by_axis(sweep_points: pd.DataFrame) -> None:
    front = _front(sweep_points)
    svg = pareto_svg(sweep_points, "total_time_s", "total_energy_pj", front, color_by=AXES[0])
    # one circle per front point, one in the legend, with the count the table shows
    assert svg.count('r="4.2" fill="none"') == int(front.sum()) + 1
    assert f"Pareto front ({int(front.sum())} of 197 points)" in svg
    assert re.search(r'<path d="M[\d.]+ [\d.]+(H[\d.]+V[\d.]+)+" fill="none" stroke="#c44e52"', svg)
    # 8 PE counts: a discrete legend of 8 entries, the dots in as many colours
    assert ">pe_array.num_pes<" in svg
    assert len(set(re.findall(r'stroke="(#[0-9a-f]{6})" stroke-width="4.8"', svg))) == 8
    assert 0 < _dots(svg) <= 197 + 8  # at most one dot per point (repeats merged) + legend


def test_pareto_staircase_only_when_both_minimised(sweep_points: pd.DataFrame) -> None:
    ok = sweep_points[sweep_points["status"] == "ok"]
    senses = {"total_time_s": "min", "effective_gops": "max"}
    front = pareto_mask(ok, senses).reindex(sweep_points.index, fill_value=False)
    svg = pareto_svg(sweep_points, "total_time_s", "effective_gops", front, senses=("min", "max"))
    assert re.search(r'<path d="M[\d.]+ [\d.]+(L[\d.]+ [\d.]+)*" fill="none" stroke="#c44e52"', svg)


def test_pareto_continuous_axis_gets_a_colour_bar() -> None:
    pts = make_points(4, 5, 5, errors=0)
    pts["x.many"] = np.arange(len(pts), dtype=float) + 1.0  # 100 distinct values
    svg = pareto_svg(pts, "total_time_s", "total_energy_pj", _front(pts), color_by="x.many")
    assert svg.count('width="12" height=') == 32  # the bar's steps
    assert ">x.many<" in svg


def test_log_scale_when_values_span_more_than_50x() -> None:
    pts = make_points(8, 1, 1, errors=0)  # 4 .. 512 PEs: time and area span > 100x
    svg = pareto_svg(pts, "total_time_s", "total_area_mm2", _front(pts))
    x_labels = re.findall(r'text-anchor="middle"[^>]*>([^<]+)</text>', svg)
    y_labels = re.findall(r'text-anchor="end"[^>]*>([^<]+)</text>', svg)
    assert x_labels[:2] == ["0.1", "1"] and y_labels == ["10", "100"]  # decades (ms, mm2)


def test_grid_has_a_panel_per_metric_and_axis(sweep_points: pd.DataFrame) -> None:
    (svg,) = metric_grid_svgs(sweep_points, AXES, METRICS)
    assert len(_FRAME.findall(svg)) == len(AXES) * len(METRICS)
    assert svg.count("<polygon") == len(AXES) * len(METRICS)  # min-max bands
    assert svg.count("<polyline") == len(AXES) * len(METRICS)  # medians
    for axis in AXES:
        assert f">{axis}<" in svg
    assert "time (ms)" in svg and "median over other axes" in svg


def test_grid_splits_many_axes_and_says_when_nothing_ran(sweep_points: pd.DataFrame) -> None:
    pts = sweep_points.copy()
    extra = [f"x.a{i}" for i in range(3)]
    for i, name in enumerate(extra):
        pts[name] = np.arange(len(pts)) % (i + 2)
    figs = metric_grid_svgs(pts, AXES + extra, METRICS[:2])
    assert len(figs) == 2 and MAX_GRID_COLUMNS == 4
    assert [len(_FRAME.findall(f)) for f in figs] == [2 * 4, 2 * 2]
    pts["status"] = "error"
    (empty,) = metric_grid_svgs(pts, AXES, METRICS)
    assert "no successful points to plot" in empty


def test_median_line_goes_through_the_medians() -> None:
    pts = pd.DataFrame(
        {"a": [1, 1, 1, 2, 2, 2], "m_s": [1.0, 2.0, 9.0, 4.0, 5.0, 6.0], "status": "ok"}
    )
    (svg,) = metric_grid_svgs(pts, ["a"], ["m_s"])
    (line,) = re.findall(r'<polyline points="([^"]+)"', svg)
    (band,) = re.findall(r'<polygon points="([^"]+)"', svg)
    y = {float(p.split(",")[1]) for p in line.split()}
    ys = sorted({float(p.split(",")[1]) for p in band.split()})
    assert len(y) == 2 and len(ys) == 4  # medians 2 and 5; band 9 / 6 above, 1 / 4 below
    lo, hi = ys[-1], ys[0]  # pixels grow downwards: 1 s at the bottom, 9 s at the top
    frac = [(lo - v) / (lo - hi) for v in sorted(y, reverse=True)]
    assert np.allclose(frac, [(2 - 1) / 8, (5 - 1) / 8], atol=0.01)


def test_sweep_report_loads_no_matplotlib() -> None:
    code = (
        "import sys\n"
        "sys.path.insert(0, 'tests/report')\n"
        "from report_data import AXES, METRICS, make_points\n"
        "from archsim.report import render_sweep_report\n"
        "html = render_sweep_report(make_points(), axes=AXES, metrics=METRICS, title='t')\n"
        "assert html.count('<svg') == 2\n"
        "print('matplotlib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
