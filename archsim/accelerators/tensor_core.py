"""Tensor Core GPUs (V100, A100, H100): GEMMs and layers lowered to GEMMs.

Per layer (``lower_to_gemm``) every plan of ``gpu_plan.plans_for`` (tile x split-K) is
simulated and the fastest kept -- the documented selection rule, standing in for cuBLAS's
heuristics/autotuning. A plan runs as one kernel (plus a reduction kernel for split-K):

1. launch cost (``launch``: per kernel in a CUDA graph, or launched eagerly; seconds of wall
   time, converted to SM cycles at the configured clock);
2. CTAs dispatched over the SMs in *rounds* of ``ctas_per_sm`` co-resident CTAs: ``full``
   rounds on every SM, then a tail round in which the remaining CTAs are spread one SM at a
   time (some SMs get one more CTA than others, the rest idle) -- wave quantisation;
3. each round's duration is the exact cycle count of the per-SM pipeline
   (``datapath.gpu_sm.sm_round``: k-loop with multi-buffered A/B loads, MMA issue on the
   sub-cores' tensor cores, epilogue) at the bandwidth share the SM gets when the round starts:
   ``min(SM fill port, L2 / active SMs, HBM / (active SMs x L2 miss fraction))`` using the
   achievable bandwidths -- so tail rounds on few SMs run faster when memory-bound. Clock
   domains: the fill port (the kernel family's) and L2 bandwidth are bytes per SM clock (the
   L2 is taken to scale with the SM clock); HBM bandwidth is bytes per second, so it shrinks
   per SM cycle as the clock rises; the rounds together last at least the kernel's whole HBM
   traffic (L2-missing loads, plus an output too big to stay in L2) at the achievable HBM
   bandwidth. A warp-level mma.sync family (``fragments_from_shared``) also reads every
   warp's A and B fragments from shared memory each k-step through the SM's shared-memory
   port, so a k-step's load holds the port at least (fill + fragment bytes) / port bandwidth;
4. split-K: a reduction kernel (launch + reading the FP32 partials and C, writing D at HBM speed);
5. an operand a family takes only K-major but is stored MN-major: a transpose kernel each
   (launch + the operand read and written at HBM speed), timed after the GEMM (the order does
   not change the total).

Only the rounds, launch and HBM terms depend on the clock: plans and L2 traffic are memoised,
so evaluating a layer at a second clock (``cfg.model_copy`` with another
``clock.frequency_hz``, as the power model does) re-runs only the cheap SimPy schedule.

SimPy holds the shared memory system (active-SM count) and one process per group of SMs that
behave alike (at most two), so a layer costs (rounds + a few) events. Tile quantisation (padded
edge tiles still issue full MMAs), wave quantisation and the memory-bound regime all follow.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from archsim.accelerators.base import FUNCTIONAL_MAX_MACS, LayerOutcome, functional_fits
from archsim.accelerators.gpu_l2 import l2_traffic
from archsim.accelerators.gpu_plan import (
    KernelPlan,
    accumulation_chunk_k,
    activation_limited_load_bandwidth,
    clockless_key,
    plans_for,
    shared_read_bytes,
)
from archsim.config.gpu import GpuConfig, rate_key
from archsim.datapath.gemm_kernels import (
    accumulation_error_bound,
    split_k_gemm_fp32,
    tiled_gemm_fp32,
    tiled_gemm_int32,
)
from archsim.datapath.gpu_sm import SM_FIELDS, sm_round
from archsim.engine.context import SimContext
from archsim.errors import SimulationError
from archsim.memo import memoized
from archsim.units import seconds_to_cycles
from archsim.workload.gemm import GemmProblem, materialize_gemm

__all__ = [
    "KernelRun",
    "FUNCTIONAL_MAX_MACS",
    "gemm_counts",
    "gemm_outcome",
    "run_gemm",
    "run_plan",
]

_TENSOR_BUSY = SM_FIELDS.index("tensor_busy_cycles")


@dataclass(frozen=True)
class KernelRun:
    """Timing and traffic of one plan (main kernel + optional reduction), in SM cycles."""

    plan: KernelPlan
    cycles: int
    launch_cycles: int
    main_cycles: int  # main kernel, launch excluded
    tensor_busy_cycles: int  # busiest SM
    hbm_bytes: int
    l2_bytes: int
    hbm_load_bytes: int  # main-loop A/B loads that reach HBM (within hbm_bytes)
    l2_load_bytes: int  # main-loop A/B loads through L2 (within l2_bytes)
    slots: int  # concurrent CTA slots: SMs x co-resident CTAs

    @property
    def waves(self) -> float:
        """CTAs / concurrent CTA slots."""
        return self.plan.ctas / self.slots


class _Memory:
    """The shared L2/HBM system: bandwidth share per SM from the number of active SMs."""

    def __init__(
        self, cfg: GpuConfig, miss: float, port: float | None = None,
        load_hbm_bytes_per_s: float | None = None,
    ) -> None:  # fmt: skip
        clock = cfg.clock.frequency_hz
        self.port = port if port is not None else cfg.sm_memory.shared_bandwidth_bytes_per_clock
        self.l2 = cfg.l2.bandwidth_bytes_per_clock * cfg.l2.achievable_fraction
        self.hbm = cfg.hbm.bandwidth_bytes_per_s * cfg.hbm_achievable_fraction / clock
        # main-loop loads: also bounded by DRAM page activations (gpu_plan.dram_pages)
        self.hbm_loads = self.hbm
        if load_hbm_bytes_per_s is not None:
            self.hbm_loads = min(self.hbm, load_hbm_bytes_per_s / clock)
        self.miss = miss
        self.active = 0

    def share(self, l2_ratio: float = 1.0, loads: bool = False) -> float:
        """Bytes per clock one active SM can move into shared memory now, when each byte it
        receives costs ``l2_ratio`` bytes of L2 (and HBM) traffic (< 1 under TMA multicast);
        ``loads``: the main loop's A/B loads (at the activation-limited DRAM rate)."""
        a = max(self.active, 1) * l2_ratio
        s = min(self.port, self.l2 / a)
        if self.miss > 0:
            s = min(s, (self.hbm_loads if loads else self.hbm) / (a * self.miss))
        return s


