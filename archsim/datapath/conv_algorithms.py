"""Conv algorithms a GPU library runs, computed for real (NumPy): the implicit GEMM's gather
and the Winograd transforms. Inputs are NCHW arrays, weights KCRS; outputs NCHW, float64."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["implicit_gemm_conv", "winograd_conv", "WINOGRAD_MATRICES"]

#: F(m x m, 3x3) transforms (B^T, G, A^T), Lavin and Gray, "Fast Algorithms for Convolutional
#: Neural Networks", CVPR 2016, Section 4.1 (m = 2) and 4.2 (m = 4)
WINOGRAD_MATRICES: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {
    2: (
        np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64),
        np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], dtype=np.float64),
        np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64),
    ),
    4: (
        np.array(
            [
                [4, 0, -5, 0, 1, 0],
                [0, -4, -4, 1, 1, 0],
                [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0],
                [0, 4, 0, -5, 0, 1],
            ],
            dtype=np.float64,
        ),
        np.array(
            [
                [1 / 4, 0, 0],
                [-1 / 6, -1 / 6, -1 / 6],
                [-1 / 6, 1 / 6, -1 / 6],
                [1 / 24, 1 / 12, 1 / 6],
                [1 / 24, -1 / 12, 1 / 6],
                [0, 0, 1],
            ],
            dtype=np.float64,
        ),
        np.array(
            [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
            dtype=np.float64,
        ),
    ),
}


def implicit_gemm_conv(
    x: np.ndarray, w: np.ndarray, stride: int, pad: int, groups: int
) -> np.ndarray:
    """The implicit GEMM per group: A[(n, p, q), (r, s, c)] gathered from the NHWC input,
    B[(r, s, c), k] from the filters, D = A B (what the GEMM kernel computes)."""
    n, c, _, _ = x.shape
    k, cg, r, s = w.shape
    kg = k // groups
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    nhwc = xp.transpose(0, 2, 3, 1)
    win = sliding_window_view(nhwc, (r, s), axis=(1, 2))[:, ::stride, ::stride]  # n p q c r s
    p, q = win.shape[1], win.shape[2]
    out = np.empty((n, k, p, q), dtype=np.float64)
    for g in range(groups):
        a = win[:, :, :, g * cg : (g + 1) * cg].transpose(0, 1, 2, 4, 5, 3)
        a = a.reshape(n * p * q, r * s * cg)
        b = w[g * kg : (g + 1) * kg].astype(np.float64).transpose(2, 3, 1, 0)
        d = a @ b.reshape(r * s * cg, kg)
        out[:, g * kg : (g + 1) * kg] = d.reshape(n, p, q, kg).transpose(0, 3, 1, 2)
    return out


def winograd_conv(x: np.ndarray, w: np.ndarray, pad: int, tile: int) -> np.ndarray:
    """Non-fused Winograd F(tile x tile, 3x3), stride 1, one group: filter transform
    U = G g G^T, input transform V = B^T d B per (tile+2)^2 input tile, the (tile+2)^2 batched
    GEMMs M = sum_c U V, output transform Y = A^T M A."""
    bt, g_mat, at = WINOGRAD_MATRICES[tile]
    alpha = tile + 2
    n, _, h, wd = x.shape
    p, q = h + 2 * pad - 2, wd + 2 * pad - 2
    th, tw = -(-p // tile), -(-q // tile)
    extra_h, extra_w = th * tile + 2 - (h + 2 * pad), tw * tile + 2 - (wd + 2 * pad)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad + extra_h), (pad, pad + extra_w)))
    d = sliding_window_view(xp, (alpha, alpha), axis=(2, 3))[:, :, ::tile, ::tile]
    v = np.einsum("ai,nctwij,bj->nctwab", bt, d, bt, optimize=True)
    u = np.einsum("ai,kcij,bj->kcab", g_mat, w.astype(np.float64), g_mat, optimize=True)
    m = np.einsum("kcab,nctwab->nktwab", u, v, optimize=True)
    y = np.einsum("ai,nktwij,bj->nktwab", at, m, at, optimize=True)
    k = w.shape[0]
    y = y.transpose(0, 1, 2, 4, 3, 5).reshape(n, k, th * tile, tw * tile)
    return y[:, :, :p, :q]
