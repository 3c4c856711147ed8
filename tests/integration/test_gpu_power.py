"""H100 clock under the power limit, board power and energy (issue 16 items 1-2)."""

from __future__ import annotations

import re

import pytest

import archsim
from archsim.config.workload import ConvLayer, GemmLayer, WorkloadSpec


def _run(hw, size, precision="fp16", activity="random", name="g"):
    m, n, k = size
    acc = "int32" if precision == "int8" else "fp32"
    layer = GemmLayer(
        kind="gemm", name=name, m=m, n=n, k=k, precision=precision, accumulate=acc,
        operand_activity=activity,
    )  # fmt: skip
    wl = WorkloadSpec(schema_version=1, name="w", source="test", layers=[layer])
    return archsim.simulate(hw, wl)


@pytest.fixture(scope="module")
def h100():
    return archsim.load_hardware("h100")


def test_light_work_runs_at_max_boost(h100):
    r = _run(h100, (512, 512, 512)).to_dataframe().iloc[0]
    assert r.clock_hz == 1.98e9 and not r.power_limited and r.tc_clock_limit == "max_clock"
    assert 126.08 < r.board_power_w < 700
    # one layer: its average (time rounded to whole periods of the preset clock)
    assert r.power_w == pytest.approx(r.board_power_w, rel=1e-4)


def test_sustained_gemm_is_held_at_the_power_limit(h100):
    r = _run(h100, (4096, 4096, 4096)).to_dataframe().iloc[0]
    assert r.power_limited and r.tc_clock_limit == "power"
    assert 1.0e9 < r.clock_hz < 1.98e9
    assert (1.98e9 - r.clock_hz) % 15e6 == pytest.approx(0, abs=1)  # a supported clock
    assert 680 < r.board_power_w <= 700 * 1.02
    # a higher limit buys a higher clock and a shorter layer
    hot = _run(h100.with_overrides({"power.power_limit_w": 900}), (4096, 4096, 4096))
    row = hot.to_dataframe().iloc[0]
    assert row.clock_hz > r.clock_hz and row.time_s < r.time_s


def test_utilization_counts_the_clock_the_layer_ran_at(h100):
    """cycles count the preset's 1830 MHz (so a run's times add up); utilization is against
    the peak at the layer's own clock, as tc_peak_fraction is: 0.65 against 0.91 before on a
    power-limited 8192^3, and above the true fraction on light work at 1980 MHz."""
    for size in [(8192, 8192, 8192), (512, 512, 512)]:
        r = _run(h100, size).to_dataframe().iloc[0]
        assert r.clock_hz != h100.clock.frequency_hz
        assert r.utilization == pytest.approx(r.tc_peak_fraction, rel=1e-9), size
        assert r.cycles == round(r.tc_sm_cycles * h100.clock.frequency_hz / r.clock_hz)


def test_zero_operands_draw_less_and_clock_higher(h100):
    runs = {a: _run(h100, (4096, 4096, 4096), activity=a) for a in ("random", 0.5, "zeros")}
    rows = {a: r.to_dataframe().iloc[0] for a, r in runs.items()}
    assert rows["zeros"].clock_hz > rows[0.5].clock_hz > rows["random"].clock_hz
    assert rows["zeros"].board_power_w < rows["random"].board_power_w
    assert rows["zeros"].tc_operand_toggle == 0.0
    # nothing toggles in the datapath, but its clocked registers still cost the busy-cycle
    # energy (and data_independent_fraction of the FMAs' random-data price, 0 on H100); the
    # same FMAs and busy cycles, V^2 taken out
    p = h100.power
    per_v2 = {a: r.energy_tensor_core_pj / p.energy_scale(r.clock_hz) for a, r in rows.items()}
    frac, busy_pj = p.data_independent_fraction, p.tensor_busy_energy_pj_per_cycle
    assert 0 <= frac < 0.5 and busy_pj > 0
    tc = runs["random"].layers[0].counts["tensor_core"]
    fma, pad = tc["fma_fp16"], tc.get("pad_fma_fp16", 0)  # pad: tile overhang, zeros anyway
    assert pad < 0.01 * fma
    price = p.mma_fp16_energy_pj
    at = {
        t: price * (fma * (frac + (1 - frac) * t) + pad * frac) + busy_pj * tc["busy_cycles"]
        for t in (1.0, 0.5, 0.0)
    }
    assert per_v2["zeros"] / per_v2["random"] == pytest.approx(at[0.0] / at[1.0], rel=1e-9)
    assert per_v2[0.5] / per_v2["random"] == pytest.approx(at[0.5] / at[1.0], rel=1e-9)


