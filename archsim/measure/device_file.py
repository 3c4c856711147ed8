"""A measurement folder's ``device_memory_energy.json``: read and check.

The document holds ``device`` (what was measured: name, SMs, clocks, memory), ``memory_eager``
(copy / read bandwidth by size, launch floors), ``energy`` (NVML energy counter around ~4 s of
calls, with optional ``smi_*`` clock samples) and optional ``bursts`` (per-call traces). Every
problem is a one-line :class:`~archsim.measure.folder.MeasurementError` naming the file, the
dotted key and what is allowed. Split from :mod:`archsim.measure.folder`, which reads the CSV
files and the bytes of this one, and calls :func:`read_device`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from archsim.errors import one_line
from archsim.json_keys import RepeatedKey, loads_unique_keys
from archsim.measure.checks import MOST as _MOST
from archsim.measure.checks import MeasurementError
from archsim.measure.checks import shown as _shown
from archsim.measure.checks import undecodable as _undecodable

__all__ = ["BURST_COLUMNS", "read_device"]


#: a JSON value's type as a message names it
_KIND = {int: "an integer", float: "a number", str: "a string", dict: "an object", list: "a list"}


def _need(doc: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in doc:
        raise MeasurementError(where, key, f"missing; required: {_KIND[kind]}")
    value = doc[key]
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if kind is float:  # JSON's Infinity / NaN (Python's json reads them) are no reading
        ok = (
            isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0
        )  # fmt: skip
        if not ok:
            raise MeasurementError(where, key, f"{_shown(value)} is not valid; allowed: a "
                                   "finite number >= 0")  # fmt: skip
    if not ok:
        raise MeasurementError(where, key, f"{_shown(value)} is not valid; allowed: {_KIND[kind]}")
    return value


def _positive(doc: Mapping[str, Any], key: str, where: str) -> float:
    """``doc[key]``, a number > 0 (a count, a clock, a power, a time)."""
    value = _need(doc, key, float, where)
    if not value > 0:
        raise MeasurementError(where, key, f"{value!r} is not valid; allowed: a number > 0")
    return value


#: readings of a ``memory_eager`` / ``energy`` entry that must be numbers > 0 (a time, the
#: bytes or energy of one call) and those that may also be 0
_POSITIVE = ("time_s", "seconds", "joules_per_call", "calls", "bytes_moved", "bytes",
             "bytes_per_call", "flops_per_call")  # fmt: skip
_NON_NEGATIVE = ("joules", "watts")
#: the ``device`` readings besides ``sms`` a folder may state (numbers > 0 where present;
#: ``validate`` compares them with the config: ``archsim.validation.measured_device``)
_DEVICE_NUMBERS = ("max_sm_clock_mhz", "power_limit_w", "idle_sm_clock_mhz", "L2_cache_size",
                   "total_memory", "memory_clock_rate", "memory_bus_width",
                   "clock_rate")  # fmt: skip


def _at_most(doc: Mapping[str, Any], key: str, where: str) -> None:
    """Refuse ``doc[key]`` past :data:`_MOST` (a number already checked)."""
    most = _MOST.get(key)
    if most is not None and doc[key] > most:
        raise MeasurementError(where, key, f"{doc[key]!r} is out of range; allowed: a number "
                               f"up to {most:g}")  # fmt: skip


def _check_entries(block: dict[str, Any], prefix: str, where: str) -> None:
    """Entries of ``memory_eager`` / ``energy``: times, bytes and energy per call > 0, other
    readings >= 0."""
    for key, value in block.items():
        path = f"{prefix}.{key}"
        if isinstance(value, dict):
            for num in (*_POSITIVE, *_NON_NEGATIVE):
                if num in value:
                    _need(value, num, float, f"{where}: {path}")
                    _at_most(value, num, f"{where}: {path}")
            for num in _POSITIVE:
                if num in value and value[num] == 0:
                    raise MeasurementError(f"{where}: {path}", num, "0 is not valid; allowed: "
                                           "a number > 0")  # fmt: skip
        elif (
            key != "idle_watts"
            and not isinstance(value, int | float)
            or isinstance(value, bool)
            or isinstance(value, float)
            and not math.isfinite(value)
        ):
            raise MeasurementError(where, path, f"{value!r} is not valid; allowed: a number or "
                                   "an object of readings")  # fmt: skip


def _check_smi(block: dict[str, Any], where: str) -> None:
    """``energy.<entry>.smi_mid`` (nvidia-smi snapshots taken halfway): a list of objects, the
    first one's ``clocks.sm`` (when given) a number of MHz > 0."""
    for key, entry in block.items():
        snaps = entry.get("smi_mid") if isinstance(entry, dict) else None
        if not snaps:
            continue
        path = f"energy.{key}.smi_mid"
        if not isinstance(snaps, list) or not all(isinstance(s, dict) for s in snaps):
            raise MeasurementError(where, path, f"{_shown(snaps)} is not valid; allowed: a list "
                                   "of nvidia-smi snapshots (objects), as `archsim probe gpu` "
                                   "writes")  # fmt: skip
        if "clocks.sm" not in snaps[0]:
            continue
        raw = snaps[0]["clocks.sm"]
        try:
            mhz = float(raw)
        except (TypeError, ValueError):
            mhz = math.nan
        if isinstance(raw, bool) or not (math.isfinite(mhz) and 0 < mhz <= 1e4):
            raise MeasurementError(where, f"{path}.0.clocks.sm", f"{_shown(raw)} is not valid; "
                                   "allowed: a number of MHz above 0, up to 10000")  # fmt: skip


