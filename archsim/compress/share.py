"""Weight sharing: 1-D k-means with linear initialisation (Deep Compression, Section 3)."""

from __future__ import annotations

import numpy as np

__all__ = ["kmeans_share", "nearest_centroid"]


def nearest_centroid(values: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest of the sorted ``centroids`` for every value (ties go down)."""
    mids = (centroids[1:] + centroids[:-1]) / 2.0
    return np.searchsorted(mids, values, side="left").astype(np.int64)


def kmeans_share(
    values: np.ndarray, bits: int, iterations: int = 30
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster ``values`` (the non-zero weights) into at most ``2**bits - 1`` shared values.

    Linear initialisation: centroids evenly spaced over [min, max] (the paper's best method);
    then Lloyd iterations on all values until no centroid moves. Code 0 is reserved for the
    pruned zeros, so ``2**bits - 1`` non-zero clusters remain. Returns (centroids float32,
    sorted, empty clusters removed; codes int64 into centroids).
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    levels = (1 << bits) - 1
    if v.size == 0:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
    cents = np.linspace(v.min(), v.max(), min(levels, max(v.size, 1)))
    for _ in range(iterations):
        idx = nearest_centroid(v, cents)
        sums = np.bincount(idx, weights=v, minlength=cents.size)
        counts = np.bincount(idx, minlength=cents.size)
        new = np.where(counts > 0, sums / np.maximum(counts, 1), cents)
        new.sort()
        if np.array_equal(new, cents):
            break
        cents = new
    idx = nearest_centroid(v, cents)
    used = np.unique(idx)
    cents = cents[used].astype(np.float32)
    cents[cents == 0.0] = np.float32(np.finfo(np.float32).tiny)  # 0 stays "pruned"
    return cents, nearest_centroid(v.astype(np.float32), cents)
