"""SCNN and DCNN simulator speed and memory. Prints a table: ``python benchmarks/bench_cnn.py``.

Goals (issue 3): VGG-16's 13 conv layers on SCNN, every product's bank accounted for, under
30 s warm on 2 cores; AlexNet under 5 s; peak memory under 4 GB.
"""

from __future__ import annotations

import argparse
import resource
import time

import archsim

GOALS = {("scnn", "alexnet"): 5.0, ("scnn", "vgg16"): 30.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--networks", nargs="+", default=["alexnet", "googlenet", "vgg16"])
    args = ap.parse_args()
    archsim.simulate("scnn", "alexnet")  # compile / warm the numba caches
    archsim.simulate("dcnn", "alexnet")
    print(
        f"{'model':<6}{'network':<11}{'wall s':>8}{'goal s':>8}{'cycles':>13}"
        f"{'MACs/s':>10}{'cycles/s':>10}"
    )
    for hw in ("scnn", "dcnn"):
        for net in args.networks:
            t = time.perf_counter()
            res = archsim.simulate(hw, net)
            dt = time.perf_counter() - t
            macs = sum(lr.macs_effective for lr in res.layers)
            goal = GOALS.get((hw, net))
            print(
                f"{hw:<6}{net:<11}{dt:>8.2f}{goal if goal else '':>8}{res.total_cycles:>13,}"
                f"{macs / dt:>10.3g}{res.total_cycles / dt:>10.3g}"
            )
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(f"peak resident memory: {peak_gb:.2f} GB (goal < 4)")


if __name__ == "__main__":
    main()
