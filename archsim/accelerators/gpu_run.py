"""A workload on a Tensor Core GPU at the preset clock: GEMM layers as their fastest plan,
conv layers as their fastest cuDNN-like algorithm (``gpu_conv``), one after another on one
stream. Kept apart from ``tensor_core`` (GEMM plans) and ``gpu_conv`` (which prices its GEMM
kernels with ``tensor_core``) so that neither imports the other back."""

from __future__ import annotations

from archsim.accelerators.base import LayerOutcome
from archsim.accelerators.gpu_conv import conv_outcome
from archsim.accelerators.tensor_core import _outcome, _simulate_plans
from archsim.config.gpu import GpuConfig
from archsim.config.workload import ConvLayer, WorkloadSpec
from archsim.engine.context import SimContext
from archsim.errors import SimulationError
from archsim.workload.gemm import lower_to_gemm

__all__ = ["simulate_tensor_core"]


def simulate_tensor_core(
    config: GpuConfig, workload: WorkloadSpec, seed: int
) -> tuple[list[LayerOutcome], SimContext]:
    """Run every layer as the fastest plan's kernel(s), one after another on one stream."""
    ctx = SimContext(config.clock.frequency_hz)
    outcomes = []
    for spec in workload.layers:
        if isinstance(spec, ConvLayer):  # algorithm choice (cuDNN) lives in gpu_conv
            outcomes.append(conv_outcome(config, spec, int(ctx.env.now), seed))
            ctx.run(until=outcomes[-1].end_cycle)
            continue
        try:
            prob = lower_to_gemm(spec)
        except ValueError as exc:
            raise SimulationError(str(exc)) from None
        tried = _simulate_plans(config, prob)
        best, _ = min(tried, key=lambda mr: mr[1].cycles)
        start = int(ctx.env.now)
        run = best.run(ctx)  # replay in the run's timeline; its rounds are memoised
        outcomes.append(_outcome(config, prob, run, len(tried), start, seed))
    return outcomes, ctx
