"""One data-parallel training step (PyTorch DDP) on a multi-GPU system, on the SimPy engine.

Every GPU runs the same kernels (the single-GPU Tensor Core model times each GEMM): the forward
pass layer by layer (GEMM, then the layer's elementwise passes), then the backward pass in
reverse (elementwise, data gradient, weight gradient). When a layer's weight gradient is done its
gradients are ready; DDP packs parameters in reverse layer order into buckets (the first capped at
``ddp.first_bucket_bytes``, the rest at ``ddp.bucket_bytes``) and all-reduces each bucket, in
order, on one NCCL stream as soon as every gradient in it is ready. The NCCL kernels occupy SMs
(one CTA per channel), so compute that overlaps an all-reduce runs at ``(SMs - channels) / SMs``
of its speed (the compute process is re-rated whenever a collective starts or ends). After the
backward pass and the last all-reduce, the optimizer updates every parameter (memory-bound).
Where the system sets ``host.images_per_s_per_core``, the host's loader workers bound the step
from below (they prefetch, so the GPU waits only for what they cannot keep up with).
With more than one GPU, DDP's autograd hook copies each gradient into its bucket (a
memory-bound kernel after the layer's weight gradient) and, once every all-reduce is done, the
buckets are copied back into the gradients before the optimizer (``ddp.gradient_copies``).

Step results: compute, exposed and overlapped communication, optimizer, input stall, images per
second, scaling efficiency against one GPU of the same system, energy per step. What each GPU
computes (GEMM times, elementwise passes, the optimizer's bytes) is ``system.passes``.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from archsim.config.io import load_workload
from archsim.config.system import DdpConfig, SystemConfig
from archsim.config.workload import WorkloadSpec
from archsim.errors import SimulationError
from archsim.results import LayerResult, RunResult
from archsim.simulate import archsim_version, model_fingerprint
from archsim.system.collectives import collective_time
from archsim.system.passes import (
    MEMORY_FORMATS,
    OPTIMIZERS,
    GpuWork,
    StepOptions,
    cold_when_revisited,
    footprint_bytes,
    gpu_work,
    input_elements,
    pooled_elements,
)
from archsim.system.subsystem import subsystem
from archsim.system.workload import TrainLayer

__all__ = [
    "MEMORY_FORMATS",
    "OPTIMIZERS",
    "StepOptions",
    "cold_when_revisited",
    "configured_step",
    "footprint_bytes",
    "input_elements",
    "pooled_elements",
    "run_step",
    "train_step",
]


@dataclass
class _Stream:
    """Timeline of one step: (stream, name, start s, end s) and the running collectives."""

    events: list[tuple[str, str, float, float]] = field(default_factory=list)
    comm_active: int = 0


def _buckets(layers: list[TrainLayer], system: SystemConfig, grad_bytes: int) -> list[list[int]]:
    """Layer indices of each DDP bucket, in all-reduce order (reverse layer order), as
    PyTorch's ``compute_bucket_assignment_by_size`` fills them: a layer joins the open bucket,
    which closes once it holds at least the cap (first ``first_bucket_bytes``, then
    ``bucket_bytes``), so a bucket may pass its cap by its last layer."""
    out: list[list[int]] = []
    size, cap, open_ = 0, system.ddp.first_bucket_bytes, False
    for i in reversed(range(len(layers))):
        if not open_:
            out.append([])
            size, open_ = 0, True
        out[-1].append(i)
        size += layers[i].params * grad_bytes
        if size >= cap:
            open_, cap = False, system.ddp.bucket_bytes
    return out


def train_step(
    system: SystemConfig | str,
    workload: WorkloadSpec | str,
    gpus: int | None = None,
    precision: str = "amp_fp16",
    batch_per_gpu: int = 256,
    optimizer: str = "sgd",
    topk_density: float | None = None,
    memory_format: str = "nhwc",
    conv_lowering: str = "gemm",
) -> RunResult:
    """Simulate one data-parallel training step; see the module docstring.

    ``gpus``: GPUs used (default all of ``system``); ``precision``: amp_fp16, amp_bf16 (FP32
    master weights and gradients), tf32 or fp32; ``batch_per_gpu``: samples per GPU;
    ``optimizer``: sgd (momentum) or adam; ``topk_density``: send only this fraction of the
    gradients (top-k values + indices, all-gathered) instead of all-reducing them;
    ``memory_format``: nhwc (channels last) or nchw (PyTorch's default: cuDNN transposes the
    activations around every tensor-core conv); ``conv_lowering``: gemm (every pass a plain
    GEMM) or cudnn (a conv's forward and data gradient as cuDNN convs; see
    :func:`archsim.system.passes.gemm_times`).
    ``metadata["train_step"]`` holds the step's summary and timeline.
    """
    from archsim.system import load_system

    opts = StepOptions(
        gpus, precision, batch_per_gpu, optimizer, topk_density, memory_format, conv_lowering
    )
    return run_step(load_system(system), workload, opts)


def configured_step(system: SystemConfig, workload: WorkloadSpec | str) -> RunResult:
    """The step the system's ``step`` block describes (what a sweep point of a system runs)."""
    s = system.step
    opts = StepOptions(
        s.gpus,
        s.precision,
        s.batch_per_gpu,
        s.optimizer,
        s.topk_density,
        s.memory_format,
        s.conv_lowering,
    )
    return run_step(system, workload, opts)


