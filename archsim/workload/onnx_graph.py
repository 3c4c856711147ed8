"""Read an ONNX file: validate it, fix input shapes, infer every tensor's shape, fold constants.

Needs the ``[onnx]`` extra (``onnx``). Everything here reports user mistakes as
``WorkloadError("<file>: <node or field>: <problem>; allowed: ...")``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archsim.errors import WorkloadError, integral, is_count, one_line
from archsim.units import INT64_MAX

__all__ = ["ConstTensor", "OnnxGraph", "check_graph", "load_graph", "read_model", "require_onnx"]

#: constant-folding evaluates a node only when its output is at most this many elements
_FOLD_LIMIT_ELEMENTS = 1 << 22


def node_label(node: Any, index: int) -> str:
    """Node ``index``'s name, or ``<op>_<index>`` when the graph leaves it empty."""
    return node.name or f"{node.op_type}_{index}"


def require_onnx() -> Any:
    """The ``onnx`` module, or a one-line error naming the extra to install."""
    try:
        import onnx
    except ImportError:  # pragma: no cover - depends on the environment
        raise WorkloadError(
            "ONNX support needs the onnx extra: pip install 'archsim[onnx]'"
        ) from None
    return onnx


@dataclass(frozen=True, eq=False)
class ConstTensor:
    """A tensor whose value does not depend on the graph inputs.

    ``array`` holds the values when known; a tensor made by ``ConstantOfShape`` (the placeholder
    weights of the ``onnx`` wheel's light models) is ``fill`` (one value everywhere) instead.
    """

    shape: tuple[int, ...]
    array: np.ndarray | None = None
    fill: float | None = None
    producer: str = "initializer"

    @property
    def is_real(self) -> bool:
        """True when the values are real data (not a one-value placeholder)."""
        return self.array is not None

    def values(self) -> np.ndarray:
        """The values as an array (materialises a fill; callers keep that to small tensors)."""
        if self.array is not None:
            return self.array
        return np.full(self.shape, self.fill if self.fill is not None else 0.0, np.float32)


@dataclass(eq=False)
class OnnxGraph:
    """A shape-inferred graph: nodes, shapes and dtypes of every tensor, the constants."""

    path: str
    model: Any  # onnx.ModelProto after shape inference
    nodes: list[Any]
    shapes: dict[str, tuple[int, ...]]
    consts: dict[str, ConstTensor]
    inputs: dict[str, tuple[int, ...]]  # graph inputs that are not constants
    consumers: dict[str, list[int]] = field(default_factory=dict)
    external_files: tuple[Path, ...] = ()  # data files the initialisers were read from

    def node_label(self, i: int) -> str:
        """The node's name, or ``<op>_<index>`` when the graph leaves it empty."""
        return node_label(self.nodes[i], i)


def initializer_array(path: Path, tensor: Any) -> np.ndarray:
    """An initializer's values; a tensor whose data do not fill its shape (truncated raw
    bytes, no data at all) is a ``WorkloadError`` naming the file and the initializer."""
    from onnx import numpy_helper

    if any(d < 0 for d in tensor.dims):  # numpy_helper reads some of these as a tensor
        raise WorkloadError(
            f"{path}: initializer {tensor.name!r}: dimensions {list(tensor.dims)}; allowed: "
            "sizes >= 0"
        )
    try:
        arr = numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError) as exc:
        dims = tuple(int(d) for d in tensor.dims)
        raise WorkloadError(
            f"{path}: initializer {tensor.name!r}: malformed: its data do not fill its shape "
            f"{dims} ({one_line(exc, 120)}); allowed: a complete tensor"
        ) from None
    bad = non_finite(arr) if arr.dtype.kind in "fc" else 0
    if bad:
        raise WorkloadError(
            f"{path}: initializer {tensor.name!r}: {bad} NaN or infinite value(s); allowed: "
            "finite numbers"
        )
    return arr


def non_finite(arr: np.ndarray) -> int:
    """How many values of ``arr`` are NaN or infinite."""
    return int(arr.size - np.count_nonzero(np.isfinite(arr)))


def read_model(path: Path) -> Any:
    """The ONNX model at ``path``, external data loaded (see :func:`read_model_files`)."""
    return read_model_files(path)[0]


