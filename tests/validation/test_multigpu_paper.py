"""Published multi-GPU figures: nccl-tests bus bandwidths and NVIDIA's ResNet-50 training."""

from __future__ import annotations

import pytest

from archsim.validation.multigpu import MULTIGPU_CLAIMS

_BY_NAME = {(c.name, c.source): c for c in MULTIGPU_CLAIMS}
_MID = ("NVLS busbw 128M (#290)",)
_BANDWIDTH = [c for c in MULTIGPU_CLAIMS if "busbw" in c.name and not c.name.endswith(_MID)]


@pytest.mark.parametrize("claim", _BANDWIDTH, ids=lambda c: f"{c.name} [{c.paper:g}]")
def test_nccl_tests_bus_bandwidth(claim, check_claim) -> None:
    check_claim(claim)


def _training(label: str, what: str):
    return next(c for c in MULTIGPU_CLAIMS if label in c.name and what in c.name)


def test_resnet50_dgx1_mixed_precision_single_gpu(check_claim) -> None:
    check_claim(_training("V100 AMP", "1-GPU"))


def test_resnet50_dgx1_mixed_precision_speedup_is_a_known_gap(check_claim) -> None:
    """Documented FAIL: NVIDIA's 6.93x carries host-side losses the model does not simulate."""
    check_claim(_training("V100 AMP", "speed-up"), known_gap=1.2)


def test_nvls_128m_is_a_known_gap(check_claim) -> None:
    """Documented FAIL: the NVLS pipeline fill (two loops) covers only part of the 128 MB gap."""
    claim = next(c for c in MULTIGPU_CLAIMS if c.name == "H100x8 NVLS busbw 128M (#290)")
    check_claim(claim, known_gap=0.16)


def test_resnet50_a100_tf32_single_gpu_is_a_known_gap(check_claim) -> None:
    """Documented FAIL: NCHW transposes are modelled (+102 % -> +39 %); about 40 % common to the
    A100's AMP and TF32 runs remains unexplained (see the claim's reason)."""
    check_claim(_training("A100 TF32", "1-GPU"), known_gap=0.45)
