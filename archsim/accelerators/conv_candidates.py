"""Conv-layer algorithms on Tensor Core GPUs as cuDNN has them: each candidate's kernels.

A conv layer has several *algorithms*, each a sequence of kernels run one after another on one
stream (``accelerators.gpu_conv`` times them all and keeps the fastest, as ``cudnn.benchmark``
does):

* ``implicit_gemm`` -- NHWC implicit GEMM, one launch: ``M = n*P*Q`` output pixels,
  ``N = K / groups`` filters, ``K = C/groups * R * S``, the groups as a batched GEMM (one grid
  dimension; a grouped conv runs in ``conv_library.grouped_families`` when the preset has them,
  and only when ``grouped_batched_tensor_op``). A 1x1, stride-1, unpadded conv is the same plain
  GEMM (named ``gemm_1x1``). When C or K (per group) breaks the library's tensor-op channel
  alignment the GEMM runs on the CUDA cores, and an ungrouped layer whose C breaks it also
  times ``conv_library.narrow_channel_families`` (cuDNN's aligna2 indexed kernels).
* ``grouped_per_launch`` -- grouped convs as ``groups`` launches of one group's GEMM.
* ``winograd_2x2`` / ``winograd_4x4`` -- non-fused Winograd F(m x m, 3x3) for 3x3 stride-1
  ungrouped convs: filter and input transforms (memory kernels), ``(m+2)^2`` batched GEMMs of
  ``tiles x K x C`` (FP32 results), output transform (memory kernel).
* ``depthwise_direct`` -- one input channel per group, in more than one group: a direct
  CUDA-core kernel, bound by its bytes or by its FMAs. A one-channel *ungrouped* conv is not
  depthwise (PyTorch's ``is_depthwise`` needs ``groups > 1``; cuDNN has no depthwise algorithm):
  it runs an implicit GEMM of ``K = R * S`` (DeepBench's V100 C = 1 convs, FP16 and FP32: all
  ``IMPLICIT_PRECOMP_GEMM`` or ``IMPLICIT_GEMM``).
* ``image_first_layer`` -- the library's dedicated image-input kernel, after padding kernels.

The tap-by-tap families pad each filter tap's channels to whole k-steps; a family that indexes
the reduction as one run (``conv_reduction: flattened``, cuDNN's ``..._indexed_wo_smem``
kernels) has one more candidate, of ``K = C/groups * R * S`` padded once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from archsim.accelerators.gpu_plan import cdiv, eligible, takes_precision, tensor_cores_take
from archsim.config.gpu import GpuConfig, KernelFamily
from archsim.config.workload import ConvLayer
from archsim.errors import SimulationError
from archsim.workload.gemm import ELEMENT_BYTES, GemmProblem, lower_to_gemm

__all__ = [
    "ConvCandidate",
    "ConvChoice",
    "GemmStep",
    "MemoryStep",
    "Step",
    "conv_candidates",
    "step_families",
    "tile_ks",
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
    strided: bool = False  # a conv of stride > 1: not in the unit_stride_convs_only families

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

    A precision the part's tensor cores do not take (FP32 on every preset) runs in the conv
    library's CUDA-core families that take it (V100: cuDNN's 128-pixel tiles), else in the
    GEMM library's CUDA-core kernels with their tile menu, ``K = R * S * C_g``, whatever its
    channel count: the tensor-op channel rule, and the conv library's one-tile SIMT kernel that
    stands for cuDNN's FP16 fallback beside it, are not for it (DeepBench's V100 FP32 convs
    with one or three input channels ran the same ``IMPLICIT_GEMM`` algorithm as the others,
    at 32-64 filters where that kernel's 128-wide tile was half to three quarters padding). A
    strided conv's GEMM steps leave out the families that run unit-stride convs only.
    """
    lib = cfg.conv_library
    m, n, _ = layer.gemm_view
    cg = layer.c // layer.groups
    cuda = not tensor_cores_take(cfg, layer.precision)
    simt = not cuda and not _aligned(cfg, layer)
    plain = layer.r == layer.s == 1 and layer.stride == 1 and layer.pad == 0
    name = "gemm_1x1" if plain else "implicit_gemm"
    cores = simt or cuda  # a CUDA-core kernel: the groups are its batch, no tensor-op family
    batched = layer.groups == 1 or cores or lib.grouped_batched_tensor_op
    grouped = layer.groups > 1 and not cores
    large = _large_filter(cfg, layer) and not cores and not grouped
    strided = layer.stride > 1
    out = []
    if batched and "implicit_gemm" in lib.algorithms:
        for tk in tile_ks(cfg, grouped, large, strided):
            k = layer.r * layer.s * (cg if cores or plain else _padded(cg, tk, layer))
            prob = _problem(layer, name, m, n, k, layer.groups, True)
            step = GemmStep(name, prob, simt, tk, grouped, large, strided=strided)
            out.append(ConvCandidate(name, (step,)))
        if not (cores or plain) and _has_flattened(cfg, grouped, large, strided):
            prob = _problem(layer, name, m, n, layer.r * layer.s * cg, layer.groups, True)
            step = GemmStep(name, prob, simt, None, grouped, large, flattened=True, strided=strided)
            out.append(ConvCandidate(name, (step,)))
        if _narrow_layer(cfg, layer):
            prob = _problem(layer, name, m, n, layer.r * layer.s * cg, 1, True)
            if _narrow_families(cfg, prob, strided):
                step = GemmStep(name, prob, flattened=True, narrow=True, strided=strided)
                out.append(ConvCandidate(name, (step,)))
    if layer.groups > 1 and "grouped_per_launch" in lib.algorithms:
        for tk in tile_ks(cfg, False, False, strided):
            k = layer.r * layer.s * (cg if cores or plain else _padded(cg, tk, layer))
            prob = _problem(layer, "group", m, n, k, 1, True)
            one = GemmStep("group", prob, simt, tk, strided=strided)
            out.append(ConvCandidate("grouped_per_launch", (one,) * layer.groups))
    return out


