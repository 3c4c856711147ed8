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

Four implementations of a phase give identical counters and outputs: ``_pe_phase`` (any
shape), ``_pe_phase_fast`` (bit-mask FIFO state; stride 1, F*I <= 64, A <= 64, FIFO depth <= 2,
i.e. the published SCNN and most sweeps) and, for those shapes with F <= 7 when no partial sum
can saturate, ``scnn_sum._pe_phase_sum`` (timing) plus ``scnn_sum._phase_sums`` (sums), whose
timing ``scnn_sum16._pe_phase_sum16`` replaces for F*I = 16 and A <= 63 (the published 4 x 4
multipliers and 32 banks). ``tests/integration/test_scnn_reference.py`` checks them against the
per-cycle twin.
"""

from __future__ import annotations

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from archsim.datapath.scnn_sum import (
    _FAR,
    _INSIDE,
    _advance,
    _cannot_saturate,
    _next_channel,
    _pe_phase_sum,
    _phase_sums,
    _store_counts,
    _sum_bounds,
    _u,
    _weight_rows,
)
from archsim.datapath.scnn_sum16 import _coord_rows, _pe_phase_sum16
from archsim.numba_cache import nb

__all__ = ["scnn_layer", "SCNN_PE_FIELDS", "ADDR_BITS"]

_SCRAMBLE = 37  # a prime: idx -> idx * 37 mod P is a permutation unless 37 divides P
_ACC_BUDGET = 1 << 21  # accumulator entries of one batch of phases (16 MB)

#: bits of an accumulator address inside a packed FIFO slot (windows up to 2**24 entries)
ADDR_BITS = 24

#: per (group, PE) counters returned by :func:`scnn_layer`, in this order.
SCNN_PE_FIELDS = (
    "cycles",  # phase cycles (first issue to last accumulation)
    "issues",  # vector pairs issued to the multiplier array
    "multiplies",  # multiplier slots used (valid + dropped products)
    "products",  # products delivered to the accumulators
    "issue_stalls",  # cycles a ready vector pair waited for FIFO space
    "conflicts",  # product-cycles spent waiting at a FIFO head that lost arbitration
)


@nb.njit(cache=True, inline="never")
def _pe_phase(
    g,
    p,
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
    x0,
    y0,
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
    lo,
    hi,
    acc,
    st,
):  # pragma: no cover - compiled
    """One group on one PE; accumulates into ``acc`` and writes counters into ``st[6]``."""
    nfi = f * i_vec
    # one FIFO slot = (product value << ADDR_BITS) | accumulator address, in one int64;
    # input j's ring buffer is q[j * fifo_depth : (j + 1) * fifo_depth]
    q = np.zeros(nfi * fifo_depth, dtype=np.int64)
    q_head = np.zeros(nfi, dtype=np.int64)
    q_len = np.zeros(nfi, dtype=np.int64)
    granted = np.zeros(banks, dtype=np.bool_)
    small = banks <= 64  # grants fit one 64-bit mask
    pow2 = (banks & (banks - 1)) == 0
    bmask = banks - 1
    amask = (1 << ADDR_BITS) - 1
    half = (1 << (shift - 1)) if shift > 0 else 0
    win_k = wh * ww  # accumulator entries per output channel
    issues = mults = prods = stalls = conflicts = 0
    full = 0  # FIFOs holding fifo_depth products
    occupied = 0  # FIFOs holding at least one product
    pending = 0
    cycle = 0
    rot = 0  # rotating priority: input rot ranks first this cycle
    last_delivery = -1
    last_issue = -1
    wbase_g = g * n_channels
    c = _next_channel(0, g, p, n_channels, n_pes, a_ptr, w_ptr)
    have_work = c < n_channels
    a_lo = a_hi = w_lo = w_hi = 0
    if have_work:
        a_lo, a_hi = a_ptr[c * n_pes + p], a_ptr[c * n_pes + p + 1]
        w_lo, w_hi = w_ptr[wbase_g + c], w_ptr[wbase_g + c + 1]
    abase = a_lo  # first activation of the current vector
    wbase = w_lo  # first weight of the current vector
    while have_work or pending > 0:
        if pending > 0:
            gmask = 0
            if not small:
                granted[:] = False
            left = occupied  # non-empty FIFOs not yet visited this cycle
            inp = rot
            while left > 0:
                n_in = q_len[inp]
                if n_in > 0:
                    left -= 1
                    h = q_head[inp]
                    word = q[inp * fifo_depth + h]
                    ad = word & amask
                    b = (ad & bmask) if pow2 else ad % banks
                    won = True
                    if small:
                        bit = 1 << b
                        if gmask & bit:
                            won = False
                        else:
                            gmask |= bit
                    elif granted[b]:
                        won = False
                    else:
                        granted[b] = True
                    if won:
                        v = acc[ad] + (word >> ADDR_BITS)
                        acc[ad] = hi if v > hi else (lo if v < lo else v)
                        h += 1
                        q_head[inp] = 0 if h == fifo_depth else h
                        if n_in == fifo_depth:
                            full -= 1
                        if n_in == 1:
                            occupied -= 1
                        q_len[inp] = n_in - 1
                        pending -= 1
                        prods += 1
                        last_delivery = cycle
                    else:
                        conflicts += 1
                inp += 1
                if inp == nfi:
                    inp = 0
        if have_work:
            if full > 0:
                stalls += 1
            else:
                issues += 1
                last_issue = cycle
                aend = min(abase + i_vec, a_hi)
                wend = min(wbase + f, w_hi)
                mults += (aend - abase) * (wend - wbase)
                for ia in range(abase, aend):
                    aval = a_v[ia]
                    if aval == 0:  # a placeholder: multiplied, nothing to deliver
                        continue
                    ay_ = a_y[ia] + pad
                    ax_ = a_x[ia] + pad
                    row = (ia - abase) * f - wbase
                    for iw in range(wbase, wend):
                        wval = w_v[iw]
                        if wval == 0:
                            continue
                        ny = ay_ - w_r[iw]
                        nx = ax_ - w_s[iw]
                        if ny < 0 or nx < 0:
                            continue
                        if stride != 1:
                            if ny % stride != 0 or nx % stride != 0:
                                continue
                            ny //= stride
                            nx //= stride
                        if ny >= out_h or nx >= out_w:
                            continue
                        addr = w_k[iw] * win_k + (ny - y0) * ww + nx - x0
                        prod = wval * aval
                        prod = (prod + half) >> shift if shift > 0 else prod << (-shift)
                        inp = row + iw
                        n_in = q_len[inp]
                        slot = q_head[inp] + n_in
                        if slot >= fifo_depth:
                            slot -= fifo_depth
                        q[inp * fifo_depth + slot] = (prod << ADDR_BITS) | addr
                        if n_in == 0:
                            occupied += 1
                        n_in += 1
                        q_len[inp] = n_in
                        if n_in == fifo_depth:
                            full += 1
                        pending += 1
                abase, wbase, a_hi, w_lo, w_hi, c, have_work = _advance(
                    wend, aend, abase, a_hi, w_lo, w_hi, c, g, p, n_channels, n_pes, a_ptr, w_ptr
                )
        cycle += 1
        rot += 1
        if rot == nfi:
            rot = 0
    _store_counts(st, last_delivery, last_issue, issues, mults, prods, stalls, conflicts)


@nb.njit(cache=True, inline="never")
def _pe_phase_fast(g, p, dims, a_ptr, a_op, w_ptr, w_op, acc, st):  # pragma: no cover - compiled
    """``_pe_phase`` for stride 1, F*I <= 64 inputs, A <= 64 banks, depth <= 2: same results.

    ``dims`` = (channels, PEs, out_w, out_h, F, I, A, depth, shift, lo, hi). The FIFO state is
    bit masks over the inputs (``occm``: holds a product, ``two``: holds two) and the entries
    ``q[4 j .. 4 j + 3]`` of input j (head word and value, then the second entry). A word is
    ``address * 128 + bank_sum``, the sum of an activation and a weight term of
    ``_operand_terms``; ``bank_of`` maps bank_sum to the bank. A cycle visits the occupied
    inputs in priority order (``trailing_zeros`` over the mask rotated by ``rot``), grants a
    head whose bank is still free in a 64-bit mask, then pops the winners (so a new head waits
    for the next cycle); conflicts are visits minus grants. Hot indices are ``uint64`` so numba
    drops its negative-index wraparound.
    """
    n_channels, n_pes, out_w, out_h, f, i_vec, banks, depth, shift, lo, hi = dims
    nfi = f * i_vec
    # FIFO j: head (word, value) at q[4 j], q[4 j + 1], the second entry at q[4 j + 2 ..]
    q = np.zeros(4 * nfi, dtype=np.int64)
    # bank of a word's low 7 bits (bank_sum): bank_sum, less A when bank_sum >= A
    bank_of = np.empty(128, dtype=np.int64)
    for t in range(128):
        bank_of[t] = t - banks if t >= banks else t
    oh1 = out_h - 1
    ow1 = out_w - 1
    sh_r = shift if shift > 0 else 0
    sh_l = -shift if shift < 0 else 0
    half = (1 << (shift - 1)) if shift > 0 else 0
    issues = mults = prods = stalls = conflicts = 0
    occm = 0  # bit j: input j's FIFO holds a product
    two = 0  # bit j: it holds two (depth 2 only)
    cycle = 0
    rot = 0  # rotating priority: input rot ranks first this cycle
    last_delivery = -1
    last_issue = -1
    wbase_g = g * n_channels
    c = _next_channel(0, g, p, n_channels, n_pes, a_ptr, w_ptr)
    have_work = c < n_channels
    a_hi = w_lo = w_hi = abase = wbase = 0
    if have_work:
        abase, a_hi = a_ptr[c * n_pes + p], a_ptr[c * n_pes + p + 1]
        w_lo, w_hi = w_ptr[wbase_g + c], w_ptr[wbase_g + c + 1]
        wbase = w_lo
    while have_work or occm != 0:
        if occm != 0:
            # pass 1: the occupied inputs in priority order (rot .. nfi - 1, then 0 .. rot - 1);
            # bit t of m is input rot + t, of rest input t (the wrapped part)
            if nfi <= 32:
                m = ((occm | (occm << nfi)) >> rot) & ((1 << nfi) - 1)
                rest = 0
            elif rot == 0:
                m = occm
                rest = 0
            else:
                m = (occm >> rot) & ((1 << (nfi - rot)) - 1)
                rest = occm & ((1 << rot) - 1)
            gmask = 0
            wins = 0
            waiting = 0
            served = 0
            base = rot
            while True:
                while m != 0:
                    j = base + trailing_zeros(m)
                    m &= m - 1
                    j -= nfi if j >= nfi else 0
                    waiting += 1
                    b = bank_of[_u(q[_u(4 * j)] & 127)]
                    won = ((gmask >> b) & 1) ^ 1
                    served += won
                    wins |= won << j
                    gmask |= 1 << b
                if rest == 0:
                    break
                m = rest
                rest = 0
                base = 0
            # pass 2: pop the winners (a new head waits for the next cycle); the second entry
            # moves to the head (a stale copy when the FIFO empties)
            occm ^= wins & ~two
            two &= ~wins
            while wins != 0:
                j = trailing_zeros(wins)
                wins &= wins - 1
                sl = 4 * j
                ad = q[_u(sl)] >> 7
                v = acc[_u(ad)] + q[_u(sl + 1)]
                acc[_u(ad)] = hi if v > hi else (lo if v < lo else v)
                q[_u(sl)] = q[_u(sl + 2)]
                q[_u(sl + 1)] = q[_u(sl + 3)]
            conflicts += waiting - served
            prods += served
            last_delivery = cycle
        if have_work:
            if (two if depth == 2 else occm) != 0:  # a full FIFO
                stalls += 1
            else:
                issues += 1
                last_issue = cycle
                aend = min(abase + i_vec, a_hi)
                wend = min(wbase + f, w_hi)
                mults += (aend - abase) * (wend - wbase)
                for ia in range(abase, aend):
                    aw = a_op[_u(4 * ia)]
                    ay_ = a_op[_u(4 * ia + 1)]
                    ax_ = a_op[_u(4 * ia + 2)]
                    aval = a_op[_u(4 * ia + 3)]
                    row = (ia - abase) * f - wbase
                    for iw in range(wbase, wend):
                        word = aw + w_op[_u(4 * iw)]
                        if word < 0:
                            continue  # a placeholder, or off the output grid
                        if ay_ != _INSIDE:
                            ny = ay_ - w_op[_u(4 * iw + 1)]
                            nx = ax_ - w_op[_u(4 * iw + 2)]
                            if (ny | nx | (oh1 - ny) | (ow1 - nx)) < 0:
                                continue  # off the output grid
                        j = row + iw
                        n_in = (occm >> j) & 1  # no FIFO is full here
                        sl = 4 * j + 2 * n_in
                        q[_u(sl)] = word
                        q[_u(sl + 1)] = ((w_op[_u(4 * iw + 3)] * aval + half) >> sh_r) << sh_l
                        occm |= 1 << j
                        two |= n_in << j
                abase, wbase, a_hi, w_lo, w_hi, c, have_work = _advance(
                    wend, aend, abase, a_hi, w_lo, w_hi, c, g, p, n_channels, n_pes, a_ptr, w_ptr
                )
        cycle += 1
        rot += 1
        if rot == nfi:
            rot = 0
    _store_counts(st, last_delivery, last_issue, issues, mults, prods, stalls, conflicts)


@nb.njit(cache=True)
def _operand_terms(
    fast,
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
    """Per-operand terms of ``_pe_phase_fast`` (empty arrays unless ``fast``).

    ``a_op[4 ia .. 4 ia + 3]`` = (a_word, y + pad, x + pad, value), ``w_op[4 iw .. 4 iw + 3]`` =
    (w_word, r, s, value). A product's word ``address * 128 + bank_sum`` is ``a_word + w_word``
    with ``a_word = a_t * 128 + a_t mod A``, ``a_t = (y + pad - y0) * WW + x + pad - x0``,
    ``w_word = w_t * 128 + w_t mod A``, ``w_t = k_local * WH * WW - r * WW - s`` (bank_sum < 2A
    <= 128), and its output coordinate is ``oy = y + pad - r``, ``ox = x + pad - s``.
    Placeholder zeros get a negative word and coordinates off every output grid. An activation
    whose products all land on the grid (for every r, s of the layer's weights) gets
    ``y + pad = _INSIDE``: its products skip the coordinate test.
    """
    n_w = w_v.shape[0] if fast else 0
    n_a = a_v.shape[0] if fast else 0
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
    if fast:
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


@nb.njit(cache=True, parallel=True)
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
    Phases run in parallel threads, a batch of groups at a time (they share nothing until
    the halo sums); a phase takes ``_pe_phase_sum`` when no partial sum can saturate.
    Returns counters of shape (len(SCNN_PE_FIELDS), n_groups, n_pes).
    """
    stats = np.zeros((6, n_groups, n_pes), dtype=np.int64)
    win = kc * wh * ww
    # groups run in batches whose accumulators fit _ACC_BUDGET entries: one parallel loop over
    # a batch's (group, PE) phases, then its halo sums (no barrier per group)
    batch = max(1, min(n_groups, _ACC_BUDGET // (n_pes * max(win, 1))))
    acc = np.zeros((batch * n_pes, win), dtype=np.int64)
    st = np.zeros((batch * n_pes, 6), dtype=np.int64)
    lo = -(1 << (acc_bits - 1))
    hi = (1 << (acc_bits - 1)) - 1
    order = np.empty(n_pes, dtype=np.int64)
    for idx in range(n_pes):
        order[idx] = (idx * _SCRAMBLE) % n_pes if n_pes % _SCRAMBLE else idx
    fast = stride == 1 and f * i_vec <= 64 and banks <= 64 and fifo_depth <= 2
    terms = _operand_terms(
        fast,
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
    a_op, w_op = terms
    dims = (n_channels, n_pes, out_w, out_h, f, i_vec, banks, fifo_depth, shift, lo, hi)
    use_sum = fast and f <= 7  # the no-saturation path, phase by phase
    n_lists = n_groups * n_channels if use_sum else 0
    w_row, w_ok, c_ptr, c_op = _weight_rows(f, n_lists, w_ptr, w_op)
    # its timing in registers (scnn_sum16) for 16 inputs and at most 63 banks
    sum16 = use_sum and f * i_vec == 16 and banks <= 63
    rs_row, coords_ok = _coord_rows(f, n_lists if sum16 else 0, w_ptr, w_op)
    sum16 = sum16 and coords_ok
    unique, amax = _sum_bounds(n_channels, n_pes, a_ptr, a_x, a_y, a_v)
    for g0 in range(0, n_groups, batch):
        n_items = min(batch, n_groups - g0) * n_pes
        acc[:, :] = 0
        # threads take contiguous chunks of the loop: group by group (a group's weights stay
        # in cache), PEs in a fixed scrambled order that spreads the idle edge tiles over
        # the threads (results do not depend on the order)
        for idx in nb.prange(n_items):
            p = order[idx % n_pes]
            g = g0 + idx // n_pes
            it = (g - g0) * n_pes + p
            if (
                use_sum
                and unique
                and _cannot_saturate(g, p, kc, n_channels, n_pes, shift, hi, amax, w_ptr, w_k, w_v)
            ):
                if sum16:
                    _pe_phase_sum16(g, p, dims, a_ptr, a_op, w_ptr, w_row, w_ok, rs_row, st[it])
                else:
                    _pe_phase_sum(g, p, dims, a_ptr, a_op, w_ptr, w_op, w_row, w_ok, st[it])
                _phase_sums(g, p, dims, a_ptr, a_op, w_ptr, c_ptr, c_op, acc[it])
                continue
            if fast:
                _pe_phase_fast(g, p, dims, a_ptr, a_op, w_ptr, w_op, acc[it], st[it])
                continue
            _pe_phase(
                g,
                p,
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
                win_x0[p],
                win_y0[p],
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
                lo,
                hi,
                acc[it],
                st[it],
            )
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
    return stats
