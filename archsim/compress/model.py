"""Deep Compression of an ONNX model's weights: prune, share, report, write a valid ONNX file.

Applies to the weight initialisers of Conv (``conv``), Gemm and MatMul (``fc``) nodes. The
written model has the same graph; each compressed initialiser holds the shared values (pruned
weights exactly 0), so onnxruntime runs it and archsim's importer measures its densities and
finds its codebooks.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from archsim.compress.prune import prune_mask
from archsim.compress.share import kmeans_share
from archsim.compress.storage import LayerStorage, layer_storage
from archsim.errors import WorkloadError, os_reason

__all__ = [
    "ALEXNET_DENSITIES",
    "CompressionPlan",
    "compress_arrays",
    "compress_onnx",
    "weight_matrix",
]

#: Deep Compression's AlexNet densities in layer order (Han et al., ICLR 2016, Table 4:
#: conv1-5 84/38/35/37/37 %, fc6-8 9/9/25 %)
ALEXNET_DENSITIES = {"conv": (0.84, 0.38, 0.35, 0.37, 0.37), "fc": (0.09, 0.09, 0.25)}


@dataclass(frozen=True)
class CompressionPlan:
    """Targets: density and codebook bits per kind, overridden per layer (ONNX node name).

    Defaults follow Deep Compression: 4-bit codebooks for fc, 8-bit for conv; relative index
    bits 5 (fc) and 8 (conv) as in the paper's storage scheme (Section 2). Densities default
    to 1.0 (share only).
    """

    fc_density: float = 1.0
    conv_density: float = 1.0
    fc_bits: int = 4
    conv_bits: int = 8
    fc_index_bits: int = 5
    conv_index_bits: int = 8
    densities: Mapping[str, float] | None = None
    ordered: Mapping[str, tuple[float, ...]] | None = None  # per kind, in graph order

    def density(self, name: str, kind: str, index: int = 0) -> float:
        """Target density of layer ``name``, the ``index``-th of ``kind`` ("fc" or "conv")."""
        if self.densities and name in self.densities:
            return float(self.densities[name])
        if self.ordered and kind in self.ordered:
            return float(self.ordered[kind][index])
        return self.fc_density if kind == "fc" else self.conv_density

    def bits(self, kind: str) -> tuple[int, int]:
        """(codebook bits, relative index bits) of ``kind``."""
        if kind == "fc":
            return self.fc_bits, self.fc_index_bits
        return self.conv_bits, self.conv_index_bits


def weight_matrix(w: np.ndarray, kind: str, transposed: bool) -> np.ndarray:
    """The (outputs, inputs) matrix of a weight tensor: conv (k, c*r*s); fc ``w`` or ``w.T``
    when the tensor is stored (inputs, outputs)."""
    if kind == "conv":
        return w.reshape(w.shape[0], -1)
    return w.T if transposed else w


def compress_arrays(
    name: str, w: np.ndarray, density: float, bits: int, index_bits: int
) -> tuple[np.ndarray, np.ndarray, LayerStorage]:
    """Prune and share one (outputs, inputs) matrix: (shared values, codes, storage)."""
    mask = prune_mask(w, density)
    cents, codes = kmeans_share(w[mask], bits)
    shared = np.zeros(w.shape, dtype=np.float32)
    shared[mask] = cents[codes]
    code_mat = np.zeros(w.shape, dtype=np.int64)
    code_mat[mask] = codes + 1
    return shared, code_mat, layer_storage(name, code_mat, bits, index_bits)


def _targets(model: Any) -> list[tuple[str, str, str, bool]]:
    """(node name, kind, initialiser name, stored transposed) of each compressible weight."""
    from onnx import helper

    inits = {t.name: len(t.dims) for t in model.graph.initializer}
    out = []
    for i, node in enumerate(model.graph.node):
        if node.op_type not in ("Conv", "Gemm", "MatMul") or len(node.input) < 2:
            continue
        weight_first = node.input[1] not in inits and inits.get(node.input[0]) == 2
        if node.op_type == "MatMul" and weight_first:
            # y = W x: the constant first operand is already (outputs, inputs), as the import
            # places it (onnx_layers._matmul)
            out.append((node.name or f"{node.op_type}_{i}", "fc", node.input[0], False))
            continue
        if node.input[1] not in inits:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        kind = "conv" if node.op_type == "Conv" else "fc"
        transposed = node.op_type == "MatMul" or not attrs.get("transB", 0)
        out.append((node.name or f"{node.op_type}_{i}", kind, node.input[1], transposed))
    return out


def compress_onnx(
    src: str | Path, dst: str | Path | None, plan: CompressionPlan
) -> list[LayerStorage]:
    """Compress the weights of ``src`` by ``plan``; write the model to ``dst`` (atomically;
    None: report only). Returns one storage record per compressed layer."""
    from onnx import numpy_helper

    from archsim.output import check_out_file
    from archsim.workload.onnx_graph import check_graph, initializer_array, read_model

    src = Path(src)
    if dst is not None:
        check_out_file(dst, "-o", inputs=[src])  # not the model itself, a device or a FIFO
    model = read_model(src)
    check_graph(src, model)
    targets = _targets(model)
    if not targets:
        raise WorkloadError(
            f"{src}: no weight initialiser of a Conv, Gemm or MatMul node to compress; allowed: "
            "a model whose layer weights are initialisers"
        )
    names = {t[0] for t in targets}
    twice = sorted({n for n in plan.densities or {} if [t[0] for t in targets].count(n) > 1})
    if twice:  # one --density would set every node of that name
        raise WorkloadError(
            f"{src}: --density {twice[0]}: {twice[0]!r} names more than one Conv/Gemm/MatMul "
            "node; allowed: a model whose nodes have distinct names"
        )
    unknown = sorted(set(plan.densities or {}) - names)
    if unknown:
        raise WorkloadError(
            f"{src}: --density: no layer named {', '.join(unknown)}; allowed: "
            f"{', '.join(sorted(names))}"
        )
    for kind, values in (plan.ordered or {}).items():
        have = [t[0] for t in targets if t[1] == kind]
        if len(have) != len(values):
            raise WorkloadError(
                f"{src}: --plan: the plan has {len(values)} {kind} densities, the model has "
                f"{len(have)} {kind} layers ({', '.join(have)}); allowed: a model with "
                f"{len(values)} {kind} layers"
            )
    by_name = {t.name: t for t in model.graph.initializer}
    report = []
    seen = {"conv": 0, "fc": 0}
    done: dict[str, tuple[str, float]] = {}  # initializer -> (first layer, its density)
    for name, kind, init, transposed in targets:
        raw = initializer_array(src, by_name[init])
        if raw.dtype.kind != "f":  # written back as float32 the graph would not load
            raise WorkloadError(
                f"{src}: initializer {init!r} of {kind} layer {name!r} is {raw.dtype}; "
                "allowed: float16, float32 or float64 weights"
            )
        w = raw.astype(np.float32)
        # a MatMul by a 1-D B (k,) is a k x 1 weight, one output (as `archsim import` reads it)
        column = kind == "fc" and transposed and w.ndim == 1
        if (w.ndim != (4 if kind == "conv" else 2) and not column) or w.size == 0:
            raise WorkloadError(
                f"{src}: initializer {init!r} of {kind} layer {name!r} has shape {w.shape}; "
                f"allowed: a {'4-D (k, c, r, s)' if kind == 'conv' else '2-D'} weight tensor "
                "with no empty dimension"
            )
        mat = weight_matrix(w.reshape(-1, 1) if column else w, kind, transposed)
        bits, ibits = plan.bits(kind)
        density = plan.density(name, kind, seen[kind])
        seen[kind] += 1
        if init in done:  # one tensor, compressed once: its first layer's row covers it
            first, was = done[init]
            if density != was:
                raise WorkloadError(
                    f"{src}: initializer {init!r} is the weight of {first!r} and {name!r}, "
                    f"asked at densities {was:g} and {density:g}; allowed: one density for a "
                    "shared weight"
                )
            continue
        done[init] = (name, density)
        shared, _, st = compress_arrays(name, mat, density, bits, ibits)
        back = shared.T if (kind == "fc" and transposed) else shared
        back = back.reshape(w.shape).astype(raw.dtype)  # the graph's own type (fp16, fp64)
        by_name[init].CopyFrom(numpy_helper.from_array(back, init))
        report.append(st)
    if dst is not None:
        _save(model, Path(dst))
    return report


def _save(model: Any, dst: Path) -> None:
    import onnx

    from archsim.output import first_missing_folder

    dst = dst.resolve()
    made = first_missing_folder(dst)  # removed again if the write fails
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", dir=dst.parent)
        os.close(fd)
        try:
            onnx.save(model, tmp)
            os.chmod(tmp, 0o644)  # as the other outputs (mkstemp makes 0600)
            os.replace(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise WorkloadError(
            f"{dst}: cannot write: {os_reason(exc)}; allowed: a writable folder with room for it"
        ) from None
