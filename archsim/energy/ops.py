"""Per-operation energies (pJ) at 45 nm for arithmetic, register files and DRAM.

Widths that are not table points are priced by piecewise log-log interpolation through the
table points, extending the end segment's slope outside the tabulated range (extrapolation).
"""

from __future__ import annotations

from collections.abc import Mapping

from archsim.energy._interp import check_bits, loglog_interp
from archsim.energy.tables import EnergyTables

DRAM_KINDS = ("lpddr4", "hbm2", "hbm3", "ddr_eie")


def _interp_bits(points: Mapping[int, float], bits: int) -> float:
    xs = sorted(points)
    return loglog_interp([float(x) for x in xs], [points[x] for x in xs], float(bits))


def int_mult_energy_pj(tables: EnergyTables, bits: int) -> float:
    """Fixed-point multiply energy (pJ, 45 nm) for ``bits``-wide operands.

    Points: 8-bit 0.2 pJ (Horowitz), 16-bit 0.62 pJ (EIE Fig. 10), 32-bit 3.1 pJ (Horowitz);
    16-bit returns the EIE value exactly, other widths use piecewise log-log interpolation.
    """
    check_bits(bits)
    points = dict(tables.int_mult_pj)
    points[16] = tables.eie_pj["int_mult_16b"]
    return _interp_bits(points, bits)


def int_add_energy_pj(tables: EnergyTables, bits: int) -> float:
    """Integer add energy (pJ, 45 nm); log-log through Horowitz 8-bit 0.03 and 32-bit 0.1 pJ."""
    return _interp_bits(tables.int_add_pj, check_bits(bits))


def fp_mult_energy_pj(tables: EnergyTables, bits: int) -> float:
    """Float multiply energy (pJ, 45 nm); Horowitz fp16/fp32 points, log-log otherwise."""
    return _interp_bits(tables.fp_mult_pj, check_bits(bits))


def fp_add_energy_pj(tables: EnergyTables, bits: int) -> float:
    """Float add energy (pJ, 45 nm); Horowitz fp16/fp32 points, log-log otherwise."""
    return _interp_bits(tables.fp_add_pj, check_bits(bits))


def register_file_energy_pj(tables: EnergyTables, bits: int) -> float:
    """Register-file access energy (pJ, 45 nm): EIE's 1 pJ per 32 bits, linear in ``bits``."""
    return tables.eie_pj["register_file_32b"] * check_bits(bits) / 32.0


def dram_energy_pj_per_bit(tables: EnergyTables, kind: str) -> float:
    """DRAM access energy (pJ/bit) for ``kind`` in ``DRAM_KINDS``.

    ``"ddr_eie"`` is EIE's 640 pJ per 32-bit DRAM read divided by 32 (= 20 pJ/bit).
    """
    key = kind.lower() if isinstance(kind, str) else kind
    if key == "ddr_eie":
        return tables.eie_pj["dram_read_32b"] / 32.0
    if key not in DRAM_KINDS or key not in tables.dram_pj_per_bit:
        raise ValueError(f"unknown DRAM kind {kind!r}; allowed kinds: {', '.join(DRAM_KINDS)}")
    return tables.dram_pj_per_bit[key]
