"""NumPy floors and paired timing.

A floor is the time NumPy takes to compute a layer's output functionally, with no timing model:
any simulator that computes values (archsim's datapaths do) cannot beat it. Inputs are
materialised beforehand (not timed); every floor function returns ``{method: callable}``, each
callable recomputing the output from scratch (nothing cached between calls).

``alternate`` times several callables in turn (a, b, a, b, ...), so that on a shared machine a
load change hits every contender alike; rows report min and median and their ratios.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from archsim.workload import QuantizedMatVec, SparseConv

#: dense W above this many elements is not tried (memory), only the sparse form
DENSE_LIMIT = 1 << 26


def alternate(
    fns: dict[str, Callable[[], object]], repeat: int, budget_s: float = 60.0
) -> dict[str, list[float]]:
    """Wall times (s) of every callable, called in turn ``repeat`` times (at least 3); stops
    early, after 3 rounds, once ``budget_s`` is spent."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    spent = 0.0
    for i in range(max(repeat, 3)):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            dt = time.perf_counter() - t
            times[name].append(dt)
            spent += dt
        if i >= 2 and spent > budget_s:
            break
    return times


def stats(times: list[float]) -> dict[str, float]:
    """``{"min": .., "median": .., "n": ..}`` of one contender's times."""
    return {"min": min(times), "median": statistics.median(times), "n": len(times)}


def best_method(times: dict[str, list[float]], methods: list[str]) -> str:
    """The floor method with the smallest minimum."""
    return min(methods, key=lambda m: min(times[m]))


def _csc_matvec(layer: QuantizedMatVec) -> np.ndarray:
    """``W x + b`` from the CSC arrays, recomputed on every call (float64)."""
    idx, cols = layer.live_entries()
    cb = layer.codebook.astype(np.float64)
    contrib = cb[layer.codes[idx]] * layer.activations.astype(np.float64)[cols]
    out = np.bincount(layer.row_idx[idx], weights=contrib, minlength=layer.n_rows)
    return out + cb[layer.bias_codes]


def matvec_floor(layer: QuantizedMatVec) -> dict[str, Callable[[], object]]:
    """``y = W x + b``: NumPy sparse (CSC gather + bincount) and, if it fits, dense float32."""
    options: dict[str, Callable[[], object]] = {"np.csc": lambda: _csc_matvec(layer)}
    if layer.n_rows * layer.n_cols <= DENSE_LIMIT:
        w = layer.dense_weights()
        x = layer.activations.astype(np.float32)
        options["np.dense"] = lambda: w @ x
    return options


def conv_floor(sc: SparseConv) -> dict[str, Callable[[], object]]:
    """Dense convolution as im2col (strided window view, copied) + float32 matmul per group."""
    x = sc.activations.astype(np.float32)
    if sc.pad:
        x = np.pad(x, ((0, 0), (0, 0), (sc.pad, sc.pad), (sc.pad, sc.pad)))
    w = sc.weights.astype(np.float32)
    cg, kg, st = sc.c // sc.groups, sc.k // sc.groups, sc.stride

    def run() -> None:
        for g in range(sc.groups):
            win = np.lib.stride_tricks.sliding_window_view(
                x[:, g * cg : (g + 1) * cg], (sc.r, sc.s), axis=(2, 3)
            )[:, :, ::st, ::st]
            cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(-1, cg * sc.r * sc.s)
            cols @ w[g * kg : (g + 1) * kg].reshape(kg, -1).T

    return {"im2col": run}


def gemm_floor(m: int, n: int, k: int) -> dict[str, Callable[[], object]]:
    """``A[m x k] @ B[k x n]`` in float32 (NumPy's fp16 matmul has no BLAS path: slower)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return {"sgemm": lambda: a @ b}
