"""``python -m archsim``."""

import sys

try:
    from archsim.cli import entry_point
except KeyboardInterrupt:  # a Ctrl-C before the command's own handlers are in place
    sys.stderr.write("archsim: interrupted\n")
    eval("0")  # noqa: S307 - clears CPython's unhandled-interrupt mark (cli.entry_point)
    sys.exit(130)

sys.exit(entry_point())
