"""LayerResult and RunResult: frozen, tabular (to_dataframe) and JSON round-trippable."""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from archsim.errors import (
    ArchsimError,
    ConfigError,
    UnknownNameError,
    os_reason,
    shown_name,
    shown_value,
)
from archsim.json_keys import RepeatedKey, loads_unique_keys

if TYPE_CHECKING:  # pandas loads with the first DataFrame, not with `import archsim`
    import pandas as pd

__all__ = [
    "LayerResult",
    "RunResult",
    "BASE_COLUMNS",
    "RESULTS_FORMAT_VERSION",
    "is_count",
    "json_text",
    "read_results_json",
]

RESULTS_FORMAT_VERSION = 1

#: Columns every accelerator's ``to_dataframe()`` has, in this order.
BASE_COLUMNS = (
    "layer",
    "kind",
    "cycles",
    "time_s",
    "macs_dense",
    "macs_effective",
    "utilization",
    "energy_pj",
    "power_w",
    "dram_bytes",
)


@dataclass(frozen=True)
class LayerResult:
    """One layer: timing, work, energy by component and accelerator-specific extras."""

    layer: str
    kind: str
    cycles: int
    time_s: float
    macs_dense: int
    macs_effective: int
    utilization: float
    energy_pj: float
    power_w: float
    dram_bytes: int
    start_cycle: int
    end_cycle: int
    energy_by_component_pj: dict[str, float]
    counts: dict[str, dict[str, int]]
    extras: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """Flat dict: base columns, ``energy_<component>_pj`` and extras."""
        out: dict[str, Any] = {c: getattr(self, c) for c in BASE_COLUMNS}
        out["start_cycle"] = self.start_cycle
        out["end_cycle"] = self.end_cycle
        for comp, pj in self.energy_by_component_pj.items():
            out[f"energy_{comp}_pj"] = pj
        out.update(self.extras)
        return out


