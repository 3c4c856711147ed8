"""GEMM layer specs and the DeepBench training GEMM preset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import archsim
from archsim.config import GemmLayer
from archsim.errors import ConfigError

# Read from baidu-research/DeepBench code/kernels/gemm_problems.h (training_set) at commit
# da81ba7820739e2e506dc27f382d15be5479f98f.
DEEPBENCH_TRAINING_SHAPES = 160
DEEPBENCH_TOTAL_FLOPS = 26_706_398_187_136  # sum of 2 m n k over the 160 shapes

# V100 calibration points of reference/tensor_core.md (no transposes)
CALIBRATION = [
    (4096, 7000, 4096),
    (1760, 7000, 1760),
    (7680, 24000, 2560),
    (4096, 128, 4096),
    (4096, 16, 4096),
    (35, 8457, 1760),
    (512, 8, 500000),
    (512, 16, 512),
]


def _gemms() -> list[GemmLayer]:
    wl = archsim.load_workload("deepbench_gemm")
    assert wl.source.strip()
    assert "da81ba7820739e2e506dc27f382d15be5479f98f" in wl.source
    assert all(isinstance(layer, GemmLayer) for layer in wl.layers)
    return list(wl.layers)


# ------------------------------------------------------------------------------- preset


def test_preset_loads_with_deepbench_count() -> None:
    layers = _gemms()
    assert len(layers) == DEEPBENCH_TRAINING_SHAPES
    assert str(DEEPBENCH_TRAINING_SHAPES) in archsim.load_workload("deepbench_gemm").description
    shapes = {(g.m, g.n, g.k, g.transpose_a, g.transpose_b) for g in layers}
    assert len(shapes) == DEEPBENCH_TRAINING_SHAPES  # all distinct
    # DeepBench runs "half" with compute type CUDA_R_16F: FP16 accumulation
    assert {(g.precision, g.accumulate, g.batch) for g in layers} == {("fp16", "fp16", 1)}
    assert {(g.weight_density, g.activation_density) for g in layers} == {(1.0, 1.0)}


def test_preset_listed() -> None:
    assert "deepbench_gemm" in archsim.config.list_presets("workload")


@pytest.mark.parametrize("shape", CALIBRATION)
def test_calibration_shapes_present(shape: tuple[int, int, int]) -> None:
    m, n, k = shape
    by_name = {g.name: g for g in _gemms()}
    layer = by_name[f"gemm_{m}x{n}x{k}_NN"]
    assert (layer.m, layer.n, layer.k) == shape
    # cuBLAS's column-major NN: A stored k x m, B stored n x k in archsim's row-major terms
    assert (layer.transpose_a, layer.transpose_b) == (True, True)


def test_transposes_parsed() -> None:
    """Names carry DeepBench's column-major letters; the flags are archsim's row-major storage
    (a column-major "N" operand is a row-major transposed one)."""
    layers = _gemms()
    counts = {
        tag: sum((g.transpose_a, g.transpose_b) == flags for g in layers)
        for tag, flags in {"NN": (True, True), "TN": (False, True), "NT": (True, False)}.items()
    }
    assert counts == {"NN": 77, "TN": 73, "NT": 10}
    assert all(g.transpose_a or g.transpose_b for g in layers)  # DeepBench has no TT
    for g in layers:
        tag = ("N" if g.transpose_a else "T") + ("N" if g.transpose_b else "T")
        assert g.name == f"gemm_{g.m}x{g.n}x{g.k}_{tag}"
    by_name = {g.name: g for g in layers}
    tn = by_name["gemm_1760x16x1760_TN"]  # A m x k (K contiguous), B stored n x k
    assert tn.a_shape == (1760, 1760) and tn.b_shape == (16, 1760)
    nt = by_name["gemm_1760x7133x1760_NT"]
    assert (nt.transpose_a, nt.transpose_b) == (True, False)
    assert nt.b_shape == (1760, 7133) and nt.a_shape == (1760, 1760)
    # first and last entries of DeepBench's training_set, in file order
    assert layers[0].name == "gemm_1760x16x1760_NN"
    assert layers[-1].name == "gemm_1024x32x512_NT"


def test_total_flops() -> None:
    layers = _gemms()
    assert sum(g.flops for g in layers) == DEEPBENCH_TOTAL_FLOPS
    assert sum(g.macs_dense for g in layers) * 2 == DEEPBENCH_TOTAL_FLOPS


# ------------------------------------------------------------------------------- layer spec


def _gemm(**over: Any) -> dict[str, Any]:
    layer: dict[str, Any] = {"name": "g", "kind": "gemm", "m": 64, "n": 32, "k": 16}
    layer.update(over)
    return layer


def _write(tmp_path: Path, layer: dict[str, Any]) -> Path:
    data = {"schema_version": 1, "name": "t", "source": "test", "layers": [layer]}
    path = tmp_path / "wl.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_gemm_defaults_and_counts(tmp_path: Path) -> None:
    layer = archsim.load_workload(_write(tmp_path, _gemm())).layers[0]
    assert isinstance(layer, GemmLayer)
    assert (layer.transpose_a, layer.transpose_b, layer.batch) == (False, False, 1)
    assert (layer.precision, layer.accumulate) == ("fp16", "fp32")
    assert (layer.weight_density, layer.activation_density) == (1.0, 1.0)
    assert layer.gemm_view == (64, 32, 16)
    assert layer.macs_dense == 64 * 32 * 16
    assert layer.flops == 2 * 64 * 32 * 16
    batched = GemmLayer(kind="gemm", name="b", m=3, n=5, k=7, batch=4)
    assert (batched.macs_dense, batched.flops) == (420, 840)


@pytest.mark.parametrize(
    ("precision", "accumulate"),
    [
        ("fp16", "fp32"),
        ("fp16", "fp16"),
        ("bf16", "fp32"),
        ("tf32", "fp32"),
        ("fp32", "fp32"),
        ("int8", "int32"),
        ("fp8_e4m3", "fp32"),
        ("fp8_e5m2", "fp32"),
        ("fp8", "fp32"),
    ],
)
def test_valid_precision_pairs(tmp_path: Path, precision: str, accumulate: str) -> None:
    path = _write(tmp_path, _gemm(precision=precision, accumulate=accumulate))
    layer = archsim.load_workload(path).layers[0]
    assert (layer.precision, layer.accumulate) == (precision, accumulate)


@pytest.mark.parametrize(
    ("precision", "accumulate"), [("int8", "int32"), ("fp16", "fp32"), ("fp8", "fp32")]
)
def test_accumulate_defaults_to_the_precisions_accumulator(
    tmp_path: Path, precision: str, accumulate: str
) -> None:
    """An int8 GEMM with no ``accumulate`` accumulates in int32 (its only accumulator), as an
    int8 conv does; it used to be an error that asked the user to say so."""
    layer = archsim.load_workload(_write(tmp_path, _gemm(precision=precision))).layers[0]
    assert (layer.accumulate, layer.output) == (accumulate, None)


@pytest.mark.parametrize(
    ("over", "field", "words"),
    [
        ({"m": 0}, "layers.0.m", "greater than or equal to 1"),
        ({"n": -5}, "layers.0.n", "greater than or equal to 1"),
        ({"k": 0}, "layers.0.k", "greater than or equal to 1"),
        ({"batch": 0}, "layers.0.batch", "greater than or equal to 1"),
        ({"precision": "fp64"}, "layers.0.precision", "fp16"),
        ({"accumulate": "fp64"}, "layers.0.accumulate", "int32"),
        ({"precision": "int8", "accumulate": "fp32"}, "layers.0.accumulate", "allowed: int32"),
        ({"precision": "bf16", "accumulate": "fp16"}, "layers.0.accumulate", "allowed: fp32"),
        ({"precision": "fp16", "accumulate": "int32"}, "layers.0.accumulate", "fp32, fp16"),
        ({"precision": "fp8_e4m3", "output": "int32"}, "layers.0.output", "fp32, fp16, bf16"),
        (
            {"precision": "int8", "accumulate": "int32", "output": "bf16"},
            "layers.0.output",
            "allowed: int32",
        ),
        ({"output": "fp8"}, "layers.0.output", "bf16"),
        ({"weight_density": 1.5}, "layers.0.weight_density", "less than or equal to 1"),
        ({"activation_density": -0.1}, "layers.0.activation_density", "greater than or equal"),
        ({"data": "some_dir"}, "layers.0.data", "not supported for gemm"),
        ({"inputs": 4}, "layers.0.inputs", "unknown field"),
        ({"m": None}, "layers.0.m", "required"),
    ],
)
def test_bad_gemm_raises_config_error(
    tmp_path: Path, over: dict[str, Any], field: str, words: str
) -> None:
    layer = {k: v for k, v in _gemm(**over).items() if v is not None}
    path = _write(tmp_path, layer)
    with pytest.raises(ConfigError) as info:
        archsim.load_workload(path)
    err = info.value
    assert err.source == str(path)
    assert err.field == field
    assert words in err.problem
    assert field in str(err)


def test_union_and_schema_know_gemm() -> None:
    assert "gemm" in str(archsim.config.json_schema("workload"))
