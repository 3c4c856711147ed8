"""Tensor-core GPU model: quantisation and regimes emerge, functional output, errors, energy."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import archsim
from archsim.accelerators.tensor_core import run_gemm
from archsim.config.workload import WorkloadSpec
from archsim.errors import SimulationError
from archsim.workload.gemm import lower_to_gemm


def _gemm_wl(*shapes: tuple[int, int, int], **extra: object) -> WorkloadSpec:
    layers = [
        {"kind": "gemm", "name": f"g{i}_{m}x{n}x{k}", "m": m, "n": n, "k": k, **extra}
        for i, (m, n, k) in enumerate(shapes)
    ]
    return WorkloadSpec(schema_version=1, name="t", source="test", layers=layers)


def _frame(hw: str, *shapes: tuple[int, int, int], **extra: object):
    return archsim.simulate(hw, _gemm_wl(*shapes, **extra)).to_dataframe()


def test_result_columns_and_consistency() -> None:
    df = _frame("v100", (1024, 1024, 1024), (512, 16, 512))
    for col in (
        "tc_tile", "tc_waves", "tc_bound", "tc_tflops", "tc_peak_fraction", "tc_peak_tflops",
        "tc_hbm_bandwidth_bytes_per_s", "tc_arithmetic_intensity", "energy_tensor_core_pj",
        "energy_hbm_pj", "energy_l2_pj", "energy_shared_memory_pj",
    ):  # fmt: skip
        assert col in df.columns, col
    r = df.iloc[0]
    assert r.tc_tflops == pytest.approx(2 * 1024**3 / r.time_s / 1e12)
    assert r.tc_peak_fraction == pytest.approx(r.tc_tflops / 125.3376)
    assert r.dram_bytes >= 3 * 1024 * 1024 * 2  # A, B and D at least once
    assert set(df.tc_bound) <= {"compute", "memory", "latency"}
    assert df.iloc[1].tc_bound == "latency"  # a tiny GEMM sits on launch + load latency


def test_wave_quantisation_emerges() -> None:
    """Growing M by one tile row past a full wave costs a whole extra wave."""
    hw = archsim.load_hardware("v100").with_overrides(
        {"tiles": [{"m": 128, "n": 128, "k": 32, "warps": 8, "stages": 2}],
         "library.split_k_factors": [1]}
    )  # fmt: skip
    # 128x128 tiles, 2 CTAs/SM on 80 SMs = 160 slots; N = 1280 -> 10 tile columns
    t = {}
    for rows in (16, 17):  # 160 CTAs (one wave) vs 170 CTAs (a 10-CTA second wave)
        run, _ = run_gemm(hw, lower_to_gemm(_gemm_wl((rows * 128, 1280, 4096)).layers[0]))
        t[rows] = run
    assert t[16].plan.ctas_per_sm == 2 and t[16].waves == pytest.approx(1.0)
    assert t[17].waves == pytest.approx(170 / 160)
    ratio = t[17].main_cycles / t[16].main_cycles
    assert ratio > 1.4, f"17/16 tile rows took {ratio:.2f}x; a tail wave should cost ~2x"


def test_tile_quantisation_emerges() -> None:
    """N = 16 pads to the tile: time barely changes from N = 16 to N = 64."""
    df = _frame("v100", (4096, 16, 4096), (4096, 64, 4096))
    assert df.time_s.iloc[1] / df.time_s.iloc[0] < 1.5  # 4x the work, < 1.5x the time
    assert df.tc_peak_fraction.iloc[0] < 0.15


def test_memory_bound_regime_tracks_bandwidth() -> None:
    """A skinny GEMM is HBM-bound: halving HBM bandwidth nearly doubles its kernel time (the
    DRAM page cap, which bounds its K-contiguous A below the HBM rate, is off here)."""
    wl = _gemm_wl((4096, 16, 4096))
    hw = archsim.load_hardware("v100").with_overrides({"dram_pages": None})
    slow = hw.with_overrides({"hbm.bandwidth_bytes_per_s": 450e9})
    fast_r, slow_r = archsim.simulate(hw, wl), archsim.simulate(slow, wl)
    assert fast_r.to_dataframe().tc_bound.iloc[0] == "memory"
    launch = 2 * 5e-6
    ratio = (slow_r.total_time_s - launch) / (fast_r.total_time_s - launch)
    assert 1.6 < ratio < 2.2, ratio


def test_split_k_for_tall_skinny_and_simt_fallback() -> None:
    df = _frame("v100", (512, 8, 100000))
    assert "/splitk" in df.tc_tile.iloc[0]
    simt = _frame("v100", (35, 512, 1760), precision="fp32")  # FP32 operands: CUDA cores
    assert simt.tc_tile.iloc[0].endswith("/simt") and not simt.tc_tensor_ops.iloc[0]
    v100 = _frame("v100", (35, 512, 1760))  # cuBLAS 10.1: tensor cores with padding
    a100 = _frame("a100", (35, 512, 1760))  # cuBLAS 11+: tensor cores with padding
    assert bool(v100.tc_tensor_ops.iloc[0]) and bool(a100.tc_tensor_ops.iloc[0])


@pytest.mark.parametrize(
    ("hw", "precision", "accumulate"),
    [("v100", "fp16", "fp32"), ("v100", "fp16", "fp16"), ("a100", "bf16", "fp32"),
     ("a100", "tf32", "fp32"), ("a100", "int8", "int32"), ("v100", "fp32", "fp32")],
)  # fmt: skip
def test_functional_output_matches_numpy(hw: str, precision: str, accumulate: str) -> None:
    df = _frame(hw, (96, 80, 200), precision=precision, accumulate=accumulate)
    err, bound = df.tc_functional_max_error.iloc[0], df.tc_functional_error_bound.iloc[0]
    assert np.isfinite(err) and err <= bound
    if precision == "int8":
        assert err == 0.0
    else:  # a meaningful bound: |A||B| is about 50 here, k = 200 (50 HMMA.884 chunks on V100)
        assert bound < (0.1 if accumulate == "fp16" else 1e-4) * 50, bound


@pytest.mark.parametrize(
    ("hw", "precision"), [("h100", "fp16"), ("h100", "bf16"), ("v100", "fp16")]
)
def test_a_one_channel_1x1_conv_keeps_its_output_rounding_within_the_bound(hw, precision) -> None:
    """K = 1: D = a b + c is often near zero, where rounding it to the conv's 16-bit output errs
    by an absolute half subnormal, not by u |D| (a fuzz found 1x1 convs of one input channel
    refused as 'functional GEMM exceeds its error bound')."""
    layer = {"kind": "conv", "name": "c", "n": 8, "c": 1, "k": 48, "h": 56, "w": 66, "r": 1,
             "s": 1, "stride": 2, "precision": precision}  # fmt: skip
    wl = WorkloadSpec.model_validate({"schema_version": 1, "name": "c1", "source": "t",
                                      "layers": [layer]})  # fmt: skip
    x = archsim.simulate(hw, wl).layers[0].extras
    err, bound = x["tc_functional_max_error"], x["tc_functional_error_bound"]
    assert 0 < err <= bound < (2.0**-7 if precision == "bf16" else 2.0**-10)


@pytest.mark.parametrize(
    ("hw", "precision", "accumulate", "shape", "ik"),
    [("v100", "fp16", "fp32", (256, 256, 256), 4), ("a100", "fp16", "fp32", (256, 256, 256), 16),
     ("a100", "tf32", "fp32", (256, 256, 256), 8), ("h100", "bf16", "fp32", (256, 256, 256), 16),
     ("v100", "fp32", "fp32", (256, 256, 256), 1), ("v100", "fp16", "fp16", (35, 256, 256), 4),
     ("h100", "fp8_e4m3", "fp32", (256, 256, 256), 32),
     ("h100", "tf32", "fp32", (256, 256, 256), 8)],
)  # fmt: skip
def test_accumulation_chunk_is_the_instruction_k(hw, precision, accumulate, shape, ik) -> None:
    """The functional check rounds where the hardware does: after each MMA instruction's k
    (HMMA.884: 4; m16n8k16 and wgmma: 16; TF32: 8), after every FMA on the CUDA cores."""
    from archsim.accelerators.gpu_plan import accumulation_chunk_k, plans_for
    from archsim.config.io import load_hardware
    from archsim.workload.gemm import GemmProblem

    cfg = load_hardware(hw)
    m, n, k = shape
    prob = GemmProblem("g", "gemm", m, n, k, 1, precision, accumulate)
    plans = plans_for(cfg, prob)
    assert plans and {accumulation_chunk_k(cfg, prob, p) for p in plans} == {ik}


def test_unsupported_precision_is_a_clear_error() -> None:
    with pytest.raises(SimulationError, match=r"precision 'int8' is not supported by v100"):
        archsim.simulate("v100", _gemm_wl((64, 64, 64), precision="int8", accumulate="int32"))


@pytest.mark.parametrize("dim", ["m", "n", "k"])
def test_zero_or_negative_dimension_is_rejected(tmp_path, dim: str) -> None:
    layer = {"kind": "gemm", "name": "z", "m": 4, "n": 4, "k": 4, dim: 0 if dim != "k" else -3}
    path = tmp_path / "wl.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "name": "z", "source": "t",
                                    "layers": [layer]}))  # fmt: skip
    with pytest.raises(archsim.ConfigError, match=rf"wl.yaml: layers\.0\.{dim}: .*greater"):
        archsim.load_workload(path)


def test_conv_and_fc_layers_run_as_gemms() -> None:
    res = archsim.simulate("v100", "alexnet")
    df = res.to_dataframe()
    assert len(df) == 5 and (df.cycles > 0).all()  # the five conv layers
    conv1 = df.iloc[0]
    assert conv1.tc_gemm_mnk == "3025x96x363"  # 55*55 pixels x 96 filters x 3*11*11
    wl = WorkloadSpec(
        schema_version=1, name="fc", source="test",
        layers=[{"kind": "fc", "name": "fc_b1", "inputs": 4096, "outputs": 4096,
                 "weight_density": 1.0, "activation_density": 1.0, "batch": 1},
                {"kind": "fc", "name": "fc_b64", "inputs": 4096, "outputs": 4096,
                 "weight_density": 1.0, "activation_density": 1.0, "batch": 64}],
    )  # fmt: skip
    fc = archsim.simulate("v100", wl).to_dataframe()
    assert fc.tc_gemm_mnk.tolist() == ["4096x1x4096", "4096x64x4096"]
    # the matrix is read once either way: batch 64 costs far less than 64x batch 1
    assert fc.time_s.iloc[1] < 2 * fc.time_s.iloc[0]


def test_energy_below_board_level_bound() -> None:
    """A large GEMM's modelled energy per FLOP stays below TDP / peak (reference bounds)."""
    for hw, bound in (("v100", 2.39), ("a100", 1.28), ("h100", 0.71)):
        r = _frame(hw, (4096, 4096, 4096)).iloc[0]
        pj_per_flop = r.energy_pj / (2 * r.macs_dense)
        cfg = archsim.load_hardware(hw)
        if cfg.power is not None:  # board level: power limit / the throughput reached
            bound = cfg.power.power_limit_w / (2 * r.macs_dense / r.time_s) * 1e12 * 1.001
        assert 0.02 < pj_per_flop < bound, (hw, pj_per_flop)
        assert r.power_w < cfg.tdp_w * 1.001