@dataclass(frozen=True)
class RunResult:
    """Result of ``archsim.simulate``: the same type for every accelerator."""

    accelerator: str
    hardware: str
    workload: str
    seed: int
    clock_hz: float
    total_cycles: int
    layers: tuple[LayerResult, ...]
    area_mm2: dict[str, float]
    metadata: dict[str, Any]
    warnings: tuple[str, ...] = ()

    @property
    def total_time_s(self) -> float:
        """Makespan of the run in seconds (exposed I/O included)."""
        return self.total_cycles / self.clock_hz

    @property
    def total_energy_pj(self) -> float:
        """Sum of the layers' energy."""
        return math.fsum(layer.energy_pj for layer in self.layers)

    @property
    def total_area_mm2(self) -> float:
        """Sum of modelled component areas."""
        return math.fsum(self.area_mm2.values())

    @property
    def energy_by_component_pj(self) -> dict[str, float]:
        """Energy per component summed over layers."""
        out: dict[str, float] = {}
        for layer in self.layers:
            for comp, pj in layer.energy_by_component_pj.items():
                out[comp] = out.get(comp, 0.0) + pj
        return out

    def layer(self, name: str) -> LayerResult:
        """The result of the layer called ``name``."""
        for lr in self.layers:
            if lr.layer == name:
                return lr
        names = [lr.layer for lr in self.layers]
        shown = ", ".join(names[:20]) + (f", ... ({len(names)} layers)" if len(names) > 20 else "")
        raise UnknownNameError(f"no layer {name!r} in this result; available: {shown}")

    def to_dataframe(self) -> pd.DataFrame:
        """One row per layer (see ``BASE_COLUMNS``), plus energy and accelerator columns."""
        import pandas as pd

        return pd.DataFrame([lr.row() for lr in self.layers])

    def to_csv(self, path: str | Path) -> Path:
        """Write ``to_dataframe()`` as CSV (the same bytes as pandas' ``to_csv(index=False)``,
        without importing pandas), atomically; returns the path."""
        target = _results_path(path, "to_csv", "a file path")
        return _write_results(target, self.csv_text(), "to_csv")

    def csv_text(self) -> str:
        """The text :meth:`to_csv` writes."""
        from archsim.csv_rows import rows_to_csv

        return rows_to_csv(lr.row() for lr in self.layers)

    def summary(self) -> dict[str, Any]:
        """Totals of the run."""
        t = self.total_time_s
        macs = sum(lr.macs_effective for lr in self.layers)
        dense = sum(lr.macs_dense for lr in self.layers)
        return {
            "accelerator": self.accelerator,
            "hardware": self.hardware,
            "workload": self.workload,
            "seed": self.seed,
            "layers": len(self.layers),
            "total_cycles": self.total_cycles,
            "total_time_s": t,
            "total_energy_pj": self.total_energy_pj,
            "average_power_w": (self.total_energy_pj * 1e-12 / t) if t > 0 else 0.0,
            "effective_gops": (2 * macs / t / 1e9) if t > 0 else 0.0,
            # the layers' dense-equivalent work (zeros and all) per second
            "dense_gops": (2 * dense / t / 1e9) if t > 0 else 0.0,
            "total_area_mm2": self.total_area_mm2,
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"RunResult({self.hardware!r} on {self.workload!r}, seed {self.seed}: "
            f"{len(self.layers)} layers, {s['total_cycles']:,} cycles, "
            f"{s['total_time_s'] * 1e6:.3g} us, {s['total_energy_pj'] * 1e-6:.4g} uJ)"
        )

    def _repr_html_(self, max_layers: int = 20) -> str:
        """Compact notebook view: totals and the first ``max_layers`` layers (times in us,
        energy in uJ); the full table is ``to_dataframe()``."""
        s = self.summary()
        area = (
            f"{s['total_area_mm2']:.3g} mm² (priced components)"
            if s["total_area_mm2"] > 0
            else "not modelled"
        )
        head = (
            f"<b>{html.escape(self.hardware)}</b> on <b>{html.escape(self.workload)}</b>, "
            f"seed {self.seed}: {s['total_cycles']:,} cycles, "
            f"{s['total_time_s'] * 1e6:.4g} µs, {s['total_energy_pj'] * 1e-6:.4g} µJ, "
            f"{s['average_power_w'] * 1e3:.4g} mW, area {area}"
        )
        rows = "".join(
            f"<tr><td>{html.escape(lr.layer)}</td><td>{lr.kind}</td>"
            f"<td style='text-align:right'>{lr.cycles:,}</td>"
            f"<td style='text-align:right'>{lr.time_s * 1e6:.4g}</td>"
            f"<td style='text-align:right'>{lr.utilization * 100:.1f}</td>"
            f"<td style='text-align:right'>{lr.energy_pj * 1e-6:.4g}</td></tr>"
            for lr in self.layers[:max_layers]
        )
        more = len(self.layers) - max_layers
        tail = f"<p>... {more} more layers: <code>.to_dataframe()</code></p>" if more > 0 else ""
        return (
            f"<div><p>{head}</p><table><thead><tr><th>layer</th><th>kind</th><th>cycles</th>"
            f"<th>time µs</th><th>util %</th><th>energy µJ</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{tail}</div>"
        )

    def to_json(self, path: str | Path | None = None) -> str:
        """Serialise (and write to ``path`` when given, atomically)."""
        target = None if path is None else _results_path(path, "to_json", "a file path or None")
        payload = {"format_version": RESULTS_FORMAT_VERSION, **asdict(self)}
        text = json_text(payload)
        if target is not None:
            _write_results(target, text, "to_json")
        return text

    @classmethod
    def from_json(cls, text_or_path: str | os.PathLike[str]) -> RunResult:
        """Inverse of :meth:`to_json`: JSON text (a string whose first non-blank character is
        ``{``) or the path of a results.json; raises ``ArchsimError`` on bad input."""
        if isinstance(text_or_path, str) and text_or_path.lstrip()[:1] == "{":
            return cls.from_data(_json_object(text_or_path, "<string>"), "<string>")
        if not isinstance(text_or_path, str | os.PathLike) or not isinstance(
            os.fspath(text_or_path), str
        ):
            raise ConfigError(
                "<api>", "from_json", f"got {type(text_or_path).__name__}; allowed: JSON text or "
                "a results.json path (RunResult.from_data takes a parsed object)"
            )  # fmt: skip
        return cls.from_data(read_results_json(text_or_path), shown_name(str(text_or_path)))

    @classmethod
    def from_data(cls, data: Mapping[str, Any], source: str) -> RunResult:
        """:meth:`from_json` of the parsed JSON object ``data`` (read from ``source``)."""
        if not isinstance(data, Mapping):
            raise ConfigError(
                "<api>", "from_data", f"got {type(data).__name__}; allowed: the parsed "
                "results.json object, a dict (RunResult.from_json takes JSON text or a path)"
            )  # fmt: skip
        try:
            data = dict(data)
            if data.pop("format_version", None) != RESULTS_FORMAT_VERSION:
                raise ValueError(f"format_version must be {RESULTS_FORMAT_VERSION}")
            _check_number_types(data)
            run = _RUN_ADAPTER.validate_python(data, strict=False)
            if not (math.isfinite(run.clock_hz) and run.clock_hz > 0):
                raise ValueError(f"clock_hz {run.clock_hz!r}; allowed: a positive number")
            _check_counts(run)
            _check_names(run)
            _check_layers(run)
            _check_extras(run)
            return _nan_restored(run)
        except RecursionError:
            raise ArchsimError(f"{source}: malformed results.json: nested too deeply") from None
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            raise ArchsimError(
                f"{source}: malformed results.json: {where}: {err.get('msg')}"
            ) from None
        except ValueError as exc:
            raise ArchsimError(f"{source}: malformed results.json: {exc}") from None