def _padded(cg: int, tile_k: int, layer: ConvLayer) -> int:
    """A tap's ``cg`` channels padded to whole k-steps of a tile of 16-bit k ``tile_k``."""
    ks = max(1, tile_k * 2 // ELEMENT_BYTES[layer.precision])  # k-step elements (gpu_plan)
    return cdiv(cg, ks) * ks


def _has_flattened(cfg: GpuConfig, grouped: bool, large: bool, strided: bool) -> bool:
    """Whether a conv family of the step's kind walks the reduction flattened."""
    fams = _conv_families(cfg, grouped, large, strided) or []
    return any(f.conv_reduction == "flattened" for f in fams)


def _large_filter(cfg: GpuConfig, layer: ConvLayer) -> bool:
    """Whether the layer's filter is large enough for ``conv_library.large_filter_families``."""
    lib = cfg.conv_library
    return bool(lib.large_filter_families) and max(layer.r, layer.s) >= lib.large_filter_min_size


def _narrow_layer(cfg: GpuConfig, layer: ConvLayer) -> bool:
    """An ungrouped layer whose input channels break the tensor-op rule and whose filters
    are a multiple of ``conv_library.narrow_channel_filter_multiple``."""
    lib = cfg.conv_library
    return (
        layer.groups == 1
        and layer.c % lib.tensor_op_channel_alignment_elements != 0
        and layer.k % lib.narrow_channel_filter_multiple == 0
    )


def _narrow_families(
    cfg: GpuConfig, prob: GemmProblem, strided: bool = False
) -> list[KernelFamily]:
    """The ``conv_library.narrow_channel_families`` that can run ``prob`` (its precision on
    the part's tensor cores, its alignment, the conv's stride): a family that cannot would
    fall back to the GEMM model's CUDA-core kernel, which is not the conv library's."""
    fams = _for_stride(cfg.conv_library.narrow_channel_families or [], strided) or []
    return [f for f in fams if eligible(cfg, f, prob)]


def _conv_families(
    cfg: GpuConfig, grouped: bool, large: bool, strided: bool = False
) -> list[KernelFamily] | None:
    """The conv library's kernel families for a tensor-core conv GEMM: the grouped families
    for a one-launch grouped conv, the large-filter families for a large filter, else the
    conv families (each when the preset has them), without those that run unit-stride convs
    only when ``strided``; None: the preset has none (the GEMM library's families run it)."""
    lib = cfg.conv_library
    if grouped and lib.grouped_families:
        fams = lib.grouped_families
    elif large and lib.large_filter_families:
        fams = lib.large_filter_families
    else:
        fams = lib.families
    return _for_stride(fams, strided) if fams else fams


def _for_stride(fams: list[KernelFamily], strided: bool) -> list[KernelFamily] | None:
    """``fams`` that run a conv of stride > 1 when ``strided`` (all of them otherwise)."""
    return [f for f in fams if not (strided and f.unit_stride_convs_only)] or None


def step_families(cfg: GpuConfig, step: GemmStep) -> list[KernelFamily] | None:
    """The conv library's kernel families for ``step`` (:func:`_conv_families`) that take its
    precision; None when none does (an FP32 conv beside FP16-only conv kernels runs in the GEMM
    library's families, as the preset has none of its own); a narrow step's are those that can
    run it (:func:`_narrow_families`); a strided conv's leave out ``unit_stride_convs_only``."""
    if step.narrow:
        return _narrow_families(cfg, step.problem, step.strided)
    fams = _conv_families(cfg, step.grouped, step.large_filter, step.strided) or []
    return [f for f in fams if takes_precision(cfg, f, step.problem.precision)] or None


def tile_ks(cfg: GpuConfig, grouped: bool, large: bool = False, strided: bool = False) -> list[int]:
    """The tile k-steps (16-bit elements) the conv GEMM kernels can run: their families'
    tiles (:func:`_conv_families`), else the preset's menu."""
    fams = _conv_families(cfg, grouped, large, strided)
    tiles = [t for f in fams or [] for t in (f.tiles or cfg.tiles)] or cfg.tiles
    return sorted({t.k for t in tiles})


def _winograd(layer: ConvLayer, tile: int) -> ConvCandidate:
    """Non-fused Winograd F(tile x tile, 3x3): transforms + (tile+2)^2 batched GEMMs; the
    transformed filters and inputs are held in the layer's precision (FP32: 4 bytes each)."""
    alpha2 = (tile + 2) ** 2
    eb = ELEMENT_BYTES[layer.precision]
    tiles = layer.n * cdiv(layer.out_h, tile) * cdiv(layer.out_w, tile)
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
    ctas = layer.n * cdiv(layer.out_h, fl.cta_rows) * cdiv(layer.out_w, fl.cta_cols)
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
    if "depthwise_direct" in algos and layer.c == layer.groups > 1:
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
