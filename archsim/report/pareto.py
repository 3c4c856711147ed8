"""Non-dominated (Pareto-optimal) points of a table of metrics."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from archsim.explore import pareto

__all__ = ["pareto_mask", "metric_sense", "MAXIMISED_METRICS"]

#: Metrics where larger is better; every other metric is minimised.
MAXIMISED_METRICS = frozenset(
    {
        "effective_gops",
        "utilization",
        "mean_utilization",
        "tc_tflops",
        "tc_peak_fraction",
        "accuracy",
        "samples_per_s",
        "scaling_efficiency",
    }
)
_MAX_PREFIXES = ("speedup_", "energy_ratio_")


def metric_sense(metric: str) -> str:
    """``"max"`` for throughput-like metrics (larger is better), else ``"min"``."""
    if metric in MAXIMISED_METRICS or metric.startswith(_MAX_PREFIXES):
        return "max"
    return "min"


def pareto_mask(frame: pd.DataFrame, objectives: Mapping[str, str]) -> pd.Series:
    """True for the rows of ``frame`` that no other row dominates (see ``archsim.pareto``).

    ``objectives`` maps a column to ``"min"`` or ``"max"``. A row dominates another when it is
    at least as good in every objective and better in one; rows that failed (``status`` not
    ``ok``) or miss an objective are never on the front; identical rows are all kept.
    """
    if not objectives:
        raise ValueError("pareto_mask needs at least one objective")
    for col, sense in objectives.items():
        if sense not in ("min", "max"):
            raise ValueError(f"objective {col!r}: sense must be 'min' or 'max' (got {sense!r})")
    front = pareto(
        frame.reset_index(drop=True),
        minimize=[c for c, s in objectives.items() if s == "min"],
        maximize=[c for c, s in objectives.items() if s == "max"],
    )
    mask = np.zeros(len(frame), dtype=bool)
    mask[front.index.to_numpy()] = True
    return pd.Series(mask, index=frame.index, name="pareto")
