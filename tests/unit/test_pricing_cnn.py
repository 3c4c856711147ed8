"""Pricing of SCNN and DCNN actions: coverage, table values, node scaling, overrides, area."""

from __future__ import annotations

import pytest

import archsim
from archsim.energy import (
    int_add_energy_pj,
    int_mult_energy_pj,
    load_tables,
    register_file_energy_pj,
    sram_area_mm2,
    sram_read_energy_pj,
    sram_write_energy_pj,
)
from archsim.energy.pricing import price_counts
from archsim.energy.pricing_cnn import dcnn_price_list, scnn_price_list

SCNN = archsim.load_hardware("scnn")
DCNN = archsim.load_hardware("dcnn")
E16, A16 = 0.174, 0.19

SCNN_COUNTS = {
    "multipliers": {"multiply": 1000},
    "crossbar": {"transfer": 1000},
    "accumulator": {"update": 1000, "drain": 100},
    "iaram": {"read": 50, "write": 40},
    "oaram": {"read": 30, "write": 20},
    "weight_fifo": {"push": 10, "pop": 10},
    "ppu": {"output": 100},
    "halo": {"transfer": 5},
    "dram": {"read_bytes": 4096, "write_bytes": 2048},
}
DCNN_COUNTS = {
    "multipliers": {"multiply": 1000, "gated": 500},
    "sram": {"read": 200, "write": 100},
    "accumulator": {"update": 1000},
    "dram": {"read_bytes": 4096, "write_bytes": 2048},
}


def _dot(prices: dict[str, dict[str, float]], counts: dict[str, dict[str, int]]) -> float:
    return sum(n * prices[c][a] for c, acts in counts.items() for a, n in acts.items())


@pytest.mark.parametrize(
    ("fn", "hw", "counts"),
    [(scnn_price_list, SCNN, SCNN_COUNTS), (dcnn_price_list, DCNN, DCNN_COUNTS)],
)
def test_every_emitted_action_is_priced(fn, hw, counts):
    p = fn(hw)
    e = price_counts(p, counts, time_s=1e-3)
    assert set(e) == set(counts)  # no static power
    assert p.static_power_w == {}
    assert sum(e.values()) == pytest.approx(_dot(p.energy_pj, counts))
    assert all(x > 0 for c, acts in p.energy_pj.items() for a, x in acts.items() if a != "gated")


def test_scnn_prices_come_from_the_tables():
    t = load_tables()
    p = scnn_price_list(SCNN).energy_pj
    assert p["multipliers"]["multiply"] == pytest.approx(0.62 * E16)  # EIE 16-bit multiply
    per_bit = register_file_energy_pj(t, 1) * E16
    assert p["crossbar"]["transfer"] == pytest.approx(per_bit * 24)
    assert p["halo"]["transfer"] == pytest.approx(per_bit * 24)
    rd = register_file_energy_pj(t, 24)  # tiny banks: register-file access, as DCNN's
    add = int_add_energy_pj(t, 24)
    assert p["accumulator"]["update"] == pytest.approx((2 * rd + add) * E16)
    assert p["accumulator"]["drain"] == pytest.approx(rd * E16)
    dcnn = dcnn_price_list(DCNN).energy_pj
    assert p["accumulator"]["update"] == pytest.approx(dcnn["accumulator"]["update"])
    assert p["iaram"]["read"] == pytest.approx(sram_read_energy_pj(t, 10240, 64) * E16)
    assert p["oaram"]["write"] == pytest.approx(sram_write_energy_pj(t, 10240, 64) * E16)
    assert p["weight_fifo"]["pop"] == pytest.approx(80 / 32 * E16)  # 1 pJ per 32 bits
    assert p["ppu"]["output"] == pytest.approx(add * E16)
    assert p["dram"]["read_bytes"] == pytest.approx(8 * 8.0)  # LPDDR4, not node-scaled


def test_dcnn_prices_come_from_the_tables():
    t = load_tables()
    p = dcnn_price_list(DCNN).energy_pj
    assert p["multipliers"]["multiply"] == pytest.approx(int_mult_energy_pj(t, 16) * E16)
    assert p["multipliers"]["gated"] == 0.0
    # 2 MB over 64 PEs: a 32 KB CACTI row, 64-bit access
    assert p["sram"]["read"] == pytest.approx(17.0 * E16)
    assert p["sram"]["write"] == pytest.approx(15.4 * E16)
    expected = (int_add_energy_pj(t, 24) + 2 * register_file_energy_pj(t, 24)) * E16
    assert p["accumulator"]["update"] == pytest.approx(expected)
    opt = dcnn_price_list(DCNN.with_overrides({"optimized": True}))
    assert opt.energy_pj["multipliers"]["gated"] == 0.0