def _results_path(path: object, api: str, allowed: str) -> Path:
    """``path`` of ``to_csv`` / ``to_json`` as a ``Path``; refused unless a str or PathLike."""
    if not isinstance(path, str | os.PathLike) or not isinstance(os.fspath(path), str):
        raise ConfigError("<api>", api, f"got {type(path).__name__}; allowed: {allowed}")
    return Path(path)


def _write_results(target: Path, text: str, api: str) -> Path:
    """Write ``text`` to ``target`` atomically (a temporary file renamed over it); an
    unwritable path is a one-line ``ConfigError`` naming it."""
    from archsim.output import check_out_file, write_text_atomically

    where, shown = f"<api>: {api}", shown_name(str(target))
    if target.is_symlink():  # write through the link, as a plain write did (not replace it)
        target = target.resolve()
    allowed = "allowed: a file path in a writable folder"
    try:
        check_out_file(target, where, probe=False)  # a folder, a device, a file as a folder
        if not target.absolute().parent.is_dir():  # to_json wrote into existing folders only
            raise ConfigError(
                where, shown, f"cannot write results: no folder {target.parent}; {allowed}"
            )
        return write_text_atomically(target, text, where)
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
        raise ConfigError(where, shown, f"cannot write results: {reason}; {allowed}") from None


def _nan_restored(run: RunResult) -> RunResult:
    """``run`` with NaN back in its numeric extra columns: JSON has no NaN, so ``to_json``
    writes one as null (a GPU layer too large for its functional check has NaN there)."""
    from archsim.result_columns import describe

    def number(column: str) -> bool:
        kind = describe(column)
        return kind is not None and kind[0] == "number"

    layers = tuple(
        replace(
            lr, extras={k: math.nan if v is None and number(k) else v for k, v in lr.extras.items()}
        )  # fmt: skip
        for lr in run.layers
    )
    return replace(run, layers=layers)


def read_results_json(path: str | Path) -> dict[str, Any]:
    """The JSON object in the results file ``path`` (of ``archsim run``, ``collective`` or
    ``train``); raises ``ArchsimError`` when it cannot be read or is not one."""
    source = shown_name(str(path))
    path = Path(path)
    try:
        if path.exists() and not path.is_file():  # a FIFO would block the read
            raise ArchsimError(f"{source}: not a regular file; allowed: a results.json")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ArchsimError(f"{source}: cannot read results: {os_reason(exc)}") from None
    except UnicodeDecodeError:
        raise ArchsimError(
            f"{source}: malformed results.json: not UTF-8 text; allowed: the UTF-8 JSON "
            "archsim writes"
        ) from None
    except ValueError as exc:  # a NUL character in the path
        raise ArchsimError(f"{source}: cannot read results: {exc}") from None
    return _json_object(text, source)


