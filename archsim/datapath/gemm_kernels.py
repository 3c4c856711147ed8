"""Functional tensor-core GEMM: ``D = A B + C`` in the order the simulated kernel computes it.

Each CTA tile accumulates its k-steps in order; within a k-step every MMA instruction adds the
exact sum of ``ik`` products (FP16 x FP16 products are exact in FP32) to the FP32 accumulator,
which starts from C. Integer GEMMs accumulate exactly in int64 and wrap to int32.
"""

from __future__ import annotations

import math

import numpy as np

from archsim.numba_cache import nb

__all__ = [
    "accumulation_error_bound",
    "split_k_gemm_fp32",
    "round_fp16",
    "tiled_gemm_fp32",
    "tiled_gemm_int32",
]


@nb.njit(cache=True)
def round_fp16(x: float) -> float:
    """``x`` rounded to the nearest IEEE half value (ties to even; overflow -> inf)."""
    if x == 0.0 or not np.isfinite(x):
        return x
    _, e = math.frexp(x)
    ulp = math.ldexp(1.0, max(e - 11, -24))
    r = np.rint(x / ulp) * ulp
    if abs(r) > 65504.0:
        return math.copysign(math.inf, x)
    return r


@nb.njit(cache=True)
def _round_fp16_f32(v: np.float32, fbuf: np.ndarray, ibuf: np.ndarray) -> np.float32:
    """:func:`round_fp16` of a float32 ``v`` on its bits (``fbuf``/``ibuf``: one float32 and
    its uint32 view): drop 13 of the 23 fraction bits, ties to even; FP16 subnormals (below
    2**-14) take :func:`round_fp16`."""
    fbuf[0] = v
    bits = ibuf[0]
    mag = bits & np.uint32(0x7FFFFFFF)
    if mag >= np.uint32(0x7F800000):  # inf or NaN
        return v
    if mag < np.uint32(0x38800000):  # below 2**-14: FP16 subnormal or zero
        return np.float32(round_fp16(v))
    mag = (mag + np.uint32(0xFFF) + ((mag >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    if mag > np.uint32(0x477FE000):  # above 65504, the largest FP16
        mag = np.uint32(0x7F800000)
    ibuf[0] = (bits & np.uint32(0x80000000)) | mag
    return fbuf[0]


@nb.njit(cache=True)
def tiled_gemm_fp32(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    tm: int,
    tn: int,
    tk: int,
    ik: int,
    fp16_accumulate: bool = False,
) -> np.ndarray:
    """``A (m x k, float32) @ B (k x n, float32) + C`` accumulated per MMA chunk in FP32 (or,
    with ``fp16_accumulate``, rounded to FP16 after every chunk)."""
    m, k = a.shape
    n = b.shape[1]
    d = c.astype(np.float32).copy()
    fbuf = np.empty(1, np.float32)
    ibuf = fbuf.view(np.uint32)
    if fp16_accumulate:
        for i in range(m):
            for j in range(n):
                d[i, j] = _round_fp16_f32(d[i, j], fbuf, ibuf)
    # Each output's chunk sum runs over kk in ascending order, as the instruction adds its
    # products; the loop over the tile's columns is innermost so that B is read along its rows.
    part = np.empty(tn, np.float64)
    for m0 in range(0, m, tm):
        for n0 in range(0, n, tn):
            jn = min(n0 + tn, n) - n0
            for k0 in range(0, k, tk):
                for kc in range(k0, min(k0 + tk, k), ik):
                    kend = min(kc + ik, k)
                    for i in range(m0, min(m0 + tm, m)):
                        part[:jn] = 0.0
                        for kk in range(kc, kend):
                            av = np.float64(a[i, kk])
                            for jj in range(jn):
                                part[jj] += av * np.float64(b[kk, n0 + jj])
                        for jj in range(jn):
                            v = np.float32(d[i, n0 + jj] + np.float32(part[jj]))
                            if fp16_accumulate:
                                v = _round_fp16_f32(v, fbuf, ibuf)
                            d[i, n0 + jj] = v
    return d


@nb.njit(cache=True)
def tiled_gemm_int32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Integer GEMM with an int32 accumulator (exact unless it wraps)."""
    m, k = a.shape
    n = b.shape[1]
    d = np.empty((m, n), np.int32)
    for i in range(m):
        for j in range(n):
            acc = np.int64(c[i, j])
            for kk in range(k):
                acc += np.int64(a[i, kk]) * np.int64(b[kk, j])
            d[i, j] = np.int32(acc)
    return d


def split_k_gemm_fp32(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    tm: int,
    tn: int,
    tk: int,
    ik: int,
    k_slice: int,
    fp16_accumulate: bool = False,
) -> np.ndarray:
    """Split-K ``A @ B + C``: each ``k_slice`` of K is accumulated from zero as
    :func:`tiled_gemm_fp32` does and stored as an FP32 partial; the reduction kernel then adds
    C and the partials in slice order in FP32 and rounds once to FP16 with ``fp16_accumulate``."""
    m, k = a.shape
    zero = np.zeros((m, b.shape[1]), dtype=np.float32)
    d = c.astype(np.float32)
    for k0 in range(0, k, k_slice):
        sa = np.ascontiguousarray(a[:, k0 : k0 + k_slice])
        sb = np.ascontiguousarray(b[k0 : k0 + k_slice])
        d = d + tiled_gemm_fp32(sa, sb, zero, tm, tn, tk, ik, fp16_accumulate)
    # NumPy's float16 conversion rounds to nearest even, as round_fp16 does
    return d.astype(np.float16).astype(np.float32) if fp16_accumulate else d


def accumulation_error_bound(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    ik: int,
    unit_roundoff: float,
    split_k: int = 1,
    k_slice: int | None = None,
    underflow: float = 0.0,
) -> np.ndarray:
    """Forward error bound of the chunked accumulation: ``gamma * (|C| + |A| |B|)`` with
    ``gamma = (2 ceil(ks / ik) + 2) u`` (two roundings per MMA chunk, C's and the last; ``ks``
    = K, or the slice length under split-K), plus ``(split_k + 1) 2**-24`` for the FP32
    reduction of split-K partials, plus ``underflow`` (half the accumulator's smallest
    subnormal) for each of those roundings: near zero a rounding's error is absolute."""
    k = a.shape[1] if split_k == 1 or k_slice is None else k_slice
    roundings = 2 * -(-k // ik) + 2
    gamma = roundings * unit_roundoff
    if split_k > 1:
        gamma += (split_k + 1) * 2.0**-24
    mag = np.abs(c.astype(np.float64)) + np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return gamma * mag * 1.0001 + (roundings + split_k) * underflow
