"""Pick a probe backend by name (kept apart from ``backend``, which the backends import)."""

from __future__ import annotations

from archsim.errors import ArchsimError
from archsim.measure.backend import Backend

__all__ = ["load_backend"]


def load_backend(name: str) -> Backend:
    """``"torch"`` (PyTorch + NVML on the first CUDA GPU) or ``"fake"`` (tests)."""
    if name == "fake":
        from archsim.measure.fake import FakeBackend

        return FakeBackend()
    if name == "torch":
        from archsim.measure.torch_backend import TorchBackend

        return TorchBackend.open()
    raise ArchsimError(f"--backend: {name!r} is not valid; allowed: torch, fake")
