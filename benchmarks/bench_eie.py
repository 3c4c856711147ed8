"""EIE simulator speed. Prints a table; run with ``python benchmarks/bench_eie.py``.

Goals (issue 2): the nine benchmark layers (materialise, encode, timing, functional check,
energy) under 2 s warm; the real Alex-8 layer under 0.2 s warm; ``archsim run`` from an empty
numba cache under 60 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import archsim
from archsim.accelerators.eie import run_eie_layer
from archsim.workload import materialize_matvec

ROOT = Path(__file__).resolve().parents[1]
ALEX8 = ROOT / "tests" / "fixtures" / "eie_alexnet_fc8.yaml"


def best_of(fn, repeat: int) -> float:
    """Best wall time of ``repeat`` calls, seconds."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def cold_run_seconds() -> float:
    """``archsim run`` (defaults) in a fresh process with an empty numba cache."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp) / "numba")}
        cmd = [sys.executable, "-m", "archsim", "run", "-q", "-o", str(Path(tmp) / "out")]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=env)
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-cache run")
    args = ap.parse_args()
    hw = archsim.load_hardware("eie")
    wl = archsim.load_workload("eie_benchmarks")
    archsim.simulate(hw, wl)  # warm numba
    print(f"{'case':<34}{'wall s':>9}{'goal s':>8}{'cycles/s':>12}{'MACs/s':>11}{'numpy s':>9}")
    print("-" * 83)
    for spec in wl.layers:
        layer = materialize_matvec(spec, 0, wl.base_dir)
        t_sim = best_of(lambda layer=layer: run_eie_layer(hw, layer), args.repeat)
        run = run_eie_layer(hw, layer)
        t_np = best_of(layer.reference_output, args.repeat)
        macs = int(run.per_pe["real"].sum())
        print(
            f"  {spec.name + ' (encode+timing+func)':<32}{t_sim:>9.4f}{'':>8}"
            f"{run.cycles / t_sim:>12.3g}{macs / t_sim:>11.3g}{t_np:>9.4f}"
        )
    res = archsim.simulate(hw, wl)
    t9 = best_of(lambda: archsim.simulate(hw, wl), args.repeat)
    cyc = sum(lr.cycles for lr in res.layers)
    macs = sum(lr.macs_effective for lr in res.layers)
    print(
        f"{'nine layers, full simulate()':<34}{t9:>9.3f}{2.0:>8.1f}"
        f"{cyc / t9:>12.3g}{macs / t9:>11.3g}"
    )
    if ALEX8.is_file() and (ROOT.parent / "shared").is_dir():
        real = archsim.load_workload(ALEX8)
        archsim.simulate(hw, real)
        ta = best_of(lambda: archsim.simulate(hw, real), max(args.repeat, 5))
        r = archsim.simulate(hw, real).layers[0]
        print(
            f"{'real Alex-8, full simulate()':<34}{ta:>9.3f}{0.2:>8.1f}{r.cycles / ta:>12.3g}"
            f"{r.macs_effective / ta:>11.3g}"
        )
    if not args.no_cold:
        print(f"{'archsim run, empty numba cache':<34}{cold_run_seconds():>9.2f}{60.0:>8.1f}")


if __name__ == "__main__":
    main()
