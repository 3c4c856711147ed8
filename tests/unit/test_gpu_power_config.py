"""GPU power block: V/f curve, clock steps, validation, operand activity, board prices."""

from __future__ import annotations

import pytest

import archsim
from archsim.config.gpu_power import SIGNIFICAND_BITS
from archsim.config.workload import toggle_fraction
from archsim.energy.pricing_gpu import gpu_price_list


@pytest.fixture(scope="module")
def h100():
    return archsim.load_hardware("h100")


def test_voltage_is_linear_between_points_and_clamped(h100):
    p = h100.power
    assert p.voltage_v(1.0e9) == pytest.approx(0.70)
    assert p.voltage_v(1.49e9) == pytest.approx(0.70 + 0.30 * 0.49 / 0.98)
    assert p.voltage_v(1.0e8) == pytest.approx(0.65)  # below the curve: its first voltage
    assert p.energy_scale(p.max_clock_hz) == 1.0
    assert p.energy_scale(1.0e9) == pytest.approx(0.49)  # (0.70 / 1.00)^2


def test_clock_search_stays_on_the_grid(h100):
    from archsim.accelerators.gpu_power import _highest_clock

    p = h100.power
    assert _highest_clock(p, lambda f: True, 1.98e9) == 1.98e9
    assert _highest_clock(p, lambda f: True, 1.979e9) == pytest.approx(1.965e9)
    assert _highest_clock(p, lambda f: f <= 1.3901e9, 1.98e9) == pytest.approx(1.38e9)
    lowest = 1.98e9 - 109 * 15e6  # the lowest grid clock at or above the curve's 345 MHz
    assert _highest_clock(p, lambda f: False, 1.98e9) == pytest.approx(lowest)


def test_power_limit_below_static_is_one_clear_error(h100):
    with pytest.raises(archsim.ConfigError) as exc:
        h100.with_overrides({"power.power_limit_w": 100})
    msg = str(exc.value)
    assert "power.power_limit_w" in msg and "allowed: power_limit_w > static_power_w" in msg
    assert "\n" not in msg


def test_vf_curve_must_increase(h100):
    bad = [{"clock_hz": 1e9, "voltage_v": 0.8}, {"clock_hz": 1.98e9, "voltage_v": 0.7}]
    with pytest.raises(archsim.ConfigError, match=r"power.*vf_curve\.1.*strictly increasing"):
        h100.with_overrides({"power.vf_curve": bad})
    with pytest.raises(archsim.ConfigError, match="max_clock_hz=.*outside vf_curve"):
        h100.with_overrides({"power.max_clock_hz": 2.5e9})


def test_unknown_operand_activity_names_field_and_choices(tmp_path):
    wl = tmp_path / "wl.yaml"
    wl.write_text(
        "schema_version: 1\nname: w\nsource: test\nlayers:\n"
        "  - {kind: gemm, name: g, m: 64, n: 64, k: 64, operand_activity: ones}\n"
    )
    with pytest.raises(archsim.ConfigError) as exc:
        archsim.load_workload(wl)
    msg = str(exc.value)
    assert "operand_activity" in msg and "random" in msg and "zeros" in msg


def test_toggle_fraction():
    assert toggle_fraction("random") == 1.0
    assert toggle_fraction("zeros") == 0.0
    assert toggle_fraction(0.37) == 0.37


def test_board_prices_scale_with_significand_width(h100):
    """Per FMA energy: FP16's (Dally's HMMA / 64, less its share of the busy-cycle energy) with
    its multiplier share (Horowitz: fp16 multiply / (multiply + fp32 add) = 0.55) scaled by
    (significand bits / 11)^2 and the rest the same; so BF16 and INT8 (8-bit arrays) cost 0.741x
    FP16 per FMA, FP8 E4M3 0.523x and TF32 (FP16's 11-bit significand) 1x. The busy-cycle
    energy comes on top, per busy tensor-pipe cycle (2048 FP16 FMAs per SM-cycle on H100)."""
    p = h100.power
    fp16_per_cycle = h100.tensor_cores.per_sm * h100.tensor_cores.fp16_fma_per_clock
    assert fp16_per_cycle == 2048
    busy_share = p.tensor_busy_energy_pj_per_cycle / fp16_per_cycle
    assert p.mma_fp16_energy_pj + busy_share == pytest.approx(110 / 64, rel=1e-4)
    assert p.mma_multiplier_fraction == pytest.approx(1.1 / (1.1 + 0.9))
    prices = gpu_price_list(h100)
    tc = prices.energy_pj["tensor_core"]
    assert tc["busy_cycles"] == p.tensor_busy_energy_pj_per_cycle > 0
    fp16 = tc["fma_fp16"]
    assert fp16 == p.mma_fp16_energy_pj
    want = {"bf16": 0.45 + 0.55 * 64 / 121, "int8": 0.45 + 0.55 * 64 / 121,
            "fp8": 0.45 + 0.55 * 16 / 121, "tf32": 0.45 + 0.55 * 2}  # fmt: skip
    assert p.multiplier_lanes == {"tf32": 2.0}  # a TF32 product ties up two FP16 lanes
    for q, ratio in want.items():
        assert tc[f"fma_{q}"] / fp16 == pytest.approx(ratio, rel=1e-9), q
        assert tc[f"pad_fma_{q}"] == tc[f"fma_{q}"]
        assert p.mma_energy_pj(q) == tc[f"fma_{q}"]
    assert set(SIGNIFICAND_BITS) == {"fp16", "bf16", "tf32", "fp8", "int8"}
    assert prices.static_power_w == {"board_static": 126.08}


def test_multiplier_fraction_zero_prices_every_precision_as_fp16(h100):
    flat = h100.with_overrides({"power.mma_multiplier_fraction": 0.0})
    tc = gpu_price_list(flat).energy_pj["tensor_core"]
    for q in SIGNIFICAND_BITS:
        assert tc[f"fma_{q}"] == pytest.approx(h100.power.mma_fp16_energy_pj)


def test_bad_multiplier_fraction_is_a_one_line_error(h100):
    with pytest.raises(archsim.ConfigError) as exc:
        h100.with_overrides({"power.mma_multiplier_fraction": 1.5})
    msg = str(exc.value)
    assert "mma_multiplier_fraction" in msg and "\n" not in msg


def test_no_power_block_keeps_node_scaled_prices():
    v100 = archsim.load_hardware("v100")
    assert v100.power is None
    prices = gpu_price_list(v100)
    assert prices.static_power_w == {} and "fma" in prices.energy_pj["tensor_core"]
