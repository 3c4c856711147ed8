"""Deep Compression on arrays: pruning, k-means sharing, Huffman sizes, CSC storage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csc_matrix

from archsim.compress import csc_entries, huffman_bits, kmeans_share, layer_storage, prune_mask
from archsim.compress.huffman import huffman_lengths
from archsim.datapath.eie_encode import encode_eie


def test_prune_keeps_exact_count_of_largest() -> None:
    w = np.array([[0.5, -3.0, 0.1], [2.0, 0.0, -0.2]])
    mask = prune_mask(w, 0.5)
    assert mask.sum() == 3
    assert set(np.abs(w[mask])) == {3.0, 2.0, 0.5}


def test_kmeans_linear_init_and_codes() -> None:
    v = np.array([-1.0, -0.9, 0.0, 0.1, 2.0, 2.1])
    cents, codes = kmeans_share(v, 2)  # 3 shared values
    np.testing.assert_allclose(cents, [-0.95, 0.05, 2.05], rtol=1e-6)
    assert codes.tolist() == [0, 0, 1, 1, 2, 2]


def test_huffman_lengths_and_bits() -> None:
    # counts 5, 2, 1, 1 -> lengths 1, 2, 3, 3
    assert huffman_lengths(np.array([5, 2, 1, 1])).tolist() == [1, 2, 3, 3]
    assert huffman_bits(np.array([0] * 5 + [1] * 2 + [2, 3]), 4) == 5 + 4 + 3 + 3
    assert huffman_bits(np.array([2, 2, 2]), 4) == 3  # one symbol: 1 bit each


def test_csc_relative_index_padding() -> None:
    codes = np.zeros((40, 2), dtype=np.int64)
    codes[[0, 20, 39], 0] = [1, 2, 3]  # gaps 0, 19, 18 with 4-bit indices (jump 16)
    code_stream, index_stream = csc_entries(codes, 4)
    assert code_stream.tolist() == [1, 2, 3, 0, 0]
    assert index_stream.tolist() == [0, 3, 2, 15, 15]


def test_storage_matches_eie_encoder_on_one_pe() -> None:
    """The report's entries equal those EIE's encoder stores (one PE, same index bits)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((300, 200)).astype(np.float32)
    mask = prune_mask(w, 0.08)
    _, codes = kmeans_share(w[mask], 4)
    cm = np.zeros(w.shape, np.int64)
    cm[mask] = codes + 1
    st = layer_storage("x", cm, 4, 4)
    s = csc_matrix(cm)
    enc = encode_eie(
        300, 200, s.indptr, s.indices, s.data.astype(np.uint8), np.zeros(300, np.uint8), 1, 4
    )
    assert enc.total_entries == st.entries
    assert st.csc_bytes == enc.total_entries * 8 // 8
    assert st.nnz == int(mask.sum()) == 4800
    print(f"ratio {st.ratio:.1f}x, huffman {st.huffman_bytes} B vs csc {st.csc_bytes} B")
    assert st.huffman_bytes < st.csc_bytes


def test_prune_rejects_bad_density() -> None:
    with pytest.raises(ValueError):
        prune_mask(np.ones(3), 1.5)


def test_alexnet_plan_in_graph_order(tmp_path) -> None:
    """Han et al. Table 4 densities land on the 5 convs and 3 fcs in order; the written model
    runs in onnxruntime; a model of another shape is refused."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from archsim.cli import main
    from archsim.compress.model import ALEXNET_DENSITIES, CompressionPlan, compress_onnx

    rng = np.random.default_rng(1)
    nodes, inits, prev = [], [], "x"
    for i in range(5):
        w = rng.standard_normal((4, 4 if i else 1, 3, 3)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"cw{i}"))
        nodes.append(helper.make_node("Conv", [prev, f"cw{i}"], [f"c{i}"], name=f"conv{i + 1}",
                                      pads=[1, 1, 1, 1]))  # fmt: skip
        prev = f"c{i}"
    nodes.append(helper.make_node("Flatten", [prev], ["f"]))
    prev = "f"
    for i, (k, n) in enumerate([(64, 40), (40, 40), (40, 10)]):
        inits.append(numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32),
                                             f"fw{i}"))  # fmt: skip
        nodes.append(helper.make_node("MatMul", [prev, f"fw{i}"], [f"m{i}"], name=f"fc{i + 6}"))
        prev = f"m{i}"
    g = helper.make_graph(nodes, "a", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                          [1, 1, 4, 4])], [helper.make_tensor_value_info(prev, TensorProto.FLOAT,
                          [1, 10])], inits)  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "a.onnx"))
    plan = CompressionPlan(ordered=ALEXNET_DENSITIES)
    report = compress_onnx(tmp_path / "a.onnx", tmp_path / "c.onnx", plan)
    want = [*ALEXNET_DENSITIES["conv"], *ALEXNET_DENSITIES["fc"]]
    assert [st.name for st in report][-3:] == ["fc6", "fc7", "fc8"]
    for st, d in zip(report, want, strict=True):
        assert st.nnz == round(d * st.rows * st.cols)
    sess = ort.InferenceSession(str(tmp_path / "c.onnx"), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.ones((1, 1, 4, 4), np.float32)})[0].shape == (1, 10)
    m.graph.node.pop()
    m.graph.output[0].name = "m1"
    onnx.save(m, str(tmp_path / "b.onnx"))
    assert main(["compress", str(tmp_path / "b.onnx"), "--plan", "alexnet"]) == 2
