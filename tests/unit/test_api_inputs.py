"""The Python API's bad inputs (a fuzz pass over ``archsim.__all__``): a user mistake is an
``ArchsimError`` naming the argument, not a ``TypeError``/``AttributeError`` from deep inside
or a silently infinite result."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import archsim
from archsim.errors import ArchsimError, UnknownNameError

AXES = {"pe_array.num_pes": [2, 4]}


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        # arguments swapped or of the wrong kind: AttributeError 'WorkloadSpec' ... 'accelerator'
        (lambda: archsim.simulate(archsim.load_workload("alexnet"), "alexnet"),
         "<api>: hardware: got a WorkloadSpec; allowed: a hardware config"),
        (lambda: archsim.simulate("eie", archsim.load_hardware("eie")),
         "<api>: workload: got a EieConfig"),
        (lambda: archsim.simulate(None, "eie_benchmarks"), "<api>: hardware: got NoneType"),
        # collective sizes: NaN, inf, 0, fractions, strings, bools; the element type's bytes
        (lambda: archsim.collective("dgx_h100", "all_reduce", [float("nan")]), "size nan"),
        (lambda: archsim.collective("dgx_h100", "all_reduce", [float("inf")]), "size inf"),
        (lambda: archsim.collective("dgx_h100", "all_reduce", [2.7]), "size 2.7"),
        (lambda: archsim.collective("dgx_h100", "all_reduce", [True]), "size True"),
        (lambda: archsim.collective("dgx_h100", "all_reduce", [10**30]), "whole byte counts"),
        (lambda: archsim.collective("dgx_h100", "all_reduce", None), "sizes None"),
        (lambda: archsim.collective("dgx_h100", "all_reduce", "8:64", dtype_bytes=0),
         "dtype_bytes 0"),
        (lambda: archsim.collective("dgx_h100", "all_reduce", "8:64", gpus=1),
         "a collective needs 2 GPUs or more"),  # algbw was inf, busbw nan
        # sweep spec fields of the wrong type name their field
        (lambda: archsim.sweep("tiny_eie", "eie_benchmarks", axes=["pe_array.num_pes"]),
         "<api>: axes: Input should be a valid dictionary"),
        (lambda: archsim.sweep("tiny_eie", "eie_benchmarks", axes=AXES, seeds=5),
         "<api>: seeds: Input should be a valid list"),
        (lambda: archsim.sweep("tiny_eie", "eie_benchmarks", axes=AXES, metrics=["x"]),
         "<api>: metrics: Input should be a valid dictionary"),
        (lambda: archsim.sweep("tiny_eie", "eie_benchmarks", axes=AXES, max_points="10"),
         "<api>: max_points: got '10'"),
        (lambda: archsim.sweep("tiny_eie", "eie_benchmarks", axes=AXES, n_jobs=1.5),
         "n_jobs must be an integer >= 1 (got 1.5)"),
        # results, workloads, overrides
        (lambda: archsim.load_workload("alexnet").with_batch(2.5), "<api>: batch: got 2.5"),
        (lambda: archsim.load_hardware("eie").with_overrides(None), "got NoneType; allowed: a "
         "mapping of dotted paths"),
        (lambda: archsim.load_hardware("eie").with_overrides({1: 2}), "1: not a dotted path"),
        # training options of the wrong type were compared, formatted or hashed
        (lambda: archsim.train_step("dgx_a100", "resnet50", gpus=2, batch_per_gpu="256"),
         "batch per GPU '256'; allowed: an integer >= 1"),
        (lambda: archsim.train_step("dgx_a100", "resnet50", gpus=2, batch_per_gpu=True),
         "batch per GPU True"),
        (lambda: archsim.train_step("dgx_a100", "resnet50", gpus=2, precision=["fp32"]),
         "precision ['fp32']; allowed: amp_fp16"),
        (lambda: archsim.train_step("dgx_a100", "resnet50", gpus=2, topk_density=True),
         "top-k density True"),
    ],
)  # fmt: skip
def test_api_mistakes_are_archsim_errors(call: Any, needle: str) -> None:
    with pytest.raises(ArchsimError) as info:
        call()
    msg = str(info.value)
    assert needle in msg and "\n" not in msg, msg


def test_model_parallel_and_inference_options() -> None:
    from archsim.system.inference import InferenceOptions, inference_pass
    from archsim.system.parallel import parallel_step

    with pytest.raises(ArchsimError, match="batch per GPU 64.0; allowed: an integer >= 1"):
        parallel_step("dgx_a100", "resnet50", gpus=8, batch_per_replica=64.0)
    with pytest.raises(ArchsimError, match="tensor=True"):
        parallel_step("dgx_a100", "resnet50", gpus=8, tensor=True, batch_per_replica=64)
    with pytest.raises(ArchsimError, match="batch nan; allowed: an integer >= 1"):
        inference_pass("v100", "resnet50_v1_5", InferenceOptions("amp_fp16", batch=float("nan")))


def test_numpy_values_and_unknown_layers() -> None:
    """NumPy axis values (``np.arange``) raised PydanticSerializationError; NumPy sizes are
    byte counts; ``layer()`` of a missing name lists the names."""
    frame = archsim.sweep("tiny_eie", "eie_benchmarks", axes={"pe_array.num_pes": np.array([2, 4])},
                          seeds=(np.int64(0),), n_jobs=1)  # fmt: skip
    assert sorted(frame["pe_array.num_pes"].unique().tolist()) == [2, 4]
    sizes = archsim.collective("dgx_h100", "all_reduce", np.arange(1, 3) * 1024)["size_bytes"]
    assert sizes.tolist() == [1024, 2048]
    res = archsim.simulate("tiny_eie", "eie_benchmarks")
    with pytest.raises(UnknownNameError, match="no layer 'nope' in this result; available: Alex-6"):
        res.layer("nope")
    with pytest.raises(KeyError):  # still a KeyError for code that caught one
        res.layer("nope")


def test_numpy_integers_from_a_sweep_frame_are_integers_everywhere() -> None:
    """Re-running a point picked from a sweep's frame: its seed and counts are np.int64, which
    simulate(seed=), with_batch, train_step/collective(gpus=) and sweep(n_jobs=) refused."""
    seed, two = np.int64(3), np.int64(2)
    assert archsim.simulate("tiny_eie", "eie_benchmarks", seed=seed).seed == 3
    assert type(archsim.simulate("tiny_eie", "eie_benchmarks", seed=seed).seed) is int
    assert archsim.load_workload("resnet50").with_batch(two).name == "resnet50@b2"
    assert archsim.train_step("dgx_a100", "resnet50", gpus=two).metadata["train_step"]["gpus"] == 2
    assert len(archsim.collective("dgx_a100", "all_reduce", "1M:2M", gpus=np.int64(4))) == 2
    frame = archsim.sweep("tiny_eie", "eie_benchmarks", axes={"pe_array.num_pes": [2]},
                          n_jobs=np.int64(1))  # fmt: skip
    assert (frame["status"] == "ok").all()


def test_an_onnx_path_a_mixed_energy_baseline_and_typing() -> None:
    """simulate(hw, "m.onnx") said "not UTF-8 text"; an H100 (board energy) against a V100
    baseline (actions only) gave an energy ratio of 0.03 without a word; no py.typed."""
    with pytest.raises(ArchsimError, match=r"m.onnx: an ONNX model, not a workload YAML; "
                       r"allowed: archsim.import_onnx\(path\) first"):  # fmt: skip
        archsim.simulate("tiny_eie", "m.onnx")
    mixed = archsim.simulate("h100", "deepbench_gemm", baseline="v100").warnings
    assert [w for w in mixed if w.startswith("energy_ratio")] == [
        "energy_ratio_vs_tensor_core: h100 prices board energy (static power + actions), v100 "
        "only its actions (no power: block), so the ratio mixes the two"
    ]
    assert not archsim.simulate("a100", "deepbench_gemm", baseline="v100").warnings
    assert (Path(archsim.__file__).parent / "py.typed").is_file()


def test_json_round_trip_keeps_nan_in_number_columns() -> None:
    """A GEMM past the functional check's size has NaN error columns; JSON writes null and
    from_json read None back, so the column became object dtype."""
    gemm = {"kind": "gemm", "name": "g", "m": 4096, "n": 4096, "k": 4096, "precision": "fp16"}
    wl = archsim.WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "w", "source": "test", "layers": [gemm]}
    )
    back = archsim.RunResult.from_json(archsim.simulate("v100", wl).to_json())
    col = back.to_dataframe()["tc_functional_max_error"]
    assert col.dtype == np.float64 and col.isna().all()


def test_a_loaded_spec_runs_from_another_folder_and_sweep_misuse_is_a_config_error(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """load_sweep returns (spec, base_dir) but sweep(spec) resolved the spec's relative
    workload against the current folder; sweep(hw, wl) without axes was a TypeError."""
    (tmp_path / "w.yaml").write_text(
        "schema_version: 1\nname: w\nsource: t\nlayers:\n  - {kind: fc, name: f, inputs: 64, "
        "outputs: 32, weight_density: 0.5, activation_density: 0.5}\n"
    )
    (tmp_path / "s.yaml").write_text(
        "schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: w.yaml\n"
        "axes: {pe_array.num_pes: [2, 4]}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec, base = archsim.load_sweep(tmp_path / "s.yaml")
    assert len(archsim.totals(archsim.sweep(spec, n_jobs=1, base_dir=base))) == 2
    from archsim.errors import ConfigError

    with pytest.raises(ConfigError, match="axes: none given; allowed: a mapping"):
        archsim.sweep("tiny_eie", "eie_benchmarks")
    with pytest.raises(ConfigError, match="axes: given without a workload; allowed: sweep"):
        archsim.sweep(tmp_path / "s.yaml", axes={"pe_array.num_pes": [2]})


def test_a_sweep_over_workloads_of_one_name_is_refused() -> None:
    """Variants made with with_overrides keep their name, and the frame told them apart only
    by row order."""
    wl = archsim.load_workload("eie_benchmarks")
    dense = wl.with_overrides({"layers.0.weight_density": 0.5})
    with pytest.raises(ArchsimError, match="two workloads named 'eie_benchmarks'; allowed"):
        archsim.sweep("tiny_eie", [wl, dense], axes={"pe_array.num_pes": [2]}, n_jobs=1)
    renamed = dense.with_overrides({"name": "half"})
    frame = archsim.sweep("tiny_eie", [wl, renamed], axes={"pe_array.num_pes": [2]}, n_jobs=1)
    assert sorted(set(frame["workload"])) == ["eie_benchmarks", "half"]


def test_results_that_do_not_fit_are_refused_and_a_sweep_records_them() -> None:
    """A GPU layer is not bounded by ARCHSIM_MAX_CYCLES: 10^18 batched 64^3 GEMMs took 7.6e19
    cycles, which results.json could not read back and a sweep's store died writing (after
    every point had run); its 2.6e23 multiply-adds are refused before it runs now. A price of
    1e308 pJ gave an infinite energy."""

    def wl(**layer: Any) -> archsim.WorkloadSpec:
        return archsim.WorkloadSpec.model_validate(
            {"schema_version": 1, "name": "w", "source": "t", "layers": [layer]}
        )

    big = wl(kind="gemm", name="g", m=64, n=64, k=64, batch=10**18)
    with pytest.raises(ArchsimError, match="layer 'g' needs about 2.62e\\+23 multiply-adds, past"):
        archsim.simulate("v100", big)
    frame = archsim.sweep("v100", big, axes={"sms": [80, 40]}, n_jobs=1)
    assert frame["status"].tolist() == ["error", "error"]
    fc = wl(kind="fc", name="fc1", inputs=64, outputs=32, weight_density=0.1,
            activation_density=0.5)  # fmt: skip
    hot = archsim.load_hardware("eie").with_overrides({"static_power.leakage_w_per_pe": 1e308})
    with pytest.raises(ArchsimError, match="energy overflows \\(components leakage\\)"):
        archsim.simulate(hot, fc)


def test_collective_times_that_overflow() -> None:
    s = archsim.load_system("dgx_a100")
    hot = s.with_overrides({"energy.nvlink_pj_per_bit": 1e308})
    with pytest.raises(ArchsimError, match="all_reduce of 1073741824 bytes: its time or energy"):
        archsim.collective(hot, "all_reduce", "1G")  # energy_j was inf


def test_one_name_given_as_a_string_is_one_name() -> None:
    """``pareto(frame, minimize="total_time_s")`` asked for columns 't', 'o', ...;
    ``validate("eie")`` for models 'e' and 'i'; ``algorithms="implicit_gemm"`` for 'i', 'm'."""
    from archsim.system.inference import InferenceOptions, inference_pass
    from archsim.validation.runner import claims_for

    frame = archsim.sweep("tiny_eie", "eie_benchmarks", axes=AXES, n_jobs=1)
    assert archsim.pareto(frame, minimize="total_time_s").equals(
        archsim.pareto(frame, minimize=["total_time_s"])
    )
    assert claims_for("eie") == claims_for(["eie"]) and len(claims_for("eie")) > 10
    with pytest.raises(UnknownNameError, match=r"unknown model\(s\) \['nope'\]"):
        claims_for(["nope"])
    one = InferenceOptions(algorithms="implicit_gemm")
    assert (
        inference_pass("v100", "resnet50_v1_5", one).conv_s
        == inference_pass(
            "v100", "resnet50_v1_5", InferenceOptions(algorithms=("implicit_gemm",))
        ).conv_s
    )


@pytest.mark.parametrize("batch", [0, 2.5, True, 10**30, "x"])
def test_import_onnx_batch_is_checked(tmp_path: Any, batch: Any) -> None:
    """2.5 became 2 silently; 0 said "nodes mm (MatMul) cannot be placed"; 10^30 and "x"
    raised ValueError inside onnx."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], np.eye(4, 3).reshape(-1).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ("N", 4))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    assert len(archsim.import_onnx(path, batch=4).layers) == 1
    with pytest.raises(ArchsimError, match=f"m.onnx: batch {batch!r}; allowed: an integer"):
        archsim.import_onnx(path, batch=batch)


