"""The public API contract: simulate -> RunResult, columns, JSON, determinism, event counts."""

from __future__ import annotations

import importlib
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

import archsim
from archsim.accelerators.eie import prepare_eie_layer
from archsim.results import BASE_COLUMNS
from archsim.workload import materialize_matvec

SMALL = archsim.WorkloadSpec.model_validate(
    {
        "schema_version": 1,
        "name": "small",
        "source": "test",
        "layers": [
            {
                "name": "a",
                "kind": "fc",
                "inputs": 256,
                "outputs": 128,
                "weight_density": 0.1,
                "activation_density": 0.4,
            },
            {
                "name": "b",
                "kind": "lstm",
                "input_size": 32,
                "hidden_size": 32,
                "weight_density": 0.2,
                "activation_density": 1.0,
            },
            {
                "name": "c",
                "kind": "fc",
                "inputs": 128,
                "outputs": 64,
                "weight_density": 0.3,
                "activation_density": 0.5,
                "bias": False,
            },
        ],
    }
)


def test_dataframe_contract():
    res = archsim.simulate("eie", SMALL, seed=1)
    df = res.to_dataframe()
    for col in BASE_COLUMNS + ("eie_load_balance", "eie_real_work", "energy_spmat_sram_pj"):
        assert col in df.columns, col
    assert list(df["layer"]) == ["a", "b", "c"]
    assert list(df["kind"]) == ["fc", "lstm", "fc"]
    assert df.loc[1, "macs_dense"] == 128 * 64
    comp = [c for c in df.columns if c.startswith("energy_") and c.endswith("_pj")]
    comp.remove("energy_pj")
    assert np.allclose(df[comp].sum(axis=1), df["energy_pj"])
    util = df["macs_effective"] / (df["cycles"] * 64)
    assert np.allclose(util, df["utilization"])
    assert np.allclose(df["time_s"], df["cycles"] / 800e6)
    assert res.total_cycles >= df["cycles"].sum()
    assert res.total_energy_pj == df["energy_pj"].sum()
    assert (df["energy_pj"] > 0).all() and (df["power_w"] > 0).all()
    assert "deterministic" in res.metadata


def test_json_round_trip(tmp_path):
    res = archsim.simulate("tiny_eie", SMALL, seed=2)
    path = tmp_path / "r.json"
    res.to_json(path)
    back = archsim.RunResult.from_json(path)
    assert back == res
    assert back.to_dataframe().equals(res.to_dataframe())


def test_deterministic_and_seed_sensitive():
    a = archsim.simulate("eie", SMALL, seed=5).to_dataframe()
    b = archsim.simulate("eie", SMALL, seed=5).to_dataframe()
    c = archsim.simulate("eie", SMALL, seed=6).to_dataframe()
    assert a.equals(b)
    assert not a["cycles"].equals(c["cycles"])


def test_event_count_scales_with_layers_not_cycles():
    hw = archsim.load_hardware("eie")
    small = archsim.simulate(hw, SMALL, seed=0)
    big = archsim.simulate(hw.with_overrides({"pe_array.num_pes": 2}), SMALL, seed=0)
    compute = [sum(lr.cycles for lr in r.layers) for r in (small, big)]
    assert compute[1] > 5 * compute[0]
    assert big.metadata["simpy_events"] == small.metadata["simpy_events"] <= 6 * len(SMALL.layers)


def test_more_pes_is_faster_and_overrides_revalidate():
    hw = archsim.load_hardware("eie")
    hw2 = hw.with_overrides({"pe_array.num_pes": 128})
    assert hw.pe_array.num_pes == 64 and hw2.pe_array.num_pes == 128
    t64 = archsim.simulate(hw, SMALL).total_cycles
    t128 = archsim.simulate(hw2, SMALL).total_cycles
    assert t128 < t64


def test_preset_and_paths_resolve(tmp_path):
    names = archsim.list_presets("hardware")
    assert {"eie", "tiny_eie"} <= set(names)
    assert "eie_benchmarks" in archsim.list_presets("workload")
    wl = archsim.load_workload("eie_benchmarks")
    assert len(wl.layers) == 9 and "Table III" in wl.source


