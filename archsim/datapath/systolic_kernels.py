"""Fast systolic-array timing: fold arithmetic and a numba model of SCALE-Sim 3.0.0's memory.

A GEMM ``O[M x N] = I[M x K] F[K x N]`` is mapped on an R x C array as SCALE-Sim maps it
(Samajdar et al., ISPASS 2020): per dataflow the *spatial* dimensions Sr (over the R rows), Sc
(over the C columns) and the *temporal* dimension T are

* OS (output stationary): Sr = M, Sc = N, T = K;
* WS (weight stationary): Sr = K, Sc = N, T = M;
* IS (input stationary):  Sr = K, Sc = M, T = N;

and the array runs ``ceil(Sr/R) * ceil(Sc/C)`` folds (column fold outer, row fold inner).

``scalesim_memory`` reproduces, without building SCALE-Sim's demand/trace matrices, what
SCALE-Sim 3.0.0 computes from them (its ``systolic_compute_{os,ws,is}`` demand matrices run
through ``double_buffered_scratchpad`` with ``read_buffer`` / ``read_buffer_estimate_bw`` and
``write_buffer``), including its quirks:

* demand rows per fold: OS ``T + R + C - 2``, WS and IS ``2R + C + T - 2``; row ``i`` is issued
  at cycle ``i + stalls so far``; "Total Cycles" is the cycle of the last OFMAP row, i.e.
  ``folds * rows_per_fold - 1 + stalls`` when the last row does not stall;
* IFMAP/FILTER read buffers (USER bandwidth mode): the operand's *prefetch order* (per fold
  block, anti-diagonal roll-out for the skewed operands, row-major otherwise) is cut into sets
  of ``ceil(size/100)`` valid addresses; the active window holds ``ceil(active/set)`` sets and
  each miss shifts it by ``ceil(prefetch/set)`` sets (circularly) and issues one prefetch of
  ``ceil(prefetch_size / bw)`` DRAM lines that completes ``lines + 1`` cycles after the
  previous one; the stall bookkeeping adds a negative "stall" when the prefetch finished early
  and twice a positive one, exactly as ``read_buffer.service_reads`` does;
* CALC (estimated-bandwidth) mode never stalls reads;
* the OFMAP write buffer fills lines of ``bw`` words, drains ``ceil(drain/bw)`` lines when the
  active half is full (a partial line is flushed first) and stalls the array when it is full
  while a drain is in flight.

All cycle and count arithmetic is in int64. Addresses follow SCALE-Sim's operand matrices:
IFMAP im2col addresses (``-1`` where a window leaves the image), FILTER
``n * window + k``, OFMAP ``m * N + n``, each plus its offset (the offsets do not change any
timing, so they are 0 here).
"""

from __future__ import annotations

import numpy as np

from archsim.datapath.systolic_folds import (
    _DF_CODE,
    DATAFLOWS,
    SCALESIM_FIELDS,
    fold_counts,
    paper_fold_cycles,
    scalesim_rows_per_fold,
    spatio_temporal,
)
from archsim.datapath.systolic_prefetch import _build_sets, _ifmap_addr
from archsim.numba_cache import nb

__all__ = [
    "DATAFLOWS",
    "SCALESIM_FIELDS",
    "spatio_temporal",
    "fold_counts",
    "scalesim_rows_per_fold",
    "paper_fold_cycles",
    "scalesim_memory",
    "fold_demands",
]


