"""One forward pass of a conv network on one GPU, as a framework runs it for inference.

Each conv runs through the single-GPU Tensor Core model with cuDNN's algorithm choice
(:func:`archsim.simulate` on the layer at the pass's batch and precision); around it the framework
launches the memory-bound kernels of an eval-mode network, each timed on its own as its bytes
at the preset's achievable HBM bandwidth (or, for the framework's batch-norm and max-pool
kernels, at their measured rates, ``GpuConfig.framework_kernels``) or its launch cost, whichever
is longer:

* batch-norm in inference mode reads the conv output once and writes it once (running
  statistics, no reductions), after ``framework_kernels.batchnorm_parameter_kernels`` kernels
  on its per-channel statistics (PyTorch: two), ReLU reads and writes it (``relu: false``
  drops it), a residual
  add (``residual_add``) reads two output-sized tensors and writes one, a max-pool after the
  layer (``max_pool_stride``) reads the output and writes the pooled values and their int64
  indices (PyTorch's CUDA max_pool2d always runs max_pool2d_with_indices);
* ``fused_bn_relu``: batch-norm, the add and the ReLU are one kernel (MXNet's
  BatchNormAddRelu / fused BN-ReLU, cuDNN's fused ops): one read of the output (and of the
  shortcut) and one write;
* ``autocast_weight_casts``: torch.autocast casts every conv's and linear layer's FP32 weight
  (and bias, where the layer has one) to FP16 in each forward pass (its cast cache lives for one
  autocast region): a kernel reading 4 and writing 2 bytes per weight;
* ``memory_format="nchw"`` with a tensor-core precision: cuDNN transposes each conv's input to
  NHWC and its output back (``TrainingConfig.nchw_transpose_passes`` each), except around a
  Winograd conv, whose transforms read and write NCHW. The layers run in the pass's memory
  format, which decides whether Winograd applies (``conv_library.winograd_memory_formats``:
  NCHW only for cuDNN); the algorithm is chosen on the conv kernels alone.

``algorithms`` restricts cuDNN's algorithm choice to what the framework asks for.
``launch``: ``graph`` replays every kernel from a CUDA graph (each at least the preset's
``launch.graph_s``); ``eager`` has the host issue one kernel every ``launch.eager_s`` while the
GPU runs the ones before it (:func:`eager_queue_s`: short kernels wait for the host, long ones
hide its launches), ``host_wait_s`` the GPU's idle time.
``bias``: a per-channel bias add after the conv kernel (its own broadcast-add kernel);
``batch_norm: false``: no batch-norm; a max-pool whose window is no wider than its stride
(VGG's 2x2/2) runs at ``framework_kernels.maxpool_disjoint_bytes_per_s``. Fully connected
layers (a classifier head) run as their GEMM, bias fused, and a ReLU kernel after it where
the layer has ``relu``; ``avg_pool_size`` on a conv is the head's average pool (and flatten).
Not modelled: softmax, host time beyond the per-kernel launch cost (Python, the
framework's dispatcher, cuDNN's per-call setup) and input decoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from archsim.config.gpu import GpuConfig
from archsim.config.io import load_hardware, load_workload
from archsim.config.system import TrainingConfig
from archsim.config.workload import ConvLayer, FcLayer, GemmLayer, WorkloadSpec
from archsim.errors import SimulationError, check_choice, check_count
from archsim.simulate import simulate
from archsim.system.passes import (
    MEMORY_FORMATS,
    cold_when_revisited,
    input_elements,
    max_pool_bytes,
    pooled_elements,
)
from archsim.system.workload import PRECISIONS

__all__ = [
    "InferenceOptions",
    "InferencePass",
    "eager_queue_s",
    "inference_pass",
    "maxpool_ctas",
]

LAUNCH_MODES = ("graph", "eager")


@dataclass(frozen=True)
class InferenceOptions:
    """How the forward pass runs: precision (a training precision name: amp_fp16 runs FP16
    convs), batch, launch mode, activation layout and the framework's fusions."""

    precision: str = "amp_fp16"
    batch: int = 1
    launch: str = "graph"
    memory_format: str = "nhwc"
    fused_bn_relu: bool = False
    autocast_weight_casts: bool = False
    #: the cuDNN algorithms the framework allows (None: the preset's list; cuDNN picks the
    #: fastest), e.g. ("implicit_gemm",) for a framework that fixes IMPLICIT_PRECOMP_GEMM
    algorithms: tuple[str, ...] | None = None

    def __str__(self) -> str:
        """``amp_fp16 batch 32 graph nhwc`` (and the fusions set): for progress lines."""
        extra = [n for n, on in (("fused BN-ReLU", self.fused_bn_relu),
                                 ("weight casts", self.autocast_weight_casts)) if on]  # fmt: skip
        if self.algorithms is not None:
            extra.append("/".join(self.algorithms))
        base = f"{self.precision} batch {self.batch} {self.launch} {self.memory_format}"
        return " ".join([base, *extra])

    def check(self) -> None:
        """One-line errors for options the model cannot take."""
        check_choice("precision", self.precision, PRECISIONS)
        check_count("batch", self.batch)
        check_choice("launch", self.launch, LAUNCH_MODES)
        check_choice("memory format", self.memory_format, MEMORY_FORMATS)


