"""Tensor-core GPUs against published figures (reference/tensor_core.md).

Tolerances: DeepBench V100 times within 15 % (the issue's target; cuBLAS's real kernel choice
and clocks are not modelled beyond the tile menu). DeepBench prints whole microseconds
(``int(us)``), so a published 8 us means [8, 9) us: the error is taken against that interval.
"""

from __future__ import annotations

import pytest

import archsim
from archsim.config.workload import WorkloadSpec

# (M, N, K, published ms) -- DeepBench V100 training GEMMs, NN, FP16 (compute FP16)
DEEPBENCH_V100 = [
    (4096, 7000, 4096, 2.092),
    (1760, 7000, 1760, 0.485),
    (7680, 24000, 2560, 9.009),
    (4096, 128, 4096, 0.067),
    (4096, 16, 4096, 0.051),
    (35, 8457, 1760, 0.083),
    (512, 8, 500000, 0.658),
    (512, 16, 512, 0.008),
]


def _run(hw: str, shapes: list[tuple[int, int, int]], accumulate: str = "fp16"):
    layers = [
        {"kind": "gemm", "name": f"g{m}x{n}x{k}", "m": m, "n": n, "k": k,
         "accumulate": accumulate}
        for m, n, k in shapes
    ]  # fmt: skip
    wl = WorkloadSpec(schema_version=1, name="v", source="reference", layers=layers)
    return archsim.simulate(hw, wl).to_dataframe()


@pytest.fixture(scope="module")
def v100_points():
    return _run("v100", [(m, n, k) for m, n, k, _ in DEEPBENCH_V100])


@pytest.mark.parametrize("i", range(len(DEEPBENCH_V100)))
def test_deepbench_v100_within_15_percent(v100_points, i: int) -> None:
    m, n, k, ref_ms = DEEPBENCH_V100[i]
    got_ms = v100_points.time_s.iloc[i] * 1e3
    lo, hi = ref_ms, ref_ms + 0.001  # printed as whole microseconds
    nearest = min(max(got_ms, lo), hi)
    err = got_ms / nearest - 1
    assert abs(err) <= 0.15, (
        f"{m}x{n}x{k}: archsim {got_ms:.4f} ms vs DeepBench {ref_ms} ms ({err:+.1%}, tol 15%)"
    )


def test_curve_shape(v100_points) -> None:
    frac = v100_points.tc_peak_fraction.tolist()
    big = [frac[0], frac[2]]  # 4096x7000x4096, 7680x24000x2560
    small_n = [frac[4], frac[6], frac[7]]  # N = 16, 8, 16
    assert all(0.80 <= f <= 0.95 for f in big), big
    assert all(f < 0.10 for f in small_n), small_n


def test_a100_8192_cubed() -> None:
    got = _run("a100", [(8192, 8192, 8192)], accumulate="fp32").time_s.iloc[0] * 1e3
    assert got == pytest.approx(3.96, rel=0.15), f"A100 8192^3: {got:.3f} ms vs 3.96 ms"


def test_h100_best_case_below_85_percent() -> None:
    df = _run("h100", [(8192, 8192, 8192), (16384, 16384, 16384)], accumulate="fp32")
    best = df.tc_peak_fraction.max()
    assert 0.6 < best < 0.85, f"H100 best case {best:.1%} of peak (real part: about 80 %)"