def test_padded_tile_fmas_cost_only_their_data_independent_share(h100):
    """A decode-sized GEMM (m = 8) runs 128-row tiles: 15/16 of the tensor-core FMAs multiply
    the zeros the loads fill in past row 8, so they cost only the busy-cycle energy (and
    data_independent_fraction of the price). The weight-streaming GEMV then holds max boost,
    as the measured rows do (gemm_llm.csv llama70b:down m=8: 1980 MHz; before, the model
    throttled it to 1520)."""
    res = _run(h100, (8, 8192, 28672))
    tc = res.layers[0].counts["tensor_core"]
    assert tc["fma_fp16"] == 8 * 8192 * 28672
    assert tc["pad_fma_fp16"] >= 7 * tc["fma_fp16"]
    row = res.to_dataframe().iloc[0]
    assert row.clock_hz == 1.98e9 and not row.power_limited
    price = h100.power.mma_fp16_energy_pj
    frac = h100.power.data_independent_fraction
    busy = h100.power.tensor_busy_energy_pj_per_cycle * tc["busy_cycles"]
    want = price * (tc["fma_fp16"] + frac * tc["pad_fma_fp16"]) + busy
    assert row.energy_tensor_core_pj == pytest.approx(want, rel=1e-9)


# device_memory_energy.json energy.gemm_fp16_8192_zeros: 1560 MHz, 409.2 W, 0.5739 J per call
MEASURED_FP16_8192_ZEROS = {"clock_mhz": 1560.0, "watts": 409.16, "joules": 0.57386}


def test_fp16_8192_zeros_against_the_measured_h100(h100):
    """The zero-operand row: clock, board power and energy per call within 10 % (the fraction
    of data-independent energy comes from this row; see h100.yaml)."""
    r = _run(h100, (8192, 8192, 8192), activity="zeros").to_dataframe().iloc[0]
    got = {"clock_mhz": r.clock_hz / 1e6, "watts": r.power_w, "joules": r.energy_j}
    for key, ref in MEASURED_FP16_8192_ZEROS.items():
        print(f"{key}: simulated {got[key]:.4g}, measured {ref:.4g}")
        assert got[key] == pytest.approx(ref, rel=0.10)


def test_energy_is_static_times_time_plus_priced_actions(h100):
    res = _run(h100, (2048, 2048, 2048))
    r = res.to_dataframe().iloc[0]
    assert r.energy_board_static_pj == pytest.approx(126.08 * r.time_s * 1e12)
    parts = [c for c in r.index if c.startswith("energy_") and c.endswith("_pj")]
    parts.remove("energy_pj")
    assert sum(r[c] for c in parts) == pytest.approx(r.energy_pj)
    assert r.energy_j == pytest.approx(r.energy_pj * 1e-12)
    assert r.pj_per_flop == pytest.approx(r.energy_pj / (2 * 2048**3))
    board = res.metadata["gpu_board"]
    assert board["energy_j"] == pytest.approx(r.energy_j)
    assert board["average_power_w"] == pytest.approx(r.power_w)
    assert board["clock_hz"] == r.clock_hz


# device_memory_energy.json energy.gemm_fp16_8192: 1380 MHz, 695.2 W, 1.177 J per call
MEASURED_FP16_8192 = {"clock_mhz": 1380.0, "watts": 695.23, "joules": 1.17696}


