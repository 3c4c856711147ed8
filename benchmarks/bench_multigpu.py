"""Speed of the multi-GPU model: a 64-GPU all-reduce sweep and a ResNet-50 training step.

Goals (issue 20): 8 DGX H100 nodes (64 GPUs), all-reduce over 30 sizes in under 10 s warm; one
ResNet-50 training step on 8 GPUs in under 5 s warm. Prints min / median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

from archsim.system import load_system
from archsim.system.api import collective
from archsim.system.training import train_step


def _time(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    cluster = load_system("dgx_h100").with_overrides({"nodes": 8})
    sizes = [1 << (10 + i) for i in range(30)]  # 1 KiB .. 512 GiB: 30 sizes
    collective(cluster, "all_reduce", sizes[:2])  # warm
    sweep = _time(lambda: collective(cluster, "all_reduce", sizes), args.repeat)
    train_step("dgx_a100", "resnet50", gpus=8)  # warm (numba, presets)
    step = _time(lambda: train_step("dgx_a100", "resnet50", gpus=8), args.repeat)
    print(f"{'case':<52} {'min s':>8} {'median s':>9} {'goal s':>7}")
    for name, t, goal in (
        ("64-GPU DGX H100 all-reduce, 30 sizes", sweep, 10.0),
        ("ResNet-50 training step, 8 GPUs (DGX A100)", step, 5.0),
    ):
        print(f"{name:<52} {min(t):>8.3f} {statistics.median(t):>9.3f} {goal:>7.1f}")


if __name__ == "__main__":
    main()
