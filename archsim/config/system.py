"""Multi-GPU systems: a GPU preset, nodes of GPUs joined by links, switches and NICs, as data.

A node's GPUs are named ``gpu0`` .. ``gpu{n-1}``; any other endpoint (an NVSwitch, a PCIe switch,
a CPU root complex) is declared in ``topology.switches``. Links are undirected and full-duplex:
``bandwidth_bytes_per_s`` is per direction, per physical link, and ``count`` parallel links join
the two ends. Nodes are identical and join a network through ``nic`` (one NIC per ``gpus_per_nic``
GPUs). NCCL's cost-model constants live in ``nccl`` (each field cites ``src/graph/tuning.cc`` or
``topo.h``), DDP's bucket defaults in ``ddp``, the host's input pipeline (CPU loader workers) in
``host``, energy prices per bit in ``energy``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Annotated, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from archsim.config.base import ArchsimModel
from archsim.config.names import Name
from archsim.errors import counted

__all__ = [
    "DdpConfig",
    "HostConfig",
    "LinkKindConfig",
    "LinkSpec",
    "StepConfig",
    "NcclConfig",
    "NicConfig",
    "SystemConfig",
    "SystemEnergyConfig",
    "TopologyConfig",
    "TrainingConfig",
    "reachable",
]

LinkKind = Literal["nvlink", "pcie", "qpi"]

#: a link, NIC or NCCL bandwidth, bytes/s: from 1 MB/s (below any real interconnect; slower
#: links would time a 2^50-byte collective beyond what an int64 cycle count holds) to 1 PB/s
Bandwidth = Annotated[float, Field(ge=1e6, le=1e15)]


class LinkKindConfig(ArchsimModel):
    """Bandwidth and latency of one physical link of a kind."""

    bandwidth_bytes_per_s: Bandwidth = Field(
        description="Raw signalling bandwidth of one link, per direction, bytes/s (a record: "
        "collectives are timed at nccl_bandwidth_bytes_per_s, so a what-if on link speed "
        "sets that field)."
    )
    nccl_bandwidth_bytes_per_s: Bandwidth = Field(
        description="Payload bandwidth NCCL achieves on one link, per direction, bytes/s "
        "(NCCL's own link model, src/graph/topo.h: protocol and packet overheads)."
    )


class LinkSpec(ArchsimModel):
    """``count`` parallel links of ``kind`` between endpoints ``a`` and ``b``."""

    a: str = Field(description="Endpoint: gpuN or a name from topology.switches.")
    b: str = Field(description="Endpoint: gpuN or a name from topology.switches.")
    kind: LinkKind = Field(description="Link kind; its bandwidth is in topology.link_kinds.")
    count: PositiveInt = Field(
        default=1,
        le=1024,  # the ring search builds tuples as long as it: 1e18 ran out of memory
        description="Parallel links (e.g. NV2 = 2), at most 1,024.",
    )


class TopologyConfig(ArchsimModel):
    """The links of one node."""

    switches: list[Name] = Field(
        default=[],
        description="Non-GPU endpoints: NVSwitch, PCIe switches, CPU root complexes (each "
        "linked, directly or through other switches, to the GPUs of a node of 2 or more).",
    )
    nvswitch_reduction: bool = Field(
        default=False,
        description="The NVSwitch reduces in the switch (NVLink SHARP, NVLS: H100 NVSwitch 3); "
        "true needs a switch every GPU links to over NVLink (nodes of 2 GPUs or more).",
    )
    link_kinds: dict[LinkKind, LinkKindConfig] = Field(description="Bandwidths per link kind.")
    links: list[LinkSpec] = Field(
        default=[],
        description="Undirected full-duplex links (none only for one GPU per node: NICs are "
        "not links).",
    )


class NicConfig(ArchsimModel):
    """The network adapters of one node."""

    count: PositiveInt = Field(description="NICs per node.")
    bandwidth_bytes_per_s: Bandwidth = Field(
        description="Line rate per NIC and direction (a record: collectives are timed at "
        "nccl_bandwidth_bytes_per_s)."
    )
    nccl_bandwidth_bytes_per_s: Bandwidth = Field(
        description="Per NIC and direction as NCCL models it (topo.h NET_BW: 12 GB/s per 100 Gbit)."
    )


#: switches an error lists by name where it says which link ends exist
_SHOWN_SWITCHES = 16

#: algorithms and link kinds NCCL's latency tables must cover (``collectives`` reads them all)
_LATENCY_ALGOS = ("tree", "ring", "nvls")
_LATENCY_HW = ("nvlink", "pcie", "net")


class NcclConfig(ArchsimModel):
    """NCCL's tuning model (``src/graph/tuning.cc`` at HEAD 5067397 unless a field says)."""

    base_latency_us: dict[str, tuple[NonNegativeFloat, NonNegativeFloat, NonNegativeFloat]] = Field(
        default={"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0)},
        description="baseLatencies[algo] for (LL, LL128, Simple), us (tuning.cc).",
    )
    hw_latency_us: dict[
        str, dict[str, tuple[NonNegativeFloat, NonNegativeFloat, NonNegativeFloat]]
    ] = Field(
        default={
            "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0, 0, 25.0)},
            "pcie": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "nvls": (0, 0, 0)},
            "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0, 0, 18.0)},
        },
        description="hwLatencies[hw][algo] per hop for (LL, LL128, Simple), us (tuning.cc).",
    )
    ll_max_bandwidth_bytes_per_s: Bandwidth = Field(
        description="llMaxBws for this GPU generation on one node, bytes/s (tuning.cc)."
    )
    ring_ll128_channel_max_bytes_per_s: Bandwidth = Field(
        description="perChMaxRingLL128Bws for this generation, bytes/s per channel (tuning.cc)."
    )
    tree_channel_max_bytes_per_s: Bandwidth = Field(
        description="perChMaxTreeBws for this generation (2+ nodes), bytes/s per channel."
    )
    ll_max_multi_node_bytes_per_s: tuple[Bandwidth, Bandwidth] | None = Field(
        default=None,
        description="llMaxBws beyond one node, (2 nodes, 3+ nodes), bytes/s: tuning.cc takes "
        "the row of the nodes' CPU vendor there (Intel 39.0 / 20.4 GB/s, AMD 22.5 / 19.0), "
        "not the GPU's. Null: ll_max_bandwidth_bytes_per_s at any node count.",
    )
    tree_channel_max_by_nodes_bytes_per_s: tuple[Bandwidth, Bandwidth, Bandwidth] | None = Field(
        default=None,
        description="perChMaxTreeBws (1 node, 2 nodes, 3+ nodes), bytes/s per channel "
        "(tuning.cc). Null: tree_channel_max_bytes_per_s at any node count.",
    )
    tree_ll128_channel_max_bytes_per_s: tuple[Bandwidth, Bandwidth, Bandwidth] | None = Field(
        default=None,
        description="perChMaxTreeLL128Bws (1 node, 2 nodes, 3+ nodes), bytes/s per channel "
        "(tuning.cc). Null: the tree's Simple cap.",
    )
    nvls_efficiency: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="nvlsEfficiency (Hopper 0.85; 0 disables NVLS; otherwise at least 0.01).",
    )
    nvls_channels: PositiveInt = Field(
        default=16,
        le=64,
        description="NVLS channels (NCCL_NVLS_NCHANNELS default on Hopper: 16), 1 to 64 (NCCL "
        "runs no more channels than its MAXCHANNELS).",
    )
    nvls_chunk_bytes: PositiveInt = Field(
        default=128 * 1024,
        description="NVLS chunk per head and channel, bytes (NCCL_NVLS_CHUNKSIZE default, "
        "src/transport/nvls.cc); enqueue.cc halves it to 64/32/16 KiB below 64/8/2 loops.",
    )
    nvls_pipeline_stages: PositiveInt = Field(
        default=3,
        le=64,  # 1e18 stages gave a 64 MB all-reduce of 3.2e19 us
        description="Stages an NVLS all-reduce chunk passes on one node (src/device/all_reduce.h: "
        "scatter warps, reduce+multicast warps, gather warps); the pipeline fills and drains "
        "over stages - 1 loops of heads x channels x chunk bytes.",
    )
    ll128: bool = Field(default=True, description="LL128 protocol enabled (NVLink systems).")
    ring_plateau_factor: PositiveFloat = Field(
        default=1.4,
        description="Ring/Simple multi-node latency factor (1.4 for sm80+, 1.9 before).",
    )
    net_overhead_us: NonNegativeFloat = Field(
        default=1.0, description="Network post overhead per step, us (x3 for Simple)."
    )
    max_channels: int = Field(
        default=32,
        ge=1,
        le=64,
        description="Rings NCCL may build; at most NCCL's MAXCHANNELS "
        "(src/include/device.h: 32 in older releases, 64 now).",
    )
    algorithm: Literal["ring", "tree", "nvls"] | None = Field(
        default=None, description="Force an algorithm (NCCL_ALGO); null: NCCL's choice by size."
    )
    protocol: Literal["LL", "LL128", "Simple"] | None = Field(
        default=None, description="Force a protocol (NCCL_PROTO); null: NCCL's choice by size."
    )
    hbm_passes_per_byte: NonNegativeFloat = Field(
        default=3.0,
        description="HBM accesses per byte a collective moves on the bus: a ring step reads the "
        "local chunk and the received one and writes the result (memory-bound compute that "
        "overlaps a collective loses this share of HBM bandwidth).",
    )
    sm_per_channel: PositiveInt = Field(
        default=1, description="SMs one NCCL channel occupies (one CTA per channel)."
    )

    @model_validator(mode="after")
    def _nvls_efficiency(self) -> NcclConfig:
        """NVLS off (0) or an efficiency of 1 % or more: 1e-300 ran a forced NVLS all-reduce at
        a bus bandwidth of 4e-298 GB/s."""
        if 0.0 < self.nvls_efficiency < 0.01:
            raise ValueError(
                f"nvls_efficiency: {self.nvls_efficiency!r}; allowed: 0 (no NVLS) or 0.01 to 1"
            )
        return self

    @model_validator(mode="after")
    def _latency_tables(self) -> NcclConfig:
        """Every algorithm in ``base_latency_us``, every link kind and algorithm in
        ``hw_latency_us`` (the model reads them all)."""
        absent = [hw for hw in _LATENCY_HW if hw not in self.hw_latency_us]
        if absent:
            raise ValueError(
                f"hw_latency_us.{absent[0]} is missing; allowed: hw_latency_us with "
                f"{', '.join(_LATENCY_HW)}"
            )
        tables = {"base_latency_us": self.base_latency_us}
        tables |= {f"hw_latency_us.{hw}": self.hw_latency_us[hw] for hw in _LATENCY_HW}
        for name, table in tables.items():
            missing = [a for a in _LATENCY_ALGOS if a not in table]
            if missing:
                raise ValueError(
                    f"{name} has no entry for {', '.join(missing)}; allowed: one (LL, LL128, "
                    f"Simple) triple, us, for each of {', '.join(_LATENCY_ALGOS)}"
                )
        return self


