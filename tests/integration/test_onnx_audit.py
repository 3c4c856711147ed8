"""ONNX models as a user runs them (twenty-ninth session's audit): `run --batch` on token
models, the import's warnings in a run, SCNN on tensors far below 1, external data, fc layers
on the systolic arrays."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import archsim  # noqa: E402
from archsim.cli import main  # noqa: E402
from archsim.errors import WorkloadError  # noqa: E402
from archsim.workload.onnx import read_onnx  # noqa: E402

TOKENS, WIDTH, HIDDEN = 6, 16, 32


def _save(path: Path, nodes: list, shape: list, weights: list) -> Path:
    """One-input, one-output model of ``nodes`` (x and y of ``shape``), opset 17."""
    graph = helper.make_graph(
        nodes, path.stem,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        weights,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _tokens(path: Path, batch: int | str, scale: float = 1.0, last: str = "Softmax") -> Path:
    """x (batch, 6 tokens, 16) -> MatMul W1 -> Relu -> MatMul W2 -> Softmax: a transformer
    MLP whose fc rows are batch x tokens; ``batch`` a number (static) or a name (dynamic)."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array((rng.random((WIDTH, HIDDEN)) * scale).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.random((HIDDEN, WIDTH)) * scale).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y0"], name="fc2"),
        helper.make_node(last, ["y0"], ["y"], axis=-1),
    ]
    return _save(path, nodes, [batch, TOKENS, WIDTH], [w1, w2])


def _macs(out: Path) -> int:
    rows = json.loads((out / "results.json").read_text())["layers"]
    return sum(r["macs_dense"] for r in rows)


def test_run_batch_scales_token_rows_of_a_dynamic_model_and_refuses_a_fixed_one(tmp_path):
    """`run --batch N` set every fc layer's rows to N after importing at N (a ViT's 197
    token rows per image became N); a model with a fixed batch silently ran its own."""
    dyn = _tokens(tmp_path / "dyn.onnx", "N")
    per_image = TOKENS * (WIDTH * HIDDEN + HIDDEN * WIDTH)
    for batch in (1, 4):
        out = tmp_path / f"b{batch}"
        assert main(["run", "h100", str(dyn), "--batch", str(batch), "-o", str(out), "-q",
                     "--no-report"]) == 0  # fmt: skip
        assert _macs(out) == batch * per_image
    static = _tokens(tmp_path / "static.onnx", 1)
    assert main(["run", "h100", str(static), "-o", str(tmp_path / "s"), "-q", "--no-report"]) == 0
    assert _macs(tmp_path / "s") == per_image
    with pytest.raises(WorkloadError, match=r"fixed at 1; --batch 4 needs a model exported"):
        read_onnx(static, batch=4, batch_required=True)
    assert main(["run", "h100", str(static), "--batch", "4", "-o", str(tmp_path / "s4")]) == 2
    assert not (tmp_path / "s4").exists()


