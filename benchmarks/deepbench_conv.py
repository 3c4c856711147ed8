"""Conv layers on V100 against DeepBench's published forward times and algorithms.

    python benchmarks/deepbench_v100_csv.py DeepBench_NV_V100.xlsx -o DIR   # once
    python benchmarks/deepbench_conv.py --deepbench DIR [-v N] [--training] [--v100-set P=YAML]

reads ``DIR/deepbench_v100_conv_{fp16,fp32}.csv`` (94 convs each: DeepBench's
``results/train/DeepBench_NV_V100.xlsx``, section "Convolution") and simulates every conv on
the ``v100`` preset twice:

* **as DeepBench ran it**: the preset's conv library restricted to the algorithm the workbook
  names for the row (``IMPLICIT_GEMM`` and ``IMPLICIT_PRECOMP_GEMM``: implicit GEMM;
  ``WINOGRAD``: the 2x2 Winograd; ``WINOGRAD_NONFUSED``: either non-fused Winograd); a row
  whose algorithm archsim does not have, or cannot apply to the shape (5x5 Winograd, FFT), is
  counted as not modelled;
* **as the model picks**: every algorithm of the preset, the fastest kept.

How the workbook's numbers were made (``code/nvidia/conv_bench.cu`` at the commit that last
updated the workbook, 30c5115, 2019-10-07): FP16 rows are NHWC with tensor-op math and the
forward algorithm forced to ``IMPLICIT_PRECOMP_GEMM`` ("Tensor Op math only supports
IMPLICIT_PRECOMP_GEMM"); FP32 rows are NCHW with cuDNN's own choice. Each time is host
``steady_clock`` around ``num_repeats`` back-to-back ``cudnnConvolutionForward`` calls, as
``static_cast<int>`` microseconds (whole microseconds, truncated). The simulation uses each
row's layout and precision, the preset clock and its launch cost.

Prints median / p90 |error|, the signed median and Spearman's rank correlation per precision
and per algorithm, and how often the model's own pick is the workbook's (FP32).

``--training`` also holds the training step's passes (``archsim.system.passes.gemm_times``, both
conv lowerings of ``archsim train --conv-lowering``: gemm, every pass a plain GEMM of the GEMM
library; cudnn, the forward and data gradient as convs) against the workbook's forward, "wrt
Inputs" and "wrt Parameters" times (FP16: cuDNN's tensor-op backward algorithms 1, implicit GEMM
only in the model; FP32: its own picks).
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import defaultdict
from pathlib import Path

from gpu_common import add_v100_set, pair_errors, v100_preset

import archsim
from archsim.config.workload import WorkloadSpec
from archsim.errors import ArchsimError

#: the workbook's forward algorithm -> archsim's conv algorithms that stand for it
ALGORITHMS = {
    "IMPLICIT_GEMM": ("implicit_gemm",),
    "IMPLICIT_PRECOMP_GEMM": ("implicit_gemm",),
    "WINOGRAD": ("winograd_2x2",),
    "WINOGRAD_NONFUSED": ("winograd_2x2", "winograd_4x4"),
}
#: archsim's algorithm (``tc_conv_algo``) -> the workbook's family of names
FAMILY = {"implicit_gemm": "IMPLICIT", "gemm_1x1": "IMPLICIT", "winograd_2x2": "WINOGRAD",
          "winograd_4x4": "WINOGRAD"}  # fmt: skip
LAYOUT = {"fp16": "nhwc", "fp32": "nchw"}


def read_convs(path: Path) -> list[dict[str, object]]:
    """The CSV's rows with integer shapes, the forward time (s) and the algorithm."""
    out: list[dict[str, object]] = []
    with path.open() as fh:
        for row in csv.DictReader(fh):
            conv: dict[str, object] = {k: int(row[k]) for k in ("w", "h", "c", "n", "k", "s", "r")}
            conv.update(pad=(int(row["pad_h"]), int(row["pad_w"])))
            conv.update(stride=(int(row["stride_h"]), int(row["stride_w"])))
            # two FP32 rows (234, 236) read "LICIT_PRECOMP_GEMM" in the workbook: cut short
            algo = "IMPLICIT_PRECOMP_GEMM" if row["algo"] == "LICIT_PRECOMP_GEMM" else row["algo"]
            conv.update(row=int(row["row"]), app=row["app"], algo=algo)
            conv["time_s"] = float(row["fwd_ms"]) * 1e-3
            for phase, col in (("dgrad", "bwd_data_ms"), ("wgrad", "bwd_filter_ms")):
                conv[f"{phase}_s"] = float(row[col]) * 1e-3 if row.get(col) else None
            out.append(conv)
    return out


