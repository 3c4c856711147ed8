"""Issue 17 defect 8: output a reader can trust (names, totals, units, help, list)."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import archsim
from archsim.cli import build_parser, format_layer_table, main
from archsim.report.page import write_page

ROOT = Path(__file__).resolve().parents[2]
LAYER = "kind: fc, inputs: 64, outputs: 32, weight_density: 0.2, activation_density: 0.5"


@pytest.fixture(scope="module")
def result() -> archsim.RunResult:
    names = ["res2a_branch2a", "res2a_branch2b", "res2a_branch2c", "层1_残差"]
    layers = "".join(f"  - {{name: {n}, {LAYER}}}\n" for n in names)
    wl = (
        archsim.load_workload.__wrapped__ if hasattr(archsim.load_workload, "__wrapped__") else None
    )
    del wl
    import yaml

    from archsim.config.workload import WorkloadSpec

    spec = WorkloadSpec.model_validate(
        yaml.safe_load(f"schema_version: 1\nname: r\nsource: test\nlayers:\n{layers}")
    )
    return archsim.simulate("tiny_eie", spec, seed=0)


def test_layer_names_are_never_cut(result: archsim.RunResult) -> None:
    table = format_layer_table(result)
    rows = table.splitlines()[2:6]
    assert [r.split()[0] for r in rows] == [
        "res2a_branch2a",
        "res2a_branch2b",
        "res2a_branch2c",
        "层1_残差",
    ]
    cycles_col = {r.split()[1] for r in rows}
    assert all(c.replace(",", "").isdigit() for c in cycles_col)


def test_layer_cycles_add_up_to_the_total_with_a_reason(result: archsim.RunResult) -> None:
    table = format_layer_table(result)
    layer_sum = sum(lr.cycles for lr in result.layers)
    exposed = result.total_cycles - layer_sum
    print(f"layers {layer_sum} + exposed {exposed} = total {result.total_cycles}")
    assert exposed > 0
    assert f"= {layer_sum:,} in layers + {exposed:,} of DRAM transfers not hidden" in table
    assert exposed == result.metadata["exposed_io_cycles"]


def test_area_not_modelled_is_said(result: archsim.RunResult) -> None:
    assert "area 0.00" not in format_layer_table(replace(result, area_mm2={}))
    assert "area not modelled" in format_layer_table(replace(result, area_mm2={}))
    assert f"area {result.total_area_mm2:.2f} mm^2" in format_layer_table(result)


def test_unicode_layer_names_do_not_flood_stderr(result: archsim.RunResult, tmp_path: Path) -> None:
    from archsim.report import write_run_report

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write_run_report(result, tmp_path / "report.html")
    glyphs = [w for w in caught if "Glyph" in str(w.message)]
    assert glyphs == []
    assert "层1_残差" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_trailing_slash_means_a_folder(tmp_path: Path) -> None:
    path = write_page("<p>x</p>", f"{tmp_path / 'out'}/", "report.html")
    assert path == tmp_path / "out" / "report.html"
    assert path.read_text(encoding="utf-8") == "<p>x</p>"


def test_tile_labels_keep_their_case() -> None:
    css = (ROOT / "archsim" / "report" / "templates" / "base.html.j2").read_text(encoding="utf-8")
    assert "uppercase" not in css  # "best time (us)" read as "(ΜS)" and nJ as "NJ"


def test_help_names_every_model_and_command(capsys: Any) -> None:
    build_parser().print_help()
    text = " ".join(capsys.readouterr().out.split())
    for word in ("EIE", "SCNN", "DCNN", "systolic", "Tensor Core", "V100", "A100", "H100"):
        assert word in text, word
    for command in ("run", "sweep", "validate", "list", "schema", "report"):
        assert f" {command} " in text, command


def test_list_wraps_whole_words_in_columns(capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert main(["list", "--json"]) == 0
    presets = json.loads(capsys.readouterr().out)
    text = " ".join(" ".join(lines).split())
    for items in presets.values():
        for item in items:  # every description appears whole, words uncut
            assert (
                " ".join(item["description"].split()) in text.replace(f" {item['name']} ", " ")
                or item["description"] == ""
            )


def test_results_name_the_changed_design(tmp_path: Path, capsys: Any) -> None:
    wl = tmp_path / "wl.yaml"
    wl.write_text(f"schema_version: 1\nname: r\nsource: t\nlayers:\n  - {{name: a, {LAYER}}}\n")
    out = tmp_path / "o"
    assert (
        main(["run", "tiny_eie", str(wl), "-o", str(out), "-q", "--set", "pe_array.num_pes=8"]) == 0
    )
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["hardware"] == "tiny_eie (pe_array.num_pes=8)"
    assert data["metadata"]["hardware_config"]["pe_array"]["num_pes"] == 8


def test_notebook_views_are_compact(result: archsim.RunResult) -> None:
    text = repr(result)
    assert text.startswith("RunResult('tiny_eie' on 'r', seed 0: 4 layers,") and len(text) < 200
    page = result._repr_html_()
    assert len(page) < 4000 and "层1_残差" in page and "area " in page
    assert page.count("<tr>") == 1 + 4
    assert "2 more layers" in result._repr_html_(max_layers=2)
    evil = replace(result, hardware="<script>")
    assert "<script>" not in evil._repr_html_() and "&lt;script&gt;" in evil._repr_html_()
