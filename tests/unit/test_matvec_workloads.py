"""Synthetic matrix-vector layers: the fast paths against plain NumPy formulations."""

from __future__ import annotations

import numpy as np
import pytest

from archsim.workload import layer_rng, quantize_to_codebook, synthetic_matvec
from archsim.workload.materialize import _bernoulli_positions, _geometric_by_inversion


@pytest.mark.parametrize("entries", [2, 4, 16, 64, 256])
def test_codes_name_the_nearest_centroid(entries):
    values = np.random.default_rng(entries).standard_normal(50_000).astype(np.float32)
    codebook, codes = quantize_to_codebook(values, entries, np.random.default_rng(0))
    centroids = codebook[1:].astype(np.float64)
    mids = ((centroids[1:] + centroids[:-1]) / 2.0).astype(np.float32)
    below = (values[:, None] > mids[None, :]).sum(axis=1)  # midpoints below each value
    assert codes.dtype == np.uint8
    assert np.array_equal(codes, below + 1)
    nearest = np.abs(values[:, None] - centroids[None, :]).argmin(axis=1) + 1
    assert np.mean(codes == nearest) > 0.9999, "codes disagree with |v - c| argmin"


@pytest.mark.parametrize("p", [1e-9, 3.7e-6, 0.001, 0.04, 0.09, 0.25, np.nextafter(1 / 3, 0)])
@pytest.mark.parametrize("seed", [0, 7])
def test_geometric_gaps_are_numpys_bit_for_bit(p, seed):
    # whole-array inversion in place of NumPy's per-value draw: the same gaps from the same
    # stream, and the generator left where NumPy leaves it
    ours_rng, numpy_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    ours = _geometric_by_inversion(ours_rng, p, 100_000)
    assert ours.dtype == np.int64
    assert np.array_equal(ours, numpy_rng.geometric(p, size=100_000))
    assert ours_rng.integers(1 << 62) == numpy_rng.integers(1 << 62)


@pytest.mark.parametrize("density", [1e-10, 0.01, 0.2, 1 / 3, 0.6])
def test_positions_are_those_of_numpys_geometric_gaps(density):
    # the kept positions as drawn before the inversion (rng.geometric, cut at the total)
    total = 2_000_003 if density > 1e-6 else 1 << 40
    rng = layer_rng(3, "gaps")
    mean = total * density
    gaps = rng.geometric(density, size=int(mean + 6.0 * np.sqrt(mean) + 16))
    gaps = np.minimum(gaps, total + 1).cumsum() - 1
    expected = gaps[gaps < total]
    assert gaps[-1] >= total  # one chunk of draws reaches the total at these sizes
    assert np.array_equal(_bernoulli_positions(layer_rng(3, "gaps"), total, density), expected)


@pytest.mark.parametrize(("rows", "cols", "density"), [(97, 53, 0.08), (5, 400, 0.5), (64, 1, 1.0)])
def test_csc_arrays_hold_the_drawn_positions(rows, cols, density):
    layer = synthetic_matvec("csc", rows, cols, density, 0.5, True, seed=11)
    pos = _bernoulli_positions(layer_rng(11, "csc"), rows * cols, density)
    assert layer.indptr.dtype == np.int64 and layer.row_idx.dtype == np.int32
    assert np.array_equal(
        layer.indptr, np.r_[0, np.cumsum(np.bincount(pos // rows, minlength=cols))]
    )
    assert np.array_equal(layer.row_idx, pos % rows)
    assert layer.nnz == pos.size and layer.codes.size == pos.size
