"""Where a result comes from: archsim version, model fingerprint, full hardware and workload.

``model_fingerprint`` is what a sweep store keys its points on (``archsim.explore`` calls it
through ``archsim.simulate``): it hashes the code that computes results *and* the energy/area
tables that price them, so a changed table no longer resumes stale points.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

__all__ = ["archsim_version", "model_fingerprint", "source_digest", "provenance"]

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


def provenance(hardware: Any, workload: Any) -> dict[str, Any]:
    """What a reader needs to reproduce a result: version, fingerprint, the full effective
    hardware config and the full workload spec (JSON-ready)."""
    return {
        "archsim_version": archsim_version(),
        "model_fingerprint": model_fingerprint(),
        "hardware_config": hardware.model_dump(mode="json"),
        "workload_spec": workload.model_dump(mode="json"),
        "workload_origin": workload.origin,
    }
