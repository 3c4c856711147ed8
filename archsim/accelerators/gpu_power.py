"""The SM clock a GPU sustains under its power limit, and the board power at that clock.

A layer is taken to run back-to-back long enough for the clock to settle (as the measured H100
data was taken), so its clock is a steady state: the highest clock ``f`` <= the cap with

    board power(f) = static + s(f) * E_dyn(f) / t(f) <= power limit,

``s(f) = (V(f) / V(max clock))^2`` from the preset's V/f curve and ``E_dyn`` the layer's priced
actions at the max-clock voltage (data-dependent actions times the layer's operand toggle
fraction). The time splits into an SM-clock-bound part and a memory-bound part:
``t(f) = a / f + b`` from the timing model at the max clock and at half of it; the chosen clock
is then simulated exactly. The cap is the max boost clock, lowered for tensor-core work by the
peak-current limit ``tensor_current_clock_hz`` (``d * f * V(f)`` held constant at tensor duty d).

The prices are passed in (``energy_pj``: component -> action -> pJ at the max-clock voltage)
so that this module only counts; ``energy.pricing_gpu`` makes them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from archsim.accelerators.base import LayerOutcome
from archsim.accelerators.gpu_conv import (
    ConvChoice,
    MemoryStep,
    best_conv,
    candidate_runs,
    conv_outcome,
    memory_counts,
    memory_cycles,
    note_clock_variant,
    step_config,
)
from archsim.accelerators.gpu_plan import KernelPlan
from archsim.accelerators.gpu_run import gemm_problem, layer_in_range, simulate_tensor_core
from archsim.accelerators.tensor_core import (
    KernelRun,
    gemm_counts,
    run_gemm,
    run_plan,
)
from archsim.accelerators.tensor_core import _outcome as layer_outcome  # one layer's outcome
from archsim.config.gpu import GpuConfig, rate_key
from archsim.config.gpu_power import GpuPowerConfig
from archsim.config.workload import ConvLayer, WorkloadSpec, toggle_fraction
from archsim.engine.context import SimContext
from archsim.workload.gemm import GemmProblem

__all__ = [
    "ClockSolution",
    "action_scale",
    "board_counts",
    "simulate_gpu",
    "solve_clock",
    "solve_conv_clock",
    "solve_memory_clock",
]

Prices = Mapping[str, Mapping[str, float]]
Counts = dict[str, dict[str, int]]

#: actions whose energy follows the operand data (scaled by the toggle fraction): the
#: datapath and the buses that carry operands (zeros toggle neither); HBM and per-cycle
#: clocking energy do not follow the data
_DATA_ACTIONS = {"tensor_core": ("fma_",), "cuda_core": ("fma_",), "shared_memory": ("read",
                 "write"), "l2": ("read", "write")}  # fmt: skip
#: actions on the zeros of padded tiles: only their data-independent share is spent
_PADDED = "pad_"
#: components on their own supply: no V(f)^2 scaling
_FIXED_VOLTAGE = ("hbm",)
_REFINEMENTS = 3  # timed clocks after the first guess (each a full timing run)


@dataclass(frozen=True)
class ClockSolution:
    """The steady clock of one layer and the board power there."""

    clock_hz: float
    run: KernelRun  # the fastest plan simulated at clock_hz
    board_power_w: float
    power_limited: bool
    limit: str  # "power", "max_clock", "locked_clock" or "tensor_current"
    plans_tried: int  # plans simulated at max clock to pick the kernel


def _timing_at(
    cfg: GpuConfig, prob: GemmProblem, clock_hz: float, kernel: KernelPlan | None = None
) -> tuple[KernelRun, list[KernelRun]]:
    """``run_gemm`` (fastest plan, all plans) with the SM clock at ``clock_hz`` (cycles at it);
    with ``kernel``, only that plan (the library picks its kernel by shape, not by the clock
    the GPU happens to run at)."""
    at = cfg.model_copy(update={"clock": cfg.clock.model_copy(update={"frequency_hz": clock_hz})})
    if kernel is not None:
        run = run_plan(at, prob, kernel)
        return run, [run]
    return run_gemm(at, prob)


def _tensor_rate(cfg: GpuConfig, prob: GemmProblem, run: KernelRun) -> float:
    """FMA per clock of one SM's tensor pipes at the layer's precision (0 on CUDA cores)."""
    if not run.plan.tensor_ops:
        return 0.0
    tc = cfg.tensor_cores
    rate = tc.precision_rate[rate_key(prob.precision)]  # type: ignore[index]
    return tc.per_sm * tc.fp16_fma_per_clock * rate


def board_counts(cfg: GpuConfig, prob: GemmProblem, run: KernelRun, counts: Counts) -> Counts:
    """``counts`` with the board-level actions: FMAs named by precision, SM active cycles
    (each SM that holds a CTA is clocked for the whole kernel; idle SMs are clock-gated) and
    tensor-pipe busy cycles (all SMs)."""
    out = {comp: dict(actions) for comp, actions in counts.items()}
    if "tensor_core" in out:
        tc = out["tensor_core"]
        fma = tc.pop("fma")
        tc.update(_split_padding(f"fma_{rate_key(prob.precision)}", fma, prob.macs))
        tc["busy_cycles"] = round(fma / _tensor_rate(cfg, prob, run))
    if "cuda_core" in out:
        cc = out["cuda_core"]
        name = "fma_fp16" if prob.accumulate == "fp16" else "fma_fp32"
        cc.update(_split_padding(name, cc.pop("fma"), prob.macs))
    out["sm"] = {"active_cycles": min(cfg.sms, run.plan.ctas) * run.cycles}
    return out


def _split_padding(name: str, fma: int, useful: int) -> dict[str, int]:
    """``{name: FMAs on the layer's data, "pad_" + name: FMAs of padded tile rows, columns and
    k-steps}``: a tile that overhangs the matrix computes on zeros (TMA and predicated loads
    fill out-of-bounds elements with zeros), so those FMAs toggle no operand bits."""
    real = min(fma, useful)
    return {name: real, f"pad_{name}": fma - real} if fma > real else {name: real}


def action_scale(power: GpuPowerConfig, counts: Counts, clock_hz: float, toggle: float) -> Counts:
    """Multiplier per (component, action) on the max-clock price: V^2 and data activity (the
    data-dependent actions at toggle t cost ``fraction + (1 - fraction) * t`` of their random-
    data price, ``fraction`` the preset's ``data_independent_fraction``)."""
    s = power.energy_scale(clock_hz)
    fixed = power.data_independent_fraction
    active = fixed + (1.0 - fixed) * toggle  # share of the random-data energy spent

    def share(action: str, data: tuple[str, ...]) -> float:
        if action.startswith(data):
            return active
        return fixed if action.startswith(_PADDED) else 1.0

    out: dict[str, dict[str, float]] = {}
    for comp, actions in counts.items():
        v = 1.0 if comp in _FIXED_VOLTAGE else s
        data = _DATA_ACTIONS.get(comp, ())
        out[comp] = {a: v * share(a, data) for a in actions}
    return out  # type: ignore[return-value]


def _energy_pj(prices: Prices, counts: Counts, scale: Mapping[str, Mapping[str, float]]) -> float:
    return sum(
        n * prices[c][a] * scale[c][a] for c, acts in counts.items() for a, n in acts.items()
    )


def _highest_clock(p: GpuPowerConfig, ok, cap: float) -> float:  # type: ignore[no-untyped-def]
    """Highest supported clock <= ``cap`` with ``ok(clock)`` (ok true below a threshold); the
    lowest supported clock if none. Binary search over the clock grid."""
    step = p.clock_step_hz
    lo = math.ceil((p.max_clock_hz - cap) / step - 1e-9)  # steps below max: first candidate
    hi = math.floor((p.max_clock_hz - p.min_clock_hz) / step + 1e-9)  # the lowest clock
    lo = min(lo, hi)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(p.max_clock_hz - mid * step) else (mid + 1, hi)
    return p.max_clock_hz - lo * step


def _clock_at_most(p: GpuPowerConfig, ok, cap: float) -> float:  # type: ignore[no-untyped-def]
    """``cap`` itself when ``ok(cap)`` (a locked clock need not lie on the grid), else
    :func:`_highest_clock`."""
    return cap if ok(cap) else _highest_clock(p, ok, cap)


def _cap(cfg: GpuConfig, cycles: int, busy_cycles: int) -> tuple[float, str]:
    """(clock cap, its name): max boost (or the user's locked clock), or the tensor
    peak-current clock at this duty."""
    p = cfg.power
    assert p is not None
    f_max, f_t = p.max_clock_hz, p.tensor_current_clock_hz
    name = "max_clock"
    if p.locked_clock_hz is not None and p.locked_clock_hz < f_max:
        f_max, name = p.locked_clock_hz, "locked_clock"
    if f_t is None or busy_cycles == 0:
        return f_max, name
    duty = min(1.0, busy_cycles / (cfg.sms * cycles))
    budget = f_t * p.voltage_v(f_t)
    f = _clock_at_most(p, lambda x: duty * x * p.voltage_v(x) <= budget, f_max)
    return (f_max, name) if f >= f_max else (f, "tensor_current")


def _board_power_w(
    p: GpuPowerConfig, prices: Prices, counts: Counts, clock_hz: float, cycles: int, toggle: float
) -> float:
    """Static + priced actions of one run of ``cycles`` SM clocks at ``clock_hz``, W."""
    e = _energy_pj(prices, counts, action_scale(p, counts, clock_hz, toggle))
    return p.static_power_w + e * 1e-12 * clock_hz / cycles


def _power_limited_clock(
    cfg: GpuConfig, prices: Prices, base: Counts, toggle: float, cap: float, at: tuple
) -> float:
    """Highest supported clock <= ``cap`` with board power <= the limit; the time is
    ``a / f + b`` through the two timed points ``at = ((f1, t1), (f2, t2))`` (b = 0 when
    they coincide: all SM-clock-bound)."""
    p = cfg.power
    assert p is not None
    (f1, t1), (f2, t2) = at
    cycles_1 = t1 * f1  # SM clocks of the run timed at f1, whose counts ``base`` holds
    a = t1 * f1 if f1 == f2 else max(0.0, (t2 - t1) / (1 / f2 - 1 / f1))  # s x Hz
    b = max(0.0, t1 - a / f1)  # memory-bound seconds
    per_run = {c: x for c, x in base.items() if c != "sm"}  # clock-independent counts
    at_max = action_scale(p, per_run, p.max_clock_hz, toggle)  # V(f)^2 = 1
    e_fixed = _energy_pj(prices, {c: x for c, x in per_run.items() if c in _FIXED_VOLTAGE}, at_max)
    e_v2 = _energy_pj(prices, per_run, at_max) - e_fixed  # pJ, scales with V(f)^2
    sm_pj_per_clock = p.sm_active_energy_pj_per_cycle * base["sm"]["active_cycles"] / cycles_1

    def power(f: float) -> float:
        s = p.energy_scale(f)
        return (
            p.static_power_w
            + (e_v2 * s + e_fixed) * 1e-12 / (a / f + b)
            + sm_pj_per_clock * 1e-12 * f * s
        )

    return _clock_at_most(p, lambda x: power(x) <= p.power_limit_w, cap)


@dataclass(frozen=True)
class _Timed:
    """A layer timed at one clock: SM cycles, board action counts and what ran."""

    cycles: int
    counts: Counts
    ran: Any


def _solve(cfg: GpuConfig, measure, prices: Prices, toggle: float):  # type: ignore[no-untyped-def]
    """(clock, the layer timed there, board W, limit name) for ``measure(clock) -> _Timed``,
    first called at max boost, or at the user's locked clock below it, where the kernel
    runs whenever the power allows (see :func:`solve_clock`)."""
    p = cfg.power
    if p is None:
        raise ValueError(f"{cfg.name}: no power block; the clock cannot be solved")
    f_hi = p.max_clock_hz
    if p.locked_clock_hz is not None:
        f_hi = min(f_hi, p.locked_clock_hz)
    top = cur = measure(f_hi)
    base = top.counts
    cap, limit = _cap(cfg, top.cycles, base.get("tensor_core", {}).get("busy_cycles", 0))
    f, timed = cap, f_hi  # timed: the clock ``cur`` was simulated at
    if _board_power_w(p, prices, base, f_hi, top.cycles, toggle) > p.power_limit_w:
        hi = (f_hi, top.cycles / f_hi)
        f = _power_limited_clock(cfg, prices, base, toggle, cap, (hi, hi))
        for _ in range(_REFINEMENTS):
            cur, timed = measure(f), f
            g = _power_limited_clock(cfg, prices, base, toggle, cap, (hi, (f, cur.cycles / f)))
            if g == f:
                break
            f = g
        limit = "power" if f < cap else limit
    if timed != f:
        cur = measure(f)
    return f, cur, _board_power_w(p, prices, cur.counts, f, cur.cycles, toggle), limit


def solve_clock(
    cfg: GpuConfig,
    prob: GemmProblem,
    counts_of: Callable[[GemmProblem, Any], Counts],
    prices: Prices,
    toggle: float = 1.0,
) -> ClockSolution:
    """Steady clock of ``prob`` under ``cfg.power`` (see the module docstring).

    ``counts_of(prob, run)`` gives the simulator's action counts of a run; ``toggle`` is the
    operand toggle fraction (random data 1, zeros 0). Power grows with the clock, so a layer
    under the limit at max boost takes its cap (one timing run). Otherwise a first clock is
    solved as if all time were SM-clock-bound, timed, and the solve repeated with the time
    split through both timed clocks; it stops when the supported clock no longer changes.
    The kernel is picked at max boost (at a locked clock below it: there) and kept at every
    other clock.
    """
    tried: list[KernelRun] = []

    def measure(f: float) -> _Timed:
        if tried:
            run = _timing_at(cfg, prob, f, tried[0].plan)[0]
        else:
            run, every = _timing_at(cfg, prob, f)
            tried.extend([run, *every])
        return _Timed(run.cycles, board_counts(cfg, prob, run, counts_of(prob, run)), run)

    f, cur, watts, limit = _solve(cfg, measure, prices, toggle)
    return ClockSolution(f, cur.ran, watts, limit == "power", limit, len(tried) - 1)


def _at_clock(cfg: GpuConfig, clock_hz: float) -> GpuConfig:
    at = cfg.model_copy(update={"clock": cfg.clock.model_copy(update={"frequency_hz": clock_hz})})
    note_clock_variant(at, cfg)
    return at


def _conv_board_counts(cfg: GpuConfig, choice: ConvChoice) -> tuple[int, Counts]:
    """(SM cycles, board counts) of a conv algorithm's kernels at ``cfg``'s clock: GEMM
    kernels as :func:`board_counts`; memory kernels their bytes and FP16 CUDA-core FMAs, with
    every SM clocked for the kernel."""
    total: dict[str, dict[str, int]] = {}
    cycles = 0
    for step, n, run in candidate_runs(cfg, choice.candidate):
        cycles += n
        if run is None:
            c = _memory_board_counts(cfg, step, n)
        else:
            gcfg = step_config(cfg, step, run)
            c = board_counts(gcfg, step.problem, run, gemm_counts(step.problem, run))
        for comp, actions in c.items():
            slot = total.setdefault(comp, {})
            for act, k in actions.items():
                slot[act] = slot.get(act, 0) + k
    return cycles, total


def _memory_board_counts(cfg: GpuConfig, step: MemoryStep, cycles: int) -> Counts:
    """Board counts of a memory kernel of ``cycles`` SM clocks: its bytes and FP16 CUDA-core
    FMAs, with every SM clocked for the kernel."""
    c = memory_counts(step)
    if "cuda_core" in c:
        c["cuda_core"] = {"fma_fp16": c["cuda_core"]["fma"], "instruction": 0}
    if "tensor_core" in c:  # a direct fp16 kernel: its pipes busy at the dense rate
        fma = c["tensor_core"]["fma"]
        busy = round(fma / (cfg.peak_fma_per_cycle * cfg.tensor_cores.precision_rate["fp16"]))
        c["tensor_core"] = {"fma_fp16": fma, "op": c["tensor_core"]["op"], "busy_cycles": busy}
    c["sm"] = {"active_cycles": cfg.sms * cycles}
    return c


def solve_memory_clock(
    cfg: GpuConfig, step: MemoryStep, prices: Prices
) -> tuple[float, float, float, str]:
    """(clock Hz, seconds, board W, limit name) of one streaming memory kernel (a device copy,
    an element-wise pass: ``gpu_conv.memory_cycles``) at its steady clock under the limit."""

    def measure(f: float) -> _Timed:
        at = _at_clock(cfg, f)
        n = memory_cycles(at, step)
        return _Timed(n, _memory_board_counts(at, step, n), None)

    f, cur, watts, limit = _solve(cfg, measure, prices, 1.0)
    return f, cur.cycles / f, watts, limit


def solve_conv_clock(
    cfg: GpuConfig, layer: ConvLayer, prices: Prices, toggle: float = 1.0
) -> tuple[float, ConvChoice, Counts, float, str]:
    """(clock, algorithm, board counts there, board W, limit name) of a conv layer: the
    algorithm (``gpu_conv.best_conv``) is picked at max boost and kept; its GEMM kernels take
    the GEMM model's fastest plan at each clock (a locked clock below max boost: picked
    there)."""
    chosen: list[ConvChoice] = []

    def measure(f: float) -> _Timed:
        at = _at_clock(cfg, f)
        if not chosen:
            chosen.append(best_conv(at, layer))
        cycles, counts = _conv_board_counts(at, chosen[0])
        return _Timed(cycles, counts, chosen[0])

    f, cur, watts, limit = _solve(cfg, measure, prices, toggle)
    return f, chosen[0], cur.counts, watts, limit


def _power_extras(
    cfg: GpuConfig, clock_hz: float, watts: float, limit: str, toggle: float, sm_cycles: int
) -> dict:
    return {
        "clock_hz": clock_hz,
        "board_power_w": watts,
        "power_limited": limit == "power",
        "tc_clock_limit": limit,
        "tc_voltage_v": cfg.power.voltage_v(clock_hz) if cfg.power else float("nan"),
        "tc_operand_toggle": toggle,
        "tc_sm_cycles": sm_cycles,
    }


def _gemm_layer(
    config: GpuConfig, prob: GemmProblem, prices: Prices, toggle: float, start: int, seed: int
) -> tuple[LayerOutcome, float, Counts, dict]:
    """(outcome at the solved clock, clock, board counts, power extras) of one GEMM layer."""
    sol = solve_clock(config, prob, gemm_counts, prices, toggle)
    o = layer_outcome(_at_clock(config, sol.clock_hz), prob, sol.run, sol.plans_tried, start, seed)
    counts = board_counts(config, prob, sol.run, o.counts)
    extras = _power_extras(
        config, sol.clock_hz, sol.board_power_w, sol.limit, toggle, sol.run.cycles
    )
    return o, sol.clock_hz, counts, extras


def _conv_layer(
    config: GpuConfig, layer: ConvLayer, prices: Prices, toggle: float, start: int, seed: int
) -> tuple[LayerOutcome, float, Counts, dict]:
    """As :func:`_gemm_layer` for a conv layer run as its cuDNN-like algorithm."""
    f, choice, counts, watts, limit = solve_conv_clock(config, layer, prices, toggle)
    o = conv_outcome(_at_clock(config, f), layer, start, seed, choice)
    return o, f, counts, _power_extras(config, f, watts, limit, toggle, o.cycles)


def simulate_gpu(
    config: GpuConfig, workload: WorkloadSpec, seed: int, energy_pj: Prices | None = None
) -> tuple[list[LayerOutcome], SimContext]:
    """``simulate_tensor_core`` with every layer at its steady clock under the power limit.

    Without a ``power`` block or prices the preset's fixed clock is used. Layer ``cycles`` are
    periods of the preset's ``clock.frequency_hz`` (so ``time_s`` is right); ``clock_hz`` is the
    SM clock the layer ran at and ``tc_sm_cycles`` its length in those clocks. Conv layers run
    as their cuDNN-like algorithm (``gpu_conv``), its kernels together at one steady clock.
    """
    if config.power is None or energy_pj is None:
        return simulate_tensor_core(config, workload, seed)
    f_nom = config.clock.frequency_hz
    ctx = SimContext(f_nom)
    outcomes = []
    for i, spec in enumerate(workload.layers):
        toggle = toggle_fraction(spec.operand_activity)
        start = int(ctx.env.now)
        with layer_in_range(workload, i):
            if isinstance(spec, ConvLayer):
                o, f, counts, extras = _conv_layer(config, spec, energy_pj, toggle, start, seed)
            else:
                prob = gemm_problem(spec)
                o, f, counts, extras = _gemm_layer(config, prob, energy_pj, toggle, start, seed)
        cycles = max(1, round(o.cycles * f_nom / f))
        ctx.env.process(_advance(ctx, cycles))
        ctx.run()
        outcomes.append(
            replace(
                o,
                cycles=cycles,
                own_clock_cycles=o.cycles,
                end_cycle=start + cycles,
                counts=counts,
                action_scale=action_scale(config.power, counts, f, toggle),
                extras={**o.extras, **extras},
                warnings=o.warnings + _over_limit(config, spec.name, extras),
            )
        )
    return outcomes, ctx


#: board power above the limit by more than this fraction is reported (below it: the solve's
#: time fit through two timed clocks against the run re-timed at the clock it picked)
OVER_LIMIT_WARN_FRACTION = 0.02


def _over_limit(config: GpuConfig, layer: str, extras: dict) -> tuple[str, ...]:
    """A warning when the layer's board power exceeds ``power.power_limit_w``: at the lowest
    clock of the grid any excess (no lower clock exists), above it more than
    ``OVER_LIMIT_WARN_FRACTION`` (the solve's fit missed the re-timed run)."""
    p = config.power
    assert p is not None
    watts, f = extras["board_power_w"], extras["clock_hz"]
    lowest = f <= _highest_clock(p, lambda _: False, p.max_clock_hz)  # the grid's lowest
    if watts <= p.power_limit_w * (1 if lowest else 1 + OVER_LIMIT_WARN_FRACTION):
        return ()
    why = (
        "the clock grid has no lower clock (power.vf_curve.0.clock_hz, power.clock_step_hz)"
        if lowest
        else "the clock solve's time fit through two timed clocks missed this layer's run"
    )
    return (
        f"layer {layer!r}: board power {watts:.0f} W exceeds power.power_limit_w "
        f"({p.power_limit_w:g} W) at {f / 1e6:.0f} MHz; {why}",
    )


def _advance(ctx: SimContext, cycles: int) -> Generator[Any, Any, None]:
    yield ctx.timeout(cycles)
