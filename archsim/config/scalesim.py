"""SCALE-Sim compatibility: read its ``.cfg`` (INI) and topology CSVs, write its compute report.

``read_scalesim_config(path)`` -> a ``systolic`` hardware mapping (``timing_model: scalesim``);
``read_scalesim_topology(path)`` -> a workload mapping (conv form ``name, IFMAP Height, IFMAP
Width, Filter Height, Filter Width, Channels, Num Filter, Strides,`` or GEMM form ``name, M, N,
K,`` recognised by its header; depth-wise ``DP`` layers expand per channel as in SCALE-Sim).
Every malformed input raises ``ConfigError`` naming the file and the line.
"""

from __future__ import annotations

import configparser
import csv
import io
import re
from pathlib import Path
from typing import Any

from archsim.errors import ConfigError
from archsim.limits import check_layer_count

__all__ = [
    "DEFAULT_OFFSETS",
    "scalesim_offsets",
    "load_scalesim",
    "write_compute_report",
    "read_scalesim_config",
    "read_scalesim_topology",
    "COMPUTE_REPORT_COLUMNS",
    "BANDWIDTH_REPORT_COLUMNS",
    "DETAILED_ACCESS_REPORT_COLUMNS",
    "compute_report_rows",
    "bandwidth_report_rows",
    "detailed_access_report_rows",
    "write_scalesim_reports",
]

#: SCALE-Sim 3.0.0's COMPUTE_REPORT.csv header, in order.
COMPUTE_REPORT_COLUMNS = (
    "LayerID",
    "Total Cycles (incl. prefetch)",
    "Total Cycles",
    "Stall Cycles",
    "Overall Util %",
    "Mapping Efficiency %",
    "Compute Util %",
)

#: SCALE-Sim 3.0.0's BANDWIDTH_REPORT.csv header (words per cycle; SRAM over the layer's
#: Total Cycles, DRAM over each operand's own first-to-last DRAM cycle, both ends included).
BANDWIDTH_REPORT_COLUMNS = (
    "LayerID",
    "Avg IFMAP SRAM BW",
    "Avg FILTER SRAM BW",
    "Avg OFMAP SRAM BW",
    "Avg IFMAP DRAM BW",
    "Avg FILTER DRAM BW",
    "Avg OFMAP DRAM BW",
)

#: SCALE-Sim 3.0.0's DETAILED_ACCESS_REPORT.csv header (cycles and words), in order.
DETAILED_ACCESS_REPORT_COLUMNS = ("LayerID",) + tuple(
    f"{mem} {op} {what}"
    for mem, ops in (("SRAM", ("IFMAP", "Filter", "OFMAP")), ("DRAM", ("IFMAP", "Filter", "OFMAP")))
    for op in ops
    for what in ("Start Cycle", "Stop Cycle", "Writes" if op == "OFMAP" else "Reads")
)

#: (operand, extras key of its SRAM words, extras key of its DRAM words), report order
_OPERANDS = (
    ("ifmap", "systolic_ifmap_sram_reads", "systolic_ifmap_dram_reads"),
    ("filter", "systolic_filter_sram_reads", "systolic_filter_dram_reads"),
    ("ofmap", "systolic_ofmap_sram_writes", "systolic_ofmap_dram_writes"),
)

_ARCH = "architecture_presets"
_INT_KEYS = {
    "arrayheight": "ArrayHeight",
    "arraywidth": "ArrayWidth",
    "ifmapsramszkb": "IfmapSramSzkB",
    "filtersramszkb": "FilterSramSzkB",
    "ofmapsramszkb": "OfmapSramSzkB",
}


def _read_text(path: Path) -> str:
    if path.exists() and not path.is_file():  # a FIFO or /dev/zero: the read never ends
        raise ConfigError(str(path), "", "not a regular file; allowed: a SCALE-Sim text file")
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), "", "not UTF-8 text; allowed: a text file") from None


def _line_of(text: str, section: str | None, key: str) -> int:
    """1-based line of ``key`` (in ``section``), or of the section header, or 0."""
    current = None
    header = 0
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        m = re.match(r"\[(.+)\]$", line)
        if m:
            current = m.group(1).strip()
            if current == section:
                header = no
            continue
        name = re.split(r"[:=]", line, maxsplit=1)[0].strip().lower()
        if (section is None or current == section) and name == key.lower():
            return no
    return header


#: largest integer a SCALE-Sim setting may hold (array sides, SRAM kB, bandwidths): beyond it
#: a value is a typing mistake (and 10**400 overflowed the float conversion of Bandwidth)
_MOST = 10**9