def run_step(system: SystemConfig, workload: WorkloadSpec | str, opts: StepOptions) -> RunResult:
    """:func:`train_step` with its options as one :class:`StepOptions`."""
    try:
        return _run_step(system, workload, opts)
    except _BeyondCycles as exc:  # a system field's time: named as the system's (its file)
        raise SimulationError(f"{system.name}: {exc}") from None


def _run_step(system: SystemConfig, workload: WorkloadSpec | str, opts: StepOptions) -> RunResult:
    """:func:`run_step` without naming the system in a step too long to count."""
    opts.check(system)
    sysn = subsystem(system, opts.gpus)
    work = gpu_work(sysn, load_workload(workload), opts)
    _check_buckets(sysn, work)
    summary, rows = _step(sysn, work, opts)
    if sysn.gpus > 1:
        single, _ = _step(subsystem(system, 1), work, opts)
        summary["single_gpu_samples_per_s"] = single["samples_per_s"]
    else:
        summary["single_gpu_samples_per_s"] = summary["samples_per_s"]
    summary["speedup_vs_1_gpu"] = summary["samples_per_s"] / summary["single_gpu_samples_per_s"]
    summary["scaling_efficiency"] = summary["speedup_vs_1_gpu"] / sysn.gpus
    return _result(sysn, work, summary, rows)


def _check_buckets(sysn: SystemConfig, work: GpuWork) -> None:
    """A bucket size the user set must not exceed the model's gradients (PyTorch's defaults
    may: a small model then has one bucket)."""
    default = DdpConfig()
    total = sum(tl.params for tl in work.layers) * work.grad_bytes
    for name in ("bucket_bytes", "first_bucket_bytes"):
        value = getattr(sysn.ddp, name)
        if value > total and value != getattr(default, name):
            raise SimulationError(
                f"{sysn.name}: ddp.{name}={value} is larger than the model's gradients "
                f"({total} bytes of {work.workload.name}); allowed: 1 to {total}"
            )


def _comms(sysn: SystemConfig, work: GpuWork, buckets: list[list[int]], opts: StepOptions):
    out = []
    for idx in buckets:
        nbytes = sum(work.layers[i].params for i in idx) * work.grad_bytes
        if sysn.gpus == 1:
            out.append(None)
        elif opts.topk_density is None:
            out.append(collective_time(sysn, "all_reduce", nbytes))
        else:  # top-k values + int32 indices of every GPU, gathered by all
            send = max(1, math.ceil(nbytes / work.grad_bytes * opts.topk_density))
            out.append(
                collective_time(sysn, "all_gather", send * (work.grad_bytes + 4) * sysn.gpus)
            )
    return out


