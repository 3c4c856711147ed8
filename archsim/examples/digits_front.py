"""The accuracy-energy front of Deep Compression on the digits models.

Every point prunes a trained model to a density, shares its weights on a ``bits``-bit codebook,
measures test accuracy, exports ONNX, imports it with the real tensors and simulates it: the
MLP on EIE, the conv net on SCNN (its conv layer's real tensors, see ``onnx_export``). The frame
has one row per (net, density, bits) with the sweep-style columns ``compress.density`` and
``compress.bits``, ``accuracy``, the engine's ``cycles`` and ``energy_pj``, and ``pareto``
(no other point of the same net is at least as accurate with at most the energy, and better in
one). ``front_html`` draws it with the front marked.

``python -m archsim.examples.digits_front OUTDIR`` writes ``front.csv`` and ``front.html``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from archsim.compress.model import compress_arrays
from archsim.examples import digits
from archsim.examples import digits_cnn as cnn

__all__ = ["accuracy_front", "front_html", "main"]

#: last MLP layer / conv layer density relative to the FC density (Deep Compression keeps
#: AlexNet's FC8 at 25 % and its convs at 33-84 % while the big FCs go to 9-10 %)
LAST_FC_FACTOR = 2.5
CONV_FACTOR = 4.0


def _run(engine: str, net: str, model_path: Path, x0: Path, out: Path):
    from archsim.simulate import simulate
    from archsim.workload.onnx import read_onnx
    from archsim.workload.onnx_export import write_workload

    write_workload(read_onnx(model_path, inputs=x0), out / f"{net}.yaml")
    return simulate(engine, out / f"{net}.yaml")


def _share_conv(net: cnn.ConvNet, bits: int) -> cnn.ConvNet:
    """The conv net with both layers' kept weights on ``bits``-bit k-means codebooks."""
    out = cnn.ConvNet(net.conv_w.copy(), net.conv_b, net.fc_w.copy(), net.fc_b)
    for attr in ("conv_w", "fc_w"):
        w = getattr(out, attr)
        flat = w.reshape(w.shape[0], -1)
        kept = np.count_nonzero(flat) / flat.size
        shared, _, _ = compress_arrays(attr, flat, kept, bits, 4)
        setattr(out, attr, shared.astype(np.float64).reshape(w.shape))
    return out


