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


def _placeholders(key: np.ndarray, pos: np.ndarray, n_seg: int, index_bits: int | None):
    """Zero-run placeholders of a compressed stream sorted by (segment ``key``, ``pos``).

    A run of more than ``2**index_bits - 1`` zeros before an entry is bridged by placeholder
    entries (value 0), each covering ``2**index_bits`` positions (as EIE's padding). Returns
    (segment pointers over the expanded stream, index of every expanded slot into the sorted
    entries — the entry it precedes — or None when no slot is a placeholder, mask of real
    slots or None likewise).
    """
    n = key.size
    # key rises along the stream: segment bounds by binary search, no bincount
    bounds = np.searchsorted(key, np.arange(n_seg + 1, dtype=key.dtype))
    if index_bits is None or n == 0:
        return bounds.astype(np.int64, copy=False), None, None
    prev = np.empty(n, dtype=pos.dtype)
    prev[0] = -1
    prev[1:] = pos[:-1]
    prev[1:][key[1:] != key[:-1]] = -1
    extra = (pos - prev - 1) >> index_bits  # floor division by 2**index_bits, without a divide
    if not extra.any():
        return bounds.astype(np.int64, copy=False), None, None
    slots = extra + 1
    ends = np.empty(n + 1, dtype=np.int64)
    ends[0] = 0
    np.cumsum(slots, out=ends[1:])
    src = np.repeat(np.arange(n, dtype=np.int64), slots)
    real = np.zeros(src.size, dtype=bool)
    real[ends[1:] - 1] = True
    return ends[bounds], src, real


def _expand(a: np.ndarray, src: np.ndarray | None) -> np.ndarray:
    """``a`` per expanded slot (int64): ``a[src]``, or ``a`` itself when there is no placeholder."""
    return (a if src is None else a[src]).astype(np.int64, copy=False)


def _values(v: np.ndarray, src: np.ndarray | None, real: np.ndarray | None) -> np.ndarray:
    """Entry values per expanded slot, 0 in placeholders, as int64."""
    if src is None:
        return v.astype(np.int64)
    return np.where(real, v[src], 0).astype(np.int64)


def compress_activations(
    act_q: np.ndarray, tiling: ScnnTiling, index_bits: int | None = None, phase: int = 1
):
    """Non-zero activations of (C, H', W') per (channel, PE), row-major within the tile.

    ``act_q`` is the tiling's region (its origin is ``(tiling.x_lo, tiling.y_lo)``). With
    ``index_bits``, zero runs longer than the index can express get placeholder entries
    (value 0, the coordinates of the entry they precede); with ``phase`` > 1 (stride-phase
    decomposed channels) run lengths count positions of the phase's sub-grid. Returns
    (a_ptr[C * P + 1], x, y, value) with coordinates in the whole plane.
    """
    c_n, h, w = act_q.shape
    p_n = tiling.n_pes
    th, tw, px, py = tiling.tile_h, tiling.tile_w, tiling.px, tiling.py
    # a contiguous (channel, tile row, tile column, y, x) copy is laid out in the stream's order
    # (by channel and PE, then row-major within the tile): its flat non-zero indices need no
    # sort, and one division by the tile size splits them into segment key and tile position
    if (h, w) == (py * th, px * tw):
        tiled = act_q
    else:
        tiled = np.zeros((c_n, py * th, px * tw), dtype=act_q.dtype)
        tiled[:, :h, :w] = act_q
    flat = np.ascontiguousarray(tiled.reshape(c_n, py, th, px, tw).transpose(0, 1, 3, 2, 4))
    flat = flat.reshape(-1)
    idx = np.flatnonzero(flat)
    key, rem = np.divmod(idx, th * tw)
    yt, xt = np.divmod(rem, tw)
    ty, tx = np.divmod(key % p_n, px)
    yy, xx = ty * th + yt, tx * tw + xt
    sub_w = -(-tw // phase)
    pos = rem if phase == 1 else (yt // phase) * sub_w + xt // phase
    ptr, src, real = _placeholders(key, pos, c_n * p_n, index_bits)
    vals = _values(flat[idx], src, real)
    return ptr, _expand(xx, src) + tiling.x_lo, _expand(yy, src) + tiling.y_lo, vals


def compress_weights(w_q: np.ndarray, kc: int, index_bits: int | None = None, phase: int = 1):
    """Non-zero weights of (K, C, R, S) per (group of kc output channels, channel), k-r-s order.

    With ``index_bits``, long zero runs get placeholder entries (value 0); with ``phase`` > 1
    run lengths count the taps of one stride phase. Returns
    (w_ptr[G * C + 1], k_local, r, s, value, n_groups).
    """
    k_n, c_n, r_n, s_n = w_q.shape
    n_groups = -(-k_n // kc)
    rs = r_n * s_n
    # a contiguous (group, channel, k, r, s) copy is laid out in exactly the stream's order: its
    # flat non-zero indices need no sort and split by division into (key, k_local, r, s)
    if n_groups * kc != k_n:
        w_q = np.pad(w_q, ((0, n_groups * kc - k_n), (0, 0), (0, 0), (0, 0)))
    grouped = w_q.reshape(n_groups, kc, c_n, rs).transpose(0, 2, 1, 3)
    flat = np.ascontiguousarray(grouped).reshape(-1)
    idx = np.flatnonzero(flat)
    key, rem = np.divmod(idx, kc * rs)
    kl, t = np.divmod(rem, rs)
    rr, ss = np.divmod(t, s_n)
    if phase == 1:
        pos = rem
    else:
        pos = (kl * -(-r_n // phase) + rr // phase) * -(-s_n // phase) + ss // phase
    ptr, src, real = _placeholders(key, pos, n_groups * c_n, index_bits)
    vals = _values(flat[idx], src, real)
    return ptr, _expand(kl, src), _expand(rr, src), _expand(ss, src), vals, n_groups