def _topk_hook(sysn: SystemConfig, work: GpuWork, buckets: list[list[int]],
               opts: StepOptions) -> list[tuple[float, int]]:  # fmt: skip
    """(seconds, HBM bytes) of each bucket's top-k compression hook on one GPU, memory-bound
    ((0, 0) without top-k). Selection as Deep Gradient Compression does it (Lin et al., ICLR
    2018, Sec. 3: a threshold estimated on a sample, then one pass): read the bucket's
    gradients, write the k values and int32 indices; after the all-gather, decompression:
    write the dense gradients (zeros), read every GPU's k pairs and scatter-add them (read +
    write)."""
    if opts.topk_density is None or sysn.gpus == 1:
        return [(0.0, 0)] * len(buckets)
    hbm = work.hbm_bytes_per_s
    launch = sysn.training.elementwise_launch_s
    gb, out = work.grad_bytes, []
    for idx in buckets:
        n = sum(work.layers[i].params for i in idx)
        k = max(1, math.ceil(n * opts.topk_density))
        select = n * gb + k * (gb + 4)
        scatter = n * gb + sysn.gpus * k * (gb + 4 + 2 * gb)
        out.append(((select + scatter) / hbm + 2 * launch, select + scatter))
    return out


def _ddp_copies(sysn: SystemConfig) -> int:
    """DDP's gradient copies per step (the hook's copy into the buckets, then
    ``gradient_copies - 1`` copies back); none on one GPU."""
    return 0 if sysn.gpus == 1 else sysn.ddp.gradient_copies


def _ddp_copy_s(sysn: SystemConfig, work: GpuWork) -> list[float]:
    """Seconds of one DDP gradient copy (a read and a write) per layer; none on one GPU."""
    if not _ddp_copies(sysn):
        return [0.0] * len(work.layers)
    launch = sysn.training.elementwise_launch_s
    return [max(2 * tl.params * work.grad_bytes / work.hbm_bytes_per_s, launch)
            for tl in work.layers]  # fmt: skip


def _ddp_copy_bytes(sysn: SystemConfig, work: GpuWork) -> int:
    """HBM bytes of all DDP gradient copies per GPU (each a read and a write)."""
    grads = sum(tl.params for tl in work.layers) * work.grad_bytes
    return 2 * grads * _ddp_copies(sysn)


def _kernels(work: GpuWork, copy_s: list[float]) -> list[tuple[str, float, bool, int | None]]:
    """(name, seconds at full speed, memory-bound?, layer whose gradients it completes);
    ``copy_s``: the DDP hook's copy of each layer's gradients into its bucket (0: none)."""
    out: list[tuple[str, float, bool, int | None]] = []

    def gemm(tl: TrainLayer, phase: str, done: int | None) -> None:
        lr = work.gemms[f"{tl.name}/{phase}"]
        out.append((f"{tl.name}/{phase}", lr.time_s, lr.extras.get("tc_bound") == "memory", done))

    for i, tl in enumerate(work.layers):
        gemm(tl, "fwd", None)
        out.append((f"{tl.name}/elementwise_fwd", work.ew_f[i], True, None))
    for i in reversed(range(len(work.layers))):
        tl = work.layers[i]
        out.append((f"{tl.name}/elementwise_bwd", work.ew_b[i], True, None))
        if tl.dgrad is not None:
            gemm(tl, "dgrad", None)
        if copy_s[i] > 0:
            gemm(tl, "wgrad", None)
            out.append((f"{tl.name}/ddp_copy", copy_s[i], True, i))
        else:
            gemm(tl, "wgrad", i)
    return out


