"""Sweep report: Pareto front, figures, the table of points, errors, self-containment."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_data import AXES, METRICS, make_points

from archsim.errors import ArchsimError
from archsim.report import pareto_mask, plot_metric_grid, render_sweep_report, write_sweep_report
from archsim.report.pareto import metric_sense
from archsim.report.sweep_plots import MAX_GRID_COLUMNS, axis_values, metric_unit

_XMLNS = re.compile(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"')


@pytest.fixture(scope="module")
def html(sweep_points: pd.DataFrame) -> str:
    return render_sweep_report(sweep_points, axes=AXES, metrics=METRICS, title="sweep <x> & y")


def _rows(html: str) -> list[str]:
    body = re.search(r'<table id="points-table".*?<tbody>(.*?)</tbody>', html, re.S)
    assert body
    return re.findall(r"<tr class=\"([^\"]*)\"", body.group(1))


def test_one_row_per_point_errors_marked(html: str, sweep_points: pd.DataFrame) -> None:
    classes = _rows(html)
    assert len(classes) == len(sweep_points) == 200
    assert sum(c.startswith("error") for c in classes) == 3
    assert "&lt;0&gt; must divide the rows &amp; be" in html  # error text shown, escaped
    assert "3 point(s) failed" in html


def test_front_marked_in_table(html: str, sweep_points: pd.DataFrame) -> None:
    # the front the CLI prints: over every metric of the spec, each in its own sense (the
    # page used time and energy whatever the spec asked: a dgx_h100_training sweep ranked by
    # samples/s starred 8 points where the CLI listed 10)
    ok = sweep_points[sweep_points["status"] == "ok"]
    front = pareto_mask(ok, {m: metric_sense(m) for m in METRICS})
    assert 1 <= front.sum() < len(ok)
    assert sum(" front" in c for c in _rows(html)) == int(front.sum())
    two = render_sweep_report(sweep_points, axes=AXES, metrics=["effective_gops",
                              "total_energy_pj"], title="t")  # fmt: skip
    pair = pareto_mask(ok, {"effective_gops": "max", "total_energy_pj": "min"})
    assert sum(" front" in c for c in _rows(two)) == int(pair.sum())
    assert "(lower total_energy_pj and higher effective_gops are better)" in two


def test_figures_and_self_contained(html: str) -> None:
    assert html.count("<svg") == 2  # Pareto scatter + one grid (3 axes <= 4 per figure)
    rest = _XMLNS.sub("", html)
    assert "http://" not in rest and "https://" not in rest and "<link" not in html
    assert html.count("<script") == 1 and "src=" not in html.split("<script", 1)[1]
    assert "sweep &lt;x&gt; &amp; y" in html
    assert len(html.encode()) < 2 * 1024 * 1024
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))


def test_deterministic(html: str, sweep_points: pd.DataFrame) -> None:
    again = render_sweep_report(sweep_points, axes=AXES, metrics=METRICS, title="sweep <x> & y")
    assert again == html


def test_write_atomic(tmp_path: Path) -> None:
    pts = make_points(2, 2, 2, errors=0)
    out = write_sweep_report(pts, tmp_path, axes=AXES, metrics=METRICS[:2], title="t")
    assert out == tmp_path / "report.html" and out.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_missing_column_is_one_clear_error(sweep_points: pd.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(ArchsimError, match="pe_array.nope.*missing.*available: point"):
        write_sweep_report(
            sweep_points, tmp_path / "r.html", axes=["pe_array.nope"], metrics=METRICS, title="t"
        )
    assert list(tmp_path.iterdir()) == []


def test_all_failed_and_categorical_axis() -> None:
    pts = make_points(2, 2, 1, errors=0)
    pts["preset"] = ["eie", "tiny_eie"] * 2
    html = render_sweep_report(pts, axes=["preset"], metrics=["total_time_s"], title="t")
    assert html.count("<svg") == 2  # the default Pareto pair is in the frame though not a metric
    assert "total_energy_pj vs total_time_s" in html
    pts["status"], pts["error"] = "error", "boom"
    html = render_sweep_report(pts, axes=["preset"], metrics=METRICS, title="t")
    assert "4 point(s) failed" in html and "4 &times; boom" in html
    assert len(_rows(html)) == 4


def test_all_failed_without_the_metrics_columns_still_renders() -> None:
    """A training sweep whose every point failed has no ``samples_per_s`` column at all (only
    successes write it): the page lists the failures with empty metric cells, where it used to
    refuse with 'column(s) samples_per_s missing' and leave the sweep folder without a page."""
    pts = make_points(2, 2, 1, errors=0)[["point", "pe_array.num_pes"]].copy()
    pts["status"], pts["error"] = "error", "no tf32"
    html = render_sweep_report(
        pts, axes=["pe_array.num_pes"], metrics=["samples_per_s", "scaling_efficiency"], title="t"
    )
    assert "4 point(s) failed" in html and "4 &times; no tf32" in html
    assert len(_rows(html)) == 4
    pts.loc[0, "status"] = "ok"  # a success without the metric is still the spec's mistake
    with pytest.raises(ArchsimError, match="samples_per_s, scaling_efficiency missing"):
        render_sweep_report(pts, axes=["pe_array.num_pes"], metrics=["samples_per_s",
                            "scaling_efficiency"], title="t")  # fmt: skip


def test_many_axes_split_into_figures(sweep_points: pd.DataFrame) -> None:
    pts = sweep_points.copy()
    extra = [f"x.a{i}" for i in range(3)]
    for i, name in enumerate(extra):
        pts[name] = np.arange(len(pts)) % (i + 2)
    figs = plot_metric_grid(pts, AXES + extra, METRICS[:2])
    assert len(figs) == 2 and MAX_GRID_COLUMNS == 4
    assert len(figs[0].axes) == 2 * 4 and len(figs[1].axes) == 2 * 2
    assert figs[0].axes[0].get_yscale() == "log"  # cycles span > 50x


def test_axis_values_and_units() -> None:
    num = axis_values(pd.Series([16, 64, 256, 16]))
    assert num.log and num.numeric and num.labels == ["16", "64", "256"]
    clock = axis_values(pd.Series([400e6, 1.2e9]))
    assert clock.labels == ["400M", "1.2G"] and not clock.log
    cat = axis_values(pd.Series(["b", "a", "b"]))
    assert not cat.numeric and cat.labels == ["b", "a"] and list(cat.positions) == [0, 1, 0]
    assert metric_unit("total_time_s", [2e-6, 5e-6]).label == "time (\u00b5s)"
    assert metric_unit("total_energy_pj", [3e7]).scale == pytest.approx(1e-6)
    assert metric_sense("effective_gops") == "max" and metric_sense("total_time_s") == "min"


def test_pareto_simple() -> None:
    f = pd.DataFrame({"t": [1, 2, 3, 2, 1, np.nan], "e": [5, 2, 1, 3, 5, 0], "g": [1] * 6})
    assert pareto_mask(f, {"t": "min", "e": "min"}).tolist() == [1, 1, 1, 0, 1, 0]
    assert pareto_mask(f, {"t": "max", "e": "min"}).tolist() == [0, 0, 1, 0, 0, 0]
    with pytest.raises(ValueError, match="sense"):
        pareto_mask(f, {"t": "least"})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)), max_size=40))
def test_pareto_matches_brute_force(rows: list[tuple[int, int, int]]) -> None:
    f = pd.DataFrame(rows, columns=["a", "b", "c"], dtype=float)
    got = pareto_mask(f, {"a": "min", "b": "max", "c": "min"}).tolist()
    keys = [(a, -b, c) for a, b, c in rows]

    def dominated(p: tuple[int, ...]) -> bool:
        return any(all(o <= s for o, s in zip(q, p, strict=True)) and q != p for q in keys)

    want = [not dominated(p) for p in keys]
    assert got == want


def test_error_column_only_when_a_point_failed() -> None:
    pts = make_points(2, 2, 2, errors=0)
    html = render_sweep_report(pts, axes=AXES, metrics=METRICS, title="t")
    assert 'title="why the point failed"' not in html and 'class="msg"' not in html
    pts.loc[0, ["status", "error"]] = ["error", "boom"]
    html = render_sweep_report(pts, axes=AXES, metrics=METRICS, title="t")
    assert 'title="why the point failed"' in html and '<td class="msg">boom</td>' in html


def test_matplotlib_pareto_colour_bar_for_a_continuous_axis() -> None:
    """More than ten distinct values of the colouring axis give a colour bar labelled with the
    axis name (the Python API's matplotlib twin of the report's SVG figure)."""
    from archsim.report.sweep_plots import plot_pareto

    n = 24
    pts = pd.DataFrame({
        "status": ["ok"] * n, "fifo": [float(i) for i in range(n)],
        "total_time_s": [1e-3 * (1 + i) for i in range(n)],
        "total_energy_pj": [1e9 / (1 + i) for i in range(n)],
    })  # fmt: skip
    front = pareto_mask(pts, {"total_time_s": "min", "total_energy_pj": "min"})
    fig = plot_pareto(pts, "total_time_s", "total_energy_pj", front, color_by="fifo")
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert "fifo" in labels, labels


def test_table_row_markup_exact() -> None:
    """Each row as the page has always written it: classes, sort keys (none for text), the
    key as the first cell's title, every text escaped; a repeated axis value is formatted
    once and shown in every row that has it."""
    pts = pd.DataFrame(
        {
            "point": [0, 1, 2],
            "point_key": ['k<0>"', None, "k2"],
            "pe_array.n_pes": [64, 64, 128],
            "preset": ['a"<b>&', 'a"<b>&', "c"],
            "status": ["ok", "ok", "error"],
            "error": [None, None, "bad & <worse>"],
            "total_time_s": [2e-6, 1e-6, np.nan],
            "total_energy_pj": [1.0, 3.0, np.nan],
        }
    )
    axes, metrics = ["pe_array.n_pes", "preset"], ["total_time_s", "total_energy_pj"]
    html = render_sweep_report(pts, axes=axes, metrics=metrics, title="t")
    body = re.search(r"<tbody>\n(.*?)</tbody>", html, re.S)
    assert body
    rows = body.group(1).split("\n")
    assert rows[-1] == "" and len(rows) == 4  # one line per point, each ending in a newline
    first = '<tr class="ok front"><td class="num" data-v="0.0" title="k&lt;0&gt;&#34;">0</td>'
    assert rows[0].startswith(first)
    axis_cells = '<td class="num" data-v="64.0">64</td><td class="num">a&#34;&lt;b&gt;&amp;</td>'
    assert axis_cells in rows[0] and axis_cells in rows[1]
    assert rows[1].count('data-v="64.0">64</td>') == 1 and "title=" not in rows[1]
    assert '<td class="num" data-v="128.0">128</td><td class="num">c</td>' in rows[2]
    assert rows[2].startswith('<tr class="error">') and rows[2].endswith(
        '<td class="msg">bad &amp; &lt;worse&gt;</td></tr>'
    )


def test_axis_cells_keep_each_values_own_sort_key() -> None:
    """0.0 and -0.0 print alike but sort by their own keys; 1 and 1.0 print differently."""
    pts = pd.DataFrame(
        {
            "point": [0, 1, 2, 3],
            "point_key": ["a", "b", "c", "d"],
            "x.scale": [0.0, -0.0, 0.0, -0.0],
            "x.mixed": pd.Series([1, 1.0, 1, 1.0], dtype=object),
            "status": ["ok"] * 4,
            "error": [None] * 4,
            "total_time_s": [1e-6, 2e-6, 3e-6, 4e-6],
            "total_energy_pj": [4.0, 3.0, 2.0, 1.0],
        }
    )
    axes, metrics = ["x.scale", "x.mixed"], ["total_time_s", "total_energy_pj"]
    html = render_sweep_report(pts, axes=axes, metrics=metrics, title="t")
    body = re.search(r"<tbody>\n(.*?)</tbody>", html, re.S)
    assert body
    rows = body.group(1).split("\n")[:4]
    expected = [('data-v="0.0">0<', ">1<"), ('data-v="-0.0">0<', ">1.00<")] * 2
    for row, (scale, mixed) in zip(rows, expected, strict=True):
        assert scale in row and f'data-v="1.0"{mixed}' in row, row


def test_an_unset_axis_value_is_labelled_as_the_tables_show_it() -> None:
    """`nccl.algorithm: [null, ring]` drew a `nan` tick label beside the tables' dash."""
    from archsim.report.formatting import MISSING
    from archsim.report.sweep_axes import axis_values

    values = axis_values(pd.Series([None, "ring", float("nan")], dtype=object))
    assert values.labels == [MISSING, "ring"] and list(values.positions) == [0.0, 1.0, 0.0]


