"""Live processes read from /proc, for the tests that check a sweep leaves none behind."""

from __future__ import annotations

from pathlib import Path

#: fields of /proc/PID/stat after the command name: 0 state, 1 parent pid, 3 session id
PARENT, SESSION = 1, 3


def live_processes(field: int, value: int) -> list[int]:
    """Pids whose /proc stat ``field`` (``PARENT`` or ``SESSION``) equals ``value``; zombies
    (done, not yet reaped) are left out."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[field]) == value and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out
