"""Energy/area tables (45 nm reference) and pricing primitives with technology-node scaling."""

from archsim.energy.ops import (
    DRAM_KINDS,
    dram_energy_pj_per_bit,
    fp_add_energy_pj,
    fp_mult_energy_pj,
    int_add_energy_pj,
    int_mult_energy_pj,
    register_file_energy_pj,
)
from archsim.energy.scaling import area_scale, energy_scale
from archsim.energy.sram import (
    sram_area_mm2,
    sram_read_energy_pj,
    sram_width_exponent,
    sram_write_energy_pj,
)
from archsim.energy.tables import EnergyTables, NodeFactors, SramRow, load_tables

__all__ = [
    "DRAM_KINDS",
    "EnergyTables",
    "NodeFactors",
    "SramRow",
    "area_scale",
    "dram_energy_pj_per_bit",
    "energy_scale",
    "fp_add_energy_pj",
    "fp_mult_energy_pj",
    "int_add_energy_pj",
    "int_mult_energy_pj",
    "load_tables",
    "register_file_energy_pj",
    "sram_area_mm2",
    "sram_read_energy_pj",
    "sram_width_exponent",
    "sram_write_energy_pj",
]
