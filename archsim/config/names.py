"""Names that tables, reports and one-line messages show: one line of printable text."""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field

__all__ = [
    "LINE_BREAKING_CATEGORIES",
    "MAX_NAME_CHARS",
    "Name",
    "control_character",
    "fit_name",
    "line_break_problem",
]

#: Unicode categories a name may not hold: control characters, line and paragraph separators
#: (they break a line of a table, a CSV row or a one-line error)
LINE_BREAKING_CATEGORIES = ("Cc", "Zl", "Zp")

#: longest name of a sweep, workload, hardware or system, in characters: it heads every
#: report and sits in every row of results.csv
MAX_NAME_CHARS = 200

#: control characters an error names in words (others: by code point)
_CONTROL_NAMES = {"\n": "newline", "\r": "carriage return", "\t": "tab"}


def control_character(text: str) -> str | None:
    """The first character of ``text`` that breaks a line or a terminal table (a control
    character, a line or paragraph separator), named; None when there is none."""
    for ch in text:
        if unicodedata.category(ch) in LINE_BREAKING_CATEGORIES:
            return _CONTROL_NAMES.get(ch, f"U+{ord(ch):04X}")
    return None


def fit_name(text: str) -> str:
    """A name archsim derives (``eie (pe_array.num_pes=128, ...)``), cut to
    ``MAX_NAME_CHARS`` with an ellipsis where it is longer."""
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "\u2026"


def line_break_problem(text: str) -> str | None:
    """What is wrong with ``text`` as one line of a table or message; None when nothing."""
    bad = control_character(text)
    if bad is None:
        return None
    return f"contains a control character ({bad}); allowed: one line of printable text"


def _one_line(name: str) -> str:
    problem = line_break_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


#: a sweep's, workload's, hardware's or system's ``name``
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), AfterValidator(_one_line)]
