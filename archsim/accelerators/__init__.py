"""Accelerator models and their registry (accelerator name -> simulate function)."""

from collections.abc import Callable

from archsim.accelerators.base import LayerOutcome
from archsim.accelerators.dcnn import simulate_dcnn
from archsim.accelerators.eie import EieLayerRun, run_eie_layer, simulate_eie
from archsim.accelerators.gpu_power import simulate_gpu
from archsim.accelerators.gpu_run import simulate_tensor_core
from archsim.accelerators.scnn import run_scnn_conv, simulate_scnn
from archsim.accelerators.systolic import simulate_systolic
from archsim.accelerators.tensor_core import run_gemm

#: accelerator name -> function(config, workload, seed) -> (outcomes, SimContext)
REGISTRY: dict[str, Callable] = {
    "eie": simulate_eie,
    "scnn": simulate_scnn,
    "dcnn": simulate_dcnn,
    "tensor_core": simulate_gpu,  # simulate_tensor_core at each layer's power-limited clock
    "systolic": simulate_systolic,
}

__all__ = [
    "REGISTRY",
    "EieLayerRun",
    "LayerOutcome",
    "run_eie_layer",
    "run_gemm",
    "run_scnn_conv",
    "simulate_dcnn",
    "simulate_eie",
    "simulate_scnn",
    "simulate_gpu",
    "simulate_tensor_core",
    "simulate_systolic",
]
