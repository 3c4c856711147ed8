"""Fast EIE models (numba): exact cycles/actions of one layer, and its fixed-point output.

Timing semantics (the reference twin in ``reference.py`` steps the same machine cycle by cycle):

* Central LNZD: activations are scanned in groups of N (lane = column mod N). In one cycle it
  finds the next lane with a > 0 after the last one pushed and broadcasts (column, a) into every
  PE's activation FIFO; if any FIFO is full at the start of the cycle it stalls. A cycle that
  finds nothing left in the group loads the next group; a push from the last lane loads the next
  group in the same cycle. Cycle 0 loads group 0. The bias column is one extra group.
* FIFO ``depth`` = entries it holds. A push at the end of cycle t is visible to the PE in t+1.
* PE: when idle or on its last entry of a column, it pops the FIFO head at the end of the cycle
  (if the FIFO was non-empty at its start); next cycle it reads p[j], p[j+1] from the even/odd
  banks and handles the column's first entry. One entry (padding included) per cycle; an empty
  column costs one bubble cycle. A SpMat line is read when the entry's line differs from the last
  line read. After the pointer stage ``drain`` stages follow (last = accumulate/write); a real
  entry whose destination row equals the row written by the entry one cycle ahead is bypassed.
* Done at the end of the first cycle by which the scan is finished and every PE has drained.

For item k (k-th non-zero activation) and PE i with c = max(1, entries): pop time
``P[k,i] = max(F[i], push[k] + 1)``, ``F[i] = P[k,i] + c``, and ``push[k] = max(reach[k],
max_i P[k-depth, i] + 1)``; ``reach`` follows the group-scan rule above.
"""

from __future__ import annotations

import numpy as np

from archsim import compile_helper
from archsim.numba_cache import nb

__all__ = [
    "eie_timing",
    "eie_schedule",
    "timing_per_pe",
    "eie_line_reads",
    "eie_functional",
    "eie_functional_counts",
    "live_sums",
    "live_error_sums",
    "LayerArrays",
    "TIMING_FIELDS",
]

#: Per-PE counters returned by :func:`eie_timing` (rows of its ``per_pe`` array).
TIMING_FIELDS = (
    "entries",  # entries processed (real + padding)
    "real",  # real entries = MACs
    "empty_columns",  # bubble cycles for columns with no entry in this PE
    "line_reads",  # SpMat SRAM line reads
    "pointer_reads",  # pointer pair reads (one per column popped)
    "bypasses",  # accumulator reads replaced by forwarding
    "busy_until",  # last cycle of useful work, pipeline drain included
)


def eie_schedule(
    item_col: np.ndarray,
    item_group: np.ndarray,
    item_lane: np.ndarray,
    n_groups: int,
    num_pes: int,
    fifo_depth: int,
    col_ptr: np.ndarray,
    bypass_candidates: np.ndarray,
    entries_per_line: int,
    drain: int,
) -> tuple[int, int, np.ndarray]:
    """The timing of one layer: (total_cycles, scanner_stall_cycles, per_pe[3, N]) with rows
    SpMat line reads, bypasses and busy-until cycle (``TIMING_FIELDS`` 3, 5, 6).

    ``bypass_candidates`` from :func:`eie_functional_counts`. Touches only the pointer table (one
    row of ``num_pes`` pointers per broadcast column) and per-PE registers.
    """
    per_pe = np.zeros((3, num_pes), dtype=np.int64)
    hist = np.zeros((fifo_depth, num_pes), dtype=np.int64)  # pop times of the last depth items
    # per PE: last processing cycle, last SpMat line, cycle of the last entry
    regs = np.empty((3, num_pes), dtype=np.int64)
    regs[0:2], regs[2] = -1, -2
    scratch = np.empty((3, num_pes), dtype=np.int64)  # per item: entries, first/last line
    compile_helper.wait()  # a first CLI run may be compiling the kernel in a helper process
    cycles, stall = _schedule(
        item_col,
        item_group,
        item_lane,
        n_groups,
        num_pes,
        fifo_depth,
        col_ptr,
        bypass_candidates,
        entries_per_line,
        drain,
        per_pe,
        hist,
        regs,
        scratch,
    )
    return int(cycles), int(stall), per_pe


