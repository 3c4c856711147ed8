"""A fourth audit of ONNX import and compress: control flow that hung or dropped MACs, weights
that were NaN, tensors too large to measure, models compress wrote that would not load."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from archsim.cli import main  # noqa: E402
from archsim.compress.model import CompressionPlan, compress_onnx  # noqa: E402
from archsim.errors import WorkloadError  # noqa: E402
from archsim.workload.onnx import read_onnx  # noqa: E402

RNG = np.random.default_rng(0)
vi = helper.make_tensor_value_info


def _save(tmp: Path, nodes, inputs, inits=(), outputs=None, name="m.onnx", opset=17) -> Path:
    outs = outputs or [vi(nodes[-1].output[0], TensorProto.FLOAT, None)]
    g = helper.make_graph(nodes, "g", inputs, outs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, str(tmp / name))
    return tmp / name


def _w(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def test_a_loop_of_a_billion_trips_is_not_evaluated(tmp_path):
    # constant folding ran the Loop with onnx's reference evaluator: no end
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body",
        [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("v_in", TensorProto.FLOAT, [1])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(np.array([1.0], np.float32), "one")],
    )  # fmt: skip
    nodes = [
        helper.make_node("Loop", ["M", "c", "v0"], ["vf"], body=body),
        helper.make_node("Mul", ["x", "vf"], ["x2"]),
        helper.make_node("MatMul", ["x2", "w"], ["y"], name="mm"),
    ]
    inits = [
        numpy_helper.from_array(np.array(10**9, np.int64), "M"),
        numpy_helper.from_array(np.array(True), "c"),
        numpy_helper.from_array(np.array([0.0], np.float32), "v0"),
        numpy_helper.from_array(_w(8, 8), "w"),
    ]
    path = _save(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [1, 8])], inits)
    t0 = time.perf_counter()
    with pytest.raises(WorkloadError):
        read_onnx(path)
    assert time.perf_counter() - t0 < 30


def test_a_conv_inside_an_if_is_refused_not_dropped(tmp_path):
    # the If's Conv (37.7 M MACs) was left out of the workload without a word
    def branch(n: str):
        conv = helper.make_node("Conv", ["x", "w"], [n + "o"], name=n + "conv", pads=[1, 1, 1, 1])
        return helper.make_graph([conv], n, [], [vi(n + "o", TensorProto.FLOAT, [1, 8, 8, 8])])

    nodes = [
        helper.make_node("If", ["c"], ["y1"], name="if", then_branch=branch("t"),
                         else_branch=branch("e")),
        helper.make_node("Flatten", ["y1"], ["f"]),
        helper.make_node("MatMul", ["f", "w2"], ["y"], name="small"),
    ]  # fmt: skip
    inits = [
        numpy_helper.from_array(np.array(True), "c"),
        numpy_helper.from_array(_w(8, 8, 3, 3), "w"),
        numpy_helper.from_array(_w(512, 2), "w2"),
    ]
    path = _save(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    with pytest.raises(WorkloadError, match=r"node 'if' \(If\) runs Conv node '.conv' in its "
                       r"subgraph: control flow is not modelled"):  # fmt: skip
        read_onnx(path)


def _gemm(tmp: Path, w: np.ndarray, name="m.onnx") -> Path:
    dtype = {np.float16: TensorProto.FLOAT16, np.float32: TensorProto.FLOAT}[w.dtype.type]
    node = helper.make_node("Gemm", ["x", "w"], ["y"], name="g", transB=1)
    inputs = [vi("x", dtype, [1, w.shape[1]])]
    outs = [vi("y", dtype, None)]
    return _save(tmp, [node], inputs, [numpy_helper.from_array(w, "w")], outs, name)


def test_weights_from_a_constant_node_must_be_finite(tmp_path):
    w = _w(4, 8)
    w[0, 0], w[1, 1] = np.nan, np.inf
    nodes = [
        helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(w, "wv")),
        helper.make_node("Gemm", ["x", "w"], ["y"], name="g", transB=1),
    ]
    path = _save(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [1, 8])])
    with pytest.raises(WorkloadError, match=r"node 'g' \(Gemm\): its weights hold 2 NaN or "):
        read_onnx(path)


def test_a_batchnorm_with_a_negative_variance_is_refused(tmp_path):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"], name="bn"),
    ]
    inits = [numpy_helper.from_array(a, n) for n, a in (
        ("w", _w(4, 3, 3, 3)), ("s", np.ones(4, np.float32)), ("b", np.zeros(4, np.float32)),
        ("m", np.zeros(4, np.float32)), ("v", -np.ones(4, np.float32)))]  # fmt: skip
    path = _save(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [1, 3, 8, 8])], inits)
    with pytest.raises(WorkloadError, match=r"node 'bn' \(BatchNormalization\): variance \+ "):
        read_onnx(path)


def test_a_tensor_too_large_to_measure_is_refused_before_it_is_made(tmp_path):
    # a Range of 3e9 elements took 24 GB and 36 s while densities were measured
    def const(name: str, v: int):
        value = numpy_helper.from_array(np.array(v, np.int64))
        return helper.make_node("Constant", [], [name], value=value)

    nodes = [const("s", 0), const("l", 3 * 10**9), const("d", 1),
             helper.make_node("Range", ["s", "l", "d"], ["r"]),
             helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]  # fmt: skip
    outs = [vi("y", TensorProto.FLOAT, None), vi("r", TensorProto.INT64, None)]
    path = _save(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [1, 8])],
                 [numpy_helper.from_array(_w(8, 8), "w")], outs)  # fmt: skip
    with pytest.raises(WorkloadError, match=r"tensor 'r' of shape \(3000000000,\) needs 1.2e\+10"):
        read_onnx(path)
    assert len(read_onnx(path, measure=False).spec.layers) == 1


def test_compress_keeps_the_weights_type(tmp_path):
    # float32 weights written into an fp16 graph: onnxruntime refused to load the model
    src = _gemm(tmp_path, _w(16, 32, dtype=np.float16))
    out = tmp_path / "c.onnx"
    compress_onnx(src, out, CompressionPlan(fc_density=0.5))
    (init,) = onnx.load(str(out)).graph.initializer
    assert init.data_type == TensorProto.FLOAT16
    arr = numpy_helper.to_array(init)
    assert np.count_nonzero(arr) == 256 and len(np.unique(arr[arr != 0])) <= 16


def test_a_shared_weight_is_compressed_once(tmp_path):
    nodes = [
        helper.make_node("Gemm", ["x", "w"], ["h"], name="g1", transB=1),
        helper.make_node("Relu", ["h"], ["h2"]),
        helper.make_node("Gemm", ["h2", "w"], ["y"], name="g2", transB=1),
    ]
    src = _save(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [1, 16])],
                [numpy_helper.from_array(_w(16, 16), "w")])  # fmt: skip
    with pytest.raises(WorkloadError, match=r"initializer 'w' is the weight of 'g1' and 'g2', "
                       r"asked at densities 0.5 and 0.1"):  # fmt: skip
        compress_onnx(src, None, CompressionPlan(densities={"g1": 0.5, "g2": 0.1}))
    report = compress_onnx(src, None, CompressionPlan(fc_density=0.5))
    assert len(report) == 1  # one tensor: its bytes counted once


def test_op_table_sizes_do_not_overflow_at_a_huge_batch(tmp_path, capsys):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    path = _save(tmp_path, nodes, [vi("x", TensorProto.FLOAT, ["N", 4, 16, 16])],
                 [numpy_helper.from_array(_w(4, 4, 3, 3), "w")])  # fmt: skip
    argv = ["import", "onnx", str(path), "--batch", str(10**17), "--no-measure",
            "-o", str(tmp_path / "w.yaml")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out  # np.prod wrapped around int64: "conv layers ... -65.98"
    assert not re.search(r"(?<![\w.])-\d", out), out


def test_a_filter_larger_than_its_input_is_named(tmp_path):
    # "shapes unknown after shape inference"
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="c")]
    path = _save(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                 [numpy_helper.from_array(_w(8, 3, 7, 7), "w")])  # fmt: skip
    with pytest.raises(WorkloadError, match=r"c: a 7x7 filter on a 4x4 input \(pads \[0, 0, "):
        read_onnx(path)
