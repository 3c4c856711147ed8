"""The 1,000-point EIE sweep with two archsim source trees, alternating: old/new x -j 1/-j 2.

Whole ``archsim sweep`` processes as ``bench_sweep.py --cli-only`` runs them (its ``cli_run``:
wall, CPU of the process tree, peak RSS of the parent and of every process under it), each
tree from its own folder (``python -m`` puts the working folder first on ``sys.path``), then
min / median per tree and ``-j``, the largest process, and whether every results.parquet is
identical (``point_key`` left out: it hashes the model's source, see ``compare_trees.py``).

    git archive 190897c | tar -x -C /tmp/sweep_base
    python benchmarks/bench_sweep_trees.py /tmp/sweep_base . --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sweep import cli_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--spec", default="eie_pes_fifo_width")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    res: dict[tuple[str, int], list[dict]] = {(t, j): [] for t in trees for j in (1, 2)}
    ref: pd.DataFrame | None = None
    same = True
    print(f"load before: {os.getloadavg()}", flush=True)
    for r in range(args.runs):
        for j in (1, 2):
            for t, path in trees.items():
                os.environ["PYTHONPATH"] = str(path)
                os.chdir(path)
                with tempfile.TemporaryDirectory() as out:
                    m = cli_run(args.spec, j, out)
                    frame = pd.read_parquet(Path(out) / "results.parquet")
                frame = frame.drop(columns=["point_key"])
                ref = frame if ref is None else ref
                same &= ref.equals(frame)
                res[(t, j)].append(m)
                print(
                    f"round {r + 1} {t} -j {j}: {m['wall']:.1f} s wall, {m['cpu']:.1f} s CPU, "
                    f"parent {m['parent']} MB, under it {m['children']} MB, "
                    f"load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    print(f"load after: {os.getloadavg()}")
    for t in trees:
        w1 = [m["wall"] for m in res[(t, 1)]]
        w2 = [m["wall"] for m in res[(t, 2)]]
        c1 = statistics.median(m["cpu"] for m in res[(t, 1)])
        c2 = statistics.median(m["cpu"] for m in res[(t, 2)])
        big = max(c for m in res[(t, 2)] for c in m["children"])
        one = max(m["parent"] for m in res[(t, 1)])
        print(
            f"{t} ({trees[t]}): -j 1 {min(w1):.1f} / {statistics.median(w1):.1f} s, -j 2 "
            f"{min(w2):.1f} / {statistics.median(w2):.1f} s = {min(w1) / min(w2):.2f}x / "
            f"{statistics.median(w1) / statistics.median(w2):.2f}x (min / median); CPU median "
            f"{c1:.1f} / {c2:.1f} s; -j 2: largest process under the sweep {big} MB; -j 1: "
            f"the sweep's process {one} MB"
        )
    print(f"identical results.parquet in every run (point_key aside): {same}")


if __name__ == "__main__":
    main()