@nb.njit(cache=True)
def _demand(df, op, fr, fc, r, c, R, C, M, N, K, T, g):
    """Address demanded by column c of demand row r of fold (fr, fc); -1 when none."""
    if df == 0:  # OS: Sr = M, Sc = N
        u = r - c
        if op == 0:
            m = fr * R + c
            return _ifmap_addr(m, u, g) if (0 <= u < T and m < M) else -1
        if op == 1:
            n = fc * C + c
            return n * g[8] + u if (0 <= u < T and n < N) else -1
        j = u - (T - 1)
        if 0 <= j < R:
            m = fr * R + (R - 1 - j)
            n = fc * C + c
            if m < M and n < N:
                return m * g[7] + n
        return -1
    if df == 1:  # WS: Sr = K, Sc = N, T = M
        if op == 0:
            t = r - c - R
            kk = fr * R + c
            return _ifmap_addr(t, kk, g) if (0 <= t < T and kk < K) else -1
        if op == 1:
            if r < R:
                kk = fr * R + (R - 1 - r)
                n = fc * C + c
                if kk < K and n < N:
                    return n * g[8] + kk
            return -1
        t = r - c - (2 * R - 1)
        n = fc * C + c
        return t * g[7] + n if (0 <= t < T and n < N) else -1
    # IS: Sr = K, Sc = M, T = N
    if op == 0:
        if r < R:
            kk = fr * R + (R - 1 - r)
            m = fc * C + c
            if kk < K and m < M:
                return _ifmap_addr(m, kk, g)
        return -1
    if op == 1:
        t = r - c - R
        kk = fr * R + c
        return t * g[8] + kk if (0 <= t < T and kk < K) else -1
    t = r - c - (2 * R - 1)
    m = fc * C + c
    return m * g[7] + t if (0 <= t < T and m < M) else -1


@nb.njit(cache=True)
def _estimate_start(st):  # pragma: no cover - compiled
    """First DRAM read cycle of a CALC-mode buffer: its first prefetch, at 10 words per cycle
    and a 1-cycle DRAM latency, ends just before the first request (cycle ``st[7]``). It holds
    the prefetch sets when the active sets filled during the run, else every set at the end."""
    if st[0] >= st[5]:  # the window moved: prefetched at the first move
        end, words = st[7] - 2, st[5] * st[4]
    else:
        end, words = -2, (st[0] + (1 if st[1] > 0 else 0)) * st[4]
    return end - (words + 9) // 10 + 2


@nb.njit(cache=True)
def _estimate_row(
    df, op, fr, fc, r, width, R, C, M, N, K, T, g, last_set, st, cycle
):  # pragma: no cover
    """Every request of operand ``op`` in one demand row through SCALE-Sim's CALC-mode read
    buffer; records the cycle of the window's last move in ``st[8]``; returns the row's
    request count.

    New addresses fill sets of ``st[4]`` words; one is a hit while the set that last took it
    lies in the active window ``[st[2], min(st[0], st[3] + 1))``, which moves on by ``st[5]``
    sets each time the set after it fills. Every inserted address is prefetched once:
    ``st[6]`` counts the DRAM reads. ``st`` = (current set, words in it, window start, window
    end, words per set, prefetch sets, reads, first request cycle, last move cycle);
    ``last_set[a]``: the set that last took ``a``. The state lives in locals for the row: the
    compiler cannot prove that ``st`` and ``last_set`` do not overlap, so it would otherwise
    load and store it once per request.
    """
    cur, words, w0, w1, per_set, step, reads = st[0], st[1], st[2], st[3], st[4], st[5], st[6]
    first, moved = st[7], st[8]
    n = 0
    for c in range(width):
        a = _demand(df, op, fr, fc, r, c, R, C, M, N, K, T, g)
        if a < 0:
            continue
        n += 1
        if first < 0:
            first = cycle
        s = last_set[a]
        if w0 <= s < min(cur, w1 + 1) or s == cur:
            continue
        last_set[a] = cur
        words += 1
        reads += 1
        if words == per_set:
            cur += 1
            words = 0
            if cur == w1 + 1:
                w0 += step
                w1 += step
                moved = cycle
    st[0], st[1], st[2], st[3], st[6], st[7], st[8] = cur, words, w0, w1, reads, first, moved
    return n


