"""archsim speed: one table per model, with the NumPy floor and peer tools side by side.

    python benchmarks/run.py [--models eie,scnn,dcnn] [--eie-cpp PATH] [--eie-data DIR]

Per model, in two fresh subprocesses sharing a new, empty NUMBA_CACHE_DIR: the first measures
the first simulate() call with the cache empty (numba compiles), the second the first call with
the cache filled (load only), then wall time per layer and per network, simulated cycles and
effective MACs per wall second, and its peak resident memory. "floor s" is the time NumPy takes
to compute the same layer's output functionally (materialisation not timed; archsim's wall time
includes its own materialisation, encoding, timing, functional check and energy pricing);
"x floor" = archsim / floor. Wall times are best of --repeat for calls under a second.

A model is a ``BenchModel`` in MODELS: hardware preset, the workload shown layer by layer, the
workloads timed whole, speed goals from the issues. A model whose accelerator has no simulator
in this archsim (``gpu`` until the tensor_core simulator lands) is reported as skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from floors import best_time, conv_floor, gemm_floor, matvec_floor

import archsim
from archsim.accelerators import REGISTRY
from archsim.config.workload import ConvLayer, GemmLayer, WorkloadSpec
from archsim.validation import default_eie_data
from archsim.validation.runs import alex8_real_workload
from archsim.validation.tensor_core import DEEPBENCH_V100_MS, gemm_workload
from archsim.workload import materialize_conv, materialize_matvec


@dataclass(frozen=True)
class BenchModel:
    """What to time for one model: ``layers`` row by row, ``networks`` whole."""

    hardware: str
    layers: str | WorkloadSpec
    networks: tuple[str | WorkloadSpec, ...]
    goals_s: dict[str, float] = field(default_factory=dict)  # network name -> goal, s (warm)


_GEMM_ANCHORS = gemm_workload("deepbench_v100_anchors", tuple(DEEPBENCH_V100_MS))
MODELS = {
    # goals: issue 2 (EIE) and issue 3 (SCNN)
    "eie": BenchModel("eie", "eie_benchmarks", ("eie_benchmarks",), {"eie_benchmarks": 2.0}),
    "scnn": BenchModel(
        "scnn", "alexnet", ("alexnet", "googlenet", "vgg16"), {"alexnet": 5.0, "vgg16": 30.0}
    ),
    "dcnn": BenchModel("dcnn", "alexnet", ("alexnet", "googlenet", "vgg16")),
    # the GEMM floor is float32 NumPy matmul; runs once simulate() supports tensor_core
    "gpu": BenchModel("v100", _GEMM_ANCHORS, (_GEMM_ANCHORS,)),
}
GOAL_ALEX8_REAL_S = 0.2
GOAL_PEAK_RSS_GB = 4.0


def _floor(hw, spec, seed: int, base_dir: Path, repeat: int) -> tuple[float, str]:
    if isinstance(spec, ConvLayer):
        return conv_floor(materialize_conv(spec, seed), repeat)
    if isinstance(spec, GemmLayer):
        return gemm_floor(spec.m, spec.n, spec.k, repeat)
    entries = hw.encoding.codebook_entries if hasattr(hw, "encoding") else 16
    return matvec_floor(materialize_matvec(spec, seed, base_dir, entries), repeat)


def _row(name: str, res: archsim.RunResult, wall: float, floor: tuple[float, str] | None):
    cycles = sum(lr.cycles for lr in res.layers)
    macs = sum(lr.macs_effective for lr in res.layers)
    row = {"name": name, "wall_s": wall, "cycles": cycles, "macs": macs}
    if floor is not None:
        row |= {"floor_s": floor[0], "floor": floor[1]}
    return row


def _time_simulate(hw, wl, repeat: int) -> tuple[archsim.RunResult, float]:
    t = time.perf_counter()
    res = archsim.simulate(hw, wl)
    first = time.perf_counter() - t
    if first < 1.0 and repeat > 1:
        first = min(first, best_time(lambda: archsim.simulate(hw, wl), repeat - 1))
    return res, first


def _probe(model: BenchModel) -> dict[str, float]:
    """Two simulate() calls of the model's smallest layer: compile or cache load, then steady."""
    wl = archsim.load_workload(model.layers)
    spec = min(wl.layers, key=lambda lay: getattr(lay, "macs_dense", 0))
    one = wl.model_copy(update={"layers": [spec]})
    out: dict[str, float | str] = {"layer": spec.name}
    for key in ("first_s", "steady_s"):
        t = time.perf_counter()
        archsim.simulate(model.hardware, one)
        out[key] = time.perf_counter() - t
    return out