def _json_object(text: str, source: str) -> dict[str, Any]:
    try:
        data = loads_unique_keys(text)
    except RepeatedKey as exc:
        raise ArchsimError(
            f"{source}: malformed results.json: {exc.path}: key given twice in one object; "
            "allowed: each key once"
        ) from None
    except RecursionError:
        raise ArchsimError(f"{source}: malformed results.json: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ArchsimError(f"{source}: malformed results.json: {exc}") from None
    except ValueError:  # Python reads no integer longer than 4,300 digits
        raise ArchsimError(
            f"{source}: malformed results.json: a number of more than 4,300 digits; allowed: "
            "the values archsim writes"
        ) from None
    if not isinstance(data, dict):
        raise ArchsimError(f"{source}: malformed results.json: top level must be an object")
    return data


#: the run's and each layer's number fields (JSON numbers, never text or true/false)
_RUN_NUMBERS = ("total_cycles", "seed", "clock_hz")
_LAYER_NUMBERS = (*BASE_COLUMNS[2:], "start_cycle", "end_cycle")
#: of which counts, times or energies (never negative, never NaN; clock_hz and utilization
#: have checks of their own)
_RUN_COUNTS = tuple(c for c in _RUN_NUMBERS if c != "clock_hz")
_LAYER_COUNTS = tuple(c for c in _LAYER_NUMBERS if c != "utilization")


def is_count(value: Any) -> bool:
    """Whether ``value`` is what a count, a time or an energy in archsim's results can be: an
    integer (not a bool) from 0 to 2**63 (results.json and the sweep store hold 64-bit
    integers), or a finite float >= 0 (a float64 of any size: batch 1e10 on h100 draws 1.1e19
    pJ)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return 0 <= value < 2**63
    return math.isfinite(value) and value >= 0


def _check_counts(run: RunResult) -> None:
    """Raise ``ValueError`` naming the first total or layer value that is negative, NaN,
    infinite or beyond 64 bits (a results.json that archsim did not write)."""
    view = {"seed": run.seed, "total_cycles": run.total_cycles, "area_mm2": run.area_mm2,
            "layers": [vars(lr) for lr in run.layers]}  # fmt: skip
    for where, v in _number_fields(view, _RUN_COUNTS, _LAYER_COUNTS):
        if not is_count(v):
            shown = shown_value(v) or repr(v)
            raise ValueError(
                f"{where}: {shown}; allowed: an integer from 0 to 2**63 or a finite number >= 0"
            )


def _number_fields(
    data: Mapping[str, Any],
    run_fields: tuple[str, ...] = _RUN_NUMBERS,
    layer_fields: tuple[str, ...] = _LAYER_NUMBERS,
) -> list[tuple[str, Any]]:
    """(field path, value) of the number fields of a results object (raw JSON, or a run's
    fields): ``run_fields``, areas, and each layer's ``layer_fields``, energies by component
    and action counts."""
    out = [(k, data[k]) for k in run_fields if k in data]
    if isinstance(data.get("area_mm2"), Mapping):
        out += [(f"area_mm2.{k}", v) for k, v in data["area_mm2"].items()]
    layers = data.get("layers")
    for i, lay in enumerate(layers if isinstance(layers, list) else ()):
        if not isinstance(lay, Mapping):
            continue  # pydantic names it
        out += [(f"layers.{i}.{c}", lay[c]) for c in layer_fields if c in lay]
        by_comp = lay.get("energy_by_component_pj")
        if isinstance(by_comp, Mapping):
            out += [(f"layers.{i}.energy_by_component_pj.{k}", v) for k, v in by_comp.items()]
        counts = lay.get("counts")
        for part, actions in counts.items() if isinstance(counts, Mapping) else ():
            if isinstance(actions, Mapping):
                out += [(f"layers.{i}.counts.{part}.{a}", v) for a, v in actions.items()]
    return out


def _check_number_types(data: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the first number field given as text or true/false, which
    pydantic's lax mode would read as a number (``"1e9"``, ``"0"``, ``true``)."""
    for where, v in _number_fields(data):
        if isinstance(v, str | bool):
            shown = json.dumps(v)[:60]
            raise ValueError(
                f"{where}: {shown} is not a number; allowed: a number written without quotes"
            )


def _check_layers(run: RunResult) -> None:
    """Raise ``ValueError`` naming what no run of archsim writes: no layers, a utilization
    outside [0, 1], a layer ending before it starts or with cycles other than its span, a
    layer ending after total_cycles, total_cycles other than the layers' cycles plus
    ``metadata.exposed_io_cycles`` (as ``simulate`` writes it), a layer name given twice (a
    system step's own rows, ``optimizer`` or ``bucket0``, may share a workload layer's name)."""
    if not run.layers:
        raise ValueError(
            f"layers: empty (total_cycles {run.total_cycles}); allowed: one entry per layer "
            "run, at least one"
        )
    try:
        total = math.fsum(lr.energy_pj for lr in run.layers)
    except OverflowError:  # fsum's intermediate overflow (two layers of 1e308 pJ)
        total = math.inf
    if not math.isfinite(total):
        raise ValueError(
            "layers.*.energy_pj: their sum is past the largest float; allowed: energies a run "
            "can draw"
        )
    seen: dict[tuple[str, str], int] = {}
    for i, lr in enumerate(run.layers):
        u = lr.utilization
        if not (isinstance(u, int | float) and 0 <= u <= 1 + 1e-9):
            raise ValueError(f"layers.{i}.utilization: {u!r}; allowed: a fraction from 0 to 1")
        if lr.end_cycle < lr.start_cycle:
            raise ValueError(
                f"layers.{i}.end_cycle: {lr.end_cycle} is before start_cycle "
                f"{lr.start_cycle}; allowed: end_cycle >= start_cycle"
            )
        if lr.end_cycle - lr.start_cycle != lr.cycles:
            raise ValueError(
                f"layers.{i}.cycles: {lr.cycles} (layer {lr.layer!r}), but it runs from cycle "
                f"{lr.start_cycle} to {lr.end_cycle}; allowed: end_cycle - start_cycle"
            )
        if lr.end_cycle > run.total_cycles:
            raise ValueError(
                f"total_cycles: {run.total_cycles}, but layers.{i} ({lr.layer!r}) ends at "
                f"cycle {lr.end_cycle}; allowed: at least every layer's end_cycle"
            )
        key = (lr.layer, lr.kind if run.accelerator == "system" else "")
        if key in seen:
            raise ValueError(
                f"layers.{i}.layer: {lr.layer!r} is also the name of layers.{seen[key]}; "
                "allowed: unique layer names"
            )
        seen[key] = i
    exposed = run.metadata.get("exposed_io_cycles")  # what `simulate` adds to its layers
    busy = sum(lr.cycles for lr in run.layers)
    if type(exposed) is int and run.total_cycles != busy + exposed:
        raise ValueError(
            f"total_cycles: {run.total_cycles}, but the layers' cycles sum to {busy} and "
            f"metadata.exposed_io_cycles is {exposed}; allowed: their sum, {busy + exposed}"
        )


#: kinds of the rows of a training step (``archsim.train_step``) besides its collectives
_SYSTEM_KINDS = ("train_layer", "optimizer", "step_rest")


def _check_names(run: RunResult) -> None:
    """Raise ``ValueError`` on an accelerator archsim does not have or a layer kind it does
    not write for that accelerator."""
    from typing import get_args

    from archsim.accelerators import REGISTRY
    from archsim.config.workload import LayerSpec

    accelerators = (*REGISTRY, "system")
    if run.accelerator not in accelerators:
        raise ValueError(
            f"accelerator: {run.accelerator!r}; allowed: {', '.join(sorted(accelerators))}"
        )
    if run.accelerator == "system":
        from archsim.system.collectives import OPS

        kinds: tuple[str, ...] = (*_SYSTEM_KINDS, *OPS)
    else:
        kinds = tuple(get_args(m.model_fields["kind"].annotation)[0]
                      for m in get_args(get_args(LayerSpec)[0]))  # fmt: skip
    for i, lr in enumerate(run.layers):
        if lr.kind not in kinds:
            raise ValueError(
                f"layers.{i}.kind: {lr.kind!r} (layer {lr.layer!r}); allowed for "
                f"{run.accelerator}: {', '.join(kinds)}"
            )


#: JSON type of an extra column (``archsim schema results``) -> Python types of its values,
#: and how an error names them; any other column: text, a number or true/false
_EXTRA_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "number": ((int, float), "a number"),
    "integer": ((int, float), "a number"),
    "boolean": ((bool,), "true or false"),
    "string": ((str,), "text"),
}


