"""End to end: the digits MLP trained in-project, Deep-Compressed, exported to ONNX, imported
and run on EIE with its real compressed weights (fast model == per-cycle reference)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("sklearn")

from threadpoolctl import threadpool_limits  # noqa: E402

import archsim  # noqa: E402
from archsim.accelerators.eie import run_eie_layer, run_eie_reference  # noqa: E402
from archsim.cli import main  # noqa: E402
from archsim.datapath.eie_encode import encode_eie  # noqa: E402
from archsim.examples import digits  # noqa: E402
from archsim.workload.onnx import read_onnx  # noqa: E402
from archsim.workload.onnx_export import real_matvec  # noqa: E402

DENSITIES = (0.1, 0.1, 0.25)  # Deep Compression keeps the last FC denser (AlexNet FC8: 25 %)


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory):
    xt, yt, xv, yv = digits.load_split()
    with threadpool_limits(1):  # tiny matrices: BLAS threads only contend
        dense = digits.train_mlp(xt, yt, epochs=150)
        comp, storage = digits.compress_mlp(dense, xt, yt, DENSITIES, bits=4)
    folder = tmp_path_factory.mktemp("digits")
    path = digits.write_onnx(comp, folder / "mlp_c.onnx")
    np.save(folder / "x0.npy", xv[0].astype(np.float32))
    acc = (digits.accuracy(dense, xv, yv), digits.accuracy(comp, xv, yv))
    return path, storage, acc, folder


def test_accuracy_after_compression(compressed) -> None:
    _, storage, (dense, comp), _ = compressed
    loss = 100 * (dense - comp)
    dens = [round(s.density, 3) for s in storage]
    print(
        f"dense {100 * dense:.2f} %, compressed {100 * comp:.2f} % ({loss:.2f} points; goal "
        f"<= 1), densities {dens}, 4-bit codebooks"
    )
    assert dense > 0.96
    assert loss <= 1.0  # measured 0.44 points (97.33 -> 96.89 %)
    assert dens == [0.1, 0.1, 0.25]


def test_eie_runs_real_compressed_weights_cycle_exact(compressed) -> None:
    path, storage, _, folder = compressed
    imp = read_onnx(path, inputs=folder / "x0.npy")
    cfg = archsim.load_hardware("eie")
    for spec, st in zip(imp.spec.layers, storage, strict=True):
        t = imp.tensors[spec.name]
        layer, how = real_matvec(spec.name, t.weights, t.bias, t.activations[0])
        assert how.startswith("real weights, exact") and layer.codebook.size == 16
        np.testing.assert_array_equal(layer.dense_weights(), t.weights)
        fast = run_eie_layer(cfg, layer)
        ref = run_eie_reference(cfg, fast)
        assert fast.cycles == ref.cycles and fast.output_q.tolist() == ref.output.tolist()
        assert fast.per_pe["line_reads"].tolist() == ref.line_reads
        # the encoder (one PE, 4-bit indices) stores exactly the report's entries and bytes
        enc = encode_eie(
            layer.n_rows,
            layer.n_cols,
            layer.indptr,
            layer.row_idx,
            layer.codes,
            np.zeros(layer.n_rows, np.uint8),
            1,
            4,
        )
        assert enc.total_entries == st.entries and enc.total_entries * 8 // 8 == st.csc_bytes
        print(
            f"{spec.name}: {fast.cycles} cycles on 64 PEs, {st.entries} entries, "
            f"{st.csc_bytes} B CSC, {st.ratio:.1f}x"
        )


def test_cli_import_and_run_onnx(compressed, tmp_path: Path, capsys) -> None:
    path, _, _, folder = compressed
    out = tmp_path / "wl" / "mlp.yaml"
    assert (
        main(["import", "onnx", str(path), "-o", str(out), "--inputs", str(folder / "x0.npy")]) == 0
    )
    text = capsys.readouterr().out
    assert "exact 15-value codebook" in text or "exact" in text
    wl = archsim.load_workload(out)
    assert [lay.data for lay in wl.layers] == [f"mlp.data/fc{i}" for i in (1, 2, 3)]
    res = archsim.simulate("eie", wl)
    assert res.total_cycles > 0 and len(res.layers) == 3
    assert main(["run", "eie", str(path), "-o", str(tmp_path / "run"), "-q"]) == 0
    meta = archsim.RunResult.from_json(tmp_path / "run" / "results.json").metadata
    assert "real tensors (data folders): fc1, fc2, fc3" in meta["workload_source"]
    assert (
        main(["compress", str(path), "-o", str(tmp_path / "c.onnx"), "--fc-density", "0.05"]) == 0
    )
    import onnxruntime as ort

    sess = ort.InferenceSession(str(tmp_path / "c.onnx"), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.load(folder / "x0.npy")[None]})[0].shape == (1, 10)


def test_import_replaces_only_its_own_data_folder(compressed, tmp_path: Path, capsys) -> None:
    """A re-import replaces the ``.data`` folder an earlier import wrote (also one written
    before the marker, recognised by the YAML pointing into it); a folder of the user's under
    that name is refused and left as it was (it used to be deleted)."""
    path, _, _, folder = compressed
    argv = ["import", "onnx", str(path), "--inputs", str(folder / "x0.npy"), "-o"]
    mine = tmp_path / "mine.data"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert main([*argv, str(tmp_path / "mine.yaml")]) == 2
    err = capsys.readouterr().err
    assert "mine.data exists and was not written by archsim import onnx" in err
    assert (mine / "notes.txt").read_text() == "keep me" and not (tmp_path / "mine.yaml").exists()
    out = tmp_path / "mlp.yaml"
    assert main([*argv, str(out)]) == 0
    (tmp_path / "mlp.data" / "fc1" / "stale.txt").write_text("from the first import")
    (tmp_path / "mlp.data" / ".archsim-import").unlink()  # as an import before the marker
    assert main([*argv, str(out)]) == 0
    assert not (tmp_path / "mlp.data" / "fc1" / "stale.txt").exists()
    assert (tmp_path / "mlp.data" / ".archsim-import").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.data", "mlp.data", "mlp.yaml"]
    assert len(archsim.simulate("eie", archsim.load_workload(out)).layers) == 3
