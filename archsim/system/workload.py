"""A network's training work per GPU: forward, data-gradient and weight-gradient passes,
elementwise passes, parameters.

Every MAC-carrying layer (conv, fc, lstm, gemm) has three GEMM shapes (:class:`TrainLayer`):
forward ``Y = X W`` (m = output pixels x batch, n = filters, k = C R S per group), the data
gradient ``dX = dY W^T`` (m, C R S, filters; skipped for the first layer, whose input needs none)
and the weight gradient ``dW = X^T dY`` (C R S, filters, m). Groups are a batch of GEMMs.
:func:`phase_workload` gives them to the GPU model: a conv's forward and data gradient as convs
(cuDNN's algorithms), every other phase as that GEMM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from archsim.config.gpu_conv import ConvLibraryConfig
from archsim.config.workload import ConvLayer, FcLayer, GemmLayer, LstmLayer, WorkloadSpec
from archsim.errors import ConfigError, SimulationError, check_count, shown_value
from archsim.system.conv_phases import dgrad_convs, forward_conv, winograd_wgrad
from archsim.units import INT64_MAX

__all__ = [
    "PRECISIONS",
    "Phases",
    "TrainLayer",
    "gemm_workload",
    "phase_workload",
    "split_tensor",
    "training_layers",
]

#: training precision -> (GEMM operand precision, accumulator, activation bytes, gradient bytes)
PRECISIONS: dict[str, tuple[str, str, int, int]] = {
    "amp_fp16": ("fp16", "fp32", 2, 4),  # autocast fp16, fp32 master weights and gradients
    "amp_bf16": ("bf16", "fp32", 2, 4),
    "tf32": ("tf32", "fp32", 4, 4),
    "fp32": ("fp32", "fp32", 4, 4),
}


@dataclass(frozen=True)
class TrainLayer:
    """One layer's GEMM shapes (m, n, k, batch) per phase, its outputs and its parameters."""

    name: str
    forward: tuple[int, int, int, int]
    dgrad: tuple[int, int, int, int] | None
    wgrad: tuple[int, int, int, int]
    outputs: int  # output activation elements per GPU (for elementwise passes)
    params: int  # trained parameters: weights, biases, batch-norm scale and shift


