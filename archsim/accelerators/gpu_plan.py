"""How a GEMM maps onto a GPU: CTA tiles, split-K, occupancy, MMA instructions, L2 reuse.

A *plan* is one way a cuBLAS/CUTLASS-like library could run a :class:`GemmProblem`: a kernel
family (the first of ``library.families`` the problem is eligible for: precision, layout and
leading-dimension alignment), a tile from that family's menu, a split-K factor, and tensor cores
or the CUDA cores (FP32 operands, or a family that falls back to them). ``tensor_core.py``
simulates every plan and keeps the fastest (the library's autotuned choice).

Clock domains: everything here is in SM clock cycles or bytes; nothing depends on the clock,
so plans and L2 traffic are memoised across clocks (:func:`plans_for`, ``gpu_l2.l2_traffic``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from archsim.config.gpu import DramPageConfig, GpuConfig, KernelFamily, ThreadBlockTile, rate_key
from archsim.config.gpu_family import cta_register_bytes
from archsim.datapath.gpu_sm import warp_job_cycles
from archsim.errors import SimulationError
from archsim.workload.gemm import GemmProblem

__all__ = [
    "KernelPlan",
    "accumulation_chunk_k",
    "activation_limited_load_bandwidth",
    "cdiv",
    "check_supported",
    "clockless_key",
    "eligible",
    "families_for",
    "family_for",
    "fragment_bytes",
    "leading_dimensions_bytes",
    "plans_for",
    "shared_read_bytes",
    "stream_k_cut_tiles",
    "takes_precision",
    "tensor_cores_take",
    "widest_load_bytes",
]


@dataclass(frozen=True)
class KernelPlan:
    """One kernel configuration and the per-SM quantities the pipeline model needs."""

    tile: ThreadBlockTile
    split_k: int
    tensor_ops: bool
    family: str  # kernel family name (``library.families``)
    fill_bytes_per_clock: float  # global->shared fill rate of one SM, bytes per SM clock
    k_step: int  # K elements per main-loop step (the tile's k scaled to the operand width)
    ctas_per_sm: int
    grid_m: int
    grid_n: int
    ctas: int  # grid_m * grid_n * split_k * batch
    k_slice: int  # K elements per split slice
    steps: int  # k-steps per CTA
    groups: int  # dependent MMA groups per warp job
    frags: int  # independent MMA instructions per group
    issue_cycles: int
    mma_latency: int
    bubble_cycles: int
    stage_bytes: int  # A + B bytes per k-step of one CTA (into its shared memory)
    l2_stage_bytes: int  # of which read from L2 by this CTA (B shared under TMA multicast)
    epilogue_bytes: int  # bytes one CTA stores (and reads for C) at the end
    stream_k: bool = False  # persistent CTAs share the tiles' k-iterations evenly (Stream-K)
    transposes: int = 0  # operands first rewritten K-major by a transpose kernel each
    transpose_bytes: int = 0  # bytes of those operands (each read once and written once)
    fragment_bytes: int = 0  # shared->register fragment reads per k-step of one CTA (mma.sync)
    n_fastest: bool = False  # CTAs launched N-tile fastest (a cluster sharing A rasters along N)
    cta_fill_bytes_per_clock: float | None = None  # one CTA's own load rate (None: no limit)

    @property
    def name(self) -> str:
        """``MxNxK`` of the tile (K of this precision), ``/splitkS`` when split, ``/streamk``
        under Stream-K, ``/simt`` on the CUDA cores (:attr:`kernel` adds the family)."""
        t = self.tile
        s = f"{t.m}x{t.n}x{self.k_step}"
        if self.split_k > 1:
            s += f"/splitk{self.split_k}"
        if self.stream_k:
            s += "/streamk"
        return s if self.tensor_ops else s + "/simt"

    @property
    def kernel(self) -> str:
        """``family:name``."""
        return f"{self.family}:{self.name}"

    @property
    def warp_job(self) -> int:
        """Sub-core cycles of one warp's MMAs for one k-step."""
        return int(
            warp_job_cycles(
                self.groups, self.frags, self.issue_cycles, self.mma_latency, self.bubble_cycles
            )
        )