def test_fp16_8192_against_the_measured_h100(h100):
    """Clock and board power within 10 %, energy per call within 15 % (the issue's goals)."""
    r = _run(h100, (8192, 8192, 8192)).to_dataframe().iloc[0]
    got = {"clock_mhz": r.clock_hz / 1e6, "watts": r.power_w, "joules": r.energy_j}
    for key, tol in (("clock_mhz", 0.10), ("watts", 0.10), ("joules", 0.15)):
        ref = MEASURED_FP16_8192[key]
        print(f"{key}: simulated {got[key]:.4g}, measured {ref:.4g}")
        assert got[key] == pytest.approx(ref, rel=tol)


def test_conv_layers_run_as_their_algorithm_at_a_solved_clock(h100):
    """Convs take the power solve too: their cuDNN-like algorithm's kernels at one clock."""
    big = ConvLayer(kind="conv", name="conv3", n=256, c=256, k=384, h=13, w=13, r=3, s=3, pad=1)
    small = ConvLayer(kind="conv", name="small", n=1, c=64, k=64, h=14, w=14, r=3, s=3, pad=1)
    wl = WorkloadSpec(schema_version=1, name="w", source="test", layers=[big, small])
    res = archsim.simulate(h100, wl)
    b, s = (res.to_dataframe().set_index("layer").loc[n] for n in ("conv3", "small"))
    assert s.clock_hz == 1.98e9 and not s.power_limited and s.tc_conv_algo == "implicit_gemm"
    assert b.power_limited and b.tc_clock_limit == "power" and 1.0e9 < b.clock_hz < 1.98e9
    assert (1.98e9 - b.clock_hz) % 15e6 == pytest.approx(0, abs=1)
    assert 600 < b.board_power_w <= 700 * 1.02
    assert b.cycles == max(1, round(b.tc_sm_cycles * h100.clock.frequency_hz / b.clock_hz))
    assert b.energy_j == pytest.approx(b.power_w * b.time_s, rel=1e-4)
    # conv_alexnet.csv conv3 batch 256 ran at 1770 MHz (NVML board power there is unreliable:
    # 125 us calls, README); the model holds it lower, at the power limit
    print(f"conv3 n=256: simulated {b.clock_hz / 1e6:.0f} MHz, {b.board_power_w:.0f} W; "
          "measured 1770 MHz")  # fmt: skip


def test_fp32_cuda_core_gemms_hold_max_boost_as_their_times_say(h100, h100_dir):
    """FP32 (CUDA-core FFMA) sustained GEMMs of gemm_square.csv: the model keeps ~1980 MHz at
    ~690 W. The 4096 and 6144 rows read 1590 / 1425 MHz, but at those clocks their measured
    times would need 93 % / 106 % of the FFMA peak, where the long 8192 / 12288 rows (1938 /
    1966 MHz) reach 76-79 %: those two clock means are not the clock the GEMMs ran at (NVML
    samples of short windows), so they are not a target. Time and board power are."""
    import csv

    rows = [r for r in csv.DictReader((h100_dir / "gemm_square.csv").open())
            if r["precision"] == "fp32" and int(r["m"]) >= 4096]  # fmt: skip
    assert len(rows) == 4
    for row in rows:
        size = int(row["m"])
        t, mhz, watts = float(row["time_s"]), float(row["sm_mhz"]), float(row["board_w"])
        ffma_use = 2 * size**3 / t / (2 * 132 * 128 * mhz * 1e6)
        r = _run(h100, (size, size, size), precision="fp32").to_dataframe().iloc[0]
        print(f"{size}: measured {t * 1e3:.3f} ms {mhz:.0f} MHz (FFMA use {ffma_use:.2f}) "
              f"{watts:.0f} W; simulated {r.time_s * 1e3:.3f} ms {r.clock_hz / 1e6:.0f} MHz "
              f"{r.board_power_w:.0f} W")  # fmt: skip
        assert r.clock_hz >= 1.95e9
        assert r.time_s == pytest.approx(t, rel=0.06)
        assert r.board_power_w == pytest.approx(watts, rel=0.03)
        assert (ffma_use > 0.9) == (size in (4096, 6144))


