"""What every accelerator model returns for one layer: exact cycles and action counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["LayerOutcome"]


@dataclass(frozen=True)
class LayerOutcome:
    """Timing and counts of one layer, before pricing.

    ``counts`` maps component -> action -> count (e.g. ``{"spmat_sram": {"read": 12}}``);
    ``extras`` holds accelerator-specific result columns (already prefixed, e.g. ``eie_...``).
    """

    layer: str
    kind: str
    cycles: int
    start_cycle: int
    end_cycle: int
    macs_dense: int
    macs_effective: int
    peak_macs_per_cycle: int
    dram_bytes: int
    counts: dict[str, dict[str, int]]
    extras: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    #: multiplier per (component, action) on its price for this layer (e.g. a GPU's supply
    #: voltage squared and operand activity); absent = 1
    action_scale: dict[str, dict[str, float]] = field(default_factory=dict)
