"""FC and LSTM layers on SCNN, at their reduced rate.

A matrix-vector product has no activation reuse: with one image, each input channel has one
activation, so a multiplier-array issue pairs F weights with a single activation and only F of
the F x I multipliers do useful work (the paper's "4 useful products per cycle, 25 % of peak").
Output neurons are interleaved over the PEs (row k on PE k mod P, as in EIE); every PE receives
the whole activation vector and walks, per group of Kc of its rows and per input channel, its
non-zero weights in vectors of F through the same crossbar and accumulator banks as a conv layer
(the per-product kernel runs with a 1 x 1 plane on each PE). PEs own disjoint outputs and their
own weights, so they need no barrier; the layer ends with the slowest PE and its last drain. The
bias is one more channel driven by an activation of 1.0.
"""

from __future__ import annotations

import math

import numpy as np

from archsim.accelerators.scnn_run import ScnnConvRun, rounded_to_zero
from archsim.config.scnn import ScnnConfig
from archsim.datapath.fixed_point import frac_bits_for, quantize
from archsim.datapath.scnn_kernels import scnn_layer
from archsim.workload.sparse import QuantizedMatVec

__all__ = ["run_scnn_matvec"]


def run_scnn_matvec(cfg: ScnnConfig, mv: QuantizedMatVec) -> ScnnConvRun:
    """Simulate ``y = W x + b`` on SCNN; returns an ``ScnnConvRun``-shaped result."""
    ar, mul = cfg.arithmetic, cfg.multipliers
    n_pes = cfg.pe_grid.num_pes
    wf = frac_bits_for(float(np.max(np.abs(mv.codebook))), ar.data_bits)
    amax = max(float(np.max(mv.activations, initial=0.0)), 1.0)
    af = frac_bits_for(amax, ar.data_bits)
    of = frac_bits_for(float(mv.abs_bound().max(initial=0.0)), ar.accumulator_bits)
    shift = wf + af - of
    cb_q = quantize(mv.codebook, wf, ar.data_bits)
    act_q = np.append(quantize(mv.activations, af, ar.data_bits), 1 << af)  # bias channel
    n_ch = mv.n_cols + 1
    rows = np.concatenate([mv.row_idx.astype(np.int64), np.flatnonzero(mv.bias_codes)])
    cols = np.concatenate([mv.entry_columns(), np.full(np.count_nonzero(mv.bias_codes), mv.n_cols)])
    vals = cb_q[np.concatenate([mv.codes, mv.bias_codes[mv.bias_codes > 0]])]
    rows_per_pe = -(-mv.n_rows // n_pes)
    kc = min(rows_per_pe, cfg.max_output_channels_per_group, cfg.accumulator.entries)
    n_groups = -(-rows_per_pe // kc)
    pe, kl = rows % n_pes, rows // n_pes
    key = ((pe * n_groups + kl // kc) * n_ch + cols) * kc + kl % kc
    order = np.argsort(key, kind="stable")
    pe_o, kl_o, col_o, val_o = pe[order], kl[order], cols[order], vals[order]
    nz = act_q > 0
    a_ptr = np.zeros(n_ch + 1, dtype=np.int64)
    np.cumsum(nz, out=a_ptr[1:])
    a_v = act_q[nz].astype(np.int64)
    zeros_a = np.zeros(a_v.size, dtype=np.int64)
    out = np.zeros(mv.n_rows, dtype=np.int64)
    totals = np.zeros(6, dtype=np.int64)
    bounds = np.searchsorted(pe_o, np.arange(n_pes + 1))
    busiest = 0
    for p in range(n_pes):
        lo, hi = bounds[p], bounds[p + 1]
        gk = (kl_o[lo:hi] // kc) * n_ch + col_o[lo:hi]
        w_ptr = np.zeros(n_groups * n_ch + 1, dtype=np.int64)
        np.cumsum(np.bincount(gk, minlength=n_groups * n_ch), out=w_ptr[1:])
        zeros_w = np.zeros(hi - lo, dtype=np.int64)
        part = np.zeros((n_groups * kc, 1, 1), dtype=np.int64)
        stats = scnn_layer(
            n_groups,
            kc,
            n_ch,
            1,
            a_ptr,
            zeros_a,
            zeros_a,
            a_v,
            w_ptr,
            kl_o[lo:hi] % kc,
            zeros_w,
            zeros_w,
            val_o[lo:hi].astype(np.int64),
            np.zeros(1, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            1,
            1,
            1,
            1,
            1,
            0,
            mul.weights_per_cycle,
            mul.activations_per_cycle,
            cfg.accumulator.banks,
            cfg.crossbar_input_fifo_depth,
            shift,
            ar.accumulator_bits,
            part,
        )
        totals += stats.sum(axis=(1, 2))
        drain = math.ceil(kc / cfg.accumulator.banks)
        busy = int(stats[0].sum()) + (
            drain if cfg.accumulator.double_buffered else drain * n_groups
        )
        busiest = max(busiest, busy)
        mine = np.arange(n_groups * kc) * n_pes + p
        keep = mine < mv.n_rows
        out[mine[keep]] = part[keep, 0, 0]
    word_bits = ar.data_bits + cfg.index_bits
    nnz_out = int(np.count_nonzero(np.maximum(out, 0)))
    counts = {
        "multipliers": {"multiply": int(totals[2])},
        "crossbar": {"transfer": int(totals[3])},
        "accumulator": {"update": int(totals[3]), "drain": n_groups * kc * n_pes},
        "iaram": {"read": int(totals[1]), "write": math.ceil(a_v.size * word_bits / 64)},
        "oaram": {"write": math.ceil(nnz_out * word_bits / cfg.oaram.width_bits)},
        "weight_fifo": {"push": int(totals[1]), "pop": int(totals[1])},
        "ppu": {"output": mv.n_rows},
        "halo": {"transfer": 0},
    }
    extras = {
        "scnn_barrier_idle": 0.0,
        "scnn_conflict_stalls": int(totals[4]),
        "scnn_bank_conflicts": int(totals[5]),
        "scnn_dropped_products": int(totals[2] - totals[3]),
        "scnn_kc": kc,
        "scnn_weight_refills": 0,
        "scnn_supertiles": 1,
        "scnn_output_density": nnz_out / mv.n_rows if mv.n_rows else 0.0,
    }
    w_bytes = int(vals.size) * word_bits // 8
    return ScnnConvRun(
        layer=None,
        items=[(busiest, w_bytes + a_v.size * word_bits // 8, 0)],
        counts=counts,
        extras=extras,
        output_q=out,
        out_frac=of,
        macs_effective=int(totals[3]),
        input_nnz=int(a_v.size),
        output_nnz=nnz_out,
        warnings=tuple(
            rounded_to_zero("activations", mv.activations, act_q[:-1], af, ar.data_bits)
        ),
    )
