"""Shared fixtures. ``--regen-golden`` rewrites tests/golden/*.json from the current model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ALEX8_DIR = SHARED / "data" / "eie_alexnet_fc8"
H100_DIR = SHARED / "data" / "h100"
FIXTURES = ROOT / "tests" / "fixtures"


MAX_TEST_WORKERS = 4
"""Cap on `-n auto` (pyproject's addopts): each worker is a whole Python process with numba and
its own built layers, so a many-core machine does not start dozens of them."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for `-n auto`: the CPUs this process may run on, at most ``MAX_TEST_WORKERS``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_TEST_WORKERS, cpus))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-golden", action="store_true", help="rewrite golden files instead of comparing"
    )


@pytest.fixture
def regen_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--regen-golden"))


def shared_path(path: Path) -> Path:
    """``path`` under ../shared beside the checkout: a failure under CI (which has it), a skip
    on a developer machine without it."""
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing; CI must have ../shared beside the clone")
        pytest.skip(f"{path} not present (it lives beside the repository, not in it)")
    return path


@pytest.fixture(scope="session")
def alex8_dir() -> Path:
    """The real AlexNet FC8 layer in EIE's format (../shared beside the checkout)."""
    return shared_path(ALEX8_DIR)


@pytest.fixture(scope="session")
def h100_dir() -> Path:
    """The measured H100 folder (../shared/data/h100 beside the checkout)."""
    return shared_path(H100_DIR)


@pytest.fixture(scope="session")
def alex8_workload(alex8_dir: Path) -> Path:
    return FIXTURES / "eie_alexnet_fc8.yaml"


@pytest.fixture(scope="session")
def finished_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output folder of a small finished sweep (tiny EIE at 2 and 4 PEs, the nine EIE
    benchmark layers), for tests that rebuild its report or tamper with its files."""
    from archsim.cli import main

    root = tmp_path_factory.mktemp("finished_sweep")
    spec = root / "s.yaml"
    spec.write_text("schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
                    "axes: {pe_array.num_pes: [2, 4]}\n")  # fmt: skip
    assert main(["sweep", str(spec), "-o", str(root / "out"), "-j", "1", "-q"]) == 0
    return root / "out"


@pytest.fixture
def sweep_copy(finished_sweep: Path, tmp_path: Path) -> Path:
    """A fresh copy of ``finished_sweep``'s results.parquet and sweep.json (``tmp_path / "s"``)
    to tamper with."""
    dst = tmp_path / "s"
    dst.mkdir()
    for name in ("results.parquet", "sweep.json"):
        (dst / name).write_bytes((finished_sweep / name).read_bytes())
    return dst
