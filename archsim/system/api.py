"""Public entry points of the multi-GPU model: ``collective`` (nccl-tests table) and sizes."""

from __future__ import annotations

import math
import numbers
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.config.system import SystemConfig
from archsim.errors import ArchsimError, SimulationError, integral, is_count, shown_name
from archsim.system import load_system
from archsim.system.collectives import bus_factor, collective_time
from archsim.system.subsystem import gpu_config, subsystem

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLLECTIVE_COLUMNS", "collective", "parse_size", "size_range", "train_sweep"]

#: nccl-tests' table, plus the algorithm and protocol NCCL's tuning picks
COLLECTIVE_COLUMNS = (
    "size_bytes", "count", "type", "time_us", "algbw_gb_s", "busbw_gb_s", "algorithm",
    "protocol", "channels", "gpus", "nodes", "energy_j",
)  # fmt: skip

#: nccl-tests' name of the element type of each size (``-d``: int8, half, float, double)
_DTYPE_NAMES = {1: "int8", 2: "half", 4: "float", 8: "double"}

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*([0-9]+)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)
_MAX_POINTS = 10_000


def parse_size(text: str) -> int:
    """``"8"``, ``"64K"``, ``"8G"`` (powers of 1024, as nccl-tests reads them) -> bytes."""
    m = _SIZE.match(str(text))
    if not m:
        raise ArchsimError(
            f"size {shown_name(str(text))!r} is not a byte count; allowed: an integer with an "
            "optional K, M, G or T suffix (powers of 1024), e.g. 8, 64K, 8G"
        )
    digits = m.group(1).lstrip("0")  # int() refuses past 4,300 digits: count them first
    size = int(digits or "0") * _UNITS[m.group(2).upper()] if len(digits) <= 20 else None
    if size is None or size > MAX_SIZE_BYTES:
        raise ArchsimError(
            f"size {shown_name(str(text))!r} is too large; allowed: up to {MAX_SIZE_BYTES} "
            "bytes (1024T: far beyond any GPU's memory)"
        )
    return size


def _size_list(sizes: Any) -> list[int]:
    """``sizes`` given as byte counts: whole numbers from 1 to ``MAX_SIZE_BYTES``."""
    if isinstance(sizes, numbers.Real):
        sizes = [sizes]
    try:
        values = list(sizes)
    except TypeError:
        raise ArchsimError(
            f"sizes {shown_name(repr(sizes))}; allowed: a list of byte counts or MIN:MAX[:FACTOR]"
        ) from None
    out = []
    for v in values:
        ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
        if not ok or v != int(v) or not 1 <= v <= MAX_SIZE_BYTES:
            raise ArchsimError(
                f"size {shown_name(repr(v))}; allowed: whole byte counts from 1 to {MAX_SIZE_BYTES}"
            )
        out.append(int(v))
    return out


#: largest collective size, bytes (2**50 = 1024 TiB)
MAX_SIZE_BYTES = 2**50


def size_range(spec: str) -> list[int]:
    """nccl-tests' ``-b MIN -e MAX -f FACTOR`` as ``MIN:MAX[:FACTOR]`` (factor 2 by default)."""
    parts = str(spec).split(":")
    if not 1 <= len(parts) <= 3:
        raise ArchsimError(
            f"sizes {shown_name(str(spec))!r}; allowed: SIZE or MIN:MAX[:FACTOR], e.g. 8:8G:2"
        )
    lo = parse_size(parts[0])
    hi = parse_size(parts[1]) if len(parts) > 1 else lo
    text = parts[2].strip() if len(parts) > 2 else "2"
    # past 20 digits (2^64): at most one point, and int() refuses past 4,300 digits
    digits = text.removeprefix("+")  # int() took "+3"
    factor = int(digits) if digits.isascii() and digits.isdigit() and len(digits) < 20 else 0
    if factor < 2:
        raise ArchsimError(
            f"sizes {shown_name(str(spec))!r}: bad factor; allowed: an integer from 2 to 10^19"
        )
    if lo < 1 or hi < lo:
        raise ArchsimError(
            f"sizes {shown_name(str(spec))!r}: got MIN {lo} and MAX {hi} bytes; allowed: "
            "1 <= MIN <= MAX"
        )
    out = [lo]
    while out[-1] * factor <= hi:
        out.append(out[-1] * factor)
        if len(out) > _MAX_POINTS:
            raise ArchsimError(f"sizes {spec!r}: more than {_MAX_POINTS} sizes")
    return out


