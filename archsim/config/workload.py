"""Workload specs: a list of layers with shapes and densities (or a data file).

Layer kinds: ``fc`` and ``lstm`` (matrix-vector layers, EIE), ``conv`` (2-D convolution,
SCNN/DCNN and the tensor-core GPUs via implicit GEMM) and ``gemm`` (a plain, optionally batched,
matrix multiply, e.g. the DeepBench shapes for the tensor-core GPUs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from archsim.config.base import ArchsimModel
from archsim.config.names import LINE_BREAKING_CATEGORIES, Name, line_break_problem
from archsim.errors import ConfigError, integral, is_count

__all__ = [
    "ConvLayer",
    "FcLayer",
    "GemmLayer",
    "LstmLayer",
    "LINE_BREAKING_CATEGORIES",
    "LayerSpec",
    "WorkloadSpec",
    "toggle_fraction",
]

Density = Annotated[float, Field(ge=0.0, le=1.0)]
ConvPrecision = Literal["fp16", "bf16", "tf32", "fp32", "int8"]


#: operand data as the datapath sees it: "random" (every bit toggles as random data does),
#: "zeros" (all-zero operands: multipliers and operand buses do not toggle) or a measured
#: toggle density in [0, 1] relative to random data
def _activity(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        raise ValueError(
            "unknown operand activity; allowed: 'random', 'zeros' or a toggle density in [0, 1]"
        ) from None


OperandActivity = Annotated[Literal["random", "zeros"] | Density, WrapValidator(_activity)]
_ACTIVITY_FIELD = Field(
    default="random",
    description="Operand data activity for the energy/clock models: 'random' (default), "
    "'zeros', or a measured toggle density in [0, 1] relative to random data.",
)


def toggle_fraction(activity: OperandActivity) -> float:
    """Data-dependent switching relative to random operands: random 1, zeros 0, else the value."""
    if activity == "random":
        return 1.0
    if activity == "zeros":
        return 0.0
    return float(activity)


class _NamedLayer(ArchsimModel):
    """A layer's ``name``: one line of printable text (tables and reports show it)."""

    @model_validator(mode="before")
    @classmethod
    def _one_line_name(cls, data: Any) -> Any:
        name = data.get("name") if isinstance(data, dict) else None
        problem = line_break_problem(name) if isinstance(name, str) else None
        if problem is not None:
            raise ValueError(f"name: {problem}")
        return data


class _LayerBase(_NamedLayer):
    name: str = Field(min_length=1)
    weight_density: Density | None = None
    activation_density: Density | None = None
    weight_distribution: Literal["uniform"] = "uniform"
    operand_activity: OperandActivity = _ACTIVITY_FIELD
    data: str | None = Field(
        default=None, description="Directory of a real layer (relative to the workload file)."
    )
    data_format: Literal["eie"] = "eie"

    @model_validator(mode="after")
    def _densities_or_data(self) -> _LayerBase:
        if self.data is None:
            for f in ("weight_density", "activation_density"):
                if getattr(self, f) is None:
                    raise ValueError(f"{f} is required when no data: directory is given")
        return self


class FcLayer(_LayerBase):
    """Fully connected layer y = W x (+ b); W has ``outputs`` rows and ``inputs`` columns."""

    kind: Literal["fc"]
    inputs: int | None = Field(
        default=None, ge=1, description="Input features (columns of W); else from data."
    )
    outputs: int | None = Field(
        default=None, ge=1, description="Output features (rows of W); else from data."
    )
    bias: bool = True
    batch: int = Field(
        default=1, ge=1, description="Input vectors per call (GPU: the GEMM's N; EIE/SCNN: 1)."
    )
    relu: bool = Field(
        default=False,
        description="GPU training and inference passes: a ReLU kernel follows the layer's "
        "GEMM (torchvision VGG-16's fc6 and fc7). EIE's PEs apply ReLU in their datapath "
        "either way.",
    )

    @model_validator(mode="after")
    def _shape_or_data(self) -> FcLayer:
        if self.data is None and (self.inputs is None or self.outputs is None):
            raise ValueError("inputs and outputs are required when no data: directory is given")
        return self

    @property
    def matrix_shape(self) -> tuple[int, int] | None:
        """(rows, columns) of W, or None when taken from the data file."""
        if self.inputs is None or self.outputs is None:
            return None
        return (self.outputs, self.inputs)

    def as_gemm(self) -> GemmLayer | None:
        """The dense GEMM this layer is on an engine that runs GEMMs (a systolic array):
        m = batch rows, n = outputs, k = inputs; None when the shape comes from a data file."""
        if self.inputs is None or self.outputs is None:
            return None
        wd, ad = self.weight_density, self.activation_density
        return GemmLayer(
            kind="gemm", name=self.name, m=self.batch, n=self.outputs, k=self.inputs,
            weight_density=1.0 if wd is None else wd, activation_density=1.0 if ad is None else ad,
        )  # fmt: skip


