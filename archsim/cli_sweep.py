"""``archsim sweep SPEC -o DIR [-j N] [--dask ADDRESS|local]``: run a design-space sweep.

Writes ``DIR/results.parquet`` (one row per point and layer), ``DIR/points.csv`` (one row per
point), ``DIR/skipped.csv``, ``DIR/sweep.json`` (spec, archsim version, determinism statement),
the resumable store ``DIR/store/`` and ``DIR/report.html``; prints the Pareto front.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.errors import ArchsimError

if TYPE_CHECKING:  # pandas and the sweep engine load when a sweep runs, not for `--help`
    import pandas as pd

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
        type=int,
        default=None,
        help="worker processes (default: the CPUs available)",
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
    def atomic(name: str, write: Any) -> None:
        tmp = out / f".{name}.tmp"
        write(tmp)
        os.replace(tmp, out / name)

    atomic("results.parquet", lambda p: frame.to_parquet(p, index=False))
    atomic("points.csv", lambda p: points.to_csv(p, index=False))
    import pandas as pd

    skipped = pd.DataFrame(frame.attrs.get("skipped", []))
    atomic("skipped.csv", lambda p: skipped.to_csv(p, index=False))
    from archsim.report import write_sweep_report

    metrics = list(frame.attrs["metrics"])
    axes = list(frame.attrs["axes"])
    write_sweep_report(points, out / "report.html", axes=axes, metrics=metrics, title=title)


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
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        axes, metrics, name = list(meta["axes"]), list(meta["metrics"]), meta["spec"]["name"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ArchsimError(
            f"{meta_path}: not a sweep.json written by `archsim sweep` ({type(exc).__name__}: "
            f"{exc}); allowed: re-run the sweep to rewrite it"
        ) from None
    points = totals(pd.read_parquet(parquet))
    return write_sweep_report(points, folder, axes=axes, metrics=metrics, title=f"Sweep {name}")


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run the ``sweep`` subcommand; returns the exit code."""
    from archsim.explore import pareto, plan_sweep, run_plan, totals

    plan = plan_sweep(args.spec)
    if args.jobs is not None and args.jobs < 1:
        raise ArchsimError(f"-j: must be >= 1 (got {args.jobs})")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ArchsimError(f"{out}: exists and is not a folder; allowed: a folder")
    from archsim.progress import progress_bar, progress_enabled

    total = len({p.key for p in plan.points})
    bar = progress_bar(total, f"sweep {plan.spec.name}", progress_enabled(args.quiet))
    with bar as advance:
        last = [0]

        def progress(done: int, _total: int) -> None:
            advance(done - last[0])
            last[0] = done

        try:
            frame = run_plan(
                plan,
                out,
                n_jobs=args.jobs,
                dask=args.dask,
                progress=progress,
                retry_errors=args.retry_errors,
            )
        except KeyboardInterrupt:
            raise ArchsimError(
                f"interrupted; the points that finished are saved in {out}, run the same "
                "command again to resume"
            ) from None
    points = totals(frame)
    try:
        _write_outputs(out, frame, points, f"Sweep {plan.spec.name}")
    except OSError as exc:
        raise ArchsimError(f"{out}: cannot write results: {exc.strerror}") from None
    if args.quiet:
        return 0
    c = frame.attrs["counts"]
    print(
        f"sweep {plan.spec.name}: {c['points']} points ({c['ran']} run, {c['resumed']} already "
        f"in {out}, {c['errors']} errors), {c['skipped']} skipped; {c['seconds']:.1f} s"
    )
    metrics = frame.attrs["metrics"]
    minimize = [m for m, s in metrics.items() if s == "min"]
    maximize = [m for m, s in metrics.items() if s == "max"]
    front = pareto(points, minimize=minimize, maximize=maximize)
    front = front.sort_values(list(metrics)[0], ascending=metrics[list(metrics)[0]] == "min")
    print(
        f"Pareto front over {', '.join(f'{s} {m}' for m, s in metrics.items())}: "
        f"{len(front)} points"
    )
    if len(front):
        print(format_points(front, list(frame.attrs["axes"]), list(metrics)))
    failed = points[points["status"] != "ok"]
    for _, row in failed.head(3).iterrows():
        print(f"error at point {row['point']}: {row['error']}")
    if len(failed) > 3:
        print(f"... {len(failed) - 3} more errors (status, error in points.csv)")
    print(f"wrote {out / 'results.parquet'}, points.csv, report.html")
    return 0
