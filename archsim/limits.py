"""Size limits checked before a run: refuse a layer that would exhaust memory or never finish.

A 1e9 x 1e9 fc layer used to die in a NumPy allocation, and a GEMM of m = n = k = 1e7 on a
systolic array looped for hours. Each layer's work and memory are estimated from its shape
before anything is allocated. The limits are a policy, not a property of the model: raise them
with the environment variables below when the machine has the memory and time.

- ``ARCHSIM_MAX_MEMORY_BYTES`` (default 8 GiB): tensors a model materialises for one layer.
- ``ARCHSIM_MAX_CYCLES`` (default 1e12): ideal cycles of one layer (dense MACs / peak MACs per
  cycle; 1e12 cycles are 1,000 s at 1 GHz).
- ``ARCHSIM_MAX_FOLDS`` (default 1e6): systolic-array folds of one run, all layers together
  (each planned and pipelined one by one, 13,000-30,000 a second: a 1 x 1 array ran AlexNet's
  2.3e6 folds for 82 s; VGG-16 on a 32 x 32 array needs 13,296, ResNet-50 at batch 128 1.3e6,
  about 100 s, and needs the limit raised).
- ``ARCHSIM_MAX_LAYERS`` (default 100,000): layers of one workload, counted after a SCALE-Sim
  depth-wise layer is expanded into one layer per channel (20,000 small GEMMs on a GPU take
  about 2.5 minutes).
- ``ARCHSIM_MAX_TRACE_VALUES`` (default 1e9): values in one layer's ``--trace`` SRAM demand
  trace (demand cycles x columns; 1e9 are about 1.8 GB of gzip CSV and 60 s of writing).
- ``ARCHSIM_MAX_REDUCTION`` (default 2**28): reduction length (K) of one GEMM on a Tensor Core
  GPU, whose k-loop a CTA is timed through step by step (2**30: 11 s, 440 MB).

Tensor Core GPUs are planned analytically per wave, and materialise no tensor beyond the
functional check's bounded sample: only their reduction length is checked.
"""

from __future__ import annotations

import math
import os
from typing import Any

from archsim.errors import ConfigError, SimulationError
from archsim.units import INT64_MAX

__all__ = [
    "refuse_layer",
    "LIMITS",
    "LAYER_KINDS",
    "limit",
    "check_layer_count",
    "check_workload_size",
    "layer_memory_bytes",
    "check_plan_memory",
    "available_memory_bytes",
]

#: layer kinds each cycle-level model runs (checked up front, so that a run with a baseline does
#: not simulate for minutes before the baseline refuses a layer)
LAYER_KINDS: dict[str, tuple[str, ...]] = {
    "eie": ("fc", "lstm"),
    "scnn": ("conv", "fc", "lstm"),
    "dcnn": ("conv",),
    "systolic": ("conv", "gemm", "fc"),
}

#: environment variable -> (default, what it bounds)
LIMITS: dict[str, tuple[float, str]] = {
    "ARCHSIM_MAX_MEMORY_BYTES": (8 * 2**30, "bytes of tensors materialised for one layer"),
    "ARCHSIM_MAX_CYCLES": (1e12, "ideal cycles of one layer"),
    "ARCHSIM_MAX_FOLDS": (1e6, "systolic-array folds of one run"),
    "ARCHSIM_MAX_REDUCTION": (2**28, "reduction length of one GEMM on a GPU"),
    "ARCHSIM_MAX_LAYERS": (100_000, "layers of one workload"),
    # 1.7e7 values/s and 1.8 B/value of gzip CSV (VGG-16 conv2_1 on systolic_32x32_os: 9.7e7
    # values in 5.8 s, 173 MB): about 60 s and 1.8 GB, more often a mistake than a wish
    "ARCHSIM_MAX_TRACE_VALUES": (1e9, "values of one layer's --trace SRAM demand trace"),
}

