"""Deep Compression as sweep axes: ``compress.*`` over an ONNX model, accuracy per point."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("sklearn")

from threadpoolctl import threadpool_limits  # noqa: E402

from archsim.cli import main  # noqa: E402
from archsim.examples import digits  # noqa: E402

SPEC = """schema_version: 1
name: digits_compress
hardware: eie
workload: mlp.onnx
axes:
  compress.fc_density: [0.5, 0.1]
  compress.fc_bits: [2, 4]
evaluation: {inputs: xv.npy, labels: yv.npy}
metrics: {total_energy_pj: min, accuracy: max}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compress_sweep")
    xt, yt, xv, yv = digits.load_split()
    with threadpool_limits(1):
        model = digits.train_mlp(xt, yt, epochs=30)
    digits.write_onnx(model, out / "mlp.onnx")
    np.save(out / "xv.npy", xv.astype(np.float32))
    np.save(out / "yv.npy", yv.astype(np.int64))
    np.save(out / "xo.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save(out / "yr.npy", (yv + 100).astype(np.int64))  # no such class: accuracy 0.0
    np.save(out / "yf.npy", yv.astype(np.float64) + 0.5)  # not class indices
    xn = xv.astype(np.float32)
    xn[0, 0] = np.nan
    np.save(out / "xn.npy", xn)
    (out / "spec.yaml").write_text(SPEC)
    return out


def test_compress_axes_run_accuracy_and_resume(folder: Path, monkeypatch, capsys) -> None:
    import onnxruntime as ort

    monkeypatch.setenv("ARCHSIM_CACHE_DIR", str(folder / "cache"))
    out = folder / "out"
    assert main(["sweep", str(folder / "spec.yaml"), "-o", str(out), "-j", "1", "-q"]) == 0
    pts = pd.read_csv(out / "points.csv").set_index(["compress.fc_density", "compress.fc_bits"])
    print(pts[["accuracy", "total_energy_pj", "total_cycles"]])
    assert len(pts) == 4 and (pts["status"] == "ok").all()
    # pruning harder costs accuracy and saves energy (same codebook bits)
    assert pts.loc[(0.1, 4), "accuracy"] < pts.loc[(0.5, 4), "accuracy"]
    assert pts.loc[(0.1, 4), "total_energy_pj"] < pts.loc[(0.5, 4), "total_energy_pj"]
    # the accuracy is the compressed model's own, on the evaluation set
    want = {"compress.fc_density": 0.5, "compress.fc_bits": 4}
    folders = (folder / "cache" / "compressed").iterdir()
    (built,) = [p for p in folders if json.loads((p / "point.json").read_text())["setting"] == want]
    sess = ort.InferenceSession(str(built / "model.onnx"))
    x, y = np.load(folder / "xv.npy"), np.load(folder / "yv.npy")
    pred = [int(sess.run(None, {"x": xi[None]})[0].argmax()) for xi in x]
    assert pts.loc[(0.5, 4), "accuracy"] == pytest.approx(np.mean(np.array(pred) == y))
    # the imported workload carries the compressed model's real tensors (EIE data folders)
    assert (built / "workload.yaml").read_text().count("data:") == 3
    page = (out / "report.html").read_text()
    assert "accuracy vs total_energy_pj" in page
    # a re-run resumes: every point already stored, same numbers
    capsys.readouterr()
    assert main(["sweep", str(folder / "spec.yaml"), "-o", str(out), "-j", "1"]) == 0
    assert "4 already in" in capsys.readouterr().out
    again = pd.read_csv(out / "points.csv").set_index(["compress.fc_density", "compress.fc_bits"])
    pd.testing.assert_series_equal(again["accuracy"], pts["accuracy"])


@pytest.mark.parametrize(
    "edit, field",
    [
        (("compress.fc_bits: [2, 4]", "compress.fc_bits: [2, 12]"), "axes.compress.fc_bits"),
        (("compress.fc_density: [0.5, 0.1]", "compress.fc_density: [0, 0.1]"),
         "axes.compress.fc_density"),
        (("compress.fc_bits:", "compress.fc_bitz:"), "axes.compress.fc_bitz"),
        (("workload: mlp.onnx", "workload: eie_benchmarks"), "workload"),
        (("workload: mlp.onnx", "workload: nothere.onnx"), "workload"),
        (("labels: yv.npy", "labels: no.npy"), "evaluation.labels"),
        (("inputs: xv.npy", "inputs: xo.npy"), "evaluation.inputs: "),  # ValueError traceback
        (("evaluation: {inputs: xv.npy, labels: yv.npy}\n", ""), "accuracy"),
        (("labels: yv.npy", "labels: yr.npy"), "evaluation.labels: "),  # a fake accuracy
        (("labels: yv.npy", "labels: yf.npy"), "evaluation.labels: "),
        (("inputs: xv.npy", "inputs: xn.npy"), "evaluation.inputs: "),
    ],
)  # fmt: skip
def test_bad_compress_sweeps_are_one_line_errors(folder: Path, edit, field, capsys) -> None:
    spec = folder / "bad.yaml"
    spec.write_text(SPEC.replace(*edit))
    assert main(["sweep", str(spec), "-o", str(folder / "bad_out"), "-q"]) == 2
    err = capsys.readouterr().err
    print(err)
    assert err.count("\n") == 1 and field in err and "Traceback" not in err
    assert not (folder / "bad_out").exists()


def test_python_api_takes_the_onnx_path_and_evaluation(folder: Path, monkeypatch) -> None:
    import archsim

    monkeypatch.setenv("ARCHSIM_CACHE_DIR", str(folder / "cache"))
    monkeypatch.chdir(folder)
    frame = archsim.sweep(
        "eie",
        "mlp.onnx",
        axes={"compress.fc_density": [0.5, 0.1], "compress.fc_bits": [4]},
        evaluation={"inputs": "xv.npy", "labels": "yv.npy"},
        metrics={"total_energy_pj": "min", "accuracy": "max"},
        n_jobs=1,
    )
    pts = archsim.totals(frame).set_index("compress.fc_density")
    print(pts[["accuracy", "total_energy_pj"]])
    assert (pts["status"] == "ok").all()
    assert pts.loc[0.1, "accuracy"] < pts.loc[0.5, "accuracy"]
    assert pts.loc[0.1, "total_energy_pj"] < pts.loc[0.5, "total_energy_pj"]
    # each point's accuracy is the one recorded with its cached compressed model
    for p in (folder / "cache" / "compressed").iterdir():
        point = json.loads((p / "point.json").read_text())
        setting = point["setting"]
        if setting.get("compress.fc_bits") == 4 and len(setting) == 2:
            d = setting["compress.fc_density"]
            assert pts.loc[d, "accuracy"] == pytest.approx(point["accuracy"])
