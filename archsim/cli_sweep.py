"""``archsim sweep SPEC -o DIR [-j N] [--dask ADDRESS|local]``: run a design-space sweep.

Writes ``DIR/results.parquet`` (one row per point and layer), ``DIR/points.csv`` (one row per
point), ``DIR/skipped.csv``, ``DIR/errors.csv`` (the points that failed), ``DIR/sweep.json``
(spec, archsim version, determinism statement), the resumable store ``DIR/store/`` and
``DIR/report.html``; prints the Pareto front and the failed points.

Exit codes: 0 every point ran; 1 some points failed (listed, and in ``errors.csv``); 2 bad
input (nothing run, nothing left behind); 130 interrupted (Ctrl-C: the workers stop at once, the
finished points stay in the store for a re-run; a second Ctrl-C quits without waiting).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.background import import_in_background
from archsim.cli_args import integer
from archsim.errors import ArchsimError, ConfigError, counted, one_line, os_reason, shown_name
from archsim.limits import DEFAULT_MAX_POINTS

if TYPE_CHECKING:  # pandas and the sweep engine load when a sweep runs, not for `--help`
    import pandas as pd

#: exit codes besides 0 and the CLI's 2 for bad input
EXIT_POINTS_FAILED = 1
EXIT_INTERRUPTED = 130
#: failed points printed at the end (all of them are in errors.csv)
SHOWN_ERRORS = 10

__all__ = ["add_sweep_parser", "cmd_sweep", "format_points", "rebuild_sweep_report"]


def add_sweep_parser(sub: Any) -> None:
    """Register ``sweep`` on the CLI's subparsers."""
    p = sub.add_parser(
        "sweep",
        help="run a design-space sweep (YAML spec); resumable store, Pareto front, report.html",
        description="Run every point of SPEC (a sweep YAML or preset, see `archsim list`) not "
        "already in DIR; points run in a local process pool, or on Dask with --dask.",
    )
    p.add_argument("spec", help="sweep spec: preset name or YAML path")
    p.add_argument(
        "-o",
        "--out",
        default="archsim-sweep",
        help="output folder (default archsim-sweep); re-running into it resumes",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=integer,
        default=None,
        help="worker processes (default and most: the CPUs available)",
    )
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on Dask: 'local' starts a LocalCluster of -j workers, or the "
        "address of a running scheduler (tcp://host:port)",
    )
    p.add_argument(
        "--retry-errors", action="store_true", help="run again the points stored with status error"
    )
    p.add_argument(
        "--max-points",
        type=integer,
        default=DEFAULT_MAX_POINTS,
        metavar="N",
        help=f"refuse a spec of more than N points (default {DEFAULT_MAX_POINTS:,})",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.4g}"
    return str(value)


def format_points(
    points: pd.DataFrame, axes: list[str], metrics: list[str], limit: int = 10
) -> str:
    """A plain table of ``points`` (axis and metric columns), at most ``limit`` rows."""
    cols = ["point", *axes, *metrics]
    shown = points[cols].head(limit)
    cells = [[str(c) for c in cols]] + [[_fmt(v) for v in row] for row in shown.to_numpy()]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "-" * len(lines[0]))
    if len(points) > limit:
        lines.append(f"... {len(points) - limit} more")
    return "\n".join(lines)


def _write_outputs(out: Path, frame: pd.DataFrame, points: pd.DataFrame, title: str) -> None:
    from archsim.output import frame_to_parquet, replace_after_writing

    def atomic(name: str, write: Any) -> None:
        replace_after_writing(out / name, write)

    atomic("results.parquet", lambda p: frame_to_parquet(frame, p))  # provenance in metadata
    atomic("points.csv", lambda p: points.to_csv(p, index=False))
    import pandas as pd

    skipped = pd.DataFrame(frame.attrs.get("skipped", []))
    if skipped.empty:  # a header even when no point was skipped, as errors.csv has
        skipped = pd.DataFrame(columns=["point", *frame.attrs["axes"], "reason"])
    atomic("skipped.csv", lambda p: skipped.to_csv(p, index=False))
    cols = ["point", "point_key", *frame.attrs["axes"], "error"]
    errors = points.loc[points["status"] != "ok", cols]
    atomic("errors.csv", lambda p: errors.to_csv(p, index=False))
    from archsim.report import write_sweep_report

    metrics = list(frame.attrs["metrics"])
    axes = list(frame.attrs["axes"])
    senses = dict(frame.attrs["metrics"])
    write_sweep_report(
        points, out / "report.html", axes=axes, metrics=metrics, title=title, senses=senses
    )


