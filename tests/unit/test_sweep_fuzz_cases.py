"""Structurally malformed sweep specs and tampered sweep/run folders found by a fuzzer: each
ran points twice, crashed with a traceback, hung, or took minutes; one test per class."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archsim.cli import main
from archsim.config.sweep import AxisRange
from archsim.errors import ConfigError
from archsim.explore import Expression, ExpressionError, pareto, plan_sweep
from archsim.explore.plan import _axis_values

ROOT = Path(__file__).resolve().parents[2]

SMALL = """\
schema_version: 1
name: small
source: test
layers:
  - {name: fc1, kind: fc, inputs: 96, outputs: 64, weight_density: 0.2, activation_density: 0.5}
"""
GEMM = """\
schema_version: 1
name: g
source: test
layers:
  - {name: g1, kind: gemm, m: 64, n: 64, k: 64, precision: fp16, accumulate: fp32}
"""


def _spec(tmp_path: Path, body: str, hardware: str = "tiny_eie", workload: str = "small.yaml"):
    (tmp_path / "small.yaml").write_text(SMALL)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"schema_version: 1\nname: t\nhardware: {hardware}\nworkload: {workload}\n{body}"
    )
    return spec


def _refused(tmp_path: Path, spec: Path, field: str, needle: str, capsys) -> None:
    """``spec`` is refused by ``plan_sweep`` and by ``archsim sweep`` (exit 2, one line,
    nothing left behind), naming the file, ``field`` and ``needle``."""
    with pytest.raises(ConfigError) as info:
        plan_sweep(spec)
    assert str(info.value).startswith(f"{spec}: {field}: ") and needle in str(info.value)
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim: error: ") and err.count("\n") == 1 and needle in err, err
    assert not out.exists()


# --- archsim sweep: specs that ran the same points twice ------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("mode: zip\nseeds: [0, 0]\naxes: {pe_array.num_pes: [2, 4]}\n", "seeds"),
        ("mode: random\nsamples: 2\nseeds: [1, 1]\naxes: {pe_array.num_pes: [2, 4]}\n", "seeds"),
    ],
)
def test_a_seed_listed_twice_is_refused_in_every_mode(tmp_path, capsys, body, field):
    # seeds are crossed with the points in zip and random mode too: each ran twice
    _refused(tmp_path, _spec(tmp_path, body), field, "are the same value", capsys)


def test_a_range_that_gives_one_value_twice_is_refused_in_grid_mode(tmp_path, capsys):
    # a list with a value twice was refused; a range low == high with num 3 ran 3 equal points
    body = "axes:\n  clock.frequency_hz: {low: 8.0e+8, high: 8.0e+8, num: 3}\n"
    _refused(tmp_path, _spec(tmp_path, body), "axes.clock.frequency_hz", "are both", capsys)


def test_zip_rows_that_are_the_same_point_are_refused(tmp_path, capsys):
    body = "mode: zip\naxes:\n  pe_array.num_pes: [2, 2]\n  activation_fifo.depth: [1, 1]\n"
    _refused(tmp_path, _spec(tmp_path, body), "axes", "zip rows 1 and 2 are the same", capsys)


@pytest.mark.parametrize("second", ["./small.yaml", "copy.yaml"])
def test_one_workload_named_twice_is_refused(tmp_path, capsys, second):
    # the same file by two paths, or an identical copy: the same points under two labels
    (tmp_path / "copy.yaml").write_text(SMALL)
    spec = _spec(tmp_path, "axes: {pe_array.num_pes: [2]}\n", workload=f"[small.yaml, {second}]")
    _refused(tmp_path, spec, "workload", "are the same workload", capsys)


def test_an_axis_over_a_list_of_sections_is_refused_before_running(tmp_path, capsys):
    # every point ran, then writing results.parquet raised pyarrow's ArrowInvalid (exit 1)
    (tmp_path / "g.yaml").write_text(GEMM)
    tile = "{m: 64, n: 64, k: 32, warps: 4, stages: 2}"
    spec = _spec(tmp_path, f"axes:\n  tiles: [[{tile}]]\n", hardware="v100", workload="g.yaml")
    _refused(tmp_path, spec, "axes.tiles", "names a list of sections", capsys)


def test_an_integer_range_of_ten_million_values_expands_at_once():
    # rounded one by one in Python: 30 s an axis, three such axes past a minute
    t0 = time.perf_counter()
    assert _axis_values(AxisRange(low=1, high=3, num=10**7, integer=True)) == [1, 2, 3]
    assert time.perf_counter() - t0 < 5
    assert _axis_values(AxisRange(low=4.5, high=5.6, num=3, integer=True)) == [5]
    assert _axis_values(AxisRange(low=1, high=8, num=4, integer=True)) == [1, 3, 6, 8]


@pytest.mark.parametrize("text", ["num_pes > 100 or 5", "num_pes > 1 and 'x'", "not 0"])
def test_and_or_not_take_only_true_or_false(tmp_path, capsys, text):
    # 'num_pes > 100 or 5' was true at every point: the constraint skipped nothing
    with pytest.raises(ExpressionError, match="takes true or false"):
        Expression(text).evaluate({"num_pes": 4})
    assert Expression("num_pes > 1 and not num_pes > 8").evaluate({"num_pes": 4}) is True
    spec = _spec(tmp_path, f'axes: {{pe_array.num_pes: [2, 4]}}\nconstraints: ["{text}"]\n')
    _refused(tmp_path, spec, "constraints.0", "takes true or false", capsys)


# --- archsim report: tampered folders -------------------------------------------------------


def _report_refused(folder: Path, needle: str, capsys) -> None:
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim: error: ") and err.count("\n") == 1 and needle in err, err
    assert not (folder / "report.html").exists()


def test_a_sweep_json_nested_too_deeply_is_refused(sweep_copy, tmp_path, capsys):
    # json's RecursionError came out as a traceback
    folder = sweep_copy
    (folder / "sweep.json").write_text("[" * 100_000 + "]" * 100_000)
    _report_refused(folder, f"{folder / 'sweep.json'}: not a sweep.json", capsys)


def test_a_sweep_json_that_is_not_a_file_is_named(sweep_copy, tmp_path, capsys):
    # a folder was reported as "report.html: cannot write"; a FIFO blocked for ever
    folder = sweep_copy
    (folder / "sweep.json").unlink()
    (folder / "sweep.json").mkdir()
    _report_refused(folder, f"{folder / 'sweep.json'}: not a regular file", capsys)
    if hasattr(os, "mkfifo"):
        (folder / "sweep.json").rmdir()
        os.mkfifo(folder / "sweep.json")
        cmd = [sys.executable, "-m", "archsim", "report", str(folder)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr


def test_a_sweep_json_naming_an_axis_twice_is_refused(sweep_copy, tmp_path, capsys):
    folder = sweep_copy
    meta = json.loads((folder / "sweep.json").read_text())
    meta["axes"] = ["pe_array.num_pes"] * 2
    (folder / "sweep.json").write_text(json.dumps(meta))
    _report_refused(folder, "axes names 'pe_array.num_pes' twice", capsys)


def test_a_metric_a_layer_has_no_value_for_is_not_refused(sweep_copy, tmp_path):
    """NaN in a metric column is a layer without that quantity (a per-layer metric), not a
    tampered table: the page is rebuilt."""
    folder = sweep_copy
    parquet = folder / "results.parquet"
    frame = pd.read_parquet(parquet)
    frame.loc[frame.index[0], "total_area_mm2"] = np.nan
    frame.to_parquet(parquet)
    assert main(["report", str(folder)]) == 0
    assert (folder / "report.html").exists()


def test_the_sweep_report_takes_a_frame_without_an_error_column(sweep_copy, tmp_path):
    from archsim.explore import totals
    from archsim.report import write_sweep_report

    points = totals(pd.read_parquet(sweep_copy / "results.parquet")).drop(columns="error")
    axes, metrics = ["pe_array.num_pes"], ["total_time_s", "total_energy_pj"]
    write_sweep_report(points, tmp_path, axes=axes, metrics=metrics, title="t")
    assert (tmp_path / "report.html").is_file()


def test_the_energy_plot_of_thousands_of_layers_is_linear():
    # each column was converted once per layer: 10,000 layers took 260 s in `archsim report`
    from archsim.report.run_figures import plot_energy

    n = 5000
    t = {"layer": [f"l{i}" for i in range(n)], **{f"energy_c{k}_pj": [1.0] * n for k in range(4)}}
    t0 = time.perf_counter()
    assert "<svg" in plot_energy(t, n)
    assert time.perf_counter() - t0 < 1.5  # 0.08 s; 3.3 s when quadratic


def test_the_pareto_front_of_many_points_is_not_quadratic():
    # every point was compared with every other: 100,000 points (the default --max-points)
    # took about 11 minutes at the end of a sweep and in `archsim report`
    rng = np.random.default_rng(0)
    x = rng.random((20_000, 3))
    frame = pd.DataFrame(x, columns=["a", "b", "c"]).assign(status="ok")
    frame.loc[::7, ["a", "b", "c"]] = frame.loc[0, ["a", "b", "c"]].to_numpy()  # ties: all kept
    t0 = time.perf_counter()
    front = pareto(frame, minimize=["a", "b"], maximize=["c"])
    assert time.perf_counter() - t0 < 5
    v = frame[["a", "b", "c"]].to_numpy() * [1, 1, -1]
    on = front.index.to_numpy()
    for i in rng.choice(len(v), 40, replace=False):  # brute force on a sample of rows
        dominated = ((v <= v[i]).all(axis=1) & (v < v[i]).any(axis=1)).any()
        assert (i in on) == (not dominated)
    assert list(on) == sorted(on)


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ('"a\\nb"', "contains a control character (newline); allowed: one line of printable text"),
        ("x" * 100_000, "100,000 characters; allowed: at most 200 characters"),
    ],
)
def test_sweep_name_is_one_short_line(tmp_path: Path, capsys, name: str, needle: str) -> None:
    """A sweep's name heads its report and its summary line: a newline or 100,000 characters
    was taken."""
    spec = _spec(tmp_path, "axes:\n  pe_array.num_pes: [2, 4]\n")
    spec.write_text(spec.read_text().replace("name: t\n", f"name: {name}\n"))
    _refused(tmp_path, spec, "name", needle, capsys)


def test_a_sweep_too_large_to_plan_in_memory_is_refused(tmp_path: Path, capsys, monkeypatch):
    """``--max-points 100000000`` with ``samples: 100000000`` built points for 50 s and ran
    out of memory: the points' memory is now estimated before any is built."""
    import archsim.limits

    spec = _spec(tmp_path, "mode: random\nsamples: 200000\naxes:\n  pe_array.num_pes: [2, 4]\n")
    assert archsim.limits.available_memory_bytes() > 0  # read from /proc/meminfo here
    monkeypatch.setattr(archsim.limits, "available_memory_bytes", lambda: 1_500_000_000)
    with pytest.raises(ConfigError) as info:
        plan_sweep(spec, max_points=10**6)
    assert str(info.value) == (
        f"{spec}: samples: 200,000 points need about 2.0 GB of memory to plan (about 10 kB "
        "each) and 1.5 GB is available; allowed: fewer points (fewer values, samples or seeds, "
        "or the sweep split in parts)"
    )
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "--max-points", "1000000", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "200,000 points need about 2.0 GB" in err
    assert not out.exists()
    monkeypatch.setattr(archsim.limits, "available_memory_bytes", lambda: None)  # not Linux
    grid = _spec(tmp_path, "axes:\n  pe_array.num_pes: [2, 4]\n")
    assert len(plan_sweep(grid).points) == 2
