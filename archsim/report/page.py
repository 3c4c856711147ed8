"""What every report page shares: the jinja2 environment and the atomic file write."""

from __future__ import annotations

import os
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from archsim.output import write_text_atomically

__all__ = ["environment", "write_page"]


def environment() -> Environment:
    """The autoescaping jinja2 environment over ``archsim/report/templates``."""
    return Environment(
        loader=PackageLoader("archsim", "report/templates"),
        autoescape=select_autoescape(
            enabled_extensions=("html", "j2"), default_for_string=True, default=True
        ),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def write_page(text: str, path: str | Path, default_name: str) -> Path:
    """Write ``text`` to ``path`` atomically; returns the file written.

    When ``path`` is an existing directory, or names one with a trailing slash (``"out/"``, which
    is created), the page goes to ``path/default_name``. The text goes
    to a temporary file in the target directory first and is then renamed over the target, so
    readers never see a half-written page and no temporary file is left behind.
    """
    target = Path(path)
    if target.is_dir() or str(path).endswith(("/", os.sep)):
        target = target / default_name
    return write_text_atomically(target, text, "output")  # not over a device or a FIFO
