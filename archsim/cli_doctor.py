"""``archsim doctor``: versions, the numba cache directory, and which kernels are compiled.

Also ``announce_compile``, the one line ``archsim run`` prints before numba compiles a model's
kernels for the first time (it takes seconds once; later runs load them from the cache).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["add_doctor_parser", "announce_compile", "cmd_doctor", "doctor_report"]


def _writable(path: Path) -> bool:
    """Whether numba can make its cache at ``path``: the nearest existing folder on the way
    takes a new folder (a regular file there, or /proc, does not; os.access says yes to
    both as root)."""
    probe = next((p for p in (path, *path.parents) if p.exists()), None)
    if probe is None or not probe.is_dir():
        return False
    try:
        made = tempfile.mkdtemp(dir=probe, prefix=".archsim-doctor-")
    except OSError:
        return False
    os.rmdir(made)
    return True


def add_doctor_parser(sub: Any) -> None:
    """Register ``doctor`` on the CLI's subparsers."""
    p = sub.add_parser(
        "doctor",
        help="show versions, where compiled kernels are cached and whether they are warm",
        description="Print archsim's and its main dependencies' versions, the numba cache "
        "directory (set NUMBA_CACHE_DIR to move it) and, per accelerator, how many of its "
        "kernels are already compiled there.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def doctor_report() -> dict[str, Any]:
    """Versions, cache directory and per-accelerator kernel warmth (compiles nothing)."""
    from importlib.metadata import PackageNotFoundError, version

    from archsim.numba_cache import ENV_VAR, KERNEL_MODULES, USER_SET, cache_dir, kernel_status

    versions: dict[str, str] = {"python": platform.python_version()}
    for dist in ("archsim", "numba", "numpy", "pandas", "pydantic", "simpy"):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = "not installed"
    path = cache_dir()
    kernels = {acc: kernel_status(acc) for acc in KERNEL_MODULES}
    return {
        "versions": versions,
        "numba_cache_dir": str(path),
        "numba_cache_from": f"${ENV_VAR}" if USER_SET else "user cache directory",
        "numba_cache_writable": _writable(path),
        "kernels": {
            acc: {
                "compiled": sum(s.values()),
                "total": len(s),
                "cold": sorted(k for k in s if not s[k]),
            }
            for acc, s in kernels.items()
        },
    }


def cmd_doctor(args: argparse.Namespace) -> int:
    """Run the ``doctor`` subcommand; returns the exit code."""
    report = doctor_report()
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print("  ".join(f"{k} {v}" for k, v in report["versions"].items()))
    where = "writable" if report["numba_cache_writable"] else "NOT writable"
    print(f"numba cache: {report['numba_cache_dir']} ({report['numba_cache_from']}, {where})")
    for acc, k in report["kernels"].items():
        if k["compiled"] == k["total"]:
            state = "warm"
        elif k["compiled"]:  # e.g. SCNN: phase loops of shapes or paths no run has taken yet
            state = "the others compile when a run first needs them"
        else:
            state = "cold: first run compiles them"
        print(f"  {acc:<12} {k['compiled']}/{k['total']} kernels compiled ({state})")
    return 0


def announce_compile(accelerator: str, quiet: bool) -> None:
    """Print one line to stderr before ``accelerator``'s first run in this cache, when none of
    its kernels is compiled yet (the CLI passes ``quiet`` unless stderr is a terminal, so error
    output stays one line). Kernels only sweeps use may stay cold after a run."""
    if quiet:
        return
    from archsim.numba_cache import KERNEL_MODULES, cache_dir, kernel_status

    status = kernel_status(accelerator) if accelerator in KERNEL_MODULES else {}
    if status and not any(status.values()):
        print(
            f"archsim: compiling the {accelerator} kernels (first run only, a few seconds; "
            f"cached in {cache_dir()}) ...",
            file=sys.stderr,
            flush=True,
        )
