"""Shared simulations and the claim assertion for the paper-validation tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from archsim.validation import Claim, Runs
from archsim.validation.runner import evaluate

#: the real Alex-8 layer beside the checkout (tests/conftest.py's alex8_dir fixture skips or,
#: under CI, fails the tests that need it when it is absent)
ALEX8_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "eie_alexnet_fc8"


@pytest.fixture(scope="session")
def runs() -> Runs:
    """One simulation per (hardware, workload) for the whole session, as `archsim validate`."""
    return Runs(seed=0, eie_data=ALEX8_DIR if ALEX8_DIR.is_dir() else None)


@pytest.fixture(scope="session")
def check_claim(runs: Runs) -> Callable[..., dict]:
    """``check_claim(claim, known_gap=None)``: assert the claim's status, return its row.

    Without ``known_gap`` the claim must PASS. With ``known_gap`` (a bound on ``|error|``) the
    claim is a documented FAIL: it must still fail (else its reason and this test need an
    update) and its error must not grow beyond the bound (a regression guard).
    """

    def check(claim: Claim, known_gap: float | None = None) -> dict:
        row = evaluate(claim, runs)
        msg = (
            f"{claim.model} / {claim.name}: archsim {row['archsim']:.4g} vs paper "
            f"{claim.paper:g} {claim.unit} (error {row['error_text']}, tolerance "
            f"{row['tolerance']}, {claim.source})"
        )
        assert row["status"] != "SKIPPED", f"{msg}: skipped: {row['unavailable']}"
        if known_gap is None:
            assert row["status"] == "PASS", msg
        else:
            assert row["status"] == "FAIL", f"known gap now passes, update its reason: {msg}"
            assert abs(row["error"]) <= known_gap, f"gap grew beyond {known_gap}: {msg}"
        return row

    return check
