"""ONNX nodes -> archsim layers: Conv, Gemm/MatMul, LSTM/GRU (+ BatchNorm folded into Conv).

Each MAC-carrying node becomes one :class:`PlacedLayer`: the spec fields of its archsim layer
(``kind`` + shape), its dense MAC count and its real weight tensor when the graph has one.
Counting convention: one MAC = one multiply-accumulate of a weight by an input activation,
batch as given, biases, BatchNorm and every non-MAC op excluded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from archsim.errors import WorkloadError
from archsim.workload.onnx_graph import ConstTensor, OnnxGraph, node_label, non_finite

__all__ = ["MAC_OPS", "PlacedLayer", "place_node"]

#: ops that carry MACs and that archsim places as layers
MAC_OPS = ("Conv", "Gemm", "MatMul", "LSTM", "GRU")


@dataclass(frozen=True, eq=False)
class PlacedLayer:
    """One archsim layer made from one ONNX node (``fields`` become the layer spec)."""

    node: int
    fields: dict[str, Any]
    macs: int
    input_name: str  # the activation tensor the layer reads
    weights: np.ndarray | None  # real weights: fc (outputs, inputs); conv (k, c/g, r, s)
    bias: np.ndarray | None
    placeholder: bool  # weights are a one-value placeholder (ConstantOfShape)
    folded: tuple[int, ...] = ()  # nodes merged into this layer (BatchNormalization)
    note: str = ""


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _text(at: dict[str, Any], name: str, default: str) -> str:
    """A string attribute (ONNX stores bytes) as text."""
    value = at.get(name, default)
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _const(g: OnnxGraph, name: str) -> ConstTensor | None:
    return g.consts.get(name) if name else None


def _weights(ct: ConstTensor | None) -> tuple[np.ndarray | None, bool]:
    if ct is None:
        return None, False
    if ct.is_real:
        return np.asarray(ct.array, dtype=np.float32), False
    return None, True


def _bn_after(g: OnnxGraph, out: str) -> int | None:
    """Index of a BatchNormalization that is the only consumer of ``out`` and has real or
    placeholder constant parameters, else None."""
    users = g.consumers.get(out, [])
    if len(users) != 1:
        return None
    bn = g.nodes[users[0]]
    if bn.op_type != "BatchNormalization" or len(bn.output) != 1:
        return None
    return users[0] if all(n in g.consts for n in bn.input[1:5]) else None


def _fold_bn(g: OnnxGraph, bn_index: int, w: np.ndarray | None, b: np.ndarray | None):
    """Conv weights and bias with the BatchNorm's per-channel scale and shift folded in."""
    bn = g.nodes[bn_index]
    params = [g.consts[n] for n in bn.input[1:5]]
    if w is None or not all(p.is_real for p in params):
        return w, b, True
    bad = next((n for n, p in zip(bn.input[1:5], params, strict=True)
                if p.shape != (w.shape[0],)), None)  # fmt: skip
    if bad is not None:  # broadcasting failed as a traceback
        raise WorkloadError(
            f"{g.path}: node {node_label(bn, bn_index)!r} (BatchNormalization): {bad!r} has shape "
            f"{g.consts[bad].shape}; allowed: ({w.shape[0]},), one value per channel of the conv"
        )
    scale, shift, mean, var = (np.asarray(p.array, np.float64) for p in params)
    eps = float(_attrs(bn).get("epsilon", 1e-5))
    if not np.all(var + eps > 0):  # NaN fails too
        raise WorkloadError(
            f"{g.path}: node {node_label(bn, bn_index)!r} (BatchNormalization): variance + "
            "epsilon is not > 0 for every channel; allowed: a positive variance"
        )
    factor = scale / np.sqrt(var + eps)
    w2 = (w.astype(np.float64) * factor.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
    b0 = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
    return w2, ((b0 - mean) * factor + shift).astype(np.float32), False


def _only_user(g: OnnxGraph, out: str, *ops: str) -> Any:
    """The node of a type in ``ops`` that is the only consumer of ``out``, else None."""
    users = g.consumers.get(out, [])
    if len(users) == 1 and g.nodes[users[0]].op_type in ops:
        return g.nodes[users[0]]
    return None


def _training_graph(g: OnnxGraph, out: str) -> dict[str, Any]:
    """What training runs after a conv (its BatchNorm folded): ``residual_add`` when the
    output is the first input of an Add (or two-input Sum) of two activations (a ResNet
    shortcut; a projection shortcut's conv, the second input, carries no add of its own),
    ``relu: false`` when no Relu follows (after the add, if any), ``max_pool_stride`` when a
    MaxPool follows (through the Relu)."""
    fields: dict[str, Any] = {}
    add = _only_user(g, out, "Add", "Sum")
    if (
        add is not None
        and len(add.input) == 2
        and add.input[0] == out
        and not any(n in g.consts for n in add.input)
    ):
        fields["residual_add"] = True
        out = add.output[0]
    relu = _only_user(g, out, "Relu")
    if relu is None:
        fields["relu"] = False
    pool = _only_user(g, relu.output[0] if relu is not None else out, "MaxPool")
    if pool is not None:
        fields["max_pool_stride"] = int(list(_attrs(pool).get("strides", [1]))[0])
    return fields


def _fc_relu(g: OnnxGraph, node: Any) -> dict[str, Any]:
    """``relu: true`` when a Relu alone follows the fc's output (training and inference
    passes then run its kernel, as torchvision VGG-16's fc6 and fc7)."""
    return {"relu": True} if _only_user(g, node.output[0], "Relu") is not None else {}


def _conv(g: OnnxGraph, i: int, node: Any) -> PlacedLayer | str:
    x, wshape = g.shapes.get(node.input[0]), g.shapes.get(node.input[1])
    out = g.shapes.get(node.output[0])
    if x is not None and wshape is not None and len(x) == len(wshape) == 4 and out is None:
        pads = list(_attrs(node).get("pads", [0, 0, 0, 0]))
        if any(f > size + pads[j] + pads[j + 2] for j, (f, size) in
               enumerate(zip(wshape[2:], x[2:], strict=True))):  # fmt: skip
            return f"a {wshape[2]}x{wshape[3]} filter on a {x[2]}x{x[3]} input (pads {pads})"
    if x is None or wshape is None or out is None:
        return "shapes unknown after shape inference"
    if len(x) != 4:
        return f"{len(x) - 2}-D convolution; allowed: 2-D (NCHW)"
    if len(wshape) != 4:  # shape inference lets a 2-D conv's weight have another rank
        return f"weight of rank {len(wshape)}; allowed: rank 4 (K, C / groups, R, S)"
    a = _attrs(node)
    n, c, h, w_in = x
    k, cg, r, s = wshape
    groups = int(a.get("group", 1))
    _check_conv(g, i, node, a, x, wshape)
    p, q = out[2], out[3]
    strides = list(a.get("strides", [1, 1]))
    pads = list(a.get("pads", [0, 0, 0, 0]))
    dil = list(a.get("dilations", [1, 1]))
    auto = a.get("auto_pad", b"NOTSET")
    macs = n * k * p * q * cg * r * s
    w, placeholder = _weights(_const(g, node.input[1]))
    b, _ = _weights(_const(g, node.input[2] if len(node.input) > 2 else ""))
    folded: tuple[int, ...] = ()
    bn = _bn_after(g, node.output[0])
    if bn is not None:
        w, b, ph = _fold_bn(g, bn, w, b)
        placeholder = placeholder or ph
        folded = (bn,)
    fields: dict[str, Any] = {"kind": "conv", "n": n, "c": c, "k": k, "h": h, "w": w_in}
    fields |= {"r": r, "s": s, "stride": strides[0], "pad": pads[0], "groups": groups}
    fields |= _training_graph(g, g.nodes[bn].output[0] if bn is not None else node.output[0])
    exact = (
        len(set(strides)) == 1
        and len(set(pads)) == 1
        and set(dil) == {1}
        and auto in (b"NOTSET", "NOTSET", b"", "")
        and (h + 2 * pads[0] - r) // strides[0] + 1 == p
        and (w_in + 2 * pads[0] - s) // strides[0] + 1 == q
    )
    note = ""
    if not exact:
        # a shape ConvLayer cannot express (dilation, uneven pads or strides): the implicit
        # GEMM of each channel group, same MACs
        fields = {"kind": "gemm", "m": n * p * q, "n": k // groups, "k": cg * r * s}
        fields |= {"batch": groups}
        note = (
            f"strides {strides}, pads {pads}, dilations {dil}: placed as its implicit GEMM "
            "(conv layers take one stride and one symmetric pad)"
        )
    return PlacedLayer(i, fields, macs, node.input[0], w, b, placeholder, folded, note)


_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _check_conv(g: OnnxGraph, i: int, node: Any, a: dict, x: tuple, wshape: tuple) -> None:
    """What ONNX's shape inference lets through and onnxruntime refuses (so that a model
    imported without it, ``--no-measure``, is refused too, not counted at wrong MACs): the
    group against the channels, kernel_shape against the weight, auto_pad, the bias shape."""
    where = f"{g.path}: node {node_label(node, i)!r} (Conv)"
    k, cg, r, s = wshape
    groups = int(a.get("group", 1))
    if groups < 1 or x[1] != cg * groups or k % groups:
        raise WorkloadError(
            f"{where}: group {groups} with {x[1]} input channels and a weight of shape "
            f"{tuple(wshape)}; allowed: a group >= 1 that divides the {k} output channels, with "
            "input channels = weight dimension 1 x group"
        )
    kernel = list(a.get("kernel_shape", [r, s]))
    if kernel != [r, s]:
        raise WorkloadError(
            f"{where}: kernel_shape {kernel} contradicts its {r}x{s} weight; allowed: "
            f"[{r}, {s}] or no kernel_shape"
        )
    auto = _text(a, "auto_pad", "NOTSET")
    auto = auto or "NOTSET"  # onnxruntime reads an empty auto_pad as NOTSET
    if auto not in _AUTO_PADS or (auto != "NOTSET" and "pads" in a):
        what = f"auto_pad {auto!r}" + (" with pads" if "pads" in a else "")
        raise WorkloadError(
            f"{where}: {what}; allowed: auto_pad {', '.join(_AUTO_PADS)}, and pads only with NOTSET"
        )
    bias = _const(g, node.input[2] if len(node.input) > 2 else "")
    if bias is not None and bias.shape != (k,):
        raise WorkloadError(
            f"{where}: bias {node.input[2]!r} has shape {bias.shape}; allowed: ({k},), one "
            "value per output channel"
        )


def _gemm(g: OnnxGraph, i: int, node: Any) -> PlacedLayer | str:
    a_shape, b_shape = g.shapes.get(node.input[0]), g.shapes.get(node.input[1])
    if a_shape is None or b_shape is None:
        return "shapes unknown after shape inference"
    at = _attrs(node)
    ta, tb = bool(at.get("transA", 0)), bool(at.get("transB", 0))
    m, kk = (a_shape[1], a_shape[0]) if ta else a_shape
    nn = b_shape[0] if tb else b_shape[1]
    bconst = _const(g, node.input[1])
    if bconst is None:
        fields = {"kind": "gemm", "m": m, "n": nn, "k": kk, "transpose_a": ta, "transpose_b": tb}
        return PlacedLayer(i, fields, m * nn * kk, node.input[0], None, None, False)
    w, placeholder = _weights(bconst)
    if w is not None:  # (outputs, inputs), alpha folded in: y = alpha * A B + beta * C
        w = np.ascontiguousarray(w if tb else w.T) * np.float32(at.get("alpha", 1.0))
    b, _ = _weights(_const(g, node.input[2] if len(node.input) > 2 else ""))
    if b is not None:
        beta = np.float32(at.get("beta", 1.0))
        b = beta * np.broadcast_to(b.reshape(-1), (nn,)) if b.size in (1, nn) else None
    has_bias = len(node.input) > 2 and bool(node.input[2])
    fields = {"kind": "fc", "inputs": kk, "outputs": nn, "batch": m, "bias": has_bias}
    fields |= _fc_relu(g, node)
    return PlacedLayer(i, fields, m * nn * kk, node.input[0], w, b, placeholder)


def _matmul(g: OnnxGraph, i: int, node: Any) -> PlacedLayer | str:
    a_shape, b_shape = g.shapes.get(node.input[0]), g.shapes.get(node.input[1])
    if a_shape is None or b_shape is None or len(a_shape) < 1 or len(b_shape) < 1:
        return "shapes unknown after shape inference"
    a2 = a_shape if len(a_shape) > 1 else (1, *a_shape)
    b2 = b_shape if len(b_shape) > 1 else (*b_shape, 1)
    m, kk, nn = a2[-2], a2[-1], b2[-1]
    bconst = _const(g, node.input[1])
    if bconst is not None and len(b_shape) in (1, 2):  # a 1-D B is a (k, 1) weight matrix
        w, placeholder = _weights(bconst)
        if w is not None and w.ndim == 1:  # its real values were dropped
            w = w.reshape(-1, 1)
        rows = math.prod(int(d) for d in a2[:-1])
        fields = {"kind": "fc", "inputs": kk, "outputs": nn, "batch": rows, "bias": False}
        fields |= _fc_relu(g, node)
        wt = None if w is None else np.ascontiguousarray(w.T)
        return PlacedLayer(i, fields, rows * nn * kk, node.input[0], wt, None, placeholder)
    aconst = _const(g, node.input[0])
    if bconst is None and aconst is not None and len(a_shape) == 2:
        # y = W x, EIE's own form: a constant (outputs, inputs) W times activation columns
        w, placeholder = _weights(aconst)
        cols = math.prod(int(d) for d in b2[:-2]) * nn
        fields = {"kind": "fc", "inputs": kk, "outputs": m, "batch": cols, "bias": False}
        fields |= _fc_relu(g, node)
        wt = None if w is None else np.ascontiguousarray(w)
        return PlacedLayer(i, fields, cols * m * kk, node.input[1], wt, None, placeholder)
    lead = np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2]))
    batch = math.prod(int(d) for d in lead) if lead else 1
    fields = {"kind": "gemm", "m": m, "n": nn, "k": kk, "batch": batch}
    return PlacedLayer(i, fields, batch * m * nn * kk, node.input[0], None, None, False)


