"""Loading and validation of the 45 nm energy/area tables shipped as package data.

Three YAML files live in ``archsim/energy/tables``:

* ``horowitz_45nm.yaml``  -- per-operation energies (pJ) from Horowitz, EIE and Dally.
* ``cacti_45nm_sram.yaml`` -- CACTI 7 SRAM energy (pJ/access) and area (mm^2) vs capacity.
* ``node_scaling.yaml``   -- energy/area factors from 45 nm to other nodes.

Every file has ``schema_version: 1`` and a ``source:`` citation; every number carries its own
``source``. Any malformed table raises ``ValueError`` naming the file and the offending key.
"""

from __future__ import annotations

import functools
import importlib.resources
import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:  # importlib.resources.abc is Python 3.11+
    from importlib.resources.abc import Traversable

SCHEMA_VERSION = 1
HOROWITZ_FILE = "horowitz_45nm.yaml"
CACTI_FILE = "cacti_45nm_sram.yaml"
SCALING_FILE = "node_scaling.yaml"

_REQUIRED_BITS = {
    "int_add_pj": (8, 32),
    "int_mult_pj": (8, 32),
    "fp_add_pj": (16, 32),
    "fp_mult_pj": (16, 32),
}
_REQUIRED_SRAM_CAPACITIES = (8192, 32768, 1048576)
_REQUIRED_NAMED = {
    "dram_access_64b_pj": ("min", "max"),
    "eie_pj": (
        "int_mult_16b",
        "int_mult_8b",
        "register_file_32b",
        "sram_32kb_read_32b",
        "dram_read_32b",
    ),
    "gpu_pj": (
        "hfma",
        "hdp4a",
        "hmma",
        "imma",
        "instruction_overhead",
        "l1_32b",
        "llc_32b",
        "dram_32b",
    ),
    "dram_pj_per_bit": ("lpddr4", "hbm2", "hbm3"),
}
_SRAM_FIELDS = ("read_64b_pj", "write_64b_pj", "area_mm2", "read_256b_pj")


@dataclass(frozen=True)
class SramRow:
    """One CACTI 7 row at 45 nm: energies in pJ per access, area in mm^2."""

    capacity_bytes: int
    read_64b_pj: float
    write_64b_pj: float
    area_mm2: float
    read_256b_pj: float


@dataclass(frozen=True)
class NodeFactors:
    """Multiplicative energy and area factors from the 45 nm reference to ``node_nm``."""

    node_nm: int
    energy: float
    area: float


@dataclass(frozen=True)
class EnergyTables:
    """Parsed, validated, read-only energy/area tables (all values at 45 nm).

    Bit-keyed maps give pJ per operation by operand width; ``sram_read_64b_pj`` is Horowitz's
    64-bit SRAM read energy keyed by capacity in bytes; ``sram_rows`` is the CACTI table sorted
    by capacity; ``node_factors`` is keyed by node in nm; ``sources`` maps each dotted key
    (e.g. ``"horowitz_45nm.yaml:int_mult_pj.8"``) to its citation.
    """

    node_nm: int
    int_add_pj: Mapping[int, float]
    int_mult_pj: Mapping[int, float]
    fp_add_pj: Mapping[int, float]
    fp_mult_pj: Mapping[int, float]
    sram_read_64b_pj: Mapping[int, float]
    dram_access_64b_pj: Mapping[str, float]
    eie_pj: Mapping[str, float]
    gpu_pj: Mapping[str, float]
    dram_pj_per_bit: Mapping[str, float]
    sram_rows: tuple[SramRow, ...]
    reference_node_nm: int
    node_factors: Mapping[int, NodeFactors]
    sources: Mapping[str, str]


def _fail(file: str, key: str, msg: str) -> ValueError:
    return ValueError(f"{file}: key '{key}': {msg}")


def _require(data: Any, key: str, file: str, path: str = "") -> Any:
    full = f"{path}.{key}" if path else key
    if not isinstance(data, Mapping):
        raise _fail(file, path or "<top level>", "expected a mapping")
    if key not in data:
        raise _fail(file, full, "required key is missing")
    return data[key]


