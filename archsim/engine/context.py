"""SimContext: one SimPy environment (time unit = accelerator cycles) plus action counters."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Generator
from typing import Any

import simpy

__all__ = ["ActionCounter", "SimContext", "Dram", "Sram"]


class ActionCounter:
    """Counts of ``(component, action)`` pairs, e.g. ``("spmat_sram", "read")``."""

    def __init__(self) -> None:
        self._counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def add(self, component: str, action: str, count: int = 1) -> None:
        """Add ``count`` actions (must be >= 0)."""
        if count < 0:
            raise ValueError(f"negative count {count} for {component}.{action}")
        self._counts[component][action] += int(count)

    def as_dict(self) -> dict[str, dict[str, int]]:
        """Plain nested dict copy."""
        return {c: dict(a) for c, a in self._counts.items()}


class SimContext:
    """Explicit simulation context: SimPy environment, clock and counters. No global state."""

    def __init__(self, clock_hz: float) -> None:
        self.env = simpy.Environment()
        self.clock_hz = float(clock_hz)
        self.counters = ActionCounter()
        self.events = 0

    def seconds_to_cycles(self, seconds: float) -> int:
        """Whole cycles covering ``seconds``."""
        return int(math.ceil(seconds * self.clock_hz - 1e-9))

    def timeout(self, cycles: int) -> simpy.events.Timeout:
        """A SimPy timeout of ``cycles`` (counted, so tests can check event counts)."""
        self.events += 1
        return self.env.timeout(cycles)

    def run(self, until: Any = None) -> int:
        """Run to completion; returns the final time in cycles."""
        self.env.run(until=until)
        return int(self.env.now)


class Dram:
    """Off-chip memory with ``channels`` independent channels of fixed bandwidth and latency."""

    def __init__(
        self,
        ctx: SimContext,
        bandwidth_bytes_per_s: float,
        latency_s: float,
        channels: int = 1,
        name: str = "dram",
    ) -> None:
        self.ctx = ctx
        self.name = name
        self.bandwidth = float(bandwidth_bytes_per_s)
        self.latency_s = float(latency_s)
        self.resource = simpy.Resource(ctx.env, capacity=channels)
        self.busy_cycles = 0

    def transfer_cycles(self, nbytes: int) -> int:
        """Cycles one transfer of ``nbytes`` occupies a channel (latency + size / bandwidth)."""
        if nbytes <= 0:
            return 0
        return self.ctx.seconds_to_cycles(self.latency_s + nbytes / self.bandwidth)

    def transfer(self, nbytes: int, action: str) -> Generator[simpy.events.Event, Any, None]:
        """SimPy process body: hold a channel for the transfer and count the bytes."""
        if nbytes <= 0:
            return
        with self.resource.request() as req:
            yield req
            cycles = self.transfer_cycles(nbytes)
            self.busy_cycles += cycles
            self.ctx.counters.add(self.name, f"{action}_bytes", nbytes)
            yield self.ctx.timeout(cycles)


class Sram:
    """An on-chip SRAM: counts reads and writes (its timing is inside the datapath kernels)."""

    def __init__(self, ctx: SimContext, name: str) -> None:
        self.ctx = ctx
        self.name = name

    def read(self, count: int) -> None:
        """Record ``count`` reads of one line."""
        self.ctx.counters.add(self.name, "read", count)

    def write(self, count: int) -> None:
        """Record ``count`` writes of one line."""
        self.ctx.counters.add(self.name, "write", count)
