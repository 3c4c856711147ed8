"""A new user's bad inputs, generated: every numeric leaf of the hardware, workload, system and
sweep files mutated to nonsense, plus malformed files and command lines.

Usage::

    python benchmarks/bad_input_battery.py [-j 2] [--only PREFIX] [--list]

Each case runs ``python -m archsim ...`` in a fresh folder with a 20 s limit and must end with
exit code 2, one stderr line ``archsim: error: ...``, no traceback, and no ``-o`` folder left
behind. A case that exits 0 was accepted: for the mutations used here (negative, NaN, inf,
strings, booleans, lists, maps, null where a number belongs) that is silently accepted
nonsense. The table counts each outcome; failures are listed with their stderr's last line.
Not run in CI (minutes); ``tests/unit/test_bad_inputs*.py`` keep representative cases.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

#: what replaces a numeric leaf (YAML text) -> label
NONSENSE = {"-3": "negative", ".nan": "nan", ".inf": "inf", '"4"': "string", "true": "bool",
            "[1, 2]": "list", "{a: 1}": "map", "null": "null"}  # fmt: skip


@dataclass
class Case:
    name: str
    args: list[str]
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text
    out: bool = True  # pass -o out (and check it is not left behind)


def _leaves(data, prefix=()):
    """(path, value) of every numeric leaf (bool excluded) of a YAML mapping/list tree."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, (*prefix, i))
    elif isinstance(data, int | float) and not isinstance(data, bool):
        yield prefix, data


def _set(data, path, value):
    node = data
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _mutations(text: str, limit_per_file: int) -> list[tuple[str, str]]:
    """(label, mutated YAML text): each numeric leaf gets one nonsense value, cycling through
    NONSENSE so that every kind is used; ``schema_version`` is left alone."""
    data = yaml.safe_load(text)
    out = []
    kinds = list(NONSENSE)
    for i, (path, _) in enumerate(_leaves(data)):
        if path and path[-1] == "schema_version":
            continue
        bad = kinds[i % len(kinds)]
        mutated = yaml.safe_load(yaml.safe_dump(data))
        _set(mutated, path, yaml.safe_load(bad))
        label = ".".join(str(p) for p in path) + f"={NONSENSE[bad]}"
        out.append((label, yaml.safe_dump(mutated, sort_keys=False)))
        if len(out) >= limit_per_file:
            break
    return out


