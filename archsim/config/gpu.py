"""NVIDIA Tensor Core GPU configuration (V100, A100, H100 and variants)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from archsim.config.base import ArchsimModel
from archsim.config.components import ClockConfig, DramConfig, TechnologyConfig
from archsim.config.gpu_conv import ConvLibraryConfig
from archsim.config.gpu_family import (
    MAX_MENU_ITEMS,
    MIN_FRACTION,
    KernelFamily,
    KernelRate,
    KernelSeconds,
    Precision,
    ThreadBlockTile,
    cta_register_bytes,
    rate_key,
)
from archsim.config.gpu_power import GpuPowerConfig
from archsim.config.names import Name

__all__ = [
    "CudaCoreConfig",
    "DramPageConfig",
    "FrameworkKernelConfig",
    "GemmLibraryConfig",
    "GpuConfig",
    "KernelFamily",
    "L2Config",
    "LaunchConfig",
    "SmMemoryConfig",
    "TensorCoreConfig",
    "ThreadBlockTile",
    "rate_key",
]

#: most SM cycles a latency field may hold (an L2 hit is ~200-300, an MMA chain ~30): larger
#: values are typing mistakes, and would overflow the timing kernels' 64-bit cycle counts
MAX_LATENCY_CYCLES = 100_000
#: most bytes per SM clock a bandwidth field may hold (H100 L2: 5,120)
MAX_BYTES_PER_CLOCK = 1_000_000.0


class TensorCoreConfig(ArchsimModel):
    """Tensor cores of one SM and the warp-level MMA instruction that drives them."""

    per_sm: PositiveInt = Field(
        le=1024,
        description="Tensor cores per SM (V100: 8), 1 to 1,024; with fp16_fma_per_clock and sms "
        "it sets the peak FMA rate.",
    )
    sub_cores_per_sm: PositiveInt = Field(
        default=4,
        description="SM sub-partitions (warp schedulers), each issuing to per_sm / this tensor "
        "cores; a CTA's warps are spread over them. per_sm must be a multiple.",
    )
    fp16_fma_per_clock: PositiveInt = Field(
        le=1_000_000, description="Dense FP16 FMA per tensor core per clock, 1 to 1,000,000."
    )
    precision_rate: dict[Precision, Annotated[float, Field(ge=2**-10, le=2**10)]] = Field(
        description="FMA rate per precision relative to FP16 (absent = not supported), "
        "1/1024 to 1024."
    )
    instruction: str = Field(
        min_length=1, description="Warp-level MMA instruction (a label), e.g. HMMA.884."
    )
    instruction_mnk: tuple[PositiveInt, PositiveInt, PositiveInt] = Field(
        description="M, N, K elements of one MMA instruction, K for 16-bit operands (scaled "
        "by 2 / operand bytes for TF32 and FP8); K is also the accumulation chunk."
    )
    instruction_latency_cycles: int = Field(
        ge=1,
        le=MAX_LATENCY_CYCLES,
        description="SM clock cycles from issuing an MMA to a dependent MMA reading its "
        "accumulator (the k-loop's dependent chain).",
    )
    instruction_warps: PositiveInt = Field(
        default=1,
        le=32,
        description="Warps that issue one MMA instruction together (Hopper wgmma: 4); at most "
        "the 32 warps of a 1,024-thread block.",
    )
    sustained_fraction: float = Field(
        default=1.0,
        ge=MIN_FRACTION,
        le=1.0,
        description="Measured sustained MMA throughput / peak (issue bubbles); 1.0 = none.",
    )
    mma_energy_pj: NonNegativeFloat | None = Field(
        default=None, description="Override: energy of one FP16 FMA on a tensor core, pJ."
    )

    @model_validator(mode="after")
    def _sub_cores(self) -> TensorCoreConfig:
        if self.per_sm % self.sub_cores_per_sm:
            raise ValueError(
                f"per_sm={self.per_sm} must be a multiple of sub_cores_per_sm="
                f"{self.sub_cores_per_sm}"
            )
        if "fp16" not in self.precision_rate:
            raise ValueError("precision_rate must include fp16 (the reference rate)")
        return self


class SmMemoryConfig(ArchsimModel):
    """Per-SM storage."""

    register_file_bytes: PositiveInt = Field(
        description="Register file per SM, bytes; bounds co-resident CTAs (accumulators plus "
        "overhead_registers_per_thread per thread)."
    )
    l1_shared_bytes: PositiveInt = Field(
        description="Combined L1 data cache and shared memory per SM, bytes (the SRAM a sweep's "
        "sram_bytes_per_pe counts with the register file)."
    )
    max_shared_bytes: PositiveInt = Field(
        description="Largest shared-memory carve-out of l1_shared_bytes per SM, bytes; bounds "
        "a tile's stages x (m + n) x k operand buffers and co-resident CTAs."
    )
    shared_bandwidth_bytes_per_clock: float = Field(
        ge=1.0,
        le=MAX_BYTES_PER_CLOCK,
        description="Shared-memory bandwidth of one SM, bytes per clock; also the most a CTA's "
        "global->shared copies can fill per clock.",
    )
    max_warps: PositiveInt = Field(default=64, description="Resident warps per SM.")
    max_ctas: PositiveInt = Field(default=32, description="Resident CTAs per SM.")
    overhead_registers_per_thread: int = Field(
        default=32,
        ge=0,
        description="32-bit registers per thread besides the accumulators (addresses, fragments).",
    )

    @model_validator(mode="after")
    def _shared_fits(self) -> SmMemoryConfig:
        if self.max_shared_bytes > self.l1_shared_bytes:
            raise ValueError("max_shared_bytes must not exceed l1_shared_bytes")
        return self


class L2Config(ArchsimModel):
    """The shared last-level cache."""

    size_bytes: PositiveInt = Field(
        description="L2 capacity, bytes; a GEMM whose compulsory A + B traffic fits reads each "
        "operand from HBM once."
    )
    bandwidth_bytes_per_clock: float = Field(
        ge=1.0,
        le=MAX_BYTES_PER_CLOCK,
        description="Theoretical L2 -> SM bandwidth over the whole GPU, bytes per SM clock "
        "(shared by the active SMs; scaled by achievable_fraction).",
    )
    hit_latency_cycles: int = Field(
        default=200,
        ge=1,
        le=MAX_LATENCY_CYCLES,
        description="SM clock cycles from a tile load's issue to its data on an L2 hit (misses "
        "blend in hbm.latency_s by the miss ratio).",
    )
    achievable_fraction: float = Field(
        default=1.0,
        ge=MIN_FRACTION,
        le=1.0,
        description="Measured achievable / theoretical bandwidth.",
    )
    resident_across_calls: bool = Field(
        default=False,
        description="A GEMM whose A, B and D fit in L2 finds them there when it is called back "
        "to back (DeepBench and CUDA-graph timings repeat one call without flushing L2): its "
        "loads cost no HBM traffic. False: every call reads A and B from HBM.",
    )
    resident_capacity_bytes: PositiveInt | None = Field(
        default=None,
        description="Largest A + B + D that stays resident across calls, bytes (None: size_bytes).",
    )

    @property
    def kept_bytes(self) -> int:
        """Bytes L2 keeps from one use to the next: ``resident_capacity_bytes``, else its
        size."""
        return self.resident_capacity_bytes or self.size_bytes

    @model_validator(mode="after")
    def _resident_fits(self) -> L2Config:
        if (
            self.resident_capacity_bytes is not None
            and self.resident_capacity_bytes > self.size_bytes
        ):
            raise ValueError(
                f"resident_capacity_bytes {self.resident_capacity_bytes} is more than the L2 holds "
                f"({self.size_bytes} B); allowed: at most size_bytes"
            )
        return self


class DramPageConfig(ArchsimModel):
    """DRAM pages and row activations: the limit on an operand read as short pieces of many rows.

    A GEMM operand stored with K contiguous (row-major A of m x k, or B stored n x k) is read by
    each CTA as ``k-step x element`` bytes of every one of its tile's rows per k-step. With many
    such rows in flight each piece opens its own DRAM page, unless rows of the tile fall in one
    page (pages are ``column_address_bits``: a row pitch that is a power of two can put two
    rows' pieces in the same page). Loads of such an operand then move at most
    ``activations_per_s x bytes per activation``; operands contiguous along M or N are read in
    whole pages and keep the HBM bandwidth.
    """

    page_bytes: PositiveInt = Field(description="Bytes of one DRAM page (row buffer) of a bank.")
    column_address_bits: list[int] = Field(
        min_length=1,
        description="Physical address bits that select a byte within a DRAM page (the others "
        "select channel, bank and row); 2 ** len must equal page_bytes.",
    )
    activations_per_s: PositiveFloat = Field(
        description="Row activations the whole memory can issue per second (channels / tRRD)."
    )

    @model_validator(mode="after")
    def _bits_make_a_page(self) -> DramPageConfig:
        bits = self.column_address_bits
        if len(set(bits)) != len(bits) or min(bits) < 0 or 2 ** len(bits) != self.page_bytes:
            shown = str(bits) if len(bits) <= 16 else f"(a list of {len(bits)})"
            raise ValueError(
                f"column_address_bits {shown} must be {self.page_bytes.bit_length() - 1} "
                f"distinct non-negative bit indices (2 ** count = page_bytes {self.page_bytes})"
            )
        return self


class CudaCoreConfig(ArchsimModel):
    """The SM's FP32 CUDA cores (used when a GEMM cannot run on the tensor cores)."""

    fp32_fma_per_clock: PositiveInt = Field(
        le=1_000_000, description="FP32 FMA per SM per clock, 1 to 1,000,000."
    )
    fp16_fma_per_clock: PositiveInt = Field(
        le=1_000_000,
        description="FP16 FMA per SM per clock (packed HFMA2), used with FP16 accumulation.",
    )
    fma_latency_cycles: PositiveInt = Field(default=4, description="Dependent FFMA latency.")
    sustained_fraction: float = Field(
        default=1.0,
        ge=MIN_FRACTION,
        le=1.0,
        description="Measured sustained FMA issue / peak in library SGEMM kernels; 1.0 = none.",
    )


class GemmLibraryConfig(ArchsimModel):
    """What the GEMM library (cuBLAS/CUTLASS) may do: kernel families and split-K."""

    families: list[KernelFamily] = Field(
        default=[KernelFamily(name="tensor_op", library_behaviour="any shape on tensor cores")],
        min_length=1,
        max_length=MAX_MENU_ITEMS,
        description="Kernel families, fastest first; a GEMM runs in the first it is eligible for.",
    )
    split_k_factors: list[PositiveInt] = Field(
        default=[1, 2, 4, 8, 16, 32], min_length=1, description="Split-K slice counts tried."
    )
    cuda_core_tiles: list[ThreadBlockTile] = Field(
        default=[
            ThreadBlockTile(m=32, n=128, k=16, warps=2, stages=2),
            ThreadBlockTile(m=128, n=32, k=16, warps=2, stages=2),
        ],
        max_length=MAX_MENU_ITEMS,
        description="CTA tiles the CUDA-core (SIMT) GEMM kernels have besides the preset's tile "
        "menu: CUTLASS's skinny SIMT tiles (python/cutlass_library/generator.py, "
        "GenerateSM50_Simt: 32x128x8 and 128x32x8, 2 warps, 2 stages; k given at 16 bits), so "
        "an FP32 GEMM with a dimension of 1-32 (a matrix-vector product) is not computed on "
        "64-row tiles of padding. A tile is offered only to GEMMs whose shorter side (M or N) "
        "fits in its shorter side, the shapes such kernels are for.",
    )

    @model_validator(mode="after")
    def _no_conv_overhead(self) -> GemmLibraryConfig:
        bad = [f.name for f in self.families if f.kernel_overhead_s is not None]
        if bad:
            raise ValueError(
                f"families {bad} set kernel_overhead_s; allowed: only in conv_library families "
                "(a GEMM library kernel's whole time is the GEMM model's)"
            )
        flat = [f.name for f in self.families if f.conv_reduction != "per_tap"]
        if flat:
            raise ValueError(
                f"families {flat} set conv_reduction; allowed: only in conv_library families "
                "(a GEMM has no filter taps)"
            )
        if 1 not in self.split_k_factors:
            raise ValueError(
                f"split_k_factors {self.split_k_factors} lacks 1; allowed: a list with 1 (the "
                "unsplit kernel, the only plan for a GEMM with a wave of output tiles or more)"
            )
        return self


class LaunchConfig(ArchsimModel):
    """Cost of each kernel launch, in seconds of wall time (not SM clock cycles)."""

    mode: Literal["graph", "eager"] = Field(
        default="graph",
        description="graph: back-to-back kernels replayed from a CUDA graph (DeepBench and the "
        "measurement files time so); eager: launched one by one from Python, the host issuing "
        "each while the GPU runs the ones before it.",
    )
    graph_s: KernelSeconds = Field(
        description="Per kernel in a CUDA graph, s: the GPU's own cost of starting a kernel "
        "after the one before it, in either mode."
    )
    eager_s: KernelSeconds = Field(
        description="Per kernel launched eagerly from Python, s: the host's interval between "
        "two launches. The host issues while the GPU runs, so an eager kernel takes the longer "
        "of this and its time in a graph (a back-to-back loop of one tiny kernel measures it)."
    )

    @property
    def seconds(self) -> float:
        """The least time one kernel takes on the stream in the configured mode, s: the
        graph's per-kernel cost, or the host's launch interval when eager."""
        return self.graph_s if self.mode == "graph" else max(self.graph_s, self.eager_s)


class FrameworkKernelConfig(ArchsimModel):
    """The framework's own CUDA kernels around the convs of an inference pass, as measured on
    this GPU: eval-mode batch-norm and max-pool. Their rates are the kernels' own (the same
    whether the tensor sits in L2 or in HBM), not the memory's. The defaults are the plain
    model: one batch-norm kernel, every kernel at HBM speed (``hbm_achievable_fraction``)."""

    batchnorm_parameter_kernels: NonNegativeInt = Field(
        default=0,
        le=16,
        description="Kernels each eval-mode batch-norm runs on its per-channel running "
        "statistics before it normalises (PyTorch: a dtype copy and the inverse standard "
        "deviation); each costs a launch.",
    )
    batchnorm_bytes_per_s: KernelRate | None = Field(
        default=None,
        description="The normalising kernel's rate, bytes read + written per s (None: HBM at "
        "hbm_achievable_fraction).",
    )
    batchnorm_floor_s: KernelSeconds = Field(
        default=0.0,
        description="Least time of the normalising kernel on the stream in a CUDA graph, the "
        "gap to the next kernel included, s (the launch cost applies when it is larger).",
    )
    maxpool_bytes_per_s: KernelRate | None = Field(
        default=None,
        description="Max-pool's rate, bytes of input read and of values and int64 indices "
        "written per s, for overlapping windows (window > stride, e.g. ResNet's 3x3/2; None: "
        "HBM at hbm_achievable_fraction).",
    )
    maxpool_disjoint_bytes_per_s: KernelRate | None = Field(
        default=None,
        description="The same for windows no wider than the stride (VGG's 2x2/2), each input "
        "read once (None: HBM at hbm_achievable_fraction).",
    )
    bias_add_bytes_per_s: KernelRate | None = Field(
        default=None,
        description="Rate of the per-channel bias add after a conv (a broadcast add), bytes "
        "read + written per s (None: HBM at hbm_achievable_fraction).",
    )
    bias_add_floor_s: KernelSeconds = Field(
        default=0.0,
        description="Least time of the bias add on the stream in a CUDA graph, the gap to the "
        "next kernel included, s (the launch cost applies when it is larger).",
    )


class GpuConfig(ArchsimModel):
    """A GPU of SMs with tensor cores, L2 and HBM."""

    schema_version: Literal[1]
    accelerator: Literal["tensor_core"]
    name: Name
    description: str = ""
    clock: ClockConfig
    technology: TechnologyConfig
    sms: PositiveInt = Field(
        le=100_000, description="Streaming multiprocessors (V100: 80, H100 SXM: 132), 1 to 100,000."
    )
    nvlink_sharp: bool = Field(
        default=False,
        description="Whether the GPU takes part in NVLink SHARP (NVLS: an NVSwitch that reduces "
        "in the switch, topology.nvswitch_reduction of a system; Hopper and later).",
    )
    tensor_cores: TensorCoreConfig
    sm_memory: SmMemoryConfig
    l2: L2Config
    hbm: DramConfig
    hbm_achievable_fraction: float = Field(
        default=1.0,
        ge=MIN_FRACTION,
        le=1.0,
        description="Achievable / peak HBM bandwidth (measured).",
    )
    hbm_capacity_bytes: PositiveInt | None = Field(
        default=None,
        description="HBM capacity, bytes (datasheet); a layer whose operands and output do not "
        "fit is a run warning (the model times it as if they did). None: not checked.",
    )
    dram_pages: DramPageConfig | None = Field(
        default=None,
        description="DRAM page size, page address bits and activation rate (None: every operand "
        "streams at the HBM bandwidth).",
    )
    cuda_cores: CudaCoreConfig
    library: GemmLibraryConfig = GemmLibraryConfig()
    conv_library: ConvLibraryConfig = Field(
        default=ConvLibraryConfig(), description="Conv algorithms (cuDNN) and their rules."
    )
    launch: LaunchConfig
    framework_kernels: FrameworkKernelConfig = Field(
        default=FrameworkKernelConfig(),
        description="The framework's batch-norm and max-pool kernels (inference passes).",
    )
    tiles: list[ThreadBlockTile] = Field(
        min_length=1, max_length=MAX_MENU_ITEMS, description="CTA tile menu."
    )
    tdp_w: PositiveFloat = Field(
        description="Board thermal design power from the datasheet, W (informational; the clock "
        "solve uses power.power_limit_w)."
    )
    power: GpuPowerConfig | None = Field(default=None, description="Board power; None: fixed clock")

    @property
    def launch_overhead_s(self) -> float:
        """The GPU's cost of starting each kernel (``launch.graph_s``), s, in either mode; an
        eager kernel also takes at least :attr:`min_kernel_s`."""
        return self.launch.graph_s

    @property
    def min_kernel_s(self) -> float:
        """The least time one kernel takes on the stream, launch included, s: ``graph_s``, or
        when eager the host's launch interval ``eager_s`` (the host issues the next kernel while
        the GPU runs this one, so only a kernel shorter than that interval waits for it)."""
        return self.launch.seconds

    @property
    def peak_fma_per_cycle(self) -> int:
        """Dense FP16 FMA per clock over the whole GPU."""
        return self.sms * self.tensor_cores.per_sm * self.tensor_cores.fp16_fma_per_clock

    @property
    def peak_macs_per_cycle(self) -> int:
        """Alias of :attr:`peak_fma_per_cycle` (the results' utilization denominator)."""
        return self.peak_fma_per_cycle

    def peak_tflops(self, precision: str = "fp16") -> float:
        """Dense peak in TFLOPS (2 FLOP per FMA) at ``precision``; 0 if unsupported."""
        rates = self.tensor_cores.precision_rate
        rate = rates.get(rate_key(precision), 0.0)  # type: ignore[call-overload]
        return 2 * self.peak_fma_per_cycle * rate * self.clock.frequency_hz / 1e12

    @model_validator(mode="after")
    def _nominal_clock_on_the_curve(self) -> GpuConfig:
        """With a ``power`` block the SM clock is the power model's and ``clock.frequency_hz``
        is the unit layer cycles are counted in (and the clock peaks are quoted at): it must be
        a clock the part has (1 Hz rounded every layer up to a whole second)."""
        p = self.power
        if p is not None:
            lo, hi, f = p.vf_curve[0].clock_hz, p.vf_curve[-1].clock_hz, self.clock.frequency_hz
            if not lo <= f <= hi:
                raise ValueError(
                    f"clock.frequency_hz: {f:g} Hz lies outside power.vf_curve ({lo:g} .. "
                    f"{hi:g} Hz), and with a power block the power model sets the SM clock; "
                    f"allowed: a clock in {lo:g} .. {hi:g} Hz (power.locked_clock_hz locks the "
                    "SM clock)"
                )
        return self

    @model_validator(mode="after")
    def _tiles_fit(self) -> GpuConfig:
        """Every tile of the menu and of each family fits one SM: its stages in shared memory,
        or (``stages_in_registers``) its registers (``cta_register_bytes``, as occupancy counts
        them) in the register file; a family's ``registers_per_thread`` holds at least its
        tiles' FP32 accumulators."""
        sm = self.sm_memory
        tiles = [(f"tiles.{i}", t, None) for i, t in enumerate(self.tiles)]
        for where, fams in self._family_lists():
            for j, fam in enumerate(fams):
                own = [(f"{where}.{j}.tiles.{i}", t) for i, t in enumerate(fam.tiles or [])]
                tiles += [(w, t, fam) for w, t in own or [(f"{where}.{j}", t) for t in self.tiles]]
        for where, t, fam in tiles:
            staged = t.stages * (t.m + t.n) * t.k * 2  # FP16 A and B tiles per stage
            threads = t.warps * 32
            acc = -(-t.m * t.n // threads)  # FP32 accumulator registers a thread
            regs = fam.registers_per_thread if fam is not None else None
            if regs is not None and regs < acc:
                raise ValueError(
                    f"{where}: registers_per_thread {regs} is fewer than the {acc} FP32 "
                    f"accumulators a thread of the {t.m}x{t.n} tile ({t.warps} warps) holds; "
                    f"allowed >= {acc}"
                )
            in_regs = fam is not None and fam.stages_in_registers
            if in_regs or regs is not None:
                need = cta_register_bytes(t, fam, staged, sm.overhead_registers_per_thread)
                what = (
                    f"{regs} registers x {threads} threads"
                    if regs is not None
                    else f"{t.m}x{t.n}x{t.k} with {t.stages} stages in registers"
                )
                if need > sm.register_file_bytes:
                    raise ValueError(
                        f"{where}: {what} needs {need} B of registers; allowed <= "
                        f"{sm.register_file_bytes}"
                    )
            if not in_regs and staged > sm.max_shared_bytes:
                raise ValueError(
                    f"{where}: {t.m}x{t.n}x{t.k} with {t.stages} stages needs {staged} B of "
                    f"shared memory; allowed <= {sm.max_shared_bytes}"
                )
        return self

    def _family_lists(self) -> list[tuple[str, list[KernelFamily]]]:
        """(dotted path, families) of every family list: the GEMM library's and the conv
        library's."""
        lib = self.conv_library
        out = [("library.families", self.library.families)]
        for name in ("families", "grouped_families", "large_filter_families",
                     "narrow_channel_families"):  # fmt: skip
            out.append((f"conv_library.{name}", getattr(lib, name) or []))
        return out
