"""Measure, on a real NVIDIA GPU, what ``../shared/data/h100`` does not hold, in the probe's format.

The held-out checks of the GPU model (issue 16) use shapes, layouts, precisions, networks and
energy readings that the visible folder lacks. This script times them the probe's way
(:mod:`archsim.measure.probe`: CUDA graphs of back-to-back calls, NVML readings) and writes each
table as it goes, so a run cut short still leaves every finished row:

* ``gemm_layouts.csv``: 1024/4096/8192^3 fp16, bf16, tf32 in NN, NT, TN, TT;
* ``gemm_random.csv``: seeded random shapes (m, n, k log-uniform 64..16384, multiples of 64; a
  random layout) in every precision, and small-m (1-64 row) GEMV-like shapes;
* ``gemm_unaligned.csv``: sizes 1000 (16-byte aligned in fp16), 4100 (8-byte), 2047/3000/6000/
  8191, and odd-m-only shapes (aligned k and n);
* ``gemm_square.csv``: a few sizes of ``shared/data/h100/gemm_square.csv`` (ties this card to it);
* ``conv_<net>.csv``: the convs of the ResNet-50, GoogLeNet, VGG-16 and AlexNet presets at batch
  1, 32 and 256;
* ``device_memory_energy.json``: device, launch floors, energy of 8192^3 GEMMs in every precision
  (and fp16 on zeros) and of a 1 GB copy, and burst traces (clock from idle) of several sizes;
* ``network_resnet50.csv``: torchvision ResNet-50 (v1.5) forward, fp16, channels-last, eval,
  ``cudnn.benchmark``, in a CUDA graph and eagerly, by batch.

Usage (on the GPU machine; ``--backend fake`` runs it here, without the network rows)::

    python benchmarks/gpu_heldout_probe.py -o DIR [--budget-s 330] [--backend torch]
"""

from __future__ import annotations

import json
import random
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path

import pandas as pd
from gpu_common import forward_op, log, script_parser, torchvision_net

from archsim.measure.backend import GemmShape
from archsim.measure.loader import load_backend
from archsim.measure.plan import FULL, LAYOUTS, network_convs, square_gemm
from archsim.measure.probe import (
    burst_readings,
    conv_rows,
    energy_readings,
    gemm_rows,
    memory_eager,
    time_in_graph,
)

PRECISIONS = ("fp16", "bf16", "tf32", "fp32", "fp8", "int8")
#: the probe's plan with this script's energy entries and bursts (4 s and 1 s each)
HELDOUT = replace(
    FULL,
    energy_gemms=(*((p, 8192, False) for p in ("fp16", "bf16", "fp8", "tf32", "fp32", "int8")),
                  ("fp16", 8192, True)),
    bursts=(("fp16", 1536), ("fp16", 3072), ("fp16", 8192), ("bf16", 4096)),
)  # fmt: skip


def _pow2_64(rng: random.Random, lo: int = 64, hi: int = 16384) -> int:
    """Log-uniform in [lo, hi], rounded to a multiple of 64."""
    import math

    v = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return max(lo, int(round(v / 64)) * 64)


def random_gemms(seed: int = 2026) -> list[GemmShape]:
    """Seeded random shapes, each within 2^33 FLOP-ish so none runs for seconds."""
    rng = random.Random(seed)
    counts = {"fp16": 18, "bf16": 10, "tf32": 10, "fp32": 5, "fp8": 14, "int8": 6}
    out = []
    for p, count in counts.items():
        made = 0
        while made < count:
            m, n, k = (_pow2_64(rng) for _ in range(3))
            if 2 * m * n * k > 2.5e12 or (p == "fp32" and 2 * m * n * k > 3e11):
                continue
            if p == "fp8":
                a, b = "m x k", "n x k"  # torch._scaled_mm: B column-major only
            elif p == "int8":
                a, b = "m x k", "k x n"
            else:
                a, b = rng.choice(LAYOUTS)
            out.append(GemmShape(m, n, k, a, b, p))
            made += 1
    for p in ("fp16", "bf16", "fp8"):  # GEMV-like: a few rows against a weight stored n x k
        for _ in range(4):
            m = rng.choice((1, 2, 4, 16, 32, 64))
            n, k = _pow2_64(rng, 1024, 16384), _pow2_64(rng, 1024, 16384)
            out.append(GemmShape(m, n, k, "m x k", "n x k", p))
    return out


def unaligned_gemms() -> list[GemmShape]:
    """Square sizes with 2/4/8/16-byte-aligned leading dimensions, and odd m alone."""
    out = [square_gemm(s, p) for s in (1000, 2047, 3000, 4100, 6000, 8191)
           for p in ("fp16", "bf16", "tf32")]  # fmt: skip
    for m, nk, p in ((1000, 4096, "fp16"), (2999, 4096, "fp16"), (5001, 8192, "fp16"),
                     (2999, 4096, "bf16"), (2999, 4096, "tf32"), (777, 12288, "fp16")):  # fmt: skip
        out.append(GemmShape(m, nk, nk, "m x k", "k x n", p))
    return out


def layout_gemms() -> list[GemmShape]:
    return [GemmShape(s, s, s, a, b, p) for s in (1024, 4096, 8192)
            for p in ("fp16", "bf16", "tf32") for a, b in LAYOUTS]  # fmt: skip