def test_results_json_with_values_archsim_never_writes() -> None:
    """A NaN or negative ``area_mm2`` and a negative seed were read back silently; a
    5,000-digit ``total_cycles`` gave Python's int()-limit text, naming no field."""
    import json

    good = json.loads(archsim.simulate("tiny_eie", "eie_benchmarks").to_json())
    for key, value, needle in (
        ("area_mm2", {"x": float("nan")}, "area_mm2.x: nan; allowed"),
        ("area_mm2", {"x": -5.0}, "area_mm2.x: -5.0; allowed"),
        ("seed", -5, "seed: -5; allowed"),
    ):
        bad = json.dumps({**good, key: value})
        with pytest.raises(ArchsimError, match=f"malformed results.json: {needle}"):
            archsim.RunResult.from_json(bad)
    big = json.dumps({**good, "total_cycles": 10**400})
    with pytest.raises(ArchsimError, match="total_cycles: an integer of 1329 bits; allowed"):
        archsim.RunResult.from_json(big)
    huge = json.dumps(good).replace('"total_cycles": ', '"total_cycles": 1' + "0" * 5000, 1)
    with pytest.raises(ArchsimError, match="a number of more than 4,300 digits; allowed"):
        archsim.RunResult.from_json(huge)


def test_seed_past_64_bits_is_refused() -> None:
    """A seed of 2**64 ran, and its results.json (seed held as a 64-bit integer) could not be
    read back."""
    with pytest.raises(ArchsimError, match=r"seed: got 18446744073709551616; allowed: an integer"):
        archsim.simulate("tiny_eie", "eie_benchmarks", seed=2**64)
    res = archsim.simulate("tiny_eie", "eie_benchmarks", seed=2**63 - 1)
    assert archsim.RunResult.from_json(res.to_json()).seed == 2**63 - 1


