"""On a real NVIDIA GPU: seeded random GEMMs in every precision and layout, with their kernels.

A held-out GEMM set for the GPU model, wider than ``gpu_heldout_probe.py``'s: m, n and k
log-uniform in 16..16384, most rounded to a multiple of 64 but some to 8 and some left odd
(the unaligned path), a random storage of A and B for fp16/bf16/tf32/fp32, fp8 as
``torch._scaled_mm`` takes it (B column-major), int8 mostly with B stored n x k (the IMMA
kernel; a few k x n), and GEMV-like shapes (1-128 rows against a weight stored n x k). Each
is timed as ``archsim probe gpu`` times a GEMM (``gemm_random.csv``, a measurement folder with
``device_memory_energy.json``) and its kernels are listed (CUPTI, ``kernels_gemm_random.csv``).

``--unaligned`` draws only shapes with a dimension off a multiple of 8 (fp16, bf16, tf32),
the kernels cuBLAS falls back to there, and a few unaligned squares.

``--gemms-of-1x1 FOLDER`` times, instead, the GEMM of every plain 1x1 conv (stride 1, no
padding, one group) in a measurement folder's ``conv_*.csv`` as cuBLAS runs it: m = batch x h x
w, n = filters, k = channels, A the channels-last activations (m x k), B the filters (n x k),
each shape once. Set beside the convs' own times it tells which 1x1 convs cuDNN ran slower than
cuBLAS runs the same GEMM (its engine list), and whether the GPU model's GEMM library, 32 %
faster (median) than the measured batch-1 1x1 convs, is right for those shapes.

Usage (on the GPU machine; ``--backend fake`` runs the timing part here)::

    python benchmarks/gpu_gemm_random.py -o DIR [--seed 2031] [--budget-s 150] [--unaligned]
    python benchmarks/gpu_gemm_random.py -o DIR --gemms-of-1x1 benchmarks/measured/h100_2026-11-27
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

from gpu_common import conv_shapes_of, log, shapes_from_folder, timed_with_kernels

from archsim.measure.backend import GemmShape
from archsim.measure.plan import LAYOUTS
from archsim.measure.probe import gemm_rows

#: shapes per precision (before the GEMV-like ones)
COUNTS = {"fp16": 36, "bf16": 28, "tf32": 28, "fp32": 12, "fp8": 28, "int8": 12}
#: the smallest step a precision's dimensions take (the libraries' own requirements)
STEP = {"fp8": 16, "int8": 8}


def _dim(rng: random.Random, step: int, lo: int = 16, hi: int = 16384, aligned: float = 0.7) -> int:
    """Log-uniform in [lo, hi]: a multiple of 64 with probability ``aligned``, else half the
    rest a multiple of 8 and half any size (at least a multiple of ``step``)."""
    v = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    u = rng.random()
    q = 64 if u < aligned else 8 if u < (1 + aligned) / 2 else 1
    q = max(q, step)
    return max(q, int(round(v / q)) * q)


def unaligned_gemms(seed: int, count: int = 90) -> list[GemmShape]:
    """Seeded fp16/bf16/tf32 shapes with at least one dimension off a multiple of 8 (cuBLAS's
    pre-Hopper fallback kernels), in random layouts, and the unaligned squares of
    ``../shared/data/h100`` and ``gpu_heldout_probe.py`` (their kernels)."""
    rng = random.Random(seed)
    out = [GemmShape(s, s, s, "m x k", "k x n", p)
           for s in (1023, 2047, 3000, 4097) for p in ("fp16", "tf32")]  # fmt: skip
    while len(out) < count:
        m, n, k = (_dim(rng, 1, aligned=0.4) for _ in range(3))
        if 2 * m * n * k > 2.5e12 or not (m % 8 or n % 8 or k % 8):
            continue
        out.append(GemmShape(m, n, k, *rng.choice(LAYOUTS), rng.choice(("fp16", "bf16", "tf32"))))
    return out


def random_gemms(seed: int) -> list[GemmShape]:
    """Seeded shapes, each under 2.5 TFLOP (fp32: 0.3) so none runs for seconds."""
    rng = random.Random(seed)
    out: list[GemmShape] = []
    for p, count in COUNTS.items():
        made = 0
        while made < count:
            step = STEP.get(p, 1)
            m, n, k = (_dim(rng, step) for _ in range(3))
            if 2 * m * n * k > (3e11 if p == "fp32" else 2.5e12) or (p == "int8" and m <= 16):
                continue
            if p == "fp8":
                a, b = "m x k", "n x k"
            elif p == "int8":
                a, b = "m x k", ("n x k" if rng.random() < 0.75 else "k x n")
            else:
                a, b = rng.choice(LAYOUTS)
            out.append(GemmShape(m, n, k, a, b, p))
            made += 1
    for p in ("fp16", "bf16", "tf32", "fp8"):
        for _ in range(5):
            m = rng.choice((1, 2, 4, 8, 16, 32, 64, 128))
            n, k = _dim(rng, 64, 1024, 16384), _dim(rng, 64, 1024, 16384)
            out.append(GemmShape(m, n, k, "m x k", "n x k", p))
    rng.shuffle(out)  # precisions interleaved: a run cut short still samples each
    return out


def gemms_of_1x1(folder: Path) -> list[GemmShape]:
    """The GEMM of each plain 1x1 conv of ``folder`` (see the module's docstring), in file
    order, each shape once."""
    out: dict[GemmShape, None] = {}
    for c in conv_shapes_of(folder):
        if (c.r, c.s, c.stride, c.pad, c.groups) == (1, 1, 1, 0, 1):
            out[GemmShape(c.n * c.h * c.w, c.k, c.c, "m x k", "n x k", c.precision)] = None
    return list(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seed", type=int, default=2031)
    ap.add_argument("--backend", default="torch", choices=["torch", "fake"])
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--unaligned", action="store_true",
                    help="only shapes off the 16-byte rule (fp16, bf16, tf32)")  # fmt: skip
    ap.add_argument("--gemms-of-1x1", type=Path, metavar="FOLDER",
                    help="time the GEMMs of FOLDER's plain 1x1 convs instead")  # fmt: skip
    args = ap.parse_args()
    if args.gemms_of_1x1 is not None:
        shapes = shapes_from_folder(
            ap, "--gemms-of-1x1", args.gemms_of_1x1, gemms_of_1x1, "plain 1x1 convs"
        )
    else:
        shapes = unaligned_gemms(args.seed) if args.unaligned else random_gemms(args.seed)
    timed_with_kernels(
        args.backend, Path(args.out), shapes, args.budget_s,
        ("gemm_random.csv", "kernels_gemm_random.csv"),
        rows=lambda b, g: gemm_rows(b, [(None, g)], log),
        op=lambda b, g: b.gemm(g),
        head=lambda g: {"m": g.m, "n": g.n, "k": g.k, "a_stored": g.a_stored,
                        "b_stored": g.b_stored, "precision": g.precision},
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