def accuracy_front(
    folder: str | Path,
    densities: tuple[float, ...] = (0.25, 0.1, 0.05),
    bits: tuple[int, ...] = (3, 4, 5),
    epochs: int = 150,
    nets: tuple[str, ...] = ("mlp", "cnn"),
) -> pd.DataFrame:
    """Train each net once (``epochs``), then one row per (net, density, bits) point.

    Fine-tuning after pruning runs ``epochs`` too (the MLP's centroid tuning half of it).
    Models and workloads go to ``folder``; the EIE/SCNN input is the first test image.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    xt, yt, xv, yv = digits.load_split()
    rows = []
    if "mlp" in nets:
        np.save(folder / "x0_mlp.npy", xv[0].astype(np.float32))
        dense = digits.train_mlp(xt, yt, epochs=epochs)
        for d in densities:
            for b in bits:
                dens = (d, d, min(1.0, LAST_FC_FACTOR * d))
                model, _ = digits.compress_mlp(dense, xt, yt, dens, b, epochs=epochs)
                tag = f"mlp_d{d:g}_b{b}"
                path = digits.write_onnx(model, folder / f"{tag}.onnx")
                res = _run("eie", tag, path, folder / "x0_mlp.npy", folder / "workloads")
                rows.append(("mlp", d, b, digits.accuracy(model, xv, yv), "eie", res))
    if "cnn" in nets:
        np.save(folder / "x0_cnn.npy", xv[:1].reshape(1, 1, 8, 8).astype(np.float32))
        dense_cnn = cnn.train_cnn(xt, yt, epochs=epochs)
        for d in densities:
            for b in bits:
                conv_d = min(1.0, CONV_FACTOR * d)
                pruned = cnn.prune_cnn(dense_cnn, xt, yt, conv_d, d, epochs=epochs)
                model = _share_conv(pruned, b)
                tag = f"cnn_d{d:g}_b{b}"
                path = cnn.write_cnn_onnx(model, folder / f"{tag}.onnx")
                res = _run("scnn", tag, path, folder / "x0_cnn.npy", folder / "workloads")
                rows.append(("cnn", d, b, cnn.cnn_accuracy(model, xv, yv), "scnn", res))
    frame = pd.DataFrame(
        [
            {
                "net": net,
                "compress.density": d,
                "compress.bits": b,
                "accuracy": acc,
                "engine": eng,
                "cycles": res.total_cycles,
                "energy_pj": res.total_energy_pj,
                "real_tensor_layers": ",".join(res.metadata["real_tensor_layers"]),
            }
            for net, d, b, acc, eng, res in rows
        ]
    )
    frame["pareto"] = _pareto(frame)
    return frame


def _pareto(frame: pd.DataFrame) -> pd.Series:
    """Per net: no other point has accuracy >= and energy <= with one strictly better."""
    from archsim.report.pareto import pareto_mask

    mask = pd.Series(False, index=frame.index)
    for _, part in frame.groupby("net"):
        mask[part.index] = pareto_mask(part, {"accuracy": "max", "energy_pj": "min"})
    return mask


def front_html(frame: pd.DataFrame, path: str | Path) -> Path:
    """An HTML page: accuracy vs energy per net (front joined, front points filled) + table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from archsim.report.page import environment, write_page
    from archsim.report.plots import figure_to_svg

    nets = list(dict.fromkeys(frame["net"]))
    fig, axes = plt.subplots(1, len(nets), figsize=(5.5 * len(nets), 4), squeeze=False)
    for ax, net in zip(axes[0], nets, strict=True):
        part = frame[frame["net"] == net]
        e, a = part["energy_pj"].to_numpy() * 1e-3, part["accuracy"].to_numpy() * 100
        front = part["pareto"].to_numpy()
        ax.scatter(e[~front], a[~front], facecolors="none", edgecolors="C0", label="dominated")
        ax.scatter(e[front], a[front], color="C3", label="Pareto front")
        order = np.argsort(e[front])
        ax.plot(e[front][order], a[front][order], "--", color="C3")
        for (_, r), ei, ai in zip(part.iterrows(), e, a, strict=True):
            ax.annotate(f"{r['compress.density']:g}/{r['compress.bits']}b", (ei, ai), fontsize=7)
        ax.set_xlabel(f"{part['engine'].iloc[0].upper()} energy per image (nJ)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"digits {net}: accuracy vs energy (density/bits)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    svg = figure_to_svg(fig, "front")
    plt.close(fig)
    page = (
        environment()
        .from_string(_PAGE)
        .render(svg=svg, columns=list(frame.columns), rows=frame.to_dict("records"))
    )
    return write_page(page, path, "front.html")


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>archsim: accuracy-energy front</title>
</head><body>
<h1>Deep Compression on the digits models: accuracy vs energy</h1>
<p>Each point: prune to <code>compress.density</code>, share weights on a
<code>compress.bits</code>-bit codebook, test accuracy, then the engine runs the real
compressed tensors. Filled points: the Pareto front (accuracy max, energy min).</p>
{{ svg | safe }}
<table border="1"><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for r in rows %}<tr>{% for c in columns %}<td>{{ r[c] }}</td>{% endfor %}</tr>
{% endfor %}</table>
</body></html>
"""


def main(argv: list[str] | None = None) -> int:
    """``python -m archsim.examples.digits_front OUTDIR``: the front as CSV and HTML."""
    import sys

    from threadpoolctl import threadpool_limits  # scikit-learn's dependency

    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "digits-front")
    with threadpool_limits(1):  # tiny matrices: BLAS threads only contend
        frame = accuracy_front(folder)
    frame.to_csv(folder / "front.csv", index=False)
    front_html(frame, folder / "front.html")
    sys.stdout.write(frame.to_string(index=False) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
