"""A small conv net on the digits: Conv 3x3 (1 -> 8 channels, pad 1) -> ReLU -> Flatten -> Gemm
(512 -> 10), trained reproducibly in NumPy (im2col, full-batch Adam) and exported to ONNX.

Input: (N, 1, 8, 8) images, pixels / 16. Used to show the conv path: the importer measures the
conv layer's weight and activation densities, SCNN/DCNN run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from archsim.compress.prune import prune_mask
from archsim.examples.digits import _adam_step

__all__ = ["ConvNet", "train_cnn", "prune_cnn", "cnn_accuracy", "write_cnn_onnx"]

CHANNELS = 8


def _im2col(x: np.ndarray) -> np.ndarray:
    """(N*64, 9) patches of the 1-channel 8 x 8 images, zero-padded by 1 (row-major pixels)."""
    xp = np.pad(x.reshape(-1, 8, 8), ((0, 0), (1, 1), (1, 1)))
    cols = [xp[:, i : i + 8, j : j + 8] for i in range(3) for j in range(3)]
    return np.stack(cols, axis=-1).reshape(-1, 9)


@dataclass
class ConvNet:
    """conv (8, 1, 3, 3) + bias, fc (10, 512) + bias."""

    conv_w: np.ndarray
    conv_b: np.ndarray
    fc_w: np.ndarray
    fc_b: np.ndarray

    def logits(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(patches, post-ReLU feature maps (N, 8, 8, 8) as NCHW flattened, logits)."""
        cols = _im2col(x)
        z = cols @ self.conv_w.reshape(CHANNELS, 9).T + self.conv_b  # (N*64, K)
        h = np.maximum(z, 0.0).reshape(-1, 64, CHANNELS).transpose(0, 2, 1).reshape(-1, 512)
        return cols, h, h @ self.fc_w.T + self.fc_b


def cnn_accuracy(net: ConvNet, x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of correctly classified samples."""
    return float(np.mean(net.logits(x)[2].argmax(axis=1) == y))


def _fit(net: ConvNet, x, y, epochs: int, lr: float, masks=None) -> None:
    params = [net.conv_w, net.conv_b, net.fc_w, net.fc_b]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t in range(1, epochs + 1):
        cols, h, z = net.logits(x)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(y.size), y] -= 1.0
        d = p / y.size
        g_fw, g_fb = d.T @ h, d.sum(axis=0)
        dh = (d @ net.fc_w) * (h > 0)
        dz = dh.reshape(-1, CHANNELS, 64).transpose(0, 2, 1).reshape(-1, CHANNELS)
        g_cw, g_cb = (dz.T @ cols).reshape(net.conv_w.shape), dz.sum(axis=0)
        for i, g in enumerate((g_cw, g_cb, g_fw, g_fb)):
            if masks is not None and i in masks:
                g = g * masks[i]
            _adam_step(params[i], g, m[i], v[i], t, lr)
            if masks is not None and i in masks:
                params[i] *= masks[i]


def train_cnn(x: np.ndarray, y: np.ndarray, seed: int = 0, epochs: int = 150) -> ConvNet:
    """Train from He-normal weights drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    net = ConvNet(
        rng.standard_normal((CHANNELS, 1, 3, 3)) * np.sqrt(2.0 / 9),
        np.zeros(CHANNELS),
        rng.standard_normal((10, 512)) * np.sqrt(2.0 / 512),
        np.zeros(10),
    )
    _fit(net, x, y, epochs, 1e-2)
    return net


def prune_cnn(
    net: ConvNet, x: np.ndarray, y: np.ndarray, conv_density: float, fc_density: float,
    epochs: int = 150,
) -> ConvNet:  # fmt: skip
    """Magnitude-prune both layers and fine-tune with the masks held."""
    out = ConvNet(net.conv_w.copy(), net.conv_b.copy(), net.fc_w.copy(), net.fc_b.copy())
    masks = {
        0: prune_mask(out.conv_w, conv_density) * 1.0,
        2: prune_mask(out.fc_w, fc_density) * 1.0,
    }
    out.conv_w *= masks[0]
    out.fc_w *= masks[2]
    _fit(out, x, y, epochs, 3e-3, masks)
    return out


def write_cnn_onnx(net: ConvNet, path: str | Path) -> Path:
    """Conv "conv1" -> Relu -> Flatten -> Gemm "fc1" (opset 13), input x (1, 1, 8, 8)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(a.astype(np.float32), n)
        for n, a in (("conv1.weight", net.conv_w), ("conv1.bias", net.conv_b),
                     ("fc1.weight", net.fc_w), ("fc1.bias", net.fc_b))
    ]  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], name="conv1",
                         pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Flatten", ["r1"], ["f1"], name="flatten"),
        helper.make_node("Gemm", ["f1", "fc1.weight", "fc1.bias"], ["y"], name="fc1", transB=1),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "digits_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return Path(path)
