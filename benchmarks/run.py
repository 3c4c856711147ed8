"""archsim speed, every figure beside its peer measured in the same run.

    python benchmarks/run.py [--models eie,scnn,dcnn] [--eie-cpp PATH] [--eie-data DIR]

Per model, in two fresh subprocesses sharing a new, empty NUMBA_CACHE_DIR: the first measures
the first simulate() call with the cache empty (numba compiles), the second the first call with
the cache filled (load only). Then every row times archsim and its peer ALTERNATELY (a, b, a,
b, ... at least 3 rounds, see ``floors.alternate``) and prints min and median of each and the
ratio archsim / peer of both. Peers: the NumPy floor (the layer's output computed functionally
from the same materialised inputs, nothing cached between calls; archsim's time includes its own
materialisation, encoding, timing, functional check and pricing), and with --eie-cpp the EIE
authors' C++ simulator (whole process) on the real Alex-8 layer, against archsim in-process
(memo off and on) and against a whole `archsim run` process. A start-up table compares
`import archsim` and `archsim --help` with a bare interpreter.

The machine may be shared: the load average is printed with every table; compare ratios.

A model is a ``BenchModel`` in MODELS: hardware preset, the workload shown layer by layer, the
workloads timed whole, speed goals from the issues. A model whose accelerator has no simulator
in this archsim is reported as skipped.
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

from floors import alternate, best_method, conv_floor, gemm_floor, matvec_floor, stats

import archsim
from archsim import memo
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
#: issue 18 goals, as ratios to the EIE authors' C++ simulator (whole process)
GOAL_ALEX8_IN_PROCESS_RATIO = 0.1
GOAL_ALEX8_RUN_RATIO = 3.0
GOAL_PEAK_RSS_GB = 4.0


def _floor_fns(hw, spec, seed: int, base_dir: Path) -> dict:
    if isinstance(spec, ConvLayer):
        return conv_floor(materialize_conv(spec, seed))
    if isinstance(spec, GemmLayer):
        return gemm_floor(spec.m, spec.n, spec.k)
    entries = hw.encoding.codebook_entries if hasattr(hw, "encoding") else 16
    return matvec_floor(materialize_matvec(spec, seed, base_dir, entries))


def _paired_row(name: str, fns: dict, peers: list[str], repeat: int, **extra) -> dict:
    """Time ``fns`` alternately; the row holds every contender's min/median and the peer's."""
    times = alternate(fns, repeat)
    peer = best_method(times, peers) if peers else None
    row = {"name": name, "times": {k: stats(v) for k, v in times.items()}, "peer": peer}
    return row | extra


def _simulate_row(name: str, hw, wl, floors: dict, repeat: int) -> dict:
    res = archsim.simulate(hw, wl)  # warm-up: the first call may load kernels
    cycles = sum(lr.cycles for lr in res.layers)
    macs = sum(lr.macs_effective for lr in res.layers)
    fns = {"archsim": lambda: archsim.simulate(hw, wl), **floors}
    return _paired_row(name, fns, list(floors), repeat, cycles=cycles, macs=macs)


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


def _cpp_call(exe: Path):
    """A callable running the EIE authors' C++ simulator (built outside the repo) once; it
    reads ``data/`` from its folder. Also returns the cycles it printed."""
    exe = exe.absolute()  # not resolve(): the authors' binary is a link beside data/
    exe = exe / "simulation" if exe.is_dir() else exe

    def call() -> str:
        p = subprocess.run([str(exe)], cwd=exe.parent, capture_output=True, text=True, check=True)
        return p.stdout + p.stderr

    m = re.search(r"cycles:\s*(\d+)", call())
    return call, int(m.group(1)) if m else 0


def _eie_real_rows(args: argparse.Namespace, hw, repeat: int) -> list[dict]:
    """archsim against the authors' C++ simulator (with --eie-cpp) on the real Alex-8 layer."""
    if args.eie_data is None or not Path(args.eie_data).is_dir():
        return [{"name": "Alex-8 real", "skipped": "no --eie-data folder"}]
    wl = alex8_real_workload(args.eie_data)
    floors = _floor_fns(hw, wl.layers[0], 0, wl.base_dir)
    rows = [_simulate_row("Alex-8 real vs NumPy", hw, wl, floors, max(repeat, 5))]
    if not args.eie_cpp:
        return rows
    cpp, cpp_cycles = _cpp_call(Path(args.eie_cpp))
    sim = {"archsim simulate()": lambda: archsim.simulate(hw, wl), "EIE C++ process": cpp}
    rows.append(
        _paired_row(
            "Alex-8 real vs C++",
            sim,
            ["EIE C++ process"],
            max(repeat, 5),
            goal_ratio=GOAL_ALEX8_IN_PROCESS_RATIO,
            peer_cycles=cpp_cycles,
        )
    )
    memo.set_resident_limit()  # simulate()'s default: the built layer and encoding are kept
    try:
        archsim.simulate(hw, wl)
        kept = {"archsim simulate(), kept": sim["archsim simulate()"], "EIE C++ process": cpp}
        rows.append(
            _paired_row(
                "Alex-8 real, layer kept",
                kept,
                ["EIE C++ process"],
                max(repeat, 5),
                goal_ratio=GOAL_ALEX8_IN_PROCESS_RATIO,
            )
        )
    finally:
        memo.set_resident_limit(0)
    memo.enable()  # the per-process cache of built layers, as sweeps use it
    try:
        archsim.simulate(hw, wl)
        memo_sim = {"archsim simulate(), memo": sim["archsim simulate()"], "EIE C++ process": cpp}
        rows.append(
            _paired_row(
                "Alex-8 real, memo on",
                memo_sim,
                ["EIE C++ process"],
                max(repeat, 5),
                goal_ratio=GOAL_ALEX8_IN_PROCESS_RATIO,
            )
        )
    finally:
        memo.disable()
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        spec_path = Path(tmp) / "alex8.yaml"
        spec_path.write_text(wl.model_dump_json())  # JSON is YAML
        cmd = [sys.executable, "-m", "archsim", "run", "eie", str(spec_path), "-q", "-o", tmp]

        def whole() -> None:
            subprocess.run(cmd, check=True, capture_output=True)

        def bare() -> None:  # the same run without report.html (no matplotlib)
            subprocess.run([*cmd, "--no-report"], check=True, capture_output=True)

        whole()  # warm the numba cache of this process tree
        rows.append(
            _paired_row(
                "Alex-8 real, whole process",
                {"archsim run": whole, "archsim run --no-report": bare, "EIE C++ process": cpp},
                ["EIE C++ process"],
                repeat,
                goal_ratio=GOAL_ALEX8_RUN_RATIO,
            )
        )
    return rows


