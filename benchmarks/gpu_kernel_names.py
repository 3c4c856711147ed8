"""On a real NVIDIA GPU: the kernels cuBLAS picks for a list of GEMMs (name, grid, duration).

For each GEMM (made as ``archsim probe gpu`` makes it) a few calls run under the PyTorch
profiler (CUPTI) after warm-up; every kernel of a call is written to ``kernels.csv``: the
GEMM, the kernel's name (its tile, cluster and scheduler are spelled in it), grid, block,
registers, shared memory and its mean duration. It answers which kernel family, tile, split-K
or Stream-K the library really runs where the model's choice is in doubt.

Usage (on the GPU machine)::

    python benchmarks/gpu_kernel_names.py -o DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from gpu_common import conv_shape

from archsim.measure.backend import ConvShape, GemmShape
from archsim.measure.loader import load_backend

LAY = {"NN": ("m x k", "k x n"), "NT": ("m x k", "n x k"), "TN": ("k x m", "k x n"),
       "TT": ("k x m", "n x k")}  # fmt: skip


def shapes() -> list[tuple[GemmShape, str]]:
    out = []
    for p in ("fp16", "tf32", "bf16", "fp8"):
        for s in (128, 256, 512, 1024, 1536, 2048, 3072, 4096, 8192):
            lay = "NT" if p == "fp8" else "NN"
            out.append((GemmShape(s, s, s, *LAY[lay], p), lay))
    for s in (1024, 4096):
        for lay in ("NT", "TN", "TT"):
            out.append((GemmShape(s, s, s, *LAY[lay], "tf32"), lay))
    for m, n, k, p, lay in ((10304, 128, 768, "tf32", "NN"), (128, 384, 1600, "tf32", "TT"),
                            (1088, 576, 128, "tf32", "NT"), (64, 448, 448, "tf32", "NN"),
                            (64, 128, 8512, "bf16", "TT"), (64, 1344, 2432, "fp16", "NT"),
                            (4, 1600, 2112, "fp16", "NT"), (1000, 1000, 1000, "fp16", "NN"),
                            (4100, 4100, 4100, "fp16", "NN"), (4095, 4095, 4095, "fp16", "NN"),
                            (3000, 3000, 3000, "tf32", "NN"), (896, 128, 5312, "fp8", "NT"),
                            (1024, 1024, 1024, "int8", "NN"), (1024, 1024, 1024, "int8", "NT"),
                            (4096, 4096, 4096, "int8", "NT")):  # fmt: skip
        out.append((GemmShape(m, n, k, *LAY[lay], p), lay))
    return out


def convs() -> list[ConvShape]:
    """Conv layers whose model error was largest (googlenet 5x5 and 3x3 at batch 256,
    first layers with C=3, batch-1 3x3s)."""
    spec = (("g3a_5x5", 256, 16, 32, 28, 5, 1, 2), ("g3b_5x5", 256, 32, 96, 28, 5, 1, 2),
            ("g3b_3x3", 256, 128, 192, 28, 3, 1, 1), ("g4e_5x5", 256, 32, 128, 14, 5, 1, 2),
            ("r50_conv1", 256, 3, 64, 224, 7, 2, 3), ("vgg_conv1_1", 256, 3, 64, 224, 3, 1, 1),
            ("alex_conv1", 256, 3, 96, 227, 11, 4, 0), ("r50_5b_3x3", 256, 512, 512, 7, 3, 1, 1),
            ("r50_2a_1x1", 256, 64, 256, 56, 1, 1, 0), ("r50_2b_3x3_n1", 1, 64, 64, 56, 3, 1, 1),
            ("g_1x1_n1", 1, 480, 192, 14, 1, 1, 0))  # fmt: skip
    return [conv_shape("probe", *row) for row in spec]


def kernels_of(torch, op, reps: int = 5) -> list[dict]:
    from gpu_kernel_trace import profiled_events
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        op()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            op()
        torch.cuda.synchronize()
    ks = sorted((e for e in profiled_events(prof) if e.get("cat") == "kernel"),
                key=lambda e: e["ts"])  # fmt: skip
    per = len(ks) // reps
    rows = []
    for i in range(per):
        same = ks[i::per]
        a = same[0].get("args", {})
        rows.append({"index": i, "name": same[0]["name"], "grid": str(a.get("grid")),
                     "block": str(a.get("block")), "regs": a.get("registers per thread"),
                     "smem": a.get("shared memory"),
                     "dur_us": sum(e["dur"] for e in same) / len(same)})  # fmt: skip
    return rows


def cases(b) -> list[tuple[str, dict, object]]:
    """(label, CSV fields, a function making the op) of every GEMM and conv."""
    out = [(f"{g.m}x{g.n}x{g.k} {g.precision} {lay}",
            {"m": g.m, "n": g.n, "k": g.k, "precision": g.precision, "layout": lay},
            lambda g=g: b.gemm(g)) for g, lay in shapes()]  # fmt: skip
    out += [(c.layer, {"m": c.n, "n": c.k, "k": c.c, "precision": "fp16",
                       "layout": f"conv:{c.layer}"}, lambda c=c: b.conv(c))
            for c in convs()]  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    import torch

    b = load_backend("torch")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for label, fields, make in cases(b):
        try:
            ks = kernels_of(torch, make())
        except Exception as exc:  # noqa: BLE001 - keep the other cases
            print(f"{label}: {exc!r}", file=sys.stderr)
            continue
        finally:
            b.release()
        rows += [{**fields, **k} for k in ks]
        short = "; ".join(f"{k['name'][:60]} {k['grid']} {k['dur_us']:.2f}us" for k in ks)
        print(f"{label}: {short}", file=sys.stderr, flush=True)
        pd.DataFrame(rows).to_csv(out / "kernels.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
