"""GEMM time of the tensor-core model against measured silicon.

``python benchmarks/gpu_vs_measured.py`` prints median / p90 |error| and Spearman's rank
correlation per file and precision for

* the H100 SXM measurements in ``../shared/data/h100/gemm_*.csv`` (read if present), each row
  simulated AT ITS MEASURED ``sm_mhz`` (the clock is gpu-power's model; this isolates the time
  model). Rows with a blank ``sm_mhz`` (short runs) use ``--blank-mhz`` (default 1980, the
  README's max SM clock, which short or light kernels run near);
* optionally DeepBench's published V100 training GEMMs (``--deepbench DIR`` holding
  ``deepbench_v100_fp16.csv`` / ``deepbench_v100_fp32.csv`` with columns row, app, m, n, k, a_t,
  b_t, ms, extracted from ``results/train/DeepBench_NV_V100.xlsx`` of baidu-research/DeepBench
  by ``benchmarks/deepbench_v100_csv.py``; not shipped), at the preset clock (1530 MHz, the
  boost clock DeepBench's V100 ran at). DeepBench publishes whole microseconds, truncated
  (``code/nvidia/gemm_bench.cu``: ``static_cast<int>`` us per call), so its 8 us rows lie in
  8-9 us.

``--preset-clock`` simulates the H100 rows at the preset clock instead (for reference).
``--v100-set PATH=YAML`` overrides a field of the V100 preset (repeatable), e.g. turns off the
DRAM-page model that ``hw_configs/v100.yaml`` switches on, to see what it buys::

    --v100-set 'dram_pages=null'
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from collections import defaultdict
from pathlib import Path

from gpu_common import add_v100_set, pair_errors, v100_preset

import archsim
from archsim.accelerators.tensor_core import run_gemm
from archsim.workload.gemm import GemmProblem

H100_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "h100"
_ACC = {"fp16": "fp32", "bf16": "fp32", "tf32": "fp32", "fp32": "fp32", "fp8": "fp32",
        "int8": "int32"}  # fmt: skip
_OUT = {"fp8": "bf16", "int8": "int32"}  # README: fp8 via _scaled_mm writes bf16; _int_mm int32


def _problem(name: str, m: int, n: int, k: int, prec: str, ta: bool, tb: bool) -> GemmProblem:
    fields = GemmProblem.__dataclass_fields__  # (before this change: no output type)
    extra = {"output": _OUT.get(prec)} if "output" in fields else {}
    return GemmProblem(
        layer=name, kind="gemm", m=m, n=n, k=k, batch=1, precision=prec,
        accumulate=_ACC[prec], transpose_a=ta, transpose_b=tb, **extra,
    )  # fmt: skip


def _time_s(hw, prob: GemmProblem, mhz: float | None) -> float:
    cfg = hw
    if mhz is not None:
        cfg = hw.model_copy(
            update={"clock": hw.clock.model_copy(update={"frequency_hz": mhz * 1e6})}
        )
    best, _ = run_gemm(cfg, prob)
    return best.cycles / cfg.clock.frequency_hz


def _stats(pairs: list[tuple[float, float]]) -> str:
    s = pair_errors(pairs)
    return (
        f"n={s['n']:>4}  median {100 * s['median_abs_error']:6.1f} %  p90 "
        f"{100 * s['p90_abs_error']:6.1f} %  max {100 * s['max_abs_error']:7.1f} %  signed median "
        f"{100 * s['signed_median']:+6.1f} %  Spearman {s['spearman']:.4f}"
    )


def h100(args: argparse.Namespace) -> None:
    """Every row of the H100 GEMM files, grouped by file and precision."""
    hw = archsim.load_hardware("h100")
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    worst: list[tuple[float, str]] = []
    for path in sorted(args.h100.glob("gemm_*.csv")):
        with path.open() as f:
            for row in csv.DictReader(f):
                m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
                prec = row["precision"]
                ta, tb = row["a_stored"] == "k x m", row["b_stored"] == "n x k"
                tb = tb or prec == "fp8"  # README: torch._scaled_mm takes B column-major
                mhz = None if args.preset_clock else float(row["sm_mhz"] or args.blank_mhz)
                name = f"{path.stem}:{m}x{n}x{k}:{prec}:{'NT'[ta]}{'NT'[tb]}"
                try:
                    sim = _time_s(hw, _problem(name, m, n, k, prec, ta, tb), mhz)
                except archsim.errors.ArchsimError as exc:
                    groups[f"{path.stem} {prec} (unsupported)"].append((math.nan, 0))
                    if args.verbose and len(groups[f"{path.stem} {prec} (unsupported)"]) == 1:
                        print(f"  {name}: {exc}")
                    continue
                meas = float(row["time_s"])
                for key in (f"{path.stem} {prec}", f"{path.stem} all", "ALL"):
                    groups[key].append((sim, meas))
                worst.append(
                    (
                        abs(sim / meas - 1),
                        f"{name} sim {sim * 1e6:.2f} us meas {meas * 1e6:.2f} us @ {mhz} MHz",
                    )
                )
    print(f"H100 ({args.h100}), clock: {'preset' if args.preset_clock else 'measured sm_mhz'}")
    for key in sorted(groups):
        vals = groups[key]
        if "unsupported" in key:
            print(f"  {key:<28} n={len(vals):>4}  not simulated")
        else:
            print(f"  {key:<28} {_stats(vals)}")
    if args.verbose:
        for e, line in sorted(worst, reverse=True)[: args.verbose]:
            print(f"  {e * 100:7.1f} %  {line}")


def v100(args: argparse.Namespace) -> None:
    """DeepBench's published V100 training GEMMs (fp16 in / fp32 math, and fp32)."""
    hw, over = v100_preset(args.v100_set)
    print(f"V100 DeepBench ({args.deepbench}), preset clock" + (f", set {over}" if over else ""))
    for prec in ("fp16", "fp32"):
        path = args.deepbench / f"deepbench_v100_{prec}.csv"
        if not path.exists():
            continue
        groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
        worst = []
        with path.open() as f:
            for row in csv.DictReader(f):
                m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
                # DeepBench (cuBLAS) is column-major: an "N" A is m x k with m contiguous,
                # archsim's row-major A stored k x m (transpose_a); a "T" A holds k
                # contiguous, archsim's m x k. Likewise an "N" B is archsim's B stored n x k.
                ta, tb = row["a_t"] == "N", row["b_t"] == "N"
                name = f"{m}x{n}x{k}:{row['a_t']}{row['b_t']}"
                sim = _time_s(hw, _problem(name, m, n, k, prec, ta, tb), None)
                meas = float(row["ms"]) * 1e-3
                for key in (f"{prec} {row['a_t']}{row['b_t']}", f"{prec} all"):
                    groups[key].append((sim, meas))
                worst.append(
                    (
                        abs(sim / meas - 1),
                        f"{prec} {name} sim {sim * 1e3:.4f} ms "
                        f"meas {meas * 1e3:.4f} ms (row {row['row']})",
                    )
                )
        for key in sorted(groups):
            print(f"  {key:<28} {_stats(groups[key])}")
        if args.verbose:
            for e, line in sorted(worst, reverse=True)[: args.verbose]:
                print(f"  {e * 100:7.1f} %  {line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--h100", type=Path, default=H100_DIR, help="folder of gemm_*.csv")
    ap.add_argument("--deepbench", type=Path, default=None, help="folder of the V100 CSVs")
    ap.add_argument("--blank-mhz", type=float, default=1980.0)
    ap.add_argument("--preset-clock", action="store_true")
    ap.add_argument("-v", "--verbose", type=int, default=0, help="print the N worst rows")
    add_v100_set(ap)
    args = ap.parse_args()
    t = time.perf_counter()
    if args.h100.exists():
        h100(args)
    if args.deepbench is not None:
        v100(args)
    print(f"wall {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
