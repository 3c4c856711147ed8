"""``archsim run``: one hardware on one workload (a preset, a YAML file or an ONNX model), the
per-layer table on the console, results.csv / results.json / report.html written all or nothing.

User mistakes print one line ``archsim: error: <file>: <field>: <problem>`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from archsim import cli_onnx, compile_helper
from archsim.cli_doctor import announce_compile
from archsim.errors import ArchsimError, ConfigError, WorkloadError, shown_name
from archsim.units import INT64_MAX

if TYPE_CHECKING:
    from archsim.results import RunResult

# Imported by the CLI as it starts: only what argparse needs at module level (see cli.py).

__all__ = ["DEFAULT_HW", "DEFAULT_WORKLOAD", "cmd_run", "format_layer_table"]

DEFAULT_HW = "eie"
DEFAULT_WORKLOAD = "eie_benchmarks"


def _display_width(text: str) -> int:
    """Terminal columns of ``text`` (East Asian wide and full-width characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def format_layer_table(result: RunResult) -> str:
    """Per-layer table; layer names are never cut (ResNet's res2a_branch2a/b/c stay distinct)."""
    from archsim.csv_rows import frame_records  # the frame's rows without importing pandas

    columns, records = frame_records(lr.row() for lr in result.layers)
    # one accelerator-specific column: (column, header, scale)
    speedups = [c for c in columns if c.startswith("speedup_vs_")]
    candidates = [(c, f"vs {c[11:]} x", 1.0) for c in speedups] + [
        ("eie_load_balance", "balance %", 100.0),
        ("scnn_barrier_idle", "barrier %", 100.0),
        ("tc_peak_fraction", "peak %", 100.0),
    ]
    extra = next(((c, h, k) for c, h, k in candidates if c in columns), None)
    names = [str(r["layer"]) for r in records]
    width = max([5, *(_display_width(n) for n in names)]) + 1
    # (header, least width): each column widens to its longest cell (a 10^15 us layer)
    spec = [("cycles", 12), ("time us", 10), ("util %", 8), ("energy uJ", 11), ("power mW", 10)]
    spec += [(extra[1], 11)] if extra else []
    cells = []
    for r in records:
        row = [
            f"{int(r['cycles']):,}",
            f"{r['time_s'] * 1e6:.2f}",
            f"{r['utilization'] * 100:.1f}",
            f"{r['energy_pj'] * 1e-6:.3f}",
            f"{r['power_w'] * 1e3:.1f}",
        ]
        if extra:  # a layer without the column's number (a GPU's image-first-layer kernel): -
            v = r.get(extra[0])
            ok = isinstance(v, int | float) and math.isfinite(v)
            row.append(f"{v * extra[2]:.2f}" if ok else "-")
        cells.append(row)
    widths = [
        max([least, len(h) + 1, *(len(row[i]) + 1 for row in cells)])
        for i, (h, least) in enumerate(spec)
    ]  # a header as wide as its column ("vs tensor_core x") keeps a space before it
    head = f"{'layer':<{width}}" + "".join(
        f"{h:>{w}}" for (h, _), w in zip(spec, widths, strict=True)
    )
    lines = [head, "-" * len(head)]
    for name, row in zip(names, cells, strict=True):
        pad = " " * (width - _display_width(name))
        lines.append(name + pad + "".join(f"{c:>{w}}" for c, w in zip(row, widths, strict=True)))
    s = result.summary()
    lines.append("-" * len(head))
    lines.append(
        f"total {s['total_cycles']:,} cycles, {s['total_time_s'] * 1e6:.2f} us, "
        f"{s['total_energy_pj'] * 1e-6:.3f} uJ, {s['average_power_w'] * 1e3:.1f} mW"
    )
    in_layers = sum(int(r["cycles"]) for r in records)
    exposed = s["total_cycles"] - in_layers if records else 0
    if exposed > 0:
        lines.append(f"      = {in_layers:,} in layers + {exposed:,} of DRAM transfers not hidden")
    area = (
        f"area {s['total_area_mm2']:.2f} mm^2" if s["total_area_mm2"] > 0 else ("area not modelled")
    )
    from archsim.report.formatting import fmt_throughput

    lines.append(f"      {fmt_throughput(s, lambda v: f'{v:.1f}')}, {area}")
    return "\n".join(lines)


def _write_outputs(
    result: RunResult,
    out_dir: Path,
    scalesim: bool = False,
    trace: tuple | None = None,
    report: bool = True,
) -> None:
    """Write results.csv, results.json, report.html (and SCALE-Sim's reports) all or nothing."""
    from archsim.output import RESULT_FILES, write_outputs_atomically

    def write(tmp: Path) -> list[str]:
        # written here, not by to_csv / to_json: a full disk is then an OSError that names
        # --out, not the API's error naming this temporary folder
        for name, text in (("results.csv", result.csv_text()), ("results.json", result.to_json())):
            (tmp / name).write_text(text, encoding="utf-8", newline="\n")
        names = ["results.csv", "results.json"]
        if report:
            from archsim.report.html import write_run_report  # SVG written directly

            write_run_report(result, tmp / "report.html")
            names.append("report.html")
        if scalesim:
            from archsim.config.scalesim import write_scalesim_reports

            names += write_scalesim_reports(result, tmp)
        if trace is not None:  # (hardware, workload[, offsets]): the systolic SRAM traces
            from archsim.accelerators.systolic_trace import write_layer_traces

            names += write_layer_traces(trace[0], trace[1], tmp, *trace[2:])  # (offsets)
        return names

    write_outputs_atomically(out_dir, write, stale=RESULT_FILES)


def cmd_run(args: argparse.Namespace) -> int:
    """Run the ``run`` subcommand; returns the exit code."""
    from archsim.config.io import apply_set, load_hardware
    from archsim.output import check_out_dir
    from archsim.progress import layer_progress, progress_bar, progress_enabled
    from archsim.simulate import simulate
    from archsim.workload.matvec import LayerDataError

    # not a sweep's folder (its page would be replaced); another result folder is replaced
    out_dir = check_out_dir(args.out, results=True, probe=True)
    if args.batch is not None and args.batch < 1:  # before an ONNX model is imported at it
        problem = f"must be >= 1 (got {args.batch}); allowed: an integer >= 1"
        raise ConfigError("--batch", "", problem)
    import_warnings: tuple[str, ...] = ()  # an ONNX model's, shown with the run's
    baseline = load_hardware(args.baseline) if args.baseline else None
    if args.from_scalesim:
        given = [name for name in (args.hw, args.workload) if name is not None]
        if given:
            raise ArchsimError(
                f"run {' '.join(given)}: --from-scalesim reads the hardware and workload from "
                "its CFG and TOPOLOGY; allowed: either --from-scalesim or HW [WORKLOAD]"
            )
        from archsim.config.scalesim import load_scalesim, scalesim_offsets, scalesim_unmodelled

        hw, wl = load_scalesim(*args.from_scalesim)
        offsets = scalesim_offsets(args.from_scalesim[0])  # the traces' address offsets
        for line in [] if args.quiet else scalesim_unmodelled(args.from_scalesim[0]):
            print(f"archsim: warning: {line}", file=sys.stderr)
    else:
        hw = load_hardware(DEFAULT_HW if args.hw is None else args.hw)
        compile_helper.start(hw.accelerator)  # type: ignore[attr-defined]  # cold cache only
        # a baseline's simulator may read an ONNX model's tensors too
        accelerators = {getattr(h, "accelerator", None) for h in (hw, baseline)}
        wl, import_warnings = _load_run_workload(
            DEFAULT_WORKLOAD if args.workload is None else args.workload, args.batch,
            accelerators,
        )  # fmt: skip
    if args.overrides:
        hw = apply_set(hw, args.overrides)
    if args.batch is not None and not _is_onnx(args.workload):  # ONNX: imported at it
        wl = wl.with_batch(args.batch)
        if all(lay.kind == "gemm" for lay in wl.layers):  # nothing follows it: say so
            note = f"--batch {args.batch}: gemm layers keep their own shapes (m, n, k, batch)"
            import_warnings = (*import_warnings, note + "; the workload ran as written")
    if not 0 <= args.seed <= INT64_MAX:  # results.json holds it as a 64-bit integer
        raise ConfigError(
            "--seed", "", f"must be from 0 to 2**63-1 (got {shown_name(repr(args.seed))})"
        )
    if args.trace and hw.accelerator != "systolic":  # type: ignore[attr-defined]
        raise ConfigError(
            "--trace", "", "SRAM traces exist for systolic arrays only; allowed: systolic hardware"
        )
    if args.trace:  # before minutes of simulating, not after
        from archsim.accelerators.systolic_trace import check_trace_size

        check_trace_size(hw, wl)  # type: ignore[arg-type]
    try:
        steps = len(wl.layers) * (2 if baseline else 1)
        announce_compile(hw.accelerator, quiet=not progress_enabled(args.quiet))
        with progress_bar(steps, "simulating", progress_enabled(args.quiet)) as advance:
            result = simulate(
                hw, wl, seed=args.seed, baseline=baseline, progress=layer_progress(advance)
            )
    except LayerDataError as exc:
        if exc.field == "batch" and args.batch is not None:  # the option, not the file
            raise ConfigError(
                "--batch",
                "",
                f"{args.batch}: fc and lstm layers run one input vector at a time "
                f"on {hw.accelerator}; allowed: --batch 1, or a tensor_core GPU or systolic array",  # type: ignore[attr-defined]
            ) from None
        index = next((i for i, lay in enumerate(wl.layers) if lay.name == exc.layer), None)
        field = f"layers.{index}.{exc.field}" if index is not None else exc.field
        raise WorkloadError(f"{wl.origin}: {field}: {exc.problem}") from None
    if import_warnings:  # into results.json and the page as well as the console
        result = dataclasses.replace(result, warnings=(*import_warnings, *result.warnings))
    trace = ((hw, wl, offsets) if args.from_scalesim else (hw, wl)) if args.trace else None
    _write_outputs(
        result,
        out_dir,
        scalesim=bool(args.from_scalesim),
        trace=trace,
        report=not args.no_report,
    )
    if not args.quiet:
        from archsim.provenance import archsim_version

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
        report = "" if args.no_report else ", report.html"
        print(f"wrote {Path(args.out) / 'results.csv'}, results.json{report}")
    return 0


def _is_onnx(name: str | None) -> bool:
    return name is not None and str(name).lower().endswith(".onnx")


def _load_run_workload(name: str, batch: int | None, accelerators: set):  # noqa: ANN202
    """(workload, warnings): a workload preset or YAML, or an ONNX model imported on the fly
    (at ``batch``: its measured activations must have the batch the layers run; its real
    tensors written only when one of ``accelerators`` (the run's, a baseline's) reads them)
    with the import's warnings."""
    if _is_onnx(name):
        from archsim.simulate import READS_DATA

        tensors = bool(accelerators & READS_DATA)
        return cli_onnx.load_onnx_workload(name, batch, tensors=tensors)
    from archsim.config.io import load_workload

    return load_workload(name), ()
