"""Magnitude pruning: keep the largest-|w| fraction of a tensor."""

from __future__ import annotations

import numpy as np

__all__ = ["prune_mask"]


def prune_mask(weights: np.ndarray, density: float) -> np.ndarray:
    """Boolean mask keeping exactly ``round(density * size)`` weights of largest magnitude.

    Ties are broken by position (a stable sort), so the mask depends only on the values.
    Weights that are already exactly zero are never kept.
    """
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"density {density} outside [0, 1]")
    flat = np.abs(np.asarray(weights, dtype=np.float64)).reshape(-1)
    keep = min(int(round(density * flat.size)), int(np.count_nonzero(flat)))
    mask = np.zeros(flat.size, dtype=bool)
    if keep:
        order = np.argsort(-flat, kind="stable")
        mask[order[:keep]] = True
    return mask.reshape(np.shape(weights))
