"""Slow, literal per-cycle twin of the DCNN phase model in ``dcnn_kernels`` (small layers only).

One phase (one image, one conv group) of the PT-IS-DP-dense machine described in
``dcnn_kernels``: a central sequencer steps the shared schedule (output-channel block, position
slot, tap, input-channel block) one step per cycle and broadcasts the weight block; every PE
owns the outputs assigned to it by ``oy // Th``, ``ox // Tw``, keeps them in row-major order,
and has a three-stage pipeline: issue (operand reads) -> multiply (F x I products) ->
accumulate (per row, the exact sum of its I products rounded into the accumulator with
saturation; the output is written when a position's last step lands). All decisions use
start-of-cycle state. It shares no code with ``dcnn_kernels``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DcnnReferenceResult", "dcnn_reference"]


@dataclass
class DcnnReferenceResult:
    """Cycles, counts (same meaning as ``dcnn_kernels.DCNN_FIELDS``) and output of a phase."""

    cycles: int
    slots: int
    multiplies: int
    useful_macs: int
    zero_macs: int
    weight_reads: int
    activation_reads: int
    accumulator_updates: int
    output_writes: int
    output: np.ndarray  # int64 (Kg, OH, OW)


@dataclass
class _Op:
    """One issued step of one PE: latched operands, then products."""

    k0: int
    f_used: int
    oy: int
    ox: int
    last: bool  # last step of this (position, channel block): write the outputs after it
    weights: list[list[int]]  # [f][i]
    acts: list[int]  # [i]; 0 for padding
    products: list[list[int]] | None = None


def _lines(n_words: int, data_bits: int, width_bits: int) -> int:
    bits = n_words * data_bits
    return (bits + width_bits - 1) // width_bits


def dcnn_reference(
    aq: np.ndarray,
    wq: np.ndarray,
    stride: int,
    pad: int,
    rows: int,
    cols: int,
    f: int,
    i_vec: int,
    shift: int,
    acc_bits: int,
    data_bits: int = 16,
    width_bits: int = 64,
) -> DcnnReferenceResult:
    """Step one phase cycle by cycle. ``aq`` (Cg, H, W), ``wq`` (Kg, Cg, R, S): integer Q values."""
    cg, h, w = (int(x) for x in aq.shape)
    kg, _, r, s = (int(x) for x in wq.shape)
    a = aq.tolist()
    wt = wq.tolist()
    oh = (h + 2 * pad - r) // stride + 1
    ow = (w + 2 * pad - s) // stride + 1
    th = (oh + rows - 1) // rows
    tw = (ow + cols - 1) // cols
    n_pe = rows * cols
    # ownership: output (oy, ox) belongs to PE (ox // tw, oy // th); row-major within the PE
    tiles: list[list[tuple[int, int]]] = [[] for _ in range(n_pe)]
    for oy in range(oh):
        for ox in range(ow):
            tiles[(oy // th) * cols + ox // tw].append((oy, ox))
    slots_per_block = max(len(t) for t in tiles)
    n_kb = (kg + f - 1) // f
    n_cb = (cg + i_vec - 1) // i_vec
    lo, hi = -(1 << (acc_bits - 1)), (1 << (acc_bits - 1)) - 1
    out = np.zeros((kg, oh, ow), dtype=np.int64)
    acc = [[0] * f for _ in range(n_pe)]
    issue: list[_Op | None] = [None] * n_pe  # pipeline registers after the issue stage
    mult: list[_Op | None] = [None] * n_pe  # after the multiply stage
    seq = [0, 0, 0, 0, 0]  # kb, position slot, r, s, cb
    seq_done = n_kb == 0 or slots_per_block == 0
    cnt = dict.fromkeys(
        (
            "slots",
            "multiplies",
            "useful",
            "zero",
            "wreads",
            "areads",
            "updates",
            "owrites",
        ),
        0,
    )
    cycle = 0
    while True:
        # --- accumulate stage (ops multiplied last cycle)
        for p in range(n_pe):
            op = mult[p]
            if op is None:
                continue
            assert op.products is not None
            for fi in range(op.f_used):
                total = sum(op.products[fi])
                v = (total + (1 << (shift - 1))) >> shift if shift > 0 else total << -shift
                acc[p][fi] = min(max(acc[p][fi] + v, lo), hi)
                cnt["updates"] += 1
            if op.last:
                for fi in range(op.f_used):
                    out[op.k0 + fi, op.oy, op.ox] = acc[p][fi]
                    acc[p][fi] = 0
                cnt["owrites"] += _lines(op.f_used, data_bits, width_bits)
        # --- multiply stage (ops issued last cycle)
        for p in range(n_pe):
            op = issue[p]
            mult[p] = op
            if op is None:
                continue
            op.products = []
            for fi in range(op.f_used):
                row = []
                for ii, av in enumerate(op.acts):
                    wv = op.weights[fi][ii]
                    row.append(wv * av)
                    cnt["multiplies"] += 1
                    if wv != 0 and av != 0:
                        cnt["useful"] += 1
                    else:
                        cnt["zero"] += 1
                op.products.append(row)
        # --- issue stage: the sequencer's current step
        issue = [None] * n_pe
        if not seq_done:
            kb, slot, ri, si, cb = seq
            k0, c0 = kb * f, cb * i_vec
            f_used, i_used = min(f, kg - k0), min(i_vec, cg - c0)
            block = [[wt[k0 + fi][c0 + ii][ri][si] for ii in range(i_used)] for fi in range(f_used)]
            any_active = False
            for p in range(n_pe):
                cnt["slots"] += f * i_vec
                if slot >= len(tiles[p]):
                    continue  # this PE's tile is smaller: idle for the rest of the block
                any_active = True
                oy, ox = tiles[p][slot]
                iy, ix = oy * stride - pad + ri, ox * stride - pad + si
                if 0 <= iy < h and 0 <= ix < w:
                    acts = [a[c0 + ii][iy][ix] for ii in range(i_used)]
                    cnt["areads"] += _lines(i_used, data_bits, width_bits)
                else:
                    acts = [0] * i_used  # zero padding: nothing read
                last = ri == r - 1 and si == s - 1 and cb == n_cb - 1
                issue[p] = _Op(k0, f_used, oy, ox, last, block, acts)
            if any_active:
                cnt["wreads"] += _lines(f_used * i_used, data_bits, width_bits)
            # advance the sequencer: cb fastest, then s, r, position slot, kb
            limits = (n_kb, slots_per_block, r, s, n_cb)
            d = 4
            while d >= 0:
                seq[d] += 1
                if seq[d] < limits[d]:
                    break
                seq[d] = 0
                d -= 1
            seq_done = d < 0
        cycle += 1
        if seq_done and all(x is None for x in issue) and all(x is None for x in mult):
            break
    return DcnnReferenceResult(
        cycles=cycle,
        slots=cnt["slots"],
        multiplies=cnt["multiplies"],
        useful_macs=cnt["useful"],
        zero_macs=cnt["zero"],
        weight_reads=cnt["wreads"],
        activation_reads=cnt["areads"],
        accumulator_updates=cnt["updates"],
        output_writes=cnt["owrites"],
        output=out,
    )