@pytest.mark.parametrize(
    ("fn", "hw", "comp", "action"),
    [
        (scnn_price_list, SCNN, "multipliers", "multiply"),
        (scnn_price_list, SCNN, "accumulator", "update"),
        (scnn_price_list, SCNN, "iaram", "read"),
        (scnn_price_list, SCNN, "crossbar", "transfer"),
        (dcnn_price_list, DCNN, "sram", "write"),
        (dcnn_price_list, DCNN, "accumulator", "update"),
    ],
)
def test_node_scaling_16_vs_45(fn, hw, comp, action):
    p16 = fn(hw).energy_pj[comp][action]
    p45 = fn(hw.with_overrides({"technology.node_nm": 45})).energy_pj[comp][action]
    assert p16 / p45 == pytest.approx(E16)


def test_dram_is_not_node_scaled():
    p45 = scnn_price_list(SCNN.with_overrides({"technology.node_nm": 45}))
    assert p45.energy_pj["dram"] == scnn_price_list(SCNN).energy_pj["dram"]


def test_scnn_overrides_are_respected():
    hw = SCNN.with_overrides(
        {
            "arithmetic.mac_energy_pj": 0.5,
            "arithmetic.area_mm2": 0.0005,
            "crossbar.energy_pj_per_bit": 0.01,
            "crossbar.area_mm2": 0.026,
            "accumulator.update_energy_pj": 0.3,
            "accumulator.area_mm2": 0.036,
            "iaram.read_energy_pj": 2.0,
            "iaram.write_energy_pj": 3.0,
            "iaram.area_mm2": 0.02,
            "weight_fifo.access_energy_pj": 0.7,
            "weight_fifo.area_mm2": 0.004,
            "dram.energy_pj_per_bit": 4.0,
        }
    )
    p = scnn_price_list(hw)
    e = p.energy_pj
    assert e["multipliers"]["multiply"] == 0.5
    assert e["crossbar"]["transfer"] == pytest.approx(0.01 * 24)
    assert e["halo"]["transfer"] == pytest.approx(0.01 * 24)
    assert e["accumulator"]["update"] == 0.3
    assert e["iaram"] == {"read": 2.0, "write": 3.0}
    assert e["weight_fifo"] == {"push": 0.7, "pop": 0.7}
    assert e["dram"]["write_bytes"] == pytest.approx(32.0)
    assert p.area_mm2["multipliers"] == pytest.approx(0.0005 * 16 * 64)
    assert p.area_mm2["crossbar"] == pytest.approx(0.026 * 64)
    assert p.area_mm2["accumulator"] == pytest.approx(0.036 * 64)
    assert p.area_mm2["iaram"] == pytest.approx(0.02 * 64)
    assert p.area_mm2["weight_fifo"] == pytest.approx(0.004 * 64)
    # no override -> no multiplier/crossbar area
    assert {"multipliers", "crossbar"}.isdisjoint(scnn_price_list(SCNN).area_mm2)


def test_dcnn_overrides_are_respected():
    hw = DCNN.with_overrides(
        {
            "arithmetic.mac_energy_pj": 0.4,
            "sram.read_energy_pj": 5.0,
            "sram.write_energy_pj": 6.0,
            "sram.area_mm2": 5.0,
            "dram.energy_pj_per_bit": 2.0,
        }
    )
    p = dcnn_price_list(hw)
    assert p.energy_pj["multipliers"] == {"multiply": 0.4, "gated": 0.0}
    assert p.energy_pj["sram"] == {"read": 5.0, "write": 6.0}
    assert p.energy_pj["dram"]["read_bytes"] == pytest.approx(16.0)
    assert p.area_mm2["sram"] == 5.0


def test_scnn_area():
    t = load_tables()
    area = scnn_price_list(SCNN).area_mm2
    assert area["iaram"] == pytest.approx(sram_area_mm2(t, 10240, 64) * A16 * 64)
    assert area["oaram"] == pytest.approx(area["iaram"])
    assert area["weight_fifo"] == pytest.approx(sram_area_mm2(t, 500, 80) * A16 * 64)
    acc = sram_area_mm2(t, 96, 24) * 32 * 2 * A16 * 64
    assert area["accumulator"] == pytest.approx(acc)
    single = scnn_price_list(SCNN.with_overrides({"accumulator.double_buffered": False}))
    assert single.area_mm2["accumulator"] == pytest.approx(acc / 2)
    a45 = scnn_price_list(SCNN.with_overrides({"technology.node_nm": 45})).area_mm2
    assert area["iaram"] / a45["iaram"] == pytest.approx(A16)


def test_dcnn_area_is_64_per_pe_arrays():
    t = load_tables()
    area = dcnn_price_list(DCNN).area_mm2
    assert area == {"sram": pytest.approx(sram_area_mm2(t, 32768, 64) * 64 * A16)}
    assert area["sram"] == pytest.approx(0.095 * 64 * A16)