def read_model_files(path: Path) -> tuple[Any, tuple[Path, ...]]:
    """(model, the external data files its initialisers name): the weights of a model whose
    exporter stored them beside it (torch's dynamo exporter writes MODEL.onnx.data) are
    loaded; a missing file is named."""
    onnx = require_onnx()
    if not path.is_file():
        what = "not a regular file" if path.exists() else "file not found"
        raise WorkloadError(f"{path}: {what}; allowed: an .onnx model file")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf raises its own DecodeError types
        raise WorkloadError(
            f"{path}: not a readable ONNX model ({type(exc).__name__}); allowed: an ONNX "
            "ModelProto file (truncated or non-ONNX files are rejected)"
        ) from None
    files = tuple(sorted({path.parent / e.value for t in model.graph.initializer
                          for e in t.external_data if e.key == "location"}))  # fmt: skip
    missing = next((f for f in files if not f.is_file()), None)
    if missing is not None:
        raise WorkloadError(
            f"{path}: its weights are stored outside it, in {missing}, which is missing or not "
            "a file; allowed: the model with its external data file beside it, as the exporter "
            "wrote them"
        )
    try:
        onnx.external_data_helper.load_external_data_for_model(model, str(path.parent))
    except Exception as exc:  # a truncated or foreign data file, a location outside the folder
        raise WorkloadError(
            f"{path}: cannot read its external data ({one_line(exc, 200)}); allowed: the data "
            "files the exporter wrote beside it"
        ) from None
    if not model.graph.node:
        raise WorkloadError(f"{path}: graph: no nodes (not an ONNX model?); allowed: an ONNX model")
    newest = onnx.defs.onnx_opset_version()
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx") and imp.version > newest:
            raise WorkloadError(
                f"{path}: opset_import: opset {imp.version} is newer than this onnx supports; "
                f"allowed: opset <= {newest} (upgrade onnx or export with an older opset)"
            )
    return model, files


def _check_nodes(path: Path, model: Any) -> None:
    """Every node reads only what a graph input, an initializer or an earlier node makes (ONNX
    requires topological order, so a cycle fails here), and every op of the default domain is
    an ONNX operator (custom domains are left to their runtime)."""
    onnx = require_onnx()
    g = model.graph
    known = {i.name for i in g.input} | {t.name for t in g.initializer} | {""}
    for i, node in enumerate(g.node):
        label = node_label(node, i)
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            raise WorkloadError(
                f"{path}: node {label!r}: op {node.op_type!r} is not an ONNX operator; allowed: "
                "the operators of the ONNX standard (or a custom domain)"
            )
        missing = [n for n in node.input if n not in known]
        if missing:
            raise WorkloadError(
                f"{path}: node {label!r} ({node.op_type}) reads {missing[0]!r}, which no graph "
                "input, initializer or earlier node makes; allowed: nodes in topological order, "
                "without cycles"
            )
        again = next((n for n in node.output if n and n in known), None)
        if again is not None:  # a model saved twice into one file repeats every node
            raise WorkloadError(
                f"{path}: node {label!r} ({node.op_type}) writes {again!r}, which a graph "
                "input, an initializer or an earlier node already makes; allowed: each tensor "
                "written once (ONNX's single static assignment)"
            )
        known.update(node.output)
        inner = _subgraph_mac(onnx, node)
        if inner is not None:
            raise WorkloadError(
                f"{path}: node {label!r} ({node.op_type}) runs {inner[0]} node {inner[1]!r} in "
                "its subgraph: control flow is not modelled, so its multiply-adds would be "
                "dropped; allowed: MAC ops outside If, Loop and Scan"
            )
    _check_node_specs(onnx, path, model)


def _check_node_specs(onnx: Any, path: Path, model: Any) -> None:
    """Each node of the default domain as its operator's schema wants it (onnx.checker's node
    check): attribute names and types, the number of inputs and outputs. A mistyped ``group``
    or an LSTM without its weights is named here, not met as a traceback while placing it."""
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = model.ir_version
    ctx.opset_imports = {imp.domain: imp.version for imp in model.opset_import}
    lex = onnx.checker.C.LexicalScopeContext()
    for i, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx") or _subgraphs(onnx, node):
            continue  # custom domains: their runtime's; control flow: _subgraph_mac's
        try:
            onnx.checker.C.check_node(node.SerializeToString(), ctx, lex)
        except Exception as exc:  # onnx.checker.ValidationError, and its C++ errors
            raise WorkloadError(
                f"{path}: node {node_label(node, i)!r} ({node.op_type}): "
                f"{one_line(str(exc).split('==>')[0], 200)}; allowed: the inputs and "
                "attributes (names and types) of its ONNX operator schema"
            ) from None


#: ops that multiply-accumulate (a control-flow subgraph holding one is refused)
_SUBGRAPH_MAC_OPS = {
    "Conv", "ConvInteger", "ConvTranspose", "Einsum", "GRU", "Gemm", "LSTM", "MatMul",
    "MatMulInteger", "QLinearConv", "QLinearMatMul", "RNN",
}  # fmt: skip


