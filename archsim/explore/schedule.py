"""Which worker runs which points: contiguous ranges with work stealing.

Consecutive points of a sweep share the most (same workload and seed, same leading axes: for
EIE the PE count, whose encoding a worker memoises). Each worker therefore starts on its own
contiguous range of the plan and takes chunks from it in order; a worker whose range is done
works the largest remaining range from its far end. Locality stays high (a steal costs the
thief one cold start, and at most one group of points is prepared twice where the two meet)
and the load stays balanced however uneven the points' costs are.
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
    first axis whose value changes there (0: the slowest axis, nothing shared). The plan is cut
    into one contiguous range per worker, at the strongest boundary near each even split, so a
    worker rarely starts in the middle of a group of points that share expensive work (an EIE
    PE count's encoding). A worker takes chunks from the front of its range. When its range is
    done, it joins the largest remaining range from the back and works towards its owner: the
    two meet wherever the work runs out, so a steal costs at most one group shared by two
    workers, however uneven the points' costs are. Only when every range already has a worker
    at each end is the largest one cut again (at a strong boundary near its middle).
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
        #: worker -> (range index, +1 from the front or -1 from the back)
        self.ends: dict[int, tuple[int, int]] = {w: (w, 1) for w in range(workers)}

    def _cut(self, lo: int, hi: int, target: int) -> int:
        """A cut in ``(lo, hi)`` near ``target`` at the strongest boundary of a window."""
        span = max((hi - lo) // 4, 1)
        first, last = max(lo + 1, target - span), min(hi - 1, target + span)
        if first > last:
            return min(max(target, lo), hi)
        return min(range(first, last + 1), key=lambda i: (self.levels[i], abs(i - target)))

    def _join(self, worker: int) -> bool:
        """Give ``worker`` a new end of a range with work left; False when none is left."""
        taken = {end for w, end in self.ends.items() if w != worker}
        left = [(r[1] - r[0], i) for i, r in enumerate(self.ranges) if r[1] > r[0]]
        if not left:
            return False
        free = [(size, i, d) for size, i in left for d in (1, -1) if (i, d) not in taken]
        if free:
            _, i, d = max(free)
            self.ends[worker] = (i, d)
            return True
        size, i = max(left)
        lo, hi = self.ranges[i]
        if size <= 2 * self.chunk:  # too small to cut: share its back end
            self.ends[worker] = (i, -1)
            return True
        cut = self._cut(lo, hi, lo + size // 2)
        self.ranges[i][1] = cut
        self.ranges.append([cut, hi])
        new = len(self.ranges) - 1
        for w, end in self.ends.items():  # the back end's worker goes with [cut, hi)
            if end == (i, -1):
                self.ends[w] = (new, -1)
        self.ends[worker] = (new, 1)
        return True

    def next(self, worker: int) -> tuple[int, int] | None:
        """The next chunk for ``worker`` (joining another range when its own is done), or
        None when no work is left."""
        i, d = self.ends[worker]
        if self.ranges[i][1] <= self.ranges[i][0]:
            if not self._join(worker):
                return None
            i, d = self.ends[worker]
        r = self.ranges[i]
        if d > 0:
            out = (r[0], min(r[0] + self.chunk, r[1]))
            r[0] = out[1]
        else:
            out = (max(r[1] - self.chunk, r[0]), r[1])
            r[1] = out[0]
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
