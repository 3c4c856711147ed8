"""Synthetic frames shaped like the sweep engine's totals, the validation claim tables and a GPU run
(imported by name; ``conftest`` module names collide across test folders)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

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


def make_gpu_result(n: int = 40):  # -> archsim.RunResult
    """A synthetic tensor_core run: GEMMs with the GPU model's ``tc_*`` columns."""
    from archsim.results import LayerResult, RunResult

    rng = np.random.default_rng(3)
    peak, bw, clock = 125.0, 900e9, 1.53e9
    layers = []
    for i in range(n):
        m, k, nn = (int(2 ** rng.integers(4, 13)) for _ in range(3))
        flops, dram = 2.0 * m * nn * k, 2.0 * (m * k + k * nn + m * nn)
        ai = flops / dram
        roof = min(peak, ai * bw / 1e12)
        bound = "latency" if flops < 2e8 else ("compute" if ai * bw / 1e12 >= peak else "memory")
        tflops = roof * (0.15 if bound == "latency" else rng.uniform(0.5, 0.9))
        t = flops / (tflops * 1e12)
        energy = flops * 0.5 + dram * 20.0
        layers.append(
            LayerResult(
                layer=f"gemm_{i:03d}_{m}x{nn}x{k}",
                kind="gemm",
                cycles=int(t * clock),
                time_s=t,
                macs_dense=m * nn * k,
                macs_effective=m * nn * k,
                utilization=tflops / peak,
                energy_pj=energy,
                power_w=energy * 1e-12 / t,
                dram_bytes=int(dram),
                start_cycle=0,
                end_cycle=0,
                energy_by_component_pj={"tensor_cores": flops * 0.5, "hbm": dram * 20.0},
                counts={},
                extras={
                    "tc_tile": "128x128x32",
                    "tc_waves": float(rng.uniform(0.2, 8)),
                    "tc_bound": bound,
                    "tc_tflops": tflops,
                    "tc_peak_fraction": tflops / peak,
                    "tc_peak_tflops": peak,
                    "tc_hbm_bandwidth_bytes_per_s": bw,
                    "tc_arithmetic_intensity": ai,
                },
            )
        )
    return RunResult(
        accelerator="tensor_core",
        hardware="v100",
        workload="deepbench_gemm",
        seed=0,
        clock_hz=clock,
        total_cycles=sum(lr.cycles for lr in layers),
        layers=tuple(layers),
        area_mm2={"die": 815.0},
        metadata={"archsim_version": "0.1.0"},
    )
