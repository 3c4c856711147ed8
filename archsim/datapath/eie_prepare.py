"""Inputs of the EIE kernels: fixed-point formats and the list of broadcast items."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.datapath.fixed_point import frac_bits_for, quantize

__all__ = ["EieFixedPoint", "choose_fixed_point", "broadcast_items", "padded_activations"]


@dataclass(frozen=True)
class EieFixedPoint:
    """Q formats of one layer, chosen offline from its value ranges."""

    weight_frac: int
    act_frac: int
    out_frac: int
    shift: int  # product (weight_frac + act_frac) -> accumulator (out_frac)
    codebook_q: np.ndarray  # int64
    act_q: np.ndarray  # int64, logical length
    bias_act_q: int  # the 1.0 that drives the bias column


def choose_fixed_point(
    codebook: np.ndarray,
    activations: np.ndarray,
    row_abs_bound: float,
    has_bias: bool,
    data_bits: int,
    acc_bits: int,
) -> EieFixedPoint:
    """Weights/activations in ``data_bits``; the accumulator format leaves room for the largest
    possible partial sum (``row_abs_bound`` = max over rows of sum |w||x| + |b|), so it never
    saturates."""
    wf = frac_bits_for(float(np.max(np.abs(codebook))), data_bits)
    amax = float(np.max(activations)) if activations.size else 0.0
    af = frac_bits_for(max(amax, 1.0) if has_bias else amax, data_bits)
    of = frac_bits_for(row_abs_bound, acc_bits)
    return EieFixedPoint(
        weight_frac=wf,
        act_frac=af,
        out_frac=of,
        shift=wf + af - of,
        codebook_q=quantize(codebook, wf, data_bits),
        act_q=quantize(activations, af, data_bits),
        bias_act_q=int(quantize(np.array([1.0]), af, data_bits)[0]) if has_bias else 0,
    )


def padded_activations(act_q: np.ndarray, num_pes: int) -> np.ndarray:
    """Activation vector padded with zeros to a multiple of ``num_pes`` (whole LNZD groups)."""
    n = act_q.size
    out = np.zeros(-(-n // num_pes) * num_pes, dtype=np.int64)
    out[:n] = act_q
    return out


def broadcast_items(
    act_q: np.ndarray, has_bias: bool, bias_act_q: int, num_pes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Non-zero (> 0) activations in scan order: (column, group, lane, value, n_groups).

    The bias column (index = padded length) forms one extra group with its 1.0 in lane 0.
    """
    padded = padded_activations(act_q, num_pes)
    cols = np.flatnonzero(padded > 0).astype(np.int64)
    vals = padded[cols]
    n_groups = padded.size // num_pes
    if has_bias:
        cols = np.append(cols, padded.size)
        vals = np.append(vals, bias_act_q)
        n_groups += 1
    groups = cols // num_pes
    lanes = cols - groups * num_pes
    if has_bias:
        lanes[-1] = 0
    return cols, groups, lanes, vals.astype(np.int64), n_groups
