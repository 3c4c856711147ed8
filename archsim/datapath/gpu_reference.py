"""Literal per-cycle twin of :func:`archsim.datapath.gpu_sm.sm_round` (slow; tests only).

Steps one SM clock at a time: the load/store port, every sub-core's tensor pipe issuing MMA
instructions one by one with the per-fragment dependency latency, the shared-memory buffers and
the k-step barrier. The machine is described in ``gpu_sm.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["reference_sm_round"]


@dataclass
class _Cta:
    index: int
    load_req: dict[int, int] = field(default_factory=dict)  # step -> cycle requested
    data_ready: dict[int, int] = field(default_factory=dict)  # step -> cycle in shared memory
    step: int = 0  # k-step being computed
    warps_done: int = 0  # warps of that step that finished issuing
    step_done_at: dict[int, int] = field(default_factory=dict)
    started: bool = False  # warp jobs of the current step enqueued
    epilogue_req: int = -1  # -1 not yet, >= 0 requested at that cycle, -2 taken
    done: int = -1


@dataclass
class _WarpJob:
    cta: int
    warp: int
    ready: int
    issued: int = 0
    last_issue: dict[int, int] = field(default_factory=dict)  # fragment -> issue cycle
    pipe_free: int = 0  # cycle the tensor pipe can take the next instruction
    end: int = -1  # cycle the sub-core is free again (set after the last issue)


def reference_sm_round(
    n_cta: int,
    steps: int,
    stages: int,
    warps: int,
    sub_cores: int,
    groups: int,
    frags: int,
    issue_cycles: int,
    mma_latency: int,
    bubble_cycles: int,
    load_cycles: int,
    load_latency: int,
    epilogue_cycles: int,
    epilogue_latency: int,
) -> dict[str, int]:
    """Per-cycle simulation; returns the same quantities as ``sm_round`` (by name)."""
    ctas = [_Cta(j) for j in range(n_cta)]
    for c in ctas:
        for i in range(min(stages, steps)):
            c.load_req[i] = 0
    tail = max(0, mma_latency - issue_cycles)
    port_until = 0  # the port is busy until this cycle (exclusive)
    in_flight: list[tuple[int, int, int, str]] = []  # (arrival cycle, cta, step, kind)
    running: list[_WarpJob | None] = [None] * sub_cores
    waiting: list[_WarpJob] = []
    port_busy = tensor_busy = instructions = loads = 0
    t = 0
    while any(c.done < 0 for c in ctas):
        # phase A: completions at cycle t
        for item in [x for x in in_flight if x[0] == t]:
            in_flight.remove(item)
            _, j, i, kind = item
            if kind == "load":
                ctas[j].data_ready[i] = t
            else:
                ctas[j].done = t
        for u, job in enumerate(running):
            if job is not None and job.end == t:
                _finish_warp(ctas[job.cta], t, warps, stages, steps)
                running[u] = None
        # phase B: new requests (warp jobs of a startable k-step, epilogues)
        for c in ctas:
            i = c.step
            if (
                i < steps
                and not c.started
                and c.data_ready.get(i, 1 << 62) <= t
                and (i == 0 or c.step_done_at[i - 1] <= t)
            ):
                ready = max(c.data_ready[i], c.step_done_at[i - 1] if i else 0)
                waiting.extend(_WarpJob(c.index, w, ready) for w in range(warps))
                c.started = True
            if i == steps and c.epilogue_req == -1 and c.step_done_at[steps - 1] + tail <= t:
                c.epilogue_req = c.step_done_at[steps - 1] + tail
        # phase C: the port takes the oldest waiting request when it is free
        if port_until <= t:
            cands = [(r, 0, c.index, i) for c in ctas for i, r in c.load_req.items() if r <= t]
            cands += [(c.epilogue_req, 1, c.index, 0) for c in ctas if c.epilogue_req >= 0]
            if cands:
                _, kind, j, i = min(cands)
                length = load_cycles if kind == 0 else epilogue_cycles
                lat = load_latency if kind == 0 else epilogue_latency
                port_until = t + length
                port_busy += length
                if kind == 0:
                    loads += 1
                    del ctas[j].load_req[i]
                    in_flight.append((t + length + lat, j, i, "load"))
                else:
                    ctas[j].epilogue_req = -2  # taken
                    in_flight.append((t + length + lat, j, 0, "store"))
        # phase D: each sub-core takes a job when idle and issues at most one MMA instruction
        for u in range(sub_cores):
            if running[u] is None:
                mine = [
                    x for x in waiting if (x.cta * warps + x.warp) % sub_cores == u and x.ready <= t
                ]
                if not mine:
                    continue
                job = min(mine, key=lambda x: (x.ready, x.cta, x.warp))
                waiting.remove(job)
                job.pipe_free = t
                running[u] = job
            job = running[u]
            if job.issued == groups * frags:
                continue  # issue bubbles until job.end
            frag, group = job.issued % frags, job.issued // frags
            if job.pipe_free <= t and (group == 0 or job.last_issue[frag] + mma_latency <= t):
                job.last_issue[frag] = t
                job.issued += 1
                job.pipe_free = t + issue_cycles
                tensor_busy += issue_cycles
                instructions += 1
                if job.issued == groups * frags:
                    job.end = t + issue_cycles + bubble_cycles
        t += 1
    return {
        "cycles": max(c.done for c in ctas),
        "port_busy_cycles": port_busy,
        "tensor_busy_cycles": tensor_busy,
        "mma_instructions": instructions,
        "loads": loads,
    }


def _finish_warp(c: _Cta, t: int, warps: int, stages: int, steps: int) -> None:
    """A warp job of ``c`` ended at cycle ``t``: close the k-step after its last warp."""
    c.warps_done += 1
    if c.warps_done == warps:
        i = c.step
        c.step_done_at[i] = t
        c.step += 1
        c.warps_done = 0
        c.started = False
        if i + stages < steps:
            c.load_req[i + stages] = t
