"""The single-GPU inference pass (archsim/system/inference.py): passes, kernels, options."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.config.io import load_workload
from archsim.errors import SimulationError
from archsim.system.inference import InferenceOptions, eager_queue_s, inference_pass

MEASURED = Path(__file__).parents[2] / "benchmarks" / "measured" / "h100_2026-11-27"
#: the H100 preset's cost of one kernel in a CUDA graph (hw_configs/h100.yaml launch.graph_s)
_GRAPH_S = 1.99e-6

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
    """Batch 1 on H100 in a CUDA graph: eval batch-norm is three kernels (PyTorch's dtype copy
    and inverse-std kernels on the running statistics, each a launch, then the normalising
    kernel at its measured 4.0 us floor), ReLU and the add one launch each."""
    graph = inference_pass("h100", _wl(), InferenceOptions("amp_fp16", 1, "graph"))
    assert graph.kernels == 6 and graph.host_wait_s == 0.0
    assert graph.elementwise_s == pytest.approx(4 * _GRAPH_S + 4.0e-6)


def test_eager_kernels_queue_behind_the_host() -> None:
    """Eager: the host issues a kernel every launch.eager_s while the GPU runs the ones before
    it. Short kernels wait for the host (batch 1: the pass is the host's 6 x 11.73 us plus the
    last kernel), long ones hide it (batch 256: a few host intervals over the GPU's time)."""
    assert eager_queue_s([1.0, 1.0, 1.0], 2.0) == pytest.approx(7.0)  # host-bound: 3 x 2 + 1
    assert eager_queue_s([5.0, 1.0, 1.0], 2.0) == pytest.approx(9.0)  # GPU-bound after the 1st
    graph = inference_pass("h100", _wl(), InferenceOptions("amp_fp16", 1, "graph"))
    eager = inference_pass("h100", _wl(), InferenceOptions("amp_fp16", 1, "eager"))
    assert eager.conv_s == graph.conv_s and eager.elementwise_s == graph.elementwise_s
    assert eager.time_s == pytest.approx(6 * 1.173e-5 + _GRAPH_S)
    big = inference_pass("h100", _wl(), InferenceOptions("amp_fp16", 256, "eager"))
    big_graph = inference_pass("h100", _wl(), InferenceOptions("amp_fp16", 256, "graph"))
    assert 0.0 < big.host_wait_s < 4 * 1.173e-5
    assert big.time_s == pytest.approx(big_graph.time_s + big.host_wait_s)


def test_h100_framework_kernels_at_their_measured_rates() -> None:
    """Batch 256: the normalising batch-norm kernel at 2.195 TB/s and the max-pool (values and
    int64 indices) at 0.987 TB/s, PyTorch's kernels' own rates on an H100
    (benchmarks/measured/h100_2026-11-27/floors.csv); ReLU at HBM speed."""
    from archsim.config.workload import WorkloadSpec

    one = {**_ONE, "layers": [{**_ONE["layers"][0], "residual_add": False, "max_pool_stride": 2}]}
    wl = WorkloadSpec.model_validate(one)
    run = inference_pass("h100", wl, InferenceOptions("amp_fp16", 256))
    out = 256 * 64 * 56 * 56 * 2  # bytes of the conv's output
    pooled = 256 * 64 * 28 * 28
    want = 2 * _GRAPH_S + 2 * out / 2.195e12 + 2 * out / (3352e9 * 0.922)
    want += (out + pooled * (2 + 8)) / 0.987e12
    assert run.elementwise_s == pytest.approx(want, rel=1e-6)


def test_h100_resnet50_forward_against_the_measured_h100() -> None:
    """torchvision ResNet-50 v1.5 forward, fp16 channels-last, CUDA graph, timed on an H100
    SXM (benchmarks/measured/h100_2026-11-27/network_resnet50.csv) against the simulated pass
    (convs, three-kernel batch-norm, ReLU, adds, max-pool and the fc GEMM; the average pool
    before it is not modelled): within 16 % at batch 1 and 10 % from batch 8 to 256."""
    import pandas as pd

    rows = pd.read_csv(MEASURED / "network_resnet50.csv")
    for r in rows.itertuples():
        sim = inference_pass("h100", "resnet50_v1_5", InferenceOptions("amp_fp16", r.batch))
        err = sim.time_s / r.graph_s - 1
        print(f"batch {r.batch}: {r.graph_s * 1e3:.3f} ms measured, {sim.time_s * 1e3:.3f} "
              f"simulated ({err:+.1%})")  # fmt: skip
        assert abs(err) < (0.16 if r.batch == 1 else 0.10), (r.batch, err)


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
    # one cast per conv weight, and the fc's weight and bias
    assert cast.kernels == plain.kernels + 53 + 2 and cast.time_s > plain.time_s


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


def test_maxpool_grid_follows_pytorchs_launch_rule() -> None:
    """The CTAs of PyTorch's channels-last max-pool kernel, as the H100 traces show them:
    ResNet-50's 3x3/2 pool at batch 1 [1, 1, 28]; VGG-16's 2x2/2 pools [n, 2, 56], [n, 1, 28],
    [2n, 1, 7], [4n, 1, 2], [2n, 1, 1] (sustained/kernels_networks_vgg_googlenet32.csv)."""
    from archsim.system.inference import maxpool_ctas

    assert maxpool_ctas(1, 64, 56, 56) == 28
    for n in (1, 32, 256):
        assert maxpool_ctas(n, 64, 112, 112) == n * 2 * 56
        assert maxpool_ctas(n, 128, 56, 56) == n * 28
        assert maxpool_ctas(n, 256, 28, 28) == 2 * n * 7
        assert maxpool_ctas(n, 512, 14, 14) == 4 * n * 2
        assert maxpool_ctas(n, 512, 7, 7) == 2 * n


def test_vgg16_as_torchvision_runs_it() -> None:
    """vgg16_torchvision: per conv the bias add (1.366 TB/s) and ReLU, no batch-norm; a 2x2/2
    pool at its disjoint-window rate, slowed by its few CTAs at batch 1; the classifier as
    three GEMMs (M = batch)."""
    from archsim.config.workload import WorkloadSpec

    layer = {"name": "c", "kind": "conv", "c": 64, "k": 64, "h": 224, "w": 224, "r": 3,
             "s": 3, "pad": 1, "bias": True, "batch_norm": False, "max_pool_stride": 2,
             "max_pool_size": 2}  # fmt: skip
    wl = WorkloadSpec.model_validate({**_ONE, "layers": [layer]})
    for n in (1, 256):
        run = inference_pass("h100", wl, InferenceOptions("amp_fp16", n))
        out = n * 64 * 224 * 224 * 2
        pool = (out + n * 64 * 112 * 112 * (2 + 8)) / 1.401e12 * max(1.0, 132 / (n * 112))
        want = 2 * out / 1.366e12 + 2 * out / (3352e9 * 0.922) + pool
        assert run.kernels == 4
        assert run.elementwise_s == pytest.approx(want, rel=1e-6), n
    vgg = inference_pass("h100", "vgg16_torchvision", InferenceOptions("amp_fp16", 32))
    # convs, bias, ReLU; pools; head; classifier GEMMs and fc6's and fc7's ReLUs
    assert vgg.kernels == 13 * 3 + 5 + 2 + 3 + 2
    assert set(vgg.per_layer_s) >= {"fc6", "fc7", "fc8"}
    assert 0 < vgg.per_layer_s["fc8"] < vgg.per_layer_s["fc6"]


def test_small_bias_adds_and_classifier_relus() -> None:
    """A bias add lasts at least ``framework_kernels.bias_add_floor_s`` (H100: 3.02 us, the
    mean of six traced batch-1 bias adds), above the 1.99 us launch floor; an fc layer with
    ``relu`` adds one ReLU kernel (read and write batch x outputs) after its GEMM, one without
    adds none."""
    from archsim.config.io import load_hardware
    from archsim.config.workload import WorkloadSpec

    h100 = load_hardware("h100")
    assert h100.framework_kernels.bias_add_floor_s == pytest.approx(3.02e-6)
    layer = {"name": "c", "kind": "conv", "c": 512, "k": 512, "h": 14, "w": 14, "r": 3,
             "s": 3, "pad": 1, "bias": True, "batch_norm": False, "relu": False}  # fmt: skip
    one = inference_pass("h100", WorkloadSpec.model_validate({**_ONE, "layers": [layer]}))
    assert one.kernels == 2
    assert one.elementwise_s == pytest.approx(3.02e-6, rel=1e-9)  # 0.4 MB at 1.366 TB/s: 0.3 us
    fc = {
        "name": "f",
        "kind": "fc",
        "inputs": 4096,
        "outputs": 4096,
        "weight_density": 1.0,
        "activation_density": 1.0,
    }
    base = {**_ONE, "layers": [fc]}
    plain = inference_pass("h100", WorkloadSpec.model_validate(base), InferenceOptions(batch=256))
    relu = inference_pass(
        "h100",
        WorkloadSpec.model_validate({**base, "layers": [{**fc, "relu": True}]}),
        InferenceOptions(batch=256),
    )
    assert (plain.kernels, relu.kernels) == (1, 2)
    assert plain.elementwise_s == 0.0
    want = max(2 * 256 * 4096 * 2 / (3352e9 * 0.922), h100.launch.graph_s)
    assert relu.elementwise_s == pytest.approx(want, rel=1e-6)
    assert relu.time_s == pytest.approx(plain.time_s + want, rel=1e-6)


def test_vgg16_head_pools_and_copies_before_the_classifier() -> None:
    """torchvision's VGG-16 runs AdaptiveAvgPool2d(7) and a flatten between conv5_3's pool and
    fc6: PyTorch's pooling kernel on the grids the trace shows (2 / 64 / 512 CTAs at batch
    1 / 32 / 256, sustained/kernels_networks_vgg_googlenet32.csv) and, channels-last, a copy
    of 25088 values per image; a global pool (size 1, PyTorch's mean-reduce kernel) is
    refused."""
    from archsim.config.io import load_hardware
    from archsim.config.workload import WorkloadSpec
    from archsim.system.inference import _head, maxpool_ctas

    wl = load_workload("vgg16_torchvision")
    conv5_3 = next(lay for lay in wl.layers if lay.name == "conv5_3")
    assert conv5_3.avg_pool_size == 7
    for n, grid in ((1, 2), (32, 64), (256, 512)):
        opts = InferenceOptions("amp_fp16", n)
        outputs = n * 512 * 14 * 14
        pool, copy = _head(conv5_3, outputs, 2, opts)
        assert pool == ("maxpool_disjoint", 2 * (2 * n * 25088), grid)
        assert maxpool_ctas(n, 512, 7, 7) == grid
        assert copy == ("elementwise", 2 * 2 * n * 25088, 0)
    nchw = InferenceOptions("amp_fp16", 1, memory_format="nchw")
    assert len(_head(conv5_3, 512 * 14 * 14, 2, nchw)) == 1  # NCHW: flatten is a view
    h100 = load_hardware("h100")
    with_head = inference_pass(h100, wl, InferenceOptions("amp_fp16", 1))
    layers = [
        lay.model_copy(update={"avg_pool_size": 0}) if lay.kind == "conv" else lay
        for lay in wl.layers
    ]
    headless = wl.model_copy(update={"layers": layers})
    without = inference_pass(h100, headless, InferenceOptions("amp_fp16", 1))
    assert with_head.kernels == without.kernels + 2
    assert with_head.time_s > without.time_s
    layer = {"name": "c", "kind": "conv", "c": 8, "k": 8, "h": 7, "w": 7, "r": 1, "s": 1,
             "avg_pool_size": 1}  # fmt: skip
    with pytest.raises(ValueError, match="avg_pool_size=1 is a global average pool"):
        WorkloadSpec.model_validate({**_ONE, "layers": [layer]})


def test_a_pass_bigger_than_l2_finds_no_layer_resident() -> None:
    """Back-to-back calls of one GEMM find its operands in L2 (l2.resident_across_calls); a
    layer of a network does not when one forward moves more than L2 keeps between two visits:
    VGG-16 at batch 1 (304 MB of filters, weights and outputs) reads fc7's 33.5 MB of weights
    from HBM (traced 13.9 us, 2.4 TB/s), GoogLeNet at batch 1 (20 MB) keeps them. Kept in L2,
    fc7 is faster, though not faster than HBM's rate: a one-row GEMV is held by its few
    k-serial CTAs (../shared/data/h100/gemm_llm.csv: 1 x 4096 x 4096 fp16 with its weights in
    L2 takes 10.88 us, 3.1 TB/s)."""
    from archsim.config.io import load_hardware
    from archsim.system.inference import _conv_workload
    from archsim.system.passes import footprint_bytes

    h100 = load_hardware("h100")
    keep = h100.l2.resident_capacity_bytes
    sizes = {
        w: footprint_bytes(_conv_workload(load_workload(w), "fp16", 1, "nhwc"))
        for w in ("vgg16_torchvision", "googlenet_torchvision")
    }
    assert sizes["vgg16_torchvision"] > keep > sizes["googlenet_torchvision"], sizes
    vgg = inference_pass(h100, "vgg16_torchvision", InferenceOptions("amp_fp16", 1))
    weights = 4096 * 4096 * 2
    hbm = h100.hbm.bandwidth_bytes_per_s * h100.hbm_achievable_fraction
    assert vgg.per_layer_s["fc7"] >= weights / hbm
    warm = h100.with_overrides(  # an L2 that keeps all of it
        {"l2.size_bytes": 2**30, "l2.resident_capacity_bytes": 2**30}
    )
    kept = inference_pass(warm, "vgg16_torchvision", InferenceOptions("amp_fp16", 1))
    assert kept.per_layer_s["fc7"] < 0.8 * vgg.per_layer_s["fc7"]


def test_inception_branch_pool_and_concat() -> None:
    """A pool branch's conv (GoogLeNet): a 3x3 stride-1 max-pool of the input first (input
    read, values and int64 indices written, overlapping windows: the 3x3 rate), then after
    the conv the module's concatenation (all branches' channels read and written once) and a
    3x3/2 stage pool of the concatenated tensor."""
    from archsim.config.workload import WorkloadSpec
    from archsim.system.inference import maxpool_ctas

    layer = {"name": "p", "kind": "conv", "c": 192, "k": 32, "h": 28, "w": 28, "r": 1, "s": 1,
             "input_max_pool_size": 3, "concat_channels": 256, "max_pool_stride": 2,
             "max_pool_size": 3}  # fmt: skip
    wl = WorkloadSpec.model_validate({**_ONE, "layers": [layer]})
    n = 256
    run = inference_pass("h100", wl, InferenceOptions("amp_fp16", n))
    hbm = 3352e9 * 0.922
    bn = 2 * _GRAPH_S + 2 * n * 32 * 28 * 28 * 2 / 2.195e12
    relu = 2 * n * 32 * 28 * 28 * 2 / hbm
    in_el = n * 192 * 28 * 28
    pool_in = (in_el * 2 + in_el * 10) / 0.987e12
    assert maxpool_ctas(n, 192, 28, 28) > 132
    cat = 2 * n * 256 * 28 * 28 * 2 / hbm
    stage = (n * 256 * 28 * 28 * 2 + n * 256 * 14 * 14 * 10) / 0.987e12
    assert run.kernels == 1 + 3 + 1 + 1 + 1 + 1  # conv, BN (3), ReLU, pool, cat, stage pool
    assert run.elementwise_s == pytest.approx(bn + relu + pool_in + cat + stage, rel=1e-6)


@pytest.mark.parametrize(
    ("net", "workload", "kernels", "tolerance"),
    [
        # 51 kernels, the trace 54 (the 3 split-K reduces are part of their GEMMs here)
        ("torchvision_vgg16", "vgg16_torchvision", 51, {1: 0.15, 32: 0.15, 256: 0.15}),
        # 308 kernels; the CUPTI traces have 309-312
        ("torchvision_googlenet", "googlenet_torchvision", 308, {1: 0.15, 32: 0.15, 256: 0.15}),
    ],
)
def test_h100_torchvision_forward_against_the_measured_h100(net, workload, kernels, tolerance):
    """torchvision VGG-16 and GoogLeNet forward, fp16 channels-last, CUDA graph, on an H100 SXM
    (benchmarks/measured/h100_2026-11-27/sustained/networks.csv) against the workloads that
    describe them as torchvision builds them: VGG-16 -13.1 / +6.9 / +10.2 %, GoogLeNet +0.7 /
    -8.7 / -6.4 % at batch 1 / 32 / 256 (15 % is the claims' tolerance)."""
    import pandas as pd

    rows = pd.read_csv(MEASURED / "sustained" / "networks.csv")
    for r in rows[rows["net"] == net].itertuples():
        sim = inference_pass("h100", workload, InferenceOptions("amp_fp16", r.batch))
        err = sim.time_s / r.graph_s - 1
        print(f"{net} batch {r.batch}: {r.graph_s * 1e3:.3f} ms measured, "
              f"{sim.time_s * 1e3:.3f} simulated ({err:+.1%})")  # fmt: skip
        assert sim.kernels == kernels
        assert abs(err) < tolerance[r.batch], (r.batch, err)
