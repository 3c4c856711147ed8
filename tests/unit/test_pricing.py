"""Pricing of EIE actions: table values, overrides, node scaling, static power."""

from __future__ import annotations

import pytest

import archsim
from archsim.energy import load_tables, sram_read_energy_pj
from archsim.energy.pricing import eie_price_list, price_counts

EIE = archsim.load_hardware("eie")


def test_prices_come_from_the_tables():
    t = load_tables()
    p = eie_price_list(EIE)
    assert p.energy_pj["spmat_sram"]["read"] == pytest.approx(32.3)  # CACTI 128 KB, 64-bit
    assert p.energy_pj["pointer_sram"]["read"] == pytest.approx(
        2 * sram_read_energy_pj(t, 16 * 1024, 16)
    )
    assert p.energy_pj["dram"]["read_bytes"] == pytest.approx(8 * 8.0)  # LPDDR4 8 pJ/bit
    assert p.static_power_w["clock_network"] == pytest.approx(64 * 1.874e-3)
    assert p.area_mm2["spmat_sram"] == pytest.approx(64 * 0.430)


def test_component_override_and_node_scaling():
    hw = EIE.with_overrides({"spmat_sram.read_energy_pj": 1.0, "spmat_sram.area_mm2": 0.1})
    p = eie_price_list(hw)
    assert p.energy_pj["spmat_sram"]["read"] == 1.0
    assert p.area_mm2["spmat_sram"] == pytest.approx(6.4)
    p16 = eie_price_list(EIE.with_overrides({"technology.node_nm": 16}))
    p45 = eie_price_list(EIE)
    ratio = p16.energy_pj["arithmetic"]["mac"] / p45.energy_pj["arithmetic"]["mac"]
    assert ratio == pytest.approx(0.174)
    assert p16.area_mm2["spmat_sram"] / p45.area_mm2["spmat_sram"] == pytest.approx(0.19)


def test_price_counts_adds_static_power():
    p = eie_price_list(EIE)
    e = price_counts(p, {"arithmetic": {"mac": 10}}, time_s=1e-6)
    assert e["arithmetic"] == pytest.approx(10 * p.energy_pj["arithmetic"]["mac"])
    assert e["clock_network"] == pytest.approx(64 * 1.874e-3 * 1e-6 * 1e12)
    with pytest.raises(KeyError):
        price_counts(p, {"arithmetic": {"divide": 1}}, 0.0)
