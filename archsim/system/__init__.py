"""Many GPUs: systems (topology as data), NCCL collectives, data-parallel training steps."""

from __future__ import annotations

from pathlib import Path

from archsim.config.base import ArchsimModel
from archsim.config.io import load_hardware
from archsim.config.system import SystemConfig
from archsim.errors import ConfigError

__all__ = ["load_system"]


def load_system(name_or_path: str | Path | SystemConfig) -> SystemConfig:
    """Load a multi-GPU system from a preset name (``"dgx_h100"``) or a YAML path."""
    cfg: ArchsimModel = load_hardware(name_or_path)
    if not isinstance(cfg, SystemConfig):
        raise ConfigError(
            str(name_or_path),
            "accelerator",
            f"{getattr(cfg, 'name', name_or_path)!r} is a single accelerator, not a multi-GPU "
            "system; allowed: a system preset (dgx1_v100, dgx_a100, dgx_h100, pcie4_v100, "
            "pcie8_v100) or a YAML file with accelerator: system",
        )
    return cfg
