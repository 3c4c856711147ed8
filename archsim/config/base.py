"""Base class of every configuration model: strict, frozen, overridable by dotted path."""

from __future__ import annotations

import ast
import copy
import difflib
import re
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from archsim.errors import ConfigError, shown_value
from archsim.units import INT64_MAX

__all__ = [
    "ArchsimModel",
    "validation_to_config_error",
    "set_dotted",
    "dotted_name",
    "MAX_EXPRESSION_CHARS",
    "number_type",
]

M = TypeVar("M", bound="ArchsimModel")

_MISSING = object()


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
    tp = _unwrap(tp)
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
                        f"{name}{path}: {_short(bad[1])}{under} is not a number; allowed: a "
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


def _unwrap(tp: Any) -> Any:
    """Strip ``Annotated[...]`` and ``X | None`` down to the interesting type."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _union_models(tp: Any) -> list[type[BaseModel]]:
    """Model members of a union type (``[]`` when ``tp`` is not a union)."""
    if get_origin(tp) in (Union, types.UnionType):
        return [a for a in (_unwrap(x) for x in get_args(tp)) if _is_model(a)]
    return []


def _literal_values(tp: Any) -> tuple[Any, ...]:
    tp = _unwrap(tp)
    return get_args(tp) if get_origin(tp) is Literal else ()


def _walk(model_cls: Any, loc: Sequence[Any]) -> tuple[list[str], Any]:
    """Follow pydantic's ``loc`` through the model types.

    Returns the display path (discriminator tags such as ``'fc'`` dropped) and the type reached
    (``None`` when it cannot be followed).
    """
    parts: list[str] = []
    tp: Any = model_cls
    for key in loc:
        tp = _unwrap(tp) if tp is not None else None
        members = _union_models(tp)
        if isinstance(key, str) and members and not any(key in m.model_fields for m in members):
            # a tag pydantic inserts for tagged unions: select that member, do not show it
            tp = next(
                (
                    m
                    for m in members
                    if any(key in _literal_values(f.annotation) for f in m.model_fields.values())
                ),
                None,
            )
            continue
        if isinstance(key, str) and not members and get_origin(tp) in (Union, types.UnionType):
            # the member pydantic tried (``workload.str``, ``workload.list[str]``): not shown
            member = next((a for a in get_args(tp) if key in (str(a), getattr(a, "__name__", ""))),
                          _MISSING)  # fmt: skip
            if member is not _MISSING:
                tp = member
                continue
        parts.append(str(key))
        if isinstance(key, int):
            args = get_args(tp) if tp is not None else ()
            origin = get_origin(tp)
            if origin in (list, tuple, set, frozenset) and args:
                tp = args[0]
            elif origin is dict and len(args) == 2:
                tp = args[1]
            else:
                tp = None
        elif _is_model(tp) and key in tp.model_fields:
            tp = tp.model_fields[key].annotation
        else:
            tp = None
    return parts, (_unwrap(tp) if tp is not None else None)


def _model_fields_at(model_cls: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """Field names allowed at the parent of ``loc`` (best effort, for error messages)."""
    _, tp = _walk(model_cls, loc[:-1])
    members = _union_models(tp) or ([tp] if _is_model(tp) else [])
    return sorted({name for m in members for name in m.model_fields})


def _field_path_in(tp: Any, dotted: str) -> bool:
    """Whether ``dotted`` (``"spmat_sram.width_bits"``, ``"topology.links.3.a"``) names a
    field below model ``tp`` (a number indexes a list)."""
    for key in dotted.split("."):
        tp = _unwrap(tp)
        if key.isdigit():
            args = get_args(tp)
            if get_origin(tp) not in (list, tuple) or not args:
                return False
            tp = args[0]
        elif not _is_model(tp) or key not in tp.model_fields:
            return False
        else:
            tp = tp.model_fields[key].annotation
    return True


def _lookup(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _paths_of_value(data: Any, value: str, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every path in nested dicts/lists whose leaf equals ``value``, in document order."""
    if isinstance(data, dict):
        items: Any = data.items()
    elif isinstance(data, list | tuple):
        items = enumerate(data)
    else:
        return [prefix] if data == value and prefix else []
    found: list[tuple[str, ...]] = []
    for k, v in items:
        found.extend(_paths_of_value(v, value, (*prefix, str(k))))
    return found


_LEADING_PATH = re.compile(r"([A-Za-z_]\w*(?:\.(?:[A-Za-z_]\w*|\d+))*)")
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")


