"""Whole-network claims: NVIDIA's published ResNet-50 v1.5 inference throughputs
(DeepLearningExamples) against one simulated forward pass (:mod:`archsim.system.inference`).

Every figure is a measured throughput of a framework, not of cuDNN alone: it includes what the
framework launches around the convs (modelled: batch-norm, ReLU, adds, max-pool, casts, each
framework's fusions and launch mode) and host time (not modelled beyond the preset's per-kernel
launch cost). Claims where the host, not the GPU, sets the time are kept as documented FAILs.
"""

from __future__ import annotations

from archsim.validation.claims import Claim
from archsim.validation.runs import Runs

__all__ = ["NETWORK_CLAIMS", "KNOWN_GAPS"]

_RN50 = "resnet50_v1_5"
_DLE_COMMIT = "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"
_PYT = (
    f"NVIDIA/DeepLearningExamples@{_DLE_COMMIT[:8]}, PyTorch/Classification/ConvNets/"
    "resnet50v1.5/README.md, 'Inference performance: NVIDIA DGX-1 (1x V100 16GB)' "
    "(pytorch-21.03 NGC container), table '{table}', row batch {batch}, 'Throughput Avg'"
)
_MX = (
    f"NVIDIA/DeepLearningExamples@{_DLE_COMMIT[:8]}, MxNet/Classification/RN50v1.5/README.md, "
    "'Inference performance: NVIDIA DGX A100 (1x A100 80GB)' (mxnet-22.10-py3 NGC container), "
    "row batch {batch}, 'Throughput (img/sec) - mixed precision'"
)
_PYT_WHAT = (
    "Published: DLE's validate() loop in eval mode under torch.no_grad (and autocast for AMP), "
    "each iteration the forward pass, the loss and top-1/top-5 accuracy, then "
    "torch.cuda.synchronize(); eager PyTorch, no CUDA graph; main.py sets "
    "cudnn.benchmark = True (cuDNN's fastest algorithm, as modelled). configs.yml: AMP runs "
    "memory_format nhwc, FP32 the default nchw (CUDA-core convs, no transposes). Modelled: the "
    "53 convs (cuDNN algorithm choice at the batch) and the fc GEMM, eval-mode batch-norm, "
    "ReLU, residual adds and the max-pool as separate kernels, AMP's per-forward FP16 casts of "
    "the FP32 weights, every kernel at least the preset's eager launch cost (V100: 5 us, not "
    "measured per mode). Not modelled: the average pool, the loss, top-k and Python/dispatcher "
    "host time. "
    "15 % is the issue's goal."
)
_HOST = (
    " Known gap, host-bound: the published latencies are flat from batch 1 to 16 (FP32 10.2-"
    "11.5 ms to batch 8; AMP 12.8-14.0 ms to batch 16) while the GPU work grows 16x, so the "
    "time is the host issuing about 170-225 eager kernels (about 50-60 us each on DGX-1's "
    "Xeon E5-2698 v4, autocast's dispatch adding to AMP), not the GPU. The preset's 5 us per "
    "eager kernel is not a measurement of that host; a per-op host cost fitted to these rows "
    "is not allowed, so the model stays GPU-bound here and the claim FAILs."
)
_MX_WHAT = (
    "Published: MXNet benchmark.py --mode val through runner's float16 settings (fused "
    "BatchNormAddRelu and BN-ReLU, NHWC convs, batch-norm and pooling; FP16 weights, so no "
    "casts), reported as 'Total IPS (data + compute time taken into account)' with runner's "
    "default dali-gpu backend decoding the JPEGs. Modelled: the convs, the fc GEMM and one "
    "fused BN(+add)+ReLU kernel per conv, each kernel at least the A100 preset's 5 us "
    "launch. 15 % is the issue's goal."
)
_MX_DATA = (
    " Known gap: the model is 36-44 % faster at batch 32 and 256. Suspected: the published "
    "figure includes the input pipeline (DALI's GPU JPEG decode of each batch shares the GPU, "
    "and the reported rate falls from batch 192 to 512: 8241 -> 7213 img/s, which compute "
    "alone would not do); no A100 conv measurement exists here to separate a too-fast "
    "A100 cuDNN model from the data pipeline. Not tuned away."
)


def _pass(runs: Runs, gpu: str, net: str, opts: object) -> object:
    from archsim.system.inference import inference_pass

    return runs.memo(("inference", gpu, net, opts), lambda: inference_pass(gpu, net, opts))  # type: ignore[arg-type]


def _ips(
    gpu: str, precision: str, batch: int, launch: str, fmt: str, fused: bool, casts: bool,
    net: str = _RN50,
):  # fmt: skip
    """Images per second of the simulated forward pass of ``net`` (ResNet-50 v1.5)."""

    def value(runs: Runs) -> float:
        from archsim.system.inference import InferenceOptions

        opts = InferenceOptions(precision, batch, launch, fmt, fused, casts)
        return float(_pass(runs, gpu, net, opts).samples_per_s)  # type: ignore[attr-defined]

    return value


