"""Convolutions on Tensor Core GPUs as cuDNN runs them: every candidate algorithm
(``accelerators.conv_candidates``) timed, the fastest kept, as ``cudnn.benchmark`` does.

A GEMM kernel of an algorithm runs in the conv library's kernel families (cuDNN's engines):
``cudnn.benchmark`` times each family that has tiles of the candidate's k-step and keeps the
fastest, each family's kernels costing its own fixed set-up (``kernel_overhead_s``).

GEMM kernels are timed with the GEMM model (``tensor_core.run_gemm``); memory kernels take
launch + bytes / bandwidth (L2 when the kernel's bytes fit in L2, else HBM, each at its
config's achievable fraction). Small layers are also computed by the chosen algorithm
(``datapath.conv_algorithms``: the implicit GEMM's gather, the Winograd transforms) and checked
against the direct convolution.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from archsim.accelerators.base import LayerOutcome, functional_fits
from archsim.accelerators.conv_candidates import (
    ConvCandidate,
    ConvChoice,
    GemmStep,
    MemoryStep,
    Step,
    conv_candidates,
    step_families,
)
from archsim.accelerators.gpu_plan import cdiv
from archsim.config.gpu import GpuConfig, KernelFamily, ThreadBlockTile
from archsim.config.workload import ConvLayer
from archsim.datapath.conv_algorithms import implicit_gemm_conv, winograd_conv
from archsim.errors import SimulationError
from archsim.units import seconds_to_cycles
from archsim.workload.conv import materialize_conv, reference_conv

__all__ = [
    "ConvCandidate",
    "ConvChoice",
    "GemmStep",
    "MemoryStep",
    "best_conv",
    "candidate_runs",
    "conv_candidates",
    "conv_outcome",
    "gemm_config",
    "kernel_overhead_s",
    "memory_counts",
    "memory_cycles",
    "note_clock_variant",
    "step_config",
    "time_candidate",
    "timed_families",
]


def timed_families(cfg: GpuConfig, step: GemmStep) -> list[str | None]:
    """The kernel families ``cudnn.benchmark`` times for a conv GEMM kernel, by name: every
    conv family of the step (``conv_candidates.step_families``) with a tile of the step's
    ``tile_k`` (or no menu of its own); ``[None]``: on the CUDA cores, or in the GEMM
    library's families as it picks (the preset has no conv families)."""
    fams = step_families(cfg, step)
    if step.simt or not fams:
        return [None]
    fams = [f for f in fams if (f.conv_reduction == "flattened") == step.flattened] or fams
    k = step.tile_k
    names = [f.name for f in fams if k is None or not f.tiles or any(t.k == k for t in f.tiles)]
    return names or [f.name for f in fams]  # type: ignore[misc]


def kernel_overhead_s(cfg: GpuConfig, step: GemmStep, family: str) -> float:
    """Fixed set-up time, s, of one conv GEMM kernel of ``family``: the family's own
    ``kernel_overhead_s``, else the conv library's; 0 on the CUDA cores."""
    if step.simt:
        return 0.0
    fams = step_families(cfg, step) or []
    own = next((f.kernel_overhead_s for f in fams if f.name == family), None)
    return cfg.conv_library.kernel_overhead_s if own is None else own


def gemm_config(cfg: GpuConfig, step: GemmStep, family: str | None = None) -> GpuConfig:
    """The config a conv GEMM kernel runs under: no split-K unless the library splits conv
    reductions; on the CUDA cores (``simt``: the conv library's channel rule failed) one
    CUDA-core kernel family with the library's SIMT conv tile; else the conv library's kernel
    families (``conv_candidates.step_families``, default the GEMM library's; only ``family``
    when given), their tiles narrowed to those of ``tile_k`` (a family with no tile of that k
    keeps its own). Memoised per config object: validating the derived config is most of a conv
    layer's simulation time, and timing, counting and pricing a layer ask for it again."""
    # what _build_gemm_config reads of the step: its flags, its precision (the families that
    # take it) and, for a narrow step, its problem (the families eligible for its alignment)
    key = (id(cfg), step.simt, step.tile_k, step.grouped, step.large_filter, step.flattened,
           step.narrow, step.strided, step.problem.precision,
           step.memo_key if step.narrow else None, family)  # fmt: skip
    hit = _GEMM_CONFIGS.get(key)
    if hit is None or hit[0] is not cfg:  # the entry holds cfg, so its id is not reused
        if len(_GEMM_CONFIGS) >= 1024:
            _GEMM_CONFIGS.clear()
        base = _CLOCK_VARIANTS.get(id(cfg))
        if base is not None and base[0] is cfg:  # cfg at another clock: derive, do not validate
            derived = gemm_config(base[1], step, family)
            built = cfg if derived is base[1] else derived.model_copy(update={"clock": cfg.clock})
        else:
            built = _build_gemm_config(cfg, step, family)
        hit = _GEMM_CONFIGS[key] = (cfg, built)
    return hit[1]