def _recurrent(g: OnnxGraph, i: int, node: Any) -> PlacedLayer | str:
    x, wshape, rshape = (g.shapes.get(node.input[j]) for j in range(3))
    if x is None or wshape is None or rshape is None:
        return "shapes unknown after shape inference"
    at = _attrs(node)
    layout = int(at.get("layout", 0))
    gates = 4 if node.op_type == "LSTM" else 3
    _check_recurrent(g, i, node, at, x, wshape, rshape, gates)
    steps, batch = (x[1], x[0]) if layout else (x[0], x[1])
    dirs, gates_h, inp = wshape
    hidden = rshape[2]
    per_step = dirs * batch * gates_h * (inp + hidden)
    wc, rc = _const(g, node.input[1]), _const(g, node.input[2])
    w = None
    placeholder = bool((wc and not wc.is_real) or (rc and not rc.is_real))
    if wc is not None and rc is not None and wc.is_real and rc.is_real:
        w = np.concatenate([wc.array[0], rc.array[0]], axis=1).astype(np.float32)
    bias = None
    bc = _const(g, node.input[3] if len(node.input) > 3 else "")
    if bc is not None and bc.is_real:
        bias = (bc.array[0, :gates_h] + bc.array[0, gates_h:]).astype(np.float32)
    has_bias = len(node.input) > 3 and bool(node.input[3])
    if gates == 4:
        fields = {"kind": "lstm", "input_size": inp, "hidden_size": hidden, "batch": batch}
    else:
        fields = {"kind": "fc", "inputs": inp + hidden, "outputs": gates_h, "batch": batch}
    fields["bias"] = has_bias
    note = (
        f"one step of {steps} (direction 1 of {dirs}): the gate matrix-vector product "
        f"[W R] x [x; h]; the sequence has {steps * per_step:,} MACs"
    )
    if w is not None and dirs > 1:
        w = None  # one direction is placed; its weights alone would mislabel the layer
    return PlacedLayer(i, fields, steps * per_step, node.input[0], w, bias, placeholder, (), note)


