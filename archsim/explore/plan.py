"""Expand a sweep spec into concrete, validated points (before anything runs).

Every axis is checked against the base hardware up front: an unknown path, an empty axis or a
value of the wrong type is a one-line ``ConfigError`` naming the spec file and the axis. Points
whose combination the hardware model rejects, or that violate a constraint, are skipped and
reported, never run.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import TypeAdapter, ValidationError

from archsim.config.base import ArchsimModel, _unwrap, set_dotted, validation_to_config_error
from archsim.config.io import load_hardware, load_workload
from archsim.config.sweep import AxisRange, SweepSpec
from archsim.config.workload import WorkloadSpec
from archsim.errors import ConfigError
from archsim.explore.expression import Expression, ExpressionError, derived_quantities
from archsim.simulate import archsim_version, model_fingerprint

__all__ = ["SweepPoint", "SkippedPoint", "SweepPlan", "build_plan", "point_key"]


@dataclass(frozen=True, eq=False)
class SweepPoint:
    """One point to simulate: its number in the spec, store key, axis values and configs."""

    index: int
    key: str
    values: dict[str, Any]  # frame column (workload, seed, dotted path) -> value
    hardware: ArchsimModel
    workload: WorkloadSpec
    seed: int


@dataclass(frozen=True)
class SkippedPoint:
    """A point that is not run, and why (a constraint, or a combination the model rejects)."""

    index: int
    values: dict[str, Any]
    reason: str


@dataclass(frozen=True, eq=False)
class SweepPlan:
    """The validated, expanded sweep."""

    spec: SweepSpec
    source: str
    base: ArchsimModel
    axes: list[str]  # frame columns that vary: "workload"/"seed" when swept, then dotted paths
    points: list[SweepPoint]
    skipped: list[SkippedPoint] = field(default_factory=list)

    @property
    def metrics(self) -> dict[str, str]:
        """Metric -> "min"/"max" (the spec's)."""
        return dict(self.spec.metrics)


def point_key(hardware: ArchsimModel, workload: WorkloadSpec, seed: int) -> str:
    """Store key: hash of (hardware JSON, workload spec, seed, archsim version and model
    fingerprint); 16 hex digits."""
    wl = workload.model_dump(mode="json")
    if any(getattr(layer, "data", None) is not None for layer in workload.layers):
        wl["_data_dir"] = str(Path(workload.base_dir).resolve())
    payload = {
        "hardware": hardware.model_dump(mode="json"),
        "workload": wl,
        "seed": seed,
        "archsim": archsim_version(),
        "model": model_fingerprint(),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _field_adapter(model: type[ArchsimModel], path: str) -> TypeAdapter[Any]:
    tp: Any = model
    info = None
    for key in path.split("."):
        tp = _unwrap(tp)
        info = tp.model_fields[key]
        tp = info.annotation
    return TypeAdapter(Annotated[info.annotation, info] if info is not None else tp)


def _axis_values(axis: list[Any] | AxisRange) -> list:
    """The values of a grid/zip axis (a range becomes ``num`` values)."""
    if isinstance(axis, list):
        return axis
    assert axis.num is not None
    if axis.log:
        raw = np.geomspace(axis.low, axis.high, axis.num)
    else:
        raw = np.linspace(axis.low, axis.high, axis.num)
    values = [float(v) for v in raw]
    if axis.integer:
        values = list(dict.fromkeys(int(round(v)) for v in values))
    return values


def _check_axis(base: ArchsimModel, source: str, path: str, values: list) -> list:
    """Validate each value of an axis on its own field; returns the coerced values."""
    field_name = f"axes.{path}"
    if not values:
        raise ConfigError(source, field_name, "empty axis; allowed: at least one value")
    try:
        set_dotted(base.model_dump(), path, values[0], source)
    except ConfigError as exc:
        raise ConfigError(source, f"axes.{exc.field}", exc.problem) from None
    adapter = _field_adapter(type(base), path)
    out = []
    for v in values:
        try:
            out.append(adapter.validate_python(v))
        except ValidationError as exc:
            msg = exc.errors()[0].get("msg", "invalid value")
            raise ConfigError(source, field_name, f"value {v!r}: {msg}") from None
    return out


def _combinations(spec: SweepSpec, source: str, axes: dict[str, list]) -> list[dict[str, Any]]:
    names = list(axes)
    if spec.mode == "grid":
        return [dict(zip(names, c, strict=True)) for c in itertools.product(*axes.values())]
    if spec.mode == "zip":
        lengths = {n: len(v) for n, v in axes.items()}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{n}: {k}" for n, k in lengths.items())
            raise ConfigError(source, "axes", f"zip mode needs axes of equal length (got {shown})")
        return [dict(zip(names, c, strict=True)) for c in zip(*axes.values(), strict=True)]
    return []


def _samples(spec: SweepSpec, source: str, base: ArchsimModel) -> list[dict[str, Any]]:
    """Random mode: ``samples`` draws, axis by axis, from a seeded generator."""
    rng = np.random.default_rng(spec.sample_seed)
    assert spec.samples is not None
    columns: dict[str, list] = {}
    for path, axis in spec.axes.items():
        if isinstance(axis, list):
            choices = _check_axis(base, source, path, axis)
            picks = rng.integers(0, len(choices), size=spec.samples)
            columns[path] = [choices[int(i)] for i in picks]
            continue
        u = rng.random(spec.samples)
        if axis.log:
            lo, hi = math.log(axis.low), math.log(axis.high)
            draws = [math.exp(lo + float(x) * (hi - lo)) for x in u]
        else:
            draws = [axis.low + float(x) * (axis.high - axis.low) for x in u]
        if axis.integer:
            draws = [int(round(v)) for v in draws]
        columns[path] = _check_axis(base, source, path, draws)
    return [{p: columns[p][i] for p in spec.axes} for i in range(spec.samples)]


def _resolve(text: str, base_dir: Path) -> str | Path:
    candidate = base_dir / text
    return candidate if candidate.suffix in (".yaml", ".yml") and candidate.is_file() else text


def _load(kind: str, text: str, base_dir: Path, source: str) -> Any:
    loader = load_hardware if kind == "hardware" else load_workload
    try:
        return loader(_resolve(text, base_dir))
    except ConfigError as exc:
        if exc.source == text:  # the name itself is wrong, not the file it names
            raise ConfigError(source, kind, f"{text!r}: {exc.problem}") from None
        raise


def build_plan(
    spec: SweepSpec,
    source: str = "<api>",
    base_dir: Path | None = None,
    *,
    hardware: ArchsimModel | None = None,
    workloads: list[WorkloadSpec] | None = None,
) -> SweepPlan:
    """Validate and expand ``spec`` (read from ``source``; relative paths from ``base_dir``).

    ``hardware``/``workloads`` replace what the spec names (the Python API passes objects).
    """
    base_dir = base_dir or Path.cwd()
    base = hardware if hardware is not None else _load("hardware", spec.hardware, base_dir, source)
    if workloads is None:
        workloads = [_load("workload", w, base_dir, source) for w in spec.workloads]
    labels = (
        spec.workloads if len(spec.workloads) == len(workloads) else [w.name for w in workloads]
    )
    if spec.mode == "random":
        combos = _samples(spec, source, base)
    else:
        axes = {p: _check_axis(base, source, p, _axis_values(a)) for p, a in spec.axes.items()}
        combos = _combinations(spec, source, axes)
    for path in spec.derive:
        try:
            set_dotted(base.model_dump(), path, None, source)
        except ConfigError as exc:
            raise ConfigError(source, f"derive.{exc.field}", exc.problem) from None
    derive = {p: _expression(source, f"derive.{p}", t) for p, t in spec.derive.items()}
    constraints = [
        _expression(source, f"constraints.{i}", t) for i, t in enumerate(spec.constraints)
    ]
    base_data = base.model_dump(mode="python")
    model = type(base)
    points: list[SweepPoint] = []
    skipped: list[SkippedPoint] = []
    index = 0
    for wl, label in zip(workloads, labels, strict=True):
        for seed in spec.seeds:
            for combo in combos:
                values: dict[str, Any] = {"workload": label, "seed": seed, **combo}
                data = copy.deepcopy(base_data)
                for path, value in combo.items():
                    set_dotted(data, path, value, source)
                reason = _apply_rules(source, data, seed, derive, constraints, values)
                hw = None
                if reason is None:
                    try:
                        hw = model.model_validate(data)
                    except ValidationError as exc:
                        err = validation_to_config_error(exc, "", model)
                        reason = f"invalid: {err.field}: {err.problem}"
                if hw is None:
                    skipped.append(SkippedPoint(index, values, reason or "invalid"))
                else:
                    key = point_key(hw, wl, seed)
                    points.append(SweepPoint(index, key, values, hw, wl, seed))
                index += 1
    swept = (["workload"] if len(workloads) > 1 else []) + (["seed"] if len(spec.seeds) > 1 else [])
    return SweepPlan(spec, source, base, swept + list(spec.axes), points, skipped)


def _expression(source: str, where: str, text: str) -> Expression:
    try:
        return Expression(text)
    except ExpressionError as exc:
        raise ConfigError(source, where, str(exc)) from None


def _apply_rules(
    source: str,
    data: dict[str, Any],
    seed: int,
    derive: dict[str, Expression],
    constraints: list[Expression],
    values: dict[str, Any],
) -> str | None:
    """Set derived fields in ``data``; the first violated constraint's text, or None."""
    shown = ", ".join(f"{k}={v}" for k, v in values.items())
    for path, expr in derive.items():
        try:
            value = expr.evaluate({**data, "seed": seed})
        except ExpressionError as exc:
            raise ConfigError(source, f"derive.{path}", f"{exc} (at {shown})") from None
        set_dotted(data, path, value, source)
    if not constraints:
        return None
    names = {**data, **derived_quantities(data), "seed": seed}
    for i, expr in enumerate(constraints):
        try:
            ok = expr.evaluate(names)
        except ExpressionError as exc:
            raise ConfigError(source, f"constraints.{i}", f"{exc} (at {shown})") from None
        if not ok:
            return f"constraint: {expr.text}"
    return None
