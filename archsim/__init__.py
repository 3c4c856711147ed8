"""archsim: cycle-level simulation of deep-learning accelerators with energy and area models.

>>> import archsim
>>> hw = archsim.load_hardware("eie")
>>> res = archsim.simulate(hw, "eie_benchmarks", seed=0)
>>> df = res.to_dataframe()
>>> frame = archsim.sweep(hw, "eie_benchmarks", axes={"pe_array.num_pes": [32, 64]}, n_jobs=2)
>>> front = archsim.pareto(archsim.totals(frame), minimize=["total_time_s", "total_energy_pj"])
"""

from archsim.config import EieConfig, WorkloadSpec, json_schema, list_presets
from archsim.config.io import load_hardware, load_sweep, load_workload
from archsim.config.sweep import SweepSpec
from archsim.errors import ArchsimError, ConfigError, SimulationError, WorkloadError
from archsim.explore import pareto, sweep, totals
from archsim.results import LayerResult, RunResult
from archsim.simulate import archsim_version, simulate
from archsim.workload.onnx import import_onnx

__version__ = archsim_version()

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
    "import_onnx",
    "json_schema",
    "list_presets",
    "load_hardware",
    "load_sweep",
    "load_workload",
    "pareto",
    "simulate",
    "sweep",
    "totals",
]
