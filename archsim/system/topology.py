"""A node's links as a graph, and the rings (NCCL channels) it can carry.

NCCL builds its channels as rings over the fastest GPU-to-GPU paths: through an NVSwitch every
GPU reaches every other over its links to the switch, so each link pair carries one ring; on an
NVLink mesh (DGX-1) the rings are Hamiltonian cycles over direct links, each hop using one link in
one direction, so a link of count c carries c rings each way; without NVLink (PCIe boxes) one ring
runs in GPU order with every hop routed over the PCIe tree, and its bandwidth is the tightest
link divided by the hops that share it. Bandwidths here are NCCL's modelled payload bandwidths
(``nccl_bandwidth_bytes_per_s``), per direction.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from archsim.config.system import SystemConfig

__all__ = ["NodeGraph", "Rings", "find_rings"]


@dataclass(frozen=True)
class Rings:
    """The intra-node rings: how many, per-ring bandwidth (bytes/s) and the link kind they use."""

    count: int
    ring_bandwidth_bytes_per_s: float
    kind: str  # "nvlink" or "pcie": selects NCCL's per-hop latency
    orders: tuple[tuple[int, ...], ...]  # GPU order of each ring

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Total bandwidth of all rings (NCCL's ``nChannels * bwIntra``)."""
        return self.count * self.ring_bandwidth_bytes_per_s


class NodeGraph:
    """Directed capacities of one node: ``cap[(u, v)]`` = links from u to v, ``bw`` per link."""

    def __init__(self, cfg: SystemConfig) -> None:
        topo = cfg.topology
        self.gpus = [f"gpu{i}" for i in range(cfg.gpus_per_node)]
        self.switches = list(topo.switches)
        self.kind: dict[tuple[str, str], str] = {}
        self.count: dict[tuple[str, str], int] = {}
        self.adj: dict[str, list[str]] = {e: [] for e in self.gpus + self.switches}
        for link in topo.links:
            for u, v in ((link.a, link.b), (link.b, link.a)):
                if (u, v) not in self.count:
                    self.adj[u].append(v)
                    self.count[(u, v)] = 0
                self.count[(u, v)] += link.count
                self.kind[(u, v)] = link.kind
        self.bw = {k: v.nccl_bandwidth_bytes_per_s for k, v in topo.link_kinds.items()}

    def edge_bandwidth(self, u: str, v: str) -> float:
        """Payload bandwidth from u to v over all their parallel links, bytes/s."""
        return self.count[(u, v)] * self.bw[self.kind[(u, v)]]

    def path(self, src: str, dst: str) -> list[str]:
        """Fewest-hop path from ``src`` to ``dst`` (BFS; ties broken by link order)."""
        prev: dict[str, str | None] = {src: None}
        todo = deque([src])
        while todo:
            u = todo.popleft()
            if u == dst:
                break
            for v in self.adj[u]:
                if v not in prev:
                    prev[v] = u
                    todo.append(v)
        out = [dst]
        while prev[out[-1]] is not None:
            out.append(prev[out[-1]])  # type: ignore[arg-type]
        return out[::-1]

    def nvswitches(self) -> list[str]:
        """The switches every GPU reaches over NVLink directly: one NVLink fabric (NCCL merges
        a node's NVSwitches into one, as a DGX H100's four NVSwitch chips with 5/4/4/5 links
        per GPU are its 18 NVLinks); empty when there is none."""
        return [
            s for s in self.switches if all(self.kind.get((g, s)) == "nvlink" for g in self.gpus)
        ]

    def fabric_links(self, gpu: str, switches: list[str]) -> int:
        """``gpu``'s NVLinks into the fabric of ``switches``."""
        return sum(self.count[(gpu, s)] for s in switches)


def _cycles(cap: dict[tuple[int, int], int], n: int) -> list[tuple[int, ...]]:
    """Every directed Hamiltonian cycle from GPU 0 over edges with capacity (DFS)."""
    out: list[tuple[int, ...]] = []
    order = [0]
    used = [False] * n
    used[0] = True

    def extend() -> None:
        u = order[-1]
        if len(order) == n:
            if cap.get((u, 0), 0) > 0:
                out.append(tuple(order))
            return
        for v in range(1, n):
            if not used[v] and cap.get((u, v), 0) > 0:
                used[v] = True
                order.append(v)
                extend()
                order.pop()
                used[v] = False

    extend()
    return out


