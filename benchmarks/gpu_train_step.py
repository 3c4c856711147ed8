"""On a real NVIDIA GPU: one training step of torchvision ResNet-50 on one GPU, images per second.

The single-GPU step that ``archsim.train_step(system, "resnet50_v1_5", gpus=1)`` models:
forward, backward and an SGD-momentum update, channels-last, in automatic mixed precision
(``torch.autocast`` FP16 with FP32 master weights and a ``GradScaler``) and in TF32, with
synthetic inputs on the GPU (no data loader), ``cudnn.benchmark`` on, steps launched eagerly
as the usual training loop does. Per (precision, batch): 5 warm-up steps, then the median of
5 timed runs of 10 steps each. Writes ``train_step.csv``.

Usage (on the GPU machine)::

    python benchmarks/gpu_train_step.py -o DIR [--batches 64,128,256]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
from gpu_common import log


def step_seconds(torch, batch: int, precision: str) -> float:
    """Median seconds per training step of ResNet-50 at ``batch`` in ``precision``."""
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

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

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
    return statistics.median(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--batches", default="64,128,256")
    ap.add_argument("--precisions", default="amp_fp16,tf32")
    args = ap.parse_args()
    import torch

    torch.backends.cudnn.benchmark = True
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for precision in args.precisions.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            try:
                s = step_seconds(torch, batch, precision)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
