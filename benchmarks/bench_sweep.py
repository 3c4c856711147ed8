"""Sweep speed: the 1,000-point EIE sweep (sweeps/eie_pes_fifo_width.yaml, nine layers).

1. local process pool with -j workers: wall time and points/s;
2. the same points on a Dask LocalCluster with 1 and with 2 workers: speed-up, and a check that
   the three frames are identical, bit for bit.

    python benchmarks/bench_sweep.py                 # everything, 1,000 points
    python benchmarks/bench_sweep.py --limit 200     # the first 200 points only
    python benchmarks/bench_sweep.py --no-dask

Each run writes its durable store into a fresh temporary folder, as `archsim sweep` would.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time

import pandas as pd

from archsim.explore import plan_sweep, run_plan
from archsim.explore.executor import default_jobs


def timed(label: str, plan, **kwargs) -> tuple[pd.DataFrame, float]:
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as out:
        t0 = time.perf_counter()
        frame = run_plan(plan, out, **kwargs)
        wall = time.perf_counter() - t0
    n = len(plan.points)
    errors = frame.attrs["counts"]["errors"]
    print(f"{label:<28}{n:>7}{wall:>10.1f}{n / wall:>10.2f}{errors:>8}")
    return frame, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="eie_pes_fifo_width")
    ap.add_argument("-j", "--jobs", type=int, default=min(2, default_jobs()))
    ap.add_argument("--limit", type=int, default=None, help="run only the first N points")
    ap.add_argument("--no-dask", action="store_true")
    args = ap.parse_args()
    plan = plan_sweep(args.spec)
    if args.limit:
        plan = dataclasses.replace(plan, points=plan.points[: args.limit])
    print(f"spec {args.spec}: {len(plan.points)} points, {len(plan.spec.workloads)} workload(s)")
    print(f"{'executor':<28}{'points':>7}{'wall s':>10}{'points/s':>10}{'errors':>8}")
    pool, _ = timed(f"process pool, {args.jobs} workers", plan, n_jobs=args.jobs)
    if args.no_dask:
        return
    one, t1 = timed("dask LocalCluster, 1 worker", plan, n_jobs=1, dask="local")
    two, t2 = timed("dask LocalCluster, 2 workers", plan, n_jobs=2, dask="local")
    print(f"dask speed-up 2 vs 1 workers: {t1 / t2:.2f}x (goal >= 1.7x)")
    same = pool.equals(one) and pool.equals(two)
    print(f"identical results (pool, dask x1, dask x2): {same}")
    if not same:
        raise SystemExit("results differ between executors")


if __name__ == "__main__":
    main()