#: most cycles the packing search examines before it keeps the best packing found: a dense
#: mesh whose packing is hard to complete would otherwise try every combination of its
#: thousands of Hamiltonian cycles (an 8-GPU mesh with one doubled link ran for minutes)
PACK_STEPS = 5_000_000


def _pack(cycles: list[tuple[int, ...]], cap: dict[tuple[int, int], int], limit: int) -> list:
    """Most cycles (repeats allowed) that fit the capacities: depth-first, stopping at
    ``limit`` (no packing exceeds it: each cycle takes one out-link and one in-link of every
    GPU) or after :data:`PACK_STEPS` cycles examined (deterministic: the best found by then).
    The search keeps its own stack: a packing is as deep as its cycles, and two GPUs joined
    by 1,024 links pack 1,024 (past Python's recursion limit)."""
    cap = dict(cap)
    best: list[tuple[int, ...]] = []
    chosen: list[tuple[int, ...]] = []
    frames = [0]  # per depth, the next cycle to try; chosen[d] was taken by frames[d]
    steps = 0

    def edges(c: tuple[int, ...]) -> list[tuple[int, int]]:
        return [(c[i], c[(i + 1) % len(c)]) for i in range(len(c))]

    while frames:
        i = frames[-1]
        if i >= len(cycles):  # this depth is done: give back the cycle that led to it
            frames.pop()
            if chosen:
                for e in edges(chosen.pop()):
                    cap[e] += 1
                frames[-1] += 1
            continue
        steps += 1
        if steps > PACK_STEPS:
            break
        es = edges(cycles[i])
        if not all(cap[e] > 0 for e in es):
            frames[-1] += 1
            continue
        for e in es:
            cap[e] -= 1
        chosen.append(cycles[i])
        frames.append(i)  # the next cycle may repeat this one
        if len(chosen) > len(best):
            best = list(chosen)
            if len(best) == limit:
                break
    return best


def _mesh_rings(g: NodeGraph) -> list[tuple[int, ...]]:
    """The most directed Hamiltonian cycles over direct NVLink links, each hop one link."""
    n = len(g.gpus)
    cap = {
        (int(u[3:]), int(v[3:])): c
        for (u, v), c in g.count.items()
        if u in g.gpus and v in g.gpus and g.kind[(u, v)] == "nvlink"
    }
    if n < 2 or n > 10:  # the exhaustive search is for node-sized meshes
        return []
    ones = {e: 1 for e in cap}
    limit, single_limit, cycles = _degree_bound(cap, n), _degree_bound(ones, n), _cycles(cap, n)
    # first one link per pair (the search completes a mesh of single links fast); when the
    # parallel links allow more rings, the full search as well: the larger packing, the first
    # on a tie
    single = _pack(cycles, ones, single_limit)
    if len(single) == limit:
        return single
    full = _pack(cycles, dict(cap), limit)
    return full if len(full) > len(single) else single


def _degree_bound(cap: dict[tuple[int, int], int], n: int) -> int:
    """The most rings ``cap`` can carry: each takes one out-link and one in-link of every GPU."""
    out = [sum(c for (u, _), c in cap.items() if u == gpu) for gpu in range(n)]
    into = [sum(c for (_, v), c in cap.items() if v == gpu) for gpu in range(n)]
    return min(out + into)


def find_rings(cfg: SystemConfig) -> Rings:
    """The rings NCCL's search would build inside one node (see the module docstring)."""
    g = NodeGraph(cfg)
    n = len(g.gpus)
    order = tuple(range(n))
    if n == 1:
        return Rings(1, float("inf"), "nvlink", (order,))
    switches = g.nvswitches()
    if switches:
        links = min(g.fabric_links(gpu, switches) for gpu in g.gpus)
        return Rings(links, g.bw["nvlink"], "nvlink", (order,) * links)
    mesh = _mesh_rings(g)
    if mesh:
        return Rings(len(mesh), g.bw["nvlink"], "nvlink", tuple(tuple(r) for r in mesh))
    # one ring in GPU order, every hop routed over the tree; shared links divide their bandwidth
    use: dict[tuple[str, str], int] = {}
    kinds = set()
    for i in range(n):
        hops = g.path(g.gpus[i], g.gpus[(i + 1) % n])
        for u, v in zip(hops, hops[1:], strict=False):
            use[(u, v)] = use.get((u, v), 0) + 1
            kinds.add(g.kind[(u, v)])
    bw = min(g.edge_bandwidth(u, v) / k for (u, v), k in use.items())
    kind = "nvlink" if kinds == {"nvlink"} else "pcie"
    return Rings(1, bw, kind, (order,))
