"""On a real NVIDIA GPU: one training step of torchvision ResNet-50 on one GPU, images per second.

The single-GPU step that ``archsim.train_step(system, "resnet50_v1_5", gpus=1)`` models:
forward, backward and an SGD-momentum update, channels-last, in automatic mixed precision
(``torch.autocast`` FP16 with FP32 master weights and a ``GradScaler``) and in TF32, with
synthetic inputs on the GPU (no data loader), ``cudnn.benchmark`` on, steps launched eagerly
as the usual training loop does. Per (precision, batch): 5 warm-up steps, then the median of
5 timed runs of 10 steps each. Writes ``train_step.csv``.

``--trace``: then one more step under the PyTorch profiler (CUPTI) with a
``torch.cuda.synchronize()`` after each phase -- forward (the loss included), backward, optimizer
(``GradScaler.step`` and ``update``) -- so every kernel falls in its phase's window: each kernel's
name, grid, block, duration and gap to the next in ``kernels_train_step.csv``, and per phase the
kernels, their busy time and the phase's span in ``train_phases.csv``. Which kernels hold a
step's time beyond the model's (data and weight gradients, batch-norm backward) is read there.

Usage (on the GPU machine)::

    python benchmarks/gpu_train_step.py -o DIR [--batches 64,128,256] [--trace]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
from gpu_common import log
from gpu_kernel_trace import kernel_rows, profiled_events

PHASES = ("forward", "backward", "optimizer")


def step_phases(torch, batch: int, precision: str) -> tuple:
    """ResNet-50's training step at ``batch`` in ``precision`` as its three phases (callables
    run in order: forward with the loss, backward, the optimizer's update)."""
    import torchvision

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    amp = precision == "amp_fp16"
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    held: dict = {}

    def forward() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            held["loss"] = loss_fn(model(x), y)

    def backward() -> None:
        scaler.scale(held.pop("loss")).backward()

    def update() -> None:
        scaler.step(opt)
        scaler.update()

    return forward, backward, update


def step_seconds(torch, batch: int, precision: str, trace: list | None = None) -> float:
    """Median seconds per training step of ResNet-50 at ``batch`` in ``precision``; ``trace``:
    a list that receives one more step's profiler events (:func:`traced_step`)."""
    phases = step_phases(torch, batch, precision)

    def step() -> None:
        for phase in phases:
            phase()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) / 10)
    if trace is not None:
        trace.extend(traced_step(torch, phases))
    return statistics.median(runs)


def traced_step(torch, phases: tuple) -> list[dict]:
    """The profiler's events of one step, each phase in a ``phase:<name>`` range that ends
    with a synchronize (so its kernels run inside it)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for name, phase in zip(PHASES, phases, strict=True):
            with record_function(f"phase:{name}"):
                phase()
                torch.cuda.synchronize()
    return profiled_events(prof)


def phase_kernels(events: list[dict]) -> pd.DataFrame:
    """One row per kernel of ``events`` (a profiler trace) inside a ``phase:<name>`` range, in
    start order: phase, index in the phase, name, grid, block, duration and the gap to the
    phase's next kernel (us). Kernels outside every range are left out."""
    ranges = sorted(
        (e["ts"], e["ts"] + e["dur"], e["name"].split(":", 1)[1])
        for e in events
        if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("phase:")
    )
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    rows: list[dict] = []
    for start, end, name in ranges:
        inside = [k for k in kernels if start <= k["ts"] < end]
        rows += [{"phase": name} | r for r in kernel_rows(inside)]
    return pd.DataFrame(rows, columns=["phase", "index", "kernel", "grid", "block", "dur_us",
                                       "gap_to_next_us"])  # fmt: skip


def phase_summary(kernels: pd.DataFrame) -> pd.DataFrame:
    """Per phase of :func:`phase_kernels`: kernels, their summed duration and the phase's span
    from its first kernel's start to its last one's end (us)."""
    out = []
    for name, g in kernels.groupby("phase", sort=False):
        busy = float(g.dur_us.sum())
        span = busy + float(g.gap_to_next_us.fillna(0).sum())
        out.append({"phase": name, "kernels": len(g), "busy_us": busy, "span_us": span})
    return pd.DataFrame(out, columns=["phase", "kernels", "busy_us", "span_us"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--batches", default="64,128,256")
    ap.add_argument("--precisions", default="amp_fp16,tf32")
    ap.add_argument("--trace", action="store_true", help="also every kernel of one step, by phase")
    args = ap.parse_args()
    import torch

    torch.backends.cudnn.benchmark = True
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for precision in args.precisions.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            events: list | None = [] if args.trace else None
            try:
                s = step_seconds(torch, batch, precision, events)
            except Exception as exc:  # noqa: BLE001 - keep the other rows
                log(f"{precision} batch {batch} failed: {exc!r}")
                continue
            finally:
                torch.cuda.empty_cache()  # the step's model and tensors are gone by now
            rows.append({"net": "torchvision_resnet50", "precision": precision, "batch": batch,
                         "step_s": s, "images_per_s": batch / s,
                         "device": torch.cuda.get_device_name()})  # fmt: skip
            log(f"{precision} batch {batch}: {s * 1e3:.2f} ms per step, {batch / s:.0f} img/s")
            pd.DataFrame(rows).to_csv(out / "train_step.csv", index=False)
            if events:
                write_trace(out, precision, batch, events)
    if not rows:  # nothing timed (no torchvision, no GPU): say so in the exit code
        log("no configuration ran; see the errors above")
        return 1
    return 0


def write_trace(out: Path, precision: str, batch: int, events: list[dict]) -> None:
    """Append one step's kernels and phase summary to ``kernels_train_step.csv`` and
    ``train_phases.csv`` under ``out``."""
    kernels = phase_kernels(events)
    summary = phase_summary(kernels)
    for row in summary.itertuples():
        log(
            f"{precision} batch {batch} {row.phase}: {row.kernels} kernels, "
            f"{row.busy_us / 1e3:.2f} ms busy, {row.span_us / 1e3:.2f} ms span"
        )
    for name, table in (("kernels_train_step", kernels), ("train_phases", summary)):
        table.insert(0, "batch", batch)
        table.insert(0, "precision", precision)
        path = out / f"{name}.csv"
        table.to_csv(path, mode="a", header=not path.exists(), index=False)


if __name__ == "__main__":
    sys.exit(main())
