"""Pydantic's validation errors as one-line ``ConfigError`` messages (file, field, problem).

``validation_to_config_error`` follows pydantic's error location through the model types
(dropping the discriminator tags of tagged unions), gives a model validator's error the field it
is about, and says what is allowed. Split from ``config.base``, which uses it.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from archsim.errors import ConfigError, shown_value

__all__ = ["validation_to_config_error", "short_value", "unwrap_type"]

_MISSING = object()


def unwrap_type(tp: Any) -> Any:
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
        return [a for a in (unwrap_type(x) for x in get_args(tp)) if _is_model(a)]
    return []


def _literal_values(tp: Any) -> tuple[Any, ...]:
    tp = unwrap_type(tp)
    return get_args(tp) if get_origin(tp) is Literal else ()


def _walk(model_cls: Any, loc: Sequence[Any]) -> tuple[list[str], Any]:
    """Follow pydantic's ``loc`` through the model types.

    Returns the display path (discriminator tags such as ``'fc'`` dropped) and the type reached
    (``None`` when it cannot be followed).
    """
    parts: list[str] = []
    tp: Any = model_cls
    for key in loc:
        tp = unwrap_type(tp) if tp is not None else None
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
    return parts, (unwrap_type(tp) if tp is not None else None)


def _model_fields_at(model_cls: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """Field names allowed at the parent of ``loc`` (best effort, for error messages)."""
    _, tp = _walk(model_cls, loc[:-1])
    members = _union_models(tp) or ([tp] if _is_model(tp) else [])
    return sorted({name for m in members for name in m.model_fields})


def _field_path_in(tp: Any, dotted: str) -> bool:
    """Whether ``dotted`` (``"spmat_sram.width_bits"``, ``"topology.links.3.a"``) names a
    field below model ``tp`` (a number indexes a list)."""
    for key in dotted.split("."):
        tp = unwrap_type(tp)
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


def short_value(value: Any) -> str:
    """``repr(value)`` cut to 60 characters (a huge number as ``shown_value`` writes it)."""
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
                problem += f" (got {short_value(value)})"
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
    elif kind == "string_too_long" and isinstance(err.get("input"), str):
        problem = (
            f"{len(err['input']):,} characters; allowed: at most {ctx.get('max_length')} characters"
        )
    else:
        given = err.get("input")
        msg = _clean_msg(err)
        problem = f"{msg} (got {short_value(given)})" if not isinstance(given, dict) else msg
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
