"""GPU GEMM time mechanisms: precisions, kernel families (layout + alignment), launch modes,
clock domains, and the closed-form L2 traffic."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import archsim
from archsim.accelerators.gpu_l2 import l2_traffic
from archsim.accelerators.gpu_plan import family_for, plans_for, stream_k_cut_tiles
from archsim.accelerators.tensor_core import _functional, run_gemm
from archsim.config.workload import WorkloadSpec
from archsim.errors import SimulationError
from archsim.workload.gemm import GemmProblem, round_fp8

MEASURED = Path(__file__).parents[2] / "benchmarks" / "measured" / "h100_2026-11-27"


def _gemm_workload(m: int, n: int, k: int, precision: str, ta: bool, tb: bool) -> WorkloadSpec:
    layer = {"name": "g", "kind": "gemm", "m": m, "n": n, "k": k, "precision": precision,
             "transpose_a": ta, "transpose_b": tb}  # fmt: skip
    doc = {"schema_version": 1, "name": "g", "source": "test", "layers": [layer]}
    return WorkloadSpec.model_validate(doc)


def _prob(m, n, k, precision="fp16", acc="fp32", **kw) -> GemmProblem:
    return GemmProblem("g", "gemm", m, n, k, kw.pop("batch", 1), precision, acc, **kw)


def _at(cfg, hz: float):
    return cfg.model_copy(update={"clock": cfg.clock.model_copy(update={"frequency_hz": hz})})


def _seconds(cfg, prob) -> float:
    best, _ = run_gemm(cfg, prob)
    return best.cycles / cfg.clock.frequency_hz


def test_h100_precision_rates_fp8_twice_fp16_tf32_half() -> None:
    """Large compute-bound GEMMs: FP8 at ~2x and TF32 at ~1/2 the FP16 rate (H100 whitepaper
    dense rates); TF32 keeps the bytes per k-step, so it is not starved of shared memory."""
    h100 = archsim.load_hardware("h100")
    t16 = _seconds(h100, _prob(8192, 8192, 8192))
    t8 = _seconds(h100, _prob(8192, 8192, 8192, "fp8_e4m3", output="bf16", transpose_b=True))
    t32 = _seconds(h100, _prob(8192, 8192, 8192, "tf32"))
    print(f"fp16 {t16 * 1e3:.3f} ms, fp8 {t8 * 1e3:.3f} ms, tf32 {t32 * 1e3:.3f} ms")
    assert 1.7 <= t16 / t8 <= 2.05
    assert 1.9 <= t32 / t16 <= 2.2
    tflops_tf32 = 2 * 8192**3 / t32 / 1e12
    assert tflops_tf32 > 0.85 * h100.peak_tflops("tf32")  # was ~190 of 495 before


def test_precision_a_preset_lacks_is_one_line_error() -> None:
    a100 = archsim.load_hardware("a100")
    with pytest.raises(SimulationError, match=r"'fp8_e5m2' is not supported by a100; allowed: "
                       r"fp16, bf16, tf32, int8, fp32 \(CUDA cores\)"):  # fmt: skip
        plans_for(a100, _prob(256, 256, 256, "fp8_e5m2"))


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_fp8_functional_output_within_bound(fmt: str) -> None:
    layers = [{"kind": "gemm", "name": "f8", "m": 96, "n": 80, "k": 200, "precision": fmt,
               "output": "bf16"}]  # fmt: skip
    wl = WorkloadSpec(schema_version=1, name="t", source="test", layers=layers)
    r = archsim.simulate("h100", wl).to_dataframe().iloc[0]
    err, bound = r.tc_functional_max_error, r.tc_functional_error_bound
    print(f"{fmt}: max error {err:.3g}, bound {bound:.3g}")
    # FP32 accumulation of exact FP8 products, then one bf16 rounding (u = 2**-8) of |D| <~ 50
    assert np.isfinite(err) and 0 < err <= bound < 2.0**-8 * 60


def test_fp8_rounding_values() -> None:
    x = np.array([0.1, 1.0625, 3 * 2.0**-10, 500.0, -0.3])
    assert round_fp8(x, "fp8_e4m3").tolist() == [0.1015625, 1.0, 2.0**-8, 448.0, -0.3125]
    assert round_fp8(x, "fp8_e5m2").tolist() == [0.09375, 1.0, 3 * 2.0**-10, 512.0, -0.3125]


def test_h100_unaligned_leading_dimensions_take_the_slow_family() -> None:
    """TMA needs 16-byte strides: 4095^3 falls back (gemm_unaligned.csv: ~150 vs ~650 TFLOPS);
    the layout decides which dimension is a leading one."""
    h100 = archsim.load_hardware("h100")
    assert family_for(h100, _prob(4096, 4096, 4096)).name == "sm90_tma_wgmma"
    assert family_for(h100, _prob(4095, 4095, 4095)).name == "sm80_unaligned"
    # m = 1001 is a leading dimension only when A is stored transposed (k x m)
    assert family_for(h100, _prob(1001, 1024, 1024)).name == "sm90_tma_wgmma"
    assert family_for(h100, _prob(1001, 1024, 1024, transpose_a=True)).name == "sm80_unaligned"
    # each at the clock it ran at (gemm_unaligned.csv 4095^3 fp16: 1974 MHz; gemm_square.csv
    # 4096^3 fp16: 1606 MHz, power-limited), where the measured ratio is 891.9 / 206.3 = 4.32
    slow = _seconds(_at(h100, 1974e6), _prob(4095, 4095, 4095)) / _seconds(
        _at(h100, 1606e6), _prob(4096, 4096, 4096)
    )
    assert 3.0 < slow < 5.5, f"simulated 4095^3 / 4096^3 = {slow:.2f}, measured 4.32"
    assert family_for(h100, _prob(4095, 4095, 4095, "fp32")) is None  # FP32: CUDA cores


def test_a_single_column_is_a_vector_not_an_unaligned_matrix() -> None:
    """A GEMV with N = 1 (B a k x 1 column, D an m x 1 column) has 1-element row strides,
    which said 'unaligned' and sent it to the fallback at 3.9x the time of its M = 1
    transpose; PyTorch hands such vectors to cuBLAS with their length as leading dimension."""
    h100 = archsim.load_hardware("h100")
    for n1 in (_prob(4096, 1, 4096), _prob(4096, 1, 4096, transpose_a=True)):
        assert family_for(h100, n1).name == "sm90_tma_wgmma"
    m1, n1 = _seconds(h100, _prob(1, 4096, 4096)), _seconds(h100, _prob(4096, 1, 4096))
    # within 20 %: the menu's 128x64 tile has no 64x128 mirror, which only N = 1 can use
    assert abs(n1 / m1 - 1) < 0.2, f"N = 1 {n1 * 1e6:.2f} us vs M = 1 {m1 * 1e6:.2f} us"
    # a single row keeps its stride: an odd k is still an unaligned A
    assert family_for(h100, _prob(1, 4096, 4095)).name == "sm80_unaligned"
    assert family_for(h100, _prob(4096, 2, 4096)).name == "sm80_unaligned"  # 4-byte rows


def test_launch_mode_is_a_config_option() -> None:
    """Eager: the host issues each kernel while the GPU runs the one before, so a kernel takes
    the longer of the host's launch interval and its time in a graph."""
    h100 = archsim.load_hardware("h100")
    assert h100.launch.mode == "graph"
    eager = h100.with_overrides({"launch.mode": "eager"})
    clock = h100.clock.frequency_hz
    small = _prob(128, 128, 128)  # shorter than the host's interval: waits for it
    g, e = run_gemm(h100, small)[0], run_gemm(eager, small)[0]
    assert e.cycles == math.ceil(h100.launch.eager_s * clock - 1e-9)
    assert g.cycles / clock == pytest.approx(2.54e-6, rel=0.1)  # gemm_square.csv 128^3 floor
    big = _prob(4096, 4096, 4096)  # ~200 us: the host is far ahead, nothing changes
    assert run_gemm(eager, big)[0].cycles == run_gemm(h100, big)[0].cycles
    split = _prob(1, 1, 65536)  # unaligned: split-K, a GEMM kernel and its reduction kernel
    gs, es = run_gemm(h100, split)[0], run_gemm(eager, split)[0]
    assert gs.plan.split_k > 1 and es.plan.split_k > 1
    assert es.cycles >= 2 * math.ceil(h100.launch.eager_s * clock - 1e-9)


