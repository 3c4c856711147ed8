"""The work every GPU of a training step does, whatever the GPU count: the GEMMs of the forward
and backward passes (timed by the single-GPU Tensor Core model), each layer's elementwise passes
(batch-norm, ReLU, bias, residual adds, max-pools, concatenations, NCHW transposes) as memory-bound
time, and the optimizer's traffic. ``system.training`` schedules it and adds the communication.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

from archsim.config.gpu import GpuConfig, rate_key
from archsim.config.system import SystemConfig
from archsim.config.workload import ConvLayer, FcLayer, GemmLayer, WorkloadSpec
from archsim.energy.pricing_gpu import gpu_price_list
from archsim.errors import SimulationError, check_choice, check_count
from archsim.limits import limit
from archsim.results import LayerResult
from archsim.simulate import simulate
from archsim.system.conv_phases import (
    WGRAD_TRANSFORM_KERNELS,
    empty_phase_fraction,
    merged_result,
    wgrad_transform_s,
)
from archsim.system.subsystem import gpu_config
from archsim.system.workload import (
    PRECISIONS,
    Phases,
    TrainLayer,
    gemm_workload,
    phase_workload,
    training_layers,
)
from archsim.workload.gemm import ELEMENT_BYTES

__all__ = [
    "CONV_LOWERINGS",
    "MEMORY_FORMATS",
    "OPTIMIZERS",
    "GpuWork",
    "StepOptions",
    "cold_when_revisited",
    "elementwise_passes",
    "footprint_bytes",
    "gemm_times",
    "gpu_work",
    "input_elements",
    "max_pool_bytes",
    "pooled_elements",
    "transposes_moved",
]

OPTIMIZERS = ("sgd", "adam")
MEMORY_FORMATS = ("nhwc", "nchw")
#: no pass of a conv runs NCHW natively (see :func:`transposes_moved`)
NO_NATIVE = (False, False, False)
#: how a conv's forward and data-gradient passes reach the GPU model (see :func:`gemm_times`)
CONV_LOWERINGS = ("gemm", "cudnn")


@dataclass(frozen=True)
class StepOptions:
    """How the step is run: GPUs, precision, per-GPU batch, optimizer, gradient compression."""

    gpus: int | None = None  # None: every GPU of the system
    precision: str = "amp_fp16"
    batch_per_gpu: int = 256
    optimizer: str = "sgd"
    topk_density: float | None = None  # gradient compression: fraction of gradients sent
    memory_format: str = "nhwc"  # activations' layout: nchw makes tensor-core convs transpose
    conv_lowering: str = "gemm"  # a conv's forward and data gradient: plain GEMMs or cuDNN convs

    def check(self, system: SystemConfig) -> None:
        """One-line errors for options the system or the model cannot take."""
        check_choice("precision", self.precision, PRECISIONS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_count("batch per GPU", self.batch_per_gpu)
        if self.gpus is not None:
            check_count("gpus", self.gpus)
        t = self.topk_density
        if t is not None and (
            isinstance(t, bool) or not (isinstance(t, numbers.Real) and 0 < t <= 1)
        ):
            raise SimulationError(f"top-k density {t!r}; allowed: a fraction in (0, 1]")
        check_choice("memory format", self.memory_format, MEMORY_FORMATS)
        check_choice("conv lowering", self.conv_lowering, CONV_LOWERINGS)
        gpu = gpu_config(system)
        rates = gpu.tensor_cores.precision_rate
        runs = [p for p, (g, *_) in PRECISIONS.items() if g == "fp32" or rate_key(g) in rates]
        if self.precision not in runs:
            raise SimulationError(
                f"precision {self.precision!r}: {system.name}'s {gpu.name} has no "
                f"{PRECISIONS[self.precision][0]} tensor cores; allowed: {', '.join(runs)}"
            )


def input_elements(ls: ConvLayer, outputs: int) -> int:
    """Input activations of conv ``ls`` at the batch at which its output has ``outputs``."""
    return outputs // (ls.k * ls.out_h * ls.out_w) * ls.c * ls.h * ls.w


def pooled_elements(ls: ConvLayer, outputs: int) -> int:
    """The tensor a max-pool after conv ``ls`` reads: its output of ``outputs`` elements, or
    its module's concatenation (``concat_channels`` at its output size), which the
    concatenation kernel also reads and writes."""
    return outputs // ls.k * (ls.concat_channels or ls.k)


def transposes_moved(
    tl: TrainLayer, ls: ConvLayer, passes: int, native: tuple[bool, bool, bool] = NO_NATIVE
) -> tuple[int, int, int, int]:
    """(forward, backward elements moved; forward, backward kernels) of the NCHW <-> NHWC
    transposes around one conv's tensor-core calls: forward transposes X in and Y out, the
    data gradient dY in and dX out (none for the first layer), the weight gradient X and dY in;
    each transpose moves its tensor ``passes`` times (a read and a write). ``native``: the
    forward, data and weight gradient passes that run NCHW themselves (cuDNN's Winograd), which
    need none."""
    per_pass = passes * (input_elements(ls, tl.outputs) + tl.outputs)
    fwd_native, dgrad_native, wgrad_native = native
    fwd = 0 if fwd_native else per_pass
    dgrad = 0 if tl.dgrad is None or dgrad_native else per_pass
    wgrad = 0 if wgrad_native else per_pass
    return fwd, dgrad + wgrad, 2 * bool(fwd), 2 * bool(dgrad) + 2 * bool(wgrad)


def max_pool_bytes(outputs: int, stride: int, act: int) -> tuple[int, int]:
    """(forward, backward bytes) of a max-pool after a layer (PyTorch's
    max_pool2d_with_indices): forward reads the layer's output and writes the pooled values and
    their int64 indices; backward reads the pooled gradient and the indices and writes the
    input-sized gradient."""
    pooled = -(-outputs // (stride * stride))
    fwd = outputs * act + pooled * (act + 8)
    return fwd, fwd


def elementwise_passes(
    layers: list[TrainLayer],
    spec: WorkloadSpec,
    system: SystemConfig,
    act: int,
    hbm_bytes_per_s: float,
    transpose: bool = False,
    zero_fill: bool = False,
    wgrad_transforms: list[int] | None = None,
    native: list[tuple[bool, bool, bool]] | None = None,
) -> tuple[list[float], list[float], list[int]]:
    """(forward s, backward s, bytes moved, each per layer) of the elementwise passes;
    ``transpose``: conv activations are NCHW and the convs run on tensor cores (cuDNN transposes
    them); ``zero_fill``: a strided conv's data gradient runs as its phases (conv lowering
    "cudnn"), and the part of ``dX`` no filter tap reaches is written as zeros;
    ``wgrad_transforms``: bytes of each layer's Winograd weight-gradient transforms (0: none),
    backward passes of :data:`~archsim.system.conv_phases.WGRAD_TRANSFORM_KERNELS` kernels;
    ``native``: per layer, the passes that need no transposes (:func:`transposes_moved`)."""
    t = system.training
    fwd: list[float] = []
    bwd: list[float] = []
    moved: list[int] = []
    for i, (tl, ls) in enumerate(zip(layers, spec.layers, strict=True)):
        is_conv = isinstance(ls, ConvLayer)
        pf = t.conv_forward_passes if is_conv else 0
        pb = t.conv_backward_passes if is_conv else 0
        kf = t.conv_forward_kernels if is_conv else 0
        kb = t.conv_backward_kernels if is_conv else 0
        if is_conv and not ls.relu:  # type: ignore[union-attr]
            pf, pb = max(0, pf - t.relu_forward_passes), max(0, pb - t.relu_backward_passes)
            kf, kb = max(0, kf - 1), max(0, kb - 1)
        if is_conv and not ls.batch_norm:  # type: ignore[union-attr]  # the BN's share
            pf -= min(pf, t.conv_forward_passes - t.relu_forward_passes)
            pb -= min(pb, t.conv_backward_passes - t.relu_backward_passes)
            kf, kb = max(0, kf - 1), max(0, kb - 1)
        if is_conv and ls.bias:  # type: ignore[union-attr]
            # forward: read and write the output; backward: the bias gradient reads dY once
            pf, pb, kf, kb = pf + 2, pb + 1, kf + 1, kb + 1
        if isinstance(ls, FcLayer) and ls.relu:  # a ReLU after the linear layer's GEMM
            pf, pb = pf + t.relu_forward_passes, pb + t.relu_backward_passes
            kf, kb = kf + 1, kb + 1
        bf, bb = tl.outputs * act * pf, tl.outputs * act * pb
        if is_conv and ls.residual_add:  # type: ignore[union-attr]
            bf += tl.outputs * act * t.residual_forward_passes
            bb += tl.outputs * act * t.residual_backward_passes
            kf, kb = kf + 1, kb + 1
        if is_conv and ls.input_max_pool_size > 1:  # type: ignore[union-attr]
            pf_b, pb_b = max_pool_bytes(input_elements(ls, tl.outputs), 1, act)  # type: ignore[arg-type]
            bf, bb, kf, kb = bf + pf_b, bb + pb_b, kf + 1, kb + 1
        if is_conv and ls.concat_channels:  # type: ignore[union-attr]  # forward copy only
            bf, kf = bf + 2 * pooled_elements(ls, tl.outputs) * act, kf + 1  # type: ignore[arg-type]
        if is_conv and ls.max_pool_stride > 1:  # type: ignore[union-attr]
            pooled = pooled_elements(ls, tl.outputs)  # type: ignore[arg-type]
            pf_b, pb_b = max_pool_bytes(pooled, ls.max_pool_stride, act)  # type: ignore[union-attr]
            bf, bb, kf, kb = bf + pf_b, bb + pb_b, kf + 1, kb + 1
        if zero_fill and is_conv and tl.dgrad is not None and empty_phase_fraction(ls) > 0:  # type: ignore[arg-type]
            # the strided data gradient's phases no tap reaches: written as zeros
            zero = input_elements(ls, tl.outputs) * empty_phase_fraction(ls)  # type: ignore[arg-type]
            bb, kb = bb + round(zero) * act, kb + 1
        if wgrad_transforms and wgrad_transforms[i]:
            bb, kb = bb + wgrad_transforms[i], kb + WGRAD_TRANSFORM_KERNELS
        if transpose and is_conv:
            flags = native[i] if native else NO_NATIVE
            ef, eb, tkf, tkb = transposes_moved(tl, ls, t.nchw_transpose_passes, flags)  # type: ignore[arg-type]
            bf, bb, kf, kb = bf + ef * act, bb + eb * act, kf + tkf, kb + tkb
        fwd.append(max(bf / hbm_bytes_per_s, kf * t.elementwise_launch_s))
        bwd.append(max(bb / hbm_bytes_per_s, kb * t.elementwise_launch_s))
        moved.append(bf + bb)
    return fwd, bwd, moved


def footprint_bytes(wl: WorkloadSpec) -> int:
    """Bytes one pass of ``wl`` moves through L2 at least once: every conv's filters and
    output (its input is the output of a layer before it), every GEMM's A, B and D."""
    total = 0
    for layer in wl.layers:
        eb = ELEMENT_BYTES[layer.precision]
        if isinstance(layer, ConvLayer):
            filters = layer.k * (layer.c // layer.groups) * layer.r * layer.s
            total += (filters + layer.n * layer.k * layer.out_h * layer.out_w) * eb
        else:
            total += layer.batch * (layer.m * layer.k + layer.k * layer.n + layer.m * layer.n) * eb
    return total


def cold_when_revisited(gpu: GpuConfig, wl: WorkloadSpec) -> GpuConfig:
    """``gpu`` for a pass of ``wl`` (a network's forward pass, a training step's GEMMs), which
    revisits a layer's operands only after every other layer: ``l2.resident_across_calls`` off
    when the pass moves more than L2 keeps. Back-to-back calls of one GEMM find their operands
    in L2; a layer of a network does not: VGG-16's fc7 at batch 1 reads its 33.5 MB of
    weights in 13.9 us on an H100 (2.4 TB/s, HBM;
    benchmarks/measured/h100_2026-11-27/sustained/kernels_networks_vgg_googlenet32.csv)."""
    if gpu.l2.resident_across_calls and footprint_bytes(wl) > gpu.l2.kept_bytes:
        return gpu.with_overrides({"l2.resident_across_calls": False})
    return gpu


def gemm_times(
    gpu: GpuConfig,
    layers: list[TrainLayer],
    precision: str,
    wl: WorkloadSpec,
    memory_format: str = "nhwc",
    conv_lowering: str = "gemm",
    launch_s: float | None = None,
) -> dict[str, LayerResult]:
    """Per-phase results of the single-GPU model, keyed ``<layer>/<phase>``.

    ``conv_lowering`` "gemm": every phase is the plain GEMM of
    :func:`~archsim.system.workload.gemm_workload` (FP32 output, C read); "cudnn": a conv's
    forward and data gradient run as convs (:func:`~archsim.system.workload.phase_workload`,
    cuDNN's algorithms, beta 0, the activation type out; a strided data gradient's phases
    merged into one result) and its weight gradient as the faster of the GEMM and the library's
    non-fused Winograd (:func:`_faster_wgrad`; ``launch_s``: each transform kernel's least
    time, default the GPU's launch cost). A GEMM too large to simulate is refused naming
    ``wl``'s file and the GEMM ``<layer>/<phase>``."""
    if conv_lowering == "cudnn":
        plan = phase_workload(layers, wl, precision, memory_format, gpu.conv_library)
    else:
        plan = Phases(gemm_workload(layers, precision, wl.name))
    phases = plan.spec.bind(wl.base_dir, wl.origin)
    try:
        run = simulate(cold_when_revisited(gpu, phases), phases)
    except SimulationError as exc:
        cap = limit("ARCHSIM_MAX_REDUCTION")
        if not any(
            isinstance(g, GemmLayer) and g.name.endswith("/wgrad") and g.k > cap
            for g in phases.layers
        ):
            raise
        raise SimulationError(  # its K is the batch's output pixels: the batch is the cause
            f"{exc}; a weight gradient's K is batch_per_gpu x output pixels, so a smaller batch "
            "per GPU brings it under"
        ) from None
    parts: dict[str, list[LayerResult]] = {}
    wino: dict[str, list[tuple[int, LayerResult]]] = {}
    for lr in run.layers:
        key, tile = plan.owners.get(lr.layer, (lr.layer, 0))
        if tile:
            wino.setdefault(key, []).append((tile, lr))
        else:
            parts.setdefault(key, []).append(lr)
    out = {name: merged_result(rs, name) for name, rs in parts.items()}
    if conv_lowering != "cudnn":
        return out
    launch = gpu.launch_overhead_s if launch_s is None else launch_s
    hbm = gpu.hbm.bandwidth_bytes_per_s * gpu.hbm_achievable_fraction
    for name in [n for n in out if n.endswith("/wgrad")]:
        out[name] = _faster_wgrad(out[name], wino.get(name, []), plan.transform_bytes, hbm,
                                  launch)  # fmt: skip
    return out


def _faster_wgrad(
    direct: LayerResult,
    cands: list[tuple[int, LayerResult]],
    transforms: dict[str, int],
    hbm_bytes_per_s: float,
    launch_s: float,
) -> LayerResult:
    """The weight gradient as the GEMM ``direct`` or the Winograd candidate of ``cands`` (tile
    m, its GEMM's result) whose GEMM plus transforms (:func:`~archsim.system.conv_phases.
    wgrad_transform_s`) is faster; the kept one's extras say ``tc_wgrad_algo`` and, for
    Winograd, the transforms' bytes (``tc_wgrad_transform_bytes``: the step times and prices
    them with the layer's elementwise passes)."""

    def total(cand: tuple[int, LayerResult]) -> float:
        lr = cand[1]
        return lr.time_s + wgrad_transform_s(transforms[lr.layer], hbm_bytes_per_s, launch_s)

    best = min(cands, key=total, default=None)
    if best is None or total(best) >= direct.time_s:
        return replace(direct, extras={**direct.extras, "tc_wgrad_algo": "gemm"})
    tile, lr = best
    extras = {**lr.extras, "tc_wgrad_algo": f"winograd_{tile}x{tile}",
              "tc_wgrad_transform_bytes": transforms[lr.layer]}  # fmt: skip
    return replace(lr, layer=direct.layer, extras=extras)


def _winograd_passes(gemms: dict[str, LayerResult], name: str) -> tuple[bool, bool, bool]:
    """Which of layer ``name``'s forward, data- and weight-gradient passes run cuDNN's Winograd
    (NCHW filters and tensors, so no transposes around them)."""

    def wino(phase: str) -> bool:
        lr = gemms.get(f"{name}/{phase}")
        algo = "" if lr is None else lr.extras.get("tc_conv_algo", lr.extras.get("tc_wgrad_algo"))
        return str(algo).startswith("winograd")

    return wino("fwd"), wino("dgrad"), wino("wgrad")


@dataclass(frozen=True)
class GpuWork:
    """What every GPU computes, independent of how many GPUs share the step."""

    gpu: GpuConfig
    workload: WorkloadSpec
    layers: list[TrainLayer]
    gemms: dict[str, LayerResult]
    ew_f: list[float]
    ew_b: list[float]
    ew_bytes: list[int]  # elementwise bytes per layer, per GPU
    opt_bytes: int  # the optimizer's bytes per GPU
    opt_s: float
    grad_bytes: int
    hbm_bytes_per_s: float  # achievable HBM bandwidth: the memory-bound passes' rate
    hbm_pj: float  # price of an HBM byte (read or write)


def gpu_work(system: SystemConfig, wl: WorkloadSpec, opts: StepOptions) -> GpuWork:
    gpu = gpu_config(system)
    _, _, act, grad = PRECISIONS[opts.precision]
    layers = training_layers(wl, opts.batch_per_gpu)
    t = system.training
    gemms = gemm_times(gpu, layers, opts.precision, wl, opts.memory_format, opts.conv_lowering,
                       t.elementwise_launch_s)  # fmt: skip
    hbm = gpu.hbm.bandwidth_bytes_per_s * gpu.hbm_achievable_fraction
    # cuDNN's FP32 convs run NCHW natively on CUDA cores; tensor-core convs need NHWC
    transpose = opts.memory_format == "nchw" and opts.precision != "fp32"
    zero_fill = opts.conv_lowering == "cudnn"
    transforms = [
        int(gemms[f"{tl.name}/wgrad"].extras.get("tc_wgrad_transform_bytes", 0)) for tl in layers
    ]
    native = [_winograd_passes(gemms, tl.name) for tl in layers]
    ew_f, ew_b, ew_bytes = elementwise_passes(
        layers, wl, system, act, hbm, transpose, zero_fill, transforms, native
    )
    per_param = t.sgd_bytes_per_param if opts.optimizer == "sgd" else t.adam_bytes_per_param
    opt_bytes = sum(tl.params for tl in layers) * (per_param + (2 if act == 2 else 0))
    opt_s = opt_bytes / hbm + t.elementwise_launch_s
    hbm_pj = gpu_price_list(gpu).energy_pj["hbm"]["read_bytes"]
    return GpuWork(gpu, wl, layers, gemms, ew_f, ew_b, ew_bytes, opt_bytes, opt_s, grad, hbm,
                 hbm_pj)  # fmt: skip