def _step(sysn: SystemConfig, work: GpuWork, opts: StepOptions):
    """Run the step's two streams in SimPy; (summary, rows)."""
    buckets = _buckets(work.layers, sysn, work.grad_bytes)
    bucket_of = {i: b for b, idx in enumerate(buckets) for i in idx}
    comms = _comms(sysn, work, buckets, opts)
    hooks = _topk_hook(sysn, work, buckets, opts)
    hook_s = [t for t, _ in hooks]
    env = simpy.Environment()
    st = _Stream()
    ready = [env.event() for _ in buckets]
    left = [len(idx) for idx in buckets]
    sms = work.gpu.sms
    channels = max((c.channels for c in comms if c is not None), default=0)
    slow = max(1, sms - channels * sysn.nccl.sm_per_channel) / sms
    hbm = work.hbm_bytes_per_s
    # HBM bytes NCCL moves per second while a collective runs (busbw x its passes per byte)
    nccl_hbm = max(
        (c.busbw_bytes_per_s * sysn.nccl.hbm_passes_per_byte for c in comms if c is not None),
        default=0.0,
    )
    slow_mem = min(slow, max(0.05, 1 - nccl_hbm / hbm))
    marks: dict[str, float] = {}
    waiting = {"timeout": False}
    copy_s = _ddp_copy_s(sysn, work)
    # after the last all-reduce, buckets are copied back into the gradients (copies beyond the
    # hook's first)
    copy_back_s = sum(copy_s) * max(0, sysn.ddp.gradient_copies - 1)

    def compute() -> Generator[Any, Any, None]:
        for name, dur, mem_bound, done_layer in _kernels(work, copy_s):
            start, left_s = env.now, dur
            while left_s > 0:
                rate = (slow_mem if mem_bound else slow) if st.comm_active else 1.0
                t0 = env.now
                waiting["timeout"] = True
                try:
                    yield env.timeout(left_s / rate)
                    left_s = 0.0
                except simpy.Interrupt:
                    left_s = max(0.0, left_s - (env.now - t0) * rate)
                waiting["timeout"] = False
            st.events.append(("compute", name, start, env.now))
            if done_layer is not None:
                b = bucket_of[done_layer]
                left[b] -= 1
                if left[b] == 0:
                    ready[b].succeed()
        marks["backward_end"] = env.now

    proc = env.process(compute())

    def rerate() -> None:
        if proc.is_alive and waiting["timeout"]:
            proc.interrupt()

    def comm() -> Generator[Any, Any, None]:
        for b, c in enumerate(comms):
            yield ready[b]
            if c is None:
                continue
            start = env.now
            st.comm_active += 1
            rerate()
            if hook_s[b] > 0:  # the compression hook runs before and after its collective
                yield env.timeout(hook_s[b])
                st.events.append(("nccl", f"bucket{b}/topk", start, env.now))
                start = env.now
            yield env.timeout(c.time_s)
            st.comm_active -= 1
            rerate()
            st.events.append(("nccl", f"bucket{b}/{c.algorithm}/{c.protocol}", start, env.now))
        marks["comm_end"] = env.now

    cproc = env.process(comm())
    env.run(simpy.AllOf(env, [proc, cproc]))
    if copy_back_s > 0:
        copy_start = env.now
        env.run(env.timeout(copy_back_s))
        st.events.append(("compute", "ddp_copy_back", copy_start, env.now))
    opt_start = env.now
    env.run(env.timeout(work.opt_s))
    st.events.append(("compute", "optimizer", opt_start, env.now))
    gpu_step_s = env.now
    # the host's loader workers, prefetching, bound the step from below (``host``)
    step_s = max(gpu_step_s, _loader_step_s(sysn, opts.batch_per_gpu))
    if step_s > gpu_step_s:
        st.events.append(("compute", "input_stall", gpu_step_s, step_s))
    compute_s = marks["backward_end"]
    comm_total = sum(c.time_s for c in comms if c is not None) + sum(hook_s)
    exposed = max(0.0, marks["comm_end"] - compute_s)
    summary: dict[str, Any] = {
        "system": sysn.name,
        "gpus": sysn.gpus,
        "nodes": sysn.nodes,
        "precision": opts.precision,
        "batch_per_gpu": opts.batch_per_gpu,
        "optimizer": opts.optimizer,
        "topk_density": opts.topk_density,
        "topk_hook_s": sum(hook_s),  # compression and decompression, in communication_s
        "memory_format": opts.memory_format,
        "conv_lowering": opts.conv_lowering,
        "step_s": step_s,
        "compute_s": compute_s,
        "communication_s": comm_total,
        "exposed_communication_s": exposed,
        "overlapped_communication_s": max(0.0, comm_total - exposed),  # not -1e-20
        "optimizer_s": work.opt_s,
        "input_stall_s": step_s - gpu_step_s,  # waiting for the host's loader workers
        "ddp_copy_s": sum(copy_s) + copy_back_s,  # in compute_s, except the copy back:
        "ddp_copy_back_s": copy_back_s,
        "samples_per_s": opts.batch_per_gpu * sysn.gpus / step_s,
        "buckets": len(buckets),
        "timeline": st.events,
    }
    return summary, _comm_rows(sysn, work, comms, buckets, hooks)


