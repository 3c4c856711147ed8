"""``archsim validate``: the paper-reproduction table, optionally written as Markdown and HTML.

Exit code 0 when no claim fails, 1 when any does (2 stays for user errors).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from archsim.cli_args import integer
from archsim.errors import ArchsimError, os_reason, shown_name
from archsim.validation.names import EIE_DATA_RELATIVE, MODELS

__all__ = ["add_parser", "run_command"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``validate`` on the CLI's subparsers."""
    p = sub.add_parser(
        "validate",
        help="reproduce the papers' numbers: paper / archsim / error / tolerance / PASS|FAIL",
        description="Run the paper-reproduction suite and print, per claim, the paper's value, "
        "archsim's value, the error and the tolerance. Exit code 1 if any claim fails.",
    )
    p.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help=f"which claims: {', '.join(MODELS)} or all (default all)",
    )
    p.add_argument(
        "--eie-data",
        metavar="DIR",
        help="folder of the real AlexNet FC8 layer in EIE's format (default: "
        f"../{EIE_DATA_RELATIVE} beside the current directory or the checkout)",
    )
    p.add_argument("-o", "--markdown", metavar="FILE.md", help="also write a Markdown report")
    p.add_argument("--html", metavar="FILE.html", help="also write a self-contained HTML report")
    p.add_argument("--seed", type=integer, default=0, help="seed of synthetic tensors (default 0)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every claim's reason")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    from archsim.validation.measured_command import add_arguments

    add_arguments(p)
    return p


def _echo(text: str, err: bool = False) -> None:
    """The command's terminal output (this module is CLI code, like cli.py)."""
    print(text, file=sys.stderr if err else sys.stdout, flush=True)  # noqa: T201


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=79, subsequent_indent="    ")


def _eie_data(arg: str | None) -> Path | None:
    if arg is None:
        from archsim.validation.runs import default_eie_data

        return default_eie_data()
    path = Path(arg)
    if not path.is_dir():
        raise ArchsimError(
            f"--eie-data: {arg}: not a folder; allowed: the eie_alexnet_fc8 folder (act.dat, "
            "arithm.dat, ptr/, spm/)"
        )
    return path


def run_command(args: argparse.Namespace) -> int:
    """Implementation of ``archsim validate``; returns the exit code."""
    from archsim.validation.report import format_table, write_html, write_markdown
    from archsim.validation.runner import summary_counts, validate

    if not 0 <= args.seed < 2**63:  # as `archsim run` (results hold it as a 64-bit integer)
        raise ArchsimError(
            f"--seed: must be from 0 to 2**63-1 (got {shown_name(repr(args.seed))}); allowed: "
            "a seed in that range"
        )
    if args.measured is not None:
        from archsim.validation.measured_command import run_measured

        return run_measured(args)
    from archsim.validation.measured_command import check_unused

    check_unused(args)
    from archsim.output import check_out_file

    for option, flag in ((args.markdown, "-o"), (args.html, "--html")):
        if option:  # refused before the claims run (minutes), not after
            check_out_file(option, flag)
    if args.markdown and args.html and _same_file(args.markdown, args.html):
        raise ArchsimError(f"--html: {args.html} is also -o (the page would replace the "
                           "Markdown table); allowed: two different files")  # fmt: skip
    eie_data = _eie_data(args.eie_data)
    models = list(dict.fromkeys(args.models)) or ["all"]
    unknown = [m for m in models if m not in (*MODELS, "all")]
    if unknown:
        raise ArchsimError(
            f"validate: unknown model {unknown[0]!r}; allowed: {', '.join(MODELS)}, all"
        )

    def progress(message: str) -> None:
        if not args.quiet:
            _echo(f"  ... {message}", err=True)

    if eie_data is None and {"eie", "all"} & set(models):
        _echo(
            f"note: real Alex-8 data not found (../{EIE_DATA_RELATIVE}); its claims are "
            "SKIPPED. Use --eie-data DIR.",
            err=True,
        )
    frame = validate(models, seed=args.seed, eie_data=eie_data, progress=progress)
    if eie_data is not None:  # the reports name the folder the claims read, and its contents
        from archsim.provenance import tree_digest

        frame.attrs["eie_data"] = {"path": str(Path(eie_data).resolve()),
                                   "sha256": tree_digest([Path(eie_data).resolve()])}  # fmt: skip
    _echo(format_table(frame))
    notes = frame if args.verbose else frame[frame["status"] == "FAIL"]
    for _, row in notes.iterrows():
        _echo(_wrap(f"{row['status']} {row['model']} / {row['claim']}: {row['reason']}"))
    skipped = frame[frame["status"] == "SKIPPED"]
    for why, block in skipped.groupby("unavailable", sort=False):
        _echo(_wrap(f"SKIPPED {len(block)} claim(s) ({', '.join(block['claim'])}): {why}"))
    command = _command(models, args)
    for option, writer in ((args.markdown, write_markdown), (args.html, write_html)):
        if option:
            try:
                path = writer(frame, Path(option), seed=args.seed, command=command)
            except OSError as exc:
                raise ArchsimError(f"{option}: cannot write: {os_reason(exc)}") from None
            _echo(f"wrote {path}")
    return 1 if summary_counts(frame)["FAIL"] else 0


def _command(models: list[str], args: argparse.Namespace) -> str:
    """The ``archsim validate`` command that writes these reports again, as it was given."""
    import shlex

    parts = ["archsim", "validate", *models]
    if args.eie_data:
        parts += ["--eie-data", args.eie_data]
    if args.seed:
        parts += ["--seed", str(args.seed)]
    if args.markdown:
        parts += ["-o", args.markdown]
    if args.html:
        parts += ["--html", args.html]
    return shlex.join(parts)


def _same_file(a: str, b: str) -> bool:
    """Whether the paths ``a`` and ``b`` name one file (as written, or the same existing file)."""
    pa, pb = Path(a).expanduser().absolute(), Path(b).expanduser().absolute()
    if pa.exists() and pb.exists():
        return pa.samefile(pb)
    return os.path.normpath(pa) == os.path.normpath(pb)
