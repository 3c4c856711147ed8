"""Tests for technology-node scaling factors."""

from __future__ import annotations

from itertools import pairwise

import pytest

from archsim.energy import area_scale, energy_scale, load_tables

T = load_tables()
EXPECTED = {
    65: (1.24, 1.50),
    45: (1.0, 1.0),
    40: (0.87, 0.79),
    32: (0.66, 0.46),
    28: (0.51, 0.38),
    20: (0.22, 0.21),
    16: (0.174, 0.19),
    14: (0.139, 0.17),
    12: (0.128, 0.135),
    10: (0.118, 0.10),
    7: (0.094, 0.059),
}


@pytest.mark.parametrize(("node", "factors"), sorted(EXPECTED.items()))
def test_node_factors(node: int, factors: tuple[float, float]) -> None:
    assert (energy_scale(T, node), area_scale(T, node)) == factors


def test_16nm_and_reference() -> None:
    assert energy_scale(T, 16) == 0.174
    assert area_scale(T, 16) == 0.19
    assert T.reference_node_nm == 45
    assert set(T.node_factors) == set(EXPECTED)


def test_factors_decrease_with_node() -> None:
    nodes = sorted(EXPECTED, reverse=True)
    energies = [energy_scale(T, n) for n in nodes]
    areas = [area_scale(T, n) for n in nodes]
    assert all(b < a for a, b in pairwise(energies))
    assert all(b < a for a, b in pairwise(areas))


@pytest.mark.parametrize("node", [22, 5, 0, 16.0, True, "16"])
@pytest.mark.parametrize("fn", [energy_scale, area_scale])
def test_unknown_node_lists_allowed(fn, node) -> None:
    with pytest.raises(ValueError, match=r"allowed nodes \(nm\): 65, 45, 40, .*, 10, 7"):
        fn(T, node)


def test_eie_clock_network_costs_energy_per_cycle_at_any_clock_and_node() -> None:
    """Table II's clock-network watts are a 45 nm, 800 MHz figure: C V^2 per cycle. Charged
    as fixed watts, a 1.6 GHz EIE spent half the clock energy per cycle and a 16 nm one the
    45 nm figure (39.7 % of its energy)."""
    import archsim
    from archsim.energy.pricing import eie_price_list

    hw = archsim.load_hardware("eie")
    sp = hw.static_power
    assert (sp.reference_clock_hz, sp.reference_node_nm) == (800e6, 45)
    per_pe = sp.clock_network_w_per_pe / 800e6 * 1e12  # pJ per cycle per PE at 45 nm

    def pj_per_cycle(cfg) -> float:
        watts = eie_price_list(cfg).static_power_w["clock_network"]
        return watts / cfg.clock.frequency_hz * 1e12 / cfg.pe_array.num_pes

    assert pj_per_cycle(hw) == pytest.approx(per_pe, rel=1e-12)
    assert pj_per_cycle(hw.with_overrides({"clock.frequency_hz": 1.6e9})) == pytest.approx(
        per_pe, rel=1e-12
    )
    t = load_tables()
    at16 = pj_per_cycle(hw.with_overrides({"technology.node_nm": 16}))
    assert at16 == pytest.approx(per_pe * energy_scale(t, 16), rel=1e-12)
    fixed = hw.with_overrides(
        {"static_power.reference_clock_hz": None, "static_power.reference_node_nm": None,
         "clock.frequency_hz": 1.6e9}
    )  # fmt: skip
    assert pj_per_cycle(fixed) == pytest.approx(per_pe / 2, rel=1e-12)  # the old fixed watts
