"""Opt-in SRAM demand traces of a systolic layer, streamed fold by fold into gzip CSV.

Never needed for cycles or energy. One row per demand cycle (stall-free cycle numbering, as in
SCALE-Sim's SRAM traces before stalls): ``cycle, ifmap addresses..., filter addresses...,
ofmap addresses...`` with -1 where no request is made; IFMAP, FILTER and OFMAP addresses carry
the offsets given (SCALE-Sim's defaults 0, 10,000,000, 20,000,000). Memory stays at one fold.
``archsim run ... --trace`` writes one such file per layer (``write_layer_traces``).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from archsim.accelerators.systolic import layer_gemms
from archsim.config.systolic import SystolicConfig
from archsim.config.workload import ConvLayer, GemmLayer, WorkloadSpec
from archsim.datapath.systolic_kernels import fold_demands
from archsim.errors import ConfigError

__all__ = ["write_sram_trace", "write_layer_traces", "trace_name"]


def write_sram_trace(
    config: SystolicConfig,
    layer: ConvLayer | GemmLayer,
    path: str | Path,
    offsets: tuple[int, int, int] = (0, 10_000_000, 20_000_000),
) -> int:
    """Write ``layer``'s SRAM demand trace (first GEMM) to ``path`` (gzip CSV); returns rows."""
    g = layer_gemms(layer, config.timing_model == "scalesim")
    a = config.array
    rows = 0
    try:
        with gzip.open(Path(path), "wt", encoding="ascii", compresslevel=6) as f:
            for _, ifm, flt, ofm in fold_demands(a.dataflow, a.rows, a.cols, g.geometry):
                block = np.concatenate(
                    [
                        np.where(x >= 0, x + off, -1)
                        for x, off in zip((ifm, flt, ofm), offsets, strict=True)
                    ],
                    axis=1,
                )
                cyc = np.arange(rows, rows + block.shape[0])[:, None]
                np.savetxt(f, np.concatenate([cyc, block], axis=1), fmt="%d", delimiter=",")
                rows += block.shape[0]
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot write trace: {exc.strerror}") from None
    return rows


def trace_name(index: int) -> str:
    """File name of layer ``index``'s SRAM trace in a run folder."""
    return f"SRAM_TRACE_layer{index}.csv.gz"


def write_layer_traces(
    config: SystolicConfig, workload: WorkloadSpec, folder: str | Path
) -> list[str]:
    """Write :func:`write_sram_trace` of every layer into ``folder`` as ``trace_name(i)``;
    returns the names written."""
    names = []
    for i, layer in enumerate(workload.layers):
        if isinstance(layer, ConvLayer | GemmLayer):
            write_sram_trace(config, layer, Path(folder) / trace_name(i))
            names.append(trace_name(i))
    return names
