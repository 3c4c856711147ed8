"""Published multi-GPU figures: nccl-tests bus bandwidths and NVIDIA's ResNet-50 training."""

from __future__ import annotations

import pytest

from archsim.validation.multigpu import MULTIGPU_CLAIMS

_BY_NAME = {(c.name, c.source): c for c in MULTIGPU_CLAIMS}
#: published bus bandwidths the model misses, each with the bound its error must stay under
_BANDWIDTH_GAPS = {"A100x8 busbw 16M (superbench)": 0.35}
_BANDWIDTH = [c for c in MULTIGPU_CLAIMS if "busbw" in c.name and c.name not in _BANDWIDTH_GAPS]


@pytest.mark.parametrize("claim", _BANDWIDTH, ids=lambda c: f"{c.name} [{c.paper:g}]")
def test_nccl_tests_bus_bandwidth(claim, check_claim) -> None:
    check_claim(claim)


@pytest.mark.parametrize("name", sorted(_BANDWIDTH_GAPS))
def test_a100_mid_size_bus_bandwidth_is_a_known_gap(name, check_claim) -> None:
    """Documented FAIL: at 2-32 MB both published A100 tables are 15-30 % under NCCL's own
    tuning model, which the collective model follows (see the claim's reason)."""
    claim = next(c for c in MULTIGPU_CLAIMS if c.name == name)
    check_claim(claim, known_gap=_BANDWIDTH_GAPS[name])


def _training(label: str, what: str):
    return next(c for c in MULTIGPU_CLAIMS if label in c.name and what in c.name)


@pytest.mark.parametrize(
    "label", ["V100 AMP", "V100 FP32", "A100 AMP", "A100 TF32", "H100 AMP", "H100 TF32"]
)
def test_resnet50_single_gpu_throughput(label, check_claim) -> None:
    """DLE's 1-GPU ResNet-50 v1.5 throughputs within 15 % (the A100's passed only after the
    residual adds, max-pool, v1.5 strides and the A100's cited 88 % HBM fraction were modelled);
    the H100's are measured (benchmarks/measured/h100_2026-11-27/training/train_step.csv)."""
    check_claim(_training(label, "1-GPU"))


@pytest.mark.parametrize("label", ["V100 FP32", "A100 TF32"])
def test_resnet50_full_precision_speedup(label, check_claim) -> None:
    check_claim(_training(label, "speed-up"))


@pytest.mark.parametrize("label, gap", [("V100 AMP", 1.2), ("A100 AMP", 1.3)])
def test_resnet50_mixed_precision_speedup_is_a_known_gap(label, gap, check_claim) -> None:
    """Documented FAIL: NVIDIA's AMP 8-GPU runs lose time that follows the node's image rate
    (host JPEG decoding by the loader workers, see the claim's reason), not modelled."""
    check_claim(_training(label, "speed-up"), known_gap=gap)
