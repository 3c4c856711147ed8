"""The conv algorithms computed for real agree with the direct convolution (NumPy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from archsim.config.workload import ConvLayer
from archsim.datapath.conv_algorithms import implicit_gemm_conv, winograd_conv
from archsim.workload.conv import materialize_conv, reference_conv


def _tensors(**over: Any):
    spec: dict[str, Any] = {"kind": "conv", "name": "x", "n": 2, "c": 8, "k": 8, "h": 10}
    spec.update({"w": 10, "r": 3, "s": 3, "pad": 1, "weight_density": 0.7})
    spec.update({"activation_density": 0.6, **over})
    layer = ConvLayer(**spec)
    sc = materialize_conv(layer, seed=1)
    return layer, sc, reference_conv(sc)


@pytest.mark.parametrize(
    "over",
    [{}, {"stride": 2, "r": 5, "s": 5, "pad": 2, "groups": 2}, {"r": 1, "s": 1, "pad": 0},
     {"groups": 8}, {"h": 9, "w": 7, "pad": 0}],
)  # fmt: skip
def test_implicit_gemm_gather(over: dict[str, Any]) -> None:
    layer, sc, ref = _tensors(**over)
    out = implicit_gemm_conv(sc.activations, sc.weights, layer.stride, layer.pad, layer.groups)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("over", [{}, {"h": 9, "w": 7, "pad": 0}, {"h": 13, "w": 13}])
def test_winograd_transforms(tile: int, over: dict[str, Any]) -> None:
    """Output sizes that are not multiples of the tile pad the last tiles and crop them."""
    layer, sc, ref = _tensors(**over)
    out = winograd_conv(sc.activations, sc.weights, layer.pad, tile)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-11)
