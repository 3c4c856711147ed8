"""``python -m archsim``."""

import sys

from archsim.interrupts import forget_caught_interrupt

try:
    from archsim.cli import entry_point
except KeyboardInterrupt:  # a Ctrl-C before the command's own handlers are in place
    sys.stderr.write("archsim: interrupted\n")
    forget_caught_interrupt()
    sys.exit(130)

sys.exit(entry_point())