def _loader_step_s(sysn: SystemConfig, batch_per_gpu: int) -> float:
    """Seconds the node's loader workers take to prepare one batch for every GPU (0: the
    input pipeline is not modelled): the workers run on at most ``host.cpu_cores`` cores and
    share them equally among the node's GPUs."""
    h = sysn.host
    if h.images_per_s_per_core is None or h.cpu_cores is None or h.loader_workers_per_gpu is None:
        return 0.0
    workers = h.loader_workers_per_gpu * sysn.gpus_per_node
    per_gpu = min(workers, h.cpu_cores) * h.images_per_s_per_core / sysn.gpus_per_node
    return batch_per_gpu / per_gpu


def _comm_rows(sysn, work, comms, buckets, hooks) -> list[LayerResult]:
    """One row per all-reduced bucket, priced per bit on the links it crosses; with top-k,
    its compression hook's time and HBM bytes (all GPUs) too."""
    clock = work.gpu.clock.frequency_hz
    rows = []
    for b, (c, idx, (hook_s, hook_bytes)) in enumerate(zip(comms, buckets, hooks, strict=True)):
        if c is None:
            continue
        pj = c.energy_pj(sysn) + hook_bytes * work.hbm_pj * sysn.gpus
        extras = {
            "comm_bytes": c.bytes,
            "comm_algorithm": c.algorithm,
            "comm_protocol": c.protocol,
            "comm_layers": len(idx),
            "comm_busbw_gb_s": c.busbw_bytes_per_s / 1e9,
        }
        rows.append(_row(f"bucket{b}", c.op, c.time_s + hook_s, clock, 0, pj, extras,
                         dram_bytes=hook_bytes * sysn.gpus))  # fmt: skip
    return rows


