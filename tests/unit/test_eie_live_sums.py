"""EIE's compiled sums over the live weights equal their NumPy twins bit for bit.

``accelerators.eie`` takes the functional check's float reference, the partial-sum bound that
sets the fixed point, and the fixed-point error bound from one compiled pass each
(``datapath.eie_kernels.live_sums`` / ``live_error_sums``); the NumPy versions below (and
``QuantizedMatVec.reference_output`` / ``abs_bound``) are ``np.bincount`` over the live entries.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from archsim.accelerators.eie import functional_error_bound, layer_sums
from archsim.workload import synthetic_matvec
from archsim.workload.sparse import QuantizedMatVec


def _numpy_error_bound(lay: QuantizedMatVec, out_frac: int, w_frac: int, a_frac: int):
    """The error bound as array operations (the code the compiled pass replaced)."""
    lsb_o, lsb_w, lsb_a = 2.0**-out_frac, 2.0**-w_frac, 2.0**-a_frac
    idx, cols = lay.live_entries()
    per = np.abs(lay.activations.astype(np.float64))[cols]
    per *= 0.5 * lsb_w
    per += 0.5 * lsb_o
    w = np.abs(lay.codebook.astype(np.float64))[lay.codes[idx]]
    w *= 0.5 * lsb_a
    per += w
    per += 0.25 * lsb_w * lsb_a
    bound = np.bincount(lay.row_idx[idx], weights=per, minlength=lay.n_rows)
    bias_w = np.abs(lay.codebook.astype(np.float64))[lay.bias_codes]
    return bound + (lay.bias_codes > 0) * (0.5 * lsb_o + 0.5 * lsb_w + 0.5 * lsb_a * bias_w)


def _signed(layer: QuantizedMatVec, rng: np.random.Generator) -> QuantizedMatVec:
    """``layer`` with activations of both signs and some exact zeros (-0.0 included)."""
    act = rng.standard_normal(layer.n_cols).astype(np.float32)
    act[rng.random(layer.n_cols) < 0.3] = 0.0
    act[rng.random(layer.n_cols) < 0.05] = -0.0
    return QuantizedMatVec(
        layer.name, layer.n_rows, layer.n_cols, layer.indptr, layer.row_idx, layer.codes,
        layer.codebook, layer.bias_codes, act,
    )  # fmt: skip


CASES = [  # rows, cols, weight density, activation density, bias
    (1, 1, 1.0, 1.0, True),
    (7, 300, 0.3, 0.5, False),
    (300, 7, 0.9, 1.0, True),
    (64, 64, 0.0, 0.5, True),  # no weights: the bias alone
    (50, 80, 0.5, 0.0, True),  # no live weights
    (1000, 1200, 0.1, 0.35, True),
    (257, 513, 0.6, 0.9, False),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("rows", "cols", "wd", "ad", "bias"), CASES)
def test_live_sums_match_numpy(rows, cols, wd, ad, bias, seed):
    layer = synthetic_matvec(f"L{rows}x{cols}", rows, cols, wd, ad, bias, seed)
    layers = [layer, _signed(layer, np.random.default_rng(seed))]
    for lay in layers:
        ref, absum = layer_sums(lay)
        want_ref, want_abs = lay.reference_output(), lay.abs_bound()
        assert np.array_equal(ref, want_ref), (
            f"reference: max |diff| {np.max(np.abs(ref - want_ref), initial=0.0):.3g}"
        )
        assert np.array_equal(absum, want_abs), (
            f"abs bound: max |diff| {np.max(np.abs(absum - want_abs), initial=0.0):.3g}"
        )
        assert layer_sums(lay)[0] is ref  # computed once per layer object
        for fracs in [(12, 8, 10), (3, 15, 0), (20, 1, 7)]:
            fp = dict(zip(("out_frac", "weight_frac", "act_frac"), fracs, strict=True))
            run = SimpleNamespace(layer=lay, fixed_point=SimpleNamespace(**fp))
            got, want = functional_error_bound(run), _numpy_error_bound(lay, *fracs)
            assert np.array_equal(got, want), (
                f"error bound {fracs}: max |diff| {np.max(np.abs(got - want), initial=0.0):.3g}"
            )
    assert np.any(layer_sums(layers[0])[1] > 0) == bool(layer.nnz * ad or bias)
