"""What every worker of a local sweep would build first, built once by the process that forks
them.

A workload's layers depend on the workload, the seed and a few hardware fields only, and every
point of a sweep simulates all of them, so each of N workers used to build the same layers
before its first point (EIE's nine benchmark layers: 0.45 s of CPU in each). The fork server
(``workers._fork_server``) calls :func:`warm_layers` before it forks any worker: the workers
inherit its memo (``archsim.memo``) with the layers in it, shared copy-on-write. It builds what
the sweep's first workload and seed need on the spec's base hardware, under the keys the model
itself looks them up by; a sweep whose axes change what a layer depends on (EIE's codebook
size) builds its own in each worker, as before.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

__all__ = ["WARMERS", "warm_layers"]

#: accelerator -> (module, function(config, workload, seed)) that memoises its layers
WARMERS = {"eie": ("archsim.accelerators.eie", "warm_layers")}


def warm_layers(spec: str | Path, limit_bytes: int) -> bool:
    """Memoise the layers of sweep ``spec``'s first workload and seed on its base hardware,
    with the memo switched on at ``limit_bytes``; False when there is nothing to build (a
    model without layers to share, or a spec that compresses an ONNX model point by point).
    Raises what loading the spec raises (the fork server ignores it: the sweep reports it)."""
    from archsim import memo
    from archsim.config.io import load_sweep
    from archsim.explore.compressed import compress_axis
    from archsim.explore.plan import _load
    from archsim.limits import check_workload_size

    sweep, base_dir = load_sweep(spec)
    if any(compress_axis(path) for path in sweep.axes):
        return False
    hw = _load("hardware", sweep.hardware, base_dir, str(spec))
    where = WARMERS.get(getattr(hw, "accelerator", ""))
    if where is None:
        return False
    workload = _load("workload", sweep.workloads[0], base_dir, str(spec))
    check_workload_size(hw, workload)  # a layer too large to simulate is not built either
    memo.enable(limit_bytes)
    getattr(import_module(where[0]), where[1])(hw, workload, sweep.seeds[0])
    return True