def _segments(per_round: int, full: int, tail: list[int]) -> list[tuple[int, int]]:
    """One SM group's rounds (``full`` rounds of ``per_round`` CTAs, then ``tail``) as (CTAs,
    rounds) segments: the leading full rounds as one segment (the last round always on its
    own), then each remaining round. Every group starts with its full rounds and none ends
    before its last full round, so the active-SM count, hence the duration of a full round,
    is the same throughout them: one wait covers them all. Never lists the rounds one by one
    (a huge batch has billions)."""
    lead = full if tail else full - 1  # leading equal rounds, the last round excluded
    if lead < 2:
        return [(n, 1) for n in [per_round] * full + tail]
    rest = [per_round] * (full - lead) + tail
    return [(per_round, lead)] + [(n, 1) for n in rest]


class _KernelModel:
    """Runs one plan's kernel(s) as SimPy processes in ``ctx``."""

    def __init__(
        self, cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan, cfg_key: str | None = None
    ) -> None:
        self.cfg, self.prob, self.plan = cfg, prob, plan
        self.hbm_loads, self.l2_loads = _l2_traffic(cfg, prob, plan, cfg_key)
        self.miss = min(1.0, self.hbm_loads / self.l2_loads) if self.l2_loads else 0.0
        clock = cfg.clock.frequency_hz
        l2_lat = cfg.l2.hit_latency_cycles
        hbm_lat = max(l2_lat, math.ceil(cfg.hbm.latency_s * clock))
        self.latency = l2_lat + round(self.miss * (hbm_lat - l2_lat))
        self.launch = seconds_to_cycles(cfg.launch_overhead_s, clock)
        # least cycles of each kernel (eager: the host's launch interval; see LaunchConfig)
        self.floor = seconds_to_cycles(cfg.min_kernel_s, clock)
        self.load_hbm = activation_limited_load_bandwidth(cfg, prob, plan)
        self.hbm_floor = self._hbm_floor_cycles()
        self._cache: dict[tuple[int, int, int, int], np.ndarray] = {}

    def _hbm_floor_cycles(self) -> int:
        """Least main-loop cycles of the kernel's whole HBM traffic at the achievable
        bandwidth: the A/B loads that miss L2 plus the output, when the output cannot stay in
        L2 (``l2.resident_capacity_bytes``) and must be written back within the stream of
        calls. The per-round shares bound the loads; this bounds loads and stores together."""
        cfg, q = self.cfg, self.prob
        out = q.batch * q.m * q.n * q.out_bytes
        moved = self.hbm_loads + (out if out > cfg.l2.kept_bytes else 0)
        per_clock = cfg.hbm.bandwidth_bytes_per_s * cfg.hbm_achievable_fraction
        return math.ceil(moved / per_clock * cfg.clock.frequency_hz - 1e-9)

    def round(self, n_cta: int, mem: _Memory) -> np.ndarray:
        """``sm_round`` of ``n_cta`` CTAs at the bandwidth shares of ``mem`` now (memoised)."""
        p = self.plan
        share = mem.share(p.l2_stage_bytes / p.stage_bytes, loads=True)
        load = max(1, math.ceil(p.stage_bytes / share - 1e-9))
        if p.fragment_bytes:  # mma.sync: the warps' fragment reads share the port with the fill
            port = self.cfg.sm_memory.shared_bandwidth_bytes_per_clock
            load = max(load, math.ceil((p.stage_bytes + p.fragment_bytes) / port - 1e-9))
        epi = max(1, math.ceil(p.epilogue_bytes / mem.share() - 1e-9))
        latency = self.latency
        if p.cta_fill_bytes_per_clock:  # the CTA's own loads arrive no faster than it issues
            own = math.ceil(p.stage_bytes / p.cta_fill_bytes_per_clock - 1e-9)
            latency += max(0, own - load)
        key = (n_cta, load, epi, latency)
        if key not in self._cache:
            sub = self.cfg.tensor_cores.sub_cores_per_sm
            self._cache[key] = sm_round(
                n_cta, p.steps, p.tile.stages, p.tile.warps, sub, p.groups, p.frags,
                p.issue_cycles, p.mma_latency, p.bubble_cycles, load, latency, epi, self.latency,
            )  # fmt: skip
        return self._cache[key]

    def groups(self) -> list[tuple[int, list[tuple[int, int]]]]:
        """[(SMs in group, [(CTAs per round, rounds)...])]: full rounds, then the tail, as
        :func:`_segments`; at most two groups."""
        p, sms = self.plan, self.cfg.sms
        slots = sms * p.ctas_per_sm
        full, rem = divmod(p.ctas, slots)
        each, extra = divmod(rem, sms)
        out = []
        if extra:
            out.append((extra, _segments(p.ctas_per_sm, full, [each + 1])))
        if full or each:
            out.append((sms - extra, _segments(p.ctas_per_sm, full, [each] if each else [])))
        return out

    def run(self, ctx: SimContext) -> KernelRun:
        """Schedule the kernel(s) in ``ctx`` (from ``ctx.env.now``) and run them."""
        mem = _Memory(self.cfg, self.miss, self.plan.fill_bytes_per_clock, self.load_hbm)
        groups = self.groups()
        busiest_tensor = 0
        start = int(ctx.env.now)
        marks: dict[str, int] = {}

        sub_cores = self.cfg.tensor_cores.sub_cores_per_sm

        def sm_group(n_sms: int, segments: list[tuple[int, int]]) -> Generator[Any, Any, None]:
            nonlocal busiest_tensor
            tensor = 0
            for i, (n_cta, count) in enumerate(segments):
                if i:  # after the groups that end now have left (their SMs idle): see schedule
                    yield ctx.timeout(0)
                r = self.round(n_cta, mem)
                tensor += count * (int(r[_TENSOR_BUSY]) // sub_cores)
                yield ctx.timeout(count * int(r[0]))
            mem.active -= n_sms
            busiest_tensor = max(busiest_tensor, tensor)

        def kernel() -> Generator[Any, Any, None]:
            yield ctx.timeout(self.launch)
            marks["main"] = int(ctx.env.now)
            mem.active = sum(n for n, _ in groups)
            procs = [ctx.env.process(sm_group(n, r)) for n, r in groups]
            yield ctx.env.all_of(procs)
            short = marks["main"] + self.hbm_floor - int(ctx.env.now)
            if short > 0:  # the stores' write-back to HBM outlasts the rounds
                yield ctx.timeout(short)
            marks["main_end"] = int(ctx.env.now)
            waited = self.floor - (marks["main_end"] - start)
            if waited > 0:  # an eager kernel shorter than the host's launch interval
                yield ctx.timeout(waited)
            if self.plan.split_k > 1:
                yield ctx.timeout(self._reduce_kernel_cycles(mem))
            if self.plan.transposes:
                yield ctx.timeout(self._transpose_cycles(mem))

        ctx.env.process(kernel())
        ctx.run()
        return self._result(int(ctx.env.now) - start, marks["main_end"] - marks["main"],
                            busiest_tensor)  # fmt: skip

    def schedule(self) -> KernelRun:
        """:meth:`run` in a scratch context, computed without SimPy: the SM groups' rounds
        are replayed in SimPy's event order (time; a group's end before a round that starts
        then; creation order), so the cycles and the bandwidth shares are the same (the tests
        hold the two to identical results)."""
        mem = _Memory(self.cfg, self.miss, self.plan.fill_bytes_per_clock, self.load_hbm)
        groups = self.groups()
        sub_cores = self.cfg.tensor_cores.sub_cores_per_sm
        mem.active = sum(n for n, _ in groups)
        done = [0] * len(groups)  # segments each group has started
        tensor = [0] * len(groups)
        # (time, 0 for a group's end / 1 for its next round, creation, group): at one instant
        # the groups whose last round ends leave first, so a round that starts then (a tail
        # after the full rounds) gets the bandwidth share of the SMs still busy, as the SimPy
        # run's zero-delay wait before each later round orders it
        events = [(self.launch, 1, i, i) for i in range(len(groups))]
        created, main_end, busiest = len(groups), self.launch, 0
        while events:
            now, _, _, g = heapq.heappop(events)
            segments = groups[g][1]
            if done[g] == len(segments):  # the group's last round ended: its SMs go idle
                mem.active -= groups[g][0]
                busiest = max(busiest, tensor[g])
                main_end = max(main_end, now)
                continue
            seg = segments[done[g]]
            done[g] += 1
            r = self.round(seg[0], mem)
            tensor[g] += seg[1] * (int(r[_TENSOR_BUSY]) // sub_cores)
            last = done[g] == len(segments)
            heapq.heappush(events, (now + seg[1] * int(r[0]), 0 if last else 1, created, g))
            created += 1
        main_end = max(main_end, self.launch + self.hbm_floor)
        end = max(main_end, self.floor)
        if self.plan.split_k > 1:
            end += self._reduce_kernel_cycles(mem)
        if self.plan.transposes:
            end += self._transpose_cycles(mem)
        return self._result(end, main_end - self.launch, busiest)

    def _result(self, cycles: int, main_cycles: int, busiest_tensor: int) -> KernelRun:
        p = self.plan
        epi_bytes = p.ctas * p.epilogue_bytes
        return KernelRun(
            plan=p,
            cycles=cycles,
            launch_cycles=self.launch,
            main_cycles=main_cycles,
            tensor_busy_cycles=busiest_tensor,
            hbm_bytes=self.hbm_loads + epi_bytes + self._reduce_bytes() + 2 * p.transpose_bytes,
            l2_bytes=self.l2_loads + epi_bytes + 2 * p.transpose_bytes,
            hbm_load_bytes=self.hbm_loads,
            l2_load_bytes=self.l2_loads,
            slots=self.cfg.sms * p.ctas_per_sm,
        )

    def _reduce_bytes(self) -> int:
        p, q = self.plan, self.prob
        if p.split_k == 1:
            return 0
        return q.batch * q.m * q.n * (4 * p.split_k + q.c_d_bytes)

    def _round_trips(self) -> int:
        """Cycles a memory-bound helper kernel (split-K reduction, transpose) waits on L2
        beyond its bytes: its loads' data arrives a hit latency after they issue and it ends
        when its stores are acknowledged, one more (the data was just written, so it hits;
        the GEMM's own rounds charge the same two latencies, load and epilogue)."""
        return 2 * self.cfg.l2.hit_latency_cycles

    def _reduce_kernel_cycles(self, mem: _Memory) -> int:
        """The split-K reduction kernel, launch included (at least ``floor``)."""
        body = self._round_trips() + max(1, math.ceil(self._reduce_bytes() / mem.hbm))
        return max(self.floor, self.launch + body)

    def _transpose_cycles(self, mem: _Memory) -> int:
        """The operand transpose kernels, launches included (each at least ``floor``)."""
        p = self.plan  # the bytes split evenly between them
        body = p.transposes * (self.launch + self._round_trips())
        body += math.ceil(2 * p.transpose_bytes / mem.hbm)
        return max(p.transposes * self.floor, body)


_TRAFFIC: dict[tuple[str, GemmProblem, KernelPlan], tuple[int, int]] = {}


def _l2_traffic(
    cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan, cfg_key: str | None = None
) -> tuple[int, int]:
    """:func:`l2_traffic`, memoised (it does not depend on the clock); ``cfg_key``: the
    config's ``clockless_key`` when the caller has it."""
    key = (cfg_key or clockless_key(cfg), prob, plan)
    if key not in _TRAFFIC:
        if len(_TRAFFIC) >= 16384:
            _TRAFFIC.clear()
        _TRAFFIC[key] = l2_traffic(cfg, prob, plan)
    return _TRAFFIC[key]


_RUNS: dict[tuple[str, GemmProblem], list[tuple[_KernelModel, KernelRun]]] = {}


def _simulate_plans(cfg: GpuConfig, prob: GemmProblem) -> list[tuple[_KernelModel, KernelRun]]:
    """Every plan for ``prob``, each run alone (:meth:`_KernelModel.schedule`, the SimPy-free
    twin of a run in a scratch context; memoised per config and problem: a run depends on
    nothing else)."""
    key = (cfg.model_dump_json(), prob)
    if key not in _RUNS:
        if len(_RUNS) >= 4096:
            _RUNS.clear()
        ckey = clockless_key(cfg)
        models = [_KernelModel(cfg, prob, plan, ckey) for plan in plans_for(cfg, prob)]
        _RUNS[key] = [(model, model.schedule()) for model in models]
    return _RUNS[key]


def run_gemm(cfg: GpuConfig, prob: GemmProblem) -> tuple[KernelRun, list[KernelRun]]:
    """Simulate every plan for ``prob``; return (fastest, all) -- ties keep menu order."""
    runs = [run for _, run in _simulate_plans(cfg, prob)]
    return min(runs, key=lambda r: r.cycles), runs


def run_plan(cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan) -> KernelRun:
    """Time one ``plan`` (from :func:`plans_for` of a config that differs from ``cfg`` at most
    in clock and launch cost) at ``cfg``'s clock: the library keeps its kernel whatever clock
    the GPU runs at."""
    return _KernelModel(cfg, prob, plan).schedule()


def _bound(cfg: GpuConfig, run: KernelRun) -> str:
    """compute / memory / latency: which limit explains at least half the layer's time."""
    mem = _Memory(cfg, 0.0)
    t_mem = max(run.hbm_bytes / mem.hbm, run.l2_bytes / mem.l2)
    t_mma = run.tensor_busy_cycles
    if max(t_mem, t_mma) < 0.5 * run.cycles:
        return "latency"
    return "compute" if t_mma >= t_mem else "memory"


def _functional(
    cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan, seed: int
) -> tuple[float, float]:
    """(max |D - NumPy|, max error bound) of the first GEMM of the layer, summed in the
    kernel's order: per CTA tile, per k-step, per instruction (``accumulation_chunk_k``)."""
    ops = materialize_gemm(prob, seed)
    if prob.accumulate == "int32":
        d = tiled_gemm_int32(ops.a, ops.b, ops.c)
        ref = ops.a.astype(np.int64) @ ops.b.astype(np.int64) + ops.c
        return float(np.abs(d.astype(np.int64) - ref).max()), 0.0
    a32, b32, c32 = (x.astype(np.float32) for x in (ops.a, ops.b, ops.c))
    ik = accumulation_chunk_k(cfg, prob, plan)
    t = plan.tile
    half = prob.accumulate == "fp16"
    pieces = -(-prob.k // plan.k_slice)  # split-K slices, or Stream-K's partial sums
    if pieces > 1:
        d = split_k_gemm_fp32(a32, b32, c32, t.m, t.n, plan.k_step, ik, plan.k_slice, half)
    else:
        d = tiled_gemm_fp32(a32, b32, c32, t.m, t.n, plan.k_step, ik, half)
    ref = a32.astype(np.float64) @ b32.astype(np.float64) + ops.c.astype(np.float64)
    u, eta = _ROUNDING["fp16" if half else "fp32"]  # the accumulator's
    bound = accumulation_error_bound(a32, b32, ops.c, ik, u, pieces, plan.k_slice, eta)
    if not half and prob.out_type in _NARROW_OUTPUT:  # D rounded once more to its output type
        d = _as_output(d, prob.out_type)
        u, eta = _ROUNDING[prob.out_type]
        bound = bound + u * (np.abs(ref) + bound) + eta
    err = np.abs(d.astype(np.float64) - ref)
    if not np.all(err <= bound):
        raise SimulationError(f"layer {prob.layer!r}: functional GEMM exceeds its error bound")
    return float(err.max()), float(bound.max())


def _functional_memo(
    cfg: GpuConfig, prob: GemmProblem, plan: KernelPlan, seed: int
) -> tuple[float, float]:
    """:func:`_functional`, kept in ``archsim.memo``'s store of kept values on all it depends
    on (the problem with its layer name, which seeds the operands; the tile, k-step, k-slice
    and instruction k the kernel sums in; the seed): re-simulating a layer under another
    clock, launch cost or bandwidth (``calibrate``, sweeps of those fields) computes the same
    outputs again, which was 85 % of a calibration's time."""
    ik = accumulation_chunk_k(cfg, prob, plan)
    key = ("gpu.functional", prob, plan.tile.m, plan.tile.n, plan.k_step, plan.k_slice, ik, seed)
    return memoized(key, lambda: _functional(cfg, prob, plan, seed), keep=True)


#: (unit roundoff, half the smallest subnormal) of a float type: rounding to it errs by at most
#: ``u |x| + eta`` (the standard model with gradual underflow, Higham 2002, eq. 2.8); the
#: absolute term matters where D is near zero, e.g. a one-channel 1x1 conv's K = 1 products
_ROUNDING = {
    "fp32": (2.0**-24, 2.0**-150),
    "bf16": (2.0**-8, 2.0**-134),
    "fp16": (2.0**-11, 2.0**-25),
}
#: output types narrower than the FP32 accumulator
_NARROW_OUTPUT = ("bf16", "fp16")


def _as_output(d: np.ndarray, out_type: str) -> np.ndarray:
    """FP32 ``d`` rounded to ``out_type`` (nearest even), held in float32."""
    if out_type == "fp16":
        return d.astype(np.float16).astype(np.float32)
    bits = d.astype(np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.view(np.float32)


def gemm_counts(prob: GemmProblem, run: KernelRun) -> dict[str, dict[str, int]]:
    """Actions to price: MMA/FMA work, shared-memory, L2 and HBM bytes."""
    p = run.plan
    fma = p.ctas * p.tile.m * p.tile.n * p.steps * p.k_step  # padded tiles included
    d_bytes = prob.batch * prob.m * prob.n * prob.out_bytes  # C has D's size and type
    core = (
        {"tensor_core": {"fma": fma, "op": fma // 64}}
        if p.tensor_ops
        else {"cuda_core": {"fma": fma, "instruction": fma // 32}}
    )
    # split-K: FP32 partials out, then the reduction reads them with C and writes D
    partials = prob.batch * prob.m * prob.n * 4 * p.split_k if p.split_k > 1 else 0
    reads, writes = partials + (d_bytes if prob.reads_c else 0), partials + d_bytes
    reads, writes = reads + p.transpose_bytes, writes + p.transpose_bytes
    return {
        **core,
        "shared_memory": {
            "read_bytes": shared_read_bytes(prob, p),
            "write_bytes": p.ctas * p.steps * p.stage_bytes,
        },
        "l2": {"read_bytes": run.l2_load_bytes + reads, "write_bytes": writes},
        "hbm": {"read_bytes": run.hbm_load_bytes + reads, "write_bytes": writes},
    }


def _outcome(
    cfg: GpuConfig, prob: GemmProblem, run: KernelRun, n_plans: int, start: int, seed: int
) -> LayerOutcome:
    p = run.plan
    clock = cfg.clock.frequency_hz
    time_s = run.cycles / clock
    if p.tensor_ops:
        rate = cfg.tensor_cores.precision_rate[rate_key(prob.precision)]  # type: ignore[index]
        peak_macs = int(cfg.peak_fma_per_cycle * rate)
        peak_tflops = cfg.peak_tflops(prob.precision)
    else:
        cc = cfg.cuda_cores
        rate = cc.fp16_fma_per_clock if prob.accumulate == "fp16" else cc.fp32_fma_per_clock
        peak_macs = cfg.sms * rate
        peak_tflops = 2 * peak_macs * clock / 1e12
    err, bound = float("nan"), float("nan")
    elements = prob.m * prob.k + prob.k * prob.n + prob.m * prob.n
    if functional_fits(prob.m * prob.n * prob.k, elements):
        err, bound = _functional_memo(cfg, prob, p, seed)
    tflops = 2 * prob.macs / time_s / 1e12
    extras = {
        "tc_tile": p.name,
        "tc_kernel_family": p.family,
        "tc_split_k": p.split_k,
        "tc_tensor_ops": p.tensor_ops,
        "tc_plans_tried": n_plans,
        "tc_ctas": p.ctas,
        "tc_ctas_per_sm": p.ctas_per_sm,
        "tc_waves": run.waves,
        "tc_bound": _bound(cfg, run),
        "tc_tflops": tflops,
        "tc_peak_tflops": peak_tflops,
        "tc_peak_fraction": tflops / peak_tflops,
        "tc_hbm_bandwidth_bytes_per_s": cfg.hbm.bandwidth_bytes_per_s,
        "tc_arithmetic_intensity": 2 * prob.macs / run.hbm_bytes,
        "tc_l2_bytes": run.l2_bytes,
        "tc_launch_cycles": run.launch_cycles * (1 + (p.split_k > 1) + p.transposes),
        "tc_gemm_mnk": f"{prob.m}x{prob.n}x{prob.k}" + (f"x{prob.batch}" if prob.batch > 1 else ""),
        "tc_functional_max_error": err,
        "tc_functional_error_bound": bound,
    }
    wd, ad = prob.weight_density, prob.activation_density
    return LayerOutcome(
        layer=prob.layer,
        kind=prob.kind,
        cycles=run.cycles,
        start_cycle=start,
        end_cycle=start + run.cycles,
        macs_dense=prob.macs,
        macs_effective=round(prob.macs * wd * ad),
        peak_macs_per_cycle=peak_macs,
        dram_bytes=run.hbm_bytes,
        counts=gemm_counts(prob, run),
        extras=extras,
    )


def gemm_outcome(config: GpuConfig, prob: GemmProblem, start: int, seed: int) -> LayerOutcome:
    """One GEMM problem as its fastest plan, starting at cycle ``start`` (the conv algorithms
    of ``gpu_conv`` price their GEMM kernels with it)."""
    tried = _simulate_plans(config, prob)
    best, run = min(tried, key=lambda mr: mr[1].cycles)
    return _outcome(config, prob, run, len(tried), start, seed)
