"""``archsim.sweep``: expand a spec, run what is not already stored, return the tidy frame."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pydantic import ValidationError

from archsim.config.base import ArchsimModel
from archsim.config.io import load_hardware, load_sweep, load_workload
from archsim.config.messages import validation_to_config_error
from archsim.config.sweep import DEFAULT_METRICS, SweepSpec
from archsim.config.workload import WorkloadSpec
from archsim.errors import ConfigError
from archsim.explore.executor import Task, check_dask, execute
from archsim.explore.plan import DEFAULT_MAX_POINTS, SweepPlan, build_plan
from archsim.explore.store import SweepStore, merge_tables
from archsim.progress import check_progress
from archsim.provenance import sweep_provenance

if TYPE_CHECKING:  # pandas loads after the points ran (the frame), not while they run
    import pandas as pd

__all__ = ["sweep", "run_plan", "plan_sweep", "plan_provenance"]

Progress = Callable[[int, int], None]

DETERMINISM = (
    "every point depends only on (hardware, workload, seed); results are bit-identical "
    "whichever executor (serial, process pool, Dask) runs them"
)


def plan_sweep(
    hardware: ArchsimModel | str | Path | SweepSpec,
    workload: WorkloadSpec | str | Path | Sequence[WorkloadSpec | str | Path] | None = None,
    axes: Mapping[str, Any] | None = None,
    *,
    max_points: int = DEFAULT_MAX_POINTS,
    base_dir: str | Path | None = None,
    **spec_fields: Any,
) -> SweepPlan:
    """Validate and expand a sweep without running it (see ``sweep`` for the arguments)."""
    if workload is None and axes is None:
        spec, found = load_sweep(hardware)  # type: ignore[arg-type]
        source = str(hardware) if not isinstance(hardware, SweepSpec) else "<api>"
        return build_plan(spec, source, Path(base_dir) if base_dir else found,
                          max_points=max_points)  # fmt: skip
    if workload is None:
        raise ConfigError("<api>", "axes", "given without a workload; allowed: sweep(spec) "
                          "alone, or sweep(hardware, workload, axes={...})")  # fmt: skip
    if not axes:
        raise ConfigError("<api>", "axes", "none given; allowed: a mapping of dotted field "
                          'path -> values, e.g. {"pe_array.num_pes": [32, 64]}')  # fmt: skip
    hw = load_hardware(hardware)  # type: ignore[arg-type]
    many = isinstance(workload, list | tuple)
    # an ONNX model with compress.* axes: the plan builds the compressed workloads from it
    onnx = isinstance(workload, str | Path) and str(workload).lower().endswith(".onnx")
    wls = None if onnx else [load_workload(w) for w in (workload if many else [workload])]  # type: ignore[union-attr]
    names = str(workload) if onnx else [w.name for w in wls] if many else wls[0].name  # type: ignore[union-attr]
    if many and len(set(names)) < len(names):  # the frame tells points apart by name only
        twice = next(n for n in names if names.count(n) > 1)
        raise ConfigError("<api>", "workload", f"two workloads named {twice!r}; allowed: "
                          "distinct names (with_overrides({'name': ...}))")  # fmt: skip
    data = _plain(
        {
            "schema_version": 1,
            "name": spec_fields.pop("name", f"{hw.name}-sweep"),  # type: ignore[attr-defined]
            "hardware": hw.name,  # type: ignore[attr-defined]
            "workload": names,
            "axes": axes,
            **spec_fields,
        }
    )
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise validation_to_config_error(exc, "<api>", SweepSpec) from None
    return build_plan(spec, "<api>", Path.cwd(), hardware=hw, workloads=wls, max_points=max_points)


def _plain(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python numbers and lists, tuples as lists
    (``np.arange`` axis values, a tuple of seeds), mappings as dicts: what a YAML file gives."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":
        return _plain(value.tolist())
    return value


def sweep(
    hardware: ArchsimModel | str | Path | SweepSpec,
    workload: WorkloadSpec | str | Path | Sequence[WorkloadSpec | str | Path] | None = None,
    axes: Mapping[str, Any] | None = None,
    *,
    seeds: Sequence[int] = (0,),
    mode: str = "grid",
    samples: int | None = None,
    sample_seed: int = 0,
    derive: Mapping[str, str] | None = None,
    constraints: Sequence[str] = (),
    metrics: Mapping[str, str] | None = None,
    out_dir: str | Path | None = None,
    n_jobs: int | None = None,
    dask: str | None = None,
    progress: Progress | None = None,
    retry_errors: bool = False,
    max_points: int = DEFAULT_MAX_POINTS,
    evaluation: Mapping[str, str] | None = None,
    base_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Run a design-space sweep; returns the tidy frame (one row per point and layer).

    Either ``sweep(spec)`` with a sweep YAML path, preset name or ``SweepSpec``, or
    ``sweep(hardware, workload, axes={"pe_array.num_pes": [32, 64]}, ...)`` with the spec's
    fields as keywords. ``axes`` values are lists (or ``{"low", "high", "num", "log",
    "integer"}`` ranges); ``mode`` is ``grid`` (first axis slowest), ``zip`` or ``random``
    (``samples`` draws seeded by ``sample_seed``).

    ``base_dir``: with a ``SweepSpec`` (from ``load_sweep``, which returns it too), the folder
    its relative ``hardware``/``workload`` paths are resolved against (default: the current
    folder; a spec file's own folder when a path is given).

    ``out_dir``: a folder for the durable store (Parquet); points already stored there are not
    run again, and each finished chunk is saved at once. ``n_jobs``: worker processes (default:
    the CPUs available; 1 runs here). ``dask``: ``"local"`` or a scheduler address.
    ``progress(done, total)`` is called as points finish. A spec of more than ``max_points``
    points, or whose constraints skip every point, raises ``ConfigError`` before anything runs.
    ``workload`` may be an ``.onnx`` path with ``compress.*`` axes (see
    ``archsim.explore.compressed``); ``evaluation={"inputs": "x.npy", "labels": "y.npy"}``
    then adds each point's ``accuracy``. A point that raises, or that kills its worker process
    (found by running its chunk again point by point), is recorded with ``status`` ``error``
    and the sweep goes on.

    With ``n_jobs`` > 1 or ``dask="local"`` the workers are new processes that import the
    calling script again: a script must call ``sweep`` under ``if __name__ == "__main__":``
    (``ArchsimError`` otherwise). Use ``archsim.totals(frame)`` for one row per point and
    ``archsim.pareto`` for the non-dominated points. ``frame.attrs`` holds ``axes``,
    ``metrics``, ``skipped`` (points not run, with the reason) and ``counts``.
    """
    check_progress(progress, "progress(done, total)")
    spec_fields: dict[str, Any] = {}
    if axes is not None:
        spec_fields = {  # validated as a SweepSpec's fields: a wrong type names its field
            "seeds": seeds,
            "mode": mode,
            "samples": samples,
            "sample_seed": sample_seed,
            "derive": derive or {},
            "constraints": constraints,
            "metrics": metrics or DEFAULT_METRICS,
        }
        if evaluation is not None:  # compress.* axes over an ONNX workload
            spec_fields["evaluation"] = evaluation
    plan = plan_sweep(
        hardware, workload, axes, max_points=max_points, base_dir=base_dir, **spec_fields
    )
    return run_plan(
        plan, out_dir, n_jobs=n_jobs, dask=dask, progress=progress, retry_errors=retry_errors
    )


