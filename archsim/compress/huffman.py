"""Huffman-coded size of a stream of symbols (Deep Compression, Section 4)."""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["huffman_bits", "huffman_lengths"]


def huffman_lengths(counts: np.ndarray) -> np.ndarray:
    """Code length (bits) of each symbol of a Huffman code for ``counts`` (0 for unused symbols;
    1 bit when only one symbol occurs)."""
    counts = np.asarray(counts, dtype=np.int64)
    lengths = np.zeros(counts.size, dtype=np.int64)
    live = [(int(c), i, (i,)) for i, c in enumerate(counts) if c > 0]
    if len(live) == 1:
        lengths[live[0][1]] = 1
        return lengths
    heapq.heapify(live)
    tie = counts.size
    while len(live) > 1:
        c1, _, s1 = heapq.heappop(live)
        c2, _, s2 = heapq.heappop(live)
        for s in s1 + s2:
            lengths[s] += 1
        heapq.heappush(live, (c1 + c2, tie, s1 + s2))
        tie += 1
    return lengths


def huffman_bits(symbols: np.ndarray, alphabet: int) -> int:
    """Total bits of ``symbols`` (ints in [0, alphabet)) Huffman-coded, code table excluded."""
    counts = np.bincount(np.asarray(symbols, dtype=np.int64).reshape(-1), minlength=alphabet)
    return int((counts * huffman_lengths(counts)).sum())
