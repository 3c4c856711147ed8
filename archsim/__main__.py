"""``python -m archsim``."""

import sys

from archsim.cli import entry_point

sys.exit(entry_point())
