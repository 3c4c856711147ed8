"""cuDNN conv layers timed on a real H100 (../shared/data/h100/conv_alexnet.csv) vs the model.

Every row (AlexNet conv1-conv5 at batch 1, 32 and 256) is simulated as ``archsim validate``
does, at the clock the model solves for it (the power and current limits), and printed: NVML's
clock reading is not the clock tensor-core work runs at (Nsight Compute's cycles / duration read
1.78-1.84 GHz where NVML read 1980 MHz, benchmarks/measured/h100_2026-11-27/ncu_gemm_1024.txt),
so it is not pinned. Tolerance 25 % per row, except the two known gaps below; over all 15 rows
the median |error| must stay <= 12 % and the p90 <= 40 % (issue 16's goal is p90 <= 35 %: not
met while the two gaps remain; ``benchmarks/gpu_conv_vs_measured.py`` prints the same table).

Known gaps (the model is faster than measured): the grouped conv2 and conv5 at batch 32 take
115.6 and 46.6 us on the H100, more per image than at batch 256 (conv5: 1.46 us/image against
0.48), while the grouped family's model, right at batch 1 and 256, gives about half. No
structural rule found explains only these two rows (cuDNN picking a slower engine at that batch
is suspected, not shown).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import archsim
from archsim.config.workload import ConvLayer, WorkloadSpec

TOLERANCE = 0.25
KNOWN_GAPS = {("conv2", "32"): 0.60, ("conv5", "32"): 0.60}
MEDIAN_MAX, P90_MAX = 0.12, 0.40


def _rows(h100_dir: Path) -> list[dict[str, str]]:
    with (h100_dir / "conv_alexnet.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_conv_layers_within_tolerance(h100_dir: Path) -> None:
    hw = archsim.load_hardware("h100")
    errors = []
    for row in _rows(h100_dir):
        ints = {f: int(row[f]) for f in ("c", "k", "h", "w", "r", "s", "stride", "pad", "groups")}
        layer = ConvLayer(kind="conv", name=row["layer"], n=int(row["batch"]), **ints)  # type: ignore[arg-type]
        spec = WorkloadSpec(schema_version=1, name="row", source="t", layers=[layer])
        (lr,) = archsim.simulate(hw, spec).layers
        sim, meas = lr.time_s, float(row["time_s"])
        err = sim / meas - 1
        tol = KNOWN_GAPS.get((row["layer"], row["batch"]), TOLERANCE)
        msg = (
            f"{row['layer']} batch {row['batch']} groups {row['groups']}: measured "
            f"{meas * 1e6:.1f} us, simulated {sim * 1e6:.1f} us ({err:+.1%}, tolerance "
            f"{tol:.0%}, {lr.extras['tc_conv_algo']} at {lr.extras['clock_hz'] / 1e6:.0f} MHz)"
        )
        print(msg)
        assert abs(err) <= tol, msg
        errors.append(abs(err))
    assert len(errors) == 15
    med, p90 = np.median(errors), np.percentile(errors, 90)
    print(f"median |error| {med:.1%} (max {MEDIAN_MAX:.0%}), p90 {p90:.1%} (max {P90_MAX:.0%})")
    assert med <= MEDIAN_MAX and p90 <= P90_MAX, f"median {med:.1%}, p90 {p90:.1%}"
