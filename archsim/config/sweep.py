"""Sweep spec: a base hardware, workload(s), seeds and axes over dotted config paths.

```yaml
schema_version: 1
name: eie_pes_fifo
hardware: eie                     # preset name or YAML path (relative to this file)
workload: eie_benchmarks          # or a list: the workloads become an axis
seeds: [0]                        # more than one: the seed becomes an axis
mode: grid                        # grid | zip | random
axes:
  pe_array.num_pes: [32, 64, 128]                               # values (choices when random)
  activation_fifo.depth: {low: 2, high: 32, num: 5, log: true, integer: true}
derive:                           # fields computed from other fields at every point
  crossbar.inputs: multipliers.weights_per_cycle * multipliers.activations_per_cycle
constraints:                      # points where one is false are skipped (and reported)
  - total_sram_bytes <= 16 * 2**20
metrics: {total_time_s: min, total_energy_pj: min}
```
"""

from __future__ import annotations

import ast
import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

from archsim.config.base import MAX_EXPRESSION_CHARS, ArchsimModel, dotted_name
from archsim.config.names import Name

__all__ = [
    "SweepSpec",
    "SweepEvaluation",
    "AxisRange",
    "DEFAULT_METRICS",
    "SUMMARY_METRICS",
    "SYSTEM_METRICS",
]

#: Point-level metrics a sweep records (``RunResult.summary()`` plus a cycle-weighted utilisation).
SUMMARY_METRICS = (
    "total_cycles",
    "total_time_s",
    "total_energy_pj",
    "average_power_w",
    "effective_gops",
    "total_area_mm2",
    "mean_utilization",
)

#: Point-level metrics of a multi-GPU system's training step (its ``train_step`` summary),
#: recorded beside the summary metrics when a sweep's hardware is a system.
SYSTEM_METRICS = (
    "samples_per_s",
    "speedup_vs_1_gpu",
    "scaling_efficiency",
    "exposed_communication_s",
    "overlapped_communication_s",
)

DEFAULT_METRICS = {"total_time_s": "min", "total_energy_pj": "min", "total_area_mm2": "min"}


class AxisRange(ArchsimModel):
    """Numbers from ``low`` to ``high``: ``num`` evenly (or geometrically) spaced values for grid
    and zip sweeps, uniform (or log-uniform) draws for random sweeps."""

    low: float = Field(
        description="First value of the range, in the unit of the swept field (> 0 with log)."
    )
    high: float = Field(description="Last value of the range (>= low), in the field's unit.")
    num: Annotated[int, Field(ge=1, le=10_000_000)] | None = Field(
        default=None,
        description="Values taken from the range in grid/zip mode (required there), at most "
        "10,000,000 (an integer range makes them all before dropping the duplicates).",
    )
    log: bool = Field(default=False, description="Geometric spacing / log-uniform sampling.")
    integer: bool = Field(default=False, description="Round to integers (duplicates dropped).")

    @model_validator(mode="after")
    def _ordered(self) -> AxisRange:
        if self.high < self.low:
            raise ValueError(f"high must be >= low (got low={self.low}, high={self.high})")
        if self.log and self.low <= 0:
            raise ValueError(f"low must be > 0 when log is true (got {self.low})")
        if not math.isfinite(self.high - self.low):  # the spacing overflows to NaN values
            raise ValueError(
                f"high - low overflows a float (low={self.low}, high={self.high}); allowed: a "
                "range of the field's magnitude"
            )
        if self.integer and math.ceil(self.low) > math.floor(self.high):
            raise ValueError(
                f"holds no integer (low={self.low}, high={self.high}); allowed: a range with "
                "an integer in it, or integer: false"
            )
        return self

    def rounded(self, values: Any) -> np.ndarray:
        """``values`` each rounded to the nearest integer (half to even, as round()) inside the
        range (4.5 in [4.5, 5.6] gives 5: round() gave 4, below the range), as one float array
        (10^7 values in a fraction of a second; Python ints may pass int64)."""
        lo, hi = math.ceil(self.low), math.floor(self.high)
        return np.clip(np.rint(np.asarray(values, dtype=float)), lo, hi)

    def as_integers(self, values: Any) -> list[int]:
        """:meth:`rounded` ``values`` as Python ints."""
        return [int(v) for v in self.rounded(values)]


