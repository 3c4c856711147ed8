"""Small, safe expressions over config fields: sweep constraints and derived fields.

``pe_array.num_pes * spmat_sram.size_bytes <= 8 * 2**20 and activation_fifo.depth >= 2``

Names are dotted config paths, ``seed`` and the derived quantities of ``derived_quantities``;
numbers, arithmetic (+ - * / // % **), comparisons, ``and``/``or``/``not``, ``x if c else y``
and the functions min, max, abs, round, log2, ceil, floor. Nothing else parses.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from typing import Any

__all__ = ["Expression", "ExpressionError", "derived_quantities"]

_BIN = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMP = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCS = {
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "log2": math.log2,
    "ceil": math.ceil,
    "floor": math.floor,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}


class ExpressionError(ValueError):
    """An expression does not parse, names an unknown field, or cannot be evaluated."""


def derived_quantities(hw: Mapping[str, Any]) -> dict[str, float]:
    """Quantities computed from a hardware mapping (``model_dump()`` form), for constraints.

    ``num_pes`` (PEs, or SMs on a GPU), ``sram_bytes_per_pe`` (the per-PE SRAMs: sections with
    ``size_bytes`` and ``width_bits``; a GPU's register file + L1/shared per SM) and
    ``total_sram_bytes`` (on chip in all; a DCNN's SRAM is one shared buffer, a GPU adds its L2).
    """
    if "pe_array" in hw:
        pes = hw["pe_array"]["num_pes"]
    elif "pe_grid" in hw:
        pes = hw["pe_grid"]["rows"] * hw["pe_grid"]["cols"]
    else:
        pes = hw.get("sms", 1)
    srams = [
        v["size_bytes"]
        for v in hw.values()
        if isinstance(v, Mapping) and "size_bytes" in v and "width_bits" in v
    ]
    out: dict[str, float] = {"num_pes": pes}
    if hw.get("accelerator") == "dcnn":
        out["sram_bytes_per_pe"] = 0
        out["total_sram_bytes"] = sum(srams)
    elif "sm_memory" in hw:
        per_sm = hw["sm_memory"]["register_file_bytes"] + hw["sm_memory"]["l1_shared_bytes"]
        out["sram_bytes_per_pe"] = per_sm
        out["total_sram_bytes"] = pes * per_sm + hw["l2"]["size_bytes"]
    else:
        out["sram_bytes_per_pe"] = sum(srams)
        out["total_sram_bytes"] = pes * sum(srams)
    return out


class Expression:
    """A parsed expression; ``evaluate(names)`` with ``names`` a nested mapping of values."""

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise ExpressionError(f"invalid expression {text!r}: {exc.msg}") from None
        self._tree = tree.body
        self._check(self._tree)

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def evaluate(self, names: Mapping[str, Any]) -> Any:
        """Value of the expression; dotted names are looked up through nested mappings."""
        try:
            return self._eval(self._tree, names)
        except ExpressionError:
            raise
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise ExpressionError(f"cannot evaluate {self.text!r}: {exc}") from None

    def _check(self, node: ast.AST) -> None:
        allowed = (
            ast.BoolOp,
            ast.And,
            ast.Or,
            ast.BinOp,
            ast.UnaryOp,
            ast.Compare,
            ast.Constant,
            ast.Name,
            ast.Attribute,
            ast.Call,
            ast.IfExp,
            ast.Load,
            *_BIN,
            *_CMP,
            *_UNARY,
        )
        for n in ast.walk(node):
            if not isinstance(n, allowed):
                raise ExpressionError(
                    f"{self.text!r}: {type(n).__name__} is not allowed; allowed: numbers, dotted "
                    "fields, + - * / // % **, comparisons, and/or/not, min/max/abs/round/log2/"
                    "ceil/floor"
                )
            if isinstance(n, ast.Call) and (
                not isinstance(n.func, ast.Name) or n.func.id not in _FUNCS or n.keywords
            ):
                raise ExpressionError(
                    f"{self.text!r}: unknown function; allowed: {', '.join(_FUNCS)}"
                )
            if isinstance(n, ast.Attribute) and not _dotted(n):
                raise ExpressionError(f"{self.text!r}: attributes only on dotted field names")
            if isinstance(n, ast.Constant) and not isinstance(n.value, int | float | str | bool):
                raise ExpressionError(f"{self.text!r}: constant {n.value!r} is not allowed")

    def _eval(self, node: ast.AST, names: Mapping[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name | ast.Attribute):
            return _lookup(names, _dotted(node), self.text)
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, names), self._eval(node.right, names)
            if isinstance(node.op, ast.Pow) and abs(right) > 256:
                raise ExpressionError(f"{self.text!r}: exponent {right} is too large")
            return _BIN[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](self._eval(node.operand, names))
        if isinstance(node, ast.BoolOp):
            values = (self._eval(v, names) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, names)
            for op, comp in zip(node.ops, node.comparators, strict=True):
                right = self._eval(comp, names)
                if not _CMP[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            branch = node.body if self._eval(node.test, names) else node.orelse
            return self._eval(branch, names)
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            return _FUNCS[node.func.id](*(self._eval(a, names) for a in node.args))
        raise ExpressionError(f"{self.text!r}: cannot evaluate {type(node).__name__}")


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a chain of attributes on a name, else ``""``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _lookup(names: Mapping[str, Any], dotted: str, text: str) -> Any:
    node: Any = names
    for key in [dotted] if dotted in names else dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            top = ", ".join(sorted(k for k in names if not isinstance(names[k], Mapping)))
            raise ExpressionError(
                f"{text!r}: unknown name {dotted!r}; allowed: dotted config fields"
                + (f" and {top}" if top else "")
            )
        node = node[key]
    if isinstance(node, Mapping):
        raise ExpressionError(f"{text!r}: {dotted!r} is a section, not a value")
    return node
