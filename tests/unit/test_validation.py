"""The validation machinery: claims, shared runs, the runner, reports and `archsim validate`."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from archsim import WorkloadSpec, load_hardware
from archsim.cli import main
from archsim.validation import CLAIMS, Claim, ClaimUnavailable, Runs, claims_for, validate
from archsim.validation.report import format_table, render_html, render_markdown
from archsim.validation.runner import COLUMNS, evaluate


def _claim(kind="relative", paper=10.0, tol=0.1, value=lambda runs: 10.5, unit="us", name="c"):
    return Claim("eie", name, "Paper, Table 1", paper, unit, tol, kind, "because", value)


@pytest.mark.parametrize(
    ("kind", "paper", "tol", "unit", "value", "passes", "error_text", "tol_text"),
    [
        ("relative", 10.0, 0.1, "us", 10.9, True, "+9.0%", "±10%"),
        ("relative", 10.0, 0.1, "us", 8.9, False, "-11.0%", "±10%"),
        ("absolute", 54.0, 15.0, "%", 40.0, True, "-14.0 pt", "±15 pt"),
        ("absolute", 125.3, 0.05, "TFLOPS", 125.4, False, "+0.1", "±0.05"),
        ("at_most", 20.0, 0.0, "%", 11.0, True, "-9.0 pt", "<= 20"),
        ("at_most", 85.0, 0.0, "%", 90.0, False, "+5.0 pt", "<= 85"),
        ("at_least", 1.0, 0.0, "x", 0.5, False, "-0.5", ">= 1"),
        ("relative", 10.0, 0.1, "us", math.nan, False, "-", "±10%"),
    ],
)
def test_claim_criteria(kind, paper, tol, unit, value, passes, error_text, tol_text):
    c = _claim(kind, paper, tol, unit=unit)
    assert c.passes(value) is passes
    assert c.error_text(value) == error_text
    assert c.tolerance_text() == tol_text


def test_claim_rejects_meaningless_tolerances():
    with pytest.raises(ValueError, match="tolerance"):
        _claim(tol=-0.1)
    with pytest.raises(ValueError, match="non-zero paper"):
        _claim(paper=0.0)


def test_unavailable_input_is_skipped_with_its_reason():
    def missing(runs):
        raise ClaimUnavailable("no data here")

    row = evaluate(_claim(value=missing), Runs())
    assert row["status"] == "SKIPPED" and row["unavailable"] == "no data here"
    assert math.isnan(row["archsim"]) and row["reason"] == "because"


def test_real_alex8_without_data_is_unavailable(tmp_path):
    for folder in (None, tmp_path / "absent"):
        with pytest.raises(ClaimUnavailable, match="--eie-data"):
            Runs(eie_data=folder).alex8_real()


_SMALL = WorkloadSpec.model_validate(
    {
        "schema_version": 1,
        "name": "small",
        "source": "test",
        "layers": [
            {
                "name": "fc",
                "kind": "fc",
                "inputs": 96,
                "outputs": 64,
                "weight_density": 0.2,
                "activation_density": 0.5,
            }
        ],
    }
)


def test_runs_simulate_each_pair_once():
    runs = Runs()
    first = runs.run("tiny_eie", _SMALL)
    assert runs.run("tiny_eie", _SMALL.model_copy()) is first
    assert runs.simulations == 1
    deeper = load_hardware("tiny_eie").with_overrides({"activation_fifo.depth": 4})
    assert runs.run(deeper, _SMALL) is not first and runs.simulations == 2


def test_registry_claims_are_complete_and_named_for_the_terminal():
    every = claims_for(["all"])
    assert len(every) == sum(len(c) for c in CLAIMS.values())
    assert [c.model for c in claims_for(["tensor_core", "eie"])][0] == "eie"  # registry order
    for model, claims in CLAIMS.items():
        names = [c.name for c in claims]
        assert len(names) == len(set(names)), model
        for c in claims:
            assert c.model == model and c.source and len(c.reason) > 20, c.name
            assert len(c.name) <= 30, c.name
    with pytest.raises(ValueError, match="allowed"):
        claims_for(["tpu"])


@pytest.fixture
def fake_registry(monkeypatch):
    """Two cheap claims, one passing and one failing, in place of the real registry."""
    ok = _claim(name="passes", value=lambda runs: 10.2)
    bad = replace(_claim(name="fails", value=lambda runs: 14.0), model="scnn")
    monkeypatch.setitem(CLAIMS, "eie", (ok,))
    monkeypatch.setitem(CLAIMS, "scnn", (bad,))
    monkeypatch.setitem(CLAIMS, "tensor_core", ())
    monkeypatch.setitem(CLAIMS, "multigpu", ())
    monkeypatch.setitem(CLAIMS, "networks", ())
    return ok, bad


def test_validate_frame_and_reports(fake_registry):
    frame = validate(["all"])
    assert tuple(frame.columns) == COLUMNS
    assert list(frame["status"]) == ["PASS", "FAIL"]
    assert frame.loc[1, "error"] == pytest.approx(0.4)
    table = format_table(frame)
    assert all(len(line) <= 80 for line in table.splitlines())
    assert "2 claims: 1 PASS, 1 FAIL, 0 SKIPPED" in table
    md = render_markdown(frame)
    assert "| fails | 10 | 14 | us | +40.0% | ±10% | **FAIL** |" in md
    html = render_html(frame)
    assert "<script" not in html and 'class="status FAIL"' in html


def test_cli_exit_codes_and_outputs(fake_registry, tmp_path, capsys):
    md, html = tmp_path / "v.md", tmp_path / "v.html"
    assert main(["validate", "eie", "-q", "--eie-data", str(tmp_path)]) == 0
    assert main(["validate", "-q", "-o", str(md), "--html", str(html)]) == 1
    out = capsys.readouterr().out
    assert "FAIL scnn / fails: because" in out
    assert md.read_text().startswith("# archsim validation") and html.is_file()


def test_cli_refuses_an_output_that_is_a_folder_before_running(fake_registry, tmp_path, capsys):
    """`validate -o DIR` ran every claim (minutes) and then refused the folder."""
    for flag in ("-o", "--html"):
        assert main(["validate", flag, str(tmp_path)]) == 2
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1, captured.err
        assert f"{flag}: {tmp_path} exists and is not a regular" in captured.err
        assert "claims:" not in captured.out  # refused before the claims ran


def test_cli_bad_data_folder_is_a_user_error(tmp_path, capsys):
    assert main(["validate", "eie", "--eie-data", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim: error: --eie-data") and err.count("\n") == 1


def test_cli_unknown_model_is_a_user_error(capsys):
    assert main(["validate", "tpu"]) == 2
    assert (
        "unknown model 'tpu'; allowed: eie, scnn, tensor_core, multigpu, networks, all"
        in capsys.readouterr().err
    )


def test_a_validate_report_names_the_command_that_wrote_it(tmp_path) -> None:
    """`validate eie -o v.md --html v.html` wrote reports that said to regenerate them with
    `validate all ... -o reports/validation.md`, another command and other files."""
    from archsim.cli import main

    md, page = tmp_path / "v.md", tmp_path / "v.html"
    main(["validate", "eie", "-q", "-o", str(md), "--html", str(page)])
    line = f"archsim validate eie -o {md} --html {page}"
    assert line in md.read_text() and line in page.read_text()


def test_a_validate_report_says_what_its_claims_read(tmp_path) -> None:
    """The reports did not say which Alex-8 folder the claims read (a default found beside
    the working directory could be another copy), nor the model code's fingerprint."""
    from archsim.cli import main
    from archsim.provenance import model_fingerprint, tree_digest
    from archsim.validation.runs import default_eie_data

    data = default_eie_data()
    md, page = tmp_path / "v.md", tmp_path / "v.html"
    main(["validate", "eie", "-q", "-o", str(md), "--html", str(page)])
    text = md.read_text()
    assert f"fingerprint {model_fingerprint()}" in text
    if data is None:
        assert "data folder: none." in text
    else:
        digest = tree_digest([Path(data).resolve()])[:16]
        assert f"{Path(data).resolve()} (sha256 {digest})" in text
        assert digest in page.read_text()
