"""SCALE-Sim's operand addresses and read-buffer prefetch order, as numba kernels.

Split from ``archsim.datapath.systolic_kernels`` (whose demand-row kernel calls them once per
layer, and ``_ifmap_addr`` per request); see that module's docstring for the model.
"""

from __future__ import annotations

import numpy as np

from archsim.numba_cache import nb

__all__: list[str] = []  # internal kernels, used by systolic_kernels


@nb.njit(cache=True)
def _ifmap_addr(mi, ki, g):
    """IFMAP im2col address of (ofmap pixel mi, window index ki), -1 outside the image.

    g = (ifmap_h, ifmap_w, filt_h, filt_w, channels, stride, ofmap_w, num_filters, window).
    A GEMM (one output column, one channel, one filter row: ``ki`` is the column) skips the
    general form's three divisions; both give the same address."""
    if g[6] == 1 and g[4] == 1 and g[2] == 1 and ki < g[3]:
        irow = mi * g[5]
        if irow >= g[0] or ki >= g[1]:
            return -1
        return irow * g[1] + ki
    orow = mi // g[6]
    ocol = mi - orow * g[6]
    irow = orow * g[5]
    icol = ocol * g[5]
    per_row = g[3] * g[4]
    c_row = ki // per_row
    rem = ki - c_row * per_row
    c_col = rem // g[4]
    c_ch = rem - c_col * g[4]
    if c_row + irow >= g[0] or c_col + icol >= g[1]:
        return -1
    return (c_row * g[1] + c_col) * g[4] + c_ch + (irow * g[1] + icol) * g[4]


@nb.njit(cache=True)
def _operand(op, i, j, g):
    """Address of element (i, j) of operand ``op`` (0 IFMAP M x K, 1 FILTER K x N, 2 OFMAP)."""
    if op == 0:
        return _ifmap_addr(i, j, g)
    if op == 1:
        return j * g[8] + i
    return i * g[7] + j


@nb.njit(cache=True)
def _prefetch_elem(df, op, row, col, R, C, M, N, K):
    """(operand row, operand col) of prefetch-matrix element (row, col), or (-1, -1) if null."""
    if df == 0:  # OS
        if op == 0:  # blocks of T=K rows per row fold: I[fr*R + c, t]
            fr, t = row // K, row % K
            m = fr * R + col
            return (m, t) if m < M else (-1, -1)
        fc, t = row // K, row % K  # filter: F[t, fc*C + c]
        n = fc * C + col
        return (t, n) if n < N else (-1, -1)
    if df == 1:  # WS
        if op == 0:  # I[t, fr*R + c], blocks of T=M rows
            fr, t = row // M, row % M
            kk = fr * R + col
            return (t, kk) if kk < K else (-1, -1)
        fc, kk = row // K, row % K  # F[k, fc*C + c], blocks of K rows
        n = fc * C + col
        return (kk, n) if n < N else (-1, -1)
    if op == 0:  # IS: I^T[k, fc*C + c], blocks of K rows
        fc, kk = row // K, row % K
        m = fc * C + col
        return (m, kk) if m < M else (-1, -1)
    fr, t = row // N, row % N  # F[fr*R + c, t], blocks of T=N rows
    kk = fr * R + col
    return (kk, t) if kk < K else (-1, -1)


@nb.njit(cache=True)
def _prefetch_shape(df, op, R, C, M, N, K):
    """(rows, cols, rolled) of the prefetch matrix; rolled = anti-diagonal roll-out."""
    row_fold_os = (M + R - 1) // R
    col_fold_n = (N + C - 1) // C
    row_fold_k = (K + R - 1) // R
    col_fold_m = (M + C - 1) // C
    if df == 0:
        if op == 0:
            return row_fold_os * K, R, True
        return col_fold_n * K, C, True
    if df == 1:
        if op == 0:
            return row_fold_k * M, R, True
        return col_fold_n * K, C, False
    if op == 0:
        return col_fold_m * K, C, False
    return row_fold_k * N, R, True


@nb.njit(cache=True)
def _build_sets(df, op, R, C, M, N, K, g, n_addr, eps):
    """Set ids of every occurrence of every address in the prefetch order, as CSR.

    Returns (start[n_addr + 1], sets[total valid], n_sets, n_prefetch_elements)."""
    pr, pc, rolled = _prefetch_shape(df, op, R, C, M, N, K)
    counts = np.zeros(n_addr + 1, np.int64)
    total = pr * pc
    addrs = np.empty(total, np.int64)
    q = 0
    if rolled:
        for d in range(pr + pc):
            hi = min(d, pr - 1)
            lo = max(0, d - pc + 1)
            for row in range(hi, lo - 1, -1):
                i, j = _prefetch_elem(df, op, row, d - row, R, C, M, N, K)
                a = -1 if i < 0 else _operand(op, i, j, g)
                if a >= 0:
                    addrs[q] = a
                    q += 1
                    counts[a + 1] += 1
    else:
        for row in range(pr):
            for col in range(pc):
                i, j = _prefetch_elem(df, op, row, col, R, C, M, N, K)
                a = -1 if i < 0 else _operand(op, i, j, g)
                if a >= 0:
                    addrs[q] = a
                    q += 1
                    counts[a + 1] += 1
    for a in range(n_addr):
        counts[a + 1] += counts[a]
    fill = counts[:-1].copy()
    sets = np.empty(q, np.int64)
    for p in range(q):
        a = addrs[p]
        sets[fill[a]] = p // eps
        fill[a] += 1
    return counts, sets, q // eps + 1, total
