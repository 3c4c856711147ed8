"""The probe on a real NVIDIA GPU: PyTorch kernels, CUDA graphs and events, NVML readings.

The only module of archsim that imports ``torch`` and ``pynvml`` (the ``[probe]`` extra). The
kernels are those of ``shared/data/h100/README.md``: ``torch.mm(A, B, out=C)`` on ``randn``
operands (tf32: FP32 with TF32 math allowed; fp32: TF32 off), ``torch._scaled_mm`` with e4m3
operands, B column-major, scale 1, bf16 output (fp8), ``torch._int_mm`` (int8);
``conv2d`` in fp16, channels-last, ``cudnn.benchmark`` on; ``y.copy_(x)``; ``torch.sum(x)``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from archsim.measure.backend import (
    INSTALL_HINT,
    BackendUnavailable,
    ConvShape,
    GemmShape,
    Op,
)

__all__ = ["TorchBackend"]


def _imports() -> tuple[Any, Any]:
    try:
        import torch
    except ImportError:
        raise BackendUnavailable(
            f"probe gpu: PyTorch is not installed; install it with: {INSTALL_HINT}"
        ) from None
    try:
        import pynvml
    except ImportError:
        raise BackendUnavailable(
            f"probe gpu: the NVML bindings (nvidia-ml-py) are not installed; install them with: "
            f"{INSTALL_HINT}"
        ) from None
    return torch, pynvml


class TorchBackend:
    """:class:`archsim.measure.backend.Backend` on the current CUDA device."""

    def __init__(self, torch: Any, nvml: Any, handle: Any) -> None:
        self.torch, self.nvml, self.handle = torch, nvml, handle
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.idle_mhz = float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
        torch.backends.cudnn.benchmark = True

    @classmethod
    def open(cls) -> TorchBackend:
        """Check PyTorch, CUDA and NVML; one-line :class:`BackendUnavailable` otherwise."""
        torch, nvml = _imports()
        if not torch.cuda.is_available():
            raise BackendUnavailable(
                f"probe gpu: no CUDA GPU visible to PyTorch {torch.__version__} (CUDA build: "
                f"{torch.version.cuda}); the probe needs an NVIDIA GPU and a CUDA build of "
                f"PyTorch ({INSTALL_HINT})"
            )
        try:
            nvml.nvmlInit()
            handle = cls._handle(torch, nvml)
        except nvml.NVMLError as exc:
            raise BackendUnavailable(
                f"probe gpu: NVML did not start ({exc}); the probe needs the NVIDIA driver's "
                "NVML library for clocks, power and energy"
            ) from None
        return cls(torch, nvml, handle)

    @staticmethod
    def _handle(torch: Any, nvml: Any) -> Any:
        """NVML handle of the device PyTorch uses (by PCI address; index as a fallback)."""
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        try:
            bus = f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
            return nvml.nvmlDeviceGetHandleByPciBusId(bus)
        except (AttributeError, nvml.NVMLError):
            return nvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())

    # device ------------------------------------------------------------------------------
    def device_info(self) -> dict[str, Any]:
        t, n, h = self.torch, self.nvml, self.handle
        p = t.cuda.get_device_properties(self.device)
        max_mhz = n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM)
        driver = n.nvmlSystemGetDriverVersion()
        return {
            "name": p.name,
            "sms": p.multi_processor_count,
            "total_memory": p.total_memory,
            "torch": t.__version__,
            "cuda": t.version.cuda,
            "cudnn": t.backends.cudnn.version(),
            "L2_cache_size": getattr(p, "L2_cache_size", None),
            "clock_rate": max_mhz * 1000,
            "memory_clock_rate": n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_MEM) * 1000,
            "memory_bus_width": n.nvmlDeviceGetMemoryBusWidth(h),
            "power_limit_w": n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000,
            "max_sm_clock_mhz": max_mhz,
            "idle_sm_clock_mhz": self.idle_mhz,
            "driver": driver.decode() if isinstance(driver, bytes) else driver,
        }

    def unsupported(self, precision: str) -> str:
        t = self.torch
        major, minor = t.cuda.get_device_capability(self.device)
        if precision == "fp8" and ((major, minor) < (8, 9) or not hasattr(t, "_scaled_mm")):
            return (
                f"FP8 needs compute capability >= 8.9 and torch._scaled_mm (have {major}.{minor})"
            )
        if precision == "int8" and not hasattr(t, "_int_mm"):
            return "this PyTorch has no torch._int_mm"
        if precision == "bf16" and not t.cuda.is_bf16_supported():
            return "this GPU has no bf16"
        return ""

    def free_bytes(self) -> int:
        return int(self.torch.cuda.mem_get_info(self.device)[0])

    def release(self) -> None:
        gc.collect()
        self.torch.cuda.empty_cache()

    # kernels -----------------------------------------------------------------------------
    def _operand(self, rows: int, cols: int, stored: str, want: str, dtype: Any, zeros: bool):
        """A ``rows x cols`` matrix stored as ``stored`` (the transposed view of it if not
        ``want``)."""
        t = self.torch
        shape = (rows, cols) if stored == want else (cols, rows)
        make = t.zeros if zeros else t.randn
        x = make(shape, device=self.device, dtype=t.float32).to(dtype)
        return x if stored == want else x.t()

    def gemm(self, shape: GemmShape) -> Op:
        t, g = self.torch, shape
        dtype = {"fp16": t.float16, "bf16": t.bfloat16, "tf32": t.float32, "fp32": t.float32,
                 "fp8": getattr(t, "float8_e4m3fn", None), "int8": t.int8}[g.precision]  # fmt: skip
        if g.precision == "int8":
            make = t.zeros if g.zeros else (lambda s, **kw: t.randint(-128, 128, s, **kw))
            a0 = make((g.m, g.k) if g.a_stored == "m x k" else (g.k, g.m), device=self.device,
                      dtype=t.int8)  # fmt: skip
            b0 = make((g.k, g.n) if g.b_stored == "k x n" else (g.n, g.k), device=self.device,
                      dtype=t.int8)  # fmt: skip
            a = a0 if g.a_stored == "m x k" else a0.t()
            b = b0 if g.b_stored == "k x n" else b0.t()
            return lambda: t._int_mm(a, b)
        a = self._operand(g.m, g.k, g.a_stored, "m x k", dtype, g.zeros)
        b = self._operand(g.k, g.n, g.b_stored, "k x n", dtype, g.zeros)
        if g.precision == "fp8":
            one = t.ones((), device=self.device, dtype=t.float32)
            return lambda: t._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=t.bfloat16)
        c = t.empty((g.m, g.n), device=self.device, dtype=dtype)
        tf32 = g.precision == "tf32"

        def call() -> None:
            t.backends.cuda.matmul.allow_tf32 = tf32
            t.mm(a, b, out=c)

        return call

    def conv(self, shape: ConvShape) -> Op:
        t, c = self.torch, shape
        cl = t.channels_last
        x = t.randn((c.n, c.c, c.h, c.w), device=self.device, dtype=t.float16).to(memory_format=cl)
        w = t.randn((c.k, c.c // c.groups, c.r, c.s), device=self.device, dtype=t.float16)
        w = w.to(memory_format=cl)
        conv2d = t.nn.functional.conv2d
        return lambda: conv2d(x, w, None, c.stride, c.pad, 1, c.groups)

    def copy(self, nbytes: int) -> Op:
        x = self.torch.empty(nbytes, device=self.device, dtype=self.torch.uint8)
        y = self.torch.empty_like(x)
        return lambda: y.copy_(x)

    def read(self, nbytes: int) -> Op:
        x = self.torch.ones(nbytes // 4, device=self.device, dtype=self.torch.float32)
        return lambda: self.torch.sum(x)

    def tiny(self) -> Op:
        x = self.torch.zeros(1, device=self.device)
        return lambda: x.add_(1.0)

    # timers ------------------------------------------------------------------------------
    def _events(self) -> tuple[Any, Any]:
        e = self.torch.cuda.Event
        return e(enable_timing=True), e(enable_timing=True)

    def graph(self, op: Op, calls: int) -> Callable[[], float]:
        t = self.torch
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):
            for _ in range(3):  # warm-up on a side stream, as capture requires
                op()
        t.cuda.current_stream().wait_stream(side)
        g = t.cuda.CUDAGraph()
        with t.cuda.graph(g):
            for _ in range(calls):
                op()
        t.cuda.synchronize()

        def replay() -> float:
            start, end = self._events()
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3

        return replay

    def eager(self, op: Op, calls: int) -> float:
        start, end = self._events()
        self.torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            op()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def round_trip(self, op: Op) -> float:
        self.torch.cuda.synchronize()
        t0 = time.perf_counter()
        op()
        self.torch.cuda.synchronize()
        return time.perf_counter() - t0

    def sync(self) -> None:
        self.torch.cuda.synchronize()

    # readings ----------------------------------------------------------------------------
    def telemetry(self) -> tuple[float, float]:
        n, h = self.nvml, self.handle
        return (
            float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
            n.nvmlDeviceGetPowerUsage(h) / 1000.0,
        )

    def snapshot(self) -> dict[str, str]:
        n, h = self.nvml, self.handle
        return {
            "clocks.sm": str(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
            "clocks.max.sm": str(n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM)),
            "clocks.mem": str(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
            "power.draw": f"{n.nvmlDeviceGetPowerUsage(h) / 1000.0:.2f}",
            "temperature.gpu": str(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
            "power.limit": f"{n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0:.2f}",
        }

    def energy_j(self) -> float:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1000.0

    def now(self) -> float:
        return time.perf_counter()

    def sleep(self, seconds: float) -> None:
        self.torch.cuda.synchronize()
        time.sleep(seconds)
