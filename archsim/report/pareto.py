"""Non-dominated (Pareto-optimal) points of a table of metrics."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["pareto_mask", "metric_sense", "MAXIMISED_METRICS"]

#: Metrics where larger is better; every other metric is minimised.
MAXIMISED_METRICS = frozenset(
    {"effective_gops", "utilization", "mean_utilization", "tc_tflops", "tc_peak_fraction"}
)
_MAX_PREFIXES = ("speedup_", "energy_ratio_")


def metric_sense(metric: str) -> str:
    """``"max"`` for throughput-like metrics (larger is better), else ``"min"``."""
    if metric in MAXIMISED_METRICS or metric.startswith(_MAX_PREFIXES):
        return "max"
    return "min"


def pareto_mask(frame: pd.DataFrame, objectives: Mapping[str, str]) -> pd.Series:
    """True for the rows of ``frame`` that no other row dominates.

    ``objectives`` maps a column to ``"min"`` or ``"max"``. A row dominates another when it is
    at least as good in every objective and better in one; rows with a missing or non-finite
    objective are never on the front. Identical rows are all kept. O(n^2 / chunk) memory-bounded.
    """
    if not objectives:
        raise ValueError("pareto_mask needs at least one objective")
    for col, sense in objectives.items():
        if sense not in ("min", "max"):
            raise ValueError(f"objective {col!r}: sense must be 'min' or 'max' (got {sense!r})")
    values = np.column_stack(
        [
            pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float)
            * (-1.0 if s == "max" else 1.0)
            for c, s in objectives.items()
        ]
    )
    valid = np.isfinite(values).all(axis=1)
    mask = np.zeros(len(frame), dtype=bool)
    cand = values[valid]
    keep = np.ones(len(cand), dtype=bool)
    chunk = max(1, 2_000_000 // max(1, len(cand)))
    for start in range(0, len(cand), chunk):
        block = cand[start : start + chunk, None, :]  # (b, 1, k) vs (1, n, k)
        no_worse = (cand[None, :, :] <= block).all(axis=2)
        better = (cand[None, :, :] < block).any(axis=2)
        keep[start : start + chunk] = ~(no_worse & better).any(axis=1)
    mask[np.flatnonzero(valid)] = keep
    return pd.Series(mask, index=frame.index, name="pareto")
