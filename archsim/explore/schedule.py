"""Which worker runs which points: whole groups of related points, largest first.

Consecutive points of a sweep share the most (same workload and seed, same leading axes: for EIE
the PE count, whose encoding a worker prepares once and memoises). The plan is cut into *units*
at the boundaries where the slowest-changing axis changes (one unit per memo group), and every
unit runs on one worker, chunk after chunk, so no preparation is ever made twice because of the
schedule. A free worker takes the largest unit not yet started (the longest-processing-
time-first rule: the last units to start are the smallest, so the workers finish close
together); among units of one size, those at the end of the plan go first, since a sweep's
slowest axis usually ascends in cost (1,000-point EIE sweep, `-j 2`, alternating, 4 rounds:
13.16 / 13.49 s -> 12.56 / 13.22 s min / median). Only when there are fewer than two units per
worker is the largest unit cut again, at an inner boundary near its middle, so that every worker
has work; that is the one case in which two workers prepare the same group. A chunk whose worker
dies is run again point by point, so that a point that kills its worker (a crash, the kernel's
OOM killer) is found and recorded as failed while every other point still runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["GroupScheduler", "WorkerDied", "group_starts", "run_scheduled", "units"]

F = TypeVar("F")

#: chunks queued per worker, so that a worker never waits for the parent between chunks
IN_FLIGHT_PER_WORKER = 2

#: units wanted per worker before the largest units are cut (see ``units``)
UNITS_PER_WORKER = 2


def units(n: int, workers: int, chunk: int, levels: Sequence[int] | None = None) -> list[list[int]]:
    """Cut ``[0, n)`` into ``[start, stop)`` units that never split a memo group needlessly.

    ``levels[i]`` says how much task ``i`` shares with task ``i - 1``: the position of the first
    axis whose value changes there (0: the slowest axis, nothing shared). Units start at the
    strongest boundaries (the smallest level after the first task); consecutive units smaller
    than ``chunk`` are merged (they share nothing anyway, and a chunk is the unit of saving);
    while there are fewer than ``UNITS_PER_WORKER * workers`` units, the largest one longer
    than ``chunk`` is cut at its strongest inner boundary nearest its middle.
    """
    if n <= 0:
        return []
    lv = list(levels) if levels is not None else [0] * n
    strong = min(lv[1:], default=0)
    starts = [i for i in range(n) if i == 0 or lv[i] <= strong]
    cut: list[list[int]] = []
    for lo, hi in zip(starts, [*starts[1:], n], strict=True):
        if cut and cut[-1][1] - cut[-1][0] < chunk and hi - lo < chunk:
            cut[-1][1] = hi  # merge small neighbours
        else:
            cut.append([lo, hi])
    while len(cut) < UNITS_PER_WORKER * workers:
        big = max(range(len(cut)), key=lambda u: cut[u][1] - cut[u][0])
        lo, hi = cut[big]
        if hi - lo <= chunk:
            break
        mid = (lo + hi) // 2
        at = min(range(lo + 1, hi), key=lambda i: (lv[i], abs(i - mid)))
        cut[big : big + 1] = [[lo, at], [at, hi]]
    return cut


def group_starts(found: list[list[int]], levels: Sequence[int] | None) -> set[int]:
    """The starts of the ``units`` that hold (part of) one memo group, not several small
    groups merged: a worker that starts one has no use for what it memoised for the group
    before (``memo.new_group``)."""
    if levels is None:
        return set()
    strong = min(levels[1:], default=0)
    return {lo for lo, hi in found if all(levels[i] > strong for i in range(lo + 1, hi))}


class GroupScheduler:
    """Hands out ``(start, stop)`` chunks of ``[0, n)`` to ``workers`` workers, one unit (see
    :func:`units`) at a time per worker, largest unit first; ``next`` returns None when nothing
    is left for that worker."""

    def __init__(
        self, n: int, workers: int, chunk: int, levels: Sequence[int] | None = None
    ) -> None:
        self.chunk = max(1, chunk)
        found = units(n, workers, self.chunk, levels)
        self.group_starts = group_starts(found, levels)
        # largest first; among equals, from the end of the plan: a sweep's slowest axis
        # usually ascends in cost (PE counts, array sizes, batches), so cheap units end it
        self.queue: deque[list[int]] = deque(sorted(found, key=lambda u: (u[0] - u[1], -u[0])))
        self.current: dict[int, list[int]] = {}  # worker -> [next task, end of its unit]

    def next(self, worker: int) -> tuple[int, int] | None:
        """The next chunk for ``worker``: more of its unit, else the largest unit left."""
        unit = self.current.get(worker)
        if unit is None or unit[0] >= unit[1]:
            if not self.queue:
                return None
            unit = self.current[worker] = self.queue.popleft()
        start = unit[0]
        unit[0] = min(start + self.chunk, unit[1])
        return start, unit[0]


class WorkerDied(Exception):
    """A chunk's worker process died (killed, out of memory, crashed) before it answered."""