class SweepEvaluation(ArchsimModel):
    """Held-out data on which a ``compress.*`` sweep measures each compressed model's top-1
    accuracy (paths relative to the spec file)."""

    inputs: str = Field(min_length=1, description="``.npy`` of model inputs, one sample per row.")
    labels: str = Field(min_length=1, description="``.npy`` of integer class labels, shape (n,).")


def _names_read(text: str) -> set[str]:
    """The dotted names an expression looks up, parsed as ``Expression`` parses it (``a.b.c``
    for a chain of attributes on a name; not function names, strings or numbers); none if it
    does not parse (the sweep plan reports that)."""
    if len(text) > MAX_EXPRESSION_CHARS:  # refused with its length when the plan parses it
        return set()
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    inside: set[int] = set()  # nodes within a named chain, or a called function's name
    for node in ast.walk(tree):  # breadth first: a chain's outermost attribute comes first
        if isinstance(node, ast.Call):
            inside.add(id(node.func))
        if id(node) in inside or not isinstance(node, ast.Name | ast.Attribute):
            continue
        name = dotted_name(node)
        if name:
            names.add(name)
        while isinstance(node, ast.Attribute):  # its inner links are not names of their own
            node = node.value
            inside.add(id(node))
    return names


def _hashable(value: Any) -> Any:
    """``value`` with its lists and mappings made tuples, for comparing axis values; a boolean
    kept apart from the number it equals in Python (``[0, false]`` is two values)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    return value


def _repeated(values: list[Any]) -> tuple[int, int] | None:
    """The positions (from 1) of the first value of ``values`` equal to an earlier one and of
    that one (``4`` and ``4.0`` are equal, as a validated field makes them); None if all
    differ."""
    seen: dict[Any, int] = {}
    for i, value in enumerate(values, start=1):
        key = _hashable(value)
        try:
            first = seen.setdefault(key, i)
        except TypeError:  # unhashable leaf: compare with the values before it
            earlier = enumerate(values[: i - 1], 1)
            first = next((j for j, v in earlier if _hashable(v) == key), i)
        if first != i:
            return first, i
    return None


class SweepSpec(ArchsimModel):
    """A design-space sweep (see the module docstring for an example)."""

    schema_version: Literal[1]
    name: Name
    description: str = ""
    hardware: str = Field(min_length=1, description="Base hardware: preset name or YAML path.")
    workload: str | list[str] = Field(
        description="Workload preset/path, or a list of them (then the workload is an axis)."
    )
    seeds: list[Annotated[int, Field(ge=0, le=2**63 - 1)]] = Field(
        default=[0],
        min_length=1,
        description="Workload materialisation seeds, 0 to 2**63 - 1 (a results column); more "
        "than one makes the seed an axis.",
    )
    mode: Literal["grid", "zip", "random"] = Field(
        default="grid",
        description="grid: every combination of the axes; zip: the i-th value of every axis "
        "together (equal lengths); random: samples draws.",
    )
    samples: PositiveInt | None = Field(default=None, description="Points drawn in random mode.")
    sample_seed: NonNegativeInt = Field(default=0, description="Seed of the random sampling.")
    axes: dict[str, list[Any] | AxisRange] = Field(
        min_length=1,
        description="Dotted hardware path -> values, or a range. Grid: first axis varies slowest.",
    )
    derive: dict[str, str] = Field(
        default_factory=dict,
        description="Dotted hardware path -> expression over other fields, set at every point.",
    )
    constraints: list[str] = Field(
        default_factory=list,
        description="Expressions over dotted fields, seed and derived quantities (num_pes, "
        "sram_bytes_per_pe, total_sram_bytes); points where one is false are skipped.",
    )
    evaluation: SweepEvaluation | None = Field(
        default=None,
        description="compress.* sweeps: data to measure each point's accuracy on (adds the "
        "``accuracy`` column and metric).",
    )
    metrics: dict[str, Literal["min", "max"]] = Field(
        default_factory=lambda: dict(DEFAULT_METRICS),
        min_length=1,
        description="Point metrics compared in the summary, Pareto front and report.",
    )

    @field_validator("workload")
    @classmethod
    def _some_workload(cls, v: str | list[str]) -> str | list[str]:
        if isinstance(v, list) and not v:
            raise ValueError("must name at least one workload")
        return v

    @field_validator("axes", mode="before")
    @classmethod
    def _axis_forms(cls, v: Any) -> Any:
        """A list of values or a range mapping; one clear message for anything else."""
        if not isinstance(v, dict):
            return v
        out: dict[str, Any] = {}
        for path, axis in v.items():
            if isinstance(axis, list | AxisRange):
                out[path] = axis
            elif isinstance(axis, dict):
                try:
                    out[path] = AxisRange.model_validate(axis)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    where = ".".join(str(p) for p in err.get("loc", ()))
                    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
                    if err.get("type") == "missing":
                        msg = "required field is missing"
                    if err.get("type") == "extra_forbidden":
                        msg = f"unknown field; allowed: {', '.join(AxisRange.model_fields)}"
                    raise ValueError(f"{path}: {where + ': ' if where else ''}{msg}") from None
            else:
                raise ValueError(
                    f"{path}: an axis is a list of values or a range "
                    f"{{low, high, num, log, integer}} (got {axis!r})"
                )
        return out

    @field_validator("axes")
    @classmethod
    def _non_empty_axes(cls, v: dict[str, Any]) -> dict[str, Any]:
        for path, values in v.items():
            if isinstance(values, list) and not values:
                raise ValueError(f"{path}: empty axis; allowed: a list of at least one value")
        return v

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: dict[str, str]) -> dict[str, str]:
        for m in v:
            if m not in SUMMARY_METRICS and m not in SYSTEM_METRICS and m != "accuracy":
                allowed = ", ".join([*SUMMARY_METRICS, "accuracy"])
                raise ValueError(f"unknown metric {m!r}; allowed: {allowed}; for a system "
                                 f"also {', '.join(SYSTEM_METRICS)}")  # fmt: skip
        return v

    @model_validator(mode="after")
    def _mode_fields(self) -> SweepSpec:
        if self.mode == "random" and self.samples is None:
            raise ValueError("samples must be set in random mode (number of points to draw)")
        if self.mode != "random" and self.samples is not None:
            raise ValueError(f"samples must be left out in {self.mode} mode (random mode only)")
        if self.mode != "random":
            for path, axis in self.axes.items():
                if isinstance(axis, AxisRange) and axis.num is None:
                    raise ValueError(
                        f"axes: {path}: a range needs num (how many values) in {self.mode} mode"
                    )
        # zip pairs the i-th values: a value may recur on one axis; seeds and workloads are
        # crossed with the points in every mode (a repeat in zip or random mode ran them twice)
        lists: dict[str, list[Any]] = {"seeds": self.seeds, "workload": self.workloads}
        if self.mode == "grid":
            lists = {f"axes: {p}": v for p, v in self.axes.items() if isinstance(v, list)} | lists
        for where, values in lists.items():
            twice = _repeated(values)
            if twice is not None:
                (i, a), (j, b) = ((k, values[k - 1]) for k in twice)
                raise ValueError(
                    f"{where}: entry {i} ({a!r}) and entry {j} ({b!r}) are the same value; "
                    f"allowed: distinct values in {self.mode} mode, where each would run the "
                    "same points again"
                )
        if "accuracy" in self.metrics and self.evaluation is None:
            raise ValueError(
                "metrics: accuracy needs an evaluation set (evaluation: inputs, labels)"
            )
        overlap = sorted(set(self.axes) & set(self.derive))
        if overlap:
            raise ValueError(f"derive: {overlap[0]} is also an axis; allowed: one or the other")
        order = list(self.derive)
        for i, (path, text) in enumerate(self.derive.items()):
            reads = _names_read(text)
            later = [k for k in order[i + 1 :] if k in reads]
            if later:  # entries apply in file order: it would read the base value, not this
                raise ValueError(
                    f"derive: {path} reads {later[0]}, which a later derive entry sets; "
                    "allowed: entries that read axes, base fields and derive entries above them"
                )
        return self

    @property
    def workloads(self) -> list[str]:
        """The workload(s) as a list."""
        return [self.workload] if isinstance(self.workload, str) else list(self.workload)
