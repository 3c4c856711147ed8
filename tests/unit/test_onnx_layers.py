"""Node-by-node import: Conv (groups, depthwise, dilation), BatchNorm folding, Gemm transposes,
batched MatMul, LSTM/GRU gate matrices, constants computed by nodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from archsim.workload.onnx import read_onnx  # noqa: E402

RNG = np.random.default_rng(0)


def _save(tmp: Path, nodes, inputs, inits, name="m.onnx") -> Path:
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(tmp / name))
    return tmp / name


def test_conv_bn_fold_depthwise_and_dilation(tmp_path: Path) -> None:
    w1 = RNG.standard_normal((8, 3, 3, 3))
    w1[0] = 0.0  # one whole filter pruned
    bn = {"g": RNG.random(8) + 0.5, "b": RNG.standard_normal(8), "m": RNG.standard_normal(8),
          "v": RNG.random(8) + 0.1}  # fmt: skip
    dw = RNG.standard_normal((8, 1, 3, 3))
    dil = RNG.standard_normal((4, 8, 3, 3))
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["n1"], epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node(
            "Conv", ["r1", "dw"], ["c2"], name="dw", group=8, strides=[2, 2], pads=[1, 1, 1, 1]
        ),  # fmt: skip
        helper.make_node("Conv", ["c2", "dil"], ["c3"], name="dil", dilations=[2, 2]),
    ]
    inits = {"w1": w1, **bn, "dw": dw, "dil": dil}
    path = _save(tmp_path, nodes, [("x", [1, 3, 16, 16])], inits)
    imp = read_onnx(path)
    conv1, dwl, dill = imp.spec.layers
    assert (conv1.kind, conv1.k, conv1.h, conv1.pad) == ("conv", 8, 16, 1)
    assert imp.folded_nodes == 1 and conv1.weight_density == pytest.approx(7 / 8)
    factor = bn["g"] / np.sqrt(bn["v"] + 1e-3)
    np.testing.assert_allclose(
        imp.tensors["conv1"].weights, w1 * factor[:, None, None, None], rtol=1e-6
    )
    np.testing.assert_allclose(imp.tensors["conv1"].bias, bn["b"] - bn["m"] * factor, rtol=1e-5)
    assert (dwl.groups, dwl.c, dwl.k, dwl.stride, dwl.out_h) == (8, 8, 8, 2, 8)
    # conv1 reads the raw input (uniform default input: dense); dw reads post-ReLU values
    assert conv1.activation_density == 1.0 and 0.2 < dwl.activation_density < 0.8
    # dilation has no conv field: placed as its implicit GEMM with the same MACs
    assert (dill.kind, dill.m, dill.n, dill.k) == ("gemm", 4 * 4, 4, 8 * 9)
    assert imp.layers[2].macs == 16 * 4 * 72
    assert any("implicit GEMM" in w for w in imp.warnings)


def test_gemm_transposes_batched_matmul_and_computed_weights(tmp_path: Path) -> None:
    wt = RNG.standard_normal((5, 6))  # Gemm B stored transposed (outputs x inputs)
    nodes = [
        helper.make_node("Gemm", ["x", "wt", "bias"], ["y1"], name="fc", transB=1),
        # a weight computed by nodes: Mul of two initialisers folds to a constant
        helper.make_node("Mul", ["half", "w2"], ["w2h"]),
        helper.make_node("MatMul", ["y1", "w2h"], ["y2"], name="fc2"),
        helper.make_node("Reshape", ["y2", "shape"], ["y3"]),
        helper.make_node("MatMul", ["y3", "y3t"], ["y4"], name="bmm"),
    ]
    nodes.insert(4, helper.make_node("Transpose", ["y3"], ["y3t"], perm=[0, 2, 1]))
    inits = {"wt": wt, "bias": np.zeros(5), "half": np.array(0.5), "w2": np.eye(5, 4),
             "shape": np.array([2, 2, 2])}  # fmt: skip
    g_path = _save(tmp_path, nodes, [("x", [2, 6])], inits)
    m = onnx.load(str(g_path))
    m.graph.initializer[-1].CopyFrom(numpy_helper.from_array(np.array([2, 2, 2]), "shape"))
    onnx.save(m, str(g_path))
    imp = read_onnx(g_path, measure=False)
    fc, fc2, bmm = imp.spec.layers
    assert (fc.kind, fc.inputs, fc.outputs, fc.batch, fc.bias) == ("fc", 6, 5, 2, True)
    np.testing.assert_allclose(imp.tensors["fc"].weights, wt, rtol=1e-6)
    assert (fc2.inputs, fc2.outputs) == (5, 4) and fc2.weight_density == pytest.approx(0.2)
    np.testing.assert_allclose(imp.tensors["fc2"].weights, 0.5 * np.eye(5, 4).T)
    assert (bmm.kind, bmm.m, bmm.n, bmm.k, bmm.batch) == ("gemm", 2, 2, 2, 2)
    assert imp.macs_total == 2 * 6 * 5 + 2 * 5 * 4 + 2 * 2 * 2 * 2


@pytest.mark.parametrize(("op", "gates"), [("LSTM", 4), ("GRU", 3)])
def test_recurrent_gate_matrix(tmp_path: Path, op: str, gates: int) -> None:
    hidden, inp, steps = 6, 5, 7
    w = RNG.standard_normal((1, gates * hidden, inp))
    r = RNG.standard_normal((1, gates * hidden, hidden))
    b = RNG.standard_normal((1, 2 * gates * hidden))
    node = helper.make_node(op, ["x", "W", "R", "B"], ["y"], name="rnn", hidden_size=hidden)
    path = _save(tmp_path, [node], [("x", [steps, 1, inp])], {"W": w, "R": r, "B": b})
    imp = read_onnx(path, measure=False)
    (spec,) = imp.spec.layers
    if op == "LSTM":
        assert (spec.kind, spec.input_size, spec.hidden_size) == ("lstm", inp, hidden)
    else:
        assert (spec.kind, spec.inputs, spec.outputs) == ("fc", inp + hidden, gates * hidden)
    np.testing.assert_allclose(imp.tensors["rnn"].weights, np.concatenate([w[0], r[0]], 1),
                               rtol=1e-6)  # fmt: skip
    assert imp.macs_total == steps * gates * hidden * (inp + hidden)
    assert any(f"one step of {steps}" in x for x in imp.warnings)


def test_two_data_inputs_skip_measurement_with_warning(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["y0"], name="mm"),
        helper.make_node("Add", ["y0", "z"], ["y"]),
    ]
    path = _save(tmp_path, nodes, [("x", [1, 4]), ("z", [1, 3])], {"w": np.eye(4, 3)})
    imp = read_onnx(path)
    assert imp.spec.layers[0].activation_density == 1.0
    assert any("2 data inputs (x, z)" in w for w in imp.warnings)
    rows = {r["op"]: r for r in imp.op_table()}
    assert rows["Add"]["count"] == 1 and rows["Add"]["flops"] == 3
