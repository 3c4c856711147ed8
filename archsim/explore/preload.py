"""What the process that forks sweep workers loads once, for all of them.

On POSIX a local sweep's workers are forked by multiprocessing's ``forkserver``, which imports
this module before it forks anything: each worker then starts with the simulator, every
accelerator model, numba and numba's typing and lowering registries already in memory. Spawned
workers used to load all of that themselves: about 1.5 s of CPU each before their first point
(the registries alone 0.4 s), and two workers on two cores did it twice over.
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
    """Import the models and fill numba's registries (what a first ``simulate`` would)."""
    for name in MODEL_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(Exception):  # an optimisation only: a worker would do it anyway
        from numba.core.registry import cpu_target

        cpu_target.typing_context.refresh()
        cpu_target.target_context.refresh()


load()
