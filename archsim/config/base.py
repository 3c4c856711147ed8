"""Base class of every configuration model: strict, frozen, overridable by dotted path."""

from __future__ import annotations

import ast
import copy
import difflib
import re
import sys
import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from archsim.config.messages import short_value, unwrap_type, validation_to_config_error
from archsim.errors import ConfigError, shown_value
from archsim.units import INT64_MAX

__all__ = [
    "ArchsimModel",
    "get_dotted",
    "set_dotted",
    "dotted_name",
    "MAX_EXPRESSION_CHARS",
    "number_type",
]

M = TypeVar("M", bound="ArchsimModel")


def _accepts_bool(tp: Any) -> bool:
    """Whether annotation ``tp`` admits booleans (``bool``, ``Any`` or a union with one)."""
    if tp is bool or tp is Any or tp is object:
        return True
    return any(_accepts_bool(a) for a in get_args(tp) if not isinstance(a, str | int | float))


def number_type(tp: Any) -> bool:
    """Whether annotation ``tp`` holds only numbers (``int``, ``float``, constrained or
    optional forms of them): text such as ``"4"`` there is a mistake, not a number."""
    if get_origin(tp) is Annotated:
        return number_type(get_args(tp)[0])
    if tp in (int, float):
        return True
    if get_origin(tp) is Literal:  # a choice of numbers (True == 1 would match the choice 1)
        choices = get_args(tp)
        return bool(choices) and all(type(c) in (int, float) for c in choices)
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return bool(args) and all(number_type(a) for a in args)
    return False


def bool_type(tp: Any) -> bool:
    """Whether annotation ``tp`` is ``bool`` (or an optional or constrained ``bool``): only
    ``true``/``false`` belong there; pydantic would also read ``"yes"``, ``"off"`` or ``1``."""
    if get_origin(tp) is Annotated:
        return bool_type(get_args(tp)[0])
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return len(args) == 1 and bool_type(args[0])
    return tp is bool


def _not_a_number(value: Any) -> bool:
    return isinstance(value, bool | str)


_NUMBER_SHAPES: dict[Any, str | None] = {}  # annotation -> "number"/"items"/"values"/None


def _shape_of(tp: Any) -> str | None:
    origin, args = get_origin(tp), get_args(tp)
    if number_type(tp):
        return "number"
    if origin in (Union, types.UnionType):  # an optional list or dict of numbers
        shapes = {_shape_of(a) for a in args if a is not type(None)}
        return shapes.pop() if len(shapes) == 1 else None
    elems = [a for a in args if a is not Ellipsis]
    if origin in (list, tuple) and elems and all(number_type(a) for a in elems):
        return "items"
    if origin is dict and len(args) == 2 and number_type(args[1]):
        return "values"
    return None


def _number_shape(tp: Any) -> str | None:
    """Where annotation ``tp`` wants numbers: "number" (itself), "items" (a list/tuple of
    numbers), "values" (a dict of numbers), else None; cached (validation calls it often)."""
    try:
        return _NUMBER_SHAPES[tp]
    except KeyError:
        shape = _NUMBER_SHAPES[tp] = _shape_of(tp)
        return shape
    except TypeError:  # an unhashable annotation
        return _shape_of(tp)


def _text_for_number(tp: Any, value: Any) -> tuple[str, Any] | None:
    """``(where, value)`` of the first bool or text where ``tp`` wants numbers: the value
    itself (``where`` ""), or an element of a list/tuple of numbers (``where`` ".3", the
    field path of the item) or of a dict of numbers (``where`` " under key 'fp16'"); else
    None."""
    if not isinstance(value, str | bool | list | tuple | dict):
        return None  # the common case: a number
    shape = _number_shape(tp)
    if shape == "number":
        return ("", value) if _not_a_number(value) else None
    if shape == "items" and isinstance(value, list | tuple):
        return next(((f".{i}", v) for i, v in enumerate(value) if _not_a_number(v)), None)
    if shape == "values" and isinstance(value, dict):
        return next(((f" under key {k!r}", v) for k, v in value.items() if _not_a_number(v)), None)
    return None


def _wants_integers(tp: Any) -> bool:
    """Whether annotation ``tp`` holds integers (its Literal choices aside: the precision
    names of ``dict[Literal['fp16', ..., 'int8'], float]`` made a float field an 'integer')."""
    return re.search(r"\bint\b", re.sub(r"Literal\[[^\]]*\]", "", str(tp))) is not None