def conv_layer(conv: dict[str, object], precision: str) -> dict[str, object] | None:
    """The workload layer of one row; None when archsim cannot express its padding/stride
    (one value for both axes)."""
    (ph, pw), (sh, sw) = conv["pad"], conv["stride"]  # type: ignore[misc]
    if ph != pw or sh != sw:
        return None
    shape = {k: conv[k] for k in ("n", "c", "k", "h", "w", "r", "s")}
    return {"kind": "conv", "name": f"row{conv['row']}", **shape, "stride": sh, "pad": ph,
            "precision": precision, "memory_format": LAYOUT[precision]}  # fmt: skip


def simulate(hw, layer: dict[str, object]):  # type: ignore[no-untyped-def]
    """One layer's result on ``hw``; None when no allowed algorithm applies to it."""
    wl = WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "deepbench", "source": "DeepBench", "layers": [layer]}
    )
    try:
        return archsim.simulate(hw, wl).layers[0]
    except ArchsimError:
        return None


def stats(pairs: list[tuple[float, float]]) -> str:
    """median / p90 |error|, signed median and Spearman of (simulated, measured) pairs."""
    s = pair_errors(pairs)
    return (
        f"n={s['n']:3d}  median {s['median_abs_error']:6.1%}  p90 {s['p90_abs_error']:6.1%}  "
        f"signed {s['signed_median']:+6.1%}  Spearman {s['spearman']:.4f}"
    )


def run(hw0, precision: str, convs: list[dict[str, object]], verbose: int) -> None:  # type: ignore[no-untyped-def]
    fixed: dict[str, list[tuple[float, float]]] = defaultdict(list)
    free: list[tuple[float, float]] = []
    missing: dict[str, int] = defaultdict(int)
    same, picked = 0, 0
    worst = []
    configs = {algos: hw0.with_overrides({"conv_library.algorithms": list(algos)})
               for algos in set(ALGORITHMS.values())}  # fmt: skip
    for conv in convs:
        layer = conv_layer(conv, precision)
        if layer is None:
            missing["unequal pad/stride"] += 1
            continue
        meas = float(conv["time_s"])  # type: ignore[arg-type]
        algos = ALGORITHMS.get(str(conv["algo"]))
        res = simulate(configs[algos], layer) if algos else None
        if res is None:
            missing[str(conv["algo"]) or "(none)"] += 1
        else:
            fixed[str(conv["algo"])].append((res.time_s, meas))
            fixed["all"].append((res.time_s, meas))
            worst.append((abs(res.time_s / meas - 1), conv, res))
        own = simulate(hw0, layer)
        if own is not None:
            free.append((own.time_s, meas))
            if algos:
                picked += 1
                same += FAMILY.get(str(own.extras.get("tc_conv_algo")), "") in str(conv["algo"])
    print(f"  {precision} ({LAYOUT[precision]}), algorithm as DeepBench ran it:")
    for key in sorted(fixed, key=lambda k: (k != "all", k)):
        print(f"    {key:<24} {stats(fixed[key])}")
    if missing:
        print("    not modelled: " + ", ".join(f"{k} {v}" for k, v in sorted(missing.items())))
    print(f"  {precision}, the model's own pick:\n    {'all':<24} {stats(free)}")
    if precision == "fp32" and picked:
        print(f"    the model picks DeepBench's algorithm family for {same} of {picked} rows")
    for _, conv, res in sorted(worst, key=lambda t: -t[0])[:verbose]:
        e = res.time_s / float(conv["time_s"]) - 1  # type: ignore[arg-type]
        print(
            f"    {e:+7.1%}  row {conv['row']} {conv['app']}: N{conv['n']} C{conv['c']} "
            f"K{conv['k']} {conv['h']}x{conv['w']} {conv['r']}x{conv['s']}/{conv['stride'][0]} "  # type: ignore[index]
            f"sim {res.time_s * 1e3:.3f} ms meas {float(conv['time_s']) * 1e3:.3f} ms "  # type: ignore[arg-type]
            f"{conv['algo']} -> {res.extras.get('tc_conv_algo')} "
            f"({res.extras.get('tc_kernel_family')})"
        )


