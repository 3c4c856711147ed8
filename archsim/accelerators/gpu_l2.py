"""L2 and HBM traffic of a GEMM plan's main loop: which A and B panels each wave of
co-resident CTAs loads through L2, and which of those reach HBM (``l2_traffic``).

Split from ``gpu_plan`` (which makes the plans); like it, in bytes only, so the result does not
depend on the clock and ``tensor_core`` memoises it across clocks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from archsim.accelerators.gpu_plan import cdiv

if TYPE_CHECKING:
    from archsim.accelerators.gpu_plan import KernelPlan
    from archsim.config.gpu import GpuConfig
    from archsim.workload.gemm import GemmProblem

__all__ = ["l2_traffic"]


def l2_traffic(cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan) -> tuple[int, int]:
    """(HBM bytes, L2 bytes) of the main loop's A and B loads.

    Every CTA reads its A and B panels through L2 (one of them shared with the other CTAs of
    its cluster under TMA multicast). HBM sees each panel once per *wave* of co-resident CTAs
    (CTAs are launched M-tile fastest, then N-tile, split slice, batch; N-tile fastest where
    the cluster shares A, ``plan.n_fastest``), or the operands
    exactly once when A and B together fit in L2, or not at all when A, B and D fit and
    ``l2.resident_across_calls`` (back-to-back calls of one GEMM find them in L2). Edge panels
    count their real rows.

    Closed form: a *block* (one batch entry and split slice: ``grid_m x grid_n`` CTAs) read
    within one wave loads all of A's and B's panels once; a block cut by wave boundaries loads,
    per piece, the panels that piece touches. Only cut blocks are visited (at most one cut per
    wave); beyond ``_MAX_CUTS`` cuts the mean correction of the first ``_MAX_CUTS`` is used.
    """
    l2_bytes = plan.ctas * plan.steps * plan.l2_stage_bytes
    if plan.n_fastest and prob.a_unique_fraction == 1.0:  # the same sums with A and B swapped
        swapped = replace(prob, m=prob.n, n=prob.m)
        tile = plan.tile.model_copy(update={"m": plan.tile.n, "n": plan.tile.m})
        flipped = replace(plan, tile=tile, grid_m=plan.grid_n, grid_n=plan.grid_m, n_fastest=False)
        return l2_traffic(cfg, swapped, flipped)[0], l2_bytes
    if plan.stream_k:  # HBM sees what the data-parallel order of the same tiles loads
        steps = cdiv(prob.k, plan.k_step)
        tiles = plan.grid_m * plan.grid_n * prob.batch
        dp = replace(plan, stream_k=False, ctas=tiles, steps=steps, k_slice=steps * plan.k_step)
        return l2_traffic(cfg, prob, dp)[0], l2_bytes
    a_frac = prob.a_unique_fraction  # implicit-GEMM convs: A re-reads the same input pixels
    compulsory = round(prob.batch * (prob.m * a_frac + prob.n) * prob.k * prob.in_bytes)
    if compulsory <= cfg.l2.size_bytes:
        resident = compulsory + prob.batch * prob.m * prob.n * prob.out_bytes <= cfg.l2.kept_bytes
        return (0 if resident and cfg.l2.resident_across_calls else compulsory), l2_bytes
    slots = cfg.sms * plan.ctas_per_sm
    block = plan.grid_m * plan.grid_n
    waves = cdiv(plan.ctas, slots)
    n_cuts = waves - 1
    cuts = np.arange(1, min(n_cuts, _MAX_CUTS) + 1, dtype=np.int64) * slots
    cuts = cuts[cuts % block != 0]
    rows = prob.batch * (prob.m * a_frac + prob.n) * prob.k  # every block read in one piece
    if cuts.size:
        bl, pos = cuts // block, cuts % block
        first = np.ones(bl.size, bool)
        first[1:] = bl[1:] != bl[:-1]
        last = np.ones(bl.size, bool)
        last[:-1] = bl[1:] != bl[:-1]
        prev = np.where(first, 0, np.concatenate(([0], pos[:-1])))
        kk = _slice_k(prob, plan, bl)
        pieces = _piece_rows(prob, plan, prev, pos, a_frac) + np.where(
            last, _piece_rows(prob, plan, pos, np.full_like(pos, block), a_frac), 0
        )
        corr = float((pieces * kk).sum()) - float(((prob.m * a_frac + prob.n) * kk[last]).sum())
        if n_cuts > _MAX_CUTS:
            corr = round(corr * n_cuts / _MAX_CUTS)
        rows += corr
    return max(round(rows * prob.in_bytes), compulsory), l2_bytes


#: wave boundaries visited exactly by :func:`l2_traffic` (the rest are extrapolated)
_MAX_CUTS = 1 << 14


def _slice_k(prob: GemmProblem, plan: KernelPlan, bl: np.ndarray) -> np.ndarray:
    """K elements of the split slice of each block ``bl``."""
    s = bl % plan.split_k
    return np.minimum(plan.k_slice, prob.k - s * plan.k_slice)


def _piece_rows(
    prob: GemmProblem, plan: KernelPlan, a: np.ndarray, c: np.ndarray, a_frac: float = 1.0
) -> np.ndarray:
    """Rows of A (times ``a_frac``, the distinct share of a gathered A) plus columns of B that
    CTAs ``[a, c)`` of one block load (0 if empty)."""
    gm, gn = plan.grid_m, plan.grid_n
    tm, tn = plan.tile.m, plan.tile.n
    n = c - a
    last_m, last_n = prob.m - (gm - 1) * tm, prob.n - (gn - 1) * tn
    # A: M-tile indices a % gm onwards, wrapping; all of them once n >= gm
    has_last = ((gm - 1 - a % gm) % gm) < n
    a_rows = np.where(n >= gm, prob.m, n * tm - (tm - last_m) * has_last)
    # B: N-tile indices a // gm .. (c - 1) // gm
    hi = (c - 1) // gm
    b_rows = (hi - a // gm + 1) * tn - (tn - last_n) * (hi == gn - 1)
    return np.where(n > 0, a_rows * a_frac + b_rows, 0)