def test_results_files_are_checked_and_written_atomically(tmp_path: Path) -> None:
    """to_csv/to_json wrote with open(): a folder, a missing folder or a path of the wrong type
    gave IsADirectoryError, FileNotFoundError or TypeError, and a failed write left half a
    file."""
    from archsim.errors import ConfigError

    res = archsim.simulate("tiny_eie", "eie_benchmarks")
    missing = tmp_path / "no" / "r.json"
    for call, needle in (
        (lambda: res.to_csv(tmp_path), f"<api>: to_csv: {tmp_path} exists and is not a regular "
         "file; allowed: a new file"),
        (lambda: res.to_json(missing), f"<api>: to_json: {missing}: cannot write results: no "
         f"folder {missing.parent}; allowed: a file path in a writable folder"),
        (lambda: res.to_json(5), "<api>: to_json: got int; allowed: a file path or None"),
        (lambda: res.to_csv(None), "<api>: to_csv: got NoneType; allowed: a file path"),
    ):  # fmt: skip
        with pytest.raises(ConfigError) as info:
            call()
        assert str(info.value).startswith(needle) and "\n" not in str(info.value), info.value
    assert not missing.parent.exists()
    assert res.to_csv(tmp_path / "r.csv") == tmp_path / "r.csv"
    text = res.to_json(tmp_path / "r.json")
    assert (tmp_path / "r.json").read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json"]  # no temporaries
    assert archsim.RunResult.from_json(tmp_path / "r.json") == archsim.RunResult.from_json(text)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: archsim.RunResult.from_json({}), "<api>: from_json: got dict; allowed: JSON "
         "text or a results.json path (RunResult.from_data takes a parsed object)"),
        (lambda: archsim.RunResult.from_json(b"{}"), "<api>: from_json: got bytes; allowed:"),
        (lambda: archsim.RunResult.from_json(None), "<api>: from_json: got NoneType; allowed:"),
        (lambda: archsim.RunResult.from_json(" {1]"),  # JSON text, not a file name
         "<string>: malformed results.json: "),
        (lambda: archsim.RunResult.from_data(None, "x"), "<api>: from_data: got NoneType; "
         "allowed: the parsed results.json object"),
    ],
)  # fmt: skip
def test_results_json_arguments_of_the_wrong_kind(call: Any, needle: str) -> None:
    """A dict said "format_version must be 1", bytes and None raised TypeError. Text that
    starts with "{" is JSON; anything else a path (a folder may be named "[2024] runs")."""
    with pytest.raises(ArchsimError) as info:
        call()
    assert str(info.value).startswith(needle) and "\n" not in str(info.value), info.value


