"""The kernel result of one SCNN layer, shared by conv (``scnn``) and fc/LSTM (``scnn_fc``).

Its own module so that ``scnn`` and ``scnn_fc`` do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.workload.conv import SparseConv

__all__ = ["ScnnConvRun", "rounded_to_zero"]


@dataclass(frozen=True, eq=False)
class ScnnConvRun:
    """Kernel results of one conv layer (all images, conv groups and super-tiles)."""

    layer: SparseConv | None  # None for fc/lstm layers
    items: list[tuple[int, int, int]]  # per super-tile pass: (cycles, in_bytes, out_bytes)
    counts: dict[str, dict[str, int]]
    extras: dict[str, float]
    output_q: np.ndarray  # (n, k, out_h, out_w) int64 accumulator values (before ReLU)
    out_frac: int
    macs_effective: int
    input_nnz: int  # non-zero input activations
    output_nnz: int  # non-zero outputs after ReLU
    warnings: tuple[str, ...] = ()


def rounded_to_zero(
    what: str, values: np.ndarray, q: np.ndarray, frac: int, bits: int
) -> list[str]:
    """A warning when more than 1 % of the non-zero ``values`` round to zero in their
    ``bits``-bit fixed point ``q`` (step ``2**-frac``): SCNN skips them as zeros, so the
    layer does less work than its data has (real tensors far below 1, e.g. an untrained
    model's)."""
    nonzero = int(np.count_nonzero(values))
    lost = nonzero - int(np.count_nonzero(q))
    if not nonzero or lost <= 0.01 * nonzero:
        return []
    largest = float(np.max(np.abs(values)))
    return [
        f"{lost / nonzero:.0%} of the non-zero {what} (largest {largest:.3g}) round to zero in "
        f"{bits}-bit fixed point (step 2^-{frac}) and are skipped as zeros"
    ]
