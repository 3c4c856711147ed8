"""Inputs of the SCNN kernels: planar tiles, accumulator windows, compressed operand lists."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ScnnTiling", "scnn_tiling", "compress_activations", "compress_weights"]


@dataclass(frozen=True)
class ScnnTiling:
    """Planar tiling of one layer over a PX x PY PE grid (PE p = py * PX + px)."""

    px: int
    py: int
    tile_w: int  # Wt
    tile_h: int  # Ht
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


def _windows(n_in: int, tile: int, grid: int, filt: int, stride: int, pad: int, n_out: int):
    """First output index and width of the output window each tile can reach, per grid column."""
    x0s, widths = [], []
    for t in range(grid):
        a, b = t * tile, min(n_in, (t + 1) * tile) - 1  # input range [a, b]
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
    w: int, h: int, r: int, s: int, stride: int, pad: int, px: int, py: int
) -> ScnnTiling:
    """Tile an h x w input plane over px x py PEs; windows cover every output a tile feeds."""
    out_w = (w + 2 * pad - s) // stride + 1
    out_h = (h + 2 * pad - r) // stride + 1
    tw, th = -(-w // px), -(-h // py)
    x0, ww = _windows(w, tw, px, s, stride, pad, out_w)
    y0, wh = _windows(h, th, py, r, stride, pad, out_h)
    win_x0 = np.array([x0[p % px] for p in range(px * py)], dtype=np.int64)
    win_y0 = np.array([y0[p // px] for p in range(px * py)], dtype=np.int64)
    return ScnnTiling(px, py, tw, th, out_w, out_h, win_x0, win_y0, ww, wh)


def compress_activations(act_q: np.ndarray, tiling: ScnnTiling):
    """Non-zero activations of (C, H, W) per (channel, PE), row-major within the tile.

    Returns (a_ptr[C * P + 1], x, y, value) with global coordinates.
    """
    c_n, h, w = act_q.shape
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
        xx[order].astype(np.int64),
        yy[order].astype(np.int64),
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