# The kernels allocate nothing (their callers pass zeroed outputs and scratch): each distinct
# np.zeros/np.empty signature costs numba a compile of its own on a cold cache.


@nb.njit(inline="always")  # inlined into the cached kernels below
def _item_lines(start, stop, num_pes, per_line, scratch, lines, last_line):  # pragma: no cover
    """One popped column's SpMat line reads, per PE: its entries ``stop - start`` (kept in
    ``scratch[0]`` for the caller) span lines ``a // entries_per_line`` for the first and last
    address ``a``, all read but the first where it is the line the PE read last. ``a //
    entries_per_line`` is the float64 quotient truncated (``per_line`` its float), exact for
    addresses below 2**53 / entries_per_line (a correctly rounded quotient of integers never
    reaches the next integer) and about 5x faster than numba's int64 divide by a value known
    only at run time. Short branch-free loops, each over few arrays: the compiler makes them
    vector code (a PE without entries reads nothing and keeps its last line)."""
    entries, first, end = scratch[0], scratch[1], scratch[2]
    for i in range(num_pes):  # int64 arithmetic whatever the table's dtype (uint16)
        entries[i] = np.int64(stop[i]) - np.int64(start[i])
    for i in range(num_pes):  # (meaningless where entries == 0, and unused there)
        first[i] = np.int64(np.float64(start[i]) / per_line)
        end[i] = np.int64(np.float64(np.int64(start[i]) + entries[i] - 1) / per_line)
    for i in range(num_pes):
        has = entries[i] > 0
        again = 1 if first[i] == last_line[i] else 0
        lines[i] += (end[i] - first[i] + 1 - again) if has else 0
        last_line[i] = end[i] if has else last_line[i]


@nb.njit(cache=True, error_model="numpy", nogil=True)
def _schedule(
    item_col,
    item_group,
    item_lane,
    n_groups,
    num_pes,
    fifo_depth,
    col_ptr,
    bypass_candidates,
    entries_per_line,
    drain,
    per_pe,
    hist,
    regs,
    scratch,
):  # pragma: no cover - compiled
    """:func:`eie_schedule`'s loop: fills ``per_pe`` (zeros), returns (cycles, stalls).

    Each item's PE update is written as several short branch-free loops over the PEs, each
    reading and writing few arrays, which the compiler turns into vector code (one long loop
    touched ten arrays, too many for its run-time overlap checks): 2x at 512 PEs."""
    n_items = item_col.size
    lines, bypasses, busy = per_pe[0], per_pe[1], per_pe[2]
    last_cycle, last_line, last_entry_cycle = regs[0], regs[1], regs[2]
    entries = scratch[0]  # per PE, the entries of the item's column (``_item_lines``)
    bypass_on = drain >= 2
    per_line = np.float64(entries_per_line)  # for _item_lines
    stall = 0
    push = 0
    for k in range(n_items):
        if k == 0:
            reach = item_group[0] + 1
        else:
            gap = item_group[k] - item_group[k - 1]
            if item_lane[k - 1] == num_pes - 1:
                gap -= 1
            reach = push + 1 + gap
        push = reach
        pops = hist[k % fifo_depth]  # item k - depth's pop times, overwritten by item k's
        if k >= fifo_depth:
            latest = push - 1
            for i in range(num_pes):
                latest = pops[i] if pops[i] > latest else latest
            push = latest + 1
        stall += push - reach
        col = item_col[k]
        start = col_ptr[col]
        stop = col_ptr[col + 1]
        cand = bypass_candidates[k]
        arrive = push + 1
        for i in range(num_pes):  # pop time: the PE is free and the item has arrived
            pops[i] = last_cycle[i] if last_cycle[i] > arrive else arrive
        _item_lines(start, stop, num_pes, per_line, scratch, lines, last_line)
        if bypass_on:
            for i in range(num_pes):
                hit = cand[i] and last_entry_cycle[i] == pops[i] and entries[i] > 0
                bypasses[i] += 1 if hit else 0
        for i in range(num_pes):
            has = entries[i] > 0
            last_entry_cycle[i] = (pops[i] + entries[i]) if has else last_entry_cycle[i]
        for i in range(num_pes):
            last_cycle[i] = pops[i] + (entries[i] if entries[i] > 0 else 1)  # empty: a bubble
        for i in range(num_pes):
            end = last_cycle[i] + (drain if entries[i] > 0 else 0)
            busy[i] = end if end > busy[i] else busy[i]
    if n_items == 0:
        scan_end = n_groups
    else:
        scan_end = push + (n_groups - item_group[n_items - 1])
        if item_lane[n_items - 1] == num_pes - 1:
            scan_end -= 1
    done = scan_end
    for i in range(num_pes):
        if busy[i] > done:
            done = busy[i]
    return done + 1, stall


