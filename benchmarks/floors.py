"""NumPy floors: the time to compute a layer's output functionally, with no timing model.

Any simulator that computes values (archsim's datapaths do) cannot beat these; the benchmark
reports archsim's wall time as a multiple of them. Inputs are materialised beforehand (not
timed); each function returns (seconds, method) for the fastest method it tries.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from archsim.workload import QuantizedMatVec, SparseConv

#: dense W above this many elements is not tried (memory), only the sparse form
DENSE_LIMIT = 1 << 26


def best_time(fn: Callable[[], object], repeat: int, budget_s: float = 1.0) -> float:
    """Best wall time (s) of up to ``repeat`` calls; stops repeating once ``budget_s`` is spent."""
    best, spent = float("inf"), 0.0
    for _ in range(max(repeat, 1)):
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best, spent = min(best, dt), spent + dt
        if spent > budget_s:
            break
    return best


def matvec_floor(layer: QuantizedMatVec, repeat: int = 3) -> tuple[float, str]:
    """``y = W x + b``: NumPy sparse (CSC gather + bincount) and, if it fits, dense float32."""
    options = {"np.csc": best_time(layer.reference_output, repeat)}
    if layer.n_rows * layer.n_cols <= DENSE_LIMIT:
        w = layer.dense_weights()
        x = layer.activations.astype(np.float32)
        options["np.dense"] = best_time(lambda: w @ x, repeat)
    method = min(options, key=options.get)
    return options[method], method


def conv_floor(sc: SparseConv, repeat: int = 3) -> tuple[float, str]:
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

    return best_time(run, repeat), "im2col"


def gemm_floor(m: int, n: int, k: int, repeat: int = 3) -> tuple[float, str]:
    """``A[m x k] @ B[k x n]`` in float32 (NumPy's fp16 matmul has no BLAS path: slower)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return best_time(lambda: a @ b, repeat), "sgemm"