def _first_count(layer: dict[str, Any]) -> None:
    part = next(iter(layer["counts"]))
    layer["counts"][part][next(iter(layer["counts"][part]))] = -1


@pytest.mark.parametrize(
    ("tamper", "needle"),
    [
        (lambda d: d.update(layers=[]), "layers: empty (total_cycles 4053600); allowed: one "
         "entry per layer run"),
        (lambda d: _first_count(d["layers"][0]), "layers.0.counts.spmat_sram.read: -1; "
         "allowed: an integer from 0 to 2**63"),
        (lambda d: d["layers"][1].update(utilization=1.5), "layers.1.utilization: 1.5; "
         "allowed: a fraction from 0 to 1"),
        (lambda d: d["layers"][1].update(utilization=-0.5), "layers.1.utilization: -0.5; "
         "allowed: a fraction from 0 to 1"),
        (lambda d: d["layers"][0].update(start_cycle=9, end_cycle=5), "layers.0.end_cycle: 5 "
         "is before start_cycle 9; allowed: end_cycle >= start_cycle"),
        (lambda d: d["layers"][2].update(layer=d["layers"][0]["layer"]), "layers.2.layer: "
         "'Alex-6' is also the name of layers.0; allowed: unique layer names"),
        (lambda d: d.update(clock_hz="1e9"), 'clock_hz: "1e9" is not a number; allowed: a '
         "number written without quotes"),
        (lambda d: d.update(seed="0"), 'seed: "0" is not a number; allowed: a number'),
        (lambda d: d["layers"][0].update(cycles=True), "layers.0.cycles: true is not a number"),
    ],
)  # fmt: skip
def test_tampered_results_json_is_refused(tamper: Any, needle: str) -> None:
    """Values no run of archsim writes were read back silently (strings as numbers too)."""
    import json

    data = json.loads(archsim.simulate("tiny_eie", "eie_benchmarks").to_json())
    tamper(data)
    with pytest.raises(ArchsimError) as info:
        archsim.RunResult.from_json(json.dumps(data))
    msg = str(info.value)
    assert msg == f"<string>: malformed results.json: {needle}" or msg.startswith(
        f"<string>: malformed results.json: {needle}"
    ), msg
    assert "\n" not in msg
    with pytest.raises(ArchsimError, match="malformed results.json"):
        archsim.RunResult.from_data(data, "x")


