"""HTML run report and its plots: structure, self-containment, escaping, atomic writes."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

import archsim
from archsim.errors import ConfigError
from archsim.report import (
    figure_to_png,
    figure_to_svg,
    plot_cycles_per_layer,
    plot_energy_breakdown,
    plot_utilization,
    render_run_report,
    write_run_report,
)
from archsim.report.formatting import fmt_energy, fmt_int, fmt_num, fmt_percent, fmt_power
from archsim.report.html import accelerator_columns

N_PLOTS = 4  # time, utilization, energy + EIE load balance
_XMLNS = re.compile(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"')


def _layer(name: str, inputs: int, outputs: int) -> dict[str, object]:
    return {
        "name": name,
        "kind": "fc",
        "inputs": inputs,
        "outputs": outputs,
        "weight_density": 0.2,
        "activation_density": 0.5,
    }


def _tiny_hardware() -> object:
    try:
        return archsim.load_hardware("tiny_eie")
    except ConfigError:  # the preset is being reworked elsewhere; any small EIE will do
        return archsim.load_hardware("eie").with_overrides({"pe_array.num_pes": 4})


@pytest.fixture(scope="module")
def tiny_result() -> archsim.RunResult:
    wl = archsim.WorkloadSpec.model_validate(
        {
            "schema_version": 1,
            "name": "tiny_report",
            "source": "unit test",
            "layers": [
                _layer("a", 64, 32),
                _layer("<b>bold</b> & co", 32, 48),
                _layer("c", 48, 16),
            ],
        }
    )
    return archsim.simulate(_tiny_hardware(), wl, seed=0)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tiny_html(tiny_result: archsim.RunResult) -> str:
    return render_run_report(tiny_result)


def _table_body(html: str, table_id: str) -> str:
    m = re.search(rf'<table[^>]*id="{table_id}".*?<tbody>(.*?)</tbody>', html, re.S)
    assert m, f"table {table_id} not found"
    return m.group(1)


def test_one_row_per_layer(tiny_html: str, tiny_result: archsim.RunResult) -> None:
    body = _table_body(tiny_html, "layers-table")
    assert body.count("<tr") == len(tiny_result.layers) == 3


def test_one_svg_per_plot(tiny_html: str) -> None:
    assert tiny_html.count("<svg") == N_PLOTS
    assert "<?xml" not in tiny_html and "<!DOCTYPE svg" not in tiny_html


def test_no_network_references(tiny_html: str) -> None:
    rest = _XMLNS.sub("", tiny_html)
    assert "http://" not in rest and "https://" not in rest
    assert "<script" not in tiny_html.lower()
    assert "<link" not in tiny_html.lower()
    assert "@import" not in tiny_html and "url(http" not in tiny_html


def test_layer_name_is_escaped(tiny_html: str) -> None:
    assert "<b>bold</b>" not in tiny_html
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in tiny_html


def test_svg_ids_are_unique(tiny_html: str) -> None:
    ids = re.findall(r'\bid="([^"]+)"', tiny_html)
    assert len(ids) == len(set(ids))


def test_summary_and_extras(tiny_html: str, tiny_result: archsim.RunResult) -> None:
    assert tiny_result.metadata["archsim_version"] in tiny_html
    assert "GOP/s" in tiny_html and "mm\u00b2" in tiny_html
    extras = accelerator_columns(tiny_result.to_dataframe())
    assert "eie_load_balance" in extras and "energy_pj" not in extras
    assert all(c.startswith("eie_") for c in extras)
    assert 'title="eie_load_balance"' in tiny_html


def test_render_is_deterministic(tiny_result: archsim.RunResult, tiny_html: str) -> None:
    assert render_run_report(tiny_result) == tiny_html


def test_warnings_listed(tiny_result: archsim.RunResult, tiny_html: str) -> None:
    res = dataclasses.replace(tiny_result, warnings=("layer <x>: something odd",))
    html = render_run_report(res)
    assert 'id="warnings"' in html and "layer &lt;x&gt;: something odd" in html
    if not tiny_result.warnings:
        assert 'id="warnings"' not in tiny_html


def test_write_is_atomic(tmp_path: Path, tiny_result: archsim.RunResult) -> None:
    target = tmp_path / "out" / "report.html"
    written = write_run_report(tiny_result, target)
    assert written == target and target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    write_run_report(tiny_result, target)  # overwrite in place
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]
    assert write_run_report(tiny_result, target.parent) == target  # a directory -> report.html
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


def test_write_failure_leaves_no_temp(
    tmp_path: Path, tiny_result: archsim.RunResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(src: str, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("archsim.report.page.os.replace", boom)
    with pytest.raises(OSError):
        write_run_report(tiny_result, tmp_path / "report.html")
    assert list(tmp_path.iterdir()) == []


def test_default_showcase_size() -> None:
    html = render_run_report(archsim.simulate("eie", "eie_benchmarks", seed=0))
    assert len(html.encode("utf-8")) < 2 * 1024 * 1024
    assert _table_body(html, "layers-table").count("<tr") == 9
    assert html.count("<svg") == N_PLOTS
    # the figures are SVG written directly (no matplotlib): legends and labels are <text>
    figures = re.findall(r"<svg.*?</svg>", html, re.S)
    assert any(">imbalance-free</text>" in f for f in figures)
    assert all(">Alex-6</text>" in f for f in figures)  # the layer axis of every figure


@pytest.mark.parametrize("plot", [plot_cycles_per_layer, plot_energy_breakdown, plot_utilization])
def test_plots_return_figures(plot: object, tiny_result: archsim.RunResult, tmp_path: Path) -> None:
    df = tiny_result.to_dataframe()
    fig = plot(df)  # type: ignore[operator]
    assert isinstance(fig, Figure)
    svg = figure_to_svg(fig, id_prefix="x-")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "<text" not in svg  # fonts drawn as paths
    png = figure_to_png(fig, tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = plot(df.iloc[0:0])  # type: ignore[operator]
    assert isinstance(empty, Figure)


def test_cycles_plot_marks_ideal(tiny_result: archsim.RunResult) -> None:
    df = tiny_result.to_dataframe()
    labels = [t.get_text() for t in plot_cycles_per_layer(df).axes[0].get_legend().get_texts()]
    assert "imbalance-free" in labels
    plain = df.drop(columns=["eie_ideal_cycles"])
    assert plot_cycles_per_layer(plain).axes[0].get_legend() is None


def test_many_layers_rotated(tiny_result: archsim.RunResult) -> None:
    df = pd.concat([tiny_result.to_dataframe()] * 20, ignore_index=True)
    df["layer"] = [f"layer_{i:02d}" for i in range(len(df))]
    ax = plot_energy_breakdown(df).axes[0]
    assert len(ax.get_xticklabels()) == 60
    assert ax.get_xticklabels()[0].get_rotation() == 90
    assert "nJ" in ax.get_ylabel() or "\u00b5J" in ax.get_ylabel() or "pJ" in ax.get_ylabel()


def test_formatting() -> None:
    assert fmt_int(23022) == "23,022"
    assert fmt_num(0.96787) == "0.968"
    assert fmt_num(23.96) == "24.0"
    assert fmt_num(1015.9) == "1,016"
    assert fmt_num(float("nan")) == "\u2013"
    assert fmt_percent(0.8114) == "81.1 %"
    assert fmt_energy(1.015e8) == "102 \u00b5J"
    assert fmt_power(0.837) == "837 mW" and fmt_power(1.5) == "1.50 W"
