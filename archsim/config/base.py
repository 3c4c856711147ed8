"""Base class of every configuration model: strict, frozen, overridable by dotted path."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from archsim.errors import ConfigError

__all__ = ["ArchsimModel", "validation_to_config_error", "set_dotted"]

M = TypeVar("M", bound="ArchsimModel")


class ArchsimModel(BaseModel):
    """Frozen pydantic model that forbids unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    def with_overrides(self: M, overrides: Mapping[str, Any], source: str = "<overrides>") -> M:
        """Return a new, re-validated config with ``{"dotted.path": value}`` applied.

        Raises ``ConfigError`` naming the path when it does not exist or the value is invalid.
        """
        data = self.model_dump(mode="python", exclude_none=False)
        for path, value in overrides.items():
            set_dotted(data, path, value, source)
        try:
            return type(self).model_validate(data)
        except ValidationError as exc:
            raise validation_to_config_error(exc, source, type(self)) from None


def set_dotted(data: dict[str, Any], path: str, value: Any, source: str) -> None:
    """Set ``data[a][b][c] = value`` for ``path == "a.b.c"``; the path must already exist."""
    parts = path.split(".")
    node: Any = data
    for depth, key in enumerate(parts):
        here = ".".join(parts[: depth + 1])
        if not isinstance(node, dict):
            raise ConfigError(source, here, "is not a section; cannot set a field inside it")
        if key not in node:
            allowed = ", ".join(sorted(node)) or "(none)"
            raise ConfigError(source, here, f"unknown field; allowed here: {allowed}")
        if depth == len(parts) - 1:
            node[key] = copy.deepcopy(value)
        else:
            if node[key] is None:
                raise ConfigError(
                    source, here, "is not set in this config; cannot override inside it"
                )
            node = node[key]


def _model_fields_at(model_cls: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """Field names allowed at the parent of ``loc`` (best effort, for error messages)."""
    cls = model_cls
    for key in loc[:-1]:
        if cls is None or not isinstance(key, str):
            return []
        field = cls.model_fields.get(key)
        if field is None:
            return []
        ann = field.annotation
        cls = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        if cls is None:
            args = getattr(ann, "__args__", ())
            cls = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return sorted(cls.model_fields) if cls is not None else []


def validation_to_config_error(
    exc: ValidationError, source: str, model_cls: type[BaseModel] | None = None
) -> ConfigError:
    """Turn pydantic's first error into a one-line ``ConfigError`` (file, field, problem)."""
    err = exc.errors()[0]
    loc = tuple(err.get("loc", ()))
    # drop discriminator tags pydantic inserts for tagged unions (e.g. 'fc')
    path = ".".join(str(p) for p in loc)
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        allowed = _model_fields_at(model_cls, loc)
        hint = f"; allowed: {', '.join(allowed)}" if allowed else ""
        problem = f"unknown field{hint}"
    elif kind == "missing":
        problem = "required field is missing"
    else:
        given = err.get("input")
        shown = repr(given)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        problem = f"{msg} (got {shown})" if not isinstance(given, dict) else msg
    return ConfigError(source, path, problem)
