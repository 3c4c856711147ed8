"""Accelerator models and their registry (accelerator name -> simulate function).

Everything loads on first use (PEP 562, and a registry that imports a model when it is looked
up): a systolic run then never imports the EIE, SCNN or GPU models, nor the EIE kernels'
module-level numba machinery it does not need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from archsim.lazy import lazy_names

#: public name -> module that defines it
_WHERE = {
    "EieLayerRun": "archsim.accelerators.eie",
    "LayerOutcome": "archsim.accelerators.base",
    "run_eie_layer": "archsim.accelerators.eie",
    "run_gemm": "archsim.accelerators.tensor_core",
    "run_scnn_conv": "archsim.accelerators.scnn",
    "simulate_dcnn": "archsim.accelerators.dcnn",
    "simulate_eie": "archsim.accelerators.eie",
    "simulate_scnn": "archsim.accelerators.scnn",
    "simulate_gpu": "archsim.accelerators.gpu_power",
    "simulate_tensor_core": "archsim.accelerators.gpu_run",
    "simulate_systolic": "archsim.accelerators.systolic",
}

#: accelerator name -> the public name of its simulate function(config, workload, seed)
_SIMULATORS = {
    "eie": "simulate_eie",
    "scnn": "simulate_scnn",
    "dcnn": "simulate_dcnn",
    "tensor_core": "simulate_gpu",  # simulate_tensor_core at each layer's power-limited clock
    "systolic": "simulate_systolic",
}


class _Registry(Mapping[str, Callable]):
    """Accelerator name -> function(config, workload, seed) -> (outcomes, SimContext); the
    model's module is imported when its name is looked up."""

    def __getitem__(self, name: str) -> Callable:
        return __getattr__(_SIMULATORS[name])

    def __contains__(self, name: object) -> bool:  # without importing the model
        return name in _SIMULATORS

    def __iter__(self) -> Iterator[str]:
        return iter(_SIMULATORS)

    def __len__(self) -> int:
        return len(_SIMULATORS)


REGISTRY: Mapping[str, Callable] = _Registry()

__all__ = ["REGISTRY", *sorted(_WHERE)]


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