class LstmLayer(_LayerBase):
    """One LSTM step as one matrix: 4*hidden gate rows over [x; h] columns (+ bias column)."""

    kind: Literal["lstm"]
    input_size: int = Field(ge=1, description="Features of the input x.")
    hidden_size: int = Field(ge=1, description="Features of the hidden state h.")
    bias: bool = True
    batch: int = Field(
        default=1, ge=1, description="Sequences per step (GPU: the GEMM's N; EIE/SCNN: 1)."
    )

    @property
    def matrix_shape(self) -> tuple[int, int]:
        """(rows, columns) of the stacked gate matrix."""
        return (4 * self.hidden_size, self.input_size + self.hidden_size)


class ConvLayer(_NamedLayer):
    """2-D convolution (cross-correlation, as in Caffe/PyTorch) of a batch of NCHW inputs.

    Shapes are element counts: ``n`` images of ``c`` channels, ``h`` x ``w`` pixels, convolved
    with ``k`` filters of ``c // groups`` x ``r`` x ``s`` weights at ``stride`` (pixels, both
    axes) over inputs zero-padded by ``pad`` pixels on every side. Channels are split into
    ``groups`` independent groups (AlexNet's two-GPU layers have ``groups: 2``).

    Densities are fractions of non-zero weights / input activations in [0, 1]. The sparse
    engines (SCNN, DCNN) need both; dense engines (GPUs, systolic arrays) compute every MAC and
    need neither. ``precision`` is the type of the GPU's operands (accumulation: FP32, INT32 for
    int8). ``data`` names a folder of real tensors (``weights.npy``, ``activations.npy``; see
    :mod:`archsim.workload.conv`) that the sparse engines use instead of seeded synthetic ones.
    """

    kind: Literal["conv"]
    name: str = Field(min_length=1)
    n: int = Field(default=1, ge=1, description="Batch size (images).")
    c: int = Field(ge=1, description="Input channels.")
    k: int = Field(ge=1, description="Output channels (filters).")
    h: int = Field(ge=1, description="Input height (pixels, before padding).")
    w: int = Field(ge=1, description="Input width (pixels, before padding).")
    r: int = Field(ge=1, description="Filter height (pixels).")
    s: int = Field(ge=1, description="Filter width (pixels).")
    stride: int = Field(default=1, ge=1, description="Stride (pixels, both axes).")
    pad: int = Field(default=0, ge=0, description="Zero padding on every side (pixels).")
    groups: int = Field(default=1, ge=1, description="Channel groups; c and k divisible by it.")
    weight_density: Density | None = Field(
        default=None, description="Fraction of non-zero weights (needed by SCNN/DCNN)."
    )
    activation_density: Density | None = Field(
        default=None, description="Fraction of non-zero input activations (needed by SCNN/DCNN)."
    )
    precision: ConvPrecision = Field(
        default="fp16", description="Operand type on a GPU (fp16, bf16, tf32, fp32, int8)."
    )
    memory_format: Literal["nhwc", "nchw"] = Field(
        default="nhwc",
        description="Layout of the activations and filters a GPU conv library is given: nhwc "
        "(channels last, as torch.channels_last and cuDNN's tensor-core kernels) or nchw "
        "(frameworks' default). It decides which algorithms apply "
        "(conv_library.winograd_memory_formats).",
    )
    weight_distribution: Literal["uniform"] = "uniform"
    operand_activity: OperandActivity = _ACTIVITY_FIELD
    data: str | None = Field(
        default=None,
        description="Folder of real tensors (relative to the workload file): weights.npy "
        "(k, c/groups, r, s) and activations.npy (n, c, h, w), float32; SCNN/DCNN run them.",
    )
    data_format: Literal["npy"] = Field(
        default="npy", description="Format of the data folder: 'npy' (two NumPy arrays)."
    )
    residual_add: bool = Field(
        default=False,
        description="Training and inference passes: the layer's normalised output is summed "
        "with its block's shortcut before the activation (ResNet's last conv of a block). "
        "Costs one add forward and one gradient sum backward, each reading two and writing one "
        "output-sized tensor.",
    )
    relu: bool = Field(
        default=True,
        description="Training and inference passes: a ReLU follows the layer's batch-norm "
        "(false: none, as for ResNet's projection shortcut, whose normalised output goes "
        "straight into the add).",
    )
    max_pool_stride: int = Field(
        default=1,
        ge=1,
        description="Training and inference passes: stride of a max-pool that follows the "
        "layer (1: none; ResNet's 3x3/2 pool after conv1). Forward reads the output and writes "
        "the pooled values and their int64 indices; backward reads those and writes an "
        "output-sized gradient.",
    )
    max_pool_size: int = Field(
        default=3,
        ge=1,
        le=64,
        description="Inference passes: window of that max-pool (pixels; ResNet 3, VGG 2). A "
        "window no wider than the stride reads each input once, which the framework's kernel "
        "does at its own rate (framework_kernels.maxpool_disjoint_bytes_per_s).",
    )
    input_max_pool_size: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Training and inference passes: a stride-1 max-pool of this window runs on "
        "the layer's input first (GoogLeNet's pool branch; 1: none). It reads the input and "
        "writes an input-sized result and its int64 indices.",
    )
    concat_channels: int = Field(
        default=0,
        ge=0,
        description="Training and inference passes: after this layer the framework "
        "concatenates its module's branch outputs, this many channels at this layer's output "
        "size, in one copy kernel (torch.cat of an Inception module; 0: none). A max-pool "
        "after the layer (max_pool_stride) then pools the concatenated tensor.",
    )
    avg_pool_size: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Inference passes: the network's head follows this layer: an adaptive "
        "average pool of its (pooled, concatenated) output to avg_pool_size x avg_pool_size "
        "(torchvision's VGG: 7), PyTorch's pooling kernel, then the flatten before the first "
        "linear layer, a copy kernel for a channels-last tensor (0: none). A global pool to "
        "1 x 1 (ResNet, GoogLeNet) runs PyTorch's mean-reduce kernel instead, which is not "
        "modelled, so 1 is refused.",
    )
    batch_norm: bool = Field(
        default=True,
        description="Training and inference passes: a batch-norm follows the layer (false: "
        "none, as in VGG-16 and the original GoogLeNet).",
    )
    bias: bool = Field(
        default=False,
        description="Training and inference passes: the framework adds a per-channel bias "
        "after the conv kernel, in a broadcast-add kernel of its own (PyTorch's cuDNN path; "
        "VGG-16's convs). False: none, as for a conv followed by batch-norm.",
    )

    @model_validator(mode="after")
    def _check_conv(self) -> ConvLayer:
        for dim, size, filt in (("h", self.h, "r"), ("w", self.w, "s")):
            extent = getattr(self, filt)
            if size + 2 * self.pad - extent < 0:
                raise ValueError(
                    f"{dim}={size} gives output size <= 0: {filt}={extent} is larger than "
                    f"{dim} + 2*pad = {size + 2 * self.pad}; allowed: {filt} <= {dim} + 2*pad"
                )
        if self.avg_pool_size == 1:
            raise ValueError(
                "avg_pool_size=1 is a global average pool, PyTorch's mean-reduce kernel, which "
                "the inference pass does not model; allowed: 0 (none) or 2 to 64"
            )
        if 0 < self.concat_channels < self.k:
            raise ValueError(
                f"concat_channels={self.concat_channels} is below the layer's k={self.k} (the "
                "concatenation includes this layer's output); allowed: 0 or at least k"
            )
        for ch in ("c", "k"):
            if getattr(self, ch) % self.groups:
                raise ValueError(
                    f"{ch}={getattr(self, ch)} is not divisible by groups={self.groups}; "
                    "allowed: groups that divide both c and k"
                )
        return self

    @property
    def out_h(self) -> int:
        """Output height (pixels): ``(h + 2*pad - r) // stride + 1``."""
        return (self.h + 2 * self.pad - self.r) // self.stride + 1

    @property
    def out_w(self) -> int:
        """Output width (pixels): ``(w + 2*pad - s) // stride + 1``."""
        return (self.w + 2 * self.pad - self.s) // self.stride + 1

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        """Input activations (n, c, h, w), elements."""
        return (self.n, self.c, self.h, self.w)

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        """Weights (k, c // groups, r, s), elements."""
        return (self.k, self.c // self.groups, self.r, self.s)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        """Output activations (n, k, out_h, out_w), elements."""
        return (self.n, self.k, self.out_h, self.out_w)

    @property
    def macs_dense(self) -> int:
        """Dense multiply-accumulates: ``n * k * out_h * out_w * (c / groups) * r * s``."""
        return self.n * self.k * self.out_h * self.out_w * (self.c // self.groups) * self.r * self.s

    @property
    def gemm_view(self) -> tuple[int, int, int]:
        """Implicit-GEMM shape (M, N, K) of ONE channel group; there are ``groups`` such GEMMs.

        M = n * out_h * out_w (output pixels), N = k // groups (filters of the group),
        K = (c // groups) * r * s (reduction). ``groups * M * N * K == macs_dense``.
        """
        return (
            self.n * self.out_h * self.out_w,
            self.k // self.groups,
            (self.c // self.groups) * self.r * self.s,
        )


GemmPrecision = Literal[
    "fp16", "bf16", "tf32", "fp32", "fp8_e4m3", "fp8_e5m2", "fp8", "int8"
]  # fmt: skip
GemmAccumulate = Literal["fp32", "fp16", "int32"]
GemmOutput = Literal["fp32", "fp16", "bf16", "int32"]

#: Accumulator types allowed for each GEMM input precision (tensor-core MMA pairs).
GEMM_ACCUMULATE: dict[str, tuple[str, ...]] = {
    "fp16": ("fp32", "fp16"),
    "bf16": ("fp32",),
    "tf32": ("fp32",),
    "fp32": ("fp32",),
    "fp8_e4m3": ("fp32",),
    "fp8_e5m2": ("fp32",),
    "fp8": ("fp32",),
    "int8": ("int32",),
}
#: Output (C/D) types allowed for each accumulator type.
GEMM_OUTPUT: dict[str, tuple[str, ...]] = {
    "fp32": ("fp32", "fp16", "bf16"),
    "fp16": ("fp16",),
    "int32": ("int32",),
}


class GemmLayer(_NamedLayer):
    """Matrix multiply ``D[m x n] = A[m x k] B[k x n] + C``, repeated ``batch`` times.

    ``transpose_a`` / ``transpose_b`` say that A / B are stored transposed (BLAS ``T``; A is then
    held as k x m, B as n x k); they change the memory layout, not the arithmetic. ``precision``
    is the type of A and B (``fp8`` is ``fp8_e4m3``, as ``torch._scaled_mm`` runs it),
    ``accumulate`` that of the accumulator, ``output`` that of C and D (default: the accumulator
    type; FP8 GEMMs usually write bf16). Densities are fractions of non-zero
    B ("weight") / A ("activation") elements in [0, 1] and default to 1.0 (dense GEMM).
    """

    kind: Literal["gemm"]
    name: str = Field(min_length=1)
    m: int = Field(ge=1, description="Rows of A and D.")
    n: int = Field(ge=1, description="Columns of B and D.")
    k: int = Field(ge=1, description="Reduction length (columns of A, rows of B).")
    transpose_a: bool = Field(default=False, description="A stored transposed (k x m).")
    transpose_b: bool = Field(default=False, description="B stored transposed (n x k).")
    batch: int = Field(default=1, ge=1, description="Independent GEMMs of this shape (batched).")
    precision: GemmPrecision = Field(default="fp16", description="Type of the A and B operands.")
    accumulate: GemmAccumulate = Field(
        default="fp32", description="Accumulator type (default: int32 for int8, else fp32)."
    )
    output: GemmOutput | None = Field(
        default=None, description="Type of C and D (default: the accumulator type)."
    )
    weight_density: Density = 1.0
    activation_density: Density = 1.0
    weight_distribution: Literal["uniform"] = "uniform"
    operand_activity: OperandActivity = _ACTIVITY_FIELD
    data: str | None = Field(
        default=None, description="Not supported for gemm layers (must be left out)."
    )

    @model_validator(mode="before")
    @classmethod
    def _default_accumulate(cls, data: Any) -> Any:
        """An int8 GEMM accumulates in int32 unless told otherwise (its only accumulator), as
        the conv layers' int8 does; every other precision in fp32."""
        if isinstance(data, dict) and data.get("precision") == "int8" and "accumulate" not in data:
            return {**data, "accumulate": "int32"}
        return data

    @model_validator(mode="after")
    def _check_gemm(self) -> GemmLayer:
        if self.data is not None:
            raise ValueError(
                "data is not supported for gemm layers (no gemm data file format); "
                "remove it and give m, n, k (and densities if sparse)"
            )
        allowed = GEMM_ACCUMULATE[self.precision]
        if self.accumulate not in allowed:
            raise ValueError(
                f"accumulate={self.accumulate!r} is not valid with precision={self.precision!r}; "
                f"allowed: {', '.join(allowed)}"
            )
        outs = GEMM_OUTPUT[self.accumulate]
        if self.output is not None and self.output not in outs:
            raise ValueError(
                f"output={self.output!r} is not valid with accumulate={self.accumulate!r}; "
                f"allowed: {', '.join(outs)}"
            )
        return self

    @property
    def gemm_view(self) -> tuple[int, int, int]:
        """GEMM shape (M, N, K) of ONE of the ``batch`` GEMMs."""
        return (self.m, self.n, self.k)

    @property
    def a_shape(self) -> tuple[int, int]:
        """Stored shape of A: (m, k), or (k, m) when ``transpose_a``."""
        return (self.k, self.m) if self.transpose_a else (self.m, self.k)

    @property
    def b_shape(self) -> tuple[int, int]:
        """Stored shape of B: (k, n), or (n, k) when ``transpose_b``."""
        return (self.n, self.k) if self.transpose_b else (self.k, self.n)

    @property
    def macs_dense(self) -> int:
        """Dense multiply-accumulates: ``batch * m * n * k``."""
        return self.batch * self.m * self.n * self.k

    @property
    def flops(self) -> int:
        """Dense floating-point (or integer) operations: ``2 * macs_dense``."""
        return 2 * self.macs_dense


LayerSpec = Annotated[FcLayer | LstmLayer | ConvLayer | GemmLayer, Field(discriminator="kind")]


class WorkloadSpec(ArchsimModel):
    """A named, cited list of layers."""

    schema_version: Literal[1]
    name: Name
    source: str = Field(min_length=1, description="Citation of the shapes and densities.")
    description: str = ""
    layers: list[LayerSpec] = Field(min_length=1, description="Layers, run in this order.")
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _origin: str = PrivateAttr(default="<api>")

    @model_validator(mode="after")
    def _unique_names(self) -> WorkloadSpec:
        seen: set[str] = set()
        for layer in self.layers:
            if layer.name in seen:
                raise ValueError(f"duplicate layer name {layer.name!r}; names must be unique")
            seen.add(layer.name)
        return self

    @property
    def base_dir(self) -> Path:
        """Directory that relative ``data:`` paths are resolved against."""
        return self._base_dir

    @property
    def origin(self) -> str:
        """File the spec was loaded from (or ``<api>``)."""
        return self._origin

    def with_batch(self, batch: int) -> WorkloadSpec:
        """A copy run at ``batch`` images / vectors: conv ``n``, fc/lstm ``batch``; ``gemm``
        layers keep their shapes. The name gets a ``@b<batch>`` suffix."""
        batch = integral(batch)
        if not is_count(batch):
            raise ConfigError("<api>", "batch", f"got {batch!r}; allowed: an integer >= 1")
        field = {"conv": "n", "fc": "batch", "lstm": "batch"}
        layers = [
            lay.model_copy(update={field[lay.kind]: batch}) if lay.kind in field else lay
            for lay in self.layers
        ]
        new = self.model_copy(update={"layers": layers, "name": f"{self.name}@b{batch}"})
        new._base_dir, new._origin = self._base_dir, self._origin
        return new

    def bind(self, base_dir: Path, origin: str) -> WorkloadSpec:
        """Return a copy that resolves data paths against ``base_dir``."""
        new = self.model_copy()
        new._base_dir = Path(base_dir)
        new._origin = origin
        return new
