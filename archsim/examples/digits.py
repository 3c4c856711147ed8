"""A small MLP trained on scikit-learn's bundled digits (8 x 8 images, 10 classes), exported to
ONNX, then Deep-Compressed with masked fine-tuning -- the end-to-end example of the ONNX path.

Reproducible: fixed split (``train_test_split(..., random_state=0)``), fixed seeds, full-batch
Adam in float64 NumPy. Inputs are pixel values / 16 (in [0, 1], non-negative as EIE expects).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from archsim.compress.model import compress_arrays
from archsim.compress.prune import prune_mask
from archsim.compress.storage import LayerStorage

__all__ = ["Mlp", "accuracy", "compress_mlp", "load_split", "train_mlp", "write_onnx"]

HIDDEN = (256, 128)


@dataclass
class Mlp:
    """Weights (outputs, inputs) and biases of fc1..fc3 (ReLU between)."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]

    def forward(self, x: np.ndarray) -> list[np.ndarray]:
        """Activations of every layer (input first, logits last)."""
        acts = [x]
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            z = acts[-1] @ w.T + b
            acts.append(np.maximum(z, 0.0) if i < len(self.weights) - 1 else z)
        return acts


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test): 75 / 25 % split, random_state 0, x = pixels / 16."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.data / 16.0).astype(np.float64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, d.target, test_size=0.25, random_state=0, stratify=d.target
    )
    return x_tr, y_tr, x_te, y_te


