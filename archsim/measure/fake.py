"""A deterministic stand-in GPU for testing the probe without one.

Kernels cost a closed-form time (launch floor + FLOPs at a per-precision rate + bytes at a
bandwidth) on a virtual clock that only the backend advances: nothing sleeps, and every run
gives the same numbers. Graph replays vary by a fixed cycle of factors (so median and minimum
differ), eager calls cost at least a host launch, power is a function of the op last run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from archsim.measure.backend import ConvShape, GemmShape

__all__ = ["FakeBackend", "FakeOp"]

#: FLOP/s per precision of the fake GPU
RATE = {"fp16": 700e12, "bf16": 700e12, "tf32": 350e12, "fp32": 50e12, "fp8": 1200e12,
        "int8": 800e12}  # fmt: skip
IN_BYTES = {"fp16": 2, "bf16": 2, "tf32": 4, "fp32": 4, "fp8": 1, "int8": 1}
BANDWIDTH = 3.0e12  # bytes/s
GRAPH_FLOOR_S = 2.5e-6  # per kernel in a graph
EAGER_FLOOR_S = 8.0e-6  # per kernel launched from the host
SYNC_S = 20e-6
IDLE_W, BUSY_W, IDLE_MHZ, BUSY_MHZ = 72.5, 650.0, 345.0, 1755.0
REPLAY_FACTORS = (1.02, 1.0, 1.01, 1.03, 1.0, 1.04)


@dataclass
class FakeOp:
    """One kernel of the fake GPU: its duration and power."""

    backend: FakeBackend
    seconds: float
    watts: float

    def __call__(self) -> None:
        self.backend._run(self, self.seconds)


class FakeBackend:
    """Implements :class:`archsim.measure.backend.Backend` with closed-form timings."""

    def __init__(self, unsupported: tuple[str, ...] = (), free_bytes: int = 80 << 30) -> None:
        self._unsupported, self._free = unsupported, free_bytes
        self._clock, self._energy = 0.0, 0.0
        self._last: FakeOp | None = None
        self._replays = 0
        self._lock = threading.Lock()
        self.ops_made = 0

    # kernels ---------------------------------------------------------------------------
    def device_info(self) -> dict[str, Any]:
        return {
            "name": "Fake GPU",
            "sms": 132,
            "total_memory": self._free,
            "power_limit_w": 700,
            "max_sm_clock_mhz": 1980,
            "idle_sm_clock_mhz": IDLE_MHZ,
        }

    def unsupported(self, precision: str) -> str:
        return "not supported by the fake GPU" if precision in self._unsupported else ""

    def _op(self, flops: int, nbytes: int, rate: float, zeros: bool = False) -> FakeOp:
        self.ops_made += 1
        seconds = GRAPH_FLOOR_S + flops / rate + nbytes / BANDWIDTH
        busy = flops / rate / seconds
        watts = IDLE_W + (BUSY_W - IDLE_W) * busy * (0.5 if zeros else 1.0)
        return FakeOp(self, seconds, watts)

    def gemm(self, shape: GemmShape) -> FakeOp:
        nbytes = (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n) * IN_BYTES[
            shape.precision
        ]
        return self._op(shape.flops, nbytes, RATE[shape.precision], shape.zeros)

    def conv(self, shape: ConvShape) -> FakeOp:
        nbytes = 2 * (shape.n * shape.c * shape.h * shape.w + shape.n * shape.k * shape.p * shape.q)
        return self._op(shape.flops, nbytes, RATE["fp16"] / 2)

    def copy(self, nbytes: int) -> FakeOp:
        return self._op(0, 2 * nbytes, 1.0)

    def read(self, nbytes: int) -> FakeOp:
        return self._op(0, nbytes, 1.0)

    def tiny(self) -> FakeOp:
        return self._op(0, 4, 1.0)

    def free_bytes(self) -> int:
        return self._free

    def release(self) -> None:
        pass

    # timers ----------------------------------------------------------------------------
    def _run(self, op: FakeOp, seconds: float) -> None:
        with self._lock:
            self._clock += seconds
            self._energy += seconds * op.watts
            self._last = op

    def graph(self, op: FakeOp, calls: int) -> Callable[[], float]:  # type: ignore[override]
        def replay() -> float:
            factor = REPLAY_FACTORS[self._replays % len(REPLAY_FACTORS)]
            self._replays += 1
            seconds = calls * op.seconds * factor
            self._run(op, seconds)
            return seconds

        return replay

    def eager(self, op: FakeOp, calls: int) -> float:  # type: ignore[override]
        seconds = calls * max(op.seconds, EAGER_FLOOR_S)
        self._run(op, seconds)
        return seconds

    def round_trip(self, op: FakeOp) -> float:  # type: ignore[override]
        seconds = max(op.seconds, EAGER_FLOOR_S) + SYNC_S
        self._run(op, seconds)
        return seconds

    # readings --------------------------------------------------------------------------
    def telemetry(self) -> tuple[float, float]:
        with self._lock:
            if self._last is None:
                return IDLE_MHZ, IDLE_W
            w = self._last.watts
        return BUSY_MHZ if w > IDLE_W else IDLE_MHZ, w

    def snapshot(self) -> dict[str, str]:
        mhz, watts = self.telemetry()
        return {
            "clocks.sm": f"{mhz:.0f}",
            "clocks.max.sm": "1980",
            "clocks.mem": "2619",
            "power.draw": f"{watts:.2f}",
            "temperature.gpu": "50",
            "power.limit": "700.00",
        }

    def energy_j(self) -> float:
        with self._lock:
            return self._energy

    def now(self) -> float:
        with self._lock:
            return self._clock

    def sleep(self, seconds: float) -> None:
        idle = FakeOp(self, 0.0, IDLE_W)
        self._run(idle, seconds)

    def sync(self) -> None:
        pass
