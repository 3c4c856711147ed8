"""A conv's data gradient as forward convs (``archsim.system.conv_phases``): shapes against the
adjoint of the forward conv, computed by brute force, and the NumPy gradient itself."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from archsim.config.workload import ConvLayer
from archsim.results import LayerResult
from archsim.system.conv_phases import dgrad_convs, empty_phase_fraction, merged_result


def _conv(**kw: int) -> ConvLayer:
    base = {"kind": "conv", "name": "c", "n": 2, "c": 3, "k": 4, "h": 9, "w": 9, "r": 3,
            "s": 3, "stride": 1, "pad": 1}  # fmt: skip
    return ConvLayer.model_validate(base | kw)


def _taps_per_phase(spec: ConvLayer) -> list[tuple[int, int]]:
    """Brute force: for each phase (py, px) of dX, the filter rows and columns whose products
    land on it -- r with (py + pad - r) % stride == 0, likewise s (the forward conv's adjoint:
    y[oy] += x[oy * stride + r - pad] * w[r])."""
    st, p = spec.stride, spec.pad
    out = []
    for py, px in itertools.product(range(st), repeat=2):
        tr = sum((py + p - r) % st == 0 for r in range(spec.r))
        ts = sum((px + p - s) % st == 0 for s in range(spec.s))
        if tr and ts:
            out.append((tr, ts))
    return sorted(out)


SHAPES = [
    {},
    {"r": 1, "s": 1, "pad": 0},
    {"r": 5, "s": 5, "pad": 2},
    {"r": 5, "s": 20, "pad": 0, "h": 30, "w": 40},  # DeepSpeech-like: padding differs per axis
    {"r": 3, "s": 3, "pad": 3},  # pad past r - 1: the data gradient crops dY
    {"r": 11, "s": 11, "pad": 6, "h": 1, "w": 1},  # dY smaller than the filter (a fuzz case)
    {"r": 7, "s": 3, "pad": 2, "h": 3, "w": 5},
    {"stride": 2},
    {"stride": 2, "r": 1, "s": 1, "pad": 0},
    {"stride": 2, "r": 5, "s": 5, "pad": 2, "h": 20, "w": 20},
    {"stride": 2, "r": 7, "s": 7, "pad": 3, "h": 32, "w": 32},
    {"stride": 3, "r": 5, "s": 3, "pad": 1, "h": 17, "w": 17},
    {"groups": 2, "c": 4, "k": 6},
]


@pytest.mark.parametrize("kw", SHAPES)
def test_dgrad_phases_are_the_adjoints_taps(kw: dict) -> None:
    spec = _conv(**kw)
    convs = [ConvLayer.model_validate(d) for d in dgrad_convs(spec, spec.n, spec.k, "fp16",
                                                                "nhwc")]  # fmt: skip
    assert all(c.stride == 1 and c.c == spec.k and c.k == spec.c for c in convs)
    assert all(c.groups == spec.groups and c.n == spec.n for c in convs)
    if spec.stride == 1:
        (c,) = convs
        assert c.name == "c/dgrad"
        assert (c.out_h, c.out_w) == (spec.h, spec.w), "dX has the input's size"
        assert (c.r, c.s) == (spec.r, spec.s)
    else:
        assert sorted((c.r, c.s) for c in convs) == _taps_per_phase(spec)
        qh, qw = -(-spec.h // spec.stride), -(-spec.w // spec.stride)
        assert all((c.out_h, c.out_w) == (qh, qw) for c in convs)
        names = [f"c/dgrad.{i}" for i in range(len(convs))] if len(convs) > 1 else ["c/dgrad"]
        assert [c.name for c in convs] == names
    empty = 1 - len(_taps_per_phase(spec)) / spec.stride**2
    assert empty_phase_fraction(spec) == pytest.approx(empty)
    # the products: every dX pixel with every tap of its phase, as implicit GEMM computes
    # them (taps that fall on dY's padding included)
    macs = sum(c.macs_dense for c in convs)
    every = spec.n * spec.h * spec.w * spec.c * spec.k // spec.groups * spec.r * spec.s
    if spec.stride == 1:
        assert macs == every
        if spec.pad == (spec.r - 1) // 2 and spec.r == spec.s:
            assert macs == spec.macs_dense, "a 'same' conv's data gradient has its forward's MACs"
    else:  # no product with an inserted zero: 1 / stride^2 of them, up to the phases' edges
        assert macs == pytest.approx(every / spec.stride**2, rel=0.3), (macs, every)


def _forward(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    y = np.zeros((n, k, oh, ow))
    for i, j in itertools.product(range(r), range(s)):
        patch = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
        y += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return y


@pytest.mark.parametrize("kw", [{}, {"pad": 0}, {"r": 5, "s": 5, "pad": 2}])
def test_stride_one_dgrad_conv_computes_the_gradient(kw: dict) -> None:
    """The stride-1 data gradient conv (dY padded by R - 1 - pad, filters flipped and their
    channels swapped) equals the gradient of the forward conv, found by the adjoint identity
    <conv(x), dy> = <x, dx> for every x (NumPy, float64)."""
    spec = _conv(**kw)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((spec.k, spec.c, spec.r, spec.s))
    dy = rng.standard_normal((spec.n, spec.k, spec.out_h, spec.out_w))
    (d,) = dgrad_convs(spec, spec.n, spec.k, "fp16", "nhwc")
    wt = np.flip(w, axis=(2, 3)).transpose(1, 0, 2, 3)  # (C, K, R, S)
    dx = _forward(dy, wt, 1, d["pad"])
    assert dx.shape == (spec.n, spec.c, spec.h, spec.w)
    # the adjoint: dx . e_i = dy . conv(e_i) for every unit input e_i
    ref = np.zeros_like(dx)
    for idx in itertools.product(*(range(v) for v in dx.shape)):
        e = np.zeros(dx.shape)
        e[idx] = 1.0
        ref[idx] = float(np.sum(_forward(e, w, spec.stride, spec.pad) * dy))
    np.testing.assert_allclose(dx, ref, rtol=1e-12, atol=1e-12)


def _result(name: str, cycles: int, util: float) -> LayerResult:
    return LayerResult(
        layer=name, kind="conv", cycles=cycles, time_s=cycles * 1e-9, macs_dense=10 * cycles,
        macs_effective=10 * cycles, utilization=util, energy_pj=2.0 * cycles, power_w=0.0,
        dram_bytes=cycles, start_cycle=0, end_cycle=cycles,
        energy_by_component_pj={"mma": 1.0 * cycles, "hbm": 1.0 * cycles},
        counts={"hbm": {"read_bytes": cycles}},
        extras={"tc_sm_cycles": cycles, "tc_conv_kernels": 1},
    )  # fmt: skip


def test_merged_result_sums_the_phases() -> None:
    m = merged_result([_result("c/dgrad.0", 100, 0.5), _result("c/dgrad.1", 300, 0.9)], "c/dgrad")
    assert (m.layer, m.cycles, m.macs_dense, m.dram_bytes) == ("c/dgrad", 400, 4000, 400)
    assert m.time_s == pytest.approx(400e-9)
    assert m.energy_pj == pytest.approx(800.0)
    assert m.energy_by_component_pj == {"mma": 400.0, "hbm": 400.0}
    assert m.counts == {"hbm": {"read_bytes": 400}}
    assert m.utilization == pytest.approx((0.5 * 100 + 0.9 * 300) / 400)
    assert m.extras["tc_sm_cycles"] == 400 and m.extras["tc_conv_kernels"] == 2
    assert m.power_w == pytest.approx(800e-12 / 400e-9)
    one = merged_result([_result("c/dgrad", 100, 0.5)], "c/dgrad")
    assert one == _result("c/dgrad", 100, 0.5)