def training(hw, precision: str, convs: list[dict[str, object]]) -> None:  # type: ignore[no-untyped-def]
    """The training step's passes of each conv against the workbook's forward, "wrt Inputs"
    and "wrt Parameters" times, for both conv lowerings (``archsim train --conv-lowering``):
    gemm (every pass a plain GEMM) and cudnn (forward and data gradient as convs). FP16 convs
    run implicit GEMM only, as DeepBench forced them (algorithm 1 backward); FP32 cuDNN's
    fastest."""
    from archsim.system.passes import gemm_times
    from archsim.system.workload import training_layers

    step = "amp_fp16" if precision == "fp16" else "fp32"
    if precision == "fp16":
        hw = hw.with_overrides({"conv_library.algorithms": ["implicit_gemm"]})
    pairs: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    algos: dict[str, int] = defaultdict(int)
    for conv in convs:
        layer = conv_layer(conv, precision)
        if layer is None:
            continue
        # two of the layer: the second is no first layer, so it has a data gradient
        wl = WorkloadSpec.model_validate({"schema_version": 1, "name": "deepbench",
                                          "source": "DeepBench", "layers": [layer, layer | {
                                              "name": f"{layer['name']}b"}]})  # fmt: skip
        lowered = training_layers(wl, int(conv["n"]))  # type: ignore[arg-type]
        for lowering in ("gemm", "cudnn"):
            got = gemm_times(hw, lowered, step, wl, LAYOUT[precision], lowering)
            for phase in ("fwd", "dgrad", "wgrad"):
                meas = conv["time_s"] if phase == "fwd" else conv[f"{phase}_s"]
                if meas is not None:
                    res = got[f"{layer['name']}b/{phase}"]
                    sim = res.time_s + _transforms_s(hw, res)
                    pairs[(lowering, phase)].append((sim, float(meas)))  # type: ignore[arg-type]
                    if phase == "wgrad" and lowering == "cudnn":
                        algos[str(res.extras.get("tc_wgrad_algo", "gemm"))] += 1
    for lowering in ("gemm", "cudnn"):
        print(f"  {precision}, the training step's passes, --conv-lowering {lowering}:")
        for phase in ("fwd", "dgrad", "wgrad"):
            print(f"    {phase:<24} {stats(pairs[(lowering, phase)])}")
    print("    cudnn weight gradients: " + ", ".join(f"{k} {v}" for k, v in sorted(algos.items())))


def _transforms_s(hw, res) -> float:  # type: ignore[no-untyped-def]
    """A Winograd weight gradient's transform passes (0 for every other result), timed as the
    training step's choice times them (the launch cost as each kernel's least time)."""
    from archsim.system.conv_phases import wgrad_transform_s

    moved = res.extras.get("tc_wgrad_transform_bytes", 0)
    hbm = hw.hbm.bandwidth_bytes_per_s * hw.hbm_achievable_fraction
    return wgrad_transform_s(moved, hbm, hw.launch_overhead_s) if moved else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--deepbench", type=Path, required=True, help="folder of the conv CSVs")
    ap.add_argument("-v", "--verbose", type=int, default=0, help="print the N worst rows")
    ap.add_argument("--training", action="store_true",
                    help="also the training step's passes, both conv lowerings")  # fmt: skip
    add_v100_set(ap)
    args = ap.parse_args()
    t = time.perf_counter()
    hw, over = v100_preset(args.v100_set)
    said = f", set {over}" if over else ""
    print(f"V100 DeepBench convs ({args.deepbench}), preset clock{said}")
    for precision in ("fp16", "fp32"):
        path = args.deepbench / f"deepbench_v100_conv_{precision}.csv"
        if path.exists():
            convs = read_convs(path)
            run(hw, precision, convs, args.verbose)
            if args.training:
                training(hw, precision, convs)
    print(f"wall {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
