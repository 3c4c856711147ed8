"""Tensor-core GPU simulator speed. Prints a table: ``python benchmarks/bench_gpu.py``.

Goal (issue 16, which tightens issue 4's 10 s): all 160 DeepBench training GEMMs on each of
V100, A100 and H100 in under 2 s warm (numba caches loaded) on 2 cores. Also: the conv networks
on V100/A100/H100 and the SimPy event count (batched: thousands).
"""

from __future__ import annotations

import argparse
import resource
import time

import archsim

GOALS = {(part, "deepbench_gemm"): 2.0 for part in ("v100", "a100", "h100")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--parts", nargs="+", default=["v100", "a100", "h100"])
    ap.add_argument("--workloads", nargs="+", default=["deepbench_gemm", "alexnet", "resnet50"])
    args = ap.parse_args()
    t = time.perf_counter()
    archsim.simulate("v100", "alexnet")  # compile / warm the numba caches
    print(f"warm-up (numba cache load or compile): {time.perf_counter() - t:.2f} s")
    print(
        f"{'part':<6}{'workload':<16}{'layers':>7}{'wall s':>8}{'goal s':>8}{'events':>8}"
        f"{'sim ms':>10}{'TFLOP/s sim':>12}"
    )
    for hw in args.parts:
        for wl in args.workloads:
            t = time.perf_counter()
            res = archsim.simulate(hw, wl)
            dt = time.perf_counter() - t
            goal = GOALS.get((hw, wl))
            flops = 2 * sum(lr.macs_dense for lr in res.layers)
            print(
                f"{hw:<6}{wl:<16}{len(res.layers):>7}{dt:>8.2f}{goal if goal else '':>8}"
                f"{res.metadata['simpy_events']:>8}{res.total_time_s * 1e3:>10.2f}"
                f"{flops / res.total_time_s / 1e12:>12.1f}"
            )
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(f"peak resident memory: {peak_gb:.2f} GB")


if __name__ == "__main__":
    main()
