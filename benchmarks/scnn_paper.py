"""SCNN vs DCNN against Parashar et al. (ISCA 2017): network speed-ups, energy ratios and the
GoogLeNet density sweep. Prints tables; run with ``python benchmarks/scnn_paper.py``."""

from __future__ import annotations

import argparse
import time

import archsim

PAPER_SPEEDUP = {"alexnet": 2.37, "googlenet": 2.19, "vgg16": 3.52}


def networks(seed: int) -> None:
    """Network-wide speed-up and energy ratios (SCNN and DCNN-opt vs DCNN)."""
    dcnn_opt = archsim.load_hardware("dcnn").with_overrides({"optimized": True})
    print(
        f"{'network':<10}{'SCNN cyc':>12}{'DCNN cyc':>12}{'speedup':>9}{'paper':>7}"
        f"{'err %':>7}{'E SCNN':>8}{'E opt':>8}{'wall s':>8}"
    )
    for net, paper in PAPER_SPEEDUP.items():
        t = time.perf_counter()
        res = archsim.simulate("scnn", net, seed=seed, baseline="dcnn")
        opt = archsim.simulate(dcnn_opt, net, seed=seed)
        base = res.metadata["baseline"]
        sp = base["speedup_vs_dcnn"]
        e_opt = base["total_energy_pj"] / opt.total_energy_pj
        print(
            f"{net:<10}{res.total_cycles:>12,}{base['total_cycles']:>12,}{sp:>9.2f}{paper:>7.2f}"
            f"{(sp - paper) / paper * 100:>7.1f}{base['energy_ratio_vs_dcnn']:>8.2f}"
            f"{e_opt:>8.2f}{time.perf_counter() - t:>8.1f}"
        )


def density_sweep(seed: int) -> None:
    """GoogLeNet with every layer's weight and activation density set to d."""
    wl = archsim.load_workload("googlenet")
    print(f"{'density':>8}{'SCNN/DCNN perf':>16}")
    for d in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 1.0):
        layers = [
            lay.model_copy(update={"weight_density": d, "activation_density": d})
            for lay in wl.layers
        ]
        swl = wl.model_copy(update={"layers": layers, "name": f"googlenet_d{d}"})
        res = archsim.simulate("scnn", swl, seed=seed, baseline="dcnn")
        print(f"{d:>8.2f}{res.metadata['baseline']['speedup_vs_dcnn']:>16.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-sweep", action="store_true")
    args = ap.parse_args()
    networks(args.seed)
    if not args.no_sweep:
        density_sweep(args.seed)


if __name__ == "__main__":
    main()
