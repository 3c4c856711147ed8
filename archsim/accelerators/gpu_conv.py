"""Convolutions on Tensor Core GPUs as cuDNN runs them: algorithm candidates and the choice.

A conv layer has several *algorithms*, each a sequence of kernels run one after another on one
stream (``cudnn.benchmark`` times them all and keeps the fastest; so does this module):

* ``implicit_gemm`` -- NHWC implicit GEMM, one launch: ``M = n*P*Q`` output pixels,
  ``N = K / groups`` filters, ``K = C/groups * R * S``, the groups as a batched GEMM (one grid
  dimension; a grouped conv runs in ``conv_library.grouped_families`` when the preset has them,
  and only when ``grouped_batched_tensor_op``). A 1x1, stride-1, unpadded conv is the same plain
  GEMM (named ``gemm_1x1``). When C or K (per group) breaks the library's tensor-op channel
  alignment the GEMM runs on the CUDA cores.
* ``grouped_per_launch`` -- grouped convs as ``groups`` launches of one group's GEMM.
* ``winograd_2x2`` / ``winograd_4x4`` -- non-fused Winograd F(m x m, 3x3) for 3x3 stride-1
  ungrouped convs: filter and input transforms (memory kernels), ``(m+2)^2`` batched GEMMs of
  ``tiles x K x C`` (FP32 results), output transform (memory kernel).
* ``depthwise_direct`` -- one input channel per group: a direct CUDA-core kernel, bound by its
  bytes or by its FMAs.

A GEMM kernel of an algorithm runs in the conv library's kernel families (cuDNN's engines):
``cudnn.benchmark`` times each family that has tiles of the candidate's k-step and keeps the
fastest, each family's kernels costing its own fixed set-up (``kernel_overhead_s``). The
tap-by-tap families pad each filter tap's channels to whole k-steps; a family that indexes the
reduction as one run (``conv_reduction: flattened``, cuDNN's ``..._indexed_wo_smem`` kernels)
times one more candidate, of ``K = C/groups * R * S`` padded once.

GEMM kernels are timed with the GEMM model (``tensor_core.run_gemm``); memory kernels take
launch + bytes / bandwidth (L2 when the kernel's bytes fit in L2, else HBM, each at its
config's achievable fraction). Small layers are also computed by the chosen algorithm
(``datapath.conv_algorithms``: the implicit GEMM's gather, the Winograd transforms) and checked
against the direct convolution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from archsim.accelerators.base import LayerOutcome, functional_fits
from archsim.config.gpu import GpuConfig, KernelFamily, ThreadBlockTile
from archsim.config.workload import ConvLayer
from archsim.datapath.conv_algorithms import implicit_gemm_conv, winograd_conv
from archsim.errors import SimulationError
from archsim.units import seconds_to_cycles
from archsim.workload.conv import materialize_conv, reference_conv
from archsim.workload.gemm import ELEMENT_BYTES, GemmProblem, lower_to_gemm

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
    "step_config",
    "time_candidate",
    "timed_families",
]


@dataclass(frozen=True)
class GemmStep:
    """One GEMM kernel of an algorithm; ``simt`` runs it on the CUDA cores."""

    name: str
    problem: GemmProblem
    simt: bool = False
    tile_k: int | None = None  # only the menu's tiles of this k (the problem's K is padded to it)
    grouped: bool = False  # a grouped conv in one launch: runs in conv_library.grouped_families
    large_filter: bool = False  # runs in conv_library.large_filter_families
    flattened: bool = False  # K = C*R*S in one run: the families of conv_reduction "flattened"
    narrow: bool = False  # channels off the tensor-op rule: conv_library.narrow_channel_families

    @property
    def memo_key(self) -> GemmStep:
        """The step with its names blanked: kernels equal in all but name time alike."""
        return replace(self, name="", problem=replace(self.problem, layer=""))


@dataclass(frozen=True)
class MemoryStep:
    """One element-wise/transform/direct kernel: bytes in and out, CUDA-core FMAs (0 for
    copies); a direct tensor-core kernel also has its MACs (``tensor_macs``) spread over
    ``ctas`` CTAs at ``macs_per_clock_per_sm``; ``bytes_per_s``: the kernel's own rate instead
    of L2/HBM."""

    name: str
    read_bytes: int
    write_bytes: int
    fma: int = 0
    tensor_macs: int = 0
    ctas: int = 1
    macs_per_clock_per_sm: float = 0.0
    bytes_per_s: float | None = None


Step = GemmStep | MemoryStep


@dataclass(frozen=True)
class ConvCandidate:
    """One algorithm for a conv layer: its kernels in launch order."""

    algorithm: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class ConvChoice:
    """A timed candidate: cycles per step (launch included) and all candidates' cycles."""

    candidate: ConvCandidate
    step_cycles: tuple[int, ...]
    tried: dict[str, int] = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        """SM cycles of the whole algorithm."""
        return sum(self.step_cycles)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _problem(
    layer: ConvLayer, name: str, m: int, n: int, k: int, batch: int, gather: bool
) -> GemmProblem:
    """A GEMM of the layer's precision; ``gather``: A is gathered from the input tensor (implicit
    GEMM), so only the input's elements are distinct."""
    frac = 1.0
    if gather:
        frac = min(1.0, layer.n * layer.h * layer.w * (layer.c // layer.groups) / (m * k))
    return replace(
        lower_to_gemm(layer), layer=f"{layer.name}.{name}", m=m, n=n, k=k, batch=batch,
        a_unique_fraction=frac,
    )  # fmt: skip


def _aligned(cfg: GpuConfig, layer: ConvLayer) -> bool:
    a = cfg.conv_library.tensor_op_channel_alignment_elements
    return (layer.c // layer.groups) % a == 0 and (layer.k // layer.groups) % a == 0


def _implicit(cfg: GpuConfig, layer: ConvLayer) -> list[ConvCandidate]:
    """Implicit GEMM (and its per-group launches), one candidate per tile k of the menu.

    The k-loop walks the R x S filter taps and, per tap, the group's channels in chunks of the
    tile's k-step (``tile.k`` 16-bit elements scaled to the operand width, as ``gpu_plan``
    sizes k-steps in bytes): a tap whose channel count is not a multiple of it pads its last
    chunk, so ``K = R * S * ceil(C_g / k_step) * k_step`` on the tensor cores (a plain 1x1 GEMM
    and the CUDA-core kernel, which steps through K element by element, keep
    ``K = R * S * C_g``). Where a family walks the reduction as one run
    (``conv_reduction: flattened``), one more candidate has ``K = R * S * C_g``.
    """
    lib = cfg.conv_library
    m, n, _ = layer.gemm_view
    cg = layer.c // layer.groups
    simt = not _aligned(cfg, layer)
    plain = layer.r == layer.s == 1 and layer.stride == 1 and layer.pad == 0
    name = "gemm_1x1" if plain else "implicit_gemm"
    batched = layer.groups == 1 or simt or lib.grouped_batched_tensor_op
    grouped = layer.groups > 1 and not simt
    large = _large_filter(cfg, layer) and not simt and not grouped
    out = []
    if batched and "implicit_gemm" in lib.algorithms:
        for tk in _tile_ks(cfg, grouped, large):
            k = layer.r * layer.s * (cg if simt or plain else _padded(cg, tk, layer))
            prob = _problem(layer, name, m, n, k, layer.groups, True)
            out.append(ConvCandidate(name, (GemmStep(name, prob, simt, tk, grouped, large),)))
        if not (simt or plain) and _has_flattened(cfg, grouped, large):
            prob = _problem(layer, name, m, n, layer.r * layer.s * cg, layer.groups, True)
            step = GemmStep(name, prob, simt, None, grouped, large, flattened=True)
            out.append(ConvCandidate(name, (step,)))
        if simt and _narrow(cfg, layer):
            prob = _problem(layer, name, m, n, layer.r * layer.s * cg, 1, True)
            step = GemmStep(name, prob, flattened=True, narrow=True)
            out.append(ConvCandidate(name, (step,)))
    if layer.groups > 1 and "grouped_per_launch" in lib.algorithms:
        for tk in _tile_ks(cfg, False):
            k = layer.r * layer.s * (cg if simt or plain else _padded(cg, tk, layer))
            one = GemmStep("group", _problem(layer, "group", m, n, k, 1, True), simt, tk)
            out.append(ConvCandidate("grouped_per_launch", (one,) * layer.groups))
    return out


def _padded(cg: int, tile_k: int, layer: ConvLayer) -> int:
    """A tap's ``cg`` channels padded to whole k-steps of a tile of 16-bit k ``tile_k``."""
    ks = max(1, tile_k * 2 // ELEMENT_BYTES[layer.precision])  # k-step elements (gpu_plan)
    return _cdiv(cg, ks) * ks


def _has_flattened(cfg: GpuConfig, grouped: bool, large: bool) -> bool:
    """Whether a conv family of the step's kind walks the reduction flattened."""
    fams = _conv_families(cfg, grouped, large) or []
    return any(f.conv_reduction == "flattened" for f in fams)


def _large_filter(cfg: GpuConfig, layer: ConvLayer) -> bool:
    """Whether the layer's filter is large enough for ``conv_library.large_filter_families``."""
    lib = cfg.conv_library
    return bool(lib.large_filter_families) and max(layer.r, layer.s) >= lib.large_filter_min_size


def _narrow(cfg: GpuConfig, layer: ConvLayer) -> bool:
    """Whether an ungrouped layer whose channels break the tensor-op rule may also run in
    ``conv_library.narrow_channel_families`` (one of them takes its precision)."""
    fams = cfg.conv_library.narrow_channel_families or []
    ok = [f for f in fams if f.precisions is None or layer.precision in f.precisions]
    return bool(ok) and layer.groups == 1


def _conv_families(
    cfg: GpuConfig, grouped: bool, large: bool, narrow: bool = False
) -> list[KernelFamily] | None:
    """The conv library's kernel families for a tensor-core conv GEMM: the narrow-channel
    families for channels off the tensor-op rule, the grouped families for a one-launch
    grouped conv, the large-filter families for a large filter, else the conv families (each
    when the preset has them); None: the preset has none (the GEMM library's families run the
    conv)."""
    lib = cfg.conv_library
    if narrow:
        return lib.narrow_channel_families
    if grouped and lib.grouped_families:
        return lib.grouped_families
    if large and lib.large_filter_families:
        return lib.large_filter_families
    return lib.families


def _step_families(cfg: GpuConfig, step: GemmStep) -> list[KernelFamily] | None:
    """The conv library's kernel families for ``step`` (:func:`_conv_families`)."""
    return _conv_families(cfg, step.grouped, step.large_filter, step.narrow)


def _tile_ks(cfg: GpuConfig, grouped: bool, large: bool = False) -> list[int]:
    """The tile k-steps (16-bit elements) the conv GEMM kernels can run: their families'
    tiles (:func:`_conv_families`), else the preset's menu."""
    fams = _conv_families(cfg, grouped, large)
    tiles = [t for f in fams or [] for t in (f.tiles or cfg.tiles)] or cfg.tiles
    return sorted({t.k for t in tiles})


def _winograd(layer: ConvLayer, tile: int) -> ConvCandidate:
    """Non-fused Winograd F(tile x tile, 3x3): transforms + (tile+2)^2 batched GEMMs."""
    alpha2 = (tile + 2) ** 2
    eb = ELEMENT_BYTES["fp16"]
    tiles = layer.n * _cdiv(layer.out_h, tile) * _cdiv(layer.out_w, tile)
    c, k = layer.c, layer.k
    gemm = _problem(layer, f"winograd{tile}", tiles, k, c, alpha2, False)
    gemm_out = gemm.out_bytes
    steps: tuple[Step, ...] = (
        MemoryStep("filter_transform", k * c * 9 * eb, alpha2 * k * c * eb),
        MemoryStep(
            "input_transform",
            layer.n * layer.h * layer.w * c * eb,
            alpha2 * tiles * c * eb,
        ),
        GemmStep(f"winograd{tile}_gemm", gemm),
        MemoryStep(
            "output_transform",
            alpha2 * tiles * k * gemm_out,
            layer.n * layer.out_h * layer.out_w * k * eb,
        ),
    )
    return ConvCandidate(f"winograd_{tile}x{tile}", steps)


def _first_layer(cfg: GpuConfig, layer: ConvLayer) -> ConvCandidate | None:
    """The library's dedicated image-input kernel (``conv_library.first_layer``) when the layer
    has its shape: pad the input's and the filters' channels, then one direct kernel."""
    fl = cfg.conv_library.first_layer
    if (
        fl is None
        or layer.precision not in fl.precisions
        or layer.memory_format != "nhwc"
        or layer.groups != 1
        or not layer.c <= fl.channels
        or layer.k != fl.filters
        or not layer.r == layer.s == fl.filter_size
        or layer.stride != fl.stride
    ):
        return None
    eb = ELEMENT_BYTES[layer.precision]
    image, taps = layer.n * layer.h * layer.w, layer.k * layer.r * layer.s
    ctas = layer.n * _cdiv(layer.out_h, fl.cta_rows) * _cdiv(layer.out_w, fl.cta_cols)
    rate = fl.padding_bytes_per_s
    return ConvCandidate(
        "image_first_layer",
        (
            MemoryStep("pad_input", image * layer.c * eb, image * fl.channels * eb,
                       bytes_per_s=rate),
            MemoryStep("pad_filters", taps * layer.c * eb, taps * fl.channels * eb,
                       bytes_per_s=rate),
            MemoryStep(
                "first_layer",
                image * fl.channels * eb + taps * fl.channels * eb,
                layer.n * layer.out_h * layer.out_w * layer.k * eb,
                tensor_macs=layer.n * layer.out_h * layer.out_w * taps * fl.channels,
                ctas=ctas,
                macs_per_clock_per_sm=fl.macs_per_clock_per_sm,
            ),
        ),
    )  # fmt: skip


def _depthwise(layer: ConvLayer) -> ConvCandidate:
    eb = ELEMENT_BYTES["fp16"]
    read = (layer.n * layer.h * layer.w * layer.c + layer.k * layer.r * layer.s) * eb
    write = layer.n * layer.out_h * layer.out_w * layer.k * eb
    return ConvCandidate(
        "depthwise_direct", (MemoryStep("depthwise", read, write, fma=layer.macs_dense),)
    )


def conv_candidates(cfg: GpuConfig, layer: ConvLayer) -> list[ConvCandidate]:
    """Every algorithm of ``cfg.conv_library.algorithms`` that applies to ``layer``."""
    algos = cfg.conv_library.algorithms
    out: list[ConvCandidate] = []
    out += _implicit(cfg, layer)
    winograd_ok = (
        layer.r == layer.s == 3
        and layer.stride == 1
        and layer.groups == 1
        and layer.memory_format in cfg.conv_library.winograd_memory_formats
    )
    for tile in (2, 4):
        if winograd_ok and f"winograd_{tile}x{tile}" in algos and _aligned(cfg, layer):
            out.append(_winograd(layer, tile))
    if "depthwise_direct" in algos and layer.c == layer.groups:
        out.append(_depthwise(layer))
    first = _first_layer(cfg, layer) if "image_first_layer" in algos else None
    if first is not None:
        out.append(first)
    if not out:
        raise SimulationError(
            f"layer {layer.name!r}: none of the algorithms {', '.join(algos)} applies "
            f"(conv_library.algorithms); allowed: include implicit_gemm"
        )
    return out


def timed_families(cfg: GpuConfig, step: GemmStep) -> list[str | None]:
    """The kernel families ``cudnn.benchmark`` times for a conv GEMM kernel, by name: every
    conv family (:func:`_conv_families`) with a tile of the step's ``tile_k`` (or no menu of
    its own); ``[None]``: on the CUDA cores, or in the GEMM library's families as it picks
    (the preset has no conv families)."""
    fams = _step_families(cfg, step)
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
    fams = _step_families(cfg, step) or []
    own = next((f.kernel_overhead_s for f in fams if f.name == family), None)
    return cfg.conv_library.kernel_overhead_s if own is None else own


def gemm_config(cfg: GpuConfig, step: GemmStep, family: str | None = None) -> GpuConfig:
    """The config a conv GEMM kernel runs under: no split-K unless the library splits conv
    reductions; on the CUDA cores (``simt``: the conv library's channel rule failed) one
    CUDA-core kernel family with the library's SIMT conv tile; else the conv library's kernel
    families (:func:`_conv_families`, default the GEMM library's; only ``family`` when given),
    their tiles narrowed to those of ``tile_k`` (a family with no tile of that k keeps its
    own). Memoised per config object: validating the derived config is most of a conv
    layer's simulation time, and timing, counting and pricing a layer ask for it again."""
    key = (id(cfg), step.simt, step.tile_k, step.grouped, step.large_filter, step.flattened,
           step.narrow, family)  # fmt: skip
    hit = _GEMM_CONFIGS.get(key)
    if hit is None or hit[0] is not cfg:  # the entry holds cfg, so its id is not reused
        if len(_GEMM_CONFIGS) >= 1024:
            _GEMM_CONFIGS.clear()
        hit = _GEMM_CONFIGS[key] = (cfg, _build_gemm_config(cfg, step, family))
    return hit[1]


_GEMM_CONFIGS: dict[tuple[Any, ...], tuple[GpuConfig, GpuConfig]] = {}


def _build_gemm_config(cfg: GpuConfig, step: GemmStep, family: str | None) -> GpuConfig:
    over: dict[str, Any] = {}
    if not cfg.conv_library.split_k:
        over["library.split_k_factors"] = [1]
    families = _step_families(cfg, step) or cfg.library.families
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
        compute = max(compute, _cdiv(step.ctas, cfg.sms) * per_cta)
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
        tried[c.algorithm] = min(t, tried.get(c.algorithm, t))
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
