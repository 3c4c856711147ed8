"""Evaluate claims against shared simulations; one tidy DataFrame row per claim."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.errors import UnknownNameError
from archsim.validation.claims import Claim, ClaimUnavailable
from archsim.validation.eie import EIE_CLAIMS
from archsim.validation.multigpu import MULTIGPU_CLAIMS
from archsim.validation.names import MODELS
from archsim.validation.networks import NETWORK_CLAIMS
from archsim.validation.runs import Runs
from archsim.validation.scnn import SCNN_CLAIMS
from archsim.validation.tensor_core import TENSOR_CORE_CLAIMS

if TYPE_CHECKING:  # pandas loads when a validation runs, not for `archsim --help`
    import pandas as pd

__all__ = ["CLAIMS", "MODELS", "COLUMNS", "claims_for", "evaluate", "validate", "summary_counts"]

#: model -> its claims, in report order (``MODELS``: the names alone, for the command line).
CLAIMS: dict[str, tuple[Claim, ...]] = dict(
    zip(
        MODELS,
        (EIE_CLAIMS, SCNN_CLAIMS, TENSOR_CORE_CLAIMS, MULTIGPU_CLAIMS, NETWORK_CLAIMS),
        strict=True,
    )
)
#: Columns of the frame :func:`validate` returns, in order.
COLUMNS = (
    "model",
    "claim",
    "source",
    "paper",
    "archsim",
    "unit",
    "error",
    "error_text",
    "tolerance",
    "status",
    "reason",
    "unavailable",
)


def claims_for(models: Iterable[str] = MODELS) -> list[Claim]:
    """The claims of ``models`` in :data:`MODELS` order (``"all"`` means every model)."""
    names = {models} if isinstance(models, str) else set(models)  # "eie": one model, not 3
    if "all" in names:
        names = set(MODELS)
    unknown = sorted(names - set(CLAIMS), key=str)
    if unknown:
        raise UnknownNameError(f"unknown model(s) {unknown}; allowed: {', '.join(MODELS)}, all")
    return [c for m in MODELS if m in names for c in CLAIMS[m]]


def evaluate(claim: Claim, runs: Runs) -> dict[str, object]:
    """One claim's row (see :data:`COLUMNS`); SKIPPED, with ``unavailable`` saying why, when
    its input (data folder, simulator) is not available."""
    unavailable = ""
    try:
        value = float(claim.value(runs))
    except ClaimUnavailable as exc:
        value, status, unavailable = math.nan, "SKIPPED", str(exc)
    else:
        status = "PASS" if claim.passes(value) else "FAIL"
    return {
        "model": claim.model,
        "claim": claim.name,
        "source": claim.source,
        "paper": claim.paper,
        "archsim": value,
        "unit": claim.unit,
        "error": claim.error(value),
        "error_text": claim.error_text(value),
        "tolerance": claim.tolerance_text(),
        "status": status,
        "reason": claim.reason,
        "unavailable": unavailable,
    }


def validate(
    models: Iterable[str] = MODELS,
    *,
    seed: int = 0,
    eie_data: str | Path | None = None,
    runs: Runs | None = None,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Check every claim of ``models`` against archsim; each simulation runs once.

    ``eie_data`` is the real Alex-8 folder (claims that need it are SKIPPED without it);
    pass ``runs`` to share simulations with other calls. Returns one row per claim.
    """
    import pandas as pd

    runs = runs if runs is not None else Runs(seed=seed, eie_data=eie_data, progress=progress)
    rows = [evaluate(c, runs) for c in claims_for(models)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def summary_counts(frame: pd.DataFrame) -> dict[str, int]:
    """``{"PASS": n, "FAIL": n, "SKIPPED": n}`` of a :func:`validate` frame."""
    counts = frame["status"].value_counts()
    return {s: int(counts.get(s, 0)) for s in ("PASS", "FAIL", "SKIPPED")}