def _conv_ms(gpu: str, net: str, precision: str, batch: int, algorithms: tuple[str, ...] | None):
    """Milliseconds of a network's conv ops alone, NCHW (cuDNN's transposes for tensor-core
    convs included: they run inside the conv call), kernels launched eagerly."""

    def value(runs: Runs) -> float:
        from archsim.system.inference import InferenceOptions

        opts = InferenceOptions(precision, batch, "eager", "nchw", algorithms=algorithms)
        run = _pass(runs, gpu, net, opts)
        return (run.conv_s + run.transpose_s) * 1e3  # type: ignore[attr-defined]

    return value


#: (table, precision, layout, autocast casts, {batch: published img/s}); the rows of the
#: DGX-1 (1x V100 16GB) tables of the PyTorch README.
_PYT_ROWS = (
    ("FP32 Inference Latency", "fp32", "nchw", False, {1: 96.0, 32: 1127.0, 256: 1261.0}),
    ("Mixed Precision Inference Latency", "amp_fp16", "nhwc", True,
     {1: 78.0, 32: 2146.0, 256: 3382.0}),
)  # fmt: skip
#: batch -> published mixed-precision img/s of the MXNet README (DGX A100, 1x A100 80GB)
_MX_ROWS = {1: 1431.99, 32: 6808.22, 256: 7909.62}
_PADDLE = (
    "PaddlePaddle/Paddle@7f83f83b, paddle/contrib/float16/float16_benchmark.md, 'Benchmark on "
    "V100', 'Vgg16 on imagenet', table 'Total time spent on conv op for one batch', row "
    "{row}, column mb=32 (CUDA 9.0, cuDNN 7.1.1, averaged over 1000 iterations)"
)
_PADDLE_WHAT = (
    "Published: the time Paddle's profiler gives the 13 conv ops of VGG-16 for one batch of 32 "
    "3x224x224 images, NCHW (Paddle's layout). Paddle's conv op (paddle/fluid/operators/"
    "conv_cudnn_op.cu.cc, 2018) asks cuDNN's heuristic for an algorithm "
    "(cudnnGetConvolutionForwardAlgorithm, CUDNN_CONVOLUTION_FWD_SPECIFY_WORKSPACE_LIMIT) and, "
    "for float16 on sm_70+, sets CUDNN_TENSOR_OP_MATH and overrides it: 'Currently tensor core "
    "is only enabled using this algo', CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM. "
    "Modelled: the 13 convs at batch 32, launched eagerly; FP16 restricted to implicit GEMM, "
    "plus the NCHW <-> NHWC transposes cuDNN runs around a tensor-core conv; FP32 with the "
    "preset's algorithm menu (cuDNN's fastest). The fc layers, pools and ReLUs are outside the "
    "published conv figure. 15 % is the issue's goal."
)
_FP32_GAP = (
    " Known gap: the model is about 47 % faster. With every algorithm allowed it runs "
    "conv1_2-conv5_3 as Winograd F(4x4, 3x3) at 20-40 effective TFLOPS; the published "
    "60.58 ms is 16.3 effective TFLOPS, just above the 15.7 TFLOPS FP32 peak, so cuDNN 7.1's "
    "heuristic picked some Winograd/FFT, but not the fastest everywhere. Implicit GEMM alone "
    "gives 76.4 ms (+26 %); which algorithm the 2018 heuristic returned per layer is not "
    "published, and choosing a menu to fit this row is not allowed. Not tuned away."
)
#: (label, table row, precision of the convs, allowed cuDNN algorithms, published ms, gap note)
_PADDLE_ROWS = (
    ("FP32", "float32", "fp32", None, 60.58, _FP32_GAP),
    ("FP16", "float16", "amp_fp16", ("implicit_gemm",), 14.63, ""),
)
_H100 = (
    "archsim benchmarks/measured/h100_2026-11-27/network_resnet50.csv (measured 2026-11-27 on "
    "an H100 80GB HBM3 SXM, driver 580.159.04, PyTorch 2.11.0+cu130, cuDNN 9.19; made by "
    "benchmarks/gpu_heldout_probe.py), row batch {batch}, column graph_s ({ms} ms per forward)"
)
_H100_WHAT = (
    "Measured: torchvision.models.resnet50() (v1.5), .half(), channels-last, eval, under "
    "torch.no_grad, cudnn.benchmark on, n forwards captured in one CUDA graph and replayed (the "
    "probe's timing rule); 280 kernels per forward in its CUPTI trace. Modelled: the 53 convs "
    "(cuDNN's algorithm choice, each conv kernel with its set-up) and the fc GEMM, eval "
    "batch-norm as PyTorch runs it (three kernels), ReLU, residual adds and the max-pool, "
    "launched from a graph. Not modelled: the average pool before the fc. 15 % is the "
    "tolerance of the other network claims."
)
#: batch -> measured ms per forward (benchmarks/measured/h100_2026-11-27/network_resnet50.csv)
_H100_ROWS = {1: 0.918775, 32: 2.66192, 256: 18.2936}
_NET_H100 = (
    "archsim benchmarks/measured/h100_2026-11-27/sustained/networks.csv (measured 2026-11-27, "
    "the same card model and software as network_resnet50.csv; made by "
    "benchmarks/gpu_sustained.py), row torchvision_{net} batch {batch}, column graph_s ({ms} ms "
    "per forward)"
)
_VGG_H100_WHAT = (
    "Measured: torchvision.models.vgg16(), .half(), channels-last, eval, torch.no_grad, "
    "cudnn.benchmark, forwards replayed from a CUDA graph. Modelled (workload "
    "vgg16_torchvision): the 13 convs, PyTorch's bias add and ReLU after each, the five 2x2/2 "
    "max-pools (their grid, PyTorch's launch rule), the adaptive average pool (the pooling "
    "kernel and its grid) and the flatten's copy before the classifier, the three fully "
    "connected layers as GEMMs and the ReLUs after fc6 and fc7."
)
_VGG_B1 = (
    " Batch 1 sits at the tolerance's edge (the model 13 % fast in time, within 15 % in img/s "
    "since the L2 hit latency of 291 cycles; +15.1 % before): the trace's kernels sum to 452 "
    "us per forward (gaps 5 us) where the graph replays take 505 us per forward; the model is "
    "near the kernels, not that difference, which no kernel in the trace accounts for."
)
_VGG_H100_ROWS = {1: 0.5048391, 32: 4.2503361, 256: 31.9704647}
_GOOGLENET_H100_WHAT = (
    "Measured: torchvision.models.googlenet(aux_logits=False, init_weights=False), .half(), "
    "channels-last, eval, torch.no_grad, cudnn.benchmark, forwards replayed from a CUDA graph "
    "(309-312 kernels per forward in its CUPTI traces). Modelled (workload "
    "googlenet_torchvision, 308 kernels): the 57 convs (torchvision's third branch 3x3), "
    "batch-norm and ReLU after each, the branch and stage max-pools, each module's "
    "concatenation, the classifier as a GEMM. Not modelled: the average pool and flatten."
)
_GOOGLENET_H100_ROWS = {1: 1.1565828, 32: 2.1601281, 256: 11.7510557}
#: (claim name prefix, workload, source, batch -> measured ms per forward, what is modelled,
#: what its batch-1 row adds)
_H100_NETS = (
    ("RN50 H100 FP16 PyT graph", _RN50, _H100, _H100_ROWS, _H100_WHAT, ""),
    ("VGG16 H100 FP16 PyT graph", "vgg16_torchvision", _NET_H100, _VGG_H100_ROWS, _VGG_H100_WHAT,
     _VGG_B1),
    ("GoogLeNet H100 FP16 graph", "googlenet_torchvision", _NET_H100, _GOOGLENET_H100_ROWS,
     _GOOGLENET_H100_WHAT, ""),
)  # fmt: skip
#: claim names kept as documented FAILs (see each claim's reason)
KNOWN_GAPS = (
    "RN50 V100 FP32 PyT b1",
    "RN50 V100 AMP PyT b1",
    "RN50 V100 AMP PyT b32",
    "RN50 A100 AMP MXNet b32",
    "RN50 A100 AMP MXNet b256",
    "VGG16 V100 FP32 b32 conv",
)


