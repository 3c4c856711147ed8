"""What the probe needs from a GPU: kernels to enqueue, graph/eager timers, NVML readings.

Two backends implement :class:`Backend`: ``torch`` (PyTorch + NVML, in ``torch_backend.py``,
the only module that imports them) and ``fake`` (deterministic timings, for tests). Times are
seconds, clocks MHz, power W, energy J.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from archsim.errors import ArchsimError

__all__ = ["Backend", "BackendUnavailable", "ConvShape", "GemmShape", "Op"]

#: One enqueued call of a kernel (returns immediately; the GPU runs it asynchronously).
Op = Callable[[], None]
INSTALL_HINT = 'pip install "archsim[probe]"'


class BackendUnavailable(ArchsimError):
    """The probe cannot run here: no PyTorch, no NVML, no CUDA GPU (one line)."""


@dataclass(frozen=True)
class GemmShape:
    """One GEMM to time: ``m x n x k``, row-major stored shapes, precision, operand kind."""

    m: int
    n: int
    k: int
    a_stored: str = "m x k"
    b_stored: str = "k x n"
    precision: str = "fp16"
    zeros: bool = False

    @property
    def flops(self) -> int:
        """2 m n k."""
        return 2 * self.m * self.n * self.k


@dataclass(frozen=True)
class ConvShape:
    """One 2-D convolution (NHWC, PyTorch padding and groups) at batch ``n``; ``p`` x ``q``
    is the output size (``ConvLayer.out_h`` / ``out_w``)."""

    net: str
    layer: str
    n: int
    c: int
    k: int
    h: int
    w: int
    r: int
    s: int
    stride: int
    pad: int
    groups: int
    p: int
    q: int
    precision: str = "fp16"

    @property
    def flops(self) -> int:
        """2 x dense multiply-accumulates."""
        return 2 * self.n * self.k * self.p * self.q * (self.c // self.groups) * self.r * self.s


class Backend(Protocol):
    """A GPU the probe can drive."""

    def device_info(self) -> dict[str, Any]:
        """The ``device`` block of ``device_memory_energy.json``."""

    def unsupported(self, precision: str) -> str:
        """Why ``precision`` cannot run here ('' when it can)."""

    def gemm(self, shape: GemmShape) -> Op:
        """Allocate operands; return one call of the GEMM."""

    def conv(self, shape: ConvShape) -> Op:
        """Allocate input and filters (channels-last); return one call of the convolution."""

    def copy(self, nbytes: int) -> Op:
        """Device-to-device copy of an ``nbytes`` buffer (reads and writes ``nbytes`` each)."""

    def read(self, nbytes: int) -> Op:
        """A reduction that reads an ``nbytes`` buffer once."""

    def tiny(self) -> Op:
        """The smallest kernel (one element)."""

    def free_bytes(self) -> int:
        """Device memory free now."""

    def release(self) -> None:
        """Drop the buffers of earlier ops."""

    def graph(self, op: Op, calls: int) -> Callable[[], float]:
        """Capture ``calls`` back-to-back calls in a CUDA graph; return a timed replay (s)."""

    def eager(self, op: Op, calls: int) -> float:
        """Seconds for ``calls`` back-to-back calls launched one by one, until all finished."""

    def round_trip(self, op: Op) -> float:
        """Seconds for one call plus a synchronisation, seen from the host."""

    def telemetry(self) -> tuple[float, float]:
        """(SM clock MHz, board power W) now."""

    def snapshot(self) -> dict[str, str]:
        """nvidia-smi style readings: clocks.sm, clocks.max.sm, clocks.mem, power.draw,
        temperature.gpu, power.limit (strings)."""

    def energy_j(self) -> float:
        """The board's total-energy counter, J."""

    def now(self) -> float:
        """Host clock, s."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` with the GPU idle."""

    def sync(self) -> None:
        """Wait until every enqueued call has finished."""
