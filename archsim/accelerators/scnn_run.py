"""The kernel result of one SCNN layer, shared by conv (``scnn``) and fc/LSTM (``scnn_fc``).

Its own module so that ``scnn`` and ``scnn_fc`` do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.workload.conv import SparseConv

__all__ = ["ScnnConvRun"]


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
