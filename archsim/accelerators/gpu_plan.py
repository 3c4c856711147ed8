"""How a GEMM maps onto a GPU: CTA tiles, split-K, occupancy, MMA instructions, L2 reuse.

A *plan* is one way a cuBLAS/CUTLASS-like library could run a :class:`GemmProblem`: a tile from
the config's menu, a split-K factor, and tensor cores or (when the shape breaks the library's
tensor-op alignment rule) the FP32 CUDA cores. ``tensor_core.py`` simulates every plan and
keeps the fastest (the library's autotuned choice).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from archsim.config.gpu import GpuConfig, ThreadBlockTile
from archsim.datapath.gpu_sm import warp_job_cycles
from archsim.errors import SimulationError
from archsim.workload.gemm import GemmProblem

__all__ = ["KernelPlan", "accumulation_chunk_k", "plans_for", "l2_traffic", "shared_read_bytes"]


@dataclass(frozen=True)
class KernelPlan:
    """One kernel configuration and the per-SM quantities the pipeline model needs."""

    tile: ThreadBlockTile
    split_k: int
    tensor_ops: bool
    ctas_per_sm: int
    grid_m: int
    grid_n: int
    ctas: int  # grid_m * grid_n * split_k * batch
    k_slice: int  # K elements per split slice
    steps: int  # k-steps per CTA
    groups: int  # dependent MMA groups per warp job
    frags: int  # independent MMA instructions per group
    issue_cycles: int
    mma_latency: int
    bubble_cycles: int
    stage_bytes: int  # A + B bytes per k-step of one CTA
    epilogue_bytes: int  # bytes one CTA stores (and reads for C) at the end

    @property
    def name(self) -> str:
        """``MxNxK`` of the tile, ``/splitkS`` when split, ``/simt`` on the CUDA cores."""
        t = self.tile
        s = f"{t.m}x{t.n}x{t.k}"
        if self.split_k > 1:
            s += f"/splitk{self.split_k}"
        return s if self.tensor_ops else s + "/simt"

    @property
    def warp_job(self) -> int:
        """Sub-core cycles of one warp's MMAs for one k-step."""
        return int(
            warp_job_cycles(
                self.groups, self.frags, self.issue_cycles, self.mma_latency, self.bubble_cycles
            )
        )


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def tensor_ops_allowed(cfg: GpuConfig, prob: GemmProblem) -> bool:
    """Whether the library runs ``prob`` on the tensor cores."""
    if prob.precision not in cfg.tensor_cores.precision_rate:
        return False
    a = cfg.library.tensor_op_alignment_elements
    return prob.m % a == 0 and prob.n % a == 0 and prob.k % a == 0


def check_supported(cfg: GpuConfig, prob: GemmProblem) -> None:
    """Raise ``SimulationError`` for a precision the part cannot run at all."""
    rates = cfg.tensor_cores.precision_rate
    if prob.precision != "fp32" and prob.precision not in rates:
        allowed = ", ".join([*rates, "fp32 (CUDA cores)"])
        raise SimulationError(
            f"layer {prob.layer!r}: precision {prob.precision!r} is not supported by "
            f"{cfg.name}; allowed: {allowed}"
        )


def _instruction(
    cfg: GpuConfig, prob: GemmProblem, tile: ThreadBlockTile, tensor_ops: bool
) -> tuple[int, int, int, int, int]:
    """(groups, frags, issue_cycles, latency, bubble_cycles) of one warp job."""
    tc = cfg.tensor_cores
    warp_fma = tile.m * tile.n * tile.k / tile.warps
    if tensor_ops:
        sub_rate = tc.per_sm / tc.sub_cores_per_sm * tc.fp16_fma_per_clock
        sub_rate *= tc.precision_rate[prob.precision]  # type: ignore[index]
        im, inn, ik = tc.instruction_mnk
        instr_fma = im * inn * ik / tc.instruction_warps
        groups = _cdiv(tile.k, ik)
        latency = tc.instruction_latency_cycles
        sustained = tc.sustained_fraction
    else:  # one FMA per thread of the warp, a dependent chain per k
        cc = cfg.cuda_cores
        per_sm = cc.fp16_fma_per_clock if prob.accumulate == "fp16" else cc.fp32_fma_per_clock
        sub_rate = per_sm / tc.sub_cores_per_sm
        instr_fma = 32.0
        groups = tile.k
        latency = cfg.cuda_cores.fma_latency_cycles
        sustained = 1.0
    instr_fma = min(instr_fma, warp_fma / groups)
    frags = max(1, math.ceil(warp_fma / (groups * instr_fma) - 1e-9))
    issue = max(1, math.ceil(instr_fma / sub_rate - 1e-9))
    job = int(warp_job_cycles(groups, frags, issue, latency, 0))
    bubble = math.ceil(job / sustained - 1e-9) - job
    return groups, frags, issue, latency, bubble