class DdpConfig(ArchsimModel):
    """PyTorch DDP gradient bucketing (torch/csrc/distributed/c10d/reducer.hpp)."""

    first_bucket_bytes: PositiveInt = Field(
        default=1024 * 1024, description="kDefaultFirstBucketBytes = 1 MiB."
    )
    bucket_bytes: PositiveInt = Field(
        default=25 * 1024 * 1024, description="kDefaultBucketBytesCap = 25 MiB (bucket_cap_mb)."
    )
    gradient_copies: int = Field(
        default=2,
        ge=0,
        description="Copies of every gradient DDP makes besides the all-reduce, each a read and a "
        "write (gradient_as_bucket_view=False, PyTorch's default; reducer.cpp): the autograd "
        "hook copies the gradient, divided by the world size, into its bucket, and after the "
        "all-reduce the bucket is copied back into the gradient (0: bucket views).",
    )


class TrainingConfig(ArchsimModel):
    """What a framework runs besides the GEMMs of a training step (PyTorch eager, cuDNN BN).

    Passes are full reads or writes of a conv layer's output tensor (counted from the kernels
    PyTorch launches: batch-norm forward reads the tensor twice (statistics, normalise) and writes
    it once, ReLU reads and writes it; backward: ReLU reads the gradient and the output and writes
    a gradient, batch-norm reads the gradient and the input twice (reductions, then the input
    gradient) and writes once). Optimizer bytes are per parameter, FP32 (PyTorch's SGD with
    momentum reads w, g, m and writes w, m; Adam reads w, g, m, v and writes w, m, v; mixed
    precision also writes the 16-bit copy of w). A conv with ``relu: false`` drops the ReLU's
    passes; ``residual_add`` and ``max_pool_stride`` add the add's and the pool's.
    """

    conv_forward_passes: int = Field(default=5, ge=0, description="BN (3) + ReLU (2) passes.")
    conv_backward_passes: int = Field(default=8, ge=0, description="ReLU (3) + BN (5) passes.")
    conv_forward_kernels: int = Field(default=2, ge=0, description="Kernels (BN, ReLU) forward.")
    conv_backward_kernels: int = Field(default=2, ge=0, description="Kernels backward.")
    relu_forward_passes: int = Field(
        default=2,
        ge=0,
        description="The ReLU's share of conv_forward_passes (read, write), left out for a conv "
        "with relu: false, with one of the forward kernels.",
    )
    relu_backward_passes: int = Field(
        default=3,
        ge=0,
        description="The ReLU's share of conv_backward_passes (gradient and output read, "
        "gradient written), left out for a conv with relu: false, with one backward kernel.",
    )
    residual_forward_passes: int = Field(
        default=3,
        ge=0,
        description="Residual add (layers with residual_add): reads the BN output and the "
        "shortcut, writes the sum, in passes over the layer's output.",
    )
    residual_backward_passes: int = Field(
        default=3,
        ge=0,
        description="Backward of a residual block: autograd sums the shortcut's and the branch's "
        "gradients where the input forks (two reads, one write), in passes over the output.",
    )
    sgd_bytes_per_param: PositiveInt = Field(default=20, description="SGD-momentum, 5 x 4 B.")
    adam_bytes_per_param: PositiveInt = Field(default=28, description="Adam, 7 x 4 B.")
    nchw_transpose_passes: int = Field(
        default=2,
        ge=0,
        description="Passes over a tensor per NCHW <-> NHWC transpose (a read and a write): "
        "tensor cores run convs in NHWC, so cuDNN transposes NCHW activations before a conv and "
        "its result back after (NVIDIA's channels-last diagram, MosaicML Composer method card "
        "'Channels Last'); FP32 CUDA-core convs run NCHW natively.",
    )
    elementwise_launch_s: NonNegativeFloat = Field(
        default=3.0e-6,
        description="Shortest elementwise kernel, back to back on a stream, s (H100 measured "
        "2.5-3 us per kernel in a CUDA graph: shared/data/h100 README, gemm_square.csv 128^3).",
    )