def cases(limit: int) -> list[Case]:
    out: list[Case] = []
    tiny_wl = (
        "schema_version: 1\nname: t\nsource: battery\nlayers:\n"
        "  - {name: fc, kind: fc, inputs: 64, outputs: 32, weight_density: 0.2,"
        " activation_density: 0.5}\n"
    )
    gemm_wl = (
        "schema_version: 1\nname: g\nsource: battery\nlayers:\n"
        "  - {name: g, kind: gemm, m: 64, n: 64, k: 64}\n"
    )
    conv_wl = (
        "schema_version: 1\nname: c\nsource: battery\nlayers:\n  - {name: c, kind: conv, c: 8,"
        " k: 8, h: 8, w: 8, r: 3, s: 3, stride: 1, pad: 1, weight_density: 0.5,"
        " activation_density: 0.5}\n"
    )
    for hw, wl in (("tiny_eie", tiny_wl), ("scnn", conv_wl), ("systolic_32x32_os", gemm_wl),
                   ("h100", gemm_wl), ("v100", gemm_wl)):  # fmt: skip
        text = (ROOT / "hw_configs" / f"{hw}.yaml").read_text()
        for label, bad in _mutations(text, limit):
            out.append(Case(f"hw:{hw}:{label}", ["run", "hw.yaml", "wl.yaml"],
                            {"hw.yaml": bad, "wl.yaml": wl}))  # fmt: skip
    for name, wl, hw in (("fc", tiny_wl, "tiny_eie"), ("gemm", gemm_wl, "h100"),
                         ("conv", conv_wl, "scnn")):  # fmt: skip
        for label, bad in _mutations(wl, limit):
            out.append(Case(f"wl:{name}:{label}", ["run", hw, "wl.yaml"], {"wl.yaml": bad}))
    for sys_name in ("dgx_h100", "dgx1_v100"):
        text = (ROOT / "hw_configs" / f"{sys_name}.yaml").read_text()
        for label, bad in _mutations(text, limit):
            out.append(Case(f"sys:{sys_name}:{label}",
                            ["collective", "all_reduce", "--system", "sys.yaml", "--sizes", "1M"],
                            {"sys.yaml": bad}))  # fmt: skip
    sweep = (ROOT / "sweeps" / "eie_pes_fifo_width.yaml").read_text()
    small = sweep.replace("[16, 24, 32, 48, 64, 96, 128, 192, 256, 512]", "[16, 32]")
    small = small.replace("[1, 2, 3, 4, 6, 8, 12, 16, 32, 64]", "[2]")
    small = small.replace("[16, 32, 48, 64, 96, 128, 192, 256, 384, 512]", "[64]")
    small = small.replace("workload: eie_benchmarks", "workload: wl.yaml")
    for label, bad in _mutations(small, limit):
        out.append(Case(f"sweep:{label}", ["sweep", "s.yaml"], {"s.yaml": bad, "wl.yaml": tiny_wl}))
    # malformed files and command lines
    odd = {
        "empty": "", "binary": "\x00\x01\x02\xff", "list": "- 1\n- 2\n", "scalar": "42\n",
        "tabs": "schema_version: 1\n\tname: x\n", "bad-yaml": "a: [1, 2\n",
        "dup-key": "schema_version: 1\nschema_version: 1\n", "anchor-loop": "a: &x [*x]\n",
        "no-version": "name: x\n", "version-9": "schema_version: 9\nname: x\n",
    }  # fmt: skip
    for label, text in odd.items():
        hw_args = ["run", "hw.yaml", "eie_benchmarks"]
        out.append(Case(f"file-hw:{label}", hw_args, {"hw.yaml": text}))
        out.append(Case(f"file-wl:{label}", ["run", "tiny_eie", "wl.yaml"], {"wl.yaml": text}))
        out.append(Case(f"file-sweep:{label}", ["sweep", "s.yaml"], {"s.yaml": text}))
    cli = {
        "unknown-hw": ["run", "nosuchhw", "eie_benchmarks"],
        "unknown-wl": ["run", "tiny_eie", "nosuchwl"],
        "dir-as-hw": ["run", ".", "eie_benchmarks"],
        "set-unknown": ["run", "tiny_eie", "eie_benchmarks", "--set", "nope.x=1"],
        "set-empty": ["run", "tiny_eie", "eie_benchmarks", "--set", "="],
        "set-no-eq": ["run", "tiny_eie", "eie_benchmarks", "--set", "pe_array.num_pes"],
        "set-nan": ["run", "tiny_eie", "eie_benchmarks", "--set", "pe_array.num_pes=nan"],
        "seed-neg": ["run", "tiny_eie", "eie_benchmarks", "--seed", "-1"],
        "seed-text": ["run", "tiny_eie", "eie_benchmarks", "--seed", "x"],
        "batch-0": ["run", "h100", "resnet50", "--batch", "0"],
        "batch-huge": ["run", "h100", "resnet50", "--batch", "10000000000"],
        # 1.2e21 multiply-adds: results.json's 64-bit counts cannot hold them (it exited 0 and
        # wrote a results.json that `report` refused)
        "batch-past-64-bits": ["run", "h100", "resnet50", "--batch", "10000000000000"],
        "sizes-0": ["collective", "all_reduce", "--system", "dgx_h100", "--sizes", "0"],
        "sizes-bad": ["collective", "all_reduce", "--system", "dgx_h100", "--sizes", "8:x"],
        "coll-unknown": ["collective", "all_gatherz", "--system", "dgx_h100", "--sizes", "1M"],
        "train-gpus": ["train", "dgx_h100", "resnet50", "--gpus", "999"],
        "train-topk": ["train", "dgx_h100", "resnet50", "--topk", "-1"],
        "train-batch": ["train", "dgx_h100", "resnet50", "--batch", "0"],
        "validate-unknown": ["validate", "nosuchmodel"],
        "validate-measured-missing": ["validate", "tensor_core", "--measured", "nodir",
                                      "--hardware", "h100"],
        "validate-set-unknown": ["validate", "tensor_core", "--measured", "nodir",
                                 "--set", "hbm.nope=1"],
        "validate-set-bad-value": ["validate", "tensor_core", "--measured", "nodir",
                                   "--set", "hbm.bandwidth_bytes_per_s=-1"],
        "validate-set-no-measured": ["validate", "tensor_core", "--set", "launch.graph_s=1e-6"],
        "calibrate-missing": ["calibrate", "tensor_core", "--measured", "nodir", "-o", "x.yaml"],
        "import-not-onnx": ["import", "onnx", "wl.yaml", "-o", "x.yaml"],
        "compress-not-onnx": ["compress", "wl.yaml", "-o", "x.onnx"],
        "schema-unknown": ["schema", "nosuch"],
        "report-missing": ["report", "nodir"],
        "run-onnx-missing": ["run", "eie", "missing.onnx"],
        "from-scalesim-missing": ["run", "--from-scalesim", "a.cfg", "b.csv"],
        "max-points-0": ["sweep", "s.yaml", "--max-points", "0"],
        "jobs-0": ["sweep", "s.yaml", "-j", "0"],
        # from the 32nd session's audit
        "pipeline-3": ["train", "dgx_a100", "resnet50", "--pipeline", "3", "--gpus", "4"],
        "train-set-step": ["train", "dgx_a100", "resnet50", "--set", "step.batch_per_gpu=8"],
        "launch-huge": ["run", "h100", "resnet50", "--set", "launch.graph_s=1e300"],
        "validate-seed-huge": ["validate", "eie", "--seed", "99999999999999999999999"],
        "compress-empty-out": ["compress", "wl.yaml", "-o", ""],
        "sweep-derive-later": ["sweep", "derive.yaml"],
        "collective-out-dir-in-way": ["collective", "all_reduce", "--system", "dgx_h100",
                                      "--sizes", "1K", "-o", "busy"],
        # from the 39th session's fuzz
        "nvls-on-v100": ["collective", "all_reduce", "--system", "dgx_h100", "--set",
                         "gpu=v100", "--sizes", "1G"],
        "sms-huge": ["run", "h100", "resnet50", "--set", "sms=9223372036854775807"],
        "nvls-channels-huge": ["collective", "all_reduce", "--system", "dgx_h100", "--set",
                               "nccl.nvls_channels=1000000000", "--sizes", "1M"],
        "gpus-arabic-digit": ["collective", "all_reduce", "--system", "dgx_a100", "--gpus",
                              "\u0668", "--sizes", "1M"],
        "sizes-fullwidth": ["collective", "all_reduce", "--system", "dgx_a100", "--sizes",
                            "\uff11M"],
    }  # fmt: skip
    derive = small.replace("metrics:", "derive:\n  activation_fifo.depth: "
                           "activation_fifo.width_bits\n  activation_fifo.width_bits: "
                           "activation_fifo.depth\nmetrics:")  # fmt: skip
    for label, args in cli.items():
        files = {"wl.yaml": tiny_wl, "s.yaml": small, "derive.yaml": derive,
                 "busy/results.json/x": ""}  # fmt: skip
        out.append(Case(f"cli:{label}", args, files, out="-o" not in args))
    out.append(Case("out:is-file", ["run", "tiny_eie", "wl.yaml", "-o", "f.txt"],
                    {"wl.yaml": tiny_wl, "f.txt": "x"}, out=False))  # fmt: skip
    out.append(Case("out:empty", ["run", "tiny_eie", "wl.yaml", "-o", ""], {"wl.yaml": tiny_wl},
                    out=False))  # fmt: skip
    return out


