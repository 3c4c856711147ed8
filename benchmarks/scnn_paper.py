"""The whole GoogLeNet density sweep of Parashar et al. (ISCA 2017, Section 6), as a curve.

    python benchmarks/scnn_paper.py [--densities 0.1,0.2,...] [--seed N]

The paper's claims (network speed-ups, energy ratios, the sweep's endpoints and crossover) are
checked by ``archsim validate scnn``; this prints the points between them.
"""

from __future__ import annotations

import argparse

from archsim.validation import Runs
from archsim.validation.scnn import density_variant, speedup_vs_dcnn

DENSITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--densities", type=lambda s: [float(x) for x in s.split(",")])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    runs = Runs(seed=args.seed)
    print(f"{'density':>8}{'SCNN/DCNN perf':>16}")
    for d in args.densities or DENSITIES:
        speedup = speedup_vs_dcnn(runs, density_variant("googlenet", d))
        print(f"{d:>8.2f}{speedup:>16.3f}", flush=True)


if __name__ == "__main__":
    main()