def note_clock_variant(variant: GpuConfig, base: GpuConfig) -> None:
    """Record that ``variant`` is ``base`` with only its clock changed (the power model's
    clock search): :func:`gemm_config` then derives ``variant``'s kernel config from
    ``base``'s, whose derivation reads no clock, instead of validating a new one per clock."""
    if len(_CLOCK_VARIANTS) >= 4096:
        _CLOCK_VARIANTS.clear()
    root = _CLOCK_VARIANTS.get(id(base))
    if root is not None and root[0] is base:
        base = root[1]
    _CLOCK_VARIANTS[id(variant)] = (variant, base)


_GEMM_CONFIGS: dict[tuple[Any, ...], tuple[GpuConfig, GpuConfig]] = {}
#: id(variant) -> (variant, base): configs that differ from base in their clock only
_CLOCK_VARIANTS: dict[int, tuple[GpuConfig, GpuConfig]] = {}


def _build_gemm_config(cfg: GpuConfig, step: GemmStep, family: str | None) -> GpuConfig:
    over: dict[str, Any] = {}
    own = step_families(cfg, step)
    if not cfg.conv_library.split_k or own is None:  # the GEMM library's kernels run a conv
        over["library.split_k_factors"] = [1]  # unsplit: the split rule is the conv library's
    families = own or cfg.library.families
    if family is not None:  # a name none of them has: the GEMM model's CUDA-core fallback
        families = [f for f in families if f.name == family] or families  # (fp32 on h100)
    if step.simt:
        families = [_simt_family(cfg)]
    elif step.tile_k is not None:
        over["tiles"] = [t.model_dump() for t in _with_k(cfg.tiles, step.tile_k)]
        families = [
            f.model_copy(update={"tiles": _with_k(f.tiles, step.tile_k)}) if f.tiles else f
            for f in families
        ]
    # the kernels' set-up is added by candidate_runs, and the step's K already walks the
    # reduction as the family does: neither is the GEMM library's
    conv_only = {"kernel_overhead_s": None, "conv_reduction": "per_tap"}
    families = [f.model_copy(update=conv_only) for f in families]
    if families != cfg.library.families:
        over["library.families"] = [f.model_dump() for f in families]
    return cfg.with_overrides(over) if over else cfg


def _with_k(tiles: list[ThreadBlockTile], k: int) -> list[ThreadBlockTile]:
    """The tiles of k-step ``k`` (all of them if none has it)."""
    return [t for t in tiles if t.k == k] or tiles


def _simt_family(cfg: GpuConfig) -> KernelFamily:
    lib = cfg.conv_library
    m, n, k = lib.simt_tile_mnk
    tile = ThreadBlockTile(m=m, n=n, k=k, warps=lib.simt_tile_warps, stages=lib.simt_tile_stages)
    return KernelFamily(
        name="conv_simt",
        library_behaviour="cuDNN's CUDA-core implicit-GEMM conv for channel counts that break "
        "the tensor-op channel rule (conv_library.tensor_op_channel_alignment_elements)",
        tensor_ops=False,
        tiles=[tile],
    )


def memory_cycles(cfg: GpuConfig, step: MemoryStep) -> int:
    """Launch + the longest of moving the bytes (at the step's own rate, else L2 when they fit
    in what stays resident there, ``l2.resident_capacity_bytes``, else HBM), the FMAs on the
    FP16 CUDA cores and the tensor MACs (each SM taking its CTAs one after another:
    ``ceil(ctas / SMs)`` CTAs' MACs at ``macs_per_clock_per_sm``), in SM cycles; at least
    ``min_kernel_s`` (an eager launch)."""
    clock = cfg.clock.frequency_hz
    moved = step.read_bytes + step.write_bytes
    if step.bytes_per_s is not None:
        bw = step.bytes_per_s / clock
    elif moved <= cfg.l2.kept_bytes:
        bw = cfg.l2.bandwidth_bytes_per_clock * cfg.l2.achievable_fraction
    else:
        bw = cfg.hbm.bandwidth_bytes_per_s * cfg.hbm_achievable_fraction / clock
    compute = step.fma / (cfg.sms * cfg.cuda_cores.fp16_fma_per_clock)
    if step.tensor_macs:
        per_cta = step.tensor_macs / step.ctas / step.macs_per_clock_per_sm
        compute = max(compute, cdiv(step.ctas, cfg.sms) * per_cta)
    body = seconds_to_cycles(cfg.launch_overhead_s, clock)
    body += max(1, math.ceil(max(moved / bw, compute) - 1e-9))
    return max(seconds_to_cycles(cfg.min_kernel_s, clock), body)


