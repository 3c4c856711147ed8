"""Regression tests of a mutational fuzz of the ONNX input (one per failure class it found).

Each model is a few nodes built with onnx.helper. A malformed model is one line on stderr that
names the file and the node or tensor, exit 2, nothing written; an unusual but valid one imports.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from archsim.cli import main  # noqa: E402


def _save(path: Path, nodes, inputs, inits, opset: int = 13) -> Path:
    g = helper.make_graph(
        nodes, "g", inputs, [helper.make_tensor_value_info(nodes[-1].output[0], 1, None)], inits
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def _w(name: str, shape, dtype=np.float32) -> TensorProto:
    return numpy_helper.from_array(np.full(shape, 0.5, dtype), name)


def _conv_model(path: Path, bn_scale=8, bias_shape=(8,), **conv_attrs) -> Path:
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], **conv_attrs}
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", **attrs),
        helper.make_node("BatchNormalization", ["c", "s", "t", "m", "v"], ["y"], name="bn1"),
    ]
    inits = [_w("w", (8, 4, 3, 3)), _w("b", bias_shape), _w("s", (bn_scale,))]
    inits += [_w("t", (8,)), _w("m", (8,)), _w("v", (8,))]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])
    return _save(path, nodes, [x], inits)


def _lstm_model(path: Path, inputs=("x", "W", "R"), w_shape=(1, 32, 6), **attrs) -> Path:
    node = helper.make_node("LSTM", list(inputs), ["Y", "Yh"], name="lstm", **attrs)
    inits = [_w("W", w_shape), _w("R", (1, 32, 8))]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, 6])
    return _save(path, [node], [x], inits)


def _mlp(path: Path, w: TensorProto | None = None, name: str = "fc1") -> Path:
    w = w if w is not None else _w("w1", (16, 8))
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name=name),
        helper.make_node("Relu", ["h1"], ["y"], name="relu"),
    ]
    return _save(path, nodes, [helper.make_tensor_value_info("x", 1, [1, 16])], [w])


def _refused(tmp_path: Path, capsys, model: Path, expect: str, *extra: str) -> str:
    out = tmp_path / "out" / "wl.yaml"
    rc = main(["import", "onnx", str(model), "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith(f"archsim: error: {model}: ") and expect in err, err
    assert not (tmp_path / "out").exists()
    return err


def test_batchnorm_parameters_of_another_channel_count_are_named(tmp_path, capsys) -> None:
    """Before: ValueError 'operands could not be broadcast' while folding the BatchNorm."""
    model = _conv_model(tmp_path / "bad.onnx", bn_scale=5)
    _refused(tmp_path, capsys, model, "node 'bn1' (BatchNormalization): 's' has shape (5,)")


@pytest.mark.parametrize(
    ("dtype", "expect"),
    [
        (np.complex64, "unsupported type: tensor(complex64)"),  # before: ComplexWarning + OK
        (np.float16, "inconsistent type tensor(float16)"),  # before: refused by onnxruntime only
        (None, "unsupported type: tensor(string)"),  # before: ValueError traceback
    ],
)
def test_a_weight_of_another_type_than_its_input_is_refused(
    tmp_path, capsys, dtype, expect
) -> None:
    if dtype is None:
        w = helper.make_tensor("w1", TensorProto.STRING, [16, 8], [b"x"] * 128)
    else:
        w = _w("w1", (16, 8), dtype)
    model = _mlp(tmp_path / "bad.onnx", w)
    err = _refused(tmp_path, capsys, model, expect, "--no-measure")
    assert "node name: fc1" in err


@pytest.mark.parametrize(
    ("kwargs", "expect"),
    [
        ({"w_shape": (192,)}, "input W has shape (192,)"),  # before: ValueError unpacking
        ({"w_shape": (0, 32, 6)}, "input W has shape (0, 32, 6)"),  # before: IndexError
        ({"hidden_size": 0}, "hidden_size 0"),  # before: 2,240 MACs with --no-measure
        ({"direction": "sideways"}, "direction 'sideways'"),
    ],
)
def test_recurrent_weights_and_attributes_are_checked(tmp_path, capsys, kwargs, expect) -> None:
    model = _lstm_model(tmp_path / "bad.onnx", **kwargs)
    err = _refused(tmp_path, capsys, model, expect, "--no-measure")
    assert "node 'lstm' (LSTM)" in err and "allowed:" in err


def test_a_node_against_its_schema_is_named(tmp_path, capsys) -> None:
    """Before: an LSTM with X only was an IndexError; an attribute without its type (one
    flipped bit) a TypeError in int(None)."""
    model = _lstm_model(tmp_path / "bad.onnx", inputs=("x",))
    _refused(tmp_path, capsys, model, "node 'lstm' (LSTM): Node(lstm) with schema")
    model = _conv_model(tmp_path / "bad2.onnx")
    m = onnx.load(str(model))
    next(a for a in m.graph.node[0].attribute if a.name == "pads").ClearField("type")
    onnx.save(m, str(model))
    _refused(tmp_path, capsys, model, "node 'conv1' (Conv): Field 'type' of 'attr'")


@pytest.mark.parametrize(
    ("attrs", "expect"),
    [
        ({"group": 3}, "group 3 with 4 input channels"),
        ({"kernel_shape": [5, 5]}, "kernel_shape [5, 5] contradicts its 3x3 weight"),
        ({"auto_pad": "SAME_UPPER"}, "auto_pad 'SAME_UPPER' with pads"),
        ({"bias_shape": (8, 1)}, "bias 'b' has shape (8, 1)"),
    ],
)
def test_conv_attributes_that_only_onnxruntime_refused(tmp_path, capsys, attrs, expect) -> None:
    """Before: imported with --no-measure at wrong MACs (or a 5x5 kernel on 3x3 weights)."""
    model = _conv_model(tmp_path / "bad.onnx", **attrs)
    _refused(tmp_path, capsys, model, f"node 'conv1' (Conv): {expect}", "--no-measure")


def test_an_empty_auto_pad_is_notset(tmp_path, capsys) -> None:
    """onnxruntime runs auto_pad "" as NOTSET: it stays a conv layer with its pads."""
    model = _conv_model(tmp_path / "m.onnx", auto_pad="")
    out = tmp_path / "wl.yaml"
    assert main(["import", "onnx", str(model), "-o", str(out)]) == 0, capsys.readouterr().err
    assert "kind: conv" in out.read_text()


def test_an_initializer_with_a_negative_dimension_is_refused(tmp_path, capsys) -> None:
    """Before: the conv went unplaced with --no-measure, and compress rewrote the model."""
    model = _conv_model(tmp_path / "bad.onnx")
    m = onnx.load(str(model))
    w = next(t for t in m.graph.initializer if t.name == "w")
    w.dims[0] = -8
    onnx.save(m, str(model))
    _refused(tmp_path, capsys, model, "initializer 'w': dimensions [-8, 4, 3, 3]", "--no-measure")
    rc = main(["compress", str(model), "-o", str(tmp_path / "c.onnx")])
    assert rc == 2 and not (tmp_path / "c.onnx").exists()


def test_a_model_saved_twice_into_one_file_is_refused(tmp_path, capsys) -> None:
    """Before: protobuf merged both copies: every layer twice, double MACs (--no-measure)."""
    good = _mlp(tmp_path / "good.onnx")
    model = tmp_path / "bad.onnx"
    model.write_bytes(good.read_bytes() * 2)
    _refused(tmp_path, capsys, model, "node 'fc1' (MatMul) writes 'h1'", "--no-measure")


def test_a_very_long_node_name_imports(tmp_path, capsys) -> None:
    """Before: 'cannot write: File name too long' (its data folder was named after it)."""
    model = _mlp(tmp_path / "m.onnx", name="x" * 5000)
    out = tmp_path / "wl.yaml"
    assert main(["import", "onnx", str(model), "-o", str(out)]) == 0, capsys.readouterr().err
    (folder,) = (p for p in (tmp_path / "wl.data").iterdir() if p.is_dir())
    assert folder.name == "x" * 100


def test_a_file_name_with_a_line_separator_imports(tmp_path, capsys) -> None:
    """Before: the workload name (the file's stem) held U+2028 and was refused."""
    model = _mlp(tmp_path / "a\u2028b.onnx")
    out = tmp_path / "wl.yaml"
    assert main(["import", "onnx", str(model), "-o", str(out)]) == 0, capsys.readouterr().err
    assert "name: a_b" in out.read_text()
