"""Signals held across a critical section of library code, then delivered."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["forget_caught_interrupt", "interrupts_held"]

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


def forget_caught_interrupt() -> None:
    """Clear CPython's mark of an unhandled KeyboardInterrupt after one was caught.

    CPython 3.11 sets that mark when ``exec()`` or ``eval()`` of a string ends in
    KeyboardInterrupt (dataclasses and namedtuple build their methods so while modules
    import), even when a caller catches it, and ``python -m`` then ends the process by SIGINT
    at exit (exit -2 after "archsim: interrupted", 1 interrupted start in ~40). Every string
    evaluation clears the mark on entry, so evaluating a constant does."""
    eval("0")  # noqa: S307 - a constant