def test_a_run_reports_the_import_warnings(tmp_path, capsys) -> None:
    """The import's warnings (ops whose FLOPs are not modelled, dropped nodes) were lost in
    `archsim run HW model.onnx`; they now go to the console, results.json and the page."""
    model = _tokens(tmp_path / "m.onnx", 1, last="Hardmax")  # an op the FLOP table lacks
    out = tmp_path / "out"
    assert main(["run", "h100", str(model), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    note = "op Hardmax (1 nodes): FLOPs not modelled (0)"
    assert note in printed
    assert any(note in w for w in json.loads((out / "results.json").read_text())["warnings"])
    assert note in (out / "report.html").read_text()
    assert "data: folder not read" not in printed  # a GPU run writes no tensors to ignore


def _conv(path: Path, scale: float) -> Path:
    """x (1, 8, 12, 12) -> Conv 3x3 (16 filters) -> Relu -> Conv 3x3 (8), weights x ``scale``."""
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array((rng.random((16, 8, 3, 3)) * scale).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.random((8, 16, 3, 3)) * scale).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["h"], name="c1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["y"], name="c2", pads=[1, 1, 1, 1]),
    ]
    return _save(path, nodes, [1, 8, 12, 12], [w1, w2])


def test_scnn_says_when_real_tensors_round_to_zero(tmp_path) -> None:
    """An untrained model's tiny activations round to zero in SCNN's 16-bit fixed point, so
    whole layers computed nothing, without a word."""
    model = _conv(tmp_path / "tiny.onnx", scale=1e-4)
    assert main(["run", "scnn", str(model), "-o", str(tmp_path / "o"), "-q", "--no-report"]) == 0
    warns = json.loads((tmp_path / "o" / "results.json").read_text())["warnings"]
    assert any("round to zero in 16-bit fixed point" in w and "'c2'" in w for w in warns), warns
    fine = _conv(tmp_path / "fine.onnx", scale=1.0)
    assert main(["run", "scnn", str(fine), "-o", str(tmp_path / "f"), "-q", "--no-report"]) == 0
    warns = json.loads((tmp_path / "f" / "results.json").read_text())["warnings"]
    assert not [w for w in warns if "round to zero" in w]
    assert not [w for w in archsim.simulate("scnn", "alexnet").warnings if "round to zero" in w]


def test_external_data_is_named_and_hashed(tmp_path) -> None:
    """A model whose weights live in MODEL.onnx.data (torch's dynamo exporter): a missing data
    file is named; changed weights change the recorded sha256."""
    src = _tokens(tmp_path / "src.onnx", 1)
    model = onnx.load(str(src))
    ext = tmp_path / "ext.onnx"
    onnx.save(model, str(ext), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.onnx.data", size_threshold=0)  # fmt: skip
    before = read_onnx(ext, measure=False).spec.source
    data = tmp_path / "ext.onnx.data"
    raw = bytearray(data.read_bytes())
    raw[:64] = bytes(64)
    data.write_bytes(bytes(raw))
    after = read_onnx(ext, measure=False).spec.source
    assert before != after and "sha256" in after
    data.unlink()
    with pytest.raises(WorkloadError, match=r"stored outside it, in .*ext\.onnx\.data"):
        read_onnx(ext)


def test_systolic_arrays_run_fc_layers_as_their_gemm(tmp_path) -> None:
    """Every ONNX classifier or transformer projection imports as fc, which the systolic
    presets refused; an fc runs as the GEMM m = rows, n = outputs, k = inputs."""
    layers = [
        {"kind": "fc", "name": "fc1", "inputs": 256, "outputs": 128, "batch": 4,
         "weight_density": 1.0, "activation_density": 1.0},
        {"kind": "gemm", "name": "g", "m": 4, "n": 128, "k": 256},
    ]  # fmt: skip
    wl = archsim.WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "m", "source": "t", "layers": layers}
    )
    for hw in ("systolic_32x32_os", "systolic_tpu_128x128_ws"):
        df = archsim.simulate(hw, wl).to_dataframe()
        assert df["kind"].tolist() == ["fc", "gemm"]
        assert df["macs_dense"].tolist() == [4 * 128 * 256] * 2
        assert df["energy_array_pj"].iloc[0] == df["energy_array_pj"].iloc[1]
    model = _tokens(tmp_path / "t.onnx", 1)
    assert main(["run", "systolic_32x32_os", str(model), "-o", str(tmp_path / "o"), "-q",
                 "--no-report"]) == 0  # fmt: skip


def test_a_baseline_that_reads_tensors_gets_them(tmp_path) -> None:
    """`run h100 model.onnx --baseline scnn` wrote no tensors (h100 reads none), so the SCNN
    baseline ran synthetic data: its cycles differed from `run scnn model.onnx`."""
    model = _conv(tmp_path / "c.onnx", scale=1.0)
    assert main(["run", "scnn", str(model), "-o", str(tmp_path / "s"), "-q", "--no-report"]) == 0
    scnn = json.loads((tmp_path / "s" / "results.json").read_text())["total_cycles"]
    assert main(["run", "h100", str(model), "--baseline", "scnn", "-o", str(tmp_path / "b"),
                 "-q", "--no-report"]) == 0  # fmt: skip
    meta = json.loads((tmp_path / "b" / "results.json").read_text())["metadata"]
    assert meta["baseline"]["total_cycles"] == scnn


def test_batch_refusal_looks_at_the_data_input_only(tmp_path) -> None:
    """A second, fixed input (a position table) is not the batch: `--batch 4` used to be
    refused because its dimension 0 was fixed at 6."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.random((WIDTH, HIDDEN)).astype(np.float32), "w1")
    nodes = [
        helper.make_node("Add", ["x", "pos"], ["xp"]),
        helper.make_node("MatMul", ["xp", "w1"], ["y"], name="fc1"),
    ]
    graph = helper.make_graph(
        nodes, "twoin",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", TOKENS, WIDTH]),
         helper.make_tensor_value_info("pos", TensorProto.FLOAT, [TOKENS, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", TOKENS, HIDDEN])],
        [w1],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "twoin.onnx"
    onnx.save(model, str(path))
    imp = read_onnx(path, batch=4, batch_required=True, measure=False)
    assert imp.spec.layers[0].batch == 4 * TOKENS


def test_an_fc_followed_by_relu_says_so(tmp_path) -> None:
    """Imported fc layers never set `relu` (VGG-16's fc6/fc7 are followed by one), so
    training and inference passes left their ReLU kernels out."""
    layers = read_onnx(_tokens(tmp_path / "t.onnx", 1), measure=False).spec.layers
    assert [(lay.name, lay.relu) for lay in layers] == [("fc1", True), ("fc2", False)]