#: Meaning of field names shared by many configs (a field's own ``description`` wins).
COMMON_FIELDS = {
    "schema_version": "Version of this file's format; allowed: 1.",
    "accelerator": "Which accelerator model this config is for.",
    "name": "Name shown in results, tables and reports.",
    "description": "Free text shown by `archsim list` and in reports.",
    "source": "Citation of the numbers (paper and table, datasheet, measurement file).",
    "kind": "What this entry is; selects the fields allowed beside it.",
    "weight_density": "Fraction of non-zero weights, 0..1 (for generated tensors).",
    "activation_density": "Fraction of non-zero input activations, 0..1 (generated tensors).",
    "weight_distribution": "How the non-zero weights are placed: uniform at random.",
    "data_format": "Format of the data folder: eie is EIE's own storage format.",
    "bias": "Whether the layer adds a bias (stored as an extra column of W).",
}


#: config class -> {field name: (annotation, admits booleans, is a boolean)}, for the
#: before-validator that every config model runs on every validation (a sweep plans by
#: validating each point's whole config)
_FIELD_RULES: dict[type, dict[str, tuple[Any, bool, bool, bool]]] = {}


def _field_rules(cls: type[BaseModel]) -> dict[str, tuple[Any, bool, bool, bool]]:
    """``{name: (annotation, _accepts_bool, bool_type, has an upper bound)}`` of ``cls``'s
    fields (cached per class: the annotations never change, and walking them is most of a
    validation's cost)."""
    try:
        return _FIELD_RULES[cls]
    except KeyError:
        found = _FIELD_RULES[cls] = {
            n: (f.annotation, _accepts_bool(f.annotation), bool_type(f.annotation),
                any(hasattr(m, "le") or hasattr(m, "lt") for m in f.metadata))
            for n, f in cls.model_fields.items()
        }  # fmt: skip
        return found


def _type_doc(tp: Any) -> str | None:
    """First line of the docstring of the config model ``tp`` holds (``X | None`` unwrapped)."""
    tp = unwrap_type(tp)
    if isinstance(tp, type) and issubclass(tp, ArchsimModel) and tp.__doc__:
        return tp.__doc__.strip().splitlines()[0]
    return None


#: the largest integer a config field may hold: the models compute in 64-bit integers (numba)
MAX_FIELD_INT = INT64_MAX


def _check_magnitude(name: str, value: Any, bounded: bool) -> None:
    """Refuse an integer beyond 64 bits in a field with no upper bound of its own (whose
    message then names the bound) and a subnormal float (a bandwidth of 1e-320 made every
    transfer infinitely long): one line naming the field, before any model runs."""
    if (
        not bounded
        and isinstance(value, int)
        and not isinstance(value, bool)
        and abs(value) > MAX_FIELD_INT
    ):
        raise ValueError(
            f"{name}: {shown_value(value) or value}; allowed: at most {MAX_FIELD_INT:,} (64-bit)"
        )
    if isinstance(value, float) and value != 0.0 and abs(value) < sys.float_info.min:
        raise ValueError(
            f"{name}: {value!r} is below the smallest normal float; allowed: 0 or a magnitude "
            f">= {sys.float_info.min:.3g}"
        )


class ArchsimModel(BaseModel):
    """Frozen pydantic model that forbids unknown fields, NaN/infinity and booleans for numbers.

    pydantic would read ``depth: true`` as 1 and accept ``.inf``; a config with either is a
    mistake, so both are rejected.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Give every field a description in the JSON Schema: a section field takes its
        model's docstring, a common field name its meaning from ``COMMON_FIELDS``."""
        super().__pydantic_init_subclass__(**kwargs)
        changed = False
        for name, field in cls.model_fields.items():
            if not field.description:
                text = _type_doc(field.annotation) or COMMON_FIELDS.get(name)
                if text:
                    field.description = text
                    changed = True
        if changed:
            cls.model_rebuild(force=True)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            rules = _field_rules(cls)
            for name, value in data.items():
                rule = rules.get(name) if isinstance(name, str) else None
                if rule is None:
                    continue  # not a field: pydantic's own error names it
                ann, accepts_bool, is_bool, bounded = rule
                if name == "name" and isinstance(value, str) and not value.strip():
                    raise ValueError(
                        "name must not be empty; allowed: a name shown in results and reports"
                    )
                if isinstance(value, bool) and not accepts_bool:
                    raise ValueError(
                        f"{name} must be a number or text, not a boolean; allowed: a value of "
                        "the field's type (write 1 rather than true)"
                    )
                if is_bool and value is not None and not isinstance(value, bool):
                    raise ValueError(
                        f"{name}: {value!r} is not a boolean; allowed: true or false, "
                        "written without quotes"
                    )
                _check_magnitude(name, value, bounded)
                bad = _text_for_number(ann, value)
                if bad is not None:
                    what = "integer" if _wants_integers(ann) else "number"
                    path, under = (bad[0], "") if bad[0].startswith(".") else ("", bad[0])
                    raise ValueError(
                        f"{name}{path}: {short_value(bad[1])}{under} is not a number; allowed: a "
                        f"valid {what} written without quotes"
                    )
        return data

    def with_overrides(self: M, overrides: Mapping[str, Any], source: str = "<overrides>") -> M:
        """Return a new, re-validated config with ``{"dotted.path": value}`` applied.

        Raises ``ConfigError`` naming the path when it does not exist or the value is invalid.
        """
        if not isinstance(overrides, Mapping):
            got = type(overrides).__name__
            raise ConfigError(
                source, "", f"got {got}; allowed: a mapping of dotted paths to values"
            )
        data = self.model_dump(mode="python", exclude_none=False)
        for path in overrides:
            if not isinstance(path, str):
                raise ConfigError(source, repr(path), "not a dotted path; allowed: a string "
                                  "such as 'pe_array.num_pes'")  # fmt: skip
        _check_set_once(list(overrides), source)
        for path, value in overrides.items():
            set_dotted(data, path, value, source)
        try:
            return type(self).model_validate(data)
        except ValidationError as exc:
            raise validation_to_config_error(exc, source, type(self)) from None


