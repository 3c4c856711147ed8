"""Which worker runs which points: contiguous ranges with work stealing.

Consecutive points of a sweep share the most (same workload and seed, same leading axes: for
EIE the PE count, whose encoding a worker memoises). Each worker therefore starts on its own
contiguous range of the plan and takes chunks from it in order; a worker whose range is done
steals the second half of the largest remaining range. Locality stays high (a steal costs the
thief one cold start) and the load stays balanced however uneven the points' costs are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["RangeScheduler", "run_scheduled"]

F = TypeVar("F")

#: chunks queued per worker, so that a worker never waits for the parent between chunks
IN_FLIGHT_PER_WORKER = 2


class RangeScheduler:
    """Hands out ``(start, stop)`` chunks of ``[0, n)`` to ``workers`` workers.

    ``levels[i]`` says how much task ``i`` shares with task ``i - 1``: the position of the
    first axis whose value changes there (0: the slowest axis, nothing shared). Ranges are cut
    at the strongest boundary near the middle, so a worker rarely starts in the middle of a
    group of points that share expensive work (an EIE PE count's encoding).
    """

    def __init__(
        self, n: int, workers: int, chunk: int, levels: Sequence[int] | None = None
    ) -> None:
        self.chunk = max(1, chunk)
        self.levels = list(levels) if levels is not None else [0] * n
        bounds = [0]
        for w in range(1, workers):
            bounds.append(max(bounds[-1], self._cut(bounds[-1], n, round(w * n / workers))))
        bounds.append(n)
        self.ranges = [[bounds[i], bounds[i + 1]] for i in range(workers)]

    def _cut(self, lo: int, hi: int, target: int) -> int:
        """A cut in ``(lo, hi)`` near ``target`` at the strongest boundary of a window."""
        span = max((hi - lo) // 4, 1)
        first, last = max(lo + 1, target - span), min(hi - 1, target + span)
        if first > last:
            return min(max(target, lo), hi)
        return min(range(first, last + 1), key=lambda i: (self.levels[i], abs(i - target)))

    def next(self, worker: int) -> tuple[int, int] | None:
        """The next chunk for ``worker`` (stealing when its range is empty), or None."""
        own = self.ranges[worker]
        if own[0] >= own[1]:
            victim = max(self.ranges, key=lambda r: r[1] - r[0])
            left = victim[1] - victim[0]
            if left <= 0:
                return None
            if left > 2 * self.chunk:
                cut = self._cut(victim[0], victim[1], victim[0] + left // 2)
            else:
                cut = victim[1] - min(self.chunk, left)
            own[0], own[1] = cut, victim[1]
            victim[1] = cut
        stop = min(own[0] + self.chunk, own[1])
        out = (own[0], stop)
        own[0] = stop
        return out


def run_scheduled(
    tasks: list[Any],
    workers: int,
    chunk: int,
    submit: Callable[[list[Any], int], F],
    wait_first: Callable[[list[F]], list[F]],
    result: Callable[[F], Any],
    levels: Sequence[int] | None = None,
) -> Iterator[Any]:
    """Run ``tasks`` in chunks on ``workers`` workers; yields each chunk's result as it ends.

    ``submit(chunk, worker)`` starts a chunk on one worker and returns a future;
    ``wait_first(futures)`` blocks until some are done and returns those; ``result(future)``.
    ``levels``: see ``RangeScheduler``.
    """
    sched = RangeScheduler(len(tasks), workers, chunk, levels)
    in_flight: dict[Any, int] = {}

    def dispatch(worker: int) -> None:
        span = sched.next(worker)
        if span is not None:
            in_flight[submit(tasks[span[0] : span[1]], worker)] = worker

    for w in range(workers):
        for _ in range(IN_FLIGHT_PER_WORKER):
            dispatch(w)
    while in_flight:
        for fut in wait_first(list(in_flight)):
            worker = in_flight.pop(fut)
            done = result(fut)  # raises before anything more goes to a dead worker
            dispatch(worker)  # keep the worker busy while the caller stores ``done``
            yield done
