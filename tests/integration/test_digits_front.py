"""The accuracy-energy front of Deep Compression on the digits MLP (EIE) and conv net (SCNN):
a 4-point sweep over compress.density x compress.bits per net, front marked, HTML drawn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("sklearn")

from threadpoolctl import threadpool_limits  # noqa: E402

from archsim.examples import digits  # noqa: E402
from archsim.examples.digits_front import accuracy_front, front_html  # noqa: E402


def test_four_point_front_per_net(tmp_path: Path) -> None:
    with threadpool_limits(1):
        frame = accuracy_front(tmp_path, densities=(0.25, 0.05), bits=(2, 4), epochs=5)
    print(frame.to_string(index=False))
    assert list(frame["net"]) == ["mlp"] * 4 + ["cnn"] * 4
    assert set(zip(frame["compress.density"], frame["compress.bits"], strict=True)) == {
        (0.25, 2), (0.25, 4), (0.05, 2), (0.05, 4)
    }  # fmt: skip
    assert list(frame["engine"]) == ["eie"] * 4 + ["scnn"] * 4
    # the engines ran the real compressed tensors
    assert set(frame["real_tensor_layers"]) == {"fc1,fc2,fc3", "conv1,fc1"}
    assert frame["accuracy"].between(0.1, 1.0).all() and (frame["energy_pj"] > 0).all()
    # the accuracy is the model's own: re-derive one point from its exported ONNX
    import onnxruntime as ort

    _, _, xv, yv = digits.load_split()
    for net, shape in (("mlp", (-1, 64)), ("cnn", (-1, 1, 1, 8, 8))):
        sess = ort.InferenceSession(str(tmp_path / f"{net}_d0.25_b4.onnx"))
        x = xv.astype(np.float32).reshape(shape)
        pred = [
            int(sess.run(None, {"x": xi[None] if net == "mlp" else xi})[0].argmax()) for xi in x
        ]
        got = frame.set_index(["net", "compress.density", "compress.bits"])
        assert got.loc[(net, 0.25, 4), "accuracy"] == pytest.approx(np.mean(np.array(pred) == yv))
    # a sparser model costs less energy on both engines, and fewer SCNN cycles (same bits)
    by = frame.set_index(["net", "compress.density", "compress.bits"])
    for net in ("mlp", "cnn"):
        assert by.loc[(net, 0.05, 4), "energy_pj"] < by.loc[(net, 0.25, 4), "energy_pj"]
    assert by.loc[("cnn", 0.05, 4), "cycles"] < by.loc[("cnn", 0.25, 4), "cycles"]
    # Pareto: no front point is dominated; every other point is dominated by a front point
    for _, part in frame.groupby("net"):
        a, e, f = (part[c].to_numpy() for c in ("accuracy", "energy_pj", "pareto"))
        dom = (a[None] >= a[:, None]) & (e[None] <= e[:, None])
        strict = dom & ((a[None] > a[:, None]) | (e[None] < e[:, None]))
        assert f.any()
        for i in range(len(part)):
            assert f[i] == (not strict[i].any())
    page = front_html(frame, tmp_path / "front.html").read_text()
    assert page.count("<svg") == 1 and "Pareto front" in page and page.count("<tr>") == 9
