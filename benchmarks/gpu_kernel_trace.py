"""On a real NVIDIA GPU: which kernels a framework launches, and how long each takes.

Answers, on silicon, questions the per-shape timings of ``gpu_heldout_probe.py`` leave open:

* ``trace_<net>_n<batch>_<mode>.json.gz``: a PyTorch profiler (CUPTI) trace of torchvision
  ResNet-50 / GoogLeNet forward passes (fp16, channels-last, eval, ``cudnn.benchmark``), eager
  and as CUDA-graph replays: every kernel's name and duration, so the kernels per conv
  (split-K reductions, layout transforms) and per batch-norm / ReLU / add are counted;
* ``kernels_networks.csv``: one CUDA-graph forward's kernels of each of those traces;
* ``floors.csv``: element-wise kernels (ReLU, eval batch-norm, add) by size, timed in CUDA
  graphs the probe's way; int8 ``torch._int_mm`` with B row-major and column-major.

Usage (on the GPU machine)::

    python benchmarks/gpu_kernel_trace.py -o DIR
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd
from gpu_common import NETS, forward_op, log, torchvision_net

from archsim.measure.backend import GemmShape
from archsim.measure.loader import load_backend
from archsim.measure.probe import time_in_graph


def profiled_events(prof) -> list[dict]:
    """The trace events of a finished ``torch.profiler.profile`` (its Chrome trace, parsed)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        prof.export_chrome_trace(path)
        return json.loads(Path(path).read_text()).get("traceEvents", [])


def trace(torch, out: Path, name: str, fn, graph: bool, reps: int = 3) -> None:
    """Profile ``reps`` calls of ``fn`` (or replays of a graph of one call); gzip the trace."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        g.replay()
        torch.cuda.synchronize()
        call = g.replay
    else:
        call = fn
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            call()
        torch.cuda.synchronize()
    keep = [e for e in profiled_events(prof) if e.get("cat") in ("kernel", "gpu_memcpy",
            "gpu_memset", "cuda_runtime", "cuda_driver")]  # fmt: skip
    with gzip.open(out / f"trace_{name}.json.gz", "wt") as f:
        json.dump(keep, f)
    kernels = [e for e in keep if e.get("cat") == "kernel"]
    log(f"trace {name}: {len(kernels)} kernels, {sum(e['dur'] for e in kernels) / reps:.1f} us "
        "of kernels per call")  # fmt: skip
    if graph:
        summarise(kernels, reps, name, out / "kernels_networks.csv")


def kernel_rows(kernels: list[dict]) -> list[dict]:
    """One row per kernel event of ``kernels`` (in start order): its index, name, grid, block,
    duration and the gap to the next one (us; None for the last)."""
    rows = []
    for i, e in enumerate(kernels):
        a = e.get("args", {})
        gap = kernels[i + 1]["ts"] - (e["ts"] + e["dur"]) if i + 1 < len(kernels) else None
        rows.append({"index": i, "kernel": e["name"].split("(")[0][:120],
                     "grid": str(a.get("grid")), "block": str(a.get("block")),
                     "dur_us": e["dur"], "gap_to_next_us": gap})  # fmt: skip
    return rows


def summarise(kernels: list[dict], reps: int, name: str, path: Path) -> None:
    """Append the second of ``reps`` calls' kernels (name, grid, block, duration, gap to the
    next) to the CSV at ``path``."""
    ks = sorted(kernels, key=lambda e: e["ts"])
    per = len(ks) // reps
    one = ks[per : 2 * per] if reps > 1 else ks
    net, batch, mode = name.rsplit("_", 2)
    head = {"net": f"torchvision_{net}", "batch": int(batch[1:]), "mode": mode}
    rows = [head | r for r in kernel_rows(one)]
    pd.DataFrame(rows).to_csv(path, mode="a", header=not path.exists(), index=False)


def networks(torch, out: Path, names=("resnet50", "googlenet"), batches=(1, 256)) -> None:
    for net in names:
        model = torchvision_net(torch, net)
        for n in batches:
            fn = forward_op(torch, model, n)
            for mode in ("eager", "graph"):
                try:
                    trace(torch, out, f"{net}_n{n}_{mode}", fn, mode == "graph")
                except Exception as exc:  # noqa: BLE001 - keep the other traces
                    log(f"trace {net} n={n} {mode} failed: {exc}")
            del fn
            torch.cuda.empty_cache()


def floors(torch, out: Path) -> None:
    b = load_backend("torch")
    rows = []
    cl = torch.channels_last
    for n, c, hw in ((1, 64, 56), (1, 256, 56), (1, 512, 28), (1, 2048, 7), (32, 256, 56),
                     (256, 256, 56), (8, 64, 112)):  # fmt: skip
        x = torch.randn(n, c, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=cl)
        y = torch.randn_like(x)
        bn = torch.nn.BatchNorm2d(c).cuda().half().eval()
        ops = {
            "relu_": lambda x=x: torch.relu_(x),
            "batchnorm_eval": lambda x=x, bn=bn: bn(x),
            "add_": lambda x=x, y=y: x.add_(y),
            "maxpool3s2": lambda x=x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
        }
        for name, op in ops.items():
            with torch.no_grad():
                t = time_in_graph(b, op)
            rows.append({"op": name, "n": n, "c": c, "hw": hw, "bytes": x.numel() * 2,
                         "time_s": t.time_s if t else float("nan")})  # fmt: skip
            log(f"{name} {n}x{c}x{hw}x{hw}: {rows[-1]['time_s'] * 1e6:.2f} us")
        del x, y
        b.release()
    for s in (1024, 4096, 8192):
        for bs in ("k x n", "n x k"):
            for a in ("m x k", "k x m"):
                g = GemmShape(s, s, s, a, bs, "int8")
                try:
                    t = time_in_graph(b, b.gemm(g))
                except RuntimeError as exc:
                    log(f"int8 {s} {a}/{bs}: {exc}")
                    continue
                finally:
                    b.release()
                rows.append({"op": f"int8_mm {a}/{bs}", "n": s, "c": s, "hw": s, "bytes": 0,
                             "time_s": t.time_s if t else float("nan")})  # fmt: skip
                log(f"int8 {s} {a}/{bs}: {rows[-1]['time_s'] * 1e6:.2f} us, "
                    f"{2 * s**3 / rows[-1]['time_s'] / 1e12:.0f} TOPS")  # fmt: skip
    pd.DataFrame(rows).to_csv(out / "floors.csv", index=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--nets", default="resnet50,googlenet", help=f"of {', '.join(NETS)}")
    ap.add_argument("--batches", default="1,256")
    ap.add_argument("--no-floors", action="store_true", help="only the network traces")
    args = ap.parse_args()
    import torch

    torch.backends.cudnn.benchmark = True
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nets = tuple(args.nets.split(","))
    batches = tuple(int(b) for b in args.batches.split(","))
    steps = [] if args.no_floors else [floors]
    steps.append(lambda torch, out: networks(torch, out, nets, batches))
    for step in steps:
        try:
            step(torch, out)
        except Exception as exc:  # noqa: BLE001 - keep what the other step wrote
            log(f"{getattr(step, '__name__', 'networks')} failed: {exc!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
