"""Per-process, bounded memo of intermediate arrays that many simulations share.

A sweep runs the same workload and seed on many hardware points. What depends only on the
workload and seed (the materialised layer), or on a few hardware fields (EIE's per-PE encoding
depends on the PE count and index width, not on FIFO depth or line width), is computed once per
process and reused. The memo is off by default: sweep workers switch it on (``enable``).

A few values are worth keeping even when the memo is off: a layer read from data files and
its per-PE encoding (``memoized(..., keep=True)``). They go to a small store of
their own (``RESIDENT_LIMIT_BYTES``, least recently used dropped first), so that calling
``simulate`` again on the same layer and PE count (a notebook, a test, a benchmark) does not
re-read and re-encode it. ``clear()`` empties both stores; ``set_resident_limit(0)`` turns the
small one off. Cached values are shared, never copied: code that uses them must not mutate
them. Results are identical with and without either store.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "new_group",
    "release_free_memory",
    "enable",
    "disable",
    "clear",
    "enabled",
    "memoized",
    "holds",
    "stats",
    "set_resident_limit",
    "DEFAULT_LIMIT_BYTES",
    "RESIDENT_LIMIT_BYTES",
]

T = TypeVar("T")

#: Default budget of one process's memo, bytes (least recently used entries are dropped).
DEFAULT_LIMIT_BYTES = 1 << 30
#: Default budget of the store of kept values (``keep=True``) while the memo is off, bytes.
RESIDENT_LIMIT_BYTES = 256 << 20

_lock = threading.Lock()
_entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
_resident: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
_lasting: set[Hashable] = set()  # keys of ``_entries`` that ``new_group`` keeps
_state = {"limit": 0, "bytes": 0, "hits": 0}
_kept = {"limit": RESIDENT_LIMIT_BYTES, "bytes": 0}
_computed: dict[str, int] = {}  # misses by kind (a tuple key's first item)


def enable(limit_bytes: int = DEFAULT_LIMIT_BYTES) -> None:
    """Switch the memo on in this process with a budget of ``limit_bytes`` (idempotent)."""
    with _lock:
        _state["limit"] = max(int(limit_bytes), 0)
        _evict(_entries, _state)


def disable() -> None:
    """Switch the memo off and drop everything it holds (the store of kept values stays)."""
    with _lock:
        _state["limit"] = 0
        _evict(_entries, _state)


def new_group() -> None:
    """Drop the entries not memoised as ``lasting``: a sweep worker calls it when it moves to
    the next group of points (see ``archsim.explore.schedule``), whose hardware differs in a
    slowest axis, so that it never holds two groups' preparations at once (EIE at 512 PEs:
    about 40 MB of pointers); what depends on the workload and seed only stays."""
    with _lock:
        for key in [k for k in _entries if k not in _lasting]:
            _state["bytes"] -= _entries.pop(key)[1]


def clear() -> None:
    """Drop every entry, kept values included (the memo stays on or off as it was)."""
    with _lock:
        _lasting.clear()
        _entries.clear()
        _resident.clear()
        _computed.clear()
        _state.update(bytes=0, hits=0)
        _kept["bytes"] = 0


def set_resident_limit(limit_bytes: int = RESIDENT_LIMIT_BYTES) -> None:
    """Budget of the values kept while the memo is off (``memoized(..., keep=True)``); 0 keeps
    none and drops what is held."""
    with _lock:
        _kept["limit"] = max(int(limit_bytes), 0)
        _evict(_resident, _kept)


def enabled() -> bool:
    """Whether the memo is on in this process."""
    return _state["limit"] > 0


def stats() -> dict[str, Any]:
    """Entries, bytes held, hits and misses since the last ``clear``, and ``computed``: the
    misses by kind (a tuple key's first item, e.g. ``eie.prepared``); ``kept_entries`` and
    ``kept_bytes``: the store of values kept while the memo is off."""
    with _lock:
        misses = sum(_computed.values())
        return {
            "entries": len(_entries),
            **_state,
            "misses": misses,
            "computed": dict(_computed),
            "kept_entries": len(_resident),
            "kept_bytes": _kept["bytes"],
        }


def holds(key: Hashable) -> bool:
    """Whether either store holds a value under ``key`` now (it may be dropped later)."""
    with _lock:
        return key in _entries or key in _resident


def memoized(
    key: Hashable, compute: Callable[[], T], keep: bool = False, lasting: bool = False
) -> T:
    """``compute()``, or the value stored under ``key`` when the memo is on and holds it.

    ``keep``: also store the value while the memo is off, in the small store of kept values
    (for what is costly to rebuild and likely asked for again: a built layer, its encoding).
    ``lasting``: the value depends on the workload and seed only (a built layer), so
    ``new_group`` keeps it.
    """
    if enabled():
        entries, state = _entries, _state
    elif keep and _kept["limit"] > 0:
        entries, state = _resident, _kept
    else:
        return compute()
    with _lock:
        hit = entries.get(key)
        if hit is not None:
            entries.move_to_end(key)
            _state["hits"] += 1
            return hit[0]
        kind = str(key[0]) if isinstance(key, tuple) and key else "other"
        _computed[kind] = _computed.get(kind, 0) + 1
    value = compute()
    size = _nbytes(value)
    if size >= TRIM_AFTER_BYTES:
        release_free_memory()
    with _lock:
        if size <= state["limit"] and key not in entries:
            entries[key] = (value, size)
            state["bytes"] += size
            if lasting and entries is _entries:
                _lasting.add(key)
            _evict(entries, state)
    return value


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to call
        return None


_TRIM = _malloc_trim()
#: a computed value at least this large is followed by ``release_free_memory``
TRIM_AFTER_BYTES = 1 << 20


def release_free_memory() -> None:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim``; elsewhere
    nothing). The temporaries of building a large value (a layer, an EIE encoding) are
    freed, but glibc keeps most of their pages, so without this a sweep worker's RSS grows
    by one value's temporaries after another (1,000-point EIE sweep, largest worker: 460 MB
    before, about 300 MB with the rest of that change). About 0.3 ms a call: ``memoized``
    calls it after computing a value of ``TRIM_AFTER_BYTES`` or more, sweep workers after
    each chunk."""
    if _TRIM is not None:
        _TRIM(0)


def _evict(entries: OrderedDict[Hashable, tuple[Any, int]], state: dict[str, int]) -> None:
    while entries and state["bytes"] > state["limit"]:
        key, (_, size) = entries.popitem(last=False)
        state["bytes"] -= size
        if entries is _entries:
            _lasting.discard(key)


def _nbytes(value: Any, depth: int = 0) -> int:
    """Bytes of the arrays inside ``value`` (dataclasses, tuples, lists, dicts), plus a little."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if depth > 4:
        return 64
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a field marked ``metadata={"memo": "shared"}`` holds a value memoised on its own
        # (an EIE preparation's layer): counted there, not again here
        fields = dataclasses.fields(value)
        items: Any = (getattr(value, f.name) for f in fields if f.metadata.get("memo") != "shared")
    elif isinstance(value, dict):
        items = value.values()
    elif isinstance(value, tuple | list):
        items = value
    else:
        return 64
    return 64 + sum(_nbytes(v, depth + 1) for v in items)
