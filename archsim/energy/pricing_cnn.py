"""Price lists for SCNN and its dense baseline DCNN (Parashar et al., ISCA 2017).

Every energy is a 45 nm table value (Horowitz / EIE / CACTI 7, ``archsim/energy/tables``) scaled
to ``technology.node_nm`` by the Stillmaker-Baas factors, unless the component's override field
in the hardware YAML is set; overrides are taken as given (already at the configured node).
DRAM energy is a device figure (pJ/bit) and is not node-scaled, as in ``eie_price_list``.
Neither design has a static-power field, so ``static_power_w`` is empty. Areas are whole-chip
mm^2 (per PE x number of PEs) and are listed only for components with an area model or an
``area_mm2`` override: the paper publishes no per-unit multiplier or crossbar area other than
its own Table 4, so those two appear only when overridden.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.config.components import ArithmeticConfig, CrossbarConfig
from archsim.energy.ops import (
    int_add_energy_pj,
    int_mult_energy_pj,
    register_file_energy_pj,
)
from archsim.energy.pricing import PriceList, dram_pj_per_byte, sram_access_pj, sram_area
from archsim.energy.scaling import area_scale, energy_scale
from archsim.energy.sram import sram_area_mm2
from archsim.energy.tables import EnergyTables, load_tables

if TYPE_CHECKING:  # annotations only: a run imports its own config model
    from archsim.config.scnn import DcnnConfig, ScnnConfig

__all__ = ["dcnn_price_list", "scnn_price_list"]


def _multiply_pj(t: EnergyTables, ar: ArithmeticConfig, escale: float) -> float:
    """One ``data_bits`` multiply; ``mac_energy_pj`` overrides it (the add is priced elsewhere)."""
    if ar.mac_energy_pj is not None:
        return ar.mac_energy_pj
    return int_mult_energy_pj(t, ar.data_bits) * escale


def _wire_pj_per_bit(t: EnergyTables, xbar: CrossbarConfig, escale: float) -> float:
    """Crossbar pJ/bit: the override, else EIE's register-file energy per bit as a stand-in."""
    if xbar.energy_pj_per_bit is not None:
        return xbar.energy_pj_per_bit
    return register_file_energy_pj(t, 1) * escale


def scnn_price_list(config: ScnnConfig, tables: EnergyTables | None = None) -> PriceList:
    """Prices (pJ per action) and whole-chip areas (mm^2) of every SCNN action.

    Energy rules (45 nm tables x node factor unless the named override is set):

    * ``multipliers.multiply``: one ``data_bits`` integer multiply (``arithmetic.mac_energy_pj``
      overrides it; the accumulate is priced by ``accumulator.update``).
    * ``crossbar.transfer``: one product through the F*I x A crossbar = per-bit energy x
      ``crossbar.width_bits``; per bit = ``crossbar.energy_pj_per_bit``, else the register-file
      energy per bit (EIE: 1 pJ / 32 bits) as a stand-in for a short on-PE wire/switch.
    * ``accumulator.update``: a register-file read + write of one ``accumulator_bits`` entry
      plus one ``accumulator_bits`` add, exactly as DCNN's accumulator (a bank of
      ``entries_per_bank`` entries is far below CACTI's smallest 1 KB row, where extrapolation
      gives energies below a register-file access); ``accumulator.update_energy_pj`` overrides.
      ``accumulator.drain`` = one register-file read.
    * ``iaram`` / ``oaram`` ``read`` / ``write``: one ``width_bits`` access to one bank of
      ``size_bytes / banks`` (per-PE SRAM), or the SRAM's read/write overrides.
    * ``weight_fifo.push`` / ``pop``: a register-file access of ``width_bits``, or
      ``weight_fifo.access_energy_pj``.
    * ``ppu.output``: ReLU compare + compression of one output, priced as one
      ``accumulator_bits`` add (stand-in; no override field).
    * ``halo.transfer``: one ``accumulator_bits`` partial sum to a neighbour PE at the crossbar's
      per-bit energy.
    * ``dram.read_bytes`` / ``write_bytes``: 8 x pJ/bit of ``dram.kind`` (or its override).

    Area per PE (x ``num_pes`` for the chip; ``area_mm2`` overrides are per PE instance):
    IARAM and OARAM by CACTI capacity (``banks`` x bank area); weight FIFO as an SRAM of
    ``depth * width_bits / 8`` bytes (stand-in for a register file); accumulator buffers as
    ``banks`` (x2 if double-buffered) SRAM banks of the bank size above; multipliers
    (``arithmetic.area_mm2`` per multiplier, x F*I) and crossbar (``crossbar.area_mm2``) only
    when overridden.
    """
    t = tables or load_tables()
    e = energy_scale(t, config.technology.node_nm)
    a = area_scale(t, config.technology.node_nm)
    n = config.pe_grid.num_pes
    ar = config.arithmetic
    acc = config.accumulator
    acc_bits = ar.accumulator_bits
    bank_bytes = acc.entries_per_bank * acc_bits / 8

    acc_read = register_file_energy_pj(t, acc_bits) * e
    add = int_add_energy_pj(t, acc_bits) * e
    update = acc.update_energy_pj
    if update is None:
        update = 2 * acc_read + add

    wire_bit = _wire_pj_per_bit(t, config.crossbar, e)
    fifo = config.weight_fifo
    fifo_pj = fifo.access_energy_pj
    if fifo_pj is None:
        fifo_pj = register_file_energy_pj(t, fifo.width_bits) * e
    ia_r, ia_w = sram_access_pj(t, config.iaram, e)
    oa_r, oa_w = sram_access_pj(t, config.oaram, e)
    dram = dram_pj_per_byte(t, config.dram)

    energy = {
        "multipliers": {"multiply": _multiply_pj(t, ar, e)},
        "crossbar": {"transfer": wire_bit * config.crossbar.width_bits},
        "accumulator": {"update": update, "drain": acc_read},
        "iaram": {"read": ia_r, "write": ia_w},
        "oaram": {"read": oa_r, "write": oa_w},
        "weight_fifo": {"push": fifo_pj, "pop": fifo_pj},
        "ppu": {"output": add},
        "halo": {"transfer": wire_bit * acc_bits},
        "dram": {"read_bytes": dram, "write_bytes": dram},
    }

    fifo_area = fifo.area_mm2
    if fifo_area is None:
        fifo_area = sram_area_mm2(t, fifo.depth * fifo.width_bits / 8, fifo.width_bits) * a
    acc_area = acc.area_mm2
    if acc_area is None:
        sets = 2 if acc.double_buffered else 1
        acc_area = sram_area_mm2(t, bank_bytes, acc_bits) * acc.banks * sets * a
    area = {
        "iaram": sram_area(t, config.iaram, a) * n,
        "oaram": sram_area(t, config.oaram, a) * n,
        "weight_fifo": fifo_area * n,
        "accumulator": acc_area * n,
    }
    if ar.area_mm2 is not None:
        area["multipliers"] = ar.area_mm2 * config.multipliers.multipliers * n
    if config.crossbar.area_mm2 is not None:
        area["crossbar"] = config.crossbar.area_mm2 * n
    return PriceList(energy_pj=energy, static_power_w={}, area_mm2=area)