def test_deterministic() -> None:
    a = archsim.simulate("a100", _gemm_wl((300, 200, 100))).to_dataframe()
    b = archsim.simulate("a100", _gemm_wl((300, 200, 100))).to_dataframe()
    assert a.equals(b)


def test_cli_unsupported_precision_exits_2_with_one_line(tmp_path, capsys) -> None:
    from archsim.cli import main

    path = tmp_path / "int8.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "name": "i8", "source": "t", "layers": [
        {"kind": "gemm", "name": "q", "m": 64, "n": 64, "k": 64, "precision": "int8",
         "accumulate": "int32"}]}))  # fmt: skip
    assert main(["run", "v100", str(path), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "precision 'int8' is not supported by v100" in err
    assert "int8.yaml: layers.0.precision: layer 'q'" in err  # the file and the field
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("half", [False, True])
def test_split_k_reduces_fp32_partials_in_slice_order(half: bool) -> None:
    """Each slice accumulates from zero; the reduction adds C, then the partials, in FP32."""
    from archsim.datapath.gemm_kernels import split_k_gemm_fp32, tiled_gemm_fp32

    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((24, 96), (96, 20), (24, 20)))
    zero = np.zeros_like(c)

    def kernel(lo: int, hi: int) -> np.ndarray:
        return tiled_gemm_fp32(a[:, lo:hi].copy(), b[lo:hi].copy(), zero, 16, 16, 32, 4, half)

    def out(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float16).astype(np.float32) if half else x

    assert np.array_equal(
        split_k_gemm_fp32(a, b, c, 16, 16, 32, 4, 96, half), out(c + kernel(0, 96))
    )
    want = out(((c + kernel(0, 32)) + kernel(32, 64)) + kernel(64, 96))
    assert np.array_equal(split_k_gemm_fp32(a, b, c, 16, 16, 32, 4, 32, half), want)


@pytest.mark.parametrize("hw", ["v100", "a100", "h100"])
def test_plan_schedule_equals_its_simpy_run(hw: str) -> None:
    """The plan search's SimPy-free schedule is the twin of the SimPy run: same cycles, time
    split, busy cycles and traffic for every plan (a sample of the DeepBench shapes, which
    cover one and two SM groups, batched full rounds, tails and split-K, and C = 3 convs)."""
    from archsim.accelerators.gpu_conv import conv_candidates, gemm_config
    from archsim.accelerators.gpu_plan import plans_for
    from archsim.accelerators.tensor_core import _KernelModel
    from archsim.config.workload import ConvLayer
    from archsim.engine.context import SimContext

    cfg = archsim.load_hardware(hw)
    layers = archsim.load_workload("deepbench_gemm").layers[::7]
    cases = [(cfg, lower_to_gemm(spec)) for spec in layers]
    # an output-heavy conv GEMM (a 1x1 expansion at batch 256: 411 MB of FP16 written) whose
    # rounds end before its HBM traffic can: the write-back floor decides its length
    wide = ConvLayer(kind="conv", name="wide", n=256, c=64, k=256, h=56, w=56, r=1, s=1)
    # C = 3 image inputs (H100: the narrow-channel family, whose per-CTA gather rate lengthens
    # each k-step's latency) at batch 1, 8 and 64: one CTA an SM, tails, full rounds
    image = [ConvLayer(kind="conv", name=f"img{n}", n=n, c=3, k=96, h=227, w=227, r=11, s=11,
                       stride=4) for n in (1, 8, 64)]  # fmt: skip
    for layer in (wide, *image):
        for cand in conv_candidates(cfg, layer):
            cases += [(gemm_config(cfg, step), step.problem) for step in cand.steps]  # type: ignore[arg-type]
    narrow = [p for c, prob in cases for p in plans_for(c, prob) if p.cta_fill_bytes_per_clock]
    assert bool(narrow) == (hw == "h100")
    n = floored = 0
    for c, prob in cases:
        for plan in plans_for(c, prob):
            model = _KernelModel(c, prob, plan)
            simpy_run = model.run(SimContext(c.clock.frequency_hz))
            assert _KernelModel(c, prob, plan).schedule() == simpy_run, plan.kernel
            floored += simpy_run.main_cycles == model.hbm_floor
            n += 1
    assert n > 3 * len(layers)
    if hw == "h100":
        assert floored >= 1


def test_tiled_gemm_matches_the_literal_instruction_order() -> None:
    """The numba kernel (columns innermost, FP16 rounding on the bits) against a literal
    per-output loop: bit-identical D with FP32 and with FP16 accumulation."""
    from archsim.datapath.gemm_kernels import tiled_gemm_fp32

    rng = np.random.default_rng(11)
    m, n, k, tm, tn, tk, ik = 13, 10, 37, 8, 8, 16, 4
    a, b = (rng.standard_normal(s).astype(np.float16).astype(np.float32) for s in ((m, k), (k, n)))
    c = (rng.standard_normal((m, n)) * 4).astype(np.float32)
    for half in (False, True):
        rnd = (lambda x: np.float32(np.float16(x))) if half else np.float32
        want = np.array([[rnd(v) for v in row] for row in c], np.float32)
        for kc in range(0, k, ik):  # tiles do not change one output's order
            for i in range(m):
                for j in range(n):
                    part = 0.0
                    for kk in range(kc, min(kc + ik, k)):
                        part += float(a[i, kk]) * float(b[kk, j])
                    want[i, j] = rnd(np.float32(want[i, j] + np.float32(part)))
        got = tiled_gemm_fp32(a, b, c, tm, tn, tk, ik, half)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), half