def _subgraphs(onnx: Any, node: Any) -> list[Any]:
    """The graphs a control-flow node (If, Loop, Scan) carries in its attributes."""
    out = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            out.append(a.g)
        elif a.type == onnx.AttributeProto.GRAPHS:
            out.extend(a.graphs)
    return out


def _subgraph_mac(onnx: Any, node: Any) -> tuple[str, str] | None:
    """(op, name) of the first MAC node inside ``node``'s subgraphs (nested too), else None."""
    for graph in _subgraphs(onnx, node):
        for i, inner in enumerate(graph.node):
            if inner.op_type in _SUBGRAPH_MAC_OPS:
                return inner.op_type, node_label(inner, i)
            found = _subgraph_mac(onnx, inner)
            if found is not None:
                return found
    return None


def check_graph(path: Path, model: Any) -> None:
    """The checks :func:`load_graph` makes before it reads a graph (op names, node order,
    shapes), on ``model`` as it is (dynamic dimensions stay symbolic)."""
    _check_nodes(path, model)
    _infer(path, model)


def _set_input_shapes(
    path: Path,
    model: Any,
    batch: int | None,
    input_shape: tuple[int, ...] | None,
    batch_required: bool = False,
) -> None:
    """Fix the batch (first) dimension and, optionally, the whole shape of the data input;
    ``batch_required``: a first dimension fixed at another size than ``batch`` is an error."""
    inits = {t.name for t in model.graph.initializer}
    data = [i for i in model.graph.input if i.name not in inits]
    for k, inp in enumerate(data):
        dims = inp.type.tensor_type.shape.dim
        if k == 0 and input_shape is not None:
            if len(input_shape) != len(dims):
                raise WorkloadError(
                    f"{path}: input {inp.name!r}: --input-shape has {len(input_shape)} dims, the "
                    f"model's input has {len(dims)}; allowed: {len(dims)} comma-separated sizes"
                )
            for d, v in zip(dims, input_shape, strict=True):
                d.ClearField("dim_param")
                d.dim_value = int(v)
            continue
        for j, d in enumerate(dims):
            # a set 0 is no size: some exporters write 0 for a dynamic batch, which
            # --batch sets as below; anywhere else it is an empty tensor, not a dynamic one
            if d.HasField("dim_value") and d.dim_value == 0 and not (j == 0 and batch):
                raise WorkloadError(
                    f"{path}: input {inp.name!r}: dimension {j} is 0, an empty "
                    "tensor; allowed: positive sizes (a dynamic batch: --batch N; others: "
                    "--input-shape)"
                )
            if d.dim_value > 0:
                # the first data input's leading dimension, when the input has no dynamic
                # one (a sequence-first LSTM's dimension 0 is its length; see below)
                fixed = all(x.dim_value > 0 for x in dims)
                if (
                    j == 0
                    and k == 0
                    and fixed
                    and batch_required
                    and input_shape is None
                    and (d.dim_value != batch)
                ):
                    raise WorkloadError(
                        f"{path}: input {inp.name!r}: the batch (dimension 0) is fixed at "
                        f"{d.dim_value}; --batch {batch} needs a model exported with a dynamic "
                        f"batch axis; allowed: --batch {d.dim_value}, or no --batch"
                    )
                continue
            if j == 0 and batch is not None:
                d.ClearField("dim_param")
                d.dim_value = int(batch)
            else:
                what = d.dim_param or "?"
                raise WorkloadError(
                    f"{path}: input {inp.name!r}: dimension {j} is dynamic ({what}) and no size "
                    "was given; allowed: --batch N for dimension 0, --input-shape for the others"
                )
    # shapes recorded for the old input size would contradict the new ones
    del model.graph.value_info[:]


def _infer(path: Path, model: Any) -> Any:
    onnx = require_onnx()
    try:
        return onnx.shape_inference.infer_shapes(
            model, check_type=True, strict_mode=True, data_prop=True
        )  # check_type: a float16 weight of a float32 Conv is an error, not a layer
    except Exception as exc:
        msg = one_line(exc, 300)
        raise WorkloadError(
            f"{path}: shape inference failed: {msg}; allowed: a model whose shapes ONNX can infer"
        ) from None


def _shape_of(vi: Any) -> tuple[int, ...] | None:
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims = tuple(int(d.dim_value) if d.dim_value > 0 else -1 for d in t.shape.dim)
    return None if -1 in dims else dims


#: ops whose opset-19 form computes what their older forms do for any inputs those accept
#: (onnx's operator changelog: DequantizeLinear 10 -> 13 added per-axis scales, 19 float8
#: types and 21 blocked scales; QuantizeLinear likewise), and which onnx's reference evaluator
#: implements from opset 19 only: the int8 weights of a QDQ model at opset 13 stayed unknown,
#: imported as dense
_EVALUATED_AT_19 = ("DequantizeLinear", "QuantizeLinear")


