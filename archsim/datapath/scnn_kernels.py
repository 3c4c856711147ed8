"""Fast SCNN model (numba): every product of the Cartesian product, through the crossbar.

Micro-architecture (the reference twin in ``scnn_reference.py`` steps the same machine):

* PE p owns a planar input tile; for output-channel group g and input channel c it walks its
  non-zero activations in vectors of I (outer loop) and the group's non-zero weights of channel c
  in vectors of F (inner loop). Each issue multiplies F x I pairs (fewer at the ends of the lists:
  fragmentation). A product's output coordinate is ``oy = (y + pad - r) / stride``,
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
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["scnn_layer", "SCNN_PE_FIELDS"]

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
):  # pragma: no cover - compiled
    """Simulate every (group, PE) phase; accumulate products into ``out[k, oy, ox]`` (int64).

    ``a_ptr[c * n_pes + p]`` bounds PE p's non-zero activations of channel c (global x, y);
    ``w_ptr[g * n_channels + c]`` bounds group g's non-zero weights of channel c (local k).
    Returns counters of shape (len(SCNN_PE_FIELDS), n_groups, n_pes).
    """
    nfi = f * i_vec
    stats = np.zeros((6, n_groups, n_pes), dtype=np.int64)
    # crossbar input FIFOs: per input a ring of fifo_depth (bank, addr, value)
    q_bank = np.zeros((nfi, fifo_depth), dtype=np.int64)
    q_addr = np.zeros((nfi, fifo_depth), dtype=np.int64)
    q_val = np.zeros((nfi, fifo_depth), dtype=np.int64)
    q_head = np.zeros(nfi, dtype=np.int64)
    q_len = np.zeros(nfi, dtype=np.int64)
    granted = np.zeros(banks, dtype=np.bool_)
    acc = np.zeros(kc * wh * ww, dtype=np.int64)
    lo = -(1 << (acc_bits - 1))
    hi = (1 << (acc_bits - 1)) - 1
    half = (1 << (shift - 1)) if shift > 0 else 0
    for g in range(n_groups):
        for p in range(n_pes):
            acc[:] = 0
            x0 = win_x0[p]
            y0 = win_y0[p]
            cycle = 0
            pending = 0  # products waiting in FIFOs
            # iterate issue slots: (c, activation vector, weight vector)
            c = 0
            av = 0
            wv = 0
            have_work = True
            # advance to the first (c, av, wv) with work
            while c < n_channels:
                na = a_ptr[c * n_pes + p + 1] - a_ptr[c * n_pes + p]
                nw = w_ptr[g * n_channels + c + 1] - w_ptr[g * n_channels + c]
                if na > 0 and nw > 0:
                    break
                c += 1
            if c >= n_channels:
                have_work = False
            last_delivery = -1
            last_issue = -1
            while have_work or pending > 0:
                # ---- crossbar: one product per bank, rotating priority
                granted[:] = False
                for j in range(nfi):
                    inp = (cycle + j) % nfi
                    if q_len[inp] == 0:
                        continue
                    h = q_head[inp]
                    b = q_bank[inp, h]
                    if granted[b]:
                        stats[5, g, p] += 1
                        continue
                    granted[b] = True
                    s_ = acc[q_addr[inp, h]] + q_val[inp, h]
                    if s_ > hi:
                        s_ = hi
                    elif s_ < lo:
                        s_ = lo
                    acc[q_addr[inp, h]] = s_
                    q_head[inp] = (h + 1) % fifo_depth
                    q_len[inp] -= 1
                    pending -= 1
                    stats[3, g, p] += 1
                    last_delivery = cycle
                # ---- multiplier array issue (end of cycle)
                if have_work:
                    room = True
                    for j in range(nfi):
                        if q_len[j] >= fifo_depth:
                            room = False
                            break
                    if not room:
                        stats[4, g, p] += 1
                    else:
                        stats[1, g, p] += 1
                        last_issue = cycle
                        abase = a_ptr[c * n_pes + p] + av * i_vec
                        aend = min(abase + i_vec, a_ptr[c * n_pes + p + 1])
                        wbase = w_ptr[g * n_channels + c] + wv * f
                        wend = min(wbase + f, w_ptr[g * n_channels + c + 1])
                        for ia in range(abase, aend):
                            for iw in range(wbase, wend):
                                stats[2, g, p] += 1
                                ny = a_y[ia] + pad - w_r[iw]
                                nx = a_x[ia] + pad - w_s[iw]
                                if ny < 0 or nx < 0 or ny % stride != 0 or nx % stride != 0:
                                    continue
                                oy = ny // stride
                                ox = nx // stride
                                if oy >= out_h or ox >= out_w:
                                    continue
                                addr = (w_k[iw] * wh + oy - y0) * ww + ox - x0
                                prod = w_v[iw] * a_v[ia]
                                prod = (prod + half) >> shift if shift > 0 else prod << (-shift)
                                inp = (ia - abase) * f + (iw - wbase)
                                slot = (q_head[inp] + q_len[inp]) % fifo_depth
                                q_bank[inp, slot] = addr % banks
                                q_addr[inp, slot] = addr
                                q_val[inp, slot] = prod
                                q_len[inp] += 1
                                pending += 1
                        # next issue slot
                        wv += 1
                        if wbase + f >= w_ptr[g * n_channels + c + 1]:
                            wv = 0
                            av += 1
                            if abase + i_vec >= a_ptr[c * n_pes + p + 1]:
                                av = 0
                                c += 1
                                while c < n_channels:
                                    na = a_ptr[c * n_pes + p + 1] - a_ptr[c * n_pes + p]
                                    nw = w_ptr[g * n_channels + c + 1] - w_ptr[g * n_channels + c]
                                    if na > 0 and nw > 0:
                                        break
                                    c += 1
                                if c >= n_channels:
                                    have_work = False
                cycle += 1
            stats[0, g, p] = max(last_delivery, last_issue) + 1
            # write back the window (halo exchange = adding neighbours' partial sums)
            for kl in range(kc):
                k = g * kc + kl
                if k >= out.shape[0]:
                    break
                for yy in range(wh):
                    oy = y0 + yy
                    if oy >= out_h:
                        break
                    for xx in range(ww):
                        ox = x0 + xx
                        if ox >= out_w:
                            break
                        out[k, oy, ox] += acc[(kl * wh + yy) * ww + xx]
    return stats