def dcnn_price_list(config: DcnnConfig, tables: EnergyTables | None = None) -> PriceList:
    """Prices (pJ per action) and whole-chip areas (mm^2) of every DCNN / DCNN-opt action.

    * ``multipliers.multiply``: one ``data_bits`` integer multiply (or
      ``arithmetic.mac_energy_pj``); ``multipliers.gated``: a MAC skipped by zero-operand gating
      (DCNN-opt), priced at 0 pJ but still counted so utilisation stays visible.
    * ``sram.read`` / ``write``: one ``width_bits`` access. ``sram.size_bytes`` is the chip
      total (Table 5: 2 MB), physically distributed over the PEs (each PE holds its planar tile),
      so an access is priced at a per-PE array of ``size_bytes / num_pes`` (further divided by
      ``banks``), not at one 2 MB array. Read/write overrides replace these.
    * ``accumulator.update``: one ``accumulator_bits`` add plus a register-file read and write
      of ``accumulator_bits`` (no override field).
    * ``dram.read_bytes`` / ``write_bytes``: 8 x pJ/bit of ``dram.kind`` (or its override).

    Area: the SRAM as ``num_pes * banks`` arrays of the per-bank size above (``sram.area_mm2``
    overrides the whole SRAM); multipliers only from ``arithmetic.area_mm2`` (per multiplier).
    """
    t = tables or load_tables()
    e = energy_scale(t, config.technology.node_nm)
    a = area_scale(t, config.technology.node_nm)
    n = config.pe_grid.num_pes
    ar = config.arithmetic
    sram = config.sram
    bank_bytes = sram.size_bytes / (n * sram.banks)
    read, write = sram_access_pj(t, sram, e, bank_bytes)
    acc_bits = ar.accumulator_bits
    update = (int_add_energy_pj(t, acc_bits) + 2 * register_file_energy_pj(t, acc_bits)) * e
    dram = dram_pj_per_byte(t, config.dram)
    energy = {
        "multipliers": {"multiply": _multiply_pj(t, ar, e), "gated": 0.0},
        "sram": {"read": read, "write": write},
        "accumulator": {"update": update},
        "dram": {"read_bytes": dram, "write_bytes": dram},
    }
    area = {"sram": sram_area(t, sram, a, copies=n)}
    if ar.area_mm2 is not None:
        area["multipliers"] = ar.area_mm2 * config.multipliers.multipliers * n
    return PriceList(energy_pj=energy, static_power_w={}, area_mm2=area)
