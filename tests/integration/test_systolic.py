"""Systolic array: per-cycle twin, functional outputs, both timing models, SCALE-Sim goldens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import archsim
from archsim.accelerators.systolic import systolic_functional
from archsim.config.scalesim import (
    bandwidth_report_rows,
    detailed_access_report_rows,
    load_scalesim,
)
from archsim.config.workload import WorkloadSpec
from archsim.datapath.systolic_kernels import fold_counts, paper_fold_cycles, spatio_temporal
from archsim.datapath.systolic_reference import array_reference

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scalesim"
GOLDENS = sorted(p.stem for p in FIXTURES.glob("*.json"))


@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_per_cycle_array_computes_gemm_in_paper_cycles(df: str) -> None:
    rng = np.random.default_rng(7)
    for m, n, k, rows, cols in [(5, 4, 6, 3, 2), (7, 3, 4, 2, 3), (4, 6, 3, 4, 4)]:
        a = rng.integers(-8, 8, size=(m, k))
        b = rng.integers(-8, 8, size=(k, n))
        out, cycles, macs = array_reference(a, b, rows, cols, df)
        np.testing.assert_array_equal(out, a @ b)
        rf, cf = fold_counts(df, rows, cols, m, n, k)
        assert cycles == rf * cf * paper_fold_cycles(rows, cols, spatio_temporal(df, m, n, k)[2])
        assert macs == m * n * k
        fast = systolic_functional(a.astype(float), b.astype(float), rows, cols, df)
        np.testing.assert_array_equal(fast, a @ b)


def _workload(layers: list[dict]) -> WorkloadSpec:
    return WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "t", "source": "test", "layers": layers}
    )


LAYERS = [
    {"name": "g", "kind": "gemm", "m": 100, "n": 70, "k": 90},
    {"name": "c", "kind": "conv", "n": 2, "c": 8, "k": 12, "h": 12, "w": 12, "r": 3, "s": 3,
     "stride": 1, "pad": 1, "groups": 2, "weight_density": 1.0, "activation_density": 1.0},
]  # fmt: skip


@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_archsim_timing_model(df: str) -> None:
    hw = archsim.load_hardware("systolic_32x32_os").with_overrides(
        {"array.rows": 8, "array.cols": 8, "array.dataflow": df}
    )
    res = archsim.simulate(hw, _workload(LAYERS), seed=1)
    g = res.layer("g")
    rf, cf = fold_counts(df, 8, 8, 100, 70, 90)
    t = spatio_temporal(df, 100, 70, 90)[2]
    assert g.extras["systolic_compute_cycles"] == rf * cf * paper_fold_cycles(8, 8, t)
    for lr in res.layers:
        assert lr.extras["systolic_functional_max_error"] == 0.0
        assert (
            lr.cycles == lr.extras["systolic_compute_cycles"] + lr.extras["systolic_stall_cycles"]
        )
        assert lr.extras["systolic_stall_cycles"] > 0  # the first fold's load is exposed
        assert lr.counts["array"]["mac"] == lr.macs_dense
        assert lr.dram_bytes > 0 and lr.energy_pj > 0
    assert res.total_cycles == sum(lr.cycles for lr in res.layers)
    assert res.layer("c").extras["systolic_gemms"] == 2  # one GEMM per group
    # a slower DRAM only adds stalls
    slow = archsim.simulate(
        hw.with_overrides({"dram.bandwidth_bytes_per_s": 1e8}), _workload(LAYERS)
    )
    assert slow.total_cycles > res.total_cycles


@pytest.mark.parametrize("name", GOLDENS)
def test_scalesim_compat_matches_scalesim(name: str) -> None:
    gold = json.loads((FIXTURES / f"{name}.json").read_text())
    hw, wl = load_scalesim(FIXTURES / f"{name}.cfg", FIXTURES / f"{name}.csv")
    res = archsim.simulate(hw, wl)
    assert len(res.layers) == len(gold["layers"])
    for lr, g in zip(res.layers, gold["layers"], strict=True):
        ex = lr.extras
        assert lr.cycles == g["total_cycles"]
        assert ex["systolic_stall_cycles"] == g["stall_cycles"]
        assert ex["systolic_ofmap_dram_writes"] == g["ofmap_dram_writes"]
        assert ex["systolic_ifmap_dram_reads"] == g["ifmap_dram_reads"]
        assert ex["systolic_filter_dram_reads"] == g["filter_dram_reads"]
        assert ex["systolic_total_cycles_incl_prefetch"] == g["total_cycles_incl_prefetch"]
        assert not res.warnings
        assert ex["systolic_functional_max_error"] == 0.0
    # SCALE-Sim's BANDWIDTH / DETAILED_ACCESS rows, every column (goldens regenerated since
    # the reports were added carry them)
    reports = (
        ("bandwidth_report", bandwidth_report_rows(res)),
        ("detailed_access_report", detailed_access_report_rows(res)),
    )
    for key, rows in reports:
        for row, g in zip(rows, gold["layers"], strict=True):
            if key in g:
                assert row == pytest.approx(g[key], rel=1e-12), (key, row, g[key])


def test_trace_text_is_what_savetxt_writes() -> None:
    """The compiled CSV formatter against ``np.savetxt(fmt="%d", delimiter=",")``."""
    import io

    from archsim.accelerators.systolic_trace import _MAX_VALUE_BYTES, _csv_rows

    rng = np.random.default_rng(3)
    edges = [0, -1, 9, 10, -10, 99, 100, 2**63 - 1, -(2**63) + 1, 10**18, -(10**18)]
    for shape in [(1, 1), (3, 5), (40, 97)]:
        values = rng.integers(-(2**40), 2**40, size=shape) // rng.integers(1, 10**12, size=shape)
        values.flat[: len(edges)] = edges[: values.size]
        text = np.empty(values.size * _MAX_VALUE_BYTES, dtype=np.uint8)
        got = text[: _csv_rows(values, text)].tobytes().decode("ascii")
        want = io.StringIO()
        np.savetxt(want, values, fmt="%d", delimiter=",")
        assert got == want.getvalue()


@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_streamed_trace_equals_literal_demand_matrices(df: str, tmp_path: Path) -> None:
    import gzip

    from archsim.accelerators.systolic_trace import trace_values, write_sram_trace
    from archsim.config.workload import GemmLayer
    from archsim.datapath import systolic_reference as ref

    hw = archsim.load_hardware("systolic_32x32_os").with_overrides(
        {"array.rows": 4, "array.cols": 3, "array.dataflow": df}
    )
    layer = GemmLayer(kind="gemm", name="g", m=9, n=7, k=5)
    path = tmp_path / "trace.csv.gz"
    n = write_sram_trace(hw, layer, path, offsets=(0, 0, 0))
    with gzip.open(path, "rt") as f:
        got = np.loadtxt(f, delimiter=",", dtype=np.int64)
    ifm, flt, ofm = ref.operand_matrices((9, 5, 1, 5, 1, 1, 9, 1, 7))
    _, _, di, dfl, do = ref._matrices(df, 4, 3, ifm, flt, ofm)
    assert n == got.shape[0] == di.shape[0]
    assert trace_values(hw, layer) == got.size  # the --trace size limit's estimate is exact
    np.testing.assert_array_equal(got[:, 0], np.arange(n))
    np.testing.assert_array_equal(got[:, 1:], np.concatenate([di, dfl, do], axis=1))


@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_folded_functional_is_exact_and_keeps_blas_single_threaded(df, monkeypatch) -> None:
    from threadpoolctl import threadpool_info

    import archsim.accelerators.systolic as systolic

    rng = np.random.default_rng(1)
    a = rng.integers(-8, 8, size=(70, 45)).astype(np.float64)  # ragged folds on 32 x 16
    b = rng.integers(-8, 8, size=(45, 37)).astype(np.float64)
    threads: list[int] = []
    folded = systolic._folded

    def spy(*args):
        threads.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return folded(*args)

    monkeypatch.setattr(systolic, "_folded", spy)
    got = systolic_functional(a, b, 32, 16, df)
    print(f"{df}: BLAS threads inside the folded product: {threads}")
    assert np.array_equal(got, a @ b)
    assert threads and set(threads) == {1}


@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_scalesim_sram_counts_are_the_demand_matrix_requests(df: str) -> None:
    """SCALE-Sim's SRAM reads/writes are the requests in its demand matrices; the scalesim
    timing model's SRAM counts must be those (WS/IS read their stationary operand once)."""
    from archsim.accelerators.systolic import layer_gemms, scalesim_sram_words
    from archsim.config.workload import GemmLayer
    from archsim.datapath.systolic_kernels import fold_demands

    hw = archsim.load_hardware("systolic_32x32_os").with_overrides(
        {"array.rows": 4, "array.cols": 3, "array.dataflow": df, "timing_model": "scalesim"}
    )
    layer = GemmLayer(kind="gemm", name="g", m=9, n=7, k=5)
    g = layer_gemms(layer, True)
    demand = np.zeros(3, dtype=np.int64)
    for _, ifm, flt, ofm in fold_demands(df, 4, 3, g.geometry):
        demand += [(ifm >= 0).sum(), (flt >= 0).sum(), (ofm >= 0).sum()]
    words = scalesim_sram_words(df, 4, 3, g)
    print(df, "demand matrices", demand.tolist(), "model", words)
    assert tuple(demand.tolist()) == words
    wl = archsim.WorkloadSpec(schema_version=1, name="w", source="t", layers=[layer])
    counts = archsim.simulate(hw, wl).layers[0].counts
    bits = hw.arithmetic.data_bits
    ops = zip(("ifmap", "filter", "ofmap"), words, ("read", "read", "write"), strict=True)
    for name, n, key in ops:
        width = getattr(hw, f"{name}_sram").width_bits
        assert counts[f"{name}_sram"][key] == -(-n * bits // width)


def test_run_trace_writes_each_layers_sram_demands(tmp_path: Path, capsys) -> None:
    """``archsim run --trace``: one gzip CSV per layer whose requests per operand add up to the
    model's own SRAM counts; refused (exit 2, one line) for other hardware."""
    import gzip

    from archsim.accelerators.systolic import layer_gemms, scalesim_sram_words
    from archsim.cli import main
    from archsim.config.workload import GemmLayer

    wl = tmp_path / "wl.yaml"
    wl.write_text(
        "schema_version: 1\nname: w\nsource: t\nlayers:\n"
        "  - {name: a, kind: gemm, m: 9, n: 7, k: 5}\n  - {name: b, kind: gemm, m: 6, n: 4, k: 8}\n"
    )
    out = tmp_path / "out"
    sets = ["--set", "array.rows=4", "--set", "array.cols=3", "--set", "array.dataflow=ws"]
    assert main(["run", "systolic_32x32_os", str(wl), *sets, "--trace", "-o", str(out), "-q"]) == 0
    for i, (m, n, k) in enumerate([(9, 7, 5), (6, 4, 8)]):
        with gzip.open(out / f"SRAM_TRACE_layer{i}.csv.gz", "rt") as f:
            rows = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
        g = layer_gemms(GemmLayer(kind="gemm", name="x", m=m, n=n, k=k), True)
        words = scalesim_sram_words("ws", 4, 3, g)
        # WS: IFMAP columns = array rows (4), FILTER = cols (3), OFMAP = cols (3)
        blocks = np.split(rows[:, 1:], [4, 7], axis=1)
        got = tuple(int((b >= 0).sum()) for b in blocks)
        print(f"layer {i}: trace requests {got}, model SRAM words {words}")
        assert got == words
        np.testing.assert_array_equal(rows[:, 0], np.arange(len(rows)))
    capsys.readouterr()
    assert main(["run", "tiny_eie", "eie_benchmarks", "--trace", "-o", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--trace" in err and "systolic" in err
    assert not (tmp_path / "e").exists()


def test_run_trace_over_the_size_limit_is_refused_before_it_runs(tmp_path, capsys, monkeypatch):
    """A trace of more values than ARCHSIM_MAX_TRACE_VALUES (default 1e9: about a minute and
    1.8 GB) is one line naming the layer and the variable, exit 2, nothing written."""
    from archsim.cli import main

    monkeypatch.setenv("ARCHSIM_MAX_TRACE_VALUES", "1000")
    wl = tmp_path / "wl.yaml"
    wl.write_text("schema_version: 1\nname: w\nsource: t\nlayers:\n"
                  "  - {name: big, kind: gemm, m: 64, n: 64, k: 64}\n")  # fmt: skip
    out = tmp_path / "out"
    assert main(["run", "systolic_32x32_os", str(wl), "--trace", "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'big'" in err and "ARCHSIM_MAX_TRACE_VALUES" in err, err
    assert "trace values" in err and not out.exists()


def test_functional_check_is_exact_in_either_precision() -> None:
    """The functional check holds its integers in float32 while every partial sum stays below
    2**24 (exact in the significand), else in float64; both give the reference exactly."""
    from archsim.accelerators.systolic import _exact_dtype

    assert _exact_dtype(2**24 - 1) is np.float32 and _exact_dtype(2**24) is np.float64
    hw = archsim.load_hardware("systolic_32x32_os").with_overrides(
        {"array.rows": 8, "array.cols": 8}
    )
    deep = 2**18  # 8 x 8 x K = 2**24: past float32's exact range, so float64
    layers = [
        {"name": "f32", "kind": "gemm", "m": 16, "n": 8, "k": 4096},
        {"name": "f64", "kind": "gemm", "m": 8, "n": 8, "k": deep},
    ]
    res = archsim.simulate(hw, _workload(layers), seed=3)
    for lr in res.layers:
        assert lr.extras["systolic_functional_max_error"] == 0.0, lr.layer


@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_many_folds_are_checked_in_groups_with_the_same_result(df: str, monkeypatch) -> None:
    """A 1-row array on ResNet-50 has 0.5 M folds (12.8 s of NumPy products one by one): past
    MAX_FOLD_PRODUCTS consecutive folds share a product, and accumulated (WS/IS) folds of
    fewer than MIN_ACCUMULATED_ROWS rows are grouped. The integers are exact in any grouping,
    so the output is a @ b either way, and the steps are whole folds."""
    from archsim.accelerators import systolic

    rng = np.random.default_rng(3)
    a = rng.integers(-8, 8, size=(37, 29)).astype(np.float32)
    b = rng.integers(-8, 8, size=(29, 23)).astype(np.float32)
    one_by_one = systolic_functional(a, b, 1, 2, df)
    monkeypatch.setattr(systolic, "MAX_FOLD_PRODUCTS", 7)
    assert systolic._fold_steps(23, 37, 2, 1, False) == (2 * 2, 37)  # 12 x 37 -> 6 x 1
    assert systolic._fold_steps(5, 37, 2, 1, False) == (2, 37)  # 3 x 37 -> 3 x 1
    assert systolic._fold_steps(4, 3, 2, 1, False) == (2, 1)  # 2 x 3: under the cap
    monkeypatch.setattr(systolic, "MIN_ACCUMULATED_ROWS", 4)
    assert systolic._fold_steps(4, 12, 2, 1, True) == (2, 4)  # 2 x 3 products of 4 rows
    assert systolic._fold_steps(4, 20, 2, 8, True) == (2, 8)  # whole folds of 8 rows
    grouped = systolic_functional(a, b, 1, 2, df)
    np.testing.assert_array_equal(one_by_one, a @ b)
    np.testing.assert_array_equal(grouped, a @ b)
