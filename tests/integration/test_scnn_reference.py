"""The fast SCNN kernel equals the literal per-cycle array twin and a NumPy convolution."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from archsim.datapath.scnn_kernels import SCNN_PE_FIELDS, scnn_layer
from archsim.datapath.scnn_prepare import compress_activations, compress_weights, scnn_tiling
from archsim.datapath.scnn_reference import scnn_reference

SEEN = dict.fromkeys(("conflicts", "issue_stalls", "dropped", "placeholders", "saturating"), 0)


def _numpy_conv(aq, wq, stride, pad):
    k_n, _, r, s = wq.shape
    ap = np.pad(aq, ((0, 0), (pad, pad), (pad, pad)))
    oh = (ap.shape[1] - r) // stride + 1
    ow = (ap.shape[2] - s) // stride + 1
    out = np.zeros((k_n, oh, ow), dtype=np.int64)
    for oy in range(oh):
        for ox in range(ow):
            patch = ap[:, oy * stride : oy * stride + r, ox * stride : ox * stride + s]
            out[:, oy, ox] = np.tensordot(wq, patch, axes=([1, 2, 3], [0, 1, 2]))
    return out


# more than 64 banks: the arbitration keeps its grants in an array instead of a 64-bit mask
_WIDE = dict(c=3, k=6, h=9, w=9, r=3, s=3, stride=1, pad=1, px=2, py=2, f=4, i_vec=4)
_WIDE.update(depth=1, kc_frac=1.0, wd=1.0, ad=1.0, index_bits=2, seed=7)


@example(**_WIDE, banks=96)
@example(**_WIDE, banks=65)
# the bit-mask phase at its limits: 64 inputs and 64 banks (bit 63 of every mask), 40 inputs
# (priority order in two parts), depth 1; depth 3 runs the general phase
@example(**{**_WIDE, "f": 8, "i_vec": 8, "depth": 2}, banks=64)
@example(**{**_WIDE, "f": 8, "i_vec": 5, "depth": 1}, banks=40)
@example(**{**_WIDE, "f": 8, "i_vec": 8, "depth": 3}, banks=64)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    c=st.integers(1, 3),
    k=st.integers(1, 6),
    h=st.integers(3, 9),
    w=st.integers(3, 9),
    r=st.integers(1, 3),
    s=st.integers(1, 3),
    stride=st.integers(1, 2),
    pad=st.integers(0, 1),
    px=st.integers(1, 3),
    py=st.integers(1, 3),
    f=st.integers(1, 4),
    i_vec=st.integers(1, 4),
    banks=st.integers(1, 8),
    depth=st.integers(1, 3),
    kc_frac=st.floats(0.0, 1.0),
    wd=st.sampled_from([0.3, 0.7, 1.0]),
    ad=st.sampled_from([0.1, 0.3, 0.7, 1.0]),
    index_bits=st.sampled_from([None, 1, 2, 4]),
    seed=st.integers(0, 2**16),
)
def test_fast_equals_reference_and_numpy(
    c,
    k,
    h,
    w,
    r,
    s,
    stride,
    pad,
    px,
    py,
    f,
    i_vec,
    banks,
    depth,
    kc_frac,
    wd,
    ad,
    index_bits,
    seed,
):
    _compare(
        c,
        k,
        h,
        w,
        r,
        s,
        stride,
        pad,
        px,
        py,
        f,
        i_vec,
        banks,
        depth,
        kc_frac,
        wd,
        ad,
        index_bits,
        seed,
        0,
        40,
    )


def _compare(
    c,
    k,
    h,
    w,
    r,
    s,
    stride,
    pad,
    px,
    py,
    f,
    i_vec,
    banks,
    depth,
    kc_frac,
    wd,
    ad,
    index_bits,
    seed,
    shift,
    acc_bits,
):
    """Run one random layer on the fast kernel and the per-cycle twin; assert equality."""
    rng = np.random.default_rng(seed)
    wq = (rng.integers(-50, 50, (k, c, r, s)) * (rng.random((k, c, r, s)) < wd)).astype(np.int64)
    aq = (rng.integers(1, 60, (c, h, w)) * (rng.random((c, h, w)) < ad)).astype(np.int64)
    kc = 1 + int(kc_frac * (k - 1))
    tl = scnn_tiling(w, h, r, s, stride, pad, px, py)
    a_ptr, ax, ay, av = compress_activations(aq, tl, index_bits)
    w_ptr, wk, wr, ws, wv, groups = compress_weights(wq, kc, index_bits)
    out = np.zeros((k, tl.out_h, tl.out_w), dtype=np.int64)
    args = (tl.win_x0, tl.win_y0, tl.win_w, tl.win_h, tl.out_w, tl.out_h, stride, pad)
    stats = scnn_layer(
        groups,
        kc,
        c,
        tl.n_pes,
        a_ptr,
        ax,
        ay,
        av,
        w_ptr,
        wk,
        wr,
        ws,
        wv,
        *args,
        f,
        i_vec,
        banks,
        depth,
        shift,
        acc_bits,
        out,
    )
    n = tl.n_pes
    acts = [
        [
            list(
                zip(
                    ax[a_ptr[ch * n + p] : a_ptr[ch * n + p + 1]].tolist(),
                    ay[a_ptr[ch * n + p] : a_ptr[ch * n + p + 1]].tolist(),
                    av[a_ptr[ch * n + p] : a_ptr[ch * n + p + 1]].tolist(),
                    strict=True,
                )
            )
            for ch in range(c)
        ]
        for p in range(n)
    ]
    wts = [
        [
            list(
                zip(
                    *(
                        arr[w_ptr[g * c + ch] : w_ptr[g * c + ch + 1]].tolist()
                        for arr in (wk, wr, ws, wv)
                    ),
                    strict=True,
                )
            )
            for ch in range(c)
        ]
        for g in range(groups)
    ]
    ref = scnn_reference(
        acts, wts, groups, kc, *args[:6], k, stride, pad, f, i_vec, banks, depth, shift, acc_bits
    )
    refs = (
        ref.phase_cycles,
        ref.issues,
        ref.multiplies,
        ref.products,
        ref.issue_stalls,
        ref.conflicts,
    )
    for name, fast, slow in zip(SCNN_PE_FIELDS, stats, refs, strict=True):
        assert np.array_equal(fast, slow), f"{name}: fast {fast.tolist()} != ref {slow.tolist()}"
    assert ref.total_cycles == int(stats[0].max(axis=1).sum())
    assert np.array_equal(out, ref.output)
    if acc_bits >= 40 and shift == 0:
        assert np.array_equal(out, _numpy_conv(aq, wq, stride, pad))
    SEEN["conflicts"] += int(stats[5].sum())
    SEEN["issue_stalls"] += int(stats[4].sum())
    SEEN["dropped"] += int(stats[2].sum() - stats[3].sum())
    SEEN["placeholders"] += int((av == 0).sum() + (wv == 0).sum())
    return out


# narrow accumulators: phases that may saturate keep the product values in the FIFOs, the others
# take the timing-only phase; both in one layer must equal the twin (which saturates every add)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    k=st.integers(1, 6),
    f=st.integers(1, 8),
    i_vec=st.integers(1, 4),
    banks=st.integers(1, 16),
    depth=st.integers(1, 2),
    kc_frac=st.floats(0.0, 1.0),
    shift=st.integers(-1, 3),
    acc_bits=st.integers(8, 16),
    seed=st.integers(0, 2**16),
)
def test_saturating_accumulators_equal_reference(
    k, f, i_vec, banks, depth, kc_frac, shift, acc_bits, seed
):
    layer = (3, k, 8, 8, 3, 3, 1, 1, 2, 2, f, i_vec, banks, depth, kc_frac, 0.7, 0.7, 2, seed)
    narrow = _compare(*layer, shift, acc_bits)
    if not np.array_equal(narrow, _compare(*layer, shift, 40)):
        SEEN["saturating"] += 1


# the 16-input timing phase (scnn_sum16; F * I = 16, A <= 63) of the no-saturation path: the
# published 4 x 4 shape and its 1 x 16 and 2 x 8 variants, banks up to 63 (bit 63 of the grant
# mask is its empty-slot marker), both FIFO depths, placeholders and border tiles
@example(f=4, banks=63, depth=2, h=9, w=9, ad=1.0, wd=1.0, index_bits=None, seed=1)
@example(f=4, banks=32, depth=1, h=9, w=9, ad=0.7, wd=0.7, index_bits=1, seed=2)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    f=st.sampled_from([1, 2, 4]),
    banks=st.integers(1, 63),
    depth=st.integers(1, 2),
    h=st.integers(3, 9),
    w=st.integers(3, 9),
    ad=st.sampled_from([0.1, 0.3, 0.7, 1.0]),
    wd=st.sampled_from([0.3, 0.7, 1.0]),
    index_bits=st.sampled_from([None, 1, 2, 4]),
    seed=st.integers(0, 2**16),
)
def test_sixteen_input_phase_equals_reference(f, banks, depth, h, w, ad, wd, index_bits, seed):
    rng = np.random.default_rng(seed)
    c, k, r, s = (int(v) for v in rng.integers(1, 4, size=4))
    k += int(rng.integers(0, 4))
    px, py = (int(v) for v in rng.integers(1, 4, size=2))
    pad = int(rng.integers(0, 2))
    kc_frac = float(rng.random())
    layer = (c, k, h, w, r, s, 1, pad, px, py, f, 16 // f, banks, depth, kc_frac, wd, ad)
    _compare(*layer, index_bits, seed, 0, 40)


def test_placeholder_rule():
    """A run of more than 2**bits - 1 zeros needs one placeholder per 2**bits positions."""
    tl = scnn_tiling(20, 1, 1, 1, 1, 0, 1, 1)
    aq = np.zeros((1, 1, 20), dtype=np.int64)
    aq[0, 0, [0, 17]] = 5  # 16 zeros between them
    ptr, x, _, v = compress_activations(aq, tl, index_bits=4)
    assert v.tolist() == [5, 0, 5] and ptr.tolist() == [0, 3]
    assert compress_activations(aq, tl, index_bits=None)[3].tolist() == [5, 5]


def test_property_cases_exercised_conflicts_stalls_and_dropped_products():
    assert all(v > 0 for v in SEEN.values()), SEEN
