"""NCCL collectives on a system: algorithm and protocol choice, time, algbw and busbw.

The time of one collective follows NCCL's own tuning model (``src/graph/tuning.cc``; constants in
the system's ``nccl`` block): ``time = latency + bytes / algbw`` for every enabled (algorithm,
protocol) pair, and the fastest pair is chosen, as NCCL does.

* **Ring** (reduce-scatter + all-gather for all-reduce, ``2(n-1)`` steps): latency = base +
  per-hop latency of each step (NVLink/PCIe hops inside a node, network hops between nodes);
  bus bandwidth = the rings' bandwidth inside a node (``topology.find_rings``), capped by the NICs
  across nodes, scaled per protocol (LL: half and ``llMaxBw``; LL128: 0.92 and a per-channel cap).
* **Tree** (all-reduce only; a chain inside each node, a double binary tree across nodes):
  latency ``base + 2((n/nodes - 1) intra + log2(nodes) inter)``, bandwidth 0.92 of the rings'
  (capped per channel), times NCCL's tree correction factor for the message size, halved into
  algbw (each byte goes up and down the tree).
* **NVLS** (all-reduce on an NVSwitch that reduces in the switch, one node): every GPU is the
  head of ``1/n`` of each loop (``all_reduce.h``: the reduce warps' ``directRecvDirectSend`` is a
  ``multimem.ld_reduce`` then a ``multimem.st`` on the multicast buffers). The switch's loads
  pull each GPU's copy of every head's chunk (the buffer, out) and return the head its reduced
  chunk (``1/n``, in); the head's store sends that chunk (``1/n``, out) and the multicast brings
  every head's result to every GPU (the buffer, in). So each GPU's links carry ``(n+1)/n`` of
  the buffer each way and algbw = the links' bandwidth x ``nvls_efficiency`` x
  ``(channels-1)/channels`` x ``n/(n+1)`` (so with one channel, as in NCCL, NVLS is never
  chosen); latency is NCCL's NVLS hop latency.
  The kernel pipelines chunks through ``nvls_pipeline_stages`` warp groups (scatter, reduce and
  multicast, gather); filling and draining that pipeline costs ``stages - 1`` loops of
  ``GPUs x channels x chunk`` bytes (chunk chosen by size as ``enqueue.cc`` does), which NCCL's
  tuning model leaves out and which dominates mid sizes (tens of MB to 1 GB).

``busbw`` uses nccl-tests' definitions (``doc/PERFORMANCE.md``): all-reduce ``2(n-1)/n``,
reduce-scatter and all-gather ``(n-1)/n``, broadcast and reduce 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from archsim.config.system import SystemConfig
from archsim.errors import SimulationError
from archsim.system.topology import Rings, find_rings

__all__ = [
    "ALGORITHMS",
    "OPS",
    "PROTOCOLS",
    "CollectiveTime",
    "bus_factor",
    "collective_time",
]

OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce")
ALGORITHMS = ("ring", "tree", "nvls")
PROTOCOLS = ("LL", "LL128", "Simple")

#: NCCL's treeCorrectionFactor[protocol][log2(bytes / 64)] (tuning.cc, HEAD 5067397)
_TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0,
           1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9,
              .9, .9, 1.0, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7,
               .8, .9, .9, .9),
}  # fmt: skip


@dataclass(frozen=True)
class CollectiveTime:
    """One collective: the chosen algorithm/protocol and its time and bandwidths."""

    op: str
    bytes: int
    ranks: int
    algorithm: str
    protocol: str
    channels: int
    latency_s: float
    time_s: float
    intra_bytes: float  # bytes moved GPU to GPU inside nodes, all GPUs together
    inter_bytes: float  # bytes moved across the network, all nodes together

    @property
    def algbw_bytes_per_s(self) -> float:
        """nccl-tests algbw: bytes / time."""
        return self.bytes / self.time_s if self.time_s else math.inf

    @property
    def busbw_bytes_per_s(self) -> float:
        """nccl-tests busbw: algbw x the operation's bus factor."""
        return self.algbw_bytes_per_s * bus_factor(self.op, self.ranks)

    def energy_pj(self, cfg: SystemConfig) -> float:
        """Energy of the bytes moved: NVLink or PCIe inside nodes, the network between them."""
        e = cfg.energy
        intra = e.nvlink_pj_per_bit if "nvlink" in cfg.topology.link_kinds else e.pcie_pj_per_bit
        return 8 * (self.intra_bytes * intra + self.inter_bytes * e.nic_pj_per_bit)


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' busbw / algbw for ``op`` on ``n`` ranks."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("reduce_scatter", "all_gather"):
        return (n - 1) / n
    return 1.0