def _eie_real_rows(args: argparse.Namespace, hw, repeat: int) -> list[dict]:
    """archsim and, with --eie-cpp, the authors' C++ simulator on the real Alex-8 layer."""
    if args.eie_data is None or not Path(args.eie_data).is_dir():
        return [{"name": "Alex-8 real", "skipped": "no --eie-data folder"}]
    wl = alex8_real_workload(args.eie_data)
    res, wall = _time_simulate(hw, wl, max(repeat, 5))
    floor = _floor(hw, wl.layers[0], 0, wl.base_dir, repeat)
    rows = [_row("Alex-8 real", res, wall, floor) | {"goal_s": GOAL_ALEX8_REAL_S}]
    if args.eie_cpp:
        rows.append(_cpp_row(Path(args.eie_cpp), repeat) | {"floor_s": floor[0], "floor": floor[1]})
    return rows


def _cpp_row(exe: Path, repeat: int) -> dict:
    """The EIE authors' C++ simulator (built outside the repo) on its own data/ folder.

    ``exe`` is the built ``simulation`` (or its folder); it reads ``data/`` from its folder.
    """
    exe = exe.absolute()  # not resolve(): the authors' binary is a link beside data/
    exe = exe / "simulation" if exe.is_dir() else exe
    out: dict[str, str] = {}

    def call() -> None:
        p = subprocess.run([str(exe)], cwd=exe.parent, capture_output=True, text=True, check=True)
        out["log"] = p.stdout + p.stderr

    wall = best_time(call, max(repeat, 5))
    m = re.search(r"cycles:\s*(\d+)", out["log"])
    cycles = int(m.group(1)) if m else 0
    return {"name": "EIE C++ (peer)", "wall_s": wall, "cycles": cycles, "macs": 0}


def worker(args: argparse.Namespace) -> dict:
    """Measurements of one model inside this process (run by the parent in a subprocess)."""
    model = MODELS[args.worker]
    if archsim.load_hardware(model.hardware).accelerator not in REGISTRY:
        return {"skipped": f"no simulator for {model.hardware} in this archsim"}
    result: dict = {"probe": _probe(model)}
    if args.phase == "cold":
        return result
    hw = archsim.load_hardware(model.hardware)
    wl = archsim.load_workload(model.layers)
    rows = []
    for spec in wl.layers:
        one = wl.model_copy(update={"layers": [spec], "name": spec.name})
        res, wall = _time_simulate(hw, one, args.repeat)
        rows.append(_row(spec.name, res, wall, _floor(hw, spec, 0, wl.base_dir, args.repeat)))
    nets = []
    for net in model.networks:
        nwl = archsim.load_workload(net)
        if args.networks and nwl.name not in args.networks:
            continue
        res, wall = _time_simulate(hw, nwl, args.repeat)
        floors = [_floor(hw, s, 0, nwl.base_dir, 1) for s in nwl.layers]
        methods = {f[1] for f in floors}
        floor = (sum(f[0] for f in floors), methods.pop() if len(methods) == 1 else "mixed")
        row = _row(f"network {nwl.name}", res, wall, floor)
        nets.append(row | {"goal_s": model.goals_s.get(nwl.name)})
    if args.worker == "eie":
        nets += _eie_real_rows(args, hw, args.repeat)
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    return result | {"layers": rows, "networks": nets, "peak_rss_gb": rss_gb}


