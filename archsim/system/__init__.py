"""Many GPUs: systems (topology as data), NCCL collectives, data-parallel training steps."""

from __future__ import annotations

from pathlib import Path

from archsim.config.base import ArchsimModel
from archsim.config.io import load_hardware, preset_accelerators
from archsim.config.system import SystemConfig
from archsim.errors import ConfigError, shown_name

__all__ = ["load_system"]


def load_system(name_or_path: str | Path | SystemConfig) -> SystemConfig:
    """Load a multi-GPU system from a preset name (``"dgx_h100"``) or a YAML path."""
    if isinstance(name_or_path, str) and _unknown_name(name_or_path):
        raise ConfigError(
            shown_name(name_or_path), "", f"unknown system preset; allowed: "
            f"{', '.join(_system_presets())}, or a YAML file with accelerator: system"
        )  # fmt: skip
    cfg: ArchsimModel = load_hardware(name_or_path)
    if not isinstance(cfg, SystemConfig):
        raise ConfigError(
            str(name_or_path),
            "accelerator",
            f"{getattr(cfg, 'name', name_or_path)!r} is a single accelerator, not a multi-GPU "
            f"system; allowed: a system preset ({', '.join(_system_presets())}) or a YAML file "
            "with accelerator: system",
        )
    return cfg


def _unknown_name(text: str) -> bool:
    """``text`` is a name (not a path) that no hardware preset has."""
    try:
        path = Path(text).expanduser()
        if path.suffix in (".yaml", ".yml") or "/" in text or path.exists():
            return False
    except (OSError, ValueError):  # a name no file system takes: load_hardware says so
        return False
    return text not in preset_accelerators()


def _system_presets() -> list[str]:
    """The hardware presets that are multi-GPU systems, sorted."""
    return sorted(n for n, acc in preset_accelerators().items() if acc == "system")
