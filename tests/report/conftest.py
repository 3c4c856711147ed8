"""Synthetic frames shaped like the sweep engine's totals and the validation claim tables."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

AXES = ["pe_array.num_pes", "activation_fifo.depth", "clock.frequency_hz"]
METRICS = [
    "total_cycles",
    "total_time_s",
    "total_energy_pj",
    "average_power_w",
    "effective_gops",
    "total_area_mm2",
]


def make_points(n_pes: int = 8, n_fifo: int = 5, n_clock: int = 5, errors: int = 3) -> pd.DataFrame:
    """A sweep totals frame: grid over three axes, a few failed points, deterministic values."""
    rng = np.random.default_rng(7)
    rows = []
    grid = itertools.product(
        [2**k for k in range(2, 2 + n_pes)],
        [1, 2, 4, 8, 16][:n_fifo],
        [400e6, 600e6, 800e6, 1000e6, 1200e6][:n_clock],
    )
    for i, (pes, fifo, clock) in enumerate(grid):
        cycles = int(2e6 / pes * (1 + 0.8 / fifo) * rng.uniform(0.9, 1.1))
        t = cycles / clock
        energy = 4e7 * (1 + 0.002 * pes) * (clock / 800e6) ** 0.5 + 1e12 * t * 0.05 * pes
        rows.append(
            {
                "point": i,
                "point_key": f"pe_array.num_pes={pes},activation_fifo.depth={fifo},clock={clock:g}",
                "seed": 0,
                "pe_array.num_pes": pes,
                "activation_fifo.depth": fifo,
                "clock.frequency_hz": clock,
                "status": "ok",
                "error": "",
                "total_cycles": cycles,
                "total_time_s": t,
                "total_energy_pj": energy,
                "average_power_w": energy * 1e-12 / t,
                "effective_gops": 2 * 3e6 / t / 1e9,
                "total_area_mm2": 0.64 * pes + 0.01 * fifo * pes,
            }
        )
    frame = pd.DataFrame(rows)
    for j in range(errors):
        idx = (j * 37 + 11) % len(frame)
        frame.loc[idx, "status"] = "error"
        frame.loc[idx, "error"] = (
            f"hw.yaml: pe_array.num_pes: <{j}> must divide the rows & be <= 4096 (got it wrong)"
        )
        frame.loc[idx, METRICS] = np.nan
    return frame


@pytest.fixture(scope="session")
def sweep_points() -> pd.DataFrame:
    """200 points (8 x 5 x 5), 3 of them failed."""
    return make_points()


def make_claims() -> pd.DataFrame:
    """A paper-vs-archsim claim table in the validation issue's shape."""
    rows = [
        ("eie", "Alex-8 time", "Table IV", 9.9, 9.87, 0.05, "us", "PASS", ""),
        ("eie", "Alex-8 ideal time", "Table IV", 8.9, 8.86, 0.05, "us", "PASS", ""),
        ("eie", "VGG-6 time", "Table IV", 34.4, 24.7, 0.25, "us", "FAIL", "uniform <sparsity>"),
        ("scnn", "VGG-16 speed-up", "Fig. 8", 3.52, 3.31, 0.15, "x", "PASS", ""),
        ("scnn", "AlexNet energy ratio", "Fig. 9", 2.3, 1.5, 0.2, "x", "FAIL", "DRAM & leakage"),
        ("tensor_core", "V100 HGEMM peak", "DeepBench", 125.0, 112.0, 0.15, "TFLOP/s", "PASS", ""),
    ]
    frame = pd.DataFrame(
        rows,
        columns=["model", "claim", "source", "paper", "archsim", "tolerance", "unit", "status",
                 "reason"],
    )  # fmt: skip
    frame["error"] = (frame["archsim"] - frame["paper"]) / frame["paper"]
    return frame


@pytest.fixture
def claims() -> pd.DataFrame:
    return make_claims()