def _fold(
    node: Any, args: list[ConstTensor], label: str, out_shapes: list, opsets: dict[str, int]
) -> list[ConstTensor]:
    """Evaluate one node whose inputs are all constants (placeholders stay placeholders)."""
    from onnx import helper, numpy_helper

    op = node.op_type
    if op == "Loop":
        return []  # its trip count is unbounded (10^9 never ended): values unknown
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if op == "Constant":
        if "value" not in attrs:
            return []
        arr = numpy_helper.to_array(attrs["value"])
        return [ConstTensor(arr.shape, array=arr, producer=label)]
    if op == "ConstantOfShape":
        shape = tuple(int(v) for v in args[0].values().reshape(-1))
        value = float(numpy_helper.to_array(attrs["value"]).reshape(-1)[0]) if attrs else 0.0
        return [ConstTensor(shape, fill=value, producer=label)]
    if any(not a.is_real for a in args):
        if op in ("Identity", "Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Transpose"):
            shape = out_shapes[0] or args[0].shape
            return [ConstTensor(tuple(shape), fill=args[0].fill, producer=args[0].producer)]
        return []  # values unknown: shapes still come from inference
    big = _FOLD_LIMIT_ELEMENTS
    if any(s is not None and math.prod(int(d) for d in s) > big for s in out_shapes):
        return []
    from onnx.reference import ReferenceEvaluator

    names = [f"i{k}" for k in range(len(args))]
    graph = helper.make_graph(
        [
            helper.make_node(
                op,
                names[: len(node.input)],
                [f"o{k}" for k in range(len(node.output))],
                domain=node.domain,
                **attrs,
            )
        ],
        "fold",
        [helper.make_tensor_value_info(n, 1, None) for n in names],
        [helper.make_tensor_value_info(f"o{k}", 1, None) for k in range(len(node.output))],
    )
    feeds = dict(zip(names, [a.array for a in args], strict=True))
    try:
        outs = ReferenceEvaluator(graph, opsets=opsets).run(None, feeds)
    except Exception:
        if op not in _EVALUATED_AT_19 or node.domain not in ("", "ai.onnx"):
            return []
        try:  # onnx's reference has these from opset 19 only: a QDQ model's weights
            outs = ReferenceEvaluator(graph, opsets={**opsets, "": 19}).run(None, feeds)
        except Exception:
            return []
    return [ConstTensor(np.asarray(o).shape, array=np.asarray(o), producer=label) for o in outs]


def load_graph(
    path: str | Path,
    batch: int | None = 1,
    input_shape: tuple[int, ...] | None = None,
    batch_required: bool = False,
) -> OnnxGraph:
    """Load, check, shape-infer and constant-fold ``path``.

    ``batch`` fixes a dynamic first dimension of the data inputs; ``input_shape`` replaces the
    first data input's shape (e.g. AlexNet at 227 x 227).
    """
    require_onnx()
    batch = integral(batch)
    if batch is not None and not (is_count(batch) and batch <= INT64_MAX):
        # 2.5 became 2; 0 said "nodes cannot be placed"; 10^30 a ValueError from onnx
        raise WorkloadError(f"{path}: batch {batch!r}; allowed: an integer from 1 to 2^63-1")
    path = Path(path)
    model, files = read_model_files(path)
    _check_nodes(path, model)
    _set_input_shapes(path, model, batch, input_shape, batch_required)
    model = _infer(path, model)
    g = model.graph
    shapes: dict[str, tuple[int, ...]] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        s = _shape_of(vi)
        if s is not None:
            shapes[vi.name] = s
    consts: dict[str, ConstTensor] = {}
    for t in g.initializer:
        arr = initializer_array(path, t)
        consts[t.name] = ConstTensor(arr.shape, array=arr)
        shapes[t.name] = arr.shape
    inputs = {i.name: shapes.get(i.name, ()) for i in g.input if i.name not in consts}
    nodes = list(g.node)
    opsets = {imp.domain: imp.version for imp in model.opset_import}
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        for name in node.input:
            consumers.setdefault(name, []).append(i)
        label = node_label(node, i)
        if all(n == "" or n in consts for n in node.input):
            args = [consts[n] for n in node.input if n]
            outs = _fold(node, args, label, [shapes.get(o) for o in node.output], opsets)
            for name, ct in zip(node.output, outs, strict=False):
                consts[name] = ct
                shapes.setdefault(name, ct.shape)
    return OnnxGraph(
        path=str(path),
        model=model,
        nodes=nodes,
        shapes=shapes,
        consts=consts,
        inputs=inputs,
        consumers=consumers,
        external_files=files,
    )