def _steps(op: str, n: int, nodes: int) -> tuple[int, int]:
    """(ring steps, of which network steps) as NCCL counts them."""
    if op == "all_reduce":
        return 2 * (n - 1), 2 * (nodes - 1)
    if op in ("reduce_scatter", "all_gather"):
        return n - 1, nodes - 1
    return n, nodes - 1


@dataclass(frozen=True)
class _Fabric:
    ranks: int
    nodes: int
    rings: Rings
    bandwidth: float  # ring bus bandwidth, NICs included, bytes/s
    channels: int


def _fabric(cfg: SystemConfig) -> _Fabric:
    rings = find_rings(cfg)
    channels = min(rings.count, cfg.nccl.max_channels)
    # NCCL's nChannels x bwIntra: rings beyond max_channels carry nothing (one channel on a
    # DGX H100's 18 NVLink rings moved 367 GB/s of busbw)
    bw = channels * rings.ring_bandwidth_bytes_per_s
    if cfg.nodes > 1:
        bw = min(bw, cfg.nic.count * cfg.nic.nccl_bandwidth_bytes_per_s)
    return _Fabric(cfg.gpus, cfg.nodes, rings, bw, channels)


def _by_nodes(nodes: int, values: tuple[float, ...]) -> float:
    """tuning.cc's node index: 1 node, 2 nodes, 3 or more (``values`` of 2: beyond one)."""
    index = 0 if nodes == 1 else 1 if nodes <= 2 else 2
    return values[index - (3 - len(values))]


def _ll_max(cfg: SystemConfig, nodes: int) -> float:
    """llMaxBws: the GPU's row on one node, the CPU vendor's beyond (tuning.cc)."""
    multi = cfg.nccl.ll_max_multi_node_bytes_per_s
    if nodes == 1 or multi is None:
        return cfg.nccl.ll_max_bandwidth_bytes_per_s
    return _by_nodes(nodes, multi)


def _tree_caps(cfg: SystemConfig, nodes: int) -> tuple[float, float]:
    """(LL128, Simple) per-channel tree caps at ``nodes`` (perChMaxTree[LL128]Bws)."""
    nc = cfg.nccl
    simple = nc.tree_channel_max_bytes_per_s
    if nc.tree_channel_max_by_nodes_bytes_per_s is not None:
        simple = _by_nodes(nodes, nc.tree_channel_max_by_nodes_bytes_per_s)
    ll128 = simple
    if nc.tree_ll128_channel_max_bytes_per_s is not None:
        ll128 = _by_nodes(nodes, nc.tree_ll128_channel_max_bytes_per_s)
    return ll128, simple