def _check_set_once(paths: list[str], source: str) -> None:
    """Refuse two override paths of which one is the other or a section above it
    (``pe_array.num_pes`` and ``pe_array``, ``layers.0.name`` and ``layers.00.name``): the
    result would depend on the mapping's order."""
    key = {p: tuple(str(int(x)) if x.isascii() and x.isdigit() else x for x in p.split("."))
           for p in paths}  # fmt: skip
    by_key = {k: p for p, k in key.items()}
    for path in paths:
        parts = key[path]
        for n in range(1, len(parts) + 1):
            other = by_key.get(parts[:n])
            if other is not None and other != path:
                raise ConfigError(
                    source, path, f"is set twice (by {path} and by {other}); allowed: one "
                    "value per field"
                )  # fmt: skip


#: longest sweep expression text (derive, constraints), characters: checked before it is
#: parsed (``explore.expression``; a 12 MB ``derive`` text took 1.5 GB to parse before the
#: check refused it)
MAX_EXPRESSION_CHARS = 2_000


def dotted_name(node: ast.AST) -> str:
    """``a.b.c`` for an expression node that is a chain of attributes on a name (how sweep
    expressions refer to config fields), else ``""``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def get_dotted(cfg: Any, path: str) -> Any:
    """``cfg.a.b.c`` for ``path == "a.b.c"`` (a whole-number part indexes a list, as in
    :func:`set_dotted`); None where the path leads nowhere."""
    node = cfg
    for part in path.split("."):
        if isinstance(node, list | tuple):
            ok = part.isascii() and part.isdigit() and int(part) < len(node)
            node = node[int(part)] if ok else None
        else:
            node = getattr(node, part, None)
        if node is None:
            return None
    return node


def set_dotted(data: dict[str, Any], path: str, value: Any, source: str) -> None:
    """Set ``data[a][b][c] = value`` for ``path == "a.b.c"``; the path must already exist. A
    part that is a whole number indexes a list (``library.families.0.mma_rate_fraction``)."""
    parts = path.split(".")
    node: Any = data
    for depth, part in enumerate(parts):
        here = ".".join(parts[: depth + 1])
        key: Any = part
        if isinstance(node, list):
            if not (part.isascii() and part.isdigit()) or int(part) >= len(node):
                allowed = f"an index 0..{len(node) - 1}" if node else "none (the list is empty)"
                raise ConfigError(
                    source, here, f"is not an item of a list of {len(node)}; allowed: {allowed}"
                )
            key = int(part)
        elif not isinstance(node, dict):
            parent = ".".join(parts[:depth])
            whole = (f"{parent}=[{', '.join(map(str, node))}] with the item changed"
                     if isinstance(node, tuple) else f"{parent} itself")  # fmt: skip
            raise ConfigError(
                source, here, f"{parent} is a value set as a whole, not a section; allowed: {whole}"
            )
        elif key not in node:
            allowed = ", ".join(sorted(node)) or "(none)"
            close = difflib.get_close_matches(key, list(node), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(source, here, f"unknown field{hint}; allowed here: {allowed}")
        if depth == len(parts) - 1:
            node[key] = copy.deepcopy(value)
        else:
            if node[key] is None:
                raise ConfigError(
                    source, here, "is not set in this config; cannot override inside it"
                )
            node = node[key]