#: columns of one ``bursts.<entry>.trace`` row (see :func:`archsim.measure.probe.burst_trace`)
BURST_COLUMNS = ("t_s", "s_per_call", "sm_mhz", "board_w", "energy_j")
#: the largest plausible value of each (a day of trace, an hour per call, 10 GHz, 100 kW, the
#: energy of a day at it)
_BURST_MOST = (86400.0, 3600.0, 1e4, 1e5, 1e10)


def _check_bursts(block: Any, where: str) -> dict[str, Any]:
    """The optional ``bursts`` block: entries with ``calls_per_replay`` and a ``trace`` of
    rows of :data:`BURST_COLUMNS` numbers, times not decreasing."""
    if not isinstance(block, dict):
        raise MeasurementError(where, "bursts", f"{block!r} is not valid; allowed: an object "
                               "of burst traces")  # fmt: skip
    for key, entry in block.items():
        path = f"bursts.{key}"
        if not isinstance(entry, dict):
            raise MeasurementError(where, path, "is not valid; allowed: an object with "
                                   "calls_per_replay and trace")  # fmt: skip
        calls = _need(entry, "calls_per_replay", int, f"{where}: {path}")
        if not 1 <= calls <= _MOST["calls"]:
            raise MeasurementError(f"{where}: {path}", "calls_per_replay", f"{calls!r} is out "
                                   "of range; allowed: an integer from 1 to 1e12")  # fmt: skip
        trace = _need(entry, "trace", list, f"{where}: {path}")
        last = -math.inf
        for i, row in enumerate(trace):
            ok = (
                isinstance(row, list)
                and len(row) == len(BURST_COLUMNS)
                and all(
                    isinstance(v, int | float)
                    and not isinstance(v, bool)
                    and math.isfinite(v)
                    and 0 <= v <= most
                    for v, most in zip(row, _BURST_MOST, strict=False)
                )
            )
            if not ok or row[0] < last:
                raise MeasurementError(
                    where, f"{path}.trace.{i}", f"{row!r} is not valid; allowed: "
                    f"[{', '.join(BURST_COLUMNS)}], finite numbers >= 0 (s, s, MHz, W, J), "
                    "t_s not decreasing",
                )  # fmt: skip
            last = row[0]
    return block


