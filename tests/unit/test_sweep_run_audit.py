"""A fourth audit of sweeps and runs: integer ranges that left their bounds, traces that
differed between identical runs, a tampered results.json that traced back."""

from __future__ import annotations

import json
from pathlib import Path

import pydantic
import pytest

from archsim.cli import main
from archsim.config.sweep import AxisRange
from archsim.explore.plan import _axis_values


def _spec(tmp_path: Path, name: str, body: str) -> Path:
    """A sweep of tiny_eie over eie_benchmarks named ``name``; ``body``: its axes and mode."""
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(f"schema_version: 1\nname: {name}\nhardware: tiny_eie\n"
                    f"workload: eie_benchmarks\n{body}")  # fmt: skip
    return spec


def _sweep(spec: Path, out: Path) -> int:
    return main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"])


def test_an_integer_range_keeps_to_its_bounds():
    # round(4.5) = 4 (half to even): a value below low=4.5
    assert _axis_values(AxisRange(low=4.5, high=5.6, num=3, integer=True)) == [5]
    assert _axis_values(AxisRange(low=1, high=8, num=4, integer=True)) == [1, 3, 6, 8]
    with pytest.raises(pydantic.ValidationError, match=r"holds no integer \(low=4.5, high=4.6\)"):
        AxisRange(low=4.5, high=4.6, num=3, integer=True)


def test_two_identical_trace_runs_write_identical_bytes(tmp_path: Path):
    # the gzip header held the time of writing: every SRAM_TRACE file differed at byte 5
    wl = tmp_path / "wl.yaml"
    wl.write_text("schema_version: 1\nname: w\nsource: t\nlayers:\n"
                  "  - {name: a, kind: gemm, m: 9, n: 7, k: 5}\n")  # fmt: skip
    for out in ("a", "b"):
        argv = ["run", "systolic_32x32_os", str(wl), "--trace", "-o", str(tmp_path / out), "-q"]
        assert main(argv) == 0
    a, b = ((tmp_path / d / "SRAM_TRACE_layer0.csv.gz").read_bytes() for d in "ab")
    assert a == b and a[4:8] == b"\0\0\0\0"


def test_report_on_energies_whose_sum_overflows_is_one_line(tmp_path: Path, capsys):
    # math.fsum raised OverflowError: a traceback
    out = tmp_path / "r"
    assert main(["run", "tiny_eie", "eie_benchmarks", "-o", str(out), "-q", "--no-report"]) == 0
    data = json.loads((out / "results.json").read_text())
    for lay in data["layers"][:2]:
        lay["energy_pj"] = 1e308
    (out / "results.json").write_text(json.dumps(data))
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "layers.*.energy_pj: their sum is past the largest" in err


def test_report_rebuilds_the_page_of_a_sweep_whose_points_all_failed(tmp_path: Path, capsys):
    # "not a results table written by `archsim sweep` (KeyError: 'cycles')"
    spec = _spec(tmp_path, "allfail", "axes: {strict_capacity: [true], "
                 "spmat_sram.size_bytes: [64, 128]}\n")  # fmt: skip
    out = tmp_path / "s"
    assert _sweep(spec, out) == 1
    (out / "report.html").unlink()
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").is_file()


def test_batch_on_a_workload_of_gemm_layers_says_it_changes_nothing(tmp_path: Path, capsys):
    # deepbench_gemm at --batch 1 and 4096 ran the same cycles, labelled with the batch
    wl = tmp_path / "wl.yaml"
    wl.write_text("schema_version: 1\nname: w\nsource: t\nlayers:\n"
                  "  - {name: a, kind: gemm, m: 64, n: 64, k: 64}\n")  # fmt: skip
    assert main(["run", "h100", str(wl), "--batch", "8", "-o", str(tmp_path / "o")]) == 0
    assert "warning: --batch 8: gemm layers keep their own shapes" in capsys.readouterr().out
    warnings = json.loads((tmp_path / "o" / "results.json").read_text())["warnings"]
    assert any(w.startswith("--batch 8: gemm layers") for w in warnings)


