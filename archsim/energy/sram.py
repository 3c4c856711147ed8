"""SRAM access energy and area at 45 nm from the CACTI 7 table.

Capacity: piecewise log-log interpolation over the CACTI rows (1 KB .. 4 MB); outside that range
the end segment's log-log slope is extrapolated.

Width: CACTI gives 64-bit and 256-bit reads. Energy per access is modelled as the power law
``E(w) = E64 * (w / 64) ** alpha`` with ``alpha = log(E256 / E64) / log(4)`` evaluated from the
capacity-interpolated E64 and E256. This reproduces both table widths; any width outside
[64, 256] bits (in particular below 64 bits) is an extrapolation. Writes use the same ``alpha``
applied to the 64-bit write energy (CACTI lists no 256-bit write); because the CACTI 256/64-bit
read ratio dips at 8-16 KB, derived writes wider than 64 bits are not monotone in capacity
there. Area is taken as independent
of word width (the table gives one area per capacity).
"""

from __future__ import annotations

import math

from archsim.energy._interp import check_positive, loglog_interp
from archsim.energy.tables import EnergyTables


def _column(tables: EnergyTables, field: str, size_bytes: float) -> float:
    rows = tables.sram_rows
    caps = [float(r.capacity_bytes) for r in rows]
    return loglog_interp(caps, [getattr(r, field) for r in rows], size_bytes)


def _width_scale(tables: EnergyTables, size: float, width: float) -> float:
    """Multiplier ``(width / 64) ** alpha(size)`` for the width power law."""
    if width == 64:
        return 1.0
    e64 = _column(tables, "read_64b_pj", size)
    e256 = _column(tables, "read_256b_pj", size)
    alpha = math.log(e256 / e64) / math.log(4.0)
    return (width / 64.0) ** alpha


def sram_width_exponent(tables: EnergyTables, size_bytes: float) -> float:
    """Width power-law exponent ``alpha`` (dimensionless) at capacity ``size_bytes``."""
    size = check_positive("size_bytes", size_bytes)
    e64 = _column(tables, "read_64b_pj", size)
    e256 = _column(tables, "read_256b_pj", size)
    return math.log(e256 / e64) / math.log(4.0)


def sram_read_energy_pj(tables: EnergyTables, size_bytes: float, width_bits: float) -> float:
    """Energy (pJ, 45 nm) of one ``width_bits``-wide read from a ``size_bytes`` SRAM."""
    size = check_positive("size_bytes", size_bytes)
    width = check_positive("width_bits", width_bits)
    if width == 256:
        return _column(tables, "read_256b_pj", size)
    return _column(tables, "read_64b_pj", size) * _width_scale(tables, size, width)


def sram_write_energy_pj(tables: EnergyTables, size_bytes: float, width_bits: float) -> float:
    """Energy (pJ, 45 nm) of one ``width_bits``-wide write to a ``size_bytes`` SRAM."""
    size = check_positive("size_bytes", size_bytes)
    width = check_positive("width_bits", width_bits)
    return _column(tables, "write_64b_pj", size) * _width_scale(tables, size, width)


def sram_area_mm2(tables: EnergyTables, size_bytes: float, width_bits: float) -> float:
    """Area (mm^2, 45 nm) of a ``size_bytes`` SRAM; independent of ``width_bits`` (validated)."""
    size = check_positive("size_bytes", size_bytes)
    check_positive("width_bits", width_bits)
    return _column(tables, "area_mm2", size)