def read_scalesim_config(path: str | Path) -> dict[str, Any]:
    """A ``systolic`` hardware mapping from a SCALE-Sim ``.cfg`` (sizes kB -> bytes, 1-byte
    words, USER/CALC interface bandwidth, ``timing_model: scalesim``, 1 GHz, 28 nm)."""
    path = Path(path)
    text = _read_text(path)
    parser = configparser.ConfigParser(interpolation=None)  # a '%' is text, not a reference
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        errors = getattr(exc, "errors", None)
        if errors:  # ParsingError: [(line number, text), ...]
            line, bad = errors[0][0], str(errors[0][1]).strip()
            problem = f"malformed INI line {bad!r}; allowed: [section] headers and 'key: value'"
        else:
            line = getattr(exc, "lineno", 0) or 0
            problem = f"malformed INI: {exc.message.splitlines()[0]}"
        raise ConfigError(str(path), f"line {line}" if line else "", problem) from None

    def get(section: str, key: str, default: str | None = None) -> str:
        if parser.has_option(section, key):
            return parser.get(section, key).strip()
        if default is not None:
            return default
        where = _line_of(text, section, key) or _line_of(text, None, f"[{section}]")
        raise ConfigError(
            str(path),
            f"line {where}" if where else f"[{section}]",
            f"[{section}] {key} is missing; allowed: an integer (see SCALE-Sim's scale.cfg)",
        )

    def integer(section: str, key: str, default: str | None = None, low: int = 1) -> int:
        raw = get(section, key, default)
        try:
            value = int(raw.split(",")[0].strip())
        except ValueError:
            value = None
        if value is None or not low <= value <= _MOST:
            line = _line_of(text, section, key)
            raise ConfigError(
                str(path), f"line {line}",
                f"{key} = {raw[:40]!r}: allowed an integer from {low} to {_MOST:,}",
            )  # fmt: skip
        return value

    if not parser.has_section(_ARCH):
        raise ConfigError(str(path), "line 1", f"section [{_ARCH}] is missing")
    rows = integer(_ARCH, "ArrayHeight")
    cols = integer(_ARCH, "ArrayWidth")
    sizes = {
        k: integer(_ARCH, k) * 1024 for k in ("IfmapSramSzkB", "FilterSramSzkB", "OfmapSramSzkB")
    }
    df = get(_ARCH, "Dataflow").lower()
    if df not in ("os", "ws", "is"):
        line = _line_of(text, _ARCH, "Dataflow")
        raise ConfigError(str(path), f"line {line}", f"Dataflow = {df!r}; allowed: os, ws, is")
    mode = get("run_presets", "InterfaceBandwidth", "CALC").upper()
    if mode not in ("USER", "CALC"):
        line = _line_of(text, "run_presets", "InterfaceBandwidth")
        raise ConfigError(
            str(path), f"line {line}", f"InterfaceBandwidth = {mode!r}; allowed: USER, CALC"
        )
    bw = integer(_ARCH, "Bandwidth", "10")
    ifmap_bw = integer("layout", "IfmapSRAMBankBandwidth", "10")
    filter_bw = integer("layout", "FilterSRAMBankBandwidth", "10")
    name = get("general", "run_name", path.stem)
    return {
        "schema_version": 1,
        "accelerator": "systolic",
        "name": name,
        "description": f"converted from SCALE-Sim config {path.name}",
        "source": f"SCALE-Sim configuration file {path.name}",
        "clock": {"frequency_hz": 1.0e9},
        "technology": {"node_nm": 28},
        "array": {"rows": rows, "cols": cols, "dataflow": df},
        "arithmetic": {"data_bits": 8, "accumulator_bits": 32},
        "ifmap_sram": {"size_bytes": sizes["IfmapSramSzkB"], "width_bits": 8 * rows},
        "filter_sram": {"size_bytes": sizes["FilterSramSzkB"], "width_bits": 8 * cols},
        "ofmap_sram": {"size_bytes": sizes["OfmapSramSzkB"], "width_bits": 8 * cols},
        "dram": {"kind": "lpddr4", "bandwidth_bytes_per_s": float(bw) * 1.0e9},
        "timing_model": "scalesim",
        "scalesim": {
            "interface_bandwidth": mode.lower(),
            "ifmap_words_per_cycle": ifmap_bw,
            "filter_words_per_cycle": filter_bw,
            "ofmap_words_per_cycle": bw,
            "word_bytes": 1,
        },
    }


