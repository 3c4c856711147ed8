"""Fast SCNN model (numba): every product of the Cartesian product, through the crossbar.

Micro-architecture (the reference twin in ``scnn_reference.py`` steps the same machine):

* PE p owns a planar input tile; for output-channel group g and input channel c it walks its
  non-zero activations in vectors of I (outer loop) and the group's non-zero weights of channel c
  in vectors of F (inner loop). Each issue multiplies F x I pairs (fewer at the ends of the lists:
  fragmentation; placeholder zeros of long zero runs occupy slots and deliver nothing). A
  product's output coordinate is ``oy = (y + pad - r) / stride``,
  ``ox = (x + pad - s) / stride``; products that miss the output grid (stride remainder or
  border) are computed and dropped before the crossbar.
* Each multiplier feeds one crossbar input FIFO of ``input_fifo_depth`` entries. The array
  issues a vector pair only when every FIFO has a free entry (lockstep), at the end of a cycle.
* Each cycle the F*I x A crossbar moves at most one product into each accumulator bank: among
  the FIFO heads that request a bank, the one with the highest rotating priority wins (input
  ``(cycle + j) mod F*I`` ranks j-th). Banks accumulate what they receive in the same cycle.
* Bank of an output: ``addr mod A`` with ``addr = (k_local * WH + oy - y0) * WW + ox - x0`` over
  the PE's accumulator window (WW x WH = the largest output window of any PE's tile).
* A phase (one group on one PE) lasts until its last issue or last accumulation, whichever is
  later (an issue at the end of cycle t is arbitrated from cycle t+1).

Four implementations of a phase (``scnn_phase``) give identical counters and outputs:
``_pe_phase`` (any shape), ``_pe_phase_fast`` (bit-mask FIFO state; stride 1, F*I <= 64,
A <= 64, FIFO depth <= 2, i.e. the published SCNN and most sweeps) and, for those shapes with
F <= 7 when no partial sum can saturate, ``scnn_sum._pe_phase_sum`` (timing) plus
``scnn_sum._phase_sums`` (sums), whose timing ``scnn_sum16._pe_phase_sum16`` replaces for
F*I = 16 and A <= 63 (the published 4 x 4 multipliers and 32 banks).
``tests/integration/test_scnn_reference.py`` checks them against the
per-cycle twin.

:func:`scnn_layer` is plain Python around small numba kernels: it picks the phase
implementation for the layer, runs the batch's phases in ``numba.get_num_threads()`` threads
(each one contiguous chunk of them through a ``scnn_phase._chunk_*`` kernel, which releases the
GIL), then adds the accumulator windows into the output (``_halo``). A first run thus compiles
only the paths its layers take, and no ``parallel=True`` kernel.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from archsim import compile_helper
from archsim.datapath.scnn_phase import (
    ADDR_BITS,
    _chunk_fast,
    _chunk_flags,
    _chunk_general,
    _chunk_sum,
    _chunk_sum16,
)
from archsim.datapath.scnn_sum import _FAR, _INSIDE, _sum_bounds, _weight_rows
from archsim.datapath.scnn_sum16 import _coord_rows
from archsim.numba_cache import nb

__all__ = ["scnn_layer", "SCNN_PE_FIELDS", "ADDR_BITS"]

_SCRAMBLE = 37  # a prime: idx -> idx * 37 mod P is a permutation unless 37 divides P
_ACC_BUDGET = 1 << 21  # accumulator entries of one batch of phases (16 MB)

#: per (group, PE) counters returned by :func:`scnn_layer`, in this order.
SCNN_PE_FIELDS = (
    "cycles",  # phase cycles (first issue to last accumulation)
    "issues",  # vector pairs issued to the multiplier array
    "multiplies",  # multiplier slots used (valid + dropped products)
    "products",  # products delivered to the accumulators
    "issue_stalls",  # cycles a ready vector pair waited for FIFO space
    "conflicts",  # product-cycles spent waiting at a FIFO head that lost arbitration
)


@nb.njit(cache=True)
def _operand_terms(
    n_channels,
    n_pes,
    a_ptr,
    a_x,
    a_y,
    a_v,
    w_k,
    w_r,
    w_s,
    w_v,
    win_x0,
    win_y0,
    ww,
    wh,
    out_w,
    out_h,
    pad,
    banks,
):  # pragma: no cover - compiled
    """Per-operand terms of ``_pe_phase_fast`` and the sum paths.

    ``a_op[4 ia .. 4 ia + 3]`` = (a_word, y + pad, x + pad, value), ``w_op[4 iw .. 4 iw + 3]`` =
    (w_word, r, s, value). A product's word ``address * 128 + bank_sum`` is ``a_word + w_word``
    with ``a_word = a_t * 128 + a_t mod A``, ``a_t = (y + pad - y0) * WW + x + pad - x0``,
    ``w_word = w_t * 128 + w_t mod A``, ``w_t = k_local * WH * WW - r * WW - s`` (bank_sum < 2A
    <= 128), and its output coordinate is ``oy = y + pad - r``, ``ox = x + pad - s``.
    Placeholder zeros get a negative word and coordinates off every output grid. An activation
    whose products all land on the grid (for every r, s of the layer's weights) gets
    ``y + pad = _INSIDE``: its products skip the coordinate test.
    """
    n_w = w_v.shape[0]
    n_a = a_v.shape[0]
    w_op = np.zeros(4 * n_w, dtype=np.int64)
    r_max = s_max = 0
    for iw in range(n_w):
        wt = w_k[iw] * (wh * ww) - w_r[iw] * ww - w_s[iw]
        w_op[4 * iw] = wt * 128 + wt % banks if w_v[iw] != 0 else -_FAR
        w_op[4 * iw + 1] = w_r[iw] if w_v[iw] != 0 else _FAR
        w_op[4 * iw + 2] = w_s[iw] if w_v[iw] != 0 else _FAR
        w_op[4 * iw + 3] = w_v[iw]
        if w_v[iw] != 0:
            r_max = max(r_max, w_r[iw])
            s_max = max(s_max, w_s[iw])
    a_op = np.zeros(4 * n_a, dtype=np.int64)
    for c in range(n_channels):
        for p in range(n_pes):
            for ia in range(a_ptr[c * n_pes + p], a_ptr[c * n_pes + p + 1]):
                yy = a_y[ia] + pad
                xx = a_x[ia] + pad
                at = (yy - win_y0[p]) * ww + xx - win_x0[p]
                a_op[4 * ia] = at * 128 + at % banks if a_v[ia] != 0 else -_FAR
                a_op[4 * ia + 1] = yy if a_v[ia] != 0 else -_FAR
                a_op[4 * ia + 2] = xx if a_v[ia] != 0 else -_FAR
                a_op[4 * ia + 3] = a_v[ia]
                inside = yy >= r_max and yy < out_h and xx >= s_max and xx < out_w
                if a_v[ia] != 0 and inside:
                    a_op[4 * ia + 1] = _INSIDE
    return a_op, w_op


@nb.njit(cache=True)
def _halo(
    g0, n_items, kc, n_pes, ww, wh, out_w, out_h, win_x0, win_y0, acc, st, stats, out
):  # pragma: no cover - compiled
    """A batch's counters into ``stats[:, g, p]`` and its accumulator windows into ``out``."""
    for it in range(n_items):
        g = g0 + it // n_pes
        p = it % n_pes
        for t in range(6):
            stats[t, g, p] = st[it, t]
        # halo exchange: every PE's window adds into the shared output
        for kl in range(kc):
            k = g * kc + kl
            if k >= out.shape[0]:
                break
            for yy in range(wh):
                oy = win_y0[p] + yy
                if oy >= out_h:
                    break
                for xx in range(ww):
                    ox = win_x0[p] + xx
                    if ox >= out_w:
                        break
                    out[k, oy, ox] += acc[it, (kl * wh + yy) * ww + xx]


_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}  # (pid, workers) -> pool


