"""The one place that converts units. Internally: seconds, hertz, bytes, bits, picojoules."""

from __future__ import annotations

import math

__all__ = [
    "cycles_to_seconds",
    "seconds_to_cycles",
    "energy_pj_to_j",
    "power_w",
    "bits_to_bytes",
    "KIB",
    "MIB",
    "PJ_PER_J",
    "INT64_MAX",
]

KIB = 1024
MIB = 1024 * 1024
PJ_PER_J = 1e12
#: the largest count results, config fields and the numba models hold (signed 64-bit)
INT64_MAX = 2**63 - 1


def cycles_to_seconds(cycles: int | float, clock_hz: float) -> float:
    """Convert a cycle count at ``clock_hz`` to seconds."""
    return float(cycles) / float(clock_hz)


def seconds_to_cycles(seconds: float, clock_hz: float) -> int:
    """Whole cycles at ``clock_hz`` that ``seconds`` takes, rounded up (a product a hair above
    an integer from floating-point error is that integer)."""
    return math.ceil(seconds * clock_hz - 1e-9)


def energy_pj_to_j(energy_pj: float) -> float:
    """Picojoules to joules."""
    return float(energy_pj) / PJ_PER_J


def power_w(energy_pj: float, time_s: float) -> float:
    """Average power in watts of ``energy_pj`` spent over ``time_s`` (0 when time is 0)."""
    return energy_pj_to_j(energy_pj) / time_s if time_s > 0 else 0.0


def bits_to_bytes(bits: int) -> int:
    """Whole bytes needed to hold ``bits`` bits."""
    return (int(bits) + 7) // 8
