"""Small, safe expressions over config fields: sweep constraints and derived fields.

``pe_array.num_pes * spmat_sram.size_bytes <= 8 * 2**20 and activation_fifo.depth >= 2``

Names are dotted config paths, ``seed`` and the derived quantities of ``derived_quantities``;
numbers, arithmetic (+ - * / // % **), comparisons, ``and``/``or``/``not`` (of true and false
only), ``x if c else y`` and the functions min, max, abs, round, log2, ceil, floor. Nothing else
parses.

Every intermediate value is bounded before it is computed (integers by bit length, strings and
sequences by length, the text by its length and nesting), so that no expression can hang or
exhaust memory: ``((10**256)**256)**256`` and ``'a' * 2**34`` are one-line errors.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from typing import Any

from archsim.config.base import MAX_EXPRESSION_CHARS, dotted_name
from archsim.errors import shown_name

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

#: largest integer anywhere in an evaluation, bits (a config value needs well under 128)
MAX_INT_BITS = 4096
#: longest string or sequence anywhere in an evaluation, items
MAX_LENGTH = 10_000
#: longest expression text, characters, and deepest nesting of its syntax tree
MAX_TEXT_CHARS = MAX_EXPRESSION_CHARS
MAX_DEPTH = 50


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
        if len(text) > MAX_TEXT_CHARS:
            raise ExpressionError(
                f"{text[:40]!r}...: {len(text)} characters; allowed: at most {MAX_TEXT_CHARS}"
            )
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise ExpressionError(f"invalid expression {text!r}: {exc.msg}") from None
        except (RecursionError, MemoryError):
            raise ExpressionError(f"{text!r}: nested too deeply") from None
        self._tree = tree.body
        self._check(self._tree)
        if _depth(self._tree) > MAX_DEPTH:
            raise ExpressionError(f"{text!r}: nested more than {MAX_DEPTH} levels deep")

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
            if isinstance(n, ast.Attribute) and not dotted_name(n):
                raise ExpressionError(f"{self.text!r}: attributes only on dotted field names")
            if isinstance(n, ast.Constant) and not isinstance(n.value, int | float | str | bool):
                raise ExpressionError(f"{self.text!r}: constant {n.value!r} is not allowed")

    def _eval(self, node: ast.AST, names: Mapping[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name | ast.Attribute):
            return _lookup(names, dotted_name(node), self.text)
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, names), self._eval(node.right, names)
            self._bound_binop(node.op, left, right)
            return self._bounded(_BIN[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, names)
            if isinstance(node.op, ast.Not):
                self._check_truth("not", operand)
            return self._bounded(_UNARY[type(node.op)](operand))
        if isinstance(node, ast.BoolOp):
            word = "and" if isinstance(node.op, ast.And) else "or"
            values = (self._check_truth(word, self._eval(v, names)) for v in node.values)
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
            args = [self._eval(a, names) for a in node.args]
            digits = args[1] if node.func.id == "round" and len(args) == 2 else 0
            if _is_int(digits) and abs(digits) > MAX_INT_BITS // 4:  # rounding makes 10**digits
                raise ExpressionError(
                    f"{self.text!r}: round() to {digits} digits; allowed: at most "
                    f"{MAX_INT_BITS // 4} either way"
                )
            return self._bounded(_FUNCS[node.func.id](*args))
        raise ExpressionError(f"{self.text!r}: cannot evaluate {type(node).__name__}")

    def _check_truth(self, word: str, value: Any) -> bool:
        """``value`` when it is true or false: a number or text beside ``and``/``or``/``not``
        made a constraint always true (``num_pes > 100 or 5``)."""
        if not isinstance(value, bool):
            raise ExpressionError(
                f"{self.text!r}: {word!r} takes true or false, not {shown_name(repr(value))}; "
                "allowed: comparisons, e.g. pe_array.num_pes <= 256"
            )
        return value

    def _bound_bits(self, bits: float, what: str) -> None:
        if bits > MAX_INT_BITS:
            raise ExpressionError(
                f"{self.text!r}: {what} would have about {int(bits):,} bits; allowed: integers "
                f"of at most {MAX_INT_BITS} bits"
            )

    def _bound_length(self, length: float, what: str) -> None:
        if length > MAX_LENGTH:
            raise ExpressionError(
                f"{self.text!r}: {what} would have {int(length):,} items; allowed: at most "
                f"{MAX_LENGTH:,}"
            )

    def _bound_binop(self, op: ast.operator, left: Any, right: Any) -> None:
        """Refuse an operation whose result would be too large, before computing it."""
        ints = _is_int(left) and _is_int(right)
        if isinstance(op, ast.Pow) and _is_number(right) and abs(right) > 256:
            raise ExpressionError(
                f"{self.text!r}: exponent {right} is too large in magnitude; allowed: from -256 "
                "to 256"
            )
        if isinstance(op, ast.Pow) and ints and right > 0:
            self._bound_bits(abs(left).bit_length() * right, "a power")
        elif isinstance(op, ast.Mult) and ints:
            self._bound_bits(abs(left).bit_length() + abs(right).bit_length(), "a product")
        elif isinstance(op, ast.Mult) and (_is_int(left) or _is_int(right)):
            seq, n = (right, left) if _is_int(left) else (left, right)
            if _is_sized(seq):
                self._bound_length(len(seq) * max(n, 0), "a repeated sequence")
        elif isinstance(op, ast.Add) and _is_sized(left) and _is_sized(right):
            self._bound_length(len(left) + len(right), "a concatenation")
        elif isinstance(op, ast.Mod) and isinstance(left, str | bytes):
            raise ExpressionError(f"{self.text!r}: string formatting (%) is not allowed")

    def _bounded(self, value: Any) -> Any:
        """``value``, checked against the size limits (a field's value may be large too)."""
        if _is_int(value):
            self._bound_bits(abs(value).bit_length(), "a value")
        elif _is_sized(value):
            self._bound_length(len(value), "a value")
        return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int)  # bool is an int of one bit


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)


def _is_sized(value: Any) -> bool:
    return isinstance(value, str | bytes | list | tuple)


def _depth(node: ast.AST) -> int:
    """Nesting depth of a syntax tree (iterative: a deep tree cannot exhaust the stack)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return deepest


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