def test_every_family_reads_back_what_it_writes() -> None:
    """The checks of tampered results refuse nothing archsim writes: each accelerator family
    and a training step (whose own rows may share a layer's name) round-trip."""
    import json

    conv = {"kind": "conv", "name": "c1", "c": 8, "k": 8, "h": 8, "w": 8, "r": 3, "s": 3,
            "pad": 1, "weight_density": 0.5, "activation_density": 0.5}  # fmt: skip
    gemm = {"kind": "gemm", "name": "g/1:0.w", "m": 64, "n": 32, "k": 48}  # an ONNX-like name
    spec = {"schema_version": 1, "name": "w", "source": "t"}
    convs = archsim.WorkloadSpec.model_validate({**spec, "layers": [conv]})
    gemms = archsim.WorkloadSpec.model_validate({**spec, "layers": [gemm]})
    runs = [
        archsim.simulate("eie", "eie_benchmarks"),
        archsim.simulate("scnn", convs),
        archsim.simulate("dcnn", convs),
        archsim.simulate("systolic_32x32_os", gemms),
        archsim.simulate("systolic_tpu_128x128_ws", convs),
        archsim.simulate("h100", convs),
        archsim.simulate("v100", gemms),
        archsim.train_step("dgx_a100", "resnet50", gpus=2),
    ]
    assert {r.accelerator for r in runs} == {
        "eie", "scnn", "dcnn", "systolic", "tensor_core", "system"
    }  # fmt: skip
    for run in runs:  # JSON has lists for the tuples of a step's metadata: compare texts
        assert archsim.RunResult.from_json(run.to_json()).to_json() == run.to_json(), run
    data = json.loads(runs[-1].to_json())
    data["layers"][0]["layer"] = "optimizer"  # a workload layer of that name
    assert archsim.RunResult.from_json(json.dumps(data)).layers[0].layer == "optimizer"