# bytes per materialised element: float64 values plus the integer/quantised copies the
# datapaths keep (an upper-bound estimate, not an exact count)
#: most points a sweep may have unless the caller raises the limit (``--max-points``); a
#: planned point costs about 1 ms and a few kB before it runs (here, not in ``explore.plan``,
#: so that building the CLI's parser does not import the sweep planner)
DEFAULT_MAX_POINTS = 100_000
#: memory a planned point holds until it has run, an upper estimate: 100,000 random EIE points
#: (two axes) took 291 MB of the planner's peak RSS, 10,000 H100 points on deepbench_gemm 95 MB
PLANNED_POINT_BYTES = 10_000
_BYTES_PER_SPARSE_ENTRY = 32  # row, column (int64), code, value and a sort permutation
_BYTES_PER_DENSE_ELEMENT = 24  # float64 value, fixed-point copy, mask/im2col copy
#: EIE, per non-zero activation and PE: two int32 pointer rows (the column's start and end,
#: ``eie_encode._encode``'s table) and a bypass-candidate flag (``eie_kernels``); a 1e6-input
#: layer on 4096 PEs asked NumPy for 15.3 GiB of pointers after the check let it through
_EIE_BYTES_PER_ITEM_AND_PE = 9


def limit(name: str) -> float:
    """The limit ``name`` from the environment, else its default."""
    default, _ = LIMITS[name]
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(name, "", f"{raw!r} is not a positive number; allowed: e.g. 1e13")
    return value