def accuracy(model: Mlp, x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of correctly classified samples."""
    return float(np.mean(model.forward(x)[-1].argmax(axis=1) == y))


def _grads(model: Mlp, x: np.ndarray, y: np.ndarray) -> tuple[list, list]:
    acts = model.forward(x)
    z = acts[-1] - acts[-1].max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(y.size), y] -= 1.0
    delta = p / y.size
    gw, gb = [], []
    for i in reversed(range(len(model.weights))):
        gw.insert(0, delta.T @ acts[i])
        gb.insert(0, delta.sum(axis=0))
        if i:
            delta = (delta @ model.weights[i]) * (acts[i] > 0)
    return gw, gb


def _adam_step(p, g, m, v, t, lr):
    m *= 0.9
    m += 0.1 * g
    v *= 0.999
    v += 0.001 * g * g
    p -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)


def _adam(model: Mlp, x, y, epochs: int, lr: float, masks=None, shared=None) -> None:
    """Full-batch Adam on the biases and either the weights (``masks`` keep pruned ones at 0)
    or, with ``shared`` = [(codes, centroids)] per layer, the shared values: each centroid
    moves by the summed gradient of its weights (Deep Compression's centroid fine-tuning)."""
    params = ([c for _, c in shared] if shared is not None else model.weights) + model.biases
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    n_w = len(model.weights)
    for t in range(1, epochs + 1):
        gw, gb = _grads(model, x, y)
        for i, g in enumerate(gw + gb):
            if i < n_w and shared is not None:
                codes = shared[i][0]
                g = np.bincount(
                    codes[codes > 0] - 1, weights=g[codes > 0], minlength=params[i].size
                )
            elif i < n_w and masks is not None:
                g = g * masks[i]
            _adam_step(params[i], g, m[i], v[i], t, lr)
        if shared is not None:
            for i, (codes, cents) in enumerate(shared):
                model.weights[i] = np.where(codes > 0, np.concatenate([[0.0], cents])[codes], 0.0)


def train_mlp(x: np.ndarray, y: np.ndarray, seed: int = 0, epochs: int = 300) -> Mlp:
    """The dense MLP 64-256-128-10 (He-normal init from ``seed``)."""
    rng = np.random.default_rng(seed)
    sizes = (x.shape[1], *HIDDEN, 10)
    ws = [
        rng.standard_normal((o, i)) * np.sqrt(2.0 / i)
        for i, o in zip(sizes[:-1], sizes[1:], strict=True)
    ]
    model = Mlp(ws, [np.zeros(o) for o in sizes[1:]])
    _adam(model, x, y, epochs, 1e-2)
    return model


def compress_mlp(
    model: Mlp,
    x: np.ndarray,
    y: np.ndarray,
    densities: tuple[float, ...],
    bits: int,
    epochs: int = 300,
    index_bits: int = 4,
) -> tuple[Mlp, list[LayerStorage]]:
    """Deep Compression, layer i at ``densities[i]`` with ``bits``-bit codebooks: prune, masked
    fine-tuning (``epochs``), k-means sharing, centroid fine-tuning (``epochs // 2``).
    Returns (model, storage report with EIE's 4-bit relative indices by default)."""
    out = Mlp([w.copy() for w in model.weights], [b.copy() for b in model.biases])
    masks = []
    for i, w in enumerate(out.weights):
        masks.append(prune_mask(w, densities[i]).astype(np.float64))
        out.weights[i] = w * masks[-1]
    _adam(out, x, y, epochs, 3e-3, masks=masks)
    codes, storage = [], []
    for i, w in enumerate(out.weights):
        shared, code_mat, st = compress_arrays(f"fc{i + 1}", w, 1.0, bits, index_bits)
        cents = np.unique(shared[shared != 0]).astype(np.float64)
        out.weights[i] = shared.astype(np.float64)
        codes.append((code_mat, cents))
        storage.append(st)
    _adam(out, x, y, max(epochs // 2, 1), 1e-3, shared=codes)
    out.weights = [w.astype(np.float32).astype(np.float64) for w in out.weights]
    return out, storage


def write_onnx(model: Mlp, path: str | Path, batch: int | str = 1) -> Path:
    """Write ``model`` as ONNX (opset 13): Gemm fc1 -> Relu -> Gemm fc2 -> Relu -> Gemm fc3."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []
    prev = "x"
    for i, (w, b) in enumerate(zip(model.weights, model.biases, strict=True)):
        name = f"fc{i + 1}"
        inits += [
            numpy_helper.from_array(w.astype(np.float32), f"{name}.weight"),
            numpy_helper.from_array(b.astype(np.float32), f"{name}.bias"),
        ]
        out = f"{name}.out"
        nodes.append(
            helper.make_node(
                "Gemm", [prev, f"{name}.weight", f"{name}.bias"], [out], name=name, transB=1
            )
        )
        prev = out
        if i < len(model.weights) - 1:
            nodes.append(helper.make_node("Relu", [out], [f"relu{i + 1}"], name=f"relu{i + 1}"))
            prev = f"relu{i + 1}"
    n_in = model.weights[0].shape[1]
    graph = helper.make_graph(
        nodes,
        "digits_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, n_in])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [batch, 10])],
        inits,
    )
    onnx_model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="archsim"
    )
    onnx_model.ir_version = 8
    onnx.checker.check_model(onnx_model)
    path = Path(path)
    onnx.save(onnx_model, str(path))
    return path


def tradeoff(
    folder: str | Path,
    densities: tuple[float, ...] = (0.25, 0.1, 0.05),
    bits: tuple[int, ...] = (3, 4),
    epochs: int = 300,
) -> list[dict[str, float]]:
    """Accuracy vs FC density and codebook bits next to EIE cycles and energy (one row per
    point; the dense model first, run with archsim's 16-entry sharing of its real weights).

    Writes every model (``mlp_d<density>_b<bits>.onnx``) and ``x0.npy`` (the first test image,
    the EIE input) into ``folder``. The last layer keeps 2.5 x the density (capped at 1), as
    Deep Compression keeps AlexNet's FC8 denser.
    """
    from archsim.simulate import simulate
    from archsim.workload.onnx import read_onnx
    from archsim.workload.onnx_export import write_workload

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    xt, yt, xv, yv = load_split()
    np.save(folder / "x0.npy", xv[0].astype(np.float32))
    dense = train_mlp(xt, yt)
    points: list[tuple[str, Mlp, float, int]] = [("dense", dense, 1.0, 32)]
    for d in densities:
        for b in bits:
            dens = (d, d, min(1.0, 2.5 * d))
            comp, _ = compress_mlp(dense, xt, yt, dens, b, epochs=epochs)
            points.append((f"d{d:g}_b{b}", comp, d, b))
    rows = []
    for tag, model, d, b in points:
        path = write_onnx(model, folder / f"mlp_{tag}.onnx")
        imp = read_onnx(path, inputs=folder / "x0.npy")
        write_workload(imp, folder / "workloads" / f"mlp_{tag}.yaml")
        res = simulate("eie", folder / "workloads" / f"mlp_{tag}.yaml")
        rows.append({
            "model": tag, "fc_density": d, "codebook_bits": b,
            "accuracy": accuracy(model, xv, yv), "eie_cycles": res.total_cycles,
            "eie_energy_pj": res.total_energy_pj,
        })  # fmt: skip
    return rows


def plot_tradeoff(rows: list[dict[str, float]], path: str | Path) -> Path:
    """Accuracy vs EIE energy (SVG), Pareto-optimal points joined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    e = np.array([r["eie_energy_pj"] for r in rows]) * 1e-3
    a = np.array([r["accuracy"] for r in rows]) * 100
    ax.scatter(e, a)
    for r, ei, ai in zip(rows, e, a, strict=True):
        ax.annotate(str(r["model"]), (ei, ai), fontsize=7)
    order = np.argsort(e)
    front = [i for k, i in enumerate(order) if a[i] > max(a[order[:k]], default=-1)]
    ax.plot(e[front], a[front], "--")
    ax.set_xlabel("EIE energy per image (nJ)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("digits MLP: Deep Compression accuracy vs EIE energy")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    """``python -m archsim.examples.digits OUTDIR``: train, compress, run EIE, write
    ``tradeoff.csv`` and ``tradeoff.svg``."""
    import csv
    import sys

    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "digits-example")
    from threadpoolctl import threadpool_limits  # scikit-learn's dependency

    with threadpool_limits(1):  # tiny matrices: BLAS threads only contend
        rows = tradeoff(folder)
    with open(folder / "tradeoff.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot_tradeoff(rows, folder / "tradeoff.svg")
    for r in rows:
        sys.stdout.write(
            f"{r['model']:<10} acc {100 * r['accuracy']:6.2f} %  EIE {r['eie_cycles']:>6} "
            f"cycles {r['eie_energy_pj'] * 1e-3:8.2f} nJ\n"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