#: SCALE-Sim's default SRAM trace address offsets (IFMAP, FILTER, OFMAP)
DEFAULT_OFFSETS = (0, 10_000_000, 20_000_000)


def scalesim_offsets(path: str | Path) -> tuple[int, int, int]:
    """The ``[architecture_presets]`` ``IfmapOffset``, ``FilterOffset`` and ``OfmapOffset`` of
    a SCALE-Sim ``.cfg`` (SCALE-Sim's defaults where absent): where the SRAM traces put each
    operand's addresses. Integers from 0 to 10^9."""
    path = Path(path)
    text = _read_text(path)
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text, source=str(path))  # read_scalesim_config has checked the syntax
    out = []
    for key, default in zip(("IfmapOffset", "FilterOffset", "OfmapOffset"), DEFAULT_OFFSETS,
                            strict=True):  # fmt: skip
        raw = parser.get(_ARCH, key, fallback=str(default)).strip()
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if not 0 <= value <= _MOST:
            line = _line_of(text, _ARCH, key)
            raise ConfigError(
                str(path), f"line {line}", f"{key} = {raw[:40]!r}: allowed an integer from 0 to "
                f"{_MOST:,}"
            )  # fmt: skip
        out.append(value)
    return out[0], out[1], out[2]


def _fields(row: list[str]) -> list[str]:
    """Cells of a SCALE-Sim CSV row (it ends rows with a comma; blank trailing cells dropped)."""
    cells = [c.strip() for c in row]
    while cells and cells[-1] == "":
        cells.pop()
    return cells


def read_scalesim_topology(path: str | Path) -> dict[str, Any]:
    """A workload mapping from a SCALE-Sim topology CSV (conv or GEMM ``M, N, K`` form)."""
    path = Path(path)
    text = _read_text(path)
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:  # a cell of more than 131,072 characters, a NUL byte
        raise ConfigError(
            str(path), "", f"not a CSV table ({exc}); allowed: a SCALE-Sim topology CSV"
        ) from None
    if not rows or not _fields(rows[0]):
        raise ConfigError(str(path), "line 1", "empty topology; allowed: a SCALE-Sim CSV header")
    header = _fields(rows[0])
    gemm = len(header) >= 4 and [h.lower() for h in header[1:4]] == ["m", "n", "k"]
    want = 4 if gemm else 8
    if not gemm and len(header) < 8:
        raise ConfigError(
            str(path),
            "line 1",
            "header must be 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
            "Channels, Num Filter, Strides,' (conv) or 'Layer Name, M, N, K,' (GEMM)",
        )
    layers: list[dict[str, Any]] = []
    names: set[str] = set()
    for no, row in enumerate(rows[1:], start=2):
        cells = _fields(row)
        if not cells:
            continue
        if len(cells) < want:
            raise ConfigError(
                str(path),
                f"line {no}",
                f"{len(cells)} fields; allowed: {want} ({', '.join(header[:want])})",
            )
        name = cells[0]
        if not name.isprintable():  # a NUL or control character reached the CSV and HTML
            raise ConfigError(
                str(path), f"line {no}", f"layer name {name!r} has control characters; allowed: "
                "printable text"
            )  # fmt: skip
        values = []
        for col, cell in enumerate(cells[1:want], start=1):
            try:
                v = int(cell)
            except ValueError:
                v = 0
            if v < 1:
                raise ConfigError(
                    str(path), f"line {no}", f"{header[col]} = {cell!r}; allowed: an integer >= 1"
                )
            values.append(v)
        if gemm:
            m, n, k = values
            expanded = [{"name": name, "kind": "gemm", "m": m, "n": n, "k": k, "precision": "int8",
                         "accumulate": "int32"}]  # fmt: skip
        else:
            h, w, r, s, c, kf, stride = values
            if r > h or s > w:
                raise ConfigError(
                    str(path), f"line {no}", f"filter {r}x{s} larger than the {h}x{w} input"
                )
            conv = {
                "kind": "conv", "n": 1, "h": h, "w": w, "r": r, "s": s, "stride": stride,
                "pad": 0, "groups": 1, "weight_density": 1.0, "activation_density": 1.0,
            }  # fmt: skip
            if "DP" in name:  # SCALE-Sim runs a depth-wise layer as one layer per channel
                where = f"{path}: line {no}: depth-wise layer {name!r}, one layer per channel"
                check_layer_count(where, len(layers) + c)
                expanded = [
                    {**conv, "name": f"{name}Channel_{i}", "c": 1, "k": kf} for i in range(c)
                ]
            else:
                expanded = [{**conv, "name": name, "c": c, "k": kf}]
        for lay in expanded:
            if lay["name"] in names:
                raise ConfigError(str(path), f"line {no}", f"duplicate layer name {lay['name']!r}")
            names.add(lay["name"])
            layers.append(lay)
    if not layers:
        raise ConfigError(str(path), "line 2", "no layers; allowed: one row per layer")
    return {
        "schema_version": 1,
        "name": path.stem,
        "source": f"SCALE-Sim topology file {path.name}",
        "layers": layers,
    }