def _ring(cfg: SystemConfig, f: _Fabric, op: str, nbytes: int, p: int) -> tuple[float, float]:
    """(latency s, algbw bytes/s) of a ring with protocol index ``p``."""
    nc = cfg.nccl
    nsteps, inter_steps = _steps(op, f.ranks, f.nodes)
    intra = nc.hw_latency_us[f.rings.kind]["ring"][p]
    inter = nc.hw_latency_us["net"]["ring"][p]
    if f.nodes > 1:
        intra = max(intra, nc.net_overhead_us * (3 if p == 2 else 1))
    lat = nc.base_latency_us["ring"][p] + (nsteps - inter_steps) * intra + inter_steps * inter
    if op == "all_reduce" and p == 2 and f.nodes > 1 and nbytes / (f.channels * f.ranks) >= 64:
        lat *= nc.ring_plateau_factor
    bus = f.bandwidth
    if p == 0:
        bus = min(_ll_max(cfg, f.nodes), bus * 0.5)
    elif p == 1:
        bus = min(bus * 0.92, f.channels * nc.ring_ll128_channel_max_bytes_per_s)
    return lat * 1e-6, bus * f.ranks / nsteps


def _tree(cfg: SystemConfig, f: _Fabric, nbytes: int, p: int) -> tuple[float, float]:
    nc = cfg.nccl
    intra = nc.hw_latency_us[f.rings.kind]["tree"][p]
    inter = nc.hw_latency_us["net"]["tree"][p]
    per_node = f.ranks // f.nodes
    lat = nc.base_latency_us["tree"][p] + 2 * ((per_node - 1) * intra + math.log2(f.nodes) * inter)
    cap_ll128, cap = (f.channels * c for c in _tree_caps(cfg, f.nodes))
    bus = min(f.bandwidth * 0.92, cap)  # tuning.cc: every tree all-reduce, then per protocol
    if p == 0:
        bus = min(bus / 3.8, _ll_max(cfg, f.nodes))
    elif p == 1:
        bus = min(bus * (7 / 9 if f.nodes == 1 else 120 / 128), cap_ll128)
    # tuning.cc: the factor of log2i(nBytes >> 6) while it is below 23 (< 512 MiB)
    idx = int(math.log2(max(nbytes >> 6, 1)))
    bus *= _TREE_CORRECTION[PROTOCOLS[p]][idx] if idx < 23 else 1.0
    return lat * 1e-6, bus * 0.5


def nvls_chunk_bytes(cfg: SystemConfig, nbytes: int, heads: int) -> int:
    """NVLS chunk for ``nbytes`` (enqueue.cc): the configured chunk, halved to 64, 32 and 16 KiB
    when the buffer holds fewer than 64, 8 and 2 loops of ``heads x channels`` chunks."""
    chunk = cfg.nccl.nvls_chunk_bytes
    ops = cfg.nccl.nvls_channels * heads
    for loops, smaller in ((64, 65536), (8, 32768), (2, 16384)):
        if nbytes < loops * ops * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def _nvls(cfg: SystemConfig, f: _Fabric, nbytes: int) -> tuple[float, float]:
    """(latency s, effective algbw bytes/s) of NVLS on one node, pipeline fill included.

    Each channel loops over ``heads x chunk`` bytes; a loop passes ``nvls_pipeline_stages``
    stages, so the buffer takes its own time plus ``stages - 1`` loop times (fill and drain; a
    buffer smaller than one loop fills with itself). A partial last loop adds only its bytes,
    so a larger buffer never finishes sooner at one chunk size."""
    nc = cfg.nccl
    ch = nc.nvls_channels
    bw = f.rings.bandwidth_bytes_per_s * nc.nvls_efficiency * (ch - 1) / ch
    heads = f.ranks // f.nodes
    bw *= heads / (heads + 1)  # (n+1)/n of the buffer per direction: see the module docstring
    loop_bytes = heads * ch * nvls_chunk_bytes(cfg, nbytes, heads)
    fill = (nc.nvls_pipeline_stages - 1) * min(loop_bytes, nbytes)
    bw *= nbytes / (nbytes + fill)
    return nc.hw_latency_us["nvlink"]["nvls"][2] * 1e-6, bw


