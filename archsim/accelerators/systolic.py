"""Dense R x C systolic array (TPU-like), SCALE-Sim compatible.

Every layer is a GEMM ``O[M x N] = I[M x K] F[K x N]``: a conv layer by im2col (M = images x
output pixels, N = filters of a group, K = C/groups x R x S; one GEMM per group), a gemm layer
directly (once per ``batch``). The GEMM is folded over the array per dataflow
(``archsim.datapath.systolic_kernels``: OS Sr=M, Sc=N, T=K; WS Sr=K, Sc=N, T=M; IS Sr=K, Sc=M,
T=N), ``ceil(Sr/R) * ceil(Sc/C)`` folds, column fold outer.

Timing model ``archsim`` (default, what we judge correct). Each fold takes
``2R + C + T - 2`` cycles: operands enter skewed (R + C - 2 fill cycles), T MAC steps, and R
cycles to shift the results (OS) or to shift the stationary block in (WS/IS). This is the
SCALE-Sim paper's form, which its maintainers agreed is right; SCALE-Sim 3.0.0's OS code counts
``T + R + C - 2`` per fold and so ignores the drain. Folds do not overlap. Memory: the three
SRAMs are double buffered; per fold the DRAM loads the operand slices the fold needs (the IFMAP
and FILTER slices, unless the whole operand fits half of its SRAM and was loaded before, or the
slice is the one the previous fold used) and writes the finished output tile (WS/IS keep partial
sums in the OFMAP SRAM across row folds, spilling them to DRAM when the tile does not fit half
of it). Loads of fold i+1 overlap the compute of fold i in one SimPy pipeline over one DRAM
channel (``engine.double_buffered_pipeline``), for all layers in sequence; stall cycles =
layer cycles - compute cycles.

Timing model ``scalesim``: SCALE-Sim 3.0.0's numbers, exactly: compute cycles
``folds * rows_per_fold - 1`` (OS ``T + R + C - 2``, WS/IS ``2R + C + T - 2`` per fold) and the
stalls of its double-buffered read/write buffers (``systolic_kernels.scalesim_memory``), its
output size ``ceil((H - R + stride) / stride)``, no padding (``pad`` enlarges the input),
layers run one after another. ``cycles`` is SCALE-Sim's "Total Cycles".

Functional: integer operands (8-bit range, deterministic from seed and layer name) are
multiplied fold by fold in the dataflow's accumulation order; the result is compared with a
NumPy reference (``systolic_functional_max_error`` must be 0).

Counts: ``array.mac`` (MACs on real operands), ``{ifmap,filter,ofmap}_sram.read/write``
(``width_bits`` accesses), ``dram.read_bytes/write_bytes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from archsim.accelerators.base import LayerOutcome
from archsim.config.systolic import SystolicConfig
from archsim.config.workload import ConvLayer, FcLayer, GemmLayer, WorkloadSpec
from archsim.datapath.systolic_kernels import (
    paper_fold_cycles,
    scalesim_memory,
    scalesim_rows_per_fold,
    spatio_temporal,
)
from archsim.engine.context import Dram, SimContext
from archsim.engine.pipeline import double_buffered_pipeline
from archsim.errors import SimulationError
from archsim.workload.materialize import layer_rng

__all__ = [
    "ACCESS_CYCLE_FIELDS",
    "SystolicGemm",
    "layer_gemms",
    "fold_plan",
    "scalesim_sram_words",
    "systolic_functional",
    "simulate_systolic",
]


@dataclass(frozen=True)
class SystolicGemm:
    """One GEMM of a layer and, for SCALE-Sim, its geometry (ih, iw, fh, fw, ch, s, oh, ow, nf)."""

    m: int
    n: int
    k: int
    repeat: int  # identical GEMMs run back to back (groups x images, or gemm batch)
    geometry: tuple[int, ...]


def layer_gemms(spec: ConvLayer | GemmLayer, scalesim: bool) -> SystolicGemm:
    """The GEMM of ``spec`` (conv: one group of one image in SCALE-Sim mode, see module doc)."""
    if isinstance(spec, GemmLayer):
        geo = (spec.m, spec.k, 1, spec.k, 1, 1, spec.m, 1, spec.n)
        return SystolicGemm(spec.m, spec.n, spec.k, spec.batch, geo)
    cg, kg = spec.c // spec.groups, spec.k // spec.groups
    h, w = spec.h + 2 * spec.pad, spec.w + 2 * spec.pad
    if scalesim:
        oh = -(-(h - spec.r + spec.stride) // spec.stride)
        ow = -(-(w - spec.s + spec.stride) // spec.stride)
    else:
        oh, ow = spec.out_h, spec.out_w
    geo = (h, w, spec.r, spec.s, cg, spec.stride, oh, ow, kg)
    if scalesim:
        return SystolicGemm(oh * ow, kg, cg * spec.r * spec.s, spec.n * spec.groups, geo)
    return SystolicGemm(spec.n * oh * ow, kg, cg * spec.r * spec.s, spec.groups, geo)


def fold_plan(config: SystolicConfig, g: SystolicGemm) -> list[tuple[int, ...]]:
    """Per fold, in order, of the archsim model (see the module docstring): (compute cycles,
    DRAM read bytes, DRAM write bytes, IFMAP bytes loaded, FILTER bytes loaded, IFMAP words
    read, FILTER words read, OFMAP words read, OFMAP words written) by the array."""
    R, C = config.array.rows, config.array.cols
    df = config.array.dataflow
    sr, sc, t = spatio_temporal(df, g.m, g.n, g.k)
    rf, cf = math.ceil(sr / R), math.ceil(sc / C)
    db, ab = config.arithmetic.data_bits / 8, config.arithmetic.accumulator_bits / 8
    # operands as (elements, SRAM bytes); stationary/streamed slices per fold
    ifm_fits = g.m * g.k * db <= config.ifmap_sram.size_bytes / 2
    flt_fits = g.k * g.n * db <= config.filter_sram.size_bytes / 2
    plan = []
    seen_i: set[int] = set()
    seen_f: set[int] = set()
    prev_i = prev_f = -1
    cycles = paper_fold_cycles(R, C, t)
    for fc in range(cf):
        for fr in range(rf):
            rows = min(R, sr - fr * R)
            cols = min(C, sc - fc * C)
            if df == "os":  # IFMAP slice rows fr (rows x K), FILTER slice cols fc (K x cols)
                key_i, el_i, key_f, el_f = fr, rows * t, fc, t * cols
                outs, partial = rows * cols, False
            elif df == "ws":  # FILTER block (rows x cols), IFMAP slice K-rows fr (M x rows)
                key_i, el_i, key_f, el_f = fr, t * rows, fr * cf + fc, rows * cols
                outs, partial = t * cols, True
            else:  # IS: IFMAP block (K rows x M cols), FILTER slice K-rows fr (rows x N)
                key_i, el_i, key_f, el_f = fr * cf + fc, rows * cols, fr, rows * t
                outs, partial = t * cols, True
            rd = ld_i = ld_f = 0
            if key_i != prev_i and not (ifm_fits and key_i in seen_i):
                ld_i = el_i * db
            if key_f != prev_f and not (flt_fits and key_f in seen_f):
                ld_f = el_f * db
            rd = ld_i + ld_f
            seen_i.add(key_i)
            seen_f.add(key_f)
            prev_i, prev_f = key_i, key_f
            wr = 0
            out_r = 0
            if partial:
                spill = outs * ab > config.ofmap_sram.size_bytes / 2
                if fr > 0:
                    out_r = outs  # read-modify-write of the partial sums
                    if spill:
                        rd += outs * ab
                if fr < rf - 1 and spill:
                    wr += outs * ab
                if fr == rf - 1:
                    wr += outs * db
            else:
                wr += outs * db
            plan.append(
                (cycles, math.ceil(rd), math.ceil(wr), math.ceil(ld_i), math.ceil(ld_f),
                 el_i, el_f, out_r, outs)
            )  # fmt: skip
    return plan


def _exact_dtype(bound: int) -> type:
    """float32 when every partial sum of integer products is at most ``bound`` in magnitude
    and so exact in its 24-bit significand (whatever order BLAS adds in), else float64: half
    the memory and twice the BLAS rate for the functional check, the same integers."""
    return np.float32 if bound < 2**24 else np.float64


def _operands(spec: ConvLayer | GemmLayer, g: SystolicGemm, seed: int):
    """Integer I (M x K, im2col for conv) and F (K x N) of the layer's first GEMM, and the
    NumPy reference output (conv: a direct convolution; gemm: ``np.matmul``)."""
    rng = layer_rng(seed, spec.name)
    if isinstance(spec, GemmLayer):
        dt = _exact_dtype(8 * 8 * g.k)
        a = rng.integers(-8, 8, size=(g.m, g.k)).astype(dt)
        b = rng.integers(-8, 8, size=(g.k, g.n)).astype(dt)
        return a, b, np.matmul(a, b)
    ih, iw, fh, fw, ch, st, oh, ow, nf = g.geometry
    dt = _exact_dtype(15 * 8 * fh * fw * ch)
    x = rng.integers(0, 16, size=(ch, ih, iw)).astype(dt)
    w = rng.integers(-8, 8, size=(nf, ch, fh, fw)).astype(dt)
    ref = np.zeros((oh * ow, nf), dtype=dt)
    cols = np.zeros((oh * ow, fh * fw * ch), dtype=dt)
    # SCALE-Sim's ceil output size may overhang the input (by up to a stride): those window
    # positions read zeros
    steps_y, steps_x = st * np.arange(oh), st * np.arange(ow)
    for r in range(fh):
        for s in range(fw):
            win = np.zeros((ch, oh, ow), dtype=dt)
            iy, ix = r + steps_y, s + steps_x
            vy, vx = iy < ih, ix < iw
            win[:, vy[:, None] & vx[None, :]] = x[:, iy[vy]][:, :, ix[vx]].reshape(ch, -1)
            win = win.reshape(ch, oh * ow)
            cols[:, (r * fw + s) * ch : (r * fw + s + 1) * ch] = win.T
            ref += win.T @ w[:, :, r, s].T
    wmat = w.transpose(2, 3, 1, 0).reshape(fh * fw * ch, nf)
    images = g.m // (oh * ow)
    return np.tile(cols, (images, 1)), wmat, np.tile(ref, (images, 1))


def systolic_functional(
    a: np.ndarray, b: np.ndarray, rows: int, cols: int, dataflow: str
) -> np.ndarray:
    """``a @ b`` computed fold by fold as the array does (OS: a tile per fold; WS/IS: partial
    sums of a K-slice added to the OFMAP tile per row fold); folds of fewer than
    ``MIN_ACCUMULATED_ROWS`` accumulated rows, and layers of more than ``MAX_FOLD_PRODUCTS``
    folds, in groups of consecutive folds. Integers held in float32 or float64
    (``_exact_dtype``): exact in any grouping.

    The folds are small products (e.g. 32 x 512 x 32) that BLAS would split over threads at
    every call; the hand-offs cost up to 100x the arithmetic (512^3 on a 32 x 32 array: 9 s
    instead of 0.08 s on two busy cores), so BLAS runs single-threaded here.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _folded(a, b, rows, cols, dataflow)


