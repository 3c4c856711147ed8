"""Prices action counts: energy per (component, action) and area per component.

Simulators count; this module prices. Every figure comes from the 45 nm tables (scaled to the
configured node) unless the hardware YAML overrides it on the component.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from archsim.config.components import DramConfig, SramConfig
from archsim.energy.ops import (
    dram_energy_pj_per_bit,
    int_add_energy_pj,
    int_mult_energy_pj,
    register_file_energy_pj,
)
from archsim.energy.scaling import area_scale, energy_scale
from archsim.energy.sram import sram_area_mm2, sram_read_energy_pj, sram_write_energy_pj
from archsim.energy.tables import EnergyTables, load_tables

if TYPE_CHECKING:  # annotations only: a run imports its own config model
    from archsim.config.eie import EieConfig

__all__ = [
    "PriceList",
    "dram_pj_per_byte",
    "eie_price_list",
    "price_counts",
    "sram_access_pj",
    "sram_area",
]


@dataclass(frozen=True)
class PriceList:
    """pJ per action, static power (W) and area (mm^2) per component, for one hardware config."""

    energy_pj: dict[str, dict[str, float]]
    static_power_w: dict[str, float]
    area_mm2: dict[str, float]


def price_counts(
    prices: PriceList,
    counts: dict[str, dict[str, int]],
    time_s: float,
    scale: dict[str, dict[str, float]] | None = None,
) -> dict[str, float]:
    """Energy in pJ per component: dynamic (counts x prices x ``scale``, default 1) plus static
    power x ``time_s``."""
    out: dict[str, float] = {}
    scale = scale or {}
    for comp, actions in counts.items():
        table = prices.energy_pj.get(comp)
        if table is None:
            raise KeyError(f"no prices for component {comp!r}")
        total = 0.0
        for action, n in actions.items():
            if action not in table:
                raise KeyError(f"no price for {comp}.{action}")
            total += n * table[action] * scale.get(comp, {}).get(action, 1.0)
        out[comp] = total
    for comp, watts in prices.static_power_w.items():
        out[comp] = out.get(comp, 0.0) + watts * time_s * 1e12
    return out


def sram_access_pj(
    tables: EnergyTables,
    sram: SramConfig,
    scale: float,
    bank_bytes: float | None = None,
    banks_per_access: int = 1,
) -> tuple[float, float]:
    """(read, write) pJ of one ``width_bits`` access to one bank (``bank_bytes``, default
    ``size_bytes / banks``), times ``banks_per_access``; the SRAM's overrides win."""
    size = sram.size_bytes / sram.banks if bank_bytes is None else bank_bytes
    read = sram.read_energy_pj
    write = sram.write_energy_pj
    if read is None:
        read = sram_read_energy_pj(tables, size, sram.width_bits) * scale
    if write is None:
        write = sram_write_energy_pj(tables, size, sram.width_bits) * scale
    return read * banks_per_access, write * banks_per_access


def sram_area(tables: EnergyTables, sram: SramConfig, ascale: float, copies: int = 1) -> float:
    """Area of ``copies`` instances of ``sram`` split in ``copies * banks`` banks (or the
    ``area_mm2`` override, which covers all of them), mm^2."""
    if sram.area_mm2 is not None:
        return sram.area_mm2
    bank = sram.size_bytes / (copies * sram.banks)
    return sram_area_mm2(tables, bank, sram.width_bits) * copies * sram.banks * ascale


def dram_pj_per_byte(tables: EnergyTables, dram: DramConfig) -> float:
    """8 x pJ/bit of ``dram.kind`` (or its override); device energy, not node-scaled."""
    bit = dram.energy_pj_per_bit
    if bit is None:
        bit = dram_energy_pj_per_bit(tables, dram.kind)
    return 8 * bit


def eie_price_list(config: EieConfig, tables: EnergyTables | None = None) -> PriceList:
    """Prices of every EIE action at the configured node.

    pointer read = one read in each of the two banks; MAC = data_bits multiply +
    accumulator_bits add; FIFO push/pop = a register-file access of the entry width; LNZD = one
    data_bits comparison (priced as an add) per activation examined.
    """
    t = tables or load_tables()
    e = energy_scale(t, config.technology.node_nm)
    a = area_scale(t, config.technology.node_nm)
    n = config.pe_array.num_pes
    spm_r, _ = sram_access_pj(t, config.spmat_sram, e)
    ptr_r, _ = sram_access_pj(t, config.pointer_sram, e, banks_per_access=2)
    act_r, act_w = sram_access_pj(t, config.activation_sram, e)
    ar = config.arithmetic
    mac = ar.mac_energy_pj
    if mac is None:
        mac = (int_mult_energy_pj(t, ar.data_bits) + int_add_energy_pj(t, ar.accumulator_bits)) * e
    fifo = config.activation_fifo
    fifo_pj = fifo.access_energy_pj
    if fifo_pj is None:
        fifo_pj = register_file_energy_pj(t, fifo.width_bits) * e
    lnzd = config.lnzd.examine_energy_pj
    if lnzd is None:
        lnzd = int_add_energy_pj(t, ar.data_bits) * e
    dram = dram_pj_per_byte(t, config.dram)
    energy = {
        "spmat_sram": {"read": spm_r},
        "pointer_sram": {"read": ptr_r},
        "activation_sram": {"read": act_r, "write": act_w, "scan_read": act_r},
        "arithmetic": {"mac": mac},
        "activation_fifo": {"push": fifo_pj, "pop": fifo_pj},
        "lnzd": {"examine": lnzd},
        "dram": {"read_bytes": dram, "write_bytes": dram},
    }
    sp = config.static_power
    clock_w = sp.clock_network_w_per_pe * n
    if sp.reference_clock_hz is not None:  # C V^2 per cycle: the power follows the clock
        clock_w *= config.clock.frequency_hz / sp.reference_clock_hz
    if sp.reference_node_nm is not None:
        clock_w *= e / energy_scale(t, sp.reference_node_nm)
    static = {"clock_network": clock_w, "leakage": sp.leakage_w_per_pe * n}
    area = {
        "spmat_sram": sram_area(t, config.spmat_sram, a) * n,
        "pointer_sram": sram_area(t, config.pointer_sram, a) * n,
        "activation_sram": sram_area(t, config.activation_sram, a) * n,
    }
    for comp, cfg in (("arithmetic", ar), ("activation_fifo", fifo)):
        if cfg.area_mm2 is not None:
            area[comp] = cfg.area_mm2 * n
    return PriceList(energy_pj=energy, static_power_w=static, area_mm2=area)
