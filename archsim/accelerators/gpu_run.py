"""A workload on a Tensor Core GPU at the preset clock: GEMM layers as their fastest plan,
conv layers as their fastest cuDNN-like algorithm (``gpu_conv``), one after another on one
stream. Kept apart from ``tensor_core`` (GEMM plans) and ``gpu_conv`` (which prices its GEMM
kernels with ``tensor_core``) so that neither imports the other back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from archsim.accelerators.base import LayerOutcome
from archsim.accelerators.gpu_conv import conv_outcome
from archsim.accelerators.tensor_core import _outcome, _simulate_plans
from archsim.config.gpu import GpuConfig
from archsim.config.workload import ConvLayer, WorkloadSpec
from archsim.engine.context import SimContext
from archsim.errors import SimulationError
from archsim.workload.gemm import GemmProblem, lower_to_gemm

__all__ = ["gemm_problem", "layer_in_range", "simulate_tensor_core"]


@contextmanager
def layer_in_range(workload: WorkloadSpec, index: int) -> Iterator[None]:
    """Turn an overflow of the GPU model's 64-bit arithmetic (dimensions near 2**63, products
    of three 10^12-sized dimensions) or a failed allocation into one ``SimulationError`` naming
    the layer. Shapes are planned analytically, so huge batches run; only these fail."""
    try:
        yield
    except (OverflowError, MemoryError) as exc:
        spec = workload.layers[index]
        raise SimulationError(
            f"{workload.origin}: layers.{index}: layer {spec.name!r} is beyond what the GPU "
            f"model's 64-bit arithmetic holds ({type(exc).__name__}); allowed: dimensions "
            "whose products stay below 2**63"
        ) from None


def gemm_problem(spec: Any) -> GemmProblem:
    """The GEMM a non-conv layer runs as; a layer the GPU model cannot lower is a
    ``SimulationError``."""
    try:
        return lower_to_gemm(spec)
    except ValueError as exc:
        raise SimulationError(str(exc)) from None


def simulate_tensor_core(
    config: GpuConfig, workload: WorkloadSpec, seed: int
) -> tuple[list[LayerOutcome], SimContext]:
    """Run every layer as the fastest plan's kernel(s), one after another on one stream."""
    ctx = SimContext(config.clock.frequency_hz)
    outcomes = []
    for i, spec in enumerate(workload.layers):
        with layer_in_range(workload, i):
            outcomes.append(_layer(config, spec, ctx, seed))
    return outcomes, ctx


def _layer(config: GpuConfig, spec: Any, ctx: SimContext, seed: int) -> LayerOutcome:
    if isinstance(spec, ConvLayer):  # algorithm choice (cuDNN) lives in gpu_conv
        out = conv_outcome(config, spec, int(ctx.env.now), seed)
        ctx.run(until=out.end_cycle)
        return out
    prob = gemm_problem(spec)
    tried = _simulate_plans(config, prob)
    best, _ = min(tried, key=lambda mr: mr[1].cycles)
    start = int(ctx.env.now)
    run = best.run(ctx)  # replay in the run's timeline; its rounds are memoised
    return _outcome(config, prob, run, len(tried), start, seed)