def tie_gemms() -> list[GemmShape]:
    return [square_gemm(s, p) for s, p in (
        (1024, "fp16"), (2048, "fp16"), (4096, "fp16"), (8192, "fp16"), (16384, "fp16"),
        (8192, "bf16"), (8192, "tf32"), (8192, "fp8"), (4096, "fp32"), (8192, "int8"))]  # fmt: skip


class Session:
    def __init__(self, out: Path, backend_name: str, budget_s: float) -> None:
        self.out, self.t0, self.budget_s = out, time.monotonic(), budget_s
        self.backend = load_backend(backend_name)
        self.backend_name = backend_name
        self.doc: dict = {"device": self.backend.device_info(), "energy": {}, "bursts": {}}
        out.mkdir(parents=True, exist_ok=True)
        self.write_doc()

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.t0)

    def write_doc(self) -> None:
        text = json.dumps(self.doc, indent=1, allow_nan=True)
        (self.out / "device_memory_energy.json").write_text(text + "\n")

    def append(self, name: str, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        path = self.out / name
        old = pd.read_csv(path) if path.exists() else None
        frame = frame if old is None else pd.concat([old, frame], ignore_index=True)
        frame.to_csv(path, index=False, float_format="%.6g")

    def gemms(self, name: str, shapes: list[GemmShape], reserve_s: float) -> None:
        for g in shapes:
            if self.left() < reserve_s:
                log(f"{name}: out of time, {len(shapes)} shapes not all done")
                return
            self.append(name, gemm_rows(self.backend, [(None, g)], log))

    def convs(self, net: str, batches: tuple[int, ...], reserve_s: float) -> None:
        for c in network_convs(net, batches):
            if self.left() < reserve_s:
                log(f"conv {net}: out of time")
                return
            self.append(f"conv_{net}.csv", conv_rows(self.backend, [c], log))

    def energy(self) -> None:
        """The probe's energy block for 8192^3 in every precision, fp16 on zeros, a 1 GB copy."""
        self.doc["energy"] = energy_readings(self.backend, HELDOUT, log)
        self.write_doc()

    def bursts(self) -> None:
        """The probe's burst traces from idle for HELDOUT's sizes."""
        self.doc["bursts"] = burst_readings(self.backend, HELDOUT, log)
        self.write_doc()

    def resnet50(self, batches: tuple[int, ...]) -> None:
        """torchvision ResNet-50 forward (fp16, NHWC, eval), graph and eager, by batch."""
        if self.backend_name != "torch":
            return
        import torch

        b = self.backend
        model = torchvision_net(torch, "resnet50")
        for n in batches:
            if self.left() < 60:
                return
            op = forward_op(torch, model, n)
            t = time_in_graph(b, op)
            eager = min(b.eager(op, 10) / 10 for _ in range(3))
            row = {"net": "torchvision_resnet50", "batch": n, "precision": "fp16",
                   "memory_format": "nhwc", "graph_s": t.time_s if t else float("nan"),
                   "graph_min_s": t.min_s if t else float("nan"),
                   "eager_s": eager, "sm_mhz": t.sm_mhz if t else float("nan"),
                   "board_w": t.board_w if t else float("nan")}  # fmt: skip
            log(f"resnet50 n={n}: graph {row['graph_s'] * 1e3:.3f} ms, eager {eager * 1e3:.3f} ms")
            self.append("network_resnet50.csv", pd.DataFrame([row]))
            del op
            b.release()


def main() -> int:
    ap = script_parser(__doc__)
    ap.add_argument("--budget-s", type=float, default=330.0)
    ap.add_argument("--only", help="comma-separated section names (default: all)")
    ap.add_argument("--conv-batches", default=",".join(map(str, FULL.conv_batches)),
                    help="batches of the conv sections (default: the probe's)")  # fmt: skip
    args = ap.parse_args()
    batches = tuple(int(b) for b in args.conv_batches.split(","))
    s = Session(Path(args.out), args.backend, args.budget_s)
    log(f"device: {s.doc['device']}")
    steps = [
        ("launch floors", lambda: s.doc.update(memory_eager=memory_eager(s.backend, (64,), log))),
        ("energy", s.energy),
        ("layouts", lambda: s.gemms("gemm_layouts.csv", layout_gemms(), 200)),
        ("tie", lambda: s.gemms("gemm_square.csv", tie_gemms(), 200)),
        ("unaligned", lambda: s.gemms("gemm_unaligned.csv", unaligned_gemms(), 190)),
        ("random", lambda: s.gemms("gemm_random.csv", random_gemms(), 170)),
        ("resnet50 whole", lambda: s.resnet50((1, 8, 32, 64, 128, 256))),
        ("bursts", s.bursts),
        ("conv resnet50", lambda: s.convs("resnet50", batches, 15)),
        ("conv googlenet", lambda: s.convs("googlenet", batches, 15)),
        ("conv vgg16", lambda: s.convs("vgg16", batches, 15)),
        ("conv alexnet", lambda: s.convs("alexnet", batches, 5)),
    ]
    if args.only:
        keep = set(args.only.split(","))
        steps = [(name, step) for name, step in steps if name in keep]
    for name, step in steps:
        if s.left() < 5:
            log(f"skipped {name}: out of time")
            continue
        log(f"== {name} ({s.left():.0f} s left)")
        try:
            step()
        except Exception:  # noqa: BLE001 - keep every other section's rows
            log(f"{name} failed:\n{traceback.format_exc()}")
            s.backend.release()
        s.write_doc()
    log(f"done in {time.monotonic() - s.t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