def _check_recurrent(
    g: OnnxGraph, i: int, node: Any, at: dict, x: tuple, wshape: tuple, rshape: tuple, gates: int
) -> None:
    """X, W and R of an LSTM/GRU as its attributes say (shape inference checks little of it;
    onnxruntime refuses the rest): no traceback, no MACs of a hidden size 0."""
    where = f"{g.path}: node {node_label(node, i)!r} ({node.op_type})"
    ranks = {"X": x, "W": wshape, "R": rshape}
    bad = next((n for n, sh in ranks.items() if len(sh) != 3 or 0 in sh), None)
    if bad is not None:
        raise WorkloadError(
            f"{where}: input {bad} has shape {tuple(ranks[bad])}; allowed: 3 non-empty "
            "dimensions (X: sequence, batch, input; W, R: directions, gates x hidden, ...)"
        )
    direction = _text(at, "direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    hidden = int(at.get("hidden_size", rshape[2]))
    layout = int(at.get("layout", 0))
    want_w = (dirs, gates * hidden, x[2])
    want_r = (dirs, gates * hidden, hidden)
    if (
        direction not in ("forward", "reverse", "bidirectional")
        or layout not in (0, 1)
        or hidden < 1
        or tuple(wshape) != want_w
        or tuple(rshape) != want_r
    ):
        raise WorkloadError(
            f"{where}: direction {direction!r}, layout {layout}, hidden_size {hidden}, X "
            f"{tuple(x)}, W {tuple(wshape)}, R {tuple(rshape)}; allowed: direction forward, "
            f"reverse or bidirectional, layout 0 or 1, hidden_size >= 1, W {want_w} and R "
            f"{want_r}"
        )


_PLACERS = {"Conv": _conv, "Gemm": _gemm, "MatMul": _matmul, "LSTM": _recurrent, "GRU": _recurrent}


def place_node(g: OnnxGraph, i: int) -> PlacedLayer | str | None:
    """The layer of node ``i``; a string says why a MAC node cannot be placed; None: no MACs."""
    node = g.nodes[i]
    placer = _PLACERS.get(node.op_type)
    if placer is None or node.domain not in ("", "ai.onnx"):
        return None
    placed = placer(g, i, node)
    if isinstance(placed, PlacedLayer):
        for what, arr in (("weights", placed.weights), ("bias", placed.bias)):
            bad = 0 if arr is None else non_finite(arr)
            if bad:  # a Constant node's or a bfloat16 weight, or a BatchNorm folded into it
                raise WorkloadError(
                    f"{g.path}: node {node_label(node, i)!r} ({node.op_type}): its {what} hold "
                    f"{bad} NaN or infinite value(s); allowed: finite numbers"
                )
    return placed
