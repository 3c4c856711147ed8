"""Run report, per accelerator: EIE load balance, SCNN barrier idle, speed-ups, GPU roofline."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from report_data import make_gpu_result

import archsim
from archsim.report import (
    plot_eie_load_balance,
    plot_roofline,
    plot_scnn_barrier,
    plot_speedup,
    render_run_report,
)
from archsim.report.accel_plots import figures_for


def _figure_ids(html: str) -> list[str]:
    return re.findall(r'<figure id="fig-([^"]+)">', html)


@pytest.fixture(scope="module")
def gpu_result() -> archsim.RunResult:
    return make_gpu_result()


def test_gpu_report_has_roofline(gpu_result: archsim.RunResult) -> None:
    html = render_run_report(gpu_result)
    assert _figure_ids(html) == ["time", "utilization", "energy", "roofline"]
    assert html.count("<svg") == 4
    assert re.search(r'<th class="num extra" title="tc_tflops">tflops</th>', html)
    body = re.search(r'id="layers-table".*?<tbody>(.*?)</tbody>', html, re.S)
    assert body and body.group(1).count("<tr") == 40


def test_roofline_points_and_roofs(gpu_result: archsim.RunResult) -> None:
    df = gpu_result.to_dataframe()
    ax = plot_roofline(df).axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    points = sum(len(c.get_offsets()) for c in ax.collections)
    assert points == len(df)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    counts = df["tc_bound"].value_counts()
    for bound, n in counts.items():
        assert f"{bound}-bound ({n})" in labels
    roof = ax.lines[0].get_ydata()
    assert max(roof) == pytest.approx(125.0) and min(roof) < 125.0  # ridge inside the range
    # each achieved point lies under its roof
    ai, tf = df["tc_arithmetic_intensity"], df["tc_tflops"]
    assert (tf <= np.minimum(125.0, ai * 900e9 / 1e12) * (1 + 1e-9)).all()


def test_roofline_without_columns_is_empty() -> None:
    fig = plot_roofline(pd.DataFrame({"layer": ["a"], "time_s": [1.0]}))
    assert not fig.axes[0].axison


def _scnn_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "layer": ["conv1", "conv2", "conv3"],
            "cycles": [100, 200, 300],
            "utilization": [0.55, 0.36, 0.25],
            "scnn_barrier_idle": [0.09, 0.32, 0.33],
            "speedup_vs_dcnn": [0.95, 1.6, 2.3],
            "energy_ratio_vs_dcnn": [1.0, 1.65, 2.6],
        }
    )


def test_scnn_barrier_and_speedup() -> None:
    df = _scnn_frame()
    ax = plot_scnn_barrier(df).axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([55, 36, 25, 9, 32, 33])
    ax = plot_speedup(df).axes[0]
    assert [p.get_height() for p in ax.patches] == pytest.approx([0.95, 1.6, 2.3, 1.0, 1.65, 2.6])
    assert "dcnn" in ax.get_title(loc="left")
    ids = [i for i, _, _ in figures_for("scnn", df)]
    assert ids == ["scnn-barrier", "speedup"]


def test_eie_load_balance_shares() -> None:
    df = pd.DataFrame(
        {
            "layer": ["a", "b"],
            "cycles": [1000, 2000],
            "eie_load_balance": [0.9, 0.95],
            "eie_max_pe_busy_cycles": [990, 2000],
            "eie_real_work": [0.8, 1.0],
        }
    )
    top, bottom = plot_eie_load_balance(df).axes
    busy, starved = top.patches[:2], top.patches[2:]
    assert [p.get_height() for p in busy] == pytest.approx([90, 95])
    assert [p.get_height() for p in starved] == pytest.approx([10, 5])
    assert top.get_ylim()[0] == pytest.approx(80.0)  # zoomed on the starved part
    assert [p.get_height() for p in bottom.patches] == pytest.approx([20, 0])
    assert [i for i, _, _ in figures_for("eie", df)] == ["eie-balance"]


def test_run_report_with_baseline_cards() -> None:
    wl = archsim.load_workload("eie_benchmarks")
    wl = wl.model_copy(update={"layers": wl.layers[7:]})
    hw = archsim.load_hardware("tiny_eie")
    base = hw.with_overrides({"pe_array.num_pes": 2})
    html = render_run_report(archsim.simulate(hw, wl, baseline=base))
    assert _figure_ids(html) == ["time", "utilization", "energy", "eie-balance", "speedup"]
    assert "speedup vs eie" in html and "energy ratio vs eie" in html
    assert "red mark" in html


def _clock_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "layer": ["small", "big", "zeros"],
            "clock_hz": [1.98e9, 1.32e9, 1.56e9],
            "board_power_w": [410.0, 699.0, 430.0],
            "tc_clock_limit": ["max_clock", "power", "tensor_current"],
        }
    )


def test_clock_figure_colours_each_layer_by_its_limit() -> None:
    """A GPU with a power block: each layer's solved SM clock (one bar series per limit, in
    both twins) and the board power there."""
    from archsim.report.accel_plots import plot_clock
    from archsim.report.run_figures import plot_clock as svg_clock

    df = _clock_frame()
    top, bottom = plot_clock(df).axes
    labels = [t.get_text() for t in top.get_legend().get_texts()]
    assert labels == ["at max boost", "tensor peak-current cap", "held at the power limit"]
    assert sorted(p.get_height() for p in top.patches) == pytest.approx([1320, 1560, 1980])
    assert [p.get_height() for p in bottom.patches] == pytest.approx([410, 699, 430])
    assert "clock" in [i for i, _, _ in figures_for("tensor_core", df)]
    svg = svg_clock({c: df[c].tolist() for c in df.columns}, len(df))
    assert "held at the power limit" in svg and "board power (W)" in svg
