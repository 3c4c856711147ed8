"""Tampered results.json files that `archsim report` accepted or reported badly: each is now
exit 2 and one `archsim: error:` line naming the file, the field and what is allowed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archsim.cli import main

_WORKLOAD = """schema_version: 1
name: two_fc
source: a test
layers:
  - {name: fc1, kind: fc, inputs: 64, outputs: 32, weight_density: 0.5, activation_density: 0.5}
  - {name: fc2, kind: fc, inputs: 32, outputs: 16, weight_density: 0.5, activation_density: 0.5}
"""


@pytest.fixture(scope="module")
def valid_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    import archsim

    wl = tmp_path_factory.mktemp("wl") / "two_fc.yaml"
    wl.write_text(_WORKLOAD, encoding="utf-8")
    return archsim.simulate("tiny_eie", wl).to_json()


def _report(folder: Path, capsys: pytest.CaptureFixture[str], text: str, *needles: str) -> str:
    (folder / "results.json").write_text(text, encoding="utf-8")
    code = main(["report", str(folder)])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == "" and "Traceback" not in err
    [line] = err.splitlines()
    assert line.startswith("archsim: error: "), line
    for needle in ("results.json", *needles):
        assert needle in line, f"{needle!r} not in {line!r}"
    assert not (folder / "report.html").exists()
    return line


def _mutated(text: str, change: Callable[[dict[str, Any]], None]) -> str:
    data = json.loads(text)
    change(data)
    return json.dumps(data)


def test_valid_results_still_report(tmp_path: Path, valid_text: str, capsys) -> None:
    (tmp_path / "results.json").write_text(valid_text, encoding="utf-8")
    assert main(["report", str(tmp_path)]) == 0
    assert (tmp_path / "report.html").exists()


def test_nan_literal_in_extras(tmp_path: Path, valid_text: str, capsys) -> None:
    text = valid_text.replace('"eie_load_balance": ', '"eie_load_balance": NaN, "x": ', 1)
    _report(tmp_path, capsys, text, "layers.0.extras.eie_load_balance: NaN", "allowed: a number")


@pytest.mark.parametrize(
    ("column", "value", "allowed"),
    [
        ("eie_load_balance", "abc", "allowed: a number, or null"),
        ("eie_load_balance", True, "allowed: a number, or null"),
        ("eie_real_work", [1, 2], "allowed: a number, or null"),
        ("eie_new_column", {"a": 1}, "allowed: text, a number or true/false, or null"),
        ("dcnn_streamed", "yes", "allowed: true or false, or null"),
    ],
    ids=["text_for_number", "bool_for_number", "list", "object", "text_for_boolean"],
)
def test_extras_of_the_wrong_type(
    tmp_path: Path, valid_text: str, capsys, column: str, value: Any, allowed: str
) -> None:
    text = _mutated(valid_text, lambda d: d["layers"][1]["extras"].__setitem__(column, value))
    _report(tmp_path, capsys, text, f"layers.1.extras.{column}", "'fc2'", allowed)


def test_unknown_accelerator(tmp_path: Path, valid_text: str, capsys) -> None:
    text = _mutated(valid_text, lambda d: d.__setitem__("accelerator", "foo"))
    _report(tmp_path, capsys, text, "accelerator: 'foo'", "allowed: dcnn, eie", "tensor_core")


def test_unknown_layer_kind(tmp_path: Path, valid_text: str, capsys) -> None:
    text = _mutated(valid_text, lambda d: d["layers"][0].__setitem__("kind", "bogus"))
    _report(tmp_path, capsys, text, "layers.0.kind: 'bogus'", "allowed for eie: fc, lstm")


def test_total_cycles_before_a_layer_ends(tmp_path: Path, valid_text: str, capsys) -> None:
    text = _mutated(valid_text, lambda d: d.__setitem__("total_cycles", 1))
    _report(tmp_path, capsys, text, "total_cycles: 1", "ends at cycle", "allowed: at least")


def test_total_cycles_not_layers_plus_exposed_io(tmp_path: Path, valid_text: str, capsys) -> None:
    total = json.loads(valid_text)["total_cycles"]
    text = _mutated(valid_text, lambda d: d.__setitem__("total_cycles", total + 1))
    _report(tmp_path, capsys, text, f"total_cycles: {total + 1}", "exposed_io_cycles",
            f"allowed: their sum, {total}")  # fmt: skip


def test_layer_cycles_not_its_span(tmp_path: Path, valid_text: str, capsys) -> None:
    text = _mutated(valid_text, lambda d: d["layers"][0].__setitem__("cycles", 1))
    _report(tmp_path, capsys, text, "layers.0.cycles: 1", "allowed: end_cycle - start_cycle")


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ('"seed": 0,', '"seed": 0, "seed": 1,', "seed: key given twice"),
        ('"cycles": ', '"cycles": 1, "cycles": ', "layers.0.cycles: key given twice"),
    ],
    ids=["top_level", "in_a_layer"],
)
def test_duplicate_keys(
    tmp_path: Path, valid_text: str, capsys, old: str, new: str, where: str
) -> None:
    assert old in valid_text
    _report(tmp_path, capsys, valid_text.replace(old, new, 1), where, "allowed: each key once")


def test_report_of_an_empty_folder_says_what_is_allowed(tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    [line] = err.splitlines()
    assert out == "" and line.startswith("archsim: error: ")
    assert str(tmp_path / "results.json") in line
    assert "allowed: a folder written by `archsim run`" in line
    assert "`archsim sweep` (results.parquet and sweep.json)" in line
    assert list(tmp_path.iterdir()) == []
