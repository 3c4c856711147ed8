"""V100 convs as cuDNN runs them: its Volta kernels' tiles and split-K kernel for FP16, its
CUDA-core kernels (128-pixel tiles) for FP32 whatever the channel count
(benchmarks/deepbench_conv.py holds the model against DeepBench's published V100 conv times)."""

from __future__ import annotations

import archsim
from archsim.accelerators.gpu_conv import (
    GemmStep,
    best_conv,
    candidate_runs,
    conv_candidates,
    gemm_config,
    timed_families,
)
from archsim.config.workload import ConvLayer

V100 = archsim.load_hardware("v100")


#: a 3x3 conv of 256 channels on 14 x 14 at batch 8, channels-last (as DeepBench's FP16 runs)
BASE = dict(kind="conv", name="c", n=8, c=256, k=256, h=14, w=14, r=3, s=3, pad=1,
            memory_format="nhwc")  # fmt: skip


def _conv(**over: object) -> ConvLayer:
    return ConvLayer.model_validate(BASE | over)


def _run(layer: ConvLayer):  # type: ignore[no-untyped-def]
    """The chosen algorithm's GEMM kernel run (the layer's single implicit GEMM here)."""
    choice = best_conv(V100, layer)
    ((_, _, run),) = candidate_runs(V100, choice.candidate)
    return run


def test_fp16_convs_run_cudnns_volta_tiles_only() -> None:
    """cuDNN's volta_s884cudnn kernels come in 256x128, 256x64 and 128x128 tiles (and a
    128x128 split-K one): a conv never gets the GEMM library's 64x64 or 64x32 tiles."""
    (step,) = conv_candidates(V100, _conv())[0].steps
    assert isinstance(step, GemmStep) and not step.simt
    assert timed_families(V100, step) == ["volta_cudnn_s884", "volta_cudnn_s884_splitk"]
    for fam in ("volta_cudnn_s884", "volta_cudnn_s884_splitk"):
        tiles = {(t.m, t.n) for f in gemm_config(V100, step, fam).library.families for t in f.tiles}
        assert tiles <= {(256, 128), (256, 64), (128, 128)}
    # a large layer fills the SMs with the unsplit kernel
    big = _run(_conv(n=64, c=128, k=128, h=56, w=56))
    assert big.plan.family == "volta_cudnn_s884" and big.plan.split_k == 1


def test_a_small_grid_with_a_long_reduction_takes_the_split_k_kernel() -> None:
    """7 x 7 x 512 -> 512 at batch 8: M = 392 outputs rows, K = 4608; unsplit, four 128-wide
    column tiles of four 128-row tiles are 16 CTAs on 80 SMs."""
    run = _run(_conv(c=512, k=512, h=7, w=7))
    assert run.plan.family == "volta_cudnn_s884_splitk"
    assert (run.plan.tile.m, run.plan.tile.n) == (128, 128) and run.plan.split_k > 1
    unsplit = gemm_config(V100, conv_candidates(V100, _conv(c=512, k=512, h=7, w=7))[0].steps[0],  # type: ignore[arg-type]
                          "volta_cudnn_s884")  # fmt: skip
    assert all(not f.split_k for f in unsplit.library.families)


def test_a_strided_conv_never_takes_the_unit_stride_split_k_kernel() -> None:
    """DeepBench's V100 FP16 1x1 stride-2 convs of C = 2048 on 7 x 7 (rows 220, 229) take
    0.065 ms at batch 8 and 16 alike: the unsplit kernel's serial reduction, not a split one
    (the split plan had them at 0.032 ms). The same conv at stride 1 may split."""
    for n in (8, 16):
        layer = _conv(n=n, c=2048, k=512, h=7, w=7, r=1, s=1, stride=2, pad=3)
        (step,) = best_conv(V100, layer).candidate.steps
        assert isinstance(step, GemmStep) and step.strided
        assert timed_families(V100, step) == ["volta_cudnn_s884"]
        run = _run(layer)
        assert run.plan.family == "volta_cudnn_s884" and run.plan.split_k == 1
        wl = {"schema_version": 1, "name": "w", "source": "t", "layers": [layer.model_dump()]}
        t = archsim.simulate(V100, archsim.WorkloadSpec.model_validate(wl)).layers[0].time_s
        assert abs(t / 0.065e-3 - 1) <= 0.15, f"N{n}: {t * 1e3:.3f} ms against 0.065 ms"
    unit = _conv(n=8, c=2048, k=512, h=7, w=7, r=1, s=1, stride=1, pad=0)
    (step,) = best_conv(V100, unit).candidate.steps
    assert "volta_cudnn_s884_splitk" in timed_families(V100, step)


def test_fp32_convs_run_cudnns_cuda_core_conv_kernels_unpadded() -> None:
    """FP32 is not a V100 tensor-core precision: every FP32 conv, three input channels or
    256, runs cuDNN's CUDA-core conv kernels (the ``volta_cudnn_sgemm`` family: 128-pixel CTA
    tiles, not cuBLAS's small SGEMM tiles) with K = R * S * C (no tap padding, no tensor-op
    channel rule, not the one-tile FP16 fallback kernel), and is not split."""
    for c in (1, 3, 256):
        layer = _conv(c=c, k=32 if c == 1 else 64, precision="fp32", memory_format="nchw",
                      n=4, h=56, w=56)  # fmt: skip
        cand = next(x for x in conv_candidates(V100, layer) if x.algorithm == "implicit_gemm")
        (step,) = cand.steps
        assert isinstance(step, GemmStep) and not step.simt
        assert step.problem.k == 9 * c
        assert timed_families(V100, step) == ["volta_cudnn_sgemm"]
        ((_, _, run),) = candidate_runs(V100, cand)
        assert run.plan.family == "volta_cudnn_sgemm" and run.plan.split_k == 1
        assert run.plan.tile.m == 128 and run.plan.tile.n in (32, 64, 128)


