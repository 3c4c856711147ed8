"""Is the measured GPU the part the config describes? The folder's device block against the config.

``archsim probe gpu`` records the device it ran on (``device`` in ``device_memory_energy.json``:
SMs, L2 size, memory clock and bus width, memory size, power limit, maximum SM clock). Held
against a config of another part (an H200's folder against the ``h100`` preset, say), every
memory-bound row would be off for a reason no model change should chase; :func:`device_notes`
says so in one line, with the ``--set`` overrides that would describe the measured part.
"""

from __future__ import annotations

import math
from typing import Any

from archsim.config.base import get_dotted

__all__ = ["device_notes", "measured_spec"]

#: relative difference from which a field counts as another part's
TOLERANCE = 0.05


def _positive(value: Any) -> float | None:
    """``value`` as a positive finite number, else None (a field a folder may lack or garble)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def measured_spec(device: dict[str, Any]) -> dict[str, float]:
    """Config paths -> the measured device's values (those the device block states).

    HBM bandwidth: the maximum memory clock (NVML, kHz) x 2 transfers per clock x the bus width
    (bits) / 8, as the datasheets' peaks are (H100 SXM: 2619 MHz x 2 x 5120 / 8 = 3.352 TB/s).
    """
    out: dict[str, float] = {}
    pairs = (("sms", "sms"), ("l2.size_bytes", "L2_cache_size"),
             ("hbm_capacity_bytes", "total_memory"), ("tdp_w", "power_limit_w"))  # fmt: skip
    for path, key in pairs:
        value = _positive(device.get(key))
        if value is not None:
            out[path] = value
    clock = _positive(device.get("memory_clock_rate"))
    width = _positive(device.get("memory_bus_width"))
    if clock is not None and width is not None:
        out["hbm.bandwidth_bytes_per_s"] = clock * 1e3 * 2 * width / 8
    mhz = _positive(device.get("max_sm_clock_mhz"))
    if mhz is not None:
        out["power.max_clock_hz"] = mhz * 1e6
    return out


def _human(path: str, value: float) -> str:
    """``value`` of config field ``path`` in the unit a reader expects."""
    if path.endswith("bytes_per_s"):
        return f"{value / 1e12:.3g} TB/s"
    if path.endswith("bytes"):
        return f"{value / 1e9:.3g} GB" if value >= 1e9 else f"{value / 2**20:.3g} MiB"
    if path.endswith("clock_hz"):
        return f"{value / 1e6:.0f} MHz"
    return f"{value:g} W" if path == "tdp_w" else f"{value:g}"


def _shown(path: str, value: float) -> str:
    whole = path in ("sms", "l2.size_bytes", "hbm_capacity_bytes")
    return f"{path}={int(round(value))}" if whole else f"{path}={value:.4g}"


def device_notes(hw: Any, device: dict[str, Any]) -> list[str]:
    """One note when the measured device differs from ``hw`` by more than 5 % in a field both
    state (a driver keeps ~1 % of the memory back), naming each field and the ``--set`` that
    would match it; none otherwise."""
    differ = []
    for path, measured in measured_spec(device).items():
        config = _positive(get_dotted(hw, path))
        if config is None or abs(measured / config - 1) <= TOLERANCE:
            continue
        differ.append((path, measured, config))
    if not differ:
        return []
    fields = "; ".join(
        f"{p} {_human(p, m)} measured, {_human(p, c)} in {hw.name}" for p, m, c in differ
    )
    sets = " ".join(f"--set {_shown(p, m)}" for p, m, _ in differ)
    name = device.get("name", "the measured GPU")
    return [
        f"the folder's device ({name}) is not the part {hw.name} describes: {fields}; every "
        f"row that depends on them compares two parts. To hold it against a config of this "
        f"part: {sets}"
    ]
