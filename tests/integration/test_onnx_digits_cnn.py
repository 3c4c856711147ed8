"""The digits conv net, trained in-project and exported to ONNX: its importer densities, and
SCNN running its REAL conv tensors (fast kernel == per-cycle reference twin; the output equals
NumPy's convolution of the real tensors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("sklearn")

from threadpoolctl import threadpool_limits  # noqa: E402

import archsim  # noqa: E402
import archsim.accelerators.scnn as scnn_mod  # noqa: E402
from archsim.datapath.scnn_kernels import SCNN_PE_FIELDS  # noqa: E402
from archsim.datapath.scnn_reference import scnn_reference  # noqa: E402
from archsim.examples import digits  # noqa: E402
from archsim.examples import digits_cnn as cnn  # noqa: E402
from archsim.workload.conv import materialize_conv, reference_conv  # noqa: E402
from archsim.workload.onnx import read_onnx  # noqa: E402
from archsim.workload.onnx_export import write_workload  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):
    xt, yt, xv, _ = digits.load_split()
    with threadpool_limits(1):  # tiny matrices: BLAS threads only contend
        net = cnn.prune_cnn(cnn.train_cnn(xt, yt, epochs=20), xt, yt, 0.5, 0.25, epochs=10)
    folder = tmp_path_factory.mktemp("cnn")
    path = cnn.write_cnn_onnx(net, folder / "cnn.onnx")
    x0 = xv[:1].reshape(1, 1, 8, 8).astype(np.float32)
    return net, path, x0, xv


def test_digits_cnn_measured_densities_on_scnn(model) -> None:
    """The conv net's densities come from its real weights and from onnxruntime's feature
    maps, equal to NumPy's; SCNN runs the imported workload."""
    net, path, x0, xv = model
    imp = read_onnx(path, inputs=x0)
    conv, fc = imp.spec.layers
    _, h, _ = net.logits(xv[:1])
    assert (conv.kind, conv.weight_density, fc.weight_density) == ("conv", 0.5, 0.25)
    assert conv.activation_density == np.count_nonzero(x0) / 64
    assert fc.activation_density == pytest.approx(np.count_nonzero(h) / 512, abs=2 / 512)
    res = archsim.simulate("scnn", imp.spec)
    assert [lr.layer for lr in res.layers] == ["conv1", "fc1"] and res.total_cycles > 0
    assert res.metadata["real_tensor_layers"] == []  # the bare spec carries no tensors


def _reference_twin(args: tuple, stats: np.ndarray, part: np.ndarray) -> None:
    """Re-run one recorded ``scnn_layer`` call on the literal per-cycle twin; assert equality."""
    (n_groups, kc, vc, n_pes, a_ptr, ax, ay, av, w_ptr, wk, wr, ws, wv, *rest) = args
    acts = [
        [
            list(zip(*(a[a_ptr[c * n_pes + p] : a_ptr[c * n_pes + p + 1]].tolist()
                       for a in (ax, ay, av)), strict=True))
            for c in range(vc)
        ]
        for p in range(n_pes)
    ]  # fmt: skip
    wts = [
        [
            list(zip(*(a[w_ptr[g * vc + c] : w_ptr[g * vc + c + 1]].tolist()
                       for a in (wk, wr, ws, wv)), strict=True))
            for c in range(vc)
        ]
        for g in range(n_groups)
    ]  # fmt: skip
    win, (stride, pad, f, i_vec, banks, depth, shift, acc_bits) = rest[:6], rest[6:14]
    ref = scnn_reference(
        acts, wts, n_groups, kc, *win, part.shape[0], stride, pad, f, i_vec, banks, depth, shift,
        acc_bits,
    )  # fmt: skip
    refs = (ref.phase_cycles, ref.issues, ref.multiplies, ref.products, ref.issue_stalls,
            ref.conflicts)  # fmt: skip
    for name, fast, slow in zip(SCNN_PE_FIELDS, stats, refs, strict=True):
        assert np.array_equal(fast, slow), f"{name}: fast {fast.tolist()} != ref {slow.tolist()}"
    assert ref.total_cycles == int(stats[0].max(axis=1).sum())
    assert np.array_equal(part, ref.output)