def test_io_is_overlapped_with_compute():
    big = SMALL.model_copy(
        update={
            "layers": [
                archsim.config.FcLayer(
                    name=f"l{i}",
                    kind="fc",
                    inputs=1024,
                    outputs=1024,
                    weight_density=0.2,
                    activation_density=0.5,
                )
                for i in range(3)
            ]
        }
    )
    res = archsim.simulate("eie", big, seed=0)
    layers = res.layers
    # compute >> I/O: layer i+1 starts right when layer i ends (input loaded during layer i)
    for prev, nxt in zip(layers, layers[1:], strict=False):
        assert nxt.start_cycle == prev.end_cycle
    assert res.metadata["exposed_io_cycles"] > 0  # first load and last write-back


def test_engine_counters_equal_layer_counts():
    """SRAM actions recorded through the SimPy engine's components equal the layers' counts."""
    from archsim.accelerators.eie import simulate_eie

    hw = archsim.load_hardware("eie")
    outcomes, ctx = simulate_eie(hw, SMALL, seed=0)
    totals = ctx.counters.as_dict()
    spmat = sum(o.counts["spmat_sram"]["read"] for o in outcomes)
    assert totals["spmat_sram"]["read"] == spmat > 0
    io = sum(o.dram_bytes for o in outcomes)
    assert totals["dram"]["read_bytes"] + totals["dram"]["write_bytes"] == io


def test_pointer_width_overflow_is_a_warning_naming_the_largest_pointer():
    hw = archsim.load_hardware("eie").with_overrides(
        {"pe_array.num_pes": 2, "encoding.pointer_bits": 8}
    )
    result = archsim.simulate(hw, SMALL, seed=0)
    layer = materialize_matvec(SMALL.layers[0], 0, Path.cwd())
    enc = prepare_eie_layer(hw, layer).encoded
    largest = int(enc.ptr.max())  # the pointer memory's largest value, any PE, any column
    assert largest >= 2**8
    # one line for the layers: each layer's largest pointer within the range it shows
    (line,) = [w for w in result.warnings if "exceeds 8-bit pointers" in w]
    shown = re.search(r"pointer value (\d+)(?:-(\d+))? exceeds 8-bit pointers", line)
    assert shown is not None and largest in {int(g) for g in shown.groups() if g}, line


def test_results_json_is_standard_json_where_a_value_was_not_computed(tmp_path):
    """A GEMM too large for the functional check has no functional error (NaN in the
    frame): results.json says null, which JSON parsers accept (bare NaN they reject)."""
    import json

    from archsim.accelerators.tensor_core import FUNCTIONAL_MAX_MACS

    side = round(FUNCTIONAL_MAX_MACS ** (1 / 3)) * 2
    wl = {"schema_version": 1, "name": "g", "source": "test",
          "layers": [{"name": "big", "kind": "gemm", "m": side, "n": side, "k": side}]}  # fmt: skip
    from archsim.config.workload import WorkloadSpec

    res = archsim.simulate("h100", WorkloadSpec.model_validate(wl))
    assert (
        res.layers[0].extras["tc_functional_max_error"]
        != res.layers[0].extras["tc_functional_max_error"]
    )  # NaN: not computed
    text = res.to_json(tmp_path / "results.json")

    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    extras = json.loads(text, parse_constant=refuse)["layers"][0]["extras"]
    assert extras["tc_functional_max_error"] is None
    assert extras["tc_functional_error_bound"] is None
    assert extras["tc_tflops"] > 0


def test_a_functional_check_past_its_bound_is_a_warning(monkeypatch):
    simulate_module = importlib.import_module(
        "archsim.simulate"
    )  # `archsim.simulate` is the function

    fine = {
        "eie_functional_max_error": 0.01,
        "eie_functional_error_bound": 0.02,
        "systolic_functional_max_error": 0.0,
        "tc_functional_max_error": float("nan"),  # not checked (too large)
        "tc_functional_error_bound": 1.0,
    }
    assert simulate_module._functional_warnings("a", fine) == []
    assert simulate_module._functional_warnings("c", {"systolic_functional_max_error": 2.0}) == [
        "layer c: functional check failed: systolic_functional_max_error 2 exceeds exact "
        "agreement 0: a simulator bug, please report it"
    ]
    hw = archsim.load_hardware("tiny_eie")
    assert not [w for w in archsim.simulate(hw, SMALL, seed=1).warnings if "functional" in w]
    # a datapath that drops work: the run says so instead of passing silently
    eie_module = importlib.import_module("archsim.accelerators.eie")
    real = eie_module.simulate_eie

    def off_by_one(hw, wl, seed, **kw):
        outcomes, ctx = real(hw, wl, seed, **kw)
        bad = outcomes[0].extras | {"eie_functional_max_error": 1.5}
        return [replace(outcomes[0], extras=bad), *outcomes[1:]], ctx

    monkeypatch.setattr(eie_module, "simulate_eie", off_by_one)
    warned = archsim.simulate(hw, SMALL, seed=1).warnings
    bound = real(hw, SMALL, 1)[0][0].extras["eie_functional_error_bound"]
    assert [w for w in warned if "functional" in w] == [
        "layer a: functional check failed: eie_functional_max_error 1.5 exceeds "
        f"eie_functional_error_bound {bound:.6g}: a simulator bug, please report it"
    ]