@functools.cache
def _sweep_frame() -> Any:
    return archsim.sweep("tiny_eie", "eie_benchmarks", axes=AXES, n_jobs=1)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: archsim.pareto(None, minimize="a"), "<api>: pareto: got NoneType; allowed: a "
         "DataFrame (archsim.sweep's frame or its totals)"),
        (lambda: archsim.pareto([1], minimize="a"), "<api>: pareto: got list; allowed: a "
         "DataFrame"),
        (lambda: archsim.totals({"a": 1}), "<api>: totals: got dict; allowed: a DataFrame"),
        (lambda: archsim.totals(__import__("pandas").Series([1.0])), "<api>: totals: got "
         "Series; allowed: a DataFrame"),
        (lambda: archsim.totals(_sweep_frame().drop(columns="point")), "<api>: totals: a "
         "per-layer frame (layer_index column) without a point column; allowed: "),
        (lambda: archsim.pareto(_sweep_frame().drop(columns="point"), minimize="total_time_s"),
         "<api>: pareto: a per-layer frame (layer_index column) without a point column"),
        (lambda: archsim.pareto(_sweep_frame()), "<api>: pareto: no metric given; allowed: "
         "column names in minimize= or maximize="),
        (lambda: archsim.pareto(_sweep_frame(), minimize="total_time_s",
                                maximize=["total_time_s"]),
         "<api>: pareto: metric 'total_time_s' is in both minimize and maximize; allowed: "
         "each metric in one of them"),
        (lambda: archsim.pareto(_sweep_frame(), minimize="hardware"), "<api>: pareto: metric "
         "'hardware' is not numeric (dtype "),
        (lambda: archsim.pareto(_sweep_frame(), minimize=5), "<api>: pareto: minimize: got 5; "
         "allowed: a column name or a list of them"),
    ],
)  # fmt: skip
def test_pareto_and_totals_arguments(call: Any, needle: str) -> None:
    """None, a list, a dict or a Series raised AttributeError, a frame without ``point`` a
    pandas KeyError, no metric a plain ValueError; a text metric gave an empty front and a
    metric both minimised and maximised every row."""
    with pytest.raises(ArchsimError) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(needle) and "\n" not in msg and "allowed: " in msg, msg


