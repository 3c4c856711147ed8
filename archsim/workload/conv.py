"""Concrete sparse convolution layers and their NumPy functional reference.

``materialize_conv`` turns a :class:`~archsim.config.workload.ConvLayer` into weight and input
activation tensors: the layer's real tensors when it names a ``data:`` folder (``weights.npy``
float32 (k, c/groups, r, s), ``activations.npy`` float32 (n, c, h, w) >= 0, written by
:func:`write_conv_dir`), else seeded synthetic ones, deterministic from (seed, layer name);
``reference_conv`` computes the exact output that the SCNN/DCNN/tensor-core datapaths are
checked against.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from archsim.config.workload import ConvLayer
from archsim.errors import WorkloadError
from archsim.workload.materialize import layer_rng
from archsim.workload.matvec import LayerDataError

__all__ = ["SparseConv", "materialize_conv", "read_conv_dir", "reference_conv", "write_conv_dir"]


@dataclass(frozen=True, eq=False)
class SparseConv:
    """A convolution layer with concrete, pruned weights and sparse non-negative inputs.

    Shapes are element counts (see ``ConvLayer``): ``weights`` is float32
    ``(k, c // groups, r, s)`` with pruned entries exactly 0; ``activations`` is float32
    ``(n, c, h, w)``, every entry >= 0 (post-ReLU-like), unpadded. ``stride`` and ``pad`` are in
    pixels; filter ``f`` belongs to group ``f // (k // groups)`` and reads input channels
    ``g * (c // groups) ... (g + 1) * (c // groups) - 1`` of its group ``g``.
    """

    name: str
    n: int
    c: int
    k: int
    h: int
    w: int
    r: int
    s: int
    stride: int
    pad: int
    groups: int
    weights: np.ndarray  # float32 (k, c // groups, r, s)
    activations: np.ndarray  # float32 (n, c, h, w), >= 0

    def __post_init__(self) -> None:
        want_w = (self.k, self.c // self.groups, self.r, self.s)
        want_a = (self.n, self.c, self.h, self.w)
        if self.c % self.groups or self.k % self.groups:
            raise WorkloadError(
                f"layer {self.name}: c={self.c} and k={self.k} must be divisible by "
                f"groups={self.groups}"
            )
        if tuple(self.weights.shape) != want_w:
            raise WorkloadError(
                f"layer {self.name}: weights have shape {tuple(self.weights.shape)}, "
                f"expected (k, c // groups, r, s) = {want_w}"
            )
        if tuple(self.activations.shape) != want_a:
            raise WorkloadError(
                f"layer {self.name}: activations have shape {tuple(self.activations.shape)}, "
                f"expected (n, c, h, w) = {want_a}"
            )
        if self.out_h < 1 or self.out_w < 1:
            raise WorkloadError(f"layer {self.name}: output size <= 0")

    @property
    def out_h(self) -> int:
        """Output height (pixels)."""
        return (self.h + 2 * self.pad - self.r) // self.stride + 1

    @property
    def out_w(self) -> int:
        """Output width (pixels)."""
        return (self.w + 2 * self.pad - self.s) // self.stride + 1

    @property
    def weight_nnz(self) -> int:
        """Number of non-zero weights."""
        return int(np.count_nonzero(self.weights))

    @property
    def activation_nnz(self) -> int:
        """Number of non-zero input activations."""
        return int(np.count_nonzero(self.activations))

    @property
    def weight_density(self) -> float:
        """Measured fraction of non-zero weights."""
        return self.weight_nnz / float(self.weights.size)

    @property
    def activation_density(self) -> float:
        """Measured fraction of non-zero input activations."""
        return self.activation_nnz / float(self.activations.size)

    @property
    def macs_dense(self) -> int:
        """Dense multiply-accumulates: ``n * k * out_h * out_w * (c / groups) * r * s``."""
        cg = self.c // self.groups
        return self.n * self.k * self.out_h * self.out_w * cg * self.r * self.s


def _exact_mask(rng: np.random.Generator, total: int, density: float) -> np.ndarray:
    """Mask of exactly ``round(density * total)`` uniform, distinct kept positions.

    A boolean mask, not sorted positions: scattering the draw into it costs O(kept), where
    sorting it took O(kept log kept), and ``x[mask] = values`` fills the kept positions in
    rising order just as ``x[sorted positions] = values`` did (the draws are the same).
    """
    kept = int(round(density * total))
    if kept >= total:
        return np.ones(total, dtype=bool)
    mask = np.zeros(total, dtype=bool)
    mask[rng.choice(total, size=kept, replace=False)] = True
    return mask


def write_conv_dir(folder: str | Path, weights: np.ndarray, activations: np.ndarray) -> None:
    """Write a conv layer's real tensors as ``folder/weights.npy`` and ``activations.npy``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "weights.npy", np.asarray(weights, dtype=np.float32))
    np.save(folder / "activations.npy", np.asarray(activations, dtype=np.float32))


def _load_npy(layer: ConvLayer, path: Path, shape: tuple[int, ...]) -> np.ndarray:
    if path.exists() and not path.is_file():  # a FIFO or /dev/zero: the read never ends
        raise LayerDataError(
            layer.name, "data", f"{path}: not a regular file; allowed: a .npy file"
        )
    try:  # mapped first: a header's shape is checked before any memory is allocated for it
        with np.errstate(over="ignore"):  # a shape past 2^63 elements: numpy's own error below
            arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except FileNotFoundError:
        raise LayerDataError(layer.name, "data", f"{path}: required data file is missing") from None
    except (OSError, ValueError, EOFError, OverflowError, zipfile.BadZipFile) as exc:
        # OverflowError: a header whose shape maps no length (negative, or past 2^63 bytes)
        raise LayerDataError(layer.name, "data", f"{path}: not a NumPy .npy array: {exc}") from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        raise LayerDataError(
            layer.name, "data", f"{path}: an .npz archive; allowed: one NumPy .npy array"
        )
    if tuple(arr.shape) != shape:
        raise LayerDataError(
            layer.name,
            "data",
            f"{path}: shape {tuple(arr.shape)} does not match the layer; allowed: {shape}",
        )
    if not np.issubdtype(arr.dtype, np.floating) or not np.all(np.isfinite(arr)):
        raise LayerDataError(layer.name, "data", f"{path}: allowed: finite float values")
    with np.errstate(over="ignore"):  # refused just below, with the file named
        out = np.array(arr, dtype=np.float32)  # read in, the file unmapped
    if not np.all(np.isfinite(out)):  # float64 values beyond float32's range
        raise LayerDataError(
            layer.name, "data", f"{path}: values beyond float32's range (3.4e38); allowed: "
            "finite float32 values"
        )  # fmt: skip
    return out


def read_conv_dir(layer: ConvLayer, base_dir: str | Path) -> SparseConv:
    """The real tensors of ``layer`` from its ``data:`` folder (resolved against ``base_dir``)."""
    folder = (Path(base_dir) / str(layer.data)).resolve()
    weights = _load_npy(layer, folder / "weights.npy", layer.weight_shape)
    acts = _load_npy(layer, folder / "activations.npy", layer.input_shape)
    if np.any(acts < 0):
        raise LayerDataError(
            layer.name,
            "data",
            f"{folder / 'activations.npy'}: negative activations; allowed: values >= 0 "
            "(post-ReLU inputs, as the sparse engines take)",
        )
    return _sparse_conv(layer, weights, acts)


def _sparse_conv(layer: ConvLayer, weights: np.ndarray, acts: np.ndarray) -> SparseConv:
    return SparseConv(
        name=layer.name,
        n=layer.n,
        c=layer.c,
        k=layer.k,
        h=layer.h,
        w=layer.w,
        r=layer.r,
        s=layer.s,
        stride=layer.stride,
        pad=layer.pad,
        groups=layer.groups,
        weights=weights,
        activations=acts,
    )


def materialize_conv(layer: ConvLayer, seed: int, base_dir: str | Path | None = None) -> SparseConv:
    """Pruned weights and post-ReLU-like inputs for ``layer``; depends only on (seed, name, spec)
    and, when ``base_dir`` is given and the layer names a ``data:`` folder, on that folder's real
    tensors (then they are returned and ``seed`` is unused).

    Weights: exactly ``round(weight_density * size)`` non-zeros at uniformly random distinct
    positions, values N(0, std = 1 / sqrt(fan_in)) with ``fan_in = (c / groups) * r * s``, never
    exactly 0. Activations: exactly ``round(activation_density * size)`` positive half-normal
    values (at least 0.01) at uniformly random positions, the rest 0.
    """
    if base_dir is not None and layer.data is not None:
        return read_conv_dir(layer, base_dir)
    for f in ("weight_density", "activation_density"):
        if getattr(layer, f) is None:
            raise LayerDataError(
                layer.name,
                f,
                "missing; sparse conv engines (SCNN, DCNN) need it; allowed: a fraction in [0, 1]",
            )
    rng = layer_rng(seed, layer.name)
    w_shape = layer.weight_shape
    w_size = int(np.prod(w_shape))
    fan_in = w_shape[1] * w_shape[2] * w_shape[3]
    scale = np.float32(1.0 / np.sqrt(fan_in))
    w_mask = _exact_mask(rng, w_size, layer.weight_density)
    w_vals = rng.standard_normal(int(np.count_nonzero(w_mask)), dtype=np.float32) * scale
    # a kept weight is never exactly zero (a zero draw is astronomically rare; keep it non-zero)
    w_vals[w_vals == 0.0] = scale
    weights = np.zeros(w_size, dtype=np.float32)
    weights[w_mask] = w_vals
    a_shape = layer.input_shape
    a_size = int(np.prod(a_shape))
    a_mask = _exact_mask(rng, a_size, layer.activation_density)
    a_vals = rng.standard_normal(int(np.count_nonzero(a_mask)), dtype=np.float32)
    a_vals = np.maximum(np.abs(a_vals, out=a_vals), 1e-2, out=a_vals)
    acts = np.zeros(a_size, dtype=np.float32)
    acts[a_mask] = a_vals
    return _sparse_conv(layer, weights.reshape(w_shape), acts.reshape(a_shape))


def reference_conv(sc: SparseConv) -> np.ndarray:
    """Exact output (n, k, out_h, out_w), float64, of the convolution, without bias or ReLU.

    ``out[b, f, y, x] = sum_{ci, i, j} w[f, ci, i, j] * a_pad[b, g*cg + ci, y*stride + i,
    x*stride + j]`` for filter ``f`` of group ``g`` (``cg = c // groups``), where ``a_pad`` is
    the input zero-padded by ``pad`` pixels. One tensor contraction per (group, i, j).
    """
    acts = sc.activations.astype(np.float64)
    wts = sc.weights.astype(np.float64)
    p, q, st = sc.out_h, sc.out_w, sc.stride
    if sc.pad:
        pw = ((0, 0), (0, 0), (sc.pad, sc.pad), (sc.pad, sc.pad))
        acts = np.pad(acts, pw)
    cg, kg = sc.c // sc.groups, sc.k // sc.groups
    out = np.zeros((sc.n, sc.k, p, q), dtype=np.float64)
    for g in range(sc.groups):
        x_g = acts[:, g * cg : (g + 1) * cg]
        w_g = wts[g * kg : (g + 1) * kg]
        acc = np.zeros((kg, sc.n, p, q), dtype=np.float64)
        for i in range(sc.r):
            for j in range(sc.s):
                window = x_g[:, :, i : i + st * (p - 1) + 1 : st, j : j + st * (q - 1) + 1 : st]
                acc += np.tensordot(w_g[:, :, i, j], window, axes=([1], [1]))
        out[:, g * kg : (g + 1) * kg] = acc.transpose(1, 0, 2, 3)
    return out
