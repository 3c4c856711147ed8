"""Command line: ``archsim run | sweep | validate | list | schema | report``.

User mistakes print one line ``archsim: error: <file>: <field>: <problem>`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from archsim import cli_calibrate, cli_compress, cli_onnx, cli_probe
from archsim.cli_args import integer
from archsim.cli_doctor import add_doctor_parser, cmd_doctor
from archsim.cli_run import DEFAULT_HW, DEFAULT_WORKLOAD, cmd_run, format_layer_table
from archsim.cli_sweep import add_sweep_parser, cmd_sweep
from archsim.cli_system import add_parsers as add_system_parsers
from archsim.cli_system import cmd_collective, cmd_train
from archsim.errors import ArchsimError, one_line, os_reason, shown_name

# Only what argparse needs is imported above: `archsim --help` and a usage error load no
# pydantic config model, NumPy or numba (0.6-0.8 s); each command imports its own modules.

__all__ = ["main", "entry_point", "build_parser", "format_layer_table"]


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line, like every other archsim error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"archsim: error: {message} (see `{self.prog} --help`)\n")


class _Version(argparse.Action):
    """``--version`` as argparse's own action prints it, with the installed version looked up
    only when asked (``importlib.metadata`` is a tenth of ``archsim --help``)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="show program's version number and exit",
        )

    def __call__(self, parser, namespace, values, option_string=None) -> NoReturn:  # noqa: ANN001
        from archsim.provenance import archsim_version

        formatter = parser._get_formatter()
        formatter.add_text(f"archsim {archsim_version()}")
        parser._print_message(formatter.format_help(), sys.stdout)
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every subcommand."""
    p = _Parser(
        prog="archsim",
        description="Cycle-level simulator of deep-learning accelerators with energy and area: "
        "EIE (sparse fc/LSTM), SCNN and its dense baseline DCNN (sparse/dense conv), systolic "
        "arrays (TPU-like, SCALE-Sim compatible) and NVIDIA Tensor Core GPUs (V100, A100, "
        "H100). Start with `archsim run` (EIE on the nine EIE benchmark layers), then "
        "`archsim list` for every hardware and workload preset.",
    )
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="simulate a workload on a hardware config; writes results.csv/json and report.html",
        description="Simulate WORKLOAD on HW (preset names or YAML paths). With no arguments: "
        f"{DEFAULT_HW} on {DEFAULT_WORKLOAD}.",
    )
    run.add_argument("hw", nargs="?", help=f"hardware (default {DEFAULT_HW})")
    run.add_argument("workload", nargs="?", help=f"workload (default {DEFAULT_WORKLOAD})")
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
    run.add_argument(
        "--seed", type=integer, default=0, help="seed of synthetic tensors (default 0)"
    )
    run.add_argument(
        "--no-report",
        action="store_true",
        help="skip report.html (`archsim report DIR` builds it later from results.json)",
    )
    run.add_argument(
        "--batch", type=integer, help="run every conv/fc/lstm layer at this batch size"
    )
    run.add_argument(
        "--from-scalesim",
        nargs=2,
        metavar=("CFG", "TOPOLOGY"),
        help="take HW and WORKLOAD from a SCALE-Sim .cfg and topology CSV (systolic array); "
        "also writes DIR/COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and DETAILED_ACCESS_REPORT.csv "
        "in SCALE-Sim's format",
    )
    run.add_argument(
        "--trace",
        action="store_true",
        help="systolic arrays: also write each layer's SRAM demand trace (SCALE-Sim's cycle, "
        "IFMAP, FILTER, OFMAP address columns) to DIR/SRAM_TRACE_layer<i>.csv.gz",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    add_sweep_parser(sub)
    lst = sub.add_parser("list", help="list the hardware, workload and sweep presets")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    sch = sub.add_parser(
        "schema",
        help="print the JSON Schema of hardware, workload or sweep files, or of result columns",
    )
    sch.add_argument("kind", choices=["hardware", "workload", "sweep", "results"])
    rep = sub.add_parser(
        "report",
        help="rebuild DIR/report.html from DIR/results.json (run, collective, train) or "
        "results.parquet (sweep)",
    )
    rep.add_argument(
        "dir", help="a folder written by `archsim run`, `sweep`, `collective` or `train`"
    )
    from archsim.validation.command import add_parser as add_validate_parser

    add_validate_parser(sub)
    add_system_parsers(sub)
    add_doctor_parser(sub)
    cli_onnx.add_parser(sub)
    cli_compress.add_parser(sub)
    cli_probe.add_parser(sub)
    cli_calibrate.add_parser(sub)
    return p


def _preset_summary(kind: str) -> list[dict[str, str]]:
    from archsim.config.io import list_presets, preset_dirs, read_yaml

    out = []
    for name in list_presets(kind):
        path = next(d / f"{name}.yaml" for d in preset_dirs(kind) if (d / f"{name}.yaml").is_file())
        data = read_yaml(path)
        desc = " ".join(str(data.get("description", data.get("source", ""))).split())
        out.append({"name": name, "description": desc})
    return out


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` columns, broken between words only (never inside one)."""
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def _cmd_list(args: argparse.Namespace) -> int:
    presets = {k: _preset_summary(k) for k in ("hardware", "workload", "sweep")}
    if args.json:
        print(json.dumps(presets, indent=1))
        return 0
    width = max(len(i["name"]) for items in presets.values() for i in items) + 2
    text_width = max(40, shutil.get_terminal_size((100, 24)).columns - width - 3)
    for kind, items in presets.items():
        print(f"{kind} presets:")
        for item in items:
            wrapped = _wrap(item["description"], text_width)
            print(f"  {item['name']:<{width}} {wrapped[0]}")
            for more in wrapped[1:]:  # whole words on continuation lines, same column
                print(f"  {'':<{width}} {more}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from archsim.config.io import json_schema

    print(json.dumps(json_schema(args.kind), indent=1))
    return 0


#: top-level keys of the results.json that `archsim collective` and `archsim train` write
_SYSTEM_KEYS = ("system", "op", "rows", "steps", "timeline")


def _cmd_report(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    allowed = "allowed: a folder written by `archsim run`, `sweep`, `collective` or `train`"
    if not folder.is_dir():
        what = "a file, not a folder" if folder.exists() else "folder not found"
        raise ArchsimError(f"{folder}: {what}; {allowed} (the folder that holds results.json)")
    results = folder / "results.json"
    sweep_only = not results.exists() and (folder / "results.parquet").exists()
    if sweep_only and not (folder / "sweep.json").exists():  # not "results.json: no such file"
        raise ArchsimError(
            f"{folder / 'sweep.json'}: missing, and the sweep's report needs its record of "
            f"the spec; allowed: a whole `archsim sweep` folder (running the sweep again "
            f"into {folder} resumes it and rewrites sweep.json)"
        )
    if not results.exists() and not (folder / "sweep.json").exists():
        raise ArchsimError(
            f"{results}: cannot read results: no such file; allowed: a folder written by "
            "`archsim run`, `collective` or "
            "`train` (results.json), or by `archsim sweep` (results.parquet and sweep.json)"
        )
    try:
        if not results.exists() and (folder / "sweep.json").exists():
            from archsim.cli_sweep import rebuild_sweep_report

            path = rebuild_sweep_report(folder)
        else:
            from archsim.results import RunResult, read_results_json

            data = read_results_json(results)  # read and parsed once, whichever command wrote it
            if "format_version" not in data and any(k in data for k in _SYSTEM_KEYS):
                from archsim.cli_system import rebuild_system_report

                path = rebuild_system_report(folder, data)
            else:
                from archsim.report.html import write_run_report

                path = write_run_report(RunResult.from_data(data, str(results)), folder)
    except OSError as exc:
        raise ArchsimError(f"{folder / 'report.html'}: cannot write: {os_reason(exc)}") from None
    print(f"wrote {path}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from archsim.validation.command import run_command

    return run_command(args)


_COMMANDS = {
    "run": cmd_run,
    "sweep": cmd_sweep,
    "list": _cmd_list,
    "schema": _cmd_schema,
    "report": _cmd_report,
    "validate": _cmd_validate,
    "collective": cmd_collective,
    "train": cmd_train,
    "doctor": cmd_doctor,
    "import": cli_onnx.cmd,
    "compress": cli_compress.cmd,
    "probe": cli_probe.cmd,
    "calibrate": cli_calibrate.cmd,
}


#: options that name a file, folder or preset: an empty or blank value is a mistake (an empty
#: ``-o`` would write into the current folder, an empty ``--baseline`` meant no baseline)
_NAMED_OPTIONS = ("out", "markdown", "html", "baseline", "dask", "hardware", "system")


#: commands whose -o is a file, and what it takes
_FILE_OUT = {
    "compress": "a .onnx file path",
    "import": "a .yaml file path",
    "calibrate": "a .yaml file path",
}


def _no_empty_names(args: argparse.Namespace) -> None:
    for name in _NAMED_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():
            if name == "out" and args.command in _FILE_OUT:  # -o names a file there
                raise ArchsimError(f"--out: empty file name; allowed: {_FILE_OUT[args.command]}")
            if name == "out":  # as ``output.check_out_dir`` says it
                raise ArchsimError("--out: empty folder name; allowed: a folder path, e.g. out")
            allowed = "a file path" if name in ("markdown", "html") else "a preset name or path"
            if name == "dask":
                allowed = "local or a scheduler address"
            raise ArchsimError(f"--{name}: empty name; allowed: {allowed}")


def main(
    argv: Sequence[str] | None = None, *, interrupted: Callable[[], bool] | None = None
) -> int:
    """Entry point of the ``archsim`` console script; returns the exit code. ``interrupted``:
    whether a Ctrl-C has come (the console script's SIGINT handler says so), so that an error
    a library raises while it carries the interrupt (pydantic's SchemaError when a schema build
    is cut short, numba's SystemError in its cache loader, the RuntimeError a class statement
    raises when an interrupt lands in a descriptor's ``__set_name__``) ends as the interrupt
    did, from the parser's construction on."""
    try:
        return _run(argv, interrupted)
    except KeyboardInterrupt:
        print("archsim: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a Ctrl-C / SIGTERM inside a library's C code, wrapped by it
        if not (_interrupted(exc) or (interrupted is not None and interrupted())):
            raise
        print("archsim: interrupted", file=sys.stderr)
        return 130


def _run(argv: Sequence[str] | None, interrupted: Callable[[], bool] | None) -> int:
    """Parse ``argv`` and run the command; user mistakes become one line and exit 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    # for a command's own checks: a Ctrl-C whose KeyboardInterrupt a library swallowed
    args.interrupted = interrupted if interrupted is not None else _never
    try:
        _no_empty_names(args)
        return _COMMANDS[args.command](args)
    except ArchsimError as exc:
        message = one_line(exc)  # always one line
        print(f"archsim: error: {message}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # past the checks' estimates, or a busy machine
        what = one_line(exc, 160)  # NumPy's names the size: an estimate's bug shows in it
        print(
            f"archsim: error: {args.command}: out of memory{f' ({what})' if what else ''}; "
            "allowed: a smaller workload or hardware, or a machine with more free memory "
            "(ARCHSIM_MAX_MEMORY_BYTES sets what the checks before a run allow)",
            file=sys.stderr,
        )
        return 2
    except OverflowError as exc:  # a field's value past the model's arithmetic, unchecked
        print(
            f"archsim: error: {args.command}: a number overflowed ({one_line(exc, 160)}); "
            "allowed: hardware and workload values of realistic magnitude",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError:  # `archsim run | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except RuntimeError as exc:  # pathlib's resolve() on Python < 3.13
        if not str(exc).startswith("Symlink loop"):
            raise
        print(f"archsim: error: {exc}; allowed: a path without a symlink loop", file=sys.stderr)
        return 2
    except OSError as exc:  # a path the system refuses: too long, read-only, no permission
        if exc.filename is None:
            raise
        where, why = shown_name(str(exc.filename)), exc.strerror or exc
        print(
            f"archsim: error: {where}: {why}; allowed: a path this user can create, write and read",
            file=sys.stderr,
        )
        return 2


def _never() -> bool:
    return False


def _interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among ``exc``'s causes: an interrupt raised while C code
    (numba unpickling its cached functions) runs a Python callback reaches us wrapped in a
    SystemError, with the interrupt as its cause."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _redeliver_interrupts(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """``sys.unraisablehook`` that hands a KeyboardInterrupt back to the main thread.

    A signal handler runs between any two bytecodes, also inside a weakref callback or a
    ``__del__`` (importlib's module-lock callbacks run during every import), where Python
    drops what it raises ("Exception ignored in ..."): a Ctrl-C then did nothing and the
    command ran on (an interrupted ``archsim sweep`` finished all its points, 1 start in
    ~60). Such an interrupt is delivered again from another thread (``_thread.interrupt_main``
    there: the SIGINT handler runs once more at the main thread's next check, after the
    callback; called from the main thread itself it would run inside this hook, where it is
    dropped too); any other exception goes to ``hook``."""
    import _thread
    import time

    def later() -> None:
        time.sleep(0.001)  # the main thread leaves the callback meanwhile
        _thread.interrupt_main()

    def unraisable(info: Any) -> None:
        if isinstance(info.exc_value, KeyboardInterrupt):
            _thread.start_new_thread(later, ())  # threading's start() would wait, here
            return
        hook(info)

    return unraisable


def entry_point() -> int:
    """The ``archsim`` console script and ``python -m archsim``: :func:`main`, then freeze the
    garbage collector's view of the heap before the interpreter shuts down.

    A run leaves hundreds of thousands of objects (numba's type registries, pydantic's
    validators) that the collector would traverse once more while the interpreter finalizes:
    0.3-0.4 s of every process, a third of a warm SCALE-Sim case. ``gc.freeze()`` moves them
    to the permanent generation; atexit handlers, ``weakref.finalize`` callbacks and the
    modules' teardown still run. Only the CLI does this: a program or test calling
    :func:`main` keeps its collector as it was. SIGTERM (``kill``, a batch system's time
    limit) stops the command as Ctrl-C does, so that it leaves no half-written output; both
    handlers note that they ran, so that :func:`main` reports an error a library raised
    while it carried the interrupt as the interrupt (exit 130)."""
    import gc
    import signal

    from archsim.interrupts import forget_caught_interrupt

    seen: list[int] = []

    def terminate(signum: int, _frame: object) -> None:
        seen.append(signum)  # SIGTERM as Ctrl-C: every half-written output is removed on the way
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)  # Python's own handler, remembering that it ran
    sys.unraisablehook = _redeliver_interrupts(sys.unraisablehook)
    rc = main(interrupted=lambda: bool(seen))
    forget_caught_interrupt()  # else ``python -m archsim`` may end by SIGINT after a Ctrl-C
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()
    return rc


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry_point())