def test_pareto_of_numbers_in_object_columns() -> None:
    """An object column of numbers and NaN (a sweep whose every point failed) is numeric."""
    import pandas as pd

    frame = pd.DataFrame({"a": pd.Series([1.0, 2.0, np.nan], dtype=object), "b": [2, 1, 0]})
    assert archsim.pareto(frame, minimize=["a", "b"]).index.tolist() == [0, 1]
    text = pd.DataFrame({"a": pd.Series(["1", "2"], dtype=object)})
    with pytest.raises(ArchsimError, match=r"metric 'a' is not numeric \(dtype object\); "
                       "allowed: numeric columns"):  # fmt: skip
        archsim.pareto(text, minimize="a")


def test_collective_element_sizes() -> None:
    """dtype_bytes=3 gave rows labelled float with 3-byte counts."""
    with pytest.raises(ArchsimError) as info:
        archsim.collective("dgx_h100", "all_reduce", [64], dtype_bytes=3)
    assert str(info.value) == (
        "dtype_bytes 3; allowed: 1 (int8), 2 (half), 4 (float), 8 (double)"
    )  # fmt: skip
    half = archsim.collective("dgx_h100", "all_reduce", [64], dtype_bytes=np.int64(2))
    assert half[["count", "type"]].values.tolist() == [[32, "half"]]
    assert archsim.collective("dgx_h100", "all_reduce", [64])["type"].tolist() == ["float"]


