"""archsim's systolic model side by side with SCALE-Sim 3.0.0: cycles, wall time, peak memory.

Usage::

    python benchmarks/scalesim_compare.py            # archsim vs the stored SCALE-Sim goldens
    python benchmarks/scalesim_compare.py --regen [--only CASE ...] [--scalesim-venv DIR]
    python benchmarks/scalesim_compare.py --side-by-side 3 --only gemm256_os_32x32_user
    python benchmarks/scalesim_compare.py --side-by-side 3 --older /tmp/oldpkg --only ...

``--side-by-side N`` times whole processes, as a user runs them, alternately (SCALE-Sim, archsim,
SCALE-Sim, ...; N rounds each): SCALE-Sim's own run from its virtual environment against
``archsim run --from-scalesim CFG TOPO --no-report -q`` with this interpreter; it prints min /
median wall seconds of each and their ratios, and the load average before and after (the
machine may be shared). Run archsim once beforehand so that numba's cache is warm.

``--regen`` writes our own SCALE-Sim ``.cfg`` / topology CSV per case into
``tests/fixtures/scalesim/`` (layer dimensions of the public networks SCALE-Sim ships, in its
format), runs SCALE-Sim from a separate virtual environment (default ``/work/scalesim-venv`` or
``$SCALESIM_VENV``; 3.0.0 needs NumPy <= 2.3.5) under ``/usr/bin/time -v`` and stores its
per-layer COMPUTE_REPORT numbers and whole BANDWIDTH_REPORT / DETAILED_ACCESS_REPORT rows
(cases regenerated since those were added), wall time and peak RSS as
``<case>.json``. Without ``--regen`` each case runs on archsim (``timing_model: scalesim``, from
the same cfg/CSV) in a fresh process, and a table compares cycles, stalls, time and memory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "scalesim"

CFG = """[general]
run_name = {name}

[architecture_presets]
ArrayHeight:    {rows}
ArrayWidth:     {cols}
IfmapSramSzkB:   {kb}
FilterSramSzkB:  {kb}
OfmapSramSzkB:   {kb}
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : {bw}
Dataflow : {df}
MemoryBanks:   1
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: {bw}
IfmapSRAMBankNum: 1
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: {bw}
FilterSRAMBankNum: 1
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: {mode}
UseRamulatorTrace: False
"""

CONV_HEADER = (
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
    "Strides,"
)
# AlexNet as in SCALE-Sim's topologies/conv_nets/alexnet.csv (Krizhevsky et al., 2012)
ALEXNET = [
    ("Conv1", 224, 224, 11, 11, 3, 96, 4),
    ("Conv2", 27, 27, 5, 5, 96, 256, 1),
    ("Conv3", 13, 13, 3, 3, 256, 384, 1),
    ("Conv4", 13, 13, 3, 3, 384, 384, 1),
    ("Conv5", 13, 13, 3, 3, 384, 256, 1),
]
# topologies/GEMM_mnk/test_mnk_input.csv
TEST_MNK = [("Test 1", 256, 128, 256)]

CASES: dict[str, dict] = {
    "alexnet_os_32x32_user": {"df": "os", "mode": "USER", "conv": ALEXNET},
    "alexnet_ws_32x32_user": {"df": "ws", "mode": "USER", "conv": ALEXNET},
    "alexnet_is_32x32_user": {"df": "is", "mode": "USER", "conv": ALEXNET},
    "alexnet_ws_32x32_calc": {"df": "ws", "mode": "CALC", "conv": ALEXNET},
    "test_mnk_os_32x32_user": {"df": "os", "mode": "USER", "gemm": TEST_MNK},
    "test_mnk_ws_32x32_user": {"df": "ws", "mode": "USER", "gemm": TEST_MNK},
    "test_mnk_is_32x32_user": {"df": "is", "mode": "USER", "gemm": TEST_MNK},
    "gemm256_os_32x32_user": {"df": "os", "mode": "USER", "gemm": [("G256", 256, 256, 256)]},
    "gemm512_os_32x32_user": {"df": "os", "mode": "USER", "gemm": [("G512", 512, 512, 512)]},
    "gemm1024_os_32x32_user": {"df": "os", "mode": "USER", "gemm": [("G1024", 1024, 1024, 1024)]},
    # SCALE-Sim's default interface bandwidth mode (CALC: no stalls, it reports the bandwidth
    # needed); in USER mode its 1024^3 run did not finish in 87 CPU minutes (see CHANGELOG)
    "gemm512_os_32x32_calc": {"df": "os", "mode": "CALC", "gemm": [("G512", 512, 512, 512)]},
    "gemm1024_os_32x32_calc": {"df": "os", "mode": "CALC", "gemm": [("G1024", 1024, 1024, 1024)]},
    # small arrays and 1 kB SRAMs: every buffer's window moves and USER mode stalls, so the
    # BANDWIDTH / DETAILED_ACCESS reports' start and stop cycles are exercised (tests compare)
    "small_gemm_os_4x4_user": {"df": "os", "mode": "USER", "gemm": [("G", 64, 48, 40)],
                               "arch": {"rows": 4, "cols": 4, "kb": 1, "bw": 2}},
    "small_conv_ws_4x4_user": {"df": "ws", "mode": "USER", "conv": [("C", 12, 12, 3, 3, 8, 16, 1)],
                               "arch": {"rows": 4, "cols": 4, "kb": 1, "bw": 2}},
    "small_conv_is_4x4_calc": {"df": "is", "mode": "CALC", "conv": [("C", 12, 12, 3, 3, 8, 16, 1)],
                               "arch": {"rows": 4, "cols": 4, "kb": 1, "bw": 2}},
    "small_gemm_ws_8x8_calc": {"df": "ws", "mode": "CALC", "gemm": [("G", 96, 64, 80)],
                               "arch": {"rows": 8, "cols": 8, "kb": 1, "bw": 4}},
}  # fmt: skip

DRIVER = """
import contextlib, io, os, sys
from scalesim.scale_sim import scalesim
cfg, topo, layout, out, kind = sys.argv[1:6]
with contextlib.redirect_stdout(io.StringIO()):
    s = scalesim(save_disk_space=True, verbose=False, config=cfg, topology=topo, layout=layout,
                 input_type_gemm=(kind == "gemm"))
    s.run_scale(top_path=out)
