"""Conv layer specs, the CNN presets (SCNN Table 1 / Figure 1) and conv materialisation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import archsim
from archsim.config.workload import ConvLayer, FcLayer
from archsim.errors import ConfigError
from archsim.workload.conv import SparseConv, materialize_conv, reference_conv

# ------------------------------------------------------------------------------- presets

# (preset, conv layers, computed dense multiplies at batch 1, SCNN Table 1 multiplies)
PRESETS = [
    ("alexnet", 5, 665_784_864, 0.69e9),
    ("vgg16", 13, 15_346_630_656, 15.3e9),
]

FIG1_ALEXNET = {  # layer: (activation density, weight density), SCNN Figure 1
    "conv1": (1.00, 0.84),
    "conv2": (0.94, 0.38),
    "conv3": (0.53, 0.35),
    "conv4": (0.39, 0.37),
    "conv5": (0.43, 0.37),
}
FIG1_VGG = {
    "conv1_1": (1.00, 0.57),
    "conv1_2": (0.51, 0.22),
    "conv2_1": (0.90, 0.34),
    "conv2_2": (0.79, 0.36),
    "conv3_1": (0.81, 0.53),
    "conv3_2": (0.64, 0.24),
    "conv3_3": (0.69, 0.42),
    "conv4_1": (0.71, 0.32),
    "conv4_2": (0.50, 0.27),
    "conv4_3": (0.45, 0.34),
    "conv5_1": (0.39, 0.35),
    "conv5_2": (0.33, 0.29),
    "conv5_3": (0.31, 0.36),
}
FIG1_GOOGLENET = {
    "inception_3a/pool_proj": (0.96, 0.46),
    "inception_3a/1x1": (0.71, 0.38),
    "inception_3a/3x3_reduce": (0.71, 0.41),
    "inception_3a/3x3": (0.66, 0.45),
    "inception_3a/5x5_reduce": (0.71, 0.36),
    "inception_3a/5x5": (0.77, 0.34),
    "inception_5b/pool_proj": (0.57, 0.31),
    "inception_5b/1x1": (0.31, 0.32),
    "inception_5b/3x3_reduce": (0.31, 0.33),
    "inception_5b/3x3": (0.30, 0.37),
    "inception_5b/5x5_reduce": (0.31, 0.33),
    "inception_5b/5x5": (0.46, 0.35),
}


def _convs(name: str) -> list[ConvLayer]:
    wl = archsim.load_workload(name)
    assert wl.source.strip()
    assert all(isinstance(layer, ConvLayer) for layer in wl.layers)
    return list(wl.layers)


@pytest.mark.parametrize(("name", "count", "macs", "table1"), PRESETS)
def test_preset_counts_and_multiplies(name: str, count: int, macs: int, table1: float) -> None:
    layers = _convs(name)
    assert len(layers) == count
    total = sum(layer.macs_dense for layer in layers)
    assert total == macs
    assert abs(total - table1) / table1 < 0.05


def test_googlenet_counts_and_multiplies() -> None:
    layers = _convs("googlenet")
    # 3 stem convs (conv1/7x7_s2, conv2/3x3_reduce, conv2/3x3) + 9 inception modules x 6 convs.
    assert len(layers) == 57
    assert sum(layer.macs_dense for layer in layers) == 1_581_647_872
    # SCNN Table 1 counts 54 conv layers and 1.1 B multiplies: the inception modules alone.
    inception = [layer for layer in layers if layer.name.startswith("inception_")]
    assert len(inception) == 54
    total = sum(layer.macs_dense for layer in inception)
    assert total == 1_103_972_352
    assert abs(total - 1.1e9) / 1.1e9 < 0.05
    by_name = {layer.name: layer for layer in layers}
    assert (by_name["inception_4e/3x3"].c, by_name["inception_4e/3x3"].k) == (160, 320)
    assert {by_name[f"inception_{m}/1x1"].h for m in ("3a", "3b")} == {28}
    assert {by_name[f"inception_{m}/1x1"].h for m in ("4a", "4b", "4c", "4d", "4e")} == {14}
    assert {by_name[f"inception_{m}/5x5"].out_h for m in ("5a", "5b")} == {7}


def test_googlenet_interpolation_is_linear_between_3a_and_5b() -> None:
    by_name = {layer.name: layer for layer in _convs("googlenet")}
    mods = ["3a", "3b", "4a", "4b", "4c", "4d", "4e", "5a", "5b"]
    for typ in ("1x1", "3x3_reduce", "3x3", "5x5_reduce", "5x5", "pool_proj"):
        a0, a1 = (by_name[f"inception_{m}/{typ}"] for m in ("3a", "5b"))
        for i, m in enumerate(mods):
            layer, t = by_name[f"inception_{m}/{typ}"], i / 8
            want_w = a0.weight_density + (a1.weight_density - a0.weight_density) * t
            want_a = a0.activation_density + (a1.activation_density - a0.activation_density) * t
            # the file rounds to 3 decimals (float rounding may go either way at a tie)
            assert layer.weight_density == pytest.approx(want_w, abs=6e-4)
            assert layer.activation_density == pytest.approx(want_a, abs=6e-4)


def test_resnet50_shapes() -> None:
    layers = _convs("resnet50")
    # conv1 + 16 bottlenecks x 3 + 4 projection shortcuts
    assert len(layers) == 53
    assert sum(layer.name.endswith("_branch1") for layer in layers) == 4
    total = sum(layer.macs_dense for layer in layers)
    assert total == 3_855_925_248  # He et al. Table 1: 3.8e9 multiply-adds
    assert abs(total - 3.8e9) / 3.8e9 < 0.05
    last = layers[-1]
    assert (last.name, last.k, last.out_h) == ("res5c_branch2c", 2048, 7)


@pytest.mark.parametrize(
    ("name", "table"),
    [("alexnet", FIG1_ALEXNET), ("vgg16", FIG1_VGG), ("googlenet", FIG1_GOOGLENET)],
)
def test_figure1_densities_exact(name: str, table: dict[str, tuple[float, float]]) -> None:
    by_name = {layer.name: layer for layer in _convs(name)}
    for layer_name, (act, wt) in table.items():
        assert by_name[layer_name].activation_density == act, layer_name
        assert by_name[layer_name].weight_density == wt, layer_name


def test_alexnet_shapes() -> None:
    conv1, conv2, conv3, conv4, conv5 = _convs("alexnet")
    assert (conv1.k, conv1.c, conv1.r, conv1.stride, conv1.out_h) == (96, 3, 11, 4, 55)
    assert (conv2.k, conv2.groups, conv2.pad, conv2.out_h) == (256, 2, 2, 27)
    assert (conv3.k, conv3.groups, conv3.out_h) == (384, 1, 13)
    assert (conv4.groups, conv5.groups, conv5.k) == (2, 2, 256)


# ----------------------------------------------------------------------------- ConvLayer


def _conv(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "c1",
        "kind": "conv",
        "c": 8,
        "k": 16,
        "h": 10,
        "w": 12,
        "r": 3,
        "s": 3,
        "stride": 2,
        "pad": 1,
        "groups": 2,
        "weight_density": 0.5,
        "activation_density": 0.4,
    }
    base.update(over)
    return base


def test_conv_properties() -> None:
    layer = ConvLayer.model_validate(_conv(n=3))
    assert (layer.out_h, layer.out_w) == (5, 6)
    assert layer.weight_shape == (16, 4, 3, 3)
    assert layer.macs_dense == 3 * 16 * 5 * 6 * 4 * 9
    m, n, k = layer.gemm_view
    assert (m, n, k) == (3 * 5 * 6, 8, 36)
    assert layer.groups * m * n * k == layer.macs_dense


def _write(tmp_path: Path, layer: dict[str, Any]) -> Path:
    data = {"schema_version": 1, "name": "t", "source": "test", "layers": [layer]}
    path = tmp_path / "wl.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("over", "field", "words"),
    [
        ({"h": 2, "pad": 0}, "layers.0.h", "output size <= 0"),
        ({"w": 1, "s": 5, "pad": 1}, "layers.0.w", "output size <= 0"),
        ({"c": 6, "groups": 4, "k": 8}, "layers.0.c", "divisible by groups"),
        ({"k": 9}, "layers.0.k", "divisible by groups"),
        ({"weight_density": 1.5}, "layers.0.weight_density", "less than or equal to 1"),
        ({"activation_density": -0.1}, "layers.0.activation_density", "greater than or equal"),
        ({"stride": 0}, "layers.0.stride", "greater than or equal to 1"),
        ({"data": "d", "data_format": "eie"}, "layers.0.data_format", "'npy'"),
        ({"precision": "fp64"}, "layers.0.precision", "fp16"),
        ({"inputs": 4}, "layers.0.inputs", "unknown field"),
        ({"concat_channels": 2}, "layers.0.concat_channels", "below the layer's k"),
        ({"input_max_pool_size": 0}, "layers.0.input_max_pool_size", "greater than or equal"),
        ({"max_pool_size": 100}, "layers.0.max_pool_size", "less than or equal to 64"),
        ({"bias": "maybe"}, "layers.0.bias", "is not a boolean"),
    ],
)
def test_bad_conv_raises_config_error(
    tmp_path: Path, over: dict[str, Any], field: str, words: str
) -> None:
    layer = _conv(**over)
    layer = {k: v for k, v in layer.items() if v is not None}
    path = _write(tmp_path, layer)
    with pytest.raises(ConfigError) as info:
        archsim.load_workload(path)
    err = info.value
    assert err.source == str(path)
    assert err.field == field
    assert words in err.problem


def test_union_still_parses_fc_and_lstm(tmp_path: Path) -> None:
    fc = {"name": "f", "kind": "fc", "inputs": 4, "outputs": 2, "weight_density": 0.5}
    fc["activation_density"] = 1.0
    path = _write(tmp_path, fc)
    assert isinstance(archsim.load_workload(path).layers[0], FcLayer)
    assert "conv" in str(archsim.config.json_schema("workload"))


def test_eie_rejects_conv_layers() -> None:
    with pytest.raises(archsim.SimulationError, match="fc and lstm"):
        archsim.simulate(archsim.load_hardware("tiny_eie"), archsim.load_workload("alexnet"))


# ------------------------------------------------------------------------- materialisation


def test_materialize_exact_counts_and_deterministic() -> None:
    layer = ConvLayer.model_validate(_conv(n=2, weight_density=0.37, activation_density=0.29))
    a = materialize_conv(layer, seed=5)
    b = materialize_conv(layer, seed=5)
    c = materialize_conv(layer, seed=6)
    assert isinstance(a, SparseConv)
    assert a.weights.dtype == np.float32 and a.activations.dtype == np.float32
    assert a.weights.shape == (16, 4, 3, 3) and a.activations.shape == (2, 8, 10, 12)
    assert a.weight_nnz == round(0.37 * 16 * 4 * 9) == 213
    assert a.activation_nnz == round(0.29 * 2 * 8 * 10 * 12) == 557
    assert np.all(a.activations >= 0)
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.activations, b.activations)
    assert not np.array_equal(a.weights, c.weights)
    renamed = materialize_conv(layer.model_copy(update={"name": "other"}), seed=5)
    assert not np.array_equal(a.activations, renamed.activations)


def test_materialize_preset_layer_densities() -> None:
    layer = next(x for x in _convs("vgg16") if x.name == "conv5_3")
    sc = materialize_conv(layer, seed=0)
    assert sc.weight_nnz == round(0.36 * 512 * 512 * 9)
    assert sc.activation_nnz == round(0.31 * 512 * 14 * 14)
    w = sc.weights[sc.weights != 0]
    assert float(w.std()) == pytest.approx(1 / np.sqrt(512 * 9), rel=0.01)  # N(0, 1/sqrt(fan_in))


@pytest.mark.parametrize("density", [0.0, 1.0])
def test_materialize_density_extremes(density: float) -> None:
    layer = ConvLayer.model_validate(_conv(weight_density=density, activation_density=density))
    sc = materialize_conv(layer, seed=1)
    assert sc.weight_density == density and sc.activation_density == density


# --------------------------------------------------------------------------- reference_conv


def _naive(sc: SparseConv) -> np.ndarray:
    """Literal seven-deep loop over the definition (zero padding by bounds checks)."""
    cg, kg = sc.c // sc.groups, sc.k // sc.groups
    out = np.zeros((sc.n, sc.k, sc.out_h, sc.out_w))
    for b in range(sc.n):
        for f in range(sc.k):
            g = f // kg
            for y in range(sc.out_h):
                for x in range(sc.out_w):
                    acc = 0.0
                    for ci in range(cg):
                        for i in range(sc.r):
                            for j in range(sc.s):
                                yy = y * sc.stride + i - sc.pad
                                xx = x * sc.stride + j - sc.pad
                                if 0 <= yy < sc.h and 0 <= xx < sc.w:
                                    a = float(sc.activations[b, g * cg + ci, yy, xx])
                                    acc += float(sc.weights[f, ci, i, j]) * a
                    out[b, f, y, x] = acc
    return out


@pytest.mark.parametrize(
    "over",
    [
        {},  # stride 2, pad 1, groups 2
        {"stride": 1, "pad": 0, "groups": 1},
        {"stride": 3, "pad": 2, "groups": 4, "r": 5, "s": 2, "h": 9, "w": 7},
        {"groups": 8, "k": 8, "r": 1, "s": 1, "pad": 0},
    ],
)
def test_reference_conv_matches_naive_loops(over: dict[str, Any]) -> None:
    layer = ConvLayer.model_validate(_conv(n=2, **over))
    sc = materialize_conv(layer, seed=3)
    got = reference_conv(sc)
    assert got.dtype == np.float64
    assert got.shape == (2, layer.k, layer.out_h, layer.out_w)
    np.testing.assert_allclose(got, _naive(sc), rtol=1e-12, atol=1e-12)
    assert np.count_nonzero(got) > 0
