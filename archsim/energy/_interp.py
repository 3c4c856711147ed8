"""Piecewise log-log interpolation shared by the SRAM and operation pricing functions."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as float if it is a positive finite real number, else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_bits(value: int) -> int:
    """Return ``value`` if it is a positive integer bit width, else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"bits must be a positive integer, got {value!r}")
    return value


def loglog_interp(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """Piecewise-linear interpolation of log(y) over log(x).

    ``xs`` must be strictly increasing and positive, ``ys`` positive. Table points are returned
    exactly. Outside ``[xs[0], xs[-1]]`` the end segment's log-log slope is extended.
    """
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("loglog_interp needs at least two (x, y) points of equal count")
    i = bisect.bisect_left(xs, x)
    if i < len(xs) and xs[i] == x:
        return float(ys[i])
    i = min(max(i - 1, 0), len(xs) - 2)
    x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
    slope = math.log(y1 / y0) / math.log(x1 / x0)
    return float(y0 * math.exp(slope * math.log(x / x0)))