def compute_report_rows(result: Any) -> list[list[Any]]:
    """Rows of SCALE-Sim's COMPUTE_REPORT.csv for a systolic ``RunResult`` (one per layer)."""
    rows = []
    for i, lr in enumerate(result.layers):
        ex = lr.extras
        total = lr.cycles
        overall = ex.get("systolic_total_cycles_incl_prefetch", total)
        pes = result.metadata["hardware_config"]["array"]
        n_pes = pes["rows"] * pes["cols"]
        util = 100.0 * lr.macs_effective / (total * n_pes) if total else 0.0
        compute = ex.get("systolic_compute_cycles", total)
        rows.append([
            i, overall, total, ex.get("systolic_stall_cycles", 0), util,
            100.0 * ex.get("systolic_mapping_efficiency", 0.0),
            100.0 * lr.macs_effective / (compute * n_pes) if compute else 0.0,
        ])  # fmt: skip
    return rows


#: SCALE-Sim v3 settings archsim does not model: (section, key, value SCALE-Sim treats as "off",
#: what archsim does instead)
_UNMODELLED = (
    ("sparsity", "SparsitySupport", "false", "the layers run dense (no N:M / 2:4 sparsity)"),
    ("sparsity", "SparseRep", None, "no sparse representation is modelled"),
    ("sparsity", "OptimizedMapping", "false", "no sparsity-aware mapping is modelled"),
    ("sparsity", "BlockSize", None, "no structured-sparsity blocks are modelled"),
    ("layout", "IfmapCustomLayout", "false", "IFMAP uses the default row-major layout"),
    ("layout", "FilterCustomLayout", "false", "FILTER uses the default layout"),
    ("layout", "IfmapSRAMBankNum", "1", "IFMAP SRAM is modelled as one bank"),
    ("layout", "FilterSRAMBankNum", "1", "FILTER SRAM is modelled as one bank"),
    ("layout", "IfmapSRAMBankPort", None, "SRAM ports are not modelled"),
    ("layout", "FilterSRAMBankPort", None, "SRAM ports are not modelled"),
    (_ARCH, "MemoryBanks", "1", "DRAM is modelled as one bank"),
    ("run_presets", "UseRamulatorTrace", "false",
     "no Ramulator trace is read; DRAM stalls follow the interface bandwidth"),
)  # fmt: skip


def scalesim_unmodelled(cfg: str | Path) -> list[str]:
    """One line per SCALE-Sim v3 setting in ``cfg`` that asks for something archsim does not
    model (sparsity, custom layouts, SRAM/DRAM banks): ``"<file>: line N: <key> = <value> is
    not modelled; <what archsim does>"``. Settings at their "off" value are not reported."""
    path = Path(cfg)
    text = _read_text(path)
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text, source=str(path))  # read_scalesim_config already validated it
    sparse = parser.get("sparsity", "SparsitySupport", fallback="false").strip().lower()
    out = []
    for section, key, off, instead in _UNMODELLED:
        if not parser.has_option(section, key):
            continue
        raw = parser.get(section, key).strip()
        if off is not None and raw.lower() == off:
            continue  # at its "off" value
        if off is None and (section == "layout" or sparse == "false"):
            continue  # ports are always set; sparsity details matter only with sparsity on
        line = _line_of(text, section, key)
        out.append(f"{path}: line {line}: [{section}] {key} = {raw} is not modelled; {instead}")
    return out


def load_scalesim(cfg: str | Path, topology: str | Path) -> tuple[Any, Any]:
    """(SystolicConfig, WorkloadSpec) from a SCALE-Sim ``.cfg`` and topology CSV."""
    from pydantic import ValidationError

    from archsim.config.io import hardware_from_dict
    from archsim.config.messages import validation_to_config_error
    from archsim.config.workload import WorkloadSpec

    hw = hardware_from_dict(read_scalesim_config(cfg), str(cfg))
    try:
        wl = WorkloadSpec.model_validate(read_scalesim_topology(topology))
    except ValidationError as exc:
        raise validation_to_config_error(exc, str(topology), WorkloadSpec) from None
    return hw, wl.bind(Path(topology).parent, str(topology))