#: cases that must run (exit 0), with why they are not nonsense
MUST_RUN = {
    "cli:batch-huge": "a batch of 1e10 is valid input (1.2e18 multiply-adds, inside 64-bit "
    "results); the GPU plan is analytic (1e13 used to die in a MemoryError listing every wave; "
    "then took ~19 s visiting 2^18 wave cuts per plan, now 2^14)",
    "hw:h100:library.families.2.fill_access_bytes=null": "null is this field's documented "
    "setting for a fill rate that does not scale with the load width",
}


def run(case: Case, timeout: float) -> tuple[str, str]:
    """(outcome, last stderr line) of one case."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for rel, text in case.files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text, encoding="utf-8", errors="surrogateescape")
        args = [sys.executable, "-m", "archsim", *case.args]
        if case.out and "-o" not in case.args:
            args += ["-o", "out"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        try:
            p = subprocess.run(args, cwd=d, capture_output=True, text=True, timeout=timeout,
                               env=env)  # fmt: skip
        except subprocess.TimeoutExpired:
            return "hang", ""
        err = p.stderr.strip().splitlines()
        last = err[-1] if err else ""
        if "Traceback" in p.stderr:
            return "traceback", last
        if p.returncode == 0:
            return ("ok" if case.name in MUST_RUN else "accepted"), last
        if case.name in MUST_RUN:
            return f"exit {p.returncode}", last
        if p.returncode != 2:
            return f"exit {p.returncode}", last
        errors = [ln for ln in err if ln.startswith("archsim: error:")]
        if len(errors) != 1:
            return "not one line", last
        if case.out and (d / "out").exists():
            return "left output", last
        return "ok", last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", type=int, default=2, help="cases run at once")
    ap.add_argument("--only", default="", help="run cases whose name starts with this")
    ap.add_argument("--limit", type=int, default=40, help="mutated leaves per file at most")
    ap.add_argument("--list", action="store_true", help="list the cases and stop")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args()
    todo = [c for c in cases(args.limit) if c.name.startswith(args.only)]
    if args.list:
        print("\n".join(c.name for c in todo))
        return 0
    with ThreadPoolExecutor(args.j) as pool:
        results = list(pool.map(lambda c: run(c, args.timeout), todo))
    counts = Counter(r[0] for r in results)
    print(f"{len(todo)} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for case, (outcome, last) in zip(todo, results, strict=True):
        if outcome != "ok":
            print(f"  {outcome:<13} {case.name}: {last[:160]}")
    return 0 if counts.get("ok", 0) == len(todo) else 1


if __name__ == "__main__":
    sys.exit(main())
