"""GPU conv algorithms: candidates, the cuDNN rules they follow, the choice and the run."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

import archsim
from archsim.accelerators.gpu_conv import (
    GemmStep,
    MemoryStep,
    best_conv,
    conv_candidates,
    memory_cycles,
)
from archsim.cli import main
from archsim.config.workload import ConvLayer, WorkloadSpec
from archsim.errors import ConfigError
from archsim.workload.conv import materialize_conv
from archsim.workload.matvec import LayerDataError

H100 = archsim.load_hardware("h100")


def _conv(**over: object) -> ConvLayer:
    base: dict[str, object] = {"kind": "conv", "name": "c", "n": 2, "c": 64, "k": 64, "h": 14}
    base.update({"w": 14, "r": 3, "s": 3, "pad": 1})
    base.update(over)
    return ConvLayer(**base)  # type: ignore[arg-type]


def _algos(layer: ConvLayer, hw: object = H100) -> list[str]:
    """The algorithms of the candidates, each once (one candidate per tile k-step)."""
    return list(dict.fromkeys(c.algorithm for c in conv_candidates(hw, layer)))  # type: ignore[arg-type]


def _gemms(layer: ConvLayer, algo: str) -> list[GemmStep]:
    cand = next(c for c in conv_candidates(H100, layer) if c.algorithm == algo)
    return [s for s in cand.steps if isinstance(s, GemmStep)]


def test_candidates_follow_the_layer_shape() -> None:
    # channels-last (the default): cuDNN's Winograd takes NCHW filters only
    assert _algos(_conv()) == ["implicit_gemm"]
    assert _algos(_conv(memory_format="nchw")) == ["implicit_gemm", "winograd_2x2", "winograd_4x4"]
    nhwc_too = H100.with_overrides({"conv_library.winograd_memory_formats": ["nhwc", "nchw"]})
    assert _algos(_conv(), nhwc_too) == _algos(_conv(memory_format="nchw"))
    assert _algos(_conv(r=1, s=1, pad=0)) == ["gemm_1x1"]
    assert _algos(_conv(stride=2, memory_format="nchw")) == ["implicit_gemm"]  # stride 1 only
    assert _algos(_conv(groups=2)) == ["implicit_gemm"]  # one launch, cuDNN's group count
    # depthwise: 1 channel per group breaks the tensor-op rule -> CUDA-core kernels only
    assert _algos(_conv(groups=64)) == ["implicit_gemm", "depthwise_direct"]
    # one input channel and one group (a spectrogram or a grey image) is not depthwise: cuDNN
    # ran DeepBench's V100 C = 1 convs as implicit GEMMs (the depthwise kernel was 20x fast)
    assert _algos(_conv(c=1, k=32, r=5, s=20, h=161, w=700, pad=0, stride=2)) == ["implicit_gemm"]
    lib = {
        "conv_library.grouped_batched_tensor_op": False,
        "conv_library.algorithms": ["implicit_gemm", "grouped_per_launch"],
    }
    assert _algos(_conv(groups=2), H100.with_overrides(lib)) == ["grouped_per_launch"]


def test_grouped_conv_runs_one_launch_in_the_grouped_family() -> None:
    """groups=2: one batched GEMM (batch = groups) in the preset's grouped family, whose
    128x128x32 tiles pad a tap of 48 channels to 64 (two 32-channel k-steps)."""
    from archsim.accelerators.gpu_conv import candidate_runs, gemm_config

    layer = _conv(c=96, k=256, h=27, w=27, r=5, s=5, pad=2, groups=2)
    (step,) = _gemms(layer, "implicit_gemm")
    assert step.grouped and not step.simt and step.tile_k == 32
    assert step.problem.batch == 2 and step.problem.n == 128 and step.problem.k == 25 * 64
    fams = gemm_config(H100, step).library.families
    assert [f.name for f in fams] == ["cudnn_grouped_implicit_gemm_sm80"]
    ((_, _, run),) = candidate_runs(H100, conv_candidates(H100, layer)[0])
    assert run.plan.family == "cudnn_grouped_implicit_gemm_sm80"
    assert (run.plan.tile.m, run.plan.tile.n, run.plan.split_k) == (128, 128, 1)
    # 2 images x 729 pixels = 12 row tiles of 128, one column tile, two groups
    assert run.plan.ctas == 12 * 1 * 2


def test_unaligned_channels_run_on_cuda_cores_without_tap_padding() -> None:
    """C = 3 breaks the 8-channel tensor-op rule: CUDA cores, K = C*R*S exactly."""
    (step,) = _gemms(_conv(c=3, r=11, s=11, stride=4, pad=0, h=227, w=227), "implicit_gemm")
    assert step.simt and step.problem.k == 3 * 11 * 11
    assert "winograd_2x2" not in _algos(_conv(c=3))


def test_tensor_op_k_loop_pads_each_tap_to_the_tile_k() -> None:
    """One candidate per tile k-step of the conv families (H100: 32 and 64): each pads a tap's
    channels to whole k-steps (48 channels to 64 either way, 80 to 96 or 128)."""
    for c, want in ((48, {32: 25 * 64, 64: 25 * 64}), (80, {32: 25 * 96, 64: 25 * 128})):
        steps = [
            s for cand in conv_candidates(H100, _conv(c=c, r=5, s=5, pad=2))
            if cand.algorithm == "implicit_gemm" for s in cand.steps
        ]  # fmt: skip
        assert all(isinstance(s, GemmStep) and not s.simt for s in steps)
        assert {s.tile_k: s.problem.k for s in steps} == want  # type: ignore[union-attr]
    (one,) = _gemms(_conv(c=48, k=64, r=1, s=1, pad=0), "gemm_1x1")
    assert one.problem.k == 48  # a plain GEMM: only the K tail pads


def test_implicit_gemm_reads_the_input_not_im2col() -> None:
    layer = _conv(n=4, h=28, w=28)
    (step,) = _gemms(layer, "implicit_gemm")
    p = step.problem
    assert p.m == 4 * 28 * 28 and p.n == 64 and p.k == 9 * 64
    assert p.a_unique_fraction == pytest.approx(4 * 28 * 28 * 64 / (p.m * p.k))  # = 1/9


def test_winograd_shapes() -> None:
    layer = _conv(n=2, h=13, w=13, memory_format="nchw")  # 13x13 output
    for tile, alpha2 in ((2, 16), (4, 36)):
        (g,) = _gemms(layer, f"winograd_{tile}x{tile}")
        tiles = 2 * math.ceil(13 / tile) ** 2
        assert (g.problem.batch, g.problem.m, g.problem.n, g.problem.k) == (alpha2, tiles, 64, 64)
        assert g.problem.a_unique_fraction == 1.0


def test_memory_kernel_closed_form() -> None:
    clock = H100.clock.frequency_hz
    launch = math.ceil(H100.launch_overhead_s * clock - 1e-9)
    small = MemoryStep("t", 1 << 20, 1 << 20)  # fits L2
    l2 = H100.l2.bandwidth_bytes_per_clock * H100.l2.achievable_fraction
    assert memory_cycles(H100, small) == launch + math.ceil((2 << 20) / l2)
    big = MemoryStep("t", 1 << 30, 1 << 30)  # HBM
    hbm = H100.hbm.bandwidth_bytes_per_s * H100.hbm_achievable_fraction / clock
    assert memory_cycles(H100, big) == launch + math.ceil((2 << 30) / hbm - 1e-9)
    fma = MemoryStep("t", 64, 64, fma=10**9)  # compute-bound on the FP16 CUDA cores
    rate = H100.sms * H100.cuda_cores.fp16_fma_per_clock
    assert memory_cycles(H100, fma) == launch + math.ceil(10**9 / rate - 1e-9)


def test_choice_is_the_fastest_candidate() -> None:
    choice = best_conv(H100, _conv(n=8, memory_format="nchw"))
    assert choice.cycles == min(choice.tried.values())
    assert set(choice.tried) == {"implicit_gemm", "winograd_2x2", "winograd_4x4"}
    assert set(best_conv(H100, _conv(n=8)).tried) == {"implicit_gemm"}
    per_launch = H100.with_overrides(
        {"conv_library.grouped_batched_tensor_op": False,
         "conv_library.algorithms": ["implicit_gemm", "grouped_per_launch"]}
    )  # fmt: skip
    grouped = best_conv(per_launch, _conv(groups=2))
    assert len(grouped.step_cycles) == 2  # one launch per group
    assert grouped.step_cycles[0] == grouped.step_cycles[1]


def test_gpu_run_needs_no_densities_and_reports_the_algorithm() -> None:
    layers = [_conv(name="a", n=1), _conv(name="b", n=1, c=3, k=32), _conv(name="d", groups=64)]
    wl = WorkloadSpec(schema_version=1, name="t", source="test", layers=layers)
    df = archsim.simulate("h100", wl).to_dataframe()
    # H100 has a power block: the algorithm is picked at max boost, the layer runs at its
    # solved clock, and ``cycles`` counts periods of the preset clock
    assert H100.power is not None
    top = H100.with_overrides({"clock.frequency_hz": H100.power.max_clock_hz})
    assert list(df.tc_conv_algo) == [best_conv(top, lay).candidate.algorithm for lay in layers]
    f_nom = H100.clock.frequency_hz
    for lay, f, cycles in zip(layers, df.clock_hz, df.cycles, strict=True):
        at_f = best_conv(H100.with_overrides({"clock.frequency_hz": f}), lay).cycles
        assert cycles == max(1, round(at_f * f_nom / f))
    assert df.tc_tensor_ops.iloc[1] == False  # noqa: E712  (C = 3: CUDA cores)
    assert (df.energy_pj > 0).all() and (df.dram_bytes > 0).all()
    assert (df.macs_effective == df.macs_dense).all()  # dense when no density is given


def test_sparse_engines_name_the_missing_density() -> None:
    with pytest.raises(LayerDataError, match="weight_density: missing") as info:
        materialize_conv(_conv(name="x"), seed=0)
    assert info.value.layer == "x" and info.value.field == "weight_density"


def test_with_batch_sets_every_layer() -> None:
    wl = archsim.load_workload("resnet50").with_batch(32)
    assert wl.name == "resnet50@b32"
    assert {lay.n for lay in wl.layers} == {32}  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="<api>: batch: got 0; allowed: an integer >= 1"):
        wl.with_batch(0)


def _no_density_yaml(tmp_path: Path) -> Path:
    layer = {"name": "c1", "kind": "conv", "c": 8, "k": 8, "h": 6, "w": 6, "r": 3, "s": 3}
    data = {"schema_version": 1, "name": "nod", "source": "test", "layers": [layer]}
    path = tmp_path / "nod.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_cli_sparse_engine_without_density_is_one_line(tmp_path: Path, capsys) -> None:
    wl, out = _no_density_yaml(tmp_path), tmp_path / "out"
    assert main(["run", "dcnn", str(wl), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"archsim: error: {wl}: layers.0.weight_density: missing; sparse conv engines "
        "(SCNN, DCNN) need it; allowed: a fraction in [0, 1]"
    ]
    assert not out.exists()


def test_cli_batch(tmp_path: Path, capsys) -> None:
    wl, out = _no_density_yaml(tmp_path), tmp_path / "out"
    assert main(["run", "h100", str(wl), "-o", str(out), "-q", "--batch", "0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "archsim: error: --batch: must be >= 1 (got 0); allowed: an integer >= 1"
    )
    assert main(["run", "h100", str(wl), "-o", str(out), "-q", "--batch", "4"]) == 0
    frame = pd.read_csv(out / "results.csv")
    assert frame.macs_dense.iloc[0] == 4 * 8 * 4 * 4 * 8 * 9  # n = 4 images, 4x4 outputs


def test_outcome_counts_come_from_the_timed_kernels() -> None:
    """The GEMM outcome behind the counts is the very kernel that was timed (same problem:
    gathered A, beta = 0, FP16 D, the family timed fastest), so its cycles match the
    candidate's step, less the conv kernel's fixed set-up (its family's) on the tensor cores."""
    from archsim.accelerators.gpu_conv import _gemm_outcome, candidate_runs, kernel_overhead_s
    from archsim.units import seconds_to_cycles

    clock = H100.clock.frequency_hz
    for layer in (_conv(n=8, h=28, w=28), _conv(n=256, c=256, k=256, h=28, w=28)):
        for cand in conv_candidates(H100, layer):
            for step, c, run in candidate_runs(H100, cand):
                if isinstance(step, GemmStep):
                    out = _gemm_outcome(H100, step, seed=0)
                    setup = kernel_overhead_s(H100, step, run.plan.family)
                    assert out.cycles + seconds_to_cycles(setup, clock) == c
                    assert out.extras["tc_tile"] == run.plan.name
    layer = _conv(n=8, h=28, w=28)
    (step,) = _gemms(layer, "implicit_gemm")
    out = _gemm_outcome(H100, step, seed=0)
    d_bytes = 8 * 28 * 28 * 64 * 2  # FP16 output written once, never read
    assert out.counts["hbm"]["write_bytes"] == d_bytes


def test_small_layers_are_computed_by_their_algorithm() -> None:
    from archsim.accelerators.gpu_conv import functional_error

    for algo in ("implicit_gemm", "winograd_2x2", "winograd_4x4"):
        assert 0.0 <= functional_error(_conv(), algo, seed=0) < 1e-12
    wl = WorkloadSpec(schema_version=1, name="t", source="test", layers=[_conv(name="a")])
    row = archsim.simulate("h100", wl).to_dataframe().iloc[0]
    assert 0.0 <= row.tc_conv_functional_max_error < 1e-12


@pytest.mark.parametrize("net", ["vgg16", "resnet50", "googlenet"])
def test_channels_last_convs_stay_under_the_dense_peak(net: str) -> None:
    """Every conv of the preset networks, channels-last (the default) at batch 1 / 32 / 256 on
    H100, does at most the part's dense FP16 FMA rate at the clock it runs at: no Winograd
    (cuDNN's needs NCHW filters), so no layer beats the tensor cores' peak."""
    wl = archsim.load_workload(net)
    per_cycle = 2 * H100.peak_fma_per_cycle  # FLOP per SM-cycle, whole GPU
    for n in (1, 32, 256):
        layers = [spec.model_copy(update={"n": n}) for spec in wl.layers]
        df = archsim.simulate(H100, wl.model_copy(update={"layers": layers})).to_dataframe()
        assert not df.tc_conv_algo.str.startswith("winograd").any()
        flops = 2 * df.macs_dense / df.time_s
        peak = per_cycle * df.clock_hz
        assert (flops <= peak).all(), df.loc[flops > peak, "layer"].tolist()


def test_conv_families_tiles_set_the_tap_padding() -> None:
    """The k-steps a conv's taps are padded to come from the conv families' own tiles when
    they have some (else the preset's menu): a family of 32-wide k-steps pads a 16-channel tap
    to 32, not to the menu's 64."""
    from archsim.accelerators.conv_candidates import tile_ks

    assert tile_ks(H100, grouped=False) == [32, 64]
    fam = H100.conv_library.families[0].model_dump()
    assert {t["k"] for t in fam["tiles"]} == {64}
    fam["tiles"] = [{"m": 128, "n": 128, "k": 32, "warps": 4, "stages": 5}]
    cfg = H100.with_overrides({"conv_library.families": [fam]})
    assert tile_ks(cfg, grouped=False) == [32]
    layer = _conv(c=16, k=32, r=5, s=5, pad=2)
    (cand,) = [c for c in conv_candidates(cfg, layer) if c.algorithm == "implicit_gemm"]
    assert cand.steps[0].problem.k == 5 * 5 * 32


_CONV1 = {"c": 3, "k": 64, "h": 224, "w": 224, "r": 7, "s": 7, "stride": 2, "pad": 3}


def test_image_first_layer_runs_the_dedicated_kernel() -> None:
    """ResNet-50's conv1 (C=3, K=64, 7x7/2): cuDNN pads C to 4 and runs its image-first-layer
    kernel. Batch 256 is the preset's calibration row (401.15 us traced); batch 32 (58.62 us
    traced, benchmarks/measured/h100_2026-11-27/sustained/kernels_sustained.csv) is a
    prediction."""
    for n, traced_us, tol in ((256, 401.15, 0.02), (32, 58.62, 0.05)):
        layer = _conv(n=n, **_CONV1)
        cand = next(c for c in conv_candidates(H100, layer) if c.algorithm == "image_first_layer")
        pad_in, pad_filters, kernel = cand.steps
        assert isinstance(kernel, MemoryStep) and isinstance(pad_in, MemoryStep)
        assert (pad_in.read_bytes, pad_in.write_bytes) == (n * 224 * 224 * 6, n * 224 * 224 * 8)
        assert kernel.tensor_macs == n * 112 * 112 * 64 * 49 * 4
        assert kernel.ctas == n * 7 * 2
        at_max = H100.with_overrides({"clock.frequency_hz": 1.98e9})  # as traced (not limited)
        us = memory_cycles(at_max, kernel) / 1.98e9 * 1e6
        assert abs(us / traced_us - 1) <= tol, f"batch {n}: {us:.1f} us, traced {traced_us}"
    for other in ({"k": 96}, {"stride": 1}, {"c": 8}, {"memory_format": "nchw"}):
        assert "image_first_layer" not in _algos(_conv(n=2, **{**_CONV1, **other})), other
    spec = WorkloadSpec(schema_version=1, name="w", source="t", layers=[_conv(n=256, **_CONV1)])
    (lr,) = archsim.simulate(H100, spec).layers
    assert lr.extras["tc_conv_algo"] == "image_first_layer" and lr.extras["tc_tensor_ops"]
    assert lr.extras["tc_conv_kernels"] == 3
    assert 500e-6 < lr.time_s < 650e-6  # measured 585.9 us (sustained/sustained.csv)


def test_small_channel_taps_run_the_k32_tiles_of_the_family_that_has_them() -> None:
    """A 5x5 conv of 32 channels (GoogLeNet inception_3b/5x5): its k = 32 candidate (taps
    unpadded) is timed only in the family with k = 32 tiles (cudnn_sm80_fprop; the sm90
    family has k = 64 tiles only, see the preset), its k = 64 candidate in both, and the
    faster wins. At batch 1 that is the k = 32 one (6.8 us; measured 6.6 us,
    benchmarks/measured/h100_2026-11-27/conv_googlenet.csv), where the Ampere-class k = 64
    menu padded every tap to 64 channels (42 us). At batch 256 the padded sm90 kernel wins
    (95 us against 121 us for the k = 32 cutlass kernels at their 0.37 rate), where cuDNN ran
    a k = 32 sm90 tile the menu leaves out (256x96x32, 66.8 us in kernels.csv; a documented
    gap)."""
    from archsim.accelerators.gpu_conv import time_candidate, timed_families

    for n, want_k in ((1, 32), (256, 64)):
        layer = _conv(n=n, c=32, k=96, h=28, w=28, r=5, s=5, pad=2)
        cands = conv_candidates(H100, layer)
        steps = {s.tile_k: s for c in cands for s in c.steps}  # type: ignore[union-attr]
        assert {k: s.problem.k for k, s in steps.items()} == {32: 25 * 32, 64: 25 * 64}
        assert timed_families(H100, steps[32]) == ["cudnn_sm80_fprop"]
        assert timed_families(H100, steps[64]) == ["cudnn_implicit_gemm", "cudnn_sm80_fprop"]
        choice = best_conv(H100, layer)
        (step,) = [s for s in choice.candidate.steps if isinstance(s, GemmStep)]
        assert step.tile_k == want_k, n
        assert choice.cycles == min(sum(time_candidate(H100, c)) for c in cands)


def test_cudnn_benchmark_times_both_engines_with_their_own_set_up() -> None:
    """cuDNN's sm90 and Ampere-class engines both run on H100 (the batch-1 traces ran 21-29
    Ampere-class conv kernels against 3-9 sm90 ones); each family's kernels cost its own
    set-up (sm90 2.70 us, from the shortest traced sm90 fprop kernels; cutlass 0.96 us) and
    the faster wins: a small batch-1 3x3 conv (ResNet-50's res2b_branch2b, which the batch-1
    trace ran as cutlass 64x64_32x10 in 5.76 us) runs the Ampere-class family, a large
    batch-256 one the sm90 family, and each step's cycles are its run plus that set-up."""
    from archsim.accelerators.gpu_conv import candidate_runs, kernel_overhead_s, step_config
    from archsim.accelerators.tensor_core import run_gemm
    from archsim.units import seconds_to_cycles

    fams = {f.name: f for f in H100.conv_library.families}
    assert fams["cudnn_implicit_gemm"].kernel_overhead_s == pytest.approx(2.70e-6)
    assert fams["cudnn_sm80_fprop"].kernel_overhead_s is None  # the library's 0.96 us
    cases = (
        (_conv(n=1, c=64, k=64, h=56, w=56), "cudnn_sm80_fprop"),
        (_conv(n=256, c=256, k=256, h=28, w=28), "cudnn_implicit_gemm"),
    )
    for layer, family in cases:
        cand = best_conv(H100, layer).candidate
        ((step, cycles, run),) = candidate_runs(H100, cand)
        assert run.plan.family == family, (layer, run.plan.kernel)
        setup = kernel_overhead_s(H100, step, family)
        want = 0.96e-6 if family == "cudnn_sm80_fprop" else 2.70e-6
        assert setup == pytest.approx(want)
        again = run_gemm(step_config(H100, step, run), step.problem)[0]
        assert cycles == again.cycles + seconds_to_cycles(setup, H100.clock.frequency_hz)


def test_gemm_library_families_take_no_conv_set_up() -> None:
    fam = H100.library.families[0].model_dump()
    fam["kernel_overhead_s"] = 1e-6
    with pytest.raises(ConfigError, match="only in conv_library families"):
        H100.with_overrides({"library.families": [fam]})


def test_conv_output_write_back_is_held_to_hbm_bandwidth() -> None:
    """A 1x1 expansion conv at batch 256 (64 -> 256 channels, 56 x 56): 103 MB in, 411 MB
    out, far beyond L2: the kernel cannot beat its bytes at the achievable HBM bandwidth
    (measured 185.2 us, sustained/sustained.csv r50_2a_1x1)."""
    layer = _conv(n=256, c=64, k=256, h=56, w=56, r=1, s=1, pad=0)
    moved = 256 * 56 * 56 * (64 + 256) * 2
    floor_s = moved / (H100.hbm.bandwidth_bytes_per_s * H100.hbm_achievable_fraction)
    t = best_conv(H100, layer).cycles / H100.clock.frequency_hz
    assert floor_s <= t <= 1.1 * floor_s, (t, floor_s)


def test_large_filters_run_the_ampere_class_families() -> None:
    """7x7 convs ran Ampere-class kernels on the H100 in every traced case (30 of 30 random
    convs, benchmarks/measured/h100_2026-11-27/random_convs/kernels_random.csv): they take the
    preset's large-filter families, their tiles and their mma.sync rate (0.37 of the wgmma
    rate, the sustained rate of cuDNN's sm80 conv kernels); the tap-by-tap kernels time one
    candidate per tile k-step, the indexed one (the reduction as one run) one more; 5x5 is
    not a large filter."""
    from archsim.accelerators.gpu_conv import gemm_config, timed_families

    seven = _conv(n=64, c=128, k=192, h=14, w=14, r=7, s=7, pad=3)
    steps = [s for c in conv_candidates(H100, seven) for s in c.steps]
    assert steps and all(isinstance(s, GemmStep) and s.large_filter for s in steps)
    per_tap = [s for s in steps if not s.flattened]  # type: ignore[union-attr]
    assert {s.tile_k for s in per_tap} == {32, 64}  # type: ignore[union-attr]
    assert timed_families(H100, per_tap[0]) == ["cudnn_sm80_fprop", "cudnn_sm80_indexed"]  # type: ignore[arg-type]
    fams = gemm_config(H100, per_tap[0], "cudnn_sm80_fprop").library.families  # type: ignore[arg-type]
    assert [f.name for f in fams] == ["cudnn_sm80_fprop"]
    assert fams[0].mma_rate_fraction == pytest.approx(0.37) and fams[0].multicast_ctas == 1
    (flat,) = [s for s in steps if s.flattened]  # type: ignore[union-attr]
    assert timed_families(H100, flat) == ["cudnn_sm80_indexed_wo_smem"]  # type: ignore[arg-type]
    assert flat.problem.k == 128 * 7 * 7  # type: ignore[union-attr]
    five = _conv(n=64, c=128, k=192, h=14, w=14, r=5, s=5, pad=2)
    assert not any(s.large_filter for c in conv_candidates(H100, five) for s in c.steps)  # type: ignore[union-attr]


def test_fp32_conv_on_h100_runs_on_the_cuda_cores() -> None:
    """No H100 conv family serves fp32: the GEMM model falls back to the CUDA cores
    (family ``cuda_core``), and asking for that family's config filtered the conv families
    to none ("<overrides>: library.families: ... at least 1 item"); v100/a100, which have no
    conv families, ran."""
    from archsim.accelerators.gpu_conv import best_conv, conv_outcome

    cfg = archsim.load_hardware("h100")
    spec = ConvLayer(name="c", kind="conv", n=8, c=64, k=64, h=28, w=28, r=3, s=3, pad=1,
                     precision="fp32")  # fmt: skip
    choice = best_conv(cfg, spec)
    assert conv_outcome(cfg, spec, 0, 0).cycles == choice.cycles > 0
    wl = WorkloadSpec(schema_version=1, name="w", source="t", layers=[spec])
    lay = archsim.simulate("h100", wl).layers[0]
    assert lay.extras["tc_kernel_family"] == "cuda_core" and lay.extras["tc_tile"].endswith("/simt")
    fp16 = archsim.simulate("h100", wl.model_copy(update={"layers": [spec.model_copy(
        update={"precision": "fp16"})]})).layers[0]  # fmt: skip
    assert lay.time_s > 2 * fp16.time_s  # CUDA cores (67 TFLOPS fp32); 15.3 vs 5.8 us here


def test_the_functional_check_is_bounded_by_the_tensors_too() -> None:
    """A 1x1 stride-2 conv of 2 channels over 256 x 224 x 224 inputs has 12.8 M MACs (under the
    MAC cap) but 25.7 M input elements: its functional check took 6 s of a 6.4 s run. Past
    FUNCTIONAL_MAX_ELEMENTS neither it nor its GEMM is computed; a smaller batch still is."""
    from archsim.accelerators.base import FUNCTIONAL_MAX_ELEMENTS, FUNCTIONAL_MAX_MACS

    def run(n: int) -> dict[str, object]:
        layer = {"name": "x", "kind": "conv", "n": n, "c": 2, "k": 2, "h": 224, "w": 224,
                 "r": 1, "s": 1, "stride": 2}  # fmt: skip
        wl = WorkloadSpec(schema_version=1, name="f", source="test", layers=[layer])
        return archsim.simulate(H100, wl).layers[0].extras

    big, small = run(256), run(8)
    assert 256 * 112 * 112 * 4 <= FUNCTIONAL_MAX_MACS < 256 * 2 * 224 * 224
    assert 256 * 2 * 224 * 224 > FUNCTIONAL_MAX_ELEMENTS > 8 * (2 * 224 * 224 + 2 * 112 * 112)
    assert math.isnan(big["tc_conv_functional_max_error"])
    assert math.isnan(big["tc_functional_max_error"])
    assert small["tc_conv_functional_max_error"] == pytest.approx(0.0, abs=1e-9)
    assert math.isfinite(small["tc_functional_max_error"])


def test_a_unit_stride_family_runs_no_strided_conv_of_any_kind() -> None:
    """``unit_stride_convs_only`` holds for the narrow-channel, flattened and tile-k choices
    too, not only for the plain conv families (a review found the narrow families ignored it)."""
    only = H100.with_overrides({"conv_library.narrow_channel_families.0.unit_stride_convs_only":
                                True})  # fmt: skip
    for stride, narrow in ((1, True), (2, False)):
        layer = _conv(c=3, k=64, h=56, w=56, r=3, s=3, stride=stride, pad=1)
        steps = [s for cand in conv_candidates(only, layer) for s in cand.steps]
        assert any(getattr(s, "narrow", False) for s in steps) is narrow, stride
        assert all(getattr(s, "strided", False) is (stride > 1) for s in steps
                   if hasattr(s, "strided"))  # fmt: skip


@pytest.mark.parametrize("hw", ["h100", "v100"])
def test_kernel_configs_of_a_clock_variant_equal_a_validated_derivation(hw: str) -> None:
    """The power model's clock search times a conv's kernels at many clocks; their kernel
    configs are derived from the base config's (only the clock differs) instead of validated
    anew, and must equal what validating the variant gives."""
    from archsim.accelerators.gpu_conv import _build_gemm_config, gemm_config, note_clock_variant

    cfg = archsim.load_hardware(hw)
    layers = [_conv(), _conv(c=3, k=64, r=7, s=7, stride=2, h=56, w=56, pad=3),
              _conv(c=256, k=64, r=1, s=1, pad=0, precision="fp32")]  # fmt: skip
    steps = [s for lay in layers for c in conv_candidates(cfg, lay) for s in c.steps
             if isinstance(s, GemmStep)]  # fmt: skip
    assert len(steps) >= 3
    at = cfg.model_copy(update={"clock": cfg.clock.model_copy(update={"frequency_hz": 1.1e9})})
    again = at.model_copy(update={"clock": at.clock.model_copy(update={"frequency_hz": 9e8})})
    note_clock_variant(at, cfg)
    note_clock_variant(again, at)  # a variant of a variant: derived from the root
    for step in steps:
        for variant in (at, again):
            got = gemm_config(variant, step)
            assert got == _build_gemm_config(variant, step, None)
            assert got.clock.frequency_hz == variant.clock.frequency_hz