#: most fold products the functional check computes one by one; past it consecutive folds are
#: grouped into one product (the operands are integers, exact in any grouping). A 1-row array
#: on ResNet-50 has 0.5 M folds, and one product each took 9.4 s for the same integers.
MAX_FOLD_PRODUCTS = 4096
#: fewest K rows per accumulated product (WS/IS): a product of fewer rows re-reads and
#: re-writes its whole output tile for little arithmetic (ResNet-50's conv1 on a 1-row array:
#: 147 rank-1 updates of a 12769 x 64 tile, 0.38 s against 0.01 s for a @ b); every preset's
#: array has at least this many rows, so their folds are still checked one by one
MIN_ACCUMULATED_ROWS = 32


def _folded(a: np.ndarray, b: np.ndarray, rows: int, cols: int, dataflow: str) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=np.result_type(a, b))
    # the outer loop steps over the array's columns, the inner one over its rows
    outer, inner = {"os": (n, m), "ws": (n, k)}.get(dataflow, (m, k))
    step_o, step_i = _fold_steps(outer, inner, cols, rows, accumulated=dataflow != "os")
    if dataflow == "os":
        for j in range(0, n, step_o):
            for i in range(0, m, step_i):
                out[i : i + step_i, j : j + step_o] = a[i : i + step_i] @ b[:, j : j + step_o]
    elif dataflow == "ws":
        for j in range(0, n, step_o):
            for kk in range(0, k, step_i):
                out[:, j : j + step_o] += (
                    a[:, kk : kk + step_i] @ b[kk : kk + step_i, j : j + step_o]
                )
    else:
        for i in range(0, m, step_o):
            for kk in range(0, k, step_i):
                out[i : i + step_o] += a[i : i + step_o, kk : kk + step_i] @ b[kk : kk + step_i]
    return out