def _scalesim_extras(result: Any) -> list[dict[str, Any]]:
    """Each layer's extras; refused unless the run used SCALE-Sim's timing model."""
    if not _has_access_cycles(result):
        raise ConfigError(
            "<api>", "timing_model", "SCALE-Sim's bandwidth and access reports need the "
            "scalesim timing model; allowed: a systolic run with timing_model: scalesim"
        )  # fmt: skip
    return [lr.extras for lr in result.layers]


def _has_access_cycles(result: Any) -> bool:
    return all("systolic_ofmap_dram_stop" in lr.extras for lr in result.layers)


def _sram_words(result: Any, ex: dict[str, Any]) -> list[int]:
    """SRAM words per operand as SCALE-Sim 3.0.0 reports them. Its output-stationary compute
    adds ``rows + cols`` OFMAP writes per fold (``systolic_compute_os.py`` sums the padded
    fold's shape with ``+`` where the line before uses ``*``); reproduced here so that the
    files compare equal. The results' own ``ofmap_sram`` count is the true one (M x N)."""
    words = [ex[s] for _, s, _ in _OPERANDS]
    array = result.metadata["hardware_config"]["array"]
    if array["dataflow"] == "os":
        words[2] += ex["systolic_folds"] * (array["rows"] + array["cols"])
    return words


def bandwidth_report_rows(result: Any) -> list[list[Any]]:
    """Rows of SCALE-Sim's BANDWIDTH_REPORT.csv (words per cycle, one row per layer)."""
    rows = []
    for i, (lr, ex) in enumerate(zip(result.layers, _scalesim_extras(result), strict=True)):
        sram = [w / lr.cycles if lr.cycles else 0.0 for w in _sram_words(result, ex)]
        dram = [
            ex[d] / (ex[f"systolic_{op}_dram_stop"] - ex[f"systolic_{op}_dram_start"] + 1)
            for op, _, d in _OPERANDS
        ]
        rows.append([i, *sram, *dram])
    return rows


def detailed_access_report_rows(result: Any) -> list[list[Any]]:
    """Rows of SCALE-Sim's DETAILED_ACCESS_REPORT.csv: per operand, SRAM then DRAM, the first
    and last cycle it is accessed and its words (-1: never accessed)."""
    rows = []
    for i, ex in enumerate(_scalesim_extras(result)):
        row: list[Any] = [i]
        sram = _sram_words(result, ex)
        for mem in ("sram", "dram"):
            for j, (op, _, dram_key) in enumerate(_OPERANDS):
                row += [ex[f"systolic_{op}_{mem}_start"], ex[f"systolic_{op}_{mem}_stop"]]
                row.append(sram[j] if mem == "sram" else ex[dram_key])
        rows.append(row)
    return rows


def _write_report(path: Path, columns: tuple[str, ...], rows: list[list[Any]]) -> Path:
    """SCALE-Sim's CSV layout: ``", "``-separated cells, a trailing comma on every line."""
    lines = [", ".join(columns) + ","]
    lines += [", ".join(str(x) for x in row) + "," for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_compute_report(result: Any, path: str | Path) -> Path:
    """Write SCALE-Sim's COMPUTE_REPORT.csv layout (its header, one row per layer)."""
    return _write_report(Path(path), COMPUTE_REPORT_COLUMNS, compute_report_rows(result))


def write_scalesim_reports(result: Any, folder: str | Path) -> list[str]:
    """Write SCALE-Sim's COMPUTE_REPORT, BANDWIDTH_REPORT and DETAILED_ACCESS_REPORT CSVs of a
    systolic run into ``folder`` (the last two only under the scalesim timing model, which
    tracks the access cycles); returns the file names written."""
    folder = Path(folder)
    reports = (
        ("COMPUTE_REPORT.csv", COMPUTE_REPORT_COLUMNS, compute_report_rows),
        ("BANDWIDTH_REPORT.csv", BANDWIDTH_REPORT_COLUMNS, bandwidth_report_rows),
        ("DETAILED_ACCESS_REPORT.csv", DETAILED_ACCESS_REPORT_COLUMNS, detailed_access_report_rows),
    )
    if not _has_access_cycles(result):
        reports = reports[:1]
    for name, columns, rows in reports:
        _write_report(folder / name, columns, rows(result))
    return [name for name, _, _ in reports]
