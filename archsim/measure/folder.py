"""The measurement-folder format (the format of ``shared/data/h100``): read, check, write.

A folder holds

* ``gemm_*.csv``: one timed GEMM per row, columns :data:`GEMM_COLUMNS` (``gemm_llm.csv`` adds
  ``model_projection`` first). ``a_stored`` / ``b_stored`` give the row-major stored shape of A
  and B (``"m x k"`` or ``"k x m"``; ``"k x n"`` or ``"n x k"``);
* ``conv_*.csv``: one timed convolution per row, columns :data:`CONV_COLUMNS`;
* ``device_memory_energy.json``: ``device`` (what was measured), ``memory_eager`` (copy / read
  bandwidth by size, launch floors) and ``energy`` (NVML energy counter around ~4 s of calls).

Times are seconds per call (``time_s`` the median, ``min_s`` the fastest), ``sm_mhz`` and
``board_w`` means of NVML readings (blank when none was taken). Other files (``README.md``)
and extra columns are listed as ignored. Every problem is a one-line
:class:`MeasurementError` naming the file, the row or key and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from archsim.errors import ArchsimError, one_line, os_reason, shown_value
from archsim.units import INT64_MAX

__all__ = [
    "CONV_COLUMNS",
    "DEVICE_FILE",
    "GEMM_COLUMNS",
    "LLM_COLUMN",
    "MEASURED_PRECISIONS",
    "MeasuredFolder",
    "MeasurementError",
    "read_folder",
    "write_folder",
]

DEVICE_FILE = "device_memory_energy.json"
#: precisions a measurement row may have (``fp8`` is e4m3 via ``torch._scaled_mm``)
MEASURED_PRECISIONS = ("fp16", "bf16", "tf32", "fp32", "fp8", "int8")
A_STORED = ("m x k", "k x m")
B_STORED = ("k x n", "n x k")
#: optional first column of GEMM files (LLM projections: ``model:projection``)
LLM_COLUMN = "model_projection"
_TIMING = ("time_s", "min_s", "tflops", "sm_mhz", "board_w")
GEMM_COLUMNS = ("m", "n", "k", "a_stored", "b_stored", "precision", *_TIMING)
CONV_COLUMNS = (
    "net", "layer", "batch", "precision", "c", "k", "h", "w", "r", "s", "stride", "pad",
    "groups", "p", "q", *_TIMING,
)  # fmt: skip
_POSITIVE_INT = {"m", "n", "k", "batch", "c", "h", "w", "r", "s", "stride", "groups", "p", "q"}
_CHOICES: dict[str, tuple[str, ...]] = {
    "a_stored": A_STORED,
    "b_stored": B_STORED,
    "precision": MEASURED_PRECISIONS,
}
_OPTIONAL_FLOAT = {"sm_mhz", "board_w"}  # blank: no NVML reading in the window
_ALLOWED_FILES = f"gemm_*.csv, conv_*.csv, {DEVICE_FILE}"


class MeasurementError(ArchsimError):
    """A measurement folder, file, row or field is missing or malformed (one line)."""

    def __init__(self, where: str | Path, field: str, problem: str) -> None:
        self.where, self.field, self.problem = str(where), field, problem
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


@dataclass(frozen=True)
class MeasuredFolder:
    """Every table of one measurement folder (frames keep the file's column order)."""

    path: Path
    gemm: dict[str, pd.DataFrame]  # file name -> rows
    conv: dict[str, pd.DataFrame]
    device: dict[str, Any]
    memory_eager: dict[str, Any]
    energy: dict[str, Any]
    ignored: tuple[str, ...] = field(default_factory=tuple)
    bursts: dict[str, Any] = field(default_factory=dict)  # probe.burst_trace entries
    lines: dict[str, tuple[int, ...]] = field(default_factory=dict)  # file -> row's file line

    def line(self, name: str, row: int) -> int:
        """The file line of row ``row`` (0-based) of table ``name``."""
        lines = self.lines.get(name)
        return lines[row] if lines is not None and row < len(lines) else row + 2

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """GEMM then conv tables by file name."""
        return {**self.gemm, **self.conv}


def _columns_for(name: str, header: list[str]) -> tuple[str, ...]:
    if name.startswith("conv_"):
        return CONV_COLUMNS
    return (LLM_COLUMN, *GEMM_COLUMNS) if header[:1] == [LLM_COLUMN] else GEMM_COLUMNS


def _cell(path: Path, line: int, col: str, raw: str) -> Any:
    """One CSV cell converted to its column's type; ``line`` is the 1-based file line."""
    where, text = f"{path}: line {line}", raw.strip()
    if col in _CHOICES:
        if text not in _CHOICES[col]:
            allowed = ", ".join(repr(c) for c in _CHOICES[col])
            raise MeasurementError(where, col, f"{text!r} is not valid; allowed: {allowed}")
        return text
    if col in _POSITIVE_INT or col == "pad":
        low = 0 if col == "pad" else 1
        try:  # int() and float() read other scripts' digits too: ASCII only
            value = int(text if text.isascii() else "?")
        except ValueError:  # also an integer of more than 4,300 digits
            raise MeasurementError(where, col, f"{_shown(text)} is not an integer; allowed: "
                                   f"an integer >= {low}") from None  # fmt: skip
        if value < low:
            raise MeasurementError(where, col, f"{value} is out of range; allowed: >= {low}")
        if value > INT64_MAX:  # a table's column and the layer's field are 64-bit
            raise MeasurementError(where, col, f"{_shown(text)} is out of range; allowed: "
                                   f"{low} to {INT64_MAX:,} (64-bit)")  # fmt: skip
        return value
    if col in _TIMING:
        if not text and col in _OPTIONAL_FLOAT:
            return math.nan
        allowed = "a number >= 0" if col == "tflops" else "a number > 0"
        if col in _OPTIONAL_FLOAT:
            allowed += ", or blank (no reading)"
        try:
            value = float(text if text.isascii() else "?")
        except ValueError:
            raise MeasurementError(where, col, f"{_shown(text)} is not a number; allowed: "
                                   f"{allowed}") from None  # fmt: skip
        if not math.isfinite(value) or value <= 0.0 and col != "tflops" or value < 0.0:
            raise MeasurementError(where, col, f"{_cut(text)} is out of range; allowed: "
                                   f"{allowed}")  # fmt: skip
        if value > _MOST.get(col, math.inf):
            raise MeasurementError(where, col, f"{_cut(text)} is out of range; allowed: a "
                                   f"number up to {_MOST[col]:g}")  # fmt: skip
        return value
    if not text:
        raise MeasurementError(where, col, "is empty; allowed: a non-empty name")
    return text


def _regular(path: Path) -> None:
    """Refuse a FIFO, a device or a folder where a file is read (a FIFO blocks the read)."""
    if not path.is_file():
        raise MeasurementError(path, "", "not a regular file; allowed: the file as `archsim "
                               "probe gpu` writes it")  # fmt: skip


#: the largest measurement file read, bytes (the probe's files are kilobytes; a link to an
#: endless pseudo-file such as /proc/self/pagemap must not fill the memory)
MAX_FILE_BYTES = 64 << 20


def _read_bytes(path: Path) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_FILE_BYTES`; one-line errors."""
    _regular(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise MeasurementError(path, "", f"cannot read: {os_reason(exc)}") from None
    if len(data) > MAX_FILE_BYTES:
        raise MeasurementError(path, "", f"larger than {MAX_FILE_BYTES >> 20} MiB; allowed: "
                               "the files `archsim probe gpu` writes")  # fmt: skip
    return data


def _records(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(header, [(file line, cells)...]) of a CSV file; blank lines skipped, a record that
    spans lines (a quoted newline) numbered by its first line, a record with more cells than
    the header refused, one with fewer read with blank trailing cells -- unless it is the last
    line and no newline ends the file (a file cut short)."""
    try:
        text = _read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MeasurementError(path, "", f"not a readable CSV ({one_line(exc)})") from None
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
    header: list[str] | None = None
    records, last = [], 0  # last: the cells of the last record as the file gives them
    try:
        while True:
            first = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            if not any(cell.strip() for cell in row):
                continue  # a blank line
            if header is None:
                header = [c.strip() for c in row]
                continue
            if len(row) > len(header):
                raise MeasurementError(f"{path}: line {first}", "", f"{len(row)} fields where "
                                       f"the header has {len(header)}; allowed: at most one "
                                       "value per column")  # fmt: skip
            records.append((first, row + [""] * (len(header) - len(row))))  # blank trailing
            last = len(row)
    except csv.Error as exc:
        raise MeasurementError(path, "", f"not a readable CSV ({one_line(exc)})") from None
    if header is None:
        raise MeasurementError(path, "", "empty file; allowed: a CSV header and rows")
    if records and last < len(header) and not text.endswith(("\n", "\r")):
        raise MeasurementError(f"{path}: line {records[-1][0]}", "", f"{last} fields where "
                               f"the header has {len(header)} and no newline ends the file (cut "
                               "short?); allowed: the whole last line, ending with a "
                               "newline")  # fmt: skip
    repeated = next((c for i, c in enumerate(header) if c and c in header[:i]), None)
    if repeated is not None:
        raise MeasurementError(path, repeated, "column given twice; allowed: each column once")
    return header, records


def _read_csv(path: Path) -> tuple[pd.DataFrame, list[str], tuple[int, ...]]:
    """One ``gemm_*.csv`` / ``conv_*.csv`` file, every cell checked; its extra columns and the
    file line of each row."""
    header, records = _records(path)
    want = _columns_for(path.name, header)
    missing = [c for c in want if c not in header]
    if missing:
        raise MeasurementError(
            path, missing[0], f"column missing; required columns: {', '.join(want)}"
        )
    extra = [c for c in header if c not in want and c]  # a trailing comma names none
    if not records:
        raise MeasurementError(path, "", "no rows; allowed: at least one measured row")
    at = {c: header.index(c) for c in want}
    rows = [{c: _cell(path, line, c, cells[at[c]]) for c in want} for line, cells in records]
    lines = tuple(line for line, _ in records)
    frame = pd.DataFrame(rows, columns=list(want))
    if path.name.startswith("conv_"):
        for line, row in zip(lines, rows, strict=True):
            _check_conv_row(f"{path}: line {line}", row)
    _check_rate(path, frame, lines)
    bad = frame.index[frame["min_s"] > frame["time_s"] * (1 + 1e-9)]
    if len(bad):
        raise MeasurementError(
            f"{path}: line {lines[int(bad[0])]}", "min_s", "is larger than time_s (the "
            "median); allowed: min_s <= time_s",
        )  # fmt: skip
    return frame, extra, lines


#: the fastest rate a row may imply when its ``tflops`` is 0 (not measured): 100x the
#: densest FP8 rate of any GPU here (the H100's 1,979 sparse TFLOPS)
MOST_TFLOPS = 2e5
#: how far a row's ``tflops`` may sit from its FLOPs / time_s or / min_s (the probe's figure
#: agrees to 0.04 % in every folder it wrote; the reference folder's rows, GEMM and conv,
#: likewise)
TFLOPS_TOLERANCE = 0.01


#: each table kind's FLOPs per call as the probe counts them (``GemmShape.flops``,
#: ``ConvShape.flops``): the columns multiplied, and the formula as messages name it
_FLOPS = {
    "gemm_": (("m", "n", "k"), "2 m n k"),
    "conv_": (("batch", "k", "p", "q", "r", "s"), "2 batch k p q (c / groups) r s"),
}


def _check_rate(path: Path, frame: pd.DataFrame, lines: tuple[int, ...]) -> None:
    """A row's ``tflops`` (when not 0) is its shape's FLOPs (:data:`_FLOPS`) over its time
    (``time_s``, or ``min_s`` for a rate from the fastest replay): a row whose shape or time
    contradicts it (m = 1e12, or a conv at batch 1e6, done in 2.7 us) is refused, not
    simulated; a row without a rate (0) may not imply more than :data:`MOST_TFLOPS`."""
    given = frame["tflops"].astype(float)
    cols, formula = _FLOPS[path.name[:5]]
    tera = pd.Series(2.0 / 1e12, index=frame.index)
    for c in cols:
        tera = tera * frame[c].astype(float)  # floats: no int64 overflow
    if "groups" in frame:
        tera = tera * (frame["c"] // frame["groups"]).astype(float)
    implied = tera / frame["time_s"]
    fastest = frame["min_s"] if "min_s" in frame else pd.Series(math.nan, index=frame.index)
    from_min = tera / fastest.where(fastest > 0)  # NaN where absent: matches nothing

    def near(rate: pd.Series) -> pd.Series:
        return (rate / given - 1).abs() <= TFLOPS_TOLERANCE

    absurd = frame.index[(given == 0) & (implied > MOST_TFLOPS)]
    if len(absurd):
        i = int(absurd[0])
        raise MeasurementError(
            f"{path}: line {lines[i]}", "time_s", f"{frame['time_s'][i]:.6g} s for {formula} = "
            f"{tera[i]:.6g} TFLOP is {implied[i]:.6g} TFLOPS; allowed: a time a GPU can "
            f"reach (under {MOST_TFLOPS:g} TFLOPS)",
        )  # fmt: skip
    off = frame.index[(given > 0) & ~near(implied) & ~near(from_min)]
    if len(off):
        i = int(off[0])
        also = f" and / min_s = {from_min[i]:.6g}" if math.isfinite(from_min[i]) else ""
        raise MeasurementError(
            f"{path}: line {lines[i]}", "tflops",
            f"{given[i]:.6g} disagrees with {formula} / time_s = {implied[i]:.6g}{also}; allowed: "
            f"the row's own rate over time_s or min_s (within {TFLOPS_TOLERANCE:.0%}), or 0 "
            "when not measured",
        )  # fmt: skip


def _check_conv_row(where: str, row: Mapping[str, Any]) -> None:
    """A conv row's shape holds together: groups divide C and K, the filter fits the padded
    input, and P x Q is the output size the other fields give."""
    g, pad, st = row["groups"], row["pad"], row["stride"]
    if row["c"] % g or row["k"] % g:
        raise MeasurementError(where, "groups", f"{g} does not divide c = {row['c']} and k = "
                               f"{row['k']}; allowed: a common divisor")  # fmt: skip
    size = {}
    for out, n, f in (("p", "h", "r"), ("q", "w", "s")):
        if row[f] > row[n] + 2 * pad:
            raise MeasurementError(where, f, f"{row[f]} is larger than {n} + 2 pad = "
                                   f"{row[n] + 2 * pad}; allowed: a filter that fits")  # fmt: skip
        size[out] = (row[n] + 2 * pad - row[f]) // st + 1
        if row[out] != size[out]:
            raise MeasurementError(where, out, f"{row[out]} is not the output size {size[out]} "
                                   f"that {n}, {f}, stride and pad give")  # fmt: skip


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
#: the largest plausible value of each reading, CSV cell or JSON entry: a call of an hour, a
#: petabyte moved or an exaflop computed by one call, a megajoule, 100 kW, a trillion calls,
#: 10,000 SMs, a 10 GHz clock
_MOST = {
    "time_s": 3600.0, "min_s": 3600.0, "seconds": 3600.0, "sm_mhz": 1e4, "board_w": 1e5,
    "joules_per_call": 1e6, "joules": 1e9, "watts": 1e5, "calls": 1e12, "bytes_moved": 1e15,
    "bytes": 1e15, "bytes_per_call": 1e15, "flops_per_call": 1e18, "idle_watts": 1e5,
    "sms": 1e4, "max_sm_clock_mhz": 1e4, "idle_sm_clock_mhz": 1e4, "power_limit_w": 1e5,
    "L2_cache_size": 1e12, "total_memory": 1e15, "memory_clock_rate": 1e8,
    "memory_bus_width": 1e6, "clock_rate": 1e8,
}  # fmt: skip
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


def _shown(value: Any) -> str:
    """``repr(value)`` cut to 60 characters."""
    return _cut(shown_value(value) or repr(value))


def _cut(text: str) -> str:
    """``text`` cut to 60 characters (a cell or value a message shows back)."""
    return text if len(text) <= 60 else text[:57] + "..."


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


class _DuplicateKey(Exception):
    """A JSON object names one key twice (``json`` would keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


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


def _read_device(path: Path) -> tuple[dict, dict, dict, dict]:
    data = _read_bytes(path)
    try:
        doc = json.loads(data.decode("utf-8-sig"), object_pairs_hook=_unique_keys)  # BOM: as CSV
    except _DuplicateKey as exc:
        raise MeasurementError(path, exc.args[0], "appears twice in one object; allowed: each "
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


def _undecodable(name: str) -> bool:
    """A file name whose bytes are not UTF-8 (Python keeps them as lone surrogates, which
    neither a CSV, a Parquet string nor the terminal can take)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def read_folder(path: str | Path) -> MeasuredFolder:
    """Read and check every measurement file of ``path``."""
    folder = Path(path)
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "folder not found"
        raise MeasurementError(folder, "", f"{what}; allowed: a folder of "
                               f"{_ALLOWED_FILES}")  # fmt: skip
    gemm: dict[str, pd.DataFrame] = {}
    conv: dict[str, pd.DataFrame] = {}
    ignored = []
    lines: dict[str, tuple[int, ...]] = {}
    for f in sorted(folder.iterdir()):
        if f.name.startswith("."):
            continue
        if not f.name.isascii() and _undecodable(f.name):
            if f.name.startswith(("gemm_", "conv_")):  # its name becomes the rows' `set`
                shown = ascii(f.name)[1:-1]
                raise MeasurementError(
                    folder, "", f"file name {shown} is not UTF-8; allowed: rename it"
                )
            ignored.append(ascii(f.name)[1:-1])
            continue
        if f.suffix == ".csv" and f.name.startswith(("gemm_", "conv_")):
            frame, extra, lines[f.name] = _read_csv(f)
            (gemm if f.name.startswith("gemm_") else conv)[f.name] = frame
            ignored.extend(f"{f.name}: column {c}" for c in extra)
        elif f.name != DEVICE_FILE:
            ignored.append(f.name)
    if not gemm and not conv:
        raise MeasurementError(folder, "", f"no measurement files; required: {_ALLOWED_FILES}")
    device_file = folder / DEVICE_FILE
    if device_file.exists() or device_file.is_symlink():
        _regular(device_file)
    if not device_file.is_file():
        raise MeasurementError(device_file, "", "file missing; required: device, memory_eager "
                               "and energy readings (written by `archsim probe gpu`)")  # fmt: skip
    device, memory, energy, bursts = _read_device(device_file)
    return MeasuredFolder(folder, gemm, conv, device, memory, energy, tuple(ignored), bursts, lines)


def _csv_text(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.10g", lineterminator="\n")


def write_folder(
    dest: str | Path, tables: Mapping[str, pd.DataFrame], device_doc: Mapping[str, Any]
) -> Path:
    """Write ``tables`` (file name -> frame) and ``device_doc`` as a measurement folder.

    Files go to a temporary folder beside ``dest``, are read back with :func:`read_folder`, and
    only then is the folder renamed to ``dest``: an interrupted or failed write leaves nothing.
    ``dest`` must not exist, or be an empty folder.
    """
    target = Path(dest).resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise MeasurementError(target, "", "exists and is not an empty folder; allowed: a new "
                               "or empty folder")  # fmt: skip
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as exc:
        raise MeasurementError(target, "", f"cannot create: {exc.strerror}") from None
    try:
        for name, frame in tables.items():
            (tmp / name).write_text(_csv_text(frame), encoding="utf-8")
        text = json.dumps(device_doc, indent=1, allow_nan=False) + "\n"
        (tmp / DEVICE_FILE).write_text(text, encoding="utf-8")
        read_folder(tmp)  # what we wrote must read back
        os.chmod(tmp, 0o755)
        if target.exists():
            target.rmdir()
        os.replace(tmp, target)
    except OSError as exc:
        raise MeasurementError(target, "", f"cannot write: {os_reason(exc)}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