def run_scheduled(
    tasks: list[Any],
    workers: int,
    chunk: int,
    submit: Callable[[list[Any], int, bool], F],
    wait_first: Callable[[list[F]], list[F]],
    result: Callable[[F], Any],
    levels: Sequence[int] | None = None,
    *,
    died: Callable[[Any, str], Any],
    restart: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """Run ``tasks`` in chunks on ``workers`` workers; yields each chunk's result as it ends.

    ``submit(chunk, worker, new_group)`` starts a chunk on one worker and returns a future
    (``new_group``: the chunk starts a unit of one memo group, see
    ``GroupScheduler.group_starts``);
    ``wait_first(futures)`` blocks until some are done and returns those; ``result(future)``
    returns a chunk's result or raises ``WorkerDied``. ``levels``: see :func:`units`.

    A chunk whose worker died is run again one point at a time (after ``restart(worker)``, which
    replaces the dead worker), each such point alone on its worker (nothing queued beside it, so
    a death there is its own); a point that kills its worker when run alone is the cause, and
    ``died(task, detail)`` (its failure record) is yielded in place of its result.
    """
    sched = GroupScheduler(len(tasks), workers, chunk, levels)
    # future -> worker, generation, chunk, whether it runs alone on its worker
    in_flight: dict[Any, tuple[int, int, list[Any], bool]] = {}
    generation = [0] * workers  # bumped when a worker is replaced
    alone: deque[Any] = deque()  # tasks of a chunk whose worker died, to run one by one

    def dispatch(worker: int) -> None:
        """Fill ``worker``'s queue: a point to run alone first (only on a worker with nothing
        in flight, and then nothing else beside it), else its next chunks."""
        while True:
            mine = [solo for w, _, _, solo in in_flight.values() if w == worker]
            if len(mine) >= IN_FLIGHT_PER_WORKER or any(mine):
                return
            fresh = solo = False
            if alone:
                if mine:  # drain this worker first; the point then runs alone on it
                    return
                part, solo = [alone.popleft()], True
            else:
                span = sched.next(worker)
                if span is None:
                    return
                part = tasks[span[0] : span[1]]
                fresh = span[0] in sched.group_starts
            in_flight[submit(part, worker, fresh)] = (worker, generation[worker], part, solo)

    for w in range(workers):
        dispatch(w)
    while in_flight:
        for fut in wait_first(list(in_flight)):
            worker, gen, part, solo = in_flight.pop(fut)
            try:
                done = result(fut)
            except WorkerDied as exc:
                if restart is not None and gen == generation[worker]:
                    restart(worker)
                    generation[worker] += 1
                if solo:  # it ran alone on its worker: it killed it
                    yield died(part[0], str(exc))
                else:  # this chunk, or one queued beside it, killed the worker
                    alone.extend(part)
                for w in range(workers):  # idle workers share the points to run alone
                    dispatch(w)
                continue
            dispatch(worker)  # keep the worker busy while the caller stores ``done``
            yield done
