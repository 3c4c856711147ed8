"""The H100 model against measurement folders, one summary table per folder, and a whole network.

For each folder: median / p90 |error| and Spearman over all rows, GEMM rows (without int8
timed with B row-major, which runs cuBLAS's slow wmma kernel), conv rows, each file and each
conv file at each batch, and the NVML energy entries. With ``--network``, a measured
torchvision ResNet-50 forward (``network_resnet50.csv``: graph and eager) against
``archsim.system.inference.inference_pass``.

Usage::

    python benchmarks/gpu_measured_folders.py ../shared/data/h100 \\
        benchmarks/measured/h100_2026-11-27 \\
        --network benchmarks/measured/h100_2026-11-27/network_resnet50.csv
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from archsim.measure.folder import read_folder
from archsim.system.inference import InferenceOptions, inference_pass
from archsim.validation.measured import compare, error_stats, load_gpu


def line(rows: pd.DataFrame, label: str) -> str:
    done = rows[rows["sim_time_s"].notna()]
    s = error_stats(done["time_s"], done["sim_time_s"])
    return (f"  {label:34s} n={len(done):4d} median {s['median_abs_error']:6.1%} p90 "
            f"{s['p90_abs_error']:6.1%} Spearman {s['spearman']:.4f}")  # fmt: skip


def folder_table(hw, path: str) -> None:
    c = compare(hw, read_folder(path))
    r = c.rows
    print(path)
    print(line(r, "all"))
    gemm = r[r["file"].str.startswith("gemm_")]
    print(line(gemm[~((gemm["precision"] == "int8") & (gemm["layout"] == "NN"))],
               "gemm (int8 NN apart)"))  # fmt: skip
    print(line(r[r["file"].str.startswith("conv_")], "conv"))
    for f in sorted(set(r["file"])):
        print(line(r[r["file"] == f], f))
    for f in sorted(x for x in set(r["file"]) if x.startswith("conv_")):
        rows = r[r["file"] == f]
        for b in sorted(set(rows["batch"].dropna())):
            print(line(rows[rows["batch"] == b], f"{f} batch {int(b)}"))
    for e in c.energy.itertuples():
        if pd.notna(e.sim_energy_j):
            err = e.sim_energy_j / e.joules_per_call - 1
            print(f"  energy {e.entry:24s} {e.joules_per_call:.4g} J/call measured, "
                  f"{e.sim_energy_j:.4g} simulated ({err:+.1%})")  # fmt: skip


def network_table(hw, path: str) -> None:
    rows = pd.read_csv(path)
    print(f"{path} (torchvision ResNet-50 v1.5 forward, fp16, channels-last)")
    for r in rows.itertuples():
        out = []
        for launch, measured in (("graph", r.graph_s), ("eager", r.eager_s)):
            opts = InferenceOptions("amp_fp16", int(r.batch), launch)
            p = inference_pass(hw, "resnet50_v1_5", opts)
            out.append(f"{launch} {measured * 1e3:7.3f} / {p.time_s * 1e3:7.3f} ms "
                       f"({p.time_s / measured - 1:+6.1%})")  # fmt: skip
        print(f"  batch {int(r.batch):3d}: " + " | ".join(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--hardware", default="h100")
    ap.add_argument("--network", help="network_resnet50.csv of a measured folder")
    args = ap.parse_args()
    hw = load_gpu(args.hardware)
    for path in args.folders:
        folder_table(hw, path)
    if args.network:
        network_table(hw, args.network)
    return 0


if __name__ == "__main__":
    sys.exit(main())