@nb.njit(cache=True)
def _refill(starts, sets, a, w0, w1, n_sets, prefetch, active, last, n_lines, cycle, off):
    """Slide a read buffer's window until address ``a`` is in it, one prefetch of ``n_lines``
    DRAM lines per slide (SCALE-Sim's read buffer); returns the new
    ``(w0, w1, last, off, slides)``. A prefetch ending after ``cycle + off`` stalls the array;
    the offset update keeps SCALE-Sim 3.0.0's arithmetic (negative and doubled stalls)."""
    slides = 0
    while not _in_window(starts, sets, a, w0, w1, n_sets):
        w0 = (w0 + prefetch) % n_sets
        w1 = (w0 + active) % n_sets
        last = last + n_lines + 1
        slides += 1
        pot = last - (cycle + off)
        off += pot
        if pot > 0:
            off += pot
    return w0, w1, last, off, slides


@nb.njit(cache=True)
def _refill_row(
    df, op, fr, fc, r, width, R, C, M, N, K, T, g,
    starts, sets, w0, w1, n_sets, prefetch, active, last, n_lines, cycle, off,
):  # fmt: skip  # pragma: no cover
    """Every request of operand ``op`` in one demand row through :func:`_refill`; returns the
    buffer's new ``(w0, w1, last, off)``, the row's prefetches and its request count."""
    slides = 0
    requests = 0
    for c in range(width):
        a = _demand(df, op, fr, fc, r, c, R, C, M, N, K, T, g)
        if a >= 0:
            requests += 1
            w0, w1, last, off, n = _refill(
                starts, sets, a, w0, w1, n_sets, prefetch, active, last, n_lines, cycle, off
            )
            slides += n
    return w0, w1, last, off, slides, requests


@nb.njit(cache=True)
def _in_window(starts, sets, a, w0, w1, n_sets):
    """Whether any occurrence of address a lies in the active window [w0, w1) (circular)."""
    for p in range(starts[a], starts[a + 1]):
        s = sets[p]
        if w0 < w1:
            if w0 <= s < w1:
                return True
        elif s >= w0 or s < w1:
            return True
    return False


@nb.njit(cache=True)
def _push(lines, nlines, dstart, fill):
    """Append a line of ``fill`` words; drop drained lines / grow when the array is full.

    Element loops, not slice assignments: an array-to-slice assignment makes numba compile its
    shape-mismatch error, whose message formats integers (numba's str/repr/unicode helpers),
    about a fifth of the model's cold compile."""
    if nlines == lines.size:
        live = nlines - dstart
        if live * 2 > lines.size:
            grown = np.zeros(lines.size * 2, np.int64)
            for j in range(live):
                grown[j] = lines[dstart + j]
            lines = grown
        else:  # forward copy onto the front: the source lies after each written slot
            for j in range(live):
                lines[j] = lines[dstart + j]
        nlines, dstart = live, 0
    lines[nlines] = fill
    return lines, nlines + 1, dstart


@nb.njit(cache=True)
def _drain(lines, nlines, dstart, ld, bw_o, at, out):  # pragma: no cover
    """One OFMAP drain from cycle ``at`` of up to ``ld`` lines from ``dstart`` (the last line
    may be partly filled): counts its words and itself in ``out``; returns (lines, words,
    last cycle)."""
    nd = min(ld, nlines - dstart)
    data = nd * bw_o - (bw_o - lines[dstart + nd - 1])
    out[4] += data
    out[10] += 1
    return nd, data, at + nd - 1


@nb.njit(cache=True)
def _sram_span(out, at, requests, serviced):  # pragma: no cover - compiled
    """First/last serviced cycle of the demand rows holding requests, in ``out[at:at + 2]``."""
    if requests > 0:
        if out[at] < 0:
            out[at] = serviced
        out[at + 1] = serviced


