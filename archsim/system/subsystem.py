"""The part of a system a job uses (its first ``gpus`` GPUs), and the system's GPU config."""

from __future__ import annotations

from pydantic import ValidationError

from archsim.config.gpu import GpuConfig
from archsim.config.io import load_hardware
from archsim.config.messages import validation_to_config_error
from archsim.config.system import SystemConfig, reachable
from archsim.errors import ConfigError, SimulationError, counted, integral

__all__ = ["gpu_config", "subsystem"]


def gpu_config(system: SystemConfig) -> GpuConfig:
    """The GPU preset the system names in ``gpu``."""
    try:
        gpu = load_hardware(system.gpu)
    except ConfigError as exc:  # say which system names the file
        raise ConfigError(system.name, "gpu", str(exc)) from None
    if not isinstance(gpu, GpuConfig):
        raise ConfigError(
            system.name, "gpu", f"{system.gpu!r} is not a GPU preset; allowed: v100, a100, h100 "
            "or a YAML file with accelerator: tensor_core"
        )  # fmt: skip
    nvls = system.topology.nvswitch_reduction and system.nccl.nvls_efficiency > 0
    if nvls and not gpu.nvlink_sharp:  # NCCL runs NVLS on Hopper and later only
        raise ConfigError(
            system.name, "gpu", f"{gpu.name!r} takes no part in NVLink SHARP, which "
            "topology.nvswitch_reduction with nccl.nvls_efficiency > 0 asks of it; allowed: "
            "a GPU with nvlink_sharp: true (h100; a Hopper or later GPU YAML written before "
            "the field needs the line), or topology.nvswitch_reduction: false"
        )  # fmt: skip
    return gpu


def subsystem(system: SystemConfig, gpus: int | None) -> SystemConfig:
    """``system`` cut to its first ``gpus`` GPUs: part of one node, or whole nodes."""
    gpus = integral(gpus)  # a NumPy integer from a sweep's frame
    if gpus is None or gpus == system.gpus:
        return system
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise SimulationError(f"gpus={gpus!r}; allowed: an integer from 1 to {system.gpus}")
    if gpus > system.gpus:
        raise SimulationError(
            f"{system.name} has {counted(system.gpus, 'GPU')} ({system.nodes} node(s) x "
            f"{system.gpus_per_node}); asked for {gpus}; allowed: 1 to {system.gpus} "
            "(more nodes: --set nodes=N)"
        )
    per = system.gpus_per_node
    if gpus > per:
        if gpus % per:
            raise SimulationError(
                f"gpus={gpus} is not whole nodes of {per}; allowed: 1 to {per}, or a multiple "
                f"of {per} up to {system.gpus}"
            )
        step = system.step.model_copy(update={"gpus": None})
        return system.model_copy(update={"nodes": gpus // per, "step": step})
    keep = {f"gpu{i}" for i in range(gpus)}
    links = [
        link
        for link in system.topology.links
        if (link.a in keep or not link.a.startswith("gpu"))
        and (link.b in keep or not link.b.startswith("gpu"))
    ]
    # switches only the other GPUs reach carry nothing here: the cut leaves them out (a switch
    # no GPU reaches is refused as a disconnected topology)
    reach = reachable(links, sorted(keep))
    links = [link for link in links if link.a in reach]
    data = system.model_dump()
    data["topology"]["switches"] = [s for s in system.topology.switches if s in reach]
    data["gpus_per_node"] = gpus
    data["nodes"] = 1
    data["step"]["gpus"] = None  # the cut system is the whole of what the step uses
    data["topology"]["links"] = [link.model_dump() for link in links]
    try:
        return SystemConfig.model_validate(data)
    except ValidationError as exc:  # the first GPUs reach each other only through the others
        problem = validation_to_config_error(exc, system.name, SystemConfig).problem
        problem = problem.split("; allowed:")[0]  # the cut's own remedy follows
        raise SimulationError(
            f"gpus={gpus}: {system.name}'s first {gpus} GPUs without the others: {problem}; "
            f"allowed: a GPU count whose GPUs are linked among themselves, or {system.gpus}"
        ) from None
