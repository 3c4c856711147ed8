"""On a real NVIDIA GPU: what reading C costs a GEMM, and how fast output-bound GEMMs store D.

The model reads C in every ``gemm`` layer (DeepBench's GEMMs run beta = 1), while the measured
folders time ``torch.mm`` (beta = 0, C never read); without that phantom C read every H100 set
comes out faster and worse, and the thirty-eighth session found a candidate for what it stands
in for: the L2's store bandwidth (``y.copy_(x)`` writes ~1818 B per SM clock; GEMMs of small K
spend ~71 SM cycles per kB of output tile; ``benchmarks/RESULTS.md``). This script times, the
probe's way (CUDA graphs, ``archsim.measure.probe.time_in_graph``), GEMMs whose time is mostly
their output (K of 16-128, 12-220 MB of D) and long-K controls, each twice: ``torch.mm(A, B,
out=D)`` (beta 0) and ``torch.addmm(C, A, B, out=D)`` (beta 1: C read once more), and lists
each call's kernels (CUPTI), so a change of kernel shows. What to read in ``beta.csv``: the
extra time of beta 1 against C's bytes at the HBM / L2 rates, and the beta-0 time per output
byte.

    python benchmarks/gpu_beta_epilogue.py -o DIR               # on the GPU machine
    python benchmarks/gpu_beta_epilogue.py -o DIR --backend fake  # the logic, here

Writes ``DIR/beta.csv`` (per shape: both times, us, the difference, C's MB, the kernels) and
``DIR/beta0/gemm_beta0.csv`` (the beta-0 rows as a measurement folder, for ``archsim validate
tensor_core --measured DIR/beta0``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from gpu_common import log

from archsim.measure.backend import GemmShape
from archsim.measure.folder import write_folder
from archsim.measure.probe import gemm_rows, time_in_graph

#: (m, n, k, precision): small-K GEMMs the model was 12-47 % fast on (random_gemms_2031/2033,
#: fp8 rows run here in fp16), unaligned ones it is slow on, then long-K controls
SHAPES = [
    (448, 13440, 16, "fp16"), (2816, 4776, 24, "fp16"), (10944, 832, 96, "fp16"),
    (11776, 1664, 64, "bf16"), (6368, 5776, 64, "fp16"), (5536, 2880, 128, "fp16"),
    (4686, 10752, 64, "bf16"), (15291, 7296, 64, "fp16"),
    # unaligned (K or N off a multiple of 8): cuBLAS's cutlass_75 align1 fallback kernels, where
    # the model's C read doubles the epilogue at the family's 2-byte fill rate (+72-91 % on
    # unaligned_gemms_2032's 15176 x 1192 x 19 and 15488 x 936 x 21)
    (15176, 1192, 19, "fp16"), (9022, 1057, 31, "fp16"),
    (1024, 1024, 1024, "fp16"), (4096, 4096, 4096, "fp16"), (8192, 1024, 8192, "bf16"),
]  # fmt: skip
OUT_BYTES = {"fp16": 2, "bf16": 2}


def beta1_op(backend, g: GemmShape):  # type: ignore[no-untyped-def]
    """``torch.addmm(C, A, B, out=D)`` for ``g`` (row-major A and B); on the fake backend its
    plain GEMM (the logic, not the cost)."""
    torch = getattr(backend, "torch", None)
    if torch is None:
        return backend.gemm(g)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[g.precision]
    dev = backend.device
    a = torch.randn((g.m, g.k), device=dev, dtype=torch.float32).to(dtype)
    b = torch.randn((g.k, g.n), device=dev, dtype=torch.float32).to(dtype)
    c = torch.randn((g.m, g.n), device=dev, dtype=torch.float32).to(dtype)
    d = torch.empty_like(c)
    return lambda: torch.addmm(c, a, b, out=d)


def kernel_names(backend, op) -> str:  # type: ignore[no-untyped-def]
    """The kernels one call of ``op`` launches, ``;``-joined ('' on the fake backend)."""
    torch = getattr(backend, "torch", None)
    if torch is None:
        return ""
    from gpu_kernel_names import kernels_of

    return ";".join(k["name"] for k in kernels_of(torch, op, reps=1))


def table(rows0: pd.DataFrame, beta1_s: list[float | None], names: list[tuple[str, str]]):
    """Per shape: beta-0 and beta-1 time per call (us), their difference and C's MB."""
    out = rows0[["m", "n", "k", "precision"]].copy().reset_index(drop=True)
    out["beta0_us"] = rows0["time_s"].to_numpy() * 1e6
    out["beta1_us"] = [None if t is None else t * 1e6 for t in beta1_s]
    out["c_read_us"] = out["beta1_us"] - out["beta0_us"]
    out["c_mb"] = out.m * out.n * out.precision.map(OUT_BYTES) / 1e6
    out["kernels_beta0"] = [n0 for n0, _ in names]
    out["kernels_beta1"] = [n1 for _, n1 in names]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--backend", default="torch", choices=["torch", "fake"])
    args = ap.parse_args()
    from archsim.measure.loader import load_backend

    out = Path(args.out)
    b = load_backend(args.backend)
    shapes = [GemmShape(m, n, k, "m x k", "k x n", p) for m, n, k, p in SHAPES]
    log(f"{len(shapes)} GEMMs, beta 0 (torch.mm)")
    rows0 = gemm_rows(b, [(None, g) for g in shapes], log)
    done = [GemmShape(int(r.m), int(r.n), int(r.k), r.a_stored, r.b_stored, r.precision)
            for r in rows0.itertuples()]  # fmt: skip  # the shapes that ran (fit, supported)
    beta1, names = [], []
    for g in done:
        op1 = beta1_op(b, g)
        t = time_in_graph(b, op1)
        beta1.append(None if t is None else t.time_s)
        names.append((kernel_names(b, b.gemm(g)), kernel_names(b, op1)))
        log(f"{g.m}x{g.n}x{g.k} {g.precision} beta 1: "
            f"{'-' if t is None else f'{t.time_s * 1e6:.2f} us'}")  # fmt: skip
        b.release()
    result = table(rows0, beta1, names)
    out.mkdir(parents=True, exist_ok=True)
    result.to_csv(out / "beta.csv", index=False)
    doc = {"device": b.device_info(), "memory_eager": {}, "energy": {}}
    write_folder(out / "beta0", {"gemm_beta0.csv": rows0}, doc)
    cols = ["m", "n", "k", "precision", "beta0_us", "beta1_us", "c_read_us", "c_mb"]
    print(result[cols].to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