def _fold_steps(outer: int, inner: int, cols: int, rows: int, accumulated: bool) -> tuple[int, int]:
    """(outer, inner) loop steps: one fold each (``cols``, ``rows``); accumulated inner folds
    grouped to at least MIN_ACCUMULATED_ROWS rows; past MAX_FOLD_PRODUCTS products, all inner
    folds in one and groups of outer folds."""
    group = -(-MIN_ACCUMULATED_ROWS // rows) if accumulated else 1
    folds_o, folds_i = -(-outer // cols), -(-inner // (rows * group))
    if folds_o * folds_i <= MAX_FOLD_PRODUCTS:
        return cols, rows * group
    return cols * -(-folds_o // MAX_FOLD_PRODUCTS), inner


def _lines(words: int, config: SystolicConfig, width_bits: int) -> int:
    return math.ceil(words * config.arithmetic.data_bits / width_bits)


def _outcome(config: SystolicConfig, spec, g: SystolicGemm, seed: int) -> dict[str, Any]:
    """Compute-side results of one layer (cycles before DRAM, counts, extras)."""
    R, C, df = config.array.rows, config.array.cols, config.array.dataflow
    sr, sc, t = spatio_temporal(df, g.m, g.n, g.k)
    folds = math.ceil(sr / R) * math.ceil(sc / C)
    a, b, ref = _operands(spec, g, seed)
    got = systolic_functional(a, b, R, C, df)
    macs = g.m * g.n * g.k * g.repeat
    extras: dict[str, Any] = {
        "systolic_dataflow": df,
        "systolic_m": g.m,
        "systolic_n": g.n,
        "systolic_k": g.k,
        "systolic_gemms": g.repeat,
        "systolic_folds": folds * g.repeat,
        "systolic_mapping_efficiency": (g.m * g.n * g.k) / (folds * R * C * t),
        "systolic_functional_max_error": float(np.max(np.abs(got - ref), initial=0.0)),
    }
    return {"macs": macs, "extras": extras}


def scalesim_sram_words(df: str, rows: int, cols: int, g: SystolicGemm) -> tuple[int, int, int]:
    """(IFMAP words read, FILTER words read, OFMAP words written) by the array for one GEMM of
    ``g``: the requests in SCALE-Sim's demand matrices. The stationary operand is read once
    (WS: FILTER, IS: IFMAP); a streamed one once per fold of the other spatial dimension (OS:
    IFMAP per column fold, FILTER per row fold; WS: IFMAP, IS: FILTER per column fold); WS/IS
    write every output once per row fold (partial sums), OS once."""
    sr, sc, _t = spatio_temporal(df, g.m, g.n, g.k)
    rf, cf = math.ceil(sr / rows), math.ceil(sc / cols)
    ifm, flt = g.m * g.k, g.k * g.n
    if df == "os":
        return ifm * cf, flt * rf, g.m * g.n
    if df == "ws":
        return ifm * cf, flt, g.m * g.n * rf
    return ifm, flt * cf, g.m * g.n * rf


def _scalesim_layer(config: SystolicConfig, spec, g: SystolicGemm, seed: int) -> LayerOutcome:
    R, C, df = config.array.rows, config.array.cols, config.array.dataflow
    sc_cfg = config.scalesim
    user = sc_cfg.interface_bandwidth == "user"
    words = config.scalesim.word_bytes
    mem = scalesim_memory(
        df, R, C, g.geometry,
        user_bandwidth=user,
        ifmap_sram_words=config.ifmap_sram.size_bytes // words,
        filter_sram_words=config.filter_sram.size_bytes // words,
        ofmap_sram_words=config.ofmap_sram.size_bytes // words,
        ifmap_words_per_cycle=sc_cfg.ifmap_words_per_cycle,
        filter_words_per_cycle=sc_cfg.filter_words_per_cycle,
        ofmap_words_per_cycle=sc_cfg.ofmap_words_per_cycle if user else C,
    )  # fmt: skip
    sr, sc, t = spatio_temporal(df, g.m, g.n, g.k)
    folds = math.ceil(sr / R) * math.ceil(sc / C)
    compute = folds * scalesim_rows_per_fold(df, R, C, t) - 1
    base = _outcome(config, spec, g, seed)
    rep = g.repeat
    cycles = mem["total_cycles"] * rep
    rd = (mem["ifmap_dram_reads"] + mem["filter_dram_reads"]) * words * rep
    wr = mem["ofmap_dram_writes"] * words * rep
    overall = mem["ofmap_dram_stop"] - min(mem["ifmap_dram_start"], mem["filter_dram_start"])
    ifm_r, flt_r, out_w = (x * rep for x in scalesim_sram_words(df, R, C, g))
    counts = {
        "array": {"mac": base["macs"]},
        "ifmap_sram": {
            "read": _lines(ifm_r, config, config.ifmap_sram.width_bits),
            "write": _lines(mem["ifmap_dram_reads"] * rep, config, config.ifmap_sram.width_bits),
        },
        "filter_sram": {
            "read": _lines(flt_r, config, config.filter_sram.width_bits),
            "write": _lines(mem["filter_dram_reads"] * rep, config, config.filter_sram.width_bits),
        },
        "ofmap_sram": {
            "read": _lines(mem["ofmap_dram_writes"] * rep, config, config.ofmap_sram.width_bits),
            "write": _lines(out_w, config, config.ofmap_sram.width_bits),
        },
        "dram": {"read_bytes": rd, "write_bytes": wr},
    }
    extras = {
        **base["extras"],
        "systolic_timing_model": "scalesim",
        "systolic_compute_cycles": compute * rep,
        "systolic_stall_cycles": mem["stall_cycles"] * rep,
        "systolic_total_cycles_incl_prefetch": overall * rep,
        "systolic_ifmap_dram_reads": mem["ifmap_dram_reads"] * rep,
        "systolic_filter_dram_reads": mem["filter_dram_reads"] * rep,
        "systolic_ofmap_dram_writes": mem["ofmap_dram_writes"] * rep,
        "systolic_ifmap_sram_reads": ifm_r,
        "systolic_filter_sram_reads": flt_r,
        "systolic_ofmap_sram_writes": out_w,
        **_access_cycles(mem, rep),
    }
    return LayerOutcome(
        layer=spec.name, kind=spec.kind, cycles=cycles, start_cycle=0, end_cycle=0,
        macs_dense=spec.macs_dense, macs_effective=base["macs"],
        peak_macs_per_cycle=config.peak_macs_per_cycle, dram_bytes=rd + wr,
        counts=counts, extras=extras,
    )  # fmt: skip


#: SCALE-Sim's DETAILED_ACCESS_REPORT cycles kept as ``systolic_<field>`` extras
ACCESS_CYCLE_FIELDS = (
    "ifmap_sram_start", "ifmap_sram_stop", "filter_sram_start", "filter_sram_stop",
    "ofmap_sram_start", "ofmap_sram_stop", "ifmap_dram_start", "ifmap_dram_stop",
    "filter_dram_start", "filter_dram_stop", "ofmap_dram_start", "ofmap_dram_stop",
)  # fmt: skip


def _access_cycles(mem: dict[str, int], rep: int) -> dict[str, int]:
    """First/last access cycles per operand and memory; ``rep`` identical GEMMs run back to
    back, each ``total_cycles`` long: starts from the first, stops from the last."""
    shift = (rep - 1) * mem["total_cycles"]
    return {
        f"systolic_{f}": mem[f] + (shift if f.endswith("stop") and mem[f] >= 0 else 0)
        for f in ACCESS_CYCLE_FIELDS
    }


def _check(spec: Any) -> ConvLayer | GemmLayer:
    """The layer as the array runs it: an fc layer as its GEMM (m = batch rows, n = outputs,
    k = inputs; an imported classifier or transformer projection)."""
    gemm = spec.as_gemm() if isinstance(spec, FcLayer) else None
    if gemm is not None:
        return gemm
    if not isinstance(spec, ConvLayer | GemmLayer):
        raise SimulationError(
            f"the systolic array runs conv, gemm and fc layers (fc with inputs and outputs); "
            f"layer {spec.name!r} is {spec.kind!r}"
        )
    return spec


def _run_scalesim(config: SystolicConfig, workload: WorkloadSpec, seed: int):
    outcomes = []
    start = 0
    for spec in workload.layers:
        spec = _check(spec)
        o = _scalesim_layer(config, spec, layer_gemms(spec, True), seed)
        outcomes.append(replace(o, start_cycle=start, end_cycle=start + o.cycles))
        start += o.cycles
    ctx = SimContext(config.clock.frequency_hz)

    def _layers():
        for o in outcomes:
            yield ctx.timeout(o.cycles)

    ctx.env.process(_layers())
    ctx.run()
    return _kinds(outcomes, workload), ctx


def _kinds(outcomes: list[LayerOutcome], workload: WorkloadSpec) -> list[LayerOutcome]:
    """Rows keep their layer's kind (an fc layer runs as a gemm)."""
    return [replace(o, kind=s.kind) for o, s in zip(outcomes, workload.layers, strict=True)]


def simulate_systolic(
    config: SystolicConfig, workload: WorkloadSpec, seed: int
) -> tuple[list[LayerOutcome], SimContext]:
    """Run every conv/gemm layer (see the module docstring for both timing models)."""
    if config.timing_model == "scalesim":
        return _run_scalesim(config, workload, seed)
    fold_cycles: list[int] = []
    fold_io: list[tuple[int, int]] = []
    owner: list[int] = []
    pre: list[tuple[dict[str, Any], SystolicGemm, Any, int, list[int]]] = []
    for idx, spec in enumerate(workload.layers):
        spec = _check(spec)
        g = layer_gemms(spec, False)
        plan = fold_plan(config, g)
        words = [sum(p[j] for p in plan) * g.repeat for j in range(3, 9)]
        for _ in range(g.repeat):
            fold_cycles += [p[0] for p in plan]
            fold_io += [(p[1], p[2]) for p in plan]
            owner += [idx] * len(plan)
        compute = sum(p[0] for p in plan) * g.repeat
        pre.append((_outcome(config, spec, g, seed), g, spec, compute, words))
    ctx = SimContext(config.clock.frequency_hz)
    dram = Dram(ctx, config.dram.bandwidth_bytes_per_s, config.dram.latency_s)
    spans = double_buffered_pipeline(ctx, dram, fold_cycles, fold_io)
    last = {owner[i]: i for i in range(len(owner))}
    io = [[0, 0] for _ in pre]
    for i, (r, w) in zip(owner, fold_io, strict=True):
        io[i][0] += r
        io[i][1] += w
    outcomes = []
    start = 0
    for idx, (base, _g, spec, compute, words) in enumerate(pre):
        end = int(ctx.env.now) if idx == len(pre) - 1 else spans[last[idx]][1]
        rd, wr = io[idx]
        ld_i, ld_f, rd_i, rd_f, rd_o, wr_o = words
        wi, wf, wo = (
            s.width_bits for s in (config.ifmap_sram, config.filter_sram, config.ofmap_sram)
        )
        counts = {
            "array": {"mac": base["macs"]},
            "ifmap_sram": {"read": _lines(rd_i, config, wi), "write": math.ceil(ld_i * 8 / wi)},
            "filter_sram": {"read": _lines(rd_f, config, wf), "write": math.ceil(ld_f * 8 / wf)},
            "ofmap_sram": {"read": _lines(rd_o, config, wo), "write": _lines(wr_o, config, wo)},
            "dram": {"read_bytes": rd, "write_bytes": wr},
        }
        extras = {
            **base["extras"],
            "systolic_timing_model": "archsim",
            "systolic_compute_cycles": compute,
            "systolic_stall_cycles": end - start - compute,
        }
        outcomes.append(
            LayerOutcome(
                layer=spec.name,
                kind=spec.kind,
                cycles=end - start,
                start_cycle=start,
                end_cycle=end,
                macs_dense=spec.macs_dense,
                macs_effective=base["macs"],
                peak_macs_per_cycle=config.peak_macs_per_cycle,
                dram_bytes=rd + wr,
                counts=counts,
                extras=extras,
            )  # fmt: skip
        )
        start = end
    return _kinds(outcomes, workload), ctx
