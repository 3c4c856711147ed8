"""A QDQ model (int8 weights -> DequantizeLinear -> MatMul) below opset 19: onnx's reference
evaluator implements DequantizeLinear from opset 19 only, so the weights stayed unknown and the
layer imported as a dense gemm with no weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from archsim.workload.onnx import read_onnx  # noqa: E402


def _qdq(path: Path, opset: int, wq: np.ndarray, scale: np.ndarray, axis: int | None) -> Path:
    attrs = {} if axis is None else {"axis": axis}
    nodes = [
        helper.make_node("DequantizeLinear", ["Wq", "s", "z"], ["W"], name="dq", **attrs),
        helper.make_node("MatMul", ["x", "W"], ["y"], name="mm"),
    ]
    zero = np.zeros(scale.shape, np.int8)
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, wq.shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, wq.shape[1]])],
        [numpy_helper.from_array(wq, "Wq"), numpy_helper.from_array(scale, "s"),
         numpy_helper.from_array(zero, "z")],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


@pytest.mark.parametrize(
    ("opset", "per_axis"), [(10, False), (13, False), (13, True), (19, False), (19, True)]
)
def test_dequantized_weights_are_real_at_every_opset(tmp_path, opset, per_axis):
    rng = np.random.default_rng(1)
    wq = (rng.integers(-100, 100, (32, 16)) * (rng.random((32, 16)) < 0.2)).astype(np.int8)
    scale = np.linspace(0.01, 0.02, 16, dtype=np.float32) if per_axis else np.float32(0.01)
    imp = read_onnx(
        _qdq(tmp_path / "q.onnx", opset, wq, np.asarray(scale), 1 if per_axis else None)
    )
    (spec,) = imp.spec.layers
    assert spec.kind == "fc" and (spec.inputs, spec.outputs) == (32, 16)
    assert spec.weight_density == pytest.approx(np.count_nonzero(wq) / wq.size)
    # (outputs, inputs): W.T, the dequantised values
    np.testing.assert_allclose(imp.tensors["mm"].weights, (wq * scale).T, rtol=1e-6)
