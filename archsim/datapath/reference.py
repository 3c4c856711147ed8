"""Slow, literal per-cycle reference twins of the fast kernels (small inputs only).

``eie_reference`` steps every module of an EIE chip once per cycle: the LNZD scanner over the
activation groups, N activation FIFOs, and per PE the pointer stage (even/odd pointer banks), the
SpMat line buffer and a shift-register pipeline ending in read / accumulate-write of a literal
activation register file with forwarding. All decisions in a cycle use start-of-cycle state;
updates apply at the end of the cycle. It shares no code with ``eie_kernels``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

__all__ = ["eie_reference", "EieReferenceResult"]


@dataclass
class EieReferenceResult:
    """Cycle count, per-PE counters and the fixed-point output of one layer."""

    cycles: int
    scanner_stall_cycles: int
    entries: list[int]
    real: list[int]
    empty_columns: list[int]
    line_reads: list[int]
    pointer_reads: list[int]
    bypasses: list[int]
    busy_cycles: list[int]
    output: np.ndarray
    trace: list[str] = field(default_factory=list)


@dataclass
class _Column:
    col: int
    act: int
    addr: int = -1  # next entry address; -1 until pointers are read
    end: int = -1
    cursor: int = -1  # local row cursor


class _Pe:
    def __init__(self, k, ptr, code, z, drain, spm_line, n_local_rows):
        self.k = k
        self.even = ptr[0::2].tolist()  # bank holding p[0], p[2], ...
        self.odd = ptr[1::2].tolist()
        self.code, self.z = code.tolist(), z.tolist()
        self.line_entries = spm_line
        self.fifo: deque[tuple[int, int]] = deque()
        self.held: _Column | None = None
        self.line_addr = -1  # line currently in the SpMat read buffer
        self.pipe: list[_Slot | None] = [None] * drain  # back-end stages, last = write
        self.regfile = [0] * n_local_rows
        self.stats = dict.fromkeys(
            ("entries", "real", "empty", "lines", "ptr", "bypass", "busy"), 0
        )

    def read_pointers(self, j):
        """p[j] and p[j+1] in one cycle from the two single-ported banks."""
        if j % 2 == 0:
            return self.even[j // 2], self.odd[j // 2]
        return self.odd[j // 2], self.even[(j + 1) // 2]

    def idle(self):
        return self.held is None and not self.fifo and all(s is None for s in self.pipe)


def eie_reference(
    act_q,
    has_bias,
    bias_act_q,
    num_pes,
    fifo_depth,
    ptr,
    base,
    code,
    z,
    entries_per_line,
    drain,
    codebook_q,
    shift,
    acc_bits,
    n_rows,
    max_cycles=1_000_000,
    trace=False,
):
    """Run one layer literally. ``act_q`` is the padded quantised activation vector."""
    n_local = -(-n_rows // num_pes) if n_rows else 0
    pes = [
        _Pe(
            k,
            ptr[k],
            code[base[k] : base[k + 1]],
            z[base[k] : base[k + 1]],
            drain,
            entries_per_line,
            max(n_local, 1),
        )
        for k in range(num_pes)
    ]
    groups = [act_q[g * num_pes : (g + 1) * num_pes].tolist() for g in range(len(act_q) // num_pes)]
    if has_bias:
        groups.append([bias_act_q] + [0] * (num_pes - 1))
    bias_col = len(act_q)
    lo, hi = -(1 << (acc_bits - 1)), (1 << (acc_bits - 1)) - 1
    group = -1  # group held by the scanner; -1 = nothing loaded yet
    lane = 0  # first lane not yet examined
    scan_done = False
    stall = 0
    log: list[str] = []
    cycle = 0
    while True:
        if cycle >= max_cycles:
            raise RuntimeError("reference model did not finish")
        # ---- start-of-cycle observations
        full = any(len(pe.fifo) >= fifo_depth for pe in pes)
        nonempty = [len(pe.fifo) > 0 for pe in pes]
        # ---- scanner (LNZD)
        push = None
        advance = False
        if not scan_done:
            if group < 0:
                advance = True
            else:
                found = next((ln for ln in range(lane, num_pes) if groups[group][ln] > 0), None)
                if found is None:
                    advance = True
                elif full:
                    stall += 1
                else:
                    is_bias = has_bias and group == len(groups) - 1
                    col = bias_col if is_bias else group * num_pes + found
                    push = (col, groups[group][found])
                    lane = found + 1
                    advance = found == num_pes - 1
        # ---- PEs
        for i, pe in enumerate(pes):
            _step_pe(pe, codebook_q, shift, lo, hi, nonempty[i])
        # ---- end-of-cycle updates of the central unit
        if push is not None:
            for pe in pes:
                pe.fifo.append(push)
        if advance:
            group += 1
            lane = 0
            if group >= len(groups):
                scan_done = True
        if trace:
            log.append(
                f"c{cycle}: grp={group} push={push} "
                + " ".join(f"[{len(pe.fifo)}{'H' if pe.held else '-'}]" for pe in pes)
            )
        if scan_done and all(pe.idle() for pe in pes):
            break
        cycle += 1
    out = np.zeros(n_rows, dtype=np.int64)
    for i, pe in enumerate(pes):
        for lr in range(n_local):
            r = lr * num_pes + i
            if r < n_rows:
                out[r] = pe.regfile[lr]
    st = [pe.stats for pe in pes]
    return EieReferenceResult(
        cycles=cycle + 1,
        scanner_stall_cycles=stall,
        entries=[s["entries"] for s in st],
        real=[s["real"] for s in st],
        empty_columns=[s["empty"] for s in st],
        line_reads=[s["lines"] for s in st],
        pointer_reads=[s["ptr"] for s in st],
        bypasses=[s["bypass"] for s in st],
        busy_cycles=[s["entries"] + s["empty"] for s in st],
        output=out,
        trace=log,
    )


class _Slot:
    """One entry travelling down the PE pipeline."""

    __slots__ = ("row", "real", "prod", "read_val")

    def __init__(self, row: int, real: bool, prod: int) -> None:
        self.row, self.real, self.prod, self.read_val = row, real, prod, 0


def _step_pe(pe, codebook_q, shift, lo, hi, fifo_nonempty):
    """One cycle of one PE: pipeline back end first (write, read+forward), then the front end."""
    write = pe.pipe[-1]
    if len(pe.pipe) == 1:  # one back-end stage reads and writes the accumulator together
        if write is not None and write.real:
            pe.regfile[write.row] = _sat(pe.regfile[write.row] + write.prod, lo, hi)
    else:
        w_row = w_val = None
        if write is not None and write.real:
            w_row, w_val = write.row, _sat(write.read_val + write.prod, lo, hi)
        rd = pe.pipe[-2]
        if rd is not None and rd.real:
            rd.read_val = pe.regfile[rd.row]
            if rd.row == w_row:  # the write lands only at the end of this cycle: forward it
                rd.read_val = w_val
                pe.stats["bypass"] += 1
        if w_row is not None:
            pe.regfile[w_row] = w_val
    # front end: pointer stage / entry issue
    entered = None
    release = True
    col = pe.held
    if col is not None:
        if col.addr < 0:  # first cycle of the column: read both pointers
            col.addr, col.end = pe.read_pointers(col.col)
            pe.stats["ptr"] += 1
        if col.addr == col.end:  # empty column: a bubble
            pe.stats["empty"] += 1
        else:
            a = col.addr
            line = a // pe.line_entries
            if line != pe.line_addr:
                pe.stats["lines"] += 1
                pe.line_addr = line
            c = pe.code[a]
            col.cursor += pe.z[a] + 1
            pe.stats["entries"] += 1
            prod = 0
            if c != 0:
                pe.stats["real"] += 1
                prod = int(codebook_q[c]) * int(col.act)
                prod = (prod + (1 << (shift - 1))) >> shift if shift > 0 else prod << (-shift)
            entered = _Slot(col.cursor, c != 0, prod)
            col.addr += 1
            release = col.addr == col.end
    pe.pipe = [entered] + pe.pipe[:-1]
    if release:
        pe.held = None
        if fifo_nonempty:
            j, a = pe.fifo.popleft()
            pe.held = _Column(col=j, act=a)


def _sat(v, lo, hi):
    return hi if v > hi else lo if v < lo else v