class StepConfig(ArchsimModel):
    """The training step a sweep point of this system runs (``archsim sweep`` with a system as
    ``hardware``: axes such as ``step.gpus`` or ``step.precision``). ``archsim train`` and
    ``archsim.train_step`` take these as options instead."""

    gpus: PositiveInt | None = Field(
        default=None, description="GPUs used (null: every GPU of the system)."
    )
    precision: Literal["amp_fp16", "amp_bf16", "tf32", "fp32"] = Field(
        default="amp_fp16", description="Training precision (AMP keeps FP32 master weights)."
    )
    batch_per_gpu: PositiveInt = Field(default=256, description="Samples per GPU per step.")
    optimizer: Literal["sgd", "adam"] = Field(default="sgd", description="Optimizer update.")
    topk_density: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        description="Gradient compression: fraction of gradients sent (null: all-reduce all).",
    )
    memory_format: Literal["nhwc", "nchw"] = Field(
        default="nhwc",
        description="Activation layout: nhwc (channels last) or nchw (cuDNN transposes around "
        "every tensor-core conv).",
    )
    conv_lowering: Literal["gemm", "cudnn"] = Field(
        default="gemm",
        description="A conv's forward and data-gradient passes: gemm (plain GEMMs, FP32 out, C "
        "read) or cudnn (convs with cuDNN's algorithms; a strided data gradient as its phases).",
    )