def _check_extras(run: RunResult) -> None:
    """Raise ``ValueError`` naming the first extra column value that no simulator writes and
    the report cannot show: a list or object, NaN or infinity (``to_json`` writes null), or a
    value of another type than its column's; null is a value not computed (NaN)."""
    from archsim.result_columns import describe

    for i, lr in enumerate(run.layers):
        for column, v in lr.extras.items():
            tp = (describe(column) or ("any",))[0]
            types, what = _EXTRA_TYPES.get(tp, ((str, int, float), "text, a number or true/false"))
            boolean = isinstance(v, bool) == (tp == "boolean") or tp not in _EXTRA_TYPES
            if v is None or (isinstance(v, types) and boolean and _finite(v) is not None):
                continue
            raise ValueError(
                f"layers.{i}.extras.{column}: {shown_value(v) or json.dumps(v)[:60]} "
                f"(layer {lr.layer!r}); "
                f"allowed: {what}, or null"
            )


def _finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float (a value not computed, such as a functional
    check skipped on a large layer) replaced by None, in nested dicts and lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if getattr(obj, "ndim", None) == 0 and hasattr(obj, "item"):
        return _finite(obj.item())  # a NumPy scalar (float64 is a float already)
    return obj


def json_text(payload: Any, indent: int = 1) -> str:
    """``payload`` as standard JSON (RFC 8259): NaN and infinities, which ``json.dumps``
    writes as bare ``NaN``/``Infinity`` that JSON parsers (jq, JavaScript) reject, become
    ``null``."""
    return json.dumps(_finite(payload), indent=indent, default=_jsonable, allow_nan=False)


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, tuple | set):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


_RUN_ADAPTER = TypeAdapter(RunResult)
