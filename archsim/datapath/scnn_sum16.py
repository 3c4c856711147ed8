"""SCNN timing phase for a 16-input crossbar (F * I = 16, A <= 63): the published SCNN shape.

Same counters as ``scnn_sum._pe_phase_sum`` (and so as ``_pe_phase_fast`` and the per-cycle
twin), computed in two passes:

* ``_issue_stream16``: the phase's issues do not depend on the timing (the operand walk is
  fixed; only *when* each pair issues does), so one pass writes every issue's 16 product banks
  (byte j of ``xs[2 k], xs[2 k + 1]`` = the bank of multiplier j, F lanes per activation) and
  its valid products (bit j of ``vbs[k]``). An activation vector's bank bytes are built once
  and each weight vector adds its bank bytes to all rows with one word sum per 8 inputs
  (reduced modulo A byte-wise); only activations whose products may miss the output grid walk
  their weights one by one.
* ``_pe_phase_sum16``: the crossbar, with the 16 FIFO heads and second entries in four
  registers (one byte per input; ``_SENT`` marks an empty slot, ghost bank 63, which no real
  bank reaches since A <= 63). A cycle rotates the heads into priority order, grants each head
  whose bank no earlier head took (a running 64-bit bank mask), pops the winners, then issues
  the next vector pair unless a FIFO is full. Every step is branch-free: a stalled cycle
  issues the zero record ``vbs[n_iss]``.

``scnn_kernels.scnn_layer`` takes this path for no-saturation phases of that shape; other
shapes keep ``scnn_sum._pe_phase_sum``. ``tests/integration/test_scnn_reference.py`` checks
it against the per-cycle twin.
"""

from __future__ import annotations

import numpy as np

from archsim.datapath.scnn_sum import _INSIDE, _popcount, _store_counts, _u
from archsim.numba_cache import nb

#: bit l of an index -> byte l all ones (byte masks of 8 inputs)
_SPREAD = np.array(
    [sum(255 << (8 * b) for b in range(8) if t >> b & 1) for t in range(256)], dtype=np.uint64
).view(np.int64)
_SENT = 0x7F7F7F7F7F7F7F7F  # every byte an empty FIFO slot (bank bits 63)
# byte-wise (SWAR) sums run on uint64: numba marks int64 add/sub/mul no-signed-wrap, and these
# carry into bit 63
_ONES8 = _u(0x0101010101010101)
_HIB8 = _u(0x8080808080808080)
_U7 = _u(7)


@nb.njit(cache=True)
def _coord_rows(f, n_lists, w_ptr, w_op):  # pragma: no cover - compiled
    """Per weight iw, as the first of a vector of up to F (within its list): the r and the s of
    its real weights, one byte per lane (``rs_row[2 iw]``, ``rs_row[2 iw + 1]``); and whether
    every real r and s is below 127 (the byte compares of ``_issue_stream16``)."""
    n_w = w_op.shape[0] // 4 if n_lists > 0 else 0  # nothing to build when the path is off
    rs_row = np.zeros(2 * n_w, dtype=np.int64)
    ok = True
    for t in range(n_lists):
        for iw in range(w_ptr[t], w_ptr[t + 1]):
            for ln in range(min(f, w_ptr[t + 1] - iw)):
                if w_op[4 * (iw + ln) + 3] != 0:
                    r = w_op[4 * (iw + ln) + 1]
                    s = w_op[4 * (iw + ln) + 2]
                    ok = ok and 0 <= r < 127 and 0 <= s < 127
                    rs_row[2 * iw] |= min(max(r, 0), 127) << (8 * ln)
                    rs_row[2 * iw + 1] |= min(max(s, 0), 127) << (8 * ln)
    return rs_row, ok


@nb.njit(cache=True, inline="always")
def _lane_bits(m):  # pragma: no cover - compiled
    """Bit l = bit 7 of byte l, for the 8 bytes of the uint64 m (an int64)."""
    return np.int64(((((m >> _U7) & _ONES8) * _u(0x0102040810204080)) >> _u(56)) & _u(255))


