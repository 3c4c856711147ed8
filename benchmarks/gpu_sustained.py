"""On a real NVIDIA GPU: one op timed the probe's way, then sustained, from a cooled card.

For each GEMM and conv below: the card idles ``--idle-s`` (temperature read), the op is timed
as ``archsim probe gpu`` times it (:func:`archsim.measure.probe.time_in_graph`: ~0.1 s of CUDA
graph replays), then run back to back for ``--seconds`` under the NVML energy counter
(:func:`archsim.measure.probe.measure_energy`: time per call, watts, the clock read halfway),
then timed the probe's way again (now from the hot, power-limited state), and its kernels are
listed (CUPTI). It separates what a short measurement sees from the steady state the model's
power solve describes. Writes ``sustained.csv`` and ``kernels_sustained.csv`` as it goes;
``networks.csv``: torchvision VGG-16 and GoogLeNet forward (fp16, channels-last, graph).

Usage (on the GPU machine)::

    python benchmarks/gpu_sustained.py -o DIR [--seconds 3] [--idle-s 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from gpu_common import conv_shape, forward_op, log, torchvision_net
from gpu_kernel_names import kernels_of

from archsim.measure.loader import load_backend
from archsim.measure.plan import square_gemm
from archsim.measure.probe import measure_energy, time_in_graph

#: (label, n, c, k, h, r, stride, pad): the conv rows the model got most wrong at batch 32/256
CONVS = (("vgg_conv3_2", 256, 256, 256, 56, 3, 1, 1), ("vgg_conv1_2", 256, 64, 64, 224, 3, 1, 1),
         ("vgg_conv2_2_n32", 32, 128, 128, 112, 3, 1, 1),
         ("r50_4b_3x3", 256, 256, 256, 14, 3, 1, 1),
         ("r50_conv1", 256, 3, 64, 224, 7, 2, 3), ("r50_conv1_n32", 32, 3, 64, 224, 7, 2, 3),
         ("r50_2a_1x1", 256, 64, 256, 56, 1, 1, 0), ("g3a_5x5", 256, 16, 32, 28, 5, 1, 2),
         ("g3b_3x3", 256, 128, 192, 28, 3, 1, 1), ("g3b_5x5", 256, 32, 96, 28, 5, 1, 2),
         ("vgg_conv1_1_n32", 32, 3, 64, 224, 3, 1, 1))  # fmt: skip


def ops(b) -> list[tuple[str, dict, object]]:
    out = [(f"gemm_fp16_{s}", {"kind": "gemm", "m": s, "n": s, "k": s},
            lambda s=s: b.gemm(square_gemm(s, "fp16", False))) for s in (2048, 4096)]  # fmt: skip
    for label, n, c, k, hw, r, st, pad in CONVS:
        shape = conv_shape("probe", label, n, c, k, hw, r, st, pad)
        fields = {"kind": "conv", "n": n, "c": c, "k": k, "h": hw, "r": r, "stride": st,
                  "pad": pad}  # fmt: skip
        out.append((label, fields, lambda s=shape: b.conv(s)))
    return out


def temp(b) -> float:
    try:
        return float(b.snapshot().get("temperature.gpu", "nan"))
    except Exception:  # noqa: BLE001 - a reading, not a result
        return float("nan")


def networks(b, out: Path, t_end: float) -> None:
    import torch

    rows = []
    for name in ("vgg16", "googlenet"):
        model = torchvision_net(torch, name)
        for n in (1, 32, 256):
            if time.monotonic() > t_end:
                return
            op = forward_op(torch, model, n)
            t = time_in_graph(b, op)
            rows.append({"net": f"torchvision_{name}", "batch": n, "precision": "fp16",
                         "memory_format": "nhwc", "graph_s": t.time_s if t else float("nan"),
                         "graph_min_s": t.min_s if t else float("nan"),
                         "sm_mhz": t.sm_mhz if t else float("nan")})  # fmt: skip
            log(f"{name} n={n}: {rows[-1]['graph_s'] * 1e3:.3f} ms")
            pd.DataFrame(rows).to_csv(out / "networks.csv", index=False)
            del op
            b.release()
        del model
        b.release()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--idle-s", type=float, default=3.0)
    ap.add_argument("--budget-s", type=float, default=200.0)
    args = ap.parse_args()
    import torch

    t0 = time.monotonic()
    b = load_backend("torch")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, kern = [], []
    for label, fields, make in ops(b):
        if time.monotonic() - t0 > args.budget_s - 40:
            log(f"skipped {label}: out of time")
            continue
        try:
            op = make()
            time.sleep(args.idle_s)
            row = {"label": label, **fields, "temp_idle_c": temp(b)}
            cold = time_in_graph(b, op)
            e = measure_energy(b, op, args.seconds)
            hot = time_in_graph(b, op)
            mid = e["smi_mid"][0]
            row.update({
                "probe_cold_s": cold.time_s, "probe_cold_mhz": cold.sm_mhz,
                "sustained_s": e["seconds"] / e["calls"], "sustained_w": e["watts"],
                "sustained_mhz": float(mid.get("clocks.sm", "nan")),
                "sustained_temp_c": float(mid.get("temperature.gpu", "nan")),
                "probe_hot_s": hot.time_s, "probe_hot_mhz": hot.sm_mhz, "temp_end_c": temp(b),
            })  # fmt: skip
            rows.append(row)
            log(f"{label}: probe {cold.time_s * 1e6:.1f} us @ {cold.sm_mhz:.0f} | sustained "
                f"{row['sustained_s'] * 1e6:.1f} us {e['watts']:.0f} W @ {row['sustained_mhz']:.0f}"
                f" {row['sustained_temp_c']:.0f} C | hot probe {hot.time_s * 1e6:.1f} us @ "
                f"{hot.sm_mhz:.0f}")  # fmt: skip
            pd.DataFrame(rows).to_csv(out / "sustained.csv", index=False)
            if fields["kind"] == "conv":
                ks = kernels_of(torch, op)
                kern += [{"label": label, **k} for k in ks]
                pd.DataFrame(kern).to_csv(out / "kernels_sustained.csv", index=False)
        except Exception as exc:  # noqa: BLE001 - keep the other rows
            log(f"{label} failed: {exc!r}")
        finally:
            b.release()
    networks(b, out, t0 + args.budget_s - 10)
    log(f"done in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
