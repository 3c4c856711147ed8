"""Fold arithmetic of a systolic array (SCALE-Sim's mapping) and the fields of its memory model.

Plain Python, no numba: ``archsim.limits`` and the literal twin read it without the kernels.
``archsim.datapath.systolic_kernels`` re-exports every name (see its docstring for the model).
"""

from __future__ import annotations

__all__ = [
    "DATAFLOWS",
    "SCALESIM_FIELDS",
    "spatio_temporal",
    "fold_counts",
    "scalesim_rows_per_fold",
    "paper_fold_cycles",
]

DATAFLOWS = ("os", "ws", "is")
_DF_CODE = {"os": 0, "ws": 1, "is": 2}

#: What ``scalesim_memory`` returns, in this order.
SCALESIM_FIELDS = (
    "total_cycles",  # SCALE-Sim "Total Cycles" (cycle of the last OFMAP row, stalls included)
    "stall_cycles",
    "ifmap_dram_reads",  # words
    "filter_dram_reads",
    "ofmap_dram_writes",
    "ifmap_dram_start",  # first cycle of the initial prefetch (negative: before cycle 0)
    "filter_dram_start",
    "ofmap_dram_stop",  # last cycle of the last OFMAP drain
    "ifmap_prefetches",
    "filter_prefetches",
    "ofmap_drains",
    # SCALE-Sim's DETAILED_ACCESS_REPORT cycles: DRAM = first/last cycle of its DRAM traces,
    # SRAM = the serviced cycle of the first/last demand row holding a request (-1: none)
    "ifmap_dram_stop",  # last response of the last IFMAP prefetch
    "filter_dram_stop",
    "ofmap_dram_start",  # first cycle of the first OFMAP drain
    "ifmap_sram_start",
    "ifmap_sram_stop",
    "filter_sram_start",
    "filter_sram_stop",
    "ofmap_sram_start",
    "ofmap_sram_stop",
)


def spatio_temporal(dataflow: str, m: int, n: int, k: int) -> tuple[int, int, int]:
    """(Sr, Sc, T) of GEMM (M, N, K) under ``dataflow`` (see the module docstring)."""
    if dataflow == "os":
        return m, n, k
    if dataflow == "ws":
        return k, n, m
    if dataflow == "is":
        return k, m, n
    raise ValueError(f"unknown dataflow {dataflow!r}; allowed: {', '.join(DATAFLOWS)}")


def fold_counts(dataflow: str, rows: int, cols: int, m: int, n: int, k: int) -> tuple[int, int]:
    """(row folds, column folds) = (ceil(Sr/R), ceil(Sc/C))."""
    sr, sc, _ = spatio_temporal(dataflow, m, n, k)
    return -(-sr // rows), -(-sc // cols)


def scalesim_rows_per_fold(dataflow: str, rows: int, cols: int, t: int) -> int:
    """Demand rows (cycles) of one fold in SCALE-Sim 3.0.0: OS T+R+C-2, WS/IS 2R+C+T-2."""
    if dataflow == "os":
        return t + rows + cols - 2
    return 2 * rows + cols + t - 2


def paper_fold_cycles(rows: int, cols: int, t: int) -> int:
    """Cycles of one fold in the SCALE-Sim paper's form ``2R + C + T - 2`` (all dataflows):
    R + C - 2 cycles of operand skew (fill), T MAC steps, R cycles to drain the results."""
    return 2 * rows + cols + t - 2