def plan_provenance(plan: SweepPlan) -> dict[str, Any]:
    """What the sweep's tables carry in their schema metadata (and ``sweep.json`` and
    ``frame.attrs["provenance"]`` too): version, model fingerprint, the determinism statement,
    the base hardware, every workload spec and the sweep spec."""
    workloads = {id(p.workload): p.workload for p in plan.points}
    return sweep_provenance(
        plan.base,
        workloads.values(),
        spec=plan.spec.model_dump(mode="json"),
        spec_source=plan.source,
        axes=plan.axes,
        determinism=DETERMINISM,
    )


def _metadata(plan: SweepPlan, provenance: dict[str, Any]) -> dict[str, Any]:
    return {
        **provenance,
        "spec": provenance["sweep_spec"],  # the names `archsim report DIR` reads
        "metrics": plan.metrics,
        "points": len(plan.points),
        "skipped": len(plan.skipped),
    }


def _levels(plan: SweepPlan, keys: list[str]) -> list[int]:
    """For each task, the position of the first axis (workload, seed, then the spec's axes)
    whose value differs from the previous task's: 0 where the two share the least."""
    values = {p.key: p.values for p in plan.points}
    names = ["workload", "seed", *(a for a in plan.axes if a not in ("workload", "seed"))]
    out = [0]
    for prev, key in zip(keys, keys[1:], strict=False):
        a, b = values[prev], values[key]
        out.append(next((i for i, n in enumerate(names) if a[n] != b[n]), len(names)))
    return out[: len(keys)]