def rebuild_sweep_report(folder: Path) -> Path:
    """Re-write ``folder/report.html`` from the ``results.parquet`` and ``sweep.json`` that
    ``archsim sweep`` left there (after a report change, without re-running any point);
    raises OSError when it cannot write."""
    import pandas as pd

    from archsim.explore import totals
    from archsim.report import write_sweep_report

    meta_path, parquet = folder / "sweep.json", folder / "results.parquet"
    if not parquet.exists():
        raise ArchsimError(
            f"{parquet}: not found; the sweep did not finish, run `archsim sweep` again to resume"
        )
    for path in (meta_path, parquet):  # a FIFO blocked the read; a folder read as no rows
        if not path.is_file():
            raise ArchsimError(f"{path}: not a regular file; allowed: the file `archsim sweep` "
                               "writes (re-run the sweep to rewrite it)")  # fmt: skip
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        axes, metrics, name = list(meta["axes"]), list(meta["metrics"]), meta["spec"]["name"]
        senses = {m: meta["metrics"][m] for m in metrics}
        if not all(isinstance(v, str) for v in [*axes, *metrics, name]):
            raise TypeError("axes, metrics and spec.name must be names")
        if not axes or not metrics:  # a spec has at least one of each
            raise ValueError(f"{'axes' if not axes else 'metrics'} is empty")
        twice = next((a for i, a in enumerate(axes) if a in axes[:i]), None)
        if twice is not None:
            raise ValueError(f"axes names {twice!r} twice")
        bad = {m: v for m, v in senses.items() if v not in ("min", "max")}
        if bad:
            raise ValueError(f"metrics.{next(iter(bad))} is {next(iter(bad.values()))!r}, not min "
                             "or max")  # fmt: skip
    except RecursionError:  # json's decoder: nesting past the interpreter's stack
        raise ArchsimError(
            f"{meta_path}: not a sweep.json written by `archsim sweep` (nested too deeply); "
            "allowed: re-run the sweep to rewrite it"
        ) from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
        raise ArchsimError(
            f"{meta_path}: not a sweep.json written by `archsim sweep` ({type(exc).__name__}: "
            f"{one_line(exc, 160)}); allowed: re-run the sweep to rewrite it"
        ) from None
    try:
        frame = pd.read_parquet(parquet)
        _check_numbers(frame, parquet, metrics)
        points = totals(frame)
    except (OSError, ValueError, KeyError, TypeError, ConfigError) as exc:  # pyarrow's too
        why = exc.problem if isinstance(exc, ConfigError) else one_line(exc, 160)
        raise ArchsimError(
            f"{parquet}: not a results table written by `archsim sweep` ({type(exc).__name__}: "
            f"{why}); allowed: re-run the sweep to rewrite it"
        ) from None
    _check_points(points, parquet, meta_path, axes, metrics)
    title = f"Sweep {name}"
    return write_sweep_report(
        points, folder, axes=axes, metrics=metrics, title=title, senses=senses
    )


#: the columns a sweep's ok rows always hold as finite numbers >= 0 (the page plots them)
_SWEEP_NUMBERS = ("total_cycles", "total_time_s", "total_energy_pj", "cycles", "time_s",
                  "energy_pj")  # fmt: skip