def _candidates(cfg: SystemConfig, f: _Fabric, op: str) -> list[tuple[str, int]]:
    protos = [0, 1, 2] if cfg.nccl.ll128 and f.rings.kind == "nvlink" else [0, 2]
    out = [("ring", p) for p in protos]
    if op == "all_reduce":
        out += [("tree", p) for p in protos]
        # NCCL's NVLS bandwidth has a (channels - 1) / channels factor: one channel moves nothing
        nvls = (cfg.topology.nvswitch_reduction and cfg.nccl.nvls_efficiency > 0
                and cfg.nccl.nvls_channels > 1)  # fmt: skip
        if nvls and f.nodes == 1 and f.ranks > 1:
            out.append(("nvls", 2))
    return out


def _check(cfg: SystemConfig, op: str, nbytes: int, algorithm: str | None, protocol: str | None):
    if op not in OPS:
        raise SimulationError(f"collective {op!r} is unknown; allowed: {', '.join(OPS)}")
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes <= 0:
        raise SimulationError(f"collective size {nbytes!r} bytes; allowed: an integer >= 1")
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise SimulationError(f"algorithm {algorithm!r}; allowed: {', '.join(ALGORITHMS)}")
    if protocol is not None and protocol not in PROTOCOLS:
        raise SimulationError(f"protocol {protocol!r}; allowed: {', '.join(PROTOCOLS)}")


def collective_time(
    cfg: SystemConfig,
    op: str,
    nbytes: int,
    algorithm: str | None = None,
    protocol: str | None = None,
) -> CollectiveTime:
    """Time of ``op`` on ``nbytes`` (nccl-tests' size) across every GPU of ``cfg``.

    ``algorithm``/``protocol`` force NCCL_ALGO/NCCL_PROTO (default: the system's
    ``nccl.algorithm``/``nccl.protocol``, and when those are null the fastest is chosen).
    """
    # which setting asked: the call's argument or the system's nccl block
    where = {"algorithm": "algorithm" if algorithm else "nccl.algorithm",
             "protocol": "protocol" if protocol else "nccl.protocol"}  # fmt: skip
    algorithm = algorithm or cfg.nccl.algorithm
    protocol = protocol or cfg.nccl.protocol
    _check(cfg, op, nbytes, algorithm, protocol)
    f = _fabric(cfg)
    n = f.ranks
    if n == 1:
        return CollectiveTime(op, nbytes, 1, "none", "none", 0, 0.0, 0.0, 0.0, 0.0)
    cands = [
        (a, p)
        for a, p in _candidates(cfg, f, op)
        if (algorithm is None or a == algorithm) and (protocol is None or PROTOCOLS[p] == protocol)
    ]
    if not cands:
        raise SimulationError(
            f"{cfg.name}: {op} cannot use {where['algorithm']}={algorithm or 'any'} with "
            f"{where['protocol']}={protocol or 'any'}; allowed here: "
            + ", ".join(f"{a}/{PROTOCOLS[p]}" for a, p in _candidates(cfg, f, op))
        )
    best = None
    for a, p in cands:
        if a == "ring":
            lat, algbw = _ring(cfg, f, op, nbytes, p)
        elif a == "tree":
            lat, algbw = _tree(cfg, f, nbytes, p)
        else:
            lat, algbw = _nvls(cfg, f, nbytes)
        t = lat + nbytes / algbw
        if best is None or t < best[0]:
            best = (t, lat, a, p)
    t, lat, a, p = best  # type: ignore[misc]
    moved = nbytes * ((n + 1) / n if a == "nvls" else bus_factor(op, n)) * n
    # bytes on the network: a ring of n GPUs over N nodes leaves each node once (N of its n
    # edges); a broadcast's or reduce's chain from the root, and a tree, join node heads on
    # N - 1 of their n - 1 edges
    inter = 0.0
    if f.nodes > 1:
        closed = a == "ring" and op in ("all_reduce", "all_gather", "reduce_scatter")
        inter = moved * (f.nodes / n if closed else (f.nodes - 1) / (n - 1))
    channels = cfg.nccl.nvls_channels if a == "nvls" else f.channels
    return CollectiveTime(op, nbytes, n, a, PROTOCOLS[p], channels, lat, t, moved - inter, inter)
