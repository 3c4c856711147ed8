"""The ``archsim`` console script and ``python -m archsim``: the CLI, imported with a Ctrl-C
answered as the CLI answers one."""

from __future__ import annotations

import sys

from archsim.interrupts import forget_caught_interrupt

__all__ = ["main"]


def main() -> int:
    """Import the CLI and run it (:func:`archsim.cli.entry_point`); returns the exit code.

    The CLI's own handlers are in place only once its modules have loaded (about 40 ms):
    a Ctrl-C before that ends the process as a later one does, with one line and exit 130,
    not Python's traceback of the interrupted import."""
    try:
        from archsim.cli import entry_point
    except KeyboardInterrupt:
        sys.stderr.write("archsim: interrupted\n")
        forget_caught_interrupt()
        return 130
    return entry_point()
