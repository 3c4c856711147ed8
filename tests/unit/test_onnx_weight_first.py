"""y = W x in ONNX (MatMul with the constant weight first, EIE's own form of a layer): it was
imported as a dense gemm with no weights, which EIE refused and `compress` did not find."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from archsim.cli import main  # noqa: E402
from archsim.workload.eie_format import read_eie_dir  # noqa: E402
from archsim.workload.onnx import read_onnx  # noqa: E402


def _model(path: Path, w: np.ndarray, x_shape: list[int]) -> Path:
    out_shape = [w.shape[0], *x_shape[1:]] if len(x_shape) > 1 else [w.shape[0]]
    g = helper.make_graph(
        [helper.make_node("MatMul", ["W", "x"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(w, "W")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def _sparse(rows: int, cols: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    keep = rng.random((rows, cols)) < 0.1
    return (rng.standard_normal((rows, cols)) * keep).astype(np.float32)


@pytest.mark.parametrize(("x_shape", "batch"), [([96], 1), ([96, 1], 1), ([96, 5], 5)])
def test_a_constant_first_operand_is_an_fc_layer_with_its_weights(tmp_path, x_shape, batch):
    w = _sparse(40, 96)
    imp = read_onnx(_model(tmp_path / "wx.onnx", w, x_shape))
    (spec,) = imp.spec.layers
    assert (spec.kind, spec.inputs, spec.outputs, spec.batch) == ("fc", 96, 40, batch)
    np.testing.assert_array_equal(imp.tensors["mm"].weights, w)  # (outputs, inputs), as is
    assert spec.weight_density == pytest.approx(np.count_nonzero(w) / w.size)
    # the activations measured are x's (uniform [0, 1) sample inputs: all non-zero)
    assert imp.tensors["mm"].activations.size == 96 * batch and spec.activation_density == 1.0


def test_eie_runs_the_imported_layer_on_w_as_stored(tmp_path: Path):
    w = _sparse(40, 96)
    model = _model(tmp_path / "wx.onnx", w, [96, 1])
    assert main(["import", "onnx", str(model), "-o", str(tmp_path / "wx.yaml")]) == 0
    layer = read_eie_dir(tmp_path / "wx.data" / "mm", n_rows=40)
    dense = np.zeros((layer.n_rows, layer.n_cols), dtype=bool)
    for col in range(layer.n_cols):
        dense[layer.row_idx[layer.indptr[col] : layer.indptr[col + 1]], col] = True
    # real weights shared by k-means: the codes' positions are W's non-zeros, not W.T's
    np.testing.assert_array_equal(dense, w != 0)
    assert main(["run", "tiny_eie", str(tmp_path / "wx.yaml"), "-o", str(tmp_path / "r"),
                 "-q", "--no-report"]) == 0  # fmt: skip


def test_compress_prunes_a_constant_first_operand(tmp_path: Path):
    w = _sparse(40, 96) + np.float32(0.01)  # dense: every weight non-zero
    model = _model(tmp_path / "wx.onnx", w, [96, 1])
    out = tmp_path / "c.onnx"
    assert main(["compress", str(model), "-o", str(out), "--fc-density", "0.25"]) == 0
    pruned = numpy_helper.to_array(onnx.load(str(out)).graph.initializer[0])
    assert pruned.shape == (40, 96)
    assert np.count_nonzero(pruned) == pytest.approx(0.25 * w.size, abs=1)
    assert read_onnx(out).spec.layers[0].weight_density == pytest.approx(0.25, abs=1 / w.size)
