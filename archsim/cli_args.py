"""Argument types of the command line: numbers written in ASCII digits only.

Python's ``int`` and ``float`` also read other scripts' digits (``int("٨") == 8``), while
``--set`` values, YAML files and the size strings of ``archsim collective`` do not; these
types make every option read numbers one way.
"""

from __future__ import annotations

__all__ = ["integer", "number"]


def integer(text: str) -> int:
    """An option's integer, ASCII digits only (argparse says 'invalid integer value')."""
    if not text.isascii():
        raise ValueError(text)
    return int(text)


def number(text: str) -> float:
    """An option's real number, ASCII only (argparse says 'invalid number value')."""
    if not text.isascii():
        raise ValueError(text)
    return float(text)
