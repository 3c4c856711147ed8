"""SCNN operand traffic per super-tile: the closed form against the literal (G, C, P) sums."""

from __future__ import annotations

import numpy as np

from archsim.accelerators.scnn import _operand_traffic


def _literal(na, nw, i_vec, f_vec, depth):
    """Every (group, channel, PE): activation vectors read when the group has weights there;
    weight vectors pushed once if the list fits the FIFO, else once per activation vector."""
    reads = pushed = once = 0
    n_groups, n_channels = nw.shape
    for g in range(n_groups):
        for c in range(n_channels):
            wv = -(-int(nw[g, c]) // f_vec)
            for p in range(na.shape[1]):
                av = -(-int(na[c, p]) // i_vec)
                reads += av if nw[g, c] > 0 else 0
                if av > 0:
                    pushed += wv if wv <= depth else wv * av
                    once += wv
    return reads, pushed, once


def test_operand_traffic_equals_the_literal_sums_on_random_tiles() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        g, c, p = (int(x) for x in rng.integers(1, 6, 3))
        na = rng.integers(0, 13, (c, p)) * (rng.random((c, p)) < 0.7)
        nw = rng.integers(0, 41, (g, c)) * (rng.random((g, c)) < 0.7)
        i_vec, f_vec, depth = (int(x) for x in rng.integers(1, 5, 3))
        depth *= 4
        got = _operand_traffic(na, nw, i_vec, f_vec, depth)
        assert got == _literal(na, nw, i_vec, f_vec, depth), (na, nw, i_vec, f_vec, depth)
    assert _operand_traffic(np.zeros((3, 4), int), np.zeros((2, 3), int), 4, 4, 8) == (0, 0, 0)
