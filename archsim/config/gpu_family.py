"""GPU kernel families and CTA tiles: what a GEMM or conv library runs on a Tensor Core GPU."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt, model_validator

from archsim.config.base import ArchsimModel

__all__ = [
    "MIN_FRACTION",
    "KernelFamily",
    "KernelRate",
    "KernelSeconds",
    "Precision",
    "ThreadBlockTile",
    "cta_register_bytes",
    "rate_key",
]

#: a library kernel's own rate, bytes per s: a megabyte to a petabyte per second (outside, a
#: typing mistake; 1e-300 B/s overflowed the model's cycle counts, blamed on the workload)
KernelRate = Annotated[float, Field(ge=1e6, le=1e15)]
#: a fill rate of one SM or CTA, bytes per SM clock, 0.001 to 10,000 (1e-300 overflowed the
#: model's cycle counts)
FillRate = Annotated[float, Field(ge=0.001, le=10_000)]
#: a fixed time of a library kernel, s: microseconds; a millisecond is already a typing mistake
KernelSeconds = Annotated[float, Field(ge=0.0, le=1e-3)]
#: least measured efficiency (sustained / peak rate, achievable / peak bandwidth): under 1 % is
#: a typing mistake, and 1e-300 made cycle counts of 10^300 that no integer holds (a traceback)
MIN_FRACTION = 0.01

#: tensor-core rate classes; ``fp8`` covers both FP8 formats (e4m3, e5m2 run at one rate)
Precision = Literal["fp16", "bf16", "tf32", "fp32", "fp8", "int8"]


def rate_key(precision: str) -> str:
    """The ``precision_rate`` key of a GEMM input precision (``fp8_e4m3`` -> ``fp8``)."""
    return "fp8" if precision.startswith("fp8") else precision


class ThreadBlockTile(ArchsimModel):
    """One CTA tile of the GEMM: m x n outputs, k per main-loop step, warps, pipeline stages.

    ``k`` is given for 16-bit operands. Library kernels size a k-step in BYTES (a shared-memory
    row of ``2 k`` bytes: Hopper's 128-byte TMA swizzle holds 64 FP16, 32 TF32 or 128 FP8
    elements; CUTLASS's TF32 tiles are 128x128x32 where FP16's are 128x128x64), so a plan's
    k-step is ``2 k / bytes per element`` elements and a stage holds the same bytes at every
    precision.
    """

    m: PositiveInt = Field(description="Output rows (of M) per CTA tile.")
    n: PositiveInt = Field(description="Output columns (of N) per CTA tile.")
    k: PositiveInt = Field(
        le=4096, description="K elements per main-loop step at 16-bit operands, at most 4,096."
    )
    warps: PositiveInt = Field(
        default=8,
        le=32,
        description="Warps per CTA; each computes m x n / warps outputs per k-step. At most 32: "
        "1,024 threads per block on every CUDA GPU (CUDA C++ Programming Guide, compute "
        "capabilities table).",
    )
    stages: int = Field(
        default=2,
        ge=1,
        le=8,
        description="Shared-memory pipeline stages (2: double buffering): loads run this many "
        "minus one k-steps ahead of the MMAs.",
    )


#: Most kernel families or CTA tiles a menu may list. A conv layer derives one config per
#: family and validates it whole (every menu in it): cost grows with the square of the menu,
#: 5,000 families ran for hours. cuBLAS/cuDNN heuristics choose among a few dozen kernels.
MAX_MENU_ITEMS = 64


class KernelFamily(ArchsimModel):
    """A family of library kernels with its own eligibility rule, tiles and rates.

    The library takes the FIRST family of ``library.families`` that ``prob`` is eligible for
    (the preset lists them fastest first, as cuBLAS's heuristics prefer them).
    """

    name: str = Field(min_length=1, description="Family name, e.g. sm90_tma_wgmma.")
    library_behaviour: str = Field(
        min_length=1, description="The library behaviour this rule stands for (with a source)."
    )
    precisions: list[Precision] | None = Field(
        default=None, description="Input precisions it runs (None: every tensor-core precision)."
    )
    min_alignment_bytes: PositiveInt = Field(
        default=1,
        description="Leading dimensions of A, B and D must be multiples of this many bytes "
        "(D's counted in elements of A's type when alignment_in_elements).",
    )
    alignment_in_elements: bool = Field(
        default=False,
        description="The family's kernels have ONE alignment, in elements, for A, B and D "
        "(CUTLASS 2.x kernels, which cuBLAS names once: ..._align16): D's leading dimension "
        "must then hold a multiple of the elements that min_alignment_bytes makes of A's "
        "type, not of the bytes (an int32 D of an int8 GEMM needs 16 elements, not 16 B). "
        "False: each leading dimension in bytes (TMA descriptors: 16-byte strides).",
    )
    tensor_ops: bool = Field(default=True, description="False: FP32/FP16 CUDA-core kernels.")
    fill_bytes_per_clock: FillRate | None = Field(
        default=None,
        description="Global->shared fill rate of one SM, bytes per SM clock, 0.001 to 10,000 "
        "(None: sm_memory.shared_bandwidth_bytes_per_clock).",
    )
    fill_access_bytes: Literal[1, 2, 4, 8, 16] | None = Field(
        default=None,
        description="Width in bytes of the global loads at which fill_bytes_per_clock was "
        "measured. Set: the fill rate is taken to be limited by the number of loads in flight, "
        "not by bytes, so it scales with the widest load the operands allow (the largest power "
        "of two up to 16 B that one alignment of A, B and D allows, see "
        "gpu_plan.widest_load_bytes), up to "
        "sm_memory.shared_bandwidth_bytes_per_clock. None: fill_bytes_per_clock for every "
        "alignment.",
    )
    fill_access_widths: list[Literal[1, 2, 4, 8, 16]] | None = Field(
        default=None,
        min_length=1,
        description="Global load widths, bytes, that the library's kernels of this family are "
        "built for: a GEMM uses the widest of them that its leading dimensions allow (cuBLAS's "
        "pre-Hopper fallbacks come in 1-, 2- and 8-element alignments of 16-bit types, none of "
        "4); None: any power of two up to 16.",
    )
    fill_bytes_per_clock_by_width: dict[Literal[1, 2, 4, 8, 16], FillRate] | None = Field(
        default=None,
        description="More measured fill rates, bytes per SM clock (0.001 to 10,000), keyed by "
        "the global load width in bytes they were measured at, beside fill_bytes_per_clock at "
        "fill_access_bytes: a family whose kernels of one width are another generation "
        "(cuBLAS's 4-byte fallbacks copy with cp.async, its 2-byte ones load through "
        "registers) fills at its own measured rate. A width between measured ones scales "
        "from the largest measured width below it. Needs fill_access_bytes.",
    )
    registers_per_thread: PositiveInt | None = Field(
        default=None,
        le=255,
        description="Registers each thread of the family's kernels holds, as a profiler "
        "reports them (CUPTI/Nsight 'regs'): bounds co-resident CTAs by the register file. "
        "None: estimated from the tile (FP32 accumulators, register-held stages and "
        "sm_memory.overhead_registers_per_thread).",
    )
    cta_fill_bytes_per_clock: FillRate | None = Field(
        default=None,
        description="Global->register rate of ONE CTA, bytes per SM clock, for kernels whose "
        "threads issue their loads one by one (element-wide gathers): a k-step's data is in "
        "place no sooner than its bytes at this rate, however idle the SM's port "
        "(fill_bytes_per_clock) is. None: no per-CTA limit.",
    )
    multicast_ctas: PositiveInt = Field(
        default=1,
        description="CTAs of a thread-block cluster (along M) that receive each B tile from one "
        "L2 read (Hopper TMA multicast); 1: none.",
    )
    multicast_operand: Literal["b", "larger"] = Field(
        default="b",
        description="Which operand tile a multicast cluster shares: b, the B tile (the "
        "cluster's CTAs lie along M); larger, the larger of the CTA tile's A and B tiles (the "
        "cluster lies along the tile's shorter side; equal sides share B).",
    )
    split_k_max_tiles: PositiveInt | None = Field(
        default=None,
        description="GEMMs of at most this many output tiles (grid_m x grid_n x batch) run the "
        "library's split-K algorithm whatever their K, its reduction kernel following even one "
        "slice: only split plans are timed for them where K allows a split. None: the fastest "
        "plan, split or not. Needs split_k.",
    )
    split_k: bool = Field(
        default=True,
        description="Also try the library's split-K factors (library.split_k_factors); False: "
        "never, e.g. a family the caller gives no workspace for the FP32 partials.",
    )
    unit_stride_convs_only: bool = Field(
        default=False,
        description="A conv kernel that runs stride-1 convs only: a strided conv's GEMM runs in "
        "the conv library's other families.",
    )
    stream_k: bool = Field(
        default=False,
        description="Also try Stream-K: persistent CTAs split the tiles' k-iterations evenly "
        "(for grids of one to four waves that fill the SMs unevenly), with an FP32 fix-up of "
        "the shared tiles.",
    )
    k_major_precisions: list[Precision] = Field(
        default_factory=list,
        description="Precisions whose A and B it takes only K-major (A stored m x k, B stored "
        "n x k). A GEMM of these with an operand stored MN-major first runs one transpose "
        "kernel per such operand (a launch, and the operand read and written at HBM speed).",
    )
    one_mn_major_precisions: list[Precision] = Field(
        default_factory=list,
        description="Precisions of k_major_precisions that may have ONE operand stored "
        "MN-major with no transpose (Hopper wgmma reads its A operand from registers, loaded "
        "in either layout, and the library gives that role to the MN-major operand); with "
        "both operands MN-major the family has no kernel for the GEMM and the library runs "
        "the next eligible family.",
    )
    mma_rate_fraction: float = Field(
        default=1.0,
        ge=MIN_FRACTION,
        le=1.0,
        description="Its MMA throughput / the part's tensor rate.",
    )
    fragments_from_shared: bool = Field(
        default=False,
        description="Warp-level MMA (mma.sync): every k-step each warp reads its A and B "
        "fragments from shared memory into registers (ldmatrix / lds) through the SM's "
        "shared-memory port (sm_memory.shared_bandwidth_bytes_per_clock), the port the stage "
        "fills also write through. False: the MMA reads shared memory itself (wgmma).",
    )
    kernel_overhead_s: KernelSeconds | None = Field(
        default=None,
        description="Conv families only: the fixed set-up time, s, each kernel of this family "
        "takes beyond what the GEMM model times (None: conv_library.kernel_overhead_s). "
        "cudnn.benchmark compares families with it included.",
    )
    conv_reduction: Literal["per_tap", "flattened"] = Field(
        default="per_tap",
        description="Conv families only: how the kernel walks the reduction C x R x S. per_tap: "
        "filter tap by filter tap, each tap's channels in whole k-steps (a tap of 8 channels "
        "fills a 32-channel k-step with padding); flattened: the C x R x S products as one "
        "run of K, gathered through a table of input offsets (cuDNN's "
        "sm80_xmma_fprop_implicit_gemm_indexed kernels), padded once at its end.",
    )
    stages_in_registers: bool = Field(
        default=False,
        description="The kernels load each k-step's A and B tiles from global memory straight "
        "into registers, with no shared-memory stage (cuDNN's ..._wo_smem kernels): the "
        "stages take register file, which bounds co-resident CTAs, and no shared memory.",
    )
    max_macs: PositiveInt | None = Field(
        default=None,
        description="The library's heuristic sends this family only GEMMs of at most this "
        "many multiply-accumulates (m x n x k x batch); larger ones go to the next eligible "
        "family. None: any size.",
    )
    tiles: list[ThreadBlockTile] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MENU_ITEMS,
        description="Its CTA tile menu (None: the preset's tiles).",
    )

    @model_validator(mode="after")
    def _always_split_needs_split(self) -> KernelFamily:
        if self.split_k_max_tiles is not None and not self.split_k:
            raise ValueError(
                "split_k_max_tiles needs split_k: true (it keeps only split plans); allowed: "
                "split_k: true, or no split_k_max_tiles"
            )
        return self

    @model_validator(mode="after")
    def _widths_need_a_base(self) -> KernelFamily:
        if self.fill_bytes_per_clock_by_width and (
            self.fill_access_bytes is None or self.fill_bytes_per_clock is None
        ):
            raise ValueError(
                "fill_bytes_per_clock_by_width needs fill_bytes_per_clock and fill_access_bytes "
                "(the rate it adds to); allowed: set both, or leave it out"
            )
        return self

    @model_validator(mode="after")
    def _one_mn_major_is_k_major(self) -> KernelFamily:
        extra = sorted(set(self.one_mn_major_precisions) - set(self.k_major_precisions))
        if extra:
            raise ValueError(
                f"one_mn_major_precisions {extra} are not in k_major_precisions "
                f"{self.k_major_precisions}; allowed: a subset of k_major_precisions"
            )
        return self


def cta_register_bytes(
    tile: ThreadBlockTile, fam: KernelFamily | None, staged_bytes: int, overhead_per_thread: int
) -> int:
    """Register-file bytes one CTA of ``tile`` holds: the family's ``registers_per_thread``
    a thread when it states them, else the tile's FP32 accumulators plus
    ``overhead_per_thread`` registers a thread, and the stages (``staged_bytes``) when the
    family holds them in registers."""
    threads = tile.warps * 32
    if fam is not None and fam.registers_per_thread is not None:
        return fam.registers_per_thread * 4 * threads
    regs = tile.m * tile.n * 4 + threads * overhead_per_thread * 4
    return regs + (staged_bytes if fam is not None and fam.stages_in_registers else 0)