class HostConfig(ArchsimModel):
    """The node's host input pipeline: CPU loader workers that decode and augment each GPU's
    images (PyTorch DataLoader workers; each prepares whole batches ahead of the step, so a step
    waits only when the workers fall behind). Unset ``images_per_s_per_core``: not modelled.

    The node's workers (``loader_workers_per_gpu`` x GPUs in the node) run on ``cpu_cores``
    physical cores; a worker beyond the cores adds nothing (SMT siblings' extra throughput and
    the training processes' own CPU time are not modelled). Each GPU gets an equal share, so
    its step lasts at least ``batch / (min(workers, cores) x images_per_s_per_core / GPUs)``.
    Data-parallel steps only (``archsim train`` without --tensor/--pipeline).
    """

    cpu_cores: PositiveInt | None = Field(
        default=None, description="Physical CPU cores per node the loader workers share."
    )
    loader_workers_per_gpu: PositiveInt | None = Field(
        default=None, description="Loader worker processes per GPU (DataLoader num_workers)."
    )
    images_per_s_per_core: PositiveFloat | None = Field(
        default=None,
        description="Images one worker alone on a physical core decodes and augments per second "
        "(null: the input pipeline is not modelled).",
    )

    @model_validator(mode="after")
    def _check_complete(self) -> HostConfig:
        if self.images_per_s_per_core is not None:
            for name in ("cpu_cores", "loader_workers_per_gpu"):
                if getattr(self, name) is None:
                    raise ValueError(
                        f"{name} is unset but images_per_s_per_core is set; allowed: a "
                        f"positive integer for {name}, or images_per_s_per_core: null"
                    )
        return self


