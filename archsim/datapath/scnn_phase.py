"""SCNN phases (one group on one PE) and the loops that run a range of them in one thread.

``_pe_phase`` (any shape) and ``_pe_phase_fast`` (bit-mask FIFO state; stride 1, F*I <= 64,
A <= 64, FIFO depth <= 2) model the machine described in ``scnn_kernels``. Each ``_chunk_*``
function runs phases ``lo .. hi - 1`` of a batch with one phase implementation (and, for the
no-saturation paths, its fallback), without the GIL: ``scnn_kernels.scnn_layer`` picks the
function for a layer and runs its chunks in threads.

One loop per path rather than one that branches per phase: numba compiles every function a
kernel calls, so a run compiles only the paths its layers take (the general ``_pe_phase`` only
for stride > 1 without phase decomposition, ``scnn_sum._pe_phase_sum`` only for shapes other
than 16 inputs), and no loop is a numba ``parallel=True`` kernel (its parfor lowering cost
~7 s of a first run's ~21 s of compiles).
"""

from __future__ import annotations

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from archsim.datapath.scnn_sum import (
    _INSIDE,
    _advance,
    _cannot_saturate,
    _next_channel,
    _pe_phase_sum,
    _phase_sums,
    _store_counts,
    _u,
)
from archsim.datapath.scnn_sum16 import _pe_phase_sum16
from archsim.numba_cache import nb

#: bits of an accumulator address inside a packed FIFO slot (windows up to 2**24 entries)
ADDR_BITS = 24


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
    granted = np.zeros(banks, dtype=np.int64)  # 0/1: no np.zeros(bool) to compile
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


@nb.njit(cache=True, nogil=True)
def _chunk_general(
    lo_i,
    hi_i,
    items,
    g0,
    order,
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
    lo,
    hi,
    acc,
    st,
):  # pragma: no cover - compiled
    """Phases ``items[lo_i:hi_i]`` of the batch from group ``g0`` on ``_pe_phase``: item idx is
    PE ``order[idx % n_pes]`` of group ``g0 + idx // n_pes``."""
    for t in range(lo_i, hi_i):
        idx = items[t]
        p = order[idx % n_pes]
        it = (idx // n_pes) * n_pes + p
        _pe_phase(
            g0 + idx // n_pes,
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


@nb.njit(cache=True, nogil=True)
def _chunk_fast(
    lo_i, hi_i, items, g0, order, dims, a_ptr, a_op, w_ptr, w_op, acc, st
):  # pragma: no cover - compiled
    """Phases ``items[lo_i:hi_i]`` (as ``_chunk_general``) on ``_pe_phase_fast``."""
    n_pes = dims[1]
    for t in range(lo_i, hi_i):
        idx = items[t]
        p = order[idx % n_pes]
        it = (idx // n_pes) * n_pes + p
        _pe_phase_fast(g0 + idx // n_pes, p, dims, a_ptr, a_op, w_ptr, w_op, acc[it], st[it])


@nb.njit(cache=True, nogil=True)
def _chunk_flags(lo_i, hi_i, kc, dims, amax, w_ptr, w_k, w_v, ok):  # pragma: no cover - compiled
    """``ok[g * n_pes + p]`` for phases ``lo_i .. hi_i - 1`` of the layer: whether no partial
    sum of group g on PE p can saturate (``scnn_sum._cannot_saturate``)."""
    n_channels, n_pes, shift, hi = dims[0], dims[1], dims[8], dims[10]
    for i in range(lo_i, hi_i):
        g = i // n_pes
        p = i - g * n_pes
        ok[i] = _cannot_saturate(g, p, kc, n_channels, n_pes, shift, hi, amax, w_ptr, w_k, w_v)


@nb.njit(cache=True, nogil=True)
def _chunk_sum(
    lo_i, hi_i, items, g0, order, dims, a_ptr, a_op, w_ptr, w_op, w_row, w_ok, c_ptr, c_op, acc, st
):  # pragma: no cover - compiled
    """Phases ``items[lo_i:hi_i]`` (none of which can saturate) on ``scnn_sum._pe_phase_sum``
    (timing) and ``_phase_sums`` (sums)."""
    n_pes = dims[1]
    for t in range(lo_i, hi_i):
        idx = items[t]
        p = order[idx % n_pes]
        g = g0 + idx // n_pes
        it = (idx // n_pes) * n_pes + p
        _pe_phase_sum(g, p, dims, a_ptr, a_op, w_ptr, w_op, w_row, w_ok, st[it])
        _phase_sums(g, p, dims, a_ptr, a_op, w_ptr, c_ptr, c_op, acc[it])


@nb.njit(cache=True, nogil=True)
def _chunk_sum16(
    lo_i,
    hi_i,
    items,
    g0,
    order,
    dims,
    a_ptr,
    a_op,
    w_ptr,
    w_row,
    w_ok,
    c_ptr,
    c_op,
    rs_row,
    acc,
    st,
):  # pragma: no cover - compiled
    """``_chunk_sum`` with the 16-input timing ``scnn_sum16._pe_phase_sum16``."""
    n_pes = dims[1]
    for t in range(lo_i, hi_i):
        idx = items[t]
        p = order[idx % n_pes]
        g = g0 + idx // n_pes
        it = (idx // n_pes) * n_pes + p
        _pe_phase_sum16(g, p, dims, a_ptr, a_op, w_ptr, w_row, w_ok, rs_row, st[it])
        _phase_sums(g, p, dims, a_ptr, a_op, w_ptr, c_ptr, c_op, acc[it])
