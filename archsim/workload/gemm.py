"""Layers as GEMMs (what a GPU runs) and seeded GEMM operands.

* ``gemm``: ``D[m x n] = A[m x k] B[k x n] + C``, ``batch`` times.
* ``fc`` at batch B: ``M = outputs``, ``N = B``, ``K = inputs`` (B = 1 is EIE's M x V case,
  B > 1 the M x M case).
* ``lstm`` step at batch B: the stacked gate matrix, ``M = 4 * hidden``, ``N = B``,
  ``K = input + hidden``.
* ``conv``: implicit GEMM (NHWC) per channel group, ``M = n * out_h * out_w`` output pixels,
  ``N = filters / groups``, ``K = channels / groups * r * s``; ``batch = groups``; operands in
  the layer's ``precision``, FP32 accumulation (INT32 for int8), the output written in the
  layer's precision and never read (beta = 0). The other algorithms a GPU
  library may pick (Winograd, per-group launches, depthwise) live in
  ``accelerators.gpu_conv``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from archsim.config.workload import ConvLayer, FcLayer, GemmLayer, LstmLayer
from archsim.workload.materialize import layer_rng

__all__ = [
    "ELEMENT_BYTES",
    "FP8_FORMATS",
    "GemmOperands",
    "GemmProblem",
    "lower_to_gemm",
    "materialize_gemm",
    "round_fp8",
]

#: bytes per element of each GEMM type
ELEMENT_BYTES = {
    "fp16": 2, "bf16": 2, "tf32": 4, "fp32": 4, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8": 1,
    "int8": 1, "int32": 4,
}  # fmt: skip
#: FP8 formats: (explicit mantissa bits, smallest normal exponent, largest finite value)
FP8_FORMATS = {"fp8_e4m3": (3, -6, 448.0), "fp8_e5m2": (2, -14, 57344.0)}


@dataclass(frozen=True)
class GemmProblem:
    """One layer as ``batch`` GEMMs of ``m x n x k`` (all element counts)."""

    layer: str
    kind: str
    m: int
    n: int
    k: int
    batch: int
    precision: str
    accumulate: str
    transpose_a: bool = False
    transpose_b: bool = False
    #: type of C and D; None: the accumulator type (a cuDNN conv writes its input precision)
    output: str | None = None
    weight_density: float = 1.0
    activation_density: float = 1.0
    #: distinct elements of A / (m * k): 1 for a stored matrix; an implicit-GEMM conv gathers
    #: A from the input tensor, re-reading each input pixel for up to r * s filter taps
    a_unique_fraction: float = 1.0
    #: False when the library runs with beta = 0 and never reads C (cuDNN's forward conv)
    reads_c: bool = True

    @property
    def macs(self) -> int:
        """Dense multiply-accumulates of all ``batch`` GEMMs."""
        return self.batch * self.m * self.n * self.k

    @property
    def in_bytes(self) -> int:
        """Bytes per A/B element."""
        return ELEMENT_BYTES[self.precision]

    @property
    def out_type(self) -> str:
        """Type of C and D."""
        return self.output or self.accumulate

    @property
    def out_bytes(self) -> int:
        """Bytes per C/D element."""
        return ELEMENT_BYTES[self.out_type]

    @property
    def footprint_bytes(self) -> int:
        """Bytes of A (its distinct elements), B and D of all ``batch`` GEMMs: what device
        memory must hold for the layer."""
        a = math.ceil(self.m * self.k * self.a_unique_fraction)
        ab = (a + self.k * self.n) * self.in_bytes
        return self.batch * (ab + self.m * self.n * self.out_bytes)

    @property
    def c_d_bytes(self) -> int:
        """Bytes the epilogue moves per output element: C read (unless beta = 0) + D write."""
        return (2 if self.reads_c else 1) * self.out_bytes


def lower_to_gemm(layer: GemmLayer | FcLayer | LstmLayer | ConvLayer) -> GemmProblem:
    """The GEMM a GPU library runs for ``layer`` (FP16 operands, FP32 accumulation unless a
    ``gemm`` layer says otherwise)."""
    wd = float(layer.weight_density) if layer.weight_density is not None else 1.0
    ad = float(layer.activation_density) if layer.activation_density is not None else 1.0
    common = {
        "layer": layer.name,
        "kind": layer.kind,
        "weight_density": wd,
        "activation_density": ad,
    }
    if isinstance(layer, GemmLayer):
        return GemmProblem(
            m=layer.m,
            n=layer.n,
            k=layer.k,
            batch=layer.batch,
            precision=layer.precision,
            accumulate=layer.accumulate,
            output=layer.output,
            transpose_a=layer.transpose_a,
            transpose_b=layer.transpose_b,
            **common,
        )
    if isinstance(layer, ConvLayer):
        m, n, k = layer.gemm_view
        acc = "int32" if layer.precision == "int8" else "fp32"
        unique = min(1.0, layer.n * layer.h * layer.w * (layer.c // layer.groups) / (m * k))
        return GemmProblem(
            m=m, n=n, k=k, batch=layer.groups, precision=layer.precision, accumulate=acc,
            a_unique_fraction=unique, reads_c=False, output=layer.precision, **common,
        )  # fmt: skip
    rows, cols = layer.matrix_shape if isinstance(layer, LstmLayer) else _fc_shape(layer)
    return GemmProblem(
        m=rows, n=layer.batch, k=cols, batch=1, precision="fp16", accumulate="fp32", **common
    )


def _fc_shape(layer: FcLayer) -> tuple[int, int]:
    shape = layer.matrix_shape
    if shape is None:
        raise ValueError(f"layer {layer.name!r}: a GPU needs inputs and outputs (no data: files)")
    return shape


@dataclass(frozen=True)
class GemmOperands:
    """Operands of the first of a problem's GEMMs: A (m x k) and B (k x n) in the input type
    (FP16 as float16; BF16, TF32 and FP8 as their values held in float32), C (m x n) in the
    output type (BF16 held in float32)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray


def materialize_gemm(problem: GemmProblem, seed: int) -> GemmOperands:
    """Deterministic from (seed, layer name): uniform values in [-1, 1), zeroed to the densities
    (B holds the weights, A the activations), C in [-1, 1)."""
    rng = layer_rng(seed, problem.layer)
    m, n, k = problem.m, problem.n, problem.k
    a = rng.uniform(-1.0, 1.0, (m, k))
    b = rng.uniform(-1.0, 1.0, (k, n))
    if problem.activation_density < 1.0:
        a *= rng.random((m, k)) < problem.activation_density
    if problem.weight_density < 1.0:
        b *= rng.random((k, n)) < problem.weight_density
    c = rng.uniform(-1.0, 1.0, (m, n))
    if problem.out_type == "int32":
        c_out = np.round(c * 127).astype(np.int32)
    elif problem.out_type == "fp16":
        c_out = c.astype(np.float16)
    else:
        c_out = _as_input(c, problem.out_type)
    return GemmOperands(
        a=_as_input(a, problem.precision), b=_as_input(b, problem.precision), c=c_out
    )


def _as_input(x: np.ndarray, precision: str) -> np.ndarray:
    if precision == "fp16":
        return x.astype(np.float16)
    if precision == "int8":
        return np.round(x * 127).astype(np.int8)
    if precision == "bf16":  # round to 8 significant bits, held in float32
        bits = x.astype(np.float32).view(np.uint32)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.view(np.float32)
    if precision in FP8_FORMATS or precision == "fp8":
        return round_fp8(x, "fp8_e4m3" if precision == "fp8" else precision)
    if precision == "tf32":  # 10 explicit mantissa bits, held in float32
        bits = x.astype(np.float32).view(np.uint32)
        bits = (bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000
        return bits.view(np.float32)
    return x.astype(np.float32)


def round_fp8(x: np.ndarray, fmt: str) -> np.ndarray:
    """``x`` rounded to the nearest value of FP8 format ``fmt`` (ties to even, saturating at
    the largest finite value as ``torch``'s scaled casts do), held in float32."""
    mant, emin, top = FP8_FORMATS[fmt]
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)  # x = f 2**e, 0.5 <= |f| < 1
    ulp = np.ldexp(1.0, np.maximum(e - 1, emin) - mant)
    return np.clip(np.rint(x / ulp) * ulp, -top, top).astype(np.float32)