def _conv_elements(layer: Any, phases: int = 1) -> int:
    """Elements of a conv's inputs, weights and outputs; ``phases``: the inputs and weights
    held ``phases`` times over (SCNN's stride-phase split: stride^2 virtual channels)."""
    inputs = layer.n * layer.c * layer.h * layer.w * phases
    weights = layer.k * (layer.c // layer.groups) * layer.r * layer.s * phases
    outputs = layer.n * layer.k * max(layer.out_h, 1) * max(layer.out_w, 1)
    return inputs + weights + outputs


def _as_run(accelerator: str, layer: Any) -> Any:
    """``layer`` as ``accelerator`` runs it: a systolic array runs an fc as its dense GEMM."""
    if accelerator == "systolic" and layer.kind == "fc":
        return layer.as_gemm() or layer
    return layer


def layer_memory_bytes(accelerator: str, layer: Any, pes: int = 1) -> int:
    """Estimated bytes of the tensors ``accelerator``'s model materialises for ``layer``;
    ``pes``: an EIE's PE count (its per-PE tables grow with it)."""
    layer = _as_run(accelerator, layer)
    kind = layer.kind
    if kind in ("fc", "lstm"):
        shape = layer.matrix_shape
        if shape is None or layer.data is not None:  # read from files: bounded by them
            return 0
        rows, cols = shape
        nnz = math.ceil(rows * cols * layer.weight_density)
        out = _BYTES_PER_SPARSE_ENTRY * nnz + _BYTES_PER_DENSE_ELEMENT * (rows + cols)
        if accelerator == "eie":  # per broadcast activation, a row of every PE's tables
            items = math.ceil(cols * (layer.activation_density or 1.0)) + 1
            out += _EIE_BYTES_PER_ITEM_AND_PE * items * pes
        return out
    if kind == "conv":
        if accelerator == "systolic":  # im2col of every image and the output, of one group
            # (the model runs one group's GEMM and repeats it: a depthwise layer of 1e5 groups
            # was refused for 2.16e12 bytes)
            g = layer.groups
            m = layer.n * layer.out_h * layer.out_w
            k, n = (layer.c // g) * layer.r * layer.s, layer.k // g
            return _BYTES_PER_DENSE_ELEMENT * (m * k + k * n + m * n)
        phases = layer.stride**2 if accelerator == "scnn" else 1
        return _BYTES_PER_DENSE_ELEMENT * _conv_elements(layer, phases)
    if kind == "gemm":
        m, n, k = layer.m, layer.n, layer.k
        return _BYTES_PER_DENSE_ELEMENT * (m * k + k * n + m * n)
    return 0


def _macs_dense(layer: Any) -> int:
    if layer.kind in ("fc", "lstm"):
        shape = layer.matrix_shape
        return 0 if shape is None else shape[0] * shape[1] * layer.batch
    return int(layer.macs_dense)


def _folds(hw: Any, layer: Any) -> int:
    from archsim.accelerators.systolic import layer_gemms
    from archsim.datapath.systolic_folds import fold_counts

    g = layer_gemms(layer, hw.timing_model == "scalesim")
    rf, cf = fold_counts(hw.array.dataflow, hw.array.rows, hw.array.cols, g.m, g.n, g.k)
    return rf * cf * g.repeat


def refuse_layer(
    origin: str, index: int, layer: Any, what: str, need: float, env: str, exact: bool = False
) -> None:
    """Raise ``SimulationError`` when layer ``index`` needs more ``what`` than ``env`` allows;
    ``exact``: ``need`` is a count, not an estimate, said to the unit (a K one past the cap
    read 'about 2.68e+08; allowed: up to 2.68e+08')."""
    cap = limit(env)
    if need > cap:
        exact = exact and isinstance(need, int) and need < 10**15
        try:
            about = f"{need:,}" if exact else f"about {need:.3g}"
        except OverflowError:  # an integer beyond any float
            about = f"a {len(str(int(need)))}-digit number of"
        most = f"{int(cap):,}" if exact and float(cap).is_integer() else f"{cap:.3g}"
        raise SimulationError(
            f"{origin}: layers.{index}: layer {layer.name!r} needs {about} {what}; "
            f"allowed: up to {most} (set {env} to raise it if the machine can take it)"
        )


def check_layer_count(origin: str, layers: int) -> None:
    """Raise ``SimulationError`` when a workload of ``layers`` layers is over
    ``ARCHSIM_MAX_LAYERS``; ``origin`` says where (file and field)."""
    cap = limit("ARCHSIM_MAX_LAYERS")
    if layers > cap:
        raise SimulationError(
            f"{origin}: {layers} layers; allowed: up to {cap:.0f} (set "
            "ARCHSIM_MAX_LAYERS to raise it if the machine can take it)"
        )


def check_layer_kinds(hw: Any, workload: Any) -> None:
    """Raise ``SimulationError`` naming the first layer of a kind ``hw``'s accelerator does
    not run (a conv on EIE); a sweep checks this once, before any point runs."""
    kinds = LAYER_KINDS.get(hw.accelerator)
    for i, layer in enumerate(workload.layers):
        if kinds is not None and layer.kind not in kinds:
            raise SimulationError(
                f"{workload.origin}: layers.{i}.kind: {hw.name} ({hw.accelerator}) runs "
                f"{' and '.join(kinds)} layers, not layer {layer.name!r} of kind "
                f"{layer.kind!r}; allowed: {', '.join(kinds)}"
            )


def check_workload_size(hw: Any, workload: Any) -> None:
    """Raise ``SimulationError`` naming the first layer over a limit (see the module doc)."""
    acc = hw.accelerator
    check_layer_count(f"{workload.origin}: layers", len(workload.layers))
    if acc == "tensor_core":
        _check_gpu_precisions(hw, workload)
        _check_gpu_layers(workload)
        return
    peak = max(int(hw.peak_macs_per_cycle), 1)
    check_layer_kinds(hw, workload)
    folds: dict[str, int] = {}
    for i, layer in enumerate(workload.layers):
        origin = workload.origin
        if layer.kind not in ("fc", "lstm", "conv", "gemm"):
            continue
        pes = hw.pe_array.num_pes if acc == "eie" else 1
        refuse_layer(origin, i, layer, "bytes of memory", layer_memory_bytes(acc, layer, pes),
                     "ARCHSIM_MAX_MEMORY_BYTES")  # fmt: skip
        refuse_layer(origin, i, layer, "cycles", _macs_dense(layer) / peak, "ARCHSIM_MAX_CYCLES")
        layer = _as_run(acc, layer)
        if acc == "systolic" and layer.kind in ("conv", "gemm"):
            folds[layer.name] = _folds(hw, layer)
            refuse_layer(origin, i, layer, "folds", folds[layer.name], "ARCHSIM_MAX_FOLDS")
    _check_run_folds(workload.origin, folds)


def _check_run_folds(origin: str, folds: dict[str, int]) -> None:
    """Raise ``SimulationError`` when a systolic run's layers together need more folds than
    ``ARCHSIM_MAX_FOLDS`` (each within it: five AlexNet layers on a 1 x 1 array ran 82 s)."""
    cap, total = limit("ARCHSIM_MAX_FOLDS"), sum(folds.values())
    if total > cap:
        name = max(folds, key=folds.__getitem__)
        raise SimulationError(
            f"{origin}: layers: the run needs about {total:.3g} systolic-array folds (layer "
            f"{name!r} {folds[name]:.3g}); allowed: up to {cap:.3g} in one run (set "
            "ARCHSIM_MAX_FOLDS to raise it if the machine can take it)"
        )


def _reduction(layer: Any) -> int:
    """Reduction length K of a layer's GEMM (0 where there is none)."""
    if layer.kind == "gemm":
        return int(layer.k)
    if layer.kind == "conv":
        return (layer.c // layer.groups) * layer.r * layer.s
    shape = getattr(layer, "matrix_shape", None)
    return 0 if shape is None else int(shape[1])


def _check_gpu_precisions(hw: Any, workload: Any) -> None:
    """A precision the GPU preset lacks (FP8 on a V100), named by file and field before any
    layer runs (the GEMM model's own check names only the layer)."""
    from archsim.config.gpu_family import rate_key

    rates = hw.tensor_cores.precision_rate
    for i, layer in enumerate(workload.layers):
        precision = getattr(layer, "precision", None)
        if precision in (None, "fp32") or rate_key(precision) in rates:
            continue
        allowed = ", ".join([*rates, "fp32 (CUDA cores)"])
        raise SimulationError(
            f"{workload.origin}: layers.{i}.precision: layer {layer.name!r}: precision "
            f"{precision!r} is not supported by {hw.name}; allowed: {allowed}"
        )


def _check_gpu_layers(workload: Any) -> None:
    """The reduction length, and multiply-adds that 64-bit results hold: a GPU plans a layer
    per wave analytically, so a batch of 10^10 runs (cycles are not bounded); what overflows
    the model's 64-bit arithmetic otherwise is refused per layer as it runs
    (``gpu_run.layer_in_range``)."""
    for i, layer in enumerate(workload.layers):
        if layer.kind not in ("fc", "lstm", "conv", "gemm"):
            continue
        refuse_layer(workload.origin, i, layer, "multiply-adds per output (K)",
                     _reduction(layer), "ARCHSIM_MAX_REDUCTION", exact=True)  # fmt: skip
        macs = _macs_dense(layer)
        if macs > INT64_MAX:  # results.json could not hold its counts (--batch 1e20)
            raise SimulationError(
                f"{workload.origin}: layers.{i}: layer {layer.name!r} needs about {macs:.3g} "
                f"multiply-adds, past 64-bit results ({INT64_MAX:,}); allowed: a smaller layer "
                "or batch"
            )


def available_memory_bytes() -> int | None:
    """Memory the system can give a process now without swapping (Linux ``MemAvailable``);
    None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_plan_memory(source: str, field: str, points: int) -> None:
    """Refuse a sweep whose ``points`` could not be held in memory while it is planned
    (``--max-points 100000000`` with ``samples: 100000000`` ran out of memory after 50 s)."""
    need, have = points * PLANNED_POINT_BYTES, available_memory_bytes()
    if have is None or need <= have:
        return
    raise ConfigError(
        source,
        field,
        f"{points:,} points need about {need / 1e9:,.1f} GB of memory to plan (about "
        f"{PLANNED_POINT_BYTES // 1000} kB each) and {have / 1e9:,.1f} GB is available; "
        "allowed: fewer points (fewer values, samples or seeds, or the sweep split in parts)",
    )