def _check_numbers(frame: pd.DataFrame, parquet: Path, metrics: list[str]) -> None:
    """Refuse an empty table, a column the page reads missing (KeyError), a point number not an
    integer >= 0, a status other than ok or error, a point that holds one layer twice (points
    renumbered by hand merged into one), and an ok row whose times, cycles, energy or metrics
    are not finite numbers >= 0 stored as numbers (a hand-edited table drew 'best time -494
    us' and a Pareto front of none; true/false passed as a number)."""
    import numpy as np
    import pandas as pd

    if frame.empty:
        raise ArchsimError(f"{parquet}: holds no rows; allowed: the table a sweep writes "
                           "(re-run the sweep to rewrite it)")  # fmt: skip
    lacking = [c for c in ("point", "status", "error") if c not in frame.columns]
    if lacking:  # the page's table and error list read them: as the caller says a KeyError
        raise KeyError(lacking[0])
    point = frame["point"]
    integral = pd.api.types.is_integer_dtype(point) and not pd.api.types.is_bool_dtype(point)
    if not integral or bool((point < 0).any()):
        shown = f"{point[point < 0].iloc[0]}" if integral else f"stored as {point.dtype}"
        raise ArchsimError(f"{parquet}: point: {shown}; allowed: point numbers, integers >= 0 "
                           "(re-run the sweep to rewrite the table)")  # fmt: skip
    status = frame["status"]
    odd = ~status.isin(["ok", "error"])
    if odd.any():
        raise ArchsimError(f"{parquet}: status: {status[odd].iloc[0]!r} in a row; allowed: ok "
                           "or error (re-run the sweep to rewrite the table)")  # fmt: skip
    if {"point", "layer_index"} <= set(frame.columns):
        twice = frame.duplicated(["point", "layer_index"]) & frame["layer_index"].notna()
        if twice.any():
            row = frame[twice].iloc[0]
            raise ArchsimError(
                f"{parquet}: point {row['point']} holds layer {row['layer_index']} twice; "
                "allowed: one row per point and layer (re-run the sweep to rewrite the table)"
            )
    ok = frame[frame["status"] == "ok"]
    # a metric the table lacks is named by _check_points, after the totals
    metric_cols = [m for m in metrics if m in ok and m not in _SWEEP_NUMBERS]
    for col in (*_SWEEP_NUMBERS, *metric_cols):
        if ok.empty and col not in ok:  # every point failed: no layer columns at all
            continue
        numeric = pd.api.types.is_numeric_dtype(ok[col])
        if not numeric or pd.api.types.is_bool_dtype(ok[col]):  # "1.5" as text: no sorting
            raise ArchsimError(f"{parquet}: {col}: stored as {ok[col].dtype}, not numbers; "
                               "allowed: the table a sweep writes (re-run the sweep)")  # fmt: skip
        values = pd.to_numeric(ok[col], errors="coerce").astype(float).to_numpy()
        bad = ~np.isfinite(values) | (values < 0)
        if col in metric_cols:  # a layer may have no value for a per-layer metric (NaN)
            bad &= ~np.isnan(values)
        if bad.any():
            raise ArchsimError(
                f"{parquet}: {col}: {ok[col].to_numpy()[bad][0]} in an ok row of a results "
                "table; allowed: a finite number >= 0 (re-run the sweep to rewrite the table)"
            )


def _check_points(
    points: pd.DataFrame, parquet: Path, meta: Path, axes: list[str], metrics: list[str]
) -> None:
    """Refuse a table that lacks a column sweep.json's axes or metrics name, or holds a metric
    that is not numbers: the page plots them (the errors named neither file)."""
    import pandas as pd

    for kind, names in (("axis", axes), ("metric", metrics)):
        for col in names:
            if col not in points.columns:
                raise ArchsimError(
                    f"{parquet}: no column {col!r}, a{'n' if kind == 'axis' else ''} {kind} "
                    f"{meta} names; allowed: the sweep's own table (re-run the sweep)"
                )
    for col in metrics:
        if not pd.api.types.is_numeric_dtype(points[col]):
            raise ArchsimError(f"{parquet}: metric {col!r} is stored as {points[col].dtype}, "
                               "not numbers; allowed: the table a sweep writes (re-run the "
                               "sweep)")  # fmt: skip
    from archsim.report.sweep import _as_tuple

    for col in axes:  # a mapping (a Parquet struct) cannot be counted or sorted: TypeError
        for value in points[col]:
            try:
                hash(_as_tuple(value))
            except TypeError:
                raise ArchsimError(
                    f"{parquet}: axis {col!r} holds {shown_name(repr(value))}; allowed: numbers, "
                    "text, true/false or lists of them (re-run the sweep to rewrite the table)"
                ) from None


def _interrupt_came(args: argparse.Namespace) -> bool:
    """Whether the console script saw a Ctrl-C that no KeyboardInterrupt carried here: a
    library swallowed it (Cython's module initialisation registers its memoryview types with
    ``collections.abc`` under a bare ``except: pass``, which an interrupt landing there during
    an import meets; 1 sweep in ~60 interrupted as it started then ran every point), or a
    wait that ignores it ended (``LOADER_JOIN_S``)."""
    came = getattr(args, "interrupted", None)  # set by cli.main
    return came is not None and came()


