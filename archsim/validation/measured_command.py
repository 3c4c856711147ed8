"""``archsim validate tensor_core --measured DIR``: terminal tables and the HTML page.

Exit code 0 when the time goals of issue 16 (:data:`GOALS`) hold over the simulated rows, 1 when
any does not, 2 for user errors (unknown hardware, malformed folder).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.errors import ArchsimError, os_reason

if TYPE_CHECKING:  # pandas and the model load when the command runs, not for `--help`
    import pandas as pd

    from archsim.validation.measured import Comparison

__all__ = ["add_arguments", "check_unused", "format_comparison", "goal_lines", "run_measured"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--measured`` options of ``archsim validate``."""
    p.add_argument(
        "--measured",
        metavar="DIR",
        help="compare tensor_core with a measurement folder (as written by `archsim probe gpu`; "
        "e.g. ../shared/data/h100) instead of the paper claims",
    )
    p.add_argument(
        "--hardware",
        default=None,
        metavar="HW",
        help="with --measured: the GPU preset or YAML to simulate (default h100)",
    )
    p.add_argument(
        "--set",
        dest="hw_overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="with --measured: override a field of the GPU config by dotted path, e.g. --set "
        "hbm.bandwidth_bytes_per_s=4.8e12 to hold an H200's measurements against the h100 "
        "preset with the H200's memory (repeatable)",
    )
    p.add_argument(
        "--clock",
        choices=["model", "measured"],
        default=None,
        help="with --measured: simulate at the model's clock (default) or pin each row's SM "
        "clock to its measured sm_mhz (isolates the time model from the clock model; board power "
        "and energy are then priced at that clock)",
    )


def _echo(text: str, err: bool = False) -> None:
    print(text, file=sys.stderr if err else sys.stdout, flush=True)  # noqa: T201


