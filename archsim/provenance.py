"""Where a result comes from: archsim version, model fingerprint, full hardware and workload.

``model_fingerprint`` is what a sweep store keys its points on (``archsim.explore`` calls it
through ``archsim.simulate``): it hashes the code that computes results *and* the energy/area
tables that price them, so a changed table no longer resumes stale points.

Tables carry it too: every Parquet/Arrow file a sweep writes holds :func:`sweep_provenance` as
JSON under the schema-metadata key ``archsim.provenance`` (:func:`read_provenance` reads it back,
``pyarrow.parquet.read_schema(path).metadata`` shows it to any Arrow reader).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

__all__ = [
    "METADATA_KEY",
    "archsim_version",
    "model_fingerprint",
    "provenance",
    "provenance_metadata",
    "read_provenance",
    "source_digest",
    "sweep_provenance",
    "tree_digest",
    "with_provenance",
]

#: the schema-metadata key of the provenance JSON in archsim's Parquet and Arrow files
METADATA_KEY = b"archsim.provenance"

#: what a run's results depend on (``results.json`` and every table say so)
DETERMINISM = "results depend only on (hardware, workload, seed)"

_PACKAGE = Path(__file__).parent

#: parts of the package that present results but never change them
PRESENTATION = (
    "report",
    "validation",
    "cli.py",
    "cli_sweep.py",
    "progress.py",
    "__main__.py",
    "output.py",
    "provenance.py",
)

#: data files that change results: the energy/area tables
_DATA_GLOBS = ("energy/tables/*.yaml",)


@cache
def archsim_version() -> str:
    """Installed package version (``0+unknown`` from a bare checkout); read once per process
    (``importlib.metadata`` scans the installed distributions on every call)."""
    try:
        return version("archsim")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return "0+unknown"


@cache
def model_fingerprint() -> str:
    """16 hex digits over the result-computing code and the energy/area tables. Sweep stores
    key points on it, so a point computed by a changed model or table is never resumed as if
    it were current, even under an unchanged version number."""
    return source_digest(_PACKAGE)


def source_digest(root: Path) -> str:
    """16 hex digits of SHA-256 over the ``*.py`` files under ``root`` that compute results and
    its energy/area tables (``energy/tables/*.yaml``)."""
    digest = hashlib.sha256()
    files = [p for p in root.rglob("*.py") if p.relative_to(root).parts[0] not in PRESENTATION]
    for pattern in _DATA_GLOBS:
        files.extend(root.glob(pattern))
    for path in sorted(set(files)):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def tree_digest(paths: Iterable[Path]) -> str:
    """sha256 of every file under ``paths`` (relative names and bytes, in sorted order): the
    contents of data folders a result was computed from."""
    h = hashlib.sha256()
    for root in sorted(set(paths)):
        files = sorted(root.rglob("*")) if root.is_dir() else [root]
        for f in files:
            if f.is_file():
                h.update(str(f.relative_to(root.parent)).encode() + b"\0")
                h.update(f.read_bytes())
    return h.hexdigest()


def provenance(hardware: Any, workload: Any) -> dict[str, Any]:
    """What a reader needs to reproduce a result: version, fingerprint, the full effective
    hardware config and the full workload spec (JSON-ready)."""
    return {
        "archsim_version": archsim_version(),
        "model_fingerprint": model_fingerprint(),
        "hardware_config": hardware.model_dump(mode="json"),
        "workload_spec": workload.model_dump(mode="json"),
        "workload_origin": workload.origin,
        "deterministic": DETERMINISM,
    }


def sweep_provenance(
    base_hardware: Any,
    workloads: Iterable[Any],
    *,
    spec: Mapping[str, Any],
    spec_source: str,
    axes: Iterable[str],
    determinism: str,
) -> dict[str, Any]:
    """The provenance of a sweep's tables: what :func:`provenance` records for a run, with the
    base hardware (each row's axis columns override its dotted paths) and every workload."""
    wls = list(workloads)
    return {
        "archsim_version": archsim_version(),
        "model_fingerprint": model_fingerprint(),
        "deterministic": determinism,
        "hardware_config": base_hardware.model_dump(mode="json"),
        "hardware_note": "the base hardware; a row's axis columns override these dotted paths",
        "workload_specs": [w.model_dump(mode="json") for w in wls],
        "workload_origins": [w.origin for w in wls],
        "sweep_spec": dict(spec),
        "spec_source": spec_source,
        "axes": list(axes),
    }


def provenance_metadata(record: Mapping[str, Any]) -> dict[bytes, bytes]:
    """Schema metadata holding ``record`` as JSON under :data:`METADATA_KEY`."""
    return {METADATA_KEY: json.dumps(record, sort_keys=True, default=str).encode()}


def with_provenance(table: Any, record: Mapping[str, Any]) -> Any:
    """``table`` (a ``pyarrow.Table``) with ``record`` as JSON under :data:`METADATA_KEY` in its
    schema metadata; the metadata it had (pandas' own) is kept."""
    meta = {**(table.schema.metadata or {}), **provenance_metadata(record)}
    return table.replace_schema_metadata(meta)


def read_provenance(path: str | Path) -> dict[str, Any] | None:
    """The provenance stored in a Parquet (``.parquet``) or Arrow IPC (``.arrow``) file's
    schema metadata, or None when it has none. Reads the schema only."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    path = Path(path)
    if path.suffix == ".arrow":
        with pa.memory_map(str(path)) as source:
            schema = ipc.open_file(source).schema
    else:
        schema = pq.read_schema(path)
    raw = (schema.metadata or {}).get(METADATA_KEY)
    return json.loads(raw) if raw is not None else None