def test_an_override_set_twice_is_refused() -> None:
    """A dotted path and its section's mapping both set pe_array.num_pes: the result depended
    on the mapping's order."""
    from archsim.errors import ConfigError

    hw = archsim.load_hardware("eie")
    for over in ({"pe_array.num_pes": 8, "pe_array": {"num_pes": 4}},
                 {"pe_array": {"num_pes": 4}, "pe_array.num_pes": 8}):  # fmt: skip
        with pytest.raises(ConfigError) as info:
            hw.with_overrides(over)
        assert str(info.value) == (
            "<overrides>: pe_array.num_pes: is set twice (by pe_array.num_pes and by pe_array); "
            "allowed: one value per field"
        )
    wl = archsim.load_workload("eie_benchmarks")
    with pytest.raises(ConfigError, match=r"layers.0.name: is set twice \(by layers.0.name and "
                       r"by layers.00.name\)"):  # fmt: skip
        wl.with_overrides({"layers.0.name": "a", "layers.00.name": "b"})
    both = hw.with_overrides({"pe_array.num_pes": 8, "clock.frequency_hz": 1e9})
    assert both.pe_array.num_pes == 8


@pytest.mark.parametrize(
    ("name", "what"), [("a\nb", "newline"), ("a\tb", "tab"), ("x\x1b[31m", "U+001B")]
)
def test_layer_names_are_one_line(tmp_path: Path, name: str, what: str) -> None:
    """A layer name with a newline broke the terminal table; ONNX names ('/', ':', '.') stay."""
    import json

    from archsim.errors import ConfigError

    wl = archsim.load_workload("eie_benchmarks")
    with pytest.raises(ConfigError) as info:
        wl.with_overrides({"layers.1.name": name})
    assert str(info.value) == (
        f"<overrides>: layers.1.name: contains a control character ({what}); allowed: one line "
        "of printable text"
    )
    layer = {"kind": "fc", "name": name, "inputs": 8, "outputs": 4, "weight_density": 0.5,
             "activation_density": 0.5}  # fmt: skip
    path = tmp_path / "w.yaml"  # JSON is YAML
    path.write_text(json.dumps({"schema_version": 1, "name": "w", "source": "t",
                                "layers": [layer]}))  # fmt: skip
    with pytest.raises(ConfigError) as info:
        archsim.load_workload(path)
    assert str(info.value) == (
        f"{path}: layers.0.name: contains a control character ({what}); allowed: one line of "
        "printable text"
    )
    assert wl.with_overrides({"layers.1.name": "/features/conv.0:Conv_1"}).layers[1].name == (
        "/features/conv.0:Conv_1"
    )


@pytest.mark.parametrize("preset", ["eie", "scnn", "dcnn", "systolic_32x32_os", "h100", "dgx_h100"])
def test_hardware_and_workload_names_are_one_short_line(preset: str) -> None:
    """A name heads every report and sits in every results row: a newline, or 100,000
    characters, was taken (the layer names' rule, now every name's)."""
    from archsim.config.names import MAX_NAME_CHARS
    from archsim.errors import ConfigError

    hw = archsim.load_hardware(preset)
    for model in (hw, archsim.load_workload("eie_benchmarks")):
        with pytest.raises(ConfigError) as info:
            model.with_overrides({"name": "a\nb"})
        assert str(info.value) == (
            "<overrides>: name: contains a control character (newline); allowed: one line of "
            "printable text (got 'a\\nb')"
        )
        with pytest.raises(ConfigError) as info:
            model.with_overrides({"name": "x" * 100_000})
        assert str(info.value) == (
            "<overrides>: name: 100,000 characters; allowed: at most 200 characters"
        )
        assert model.with_overrides({"name": "y" * MAX_NAME_CHARS}).name == "y" * MAX_NAME_CHARS


def test_a_derived_name_is_cut_to_the_limit() -> None:
    """``--set`` names the changed design after its changes; many of them made a name the
    limit refused, which the user never wrote: it is cut, with an ellipsis."""
    from archsim.config.io import apply_set
    from archsim.config.names import MAX_NAME_CHARS

    hw = apply_set(archsim.load_hardware("h100"), [f"description={'d' * 300}"])
    assert len(hw.name) == MAX_NAME_CHARS
    assert hw.name.startswith("h100 (description=ddd") and hw.name.endswith("d\u2026")
    short = apply_set(archsim.load_hardware("h100"), ["description=x"])
    assert short.name == "h100 (description=x)"
