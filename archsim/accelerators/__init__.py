"""Accelerator models and their registry (accelerator name -> simulate function)."""

from collections.abc import Callable

from archsim.accelerators.base import LayerOutcome
from archsim.accelerators.eie import EieLayerRun, run_eie_layer, simulate_eie

#: accelerator name -> function(config, workload, seed) -> (outcomes, SimContext)
REGISTRY: dict[str, Callable] = {"eie": simulate_eie}

__all__ = ["REGISTRY", "EieLayerRun", "LayerOutcome", "run_eie_layer", "simulate_eie"]
