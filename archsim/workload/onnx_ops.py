"""Non-MAC ONNX ops: counts, FLOPs and bytes, so that nothing in a graph is dropped silently.

FLOP convention (per output element unless stated): elementwise ops 1 per input beyond the
first (``Relu``/``Sigmoid``/... 1); ``MaxPool``/``AveragePool`` the window size;
``GlobalAveragePool``/``ReduceMean`` 1 per input element; ``Softmax`` 3 (exp, sum, divide);
``LRN`` ``size`` + 2; unfolded ``BatchNormalization`` 2; data movement (reshape, concat,
transpose, ...) 0. Bytes: input (non-constant) plus output elements at 4 bytes (fp32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from archsim.workload.onnx_graph import OnnxGraph

__all__ = ["OpStats", "UNPLACEABLE_MAC_OPS", "op_flops", "summarize_ops"]

_ELEMENTWISE = {
    "Relu",
    "LeakyRelu",
    "PRelu",
    "Sigmoid",
    "Tanh",
    "Clip",
    "Elu",
    "Selu",
    "HardSigmoid",
    "HardSwish",
    "Softplus",
    "Exp",
    "Log",
    "Sqrt",
    "Neg",
    "Abs",
    "Erf",
    "Gelu",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Sum",
    "Max",
    "Min",
    "Mean",
    "Pow",
    "Where",
    "Not",
    "Equal",
    "Less",
    "Greater",
}
_MOVEMENT = {
    "Reshape",
    "Flatten",
    "Concat",
    "Transpose",
    "Squeeze",
    "Unsqueeze",
    "Dropout",
    "Identity",
    "Shape",
    "Gather",
    "Slice",
    "Split",
    "Cast",
    "Pad",
    "Expand",
    "Tile",
    "Constant",
    "ConstantOfShape",
    "Resize",
    "Upsample",
    "DepthToSpace",
    "SpaceToDepth",
}
_POOL = {"MaxPool", "AveragePool", "LpPool"}
_REDUCE = {"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax"}

#: ops that carry multiply-accumulates but that archsim has no layer kind for
UNPLACEABLE_MAC_OPS = {
    "ConvTranspose",
    "ConvInteger",
    "QLinearConv",
    "QLinearMatMul",
    "MatMulInteger",
    "Einsum",
    "RNN",
    "DeformConv",
    "Attention",
}

_ITEM_BYTES = 4


@dataclass(frozen=True)
class OpStats:
    """One op type's nodes: how many, their FLOPs and their activation bytes (in + out)."""

    op_type: str
    count: int
    flops: int
    bytes: int
    modelled: bool  # False: an op this table does not know (0 FLOPs assumed, warned)


def _elems(g: OnnxGraph, name: str) -> int:
    s = g.shapes.get(name)
    return math.prod(int(d) for d in s) if s is not None else 0


def op_flops(g: OnnxGraph, i: int) -> tuple[int, bool]:
    """(FLOPs of non-MAC node ``i`` by the module's convention, whether the op is known)."""
    from onnx import helper

    node = g.nodes[i]
    op = node.op_type
    out = _elems(g, node.output[0]) if node.output else 0
    if op in _MOVEMENT:
        return 0, True
    if op in _ELEMENTWISE:
        return out * max(1, len([n for n in node.input if n]) - 1), True
    if op in _POOL:
        k = next((a for a in node.attribute if a.name == "kernel_shape"), None)
        window = math.prod(int(d) for d in helper.get_attribute_value(k)) if k is not None else 1
        return out * window, True
    if op in _REDUCE:
        return _elems(g, node.input[0]), True
    if op in ("Softmax", "LogSoftmax"):
        return 3 * out, True
    if op == "LRN":
        size = next((a.i for a in node.attribute if a.name == "size"), 5)
        return out * (int(size) + 2), True
    if op in ("BatchNormalization", "InstanceNormalization", "LayerNormalization"):
        return 2 * out, True
    return 0, False


def summarize_ops(g: OnnxGraph, skip: set[int]) -> list[OpStats]:
    """Stats per op type of every node not in ``skip`` (placed layers, folded nodes) whose
    inputs are not all constants (constant subgraphs are folded at import, not run)."""
    acc: dict[str, list[Any]] = {}
    for i, node in enumerate(g.nodes):
        if i in skip or all(n == "" or n in g.consts for n in node.input):
            continue
        flops, known = op_flops(g, i)
        live_in = sum(_elems(g, n) for n in node.input if n and n not in g.consts)
        nbytes = (live_in + sum(_elems(g, n) for n in node.output if n)) * _ITEM_BYTES
        row = acc.setdefault(node.op_type, [0, 0, 0, known])
        row[0] += 1
        row[1] += flops
        row[2] += nbytes
    return [OpStats(op, c, f, b, k) for op, (c, f, b, k) in sorted(acc.items())]
