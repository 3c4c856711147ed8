"""Fast per-SM model of a tensor-core GEMM main loop: one *round* of co-resident CTAs.

The literal per-cycle twin is ``gpu_reference.py``; both implement exactly this machine
(all times in SM clock cycles, all CTAs of the round start at cycle 0):

* ``n_cta`` CTAs, each with ``steps`` k-steps and ``stages`` shared-memory buffers. The load of
  k-step ``i`` (the A and B tiles of that step) may be *requested* at cycle 0 when
  ``i < stages``, otherwise when step ``i - stages`` has finished computing (its buffer is free).
* One load/store port per SM (global/L2 -> shared memory and the epilogue's stores) serves
  requests one at a time: a load occupies it ``load_cycles`` and its data is in shared memory
  ``load_latency`` cycles after that; the epilogue occupies it ``epilogue_cycles`` and completes
  ``epilogue_latency`` cycles later.
* Warp ``w`` of CTA ``j`` runs on sub-core ``(j * warps + w) % sub_cores``. Its work for a k-step
  (a *warp job*) may start when the step's data is in shared memory and the CTA has finished the
  previous step (the ``__syncthreads`` between k-steps). A sub-core runs one warp job at a time,
  without pre-emption. A warp job issues ``groups`` groups of ``frags`` MMA instructions (one per
  independent accumulator fragment); each occupies the tensor cores ``issue_cycles`` and an
  instruction may not issue earlier than ``mma_latency`` cycles after the previous instruction on
  the same fragment (the group before). After its last instruction the sub-core idles
  ``bubble_cycles`` (the measured sustained-throughput limit), then takes the next job.
* After its last k-step a CTA waits ``max(0, mma_latency - issue_cycles)`` for the last MMA
  results, then requests its epilogue.
* Servers (the port, each sub-core) take waiting requests in order of (ready cycle, kind, CTA,
  index) where kind is 0 for loads and 1 for epilogues, index the step or the warp.

The fast model does not step cycles: it schedules requests in non-decreasing ready order, which
is exact because a request only becomes ready at or after the completion of one already
scheduled.
"""

from __future__ import annotations

import numpy as np

from archsim.numba_cache import nb

__all__ = ["SM_FIELDS", "sm_round", "warp_job_cycles"]

#: names of the values returned by :func:`sm_round`, in order
SM_FIELDS = ("cycles", "port_busy_cycles", "tensor_busy_cycles", "mma_instructions", "loads")

_INF = np.iinfo(np.int64).max


@nb.njit(cache=True)
def warp_job_cycles(
    groups: int, frags: int, issue_cycles: int, mma_latency: int, bubble_cycles: int
) -> int:
    """Sub-core cycles of one warp job (closed form of the literal issue loop)."""
    per_group = max(frags * issue_cycles, mma_latency)
    return (groups - 1) * per_group + frags * issue_cycles + bubble_cycles


@nb.njit(cache=True)
def sm_round(
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
) -> np.ndarray:
    """Cycles and counts of one round; returns an int64 array ordered as :data:`SM_FIELDS`."""
    job = warp_job_cycles(groups, frags, issue_cycles, mma_latency, bubble_cycles)
    tail = max(0, mma_latency - issue_cycles)
    data_ready = np.zeros((n_cta, steps), np.int64)
    next_load = np.zeros(n_cta, np.int64)
    next_step = np.zeros(n_cta, np.int64)
    next_warp = np.zeros(n_cta, np.int64)
    cur_end = np.zeros(n_cta, np.int64)  # max warp-job end within the current step
    comp_end = np.zeros((n_cta, steps), np.int64)
    epi_state = np.zeros(n_cta, np.int64)  # 0 pending, 1 done
    done = np.zeros(n_cta, np.int64)
    sub_free = np.zeros(sub_cores, np.int64)
    port_free = 0
    port_busy = 0
    remaining = n_cta * (steps * (warps + 1) + 1)
    while remaining > 0:
        best_r = _INF
        best_kind = 9
        best_j = -1
        for j in range(n_cta):
            # next load of CTA j
            i = next_load[j]
            if i < steps:
                if i < stages:
                    r = 0
                elif next_step[j] > i - stages:
                    r = comp_end[j, i - stages]
                else:
                    r = -1
                if r >= 0 and (r < best_r or (r == best_r and best_kind > 0)):
                    best_r, best_kind, best_j = r, 0, j
            # next warp job of CTA j
            s = next_step[j]
            if s < steps and next_load[j] > s:
                r = data_ready[j, s]
                if s > 0 and comp_end[j, s - 1] > r:
                    r = comp_end[j, s - 1]
                if r < best_r or (r == best_r and best_kind > 2):
                    best_r, best_kind, best_j = r, 2, j
            # epilogue of CTA j
            if s == steps and epi_state[j] == 0:
                r = comp_end[j, steps - 1] + tail
                if r < best_r or (r == best_r and best_kind > 1):
                    best_r, best_kind, best_j = r, 1, j
        j = best_j
        if best_kind == 0:
            start = max(best_r, port_free)
            port_free = start + load_cycles
            port_busy += load_cycles
            data_ready[j, next_load[j]] = port_free + load_latency
            next_load[j] += 1
        elif best_kind == 1:
            start = max(best_r, port_free)
            port_free = start + epilogue_cycles
            port_busy += epilogue_cycles
            done[j] = port_free + epilogue_latency
            epi_state[j] = 1
        else:
            w = next_warp[j]
            u = (j * warps + w) % sub_cores
            start = max(best_r, sub_free[u])
            end = start + job
            sub_free[u] = end
            if end > cur_end[j]:
                cur_end[j] = end
            next_warp[j] = w + 1
            if w + 1 == warps:
                s = next_step[j]
                comp_end[j, s] = cur_end[j]
                cur_end[j] = 0
                next_warp[j] = 0
                next_step[j] = s + 1
        remaining -= 1
    out = np.zeros(5, np.int64)
    out[0] = done.max()
    out[1] = port_busy
    out[2] = n_cta * steps * warps * groups * frags * issue_cycles
    out[3] = n_cta * steps * warps * groups * frags
    out[4] = n_cta * steps
    return out
