"""A double-buffered load -> compute -> write-back pipeline over one DRAM, in SimPy."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from archsim.engine.context import Dram, SimContext

__all__ = ["double_buffered_pipeline"]


def double_buffered_pipeline(
    ctx: SimContext,
    dram: Dram,
    cycles: Sequence[int],
    io_bytes: Sequence[tuple[int, int]],
    on_compute: Callable[[int], None] | None = None,
    buffers: int = 2,
) -> list[tuple[int, int]]:
    """Run items in order: load item i's inputs (``io_bytes[i][0]``) into one of ``buffers``
    buffers, compute for ``cycles[i]`` (one timeout), then write ``io_bytes[i][1]`` back while
    later items proceed. Loads and write-backs share the DRAM channel(s).

    Returns the (start, end) compute cycle of every item; ``on_compute(i)`` runs as item i's
    compute finishes (e.g. to record its actions on the context's counters).
    """
    env = ctx.env
    n = len(cycles)
    loaded = [env.event() for _ in range(n)]
    freed = [env.event() for _ in range(n)]
    spans: list[tuple[int, int]] = [(0, 0)] * n

    def loader():
        for i in range(n):
            if i >= buffers:
                yield freed[i - buffers]
            yield env.process(dram.transfer(io_bytes[i][0], "read"))
            loaded[i].succeed()

    def writeback(i):
        yield env.process(dram.transfer(io_bytes[i][1], "write"))

    def compute():
        for i in range(n):
            yield loaded[i]
            start = int(env.now)
            yield ctx.timeout(cycles[i])
            spans[i] = (start, int(env.now))
            if on_compute is not None:
                on_compute(i)
            freed[i].succeed()
            env.process(writeback(i))

    env.process(loader())
    env.process(compute())
    ctx.run()
    return spans
