"""Validated, frozen configuration models and their YAML io.

The names below load on first use (PEP 562): a run builds the pydantic models of its own
accelerator and of workloads only, not those of every accelerator, sweep and system.
"""

from __future__ import annotations

from archsim.lazy import lazy_names

#: public name -> module that defines it
_WHERE = {
    "AccumulatorConfig": "archsim.config.scnn",
    "DcnnConfig": "archsim.config.scnn",
    "MultiplierArrayConfig": "archsim.config.scnn",
    "PeGridConfig": "archsim.config.scnn",
    "ScnnConfig": "archsim.config.scnn",
    "ArchsimModel": "archsim.config.base",
    "ArithmeticConfig": "archsim.config.components",
    "ClockConfig": "archsim.config.components",
    "ConvLayer": "archsim.config.workload",
    "CrossbarConfig": "archsim.config.components",
    "DramConfig": "archsim.config.components",
    "EieConfig": "archsim.config.eie",
    "FcLayer": "archsim.config.workload",
    "GpuConfig": "archsim.config.gpu",
    "FifoConfig": "archsim.config.components",
    "GemmLayer": "archsim.config.workload",
    "HARDWARE_MODELS": "archsim.config.io",
    "LayerSpec": "archsim.config.workload",
    "LstmLayer": "archsim.config.workload",
    "MmaUnitConfig": "archsim.config.components",
    "PeArrayConfig": "archsim.config.components",
    "SramConfig": "archsim.config.components",
    "ScalesimCompatConfig": "archsim.config.systolic",
    "SystolicArrayConfig": "archsim.config.systolic",
    "SystolicConfig": "archsim.config.systolic",
    "TechnologyConfig": "archsim.config.components",
    "WorkloadSpec": "archsim.config.workload",
    "hardware_from_dict": "archsim.config.io",
    "json_schema": "archsim.config.io",
    "list_presets": "archsim.config.io",
    "load_hardware": "archsim.config.io",
    "load_workload": "archsim.config.io",
    "preset_dirs": "archsim.config.io",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
