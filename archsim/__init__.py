"""archsim: cycle-level simulation of deep-learning accelerators with energy and area models.

>>> import archsim
>>> hw = archsim.load_hardware("eie")
>>> res = archsim.simulate(hw, "eie_benchmarks", seed=0)
>>> df = res.to_dataframe()
"""

from archsim.config import EieConfig, WorkloadSpec, json_schema, list_presets
from archsim.config.io import load_hardware, load_workload
from archsim.errors import ArchsimError, ConfigError, SimulationError, WorkloadError
from archsim.results import LayerResult, RunResult
from archsim.simulate import archsim_version, simulate

__version__ = archsim_version()

__all__ = [
    "ArchsimError",
    "ConfigError",
    "EieConfig",
    "LayerResult",
    "RunResult",
    "SimulationError",
    "WorkloadError",
    "WorkloadSpec",
    "__version__",
    "json_schema",
    "list_presets",
    "load_hardware",
    "load_workload",
    "simulate",
]