def test_a_locked_clock_caps_the_clock_but_not_the_power_limit(h100):
    """nvidia-smi --lock-gpu-clocks: light work runs at the locked clock (not max boost); a
    sustained GEMM whose power-limited clock is below the lock is still held by the limit."""
    light = h100.with_overrides({"power.locked_clock_hz": 1.5e9})
    r = _run(light, (512, 512, 512)).to_dataframe().iloc[0]
    assert r.clock_hz == 1.5e9 and r.tc_clock_limit == "locked_clock" and not r.power_limited
    free = _run(h100, (512, 512, 512)).to_dataframe().iloc[0]
    assert r.time_s > free.time_s and r.board_power_w < free.board_power_w
    big = _run(h100, (8192, 8192, 8192)).to_dataframe().iloc[0]
    above = h100.with_overrides({"power.locked_clock_hz": big.clock_hz + 300e6})
    held = _run(above, (8192, 8192, 8192)).to_dataframe().iloc[0]
    assert held.power_limited and held.clock_hz == big.clock_hz
    with pytest.raises(archsim.ConfigError) as exc:
        h100.with_overrides({"power.locked_clock_hz": 3e9})
    assert "locked_clock_hz" in str(exc.value) and "\n" not in str(exc.value)


def test_an_off_grid_lock_under_the_limit_is_kept_exactly(h100):
    """A lock between two 15 MHz steps (a measured mean such as 1606.36 MHz, as
    `validate --clock measured` pins) runs at exactly that clock when the power allows, and
    is reported as the locked clock, not as power-limited."""
    locked = h100.with_overrides({"power.locked_clock_hz": 1.60636e9, "power.power_limit_w": 1e9})
    r = _run(locked, (4096, 4096, 4096)).to_dataframe().iloc[0]
    assert r.clock_hz == 1.60636e9 and r.tc_clock_limit == "locked_clock" and not r.power_limited


def test_a_locked_clock_picks_the_kernel_it_runs_at(h100):
    """Locked below max boost, with power to spare, a GEMM takes the plan that is fastest at
    the locked clock (it was picked at max boost and kept: 22 % slow for this split-K GEMV)."""
    layer = (128, 128, 131072)
    for precision in ("tf32", "fp16"):
        locked = h100.with_overrides(
            {"power.locked_clock_hz": 1.2e9, "power.power_limit_w": 1e6,
             "power.tensor_current_clock_hz": None}
        )  # fmt: skip
        fixed = h100.with_overrides({"power": None, "clock.frequency_hz": 1.2e9})
        a = _run(locked, layer, precision).layers[0]
        b = _run(fixed, layer, precision).layers[0]
        assert a.extras["clock_hz"] == 1.2e9
        assert a.extras["tc_tile"] == b.extras["tc_tile"]
        assert a.time_s == pytest.approx(b.time_s, rel=1e-4)


def test_a_limit_the_lowest_clock_cannot_meet_is_a_warning(h100):
    """A 200 W limit under a sustained GEMM: even the V/F curve's lowest clock draws more, so
    the layer runs there and says so; the stock limit warns of nothing."""
    r = _run(h100.with_overrides({"power.power_limit_w": 200}), (4096, 4096, 4096))
    extras = r.layers[0].extras
    assert extras["clock_hz"] == h100.power.min_clock_hz and extras["board_power_w"] > 200 * 1.02
    assert len(r.warnings) == 1 and "exceeds power.power_limit_w (200 W)" in r.warnings[0]
    assert "power.vf_curve.0.clock_hz" in r.warnings[0]
    assert _run(h100, (4096, 4096, 4096)).warnings == ()


