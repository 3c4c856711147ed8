"""Exception hierarchy. Every user mistake is an ``ArchsimError`` with a one-line message."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ArchsimError",
    "ConfigError",
    "WorkloadError",
    "SimulationError",
    "UnknownNameError",
    "check_choice",
    "check_count",
    "counted",
    "is_count",
    "one_line",
    "os_reason",
    "shown_name",
    "shown_value",
]

#: longest name or path an error message shows back, characters
SHOWN_CHARS = 120


def one_line(message: object, limit: int | None = None) -> str:
    """``str(message)`` on one line (runs of white space, newlines included, as one space),
    cut to ``limit`` characters when given: how an error quotes another's message."""
    text = " ".join(str(message).split())
    return text if limit is None else text[:limit]


def os_reason(exc: OSError) -> str:
    """Why ``exc`` failed, as a message says it: its strerror, or (pyarrow's and onnx's
    errors carry none) its text on one line."""
    return exc.strerror or one_line(exc)


def counted(n: int, noun: str) -> str:
    """``1 point``, ``8 GPUs``: ``n`` and ``noun``, plural unless ``n`` is 1."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def shown_name(text: str) -> str:
    """``text`` as an error message shows it: cut to ``SHOWN_CHARS`` characters, with its
    length, when longer (a 5,000-character preset name or path)."""
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} chars)"


def shown_value(value: object) -> str | None:
    """How a message shows an integer too long for ``str()`` / ``repr()`` (Python refuses past
    4,300 digits): by its size; None for any other value."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    return None


class ArchsimError(Exception):
    """Base class of all errors caused by user input or by an impossible simulation request."""


class ConfigError(ArchsimError):
    """A hardware, workload or sweep configuration is invalid.

    The message names the file (or ``<overrides>``/``<api>``), the dotted field path, what is wrong
    and what is allowed.
    """

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {problem}")


class WorkloadError(ArchsimError):
    """A workload cannot be materialised (missing or malformed data file, shape mismatch...)."""


class SimulationError(ArchsimError):
    """The hardware cannot run the workload as configured (e.g. a layer exceeds an SRAM)."""


class UnknownNameError(ArchsimError, KeyError, ValueError):
    """An API argument names something archsim does not have (a preset or schema kind, a
    result column); also a ``KeyError`` and a ``ValueError``, as these calls raised before."""

    def __str__(self) -> str:  # KeyError would show the message quoted
        return str(self.args[0]) if self.args else ""


def check_choice(what: str, value: object, allowed: Sequence[str]) -> None:
    """Raise ``SimulationError`` unless ``value`` is one of ``allowed`` (an option's name)."""
    if not isinstance(value, str) or value not in allowed:
        raise SimulationError(f"{what} {shown_name(repr(value))}; allowed: {', '.join(allowed)}")


def integral(value: Any) -> Any:
    """``value`` as a Python ``int`` when it is an integer of another type (a NumPy integer,
    as a sweep's frame holds them); anything else unchanged, for the caller's own check."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | int):
        return int(value)
    return value


def is_count(value: object, least: int = 1, kind: type | tuple[type, ...] = int) -> bool:
    """Whether ``value`` is an integer of ``kind`` (not a bool) and >= ``least``: a bool, a
    float or a string is refused, not compared."""
    return not isinstance(value, bool) and isinstance(value, kind) and value >= least


def check_count(what: str, value: object, least: int = 1) -> None:
    """Raise ``SimulationError`` unless ``value`` is an integer >= ``least`` (a batch, a
    number of GPUs; NumPy integers too)."""
    if not is_count(value, least, numbers.Integral):
        raise SimulationError(f"{what} {shown_name(repr(value))}; allowed: an integer >= {least}")
