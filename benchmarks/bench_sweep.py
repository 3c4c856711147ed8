"""Sweep speed: the 1,000-point EIE sweep (sweeps/eie_pes_fifo_width.yaml, nine layers).

0. `archsim sweep` as a user runs it, whole process, `-j 1` and `-j N` alternately (`--runs`
   each): wall time, CPU time of the process tree, peak RSS of the parent and of each worker,
   the speed-up from the minima and medians, and a check that every results.parquet is
   identical; the load average before and after (the machine may be shared);
1. local process pool with -j workers: wall time and points/s;
2. the same points on Dask with 1 and with 2 workers, started by the sweep (`--dask local`,
   start-up included) and already running (`--dask ADDRESS`, ``--repeat`` runs each, the
   workers' memo cleared before each): speed-ups from the medians, and a check that all the
   frames are identical, bit for bit.

    python benchmarks/bench_sweep.py                 # everything, 1,000 points
    python benchmarks/bench_sweep.py --limit 200     # the first 200 points only
    python benchmarks/bench_sweep.py --no-dask --kill   # also: SIGKILL halfway, then resume
    python benchmarks/bench_sweep.py --cli-only --runs 3  # only the -j 1 / -j N comparison

Each run writes its durable store into a fresh temporary folder, as `archsim sweep` would.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dask
import pandas as pd
from dask.distributed import Client, LocalCluster

from archsim import memo
from archsim.explore import SweepStore, plan_sweep, run_plan
from archsim.explore.executor import chunk_size, default_jobs, local_cluster_config
from archsim.explore.schedule import IN_FLIGHT_PER_WORKER


def timed(label: str, plan, **kwargs) -> tuple[pd.DataFrame, float]:
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as out:
        t0 = time.perf_counter()
        frame = run_plan(plan, out, **kwargs)
        wall = time.perf_counter() - t0
    n = len(plan.points)
    errors = frame.attrs["counts"]["errors"]
    print(f"{label:<28}{n:>7}{wall:>10.1f}{n / wall:>10.2f}{errors:>8}")
    return frame, wall


def cli_run(spec: str, jobs: int, out: str) -> dict:
    """One `archsim sweep` process: wall s, CPU s of its tree, peak RSS MB of it and each child."""
    import psutil  # a dependency of dask.distributed

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "archsim", "sweep", spec, "-o", out, "-j", str(jobs), "-q"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    top, peak = psutil.Process(proc.pid), {}
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            for p in [top, *top.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):  # it may end as we look
                    peak[p.pid] = max(peak.get(p.pid, 0), p.memory_info().rss)
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    children = sorted((v >> 20 for k, v in peak.items() if k != proc.pid), reverse=True)
    return {"wall": wall, "cpu": cpu, "parent": peak.get(proc.pid, 0) >> 20, "children": children}


def compare_jobs(args: argparse.Namespace) -> None:
    """`-j 1` and `-j N` alternately, whole process as a user runs it."""
    runs: dict[int, list[dict]] = {1: [], args.jobs: []}
    frames = []
    print(f"load average before: {os.getloadavg()}")
    for r in range(args.runs):
        for j in runs:
            with tempfile.TemporaryDirectory(prefix="bench-cli-") as out:
                m = cli_run(args.spec, j, out)
                frames.append(pd.read_parquet(Path(out) / "results.parquet"))
            runs[j].append(m)
            print(
                f"run {r + 1} -j {j}: {m['wall']:.1f} s wall, {m['cpu']:.1f} s CPU, parent "
                f"{m['parent']} MB, processes under it (MB): {m['children']}",
                flush=True,
            )
    print(f"load average after: {os.getloadavg()}")
    walls = {j: [m["wall"] for m in ms] for j, ms in runs.items()}
    cpus = {j: [m["cpu"] for m in ms] for j, ms in runs.items()}
    n = args.jobs
    print(
        f"-j 1 / -j {n}: min {min(walls[1]):.1f} / {min(walls[n]):.1f} s = "
        f"{min(walls[1]) / min(walls[n]):.2f}x; median {statistics.median(walls[1]):.1f} / "
        f"{statistics.median(walls[n]):.1f} s = "
        f"{statistics.median(walls[1]) / statistics.median(walls[n]):.2f}x (goal >= 1.8x); "
        f"CPU median {statistics.median(cpus[1]):.1f} / {statistics.median(cpus[n]):.1f} s"
    )
    workers = [c for m in runs[n] for c in m["children"]]
    print(f"-j {n}: largest process under the sweep {max(workers, default=0)} MB (goal < 300)")
    report_identical(frames, "results.parquet in all runs")


def report_identical(frames: list[pd.DataFrame], what: str) -> None:
    """Print whether ``frames`` are identical, and which columns differ where they are not."""
    same = all(frames[0].equals(f) for f in frames)
    print(f"identical {what} ({len(frames)}): {same}")
    if same:
        return
    for i, f in enumerate(frames[1:], 1):
        if list(f.columns) != list(frames[0].columns):
            print(f"frame {i}: columns in another order or set")
        for c in frames[0].columns.intersection(f.columns):
            if not frames[0][c].equals(f[c]):
                print(f"frame {i}: column {c!r} differs in {(frames[0][c] != f[c]).sum()} rows")
    raise SystemExit("results differ")


def kill_and_resume(args: argparse.Namespace, plan) -> None:
    """Run in a child process, SIGKILL it once half the points are stored, then resume."""
    n = len(plan.points)
    with tempfile.TemporaryDirectory(prefix="bench-kill-") as out:
        child = [
            sys.executable,
            __file__,
            "--spec",
            args.spec,
            "-j",
            str(args.jobs),
            "--child",
            out,
        ] + (["--limit", str(args.limit)] if args.limit else [])
        t0 = time.perf_counter()
        proc = subprocess.Popen(child)
        store = SweepStore(out)
        while proc.poll() is None and len(store.finished()) < n // 2:
            time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_after = time.perf_counter() - t0
        before = store.finished()
        t0 = time.perf_counter()
        frame = run_plan(plan, out, n_jobs=args.jobs)
        resumed = time.perf_counter() - t0
        c = frame.attrs["counts"]
        stored = store.tables()[0].to_pandas()
        dups = int(stored.duplicated(["point_key", "layer_index"]).sum())
        print(
            f"SIGKILL after {killed_after:.1f} s with {len(before)} of {n} points stored; "
            f"re-run: {c['ran']} run, {c['resumed']} resumed in {resumed:.1f} s"
        )
        in_flight = args.jobs * IN_FLIGHT_PER_WORKER * chunk_size(n, args.jobs)
        print(
            f"points in the store: {stored['point_key'].nunique()} (expected "
            f"{len({p.key for p in plan.points})}), duplicate rows: {dups}; point runs: "
            f"{len(before)} + {c['ran']} = {len(before) + c['ran']} for {n} points, plus at most "
            f"{in_flight} in flight when killed (lost)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="eie_pes_fifo_width")
    ap.add_argument("-j", "--jobs", type=int, default=min(2, default_jobs()))
    ap.add_argument("--limit", type=int, default=None, help="run only the first N points")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--kill", action="store_true", help="SIGKILL a sweep halfway and resume")
    ap.add_argument("--repeat", type=int, default=3, help="runs per running-cluster size")
    ap.add_argument("--runs", type=int, default=3, help="CLI runs per -j value (alternating)")
    ap.add_argument("--cli-only", action="store_true", help="only the -j 1 / -j N comparison")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    plan = plan_sweep(args.spec)
    if args.limit:
        plan = dataclasses.replace(plan, points=plan.points[: args.limit])
    if args.child:
        run_plan(plan, args.child, n_jobs=args.jobs)
        return
    if args.limit is None:
        compare_jobs(args)
        if args.cli_only:
            return
    if args.kill:
        kill_and_resume(args, plan)
    print(f"spec {args.spec}: {len(plan.points)} points, {len(plan.spec.workloads)} workload(s)")
    print(f"{'executor':<28}{'points':>7}{'wall s':>10}{'points/s':>10}{'errors':>8}")
    pool, _ = timed(f"process pool, {args.jobs} workers", plan, n_jobs=args.jobs)
    if args.no_dask:
        return
    one, t1 = timed("dask local, 1 worker", plan, n_jobs=1, dask="local")
    two, t2 = timed("dask local, 2 workers", plan, n_jobs=2, dask="local")
    frames = [pool, one, two]
    walls: dict[int, list[float]] = {1: [], 2: []}
    prepared: dict[int, list[int]] = {}
    for k in (1, 2):  # a cluster already up (as with --dask ADDRESS): no start-up in the time
        with (
            dask.config.set(local_cluster_config()),  # what `--dask local` starts
            LocalCluster(
                n_workers=k, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            Client(cluster) as client,
        ):
            client.run(importlib.import_module, "archsim.accelerators")
            for r in range(args.repeat):
                client.run(memo.clear)  # each run starts cold, as a fresh sweep would
                label = f"dask running cluster, {k} w. #{r + 1}"
                frame, wall = timed(label, plan, dask=cluster.scheduler_address)
                walls[k].append(wall)
                frames.append(frame)
                prepared[k] = [
                    st["computed"].get("eie.prepared", 0) for st in client.run(memo.stats).values()
                ]
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(
        f"dask speed-up 2 vs 1 workers: {t1 / t2:.2f}x with LocalCluster start-up; on a running "
        f"cluster {med[1]:.1f} s / {med[2]:.1f} s = {med[1] / med[2]:.2f}x from the medians of "
        f"{args.repeat} runs (1 worker {min(walls[1]):.1f}-{max(walls[1]):.1f} s, 2 workers "
        f"{min(walls[2]):.1f}-{max(walls[2]):.1f} s; goal >= 1.7x)"
    )
    layers = len(plan.points[0].workload.layers)
    for k, counts in prepared.items():  # an EIE preparation: one layer for one PE count
        print(
            f"EIE preparations on the running cluster, {k} worker(s): {counts} per worker = "
            f"{sum(counts) / layers:g} PE-count groups of {layers} layers"
        )
    report_identical(frames, "results (pool and the dask runs)")


if __name__ == "__main__":
    main()
