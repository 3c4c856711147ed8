"""Durable, resumable sweep results: part files in ``DIR/store/``, compacted into Parquet.

Each finished chunk of points is one small Arrow IPC file (``part-*.arrow``), written under a
temporary name and ``os.replace``d into place, so a killed sweep leaves only complete files
behind and loses no finished point (an interrupted write deletes its temporary file). Rows
carry ``point_key`` (hash of hardware, workload, seed and archsim version); a re-run reads the
keys already present and runs only the others. When a sweep completes, the parts are compacted
into ``store/compacted.parquet``. Parts and the compacted file carry the sweep's provenance in
their schema metadata (``archsim.provenance.read_provenance``).

Why two formats: the parent process writes a part per chunk while the workers compute, and on
a small machine it shares their cores. An uncompressed IPC part of a typical chunk (72 rows x
51 columns) is written in 0.3 ms and read back in 0.14 ms, against 1.2 ms and 1.7 ms for the
same part as Parquet. The result that stays is Parquet (via pyarrow): columnar, typed,
compressed, and read by pandas, polars, DuckDB and Spark alike. Parquet parts written by
earlier versions are still read.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from archsim.errors import ArchsimError, one_line, os_reason
from archsim.output import replace_after_writing
from archsim.provenance import provenance_metadata

__all__ = ["SweepStore", "records_to_table", "merge_tables"]

_COMPACTED = "compacted.parquet"


def records_to_table(records: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Flatten worker records (point fields + layer rows) into one row per point and layer.

    A point without layer rows (an error) is one row with its point fields only.
    """
    rows: list[dict[str, Any]] = []
    for rec in records:
        point = {k: v for k, v in rec.items() if k != "rows"}
        layers = rec.get("rows") or [{}]
        rows.extend({**point, **layer} for layer in layers)
    return pa.Table.from_pylist(rows)