def _not_utf8(doc: Any) -> str | None:
    """The dotted path of the first key or string of a JSON document that is not UTF-8 (a lone
    surrogate), or None; walked without recursion (the document may nest deeply)."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        at, node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            bad = isinstance(key, str) and _undecodable(key)
            shown = ascii(key)[1:-1] if bad else str(key)
            sub = f"{at}.{shown}" if at else shown
            if bad or isinstance(value, str) and _undecodable(value):
                return sub
            if isinstance(value, dict | list):
                stack.append((sub, value))
    return None


def read_device(path: Path, data: bytes) -> tuple[dict, dict, dict, dict]:
    """The checked ``device``, ``memory_eager``, ``energy`` and ``bursts`` of the document
    ``data`` (the bytes of ``path``, which messages name)."""
    try:
        doc = loads_unique_keys(data.decode("utf-8-sig"))  # BOM: as CSV
    except RepeatedKey as exc:
        raise MeasurementError(path, exc.key, "appears twice in one object; allowed: each "
                               "key once") from None  # fmt: skip
    except json.JSONDecodeError as exc:
        raise MeasurementError(path, "", f"not valid JSON ({one_line(exc)})") from None
    except UnicodeDecodeError as exc:
        raise MeasurementError(path, "", f"not UTF-8 JSON ({one_line(exc)})") from None
    except ValueError:  # Python reads no integer longer than 4,300 digits
        raise MeasurementError(path, "", "a number of more than 4,300 digits; allowed: the "
                               "values `archsim probe gpu` writes") from None  # fmt: skip
    except RecursionError:
        raise MeasurementError(path, "", "not valid JSON (nested too deeply)") from None
    where = str(path)
    if not isinstance(doc, dict):
        raise MeasurementError(path, "", "not a JSON object; allowed: {device, memory_eager, "
                               "energy}")  # fmt: skip
    bad = _not_utf8(doc)
    if bad is not None:  # JSON's "\ud800" escape: no terminal, CSV or HTML can take it
        raise MeasurementError(path, bad, "text with a lone surrogate (\\ud800-\\udfff); "
                               "allowed: UTF-8 text")  # fmt: skip
    device = _need(doc, "device", dict, where)
    name = _need(device, "name", str, f"{where}: device")
    if not name.isprintable():  # the report's title and a comment line of calibrate's YAML
        raise MeasurementError(f"{where}: device", "name", f"{_shown(name)} is not valid; "
                               "allowed: printable text on one line")  # fmt: skip
    _need(device, "sms", int, f"{where}: device")
    _positive(device, "sms", f"{where}: device")
    _at_most(device, "sms", f"{where}: device")
    for key in _DEVICE_NUMBERS:  # null: a reading the probe's PyTorch does not give
        if device.get(key) is not None:
            _positive(device, key, f"{where}: device")
            _at_most(device, key, f"{where}: device")
    memory = _need(doc, "memory_eager", dict, where)
    for key in [k for k in memory if k.startswith("tiny_kernel")]:
        _positive(memory, key, f"{where}: memory_eager")
        if memory[key] > 1.0:  # a launch floor of more than a second
            raise MeasurementError(f"{where}: memory_eager", key, f"{memory[key]!r} is out of "
                                   "range; allowed: a time in s up to 1")  # fmt: skip
    energy = _need(doc, "energy", dict, where)
    _check_entries(memory, "memory_eager", where)
    if "idle_watts" in energy:
        _need(energy, "idle_watts", float, f"{where}: energy")
        _at_most(energy, "idle_watts", f"{where}: energy")
    _check_entries(energy, "energy", where)
    _check_smi(energy, where)
    bursts = _check_bursts(doc["bursts"], where) if "bursts" in doc else {}
    return device, memory, energy, bursts