def _pool(workers: int) -> ThreadPoolExecutor:
    """This process's pool of ``workers`` threads (a forked child makes its own: the parent's
    threads do not exist there)."""
    key = (os.getpid(), workers)
    if key not in _pools:
        _pools[key] = ThreadPoolExecutor(workers, thread_name_prefix="archsim-scnn")
    return _pools[key]


def _run_chunks(kernel, n: int, args: tuple) -> None:
    """``kernel(lo, hi, *args)`` over ``0 .. n - 1`` in ``numba.get_num_threads()`` threads, one
    contiguous chunk each (as numba's static schedule split the former ``prange``): group by
    group, so a group's weights stay in cache."""
    threads = min(nb.get_num_threads(), n)
    if threads <= 1:
        if n > 0:
            kernel(0, n, *args)
        return
    bounds = [n * t // threads for t in range(threads + 1)]
    pool = _pool(threads - 1)
    futures = [pool.submit(kernel, bounds[t], bounds[t + 1], *args) for t in range(1, threads)]
    try:
        kernel(0, bounds[1], *args)
    finally:
        for fut in futures:
            fut.result()


def scnn_layer(
    n_groups,
    kc,
    n_channels,
    n_pes,
    a_ptr,
    a_x,
    a_y,
    a_v,
    w_ptr,
    w_k,
    w_r,
    w_s,
    w_v,
    win_x0,
    win_y0,
    ww,
    wh,
    out_w,
    out_h,
    stride,
    pad,
    f,
    i_vec,
    banks,
    fifo_depth,
    shift,
    acc_bits,
    out,
):
    """Simulate every (group, PE) phase; accumulate products into ``out[k, oy, ox]`` (int64).

    ``a_ptr[c * n_pes + p]`` bounds PE p's non-zero activations of channel c (global x, y);
    ``w_ptr[g * n_channels + c]`` bounds group g's non-zero weights of channel c (local k).
    Phases run in parallel threads, a batch of groups at a time (they share nothing until
    the halo sums); a phase takes ``_pe_phase_sum`` when no partial sum can saturate.
    Returns counters of shape (len(SCNN_PE_FIELDS), n_groups, n_pes).
    """
    # Python ints: every kernel then sees int64 scalars (one compiled signature)
    n_groups, kc, n_channels, n_pes, ww, wh, out_w, out_h = (
        int(v) for v in (n_groups, kc, n_channels, n_pes, ww, wh, out_w, out_h)
    )
    stride, pad, f, i_vec, banks, fifo_depth, shift, acc_bits = (
        int(v) for v in (stride, pad, f, i_vec, banks, fifo_depth, shift, acc_bits)
    )
    stats = np.zeros((6, n_groups, n_pes), dtype=np.int64)
    win = kc * wh * ww
    # groups run in batches whose accumulators fit _ACC_BUDGET entries: one parallel pass over
    # a batch's (group, PE) phases, then its halo sums (no barrier per group)
    batch = max(1, min(n_groups, _ACC_BUDGET // (n_pes * max(win, 1))))
    acc = np.zeros((batch * n_pes, win), dtype=np.int64)
    st = np.zeros((batch * n_pes, 6), dtype=np.int64)
    lo = -(1 << (acc_bits - 1))
    hi = (1 << (acc_bits - 1)) - 1
    # PEs in a fixed scrambled order that spreads the idle edge tiles over the threads
    # (results do not depend on the order)
    order = np.arange(n_pes, dtype=np.int64)
    if n_pes % _SCRAMBLE:
        order = (order * _SCRAMBLE) % n_pes
    fast = stride == 1 and f * i_vec <= 64 and banks <= 64 and fifo_depth <= 2
    unique = False
    if fast:
        a_op, w_op = _operand_terms(
            n_channels,
            n_pes,
            a_ptr,
            a_x,
            a_y,
            a_v,
            w_k,
            w_r,
            w_s,
            w_v,
            win_x0,
            win_y0,
            ww,
            wh,
            out_w,
            out_h,
            pad,
            banks,
        )
        dims = (n_channels, n_pes, out_w, out_h, f, i_vec, banks, fifo_depth, shift, lo, hi)
        kernel, args = _chunk_fast, (order, dims, a_ptr, a_op, w_ptr, w_op)
        # the no-saturation path, phase by phase (needs distinct coordinates per list)
        unique, amax = _sum_bounds(n_channels, n_pes, a_ptr, a_x, a_y, a_v) if f <= 7 else (0, 0)
        if unique:
            ok = np.zeros(n_groups * n_pes, dtype=np.bool_)
            _run_chunks(_chunk_flags, n_groups * n_pes, (kc, dims, amax, w_ptr, w_k, w_v, ok))
            ok = ok.reshape(n_groups, n_pes)
            n_lists = n_groups * n_channels
            w_row, w_ok, c_ptr, c_op = _weight_rows(f, n_lists, w_ptr, w_op)
            sums = (w_row, w_ok, c_ptr, c_op)
            sum_kernel, sum_args = _chunk_sum, (order, dims, a_ptr, a_op, w_ptr, w_op, *sums)
            if f * i_vec == 16 and banks <= 63:  # its timing in registers (scnn_sum16)
                rs_row, coords_ok = _coord_rows(f, n_lists, w_ptr, w_op)
                if coords_ok:
                    sum_kernel = _chunk_sum16
                    sum_args = (order, dims, a_ptr, a_op, w_ptr, *sums, rs_row)
                    compile_helper.wait()  # a first CLI run may be compiling it in a helper
    else:
        kernel = _chunk_general
        args = (order, n_channels, n_pes, a_ptr, a_x, a_y, a_v, w_ptr, w_k, w_r, w_s, w_v)
        args += (win_x0, win_y0, ww, wh, out_w, out_h, stride, pad, f, i_vec, banks)
        args += (fifo_depth, shift, lo, hi)
    for g0 in range(0, n_groups, batch):
        n_items = min(batch, n_groups - g0) * n_pes
        acc[:n_items] = 0
        items = np.arange(n_items, dtype=np.int64)
        if unique:  # phases that cannot saturate take the sum path, the others ``kernel``
            sums_ok = ok[g0 + items // n_pes, order[items % n_pes]]
            summed = items[sums_ok]
            _run_chunks(sum_kernel, summed.size, (summed, g0, *sum_args, acc, st))
            items = items[~sums_ok]
        _run_chunks(kernel, items.size, (items, g0, *args, acc, st))
        _halo(g0, n_items, kc, n_pes, ww, wh, out_w, out_h, win_x0, win_y0, acc, st, stats, out)
    return stats
