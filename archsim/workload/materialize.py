"""Deterministic synthetic tensors: a layer depends only on (seed, layer name, spec)."""

from __future__ import annotations

import math
import zlib

import numpy as np

from archsim.workload.sparse import QuantizedMatVec

__all__ = ["layer_rng", "synthetic_matvec", "quantize_to_codebook"]


def layer_rng(seed: int, layer_name: str) -> np.random.Generator:
    """PCG64 generator seeded from (seed, crc32(layer name)); independent of process and order."""
    return np.random.default_rng(
        np.random.SeedSequence([int(seed), zlib.crc32(layer_name.encode())])
    )


#: below this density a geometric gap can exceed int64 (numpy returns INT64_MAX) and their
#: running sum wrap around: gaps are then cut to ``total + 1``, which ends the draw the same way
_TINY_DENSITY = 1e-9


#: NumPy's ``Generator.geometric`` draws ``ceil(-E / log1p(-p))`` from one standard exponential
#: E (ziggurat) per value below this ``p``, and searches a uniform from it up
#: (``random_geometric`` in numpy/random/src/distributions/distributions.c)
_INVERSION_BELOW = 0.333333333333333333333333


def _geometric_by_inversion(rng: np.random.Generator, p: float, n: int) -> np.ndarray:
    """``rng.geometric(p, size=n)`` for ``_TINY_DENSITY <= p < _INVERSION_BELOW``, bit for bit
    and from the same stream, as whole-array operations: the exponentials drawn at once and the
    logarithm taken once, where NumPy takes it for each value (0.27 of the nine EIE layers'
    0.65 s build; 0.12 s this way), and the integers written over the floats they come from
    (an int64 view of the same buffer: no second array, 33 MB for VGG-16's FC6).
    ``math.log1p`` is the C library's ``log1p``, as NumPy's ``npy_log1p``; negating a quotient
    is exact. At these ``p`` no gap reaches int64's limit (E < 800, so < 8e11)."""
    gaps = rng.standard_exponential(n)
    gaps /= -math.log1p(-p)
    np.ceil(gaps, out=gaps)
    whole = gaps.view(np.int64)
    np.copyto(whole, gaps, casting="unsafe")  # element by element, each in its own place
    return whole


def _bernoulli_positions(rng: np.random.Generator, total: int, density: float) -> np.ndarray:
    """Sorted positions in [0, total) each kept independently with probability ``density``.

    Uses geometric gaps, so the cost is O(kept) rather than O(total).
    """
    if density <= 0.0 or total == 0:
        return np.zeros(0, dtype=np.int64)
    if density >= 1.0:
        return np.arange(total, dtype=np.int64)
    mean = total * density
    chunks: list[np.ndarray] = []
    last = -1
    while True:
        n = int(mean + 6.0 * np.sqrt(mean) + 16)
        if _TINY_DENSITY <= density < _INVERSION_BELOW:
            pos = _geometric_by_inversion(rng, density, n)
        else:
            pos = rng.geometric(density, size=n).astype(np.int64, copy=False)
        if density < _TINY_DENSITY:  # gaps beyond ``total`` (or int64) end the draw alike
            np.minimum(pos, total + 1, out=pos)
        np.cumsum(pos, out=pos)
        pos += last
        chunks.append(pos[: np.searchsorted(pos, total)])  # positions rise
        if pos[-1] >= total:
            break
        last = int(pos[-1])
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _csc_from_positions(pos: np.ndarray, n_rows: int, n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr int64, row indices int32) of rising column-major positions ``col * n_rows + row``."""
    starts = np.arange(n_cols + 1, dtype=np.int64) * n_rows
    indptr = np.searchsorted(pos, starts).astype(np.int64, copy=False)
    # the row is the position modulo n_rows, written straight into int32 (exact: < n_rows): no
    # temporary, where repeating each column index and subtracting took three int64 arrays
    # (VGG-16 FC6's 4.1 M weights: 100 MB)
    rows = np.empty(pos.size, dtype=np.int32)
    if pos.size:
        np.remainder(pos, n_rows, out=rows, casting="unsafe")
    return indptr, rows


def quantize_to_codebook(
    values: np.ndarray, entries: int, rng: np.random.Generator, iterations: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Weight sharing as in Deep Compression: linear init + Lloyd iterations (on a sample).

    Returns (codebook float32 with ``codebook[0] == 0``, codes uint8 in 1..entries-1).
    """
    levels = entries - 1
    vmin, vmax = float(values.min()), float(values.max())
    if vmax == vmin:
        vmax = vmin + 1e-3
    centroids = np.linspace(vmin, vmax, levels)
    sample = values if values.size <= 65536 else rng.choice(values, 65536, replace=False)
    sample = sample.astype(np.float64)
    for _ in range(iterations):
        idx = _nearest(sample, centroids)
        sums = np.bincount(idx, weights=sample, minlength=levels)
        counts = np.bincount(idx, minlength=levels)
        centroids = np.where(counts > 0, sums / np.maximum(counts, 1), centroids)
        centroids.sort()
    # keep 0 reserved for zero weights: nudge an exactly-zero centroid
    centroids[centroids == 0.0] = 1e-6
    codes = _nearest(values.astype(np.float32, copy=False), centroids, 1, np.uint8)
    codebook = np.concatenate([[0.0], centroids]).astype(np.float32)
    return codebook, codes


