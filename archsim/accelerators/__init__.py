"""Accelerator models and their registry (accelerator name -> simulate function)."""

from collections.abc import Callable

from archsim.accelerators.base import LayerOutcome
from archsim.accelerators.dcnn import simulate_dcnn
from archsim.accelerators.eie import EieLayerRun, run_eie_layer, simulate_eie
from archsim.accelerators.scnn import run_scnn_conv, simulate_scnn
from archsim.accelerators.systolic import simulate_systolic

#: accelerator name -> function(config, workload, seed) -> (outcomes, SimContext)
REGISTRY: dict[str, Callable] = {
    "eie": simulate_eie,
    "scnn": simulate_scnn,
    "dcnn": simulate_dcnn,
    "systolic": simulate_systolic,
}

__all__ = [
    "REGISTRY",
    "EieLayerRun",
    "LayerOutcome",
    "run_eie_layer",
    "run_scnn_conv",
    "simulate_dcnn",
    "simulate_eie",
    "simulate_scnn",
    "simulate_systolic",
]