def candidate_runs(cfg: GpuConfig, cand: ConvCandidate) -> list[tuple[Step, int, Any]]:
    """(step, SM cycles, the GEMM model's fastest ``KernelRun`` or None for a memory kernel)
    of each kernel of ``cand``, in launch order."""
    from archsim.accelerators.tensor_core import run_gemm

    memo: dict[GemmStep, tuple[int, Any]] = {}
    out: list[tuple[Step, int, Any]] = []
    clock = cfg.clock.frequency_hz
    for step in cand.steps:
        if isinstance(step, MemoryStep):
            out.append((step, memory_cycles(cfg, step), None))
            continue
        key = step.memo_key
        if key not in memo:
            for family in timed_families(cfg, step):
                run = run_gemm(gemm_config(cfg, step, family), step.problem)[0]
                setup = kernel_overhead_s(cfg, step, run.plan.family)
                timed = (run.cycles + seconds_to_cycles(setup, clock), run)
                if key not in memo or timed[0] < memo[key][0]:  # ties keep family order
                    memo[key] = timed
        out.append((step, *memo[key]))
    return out


def time_candidate(cfg: GpuConfig, cand: ConvCandidate) -> tuple[int, ...]:
    """SM cycles of each kernel of ``cand`` (GEMMs: the fastest plan of the GEMM model)."""
    return tuple(cycles for _, cycles, _ in candidate_runs(cfg, cand))


def best_conv(cfg: GpuConfig, layer: ConvLayer) -> ConvChoice:
    """Time every candidate and keep the fastest (ties keep candidate order)."""
    return _best_runs(cfg, layer)[0]


def _best_runs(cfg: GpuConfig, layer: ConvLayer) -> tuple[ConvChoice, list[tuple[Step, int, Any]]]:
    """:func:`best_conv` and the fastest candidate's :func:`candidate_runs`."""
    timed = [(c, candidate_runs(cfg, c)) for c in conv_candidates(cfg, layer)]
    cand, runs = min(timed, key=lambda cr: sum(n for _, n, _ in cr[1]))
    tried: dict[str, int] = {}
    for c, r in timed:  # an algorithm's fastest variant (tile k) stands for it
        t = sum(n for _, n, _ in r)
        narrow = any(isinstance(s, GemmStep) and s.narrow for s in c.steps)
        name = f"{c.algorithm}_narrow" if narrow else c.algorithm  # beside the CUDA cores'
        tried[name] = min(t, tried.get(name, t))
    return ConvChoice(cand, tuple(n for _, n, _ in runs), tried), runs


def _merge_counts(into: dict[str, dict[str, int]], add: dict[str, dict[str, int]]) -> None:
    for comp, actions in add.items():
        slot = into.setdefault(comp, {})
        for act, n in actions.items():
            slot[act] = slot.get(act, 0) + n


