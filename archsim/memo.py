"""Per-process, bounded memo of intermediate arrays that many simulations share.

A sweep runs the same workload and seed on many hardware points. What depends only on the
workload and seed (the materialised layer), or on a few hardware fields (EIE's per-PE encoding
depends on the PE count and index width, not on FIFO depth or line width), is computed once per
process and reused. The memo is off by default: sweep workers switch it on (``enable``), so a
plain ``simulate`` call holds on to nothing. Cached values are shared, never copied: code that
uses them must not mutate them. Results are identical with and without the memo.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

__all__ = ["enable", "disable", "clear", "enabled", "memoized", "stats", "DEFAULT_LIMIT_BYTES"]

T = TypeVar("T")

#: Default budget of one process's memo, bytes (least recently used entries are dropped).
DEFAULT_LIMIT_BYTES = 1 << 30

_lock = threading.Lock()
_entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
_state = {"limit": 0, "bytes": 0, "hits": 0}
_computed: dict[str, int] = {}  # misses by kind (a tuple key's first item)


def enable(limit_bytes: int = DEFAULT_LIMIT_BYTES) -> None:
    """Switch the memo on in this process with a budget of ``limit_bytes`` (idempotent)."""
    with _lock:
        _state["limit"] = max(int(limit_bytes), 0)
        _evict()


def disable() -> None:
    """Switch the memo off and drop everything it holds."""
    with _lock:
        _state["limit"] = 0
        _evict()


def clear() -> None:
    """Drop every entry (the memo stays on or off as it was)."""
    with _lock:
        _entries.clear()
        _computed.clear()
        _state.update(bytes=0, hits=0)


def enabled() -> bool:
    """Whether the memo is on in this process."""
    return _state["limit"] > 0


def stats() -> dict[str, Any]:
    """Entries, bytes held, hits and misses since the last ``clear``, and ``computed``: the
    misses by kind (a tuple key's first item, e.g. ``eie.prepared``)."""
    with _lock:
        misses = sum(_computed.values())
        return {"entries": len(_entries), **_state, "misses": misses, "computed": dict(_computed)}


def memoized(key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, or the value stored under ``key`` when the memo is on and holds it."""
    if not enabled():
        return compute()
    with _lock:
        hit = _entries.get(key)
        if hit is not None:
            _entries.move_to_end(key)
            _state["hits"] += 1
            return hit[0]
        kind = str(key[0]) if isinstance(key, tuple) and key else "other"
        _computed[kind] = _computed.get(kind, 0) + 1
    value = compute()
    size = _nbytes(value)
    with _lock:
        if size <= _state["limit"] and key not in _entries:
            _entries[key] = (value, size)
            _state["bytes"] += size
            _evict()
    return value


def _evict() -> None:
    while _entries and _state["bytes"] > _state["limit"]:
        _, (_, size) = _entries.popitem(last=False)
        _state["bytes"] -= size


def _nbytes(value: Any, depth: int = 0) -> int:
    """Bytes of the arrays inside ``value`` (dataclasses, tuples, lists, dicts), plus a little."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if depth > 4:
        return 64
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items: Any = (getattr(value, f.name) for f in dataclasses.fields(value))
    elif isinstance(value, dict):
        items = value.values()
    elif isinstance(value, tuple | list):
        items = value
    else:
        return 64
    return 64 + sum(_nbytes(v, depth + 1) for v in items)