"""


def write_inputs(name: str, case: dict) -> tuple[Path, Path, str]:
    """Write ``<name>.cfg`` and ``<name>.csv`` (SCALE-Sim formats) into the fixtures folder."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    cfg = FIXTURES / f"{name}.cfg"
    arch = {"rows": 32, "cols": 32, "kb": 64, "bw": 10, **case.get("arch", {})}
    cfg.write_text(CFG.format(name=name, df=case["df"], mode=case["mode"], **arch),
                   encoding="utf-8")  # fmt: skip
    csv = FIXTURES / f"{name}.csv"
    if "gemm" in case:
        lines = ["Layer Name, M, N, K,"] + [f"{n}, {m}, {nn}, {k}," for n, m, nn, k in case["gemm"]]
        kind = "gemm"
    else:
        lines = [CONV_HEADER] + [",".join(str(x) for x in row) + "," for row in case["conv"]]
        kind = "conv"
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cfg, csv, kind


def _report(path: Path) -> list[list[float]]:
    rows = []
    for line in path.read_text().splitlines()[1:]:
        cells = [c.strip() for c in line.split(",") if c.strip()]
        if cells:
            rows.append([float(c) for c in cells])
    return rows


def run_scalesim(name: str, case: dict, venv: Path) -> dict:
    """Run SCALE-Sim on one case; its per-layer numbers, wall time and peak RSS."""
    cfg, csv, kind = write_inputs(name, case)
    with tempfile.TemporaryDirectory() as tmp:
        layout = Path(tmp) / "layout.csv"
        layout.write_text("Layer name,\n")
        cmd = ["/usr/bin/time", "-v", str(venv / "bin" / "python"), "-c", DRIVER, str(cfg),
               str(csv), str(layout), tmp, kind]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", proc.stderr).group(1)
        parts = [float(x) for x in wall.split(":")]
        wall_s = sum(p * 60 ** (len(parts) - 1 - i) for i, p in enumerate(parts))
        rss_kb = int(
            re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1)
        )
        out = Path(tmp) / name
        comp = _report(out / "COMPUTE_REPORT.csv")
        bw = _report(out / "BANDWIDTH_REPORT.csv")
        det = _report(out / "DETAILED_ACCESS_REPORT.csv")
    layers = []
    for c, b, d in zip(comp, bw, det, strict=True):
        layers.append({
            "total_cycles_incl_prefetch": int(c[1]), "total_cycles": int(c[2]),
            "stall_cycles": int(c[3]), "ifmap_dram_reads": int(d[12]),
            "filter_dram_reads": int(d[15]), "ofmap_dram_writes": int(d[18]),
            "bandwidth_report": b, "detailed_access_report": d,
        })  # fmt: skip
    return {"scalesim_version": "3.0.0", "wall_s": wall_s, "peak_rss_mb": rss_kb / 1024,
            "layers": layers}  # fmt: skip


