"""What every accelerator model returns for one layer: exact cycles and action counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FUNCTIONAL_MAX_ELEMENTS", "FUNCTIONAL_MAX_MACS", "LayerOutcome", "functional_fits"]

#: GEMMs and convs up to this many MACs (per GEMM) and this many operand elements (inputs,
#: weights and outputs together) are also computed functionally and checked against NumPy.
#: The elements matter too: a 1x1, stride-2 conv of 2 channels over 256 x 224 x 224 inputs is
#: 12.8 M MACs but 25.7 M input elements, and its check took 6 s of a 6.4 s simulation.
FUNCTIONAL_MAX_MACS = 1 << 24
FUNCTIONAL_MAX_ELEMENTS = 1 << 22


def functional_fits(macs: int, elements: int) -> bool:
    """Whether a GEMM or conv of ``macs`` MACs over ``elements`` operand elements is small
    enough to be computed for real (see ``FUNCTIONAL_MAX_MACS``)."""
    return macs <= FUNCTIONAL_MAX_MACS and elements <= FUNCTIONAL_MAX_ELEMENTS


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
    #: the layer's length in its own clock's cycles where that clock is not the run's (a GPU
    #: under its power limit: ``cycles`` count the preset's clock so that time adds up);
    #: utilization is counted against it. None: ``cycles``
    own_clock_cycles: int | None = None
