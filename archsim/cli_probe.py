"""``archsim probe gpu -o DIR [--quick]``: measure this machine's GPU into a measurement folder.

Needs the ``[probe]`` extra (PyTorch with CUDA, nvidia-ml-py) and an NVIDIA GPU; without them
it prints one line saying what is missing and exits with 2. The folder is written only when
every measurement is done (temporary folder beside DIR, then renamed): an interrupted probe
leaves nothing behind.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "cmd"]


def add_parser(sub: Any) -> None:
    """Register ``probe`` on the CLI's subparsers."""
    p = sub.add_parser(
        "probe",
        help="time GEMMs, convs, memory, launch floors and energy on this GPU (needs the "
        "[probe] extra); writes a measurement folder for `validate --measured` and `calibrate`",
        description="Measure this machine's NVIDIA GPU the way ../shared/data/h100 was made "
        "(CUDA graphs of back-to-back calls, NVML clock/power/energy) and write the same CSV/JSON "
        'files. Needs PyTorch with CUDA and nvidia-ml-py: pip install "archsim[probe]".',
    )
    p.add_argument("target", choices=["gpu"], help="what to probe (gpu)")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="new (or empty) folder")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a few shapes per kind and one, shorter energy reading",
    )
    p.add_argument(
        "--backend",
        choices=["torch", "fake"],
        default="torch",
        help="torch (default): the real GPU; fake: a deterministic stand-in, for testing",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")


def _check_writable(out: Path) -> None:
    """Refuse ``out`` when its nearest existing folder cannot take a new folder (tried with a
    temporary one, removed at once: nothing is left)."""
    from archsim.measure.folder import MeasurementError
    from archsim.output import write_error

    base = out.absolute().parent
    while not base.exists():
        base = base.parent
    exc = write_error(base)
    if exc is not None:
        raise MeasurementError(out, "", f"cannot create it in {base}: {exc.strerror}; allowed: "
                               "a folder this user can create")  # fmt: skip


def cmd(args: argparse.Namespace) -> int:
    """Implementation of ``archsim probe gpu``."""
    from archsim.measure.folder import MeasurementError, write_folder
    from archsim.measure.loader import load_backend
    from archsim.measure.plan import FULL, QUICK
    from archsim.measure.probe import run_probe

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MeasurementError(out, "", "exists and is not an empty folder; allowed: a new or "
                               "empty folder")  # fmt: skip
    _check_writable(out)  # before minutes of measuring, not after
    backend = load_backend(args.backend)

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"  ... {message}", file=sys.stderr, flush=True)

    try:
        tables, doc = run_probe(backend, QUICK if args.quick else FULL, progress)
    except KeyboardInterrupt:  # exit 130 as every command's Ctrl-C, saying what was kept
        print(f"archsim: probe gpu: nothing written to {out}", file=sys.stderr)
        raise
    path = write_folder(out, tables, doc)
    if not args.quiet:
        rows = sum(len(t) for t in tables.values())
        print(f"wrote {path}: {rows} timed kernels in {len(tables)} files, {doc['device']['name']}")
    return 0
