"""Signals held across a critical section of library code, then delivered."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["interrupts_held"]

#: the signals a console script turns into KeyboardInterrupt (``cli.entry_point``)
_HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold a Ctrl-C (or SIGTERM) that comes during the block and deliver it after, for
    library code that must not be cut in two. llvmlite hands each LLVM object between C and
    Python in two steps (the C call that gives a module to numba's JIT engine, then the Python
    flag that says the engine owns it): an interrupt between them left both to free it
    (``free(): double free`` or a segmentation fault when an interrupted ``archsim run``
    exited, 2 in ~520 Ctrl-Cs in its first 0.8 s). multiprocessing registers a queue's
    semaphores with its resource tracker before it arranges their release. In the main thread
    only (where Python runs signal handlers); a held signal goes to the handler that was in
    place, as if it had just come."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        got.append(signum)

    previous = {s: signal.getsignal(s) for s in _HELD}
    held = [s for s, h in previous.items() if h is not None]  # None: not set from Python
    for s in held:
        signal.signal(s, hold)
    try:
        yield
    finally:
        for s in held:
            signal.signal(s, previous[s])
        for s in dict.fromkeys(got):
            signal.raise_signal(s)
