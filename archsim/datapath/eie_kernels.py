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

from archsim.numba_cache import nb

__all__ = ["eie_timing", "eie_line_reads", "eie_functional", "TIMING_FIELDS"]

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


@nb.njit(cache=True)
def eie_timing(
    item_col,
    item_group,
    item_lane,
    n_groups,
    num_pes,
    fifo_depth,
    col_ptr,
    base,
    local_row,
    code,
    real_cum,
    entries_per_line,
    drain,
):  # pragma: no cover - compiled
    """Return (total_cycles, scanner_stall_cycles, per_pe[7, N]) for one layer.

    ``col_ptr[c, i]`` is PE ``i``'s column pointer ``c`` (the encoder's ``col_ptr``: one
    broadcast column's pointers for all PEs are adjacent in memory).
    """
    n_items = item_col.size
    per_pe = np.zeros((7, num_pes), dtype=np.int64)
    hist = np.zeros((fifo_depth, num_pes), dtype=np.int64)  # pop times of the last depth items
    # per PE: last processing cycle, last SpMat line, last row, cycle of the last entry
    # (filled by loops: np.full would cost its own compile on a cold cache)
    last_cycle = np.empty(num_pes, dtype=np.int64)
    last_line = np.empty(num_pes, dtype=np.int64)
    last_row = np.empty(num_pes, dtype=np.int64)
    last_entry_cycle = np.empty(num_pes, dtype=np.int64)
    for i in range(num_pes):
        last_cycle[i] = -1
        last_line[i] = -1
        last_row[i] = -1
        last_entry_cycle[i] = -2
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
        if k >= fifo_depth:
            slot = k % fifo_depth
            for i in range(num_pes):
                if hist[slot, i] + 1 > push:
                    push = hist[slot, i] + 1
        stall += push - reach
        col = item_col[k]
        for i in range(num_pes):
            p = last_cycle[i]
            if push + 1 > p:
                p = push + 1
            hist[k % fifo_depth, i] = p
            a0 = col_ptr[col, i]
            n = col_ptr[col + 1, i] - a0
            per_pe[4, i] += 1
            if n == 0:
                per_pe[2, i] += 1
                last_cycle[i] = p + 1
                if p + 1 > per_pe[6, i]:
                    per_pe[6, i] = p + 1
                continue
            e0 = base[i] + a0
            e1 = e0 + n
            per_pe[0, i] += n
            per_pe[1, i] += real_cum[e1] - real_cum[e0]
            l0 = a0 // entries_per_line
            l1 = (a0 + n - 1) // entries_per_line
            per_pe[3, i] += l1 - l0 + 1 - (1 if l0 == last_line[i] else 0)
            last_line[i] = l1
            if (
                drain >= 2
                and code[e0] != 0
                and last_entry_cycle[i] == p
                and local_row[e0] == last_row[i]
            ):
                per_pe[5, i] += 1
            last_row[i] = local_row[e1 - 1]
            last_entry_cycle[i] = p + n
            last_cycle[i] = p + n
            if p + n + drain > per_pe[6, i]:
                per_pe[6, i] = p + n + drain
    if n_items == 0:
        scan_end = n_groups
    else:
        scan_end = push + (n_groups - item_group[n_items - 1])
        if item_lane[n_items - 1] == num_pes - 1:
            scan_end -= 1
    done = scan_end
    for i in range(num_pes):
        if per_pe[6, i] > done:
            done = per_pe[6, i]
    return done + 1, stall, per_pe


@nb.njit(cache=True)
def eie_line_reads(item_col, num_pes, col_ptr, entries_per_line):  # pragma: no cover - compiled
    """SpMat line reads per PE: row ``line_reads`` of :func:`eie_timing`'s ``per_pe``.

    They depend on the order in which columns are popped, not on when, so neither on FIFO depth
    nor on pipeline depth: a sweep over line widths re-runs only this, not the timing kernel.
    """
    reads = np.zeros(num_pes, dtype=np.int64)
    last_line = np.empty(num_pes, dtype=np.int64)
    for i in range(num_pes):
        last_line[i] = -1
    for k in range(item_col.size):
        col = item_col[k]
        start = col_ptr[col]
        stop = col_ptr[col + 1]
        for i in range(num_pes):
            a0 = start[i]
            n = stop[i] - a0
            if n == 0:
                continue
            l0 = a0 // entries_per_line
            l1 = (a0 + n - 1) // entries_per_line
            reads[i] += l1 - l0 + 1 - (1 if l0 == last_line[i] else 0)
            last_line[i] = l1
    return reads


@nb.njit(cache=True)
def eie_functional(
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
    n_rows,
):  # pragma: no cover - compiled
    """Fixed-point y = W x + b in processing order with a saturating ``acc_bits`` accumulator.

    ``codebook_q`` and ``item_act`` are integer Q-format values; each product is rounded
    (half up) by ``shift`` bits into the accumulator format. A row lives in one PE, so every
    row accumulates its products in broadcast order, as that PE does.
    """
    lo = -(1 << (acc_bits - 1))
    hi = (1 << (acc_bits - 1)) - 1
    out = np.zeros(n_rows, dtype=np.int64)
    half = (1 << (shift - 1)) if shift > 0 else 0
    for k in range(item_col.size):
        col = item_col[k]
        a = item_act[k]
        start = col_ptr[col]
        stop = col_ptr[col + 1]
        for i in range(num_pes):
            for e in range(base[i] + start[i], base[i] + stop[i]):
                c = code[e]
                if c == 0:
                    continue
                prod = codebook_q[c] * a
                prod = (prod + half) >> shift if shift > 0 else prod << (-shift)
                r = local_row[e] * num_pes + i
                s = out[r] + prod
                if s > hi:
                    s = hi
                elif s < lo:
                    s = lo
                out[r] = s
    return out