def test_scnn_runs_real_conv_tensors_cycle_exact(model, tmp_path: Path, monkeypatch) -> None:
    net, path, x0, _ = model
    out = tmp_path / "wl" / "cnn.yaml"
    notes = write_workload(read_onnx(path, inputs=x0), out)
    assert any(n.startswith("conv1: real weights") for n in notes)
    wl = archsim.load_workload(out)
    assert [lay.data for lay in wl.layers] == ["cnn.data/conv1", "cnn.data/fc1"]
    conv = materialize_conv(wl.layers[0], seed=0, base_dir=wl.base_dir)
    # the real tensors, not seeded ones: the trained (pruned) filters and the digit itself
    np.testing.assert_array_equal(conv.weights, net.conv_w.astype(np.float32))
    np.testing.assert_array_equal(conv.activations, x0)
    assert materialize_conv(wl.layers[0], seed=7, base_dir=wl.base_dir).weights.tolist() == (
        conv.weights.tolist()
    )

    calls: list[tuple] = []
    fast_kernel = scnn_mod.scnn_layer

    def recording(*args):
        stats = fast_kernel(*args)
        calls.append((args, stats.copy(), args[-1].copy()))
        return stats

    monkeypatch.setattr(scnn_mod, "scnn_layer", recording)
    res = archsim.simulate("scnn", wl)
    assert res.metadata["real_tensor_layers"] == ["conv1", "fc1"]
    assert "real tensors (data folders): conv1, fc1" in res.metadata["workload_source"]
    assert calls, "the SCNN conv kernel did not run"
    for args, stats, part in calls:
        _reference_twin(args, stats, part)
    run = scnn_mod.run_scnn_conv(archsim.load_hardware("scnn"), conv, 0.5)
    assert res.layers[0].macs_effective == run.macs_effective
    got = run.output_q * 2.0**-run.out_frac
    want = reference_conv(conv)  # float64 NumPy convolution of the real tensors
    # products rounded into the 24-bit accumulator (<= 1/2 LSB each), operands to 16 bits
    tol = 9 * 2.0**-run.out_frac + 1e-3 * np.abs(want).max()
    err = np.abs(got - want).max()
    print(f"conv1 on SCNN: {res.layers[0].cycles} cycles, max |out - NumPy| {err:.2e} <= {tol:.2e}")
    assert err <= tol
    # and with the bias and ReLU of the ONNX model it is the network's own feature map
    fmap = np.maximum(want[0] + net.conv_b[:, None, None], 0).reshape(1, -1)
    np.testing.assert_allclose(fmap, net.logits(x0.reshape(1, 64).astype(np.float64))[1], 1e-6)


@pytest.mark.parametrize(
    ("weights", "acts", "words"),
    [
        (np.ones((2, 1, 3, 3)), np.ones((1, 1, 4, 4)), "does not match the layer; allowed: (4, 1"),
        (np.ones((4, 1, 3, 3)), -np.ones((1, 1, 4, 4)), "negative activations"),
        (np.ones((4, 1, 3, 3)), None, "required data file is missing"),
    ],
)
def test_bad_conv_data_folder_names_layer_and_file(tmp_path: Path, weights, acts, words) -> None:
    from archsim.config.workload import ConvLayer
    from archsim.workload.conv import write_conv_dir
    from archsim.workload.matvec import LayerDataError

    write_conv_dir(tmp_path / "d", weights, np.zeros(1) if acts is None else acts)
    if acts is None:
        (tmp_path / "d" / "activations.npy").unlink()
    layer = ConvLayer(
        name="c", kind="conv", c=1, k=4, h=4, w=4, r=3, s=3, weight_density=1.0,
        activation_density=1.0, data="d",
    )  # fmt: skip
    with pytest.raises(LayerDataError) as info:
        materialize_conv(layer, 0, tmp_path)
    assert (info.value.layer, info.value.field) == ("c", "data") and words in info.value.problem