def memory_counts(step: MemoryStep) -> dict[str, dict[str, int]]:
    moved = {"read_bytes": step.read_bytes, "write_bytes": step.write_bytes}
    counts = {"l2": moved, "hbm": dict(moved)}  # every byte once, as the GEMM's compulsory
    if step.fma:
        counts["cuda_core"] = {"fma": step.fma, "instruction": step.fma // 32}
    if step.tensor_macs:
        counts["tensor_core"] = {"fma": step.tensor_macs, "op": step.tensor_macs // 64}
    return counts


def _gemm_outcome(cfg: GpuConfig, step: GemmStep, seed: int, run: Any = None) -> LayerOutcome:
    """The GEMM model's outcome for one GEMM kernel (counts, extras, cycles), in the family
    :func:`candidate_runs` timed fastest (``run``: that run, when the caller has it)."""
    from archsim.accelerators.tensor_core import gemm_outcome

    if run is None:
        ((_, _, run),) = candidate_runs(cfg, ConvCandidate("", (step,)))
    return gemm_outcome(step_config(cfg, step, run), step.problem, 0, seed)


def step_config(cfg: GpuConfig, step: GemmStep, run: Any) -> GpuConfig:
    """The config of the family ``run`` (a :func:`candidate_runs` result) ran in."""
    fams = timed_families(cfg, step)
    return gemm_config(cfg, step, run.plan.family if fams != [None] else None)


def functional_error(layer: ConvLayer, algorithm: str, seed: int) -> float:
    """Max |output - direct convolution| of ``algorithm`` computed for real on the layer's
    seeded tensors (densities 1.0 when the layer gives none); raises past 1e-9 relative."""
    dense = {f: 1.0 for f in ("weight_density", "activation_density") if getattr(layer, f) is None}
    sc = materialize_conv(layer.model_copy(update=dense), seed)
    ref = reference_conv(sc)
    if algorithm.startswith("winograd_"):
        out = winograd_conv(sc.activations, sc.weights, layer.pad, int(algorithm[-1]))
    else:  # implicit GEMM, per-group launches and the direct depthwise kernel: one gather
        out = implicit_gemm_conv(sc.activations, sc.weights, layer.stride, layer.pad, layer.groups)
    err = float(np.abs(out - ref).max())
    if err > 1e-9 * max(1.0, float(np.abs(ref).max())):
        raise SimulationError(f"layer {layer.name!r}: {algorithm} output differs by {err:.3g}")
    return err


def conv_outcome(
    cfg: GpuConfig, layer: ConvLayer, start: int, seed: int, choice: ConvChoice | None = None
) -> LayerOutcome:
    """The layer run as its fastest algorithm (or ``choice``'s, timed at ``cfg``): cycles and
    counts of all its kernels, the main (longest) GEMM's ``tc_*`` columns, ``tc_conv_algo``
    and the other candidates' times."""
    if choice is None:
        choice, runs = _best_runs(cfg, layer)
    else:  # timed again at this cfg's clock
        runs = candidate_runs(cfg, choice.candidate)
        choice = replace(choice, step_cycles=tuple(n for _, n, _ in runs))
    counts: dict[str, dict[str, int]] = {}
    dram = 0
    main: LayerOutcome | None = None
    gemms: dict[GemmStep, LayerOutcome] = {}
    for step, _, run in runs:
        if isinstance(step, MemoryStep):
            c = memory_counts(step)
            dram += sum(c.get("hbm", {}).values())
            _merge_counts(counts, c)
            continue
        key = step.memo_key
        if key not in gemms:
            gemms[key] = _gemm_outcome(cfg, step, seed, run)
        out = gemms[key]
        _merge_counts(counts, out.counts)
        dram += out.dram_bytes
        if main is None or out.cycles > main.cycles:
            main = out
    direct = any(isinstance(s, MemoryStep) and s.tensor_macs for s in choice.candidate.steps)
    if main is None and direct:  # a direct tensor-core kernel (image_first_layer)
        peak = cfg.peak_fma_per_cycle
        extras: dict[str, Any] = {"tc_tensor_ops": True, "tc_bound": "compute"}
    elif main is None:  # a single memory kernel (depthwise)
        peak = cfg.sms * cfg.cuda_cores.fp16_fma_per_clock
        extras = {"tc_tensor_ops": False, "tc_bound": "memory"}
    else:
        peak, extras = main.peak_macs_per_cycle, dict(main.extras)
    cycles = choice.cycles
    time_s = cycles / cfg.clock.frequency_hz
    tflops = 2 * layer.macs_dense / time_s / 1e12
    extras.update(
        tc_conv_algo=choice.candidate.algorithm,
        tc_conv_kernels=len(choice.candidate.steps),
        tc_conv_tried="; ".join(f"{a}={c}" for a, c in choice.tried.items()),
        tc_tflops=tflops,
        tc_conv_functional_max_error=float("nan"),
    )
    shapes = (layer.input_shape, layer.weight_shape, layer.output_shape)
    if functional_fits(layer.macs_dense, sum(math.prod(shape) for shape in shapes)):
        err = functional_error(layer, choice.candidate.algorithm, seed)
        extras["tc_conv_functional_max_error"] = err
    if "tc_peak_tflops" in extras:
        extras["tc_peak_fraction"] = tflops / extras["tc_peak_tflops"]
    wd = layer.weight_density if layer.weight_density is not None else 1.0
    ad = layer.activation_density if layer.activation_density is not None else 1.0
    return LayerOutcome(
        layer=layer.name,
        kind=layer.kind,
        cycles=cycles,
        start_cycle=start,
        end_cycle=start + cycles,
        macs_dense=layer.macs_dense,
        macs_effective=round(layer.macs_dense * wd * ad),
        peak_macs_per_cycle=peak,
        dram_bytes=dram,
        counts=counts,
        extras=extras,
    )
