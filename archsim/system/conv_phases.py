"""A conv layer's training phases as cuDNN runs them: forward and data gradient as convs.

The forward pass of a conv is the layer itself, timed by the GPU conv model (cuDNN's algorithm
choice, beta = 0, output in the activation type) instead of a plain GEMM. The data gradient
``dX = conv_transpose(dY, W)`` is a forward conv too:

* stride 1: one conv of ``dY`` (K channels) with the flipped filters (C outputs), padding
  ``R - 1 - pad`` per side (where that differs between the axes or is negative, the padding is
  folded into ``dY``'s size: a negative one crops it); its output is the input's ``H x W``;
* stride ``s > 1``: the ``s x s`` phases of ``dX`` (rows ``py``, ``py + s``, ...), each a
  stride-1 conv with the ``ceil((R - py) / s) x ceil((S - px) / s)`` taps that land on it
  and ``ceil(H / s) x ceil(W / s)`` outputs, as CUTLASS's strided data-gradient kernels split
  it (no MAC on an inserted zero); a phase no tap lands on (a 1x1 stride-2 conv's three of
  four) is written as zeros, an elementwise pass (:func:`empty_phase_fraction`).

The weight gradient is a GEMM (``C R S x K``, reduced over the batch's output pixels) or, for a
3x3 stride-1 conv the library runs Winograd for, cuDNN's non-fused Winograd weight gradient
(:func:`winograd_wgrad`), whichever is faster. Measured against DeepBench's published V100
backward times (``benchmarks/deepbench_conv.py --training``): see ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from archsim.config.gpu_conv import ConvLibraryConfig
from archsim.config.workload import ConvLayer
from archsim.results import LayerResult
from archsim.workload.gemm import ELEMENT_BYTES

__all__ = [
    "WGRAD_TRANSFORM_KERNELS",
    "dgrad_convs",
    "empty_phase_fraction",
    "forward_conv",
    "merged_result",
    "wgrad_transform_s",
    "winograd_wgrad",
]

#: kernels of a Winograd weight gradient besides its GEMM: data, delta and filter transforms
WGRAD_TRANSFORM_KERNELS = 3


def _taps(spec: ConvLayer) -> Counter[tuple[int, int]]:
    """(rows, columns) of filter taps per phase of ``dX`` -> phases with that many; phases
    with no tap are left out."""
    s = spec.stride
    out: Counter[tuple[int, int]] = Counter()
    for py in range(s):
        for px in range(s):
            tr, ts = -(-(spec.r - py) // s), -(-(spec.s - px) // s)
            if tr > 0 and ts > 0:
                out[(tr, ts)] += 1
    return out


def empty_phase_fraction(spec: ConvLayer) -> float:
    """Fraction of the input gradient ``dX`` that no filter tap reaches (written as zeros)."""
    return 1.0 - sum(_taps(spec).values()) / spec.stride**2


def _base(spec: ConvLayer, name: str, precision: str, memory_format: str) -> dict[str, Any]:
    return {"kind": "conv", "name": name, "precision": precision, "memory_format": memory_format,
            "groups": spec.groups}  # fmt: skip


def forward_conv(
    spec: ConvLayer, batch: int, filters: int, precision: str, memory_format: str
) -> dict[str, Any]:
    """The forward pass of ``spec`` at ``batch`` images with ``filters`` outputs (a tensor
    split's share), as a conv layer of the workload schema."""
    return _base(spec, f"{spec.name}/fwd", precision, memory_format) | {
        "n": batch, "c": spec.c, "k": filters, "h": spec.h, "w": spec.w, "r": spec.r,
        "s": spec.s, "stride": spec.stride, "pad": spec.pad,
    }  # fmt: skip


def dgrad_convs(
    spec: ConvLayer, batch: int, filters: int, precision: str, memory_format: str
) -> list[dict[str, Any]]:
    """The data gradient of ``spec`` (``filters`` outputs forward) as stride-1 conv layers
    (see the module docstring), named ``<layer>/dgrad`` or, several, ``<layer>/dgrad.<i>``."""
    oh, ow = spec.out_h, spec.out_w
    if spec.stride == 1:
        ph, pw = spec.r - 1 - spec.pad, spec.s - 1 - spec.pad
        if ph == pw >= 0:
            shapes = [(oh, ow, spec.r, spec.s, ph)]
        else:  # the padding folded into dY's size (negative: cropped); output H x W still
            shapes = [(oh + 2 * ph, ow + 2 * pw, spec.r, spec.s, 0)]
    else:  # each phase's output: ceil(H / s) x ceil(W / s) pixels
        qh, qw = -(-spec.h // spec.stride), -(-spec.w // spec.stride)
        taps = [tap for tap, count in sorted(_taps(spec).items()) for _ in range(count)]
        shapes = [(qh + tr - 1, qw + ts - 1, tr, ts, 0) for tr, ts in taps]
    out = []
    for i, (h, w, r, s, pad) in enumerate(shapes):
        name = f"{spec.name}/dgrad" if len(shapes) == 1 else f"{spec.name}/dgrad.{i}"
        out.append(_base(spec, name, precision, memory_format) | {
            "n": batch, "c": filters, "k": spec.c, "h": h, "w": w, "r": r,
            "s": s, "stride": 1, "pad": pad,
        })  # fmt: skip
    return out


def merged_result(parts: list[LayerResult], name: str) -> LayerResult:
    """One result for kernels run one after another (a strided data gradient's phases): times,
    work, energy and counts summed; utilization weighted by each part's cycles."""
    if len(parts) == 1:
        return replace(parts[0], layer=name)
    first = parts[0]
    cycles = sum(p.cycles for p in parts)
    sm = [p.extras.get("tc_sm_cycles", p.cycles) for p in parts]
    energy: dict[str, float] = {}
    counts: dict[str, dict[str, int]] = {}
    for p in parts:
        for comp, pj in p.energy_by_component_pj.items():
            energy[comp] = energy.get(comp, 0.0) + pj
        for unit, actions in p.counts.items():
            into = counts.setdefault(unit, {})
            for action, n in actions.items():
                into[action] = into.get(action, 0) + n
    time_s = sum(p.time_s for p in parts)
    energy_pj = sum(p.energy_pj for p in parts)
    extras = dict(max(parts, key=lambda p: p.cycles).extras)
    extras["tc_sm_cycles"] = sum(sm)
    extras["tc_conv_kernels"] = sum(int(p.extras.get("tc_conv_kernels", 1)) for p in parts)
    return replace(
        first,
        layer=name,
        cycles=cycles,
        time_s=time_s,
        macs_dense=sum(p.macs_dense for p in parts),
        macs_effective=sum(p.macs_effective for p in parts),
        utilization=sum(p.utilization * c for p, c in zip(parts, sm, strict=True))
        / max(1, sum(sm)),
        energy_pj=energy_pj,
        power_w=energy_pj * 1e-12 / time_s if time_s > 0 else 0.0,
        dram_bytes=sum(p.dram_bytes for p in parts),
        end_cycle=first.start_cycle + cycles,
        energy_by_component_pj=energy,
        counts=counts,
        extras=extras,
    )


def winograd_wgrad(
    spec: ConvLayer,
    batch: int,
    filters: int,
    precision: str,
    memory_format: str,
    lib: ConvLibraryConfig,
) -> list[tuple[dict[str, Any], int]]:
    """cuDNN's non-fused Winograd weight gradient of ``spec`` (``CUDNN_CONVOLUTION_BWD_FILTER_
    ALGO_WINOGRAD_NONFUSED``; on Volta TensorFlow traces show its ``cudnn::winograd_nonfused::
    winogradWgradData4x4`` and ``winogradWgradDelta4x4`` kernels for Conv2DBackpropFilter),
    one entry per tile F(m x m, 3x3) of the library's Winograd menu: the ``(m + 2)^2`` batched
    GEMMs ``dW~ = X~^T dY~`` (C x filters, reduced over the batch's tiles), as a ``gemm`` layer
    named ``<layer>/wgrad.winograd<m>``, and the bytes its three transforms move (the input
    and the output gradient into tiles, the FP32 result back to 3x3 filters). Empty unless the
    conv is 3x3, stride 1, ungrouped, in a Winograd memory format and of channels the library's
    tensor-op rule takes, as the forward's Winograd."""
    a = lib.tensor_op_channel_alignment_elements
    if not (
        spec.r == spec.s == 3
        and spec.stride == 1
        and spec.groups == 1
        and memory_format in lib.winograd_memory_formats
        and spec.c % a == 0
        and filters % a == 0
    ):
        return []
    eb = ELEMENT_BYTES[precision]
    oh, ow = spec.out_h, spec.out_w
    out = []
    for m in (2, 4):
        if f"winograd_{m}x{m}" not in lib.algorithms:
            continue
        alpha2 = (m + 2) ** 2
        tiles = batch * -(-oh // m) * -(-ow // m)
        gemm = {"name": f"{spec.name}/wgrad.winograd{m}", "kind": "gemm", "m": spec.c,
                "n": filters, "k": tiles, "batch": alpha2, "precision": precision,
                "accumulate": "fp32"}  # fmt: skip
        data = (batch * spec.c * spec.h * spec.w + alpha2 * tiles * spec.c) * eb
        delta = (batch * filters * oh * ow + alpha2 * tiles * filters) * eb
        back = alpha2 * spec.c * filters * ELEMENT_BYTES["fp32"] + 9 * spec.c * filters * eb
        out.append((gemm, data + delta + back))
    return out


def wgrad_transform_s(moved_bytes: int, hbm_bytes_per_s: float, launch_s: float) -> float:
    """Seconds of a Winograd weight gradient's transform kernels: their bytes at the HBM rate,
    each of the :data:`WGRAD_TRANSFORM_KERNELS` kernels at least ``launch_s``."""
    return max(moved_bytes / hbm_bytes_per_s, WGRAD_TRANSFORM_KERNELS * launch_s)
