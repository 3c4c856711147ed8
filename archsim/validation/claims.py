"""A published figure archsim is checked against: ``Claim`` (paper value, tolerance, reason).

A claim's ``value`` computes archsim's number from a shared :class:`~archsim.validation.runs.Runs`
cache, so claims that need the same simulation share one run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from archsim.validation.runs import ClaimUnavailable, Runs

__all__ = ["Claim", "ClaimUnavailable", "ToleranceKind", "STATUSES"]

#: ``relative``: |archsim - paper| <= tolerance * |paper|; ``absolute``: |archsim - paper| <=
#: tolerance (in ``unit``); ``at_most`` / ``at_least``: archsim <= / >= paper (+/- tolerance).
ToleranceKind = Literal["relative", "absolute", "at_most", "at_least"]
#: Outcomes of a claim; SKIPPED when its input (real data, a simulator) is not available.
STATUSES = ("PASS", "FAIL", "SKIPPED")


@dataclass(frozen=True)
class Claim:
    """One published number, the tolerance archsim is held to, and why that tolerance.

    ``value(runs)`` returns archsim's figure in ``unit``; it may raise ``ClaimUnavailable``.
    """

    model: str
    name: str
    source: str
    paper: float
    unit: str
    tolerance: float
    kind: ToleranceKind
    reason: str
    value: Callable[[Runs], float] = field(compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.tolerance < 0 or not math.isfinite(self.tolerance):
            raise ValueError(f"{self.name}: tolerance must be finite and >= 0")
        if self.kind == "relative" and self.paper == 0:
            raise ValueError(f"{self.name}: a relative tolerance needs a non-zero paper value")

    def error(self, archsim: float) -> float:
        """Deviation in the tolerance's terms: a fraction for ``relative``, else ``unit``s."""
        diff = archsim - self.paper
        return diff / abs(self.paper) if self.kind == "relative" else diff

    def passes(self, archsim: float) -> bool:
        """True when ``archsim`` satisfies the claim (NaN never does)."""
        if not math.isfinite(archsim):
            return False
        err = self.error(archsim)
        if self.kind == "at_most":
            return err <= self.tolerance
        if self.kind == "at_least":
            return err >= -self.tolerance
        # a hair of slack so that a value printed equal to the bound is not a surprise FAIL
        return abs(err) <= self.tolerance * (1 + 1e-12)

    def tolerance_text(self) -> str:
        """Short form of the criterion: ``±25%``, ``±15 pt`` (points of a %), ``±0.05``, ``<= 85``.

        Absolute tolerances are in ``unit`` (left out here; ``pt`` when the unit is ``%``).
        """
        if self.kind == "relative":
            return f"±{_g(self.tolerance * 100)}%"
        if self.kind == "absolute":
            return f"±{_g(self.tolerance)}{_PT if self.unit == '%' else ''}"
        sign = "<=" if self.kind == "at_most" else ">="
        bound = self.paper + (self.tolerance if self.kind == "at_most" else -self.tolerance)
        return f"{sign} {_g(bound)}"

    def error_text(self, archsim: float) -> str:
        """The error formatted like the tolerance (``-27.7%``, ``+11.8 pt``); ``-`` for NaN."""
        if not math.isfinite(archsim):
            return "-"
        err = self.error(archsim)
        if self.kind == "relative":
            return f"{err * 100:+.1f}%"
        return f"{err:+.1f}{_PT}" if self.unit == "%" else f"{err:+.3g}"


_PT = " pt"


def _g(x: float) -> str:
    """Compact number: 25, 0.05, 1e-06."""
    return f"{x:.3g}"