def _nearest(
    values: np.ndarray, sorted_centroids: np.ndarray, first: int = 0, dtype: type = np.int64
) -> np.ndarray:
    """``first`` + index of the nearest centroid, as ``dtype``: the count of midpoints below
    each value (ties go down)."""
    mids = ((sorted_centroids[1:] + sorted_centroids[:-1]) / 2.0).astype(values.dtype)
    if mids.size > 32:
        return (np.searchsorted(mids, values) + first).astype(dtype)
    idx = np.full(values.shape, first, dtype=dtype)
    for m in mids:  # a few vectorised passes beat searchsorted's per-element overhead
        idx += values > m
    return idx


def synthetic_matvec(
    name: str,
    n_rows: int,
    n_cols: int,
    weight_density: float,
    activation_density: float,
    bias: bool,
    seed: int,
    codebook_entries: int = 16,
) -> QuantizedMatVec:
    """Pruned (uniform positions), weight-shared W and a non-negative activation vector.

    Each weight is kept independently with probability ``weight_density`` (values N(0, 1/n_cols)
    before quantisation); exactly ``round(activation_density * n_cols)`` activations are > 0
    (half-normal values).
    """
    rng = layer_rng(seed, name)
    pos = _bernoulli_positions(rng, n_rows * n_cols, weight_density)
    indptr, rows = _csc_from_positions(pos, n_rows, n_cols)
    nnz = pos.size
    del pos  # int64 per weight (VGG-16 FC6: 33 MB), not held while the values are drawn
    scale = 1.0 / np.sqrt(max(n_cols, 1))
    n_bias = n_rows if bias else 0
    values = np.empty(nnz + n_bias, dtype=np.float32)  # weights, then the bias
    rng.standard_normal(dtype=np.float32, out=values[:nnz])
    rng.standard_normal(dtype=np.float32, out=values[nnz:])
    values *= np.float32(scale)
    if values.size > 0:
        codebook, all_codes = quantize_to_codebook(values, codebook_entries, rng)
    else:
        codebook = np.zeros(codebook_entries, dtype=np.float32)
        all_codes = np.zeros(0, dtype=np.uint8)
    codes = all_codes[:nnz]
    bias_codes = np.zeros(n_rows, dtype=np.uint8)
    bias_codes[:n_bias] = all_codes[nnz:]
    k = int(round(activation_density * n_cols))
    act = np.zeros(n_cols, dtype=np.float32)
    where = rng.choice(n_cols, size=k, replace=False)
    act[where] = np.maximum(np.abs(rng.standard_normal(k)), 1e-2).astype(np.float32)
    return QuantizedMatVec(
        name=name,
        n_rows=n_rows,
        n_cols=n_cols,
        indptr=indptr,
        row_idx=rows,
        codes=codes,
        codebook=codebook,
        bias_codes=bias_codes,
        activations=act,
    )
