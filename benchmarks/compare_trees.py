"""Run the same sweeps with two archsim source trees and check that their results are identical.

For a change that must not change any number (a faster executor, a leaner memo): each spec runs
with ``python -m archsim sweep SPEC -o DIR -j N -q`` once per tree (``PYTHONPATH`` = the tree),
then ``results.parquet`` and ``points.csv`` are compared row by row (``DataFrame.equals``: same
columns, dtypes and values, NaN where NaN) and ``errors.csv`` and ``skipped.csv`` byte for byte.
``point_key`` is left out: it hashes the model's source code (``provenance.model_fingerprint``),
so that a store never resumes a point computed by other code, and differs by design.

    git archive 190897c | tar -x -C /tmp/sweep_base
    python benchmarks/compare_trees.py /tmp/sweep_base . eie_pes_fifo_width v100_sms_hbm -j 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

BYTE_FILES = ("errors.csv", "skipped.csv")
#: differs by design between trees (see the module docstring)
SOURCE_KEYED = ["point_key"]


def run_tree(tree: Path, spec: str, out: Path, jobs: int) -> float:
    """``archsim sweep`` from ``tree`` into ``out``; wall seconds."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    cmd = [sys.executable, "-m", "archsim", "sweep", spec, "-o", str(out), "-j", str(jobs), "-q"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=tree, check=False)
    if done.returncode not in (0, 1):  # 1: some points failed, which both trees must agree on
        raise SystemExit(f"{' '.join(cmd)} (PYTHONPATH={tree}) exited {done.returncode}")
    return time.perf_counter() - t0


def compare(old: Path, new: Path) -> list[str]:
    """What differs between two sweep folders (empty when nothing does)."""
    problems = []
    for name, read in (("results.parquet", pd.read_parquet), ("points.csv", pd.read_csv)):
        a = read(old / name).drop(columns=SOURCE_KEYED)
        b = read(new / name).drop(columns=SOURCE_KEYED)
        if not a.equals(b):
            problems.append(f"{name} differs ({a.shape} vs {b.shape})")
            for c in a.columns.intersection(b.columns):
                if not a[c].equals(b[c]):
                    problems.append(f"  column {c!r}")
    for name in BYTE_FILES:
        if (old / name).read_bytes() != (new / name).read_bytes():
            problems.append(f"{name} differs")
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="source tree of the reference (e.g. a git archive)")
    ap.add_argument("new", type=Path, help="source tree to check")
    ap.add_argument("specs", nargs="+", help="sweep presets or YAML paths")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    failed = False
    for spec in args.specs:
        with tempfile.TemporaryDirectory(prefix="compare-trees-") as tmp:
            outs = [Path(tmp) / "old", Path(tmp) / "new"]
            walls = [
                run_tree(t, spec, o, args.jobs)
                for t, o in zip((args.old, args.new), outs, strict=True)
            ]
            problems = compare(*outs)
            rows = len(pd.read_parquet(outs[1] / "results.parquet"))
            verdict = "identical" if not problems else "DIFFERENT"
            print(
                f"{spec}: {rows} rows, {verdict} (old {walls[0]:.1f} s, new {walls[1]:.1f} s, "
                f"-j {args.jobs})"
            )
            for p in problems:
                print(f"  {p}")
            failed |= bool(problems)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
