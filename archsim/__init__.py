"""archsim: cycle-level simulation of deep-learning accelerators with energy and area models.

>>> import archsim
>>> hw = archsim.load_hardware("eie")
>>> res = archsim.simulate(hw, "eie_benchmarks", seed=0)
>>> df = res.to_dataframe()
>>> frame = archsim.sweep(hw, "eie_benchmarks", axes={"pe_array.num_pes": [32, 64]}, n_jobs=2)
>>> front = archsim.pareto(archsim.totals(frame), minimize=["total_time_s", "total_energy_pj"])

The public names load on first use (PEP 562), so ``import archsim`` and ``archsim --help`` pull
in neither numba nor pandas nor matplotlib.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any

#: public name -> module that defines it
_WHERE = {
    "ArchsimError": "archsim.errors",
    "ConfigError": "archsim.errors",
    "SimulationError": "archsim.errors",
    "WorkloadError": "archsim.errors",
    "EieConfig": "archsim.config",
    "WorkloadSpec": "archsim.config",
    "json_schema": "archsim.config",
    "list_presets": "archsim.config",
    "load_hardware": "archsim.config.io",
    "load_sweep": "archsim.config.io",
    "load_workload": "archsim.config.io",
    "SweepSpec": "archsim.config.sweep",
    "pareto": "archsim.explore.frame",
    "sweep": "archsim.explore.sweep",  # the module of the same name, not the package attribute
    "totals": "archsim.explore.frame",
    "LayerResult": "archsim.results",
    "RunResult": "archsim.results",
    "simulate": "archsim.simulate",
    "load_system": "archsim.system",
    "collective": "archsim.system.api",
    "train_step": "archsim.system.training",
    "import_onnx": "archsim.workload.onnx",
}

__all__ = [
    "ArchsimError",
    "ConfigError",
    "EieConfig",
    "LayerResult",
    "RunResult",
    "SimulationError",
    "SweepSpec",
    "WorkloadError",
    "WorkloadSpec",
    "__version__",
    "collective",
    "import_onnx",
    "json_schema",
    "list_presets",
    "load_hardware",
    "load_sweep",
    "load_system",
    "load_workload",
    "pareto",
    "simulate",
    "sweep",
    "totals",
    "train_step",
]

if TYPE_CHECKING:  # what static checkers and IDEs see
    from archsim.config import EieConfig, WorkloadSpec, json_schema, list_presets
    from archsim.config.io import load_hardware, load_sweep, load_workload
    from archsim.config.sweep import SweepSpec
    from archsim.errors import ArchsimError, ConfigError, SimulationError, WorkloadError
    from archsim.explore import pareto, sweep, totals
    from archsim.results import LayerResult, RunResult
    from archsim.simulate import simulate
    from archsim.system import load_system
    from archsim.system.api import collective
    from archsim.system.training import train_step
    from archsim.workload.onnx import import_onnx


def __getattr__(name: str) -> Any:
    """Import a public name's module the first time the name is used."""
    if name == "__version__":
        from archsim.simulate import archsim_version

        value: Any = archsim_version()
    elif name in _WHERE:
        value = getattr(import_module(_WHERE[name]), name)
    else:
        raise AttributeError(f"module 'archsim' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE, "__version__"])


class _Package(types.ModuleType):
    """The ``archsim`` module: importing the submodule ``archsim.simulate`` makes Python bind
    it as the package attribute ``simulate``; the public function keeps that name instead."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "simulate" and isinstance(value, types.ModuleType):
            value = value.simulate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
