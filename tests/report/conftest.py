"""Fixtures of the report tests (data builders live in report_data.py)."""

from __future__ import annotations

import pandas as pd
import pytest
from report_data import make_claims, make_points


@pytest.fixture(scope="session")
def sweep_points() -> pd.DataFrame:
    """200 points (8 x 5 x 5), 3 of them failed."""
    return make_points()


@pytest.fixture
def claims() -> pd.DataFrame:
    return make_claims()