@dataclass(frozen=True)
class InferencePass:
    """Seconds of one forward pass, split into convs and memory-bound kernels."""

    conv_s: float
    elementwise_s: float
    kernels: int
    batch: int
    transpose_s: float = 0.0  # the NCHW <-> NHWC transposes' share of elementwise_s
    per_layer_s: dict[str, float] = field(default_factory=dict)
    #: eager launch: time the GPU waits for the host to issue the next kernel, s
    host_wait_s: float = 0.0

    @property
    def time_s(self) -> float:
        """The whole pass, s."""
        return self.conv_s + self.elementwise_s + self.host_wait_s

    @property
    def samples_per_s(self) -> float:
        """Images per second at this batch."""
        return self.batch / self.time_s


def _conv_workload(wl: WorkloadSpec, precision: str, batch: int, fmt: str) -> WorkloadSpec:
    """The workload at the pass's batch and precision: convs as they are, fully connected
    layers as the GEMM a framework's linear layer runs (M = batch, N = outputs, K = inputs;
    its bias fused into the GEMM's epilogue, as cuBLAS's bias kernels do)."""
    layers: list[ConvLayer | GemmLayer] = []
    update = {"n": batch, "precision": precision, "memory_format": fmt}
    for spec in wl.layers:
        if isinstance(spec, ConvLayer):
            layers.append(spec.model_copy(update=update))
        elif isinstance(spec, FcLayer) and spec.matrix_shape is not None:
            n, k = spec.matrix_shape
            layers.append(GemmLayer(kind="gemm", name=spec.name, m=batch, n=n, k=k,
                                    precision=precision))  # fmt: skip
        else:
            raise SimulationError(
                f"layer {getattr(spec, 'name', '?')!r}: an inference pass takes conv layers "
                "and fc layers with inputs and outputs; allowed: a workload of those"
            )
    return wl.model_copy(update={"layers": layers})


def _transposes(
    spec: ConvLayer, outputs: int, act: int, opts: InferenceOptions, t: TrainingConfig, algo: str
) -> tuple[int, int]:
    """(bytes moved, kernels) of cuDNN's NCHW <-> NHWC transposes around one tensor-core conv
    (none around Winograd, whose transforms read and write NCHW themselves)."""
    if opts.memory_format != "nchw" or opts.precision == "fp32" or algo.startswith("winograd"):
        return 0, 0
    inputs = input_elements(spec, outputs)
    return t.nchw_transpose_passes * (inputs + outputs) * act, 2


#: one memory-bound kernel around a conv: (kind, bytes read + written, CTAs or 0 for enough to
#: fill the GPU); the kind picks its rate
Kernel = tuple[str, int, int]


def _pow2_floor(x: int) -> int:
    return 1 << (max(1, x).bit_length() - 1)


