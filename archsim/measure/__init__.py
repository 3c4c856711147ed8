"""Measured silicon: the probe that times a real GPU and the measurement-folder format.

``folder`` reads, checks and writes a folder like ``shared/data/h100``; ``probe`` (with the
shapes of ``plan``) measures one through a ``backend``: ``torch_backend`` (PyTorch + NVML, the
``[probe]`` extra, imported only when used) or ``fake`` (deterministic, for tests).
"""

from __future__ import annotations

from archsim.measure.folder import MeasuredFolder, MeasurementError, read_folder, write_folder

__all__ = ["MeasuredFolder", "MeasurementError", "read_folder", "write_folder"]
