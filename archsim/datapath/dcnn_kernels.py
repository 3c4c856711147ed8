"""Fast DCNN model: closed-form cycles and action counts, and a numba fixed-point convolution.

Dataflow PT-IS-DP-dense (planar-tiled, input-stationary, dot-product, dense), one *phase* per
(image, conv group); phases run one after another. The literal per-cycle twin is
``dcnn_reference.py``; both implement exactly this machine:

* The OH x OW output plane of the group is tiled over the ``rows`` x ``cols`` PE grid: PE
  (px, py) owns outputs ``ox`` in ``[px*Tw, (px+1)*Tw) ∩ [0, OW)`` and ``oy`` in
  ``[py*Th, (py+1)*Th) ∩ [0, OH)`` with ``Tw = ceil(OW/cols)``, ``Th = ceil(OH/rows)``; its
  input tile (with halo) stays in its slice of the SRAM (input stationary).
* Each PE has an F x I multiplier array: row f multiplies I weights ``w[k0+f, c0:c0+I, r, s]``
  by the I activations ``a[c0:c0+I, iy, ix]`` of one input position and sums them (an I-wide dot
  product) into the accumulator of output ``(k0+f, oy, ox)``; F rows = F output channels.
* Loop order per PE (one cycle per innermost step): for each output-channel block of F
  (``ceil(Kg/F)``), for each output position of its tile (row-major), for each tap (r, s), for
  each input-channel block of I (``ceil(Cg/I)``). Partial blocks leave multipliers idle
  (fragmentation). PEs run in lock step on the schedule of the largest tile (PE (0, 0)), so one
  weight block read per cycle is broadcast to all PEs; a PE whose tile is smaller idles for the
  rest of each channel block. Phase cycles = ``Pmax * R * S * ceil(Kg/F) * ceil(Cg/I) + 2``
  where ``Pmax = min(Th, OH) * min(Tw, OW)`` and 2 is the multiply + accumulate pipeline
  fill/drain (issue at cycle t, multiply at t+1, accumulate at t+2).

Counts (per phase): ``slots`` = schedule cycles x PEs x F x I; ``multiplies`` = multiplier
slots used (every dense MAC, zero padding included: ``OH*OW*R*S*Kg*Cg``); ``useful_macs`` =
MACs whose weight and activation are both non-zero (padding excluded); ``zero_macs`` = the rest
(gated by DCNN-opt); ``weight_reads`` = SRAM lines (``width_bits``) broadcast, one
``ceil(F_used*I_used*data_bits/width_bits)``-line read per schedule cycle; ``activation_reads``
= per busy PE cycle whose input position is inside the image (padding reads nothing),
``ceil(I_used*data_bits/width_bits)`` lines (channel-innermost layout); ``accumulator_updates``
= F_used per busy PE cycle; ``output_writes`` = ``ceil(F_used*data_bits/width_bits)`` lines per
finished (output position, channel block).

Arithmetic: 16-bit (``data_bits``) weights and activations in Q formats chosen per layer; each
cycle a row's I products are summed exactly, rounded half-up by ``shift`` bits into the
accumulator format and added with saturation to ``acc_bits`` bits. The Q formats leave room for
the largest partial sum, so the accumulator never saturates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.datapath.fixed_point import frac_bits_for, quantize
from archsim.numba_cache import nb

__all__ = [
    "FILL_DRAIN_CYCLES",
    "DCNN_FIELDS",
    "DcnnFixedPoint",
    "pe_extents",
    "dcnn_schedule",
    "dcnn_nonzero_macs",
    "dcnn_conv_fixed",
    "dcnn_phase",
    "choose_dcnn_fixed_point",
    "abs_conv_max",
]

#: Pipeline fill/drain per phase (cycles): multiply stage + accumulate stage.
FILL_DRAIN_CYCLES = 2

#: Fields of a phase's statistics (all int; see the module docstring).
DCNN_FIELDS = (
    "cycles",
    "slots",
    "multiplies",
    "useful_macs",
    "zero_macs",
    "weight_reads",
    "activation_reads",
    "accumulator_updates",
    "output_writes",
)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pe_extents(n_out: int, grid: int) -> tuple[int, list[int]]:
    """Tile size ``ceil(n_out/grid)`` and the number of outputs each grid index owns (pixels)."""
    t = _cdiv(n_out, grid)
    return t, [max(0, min(n_out, (p + 1) * t) - p * t) for p in range(grid)]


def _valid_taps(n_in: int, n_out: int, tile: int, grid: int, filt: int, stride: int, pad: int):
    """Per grid index: sum over its outputs and the filter taps of [input index inside image]."""
    out = []
    for p in range(grid):
        tot = 0
        for o in range(p * tile, min(n_out, (p + 1) * tile)):
            base = o * stride - pad
            tot += max(0, min(n_in, base + filt) - max(0, base))
        out.append(tot)
    return out


def dcnn_schedule(
    h: int,
    w: int,
    r: int,
    s: int,
    stride: int,
    pad: int,
    kg: int,
    cg: int,
    rows: int,
    cols: int,
    f: int,
    i_vec: int,
    data_bits: int = 16,
    width_bits: int = 64,
    local_rows: tuple[int, int] | None = None,
    channel_blocks: tuple[int, int] | None = None,
) -> dict[str, int]:
    """Closed-form schedule counts of one phase (one image, one group), or of a part of it.

    ``local_rows = (lo, hi)`` restricts every PE to rows ``lo..hi-1`` of its own tile and
    ``channel_blocks = (lo, hi)`` to output-channel blocks ``lo..hi-1`` (a DRAM tile); default
    the whole phase. Returns ``sched_cycles`` (without fill/drain), ``slots``, ``multiplies``,
    ``weight_reads``, ``activation_reads``, ``accumulator_updates``, ``output_writes`` and
    ``positions_max`` (outputs of the largest PE tile). Line counts are ``width_bits`` lines.
    """
    oh = (h + 2 * pad - r) // stride + 1
    ow = (w + 2 * pad - s) // stride + 1
    th, ny_full = pe_extents(oh, rows)
    tw, nx = pe_extents(ow, cols)
    lo, hi = local_rows if local_rows is not None else (0, th)
    kb_lo, kb_hi = channel_blocks if channel_blocks is not None else (0, _cdiv(kg, f))
    ny = [max(0, min(n, hi) - lo) for n in ny_full]
    n_cb = _cdiv(cg, i_vec)
    i_used = [min(i_vec, cg - cb * i_vec) for cb in range(n_cb)]
    f_used = [min(f, kg - kb * f) for kb in range(kb_lo, kb_hi)]
    pmax = max(ny) * max(nx)
    sched = pmax * r * s * len(f_used) * n_cb
    # valid (position, tap) pairs: separable in y and x; y restricted to the local rows
    vy = []
    for py in range(rows):
        y0 = py * th + lo
        tot = 0
        for oy in range(y0, y0 + ny[py]):
            base = oy * stride - pad
            tot += max(0, min(h, base + r) - max(0, base))
        vy.append(tot)
    vx = _valid_taps(w, ow, tw, cols, s, stride, pad)
    positions = sum(ny) * sum(nx)
    ksum = sum(f_used)
    act_lines = sum(_cdiv(iu * data_bits, width_bits) for iu in i_used)
    w_lines = sum(_cdiv(fu * iu * data_bits, width_bits) for fu in f_used for iu in i_used)
    return {
        "sched_cycles": sched,
        "slots": sched * rows * cols * f * i_vec,
        "multiplies": positions * r * s * ksum * cg,
        "weight_reads": pmax * r * s * w_lines,
        "activation_reads": len(f_used) * sum(vy) * sum(vx) * act_lines,
        "accumulator_updates": positions * r * s * n_cb * ksum,
        "output_writes": positions * sum(_cdiv(fu * data_bits, width_bits) for fu in f_used),
        "positions_max": pmax,
    }


def dcnn_nonzero_macs(aq: np.ndarray, wq: np.ndarray, stride: int, pad: int) -> int:
    """MACs of one phase whose weight and activation are both non-zero (padding excluded).

    ``aq`` is (Cg, H, W), ``wq`` (Kg, Cg, R, S); per tap, (non-zero weights per input channel)
    dotted with (non-zero activations of that channel the tap's window touches).
    """
    cg, h, w = aq.shape
    _, _, r, s = wq.shape
    oh = (h + 2 * pad - r) // stride + 1
    ow = (w + 2 * pad - s) // stride + 1
    nz = np.pad(aq != 0, ((0, 0), (pad, pad), (pad, pad)))
    nzw = (wq != 0).sum(axis=0)  # (Cg, R, S)
    total = 0
    for i in range(r):
        for j in range(s):
            win = nz[
                :, i : i + stride * (oh - 1) + 1 : stride, j : j + stride * (ow - 1) + 1 : stride
            ]
            total += int(np.dot(nzw[:, i, j].astype(np.int64), win.sum(axis=(1, 2))))
    return total


@nb.njit(cache=True, parallel=True)
def _conv_fixed(a_hwc, w_rsck, oh, ow, stride, i_vec, shift, acc_bits):  # pragma: no cover
    hp, wp, cg = a_hwc.shape
    r, s, _, kg = w_rsck.shape
    lo = -float(2 ** (acc_bits - 1))
    hi = float(2 ** (acc_bits - 1) - 1)
    scale = 2.0 ** (-shift)
    half = 2.0 ** (shift - 1) if shift > 0 else 0.0
    out = np.zeros((oh, ow, kg), dtype=np.float64)
    for oy in nb.prange(oh):
        acc = np.zeros(kg, dtype=np.float64)
        blk = np.zeros(kg, dtype=np.float64)
        for ox in range(ow):
            acc[:] = 0.0
            for i in range(r):
                iy = oy * stride + i
                for j in range(s):
                    ix = ox * stride + j
                    for c0 in range(0, cg, i_vec):
                        c1 = min(cg, c0 + i_vec)
                        blk[:] = 0.0
                        nonzero = False
                        for c in range(c0, c1):
                            av = a_hwc[iy, ix, c]
                            if av != 0.0:
                                nonzero = True
                                for k in range(kg):
                                    blk[k] += w_rsck[i, j, c, k] * av
                        if not nonzero:
                            continue  # all products zero: the rounded sum is 0
                        for k in range(kg):
                            v = blk[k] * scale
                            if shift > 0:
                                v = np.floor((blk[k] + half) * scale)
                            t = acc[k] + v
                            acc[k] = min(max(t, lo), hi)
            out[oy, ox, :] = acc
    return out


def dcnn_conv_fixed(
    aq: np.ndarray,
    wq: np.ndarray,
    stride: int,
    pad: int,
    i_vec: int,
    shift: int,
    acc_bits: int,
) -> np.ndarray:
    """Fixed-point output (Kg, OH, OW), int64 accumulator values, of one phase.

    ``aq`` (Cg, H, W) and ``wq`` (Kg, Cg, R, S) are integer Q-format values (|v| < 2**31).
    Per output, block sums over I input channels are added in hardware order (tap (r, s), then
    channel block), each rounded half-up by ``shift`` bits (left shift when negative) and
    saturated to ``acc_bits``. Values are carried exactly in float64 (all < 2**53).
    """
    cg, h, w = aq.shape
    kg, _, r, s = wq.shape
    oh = (h + 2 * pad - r) // stride + 1
    ow = (w + 2 * pad - s) // stride + 1
    a = np.pad(aq, ((0, 0), (pad, pad), (pad, pad))).transpose(1, 2, 0).astype(np.float64)
    wt = wq.transpose(2, 3, 1, 0).astype(np.float64)
    out = _conv_fixed(
        np.ascontiguousarray(a), np.ascontiguousarray(wt), oh, ow, stride, i_vec, shift, acc_bits
    )
    return out.transpose(2, 0, 1).astype(np.int64)


def dcnn_phase(
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
) -> tuple[dict[str, int], np.ndarray]:
    """Cycles, counts (``DCNN_FIELDS``) and fixed-point output (Kg, OH, OW) of one phase."""
    cg, h, w = aq.shape
    kg, _, r, s = wq.shape
    sc = dcnn_schedule(h, w, r, s, stride, pad, kg, cg, rows, cols, f, i_vec, data_bits, width_bits)
    useful = dcnn_nonzero_macs(aq, wq, stride, pad)
    stats = {
        "cycles": sc["sched_cycles"] + FILL_DRAIN_CYCLES,
        "slots": sc["slots"],
        "multiplies": sc["multiplies"],
        "useful_macs": useful,
        "zero_macs": sc["multiplies"] - useful,
        "weight_reads": sc["weight_reads"],
        "activation_reads": sc["activation_reads"],
        "accumulator_updates": sc["accumulator_updates"],
        "output_writes": sc["output_writes"],
    }
    return stats, dcnn_conv_fixed(aq, wq, stride, pad, i_vec, shift, acc_bits)


@dataclass(frozen=True)
class DcnnFixedPoint:
    """Q formats of one layer: fractional bits of weights, activations and the accumulator."""

    weight_frac: int
    act_frac: int
    out_frac: int
    shift: int  # product format (weight_frac + act_frac) -> accumulator (out_frac), bits
    weights_q: np.ndarray  # int64, same shape as the weights
    acts_q: np.ndarray  # int64, same shape as the activations


def abs_conv_max(aq: np.ndarray, wq: np.ndarray, stride: int, pad: int, groups: int) -> int:
    """Largest ``sum |w| |a|`` over all outputs (exact, integer inputs): the bound on every
    partial sum. ``aq`` (N, C, H, W), ``wq`` (K, C/groups, R, S)."""
    n, c, h, w = aq.shape
    k, cg, r, s = wq.shape
    kg = k // groups
    oh = (h + 2 * pad - r) // stride + 1
    ow = (w + 2 * pad - s) // stride + 1
    a = np.pad(np.abs(aq).astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    wa = np.abs(wq).astype(np.float64)
    best = 0.0
    for g in range(groups):
        acc = np.zeros((kg, n, oh, ow))
        for i in range(r):
            for j in range(s):
                win = a[
                    :,
                    g * cg : (g + 1) * cg,
                    i : i + stride * (oh - 1) + 1 : stride,
                    j : j + stride * (ow - 1) + 1 : stride,
                ]
                acc += np.tensordot(wa[g * kg : (g + 1) * kg, :, i, j], win, axes=([1], [1]))
        best = max(best, float(acc.max(initial=0.0)))
    return int(round(best))


def choose_dcnn_fixed_point(
    weights: np.ndarray,
    activations: np.ndarray,
    stride: int,
    pad: int,
    groups: int,
    data_bits: int,
    acc_bits: int,
    i_vec: int,
) -> DcnnFixedPoint:
    """Q formats in the style of ``eie_prepare.choose_fixed_point``: weights and activations in
    ``data_bits`` from their ranges; the accumulator's fractional bits are the most for which
    the largest possible partial sum, plus 1 LSB of rounding per accumulation step, fits a
    signed ``acc_bits`` word, so it never saturates."""
    wf = frac_bits_for(float(np.max(np.abs(weights), initial=0.0)), data_bits)
    af = frac_bits_for(float(np.max(np.abs(activations), initial=0.0)), data_bits)
    wq = quantize(weights, wf, data_bits)
    aq = quantize(activations, af, data_bits)
    bound_q = abs_conv_max(aq, wq, stride, pad, groups)  # in units of 2**-(wf + af)
    _, cg, r, s = weights.shape
    steps = r * s * _cdiv(cg, i_vec)
    top = 2 ** (acc_bits - 1) - 1
    of = frac_bits_for(bound_q * 2.0 ** -(wf + af), acc_bits)
    while of > -64 and bound_q * 2.0 ** (of - wf - af) + steps > top:
        of -= 1
    return DcnnFixedPoint(wf, af, of, wf + af - of, wq, aq)
