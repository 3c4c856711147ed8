"""Validated, frozen configuration models and their YAML io."""

from archsim.config.base import ArchsimModel
from archsim.config.components import (
    ArithmeticConfig,
    ClockConfig,
    CrossbarConfig,
    DramConfig,
    FifoConfig,
    MmaUnitConfig,
    PeArrayConfig,
    SramConfig,
    TechnologyConfig,
)
from archsim.config.eie import EieConfig
from archsim.config.gpu import GpuConfig
from archsim.config.io import (
    HARDWARE_MODELS,
    hardware_from_dict,
    json_schema,
    list_presets,
    load_hardware,
    load_workload,
    preset_dirs,
)
from archsim.config.scnn import (
    AccumulatorConfig,
    DcnnConfig,
    MultiplierArrayConfig,
    PeGridConfig,
    ScnnConfig,
)
from archsim.config.systolic import ScalesimCompatConfig, SystolicArrayConfig, SystolicConfig
from archsim.config.workload import (
    ConvLayer,
    FcLayer,
    GemmLayer,
    LayerSpec,
    LstmLayer,
    WorkloadSpec,
)

__all__ = [
    "AccumulatorConfig",
    "DcnnConfig",
    "MultiplierArrayConfig",
    "PeGridConfig",
    "ScnnConfig",
    "ArchsimModel",
    "ArithmeticConfig",
    "ClockConfig",
    "ConvLayer",
    "CrossbarConfig",
    "DramConfig",
    "EieConfig",
    "FcLayer",
    "GpuConfig",
    "FifoConfig",
    "GemmLayer",
    "HARDWARE_MODELS",
    "LayerSpec",
    "LstmLayer",
    "MmaUnitConfig",
    "PeArrayConfig",
    "SramConfig",
    "ScalesimCompatConfig",
    "SystolicArrayConfig",
    "SystolicConfig",
    "TechnologyConfig",
    "WorkloadSpec",
    "hardware_from_dict",
    "json_schema",
    "list_presets",
    "load_hardware",
    "load_workload",
    "preset_dirs",
]