def accumulation_chunk_k(cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan) -> int:
    """K elements one instruction sums before its result is rounded into the accumulator.

    Tensor ops: the MMA instruction's k, which is given for 16-bit inputs and halves for 32-bit
    TF32 inputs (A100/H100 m16n8k8 and k8 wgmma; V100 HMMA.884: 4). CUDA cores: 1, one FMA.
    """
    if not plan.tensor_ops:
        return 1
    k16 = cfg.tensor_cores.instruction_mnk[2]
    return max(1, min(plan.tile.k, k16 * 2 // prob.in_bytes))


def _occupancy(cfg: GpuConfig, prob: GemmProblem, tile: ThreadBlockTile) -> int:
    """Co-resident CTAs per SM: shared memory, registers, warps and the CTA limit."""
    sm = cfg.sm_memory
    shared = tile.stages * (tile.m + tile.n) * tile.k * prob.in_bytes
    regs = tile.m * tile.n * 4 + tile.warps * 32 * sm.overhead_registers_per_thread * 4
    return min(
        sm.max_shared_bytes // shared,
        sm.register_file_bytes // regs,
        sm.max_warps // tile.warps,
        sm.max_ctas,
    )


def plans_for(cfg: GpuConfig, prob: GemmProblem) -> list[KernelPlan]:
    """Every feasible (tile, split-K) plan for ``prob``, in menu order."""
    check_supported(cfg, prob)
    tensor_ops = tensor_ops_allowed(cfg, prob)
    out: list[KernelPlan] = []
    for tile in cfg.tiles:
        per_sm = _occupancy(cfg, prob, tile)
        if per_sm < 1:
            continue
        gm, gn = _cdiv(prob.m, tile.m), _cdiv(prob.n, tile.n)
        base = gm * gn * prob.batch
        groups, frags, issue, latency, bubble = _instruction(cfg, prob, tile, tensor_ops)
        for split in sorted(set(cfg.library.split_k_factors)):
            k_slice = _cdiv(_cdiv(prob.k, split), tile.k) * tile.k
            if split > 1 and (base >= cfg.sms * per_sm or _cdiv(prob.k, k_slice) < split):
                continue
            out_bytes = 4 if split > 1 else prob.c_d_bytes  # fp32 partials / C read + D
            out.append(
                KernelPlan(
                    tile=tile,
                    split_k=split,
                    tensor_ops=tensor_ops,
                    ctas_per_sm=per_sm,
                    grid_m=gm,
                    grid_n=gn,
                    ctas=base * split,
                    k_slice=k_slice,
                    steps=_cdiv(k_slice, tile.k),
                    groups=groups,
                    frags=frags,
                    issue_cycles=issue,
                    mma_latency=latency,
                    bubble_cycles=bubble,
                    stage_bytes=(tile.m + tile.n) * tile.k * prob.in_bytes,
                    epilogue_bytes=tile.m * tile.n * out_bytes,
                )
            )
    if not out:
        raise SimulationError(
            f"layer {prob.layer!r}: no tile of {cfg.name}'s menu fits an SM at precision "
            f"{prob.precision!r} (shared memory {cfg.sm_memory.max_shared_bytes} B, registers "
            f"{cfg.sm_memory.register_file_bytes} B); add a smaller tile"
        )
    return out


def l2_traffic(cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan) -> tuple[int, int]:
    """(HBM bytes, L2 bytes) of the main loop's A and B loads.

    Every CTA reads its A and B panels through L2. HBM sees each panel once per *wave* of
    co-resident CTAs (CTAs are launched M-tile fastest, then N-tile, split slice, batch), or the
    operands exactly once when A and B together fit in L2. Edge panels count their real rows.
    """
    tile = plan.tile
    l2_bytes = plan.ctas * plan.steps * plan.stage_bytes
    eb = prob.in_bytes
    a_frac = prob.a_unique_fraction  # implicit-GEMM convs: A re-reads the same input pixels
    compulsory = round(prob.batch * (prob.m * a_frac + prob.n) * prob.k * eb)
    if compulsory <= cfg.l2.size_bytes:
        return compulsory, l2_bytes
    slots = cfg.sms * plan.ctas_per_sm
    ids = np.arange(plan.ctas, dtype=np.int64)
    m_idx = ids % plan.grid_m
    rest = ids // plan.grid_m
    n_idx = rest % plan.grid_n
    rest //= plan.grid_n
    s_idx = rest % plan.split_k
    b_idx = rest // plan.split_k
    wave = ids // slots
    kk = np.minimum(plan.k_slice, prob.k - s_idx * plan.k_slice)
    outer = (wave * prob.batch + b_idx) * plan.split_k + s_idx
    total = 0
    for idx, grid, dim, size, frac in (
        (m_idx, plan.grid_m, prob.m, tile.m, a_frac),
        (n_idx, plan.grid_n, prob.n, tile.n, 1.0),
    ):
        key = outer * grid + idx
        _, first = np.unique(key, return_index=True)
        rows = np.minimum(size, dim - idx[first] * size)
        total += round(int((rows * kk[first]).sum()) * eb * frac)
    return max(total, compulsory), l2_bytes


def shared_read_bytes(prob: GemmProblem, plan: KernelPlan) -> int:
    """Bytes the warps read from shared memory into registers (their A and B fragments)."""
    t = plan.tile
    best = min(
        t.m / wy + t.n / (t.warps // wy) for wy in range(1, t.warps + 1) if t.warps % wy == 0
    )
    return int(plan.ctas * plan.steps * t.warps * best * t.k * prob.in_bytes)
