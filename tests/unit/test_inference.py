"""The single-GPU inference pass (archsim/system/inference.py): passes, kernels, options."""

from __future__ import annotations

import pytest

from archsim.config.io import load_workload
from archsim.errors import SimulationError
from archsim.system.inference import InferenceOptions, inference_pass

_ONE = {
    "schema_version": 1,
    "name": "one_conv",
    "source": "test: one ResNet-50 res2 3x3 conv with a residual add",
    "layers": [
        {"name": "c", "kind": "conv", "c": 64, "k": 64, "h": 56, "w": 56, "r": 3, "s": 3,
         "pad": 1, "residual_add": True},
    ],
}  # fmt: skip


def _wl():
    from archsim.config.workload import WorkloadSpec

    return WorkloadSpec.model_validate(_ONE)


def test_eval_mode_passes_at_hbm_speed() -> None:
    """Batch 256 FP16 on V100: BN (2) + ReLU (2) + add (3) passes over 256x64x56x56 halves."""
    run = inference_pass("v100", _wl(), InferenceOptions("amp_fp16", 256))
    moved = 7 * 256 * 64 * 56 * 56 * 2
    assert run.elementwise_s == pytest.approx(moved / (900e9 * 0.878), rel=1e-3)
    assert run.kernels == 4 and run.transpose_s == 0.0
    fused = inference_pass("v100", _wl(), InferenceOptions("amp_fp16", 256, fused_bn_relu=True))
    assert fused.elementwise_s == pytest.approx(run.elementwise_s * 3 / 7, rel=1e-3)
    assert fused.kernels == 2 and fused.conv_s == run.conv_s


def test_small_batch_pays_a_launch_per_kernel() -> None:
    """Batch 1 on H100: each of the 3 elementwise kernels costs its launch, which the mode sets."""
    graph = inference_pass("h100", _wl(), InferenceOptions("amp_fp16", 1, "graph"))
    eager = inference_pass("h100", _wl(), InferenceOptions("amp_fp16", 1, "eager"))
    assert graph.elementwise_s == pytest.approx(3 * 1.95e-6)
    assert eager.elementwise_s == pytest.approx(3 * 1.173e-5)
    assert eager.conv_s > graph.conv_s  # the conv kernel's own launch follows the mode too


def test_nchw_transposes_and_forced_algorithm() -> None:
    nhwc = inference_pass("v100", "vgg16", InferenceOptions("amp_fp16", 32))
    gemm = ("implicit_gemm",)
    forced = InferenceOptions("amp_fp16", 32, memory_format="nchw", algorithms=gemm)
    nchw_gemm = inference_pass("v100", "vgg16", forced)
    # channels-last: no transposes and no Winograd (cuDNN's Winograd takes NCHW filters only)
    assert nhwc.transpose_s == 0.0 and nchw_gemm.conv_s == nhwc.conv_s
    # NCHW implicit GEMM: 13 convs, each with an input and an output transpose (2 B x 2 passes)
    assert nchw_gemm.transpose_s > 3e-3 and nchw_gemm.kernels == nhwc.kernels + 26
    # NCHW with every algorithm: Winograd wins some layers, and those need no transposes
    nchw = inference_pass("v100", "vgg16", InferenceOptions("amp_fp16", 32, memory_format="nchw"))
    assert nchw.conv_s < nhwc.conv_s
    assert 0.0 < nchw.transpose_s < nchw_gemm.transpose_s
    assert nhwc.kernels < nchw.kernels < nchw_gemm.kernels
    fp32 = inference_pass("v100", "vgg16", InferenceOptions("fp32", 32, memory_format="nchw"))
    assert fp32.transpose_s == 0.0  # CUDA-core FP32 convs run NCHW natively


def test_samples_per_s_and_autocast_casts() -> None:
    wl = load_workload("resnet50_v1_5")
    plain = inference_pass("v100", wl, InferenceOptions("amp_fp16", 256))
    cast = inference_pass("v100", wl, InferenceOptions("amp_fp16", 256, autocast_weight_casts=True))
    assert plain.samples_per_s == pytest.approx(256 / plain.time_s)
    assert cast.kernels == plain.kernels + 53 and cast.time_s > plain.time_s


@pytest.mark.parametrize(
    "opts, word",
    [
        (InferenceOptions("fp8"), "precision"),
        (InferenceOptions(batch=0), "batch"),
        (InferenceOptions(launch="async"), "launch"),
        (InferenceOptions(memory_format="nchwc"), "memory format"),
    ],
)
def test_bad_options_are_one_line_errors(opts, word) -> None:
    with pytest.raises(SimulationError, match=word):
        inference_pass("v100", _wl(), opts)