def timing_per_pe(counts: np.ndarray, n_items: int, scheduled: np.ndarray) -> np.ndarray:
    """``per_pe[7, N]`` in ``TIMING_FIELDS`` order from :func:`eie_functional_counts`' counts and
    :func:`eie_schedule`'s rows."""
    per_pe = np.empty((7, counts.shape[1]), dtype=np.int64)
    per_pe[0:3] = counts
    per_pe[3] = scheduled[0]
    per_pe[4] = n_items  # one pointer pair read per column popped
    per_pe[5:7] = scheduled[1:3]
    return per_pe


def eie_timing(
    item_col: np.ndarray,
    item_group: np.ndarray,
    item_lane: np.ndarray,
    n_groups: int,
    num_pes: int,
    fifo_depth: int,
    col_ptr: np.ndarray,
    base: np.ndarray,
    local_row: np.ndarray,
    code: np.ndarray,
    real_cum: np.ndarray,
    entries_per_line: int,
    drain: int,
) -> tuple[int, int, np.ndarray]:
    """Return (total_cycles, scanner_stall_cycles, per_pe[7, N]) for one layer.

    ``col_ptr[c, i]`` is PE ``i``'s column pointer ``c`` (the encoder's ``col_ptr``: one
    broadcast column's pointers for all PEs are adjacent in memory). The counts that do not
    depend on timing come from :func:`eie_functional_counts`' walk over the entries (with zero
    activations: only its counts are used), the rest from :func:`eie_schedule`; a caller that
    times one layer many times keeps the former, as ``simulate`` does. ``real_cum`` is kept
    for the signature; the walk counts real entries itself.
    """
    rows = (int(local_row.max(initial=-1)) + 1) * num_pes
    zeros = np.zeros(item_col.size, dtype=np.int64), np.zeros(256, dtype=np.int64)
    args = (item_col, zeros[0], num_pes, col_ptr, base, local_row, code, zeros[1])
    _, counts, cand = eie_functional_counts(*args, 0, 32, rows)
    cycles, stall, scheduled = eie_schedule(
        item_col,
        item_group,
        item_lane,
        n_groups,
        num_pes,
        fifo_depth,
        col_ptr,
        cand,
        entries_per_line,
        drain,
    )
    return cycles, stall, timing_per_pe(counts, item_col.size, scheduled)


def eie_line_reads(
    item_col: np.ndarray, num_pes: int, col_ptr: np.ndarray, entries_per_line: int
) -> np.ndarray:
    """SpMat line reads per PE: row ``line_reads`` of :func:`eie_timing`'s ``per_pe``.

    They depend on the order in which columns are popped, not on when, so neither on FIFO depth
    nor on pipeline depth: a sweep over line widths re-runs only this, not the timing kernel.
    """
    reads = np.zeros(num_pes, dtype=np.int64)
    _line_reads(item_col, num_pes, col_ptr, entries_per_line, reads, np.empty_like(reads))
    return reads


