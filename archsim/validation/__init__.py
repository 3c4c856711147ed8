"""Validation against the papers: published claims, archsim's value, tolerance and reason.

>>> from archsim.validation import validate
>>> frame = validate(["eie"], eie_data="../shared/data/eie_alexnet_fc8")  # doctest: +SKIP
>>> frame[["claim", "paper", "archsim", "status"]]                        # doctest: +SKIP
"""

from archsim.validation.claims import STATUSES, Claim, ClaimUnavailable
from archsim.validation.runner import CLAIMS, COLUMNS, MODELS, claims_for, summary_counts, validate
from archsim.validation.runs import Runs, default_eie_data

__all__ = [
    "CLAIMS",
    "COLUMNS",
    "MODELS",
    "STATUSES",
    "Claim",
    "ClaimUnavailable",
    "Runs",
    "claims_for",
    "default_eie_data",
    "summary_counts",
    "validate",
]
