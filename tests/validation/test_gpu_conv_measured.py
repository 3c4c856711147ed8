"""cuDNN conv layers timed on a real H100 (../shared/data/h100/conv_alexnet.csv) vs the model.

Tolerance 30 % (issue 16: per-layer p90 <= 35 %) on the ungrouped layers, batch 1, 32 and 256
(the rows whose mechanisms the model has: tensor-core implicit GEMM, the CUDA-core conv1 with
C = 3); each is printed. The grouped rows (conv2, conv4, conv5) are a known gap (CHANGELOG):
``benchmarks/gpu_conv_vs_measured.py`` prints them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import archsim
from archsim.accelerators.gpu_conv import best_conv
from archsim.config.workload import ConvLayer

TOLERANCE = 0.30


def _rows(h100_dir: Path) -> list[dict[str, str]]:
    with (h100_dir / "conv_alexnet.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_ungrouped_layers_within_tolerance(h100_dir: Path) -> None:
    hw = archsim.load_hardware("h100")
    checked = 0
    for row in _rows(h100_dir):
        if row["groups"] != "1":
            continue
        ints = {f: int(row[f]) for f in ("c", "k", "h", "w", "r", "s", "stride", "pad")}
        layer = ConvLayer(kind="conv", name=row["layer"], n=int(row["batch"]), **ints)  # type: ignore[arg-type]
        clock = float(row["sm_mhz"]) * 1e6  # the measured clock (the clock model is apart)
        choice = best_conv(hw.with_overrides({"clock.frequency_hz": clock}), layer)
        sim, meas = choice.cycles / clock, float(row["time_s"])
        err = sim / meas - 1
        print(
            f"{row['layer']} batch {row['batch']}: measured {meas * 1e6:.1f} us, "
            f"simulated {sim * 1e6:.1f} us ({err:+.1%}, {choice.candidate.algorithm})"
        )
        assert abs(err) <= TOLERANCE, f"{row['layer']} batch {row['batch']}: {err:+.1%}"
        checked += 1
    assert checked == 6
