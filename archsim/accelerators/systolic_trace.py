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
from archsim.config.workload import ConvLayer, FcLayer, GemmLayer, WorkloadSpec
from archsim.datapath.systolic_folds import fold_counts, scalesim_rows_per_fold, spatio_temporal
from archsim.datapath.systolic_kernels import fold_demands
from archsim.errors import ConfigError
from archsim.limits import refuse_layer
from archsim.numba_cache import nb

__all__ = [
    "check_trace_size",
    "trace_name",
    "trace_values",
    "write_layer_traces",
    "write_sram_trace",
]

#: bytes of one value as text at most: a sign, 19 digits and its comma or newline
_MAX_VALUE_BYTES = 21


@nb.njit(cache=True, nogil=True)
def _csv_rows(values, out):  # pragma: no cover - compiled
    """``values`` (int64 above INT64_MIN, rows x columns) as decimal CSV lines into ``out``
    (uint8, at least ``values.size * _MAX_VALUE_BYTES``): what ``np.savetxt(fmt="%d",
    delimiter=",")`` writes, formatted without a Python call per value (``np.savetxt`` wrote
    26 k rows/s of 97 columns); returns the bytes written."""
    pos = 0
    n_cols = values.shape[1]
    for i in range(values.shape[0]):
        for j in range(n_cols):
            v = values[i, j]
            if v < 0:
                out[pos] = 45  # '-'
                pos += 1
                v = -v
            start = pos
            while True:  # digits, least significant first, then reversed in place
                out[pos] = 48 + v % 10
                pos += 1
                v //= 10
                if v == 0:
                    break
            lo, hi = start, pos - 1
            while lo < hi:
                out[lo], out[hi] = out[hi], out[lo]
                lo += 1
                hi -= 1
            out[pos] = 44 if j < n_cols - 1 else 10  # ',' or newline
            pos += 1
    return pos


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
        # level 1: 85 MB of text in 0.56 s, 26.0 MB (level 6: 2.49 s, 22.8 MB)
        # mtime 0: the gzip header holds no time, so two runs write identical bytes
        with gzip.GzipFile(Path(path), "wb", compresslevel=1, mtime=0) as f:
            for _, ifm, flt, ofm in fold_demands(a.dataflow, a.rows, a.cols, g.geometry):
                block = np.concatenate(
                    [
                        np.arange(rows, rows + ifm.shape[0], dtype=np.int64)[:, None],
                        *(
                            np.where(x >= 0, x + off, -1).astype(np.int64)
                            for x, off in zip((ifm, flt, ofm), offsets, strict=True)
                        ),
                    ],
                    axis=1,
                )
                text = np.empty(block.size * _MAX_VALUE_BYTES, dtype=np.uint8)
                f.write(text[: _csv_rows(block, text)].data)
                rows += block.shape[0]
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot write trace: {exc.strerror}") from None
    return rows


def trace_values(config: SystolicConfig, layer: ConvLayer | GemmLayer) -> int:
    """Values ``write_sram_trace`` writes for ``layer``: its demand rows (folds x cycles per
    fold, as ``fold_demands`` makes them) times its columns (cycle, IFMAP, FILTER, OFMAP)."""
    folds, per_fold = _trace_shape(config, layer)
    return folds * per_fold


def _trace_shape(config: SystolicConfig, layer: ConvLayer | GemmLayer) -> tuple[int, int]:
    """(folds, values of one fold's trace) of ``layer``."""
    g = layer_gemms(layer, config.timing_model == "scalesim")
    ih, iw, fh, fw, ch, stride, oh, ow, nf = g.geometry
    a = config.array
    m, n, k = oh * ow, nf, fh * fw * ch
    rf, cf = fold_counts(a.dataflow, a.rows, a.cols, m, n, k)
    t = spatio_temporal(a.dataflow, m, n, k)[2]
    per_fold = scalesim_rows_per_fold(a.dataflow, a.rows, a.cols, t)
    columns = 1 + a.rows + 2 * a.cols  # cycle, ifmap and filter (rows / cols), ofmap (cols)
    return rf * cf, per_fold * columns


#: bytes one trace value of a fold takes while it is written: the fold's int64 demands, the
#: int64 block with the offsets added (and np.where's temporary) and its text buffer
_BYTES_PER_FOLD_VALUE = 3 * 8 + _MAX_VALUE_BYTES


def check_trace_size(config: SystolicConfig, workload: WorkloadSpec) -> None:
    """Refuse, before anything runs, a trace over ``ARCHSIM_MAX_TRACE_VALUES`` values in one
    layer, or one whose largest fold would take more than ``ARCHSIM_MAX_MEMORY_BYTES`` to write
    (one line naming the layer, its size and the limit)."""
    for i, layer in enumerate(workload.layers):
        if isinstance(layer, FcLayer):
            layer = layer.as_gemm()  # runs as its dense GEMM
        if isinstance(layer, ConvLayer | GemmLayer):
            folds, per_fold = _trace_shape(config, layer)
            env = "ARCHSIM_MAX_TRACE_VALUES"
            refuse_layer(workload.origin, i, layer, "trace values", folds * per_fold, env)
            # a fold is written whole: one of 9.7e8 values (k = 1e7 on 32 x 32) took 25 GB
            memory = per_fold * _BYTES_PER_FOLD_VALUE
            refuse_layer(workload.origin, i, layer, "bytes of memory for one fold's trace",
                         memory, "ARCHSIM_MAX_MEMORY_BYTES")  # fmt: skip


def trace_name(index: int) -> str:
    """File name of layer ``index``'s SRAM trace in a run folder."""
    return f"SRAM_TRACE_layer{index}.csv.gz"


def write_layer_traces(
    config: SystolicConfig,
    workload: WorkloadSpec,
    folder: str | Path,
    offsets: tuple[int, int, int] = (0, 10_000_000, 20_000_000),
) -> list[str]:
    """Write :func:`write_sram_trace` of every layer into ``folder`` as ``trace_name(i)``, with
    the IFMAP, FILTER and OFMAP address ``offsets``; returns the names written."""
    names = []
    for i, layer in enumerate(workload.layers):
        if isinstance(layer, FcLayer):
            layer = layer.as_gemm()  # runs as its dense GEMM
        if isinstance(layer, ConvLayer | GemmLayer):
            write_sram_trace(config, layer, Path(folder) / trace_name(i), offsets)
            names.append(trace_name(i))
    return names
