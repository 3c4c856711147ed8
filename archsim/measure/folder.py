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

from archsim.errors import one_line, os_reason
from archsim.measure.checks import MOST as _MOST
from archsim.measure.checks import MeasurementError
from archsim.measure.checks import cut as _cut
from archsim.measure.checks import shown as _shown
from archsim.measure.checks import undecodable as _undecodable
from archsim.measure.device_file import read_device
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
    device, memory, energy, bursts = read_device(device_file, _read_bytes(device_file))
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
