"""What the measurement-folder readers (:mod:`archsim.measure.folder` for the CSV files,
:mod:`archsim.measure.device_file` for the JSON document) share: the error they raise, the
plausibility bounds of a reading, and how a value is shown back in a message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archsim.errors import ArchsimError, shown_value

__all__ = ["MOST", "MeasurementError", "cut", "shown", "undecodable"]


class MeasurementError(ArchsimError):
    """A measurement folder, file, row or field is missing or malformed (one line)."""

    def __init__(self, where: str | Path, field: str, problem: str) -> None:
        self.where, self.field, self.problem = str(where), field, problem
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


#: the largest plausible value of each reading, CSV cell or JSON entry: a call of an hour, a
#: petabyte moved or an exaflop computed by one call, a megajoule, 100 kW, a trillion calls,
#: 10,000 SMs, a 10 GHz clock
MOST = {
    "time_s": 3600.0, "min_s": 3600.0, "seconds": 3600.0, "sm_mhz": 1e4, "board_w": 1e5,
    "joules_per_call": 1e6, "joules": 1e9, "watts": 1e5, "calls": 1e12, "bytes_moved": 1e15,
    "bytes": 1e15, "bytes_per_call": 1e15, "flops_per_call": 1e18, "idle_watts": 1e5,
    "sms": 1e4, "max_sm_clock_mhz": 1e4, "idle_sm_clock_mhz": 1e4, "power_limit_w": 1e5,
    "L2_cache_size": 1e12, "total_memory": 1e15, "memory_clock_rate": 1e8,
    "memory_bus_width": 1e6, "clock_rate": 1e8,
}  # fmt: skip


def shown(value: Any) -> str:
    """``repr(value)`` cut to 60 characters."""
    return cut(shown_value(value) or repr(value))


def cut(text: str) -> str:
    """``text`` cut to 60 characters (a cell or value a message shows back)."""
    return text if len(text) <= 60 else text[:57] + "..."


def undecodable(name: str) -> bool:
    """A file name whose bytes are not UTF-8 (Python keeps them as lone surrogates, which
    neither a CSV, a Parquet string nor the terminal can take)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