def collective(
    system: SystemConfig | str | Path,
    op: str = "all_reduce",
    sizes: list[int] | str = "8:8G",
    gpus: int | None = None,
    algorithm: str | None = None,
    protocol: str | None = None,
    dtype_bytes: int = 4,
) -> pd.DataFrame:
    """One row per size: nccl-tests' columns (size, count, type, time, algbw, busbw) + choice.

    ``sizes`` is a list of byte counts or nccl-tests' ``MIN:MAX[:FACTOR]``; elements are
    ``float`` (4 bytes) as nccl-tests' default, or ``dtype_bytes`` 1, 2 or 8 (``int8``,
    ``half``, ``double``). busbw follows nccl-tests' definitions
    (all-reduce ``2(n-1)/n``, reduce-scatter/all-gather ``(n-1)/n``, broadcast/reduce 1).
    As nccl-tests does, a size is rounded down to whole elements (reduce-scatter and all-gather:
    whole elements per rank, and ``count`` is per rank); a size under one element has no row.
    """
    import pandas as pd

    cfg = subsystem(load_system(system), gpus)
    gpu_config(cfg)  # the GPU it names exists and can run the system's NCCL algorithms
    if cfg.gpus < 2:  # one GPU moves nothing: its algbw would be infinite
        given = f"gpus={gpus!r}" if gpus is not None else f"{cfg.name} has {cfg.gpus} GPU"
        raise ArchsimError(f"{given}: a collective needs 2 GPUs or more; allowed: gpus >= 2")
    sizes = size_range(sizes) if isinstance(sizes, str) else _size_list(sizes)
    dtype_bytes = integral(dtype_bytes)
    if not is_count(dtype_bytes) or dtype_bytes not in _DTYPE_NAMES:
        allowed = ", ".join(f"{n} ({name})" for n, name in _DTYPE_NAMES.items())
        raise SimulationError(f"dtype_bytes {shown_name(repr(dtype_bytes))}; allowed: {allowed}")
    rows: list[dict[str, Any]] = []
    done: set[int] = set()  # rounded sizes with a row
    per_rank = op in ("reduce_scatter", "all_gather")  # nccl-tests' paramcount: count / ranks
    for nbytes in sizes:
        count = nbytes // dtype_bytes // (cfg.gpus if per_rank else 1)
        nbytes = count * (cfg.gpus if per_rank else 1) * dtype_bytes
        if nbytes == 0 or nbytes in done:  # 0 elements, or a size another rounded to
            continue  # already (4, 6, 7 B: one 4-byte row)
        done.add(nbytes)
        c = collective_time(cfg, op, nbytes, algorithm, protocol)
        if not (math.isfinite(c.time_s) and math.isfinite(c.energy_pj(cfg))):
            raise ArchsimError(
                f"{cfg.name}: {op} of {nbytes} bytes: its time or energy overflows; allowed: "
                "nccl and energy fields nearer real parts"
            )
        rows.append(
            {
                "size_bytes": c.bytes,
                "count": count,
                "type": _DTYPE_NAMES[dtype_bytes],
                "time_us": c.time_s * 1e6,
                "algbw_gb_s": c.algbw_bytes_per_s / 1e9,
                "busbw_gb_s": c.algbw_bytes_per_s * bus_factor(op, c.ranks) / 1e9,
                "algorithm": c.algorithm,
                "protocol": c.protocol,
                "channels": c.channels,
                "gpus": cfg.gpus,
                "nodes": cfg.nodes,
                "energy_j": c.energy_pj(cfg) * 1e-12,
            }
        )
    if not rows:
        least = (cfg.gpus if per_rank else 1) * dtype_bytes
        where = f" per rank on {cfg.gpus} GPUs" if per_rank else ""
        raise ArchsimError(
            f"{op}: every size is under one {dtype_bytes}-byte element{where}; allowed: sizes "
            f"of at least {least} bytes"
        )
    frame = pd.DataFrame(rows, columns=list(COLLECTIVE_COLUMNS))
    frame.attrs.update({"system": cfg.name, "op": op})
    return frame


def train_sweep(
    system: SystemConfig | str | Path,
    workload: str | Path,
    axes: dict[str, list[Any]],
    **step: Any,
) -> pd.DataFrame:
    """One training step per point of the grid ``axes`` (first axis slowest): one row each.

    Axes are dotted system fields (``topology.link_kinds.nvlink.nccl_bandwidth_bytes_per_s``,
    ``ddp.bucket_bytes``, ``nccl.algorithm``, ``nodes``) or ``gpus`` / ``precision`` /
    ``batch_per_gpu`` / ``optimizer`` / ``topk_density`` (the :func:`train_step` options);
    ``step`` gives fixed options.
    """
    import itertools

    import pandas as pd

    from archsim.system.training import train_step

    base = load_system(system)
    options = {"gpus", "precision", "batch_per_gpu", "optimizer", "topk_density"}
    names = list(axes)
    rows = []
    for values in itertools.product(*(axes[n] for n in names)):
        point = dict(zip(names, values, strict=True))
        fields = {k: v for k, v in point.items() if k not in options}
        cfg = base.with_overrides(fields, source="axes") if fields else base
        opts = {**step, **{k: v for k, v in point.items() if k in options}}
        s = train_step(cfg, workload, **opts).metadata["train_step"]
        rows.append({**point, **{k: v for k, v in s.items() if k != "timeline"}})
    return pd.DataFrame(rows)