def test_a_split_k_reduction_waits_on_l2_for_its_loads_and_stores() -> None:
    """The reduction kernel was its launch plus bytes / bandwidth: it read and wrote with no
    latency, where the GEMM's own rounds pay one for loads and one for the epilogue. CUPTI
    (random_gemms_2031/2033 kernels_gemm_random.csv) puts a split-K call's two kernels and
    gaps at 1.2 us more than a one-kernel call's, beyond the reduction's own duration."""
    from archsim.accelerators.tensor_core import _KernelModel, _Memory

    h100 = archsim.load_hardware("h100")
    prob = _prob(64, 192, 14336, "bf16", transpose_a=True)
    run = run_gemm(h100, prob)[0]
    assert run.plan.split_k > 1
    model = _KernelModel(h100, prob, run.plan)
    mem = _Memory(h100, model.miss, run.plan.fill_bytes_per_clock, model.load_hbm)
    partials = prob.m * prob.n * (4 * run.plan.split_k + prob.c_d_bytes)
    body = 2 * h100.l2.hit_latency_cycles + math.ceil(partials / mem.hbm)
    assert model._reduce_kernel_cycles(mem) == max(model.floor, model.launch + body)
    assert run.cycles == model.launch + run.main_cycles + model._reduce_kernel_cycles(mem)


def test_time_at_any_clock_hbm_in_bytes_per_second() -> None:
    """Compute-bound time scales as 1/f; an HBM-bound GEMV barely moves with the SM clock."""
    h100 = archsim.load_hardware("h100")
    lo, hi = _at(h100, 1.2e9), _at(h100, 1.8e9)
    big = _prob(8192, 8192, 8192)
    assert _seconds(lo, big) / _seconds(hi, big) == pytest.approx(1.5, rel=0.05)
    gemv = _prob(1, 28672, 8192, transpose_b=True)  # 470 MB of B: far beyond L2
    ratio = _seconds(lo, gemv) / _seconds(hi, gemv)
    assert 1.0 <= ratio < 1.1, ratio


def test_l2_resident_operands_cost_no_hbm_loads() -> None:
    h100 = archsim.load_hardware("h100")
    small = run_gemm(h100, _prob(8, 4096, 4096, transpose_b=True))[0]
    large = run_gemm(h100, _prob(8, 4096, 11008, transpose_b=True))[0]  # 90 MB > 40 MB
    assert small.hbm_load_bytes == 0
    assert large.hbm_load_bytes >= 4096 * 11008 * 2