@nb.njit(cache=True, error_model="numpy", nogil=True)
def _line_reads(
    item_col, num_pes, col_ptr, entries_per_line, reads, last_line
):  # pragma: no cover - compiled
    """:func:`eie_line_reads`' loop (``reads`` zeros on entry; ``last_line`` scratch): as
    ``_item_lines``, in one loop with a branch (faster here, where nothing else is done per
    PE)."""
    per_line = np.float64(entries_per_line)
    for i in range(num_pes):
        last_line[i] = -1
    for k in range(item_col.size):
        col = item_col[k]
        start = col_ptr[col]
        stop = col_ptr[col + 1]
        for i in range(num_pes):
            a0 = np.int64(start[i])  # int64 arithmetic whatever the table's dtype (uint16)
            n = np.int64(stop[i]) - a0
            if n == 0:
                continue
            l0 = np.int64(np.float64(a0) / per_line)
            l1 = np.int64(np.float64(a0 + n - 1) / per_line)
            reads[i] += l1 - l0 + 1 - (1 if l0 == last_line[i] else 0)
            last_line[i] = l1


def eie_functional(
    item_col: np.ndarray,
    item_act: np.ndarray,
    num_pes: int,
    col_ptr: np.ndarray,
    base: np.ndarray,
    local_row: np.ndarray,
    code: np.ndarray,
    codebook_q: np.ndarray,
    shift: int,
    acc_bits: int,
    n_rows: int,
) -> np.ndarray:
    """Fixed-point y = W x + b in processing order with a saturating ``acc_bits`` accumulator.

    ``codebook_q`` and ``item_act`` are integer Q-format values; each product is rounded
    (half up) by ``shift`` bits into the accumulator format. A row lives in one PE, so every
    row accumulates its products in broadcast order, as that PE does. Returns int64 per row.
    """
    args = (item_col, item_act, num_pes, col_ptr, base, local_row, code, codebook_q)
    return eie_functional_counts(*args, shift, acc_bits, n_rows)[0]


