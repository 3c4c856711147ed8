"""Model parallelism inside one node: tensor split (Megatron) and a layer pipeline (GPipe).

``gpus = tensor x pipeline x data`` GPUs of one node. Tensor parallelism splits every layer's
output features over ``tensor`` GPUs: each runs 1/tensor of every GEMM, then the shards are
all-gathered (forward) and the input gradients all-reduced (backward), on the critical path.
The pipeline cuts the layers into ``pipeline`` contiguous stages of balanced time; the batch of
a replica is cut into ``micro_batches`` micro-batches that flow through the stages as SimPy
processes (GPipe: every forward, then every backward, activations sent point to point over the
GPU's links), so a stage idles for the fill and drain ("bubble", ideally (p-1)/(m+p-1)). After
the flush each stage's gradients are all-reduced across the ``data`` replicas, then the
optimizer runs. Communication here does not overlap compute (GPipe's schedule).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from archsim.config.io import load_workload
from archsim.config.system import SystemConfig
from archsim.config.workload import WorkloadSpec
from archsim.errors import SimulationError, is_count
from archsim.system import load_system
from archsim.system.collectives import collective_time
from archsim.system.passes import StepOptions, elementwise_passes, gemm_times
from archsim.system.subsystem import gpu_config, subsystem
from archsim.system.topology import find_rings
from archsim.system.workload import PRECISIONS, split_tensor, training_layers

__all__ = ["parallel_step"]


def _stages(cost: list[float], parts: int) -> list[list[int]]:
    """Contiguous groups of layer indices whose largest total cost is smallest (exact DP)."""
    n = len(cost)
    if parts > n:
        raise SimulationError(f"pipeline of {parts} stages for {n} layers; allowed: 1 to {n}")
    pre = [0.0]
    for c in cost:
        pre.append(pre[-1] + c)
    best = [[float("inf")] * (n + 1) for _ in range(parts + 1)]
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    best[0][0] = 0.0
    for p in range(1, parts + 1):
        for j in range(p, n + 1):
            for i in range(p - 1, j):
                v = max(best[p - 1][i], pre[j] - pre[i])
                if v < best[p][j]:
                    best[p][j], cut[p][j] = v, i
    out, j = [], n
    for p in range(parts, 0, -1):
        i = cut[p][j]
        out.append(list(range(i, j)))
        j = i
    return out[::-1]


def _check(cfg: SystemConfig, gpus: int, tensor: int, pipeline: int, micro: int, batch: int):
    if gpus > cfg.gpus_per_node:
        raise SimulationError(
            f"model parallelism is modelled inside one node: gpus={gpus}; allowed: 1 to "
            f"{cfg.gpus_per_node}"
        )
    for name, v in (
        ("tensor", tensor), ("pipeline", pipeline), ("micro_batches", micro), ("batch", batch)
    ):  # fmt: skip
        if not is_count(v):
            raise SimulationError(f"{name}={v!r}; allowed: an integer >= 1")
    if gpus % (tensor * pipeline):
        raise SimulationError(
            f"tensor x pipeline = {tensor * pipeline} does not divide gpus={gpus}; allowed: "
            "divisors of the GPU count"
        )
    if batch % micro:
        raise SimulationError(
            f"batch {batch} is not a multiple of micro_batches={micro}; allowed: divisors of it"
        )


def parallel_step(
    system: SystemConfig | str,
    workload: WorkloadSpec | str,
    gpus: int | None = None,
    tensor: int = 1,
    pipeline: int = 1,
    micro_batches: int = 1,
    precision: str = "amp_fp16",
    batch_per_replica: int = 256,
    optimizer: str = "sgd",
) -> dict[str, Any]:
    """One training step with tensor and pipeline parallelism; returns its summary."""
    base = load_system(system)
    StepOptions(gpus, precision, batch_per_replica, optimizer).check(base)
    sysn = subsystem(base, gpus)
    n = sysn.gpus
    _check(sysn, n, tensor, pipeline, micro_batches, batch_per_replica)
    data = n // (tensor * pipeline)
    wl = load_workload(workload)
    gpu = gpu_config(sysn)
    _, _, act, grad = PRECISIONS[precision]
    micro = batch_per_replica // micro_batches
    full = training_layers(wl, micro)
    layers = split_tensor(full, tensor)
    gemms = gemm_times(gpu, layers, precision, wl)
    hbm = gpu.hbm.bandwidth_bytes_per_s * gpu.hbm_achievable_fraction
    ew_f, ew_b, _ = elementwise_passes(layers, wl, sysn, act, hbm)
    tp = subsystem(sysn, tensor) if tensor > 1 else None
    fwd, bwd = [], []
    for i, tl in enumerate(layers):
        f = gemms[f"{tl.name}/fwd"].time_s + ew_f[i]
        b = ew_b[i] + gemms[f"{tl.name}/wgrad"].time_s
        if tl.dgrad is not None:
            b += gemms[f"{tl.name}/dgrad"].time_s
        if tp is not None:
            f += collective_time(tp, "all_gather", full[i].outputs * act).time_s
            if i > 0:
                b += collective_time(tp, "all_reduce", full[i - 1].outputs * act).time_s
        fwd.append(f)
        bwd.append(b)
    stages = _stages([f + b for f, b in zip(fwd, bwd, strict=True)], pipeline)
    link = find_rings(sysn).bandwidth_bytes_per_s
    hop = sysn.nccl.hw_latency_us[find_rings(sysn).kind]["ring"][2] * 1e-6
    sends = [layers[s[-1]].outputs * act / link + hop for s in stages[:-1]]
    env = simpy.Environment()
    inbox = [simpy.Store(env) for _ in stages]
    back = [simpy.Store(env) for _ in stages]
    busy = [0.0] * len(stages)
    done = {}

    def stage(s: int) -> Generator[Any, Any, None]:
        f = sum(fwd[i] for i in stages[s])
        b = sum(bwd[i] for i in stages[s])
        for j in range(micro_batches):
            if s > 0:
                yield inbox[s].get()
            yield env.timeout(f)
            busy[s] += f
            if s + 1 < len(stages):
                env.process(_send(inbox[s + 1], j, sends[s]))
        for j in reversed(range(micro_batches)):
            if s + 1 < len(stages):
                yield back[s].get()
            yield env.timeout(b)
            busy[s] += b
            if s > 0:
                env.process(_send(back[s - 1], j, sends[s - 1]))
        done[s] = env.now

    def _send(store: simpy.Store, j: int, seconds: float) -> Generator[Any, Any, None]:
        yield env.timeout(seconds)
        yield store.put(j)

    for s in range(len(stages)):
        env.process(stage(s))
    env.run()
    flush = env.now
    allreduce = 0.0
    if data > 1:
        dp = subsystem(sysn, data)
        for s in stages:
            nbytes = sum(layers[i].params for i in s) * grad
            allreduce = max(allreduce, collective_time(dp, "all_reduce", nbytes).time_s)
    per_param = sysn.training.sgd_bytes_per_param
    if optimizer == "adam":
        per_param = sysn.training.adam_bytes_per_param
    params = max(sum(layers[i].params for i in s) for s in stages)
    opt_s = params * (per_param + (2 if act == 2 else 0)) / hbm + sysn.training.elementwise_launch_s
    step = flush + allreduce + opt_s
    return {
        "system": sysn.name,
        "gpus": n,
        "tensor": tensor,
        "pipeline": pipeline,
        "data": data,
        "micro_batches": micro_batches,
        "stages": [[layers[i].name for i in s] for s in stages],
        "pipeline_s": flush,
        "bubble_fraction": 1 - max(busy) / flush,
        "data_allreduce_s": allreduce,
        "optimizer_s": opt_s,
        "step_s": step,
        "samples_per_s": batch_per_replica * data / step,
    }
