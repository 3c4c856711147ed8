"""``python -m archsim``."""

import sys

from archsim.console import main

sys.exit(main())
