"""Hardware-independent sparse, quantised matrix-vector layers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

__all__ = ["QuantizedMatVec"]


@dataclass(frozen=True, eq=False)
class QuantizedMatVec:
    """A layer ``y = W x + b`` with W pruned and weight-shared.

    W (``n_rows`` outputs x ``n_cols`` inputs) is stored as CSC: column ``j`` holds rows
    ``row_idx[indptr[j]:indptr[j+1]]`` (ascending) with codebook indices ``codes`` (never 0;
    ``codebook[0] == 0`` is reserved for zero and padding). ``bias_codes`` (length n_rows, 0 = no
    bias) is quantised with the same codebook and driven by an activation of 1.0.
    """

    name: str
    n_rows: int
    n_cols: int
    indptr: np.ndarray  # int64, n_cols + 1
    row_idx: np.ndarray  # int32
    codes: np.ndarray  # uint8, values 1..len(codebook)-1
    codebook: np.ndarray  # float32
    bias_codes: np.ndarray  # uint8, n_rows (all 0 when the layer has no bias)
    activations: np.ndarray  # float32, n_cols, >= 0

    @property
    def nnz(self) -> int:
        """Stored non-zero weights (bias excluded)."""
        return int(self.indptr[-1])

    @property
    def has_bias(self) -> bool:
        """True when any bias entry is non-zero."""
        return bool(np.any(self.bias_codes))

    @property
    def weight_density(self) -> float:
        """Measured fraction of non-zero weights."""
        return self.nnz / float(self.n_rows * self.n_cols)

    @property
    def activation_density(self) -> float:
        """Measured fraction of activations > 0."""
        return float(np.count_nonzero(self.activations > 0)) / self.n_cols

    def entry_columns(self) -> np.ndarray:
        """Column index of every stored weight, aligned with ``row_idx``."""
        return np.repeat(np.arange(self.n_cols, dtype=np.int64), np.diff(self.indptr))

    def live_entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(entry indices, their columns) of the weights whose activation is non-zero."""
        cols = np.flatnonzero(self.activations != 0)
        lens = self.indptr[cols + 1] - self.indptr[cols]
        if int(lens.sum()) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        first = self.indptr[cols] - np.concatenate([[0], np.cumsum(lens)[:-1]])
        idx = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(first, lens)
        return idx, np.repeat(cols, lens)

    def reference_output(self) -> np.ndarray:
        """NumPy float64 ``W_deq @ x + b_deq`` (before ReLU; computed once, do not mutate)."""
        return self._reference_output

    def abs_bound(self) -> np.ndarray:
        """Per-row ``sum |w| |x| + |b|``: bounds every partial sum of the row (computed once,
        do not mutate)."""
        return self._abs_bound

    @cached_property
    def _reference_output(self) -> np.ndarray:
        idx, cols = self.live_entries()
        cb = self.codebook.astype(np.float64)
        contrib = cb[self.codes[idx]]
        contrib *= self.activations.astype(np.float64)[cols]  # in place: one array less
        del cols
        out = np.bincount(self.row_idx[idx], weights=contrib, minlength=self.n_rows)
        return out + cb[self.bias_codes]

    @cached_property
    def _abs_bound(self) -> np.ndarray:
        idx, cols = self.live_entries()
        cb = np.abs(self.codebook.astype(np.float64))
        contrib = cb[self.codes[idx]]
        contrib *= np.abs(self.activations.astype(np.float64))[cols]  # in place: one less
        del cols
        out = np.bincount(self.row_idx[idx], weights=contrib, minlength=self.n_rows)
        return out + cb[self.bias_codes]

    def derived(self, key: str, make: Callable[[QuantizedMatVec], Any]) -> Any:
        """``make(self)``, computed once per layer object and ``key``: what a model derives
        from the layer alone (shared, do not mutate)."""
        cache = self.__dict__.setdefault("_derived", {})
        if key not in cache:
            cache[key] = make(self)
        return cache[key]

    def dense_weights(self) -> np.ndarray:
        """Dense float32 W (small layers only)."""
        w = np.zeros((self.n_rows, self.n_cols), dtype=np.float32)
        w[self.row_idx, self.entry_columns()] = self.codebook[self.codes]
        return w