def test_small_image_fp32_1x1_convs_fill_the_sms_as_cudnns_tiles_allow() -> None:
    """DeepBench's V100 FP32 1x1 convs on 7x7 and 14x14 images (rows 229, 247, 265, 269:
    0.212, 0.111, 0.115, 0.236 ms published) came out 37-43 % fast on cuBLAS's 32x32 tiles,
    which spread a small image over every SM; on cuDNN's 128-pixel tiles, within 15 %."""
    rows = {  # row: batch, C, K, image, stride, pad, published forward time (s)
        229: (16, 2048, 512, 7, 2, 3, 0.212e-3),
        247: (8, 1024, 256, 14, 1, 0, 0.111e-3),
        265: (16, 1024, 512, 14, 2, 0, 0.115e-3),
        269: (16, 2048, 512, 7, 1, 0, 0.236e-3),
    }
    for row, (n, c, k, hw, stride, pad, published) in rows.items():
        layer = _conv(n=n, c=c, k=k, h=hw, w=hw, r=1, s=1, stride=stride, pad=pad,
                      precision="fp32", memory_format="nchw")  # fmt: skip
        wl = {"schema_version": 1, "name": "w", "source": "t", "layers": [layer.model_dump()]}
        t = archsim.simulate(V100, archsim.WorkloadSpec.model_validate(wl)).layers[0].time_s
        assert abs(t / published - 1) <= 0.15, (
            f"row {row}: {t * 1e3:.3f} ms, published {published * 1e3:.3f} ms"
        )


def test_a_one_channel_fp32_conv_is_not_padded_to_a_128_wide_tile() -> None:
    """DeepBench's V100 FP32 row 176 (DeepSpeech, N4 C1 K32 161x700, 5x20 stride 2): 0.078 ms
    published, 0.067 ms here (32x32 tiles); the one-tile fallback kernel (128 filters wide for
    32) had it at 0.242 ms."""
    layer = _conv(n=4, c=1, k=32, h=161, w=700, r=5, s=20, stride=2, pad=0, precision="fp32",
                  memory_format="nchw")  # fmt: skip
    wl = {"schema_version": 1, "name": "w", "source": "t", "layers": [layer.model_dump()]}
    t = archsim.simulate(V100, archsim.WorkloadSpec.model_validate(wl)).layers[0].time_s
    assert 0.05e-3 < t < 0.12e-3, f"{t * 1e3:.3f} ms against DeepBench's 0.078 ms"


def test_the_cudnn_rate_predicts_convs_it_was_not_calibrated_on() -> None:
    """The families' 0.78 of the tensor-core rate is DeepBench's V100 FP16 row 233 (Speaker ID
    C128 K128 40x175, 0.379 ms); rows it was not fitted to, within 15 %: 231 (the other
    largest stride-1 conv, 0.448 ms; 0.390 here), 202 (N16 C256 K512 28x28, 0.310; 0.341)."""
    for n, c, k, h, w, published_ms in ((16, 128, 128, 40, 175, 0.379),
                                        (16, 64, 64, 80, 350, 0.448),
                                        (16, 256, 512, 28, 28, 0.310)):  # fmt: skip
        layer = _conv(n=n, c=c, k=k, h=h, w=w)
        wl = {"schema_version": 1, "name": "w", "source": "t", "layers": [layer.model_dump()]}
        t = archsim.simulate(V100, archsim.WorkloadSpec.model_validate(wl)).layers[0].time_s
        assert abs(t * 1e3 / published_ms - 1) < 0.15, f"{t * 1e3:.3f} ms vs {published_ms} ms"


def test_an_fp32_grouped_conv_is_one_batched_cuda_core_kernel_too() -> None:
    """On the CUDA cores the groups are the GEMM's batch: one launch is a candidate beside
    the per-group launches, as for the FP16 fallback kernel."""
    layer = _conv(c=64, k=64, h=28, w=28, groups=2, precision="fp32", memory_format="nchw")
    cands = conv_candidates(V100, layer)
    assert [c.algorithm for c in cands] == ["implicit_gemm", "grouped_per_launch"]
    (step,) = cands[0].steps
    assert isinstance(step, GemmStep) and step.problem.batch == 2 and not step.grouped
    assert best_conv(V100, layer).candidate.algorithm == "implicit_gemm"


def test_an_fp32_winograd_holds_its_transforms_in_fp32() -> None:
    """The non-fused Winograd's transformed inputs and filters are held in the layer's
    precision: an FP32 conv moves 4 bytes per element through its transform passes (they
    were priced at 2, and DeepBench's V100 WINOGRAD_NONFUSED rows came out 13 % fast)."""
    from archsim.accelerators.conv_candidates import MemoryStep

    for precision, eb in (("fp32", 4), ("fp16", 2)):
        layer = _conv(n=8, c=64, k=128, h=56, w=56, precision=precision, memory_format="nchw")
        (wino,) = [c for c in conv_candidates(V100, layer) if c.algorithm == "winograd_4x4"]
        steps = {s.name: s for s in wino.steps if isinstance(s, MemoryStep)}
        assert steps["input_transform"].read_bytes == 8 * 56 * 56 * 64 * eb
        assert steps["filter_transform"].write_bytes == 36 * 128 * 64 * eb
