"""The run report's figures, written as SVG text without matplotlib (``svg_charts``)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from archsim.report.run_figures import run_figures
from archsim.report.svg_charts import Bars, Panel, layer_chart, nice_ticks

_NS = "{http://www.w3.org/2000/svg}"


def _records(names: list[str]) -> tuple[list[str], list[dict]]:
    rows = [
        {
            "layer": name,
            "cycles": 100 * (i + 1),
            "time_s": 1e-6 * (i + 1),
            "utilization": 0.5,
            "energy_pj": 3.0,
            "energy_sram_pj": 2.0,
            "energy_dram_pj": 1.0,
            "eie_load_balance": 0.9,
            "eie_real_work": 0.8,
            "eie_ideal_cycles": 90 * (i + 1),
        }
        for i, name in enumerate(names)
    ]
    return list(rows[0]) if rows else [], rows


def test_figures_are_well_formed_svg_with_escaped_names():
    names = ['<b>&"x', "fc\u4e2d\u6587", "c"]
    figures = run_figures("eie", *_records(names))
    assert [i for i, _ in figures] == ["time", "utilization", "energy", "eie-balance"]
    for _, svg in figures:
        root = ET.fromstring(svg)  # parses: every name escaped
        assert root.tag == f"{_NS}svg"
        texts = [t.text for t in root.iter(f"{_NS}text")]
        assert '<b>&"x' in texts and "fc\u4e2d\u6587" in texts
        assert "<b>" not in svg
        assert ' id="' not in svg  # several figures inline in one page: nothing to clash
        assert len(list(root.iter(f"{_NS}rect"))) > 3  # background + bars


def test_figures_are_deterministic():
    assert run_figures("eie", *_records(["a", "b"])) == run_figures("eie", *_records(["a", "b"]))


def test_no_layers_says_so():
    for _, svg in run_figures("eie", [], []):
        assert ">no layers</text>" in svg


def test_many_layers_name_every_kth_vertically():
    names = [f"layer_{i:03d}" for i in range(200)]
    svg = layer_chart(names, [Panel("t", "y", str, bars=[Bars([1.0] * 200, "#000")])])
    shown = re.findall(r">(layer_\d+)</text>", svg)
    assert shown == names[::3]  # at most 80 names
    assert 'transform="rotate(-90' in svg


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [(0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1.0]), (0, 105, [0, 25, 50, 75, 100]), (80, 100, None)],
)
def test_nice_ticks(lo, hi, expected):
    ticks = nice_ticks(lo, hi)
    if expected is not None:
        assert ticks == pytest.approx(expected)
    assert ticks[0] >= lo and ticks[-1] <= hi and 3 <= len(ticks) <= 7
