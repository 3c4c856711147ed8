"""Price list of the dense systolic array (``archsim.accelerators.systolic``).

45 nm table values scaled to ``technology.node_nm`` unless a component's override is set:

* ``array.mac``: one ``data_bits`` multiply plus one ``accumulator_bits`` add (or
  ``arithmetic.mac_energy_pj``), plus moving the operands one PE on (two ``data_bits``
  register-file accesses, EIE's 1 pJ / 32 bits).
* ``{ifmap,filter,ofmap}_sram.read`` / ``write``: one ``width_bits`` access of a
  ``size_bytes / banks`` bank (CACTI 7 model), or the SRAM's overrides.
* ``dram.read_bytes`` / ``write_bytes``: 8 x pJ/bit of ``dram.kind`` (not node-scaled).

Area: the three SRAMs by the CACTI model (or ``area_mm2``); the MAC array only when
``arithmetic.area_mm2`` (per PE) is given.
"""

from __future__ import annotations

from archsim.config.systolic import SystolicConfig
from archsim.energy.ops import int_add_energy_pj, int_mult_energy_pj, register_file_energy_pj
from archsim.energy.pricing import PriceList, dram_pj_per_byte, sram_access_pj, sram_area
from archsim.energy.scaling import area_scale, energy_scale
from archsim.energy.tables import EnergyTables, load_tables

__all__ = ["systolic_price_list"]


def systolic_price_list(config: SystolicConfig, tables: EnergyTables | None = None) -> PriceList:
    """Prices (pJ per action) and areas (mm^2) of every systolic-array action."""
    t = tables or load_tables()
    e = energy_scale(t, config.technology.node_nm)
    a = area_scale(t, config.technology.node_nm)
    ar = config.arithmetic
    mac = ar.mac_energy_pj
    if mac is None:
        mac = (int_mult_energy_pj(t, ar.data_bits) + int_add_energy_pj(t, ar.accumulator_bits)) * e
        mac += 2 * register_file_energy_pj(t, ar.data_bits) * e
    energy: dict[str, dict[str, float]] = {"array": {"mac": mac}}
    area: dict[str, float] = {}
    for comp in ("ifmap_sram", "filter_sram", "ofmap_sram"):
        sram = getattr(config, comp)
        read, write = sram_access_pj(t, sram, e)
        energy[comp] = {"read": read, "write": write}
        area[comp] = sram_area(t, sram, a)
    dram = dram_pj_per_byte(t, config.dram)
    energy["dram"] = {"read_bytes": dram, "write_bytes": dram}
    if ar.area_mm2 is not None:
        area["array"] = ar.area_mm2 * config.array.num_pes
    return PriceList(energy_pj=energy, static_power_w={}, area_mm2=area)