def test_a_run_without_an_area_model_says_so() -> None:
    """The GPU pages read "area 0 mm²" where the CLI says "area not modelled"."""
    import archsim
    from archsim.report.html import render_run_report

    gemm = {"kind": "gemm", "name": "g", "m": 64, "n": 64, "k": 64, "precision": "fp16"}
    wl = archsim.WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "w", "source": "t", "layers": [gemm]}
    )
    assert "not modelled" in render_run_report(archsim.simulate("h100", wl))
    eie = archsim.simulate("tiny_eie", "eie_benchmarks")
    assert "mm\u00b2 (priced components)" in render_run_report(eie)


def test_pages_say_when_gpu_energy_is_the_priced_actions_only(tmp_path: Path) -> None:
    """V100 and A100 have no power model: their pages showed 41 W at 89 % of peak on a 300 W
    part, and a DGX A100 step at 111 W per GPU, beside H100's board figures, without a word."""
    import archsim
    from archsim.report.html import render_run_report
    from archsim.report.system_report import write_training_report

    gemm = {"kind": "gemm", "name": "g", "m": 256, "n": 256, "k": 256, "precision": "fp16"}
    wl = archsim.WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "w", "source": "t", "layers": [gemm]}
    )
    note = "priced actions only: no static power"
    assert note in render_run_report(archsim.simulate("v100", wl))
    assert note not in render_run_report(archsim.simulate("h100", wl))
    for system, says in (("dgx_a100", True), ("dgx_h100", False)):
        step = archsim.train_step(system, "resnet50", 2, batch_per_gpu=8).metadata["train_step"]
        timeline = step.pop("timeline")
        page = write_training_report([step], timeline, "resnet50", tmp_path / system)
        page = (page if page.is_file() else page / "report.html").read_text()
        assert ("GPUs: priced actions only" in page) is says, system
        assert "DDP copy-back" in page


def test_the_sweep_page_names_what_ran(sweep_points: pd.DataFrame) -> None:
    """The page never named the hardware, the workloads or the seeds of its points."""
    points = sweep_points.assign(hardware="eie", workload="eie_benchmarks", seed=0)
    html = render_sweep_report(points, axes=AXES, metrics=METRICS[:2], title="t")
    for key, value in (("hardware", "eie"), ("workload", "eie_benchmarks"), ("seeds", "0")):
        assert f'class="k">{key}</div><div class="v">{value}<' in html
