"""JSON that names a key twice in one object: ``json.loads`` keeps the last value silently,
so the readers of archsim's JSON files (results.json, a measurement folder's device file)
parse through :func:`loads_unique_keys` and refuse it."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

__all__ = ["RepeatedKey", "loads_unique_keys"]


class RepeatedKey(Exception):
    """An object of the document gives ``key`` twice; ``path`` is its dotted path."""

    def __init__(self, path: str, key: str) -> None:
        super().__init__(path)
        self.path, self.key = path, key


class _Repeated(dict):  # type: ignore[type-arg]
    """A parsed object that gave ``key`` more than once."""

    key = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: the object, marked when it repeats a key."""
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    repeated = _Repeated(out)
    repeated.key = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
    return repeated


def loads_unique_keys(text: str) -> Any:
    """``json.loads(text)``; raises :class:`RepeatedKey` for the first object (in document
    order) that names a key twice. The walk is iterative: a document nested as deeply as the
    decoder allows is walked too. Raises what ``json.loads`` raises."""
    data = json.loads(text, object_pairs_hook=_pairs)
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, _Repeated):
            raise RepeatedKey(f"{where}.{node.key}" if where else node.key, node.key)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(
            node, list) else ()  # fmt: skip
        children = [(f"{where}.{k}" if where else str(k), v) for k, v in items]
        stack.extend(reversed(children))  # document order
    return data
