"""Fixed-point helpers: Q formats chosen offline from value ranges, round-half-up shifts."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["frac_bits_for", "quantize", "round_shift_array", "saturate_array"]


def frac_bits_for(max_abs: float, bits: int) -> int:
    """Largest fractional-bit count such that ``max_abs`` fits a signed ``bits``-bit word."""
    if max_abs <= 0.0:
        return bits - 1
    int_bits = max(0, math.floor(math.log2(max_abs)) + 1)
    frac = bits - 1 - int_bits
    # guard against max_abs landing exactly on a power of two after rounding
    while frac > -64 and round(max_abs * 2.0**frac) > 2 ** (bits - 1) - 1:
        frac -= 1
    return frac


def quantize(values: np.ndarray, frac: int, bits: int) -> np.ndarray:
    """Round to nearest and saturate to signed ``bits``-bit integers (int64 array)."""
    scaled = np.asarray(values, dtype=np.float64) * 2.0**frac
    if not isinstance(scaled, np.ndarray):  # a 0-d input gives a NumPy scalar
        return saturate_array(np.round(scaled).astype(np.int64), bits)
    # ``scaled`` and ``q`` are new arrays: round and clip in place, no further temporaries
    q = np.round(scaled, out=scaled).astype(np.int64)
    return np.clip(q, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, out=q)


def saturate_array(values: np.ndarray, bits: int) -> np.ndarray:
    """Clip to the signed ``bits``-bit range."""
    return np.clip(values, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def round_shift_array(values: np.ndarray, shift: int) -> np.ndarray:
    """Arithmetic right shift by ``shift`` with round-half-up (left shift when negative)."""
    v = np.asarray(values, dtype=np.int64)
    if shift <= 0:
        return v << (-shift)
    return (v + (1 << (shift - 1))) >> shift
