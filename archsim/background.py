"""Import a module in a daemon thread while the caller waits on something else."""

from __future__ import annotations

import contextlib
import importlib
import threading

__all__ = ["import_in_background"]


def import_in_background(name: str) -> threading.Thread:
    """Start importing module ``name`` in a daemon thread and return the thread.

    For a process that is about to wait (sweep workers computing, numba kernels running with
    the GIL released): the import's CPU time then overlaps the wait instead of following it.
    An import that fails is left for the caller's own import of ``name``, which raises the
    error in the main thread. Join the thread before the process exits, so that no import is
    cut short.
    """

    def load() -> None:
        with contextlib.suppress(Exception):  # the caller's own import reports it
            importlib.import_module(name)

    thread = threading.Thread(target=load, name=f"archsim-import-{name}", daemon=True)
    thread.start()
    return thread
