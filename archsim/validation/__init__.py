"""Validation against the papers: published claims, archsim's value, tolerance and reason.

>>> from archsim.validation import validate
>>> frame = validate(["eie"], eie_data="../shared/data/eie_alexnet_fc8")  # doctest: +SKIP
>>> frame[["claim", "paper", "archsim", "status"]]                        # doctest: +SKIP

The names below load on first use (PEP 562): ``archsim --help`` builds the ``validate``
command line from ``archsim.validation.command`` without importing any claim or model.
"""

from __future__ import annotations

from archsim.lazy import lazy_names

#: public name -> module that defines it
_WHERE = {
    "CLAIMS": "archsim.validation.runner",
    "COLUMNS": "archsim.validation.runner",
    "MODELS": "archsim.validation.names",
    "STATUSES": "archsim.validation.claims",
    "Claim": "archsim.validation.claims",
    "ClaimUnavailable": "archsim.validation.claims",
    "Runs": "archsim.validation.runs",
    "claims_for": "archsim.validation.runner",
    "default_eie_data": "archsim.validation.runs",
    "summary_counts": "archsim.validation.runner",
    "validate": "archsim.validation.runner",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
