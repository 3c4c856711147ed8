"""Elementwise passes of a training step per conv: batch-norm, bias, ReLU (system/passes.py)."""

from __future__ import annotations

import archsim
from archsim.config.workload import WorkloadSpec
from archsim.system.passes import elementwise_passes
from archsim.system.workload import training_layers


def _bytes(**layer: object) -> tuple[int, int]:
    """(forward, backward) bytes moved by one 64-channel 56x56 conv's passes at batch 8."""
    spec = {"name": "c", "kind": "conv", "c": 64, "k": 64, "h": 56, "w": 56, "r": 3, "s": 3,
            "pad": 1, **layer}  # fmt: skip
    wl = WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "w", "source": "test", "layers": [spec]}
    )
    system = archsim.load_hardware("dgx_h100")
    out = 8 * 64 * 56 * 56 * 2
    fwd, bwd, moved = elementwise_passes(training_layers(wl, 8), wl, system, 2, 1.0)
    return round(fwd[0]) // out, round(bwd[0]) // out, sum(moved) // out  # type: ignore[return-value]


def test_batch_norm_and_bias_passes() -> None:
    """Default (BN + ReLU): 5 forward, 8 backward passes over the output. No batch-norm (VGG):
    the ReLU's 2 and 3. A bias adds a read and a write forward and one read backward."""
    t = archsim.load_hardware("dgx_h100").training  # type: ignore[attr-defined]
    assert _bytes()[:2] == (t.conv_forward_passes, t.conv_backward_passes) == (5, 8)
    assert _bytes(batch_norm=False)[:2] == (t.relu_forward_passes, t.relu_backward_passes)
    assert _bytes(batch_norm=False, bias=True)[:2] == (
        t.relu_forward_passes + 2,
        t.relu_backward_passes + 1,
    )
    assert _bytes(batch_norm=False, relu=False)[:2] == (0, 0)


def test_branch_pool_and_concat_passes() -> None:
    """A pool branch's conv: the stride-1 pool of its 192-channel input (read, values and int64
    indices: 6 input-sized passes of 2 bytes each way) forward and backward; the concatenation
    of 256 channels (read and write, forward only)."""
    base = _bytes(c=192, k=64)
    pooled = _bytes(c=192, k=64, input_max_pool_size=3)
    # input elements = 3 x output elements (192 vs 64 channels); (2 + 10) bytes per input element
    assert pooled[0] - base[0] == pooled[1] - base[1] == 3 * (2 + 10) // 2
    cat = _bytes(c=192, k=64, concat_channels=256)
    assert (cat[0] - base[0], cat[1] - base[1]) == (2 * 4, 0)


def test_classifier_relu_passes() -> None:
    """An fc layer runs no elementwise pass of its own; with ``relu`` (VGG-16's fc6 and fc7)
    the ReLU's forward and backward passes over its batch x outputs result."""
    system = archsim.load_hardware("dgx_h100")
    t = system.training  # type: ignore[attr-defined]
    out = 8 * 4096 * 2  # bytes of the batch-8 result; 1 byte/s makes seconds equal bytes
    for relu, passes in ((False, (0, 0)), (True, (t.relu_forward_passes, t.relu_backward_passes))):
        fc = {"name": "f", "kind": "fc", "inputs": 1024, "outputs": 4096, "relu": relu,
              "weight_density": 1.0, "activation_density": 1.0}  # fmt: skip
        wl = WorkloadSpec.model_validate(
            {"schema_version": 1, "name": "w", "source": "test", "layers": [fc]}
        )
        fwd, bwd, _ = elementwise_passes(training_layers(wl, 8), wl, system, 2, 1.0)
        assert (fwd[0], bwd[0]) == (passes[0] * out, passes[1] * out), relu
