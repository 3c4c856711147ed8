"""Literal SimPy twin of a pipelined ring: every message hop is a process on a link resource.

k GPUs form a unidirectional ring; each link (GPU i -> GPU i+1) is a SimPy ``Resource`` of
capacity 1 that moves ``bandwidth`` bytes/s, so messages queue on it. It checks the closed
forms the collective model relies on, without latencies:

* broadcast of N bytes from GPU 0 cut into S messages: each message crosses k - 1 links, and
  message s leaves GPU i as soon as it has arrived and the link is free, so the last message
  arrives after ``N (S + k - 2) / (S B)`` (the seeds' pipelined-ring formula, -> N / B);
* ring all-reduce of N bytes: ``2 (k - 1)`` steps; in each, every GPU sends one N / k chunk
  (cut into S messages) to its neighbour and step j + 1 of a chunk starts when its step j has
  arrived, so it takes ``2 (k - 1) N / (k B)`` (nccl-tests' busbw = B).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

__all__ = ["pipelined_broadcast_time", "ring_all_reduce_time", "seeds_broadcast_time"]


def seeds_broadcast_time(k: int, nbytes: float, messages: int, bandwidth: float) -> float:
    """The closed form ``N (S + k - 2) / (S B)`` (k >= 2 GPUs, S messages)."""
    return nbytes * (messages + k - 2) / (messages * bandwidth)


def _hop(env: simpy.Environment, link: simpy.Resource, seconds: float) -> Generator[Any, Any, None]:
    with link.request() as req:
        yield req
        yield env.timeout(seconds)


def pipelined_broadcast_time(k: int, nbytes: float, messages: int, bandwidth: float) -> float:
    """Simulate the broadcast message by message; returns the time the last one arrives."""
    env = simpy.Environment()
    links = [simpy.Resource(env, capacity=1) for _ in range(k)]
    per = nbytes / messages / bandwidth
    arrived = [[env.event() for _ in range(messages)] for _ in range(k)]
    for s in range(messages):
        arrived[0][s].succeed()

    def forward(i: int, s: int) -> Generator[Any, Any, None]:
        yield arrived[i][s]
        yield env.process(_hop(env, links[i], per))
        arrived[i + 1][s].succeed()

    for i in range(k - 1):  # message order on each link: s = 0, 1, ... (FIFO requests)
        for s in range(messages):
            env.process(forward(i, s))
    env.run()
    return env.now


def ring_all_reduce_time(k: int, nbytes: float, messages: int, bandwidth: float) -> float:
    """Simulate reduce-scatter + all-gather over the ring; returns the completion time."""
    env = simpy.Environment()
    links = [simpy.Resource(env, capacity=1) for _ in range(k)]
    per = nbytes / k / messages / bandwidth
    steps = 2 * (k - 1)
    # done[c][j][s]: message s of chunk c has finished step j (chunk c starts at GPU c)
    done = [[[env.event() for _ in range(messages)] for _ in range(steps)] for _ in range(k)]

    def send(c: int, j: int, s: int) -> Generator[Any, Any, None]:
        if j > 0:
            yield done[c][j - 1][s]
        yield env.process(_hop(env, links[(c + j) % k], per))
        done[c][j][s].succeed()

    for j in range(steps):
        for s in range(messages):
            for c in range(k):
                env.process(send(c, j, s))
    env.run()
    return env.now