def _pct(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{100 * x:+.1f}%"


def _num(x: float, width: int, spec: str) -> str:
    """``x`` right-aligned in ``width`` with ``spec``; '-' for NaN."""
    return f"{'-' if math.isnan(x) else format(x, spec):>{width}}"


def _stat_line(name: str, s: dict[str, float]) -> str:
    return (
        f"{name:<34}{s['n']:>5}{100 * s['median_abs_error']:>9.1f}%"
        f"{100 * s['p90_abs_error']:>9.1f}%{s['spearman']:>10.4f}"
    )


def format_comparison(cmp: Comparison) -> str:
    """Per-shape table, per file x precision statistics, power and energy comparisons."""
    from archsim.validation.measured import LONG_CALL_S
    from archsim.validation.measured_memory import format_memory

    lines = [
        f"{'file':<20}{'shape':<26}{'prec':<6}{'lay':<5}{'meas us':>10}{'sim us':>10}{'error':>9}",
    ]
    for _, r in cmp.rows.iterrows():
        sim = r["sim_time_s"]
        lines.append(
            f"{r['file'][:19]:<20}{r['label'][:25]:<26}{r['precision']:<6}{r['layout']:<5}"
            f"{r['time_s'] * 1e6:>10.2f}"
            + (f"{sim * 1e6:>10.2f}{_pct(r['error']):>9}" if not math.isnan(sim) else
               f"{'-':>10}{'-':>9}")
        )  # fmt: skip
    lines += ["", f"{'time: group':<34}{'rows':>5}{'median':>10}{'p90':>10}{'spearman':>10}"]
    for _, g in cmp.groups.iterrows():
        lines.append(_stat_line(f"{g['file'][:22]} {g['precision']}", g.to_dict()))
    lines.append(_stat_line("all simulated rows", cmp.overall))
    if not cmp.networks.empty:
        lines += ["", "networks: their conv layers' times summed (each layer timed alone):"]
        for _, w in cmp.networks.iterrows():
            sim = w["sim_time_s"]
            lines.append(
                f"  {w['file'][:19]:<20}{w['net']} n={w['batch']} {w['precision']}: "
                f"{w['layers']} layers, {w['time_s'] * 1e6:.1f} us measured, "
                + (f"{sim * 1e6:.1f} us simulated ({_pct(w['error'])})" if not math.isnan(sim)
                   else f"not simulated ({w['simulated']} of {w['layers']} layers ran)")
            )  # fmt: skip
    if not cmp.power.empty:
        lines += [
            "",
            "clock, board power and energy (board_w x time_s) of the rows whose calls last "
            f">= {LONG_CALL_S * 1e3:g} ms (NVML averages power over ~1 s):",
        ]
        lines.append(_power_table(cmp.power))
    if not cmp.energy.empty:
        lines += ["", "energy (NVML counter around ~4 s of calls):"]
        for _, e in cmp.energy.iterrows():
            if e["reason"]:
                lines.append(f"  {e['entry']:<24} not compared: {e['reason']}")
                continue
            err = (e["sim_energy_j"] - e["joules_per_call"]) / e["joules_per_call"]
            lines.append(
                f"  {e['entry']:<24} {e['joules_per_call']:.4g} J/call measured, "
                f"{e['sim_energy_j']:.4g} simulated ({_pct(err)}); {_watts(e['watts'])} W vs "
                f"{e['sim_power_w']:.0f} W" + (
                    f"; {e['sm_mhz']:.0f} MHz vs {e['sim_clock_hz'] / 1e6:.0f}"
                    if not math.isnan(e["sim_clock_hz"]) else "")
                + (f" ({e['note']})" if isinstance(e.get("note"), str) else "")
            )  # fmt: skip
    return "\n".join(lines + format_memory(cmp.memory))


def _watts(value: Any) -> str:
    """A measured mean power, W ("-": the entry has none)."""
    ok = isinstance(value, int | float) and math.isfinite(value)
    return f"{value:.0f}" if ok else "-"


def _power_table(power: pd.DataFrame) -> str:
    lines = [
        f"  {'shape':<26}{'prec':<6}{'MHz':>7}{'sim':>7}{'W':>7}{'sim':>7}{'J/call':>10}{'sim':>10}"
    ]
    for _, r in power.iterrows():
        clock = r.get("sim_clock_hz", math.nan) / 1e6
        watts = r.get("sim_board_w", math.nan)
        lines.append(
            f"  {r['label'][:25]:<26}{r['precision']:<6}{_num(r['sm_mhz'], 7, '.0f')}"
            f"{_num(clock, 7, '.0f')}{_num(r['board_w'], 7, '.0f')}{_num(watts, 7, '.0f')}"
            f"{_num(r['energy_j'], 10, '.4g')}{_num(r['sim_energy_j'], 10, '.4g')}"
        )
    triples = (
        ("sim_clock_hz", "sm_mhz", "clock", 1e6),
        ("sim_board_w", "board_w", "board power", 1.0),
        ("sim_energy_j", "energy_j", "energy per call", 1.0),
    )
    for col, meas, name, scale in triples:
        if col in power and power[col].notna().any():
            err = ((power[col] / scale - power[meas]) / power[meas]).dropna()
            lines.append(
                f"  {name}: median |error| {100 * err.abs().median():.1f}% (median signed "
                f"{100 * err.median():+.1f}%) over {len(err)} rows"
            )
    return "\n".join(lines)


def goal_lines(cmp: Comparison) -> tuple[list[str], bool]:
    """One PASS/FAIL line per goal of :data:`GOALS`; and whether all hold."""
    from archsim.validation.measured import GOALS

    ok_all, lines = True, []
    for key, goal in GOALS.items():
        value = cmp.overall[key]
        ok = value >= goal if key == "spearman" else value <= goal
        ok = ok and not math.isnan(value)
        ok_all &= ok
        shown = f"{value:.4f}" if key == "spearman" else f"{100 * value:.1f}%"
        bound = f">= {goal}" if key == "spearman" else f"<= {100 * goal:.0f}%"
        lines.append(f"{'PASS' if ok else 'FAIL'} {key} {shown} (goal {bound}, issue 16)")
    return lines, ok_all


def _write_html(cmp: Comparison, args: argparse.Namespace, hw_name: str, goals: list[str]) -> None:
    from archsim.report.measured import render_measured_report, write_measured_report

    text = render_measured_report(
        cmp.rows, cmp.groups, cmp.overall,
        title=f"archsim {hw_name} vs measured silicon", folder=str(args.measured),
        hardware=hw_name, clock=args.clock,
        goals=[(g.startswith("PASS"), g[5:]) for g in goals], notes=cmp.notes,
        power=cmp.power, energy=cmp.energy, networks=cmp.networks, memory=cmp.memory,
    )  # fmt: skip
    try:
        path = write_measured_report(Path(args.html), text)
    except OSError as exc:
        raise ArchsimError(f"{args.html}: cannot write: {os_reason(exc)}") from None
    _echo(f"wrote {path}")


def check_unused(args: argparse.Namespace) -> None:
    """``--hardware`` / ``--set`` / ``--clock`` mean something only with ``--measured``."""
    given = (("--hardware", args.hardware), ("--set", args.hw_overrides or None),
             ("--clock", args.clock))  # fmt: skip
    for flag, value in given:
        if value is not None:
            raise ArchsimError(
                f"{flag}: only used with --measured DIR; allowed: "
                f"`archsim validate tensor_core --measured DIR {flag} ...`"
            )


def _burst_lines(bursts: dict) -> str:
    """One line per burst trace: clock and time per call at its start and end."""
    from archsim.measure.probe import burst_summary

    out = ["bursts from idle (graph replays back to back; clock and time per call):"]
    for key, entry in bursts.items():
        if not entry["trace"]:
            out.append(f"  {key}: empty trace")
            continue
        s = burst_summary(entry)
        falls = (
            f"clock first 5 % down at {s['clock_falls_s'] * 1e3:.0f} ms"
            if not math.isnan(s["clock_falls_s"])
            else "clock never 5 % down"
        )
        out.append(
            f"  {key}: {s['first_mhz']:.0f} -> {s['last_mhz']:.0f} MHz, {s['first_us']:.2f} "
            f"-> {s['last_us']:.2f} us per call over {s['seconds']:.2f} s; {falls}"
        )
    return "\n".join(out)


def run_measured(args: argparse.Namespace) -> int:
    """Implementation of ``archsim validate tensor_core --measured DIR``."""
    from archsim.measure.folder import read_folder
    from archsim.validation.measured import compare, load_gpu

    models = list(dict.fromkeys(args.models)) or ["tensor_core"]
    if models != ["tensor_core"]:
        raise ArchsimError(
            f"validate: --measured compares tensor_core only (got {', '.join(models)}); "
            "allowed: `archsim validate tensor_core --measured DIR`"
        )
    if args.markdown:
        raise ArchsimError("-o/--markdown: not written with --measured; allowed: --html FILE")
    args.hardware = args.hardware or "h100"
    args.clock = args.clock or "model"
    if args.html:  # refused before minutes of simulating, not after the report is printed
        from archsim.output import check_out_file

        check_out_file(args.html, "--html")
    hw = load_gpu(args.hardware)
    if args.hw_overrides:
        from archsim.config.io import apply_set

        hw = apply_set(hw, args.hw_overrides)
    folder = read_folder(args.measured)

    def progress(message: str) -> None:
        if not args.quiet:
            _echo(f"  ... {message}", err=True)

    cmp = compare(hw, folder, clock=args.clock, progress=progress)
    _echo(f"{folder.device.get('name', '?')} ({folder.path}) vs archsim {hw.name}, "
          f"clock: {args.clock}")  # fmt: skip
    _echo(format_comparison(cmp))
    if folder.bursts:
        _echo(_burst_lines(folder.bursts))
    for note in (*cmp.notes, *(f"ignored {f}" for f in folder.ignored)):
        _echo(f"note: {note}")
    lines, ok = goal_lines(cmp)
    for line in lines:
        _echo(line)
    if args.html:
        _write_html(cmp, args, hw.name, lines)
    return 0 if ok else 1
