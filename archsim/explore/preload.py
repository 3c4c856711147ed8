"""What the process that forks sweep workers loads once, for all of them.

On POSIX a local sweep's workers are forked by multiprocessing's ``forkserver``, which imports
this module before it forks anything: each worker then starts with the simulator, every
accelerator model and numba already in memory. Spawned workers used to load all of that
themselves: about 1.5 s of CPU each before their first point, and two workers on two cores did
it twice over. (numba's compiler registries, 0.3-0.4 s more, are no longer loaded at all when
every kernel is in the cache: see ``numba_cache``.)
Nothing here depends on the sweep (the fork server starts before the sweep is planned);
what does (the workload's layers, a PE count's encoding) each worker memoises as it runs.
"""

from __future__ import annotations

import contextlib
import importlib

import archsim.explore.executor  # noqa: F401  (the workers' entry points)
import archsim.simulate  # noqa: F401

#: models whose modules a worker would import at its first point (each also imports numba)
MODEL_MODULES = (
    "archsim.accelerators.eie",
    "archsim.accelerators.scnn",
    "archsim.accelerators.dcnn",
    "archsim.accelerators.systolic",
    "archsim.accelerators.tensor_core",
)

__all__ = ["MODEL_MODULES", "load"]


def load() -> None:
    """Import the models (what a first ``simulate`` would). numba's compiler registries are
    not filled: loading a cached kernel does not need them (``numba_cache``), and a worker
    that has to compile one fills them as it compiles."""
    for name in MODEL_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


load()