def maxpool_ctas(n: int, c: int, out_h: int, out_w: int) -> int:
    """CTAs of PyTorch's channels-last max-pool kernel (max_pool_forward_nhwc, launched by
    aten/src/ATen/native/cuda/DilatedMaxPool2d.cu): a block of up to 1024 threads over
    (channels, output columns, output rows), each thread 4 channels and 2 x 2 outputs; the grid
    ``n * ceil(C / (4 block_x))`` x ``ceil(Q / (2 block_y))`` x ``ceil(P / (2 block_z))``.
    Reproduces every pool grid of the H100 traces (benchmarks/measured/h100_2026-11-27:
    kernels_networks.csv ResNet-50 [1, 1, 28]; sustained/kernels_networks_vgg_googlenet32.csv
    VGG-16 [n, 2, 56], [n, 1, 28], [2n, 1, 7], [4n, 1, 2])."""
    bx = min(32, _pow2_floor(c))
    by = min(_pow2_floor(out_w), 1024 // bx)
    bz = min(64, _pow2_floor(out_h), 1024 // bx // by)
    bx = min(_pow2_floor(c), 1024 // by // bz)
    stride_c = -(-c // (bx * 4))
    return n * stride_c * -(-out_w // (2 * by)) * -(-out_h // (2 * bz))


def _elementwise(
    spec: ConvLayer, outputs: int, act: int, opts: InferenceOptions, t: TrainingConfig,
    cfg: GpuConfig,
) -> list[Kernel]:  # fmt: skip
    """The memory-bound kernels around one conv, transposes apart, in launch order."""
    out: list[Kernel] = [("bias_add", 2 * outputs * act, 0)] if spec.bias else []
    if opts.fused_bn_relu:  # one kernel: read the output (and the shortcut), write once
        out.append(("elementwise", outputs * act * (2 + (1 if spec.residual_add else 0)), 0))
    else:
        if spec.batch_norm:
            params = cfg.framework_kernels.batchnorm_parameter_kernels
            out += [("batchnorm_parameters", 0, 0)] * params
            out.append(("batchnorm", 2 * outputs * act, 0))
        if spec.relu:
            out.append(("elementwise", 2 * outputs * act, 0))
        if spec.residual_add:
            out.append(("elementwise", t.residual_forward_passes * outputs * act, 0))
    if spec.input_max_pool_size > 1:  # a stride-1 pool of the input, before the conv
        ctas = maxpool_ctas(opts.batch, spec.c, spec.h, spec.w)
        out.append(("maxpool", max_pool_bytes(input_elements(spec, outputs), 1, act)[0], ctas))
    pooled = pooled_elements(spec, outputs)
    if spec.concat_channels:  # torch.cat of the module's branches: read and write them once
        out.append(("elementwise", 2 * pooled * act, 0))
    if spec.max_pool_stride > 1:
        st, channels = spec.max_pool_stride, spec.concat_channels or spec.k
        disjoint = spec.max_pool_size <= st
        ctas = maxpool_ctas(opts.batch, channels, -(-spec.out_h // st), -(-spec.out_w // st))
        out.append(("maxpool_disjoint" if disjoint else "maxpool",
                    max_pool_bytes(pooled, st, act)[0], ctas))  # fmt: skip
    out += _head(spec, outputs, act, opts)
    if opts.autocast_weight_casts:  # the weight's cast, and the bias's when it has one
        weights = spec.k * (spec.c // spec.groups) * spec.r * spec.s
        out.append(("elementwise", weights * (4 + 2), 0))
        if spec.bias:
            out.append(("elementwise", spec.k * (4 + 2), 0))
    return out


def _linear_elementwise(spec: FcLayer, act: int, opts: InferenceOptions) -> list[Kernel]:
    """The memory-bound kernels of a linear layer besides its GEMM: autocast's casts of its
    FP32 weight and bias (``autocast_weight_casts``: 4 bytes read, 2 written each), then its
    ReLU (``FcLayer.relu``), reading and writing the batch x outputs result
    (``_conv_workload`` admits only fc layers with a shape)."""
    if spec.matrix_shape is None:
        return []
    rows, cols = spec.matrix_shape
    out: list[Kernel] = []
    if opts.autocast_weight_casts:
        out.append(("elementwise", rows * cols * (4 + 2), 0))
        if spec.bias:
            out.append(("elementwise", rows * (4 + 2), 0))
    if spec.relu:
        out.append(("elementwise", 2 * opts.batch * rows * act, 0))
    return out


def _head(spec: ConvLayer, outputs: int, act: int, opts: InferenceOptions) -> list[Kernel]:
    """The network head after ``spec`` (``avg_pool_size``): PyTorch's adaptive average pool
    (its pooling kernel, with the pool's launch grid; windows that never overlap, so the
    disjoint-window rate) reading the pooled output, and the flatten's copy when the result
    is channels-last (a view otherwise). VGG-16 on an H100
    (sustained/kernels_networks_vgg_googlenet32.csv): the pool on [2, 64, 512] CTAs at batch
    1 / 32 / 256 as :func:`maxpool_ctas` gives, 8.6 / 8.7 / 29.6 us; the copy 2.0 / 4.9 /
    27.9 us."""
    size = spec.avg_pool_size
    if not size:
        return []
    channels, st = spec.concat_channels or spec.k, max(1, spec.max_pool_stride)
    pooled = opts.batch * channels * -(-spec.out_h // st) * -(-spec.out_w // st)
    result = opts.batch * channels * size * size
    ctas = maxpool_ctas(opts.batch, channels, size, size)
    out: list[Kernel] = [("maxpool_disjoint", (pooled + result) * act, ctas)]
    if opts.memory_format == "nhwc":
        out.append(("elementwise", 2 * result * act, 0))
    return out


def _kernel_s(cfg: GpuConfig, kind: str, nbytes: int, ctas: int = 0) -> float:
    """GPU seconds of one memory-bound kernel in a CUDA graph: its bytes at its rate (HBM at
    the achievable fraction, or the framework kernel's measured rate, ``framework_kernels``;
    a kernel of fewer ``ctas`` than SMs gets their share of it) or its least time (the
    preset's ``launch.graph_s``; the batch-norm's and bias add's own floors), whichever is
    longer. Eager passes add the host's waits apart (:func:`eager_queue_s`)."""
    fw = cfg.framework_kernels
    rate = {
        "batchnorm": fw.batchnorm_bytes_per_s,
        "maxpool": fw.maxpool_bytes_per_s,
        "maxpool_disjoint": fw.maxpool_disjoint_bytes_per_s,
        "bias_add": fw.bias_add_bytes_per_s,
    }.get(kind)
    rate = rate or cfg.hbm.bandwidth_bytes_per_s * cfg.hbm_achievable_fraction
    own_floor = {"batchnorm": fw.batchnorm_floor_s, "bias_add": fw.bias_add_floor_s}.get(kind, 0.0)
    floor = max(cfg.min_kernel_s, own_floor)
    if 0 < ctas < cfg.sms:
        rate *= ctas / cfg.sms
    return max(nbytes / rate, floor)


def eager_queue_s(kernels_s: list[float], interval_s: float) -> float:
    """Seconds until the last of ``kernels_s`` (GPU seconds each, in launch order) ends when the
    host issues one kernel every ``interval_s`` and the GPU runs them in order, each as soon as
    it is issued and the one before it has ended: the host runs ahead of long kernels and the
    GPU waits for it behind short ones."""
    host = end = 0.0
    for seconds in kernels_s:
        host += interval_s
        end = max(end, host) + seconds
    return end


def inference_pass(
    gpu: GpuConfig | str,
    workload: WorkloadSpec | str,
    opts: InferenceOptions | None = None,
    training: TrainingConfig | None = None,
) -> InferencePass:
    """Simulate one forward pass of ``workload`` on ``gpu``; see the module docstring.

    ``training`` supplies the pass counts shared with the training step (residual add, NCHW
    transposes); its defaults otherwise.
    """
    opts = opts or InferenceOptions()
    opts.check()
    cfg = load_hardware(gpu)
    if not isinstance(cfg, GpuConfig):
        raise SimulationError(f"{getattr(cfg, 'name', gpu)!r} is not a single GPU preset")
    # the GPU's own times (graph mode); an eager pass then queues them behind the host
    overrides: dict[str, object] = {"launch.mode": "graph"}
    if opts.algorithms is not None:
        algos = opts.algorithms
        overrides["conv_library.algorithms"] = [algos] if isinstance(algos, str) else list(algos)
    wl = load_workload(workload)
    prec, _, act, _ = PRECISIONS[opts.precision]
    pass_wl = _conv_workload(wl, prec, opts.batch, opts.memory_format)
    cfg = cold_when_revisited(cfg.with_overrides(overrides), pass_wl)
    run = simulate(cfg, pass_wl)
    t = training or TrainingConfig()
    hbm = cfg.hbm.bandwidth_bytes_per_s * cfg.hbm_achievable_fraction
    launch = cfg.min_kernel_s  # each kernel at least its launch in a graph
    conv_s = ew_s = tr_s = 0.0
    kernels = 0
    per_layer: dict[str, float] = {}
    sequence: list[float] = []  # GPU seconds of every kernel, in launch order
    for spec, lr in zip(wl.layers, run.layers, strict=True):
        if isinstance(spec, FcLayer):  # a linear layer: its GEMM (and its ReLU)
            relu = [_kernel_s(cfg, *k) for k in _linear_elementwise(spec, act, opts)]
            conv_s, ew_s = conv_s + lr.time_s, ew_s + sum(relu)
            kernels += 1 + len(relu)
            per_layer[spec.name] = lr.time_s + sum(relu)
            sequence += [lr.time_s, *relu]
            continue
        outputs = opts.batch * spec.k * spec.out_h * spec.out_w
        around = _elementwise(spec, outputs, act, opts, t, cfg)
        n = len(around)
        algo = str(lr.extras.get("tc_conv_algo", ""))
        tr_moved, tr_n = _transposes(spec, outputs, act, opts, t, algo)
        each = [_kernel_s(cfg, *kernel) for kernel in around]
        tr = max(tr_moved / hbm, tr_n * launch)
        conv_s, ew_s, tr_s = conv_s + lr.time_s, ew_s + sum(each) + tr, tr_s + tr
        kernels += 1 + n + tr_n
        per_layer[spec.name] = lr.time_s + sum(each) + tr
        half = [tr / tr_n] * (tr_n // 2) if tr_n else []  # input transpose, conv, output's
        sequence += half + [lr.time_s] + half
        sequence += each
    wait = 0.0
    if opts.launch == "eager":
        wait = eager_queue_s(sequence, cfg.launch.eager_s) - sum(sequence)
    return InferencePass(conv_s, ew_s, kernels, opts.batch, tr_s, per_layer, wait)