@nb.njit(cache=True)
def _kernel(
    df, R, C, M, N, K, g, n_ifmap_addr, n_filter_addr,
    user_bw, rd_size, bw_i, bw_f, wr_size, bw_o,
):  # fmt: skip
    """The demand-row loop (see ``scalesim_memory``). Returns int64[len(SCALESIM_FIELDS)].

    The variables that start from a constant and reach a helper start from ``zero``, an
    ``np.int64``: numba compiles a helper once per argument types, and a plain ``0`` is a
    literal type of its own (one compile while the variable's type is still the literal, then
    the int64 one). The operand codes stay literal on purpose for the per-request helpers: one
    helper per operand, whose dead branches LLVM removes (30-40 % of a conv layer's kernel
    time); ``_build_sets``, once per layer, gets them as int64: one compile for both."""
    zero = np.int64(0)
    if df == 0:
        Sr, Sc, T = M, N, K
        per_fold = T + R + C - 2
    elif df == 1:
        Sr, Sc, T = K, N, M
        per_fold = 2 * R + C + T - 2
    else:
        Sr, Sc, T = K, M, N
        per_fold = 2 * R + C + T - 2
    row_fold = (Sr + R - 1) // R
    col_fold = (Sc + C - 1) // C
    in_cols = R if (df != 2) else C  # IFMAP demand columns
    f_cols = C if (df != 2) else R  # FILTER demand columns
    eps_r = (rd_size[0] + 99) // 100
    eps_f = (rd_size[1] + 99) // 100
    # read buffers: [starts, sets] per operand
    if user_bw:
        one = zero + 1
        st_i, sets_i, ns_i, tot_i = _build_sets(df, zero, R, C, M, N, K, g, n_ifmap_addr, eps_r)
        st_f, sets_f, ns_f, tot_f = _build_sets(df, one, R, C, M, N, K, g, n_filter_addr, eps_f)
    else:  # CALC mode reads through the estimate buffers only: no prefetch-order sets
        st_i = sets_i = st_f = sets_f = np.zeros(1, np.int64)
        ns_i = ns_f = tot_i = tot_f = 1
    out = np.zeros(len(SCALESIM_FIELDS), np.int64)
    out[14:] = -1  # SRAM start/stop cycles: none yet
    # per read operand: active sets A, prefetch sets P, window, last prefetch cycle, lines
    act_i = (rd_size[0] + 1) // 2
    act_f = (rd_size[1] + 1) // 2
    pre_i = rd_size[0] - act_i
    pre_f = rd_size[1] - act_f
    a_i = min((act_i + eps_r - 1) // eps_r, ns_i)
    p_i = min((pre_i + eps_r - 1) // eps_r, ns_i - a_i)
    a_f = min((act_f + eps_f - 1) // eps_f, ns_f)
    p_f = min((pre_f + eps_f - 1) // eps_f, ns_f - a_f)
    w0_i, w1_i, w0_f, w1_f = zero, a_i, zero, a_f
    nl_i = (pre_i + bw_i - 1) // bw_i
    nl_f = (pre_f + bw_f - 1) // bw_f
    rows_i = (tot_i + bw_i - 1) // bw_i
    rows_f = (tot_f + bw_f - 1) // bw_f
    nl0_i = min((act_i + bw_i - 1) // bw_i, rows_i)
    nl0_f = min((act_f + bw_f - 1) // bw_f, rows_f)
    last_i = np.int64(-1)  # the initial prefetch (at the first demand row, cycle 0) ends at -1
    last_f = np.int64(-1)
    # CALC mode: set-based estimate buffers (half the sets active, half prefetch)
    est_i = np.array([0, 0, 0, 49, rd_size[0] // 100, 50, 0, -1, -2], np.int64)
    est_f = np.array([0, 0, 0, 49, rd_size[1] // 100, 50, 0, -1, -2], np.int64)
    seen_i = np.full(n_ifmap_addr if not user_bw else 0, -1, np.int32)
    seen_f = np.full(n_filter_addr if not user_bw else 0, -1, np.int32)
    if user_bw:
        out[2] = nl0_i * bw_i
        out[3] = nl0_f * bw_f
        out[5] = -nl0_i
        out[6] = -nl0_f
    # write buffer
    w_total = wr_size
    w_active = (w_total + 1) // 2
    w_drain = w_total - w_active
    ld = (w_drain + bw_o - 1) // bw_o
    lines = np.zeros(1024, np.int64)  # fill counts of undrained lines (compacted as it goes)
    nlines = zero
    cur = zero
    dstart = zero
    free = w_total
    drain_end = zero
    w_stop = zero
    w_first = -1
    stalls = zero
    i = zero
    last_out = zero
    for fc in range(col_fold):
        for fr in range(row_fold):
            for r in range(per_fold):
                cycle = i + stalls
                off_i = np.int64(1)
                off_f = np.int64(1)
                if user_bw:
                    w0_i, w1_i, last_i, off_i, fills, req_i = _refill_row(
                        df, 0, fr, fc, r, in_cols, R, C, M, N, K, T, g,
                        st_i, sets_i, w0_i, w1_i, ns_i, p_i, a_i, last_i, nl_i, cycle, off_i,
                    )  # fmt: skip
                    out[2] += fills * nl_i * bw_i
                    out[8] += fills
                    w0_f, w1_f, last_f, off_f, fills, req_f = _refill_row(
                        df, 1, fr, fc, r, f_cols, R, C, M, N, K, T, g,
                        st_f, sets_f, w0_f, w1_f, ns_f, p_f, a_f, last_f, nl_f, cycle, off_f,
                    )  # fmt: skip
                    out[3] += fills * nl_f * bw_f
                    out[9] += fills
                else:
                    req_i = _estimate_row(
                        df, 0, fr, fc, r, in_cols, R, C, M, N, K, T, g, seen_i, est_i, cycle
                    )
                    req_f = _estimate_row(
                        df, 1, fr, fc, r, f_cols, R, C, M, N, K, T, g, seen_f, est_f, cycle
                    )
                _sram_span(out, zero + 14, req_i, cycle + off_i)
                _sram_span(out, zero + 16, req_f, cycle + off_f)
                # OFMAP writes
                now = cycle
                req_o = zero
                for c in range(C):
                    a = _demand(df, 2, fr, fc, r, c, R, C, M, N, K, T, g)
                    if a < 0:
                        continue
                    req_o += 1
                    cur += 1
                    free -= 1
                    if cur == bw_o:
                        lines, nlines, dstart = _push(lines, nlines, dstart, bw_o)
                        cur = zero
                    if now < drain_end:
                        if free <= 0:
                            now = drain_end
                    elif free < w_active:
                        if cur > 0:
                            lines, nlines, dstart = _push(lines, nlines, dstart, cur)
                            cur = zero
                        if w_first < 0:
                            w_first = now
                        nd, data, drain_end = _drain(lines, nlines, dstart, ld, bw_o, now, out)
                        w_stop = max(w_stop, drain_end)
                        free += data
                        dstart += nd
                _sram_span(out, zero + 18, req_o, now)
                st = max(off_i - 1, off_f - 1, now - cycle)
                last_out = now
                stalls += st
                i += 1
    # final drain of everything left (empty_all_buffers at the last row's OFMAP cycle)
    if cur > 0:
        lines, nlines, dstart = _push(lines, nlines, dstart, cur)
        cur = zero
    t = last_out
    while dstart < nlines:
        if w_first < 0:
            w_first = t
        nd, _, drain_end = _drain(lines, nlines, dstart, ld, bw_o, t, out)
        w_stop = max(w_stop, drain_end)
        dstart += nd
        t = drain_end + 1
    if not user_bw:
        out[2] = est_i[6]
        out[3] = est_f[6]
        out[5] = _estimate_start(est_i)
        out[6] = _estimate_start(est_f)
        out[11] = est_i[8] + 1  # the last prefetch (at the end) covers up to the last move
        out[12] = est_f[8] + 1
    else:
        out[11] = last_i
        out[12] = last_f
    out[13] = w_first
    out[0] = last_out
    out[1] = stalls
    out[7] = w_stop
    return out


def scalesim_memory(
    dataflow: str,
    rows: int,
    cols: int,
    geometry: tuple[int, ...],
    *,
    user_bandwidth: bool,
    ifmap_sram_words: int,
    filter_sram_words: int,
    ofmap_sram_words: int,
    ifmap_words_per_cycle: int,
    filter_words_per_cycle: int,
    ofmap_words_per_cycle: int,
) -> dict[str, int]:
    """SCALE-Sim 3.0.0's cycles, stalls and DRAM counts of one layer (fields in
    ``SCALESIM_FIELDS``), computed row by row without materialising any matrix.

    ``geometry`` = (ifmap_h, ifmap_w, filt_h, filt_w, channels, stride, ofmap_h, ofmap_w,
    num_filters) in SCALE-Sim's terms (a GEMM is ifmap M x K, filter 1 x K, 1 channel, N
    filters); SRAM sizes are in words (SCALE-Sim: 1 byte per word, ``kB * 1024``). DRAM read
    bandwidths only matter with ``user_bandwidth``; without it (CALC mode) reads never stall, are
    counted by SCALE-Sim's set-based estimate buffer (``_estimate_row``; DRAM start cycles are left
    at 0) and the OFMAP drains at ``cols`` words per cycle (pass ``ofmap_words_per_cycle=cols``).
    """
    ih, iw, fh, fw, ch, stride, oh, ow, nf = (int(x) for x in geometry)
    window = fh * fw * ch
    m, n, k = oh * ow, nf, window
    g = (ih, iw, fh, fw, ch, stride, ow, nf, window)  # a tuple: in registers, never reloaded
    res = _kernel(
        {"os": 0, "ws": 1, "is": 2}[dataflow], int(rows), int(cols), m, n, k, g,
        ih * iw * ch, window * nf, bool(user_bandwidth),
        np.array([ifmap_sram_words, filter_sram_words], dtype=np.int64),
        max(1, int(ifmap_words_per_cycle)), max(1, int(filter_words_per_cycle)),
        int(ofmap_sram_words), max(1, int(ofmap_words_per_cycle)),
    )  # fmt: skip
    return dict(zip(SCALESIM_FIELDS, (int(x) for x in res), strict=True))


@nb.njit(cache=True)
def _fold_demand(df, op, fr, fc, R, C, M, N, K, g, width):
    """Demand addresses of one fold of operand ``op`` (rows_per_fold x width, -1 = none)."""
    if df == 0:
        T = K
        per_fold = T + R + C - 2
    else:
        T = M if df == 1 else N
        per_fold = 2 * R + C + T - 2
    out = np.empty((per_fold, width), np.int64)
    for r in range(per_fold):
        for c in range(width):
            out[r, c] = _demand(df, op, fr, fc, r, c, R, C, M, N, K, T, g)
    return out


def fold_demands(dataflow: str, rows: int, cols: int, geometry: tuple[int, ...]):
    """Yield ``(fold index, ifmap, filter, ofmap)`` SCALE-Sim demand blocks fold by fold
    (addresses without offsets, -1 = no request), column fold outer; for streamed traces."""
    ih, iw, fh, fw, ch, stride, oh, ow, nf = (int(x) for x in geometry)
    window = fh * fw * ch
    m, n, k = oh * ow, nf, window
    g = (ih, iw, fh, fw, ch, stride, ow, nf, window)  # a tuple: in registers, never reloaded
    df = _DF_CODE[dataflow]
    rf, cf = fold_counts(dataflow, rows, cols, m, n, k)
    w_i = cols if dataflow == "is" else rows
    w_f = rows if dataflow == "is" else cols
    idx = 0
    for fc in range(cf):
        for fr in range(rf):
            yield (
                idx,
                _fold_demand(df, 0, fr, fc, rows, cols, m, n, k, g, w_i),
                _fold_demand(df, 1, fr, fc, rows, cols, m, n, k, g, w_f),
                _fold_demand(df, 2, fr, fc, rows, cols, m, n, k, g, cols),
            )
            idx += 1