def _l2_reference(cfg, prob, plan) -> int:
    """The literal per-CTA count (distinct panels per wave), as l2_traffic once computed it;
    CTAs launched M-tile fastest, or N-tile fastest (``plan.n_fastest``)."""
    slots = cfg.sms * plan.ctas_per_sm
    ids = np.arange(plan.ctas, dtype=np.int64)
    if plan.n_fastest:
        n_idx, rest = ids % plan.grid_n, ids // plan.grid_n
        m_idx, rest = rest % plan.grid_m, rest // plan.grid_m
    else:
        m_idx, rest = ids % plan.grid_m, ids // plan.grid_m
        n_idx, rest = rest % plan.grid_n, rest // plan.grid_n
    s_idx, b_idx = rest % plan.split_k, rest // plan.split_k
    kk = np.minimum(plan.k_slice, prob.k - s_idx * plan.k_slice)
    outer = ((ids // slots) * prob.batch + b_idx) * plan.split_k + s_idx
    total = 0
    for idx, grid, dim, size in ((m_idx, plan.grid_m, prob.m, plan.tile.m),
                                 (n_idx, plan.grid_n, prob.n, plan.tile.n)):  # fmt: skip
        _, first = np.unique(outer * grid + idx, return_index=True)
        total += int((np.minimum(size, dim - idx[first] * size) * kk[first]).sum())
    return max(total, prob.batch * (prob.m + prob.n) * prob.k) * prob.in_bytes


@pytest.mark.parametrize(
    "shape", [(5124, 9124, 4096, 1), (777, 20000, 3333, 3), (512, 8, 500000, 1),
              (16384, 16384, 16384, 1), (3000, 7000, 9000, 2)],
)  # fmt: skip
def test_l2_traffic_closed_form_equals_per_cta_count(shape) -> None:
    m, n, k, b = shape
    for hw in ("v100", "h100"):
        cfg = archsim.load_hardware(hw)
        prob = _prob(m, n, k, batch=b)
        for plan in plans_for(cfg, prob):
            ref = plan
            if plan.stream_k:  # HBM sees the data-parallel order of the same tiles
                steps = -(-prob.k // plan.k_step)
                tiles = plan.grid_m * plan.grid_n * prob.batch
                ref = replace(plan, stream_k=False, ctas=tiles, steps=steps,
                              k_slice=steps * plan.k_step)  # fmt: skip
            assert l2_traffic(cfg, prob, plan)[0] == _l2_reference(cfg, prob, ref), plan.name


def test_huge_shape_does_not_hang() -> None:
    cfg = archsim.load_hardware("h100")
    prob = _prob(10**7, 10**7, 10**7)
    plan = plans_for(cfg, prob)[0]
    hbm, l2 = l2_traffic(cfg, prob, plan)
    assert 2 * 10**14 * 2 <= hbm <= l2


def test_stream_k_plan_evens_out_a_partial_wave() -> None:
    """1536^3 on H100: 144 tiles of 128x128 on 132 SMs; Stream-K CTAs share the 3,456
    k-iterations evenly, with a functional result inside the split-sum bound."""
    h100 = archsim.load_hardware("h100")
    fams = list(h100.library.families)
    i = next(j for j, f in enumerate(fams) if f.name == "sm90_tma_wgmma")
    fams[i] = fams[i].model_copy(update={"stream_k": True})
    lib = h100.library.model_copy(update={"families": fams})
    cfg = h100.model_copy(update={"library": lib})
    prob = _prob(1536, 1536, 1536)
    plans = {p.name: p for p in plans_for(cfg, prob)}
    sk = plans["128x128x64/streamk"]
    assert sk.ctas == 132 and sk.steps == -(-144 * 24 // 132) and sk.split_k == 1
    off = [*fams]
    off[i] = fams[i].model_copy(update={"stream_k": False})
    no_sk = h100.model_copy(update={"library": lib.model_copy(update={"families": off})})
    assert "128x128x64/streamk" not in {p.name for p in plans_for(no_sk, prob)}
    # summed as the Stream-K CTAs sum it: on one SM (3 slots of 64x64 CTAs, so 4 tiles are
    # more than a wave) 128 x 128 x 1024 runs 3 CTAs of 22 of the 64 k-steps
    one_sm = cfg.with_overrides({"sms": 1})
    small = _prob(128, 128, 1024)
    sk = next(p for p in plans_for(one_sm, small) if p.stream_k and p.tile.m == p.tile.n == 64)
    assert (sk.ctas, sk.steps) == (3, 22)
    err, bound = _functional(one_sm, small, sk, seed=0)
    assert err <= bound < 3e-3  # K = 1024, three partial sums


def test_stream_k_gives_each_cta_at_least_the_scheduler_minimum() -> None:
    """CUTLASS 3's sm90 Stream-K scheduler gives a stream-K unit at least
    min_iters_per_sk_unit_ = 8 k-steps: 128^3 fp16 on one SM (4 tiles of 64x64 x 2 k-steps
    on 3 CTA slots) gets one stream-K CTA, not 8 one-step ones, and the data-parallel plan
    wins; on the whole H100 those 4 tiles are under one wave and get no Stream-K plan."""
    from archsim.accelerators.gpu_plan import STREAM_K_MIN_ITERS

    h100 = archsim.load_hardware("h100")
    assert STREAM_K_MIN_ITERS == 8
    for shape, prec in (((128, 128, 128), "fp16"), ((1536,) * 3, "fp16"), ((3072,) * 3, "fp16")):
        for p in plans_for(h100, _prob(*shape, prec)):
            if p.stream_k:
                assert p.steps >= STREAM_K_MIN_ITERS, (shape, prec, p.name, p.steps)
    assert not [p for p in plans_for(h100, _prob(128, 128, 128)) if p.stream_k]
    one_sm = h100.with_overrides({"sms": 1})
    sk = [p for p in plans_for(one_sm, _prob(128, 128, 128)) if p.stream_k]
    assert sk and max(p.ctas for p in sk) == 1, [(p.name, p.ctas) for p in sk]
    best, _ = run_gemm(one_sm, _prob(128, 128, 128))
    assert not best.plan.stream_k, best.plan.kernel


def test_h100_tf32_kernels_keep_k_whole() -> None:
    """cuBLAS's sm90_xmma TF32 kernels ran `segment_k_off` in 26 of 38 traces, 320 x 1920 x
    13376 among them: 64 CTAs of 64x128, each over all of K, 124.6 us
    (benchmarks/measured/h100_2026-11-27/random_gemms_2031). The preset's TF32 family offers
    no Stream-K plan, so the model runs that shape as the trace does: one 64x128 tile per CTA,
    all 418 k-steps. It stays 2.2x fast there (a known gap, RESULTS.md: the one-warpgroup
    kernel's k-step takes ~590 cycles in the trace against the model's 256)."""
    h100 = _at(archsim.load_hardware("h100").model_copy(update={"power": None}), 1.98e9)
    prob = _prob(320, 1920, 13376, "tf32", output="fp32", reads_c=False)
    plans = plans_for(h100, prob)
    assert plans[0].family == "sm90_xmma_tf32"
    assert not any(p.stream_k for p in plans)
    best, _ = run_gemm(h100, prob)
    assert (best.plan.tile.m, best.plan.tile.n, best.plan.split_k) == (64, 128, 1)
    assert best.plan.steps == 13376 // 32 and best.plan.ctas <= h100.sms
    print(f"320x1920x13376 tf32: {_seconds(h100, prob) * 1e6:.1f} us, measured 124.6 us")


def test_h100_stream_k_removes_the_3072_wave_step() -> None:
    """3072^3 fp16 is 288 tiles of 128x256 on 132 SMs (2.2 waves). gemm_square.csv measured
    92.509 us per call; the model (its own clock) must pick a Stream-K plan and land within
    10 % (data-parallel alone gave 108.6 us, +17 %)."""
    h100 = archsim.load_hardware("h100")
    layers = [{"kind": "gemm", "name": "s", "m": 3072, "n": 3072, "k": 3072}]
    wl = WorkloadSpec(schema_version=1, name="t", source="test", layers=layers)
    r = archsim.simulate(h100, wl).to_dataframe().iloc[0]
    assert r.tc_tile.endswith("/streamk"), r.tc_tile
    measured = 92.509e-6
    assert abs(r.time_s / measured - 1) <= 0.10, f"sim {r.time_s * 1e6:.2f} us vs {measured * 1e6}"


def test_h100_int8_family_is_torch_int_mm_without_a_workspace() -> None:
    """torch._int_mm gives cuBLASLt no workspace, so its int8 GEMMs run cutlass_80 kernels:
    mma.sync at FlashAttention-3's 2/3 of the wgmma rate, no multicast, no split-K or
    Stream-K, even for a decode-sized GEMM that would split K elsewhere. Predicted, not
    fitted: gemm_square.csv row 16384^3 int8 (9.698 ms at NVML's 1365 MHz) within 5 %."""
    h100 = archsim.load_hardware("h100").model_copy(update={"power": None})
    fam = next(f for f in h100.library.families if "int8" in f.precisions)
    assert fam.mma_rate_fraction == pytest.approx(2 / 3, abs=1e-3)
    assert not fam.split_k and not fam.stream_k and fam.multicast_ctas == 1
    prob = GemmProblem("g", "gemm", 16384, 16384, 16384, 1, "int8", "int32", output="int32")
    sim = _seconds(_at(h100, 1.365e9), prob)
    assert abs(sim / 9.698e-3 - 1) <= 0.05, f"sim {sim * 1e3:.3f} ms vs measured 9.698 ms"
    decode = GemmProblem("g", "gemm", 16, 4096, 16384, 1, "int8", "int32", output="int32")
    plans = plans_for(h100, decode)
    assert plans and all(p.split_k == 1 for p in plans)
    fp8 = GemmProblem("g", "gemm", 16, 4096, 16384, 1, "fp8_e4m3", "fp32", output="bf16")
    assert any(p.split_k > 1 for p in plans_for(h100, fp8))  # other families still split


def test_h100_unaligned_fill_scales_with_the_widest_load() -> None:
    """The sm80_unaligned fill rates are measured per load width: 7.78 B/clk at 2 bytes
    (4095^3 fp16, 8190-byte rows, on the 256x128 tile cuBLAS runs there), 13.22 at 4 bytes
    (4100^3 fp16, ``fill_bytes_per_clock_by_width``): 4-byte rows (fp16 4094, tf32 4095) fill
    at the 4-byte rate; 8-byte rows (fp16 4100) too, since cuBLAS builds no 8-byte fallback
    kernel (``fill_access_widths``); 16-byte rows take the TMA family. Times at 1974 MHz:
    4095 fp16 stays on its row (0.8919 ms measured, within 3 %) and time falls as the load
    widens."""
    from archsim.accelerators.gpu_plan import widest_load_bytes

    h100 = _at(archsim.load_hardware("h100").model_copy(update={"power": None}), 1.974e9)
    cases = {(4095, "fp16"): 2, (4094, "fp16"): 4, (4100, "fp16"): 8, (4104, "fp16"): 16,
             (4095, "tf32"): 4, (4097, "bf16"): 2}  # fmt: skip
    for (s, prec), width in cases.items():
        assert widest_load_bytes(_prob(s, s, s, prec)) == width, (s, prec)
    fill = {
        key: plans_for(h100, _prob(key[0], key[0], key[0], key[1]))[0].fill_bytes_per_clock
        for key in cases
    }
    assert fill[(4095, "fp16")] == pytest.approx(7.78)
    assert fill[(4094, "fp16")] == pytest.approx(13.22)
    assert fill[(4095, "tf32")] == pytest.approx(13.22)
    assert fill[(4100, "fp16")] == pytest.approx(13.22)
    assert fill[(4104, "fp16")] == pytest.approx(128.0)  # TMA family: the SM's port
    t = {s: _seconds(h100, _prob(s, s, s)) for s in (4095, 4094, 4100, 4104)}
    assert abs(t[4095] / 0.8919e-3 - 1) <= 0.03, f"4095^3 fp16: {t[4095] * 1e3:.4f} ms"
    # per-FLOP time falls with the widest load (sizes differ by < 0.3 %)
    per_flop = {s: t[s] / s**3 for s in t}
    assert per_flop[4095] > 1.4 * per_flop[4094], per_flop
    assert per_flop[4100] == pytest.approx(per_flop[4094], rel=0.01), per_flop
    assert per_flop[4100] > per_flop[4104], per_flop


def test_h100_fallback_kernel_alignment_counts_the_output_rows() -> None:
    """One alignment serves a fallback kernel's operands and epilogue: 704 x 141 x 2392 fp16
    NT has 16-byte A and B rows but 141-element D rows, and cuBLAS ran it with an align1
    kernel (benchmarks/measured/h100_2026-11-27/random_gemms_2031/kernels_gemm_random.csv:
    cutlass_75_tensorop_s1688gemm_f16_128x128_tn_align1, 19.25 us). The model loads 2 bytes
    per access there, and its time comes within 20 % of the row at the measured 1980 MHz (it
    was 56 % fast with 16-byte loads)."""
    from archsim.accelerators.gpu_plan import widest_load_bytes

    h100 = _at(archsim.load_hardware("h100").model_copy(update={"power": None}), 1.98e9)
    nt = _prob(704, 141, 2392, transpose_b=True, output="fp16", reads_c=False)
    assert widest_load_bytes(nt) == 2
    assert widest_load_bytes(_prob(704, 144, 2392, transpose_b=True)) == 16
    assert plans_for(h100, nt)[0].family == "sm80_unaligned"
    t = _seconds(h100, nt)
    assert abs(t / 19.2528e-6 - 1) <= 0.20, f"704x141x2392 NT: {t * 1e6:.2f} us vs 19.25 us"


def test_h100_int8_kernels_count_the_int32_output_rows_in_elements() -> None:
    """cuBLAS's int8 IMMA kernels (CUTLASS 2.x, one alignment for A, B and D in elements:
    ..._tn_align16) need D rows of 16 int32 elements, not 16 bytes: 4160 x 7928 x 384 (A and
    B rows of 384 B, D rows of 7928 = 8 x 991 elements) ran an ..._align4 kernel in 114.8 us
    (random_gemms_2031 in benchmarks/measured/h100_2026-11-27, the model 65.3 us in the
    align16 family, -43 %). Taken by the fallback family at the 4-byte fill rate measured on
    fp16's align2 kernel (13.22 B/clk), it comes within 20 % at the measured 1980 MHz (+16 %;
    at 2x the 2-byte rate it was -1 %: this int8 kernel fills faster than fp16's); with n =
    7936 it stays in the int8 family. The TMA family keeps bytes: an FP8 GEMM with bf16 D rows
    of 7928 elements (15,856 B) stays on wgmma."""
    from archsim.accelerators.gpu_plan import widest_load_bytes

    h100 = _at(archsim.load_hardware("h100").model_copy(update={"power": None}), 1.98e9)
    int8 = {"precision": "int8", "acc": "int32", "transpose_b": True, "output": "int32"}
    odd, even = _prob(4160, 7928, 384, **int8), _prob(4160, 7936, 384, **int8)
    fam = {f.name: f for f in h100.library.families}
    assert fam["sm80_imma_int8"].alignment_in_elements
    assert not fam["sm90_tma_wgmma"].alignment_in_elements
    assert family_for(h100, odd).name == "sm80_unaligned" and widest_load_bytes(odd) == 8
    assert family_for(h100, even).name == "sm80_imma_int8"
    assert plans_for(h100, odd)[0].fill_bytes_per_clock == pytest.approx(13.22)  # 4-byte loads
    measured = pd.read_csv(MEASURED / "random_gemms_2031" / "gemm_random.csv")
    row = measured[(measured.m == 4160) & (measured.n == 7928) & (measured.precision == "int8")]
    t = _seconds(h100, odd)
    assert abs(t / row.time_s.iloc[0] - 1) <= 0.20, f"{t * 1e6:.1f} us vs {row.time_s.iloc[0]}"
    fp8 = _prob(4160, 7928, 384, "fp8_e4m3", transpose_b=True, output="bf16")
    assert family_for(h100, fp8).name == "sm90_tma_wgmma"


def test_h100_small_unaligned_gemms_take_small_fallback_tiles() -> None:
    """64 x 756 x 64 fp16 (1512-byte B and D rows: 4-byte loads) runs cuBLAS's 32x32 wmma
    kernel (random_gemms_2031/kernels_gemm_random.csv: ..._32x32_64x2_nn_align2), which the
    model's menu has: 48 CTAs where one 128x128 tile row would leave 126 SMs idle; measured
    2.84 us per call (gemm_random.csv), the model within 25 % at 1980 MHz (the 128x128 tile
    alone: +69 %; the 64x64 tile, before the 32x32 one was in the menu, +21 %)."""
    h100 = _at(archsim.load_hardware("h100").model_copy(update={"power": None}), 1.98e9)
    prob = _prob(64, 756, 64, output="fp16", reads_c=False)  # torch.mm: beta = 0
    best, _ = run_gemm(h100, prob)
    assert (best.plan.family, best.plan.tile.m, best.plan.tile.n) == ("sm80_unaligned", 32, 32)
    assert best.plan.ctas == 2 * 24
    t = _seconds(h100, prob)
    assert abs(t / 2.840e-6 - 1) <= 0.25, f"64x756x64: {t * 1e6:.2f} us vs 2.84 us"


def test_h100_hbm_streams_at_the_measured_read_bandwidth() -> None:
    """h100.yaml's hbm_achievable_fraction cites device_memory_energy.json memory_eager
    read_4096MB (3090.9 GB/s of the 3352 GB/s peak). A projection at one token streams its
    403 MB weight from HBM: llama70b:qkv m=1 (1 x 24576 x 8192 fp16, B stored n x k) took
    139.951 us in gemm_llm.csv; the model (its own clock) must be within 5 %."""
    h100 = archsim.load_hardware("h100")
    assert h100.hbm_achievable_fraction == pytest.approx(3090.8956 / 3352.0, abs=1e-3)
    layers = [{"kind": "gemm", "name": "q", "m": 1, "n": 24576, "k": 8192, "transpose_b": True,
               "output": "fp16"}]  # fmt: skip
    wl = WorkloadSpec(schema_version=1, name="t", source="test", layers=layers)
    sim = archsim.simulate(h100, wl).to_dataframe().iloc[0].time_s
    assert abs(sim / 139.951e-6 - 1) <= 0.05, f"sim {sim * 1e6:.2f} us vs measured 139.95 us"


def test_stream_k_cut_tiles_matches_a_literal_walk_of_the_units() -> None:
    """Partial tiles of the Stream-K fix-up: a literal walk over the CTAs' iteration ranges,
    counting for every tile the CTAs that touch it, less the one that finishes it."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        tiles, steps = int(rng.integers(1, 40)), int(rng.integers(1, 30))
        total = tiles * steps
        share = int(rng.integers(1, total + 1))
        touching = [set() for _ in range(tiles)]
        for it in range(total):
            touching[it // steps].add(it // share)
        literal = sum(len(t) - 1 for t in touching)
        assert stream_k_cut_tiles(total, steps, share) == literal, (tiles, steps, share)


def test_h100_stream_k_epilogue_is_the_kernel_output_shared_by_its_ctas() -> None:
    """1536^3 fp16: 144 tiles of 128x128, 24 k-steps, on 132 Stream-K CTAs of 27 steps (the
    3,456 iterations fill 128 of them): of the 127 boundaries between CTAs, the 15 at
    multiples of 216 = lcm(24, 27) k-steps fall between tiles and 112 cut one, so the CTAs
    share 144 C reads and D writes (FP32 output, the accumulator type) and 112 FP32 partial
    tiles written and read back."""
    h100 = archsim.load_hardware("h100")
    prob = _prob(1536, 1536, 1536)
    sk = [p for p in plans_for(h100, prob) if p.stream_k and p.tile.m == p.tile.n == 128]
    assert sk and sk[0].ctas == 132 and sk[0].steps == 27
    expected = -(-128 * 128 * (144 * 2 * 4 + 112 * 2 * 4) // 132)
    assert sk[0].epilogue_bytes == expected, (sk[0].epilogue_bytes, expected)


def test_h100_tf32_takes_one_mn_major_operand_fp8_none() -> None:
    """wgmma reads 32- and 8-bit operands from shared memory only K-major, but takes A from
    registers in either layout: a TF32 GEMM with ONE operand stored MN-major runs its Hopper
    kernel as stored, one with both MN-major runs the pre-Hopper family (cuBLAS has no such
    wgmma kernel); an FP8 operand stored MN-major is first rewritten by a transpose kernel."""
    h100 = archsim.load_hardware("h100")
    n = 1024  # above sm80_tf32_small's size rule
    cases = {  # (precision, transpose_a, transpose_b) -> (family, operands rewritten)
        ("tf32", False, False): ("sm90_xmma_tf32", 0),  # NN: B stored k x n
        ("tf32", False, True): ("sm90_xmma_tf32", 0),  # NT: both K-major
        ("tf32", True, True): ("sm90_xmma_tf32", 0),  # TT: A stored k x m
        ("tf32", True, False): ("sm80_unaligned", 0),  # TN: both MN-major
        ("fp16", True, False): ("sm90_tma_wgmma", 0),
        ("fp8_e4m3", False, False): ("sm90_tma_wgmma", 1),
    }
    for (prec, ta, tb), (family, want) in cases.items():
        kw = {"output": "bf16"} if prec.startswith("fp8") else {}
        prob = _prob(n, n, n, prec, transpose_a=ta, transpose_b=tb, **kw)
        plans = plans_for(h100, prob)
        assert {p.family for p in plans} == {family}, (prec, ta, tb)
        assert {p.transposes for p in plans} == {want}, (prec, ta, tb)
        assert {p.transpose_bytes for p in plans} == {want * n * n * prob.in_bytes}


def test_h100_small_tf32_runs_the_ampere_kernels_cublas_picks() -> None:
    """CUPTI traces (benchmarks/measured/h100_2026-11-27/kernels.csv): cuBLAS ran
    cutlass_80_tensorop_s1688gemm kernels for TF32 GEMMs up to 512^3 (128^3 on 64x64 tiles,
    grid [4, 1, 1]) and sm90_xmma_gemm_f32f32_tf32f32 from 10304 x 128 x 768 up; the preset's
    sm80_tf32_small family (max_macs between the two) reproduces every traced choice, in
    every layout traced."""
    h100 = archsim.load_hardware("h100")
    cases = {  # (m, n, k, transpose_a, transpose_b) -> traced family
        (128, 128, 128, False, False): "sm80_tf32_small",
        (256, 256, 256, False, False): "sm80_tf32_small",
        (512, 512, 512, False, False): "sm80_tf32_small",
        (64, 448, 448, False, False): "sm80_tf32_small",
        (128, 384, 1600, True, True): "sm80_tf32_small",  # TT
        (1088, 576, 128, False, True): "sm80_tf32_small",  # NT
        (1024, 1024, 1024, False, False): "sm90_xmma_tf32",
        (10304, 128, 768, False, False): "sm90_xmma_tf32",
    }
    for (m, n, k, ta, tb), family in cases.items():
        prob = _prob(m, n, k, "tf32", transpose_a=ta, transpose_b=tb)
        assert {p.family for p in plans_for(h100, prob)} == {family}, (m, n, k, ta, tb)
    best, _ = run_gemm(h100, _prob(128, 128, 128, "tf32"))
    assert (best.plan.tile.m, best.plan.tile.n, best.plan.ctas) == (64, 64, 4), best.plan.kernel


def test_h100_tf32_grids_of_three_tiles_take_the_split_k_algorithm() -> None:
    """cuBLAS ran every TF32 GEMM of at most three output tiles with a GEMM kernel and a
    splitKreduce kernel (192 x 64 x 44: grid [3, 1, 11]; 64^3: [1, 1, 2]), 128^3 (four tiles)
    with one (``split_k_max_tiles: 3``). The model then times only split plans for those
    grids, whose reduction kernel it charges: 192 x 64 x 44 and 64^3 come within 20 % of the
    random_gemms_2033 rows at 1980 MHz (they were 49 and 43 % fast); a K too short to split
    keeps its one plan; the rule needs split-K."""
    h100 = _at(archsim.load_hardware("h100").model_copy(update={"power": None}), 1.98e9)
    fam = next(f for f in h100.library.families if f.name == "sm80_tf32_small")
    assert fam.split_k_max_tiles == 3
    measured = pd.read_csv(MEASURED / "random_gemms_2033" / "gemm_random.csv")
    for m, n, k, ta in ((192, 64, 44, True), (64, 64, 64, False)):
        prob = _prob(m, n, k, "tf32", transpose_a=ta, transpose_b=True)
        assert all(p.split_k > 1 for p in plans_for(h100, prob)), (m, n, k)
        row = measured[(measured.m == m) & (measured.n == n) & (measured.k == k)]
        t = _seconds(h100, prob)
        assert abs(t / row.time_s.iloc[0] - 1) <= 0.20, (m, n, k, t, row.time_s.iloc[0])
    assert any(p.split_k == 1 for p in plans_for(h100, _prob(128, 128, 128, "tf32")))
    short = _prob(64, 64, 16, "tf32")  # one k-step: nothing to split
    assert {p.split_k for p in plans_for(h100, short)} == {1}
    with pytest.raises(ValueError, match="split_k_max_tiles needs split_k"):
        fam.model_validate({**fam.model_dump(), "split_k": False})


def test_mma_sync_fragment_reads_share_the_shared_memory_port() -> None:
    """A warp-level mma.sync family reads every warp's A and B fragments from shared memory
    each k-step through the 128 B/clock port its fills write through: 512^3 tf32 on 64x64x16
    tiles of 4 warps (2 x 2, 32 x 32 each) reads 4 x (32 + 32) x 16 x 4 B = 16 KB per k-step
    besides its 8 KB fill, so each of its 32 k-steps holds the port at least 192 clocks and
    the kernel is slower than the same plan without the fragment reads."""
    from archsim.accelerators.tensor_core import run_plan

    h100 = archsim.load_hardware("h100")
    prob = _prob(512, 512, 512, "tf32")
    plan = next(
        p
        for p in plans_for(h100, prob)
        if (p.tile.m, p.tile.n, p.k_step, p.split_k) == (64, 64, 16, 1)
    )
    assert plan.family == "sm80_tf32_small"
    assert (plan.stage_bytes, plan.fragment_bytes, plan.steps) == (8192, 16384, 32)
    port = h100.sm_memory.shared_bandwidth_bytes_per_clock
    with_reads = run_plan(h100, prob, plan)
    without = run_plan(h100, prob, replace(plan, fragment_bytes=0))
    assert with_reads.main_cycles >= plan.steps * (8192 + 16384) / port
    assert with_reads.main_cycles > without.main_cycles
    wgmma = plans_for(h100, _prob(1024, 1024, 1024))
    assert all(p.fragment_bytes == 0 for p in wgmma)  # wgmma reads shared memory itself


def test_h100_tf32_layouts_against_the_measured_h100() -> None:
    """benchmarks/measured/h100_2026-11-27/gemm_layouts.csv: at 4096^3 and 8192^3 TF32 NN,
    NT and TT take the same time and TN (both operands MN-major) 1.41x; the model within 5 %
    of every row, TN included."""
    h100 = archsim.load_hardware("h100")
    rows = pd.read_csv(MEASURED / "gemm_layouts.csv")
    rows = rows[(rows.precision == "tf32") & (rows.m >= 4096)]
    assert len(rows) == 8
    for r in rows.itertuples():
        ta, tb = r.a_stored == "k x m", r.b_stored == "n x k"
        model = archsim.simulate(h100, _gemm_workload(r.m, r.n, r.k, "tf32", ta, tb)).total_time_s
        err = model / r.time_s - 1
        print(f"tf32 {r.m}^3 {r.a_stored}/{r.b_stored}: {r.time_s * 1e6:.1f} us measured, "
              f"{model * 1e6:.1f} simulated ({err:+.1%})")  # fmt: skip
        assert abs(err) < 0.05, (r.m, r.a_stored, r.b_stored, err)


def test_fp32_matrix_vector_runs_on_a_skinny_simt_tile() -> None:
    """An FP32 GEMM with m = 1 on the CUDA cores takes CUTLASS's 32-row SIMT tile
    (library.cuda_core_tiles), so it streams its 4-byte weight from HBM at about twice the FP16
    time instead of computing 64-row tiles of padding (1.9x longer again without that tile)."""
    h100 = archsim.load_hardware("h100")
    shape = (1, 8192, 28672)  # llama70b:down at one token, B stored n x k
    fp32 = _prob(*shape, "fp32", transpose_b=True)
    best, _ = run_gemm(h100, fp32)
    assert not best.plan.tensor_ops and (best.plan.tile.m, best.plan.tile.n) == (32, 128)
    t32, t16 = _seconds(h100, fp32), _seconds(h100, _prob(*shape, transpose_b=True))
    weight_s = 8192 * 28672 * 4 / (h100.hbm.bandwidth_bytes_per_s * h100.hbm_achievable_fraction)
    print(f"fp32 {t32 * 1e6:.1f} us, fp16 {t16 * 1e6:.1f} us, weight stream {weight_s * 1e6:.1f}")
    assert weight_s <= t32 <= 1.15 * weight_s
    assert 1.8 <= t32 / t16 <= 2.3
    padded = h100.with_overrides({"library.cuda_core_tiles": []})
    assert _seconds(padded, fp32) > 1.7 * t32
    # only shapes whose short side fits the skinny tile's are offered it
    square, _ = run_gemm(h100, _prob(4096, 4096, 4096, "fp32"))
    assert min(square.plan.tile.m, square.plan.tile.n) >= 64


def test_h100_fallback_kernels_load_at_the_widths_cublas_builds() -> None:
    """cuBLAS's pre-Hopper fallbacks exist for 2-, 4- and 16-byte loads only: 4100^3 fp16
    (8200-byte rows, 8-byte aligned) loads 4 bytes (cutlass_80 ..._align2 in
    benchmarks/measured/h100_2026-11-27/kernels.csv), as 4098^3 does, at the rate measured
    for 4-byte loads on that row (640.997 us at 1965 MHz, gemm_unaligned.csv), not the rate
    of the 8-byte loads its rows would allow. A width between measured ones scales from the
    largest measured width below it (16 bytes: 4x the 4-byte rate), one below them all from
    the smallest (1 byte: half the 2-byte rate)."""
    from archsim.accelerators.gpu_plan import _fill_rate

    h100 = archsim.load_hardware("h100")
    t4100 = _seconds(h100, _prob(4100, 4100, 4100))
    t4098 = _seconds(h100, _prob(4098, 4098, 4098))
    fills = {p.fill_bytes_per_clock for p in plans_for(h100, _prob(4100, 4100, 4100))}
    assert fills == {13.22}  # the 4-byte measured rate (scaled from 2 bytes it was 15.56)
    print(f"4100^3 fp16 {t4100 * 1e6:.1f} us (measured 641.0), 4098^3 {t4098 * 1e6:.1f} us")
    assert t4100 == pytest.approx(t4098, rel=0.02)
    pinned = _at(h100.model_copy(update={"power": None}), 1.965e9)
    mm = _prob(4100, 4100, 4100, output="fp16")  # as `archsim validate` builds the row
    assert _seconds(pinned, mm) == pytest.approx(640.997e-6, rel=0.01)
    fam = next(f for f in h100.library.families if f.name == "sm80_unaligned")
    wide = fam.model_copy(update={"fill_access_widths": None})
    assert _fill_rate(h100, _prob(4104, 4104, 4104), wide) == pytest.approx(13.22 * 4)
    assert _fill_rate(h100, _prob(4095, 4095, 4095, "int8"), wide) == pytest.approx(7.78 / 2)
    with pytest.raises(ValueError, match="needs fill_bytes_per_clock and fill_access_bytes"):
        fam.model_validate({**fam.model_dump(), "fill_access_bytes": None})