def _run(
    plan: SweepPlan,
    store: SweepStore | None,
    n_jobs: int | None,
    dask: str | None,
    progress: Progress | None,
    retry_errors: bool,
    provenance: dict[str, Any],
) -> tuple[list[pa.Table], dict[str, Any]]:
    """Run what ``store`` lacks; the tables of every point, and the counts."""
    meta = _metadata(plan, provenance)
    if store is not None and not (store.folder / "sweep.json").exists():
        store.write_json("sweep.json", meta)  # a new folder is named by its sweep at once
    done_keys = store.finished(retry_errors) if store is not None else set()
    tasks: dict[str, Task] = {}
    for p in plan.points:
        if p.key not in done_keys and p.key not in tasks:
            tasks[p.key] = (p.key, p.hardware, p.workload, p.seed)
    total = len({p.key for p in plan.points})
    counts: dict[str, Any] = {
        "points": len(plan.points),
        "skipped": len(plan.skipped),
        "resumed": total - len(tasks),
        "ran": 0,
        "errors": 0,
    }
    state = {"done": total - len(tasks)}
    memory: list[pa.Table] = []
    if progress is not None:
        progress(state["done"], total)

    def on_table(table: pa.Table) -> None:
        if store is not None:
            store.append(table)
        else:
            memory.append(table)
        # plain Python over a chunk's rows (points x layers): pyarrow.compute takes 0.1 s to import
        points = len(set(table.column("point_key").to_pylist()))
        state["done"] += points
        counts["ran"] += points
        counts["errors"] += sum(s not in ("ok", None) for s in table.column("status").to_pylist())
        if progress is not None:
            progress(state["done"], total)

    execute(list(tasks.values()), n_jobs, dask, on_table, _levels(plan, list(tasks)))
    if store is not None:
        tables = store.compact()
        # a resumed folder's sweep.json described its earlier spec until now, as its tables
        # did: a run stopped on the way (a full disk, Ctrl-C) leaves the two in step
        store.write_json("sweep.json", meta)
        return tables, counts
    order = {p.key: p.index for p in plan.points}
    return sorted(memory, key=lambda t: min(order[k] for k in t["point_key"].to_pylist())), counts


def run_plan(
    plan: SweepPlan,
    out_dir: str | Path | None = None,
    *,
    n_jobs: int | None = None,
    dask: str | None = None,
    progress: Progress | None = None,
    retry_errors: bool = False,
) -> pd.DataFrame:
    """Run the points of ``plan`` not yet in ``out_dir``'s store; see ``sweep``.

    When it stops before any point is saved (Dask unreachable, Ctrl-C) it removes the folder
    it created; after that, the store keeps every finished chunk for a re-run to resume.
    """
    start = time.perf_counter()
    check_progress(progress, "progress(done, total)")
    if dask:
        check_dask(dask)  # before anything is created
    created = out_dir is not None and not Path(out_dir).exists()
    provenance = plan_provenance(plan)
    store = SweepStore(out_dir, provenance) if out_dir is not None else None
    try:
        with store.lock() if store is not None else nullcontext():
            tables, counts = _run(plan, store, n_jobs, dask, progress, retry_errors, provenance)
    except BaseException:
        if created and store is not None and store.empty():
            shutil.rmtree(store.folder, ignore_errors=True)
        raise
    from archsim.explore.frame import assemble  # pandas: loaded by now in a CLI sweep

    rows = [{"point": p.index, "point_key": p.key, **p.values} for p in plan.points]
    frame = assemble(rows, [*plan.axes, *plan.columns], merge_tables(tables))
    counts["seconds"] = round(time.perf_counter() - start, 3)
    frame.attrs.update(
        axes=list(plan.axes),
        metrics=plan.metrics,
        skipped=[{"point": s.index, **s.values, "reason": s.reason} for s in plan.skipped],
        counts=counts,
        name=plan.spec.name,
        provenance=provenance,
    )
    return frame