ARCHSIM_DRIVER = """
import json, resource, sys, time
t = time.perf_counter()
from archsim.config.scalesim import load_scalesim
from archsim import simulate
hw, wl = load_scalesim(sys.argv[1], sys.argv[2])
t1 = time.perf_counter()
res = simulate(hw, wl)
t2 = time.perf_counter()
rows = [{"total_cycles": lr.cycles, "stall_cycles": lr.extras["systolic_stall_cycles"],
         "compute_cycles": lr.extras["systolic_compute_cycles"],
         "functional_error": lr.extras["systolic_functional_max_error"]} for lr in res.layers]
print(json.dumps({"wall_s": t2 - t1, "import_s": t1 - t,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "layers": rows}))
"""


def run_archsim(name: str) -> dict:
    """archsim on one stored case, in a fresh process (its wall time excludes imports)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cfg, csv = FIXTURES / f"{name}.cfg", FIXTURES / f"{name}.csv"
    proc = subprocess.run([sys.executable, "-c", ARCHSIM_DRIVER, str(cfg), str(csv)],
                          capture_output=True, text=True, check=True, env=env)  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _timed(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> float:
    """Wall seconds of one whole process (its output discarded; a failure raises). Run it
    from a neutral ``cwd``: from the repository root ``python -m archsim`` would import the
    checkout ahead of the installed archsim and of ``PYTHONPATH`` (``--older``)."""
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True, env=env, cwd=cwd)
    return time.perf_counter() - t


def side_by_side(names: list[str], venv: Path, rounds: int, older: str | None = None) -> int:
    """SCALE-Sim and ``archsim run --from-scalesim`` alternately, whole processes; with
    ``older`` (a folder holding another archsim, e.g. ``pip install --no-deps --target``) that
    one runs too, in the same rounds, from ``PYTHONPATH``."""
    print(f"load average {os.getloadavg()[0]:.2f}; {rounds} rounds, alternating")
    print(f"{'case':<24}{'SCALE-Sim min/med s':>21}{'archsim min/med s':>19}{'ratio min/med':>15}")
    for name in names:
        cfg, csv, kind = write_inputs(name, CASES[name])  # the same files as the goldens'
        ss_times, as_times, old_times = [], [], []
        with tempfile.TemporaryDirectory(prefix="ss-sbs-") as tmp:
            layout = Path(tmp) / "layout.csv"
            layout.write_text("Layer name,\n")
            ss_cmd = [str(venv / "bin" / "python"), "-c", DRIVER, str(cfg), str(csv), str(layout),
                      tmp, kind]  # fmt: skip
            as_cmd = [sys.executable, "-m", "archsim", "run", "--from-scalesim", str(cfg),
                      str(csv), "--no-report", "-q", "-o", str(Path(tmp) / "archsim")]  # fmt: skip
            old_env = {**os.environ, "PYTHONPATH": older} if older else None
            for _ in range(rounds):
                ss_times.append(_timed(ss_cmd, cwd=tmp))
                as_times.append(_timed(as_cmd, cwd=tmp))
                if old_env is not None:
                    old_times.append(_timed(as_cmd, old_env, cwd=tmp))
        ss_min, ss_med = min(ss_times), statistics.median(ss_times)
        as_min, as_med = min(as_times), statistics.median(as_times)
        print(
            f"{name[:23]:<24}{ss_min:>10.2f} / {ss_med:<8.2f}{as_min:>8.2f} / {as_med:<8.2f}"
            f"{ss_min / as_min:>6.1f}x / {ss_med / as_med:.1f}x"
        )
        if old_times:
            o_min, o_med = min(old_times), statistics.median(old_times)
            print(
                f"{'  (older archsim)':<24}{'':>21}{o_min:>8.2f} / {o_med:<8.2f}"
                f"{ss_min / o_min:>6.1f}x / {ss_med / o_med:.1f}x"
            )
        rounds_text = ", ".join(f"{t:.2f}" for t in ss_times)
        print(
            f"{'':<4}rounds: SCALE-Sim {rounds_text}; archsim "
            + ", ".join(f"{t:.2f}" for t in as_times)
            + ("; older " + ", ".join(f"{t:.2f}" for t in old_times) if old_times else "")
        )
    print(f"load average {os.getloadavg()[0]:.2f} (ratio = SCALE-Sim time / archsim time)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regen", action="store_true", help="re-run SCALE-Sim, rewrite goldens")
    ap.add_argument("--only", nargs="*", help="cases to run (default: all)")
    ap.add_argument(
        "--side-by-side", type=int, metavar="N", default=0,
        help="time SCALE-Sim and archsim whole processes alternately, N rounds",
    )  # fmt: skip
    default_venv = os.environ.get("SCALESIM_VENV", "/work/scalesim-venv")
    ap.add_argument("--scalesim-venv", default=default_venv, help="SCALE-Sim's virtualenv")
    ap.add_argument(
        "--older", metavar="DIR",
        help="with --side-by-side: also time the archsim installed in DIR (PYTHONPATH), "
        "e.g. `pip install --no-deps --target DIR <old checkout>`",
    )  # fmt: skip
    args = ap.parse_args()
    names = args.only or list(CASES)
    if args.side_by_side:
        venv = Path(args.scalesim_venv)
        if not (venv / "bin" / "python").exists():
            print(f"no SCALE-Sim venv at {venv}; see the module docstring", file=sys.stderr)
            return 2
        return side_by_side(names, venv, args.side_by_side, args.older)
    if args.regen:
        venv = Path(args.scalesim_venv)
        if not (venv / "bin" / "python").exists():
            print(f"no SCALE-Sim venv at {venv}; see the module docstring", file=sys.stderr)
            return 2
        for name in names:
            data = run_scalesim(name, CASES[name], venv)
            (FIXTURES / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
            print(f"{name}: SCALE-Sim {data['wall_s']:.1f} s, {data['peak_rss_mb']:.0f} MB")
        return 0
    head = (f"{'case':<24}{'layer':>6}{'SS total':>11}{'AS total':>11}{'SS stall':>10}"
            f"{'AS stall':>10}{'match':>6}")  # fmt: skip
    print(head)
    summary = []
    ok = True
    for name in names:
        gold_path = FIXTURES / f"{name}.json"
        if not gold_path.exists():
            print(f"{name}: no golden (run --regen)")
            continue
        gold = json.loads(gold_path.read_text())
        got = run_archsim(name)
        for i, (g, a) in enumerate(zip(gold["layers"], got["layers"], strict=True)):
            same = g["total_cycles"] == a["total_cycles"] and g["stall_cycles"] == a["stall_cycles"]
            ok &= same
            print(
                f"{name[:23]:<24}{i:>6}{g['total_cycles']:>11,}{a['total_cycles']:>11,}"
                f"{g['stall_cycles']:>10,}{a['stall_cycles']:>10,}{'yes' if same else 'NO':>6}"
            )
        summary.append((name, gold["wall_s"], got["wall_s"], gold["peak_rss_mb"],
                        got["peak_rss_mb"]))  # fmt: skip
    print()
    print(
        f"{'case':<24}{'SCALE-Sim s':>12}{'archsim s':>11}{'speed-up':>10}{'SS MB':>8}{'AS MB':>8}"
    )
    for name, ss, asim, ssm, asm in summary:
        print(
            f"{name[:23]:<24}{ss:>12.2f}{asim:>11.3f}{ss / max(asim, 1e-9):>9.0f}x"
            f"{ssm:>8.0f}{asm:>8.0f}"
        )
    print("(archsim time excludes Python/numba imports; peak RSS includes them)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