class SystemEnergyConfig(ArchsimModel):
    """Energy per bit moved over each kind of interconnect, pJ/bit."""

    nvlink_pj_per_bit: NonNegativeFloat = Field(description="NVLink/NVSwitch, pJ per bit.")
    pcie_pj_per_bit: NonNegativeFloat = Field(description="PCIe, pJ per bit.")
    nic_pj_per_bit: NonNegativeFloat = Field(description="Network (NIC + cable), pJ per bit.")


def reachable(links: Iterable[LinkSpec], starts: Sequence[str]) -> set[str]:
    """The ends (GPUs, switches) that ``starts`` reach over ``links``, ``starts`` included."""
    adj: dict[str, list[str]] = {}
    for link in links:
        adj.setdefault(link.a, []).append(link.b)
        adj.setdefault(link.b, []).append(link.a)
    seen, todo = set(starts), deque(starts)
    while todo:
        for nxt in adj.get(todo.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


class SystemConfig(ArchsimModel):
    """Nodes of identical GPUs with their links, NICs and NCCL/DDP settings."""

    schema_version: Literal[1]
    accelerator: Literal["system"]
    name: Name = Field(description="Preset name.")
    description: str = Field(default="", description="What the system is, with sources.")
    gpu: str = Field(min_length=1, description="GPU hardware preset name or YAML path.")
    # bounds: a node's topology is checked GPU by GPU, and no system comes near them (DGX: 8
    # GPUs a node; the largest clusters built: ~100,000 GPUs)
    gpus_per_node: int = Field(ge=1, le=1024, description="GPUs in one node, 1 to 1,024.")
    nodes: int = Field(
        default=1, ge=1, le=100_000, description="Nodes joined by the network, 1 to 100,000."
    )
    topology: TopologyConfig
    nic: NicConfig
    nccl: NcclConfig
    ddp: DdpConfig = DdpConfig()
    training: TrainingConfig = TrainingConfig()
    step: StepConfig = StepConfig()
    host: HostConfig = HostConfig()
    energy: SystemEnergyConfig

    @field_validator("gpu")
    @classmethod
    def _gpu_preset(cls, value: str) -> str:
        """A preset name must name a GPU preset (a YAML path is checked as it is loaded)."""
        if "/" in value or "\\" in value or value.endswith((".yaml", ".yml")):
            return value
        from archsim.config.io import preset_accelerators

        gpus = sorted(n for n, acc in preset_accelerators().items() if acc == "tensor_core")
        if value not in gpus:
            raise ValueError(
                f"not a GPU preset; allowed: {', '.join(gpus)} or a YAML path "
                "(accelerator: tensor_core)"
            )
        return value

    @property
    def gpus(self) -> int:
        """GPUs in the whole system."""
        return self.gpus_per_node * self.nodes

    @model_validator(mode="after")
    def _check_topology(self) -> SystemConfig:
        gpus = {f"gpu{i}" for i in range(self.gpus_per_node)}
        ends = gpus | set(self.topology.switches)
        shown = self.topology.switches[:_SHOWN_SWITCHES]  # not 100,000 names on one line
        more = len(self.topology.switches) - len(shown)
        allowed = f"gpu0..gpu{self.gpus_per_node - 1}" + "".join(f", {s}" for s in shown)
        allowed += f" and {more} more of topology.switches" if more > 0 else ""
        switches = self.topology.switches
        named: dict[str, int] = {}  # not switches[:i]: 100,000 switches took minutes
        for i, name in enumerate(switches):
            if name in gpus or name in named:
                what = "a GPU" if name in gpus else f"topology.switches.{named[name]}"
                raise ValueError(
                    f"topology.switches.{i}: {name!r} also names {what}; allowed: a name of its own"
                )
            named[name] = i
        kinds: dict[str, set[tuple[str, str]]] = {e: set() for e in ends}  # (kind, other end)
        pairs: dict[frozenset[str], int] = {}
        for i, link in enumerate(self.topology.links):
            for side in ("a", "b"):
                end = getattr(link, side)
                if end not in ends:
                    raise ValueError(
                        f"topology.links.{i}.{side}: link end {end!r} does not exist; "
                        f"allowed: {allowed}"
                    )
            if link.a == link.b:
                raise ValueError(
                    f"topology.links.{i}.b: link {i} joins {link.a!r} to itself; allowed: two "
                    "different ends"
                )
            first = pairs.setdefault(frozenset((link.a, link.b)), i)
            if first != i:
                raise ValueError(
                    f"topology.links.{i}: joins {link.a!r} and {link.b!r} as link {first} does; "
                    "allowed: each pair once (count: N for parallel links of one kind)"
                )
            if link.kind not in self.topology.link_kinds:
                have = ", ".join(self.topology.link_kinds) or "(none)"
                raise ValueError(
                    f"topology.links.{i}.kind: link kind {link.kind!r} has no entry in "
                    f"topology.link_kinds; defined: {have}"
                )
            kinds[link.a].add((link.kind, link.b))
            kinds[link.b].add((link.kind, link.a))
        seen = reachable(self.topology.links, ["gpu0"])
        cut = sorted(gpus - seen, key=lambda g: int(g[3:]))
        if cut:
            more = f" and {len(cut) - 8} more GPUs" if len(cut) > 8 else ""
            raise ValueError(
                f"topology.links: the topology is disconnected: "
                f"{', '.join(repr(c) for c in cut[:8])}{more} cannot reach "
                "gpu0 over topology.links; allowed: links that join every GPU"
            )
        if self.gpus_per_node == 1:  # nothing moves inside a node of one GPU: links optional
            return self
        # a switch no GPU reaches (declared, not linked, or linked only to other such
        # switches) is a typo or a link left out: it carries nothing
        lone = next((i for i, s in enumerate(switches) if s not in seen), None)
        if lone is not None:
            raise ValueError(
                f"topology.switches.{lone}: the topology is disconnected: switch "
                f"{switches[lone]!r} cannot reach gpu0 over topology.links; allowed: links "
                "that join every switch to the GPUs, or no entry for an unused switch"
            )
        if self.topology.nvswitch_reduction and not any(
            all(("nvlink", s) in kinds[g] for g in gpus) for s in switches
        ):
            raise ValueError(
                "topology.nvswitch_reduction: true, but no switch of topology.switches has an "
                "NVLink link to every GPU (an NVSwitch); allowed: false, or an NVSwitch in "
                "topology.links that every GPU links to with kind: nvlink"
            )
        return self

    @model_validator(mode="after")
    def _check_step_gpus(self) -> SystemConfig:
        g, per = self.step.gpus, self.gpus_per_node
        if g is not None and (g > self.gpus or (g > per and g % per)):
            raise ValueError(
                f"step.gpus is {g} but the system has {counted(self.gpus, 'GPU')} ({self.nodes} "
                f"node(s) x {per}); allowed: 1 to {per}, or a multiple of {per} up to {self.gpus}"
            )
        return self
