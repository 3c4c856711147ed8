"""Strided SCNN layers, phase-split, run as unit-stride ones on their phases' sub-grids.

``accelerators.scnn`` splits a strided conv into stride^2 virtual channels per channel
(``_phase_split``) and then hands the kernel the activations and filter taps in each phase's
own coordinates (``_phase_grid`` / ``_phase_taps``) with stride 1 and no padding, so that the
fast unit-stride phases run instead of the general strided one. The general strided kernel is
the one the per-cycle twin proves (``test_scnn_reference``); this holds the unit-stride run of
the same operands to it: every per-(group, PE) counter and every output equal.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from archsim.accelerators.scnn import (
    _channels_with_weights,
    _kept_lists,
    _phase_grid,
    _phase_split,
    _phase_taps,
)
from archsim.datapath.scnn_kernels import scnn_layer
from archsim.datapath.scnn_prepare import compress_activations, compress_weights, scnn_tiling


def _run(tl, kc, vc, groups, acts, weights, stride, pad, out, f, i_vec, banks, depth):
    a_ptr, ax, ay, av = acts
    w_ptr, wk, wr, ws, wv = weights
    return scnn_layer(
        groups, kc, vc, tl.n_pes, a_ptr, ax, ay, av, w_ptr, wk, wr, ws, wv,
        tl.win_x0, tl.win_y0, tl.win_w, tl.win_h, tl.out_w, tl.out_h, stride, pad,
        f, i_vec, banks, depth, 0, 40, out,
    )  # fmt: skip


@example(
    c=3,
    k=5,
    h=11,
    w=9,
    r=1,
    s=1,
    stride=2,
    pad=0,
    px=3,
    py=2,
    f=4,
    i_vec=4,
    banks=8,
    depth=2,
    kc_frac=0.5,
    wd=0.7,
    ad=0.6,
    index_bits=2,
    seed=11,
)  # 3 of 4 phases empty
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    c=st.integers(1, 3),
    k=st.integers(1, 6),
    h=st.integers(4, 13),
    w=st.integers(4, 13),
    r=st.integers(1, 5),
    s=st.integers(1, 5),
    stride=st.integers(2, 4),
    pad=st.integers(0, 2),
    px=st.integers(1, 3),
    py=st.integers(1, 3),
    f=st.integers(1, 4),
    i_vec=st.integers(1, 4),
    banks=st.integers(1, 16),
    depth=st.integers(1, 2),
    kc_frac=st.floats(0.0, 1.0),
    wd=st.sampled_from([0.3, 0.7, 1.0]),
    ad=st.sampled_from([0.2, 0.6, 1.0]),
    index_bits=st.sampled_from([None, 1, 2, 4]),
    seed=st.integers(0, 2**16),
)
def test_phase_grid_unit_stride_equals_the_strided_kernel(
    c, k, h, w, r, s, stride, pad, px, py, f, i_vec, banks, depth, kc_frac, wd, ad,
    index_bits, seed,
):  # fmt: skip
    if r > h + 2 * pad or s > w + 2 * pad:
        return  # no output
    rng = np.random.default_rng(seed)
    wq = (rng.integers(-50, 50, (k, c, r, s)) * (rng.random((k, c, r, s)) < wd)).astype(np.int64)
    aq = (rng.integers(1, 60, (c, h, w)) * (rng.random((c, h, w)) < ad)).astype(np.int64)
    w_split, a_split = _phase_split(wq, aq, stride, pad)
    vc = a_split.shape[0]
    kc = 1 + int(kc_frac * (k - 1))
    tl = scnn_tiling(w, h, r, s, stride, pad, px, py)
    acts = compress_activations(a_split, tl, index_bits, stride)
    w_ptr, wk, wr, ws, wv, groups = compress_weights(w_split, kc, index_bits, stride)
    weights = (w_ptr, wk, wr, ws, wv)
    geometry = (f, i_vec, banks, depth)
    strided = np.zeros((k, tl.out_h, tl.out_w), dtype=np.int64)
    expect = _run(tl, kc, vc, groups, acts, weights, stride, pad, strided, *geometry)
    a_ptr, ax, ay, av = acts
    gx, gy = _phase_grid(ax, ay, a_ptr, tl.n_pes, stride, pad)
    tr, ts = _phase_taps(wr, ws, w_ptr, vc, stride)
    unit = np.zeros_like(strided)
    got = _run(tl, kc, vc, groups, (a_ptr, gx, gy, av), (w_ptr, wk, tr, ts, wv), 1, 0, unit,
               *geometry)  # fmt: skip
    np.testing.assert_array_equal(got, expect)
    np.testing.assert_array_equal(unit, strided)
    # the kernel need not walk the channels no group has weights in (a PE skips them freely)
    kept = _channels_with_weights(w_ptr, groups, vc)
    if kept is not None:
        ka = _kept_lists(a_ptr, (kept[:, None] * tl.n_pes + np.arange(tl.n_pes)).ravel(),
                         gx, gy, av)  # fmt: skip
        kw = _kept_lists(w_ptr, (np.arange(groups)[:, None] * vc + kept).ravel(), wk, tr, ts, wv)
        fewer = np.zeros_like(strided)
        same = _run(tl, kc, kept.size, groups, ka, kw, 1, 0, fewer, *geometry)
        np.testing.assert_array_equal(same, expect)
        np.testing.assert_array_equal(fewer, strided)
    # every entry (placeholders too) sits exactly on its channel's phase: no rounding
    phase = np.repeat(np.arange(a_ptr.size - 1) // tl.n_pes, np.diff(a_ptr)) % stride**2
    np.testing.assert_array_equal(ax + pad - gx * stride, phase % stride)
    np.testing.assert_array_equal(ay + pad - gy * stride, phase // stride)
