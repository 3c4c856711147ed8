"""Command line: ``archsim run | sweep | validate | list | schema | report``.

User mistakes print one line ``archsim: error: <file>: <field>: <problem>`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

from archsim import cli_calibrate, cli_probe
from archsim.cli_sweep import add_sweep_parser, cmd_sweep
from archsim.config.io import list_presets, load_hardware, load_workload, preset_dirs, read_yaml
from archsim.errors import ArchsimError, ConfigError, WorkloadError
from archsim.progress import layer_progress, progress_bar, progress_enabled
from archsim.results import RunResult
from archsim.simulate import archsim_version, simulate
from archsim.workload.matvec import LayerDataError

__all__ = ["main", "build_parser", "format_layer_table"]

DEFAULT_HW = "eie"
DEFAULT_WORKLOAD = "eie_benchmarks"


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line, like every other archsim error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"archsim: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every subcommand."""
    p = _Parser(
        prog="archsim",
        description="Cycle-level simulator of deep-learning accelerators (EIE, ...) with energy "
        "and area. Start with `archsim run` (EIE on the nine EIE benchmark layers).",
    )
    p.add_argument("--version", action="version", version=f"archsim {archsim_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="simulate a workload on a hardware config; writes results.csv/json and report.html",
        description="Simulate WORKLOAD on HW (preset names or YAML paths). With no arguments: "
        f"{DEFAULT_HW} on {DEFAULT_WORKLOAD}.",
    )
    run.add_argument("hw", nargs="?", default=DEFAULT_HW, help=f"hardware (default {DEFAULT_HW})")
    run.add_argument(
        "workload",
        nargs="?",
        default=DEFAULT_WORKLOAD,
        help=f"workload (default {DEFAULT_WORKLOAD})",
    )
    run.add_argument(
        "-o", "--out", default="archsim-out", help="output folder (default archsim-out)"
    )
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="override a hardware field by dotted path, e.g. --set pe_array.num_pes=128",
    )
    run.add_argument(
        "--baseline",
        metavar="HW",
        help="also run a baseline (e.g. dcnn for scnn) and add speedup_vs_<baseline> columns",
    )
    run.add_argument("--seed", type=int, default=0, help="seed of synthetic tensors (default 0)")
    run.add_argument("--batch", type=int, help="run every conv/fc/lstm layer at this batch size")
    run.add_argument(
        "--from-scalesim",
        nargs=2,
        metavar=("CFG", "TOPOLOGY"),
        help="take HW and WORKLOAD from a SCALE-Sim .cfg and topology CSV (systolic array); "
        "also writes DIR/COMPUTE_REPORT.csv in SCALE-Sim's format",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    add_sweep_parser(sub)
    lst = sub.add_parser("list", help="list the hardware, workload and sweep presets")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    sch = sub.add_parser("schema", help="print the JSON Schema of hardware, workload or sweeps")
    sch.add_argument("kind", choices=["hardware", "workload", "sweep"])
    rep = sub.add_parser(
        "report",
        help="rebuild DIR/report.html from DIR/results.json (run) or results.parquet (sweep)",
    )
    rep.add_argument("dir", help="a folder written by `archsim run` or `archsim sweep`")
    from archsim.validation.command import add_parser as add_validate_parser

    add_validate_parser(sub)
    cli_probe.add_parser(sub)
    cli_calibrate.add_parser(sub)
    return p


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``["a.b=3", "c=true"]`` -> ``{"a.b": 3, "c": True}`` (values parsed as YAML scalars)."""
    out: dict[str, Any] = {}
    for item in items:
        path, sep, raw = item.partition("=")
        if not sep or not path.strip():
            raise ConfigError(
                "--set", item, "malformed; allowed: PATH=VALUE, e.g. pe_array.num_pes=128"
            )
        try:
            out[path.strip()] = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError:
            out[path.strip()] = raw
    return out


def format_layer_table(result: RunResult) -> str:
    """Per-layer table that fits 80 columns."""
    df = result.to_dataframe()
    # one accelerator-specific column: (column, header, scale)
    speedups = [c for c in df.columns if c.startswith("speedup_vs_")]
    candidates = [(c, f"vs {c[11:]} x", 1.0) for c in speedups] + [
        ("eie_load_balance", "balance %", 100.0),
        ("scnn_barrier_idle", "barrier %", 100.0),
        ("tc_peak_fraction", "peak %", 100.0),
    ]
    extra = next(((c, h, k) for c, h, k in candidates if c in df.columns), None)
    head = (
        f"{'layer':<14}{'cycles':>10}{'time us':>10}{'util %':>8}{'energy uJ':>11}{'power mW':>10}"
    )
    head += f"{extra[1]:>11}" if extra else ""
    lines = [head, "-" * len(head)]
    for _, r in df.iterrows():
        line = (
            f"{str(r['layer'])[:13]:<14}{int(r['cycles']):>10,}{r['time_s'] * 1e6:>10.2f}"
            f"{r['utilization'] * 100:>8.1f}{r['energy_pj'] * 1e-6:>11.3f}"
            f"{r['power_w'] * 1e3:>10.1f}"
        )
        if extra:
            line += f"{r[extra[0]] * extra[2]:>11.2f}"
        lines.append(line)
    s = result.summary()
    lines.append("-" * len(head))
    lines.append(
        f"total {s['total_cycles']:,} cycles, {s['total_time_s'] * 1e6:.2f} us, "
        f"{s['total_energy_pj'] * 1e-6:.3f} uJ, {s['average_power_w'] * 1e3:.1f} mW"
    )
    lines.append(f"      {s['effective_gops']:.1f} GOP/s, area {s['total_area_mm2']:.2f} mm^2")
    return "\n".join(lines)


def _write_outputs(result: RunResult, out_dir: Path) -> None:
    """Write results.csv, results.json, report.html atomically (all or nothing)."""
    from archsim.report import write_run_report

    out_dir = out_dir.resolve()
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError("--out", "", f"{out_dir} exists and is not a folder; allowed: a folder")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    except OSError as exc:
        raise ConfigError("--out", "", f"cannot create {out_dir}: {exc.strerror}") from None
    try:
        result.to_dataframe().to_csv(tmp / "results.csv", index=False)
        result.to_json(tmp / "results.json")
        write_run_report(result, tmp / "report.html")
        out_dir.mkdir(exist_ok=True)
        for f in ("results.csv", "results.json", "report.html"):
            os.replace(tmp / f, out_dir / f)
    except OSError as exc:
        raise ConfigError("--out", "", f"cannot write {out_dir}: {exc.strerror}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _cmd_run(args: argparse.Namespace) -> int:
    if args.from_scalesim:
        from archsim.config.scalesim import load_scalesim

        hw, wl = load_scalesim(*args.from_scalesim)
    else:
        hw, wl = load_hardware(args.hw), load_workload(args.workload)
    if args.overrides:
        hw = hw.with_overrides(parse_overrides(args.overrides), source="--set")
    if args.batch is not None:
        if args.batch < 1:
            problem = f"must be >= 1 (got {args.batch}); allowed: an integer >= 1"
            raise ConfigError("--batch", "", problem)
        wl = wl.with_batch(args.batch)
    if args.seed < 0:
        raise ConfigError("--seed", "", f"must be >= 0 (got {args.seed})")
    try:
        baseline = load_hardware(args.baseline) if args.baseline else None
        steps = len(wl.layers) * (2 if baseline else 1)
        with progress_bar(steps, "simulating", progress_enabled(args.quiet)) as advance:
            result = simulate(
                hw, wl, seed=args.seed, baseline=baseline, progress=layer_progress(advance)
            )
    except LayerDataError as exc:
        index = next((i for i, lay in enumerate(wl.layers) if lay.name == exc.layer), None)
        field = f"layers.{index}.{exc.field}" if index is not None else exc.field
        raise WorkloadError(f"{wl.origin}: {field}: {exc.problem}") from None
    _write_outputs(result, Path(args.out))
    if args.from_scalesim:
        from archsim.config.scalesim import write_compute_report

        write_compute_report(result, Path(args.out) / "COMPUTE_REPORT.csv")
    if not args.quiet:
        print(
            f"archsim {archsim_version()}: {result.hardware} on {result.workload}, "
            f"seed {result.seed}"
        )
        print(format_layer_table(result))
        base = result.metadata.get("baseline")
        if base:
            ratios = ", ".join(f"{k} {v:.2f}x" for k, v in base.items() if "_vs_" in k)
            print(f"baseline {base['hardware']}: {base['total_cycles']:,} cycles; {ratios}")
        for w in result.warnings:
            print(f"warning: {w}")
        print(f"wrote {Path(args.out) / 'results.csv'}, results.json, report.html")
    return 0


def _preset_summary(kind: str) -> list[dict[str, str]]:
    out = []
    for name in list_presets(kind):
        path = next(d / f"{name}.yaml" for d in preset_dirs(kind) if (d / f"{name}.yaml").is_file())
        data = read_yaml(path)
        desc = " ".join(str(data.get("description", data.get("source", ""))).split())
        out.append({"name": name, "description": desc})
    return out


def _cmd_list(args: argparse.Namespace) -> int:
    presets = {k: _preset_summary(k) for k in ("hardware", "workload", "sweep")}
    if args.json:
        print(json.dumps(presets, indent=1))
        return 0
    for kind, items in presets.items():
        print(f"{kind} presets:")
        for item in items:
            print(f"  {item['name']:<18} {item['description'][:58]}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from archsim.config.io import json_schema

    print(json.dumps(json_schema(args.kind), indent=1))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    allowed = "allowed: a folder written by `archsim run` or `archsim sweep`"
    if not folder.is_dir():
        raise ArchsimError(f"{folder}: folder not found; {allowed}")
    try:
        if not (folder / "results.json").exists() and (folder / "sweep.json").exists():
            from archsim.cli_sweep import rebuild_sweep_report

            path = rebuild_sweep_report(folder)
        else:
            from archsim.report import write_run_report

            path = write_run_report(RunResult.from_json(folder / "results.json"), folder)
    except OSError as exc:
        raise ArchsimError(f"{folder / 'report.html'}: cannot write: {exc.strerror}") from None
    print(f"wrote {path}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from archsim.validation.command import run_command

    return run_command(args)


_COMMANDS = {
    "run": _cmd_run,
    "sweep": cmd_sweep,
    "list": _cmd_list,
    "schema": _cmd_schema,
    "report": _cmd_report,
    "validate": _cmd_validate,
    "probe": cli_probe.cmd,
    "calibrate": cli_calibrate.cmd,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``archsim`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return _COMMANDS[args.command](args)
    except ArchsimError as exc:
        message = " ".join(str(exc).split())  # always one line
        print(f"archsim: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