def eie_functional_counts(
    item_col: np.ndarray,
    item_act: np.ndarray,
    num_pes: int,
    col_ptr: np.ndarray,
    base: np.ndarray,
    local_row: np.ndarray,
    code: np.ndarray,
    codebook_q: np.ndarray,
    shift: int,
    acc_bits: int,
    n_rows: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`eie_functional`'s output and, from the same walk over every entry of every
    broadcast column, what the timing does not depend on: ``counts[0:3, i]``, PE ``i``'s
    entries, real entries and empty columns over the broadcast items, and
    ``bypass_candidates[k, i]``: item ``k``'s column is not empty in PE ``i``, its first entry
    is real and lands on the row of the last entry of the previous non-empty column (bypassed
    when the two are processed in back-to-back cycles)."""
    out = np.zeros(n_rows, dtype=np.int64)
    counts = np.zeros((3, num_pes), dtype=np.int64)
    cand = np.zeros((item_col.size, num_pes), dtype=np.bool_)
    last_row = np.full(num_pes, -1, dtype=np.int64)
    args = (item_col, item_act, num_pes, col_ptr, base, local_row, code, codebook_q)
    compile_helper.wait()  # a first CLI run may be compiling the kernel in a helper process
    _functional(*args, shift, acc_bits, out, counts, cand, last_row)
    return out, counts, cand


@nb.njit(cache=True, error_model="numpy", nogil=True)
def _functional(
    item_col,
    item_act,
    num_pes,
    col_ptr,
    base,
    local_row,
    code,
    codebook_q,
    shift,
    acc_bits,
    out,
    counts,
    cand,
    last_row,
):  # pragma: no cover - compiled
    """:func:`eie_functional_counts`' loop (``out``, ``counts``, ``cand`` zeros on entry;
    ``last_row``: -1 per PE, the local row of the last entry of its last non-empty column)."""
    lo = -(1 << (acc_bits - 1))
    hi = (1 << (acc_bits - 1)) - 1
    half = (1 << (shift - 1)) if shift > 0 else 0
    entries, real, empty = counts[0], counts[1], counts[2]
    for k in range(item_col.size):
        col = item_col[k]
        a = item_act[k]
        start = col_ptr[col]
        stop = col_ptr[col + 1]
        first_hits = cand[k]
        for i in range(num_pes):
            e0 = base[i] + start[i]
            e1 = base[i] + stop[i]
            if e1 == e0:
                empty[i] += 1
                continue
            entries[i] += e1 - e0
            if code[e0] != 0 and local_row[e0] == last_row[i]:
                first_hits[i] = True
            last_row[i] = local_row[e1 - 1]
            n_real = 0
            for e in range(e0, e1):
                c = code[e]
                if c == 0:
                    continue
                n_real += 1
                prod = codebook_q[c] * a
                prod = (prod + half) >> shift if shift > 0 else prod << (-shift)
                r = local_row[e] * num_pes + i
                s = out[r] + prod
                if s > hi:
                    s = hi
                elif s < lo:
                    s = lo
                out[r] = s
            real[i] += n_real


#: a layer's (indptr int64, row indices int32, codes uint8, codebook float32, activations
#: float32), as ``QuantizedMatVec`` holds them
LayerArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def live_sums(arrays: LayerArrays, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, over the weights whose activation is non-zero (no bias): ``sum w x`` and
    ``sum |w| |x|`` in float64, ``w = codebook[code]``, each row's terms added in column order.
    The same IEEE operations in the same order as ``np.bincount`` over the live entries
    (``QuantizedMatVec.reference_output`` / ``abs_bound``, the NumPy twins), in one pass."""
    indptr, row_idx, codes, codebook, activations = arrays
    ref = np.zeros(n_rows, dtype=np.float64)
    absum = np.zeros(n_rows, dtype=np.float64)
    cb, act = codebook.astype(np.float64), activations.astype(np.float64)
    _live_sums(indptr, row_idx, codes, cb, act, ref, absum)
    return ref, absum


@nb.njit(cache=True, error_model="numpy", nogil=True)
def _live_sums(indptr, row_idx, codes, cb, act, ref, absum):  # pragma: no cover - compiled
    for c in range(act.size):
        a = act[c]
        if a == 0.0:
            continue
        aa = abs(a)
        for i in range(indptr[c], indptr[c + 1]):
            w = cb[codes[i]]
            r = row_idx[i]
            ref[r] += w * a
            absum[r] += abs(w) * aa


def live_error_sums(arrays: LayerArrays, n_rows: int, terms: tuple[float, ...]) -> np.ndarray:
    """Per row, over the live weights (activation non-zero), in float64 and column order:
    ``sum ((|x| per_act + per_entry) + |w| per_weight) + per_product`` for ``terms`` =
    (per_act, per_entry, per_weight, per_product), the fixed-point error bound's terms
    (``accelerators.eie.functional_error_bound``), as its NumPy version (``np.bincount`` of
    the in-place array operations) adds them."""
    indptr, row_idx, codes, codebook, activations = arrays
    out = np.zeros(n_rows, dtype=np.float64)
    cb = np.abs(codebook.astype(np.float64))
    _live_error_sums(indptr, row_idx, codes, cb, activations.astype(np.float64), *terms, out)
    return out


@nb.njit(cache=True, error_model="numpy", nogil=True)
def _live_error_sums(
    indptr, row_idx, codes, cb_abs, act, per_act, per_entry, per_weight, per_product, out
):  # pragma: no cover - compiled
    for c in range(act.size):
        a = act[c]
        if a == 0.0:
            continue
        pa = abs(a) * per_act + per_entry
        for i in range(indptr[c], indptr[c + 1]):
            out[row_idx[i]] += (pa + cb_abs[codes[i]] * per_weight) + per_product