def _layer(spec: object, batch: int, first: bool) -> TrainLayer:
    if isinstance(spec, ConvLayer):
        g = spec.groups
        m = batch * spec.out_h * spec.out_w
        n = spec.k // g
        k = spec.c // g * spec.r * spec.s
        outputs = batch * spec.k * spec.out_h * spec.out_w
        params = spec.k * (spec.c // g) * spec.r * spec.s
        params += spec.k * (2 * spec.batch_norm + spec.bias)  # BN's gamma and beta, a bias
    elif isinstance(spec, FcLayer | LstmLayer):
        shape = spec.matrix_shape
        if shape is None:
            raise SimulationError(
                f"layer {spec.name!r}: training needs inputs and outputs (a data: folder "
                "gives no shape here); allowed: fc layers with inputs and outputs"
            )
        g, m, (n, k) = 1, batch, shape
        # bias: nn.Linear's b; nn.LSTM's b_ih and b_hh (both of 4 x hidden)
        biases = (2 if isinstance(spec, LstmLayer) else 1) * n if spec.bias else 0
        outputs, params = batch * n, n * k + biases
    elif isinstance(spec, GemmLayer):
        g, m, n, k = spec.batch, spec.m, spec.n, spec.k
        outputs, params = spec.batch * spec.m * spec.n, spec.batch * spec.k * spec.n
    else:  # pragma: no cover - the workload union has no other kinds
        raise SimulationError(f"layer {getattr(spec, 'name', '?')!r}: cannot be trained")
    return TrainLayer(
        name=spec.name,  # type: ignore[attr-defined]
        forward=(m, n, k, g),
        dgrad=None if first else (m, k, n, g),
        wgrad=(k, n, m, g),
        outputs=outputs,
        params=params,
    )


def training_layers(workload: WorkloadSpec, batch_per_gpu: int) -> list[TrainLayer]:
    """The workload's layers at ``batch_per_gpu`` (conv layers: images; fc/lstm: rows)."""
    check_count("batch per GPU", batch_per_gpu)
    out = [_layer(s, batch_per_gpu, i == 0) for i, s in enumerate(workload.layers)]
    for i, tl in enumerate(out):
        counts = (*tl.forward, *tl.wgrad, tl.outputs, tl.params)
        if max(counts) > INT64_MAX:  # beyond the GEMM layer's 64-bit fields
            m, n, k, _ = tl.forward
            raise ConfigError(
                workload.origin, f"layers.{i}", f"{tl.name!r} lowered for training at batch "
                f"{batch_per_gpu} has M = {_size(m)}, N = {_size(n)}, K = {_size(k)}: counts past "
                f"{INT64_MAX:,} (64-bit); allowed: a smaller layer or batch"
            )  # fmt: skip
    return out


def _size(value: int) -> str:
    return shown_value(value) or f"{value:,}"


def _gemm_phase(name: str, shape: tuple[int, int, int, int], prec: str, acc: str) -> dict:
    m, n, k, b = shape
    return {"name": name, "kind": "gemm", "m": m, "n": n, "k": k, "batch": b, "precision": prec,
            "accumulate": acc}  # fmt: skip


def _spec(layers: list[dict], name: str) -> WorkloadSpec:
    return WorkloadSpec.model_validate(
        {"schema_version": 1, "name": name, "source": "archsim training lowering", "layers": layers}
    )


def gemm_workload(layers: list[TrainLayer], precision: str, name: str) -> WorkloadSpec:
    """Every phase's GEMM as a ``gemm`` layer named ``<layer>/<phase>`` (for the GPU model)."""
    prec, acc, _, _ = PRECISIONS[precision]
    out = [
        _gemm_phase(f"{tl.name}/{phase}", shape, prec, acc)
        for tl in layers
        for phase, shape in (("fwd", tl.forward), ("dgrad", tl.dgrad), ("wgrad", tl.wgrad))
        if shape is not None
    ]
    return _spec(out, name)


@dataclass(frozen=True)
class Phases:
    """The phases the GPU model times (:func:`phase_workload`): ``spec``, its layers; ``owners``,
    each generated name that is not its own result's key -> (the key, the Winograd tile m of a
    weight-gradient candidate, 0 for a strided data gradient's phase); ``transform_bytes``, the
    bytes each Winograd candidate's transforms move."""

    spec: WorkloadSpec
    owners: dict[str, tuple[str, int]] = field(default_factory=dict)
    transform_bytes: dict[str, int] = field(default_factory=dict)


def phase_workload(
    layers: list[TrainLayer],
    wl: WorkloadSpec,
    precision: str,
    memory_format: str,
    conv_library: ConvLibraryConfig | None = None,
) -> Phases:
    """The phases the GPU model times: a conv's forward and data gradient as conv layers
    (:mod:`archsim.system.conv_phases`; a strided data gradient's phases named
    ``<layer>/dgrad.<i>``), every other phase (a conv's weight gradient, fc/lstm/gemm layers)
    as :func:`gemm_workload`'s GEMM; with ``conv_library``, also the batched GEMMs of each
    Winograd weight gradient the library can run (``<layer>/wgrad.winograd<m>``). Generated
    names are told apart by exact name (``Phases.owners``), never by suffix: a layer may be
    named like one."""
    prec, acc, _, _ = PRECISIONS[precision]
    out: list[dict] = []
    owners: dict[str, tuple[str, int]] = {}
    transforms: dict[str, int] = {}
    for tl, spec in zip(layers, wl.layers, strict=True):
        if isinstance(spec, ConvLayer):
            m, n, _, g = tl.forward
            batch = m // (spec.out_h * spec.out_w)
            out.append(forward_conv(spec, batch, n * g, prec, memory_format))
            if tl.dgrad is not None:
                dgrad = dgrad_convs(spec, batch, n * g, prec, memory_format)
                if len(dgrad) > 1:
                    owners.update({d["name"]: (f"{tl.name}/dgrad", 0) for d in dgrad})
                out += dgrad
            out.append(_gemm_phase(f"{tl.name}/wgrad", tl.wgrad, prec, acc))
            wino = winograd_wgrad(spec, batch, n * g, prec, memory_format, conv_library) \
                if conv_library is not None else []  # fmt: skip
            for gemm, moved in wino:  # F(m x m, 3x3) runs (m + 2)^2 GEMMs
                owners[gemm["name"]] = (f"{tl.name}/wgrad", math.isqrt(gemm["batch"]) - 2)
                transforms[gemm["name"]] = moved
                out.append(gemm)
            continue
        for phase, shape in (("fwd", tl.forward), ("dgrad", tl.dgrad), ("wgrad", tl.wgrad)):
            if shape is not None:
                out.append(_gemm_phase(f"{tl.name}/{phase}", shape, prec, acc))
    return Phases(_spec(out, wl.name), owners, transforms)


def split_tensor(layers: list[TrainLayer], ways: int) -> list[TrainLayer]:
    """Each layer's output features (filters, fc outputs) split over ``ways`` GPUs (Megatron's
    column split): every GEMM's N (weight gradient: its N too) shrinks to ``ceil(n / ways)``."""
    if ways == 1:
        return layers
    out = []
    for tl in layers:
        m, n, k, b = tl.forward
        ns = -(-n // ways)
        out.append(
            TrainLayer(
                name=tl.name,
                forward=(m, ns, k, b),
                dgrad=None if tl.dgrad is None else (m, k, ns, b),
                wgrad=(k, ns, m, b),
                outputs=-(-tl.outputs // ways),
                params=-(-tl.params // ways),
            )
        )
    return out
