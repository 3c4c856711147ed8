"""SCNN phase without saturation: counters as ``_pe_phase_fast``, products summed apart.

When no partial sum of a (group, PE) phase can leave the accumulator's range (checked per phase
by :func:`_cannot_saturate`: per weight, |w| times the tile's largest activation of its
channel), the order in which products reach the accumulators cannot change any sum. The phase
then splits in two:

* ``_pe_phase_sum``: the crossbar timing alone. A FIFO entry is just its bank (one byte per
  multiplier input, a 64-bit word per multiplier row), an issue builds a row's F banks with one
  word sum, and arbitration walks the inputs in priority order without branching on occupancy
  (or visits only the occupied ones when few are).
* ``_phase_sums``: every delivered product added into the accumulator window in one tight loop
  per (channel, activation) over the channel's real weights.

``scnn_kernels.scnn_layer`` picks this path per phase; otherwise ``_pe_phase_fast`` keeps the
product values in the FIFOs and saturates at every accumulation as before.

numba keys a cached ``scnn_phase._chunk_sum`` on ``scnn_phase.py`` alone, while its machine
code embeds these functions; ``archsim.numba_cache`` therefore caches kernels under a digest of
every ``datapath`` source, so an edit here recompiles the phase loops too.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from archsim.numba_cache import nb

_FAR = 1 << 40  # a coordinate that misses every output grid (placeholder zeros)
_u = np.uint64  # an index cast to unsigned: numba skips its negative-index wraparound
_INSIDE = -1  # y + pad of an activation whose products all land on the output grid


@nb.njit(cache=True, inline="always")
def _next_channel(c, g, p, n_channels, n_pes, a_ptr, w_ptr):  # pragma: no cover - compiled
    """First channel >= c in which PE p holds activations and group g weights (else n_channels)."""
    while c < n_channels:
        if a_ptr[c * n_pes + p + 1] > a_ptr[c * n_pes + p] and (
            w_ptr[g * n_channels + c + 1] > w_ptr[g * n_channels + c]
        ):
            break
        c += 1
    return c


@nb.njit(cache=True, inline="always")
def _advance(  # pragma: no cover - compiled
    wend, aend, abase, a_hi, w_lo, w_hi, c, g, p, n_channels, n_pes, a_ptr, w_ptr
):
    """The operand pair after an issue that used weights up to ``wend`` and activations up to
    ``aend``: the next weight slice, else the next activation slice, else the next channel with
    work. Returns (abase, wbase, a_hi, w_lo, w_hi, c, have_work)."""
    wbase = wend
    have_work = True
    if wend >= w_hi:
        wbase = w_lo
        abase = aend
        if aend >= a_hi:
            c = _next_channel(c + 1, g, p, n_channels, n_pes, a_ptr, w_ptr)
            have_work = c < n_channels
            if have_work:
                abase, a_hi = a_ptr[c * n_pes + p], a_ptr[c * n_pes + p + 1]
                wc = g * n_channels + c
                w_lo, w_hi = w_ptr[wc], w_ptr[wc + 1]
                wbase = w_lo
    return abase, wbase, a_hi, w_lo, w_hi, c, have_work


@nb.njit(cache=True, inline="always")
def _store_counts(  # pragma: no cover - compiled
    st, last_delivery, last_issue, issues, mults, prods, stalls, conflicts
):
    """A phase's six counters into ``st``: cycles, issues, multiplies, products, stalls,
    bank conflicts."""
    st[0] = max(last_delivery, last_issue) + 1
    st[1] = issues
    st[2] = mults
    st[3] = prods
    st[4] = stalls
    st[5] = conflicts


@intrinsic
def _popcount(typingctx, src):  # pragma: no cover - compiled
    """Set bits of an integer (LLVM ctpop)."""
    if not isinstance(src, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return src(src), codegen


@nb.njit(cache=True, inline="never")
def _pe_phase_sum(
    g, p, dims, a_ptr, a_op, w_ptr, w_op, w_row, w_ok, st
):  # pragma: no cover - compiled
    """The counters of ``_pe_phase_fast`` (F <= 7) without product values; writes ``st[6]``.

    The FIFOs only hold banks, one byte per input in a word per multiplier row (``head[i]``,
    ``second[i]``: inputs i F .. i F + F - 1). An issue row's banks are one word sum (the
    activation's bank term in every byte + ``w_row`` of the weight vector) reduced modulo A
    byte-wise; pops move second to head under a byte mask.
    """
    n_channels, n_pes, out_w, out_h, f, i_vec, banks, depth, shift, lo, hi = dims
    nfi = f * i_vec
    head = np.zeros(i_vec, dtype=np.int64)
    second = np.zeros(i_vec, dtype=np.int64)
    spread = np.zeros(1 << f, dtype=np.int64)  # bit l -> byte l all ones
    for t in range(1 << f):
        for ln in range(f):
            if (t >> ln) & 1:
                spread[t] |= 255 << (8 * ln)
    pos_of = np.empty(2 * nfi, dtype=np.int64)  # input j (and j + nfi): row * 64 + bit
    for j in range(nfi):
        pos_of[j] = (j // f) * 64 + 8 * (j % f)
        pos_of[j + nfi] = pos_of[j]
    ones = 0
    for ln in range(f):
        ones |= 1 << (8 * ln)
    fm = (1 << f) - 1
    hib = ones << 7
    bones = banks * ones
    oh1 = out_h - 1
    ow1 = out_w - 1
    issues = mults = prods = stalls = conflicts = 0
    occm = 0
    two = 0
    cycle = 0
    rot = 0
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
            gmask = 0
            wins = 0
            visits = _popcount(occm)
            if 3 * visits < nfi:  # few occupied inputs: visit only them, in priority order
                m = ((occm | (occm << nfi)) >> rot) & ((1 << nfi) - 1) if nfi <= 32 else 0
                rest = 0
                if nfi > 32:
                    if rot == 0:
                        m = occm
                    else:
                        m = (occm >> rot) & ((1 << (nfi - rot)) - 1)
                        rest = occm & ((1 << rot) - 1)
                base = rot
                while True:
                    while m != 0:
                        j = base + trailing_zeros(m)
                        m &= m - 1
                        j -= nfi if j >= nfi else 0
                        pos = pos_of[_u(j)]
                        b = (head[_u(pos >> 6)] >> (pos & 63)) & 63
                        wins |= (((gmask >> b) & 1) ^ 1) << j
                        gmask |= 1 << b
                    if rest == 0:
                        break
                    m = rest
                    rest = 0
                    base = 0
            elif nfi <= 32:
                occ2 = occm | (occm << nfi)
                for k in range(rot, rot + nfi):
                    o = (occ2 >> k) & 1
                    pos = pos_of[_u(k)]
                    b = (head[_u(pos >> 6)] >> (pos & 63)) & 63
                    wins |= (o & ~(gmask >> b)) << k
                    gmask |= o << b
                wins = (wins | (wins >> nfi)) & ((1 << nfi) - 1)
            else:
                j = rot
                for _t in range(nfi):
                    o = (occm >> j) & 1
                    pos = pos_of[_u(j)]
                    b = (head[_u(pos >> 6)] >> (pos & 63)) & 63
                    wins |= (o & ~(gmask >> b)) << j
                    gmask |= o << b
                    j += 1
                    j = 0 if j == nfi else j
            served = _popcount(wins)
            mv = wins & two
            for i in range(i_vec):
                mk = spread[_u((mv >> (i * f)) & fm)]
                head[i] ^= (head[i] ^ second[i]) & mk
            occm ^= wins & ~two
            two &= ~wins
            conflicts += visits - served
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
                wr = w_row[_u(wbase)]
                wok = w_ok[_u(wbase)]
                for ia in range(abase, aend):
                    aw = a_op[_u(4 * ia)]
                    ay_ = a_op[_u(4 * ia + 1)]
                    i = ia - abase
                    x = (aw & 127) * ones + wr
                    x -= ((((x | hib) - bones) >> 7) & ones) * banks
                    if ay_ == _INSIDE:
                        vb = wok
                    elif aw < 0:
                        vb = 0
                    else:
                        ax_ = a_op[_u(4 * ia + 2)]
                        vb = 0
                        for iw in range(wbase, wend):
                            ny = ay_ - w_op[_u(4 * iw + 1)]
                            nx = ax_ - w_op[_u(4 * iw + 2)]
                            word = aw + w_op[_u(4 * iw)]
                            off = (ny | nx | (oh1 - ny) | (ow1 - nx) | word) >> 63
                            vb |= (off + 1) << (iw - wbase)
                    sh = i * f
                    occ = (occm >> sh) & fm
                    mk = spread[_u(vb & ~occ)]
                    head[i] = (head[i] & ~mk) | (x & mk)
                    mk = spread[_u(vb & occ)]
                    second[i] = (second[i] & ~mk) | (x & mk)
                    occm |= vb << sh
                    two |= (vb & occ) << sh
                abase, wbase, a_hi, w_lo, w_hi, c, have_work = _advance(
                    wend, aend, abase, a_hi, w_lo, w_hi, c, g, p, n_channels, n_pes, a_ptr, w_ptr
                )
        cycle += 1
        rot += 1
        if rot == nfi:
            rot = 0
    _store_counts(st, last_delivery, last_issue, issues, mults, prods, stalls, conflicts)


@nb.njit(cache=True, inline="never")
def _phase_sums(g, p, dims, a_ptr, a_op, w_ptr, c_ptr, c_op, acc):  # pragma: no cover - compiled
    """Add every delivered product of group g on PE p into ``acc`` (no saturation possible).

    ``c_op[4 t .. 4 t + 3]`` = (address term, r, s, value) of the real weights of each
    (group, channel), bounded by ``c_ptr``; an activation's products land on
    ``a_word // 128 + address term``.

    A border activation's products are summed without branching: a product off the output
    grid (which of them is unpredictable, and a mispredicted branch per product cost more
    than the sum) adds 0 into ``acc[0]``. Inside activations skip the left shift when the
    product is only shifted right.
    """
    n_channels, n_pes, out_w, out_h, f, i_vec, banks, depth, shift, lo, hi = dims
    sh_r = shift if shift > 0 else 0
    sh_l = -shift if shift < 0 else 0
    half = (1 << (shift - 1)) if shift > 0 else 0
    oh1 = out_h - 1
    ow1 = out_w - 1
    for c in range(n_channels):
        w0 = c_ptr[g * n_channels + c]
        w1 = c_ptr[g * n_channels + c + 1]
        if w0 == w1:
            continue
        for ia in range(a_ptr[c * n_pes + p], a_ptr[c * n_pes + p + 1]):
            aw = a_op[_u(4 * ia)]
            if aw < 0:
                continue  # a placeholder
            at = aw >> 7
            ay_ = a_op[_u(4 * ia + 1)]
            aval = a_op[_u(4 * ia + 3)]
            if ay_ == _INSIDE:
                if sh_l == 0:
                    for t in range(w0, w1):
                        v = (c_op[_u(4 * t + 3)] * aval + half) >> sh_r
                        acc[_u(at + c_op[_u(4 * t)])] += v
                else:
                    for t in range(w0, w1):
                        v = (c_op[_u(4 * t + 3)] * aval) << sh_l
                        acc[_u(at + c_op[_u(4 * t)])] += v
            else:
                ax_ = a_op[_u(4 * ia + 2)]
                for t in range(w0, w1):
                    ny = ay_ - c_op[_u(4 * t + 1)]
                    nx = ax_ - c_op[_u(4 * t + 2)]
                    # all ones when the product lands on the grid, else 0
                    keep = ~((ny | nx | (oh1 - ny) | (ow1 - nx)) >> 63)
                    v = ((c_op[_u(4 * t + 3)] * aval + half) >> sh_r) << sh_l
                    acc[_u((at + c_op[_u(4 * t)]) & keep)] += v & keep


@nb.njit(cache=True)
def _weight_rows(f, n_lists, w_ptr, w_op):  # pragma: no cover - compiled
    """Weight terms of the no-saturation path.

    Per weight iw, as the first of a vector of up to F (within its list): ``w_row[iw]`` = the
    vector's bank terms, one byte per weight (0 for placeholders), ``w_ok[iw]`` = bit mask of
    its real weights. ``c_op[4 t .. 4 t + 3]`` = (address term, r, s, value) of the real
    weights only, list t's bounded by ``c_ptr[t]``.
    """
    n_w = w_op.shape[0] // 4
    w_row = np.zeros(n_w, dtype=np.int64)
    w_ok = np.zeros(n_w, dtype=np.int64)
    for t in range(n_lists):
        for iw in range(w_ptr[t], w_ptr[t + 1]):
            for ln in range(min(f, w_ptr[t + 1] - iw)):
                if w_op[4 * (iw + ln) + 3] != 0:
                    w_row[iw] |= (w_op[4 * (iw + ln)] & 127) << (8 * ln)
                    w_ok[iw] |= 1 << ln
    c_ptr = np.zeros(n_lists + 1, dtype=np.int64)
    for t in range(n_lists):
        c_ptr[t + 1] = c_ptr[t]
        for iw in range(w_ptr[t], w_ptr[t + 1]):
            c_ptr[t + 1] += w_op[4 * iw + 3] != 0
    c_op = np.zeros(4 * c_ptr[n_lists], dtype=np.int64)
    u = 0
    for iw in range(w_ptr[n_lists] if n_lists > 0 else 0):
        if w_op[4 * iw + 3] != 0:
            c_op[4 * u] = w_op[4 * iw] >> 7
            c_op[4 * u + 1] = w_op[4 * iw + 1]
            c_op[4 * u + 2] = w_op[4 * iw + 2]
            c_op[4 * u + 3] = w_op[4 * iw + 3]
            u += 1
    return w_row, w_ok, c_ptr, c_op


@nb.njit(cache=True)
def _sum_bounds(n_channels, n_pes, a_ptr, a_x, a_y, a_v):  # pragma: no cover - compiled
    """``amax[c * P + p]`` = max |activation| of PE p's channel-c list, and whether every list
    holds each coordinate at most once (row-major strictly increasing), which
    :func:`_cannot_saturate` relies on."""
    amax = np.zeros(n_channels * n_pes, dtype=np.int64)
    ok = True
    for cp in range(n_channels * n_pes):
        py = px = -1
        for ia in range(a_ptr[cp], a_ptr[cp + 1]):
            if a_v[ia] != 0:
                amax[cp] = max(amax[cp], abs(a_v[ia]))
                if a_y[ia] < py or (a_y[ia] == py and a_x[ia] <= px):
                    ok = False
                py, px = a_y[ia], a_x[ia]
    return ok, amax


@nb.njit(cache=True, inline="never")
def _cannot_saturate(
    g, p, kc, n_channels, n_pes, shift, hi, amax, w_ptr, w_k, w_v
):  # pragma: no cover - compiled
    """Whether every partial sum of group g on PE p stays within the accumulator's range.

    An output of channel k collects, per input channel c, at most one product per weight (the
    activations of a tile are distinct coordinates), each of magnitude at most
    ``(|w| * amax >> shift) + 1`` (exactly ``|w| * amax << -shift`` when shift <= 0); the
    bound sums that over the group's weights of each k.
    """
    bound = np.zeros(kc, dtype=np.int64)
    for c in range(n_channels):
        am = amax[c * n_pes + p]
        if am == 0:
            continue  # no activation: no product
        for iw in range(w_ptr[g * n_channels + c], w_ptr[g * n_channels + c + 1]):
            if w_v[iw] != 0:
                m = abs(w_v[iw]) * am
                bound[w_k[iw]] += (m >> shift) + 1 if shift > 0 else m << -shift
    top = bound[0]  # a loop, not bound.max(): numba would compile np.max for it (0.6 s)
    for k in range(1, kc):
        top = max(top, bound[k])
    return top <= hi