def startup_rows(repeat: int) -> list[dict]:
    """Fresh interpreters: bare, ``import archsim``, ``archsim --help`` (alternating)."""

    def proc(code: str):
        return lambda: subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)

    fns = {
        "python -c pass": proc("pass"),
        "import archsim": proc("import archsim"),
        "archsim --help": proc(
            "from archsim.cli import build_parser; build_parser().format_help()"
        ),
    }
    return [_paired_row("start-up (whole process)", fns, ["python -c pass"], max(repeat, 5))]


def worker(args: argparse.Namespace) -> dict:
    """Measurements of one model inside this process (run by the parent in a subprocess)."""
    model = MODELS[args.worker]
    if archsim.load_hardware(model.hardware).accelerator not in REGISTRY:
        return {"skipped": f"no simulator for {model.hardware} in this archsim"}
    # every row but "layer kept" times the whole work of a call: simulate() would otherwise
    # keep each built layer and its encoding between the repeats (archsim.memo)
    memo.set_resident_limit(0)
    result: dict = {"probe": _probe(model)}
    if args.phase == "cold":
        return result
    hw = archsim.load_hardware(model.hardware)
    wl = archsim.load_workload(model.layers)
    rows = []
    for spec in wl.layers:
        one = wl.model_copy(update={"layers": [spec], "name": spec.name})
        floors = _floor_fns(hw, spec, 0, wl.base_dir)
        rows.append(_simulate_row(spec.name, hw, one, floors, args.repeat))
    nets = []
    for net in model.networks:
        nwl = archsim.load_workload(net)
        if args.networks and nwl.name not in args.networks:
            continue
        per_layer = [_floor_fns(hw, s, 0, nwl.base_dir) for s in nwl.layers]
        picks = [min(f.values(), key=lambda fn: alternate({"f": fn}, 1)["f"][0]) for f in per_layer]

        def floor_all(picks=picks) -> None:
            for fn in picks:
                fn()

        row = _simulate_row(f"network {nwl.name}", hw, nwl, {"np floor": floor_all}, args.repeat)
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


def _fmt_rows(r: dict) -> list[str]:
    """One line per contender: min, median, n, and (not for the peer) ratios to the peer."""
    if "skipped" in r:
        return [f"{r['name']:<28}skipped: {r['skipped']}"]
    peer = r["peer"]
    p = r["times"][peer] if peer else None
    lines = []
    for who, t in r["times"].items():
        ratio = ""
        if p and who != peer:
            ratio = f"{t['min'] / p['min']:>9.2f}x{t['median'] / p['median']:>9.2f}x"
            if r.get("goal_ratio"):
                ratio += f"  (goal <= {r['goal_ratio']:g}x)"
            elif r.get("goal_s"):
                ratio += f"  (goal {r['goal_s']:g} s)"
        if who == peer:
            who = f"{who} (peer)"
        lines.append(f"  {who[:30]:<31}{t['min']:>9.4f}{t['median']:>9.4f}{t['n']:>4}{ratio}")
    extra = []
    if r.get("cycles"):
        extra.append(f"{r['cycles']:,} cycles")
    if r.get("peer_cycles"):
        extra.append(f"peer {r['peer_cycles']:,} cycles")
    return [f"{r['name']}" + (f" ({', '.join(extra)})" if extra else ""), *lines]


HEAD = f"  {'contender':<31}{'min s':>9}{'med s':>9}{'n':>4}{'min/peer':>10}{'med/peer':>10}"


def print_rows(title: str, rows: list[dict]) -> None:
    """A titled table of paired rows."""
    print(f"\n== {title}; load {os.getloadavg()[0]:.1f}")
    print(HEAD)
    print("-" * len(HEAD))
    for r in rows:
        print("\n".join(_fmt_rows(r)))


def print_model(name: str, cold: dict, warm: dict) -> None:
    """One model's tables."""
    if "skipped" in warm:
        print(f"\n== {name}: skipped ({warm['skipped']})")
        return
    cold_p, warm_p = cold["probe"], warm["probe"]
    steady = min(cold_p["steady_s"], warm_p["steady_s"])
    print_rows(
        f"{name} ({MODELS[name].hardware}): numba compile {cold_p['first_s'] - steady:.2f} s "
        f"(empty cache), cache load {max(warm_p['first_s'] - steady, 0.0):.2f} s "
        f"(first call minus warm call of {cold_p['layer']}, {steady:.3f} s); "
        f"peak RSS {warm['peak_rss_gb']:.2f} GB (goal < {GOAL_PEAK_RSS_GB:g})",
        warm["layers"] + warm["networks"],
    )


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
    everything = {"startup": startup_rows(args.repeat)}
    print_rows("start-up", everything["startup"])
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