def _claims() -> tuple[Claim, ...]:
    out: list[Claim] = []
    for table, prec, fmt, casts, rows in _PYT_ROWS:
        label = "FP32" if prec == "fp32" else "AMP"
        for batch, ips in rows.items():
            name = f"RN50 V100 {label} PyT b{batch}"
            reason = _PYT_WHAT + (_HOST if name in KNOWN_GAPS else "")
            out.append(Claim("networks", name, _PYT.format(table=table, batch=batch), ips,
                             "img/s", 0.15, "relative", reason,
                             _ips("v100", prec, batch, "eager", fmt, False, casts)))  # fmt: skip
    for batch, ips in _MX_ROWS.items():
        name = f"RN50 A100 AMP MXNet b{batch}"
        reason = _MX_WHAT + (_MX_DATA if name in KNOWN_GAPS else "")
        value = _ips("a100", "amp_fp16", batch, "graph", "nhwc", True, False)
        out.append(Claim("networks", name, _MX.format(batch=batch), ips, "img/s", 0.15,
                         "relative", reason, value))  # fmt: skip
    for prefix, workload, source, rows, what, gap in _H100_NETS:
        net = workload.removesuffix("_torchvision")
        for batch, ms in rows.items():
            name = f"{prefix} b{batch}"
            value = _ips("h100", "amp_fp16", batch, "graph", "nhwc", False, False, workload)
            reason = what + (gap if batch == 1 else "")
            where = source.format(net=net, batch=batch, ms=ms)
            out.append(Claim("networks", name, where, batch / ms * 1e3, "img/s", 0.15,
                             "relative", reason, value))  # fmt: skip
    for label, row, prec, algos, ms, gap in _PADDLE_ROWS:
        value = _conv_ms("v100", "vgg16", prec, 32, algos)
        out.append(Claim("networks", f"VGG16 V100 {label} b32 conv", _PADDLE.format(row=row),
                         ms, "ms", 0.15, "relative", _PADDLE_WHAT + gap, value))  # fmt: skip
    return tuple(out)


NETWORK_CLAIMS = _claims()