def _spawn(model: str, phase: str, cache: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--worker", model, "--phase", phase, "--repeat"]
    cmd += [str(args.repeat)]
    if args.eie_data:
        cmd += ["--eie-data", str(args.eie_data)]
    if args.eie_cpp:
        cmd += ["--eie-cpp", str(args.eie_cpp)]
    if args.networks:
        cmd += ["--networks", ",".join(args.networks)]
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"benchmark worker {model}/{phase} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _fmt_row(r: dict) -> str:
    if "skipped" in r:
        return f"{r['name']:<24}skipped: {r['skipped'][:52]}"
    wall = r["wall_s"]
    cps = f"{r['cycles'] / wall:.3g}" if r["cycles"] else "-"
    mps = f"{r['macs'] / wall:.3g}" if r["macs"] else "-"
    floor = r.get("floor_s")
    fl = f"{floor:.4f}" if floor else "-"
    ratio = f"{wall / floor:.0f}" if floor else "-"
    goal = f"{r['goal_s']:g}" if r.get("goal_s") else ""
    return (
        f"{r['name'][:23]:<24}{wall:>8.4f}{cps:>10}{mps:>10}{fl:>9} {r.get('floor', ''):<9}"
        f"{ratio:>6}{goal:>6}"
    )


def print_model(name: str, cold: dict, warm: dict) -> None:
    """One model's table."""
    if "skipped" in warm:
        print(f"\n== {name}: skipped ({warm['skipped']})")
        return
    cold_p, warm_p = cold["probe"], warm["probe"]
    steady = min(cold_p["steady_s"], warm_p["steady_s"])
    print(
        f"\n== {name} ({MODELS[name].hardware}): numba compile {cold_p['first_s'] - steady:.2f} s "
        f"(empty cache), cache load {max(warm_p['first_s'] - steady, 0.0):.2f} s "
        f"(first call minus warm call of {cold_p['layer']}, {steady:.3f} s); "
        f"peak RSS {warm['peak_rss_gb']:.2f} GB (goal < {GOAL_PEAK_RSS_GB:g})"
    )
    head = (
        f"{'layer / network':<24}{'wall s':>8}{'cycles/s':>10}{'MACs/s':>10}{'floor s':>9} "
        f"{'floor':<9}{'x flr':>6}{'goal':>6}"
    )
    print(head)
    print("-" * len(head))
    for r in warm["layers"]:
        print(_fmt_row(r))
    print("-" * len(head))
    for r in warm["networks"]:
        print(_fmt_row(r))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", default="eie,scnn,dcnn", help=f"any of {','.join(MODELS)}")
    ap.add_argument("--networks", type=lambda s: s.split(","), help="only these networks")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--eie-data", type=Path, default=default_eie_data(), help="real Alex-8 dir")
    ap.add_argument("--eie-cpp", type=Path, help="the EIE authors' C++ simulator (built)")
    ap.add_argument("--json", type=Path, help="also write all measurements as JSON")
    ap.add_argument("--worker", choices=list(MODELS), help=argparse.SUPPRESS)
    ap.add_argument("--phase", choices=["cold", "full"], default="full", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args)))
        return
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; allowed: {', '.join(MODELS)}")
    load = os.getloadavg()[0]
    print(f"archsim {archsim.__version__}; {os.cpu_count()} CPUs; load {load:.1f}", flush=True)
    everything = {}
    for name in models:
        with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
            cold = _spawn(name, "cold", cache, args)
            warm = cold if "skipped" in cold else _spawn(name, "full", cache, args)
        print_model(name, cold, warm)
        sys.stdout.flush()
        everything[name] = {"cold": cold, "full": warm}
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