def test_layers_over_the_limit_make_one_warning_not_one_each(h100):
    """ResNet-50 at batch 256 under a 150 W limit printed 53 warnings, one per layer, that
    differed only in the layer and its watts."""
    layers = [
        GemmLayer(kind="gemm", name=f"g{i}", m=4096, n=4096, k=s, precision="fp16")
        for i, s in enumerate((4096, 2048, 4096, 1024))
    ]
    wl = WorkloadSpec(schema_version=1, name="w", source="test", layers=layers)
    r = archsim.simulate(h100.with_overrides({"power.power_limit_w": 200}), wl)
    (line,) = r.warnings
    assert line.startswith("layer 'g0', layer 'g1', layer 'g2' and 1 more: board power "), line
    assert "exceeds power.power_limit_w (200 W)" in line
    # the watts differ by layer: shown as their range, not as the first layer's figure
    watts = [float(x) for x in re.search(r"board power ([\d.]+)-([\d.]+) W", line).groups()]
    assert watts[0] < watts[1] and line.endswith("(each figure's range over the 4 layers)"), line


def test_merging_keeps_single_and_identical_warnings_as_they_were():
    from archsim.simulate import merge_layer_warnings

    same = ["layer a: data: not read", "layer b: data: not read", "no layer here"]
    assert merge_layer_warnings(same) == ["layer a, layer b: data: not read", "no layer here"]
    assert merge_layer_warnings(["layer 'x': 3 W over"]) == ["layer 'x': 3 W over"]
    assert merge_layer_warnings(["plain", "plain"]) == ["plain", "plain"]  # not "layer : plain"
    # a layer's own repeat stays apart; a text of no layer never joins a layer's group
    assert merge_layer_warnings(["layer a: x 1", "layer a: x 2"]) == [
        "layer a: x 1",
        "layer a: x 2",
    ]
    assert merge_layer_warnings(["data: no", "layer a: data: no"]) == [
        "data: no",
        "layer a: data: no",
    ]
    assert merge_layer_warnings(["layer a: 1 off", "layer b: 2 on"]) == [
        "layer a: 1 off",
        "layer b: 2 on",
    ]
    # figures that differ show their lowest-highest range, equal ones stay single
    merged = [
        "layer a: 227 W at 345 MHz",
        "layer b: 215.5 W at 345 MHz",
        "layer c: 1e3 W at 345 MHz",
    ]
    assert merge_layer_warnings(merged) == [
        "layer a, layer b, layer c: 215.5-1e3 W at 345 MHz (each figure's range over the 3 layers)"
    ]


def test_split_k_factors_without_1_are_refused(h100):
    with pytest.raises(archsim.ConfigError) as exc:
        h100.with_overrides({"library.split_k_factors": [2, 4, 8]})
    assert "library.split_k_factors" in str(exc.value) and "lacks 1" in str(exc.value)


@pytest.mark.parametrize("hz", [1.0, 1e6, 3e9])
def test_the_nominal_clock_of_a_powered_gpu_lies_on_its_curve(h100, hz):
    """`clock.frequency_hz: 1` ran ResNet-50 in 53 s instead of 345 us: the layers ran at the
    power model's clock, then each was rounded up to whole periods of the 1 Hz nominal
    clock."""
    with pytest.raises(archsim.ConfigError) as exc:
        h100.with_overrides({"clock.frequency_hz": hz})
    line = str(exc.value)
    assert "\n" not in line and f"clock.frequency_hz: {hz:g} Hz lies outside power.vf_curve" in line
    assert "allowed: a clock in 3.45e+08 .. 1.98e+09 Hz" in line, line
    # inside the curve it is only the unit cycles are counted in: the time does not move
    wl = WorkloadSpec(schema_version=1, name="w", source="test",
                      layers=[GemmLayer(kind="gemm", name="g", m=512, n=512, k=512)])  # fmt: skip
    a = archsim.simulate(h100, wl).total_time_s
    b = archsim.simulate(h100.with_overrides({"clock.frequency_hz": 1.0e9}), wl).total_time_s
    assert b == pytest.approx(a, rel=1e-4)
    # without a power block the clock is the SM clock, and any positive one is allowed
    assert h100.with_overrides({"power": None, "clock.frequency_hz": hz}).clock.frequency_hz == hz
