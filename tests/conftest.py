"""Shared fixtures. ``--regen-golden`` rewrites tests/golden/*.json from the current model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ALEX8_DIR = SHARED / "data" / "eie_alexnet_fc8"
FIXTURES = ROOT / "tests" / "fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-golden", action="store_true", help="rewrite golden files instead of comparing"
    )


@pytest.fixture
def regen_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--regen-golden"))


@pytest.fixture(scope="session")
def alex8_dir() -> Path:
    """The real AlexNet FC8 layer in EIE's format (../shared beside the checkout)."""
    if not ALEX8_DIR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{ALEX8_DIR} is missing; CI must have ../shared beside the clone")
        pytest.skip(f"{ALEX8_DIR} not present (it lives beside the repository, not in it)")
    return ALEX8_DIR


@pytest.fixture(scope="session")
def alex8_workload(alex8_dir: Path) -> Path:
    return FIXTURES / "eie_alexnet_fc8.yaml"
