"""On a real NVIDIA GPU: seeded random conv layers, timed the probe's way, with their kernels.

Held-out convs for the GPU conv model: shapes drawn from a seeded generator (batch 1-256,
channels 8-512 in multiples of 8 and a few C = 3 image layers, filters 16-512, 7-112 pixels,
1x1 to 7x7 filters, stride 1 or 2), not from any network the model was checked on. Each is
timed as ``archsim probe gpu`` times a conv (``conv_random.csv``, a measurement folder with
``device_memory_energy.json``) and its kernels are listed (CUPTI, ``kernels_random.csv``).

Usage (on the GPU machine; ``--backend fake`` runs the timing part here)::

    python benchmarks/gpu_conv_random.py -o DIR [--count 120] [--seed 2027]
    python benchmarks/gpu_conv_random.py -o DIR --from-folder FOLDER --benchmark-limit 0

``--from-folder`` times a measurement folder's convs again instead (every ``conv_*.csv`` in it,
e.g. ``benchmarks/measured/h100_2026-11-27/random_convs``; ``--nets alexnet`` keeps one net's);
``--benchmark-limit N`` sets ``torch.backends.cudnn.benchmark_limit`` first (PyTorch times only
the heuristic's first N cuDNN engines, 10 by default; 0: all of them), to tell which of the
model's misses are cuDNN not trying its fastest engine. Both are recorded in the JSON's
``settings``.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from gpu_common import conv_shape, conv_shapes_of, log, shapes_from_folder, timed_with_kernels

from archsim.measure.backend import ConvShape
from archsim.measure.probe import conv_rows


def random_convs(count: int, seed: int) -> list[ConvShape]:
    """``count`` seeded conv shapes (at most 2e11 MACs and 2^28 input elements each)."""
    rng = random.Random(seed)
    out: list[ConvShape] = []
    while len(out) < count:
        n = rng.choice((1, 8, 32, 64, 128, 256))
        c = 3 if rng.random() < 0.08 else rng.choice((8, 16, 24, 32, 48, 64, 96, 128, 192, 256,
                                                        384, 512))  # fmt: skip
        k = rng.choice((16, 32, 48, 64, 96, 128, 192, 256, 384, 512))
        hw = rng.choice((7, 14, 28, 56, 112))
        r = rng.choice((1, 3, 3, 5, 7))
        st = 2 if rng.random() < 0.25 else 1
        shape = conv_shape("random", f"r{len(out):03d}", n, c, k, hw, r, st, r // 2)
        q = shape.p
        if q < 1 or n * c * hw * hw > 1 << 28 or n * q * q * k * c * r * r > 2e11:
            continue
        out.append(shape)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--count", type=int, default=120)
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--backend", default="torch", choices=["torch", "fake"])
    ap.add_argument("--budget-s", type=float, default=170.0)
    ap.add_argument("--from-folder", type=Path, help="time this folder's conv_*.csv convs")
    ap.add_argument("--benchmark-limit", type=int, help="torch.backends.cudnn.benchmark_limit")
    ap.add_argument("--nets", help="with --from-folder: only these nets' convs (comma separated)")
    args = ap.parse_args()
    if args.benchmark_limit is not None and args.benchmark_limit < 0:
        ap.error(f"--benchmark-limit: {args.benchmark_limit}; allowed: 0 (every engine) or more")
    if args.from_folder is not None:
        shapes = shapes_from_folder(
            ap, "--from-folder", args.from_folder, conv_shapes_of, "conv_*.csv rows"
        )
        if args.nets:
            nets = set(args.nets.split(","))
            shapes = [c for c in shapes if c.net in nets]
            if not shapes:
                ap.error(f"--nets: no conv of {args.nets} in {args.from_folder}")
    else:
        shapes = random_convs(args.count, args.seed)

    def setup(b: object) -> dict:
        torch = getattr(b, "torch", None)  # the fake backend has no cuDNN to set
        if torch is not None and args.benchmark_limit is not None:
            torch.backends.cudnn.benchmark_limit = args.benchmark_limit
        limit = None if torch is None else torch.backends.cudnn.benchmark_limit
        return {"from_folder": str(args.from_folder or ""), "cudnn_benchmark_limit": limit}

    timed_with_kernels(
        args.backend,
        Path(args.out),
        shapes,
        args.budget_s,
        ("conv_random.csv", "kernels_random.csv"),
        rows=lambda b, c: conv_rows(b, [c], log),
        op=lambda b, c: b.conv(c),
        head=lambda c: {"layer": c.layer},
        setup=setup,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