def _short(value: Any) -> str:
    big = shown_value(value)
    if big is not None:
        return big
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _model_level(err: Mapping[str, Any], parts: list[str], tp: Any) -> tuple[str, str]:
    """Path and problem of an error raised by a model validator (pydantic gives no field).

    The field is taken from the message when it starts with a field path of the model
    (``"spmat_sram.width_bits=25 must be ..."``), else from the input value it quotes
    (``"duplicate layer name 'fc1'"`` -> the second ``name`` holding ``'fc1'``).
    """
    msg = _clean_msg(err)
    given = err.get("input")
    m = _LEADING_PATH.match(msg)
    if m and _is_model(tp) and _field_path_in(tp, m.group(1)):
        field = m.group(1)
        rest = msg[m.end() :]
        problem = msg
        if rest.startswith(": "):  # "num_pes: 'abc' is not a number": the path says it once
            problem = rest[2:]
        if rest.startswith(" must "):
            problem = rest[1:]
            value = _lookup(given, field)
            if value is not _MISSING and not isinstance(value, dict | list):
                problem += f" (got {_short(value)})"
        return ".".join([*parts, field]), problem
    for q in _QUOTED.finditer(msg):
        hits = _paths_of_value(given, q.group(1) or q.group(2))
        if hits:
            return ".".join([*parts, *hits[-1]]), msg
    return ".".join(parts), msg


def _clean_msg(err: Mapping[str, Any]) -> str:
    msg = str(err.get("msg", "invalid value"))
    for noise in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(noise)
    return msg


_PRIORITY = {"extra_forbidden": 0, "union_tag_invalid": 1, "union_tag_not_found": 1}


def validation_to_config_error(
    exc: ValidationError, source: str, model_cls: type[BaseModel] | None = None
) -> ConfigError:
    """Turn pydantic's most telling error into a one-line ``ConfigError`` (file, field, problem).

    Unknown fields come first (a misspelt key also makes the real one "missing"); the path drops
    the discriminator tags pydantic inserts for tagged unions (``layers.0.fc.inputs`` ->
    ``layers.0.inputs``) and errors of model validators are given the field they are about.
    """
    errors = exc.errors()
    err = min(errors, key=lambda e: _PRIORITY.get(e.get("type", ""), 2))
    loc = tuple(err.get("loc", ()))
    if loc and isinstance(err.get("input"), list | dict):  # ``str | list[str]`` given a list:
        # the list member's own error (``workload.1``) says more than "not a string"
        inner = [e for e in errors if len(e.get("loc", ())) > len(loc)
                 and tuple(e["loc"][: len(loc) - 1]) == loc[:-1]]  # fmt: skip
        if inner:
            err = inner[0]
            loc = tuple(err["loc"])
    parts, tp = _walk(model_cls, loc)
    path = ".".join(parts)
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        allowed = _model_fields_at(model_cls, loc)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1) if loc else []
        problem = "unknown field"
        if close:
            problem += f" (did you mean {close[0]!r}?)"
        if allowed:
            problem += f"; allowed: {', '.join(allowed)}"
    elif kind == "missing":
        problem = "required field is missing"
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        disc = str(ctx.get("discriminator", "kind")).strip("'\"")
        path = ".".join([*parts, disc])
        tags = [
            str(v)
            for m in _union_models(tp)
            if disc in m.model_fields
            for v in _literal_values(m.model_fields[disc].annotation)
        ]
        shown = ", ".join(tags) or str(ctx.get("expected_tags", "")).replace("'", "")
        if kind == "union_tag_invalid":
            problem = f"unknown value {ctx.get('tag')!r}; allowed: {shown}"
        else:
            problem = f"required field is missing; allowed: {shown}"
    elif kind in ("value_error", "assertion_error") and _is_model(tp):
        path, problem = _model_level(err, parts, tp)
    else:
        given = err.get("input")
        msg = _clean_msg(err)
        problem = f"{msg} (got {_short(given)})" if not isinstance(given, dict) else msg
        allowed = _allowed(kind, ctx)
        if allowed and "allowed" not in problem:
            problem += f"; allowed: {allowed}"
    return ConfigError(source, path, problem)


#: pydantic error type -> what is allowed (``{}``: from the error's context)
_ALLOWED = {
    "too_short": "at least {min_length} item(s)",
    "too_long": "at most {max_length} item(s)",
    "literal_error": "{expected}",
    "enum": "{expected}",
    "greater_than": "a value > {gt}",
    "greater_than_equal": "a value >= {ge}",
    "less_than": "a value < {lt}",
    "less_than_equal": "a value <= {le}",
    "int_parsing": "an integer",
    "int_parsing_size": "a smaller integer (64 bits at most)",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_parsing": "a number",
    "float_type": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}


def _allowed(kind: str, ctx: Mapping[str, Any]) -> str:
    """What pydantic's error ``kind`` allows, from its context ('' when not known)."""
    text = _ALLOWED.get(kind, "")
    try:
        return text.format(**ctx)
    except (KeyError, IndexError, ValueError):
        return ""
