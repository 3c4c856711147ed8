"""On a real NVIDIA GPU: does a profiler session change the probe's per-call GEMM times?

The random GEMM sets of ``benchmarks/measured/h100_2026-11-27`` (``random_gemms_2031``,
``random_gemms_2033``, ``unaligned_gemms_2032``) were timed one shape at a time, each right
after the previous shape's kernels had been listed under the PyTorch profiler (CUPTI). Their
per-call times exceed the kernels' own durations by 0.50-0.57 us (median, single-kernel calls
under 20 us), where the same card model timed without the profiler in between (that folder's
``gemm_random.csv``, ``kernels.csv``) shows 0.1-0.2 us; the GPU model is 8-10 % fast on the
first sets and 2 % on the second. This script tells the two conditions apart on one card, in
one process: it times small GEMMs the probe's way (CUDA graphs, ``archsim.measure.probe``),
then runs the profiler over one GEMM as ``gpu_gemm_random.py`` does, then times the same
GEMMs again, and prints each shape's per-call time before and after.

    python benchmarks/gpu_cupti_gap.py -o DIR [--count 24]       # on the GPU machine
    python benchmarks/gpu_cupti_gap.py -o DIR --backend fake     # the logic, here

Writes ``DIR/before/gemm_random.csv`` and ``DIR/after/gemm_random.csv`` (measurement folders:
``archsim validate tensor_core --measured DIR/before``) and ``DIR/gap.csv`` (both times per
shape, us).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import pandas as pd
from gpu_common import log

from archsim.measure.backend import GemmShape
from archsim.measure.probe import gemm_rows

#: the shapes: the first small rows of this random set (times under 20 us there)
SOURCE = (
    Path(__file__).parent / "measured" / "h100_2026-11-27" / "random_gemms_2031" / "gemm_random.csv"
)
#: and two rows of ../shared/data/h100/gemm_square.csv (2.543 and 2.831 us per call there)
REFERENCE = [GemmShape(128, 128, 128, "m x k", "n x k", "fp8"), GemmShape(128, 128, 128)]


def small_shapes(count: int) -> list[GemmShape]:
    """``REFERENCE`` and the first ``count`` rows of ``SOURCE`` timed under 20 us."""
    rows = pd.read_csv(SOURCE)
    rows = rows[rows.time_s < 20e-6].head(count)
    found = [GemmShape(int(r.m), int(r.n), int(r.k), r.a_stored, r.b_stored, r.precision)
             for r in rows.itertuples()]  # fmt: skip
    return REFERENCE + found


def _folder(out: Path, name: str, frame: pd.DataFrame, device: dict) -> None:
    (out / name).mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / name / "gemm_random.csv", index=False)
    doc = {"device": device, "memory_eager": {}, "energy": {}}
    (out / name / "device_memory_energy.json").write_text(json.dumps(doc, indent=1) + "\n")


KEY = ["m", "n", "k", "a_stored", "b_stored", "precision"]


def gaps(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Per shape: per-call time before and after the profiler session, us, and the change
    (empty where a shape was timed only once: it ran out of memory or was skipped)."""
    cols = [*KEY, "time_s"]
    before = before.reindex(columns=cols)  # a pass that timed nothing has no columns
    before["order"] = range(len(before))
    after = after.reindex(columns=cols)
    both = before.merge(after, on=KEY, how="outer", suffixes=("_before", "_after"))
    both = both.sort_values("order", kind="stable", na_position="last")  # the shapes' order
    out = both[KEY].reset_index(drop=True)
    both = both.reset_index(drop=True)
    out["before_us"] = both["time_s_before"] * 1e6
    out["after_us"] = both["time_s_after"] * 1e6
    out["change_us"] = out["after_us"] - out["before_us"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--count", type=int, default=24, help="shapes from the random set")
    ap.add_argument("--backend", default="torch", choices=["torch", "fake"])
    args = ap.parse_args()
    from archsim.measure.loader import load_backend

    out = Path(args.out)
    b = load_backend(args.backend)
    shapes = [(None, g) for g in small_shapes(args.count)]
    log(f"{len(shapes)} GEMMs, timed before any profiler session")
    before = gemm_rows(b, shapes, log)
    if args.backend == "torch":
        import torch
        from gpu_kernel_names import kernels_of

        g = shapes[-1][1]
        kernels_of(torch, b.gemm(g), reps=3)  # b.gemm returns the call, as gpu_common's op
    log("the same GEMMs after one profiler session")
    after = gemm_rows(b, shapes, log)
    device = b.device_info()
    _folder(out, "before", before, device)
    _folder(out, "after", after, device)
    table = gaps(before, after)
    table.to_csv(out / "gap.csv", index=False)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    change = table["change_us"].dropna()
    if len(change):
        med, lo, hi, n = statistics.median(change), change.min(), change.max(), len(change)
        print(f"per-call change after the profiler: median {med:+.3f} us, "
              f"min {lo:+.3f}, max {hi:+.3f} ({n} GEMMs)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
