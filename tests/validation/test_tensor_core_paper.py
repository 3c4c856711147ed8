"""Tensor Core GPU claims (archsim/validation/tensor_core.py)."""

from __future__ import annotations

import pytest

from archsim.accelerators import REGISTRY
from archsim.validation.runner import evaluate
from archsim.validation.tensor_core import TENSOR_CORE_CLAIMS

_PEAKS = [c for c in TENSOR_CORE_CLAIMS if "peak FP16" in c.name]
_TIMING = [c for c in TENSOR_CORE_CLAIMS if c not in _PEAKS]


@pytest.mark.parametrize("claim", _PEAKS, ids=lambda c: c.name)
def test_peaks(claim, check_claim):
    check_claim(claim)


def test_timing_claims_cover_the_calibration_points():
    names = {c.name for c in _TIMING}
    assert len(_TIMING) == 10  # 8 DeepBench V100 points, A100 8192^3, H100 bound
    assert "V100 GEMM 7680x24000x2560 time" in names and "A100 GEMM 8192x8192x8192 time" in names


@pytest.mark.skipif("tensor_core" in REGISTRY, reason="the GPU simulator exists: claims run")
def test_timing_claims_are_skipped_with_a_reason_without_the_simulator(runs):
    for claim in _TIMING:
        row = evaluate(claim, runs)
        assert row["status"] == "SKIPPED", claim.name
        assert "tensor_core simulator" in row["unavailable"]
