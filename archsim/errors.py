"""Exception hierarchy. Every user mistake is an ``ArchsimError`` with a one-line message."""

from __future__ import annotations

__all__ = ["ArchsimError", "ConfigError", "WorkloadError", "SimulationError"]


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