@nb.njit(cache=True, inline="never")
def _issue_stream16(
    g, p, dims, a_ptr, a_op, w_ptr, w_row, w_ok, rs_row
):  # pragma: no cover - compiled
    """Every issue of group g on PE p, in order: (xs, vbs, issues, multiplies); see the
    module docstring. ``vbs`` and ``xs`` end with one all-zero issue.

    A product lands on the output grid when ``cy_lo <= r <= cy_hi`` and ``cx_lo <= s <= cx_hi``
    with ``cy_hi = min(y + pad, 127)``, ``cy_lo = min(max(y + pad - out_h + 1, 0), 127)`` (x
    alike; r, s < 127): four byte-wise compares over the lanes of an issue, one word per 8
    lanes. An activation whose products all land (``_INSIDE``) takes the bounds (0, 127).
    """
    n_channels, n_pes, out_w, out_h, f, i_vec, banks, depth, shift, lo, hi = dims
    n_iss = 0
    for c in range(n_channels):
        na = a_ptr[c * n_pes + p + 1] - a_ptr[c * n_pes + p]
        nw = w_ptr[g * n_channels + c + 1] - w_ptr[g * n_channels + c]
        if na > 0 and nw > 0:
            n_iss += ((na + i_vec - 1) // i_vec) * ((nw + f - 1) // f)
    xs = np.zeros(2 * n_iss + 2, dtype=np.int64)
    vbs = np.zeros(n_iss + 1, dtype=np.int64)
    ones = 0  # one in each of an activation's F lanes
    for ln in range(f):
        ones |= 1 << (8 * ln)
    rowrep = 0  # a weight vector's F bytes repeated over a word (F divides 8)
    rowbits = 0  # a weight vector's F valid bits repeated over the 16 inputs
    for q in range(16 // f):
        rowbits |= 1 << (f * q)
        if q < 8 // f:
            rowrep |= 1 << (8 * f * q)
    ub = _u(banks)
    bones8 = ub * _ONES8
    urowrep = _u(rowrep)
    # per lane byte of an activation vector (word 0: lanes 0-7, word 1: lanes 8-15): bank
    # term, 0x80 for a real activation, cy_hi, cy_lo, cx_hi, cx_lo
    lanes = np.zeros(12, dtype=np.int64)
    mults = 0
    k = 0
    for c in range(n_channels):
        a0 = a_ptr[c * n_pes + p]
        a1 = a_ptr[c * n_pes + p + 1]
        w0 = w_ptr[g * n_channels + c]
        w1 = w_ptr[g * n_channels + c + 1]
        if a0 == a1 or w0 == w1:
            continue
        for abase in range(a0, a1, i_vec):
            aend = min(abase + i_vec, a1)
            lanes[:] = 0
            inside = True
            for ia in range(abase, aend):
                lane = (ia - abase) * f
                wd = lane >> 3
                sh = 8 * (lane & 7)
                aw = a_op[_u(4 * ia)]
                lanes[wd] |= ((aw & 127) * ones) << sh
                ay_ = a_op[_u(4 * ia + 1)]
                ax_ = a_op[_u(4 * ia + 2)]
                if aw < 0:
                    inside = False  # a placeholder: no product to deliver
                    continue
                lanes[wd + 2] |= (ones << 7) << sh
                if ay_ == _INSIDE:
                    lanes[wd + 4] |= (127 * ones) << sh
                    lanes[wd + 8] |= (127 * ones) << sh
                    continue
                inside = False
                lanes[wd + 4] |= (min(ay_, 127) * ones) << sh
                lanes[wd + 6] |= (min(max(ay_ - out_h + 1, 0), 127) * ones) << sh
                lanes[wd + 8] |= (min(ax_, 127) * ones) << sh
                lanes[wd + 10] |= (min(max(ax_ - out_w + 1, 0), 127) * ones) << sh
            at0, at1, real0, real1 = _u(lanes[0]), _u(lanes[1]), _u(lanes[2]), _u(lanes[3])
            yh0, yh1, yl0, yl1 = _u(lanes[4]), _u(lanes[5]), _u(lanes[6]), _u(lanes[7])
            xh0, xh1, xl0, xl1 = _u(lanes[8]), _u(lanes[9]), _u(lanes[10]), _u(lanes[11])
            actbits = _lane_bits(real0) | (_lane_bits(real1) << 8)
            for wbase in range(w0, w1, f):
                wend = min(wbase + f, w1)
                mults += (aend - abase) * (wend - wbase)
                wrep = _u(w_row[_u(wbase)]) * urowrep
                x0 = at0 + wrep  # bank sums < 2 A <= 126 per byte, then modulo A
                x0 -= ((((x0 | _HIB8) - bones8) >> _U7) & _ONES8) * ub
                x1 = at1 + wrep
                x1 -= ((((x1 | _HIB8) - bones8) >> _U7) & _ONES8) * ub
                xs[_u(2 * k)] = np.int64(x0)
                xs[_u(2 * k + 1)] = np.int64(x1)
                wok = w_ok[_u(wbase)] * rowbits
                if inside:
                    vbs[_u(k)] = wok & actbits
                else:
                    rr = _u(rs_row[_u(2 * wbase)]) * urowrep
                    ss = _u(rs_row[_u(2 * wbase + 1)]) * urowrep
                    m0 = ((yh0 | _HIB8) - rr) & ((rr | _HIB8) - yl0)
                    m0 &= ((xh0 | _HIB8) - ss) & ((ss | _HIB8) - xl0) & real0
                    m1 = ((yh1 | _HIB8) - rr) & ((rr | _HIB8) - yl1)
                    m1 &= ((xh1 | _HIB8) - ss) & ((ss | _HIB8) - xl1) & real1
                    vbs[_u(k)] = wok & (_lane_bits(m0) | (_lane_bits(m1) << 8))
                k += 1
    return xs, vbs, n_iss, mults


@nb.njit(cache=True, inline="never")
def _pe_phase_sum16(
    g, p, dims, a_ptr, a_op, w_ptr, w_row, w_ok, rs_row, st
):  # pragma: no cover - compiled
    """``scnn_sum._pe_phase_sum`` for F * I = 16 and A <= 63; writes ``st[6]``."""
    depth = dims[7]
    xs, vbs, n_iss, mults = _issue_stream16(g, p, dims, a_ptr, a_op, w_ptr, w_row, w_ok, rs_row)
    spread = _SPREAD
    h0 = h1 = s0 = s1 = _SENT  # heads and second entries: byte j = input j (0..7, 8..15)
    prods = stalls = conflicts = 0
    occm = 0  # bit j: input j's FIFO holds a product
    two = 0  # bit j: it holds two
    cycle = 0
    rot = 0  # rotating priority: input rot ranks first this cycle
    last_delivery = -1
    last_issue = -1
    k = 0  # next issue
    full2 = depth == 2
    while k < n_iss or occm != 0:
        # byte t of (r0, r1) = input (rot + t) mod 16; every byte < 128, so >> is logical
        sb = 8 * (rot & 7)
        a0 = h1 if rot >= 8 else h0
        a1 = h0 if rot >= 8 else h1
        r0 = (a0 >> sb) | ((a1 << 1) << (63 - sb))
        r1 = (a1 >> sb) | ((a0 << 1) << (63 - sb))
        gm = 0  # banks granted so far (bit 63: the empty slots)
        lost = 0  # bit t: the t-th input in priority order lost its bank
        for t in range(8):
            bit = 1 << ((r0 >> (8 * t)) & 63)
            lost |= ((gm & bit) != 0) << t
            gm |= bit
        for t in range(8):
            bit = 1 << ((r1 >> (8 * t)) & 63)
            lost |= ((gm & bit) != 0) << (t + 8)
            gm |= bit
        lost = ((lost << rot) | (lost >> (16 - rot))) & 0xFFFF  # back to input order
        wins = occm & ~lost
        served = _popcount(gm & 0x7FFFFFFFFFFFFFFF)
        conflicts += _popcount(occm) - served
        prods += served
        last_delivery = cycle if occm != 0 else last_delivery
        # pop the winners: the second entry moves up, an empty slot behind it
        m0 = spread[_u(wins & 255)]
        m1 = spread[_u(wins >> 8)]
        h0 = (h0 & ~m0) | (s0 & m0)
        s0 = (s0 & ~m0) | (_SENT & m0)
        h1 = (h1 & ~m1) | (s1 & m1)
        s1 = (s1 & ~m1) | (_SENT & m1)
        occm ^= wins & ~two
        two &= ~wins
        # issue at the end of the cycle unless a FIFO is full (else the zero record)
        more = k < n_iss
        full = (two if full2 else occm) != 0
        go = more and not full
        stalls += more and full
        last_issue = cycle if go else last_issue
        vb = vbs[_u(k)] if go else 0
        x0 = xs[_u(2 * k)]
        x1 = xs[_u(2 * k + 1)]
        fresh = vb & ~occm  # into an empty FIFO's head, else behind its head
        behind = vb & occm
        m0 = spread[_u(fresh & 255)]
        m1 = spread[_u(fresh >> 8)]
        h0 = (h0 & ~m0) | (x0 & m0)
        h1 = (h1 & ~m1) | (x1 & m1)
        m0 = spread[_u(behind & 255)]
        m1 = spread[_u(behind >> 8)]
        s0 = (s0 & ~m0) | (x0 & m0)
        s1 = (s1 & ~m1) | (x1 & m1)
        occm |= vb
        two |= behind
        k += go
        cycle += 1
        rot = (rot + 1) & 15
    _store_counts(st, last_delivery, last_issue, n_iss, mults, prods, stalls, conflicts)
