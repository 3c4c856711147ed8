"""A measurement folder's eager device copies against the model's memory kernels.

``device_memory_energy.json`` ``memory_eager`` holds ``copy_<n>MB`` (``y.copy_(x)``: ``n`` MB
read and written, ``bytes_moved`` both together) and ``read_<n>MB`` (``torch.sum``) timed call
after call from Python, so each row tests three parts of the model at once: the eager launch
floor (``launch.eager_s``, the host's interval between two launches), what stays resident in
L2 between calls (``l2.resident_capacity_bytes``) and the achievable HBM rate
(``hbm_achievable_fraction``). A copy is the streaming kernel ``gpu_conv.memory_cycles``
times (the conv algorithms' transforms and transposes); ``torch.sum`` is a reduction whose
host cost per call is above a tiny kernel's, so its rows are listed, not compared.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from archsim.accelerators.gpu_conv import MemoryStep, memory_cycles
from archsim.config.gpu import GpuConfig

__all__ = ["copy_energy", "format_memory", "memory_rows"]

_ENTRY = re.compile(r"^(copy|read)_([0-9]+)MB$")
_COPY_ENERGY = re.compile(r"^hbm_copy_\d+[MG]B$")

#: what an ``hbm_copy`` energy row checks (the h100 preset's SM-active energy per cycle is
#: that row's residual: a consistency check of the time and the prices, not a prediction)
COPY_NOTE = "h100.yaml derives power.sm_active_energy_pj_per_cycle from this row"

#: why the ``read_*`` rows are not compared
READ_REASON = "a torch.sum reduction, not a streaming copy (its host cost is not modelled)"


def _copy(name: str, moved: int) -> MemoryStep:
    """A device copy that moves ``moved`` bytes: half of them read, half written."""
    return MemoryStep(name, moved // 2, moved - moved // 2)


def memory_rows(hw: GpuConfig, memory_eager: dict[str, Any]) -> pd.DataFrame:
    """One row per ``copy_*`` / ``read_*`` entry: bytes moved, measured and eager-mode model
    time (copies only; ``reason`` says why a row is not compared), error."""
    eager = hw.with_overrides({"launch.mode": "eager"})
    clock = eager.clock.frequency_hz
    recs = []
    for key, entry in memory_eager.items():
        match = _ENTRY.match(key)
        if match is None or not isinstance(entry, dict) or "time_s" not in entry:
            continue
        if len(match.group(2)) > 9:  # a name past a petabyte: not a copy of a real device
            continue
        kind, mb = match.group(1), int(match.group(2))
        moved = int(entry.get("bytes_moved", entry.get("bytes", mb << 20)))
        rec = {"entry": key, "kind": kind, "bytes_moved": moved, "time_s": entry["time_s"],
               "sim_time_s": math.nan, "error": math.nan, "reason": ""}  # fmt: skip
        if kind == "copy":
            rec["sim_time_s"] = memory_cycles(eager, _copy(key, moved)) / clock
            rec["error"] = rec["sim_time_s"] / rec["time_s"] - 1.0
        else:
            rec["reason"] = READ_REASON
        recs.append(rec)
    out = pd.DataFrame(recs)
    out.attrs["model"] = (
        f"launch floor {eager.min_kernel_s * 1e6:.2f} us, L2-resident up to "
        f"{hw.l2.kept_bytes / 2**20:.0f} MB moved, else "
        f"HBM at {hw.hbm_achievable_fraction:.3f} of peak"
    )
    return out


def copy_energy(hw: GpuConfig, key: str, entry: dict[str, Any]) -> dict[str, Any] | None:
    """The model's energy per call, board W and clock of an ``energy`` entry
    ``hbm_copy_<n>GB`` (``bytes_per_call`` read and written together, back to back for ~4 s):
    a streaming memory kernel at its steady clock (``gpu_power.solve_memory_clock``); None for
    any other entry; a ``reason`` when the preset has no power block."""
    if _COPY_ENERGY.match(key) is None:
        return None
    if not isinstance(entry.get("bytes_per_call"), int | float):
        return {"reason": "no bytes_per_call (the bytes one call moves, read + write)"}
    if hw.power is None:
        return {"reason": f"{hw.name} has no power block: no board power to compare"}
    from archsim.accelerators.gpu_power import solve_memory_clock
    from archsim.energy.pricing_gpu import board_price_list

    copy = _copy(key, int(entry["bytes_per_call"]))
    f, seconds, watts, _ = solve_memory_clock(hw, copy, board_price_list(hw).energy_pj)
    out = {"sim_energy_j": watts * seconds, "sim_power_w": watts, "sim_clock_hz": f}
    if hw.name == "h100":  # the preset whose SM-active energy comes from such a row
        out["note"] = COPY_NOTE
    return out


def format_memory(rows: pd.DataFrame) -> list[str]:
    """The rows as text lines (empty without rows), with the median |error| of the copies."""
    if rows.empty:
        return []
    lines = [
        "",
        f"device copies, timed eagerly (y.copy_(x); the model: {rows.attrs.get('model', '')}):",
        f"  {'entry':<14}{'MB moved':>10}{'meas us':>10}{'sim us':>10}{'error':>9}",
    ]
    done = rows[rows["reason"] == ""]
    for _, r in done.iterrows():
        err = f"{100 * r['error']:+.1f}%"
        lines.append(
            f"  {r['entry']:<14}{r['bytes_moved'] / 2**20:>10.0f}{r['time_s'] * 1e6:>10.2f}"
            f"{r['sim_time_s'] * 1e6:>10.2f}{err:>9}"
        )
    if len(done):
        med = 100 * done["error"].abs().median()
        lines.append(f"  copies: median |error| {med:.1f}% over {len(done)} rows")
    for reason, block in rows[rows["reason"] != ""].groupby("reason", sort=False):
        lines.append(f"  not compared: {', '.join(block['entry'])}: {reason}")
    return lines
