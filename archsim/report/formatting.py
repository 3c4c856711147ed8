"""Numbers for humans: thousands separators, a few significant digits, readable units.

Inputs are archsim's internal units (seconds, picojoules, watts); outputs are display strings.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

__all__ = [
    "MISSING",
    "fmt_int",
    "fmt_num",
    "fmt_value",
    "fmt_percent",
    "fmt_time",
    "fmt_energy",
    "fmt_power",
    "si_format",
    "energy_unit",
    "ENERGY_UNITS",
]

#: Shown for missing / NaN values.
MISSING = "\u2013"
_MICRO = "\u00b5"
#: Picojoules per unit, largest first.
ENERGY_UNITS: tuple[tuple[str, float], ...] = (
    ("J", 1e12),
    ("mJ", 1e9),
    (f"{_MICRO}J", 1e6),
    ("nJ", 1e3),
    ("pJ", 1.0),
)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, Real) and math.isnan(float(value)))


def fmt_int(value: Any) -> str:
    """Integer with thousands separators: ``23,022``."""
    if _is_missing(value):
        return MISSING
    return f"{round(float(value)):,}"


def fmt_num(value: Any, digits: int = 3) -> str:
    """A float: separators from 1000 up, else ``digits`` significant digits (``0.968``)."""
    if _is_missing(value):
        return MISSING
    v = float(value)
    if math.isinf(v):
        return "\u221e" if v > 0 else "-\u221e"
    if v == 0.0:
        return "0"
    if abs(v) >= 10**digits:
        return f"{v:,.0f}"
    if abs(v) < 1e-3:
        return f"{v:.{digits - 1}e}"
    text = f"{v:#.{digits}g}"
    return text[:-1] if text.endswith(".") else text


def fmt_value(value: Any) -> str:
    """Any table cell: bools as yes/no, integers with separators, floats via :func:`fmt_num`."""
    if _is_missing(value):
        return MISSING
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    if isinstance(value, Integral):
        return fmt_int(value)
    if isinstance(value, Real):
        return fmt_num(value)
    return str(value)


def fmt_percent(fraction: Any, decimals: int = 1) -> str:
    """0.8114 -> ``81.1 %``."""
    if _is_missing(fraction):
        return MISSING
    return f"{100.0 * float(fraction):.{decimals}f} %"


def fmt_time(seconds: float) -> str:
    """Seconds with a readable unit (ns, us, ms, s)."""
    for name, scale in (("s", 1.0), ("ms", 1e-3), (f"{_MICRO}s", 1e-6)):
        if abs(seconds) >= scale:
            return f"{fmt_num(seconds / scale)} {name}"
    return f"{fmt_num(seconds / 1e-9)} ns"


def fmt_energy(pj: float) -> str:
    """Picojoules with a readable unit (pJ, nJ, uJ, mJ, J)."""
    for name, scale in (("J", 1e12), ("mJ", 1e9), (f"{_MICRO}J", 1e6), ("nJ", 1e3)):
        if abs(pj) >= scale:
            return f"{fmt_num(pj / scale)} {name}"
    return f"{fmt_num(pj)} pJ"


def fmt_power(watts: float) -> str:
    """Watts with a readable unit (uW, mW, W)."""
    if abs(watts) >= 1.0:
        return f"{fmt_num(watts)} W"
    if abs(watts) >= 1e-3 or watts == 0.0:
        return f"{fmt_num(watts * 1e3)} mW"
    return f"{fmt_num(watts * 1e6)} {_MICRO}W"


def fmt_throughput(summary: dict[str, Any], number: Any = None) -> str:
    """A run summary's GOP/s on non-zero operand pairs, and the dense-equivalent rate beside it
    where operands are sparse; ``number`` formats each rate (default :func:`fmt_num`)."""
    number = number or fmt_num
    rate = f"{number(summary['effective_gops'])} GOP/s"
    if summary["dense_gops"] > summary["effective_gops"] * (1 + 1e-9):
        rate += f" on non-zero operands ({number(summary['dense_gops'])} dense-equivalent)"
    return rate


def si_format(value: float, _pos: int | None = None) -> str:
    """Compact axis number: 12k, 3.4M (``_pos``: matplotlib's formatter argument, unused)."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= div:
            return f"{value / div:.3g}{suffix}"
    return f"{value:.3g}"


def energy_unit(max_pj: float) -> tuple[str, float]:
    """Readable unit for energies up to ``max_pj``: (name, picojoules per unit)."""
    for name, scale in ENERGY_UNITS:
        if abs(max_pj) >= scale:
            return name, scale
    return "pJ", 1.0