def merge_tables(tables: list[pa.Table], where: str | Path = "sweep store") -> pa.Table | None:
    """Concatenate tables (later tables win for a repeated ``point_key``); None when empty.
    Tables that do not fit together (a store edited or damaged between runs: no
    ``point_key``, a column of another type) are an ``ArchsimError`` naming ``where``."""
    try:
        return _merge(tables)
    except (KeyError, pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ArchsimError(_damaged(where, exc)) from None


def _damaged(where: str | Path, exc: BaseException) -> str:
    problem = one_line(exc, 160)
    return (
        f"{where}: the stored tables do not fit together ({type(exc).__name__}: {problem}); "
        "allowed: a store written by `archsim sweep` (delete the folder's store/, or write to "
        "another -o, to start over)"
    )


def _merge(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return None
    tagged = [
        t.append_column("_part", pa.array([i] * t.num_rows, pa.int64()))
        for i, t in enumerate(tables)
    ]
    merged = pa.concat_tables(tagged, promote_options="permissive")
    keys = merged.column("point_key").to_pylist()
    parts = merged.column("_part").to_pylist()
    latest: dict[str, int] = {}
    for k, p in zip(keys, parts, strict=True):
        latest[k] = max(p, latest.get(k, -1))
    keep = pa.array([latest[k] == p for k, p in zip(keys, parts, strict=True)])
    return merged.filter(keep).drop_columns(["_part"])


class SweepStore:
    """The result store of one sweep folder."""

    def __init__(self, folder: str | Path, provenance: Mapping[str, Any] | None = None) -> None:
        """``provenance``: stored in every file's schema metadata (``sweep_provenance``)."""
        self.folder = Path(folder)
        # encoded once, not per part
        self._meta = provenance_metadata(provenance) if provenance is not None else None
        self.parts = self.folder / "store"
        try:
            self.parts.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchsimError(
                f"{self.folder}: cannot create the sweep folder: {os_reason(exc)}; allowed: a new "
                "or existing folder in a writable place"
            ) from None

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the folder for one sweep; another sweep into it fails at once (the lock goes
        with the process, so a killed sweep leaves none behind)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            yield
            return
        with open(self.parts / ".lock", "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise ArchsimError(
                    f"{self.folder}: another sweep is writing into this folder; allowed: wait "
                    "for it to finish, or another -o folder"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _files(self) -> list[Path]:
        compacted = self.parts / _COMPACTED
        parts = sorted(
            [*self.parts.glob("part-*.arrow"), *self.parts.glob("part-*.parquet")],
            key=lambda f: f.name,  # part-<time_ns>-...: oldest first, whatever the format
        )
        return ([compacted] if compacted.is_file() else []) + parts

    @staticmethod
    def _read(f: Path) -> pa.Table:
        try:
            if f.suffix == ".arrow":
                with pa.memory_map(str(f)) as source:
                    return ipc.open_file(source).read_all()
            return pq.read_table(f)
        except (OSError, pa.ArrowInvalid) as exc:
            raise ArchsimError(
                f"{f}: unreadable sweep store file ({one_line(exc, 200)}); allowed: a file "
                "`archsim sweep` wrote (delete this one to run its points again)"
            ) from None

    def empty(self) -> bool:
        """Whether no point is stored yet (nothing read)."""
        return not self._files()

    def tables(self) -> list[pa.Table]:
        """Every stored table, oldest first (the compacted file, then parts by time)."""
        return [self._read(f) for f in self._files()]

    def finished(self, retry_errors: bool = False) -> set[str]:
        """Keys of the points already in the store (errors too, unless ``retry_errors``)."""
        merged = merge_tables(self.tables(), self.parts)
        if merged is None:
            return set()
        try:
            keys = merged.column("point_key").to_pylist()
            status = merged.column("status").to_pylist()
        except KeyError as exc:
            raise ArchsimError(_damaged(self.parts, exc)) from None
        return {k for k, s in zip(keys, status, strict=True) if s == "ok" or not retry_errors}

    def append(self, table: pa.Table) -> Path:
        """Write one part file atomically (temporary name, then ``os.replace``; a Ctrl-C
        meanwhile leaves no temporary file)."""
        name = f"part-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.arrow"
        table = self._stamp(table)

        def write(tmp: Path) -> None:
            with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)

        return _written(self.parts / name, write)

    def _stamp(self, table: pa.Table) -> pa.Table:
        """``table`` with this sweep's provenance in its schema metadata (if it has one)."""
        if self._meta is None:
            return table
        return table.replace_schema_metadata({**(table.schema.metadata or {}), **self._meta})

    def compact(self) -> list[pa.Table]:
        """Merge every part into ``compacted.parquet``, delete the parts it now holds, and
        return the stored tables (as ``tables()`` would, without reading them again)."""
        files = self._files()
        tables = [self._read(f) for f in files]
        if files == [self.parts / _COMPACTED]:
            return tables
        merged = merge_tables(tables, self.parts)
        if merged is None:
            return []
        merged = self._stamp(merged)
        _written(self.parts / _COMPACTED, lambda tmp: pq.write_table(merged, tmp))
        for f in files:
            if f.name != _COMPACTED:
                f.unlink(missing_ok=True)
        for stale in self.parts.glob(".part-*.tmp"):  # left by a writer that was killed
            stale.unlink(missing_ok=True)
        return [merged]

    def write_json(self, name: str, payload: Mapping[str, Any]) -> Path:
        """Write ``DIR/name`` atomically."""
        text = json.dumps(payload, indent=1, default=str)
        return _written(self.folder / name, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _written(target: Path, write: Callable[[Path], Any]) -> Path:
    """:func:`replace_after_writing`, a failed write (a full disk, a file-size limit; pyarrow
    names no file) as a one-line error naming the file."""
    try:
        return replace_after_writing(target, write)
    except OSError as exc:
        raise ArchsimError(
            f"{target}: cannot write the sweep's results: {os_reason(exc)}; allowed: a "
            "writable folder with room for them"
        ) from None
