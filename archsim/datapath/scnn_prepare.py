"""Inputs of the SCNN kernels: planar tiles, accumulator windows, compressed operand lists."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ScnnTiling", "scnn_tiling", "compress_activations", "compress_weights"]


@dataclass(frozen=True)
class ScnnTiling:
    """Planar tiling of an input region over a PX x PY PE grid (PE p = py * PX + px)."""

    px: int
    py: int
    tile_w: int  # Wt
    tile_h: int  # Ht
    x_lo: int  # the region's first input column and row (0 unless super-tiled)
    y_lo: int
    out_w: int
    out_h: int
    win_x0: np.ndarray  # first output column reachable from each PE's tile
    win_y0: np.ndarray
    win_w: int  # WW: widest output window over PEs
    win_h: int  # WH

    @property
    def n_pes(self) -> int:
        """PEs in the grid."""
        return self.px * self.py


def _windows(
    lo_in: int, hi_in: int, tile: int, grid: int, filt: int, stride: int, pad: int, n_out: int
):
    """First output index and width of the output window each tile can reach, per grid column."""
    x0s, widths = [], []
    for t in range(grid):
        a, b = lo_in + t * tile, min(hi_in, lo_in + (t + 1) * tile) - 1  # input range [a, b]
        if a > b:
            x0s.append(0)
            widths.append(0)
            continue
        lo = max(0, -(-(a + pad - (filt - 1)) // stride))
        hi = min(n_out - 1, (b + pad) // stride)
        x0s.append(lo)
        widths.append(max(0, hi - lo + 1))
    return np.array(x0s, dtype=np.int64), max(widths)


def scnn_tiling(
    w: int,
    h: int,
    r: int,
    s: int,
    stride: int,
    pad: int,
    px: int,
    py: int,
    region: tuple[int, int, int, int] | None = None,
) -> ScnnTiling:
    """Tile the input region ``(x_lo, x_hi, y_lo, y_hi)`` (default: the whole h x w plane) over
    px x py PEs; each PE's accumulator window covers every output its tile feeds."""
    x_lo, x_hi, y_lo, y_hi = region if region is not None else (0, w, 0, h)
    out_w = (w + 2 * pad - s) // stride + 1
    out_h = (h + 2 * pad - r) // stride + 1
    tw, th = -(-(x_hi - x_lo) // px), -(-(y_hi - y_lo) // py)
    x0, ww = _windows(x_lo, x_hi, tw, px, s, stride, pad, out_w)
    y0, wh = _windows(y_lo, y_hi, th, py, r, stride, pad, out_h)
    win_x0 = np.array([x0[p % px] for p in range(px * py)], dtype=np.int64)
    win_y0 = np.array([y0[p // px] for p in range(px * py)], dtype=np.int64)
    return ScnnTiling(px, py, tw, th, x_lo, y_lo, out_w, out_h, win_x0, win_y0, ww, wh)


def compress_activations(act_q: np.ndarray, tiling: ScnnTiling):
    """Non-zero activations of (C, H', W') per (channel, PE), row-major within the tile.

    ``act_q`` is the tiling's region (its origin is ``(tiling.x_lo, tiling.y_lo)``). Returns
    (a_ptr[C * P + 1], x, y, value) with coordinates in the whole plane.
    """
    c_n = act_q.shape[0]
    p_n = tiling.n_pes
    cc, yy, xx = np.nonzero(act_q)
    pe = (yy // tiling.tile_h) * tiling.px + xx // tiling.tile_w
    key = cc * p_n + pe
    order = np.lexsort((xx, yy, key))  # by (channel, PE), then row-major
    counts = np.bincount(key, minlength=c_n * p_n)
    ptr = np.zeros(c_n * p_n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return (
        ptr,
        xx[order].astype(np.int64) + tiling.x_lo,
        yy[order].astype(np.int64) + tiling.y_lo,
        act_q[cc[order], yy[order], xx[order]].astype(np.int64),
    )


def compress_weights(w_q: np.ndarray, kc: int):
    """Non-zero weights of (K, C, R, S) per (group of kc output channels, channel), k-r-s order.

    Returns (w_ptr[G * C + 1], k_local, r, s, value, n_groups).
    """
    k_n, c_n, _, _ = w_q.shape
    n_groups = -(-k_n // kc)
    kk, cc, rr, ss = np.nonzero(w_q)
    g = kk // kc
    key = g * c_n + cc
    order = np.lexsort((ss, rr, kk, key))
    counts = np.bincount(key, minlength=n_groups * c_n)
    ptr = np.zeros(n_groups * c_n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    o = order
    return (
        ptr,
        (kk[o] - g[o] * kc).astype(np.int64),
        rr[o].astype(np.int64),
        ss[o].astype(np.int64),
        w_q[kk[o], cc[o], rr[o], ss[o]].astype(np.int64),
        n_groups,
    )