def test_a_data_folder_the_model_does_not_read_is_named(tmp_path):
    # the GPU and systolic models time layers from their shapes: a data: folder was ignored
    # without a word (even a missing one) and listed in metadata as real tensors simulated
    rng = np.random.default_rng(0)
    (tmp_path / "d").mkdir()
    np.save(tmp_path / "d" / "weights.npy", rng.standard_normal((8, 4, 3, 3)).astype(np.float32))
    np.save(tmp_path / "d" / "activations.npy", rng.random((1, 4, 6, 6)).astype(np.float32))
    conv = {"kind": "conv", "c": 4, "k": 8, "h": 6, "w": 6, "r": 3, "s": 3, "stride": 1, "pad": 1}
    layers = [{"name": "c1", "data": "d", **conv}, {"name": "c2", "data": "gone", **conv}]
    spec = {"schema_version": 1, "name": "d", "source": "test", "layers": layers}
    wl = archsim.WorkloadSpec.model_validate(spec).bind(tmp_path, "test")
    gpu = archsim.simulate("h100", wl, seed=0)
    assert gpu.metadata["real_tensor_layers"] == []
    assert [w for w in gpu.warnings if "data:" in w] == [
        "layer c1, layer c2: data: folder not read; tensor_core times a layer from its shape and "
        "checks its datapath on seeded operands (only eie, scnn and dcnn read real tensors)"
    ]
    one = archsim.WorkloadSpec.model_validate({**spec, "layers": spec["layers"][:1]})
    sparse = archsim.simulate("scnn", one.bind(tmp_path, "test"), seed=0)
    assert sparse.metadata["real_tensor_layers"] == ["c1"]
    assert not [w for w in sparse.warnings if "data:" in w]


def test_operand_activity_without_a_power_model_is_named():
    # only a GPU preset with a power: block prices operand data; v100 ignored `zeros` silently
    gemm = {"kind": "gemm", "m": 64, "n": 64, "k": 64, "precision": "fp16"}
    layers = [{"name": "z", "operand_activity": "zeros", **gemm}, {"name": "r", **gemm}]
    wl = archsim.WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "a", "source": "test", "layers": layers}
    )
    assert [w for w in archsim.simulate("v100", wl, seed=0).warnings if "operand" in w] == [
        "layer z: operand_activity not used; only a GPU preset with a power: block (h100) "
        "prices operand data, and v100 has none"
    ]
    assert not [w for w in archsim.simulate("h100", wl, seed=0).warnings if "operand" in w]


def test_a_gpu_layer_larger_than_hbm_is_named():
    # a 200000^3 FP16 GEMM (298 GiB of operands and output) ran on an 80 GB H100 without a word
    gemm = {"kind": "gemm", "precision": "fp16"}
    layers = [
        {"name": "huge", "m": 200_000, "n": 200_000, "k": 200_000, **gemm},
        {"name": "fits", "m": 4096, "n": 4096, "k": 4096, **gemm},
    ]
    wl = archsim.WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "h", "source": "test", "layers": layers}
    )
    from archsim.workload.gemm import lower_to_gemm

    prob = lower_to_gemm(wl.layers[0])  # A and B in fp16, D in the accumulator's fp32
    assert prob.footprint_bytes == 2 * 200_000**2 * 2 + 200_000**2 * 4
    warned = [w for w in archsim.simulate("h100", wl, seed=0).warnings if "HBM" in w]
    assert warned == [
        f"layer huge: operands and output need up to {prob.footprint_bytes / 2**30:.4g} GiB, "
        "more than the 80 GiB of HBM of h100; timed as if they fit"
    ]
    assert not [w for w in archsim.simulate("v100", "resnet50", seed=0).warnings if "HBM" in w]
