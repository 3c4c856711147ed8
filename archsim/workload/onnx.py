"""ONNX model -> :class:`~archsim.config.workload.WorkloadSpec` plus the real tensors.

``import_onnx(path)`` returns the spec; ``read_onnx(path)`` also returns every layer's real
weights and measured input activations, the non-MAC op table and the warnings. Layer names are
the ONNX node names (``<op>_<index>`` for unnamed nodes). Weight density = fraction of weights
with ``|w| > zero_threshold`` (BatchNorm folded in); activation density = fraction of non-zero
layer inputs when onnxruntime runs the model (see ``onnx_activations``). Placeholder weights
(``ConstantOfShape``, as in the ``onnx`` wheel's light models) are not measured: both densities
take the stated default 1.0 (dense) and a warning says so.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from archsim.config.messages import validation_to_config_error
from archsim.config.workload import LINE_BREAKING_CATEGORIES, WorkloadSpec
from archsim.errors import WorkloadError
from archsim.workload.onnx_activations import load_input, measure_activations
from archsim.workload.onnx_graph import load_graph
from archsim.workload.onnx_layers import MAC_OPS, PlacedLayer, place_node
from archsim.workload.onnx_ops import UNPLACEABLE_MAC_OPS, OpStats, summarize_ops

__all__ = ["DEFAULT_DENSITY", "LayerTensors", "OnnxImport", "import_onnx", "read_onnx"]

#: density used where nothing can be measured (placeholder weights, no activation run)
DEFAULT_DENSITY = 1.0


@dataclass(frozen=True, eq=False)
class LayerTensors:
    """Real tensors of one layer (None where the model has none) and where they came from.

    ``weights``: fc/lstm (outputs, inputs) float32; conv (k, c / groups, r, s). ``activations``:
    the layer's input for the whole batch as the model computed it (fc: (batch, inputs)).
    """

    weights: np.ndarray | None
    bias: np.ndarray | None
    activations: np.ndarray | None
    weight_source: str
    activation_source: str


@dataclass(frozen=True, eq=False)
class OnnxImport:
    """Everything the importer learnt about a model."""

    path: str
    spec: WorkloadSpec
    layers: tuple[PlacedLayer, ...]
    tensors: dict[str, LayerTensors]
    ops: tuple[OpStats, ...]
    warnings: tuple[str, ...]
    folded_nodes: int = 0
    names: dict[int, str] = field(default_factory=dict)
    layer_bytes: dict[int, int] = field(default_factory=dict)  # node -> inputs + outputs, fp32

    @property
    def macs_total(self) -> int:
        """Dense MACs of every placed layer (whole sequences for LSTM/GRU)."""
        return sum(pl.macs for pl in self.layers)

    def op_table(self) -> list[dict[str, float | int | str]]:
        """One row per op type (MAC layers first), with its share of FLOPs and bytes.

        FLOPs: 2 per MAC, non-MAC ops by ``onnx_ops``' convention. Bytes: every tensor a node
        reads or writes (MAC layers: weights and bias too) at 4 bytes.
        """
        rows: dict[str, list[int]] = {}
        for pl in self.layers:
            spec = next(s for s in self.spec.layers if s.name == self.names[pl.node])
            r = rows.setdefault(f"{spec.kind} layers", [0, 0, 0])
            r[0] += 1
            r[1] += 2 * pl.macs
            r[2] += self.layer_bytes.get(pl.node, 0)
        for st in self.ops:
            rows[st.op_type] = [st.count, st.flops, st.bytes]
        tf = sum(r[1] for r in rows.values()) or 1
        tb = sum(r[2] for r in rows.values()) or 1
        return [
            {
                "op": op,
                "count": c,
                "flops": f,
                "flops_share": f / tf,
                "bytes": b,
                "bytes_share": b / tb,
            }
            for op, (c, f, b) in rows.items()
        ]


def unique_name(name: str, seen: set[str], sep: str = "#") -> str:
    """``name``, or ``name<sep>2``, ``name<sep>3``... the first not in ``seen`` (then added)."""
    out, k = name, 1
    while out in seen:
        k += 1
        out = f"{name}{sep}{k}"
    seen.add(out)
    return out


def _printable(name: str) -> str:
    """``name`` with control characters and line breaks (which a layer name may not hold: it
    is one line of a table) as ``_``: an ONNX node named ``"conv\t1"`` imports as ``conv_1``."""
    return "".join("_" if unicodedata.category(c) in LINE_BREAKING_CATEGORIES else c for c in name)


def _density(a: np.ndarray, threshold: float) -> float:
    return float(np.count_nonzero(np.abs(a) > threshold)) / float(a.size) if a.size else 0.0


def _unmeasurable(g) -> str:
    """Why onnxruntime cannot be fed here (one float data input is supported), or ''."""
    if len(g.inputs) != 1:
        return f"{len(g.inputs)} data inputs ({', '.join(g.inputs)}); one is supported"
    inp = next(i for i in g.model.graph.input if i.name in g.inputs)
    if inp.type.tensor_type.elem_type != 1:  # TensorProto.FLOAT
        return f"input {inp.name!r} is not float32"
    return ""


_SHAPE_KEYS = ("c", "k", "h", "w", "r", "s", "stride", "pad", "groups", "inputs", "outputs")


def _preset_densities(placed, source) -> dict[int, tuple[float, float, str]]:
    """node -> (weight density, activation density, preset layer) for placeholder layers whose
    kind and shape equal the next unused preset layer of that kind."""
    if source is None:
        return {}
    from archsim.config.io import load_workload

    wl = load_workload(source)
    pool = list(wl.layers)
    out = {}
    for pl in placed:
        if not pl.placeholder:
            continue
        key = tuple(pl.fields.get(k) for k in _SHAPE_KEYS)
        for j, lay in enumerate(pool):
            if lay.kind == pl.fields["kind"] and key == tuple(
                getattr(lay, k, None) if k in pl.fields else None for k in _SHAPE_KEYS
            ):
                out[pl.node] = (lay.weight_density, lay.activation_density, f"{wl.name}:{lay.name}")
                del pool[j]
                break
    return out


def _node_bytes(g, i: int) -> int:
    node = g.nodes[i]
    names = [n for n in (*node.input, *node.output) if n and n in g.shapes]
    return 4 * sum(math.prod(int(d) for d in g.shapes[n]) for n in names)


def _place_all(g, path: Path) -> tuple[list[PlacedLayer], list[str], set[int]]:
    placed: list[PlacedLayer] = []
    warnings: list[str] = []
    used: set[int] = set()
    why: dict[int, str] = {}  # MAC nodes not placed: the reason
    for i, node in enumerate(g.nodes):
        if node.op_type in UNPLACEABLE_MAC_OPS:
            warnings.append(
                f"{path}: node {g.node_label(i)!r}: op {node.op_type} is not placed (no layer "
                f"kind for it); allowed MAC ops: {', '.join(MAC_OPS)}"
            )
            continue
        got = place_node(g, i)
        if isinstance(got, str):
            why.setdefault(i, got)
            warnings.append(f"{path}: node {g.node_label(i)!r} ({node.op_type}): not placed: {got}")
        elif got is not None:
            placed.append(got)
            used.add(i)
            used.update(got.folded)
    if not placed:
        macs = [
            f"{g.node_label(i)} ({n.op_type})"
            for i, n in enumerate(g.nodes)
            if n.op_type in UNPLACEABLE_MAC_OPS or n.op_type in MAC_OPS
        ]
        what = f"nodes {', '.join(macs)} cannot be placed" if macs else "no MAC-carrying node"
        if why:  # the first node's own reason (a 7x7 filter on a 4x4 input), not "no Conv"
            i, reason = next(iter(why.items()))
            what += f" ({g.node_label(i)}: {reason})"
        raise WorkloadError(
            f"{path}: {what}; allowed: a model with at least one {', '.join(MAC_OPS)} node "
            "(2-D Conv) that fits its input"
        )
    return placed, warnings, used


def read_onnx(
    path: str | Path,
    batch: int | None = 1,
    input_shape: tuple[int, ...] | None = None,
    inputs: str | Path | np.ndarray | None = None,
    zero_threshold: float = 0.0,
    measure: bool = True,
    densities_from: WorkloadSpec | str | Path | None = None,
    batch_required: bool = False,
) -> OnnxImport:
    """Import ``path``: layers, densities, real tensors, non-MAC ops, warnings.

    ``batch`` fixes a dynamic first input dimension, ``input_shape`` the whole data input shape;
    ``inputs`` (an ``.npy`` path or array) feeds the activation measurement (default input:
    ``onnx_activations.DEFAULT_INPUT``); ``measure=False`` skips onnxruntime.
    ``densities_from`` (a workload preset or file) gives layers with placeholder weights the
    densities of the preset layer of the same kind and shape (matched in order).
    ``batch_required``: the user asked for ``batch``, so a first dimension fixed at another
    size is an error (it is otherwise kept).
    """
    path = Path(path)
    if not (zero_threshold >= 0 and math.isfinite(zero_threshold)):  # NaN fails ">= 0"
        raise WorkloadError(f"--zero-threshold: {zero_threshold}; allowed: a finite number >= 0")
    g = load_graph(path, batch, input_shape, batch_required)
    placed, warnings, used = _place_all(g, path)
    ops = summarize_ops(g, used)
    for st in ops:
        if not st.modelled:
            warnings.append(f"{path}: op {st.op_type} ({st.count} nodes): FLOPs not modelled (0)")
    n_placeholder = sum(pl.placeholder for pl in placed)
    if n_placeholder:
        warnings.append(
            f"{path}: {n_placeholder} of {len(placed)} layers have placeholder weights "
            f"(ConstantOfShape): activations are not measured; densities come from "
            f"--densities-from where a preset layer has the same shape, else the stated default "
            f"{DEFAULT_DENSITY} (dense)"
        )
    acts: dict[str, np.ndarray] = {}
    act_source = f"default {DEFAULT_DENSITY} (not measured)"
    unmeasurable = _unmeasurable(g)
    if measure and unmeasurable and not n_placeholder:
        warnings.append(f"{path}: activations not measured: {unmeasurable}")
    if measure and not n_placeholder and not unmeasurable:
        x, where = load_input(g, inputs)
        acts = measure_activations(g, [pl.input_name for pl in placed], x)
        act_source = f"measured by onnxruntime on {where}"
    elif inputs is not None:
        load_input(g, inputs)  # a wrong .npy is still an error
    preset = _preset_densities(placed, densities_from)
    seen: set[str] = set()
    names: dict[int, str] = {}
    layers, tensors, lines = [], {}, []
    for pl in placed:
        name = unique_name(_printable(g.node_label(pl.node)), seen)
        names[pl.node] = name
        wd = _density(pl.weights, zero_threshold) if pl.weights is not None else DEFAULT_DENSITY
        a = acts.get(pl.input_name)
        ad = _density(a, 0.0) if a is not None else DEFAULT_DENSITY
        w_src = (
            "onnx initialisers" + (" (BatchNorm folded)" if pl.folded else "")
            if pl.weights is not None
            else f"default {DEFAULT_DENSITY} (no real weights)"
        )
        a_src = act_source if a is not None else f"default {DEFAULT_DENSITY} (not measured)"
        if pl.placeholder and pl.node in preset:
            wd, ad, where = preset[pl.node]
            w_src = a_src = f"preset {where}"
        layers.append({"name": name, **pl.fields, "weight_density": wd, "activation_density": ad})
        tensors[name] = LayerTensors(pl.weights, pl.bias, a, w_src, a_src)
        lines.append(f"{name}: weights {w_src}; activations {a_src}")
        if pl.note:
            warnings.append(f"{path}: node {name!r}: {pl.note}")
    digest = _digest(path, g.external_files)
    try:
        spec = WorkloadSpec.model_validate(
            {
                "schema_version": 1,
                "name": _printable(path.stem),  # a file name may hold a U+2028
                "source": f"ONNX import of {path.name} (sha256 {digest}) by archsim",
                "description": "Per-layer provenance -- " + "; ".join(lines),
                "layers": layers,
            }
        )
    except ValidationError as exc:
        raise validation_to_config_error(exc, str(path), WorkloadSpec) from None
    return OnnxImport(
        path=str(path),
        spec=spec.bind(path.parent, str(path)),
        layers=tuple(placed),
        tensors=tensors,
        ops=tuple(ops),
        warnings=tuple(warnings),
        folded_nodes=sum(len(pl.folded) for pl in placed),
        names=names,
        layer_bytes={pl.node: _node_bytes(g, pl.node) for pl in placed},
    )


def _digest(path: Path, external: tuple[Path, ...]) -> str:
    """sha256 (16 hex digits) of the model and of its ``external`` data files, so that
    changed weights beside an unchanged ``.onnx`` change the provenance."""
    h = hashlib.sha256(path.read_bytes())
    for data in external:
        h.update(data.read_bytes())
    return h.hexdigest()[:16]


def import_onnx(path: str | Path, batch: int = 1, **options: object) -> WorkloadSpec:
    """The workload of an ONNX model (see :func:`read_onnx` for ``options``)."""
    return read_onnx(path, batch=batch, **options).spec  # type: ignore[arg-type]
