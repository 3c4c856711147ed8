"""Slow literal per-cycle SCNN twin: the whole PE array, cycle by cycle, with the group barrier.

Every PE holds a multiplier array with explicit activation and weight vector registers, one
``collections.deque`` per crossbar input, and A accumulator banks (a dict per bank keyed by the
entry index ``addr // A``). All PEs step together; a PE that finishes a group waits at the barrier
until the last PE finishes, and the next group starts in the following cycle. Shares no code with
``scnn_kernels``; small layers only.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

__all__ = ["scnn_reference", "ScnnReferenceResult"]


@dataclass
class ScnnReferenceResult:
    """Barrier-synchronised totals and per (group, PE) counters."""

    total_cycles: int
    phase_cycles: np.ndarray  # (groups, pes)
    issues: np.ndarray
    multiplies: np.ndarray
    products: np.ndarray
    issue_stalls: np.ndarray
    conflicts: np.ndarray
    output: np.ndarray


class _Pe:
    def __init__(self, slots, banks, depth, nfi):
        self.slots = slots  # list of (activation vector, weight vector): lists of tuples
        self.next = 0
        self.fifos = [deque() for _ in range(nfi)]
        self.banks = [{} for _ in range(banks)]
        self.depth = depth
        self.last_event = -1
        self.done_cycle = None

    def busy(self):
        return self.next < len(self.slots) or any(self.fifos)


def scnn_reference(
    act_lists,
    weight_lists,
    n_groups,
    kc,
    win_x0,
    win_y0,
    ww,
    wh,
    out_w,
    out_h,
    n_out_channels,
    stride,
    pad,
    f,
    i_vec,
    n_banks,
    fifo_depth,
    shift,
    acc_bits,
):
    """``act_lists[p][c]`` = [(x, y, value)], ``weight_lists[g][c]`` = [(k_local, r, s, value)]."""
    n_pes = len(act_lists)
    nfi = f * i_vec
    lo, hi = -(1 << (acc_bits - 1)), (1 << (acc_bits - 1)) - 1
    shape = (n_groups, n_pes)
    st = {
        k: np.zeros(shape, dtype=np.int64) for k in ("cyc", "iss", "mul", "prod", "stall", "conf")
    }
    out = np.zeros((n_out_channels, out_h, out_w), dtype=np.int64)
    cycle = 0
    for g in range(n_groups):
        pes = []
        for p in range(n_pes):
            slots = []
            for c, acts in enumerate(act_lists[p]):
                wts = weight_lists[g][c]
                if not acts or not wts:
                    continue
                for a0 in range(0, len(acts), i_vec):
                    for w0 in range(0, len(wts), f):
                        slots.append((acts[a0 : a0 + i_vec], wts[w0 : w0 + f]))
            pes.append(_Pe(slots, n_banks, fifo_depth, nfi))
        start = cycle
        while any(pe.busy() for pe in pes):
            t = cycle - start
            for p, pe in enumerate(pes):
                if not pe.busy():
                    continue
                # crossbar: rotating priority, one product per bank per cycle
                taken = set()
                order = [(t + j) % nfi for j in range(nfi)]
                for inp in order:
                    fifo = pe.fifos[inp]
                    if not fifo:
                        continue
                    addr, value = fifo[0]
                    bank = addr % n_banks
                    if bank in taken:
                        st["conf"][g, p] += 1
                        continue
                    taken.add(bank)
                    fifo.popleft()
                    entry = addr // n_banks
                    total = pe.banks[bank].get(entry, 0) + value
                    pe.banks[bank][entry] = min(max(total, lo), hi)
                    st["prod"][g, p] += 1
                    pe.last_event = t
                # multiplier array: issue when every input FIFO has room
                if pe.next < len(pe.slots):
                    if any(len(q) >= pe.depth for q in pe.fifos):
                        st["stall"][g, p] += 1
                    else:
                        acts, wts = pe.slots[pe.next]
                        pe.next += 1
                        st["iss"][g, p] += 1
                        pe.last_event = t
                        for ai, (x, y, av) in enumerate(acts):
                            for wi, (kl, r, s, wv) in enumerate(wts):
                                st["mul"][g, p] += 1
                                if av == 0 or wv == 0:  # placeholder zero: no product to send
                                    continue
                                ny, nx = y + pad - r, x + pad - s
                                if ny < 0 or nx < 0 or ny % stride or nx % stride:
                                    continue
                                oy, ox = ny // stride, nx // stride
                                if oy >= out_h or ox >= out_w:
                                    continue
                                addr = (kl * wh + oy - win_y0[p]) * ww + ox - win_x0[p]
                                prod = int(wv) * int(av)
                                prod = (
                                    (prod + (1 << (shift - 1))) >> shift
                                    if shift > 0
                                    else prod << -shift
                                )
                                pe.fifos[ai * f + wi].append((addr, prod))
            cycle += 1
        for p, pe in enumerate(pes):
            st["cyc"][g, p] = pe.last_event + 1
            for bank, entries in enumerate(pe.banks):
                for entry, value in entries.items():
                    addr = entry * n_banks + bank
                    kl, rest = divmod(addr, wh * ww)
                    yy, xx = divmod(rest, ww)
                    k = g * kc + kl
                    oy, ox = win_y0[p] + yy, win_x0[p] + xx
                    if k < n_out_channels and oy < out_h and ox < out_w:
                        out[k, oy, ox] += value
        # the barrier: the next group starts in the cycle after the slowest PE finishes
        cycle = start + int(st["cyc"][g].max(initial=0))
    return ScnnReferenceResult(
        total_cycles=cycle,
        phase_cycles=st["cyc"],
        issues=st["iss"],
        multiplies=st["mul"],
        products=st["prod"],
        issue_stalls=st["stall"],
        conflicts=st["conf"],
        output=out,
    )