def _stopped(out: Path) -> int:
    """Say that the sweep stopped and where its finished points are; the exit code."""
    where = f"the finished points are saved in {out}" if out.is_dir() else "nothing was saved"
    print(f"archsim: interrupted; {where}, run the same command again to resume", file=sys.stderr)
    return EXIT_INTERRUPTED


@contextmanager
def _interrupts(out: Path) -> Iterator[Callable[[], None]]:
    """Ctrl-C: say what happens and stop the sweep (``KeyboardInterrupt``); a second Ctrl-C
    quits at once (the store's files are each complete; the workers follow their parent).
    Yields a check that raises the interrupt again should a library have swallowed it."""
    fired: list[int] = []

    def second(_signum: int, _frame: Any) -> None:
        sys.stderr.write("archsim: interrupted again: quitting now\n")
        os._exit(EXIT_INTERRUPTED)

    def check() -> None:
        if fired:
            raise KeyboardInterrupt

    def first(signum: int, _frame: Any) -> None:
        fired.append(signum)
        signal.signal(signal.SIGINT, second)
        sys.stderr.write(
            f"\narchsim: interrupted: stopping the workers; finished points stay in {out} "
            "(Ctrl-C again to quit at once)\n"
        )
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield check
    except KeyboardInterrupt:
        raise  # ``second`` stays until the process exits: another Ctrl-C quits at once
    except BaseException:
        signal.signal(signal.SIGINT, previous)
        raise
    signal.signal(signal.SIGINT, previous)


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run the ``sweep`` subcommand; returns the exit code (see the module docstring)."""
    from archsim.explore.executor import start_workers_early, stop_workers

    if args.dask is None and (args.jobs is None or args.jobs > 1):
        # the process that forks the workers imports the simulator while this one plans
        start_workers_early(args.jobs, args.spec)
    try:
        return _sweep(args)
    finally:
        stop_workers()


#: longest wait for the background import of the sweep report at the end of a sweep, s
LOADER_JOIN_S = 5.0


def _check_not_another(out: Path, name: str) -> None:
    """Refuse a folder that holds another sweep's or another command's outputs: this sweep's
    would replace or mix with them (the same sweep's folder resumes)."""
    allowed = "allowed: a new folder, or this sweep's own folder to resume it"
    meta = out / "sweep.json"
    if meta.is_file():
        try:
            held = json.loads(meta.read_text(encoding="utf-8"))["spec"]["name"]
        except (OSError, ValueError, KeyError, TypeError):
            return  # not readable as a sweep's record: the store's own checks decide
        if held != name:
            raise ArchsimError(f"{out}: holds the sweep {held!r}, not {name!r}; {allowed}")
    elif (out / "results.json").is_file():
        from archsim.output import results_owner

        owner = results_owner(out)
        held = f"an `archsim {owner}` result (results.json)" if owner else "a results.json"
        raise ArchsimError(f"{out}: holds {held}; {allowed}")


def _cap_jobs(args: argparse.Namespace) -> None:
    """More local worker processes than CPUs gain nothing on CPU-bound points and cost 200-300
    MB each (``-j 99999999999`` started a process per point, 1,000): run one per CPU and say so.
    A remote Dask cluster's size is its own."""
    from archsim.explore.executor import default_jobs

    cpus = default_jobs()
    if args.jobs is not None and args.jobs > cpus and args.dask in (None, "local"):
        if not args.quiet:
            print(
                f"archsim: warning: -j {args.jobs}: more worker processes than the {cpus} "
                f"CPUs this process may use; running {cpus}",
                file=sys.stderr,
            )
        args.jobs = cpus


def _sweep(args: argparse.Namespace) -> int:
    from archsim.explore import plan_sweep, run_plan  # not yet totals: pandas (see below)

    if args.max_points < 1:
        raise ArchsimError(
            f"--max-points: must be >= 1 (got {args.max_points}); allowed: an integer >= 1"
        )
    plan = plan_sweep(args.spec, max_points=args.max_points)
    if args.jobs is not None and args.jobs < 1:
        raise ArchsimError(f"-j: must be >= 1 (got {args.jobs}); allowed: an integer >= 1")
    _cap_jobs(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ArchsimError(f"{out}: exists and is not a folder; allowed: a folder")
    _check_not_another(out, plan.spec.name)
    from archsim.progress import progress_bar, progress_enabled

    total = len({p.key for p in plan.points})
    bar = progress_bar(total, f"sweep {plan.spec.name}", progress_enabled(args.quiet))
    # while worker processes compute, this one mostly waits: import the sweep report
    # (jinja2 and the page code, ~0.1 s) meanwhile rather than after the last point. Its
    # module, not the package ``archsim.report``, whose names load on first use (PEP 562)
    from archsim.explore.executor import default_jobs

    parallel = args.dask is not None or (args.jobs or default_jobs()) > 1
    if _interrupt_came(args):  # a Ctrl-C while the sweep was planned
        raise KeyboardInterrupt
    loader = import_in_background("archsim.report.sweep") if parallel and total > 1 else None
    try:
        with _interrupts(out) as check, bar as advance:
            last = [0]

            def progress(done: int, _total: int) -> None:
                check()  # a Ctrl-C whose interrupt a library swallowed stops the sweep here
                advance(done - last[0])
                last[0] = done

            frame = run_plan(
                plan,
                out,
                n_jobs=args.jobs,
                dask=args.dask,
                progress=progress,
                retry_errors=args.retry_errors,
            )
            check()
    except KeyboardInterrupt:
        return _stopped(out)
    finally:
        if loader is not None:  # before any exit: no import cut short (a Ctrl-C meanwhile
            with suppress(KeyboardInterrupt):  # only ends the wait for it, < 1 s)
                # ...but never forever: a Ctrl-C that lands while this thread holds the
                # interpreter's import lock (between its acquire and the try that releases
                # it, in importlib._bootstrap) leaves it held, and the loader then waits for
                # it for ever (seen once in 40 interrupted sweeps). The thread is a daemon;
                # an import it has not finished is this thread's to finish or redo.
                loader.join(LOADER_JOIN_S)
    if _interrupt_came(args):  # a Ctrl-C during that wait, every point done
        return _stopped(out)
    from archsim.explore import totals

    points = totals(frame)
    try:
        _write_outputs(out, frame, points, f"Sweep {plan.spec.name}")
    except OSError as exc:
        raise ArchsimError(
            f"{out}: cannot write results: {os_reason(exc)}; allowed: a writable folder with "
            "room for them (the store keeps every point: running the sweep again resumes)"
        ) from None
    failed = points[points["status"] != "ok"]
    if not args.quiet:
        _summary(out, frame, points)
    for _, row in failed.head(SHOWN_ERRORS).iterrows():
        print(f"error at point {row['point']}: {row['error']}", file=sys.stderr)
    if len(failed):
        more = f" ({len(failed) - SHOWN_ERRORS} more)" if len(failed) > SHOWN_ERRORS else ""
        print(
            f"archsim: {len(failed)} of {len(points)} points failed{more}; listed in "
            f"{out / 'errors.csv'}; after a fix, run again with --retry-errors",
            file=sys.stderr,
        )
        return EXIT_POINTS_FAILED
    return 0


def _summary(out: Path, frame: pd.DataFrame, points: pd.DataFrame) -> None:
    """Print the counts and the Pareto front."""
    from archsim.explore import pareto

    c = frame.attrs["counts"]
    name = frame.attrs["name"]
    print(
        f"sweep {name}: {counted(c['points'], 'point')} ({c['ran']} run, {c['resumed']} already "
        f"in {out}, {c['errors']} errors), {c['skipped']} skipped; {c['seconds']:.1f} s"
    )
    metrics = frame.attrs["metrics"]
    minimize = [m for m, s in metrics.items() if s == "min"]
    maximize = [m for m, s in metrics.items() if s == "max"]
    front = pareto(points, minimize=minimize, maximize=maximize)
    front = front.sort_values(list(metrics)[0], ascending=metrics[list(metrics)[0]] == "min")
    print(
        f"Pareto front over {', '.join(f'{s} {m}' for m, s in metrics.items())}: "
        f"{counted(len(front), 'point')}"
    )
    if len(front):
        print(format_points(front, list(frame.attrs["axes"]), list(metrics)))
    print(
        f"wrote {out / 'results.parquet'}, points.csv, errors.csv, skipped.csv, sweep.json, "
        "report.html"
    )