def test_fp16_rounding_on_bits_equals_numpy_half() -> None:
    """Round-to-nearest-even to FP16 on float32 bits (normals, subnormals, overflow, ties)."""
    from archsim.datapath.gemm_kernels import _round_fp16_f32

    rng = np.random.default_rng(3)
    x = (rng.standard_normal(3000) * np.exp(rng.uniform(-22, 12, 3000))).astype(np.float32)
    ties = np.array([1 + 2**-11, 1 + 3 * 2**-11, 2**-24 * 2.5, 65520, -65519.99, 0.0], np.float32)
    fbuf = np.empty(1, np.float32)
    ibuf = fbuf.view(np.uint32)
    for v in np.concatenate([x, ties]):
        with np.errstate(over="ignore"):
            want = np.float32(np.float16(v))
        got = _round_fp16_f32(v, fbuf, ibuf)
        assert np.float32(got).view(np.uint32) == want.view(np.uint32), v


def test_a_tail_round_gets_the_bandwidth_share_of_the_sms_that_run_it() -> None:
    """288 CTAs on 264 SMs: every SM runs one, then 24 run one more. The 240 SMs whose last
    round ends as the tail starts have left by then (the same instant), so the tail's round
    is timed at the share of 24 active SMs, not of 264 (it was, by event order: 1.3x slower
    than on 200 SMs). Both the SimPy run and its replay."""
    from archsim.accelerators.gpu_plan import plans_for
    from archsim.accelerators.tensor_core import _KernelModel, _Memory
    from archsim.config.workload import GemmLayer
    from archsim.engine.context import SimContext

    cfg = archsim.load_hardware("h100").with_overrides(
        {"power": None, "clock.frequency_hz": 1.5e9, "sms": 264}
    )
    prob = lower_to_gemm(GemmLayer(kind="gemm", name="g", m=3072, n=3072, k=3072, precision="tf32"))
    plan = next(p for p in plans_for(cfg, prob) if p.ctas == 288 and p.ctas_per_sm == 1)
    model = _KernelModel(cfg, prob, plan)
    assert [(n, segs) for n, segs in model.groups()] == [(24, [(1, 1), (1, 1)]), (240, [(1, 1)])]

    def round_at(active: int) -> int:
        mem = _Memory(cfg, model.miss, plan.fill_bytes_per_clock, model.load_hbm)
        mem.active = active
        return int(model.round(1, mem)[0])

    assert round_at(24) < round_at(264)  # the case tells the two apart
    expected = max(round_at(264) + round_at(24), model.hbm_floor)
    assert model.schedule().main_cycles == expected
    run = _KernelModel(cfg, prob, plan).run(SimContext(cfg.clock.frequency_hz))
    assert run.main_cycles == expected