def _result(
    sysn: SystemConfig, work: GpuWork, summary: dict[str, Any], comm_rows: list[LayerResult]
) -> RunResult:
    """The RunResult: one row per layer (all GPUs), per bucket and for the optimizer."""
    gpu = work.gpu
    clock, hbm_pj = gpu.clock.frequency_hz, work.hbm_pj
    # a board (power: block) draws its static power all step long; the GEMMs' rows carry it
    # already, the memory passes, the optimizer and the waits add it here
    static_pj_per_s = gpu.power.static_power_w * 1e12 if gpu.power is not None else 0.0
    rows = []
    for i, tl in enumerate(work.layers):
        phases = [
            work.gemms[k]
            for k in (f"{tl.name}/{p}" for p in ("fwd", "dgrad", "wgrad"))
            if k in work.gemms
        ]
        t = sum(p.time_s for p in phases) + work.ew_f[i] + work.ew_b[i]
        ew_s = work.ew_f[i] + work.ew_b[i]  # the passes' time is in t, so is their energy
        ew_pj = work.ew_bytes[i] * hbm_pj + ew_s * static_pj_per_s
        pj = (sum(p.energy_pj for p in phases) + ew_pj) * sysn.gpus
        macs = sum(p.macs_dense for p in phases) * sysn.gpus
        extras = {
            "train_fwd_s": phases[0].time_s,
            "train_elementwise_s": work.ew_f[i] + work.ew_b[i],
        }
        # cycles at the peak MAC rate: utilization counts the GEMM's own clock (tc_sm_cycles)
        busy = sum(p.utilization * p.extras.get("tc_sm_cycles", p.cycles) for p in phases)
        dram = (sum(p.dram_bytes for p in phases) + work.ew_bytes[i]) * sysn.gpus
        rows.append(
            _row(tl.name, "train_layer", t, clock, macs, pj, extras, busy=busy, dram_bytes=dram)
        )
    rows += comm_rows
    opt_pj = (work.opt_bytes * hbm_pj + work.opt_s * static_pj_per_s) * sysn.gpus
    rows.append(
        _row("optimizer", "optimizer", work.opt_s, clock, 0, opt_pj, {},
             dram_bytes=work.opt_bytes * sysn.gpus)
    )  # fmt: skip
    # the rest of the step: DDP's gradient copies, compute slowed by NCCL, exposed
    # communication, the copy back, waiting for the loaders
    rest_s = max(0.0, summary["step_s"] - sum(r.time_s for r in rows if r.kind == "train_layer")
                 - work.opt_s)  # fmt: skip
    copy_bytes = _ddp_copy_bytes(sysn, work)
    rest_pj = (copy_bytes * hbm_pj + rest_s * static_pj_per_s) * sysn.gpus
    rows.append(
        _row("ddp_and_waits", "step_rest", rest_s, clock, 0, rest_pj, {},
             dram_bytes=copy_bytes * sysn.gpus)
    )  # fmt: skip
    summary["energy_j"] = math.fsum(r.energy_pj for r in rows) * 1e-12
    # what the GPUs' share of it covers: board energy (a power: block) or the priced actions
    summary["gpu_energy"] = "board" if gpu.power is not None else "actions only"
    meta = {
        "archsim_version": archsim_version(),
        "model_fingerprint": model_fingerprint(),
        "deterministic": "results depend only on (system, workload, options)",
        "workload_source": work.workload.source,
        "hardware_config": sysn.model_dump(mode="json"),
        "train_step": summary,
    }
    _check_cycles("step", summary["step_s"], clock)  # each row fits, their sum may not
    return RunResult(
        accelerator="system",
        hardware=sysn.name,
        workload=work.workload.name,
        seed=0,
        clock_hz=clock,
        total_cycles=round(summary["step_s"] * clock),
        layers=tuple(rows),
        area_mm2={},
        metadata=meta,
    )


def _row(
    name: str, kind: str, t: float, clock: float, macs: int, pj: float, extras: dict[str, Any],
    *, busy: float = 0.0, dram_bytes: int = 0,
) -> LayerResult:  # fmt: skip
    """One row of the step, all GPUs together; ``busy``: one GPU's cycles at its peak MAC rate
    (its GEMMs' utilization x cycles), so utilization is busy / the row's cycles."""
    _check_cycles(name, t, clock)
    cycles = round(t * clock)
    return LayerResult(
        layer=name, kind=kind, cycles=cycles, time_s=t, macs_dense=macs, macs_effective=macs,
        utilization=busy / cycles if cycles else 0.0, energy_pj=pj,
        power_w=pj * 1e-12 / t if t else 0.0, dram_bytes=dram_bytes, start_cycle=0,
        end_cycle=cycles, energy_by_component_pj={kind: pj}, counts={}, extras=extras,
    )  # fmt: skip


#: what a step's own rows are, as an error names them (the row names are results columns)
_ROW_WHAT = {
    "ddp_and_waits": "the step's DDP copies and waits for the input loaders (ddp.*, host.*)",
    "optimizer": "the optimizer update (training.*)",
}


class _BeyondCycles(SimulationError):
    """A row of the step longer than a 64-bit cycle count: a system field's value (a launch
    time, a pass count, a per-core rate), which ``run_step`` names as the system's."""


def _check_cycles(what: str, t: float, clock: float) -> None:
    """A step's row or the whole step, ``t`` s at ``clock`` Hz, must fit a 64-bit cycle count."""
    if not math.isfinite(t * clock) or t * clock >= 2**63:
        raise _BeyondCycles(
            f"{_ROW_WHAT.get(what, what)}: {t:.3g} s, beyond what a 64-bit cycle count holds; "
            "allowed: times and rates of the system's fields (training.*, host.*, nccl.*) that "
            "give a step under 2**63 cycles"
        )