def cdiv(a: int, b: int) -> int:
    """Ceiling of a / b for positive integers."""
    return -(-a // b)


def _leading(rows: int, cols: int) -> int:
    """Leading dimension (elements) of a row-major ``rows x cols`` matrix as a library gets it:
    ``cols``, except for a single column, a contiguous vector whose stride between rows of
    one element says nothing about alignment. PyTorch hands such a tensor to cuBLAS as the
    other layout, with the vector's length as leading dimension (``prepare_matrix_for_cublas``
    in ATen's ``Blas.cpp``: a stride-1 dimension next to a size-1 one), so a GEMV with N = 1
    runs the aligned kernels as its M = 1 transpose does."""
    return rows if cols == 1 else cols


def leading_dimensions_bytes(prob: GemmProblem) -> tuple[int, int, int]:
    """Leading dimensions of A, B and D in bytes (row-major storage: A m x k or, transposed,
    k x m; B k x n or n x k; D m x n); a stored single column counts as its length (see
    ``_leading``)."""
    lda = _leading(prob.k, prob.m) if prob.transpose_a else _leading(prob.m, prob.k)
    ldb = _leading(prob.n, prob.k) if prob.transpose_b else _leading(prob.k, prob.n)
    ldd = _leading(prob.m, prob.n)
    return lda * prob.in_bytes, ldb * prob.in_bytes, ldd * prob.out_bytes


def widest_load_bytes(prob: GemmProblem) -> int:
    """Widest global load (bytes, a power of two up to 16) of a kernel whose one alignment N
    (elements) divides the leading dimensions of A, B and D: a library kernel for alignment
    N loads N elements per access (CUTLASS: ``AlignedArray<Element, N>``; ``cp.async`` copies
    4, 8 or 16 bytes), so e.g. FP16 with an odd leading dimension loads one 2-byte element per
    instruction. D counts in elements: a CUTLASS 2.x kernel has one alignment for its
    operands and its epilogue, and cuBLAS names it once (``..._align1``). An H100 runs a
    704 x 141 x 2392 fp16 NT GEMM, whose A and B rows are 16-byte multiples but whose 141-
    element D rows are not, with ``cutlass_75_tensorop_s1688gemm_f16_128x128_tn_align1``
    (``random_gemms_2031/kernels_gemm_random.csv`` in benchmarks/measured/h100_2026-11-27)."""
    return math.gcd(*_one_alignment_leading(prob), 16)


def _one_alignment_leading(prob: GemmProblem) -> tuple[int, int, int]:
    """Leading dimensions of A, B and D in bytes of A's element type: D counted in elements,
    as a kernel with one alignment for all three counts it."""
    lda, ldb, ldd = leading_dimensions_bytes(prob)
    return lda, ldb, ldd // prob.out_bytes * prob.in_bytes


def _bytes_per_activation(pages: DramPageConfig, pitch: int, rows: int, piece: int) -> float:
    """Bytes read per DRAM page opened when ``rows`` rows ``pitch`` bytes apart are each read
    ``piece`` bytes at one k offset (an operand's tile rows in one k-step): the rows' pieces over
    the distinct pages they fall in (``column_address_bits`` clear), at most a page."""
    got = rows * min(piece, pitch)
    if piece >= pages.page_bytes or got <= pages.page_bytes:
        return float(pages.page_bytes)
    mask = ~sum(1 << b for b in pages.column_address_bits)
    opened = np.unique((np.arange(rows, dtype=np.int64) * pitch) & mask).size
    return min(float(pages.page_bytes), got / opened)


def activation_limited_load_bandwidth(
    cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan
) -> float | None:
    """Bytes per second the main loop's A and B loads can take from DRAM when each DRAM page
    opened serves only the bytes :func:`_bytes_per_activation` finds (``cfg.dram_pages``);
    None when the part has no page model.

    An operand stored with K contiguous (A m x k, i.e. not ``transpose_a``; B stored n x k,
    i.e. ``transpose_b``) is read as one ``k_step``-element piece of each tile row per k-step,
    rows a leading dimension apart; an operand contiguous along M or N (and a conv's gathered
    A, whose tile rows are neighbouring pixels) is read in whole pages. A and B are weighted
    by their compulsory bytes; pages are taken to close between k-steps (many rows per bank).
    """
    pages = cfg.dram_pages
    if pages is None:
        return None
    lda, ldb, _ = leading_dimensions_bytes(prob)
    piece = plan.k_step * prob.in_bytes
    a_bytes = prob.m * prob.a_unique_fraction
    a_kmajor = not prob.transpose_a and prob.a_unique_fraction >= 1.0
    per_byte = 0.0
    for share, kmajor, pitch, rows in (
        (a_bytes, a_kmajor, lda, min(plan.tile.m, prob.m)),
        (float(prob.n), prob.transpose_b, ldb, min(plan.tile.n, prob.n)),
    ):
        size = _bytes_per_activation(pages, pitch, rows, piece) if kmajor else pages.page_bytes
        per_byte += share / size
    per_byte /= a_bytes + prob.n
    return pages.activations_per_s / per_byte


def mn_major_operands(prob: GemmProblem) -> int:
    """How many of A and B are stored MN-major: A stored k x m, B stored k x n."""
    return int(prob.transpose_a) + int(not prob.transpose_b)


def tensor_cores_take(cfg: GpuConfig, precision: str) -> bool:
    """Whether the part's tensor cores take ``precision``."""
    return rate_key(precision) in cfg.tensor_cores.precision_rate


def takes_precision(cfg: GpuConfig, fam: KernelFamily, precision: str) -> bool:
    """Whether ``fam`` runs ``precision``: among its precisions, and on a tensor-op family one
    the part's tensor cores take."""
    if fam.precisions is not None and rate_key(precision) not in fam.precisions:
        return False
    return not fam.tensor_ops or tensor_cores_take(cfg, precision)


def eligible(cfg: GpuConfig, fam: KernelFamily, prob: GemmProblem) -> bool:
    """Whether ``fam`` can run ``prob``: its precisions, the part's tensor-core precisions,
    its operand-layout and size rules and its leading-dimension alignment."""
    if not takes_precision(cfg, fam, prob.precision):
        return False
    key = rate_key(prob.precision)
    if key in fam.one_mn_major_precisions and mn_major_operands(prob) == 2:
        return False
    if fam.max_macs is not None and prob.m * prob.n * prob.k * prob.batch > fam.max_macs:
        return False
    if fam.alignment_in_elements:
        leading = _one_alignment_leading(prob)
    else:
        leading = leading_dimensions_bytes(prob)
    return all(ld % fam.min_alignment_bytes == 0 for ld in leading)


def _eligible_families(cfg: GpuConfig, prob: GemmProblem) -> list[KernelFamily]:
    """The families of ``library.families`` that ``prob`` is eligible for, in preset order."""
    return [f for f in cfg.library.families if eligible(cfg, f, prob)]


def family_for(cfg: GpuConfig, prob: GemmProblem) -> KernelFamily | None:
    """The first kernel family ``prob`` is eligible for; None: plain CUDA-core kernels (FP32
    operands, or no family takes the shape)."""
    return next(iter(_eligible_families(cfg, prob)), None)


def check_supported(cfg: GpuConfig, prob: GemmProblem) -> None:
    """Raise ``SimulationError`` for a precision the part cannot run at all."""
    rates = cfg.tensor_cores.precision_rate
    if prob.precision != "fp32" and rate_key(prob.precision) not in rates:
        allowed = ", ".join([*rates, "fp32 (CUDA cores)"])
        raise SimulationError(
            f"layer {prob.layer!r}: precision {prob.precision!r} is not supported by "
            f"{cfg.name}; allowed: {allowed}"
        )


def _instruction(
    cfg: GpuConfig, prob: GemmProblem, tile: ThreadBlockTile, k_step: int, tensor_ops: bool,
    rate_fraction: float,
) -> tuple[int, int, int, int, int]:  # fmt: skip
    """(groups, frags, issue_cycles, latency, bubble_cycles) of one warp job."""
    tc = cfg.tensor_cores
    warp_fma = tile.m * tile.n * k_step / tile.warps
    if tensor_ops:
        sub_rate = tc.per_sm / tc.sub_cores_per_sm * tc.fp16_fma_per_clock
        sub_rate *= tc.precision_rate[rate_key(prob.precision)]  # type: ignore[index]
        im, inn, ik16 = tc.instruction_mnk
        ik = max(1, ik16 * 2 // prob.in_bytes)  # the instruction's k is 32 bytes of operand
        instr_fma = im * inn * ik / tc.instruction_warps
        groups = cdiv(k_step, ik)
        latency = tc.instruction_latency_cycles
        sustained = tc.sustained_fraction * rate_fraction
    else:  # one FMA per thread of the warp, a dependent chain per k
        cc = cfg.cuda_cores
        per_sm = cc.fp16_fma_per_clock if prob.accumulate == "fp16" else cc.fp32_fma_per_clock
        sub_rate = per_sm / tc.sub_cores_per_sm
        instr_fma = 32.0
        groups = k_step
        latency = cfg.cuda_cores.fma_latency_cycles
        sustained = cc.sustained_fraction
    instr_fma = min(instr_fma, warp_fma / groups)
    frags = max(1, math.ceil(warp_fma / (groups * instr_fma) - 1e-9))
    issue = max(1, math.ceil(instr_fma / sub_rate - 1e-9))
    job = int(warp_job_cycles(groups, frags, issue, latency, 0))
    bubble = math.ceil(job / sustained - 1e-9) - job
    return groups, frags, issue, latency, bubble


def accumulation_chunk_k(cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan) -> int:
    """K elements one instruction sums before its result is rounded into the accumulator.

    Tensor ops: the MMA instruction's k, which is given for 16-bit inputs, halves for 32-bit
    TF32 inputs (A100/H100 m16n8k8 and k8 wgmma; V100 HMMA.884: 4) and doubles for 8-bit ones
    (k32 wgmma). CUDA cores: 1, one FMA.
    """
    if not plan.tensor_ops:
        return 1
    k16 = cfg.tensor_cores.instruction_mnk[2]
    return max(1, min(plan.k_step, k16 * 2 // prob.in_bytes))


def k_step_elements(tile: ThreadBlockTile, prob: GemmProblem) -> int:
    """K elements of one main-loop step: the tile's 16-bit k at the operand width (the same
    bytes per stage at every precision; see :class:`ThreadBlockTile`)."""
    return max(1, tile.k * 2 // prob.in_bytes)


def _occupancy(
    cfg: GpuConfig, prob: GemmProblem, tile: ThreadBlockTile, fam: KernelFamily | None = None
) -> int:
    """Co-resident CTAs per SM: shared memory, registers, warps and the CTA limit; a family
    with ``stages_in_registers`` holds the stages' operand tiles in registers, not shared
    memory; one with ``registers_per_thread`` takes that many registers a thread."""
    sm = cfg.sm_memory
    staged = tile.stages * (tile.m + tile.n) * k_step_elements(tile, prob) * prob.in_bytes
    regs = cta_register_bytes(tile, fam, staged, sm.overhead_registers_per_thread)
    bounds = [sm.max_warps // tile.warps, sm.max_ctas, sm.register_file_bytes // regs]
    if fam is None or not fam.stages_in_registers:
        bounds.append(sm.max_shared_bytes // staged)
    return min(bounds)


def plans_for(cfg: GpuConfig, prob: GemmProblem) -> list[KernelPlan]:
    """Every feasible (tile, split-K) plan for ``prob`` in its kernel family, in menu order
    (memoised: plans do not depend on the clock)."""
    check_supported(cfg, prob)
    key = (clockless_key(cfg), prob)
    if key not in _PLAN_CACHE:
        if len(_PLAN_CACHE) >= _CACHE_SIZE:
            _PLAN_CACHE.clear()
        _PLAN_CACHE[key] = tuple(_build_plans(cfg, prob))
    return list(_PLAN_CACHE[key])


_CACHE_SIZE = 4096
_PLAN_CACHE: dict[tuple[str, GemmProblem], tuple[KernelPlan, ...]] = {}


def clockless_key(cfg: GpuConfig) -> str:
    """The config without its clock and launch cost: what plans and traffic depend on."""
    return cfg.model_dump_json(exclude={"clock", "launch"})


def families_for(cfg: GpuConfig, prob: GemmProblem) -> list[KernelFamily | None]:
    """The kernel families the library times for ``prob``: the first it is eligible for
    (:func:`family_for`) and, when that one must first rewrite an operand K-major (a transpose
    kernel), also the next eligible family that takes the operands as stored; the autotuner
    keeps the faster (cuBLAS's heuristics rank Hopper and pre-Hopper kernels together)."""
    fams = _eligible_families(cfg, prob)
    if not fams:
        return [None]
    first = fams[0]
    if _transposes(first, prob)[0] == 0:
        return [first]
    key = rate_key(prob.precision)
    alt = next((f for f in fams[1:] if key not in f.k_major_precisions), None)
    return [first] if alt is None else [first, alt]


def _build_plans(cfg: GpuConfig, prob: GemmProblem) -> list[KernelPlan]:
    out: list[KernelPlan] = []
    for fam in families_for(cfg, prob):
        out += _family_plans(cfg, prob, fam)
    if not out:
        raise SimulationError(
            f"layer {prob.layer!r}: no tile of {cfg.name}'s menu fits an SM at precision "
            f"{prob.precision!r} (shared memory {cfg.sm_memory.max_shared_bytes} B, registers "
            f"{cfg.sm_memory.register_file_bytes} B); add a smaller tile"
        )
    return out


def _fill_rate(cfg: GpuConfig, prob: GemmProblem, fam: KernelFamily | None) -> float:
    """Global->shared fill rate of one SM, bytes per SM clock: the family's measured rate, or
    (``fill_access_bytes``) the one measured at the largest width up to the GEMM's widest
    load, scaled to that load (load-count bound: wider loads fill faster), at most the port."""
    port = cfg.sm_memory.shared_bandwidth_bytes_per_clock
    if fam is None or fam.fill_bytes_per_clock is None:
        return port
    if fam.fill_access_bytes is None:
        return fam.fill_bytes_per_clock
    widest = widest_load_bytes(prob)
    if fam.fill_access_widths:  # the widest width a kernel exists for, at most that
        widest = max((w for w in fam.fill_access_widths if w <= widest), default=1)
    measured = {fam.fill_access_bytes: fam.fill_bytes_per_clock,
                **(fam.fill_bytes_per_clock_by_width or {})}  # fmt: skip
    base = max((w for w in measured if w <= widest), default=min(measured))
    return min(measured[base] * widest / base, port)


def _splits(
    cfg: GpuConfig, prob: GemmProblem, fam: KernelFamily | None, tiles: int, room: bool, ks: int
) -> list[tuple[int, int]]:
    """(split-K factor, K elements per slice) to time for a grid of ``tiles`` output tiles
    (``room``: under one wave) and k-step ``ks``: no split, and each factor that gives every
    slice K; only the splits where the family's ``split_k_max_tiles`` says the library always
    splits (and K allows one)."""
    factors = cfg.library.split_k_factors if fam is None or fam.split_k else [1]
    ok = []
    for s in sorted(set(factors)):
        k_slice = cdiv(cdiv(prob.k, s), ks) * ks
        if s == 1 or (room and cdiv(prob.k, k_slice) >= s):
            ok.append((s, k_slice))
    if fam is not None and fam.split_k_max_tiles and tiles <= fam.split_k_max_tiles:
        return [sk for sk in ok if sk[0] > 1] or ok
    return ok


def _family_plans(cfg: GpuConfig, prob: GemmProblem, fam: KernelFamily | None) -> list[KernelPlan]:
    """Every feasible (tile, split-K[, Stream-K]) plan of one family (None: CUDA cores)."""
    tensor_ops = fam is not None and fam.tensor_ops
    fill = _fill_rate(cfg, prob, fam)
    tiles = fam.tiles if fam is not None and fam.tiles else cfg.tiles
    if fam is None:  # skinny SIMT tiles, for GEMMs whose short side fits in one of them
        short = min(prob.m, prob.n)
        tiles = [*tiles, *(t for t in cfg.library.cuda_core_tiles if short <= min(t.m, t.n))]
    stream_k = fam is not None and fam.stream_k
    fraction = fam.mma_rate_fraction if fam is not None else 1.0
    multicast = fam.multicast_ctas if fam is not None else 1
    name = fam.name if fam is not None else "cuda_core"
    transposes, transpose_bytes = _transposes(fam, prob)
    frags_shared = fam is not None and fam.fragments_from_shared
    out: list[KernelPlan] = []
    for tile in tiles:
        per_sm = _occupancy(cfg, prob, tile, fam)
        if per_sm < 1:
            continue
        ks = k_step_elements(tile, prob)
        kept, shared = _multicast_rows(fam, tile)
        n_fastest = multicast > 1 and shared == tile.m != tile.n  # A shared: along N
        gm, gn = cdiv(prob.m, tile.m), cdiv(prob.n, tile.n)
        base = gm * gn * prob.batch
        groups, frags, issue, latency, bubble = _instruction(
            cfg, prob, tile, ks, tensor_ops, fraction
        )
        first = len(out)
        for split, k_slice in _splits(cfg, prob, fam, base, base < cfg.sms * per_sm, ks):
            out_bytes = 4 if split > 1 else prob.c_d_bytes  # fp32 partials / C read + D
            out.append(
                KernelPlan(
                    tile=tile,
                    split_k=split,
                    tensor_ops=tensor_ops,
                    family=name,
                    fill_bytes_per_clock=fill,
                    k_step=ks,
                    ctas_per_sm=per_sm,
                    grid_m=gm,
                    grid_n=gn,
                    ctas=base * split,
                    k_slice=k_slice,
                    steps=cdiv(k_slice, ks),
                    groups=groups,
                    frags=frags,
                    issue_cycles=issue,
                    mma_latency=latency,
                    bubble_cycles=bubble,
                    stage_bytes=(tile.m + tile.n) * ks * prob.in_bytes,
                    l2_stage_bytes=cdiv(
                        (kept * multicast + shared) * ks * prob.in_bytes, multicast
                    ),  # fmt: skip
                    epilogue_bytes=tile.m * tile.n * out_bytes,
                    transposes=transposes,
                    transpose_bytes=transpose_bytes,
                    fragment_bytes=fragment_bytes(tile, ks, prob.in_bytes) if frags_shared else 0,
                    n_fastest=n_fastest,
                    cta_fill_bytes_per_clock=fam.cta_fill_bytes_per_clock if fam else None,
                )
            )
        if stream_k and len(out) > first and out[first].split_k == 1:
            out += _stream_k_plan(cfg, prob, out[first])
    return out


def _multicast_rows(fam: KernelFamily | None, tile: ThreadBlockTile) -> tuple[int, int]:
    """(rows each CTA of a multicast cluster reads alone, rows its cluster shares) of the
    tile's A rows and B columns, per k element: B shared unless the family multicasts the
    larger operand tile (``multicast_operand``). A cluster that shares A lies along N, and
    the kernel rasters its tiles along N too (cuBLAS's nvjet names pair 1xN clusters with
    ``h`` and Nx1 with ``v`` rasters in all 333 traced), so it launches N-tile fastest."""
    if fam is not None and fam.multicast_operand == "larger":
        return min(tile.m, tile.n), max(tile.m, tile.n)
    return tile.m, tile.n


def _transposes(fam: KernelFamily | None, prob: GemmProblem) -> tuple[int, int]:
    """(operands, bytes) that must be rewritten K-major before ``fam`` can run ``prob``: A when
    stored k x m, B when stored k x n, for a precision in ``fam.k_major_precisions``."""
    key = rate_key(prob.precision)
    if fam is None or key not in fam.k_major_precisions or key in fam.one_mn_major_precisions:
        return 0, 0
    sizes = [prob.m * prob.k] * prob.transpose_a + [prob.k * prob.n] * (not prob.transpose_b)
    return len(sizes), prob.batch * sum(sizes) * prob.in_bytes


#: Fewest k-steps (k tiles) one Stream-K CTA is given: CUTLASS 3's sm90 Stream-K scheduler
#: (``PersistentTileSchedulerSm90StreamKParams::min_iters_per_sk_unit_ = 8``) uses fewer
#: stream-K units rather than give one less, so small problems stay data-parallel.
STREAM_K_MIN_ITERS = 8


def _stream_k_plan(cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan) -> list[KernelPlan]:
    """The Stream-K variant of data-parallel ``plan`` (split_k 1), when its tiles fill the
    CTA slots unevenly, at least one wave and fewer than four (a grid of under one wave stays
    data-parallel or splits K: no library Stream-K kernel was traced there, see the H100
    preset): ``min(slots, iterations /
    STREAM_K_MIN_ITERS)`` persistent CTAs each run an equal share of the ``tiles x k-steps``
    iterations. The epilogue is the kernel's whole output traffic shared evenly by its CTAs
    (they all reach it together): every tile's C read (unless beta = 0) and D write once, plus
    one FP32 partial tile written and read back by the fix-up for each tile that a CTA
    boundary cuts (:func:`stream_k_cut_tiles`)."""
    tiles = plan.grid_m * plan.grid_n * prob.batch
    slots = cfg.sms * plan.ctas_per_sm
    if plan.split_k != 1 or tiles % slots == 0 or not slots <= tiles < 4 * slots:
        return []
    steps = cdiv(prob.k, plan.k_step)
    ctas = min(slots, tiles * steps // STREAM_K_MIN_ITERS)
    if ctas < 1:
        return []
    share = cdiv(tiles * steps, ctas)
    cut = stream_k_cut_tiles(tiles * steps, steps, share)
    out = plan.tile.m * plan.tile.n * (tiles * prob.c_d_bytes + cut * 2 * 4)
    return [
        replace(
            plan,
            stream_k=True,
            ctas=ctas,
            steps=share,
            k_slice=min(share, steps) * plan.k_step,
            epilogue_bytes=cdiv(out, ctas),
        )
    ]


def stream_k_cut_tiles(iterations: int, steps: int, share: int) -> int:
    """Output tiles that Stream-K CTAs of ``share`` iterations each split between two or more
    CTAs: one per CTA boundary ``i x share`` inside the ``iterations`` (tiles x ``steps``
    k-steps) that is not a tile boundary. Each such cut costs one FP32 partial tile in global
    memory (CUTLASS's sm90 Stream-K fix-up: the CTA that does not finish the tile stores its
    accumulators; the one that finishes it reads and adds them)."""
    bounds = np.arange(share, iterations, share, dtype=np.int64)
    return int(np.count_nonzero(bounds % steps))


def _fragment_rows(tile: ThreadBlockTile) -> float:
    """A rows plus B columns each warp of ``tile`` reads per k element, the warps arranged
    ``wy x (warps / wy)`` over the tile as a library arranges them (the arrangement that
    reads least)."""
    t = tile
    return min(
        t.m / wy + t.n / (t.warps // wy) for wy in range(1, t.warps + 1) if t.warps % wy == 0
    )


def fragment_bytes(tile: ThreadBlockTile, k_step: int, in_bytes: int) -> int:
    """Bytes one CTA's warps read from shared memory into registers per k-step (their A and
    B fragments)."""
    return int(tile.warps * _fragment_rows(tile) * k_step * in_bytes)


def shared_read_bytes(prob: GemmProblem, plan: KernelPlan) -> int:
    """Bytes the warps read from shared memory into registers (their A and B fragments)."""
    t = plan.tile
    return int(plan.ctas * plan.steps * t.warps * _fragment_rows(t) * plan.k_step * prob.in_bytes)
