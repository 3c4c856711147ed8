"""Synthetic matrix-vector layers: the fast paths against plain NumPy formulations."""

from __future__ import annotations

import numpy as np
import pytest

from archsim.workload import layer_rng, quantize_to_codebook, synthetic_matvec
from archsim.workload.materialize import _bernoulli_positions


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
