"""Which worker runs which points: contiguous ranges with work stealing.

Consecutive points of a sweep share the most (same workload and seed, same leading axes: for
EIE the PE count, whose encoding a worker memoises). Each worker therefore starts on its own
contiguous range of the plan and takes chunks from it in order; a worker whose range is done
works the largest remaining range from its far end, and does not enter a group of points
that another worker is finishing. Locality stays high (a steal costs the thief one cold start,
and a group is prepared twice only while much of it is left) and the load stays balanced
however uneven the points' costs are. A chunk whose worker dies is run again point by point,
so that a point that kills its worker (a crash, the kernel's OOM killer) is found and recorded
as failed while every other point still runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["RangeScheduler", "WorkerDied", "run_scheduled"]

F = TypeVar("F")

#: chunks queued per worker, so that a worker never waits for the parent between chunks
IN_FLIGHT_PER_WORKER = 2


class RangeScheduler:
    """Hands out ``(start, stop)`` chunks of ``[0, n)`` to ``workers`` workers.

    ``levels[i]`` says how much task ``i`` shares with task ``i - 1``: the position of the
    first axis whose value changes there (0: the slowest axis, nothing shared). A *group* is a
    run of tasks between the plan's strongest boundaries (for EIE: one PE count, whose
    encoding a worker prepares once and memoises).

    The plan is cut into one contiguous range per worker, at the strongest boundary near each
    even split. A worker takes chunks from the front of its range. When its range is done, it
    joins the largest remaining range from the back and works towards the owner. A worker
    does not enter a group that another worker is in when less than half of that group is
    left: it leaves the rest to that worker rather than prepare the group a second time. So
    the two meet at a group boundary, or inside a group only while much of it is left. Only
    when no range has a free end is the largest one cut again, at a strong boundary near its
    middle. A worker with nothing it may take is done (``next`` returns None).
    """

    def __init__(
        self, n: int, workers: int, chunk: int, levels: Sequence[int] | None = None
    ) -> None:
        self.chunk = max(1, chunk)
        self.levels = list(levels) if levels is not None else [0] * n
        strong = min(self.levels[1:], default=0)
        self.group: list[int] = []
        for i, level in enumerate(self.levels):
            self.group.append(self.group[-1] + (level <= strong) if i else 0)
        self.span: dict[int, list[int]] = {}  # group -> [first task, last task + 1]
        for i, g in enumerate(self.group):
            self.span.setdefault(g, [i, i])[1] = i + 1
        bounds = [0]
        for w in range(1, workers):
            bounds.append(max(bounds[-1], self._cut(bounds[-1], n, round(w * n / workers))))
        bounds.append(n)
        self.ranges = [[bounds[i], bounds[i + 1]] for i in range(workers)]
        #: worker -> (range index, +1 from the front or -1 from the back)
        self.ends: dict[int, tuple[int, int]] = {w: (w, 1) for w in range(workers)}
        self.holding: dict[int, int] = {}  # worker -> group of the last task it took
        self.done: set[int] = set()

    def _cut(self, lo: int, hi: int, target: int) -> int:
        """A cut in ``(lo, hi)`` near ``target`` at the strongest boundary of a window."""
        span = max((hi - lo) // 4, 1)
        first, last = max(lo + 1, target - span), min(hi - 1, target + span)
        if first > last:
            return min(max(target, lo), hi)
        return min(range(first, last + 1), key=lambda i: (self.levels[i], abs(i - target)))

    def _may_enter(self, worker: int, task: int) -> bool:
        """Whether ``worker`` may take ``task``: not when its group is another active
        worker's and less than half of the group is left."""
        g = self.group[task]
        if self.holding.get(worker) == g:
            return True
        if not any(h == g and w not in self.done for w, h in self.holding.items() if w != worker):
            return True
        lo, hi = self.span[g]
        left = sum(max(0, min(r[1], hi) - max(r[0], lo)) for r in self.ranges)
        return 2 * left >= hi - lo

    def _end_task(self, i: int, d: int) -> int | None:
        """The task the end ``(i, d)`` would take next, or None when range ``i`` is empty."""
        lo, hi = self.ranges[i]
        return None if lo >= hi else lo if d > 0 else hi - 1

    def _join(self, worker: int) -> bool:
        """Give ``worker`` a free end it may enter (cutting a range if need be); or False."""
        taken = {end for w, end in self.ends.items() if w != worker and w not in self.done}
        options = []
        for i, r in enumerate(self.ranges):
            for d in (1, -1):
                t = self._end_task(i, d)
                if t is not None and (i, d) not in taken and self._may_enter(worker, t):
                    options.append((r[1] - r[0], i, d))
        if options:
            _, i, d = max(options)
            self.ends[worker] = (i, d)
            return True
        for size, i in sorted(((r[1] - r[0], i) for i, r in enumerate(self.ranges)), reverse=True):
            lo, hi = self.ranges[i]
            if size <= 2 * self.chunk:
                break
            cut = self._cut(lo, hi, lo + size // 2)
            if not self._may_enter(worker, cut):
                continue
            self.ranges[i][1] = cut
            self.ranges.append([cut, hi])
            new = len(self.ranges) - 1
            for w, end in self.ends.items():  # the back end's worker goes with [cut, hi)
                if end == (i, -1):
                    self.ends[w] = (new, -1)
            self.ends[worker] = (new, 1)
            return True
        return False

    def next(self, worker: int) -> tuple[int, int] | None:
        """The next chunk for ``worker``, or None when nothing is left that it may take."""
        if worker in self.done:
            return None
        i, d = self.ends[worker]
        t = self._end_task(i, d)
        if t is None or not self._may_enter(worker, t):
            if not self._join(worker):
                self.done.add(worker)
                return None
            i, d = self.ends[worker]
        lo, hi = self.ranges[i]
        if d > 0:
            stop = lo + 1
            while stop < min(lo + self.chunk, hi) and self._fits(worker, stop, stop - 1):
                stop += 1
            out = (lo, stop)
            self.ranges[i][0] = stop
            last = stop - 1
        else:
            start = hi - 1
            while start > max(hi - self.chunk, lo) and self._fits(worker, start - 1, start):
                start -= 1
            out = (start, hi)
            self.ranges[i][1] = start
            last = start
        self.holding[worker] = self.group[last]
        return out

    def _fits(self, worker: int, task: int, prev: int) -> bool:
        """Whether a chunk that holds ``prev`` may grow to ``task``."""
        return self.group[task] == self.group[prev] or self._may_enter(worker, task)


class WorkerDied(Exception):
    """A chunk's worker process died (killed, out of memory, crashed) before it answered."""


def run_scheduled(
    tasks: list[Any],
    workers: int,
    chunk: int,
    submit: Callable[[list[Any], int], F],
    wait_first: Callable[[list[F]], list[F]],
    result: Callable[[F], Any],
    levels: Sequence[int] | None = None,
    *,
    died: Callable[[Any, str], Any],
    restart: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """Run ``tasks`` in chunks on ``workers`` workers; yields each chunk's result as it ends.

    ``submit(chunk, worker)`` starts a chunk on one worker and returns a future;
    ``wait_first(futures)`` blocks until some are done and returns those; ``result(future)``
    returns a chunk's result or raises ``WorkerDied``. ``levels``: see ``RangeScheduler``.

    A chunk whose worker died is run again one point at a time (after ``restart(worker)``, which
    replaces the dead worker); a point that kills its worker when run alone is the cause, and
    ``died(task, detail)`` (its failure record) is yielded in place of its result.
    """
    sched = RangeScheduler(len(tasks), workers, chunk, levels)
    in_flight: dict[Any, tuple[int, int, list[Any]]] = {}  # future -> worker, generation, chunk
    generation = [0] * workers  # bumped when a worker is replaced
    alone: deque[Any] = deque()  # tasks of a chunk whose worker died, to run one by one

    def dispatch(worker: int) -> None:
        """Fill ``worker``'s queue: points to run alone first, then its next chunks."""
        while sum(w == worker for w, _, _ in in_flight.values()) < IN_FLIGHT_PER_WORKER:
            if alone:
                part = [alone.popleft()]
            else:
                span = sched.next(worker)
                if span is None:
                    return
                part = tasks[span[0] : span[1]]
            in_flight[submit(part, worker)] = (worker, generation[worker], part)

    for w in range(workers):
        dispatch(w)
    while in_flight:
        for fut in wait_first(list(in_flight)):
            worker, gen, part = in_flight.pop(fut)
            try:
                done = result(fut)
            except WorkerDied as exc:
                if restart is not None and gen == generation[worker]:
                    restart(worker)
                    generation[worker] += 1
                if len(part) == 1:
                    yield died(part[0], str(exc))
                else:
                    alone.extend(part)
                for w in range(workers):  # idle workers share the points to run alone
                    dispatch(w)
                continue
            dispatch(worker)  # keep the worker busy while the caller stores ``done``
            yield done