def _number(value: Any, file: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(file, key, f"expected a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise _fail(file, key, f"expected a positive finite number, got {value!r}")
    return float(value)


def _source(data: Any, file: str, path: str, sources: dict[str, str]) -> None:
    src = _require(data, "source", file, path)
    full = f"{path}.source" if path else "source"
    if not isinstance(src, str) or not src.strip():
        raise _fail(file, full, "expected a non-empty citation string")
    sources[f"{file}:{path}" if path else file] = src.strip()


def _entry(data: Any, key: Any, file: str, path: str, sources: dict[str, str]) -> float:
    """Parse ``{value, source}`` at ``data[key]``."""
    node = _require(data, key, file, path)
    full = f"{path}.{key}"
    _source(node, file, full, sources)
    return _number(_require(node, "value", file, full), file, f"{full}.value")


def _keyed(
    data: Mapping[str, Any],
    name: str,
    required: tuple[Any, ...],
    file: str,
    sources: dict[str, str],
) -> Mapping[Any, float]:
    table = _require(data, name, file)
    for key in required:
        _require(table, key, file, name)
    return MappingProxyType({k: _entry(table, k, file, name, sources) for k in table})


def _read_yaml(root: Path | Traversable, file: str, sources: dict[str, str]) -> Mapping[str, Any]:
    try:
        text = (root / file).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{file}: cannot read table: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{file}: invalid YAML: {exc}") from exc
    if not isinstance(data, Mapping):
        raise _fail(file, "<top level>", "expected a mapping")
    version = _require(data, "schema_version", file)
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise _fail(file, "schema_version", f"expected {SCHEMA_VERSION}, got {version!r}")
    _source(data, file, "", sources)
    return data


def _node_key(data: Mapping[str, Any], key: str, file: str, path: str = "") -> int:
    value = _require(data, key, file, path)
    full = f"{path}.{key}" if path else key
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _fail(file, full, f"expected a positive integer (nm), got {value!r}")
    return value


def _parse_cacti(data: Mapping[str, Any], sources: dict[str, str]) -> tuple[SramRow, ...]:
    rows = _require(data, "rows", CACTI_FILE)
    if not isinstance(rows, list) or len(rows) < 2:
        raise _fail(CACTI_FILE, "rows", "expected a list of at least 2 rows")
    parsed: list[SramRow] = []
    for i, row in enumerate(rows):
        path = f"rows[{i}]"
        _source(row, CACTI_FILE, path, sources)
        cap = _node_key(row, "capacity_bytes", CACTI_FILE, path)
        vals = [
            _number(_require(row, f, CACTI_FILE, path), CACTI_FILE, f"{path}.{f}")
            for f in _SRAM_FIELDS
        ]
        parsed.append(SramRow(cap, *vals))
    caps = [r.capacity_bytes for r in parsed]
    if any(b <= a for a, b in pairwise(caps)):
        raise _fail(CACTI_FILE, "rows", "capacity_bytes must be strictly increasing")
    return tuple(parsed)


def _parse_scaling(
    data: Mapping[str, Any], sources: dict[str, str]
) -> tuple[int, Mapping[int, NodeFactors]]:
    ref = _node_key(data, "reference_node_nm", SCALING_FILE)
    nodes = _require(data, "nodes", SCALING_FILE)
    if not isinstance(nodes, list) or not nodes:
        raise _fail(SCALING_FILE, "nodes", "expected a non-empty list")
    factors: dict[int, NodeFactors] = {}
    for i, item in enumerate(nodes):
        path = f"nodes[{i}]"
        _source(item, SCALING_FILE, path, sources)
        nm = _node_key(item, "node_nm", SCALING_FILE, path)
        if nm in factors:
            raise _fail(SCALING_FILE, f"{path}.node_nm", f"duplicate node {nm}")
        energy, area = (
            _number(_require(item, f, SCALING_FILE, path), SCALING_FILE, f"{path}.{f}")
            for f in ("energy", "area")
        )
        factors[nm] = NodeFactors(nm, energy, area)
    if ref not in factors or (factors[ref].energy, factors[ref].area) != (1.0, 1.0):
        raise _fail(SCALING_FILE, "nodes", f"reference node {ref} must be listed with 1.0/1.0")
    return ref, MappingProxyType(dict(sorted(factors.items(), reverse=True)))


def _load(root: Path | Traversable) -> EnergyTables:
    sources: dict[str, str] = {}
    hz = _read_yaml(root, HOROWITZ_FILE, sources)
    node = _node_key(hz, "node_nm", HOROWITZ_FILE)
    if node != 45:
        raise _fail(HOROWITZ_FILE, "node_nm", f"expected 45, got {node}")
    bits = {k: _keyed(hz, k, req, HOROWITZ_FILE, sources) for k, req in _REQUIRED_BITS.items()}
    named = {k: _keyed(hz, k, req, HOROWITZ_FILE, sources) for k, req in _REQUIRED_NAMED.items()}
    sram = _keyed(hz, "sram_read_64b_pj", _REQUIRED_SRAM_CAPACITIES, HOROWITZ_FILE, sources)

    cacti = _read_yaml(root, CACTI_FILE, sources)
    if _node_key(cacti, "node_nm", CACTI_FILE) != 45:
        raise _fail(CACTI_FILE, "node_nm", "expected 45")
    rows = _parse_cacti(cacti, sources)

    ref, factors = _parse_scaling(_read_yaml(root, SCALING_FILE, sources), sources)
    return EnergyTables(
        node_nm=node,
        sram_read_64b_pj=sram,
        sram_rows=rows,
        reference_node_nm=ref,
        node_factors=factors,
        sources=MappingProxyType(sources),
        **bits,
        **named,
    )


@functools.lru_cache(maxsize=1)
def _default_tables() -> EnergyTables:
    return _load(importlib.resources.files("archsim.energy") / "tables")


def load_tables(directory: Path | None = None) -> EnergyTables:
    """Load the energy tables; ``None`` means the packaged defaults (cached, read-only)."""
    if directory is None:
        return _default_tables()
    return _load(Path(directory))