def test_a_negative_exponent_past_the_bound_says_magnitude():
    # "exponent -2000 is too large; allowed: <= 256"
    from archsim.explore.expression import Expression, ExpressionError

    with pytest.raises(ExpressionError, match=r"exponent -2000 is too large in magnitude; "
                       r"allowed: from -256 to 256"):  # fmt: skip
        Expression("2 ** -2000").evaluate({})


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("axes: {pe_array.num_pes: [4, 8, 4]}",
         "axes: pe_array.num_pes: entry 1 (4) and entry 3 (4) are the same value"),
        ("axes: {pe_array.num_pes: [4, 4.0]}",
         "axes: pe_array.num_pes: entry 1 (4) and entry 2 (4.0) are the same value"),
        ("seeds: [1, 2, 1]\naxes: {pe_array.num_pes: [4]}",
         "seeds: entry 1 (1) and entry 3 (1) are the same value"),
        ("axes: {pe_array.num_pes: [4]}\nworkload: [eie_benchmarks, eie_benchmarks]",
         "workload: entry 1 ('eie_benchmarks') and entry 2 ('eie_benchmarks') are the same"),
    ],
)  # fmt: skip
def test_a_grid_axis_listing_a_value_twice_is_refused(tmp_path: Path, capsys, lines, message):
    # each repeat ran the same points again (27 rows for 3 listed PE counts, two of them equal)
    body = lines if "workload:" in lines else f"{lines}\nworkload: eie_benchmarks"
    spec = tmp_path / "dup.yaml"
    spec.write_text(f"schema_version: 1\nname: dup\nhardware: tiny_eie\n{body}\n")
    out = tmp_path / "out"
    assert _sweep(spec, out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"dup.yaml: {message}" in err, err
    assert "allowed: distinct values in grid mode" in err and not out.exists()


def test_a_boolean_and_the_number_it_equals_are_not_a_repeat():
    from archsim.config.sweep import _repeated

    # 0 == False in Python: "False is listed twice" hid that a boolean is no PE count
    assert _repeated([0, False]) is None and _repeated([1, True, 1.0]) == (1, 3)
    assert _repeated([[1, 2], (1, 2)]) == (1, 2) and _repeated([{"a": 1}, {"a": 1}]) == (1, 2)


def test_a_zip_axis_may_repeat_a_value(tmp_path: Path):
    # zip pairs the i-th values of every axis: (4, 2) and (4, 4) are different points
    spec = _spec(tmp_path, "z", "mode: zip\naxes: {pe_array.num_pes: [4, 4], "
                 "activation_fifo.depth: [2, 4]}\n")  # fmt: skip
    out = tmp_path / "out"
    assert _sweep(spec, out) == 0
    points = (out / "points.csv").read_text().splitlines()
    assert len(points) == 3, points


def test_a_resumed_sweep_keeps_its_record_until_its_table_is_rewritten(tmp_path, monkeypatch):
    # sweep.json was rewritten for the changed spec before any point ran: a run stopped then
    # left it describing 3 points next to a results.parquet of 2, and `report` mixed the two
    import importlib

    sweep = importlib.import_module("archsim.explore.sweep")  # the module, not the function
    out = tmp_path / "out"
    assert _sweep(_spec(tmp_path, "s", "axes: {pe_array.num_pes: [2, 4]}\n"), out) == 0
    before = (out / "sweep.json").read_bytes()
    spec = _spec(tmp_path, "s", "axes: {pe_array.num_pes: [2, 4, 8]}\n")

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "execute", stopped)
    assert _sweep(spec, out) == 130
    assert (out / "sweep.json").read_bytes() == before
    assert main(["report", str(out)]) == 0  # the old record and table, in step
    monkeypatch.undo()
    assert _sweep(spec, out) == 0
    assert json.loads((out / "sweep.json").read_text())["points"] == 3
