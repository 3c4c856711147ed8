"""EIE: encode each layer, run the numba kernels, and schedule the layers in SimPy.

Per layer the SimPy timeline is: input activations loaded from DRAM into the (double-buffered)
activation memory, one compute timeout of the kernel's exact cycle count, output write-back.
Loading layer i+1 and writing back layer i-1 overlap the computation of layer i. Event count
is a few per layer, independent of cycles.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from archsim.accelerators.base import LayerOutcome
from archsim.config.eie import EieConfig
from archsim.config.workload import FcLayer, LstmLayer, WorkloadSpec
from archsim.datapath.eie_encode import EieEncoded, encode_eie, encode_eie_rows
from archsim.datapath.eie_kernels import (
    TIMING_FIELDS,
    LayerArrays,
    eie_functional_counts,
    eie_line_reads,
    eie_schedule,
    live_error_sums,
    live_sums,
    timing_per_pe,
)
from archsim.datapath.eie_prepare import (
    EieFixedPoint,
    broadcast_items,
    choose_fixed_point,
    padded_activations,
)
from archsim.datapath.reference import EieReferenceResult, eie_reference
from archsim.engine.context import Dram, SimContext, Sram
from archsim.engine.pipeline import double_buffered_pipeline
from archsim.errors import SimulationError, WorkloadError
from archsim.memo import enabled as memo_enabled
from archsim.memo import holds as memo_holds
from archsim.memo import memoized
from archsim.workload.eie_format import NEGATIVE_ACTIVATIONS, data_signature
from archsim.workload.matvec import materialize_matvec
from archsim.workload.sparse import QuantizedMatVec

__all__ = [
    "EieLayerRun",
    "EiePrepared",
    "functional_errors",
    "prepare_eie_layer",
    "time_eie_layer",
    "functional_error_bound",
    "run_eie_layer",
    "run_eie_reference",
    "simulate_eie",
    "layer_sums",
    "warm_layers",
]


@dataclass(frozen=True, eq=False)
class EieLayerRun:
    """Everything the kernels produced for one layer (before SimPy scheduling)."""

    layer: QuantizedMatVec
    encoded: EieEncoded
    fixed_point: EieFixedPoint
    cycles: int
    scanner_stalls: int
    per_pe: dict[str, np.ndarray]
    n_items: int
    n_groups: int
    output_q: np.ndarray  # int64 accumulator values (before ReLU)

    @property
    def output(self) -> np.ndarray:
        """Dequantised output after ReLU (float64)."""
        return np.maximum(self.output_q, 0) * 2.0**-self.fixed_point.out_frac


def functional_error_bound(run: EieLayerRun) -> np.ndarray:
    """Per-row bound on |fixed-point - float| (pre-ReLU): rounding of every product into the
    accumulator (1/2 LSB each) plus the quantisation of weights and activations."""
    lay, fp = run.layer, run.fixed_point
    lsb_o, lsb_w, lsb_a = 2.0**-fp.out_frac, 2.0**-fp.weight_frac, 2.0**-fp.act_frac
    # per live product: 0.5 lsb_o + 0.5 lsb_w a + 0.5 lsb_a w + 0.25 lsb_w lsb_a
    terms = (0.5 * lsb_w, 0.5 * lsb_o, 0.5 * lsb_a, 0.25 * lsb_w * lsb_a)
    bound = live_error_sums(_arrays(lay), lay.n_rows, terms)
    bias_w = np.abs(lay.codebook.astype(np.float64))[lay.bias_codes]
    return bound + (lay.bias_codes > 0) * (0.5 * lsb_o + 0.5 * lsb_w + 0.5 * lsb_a * bias_w)


def _arrays(layer: QuantizedMatVec) -> LayerArrays:
    return layer.indptr, layer.row_idx, layer.codes, layer.codebook, layer.activations


def _live_sums(layer: QuantizedMatVec) -> tuple[np.ndarray, np.ndarray]:
    """(``W x + b``, per-row ``sum |w||x| + |b|``) in float64: the functional check's float
    reference and the bound on every partial sum, from one compiled pass over the live
    weights; bit for bit ``layer.reference_output()`` and ``layer.abs_bound()`` (their NumPy
    twins, tests/unit/test_eie_live_sums.py)."""
    ref, absum = live_sums(_arrays(layer), layer.n_rows)
    cb = layer.codebook.astype(np.float64)
    return ref + cb[layer.bias_codes], absum + np.abs(cb)[layer.bias_codes]


def layer_sums(layer: QuantizedMatVec) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_live_sums` of ``layer``, computed once per layer object."""
    return layer.derived("eie_live_sums", _live_sums)


@dataclass(frozen=True, eq=False)
class EiePrepared:
    """What a layer needs before timing; independent of FIFO depth, line width and pipeline.

    It depends on the layer and on ``pe_array.num_pes``, ``encoding.relative_index_bits`` and the
    arithmetic widths only, so a sweep over the other fields reuses it (see ``archsim.memo``).
    """

    layer: QuantizedMatVec = field(metadata={"memo": "shared"})  # memoised on its own
    encoded: EieEncoded
    fixed_point: EieFixedPoint
    cols: np.ndarray  # broadcast items: column, LNZD group, lane (int64)
    groups: np.ndarray
    lanes: np.ndarray
    n_groups: int
    output_q: np.ndarray  # int64 accumulator values (before ReLU)
    counts: np.ndarray  # entries, real entries, empty columns per PE (eie_functional_counts)
    bypass_candidates: np.ndarray  # bool (items, PEs)
    # the timing kernels' pointer table: item k's column starts at row ``ptr_row[k]`` of
    # ``ptr_rows`` and ends at the next row. ``encoded.col_ptr`` and ``cols`` in a full
    # preparation; only the rows the broadcast columns use in a kept one (``_prepared_to_keep``)
    ptr_rows: np.ndarray  # int32 (rows, PEs); uint16 in a kept one where the pointers fit
    ptr_row: np.ndarray  # int64 (items)


def prepare_eie_layer(config: EieConfig, layer: QuantizedMatVec) -> EiePrepared:
    """Encode ``layer`` for ``config``, choose its fixed point and run the functional kernel."""
    return _prepare(config, layer, keep=False)


def _prepared_to_keep(
    config: EieConfig, layer: QuantizedMatVec, narrow: bool = True
) -> EiePrepared:
    """``prepare_eie_layer`` with only what timing and the memory fill read: what
    ``simulate_eie`` memoises. No per-entry arrays, and of the pointer table only the rows of
    the broadcast columns and of the next ones (adjacent, so ``ptr_row[k] + 1`` is item
    ``k``'s column end), which are all the kernels read; the whole table is never built
    (``encode_eie_rows``), in 16 bits where they fit. A sweep worker holds one PE count's
    nine layers this way: at 512 PEs 29 MB of pointers instead of 112 MB (the benchmark layers
    broadcast 18-100 % of their columns, and their pointers fit), and no entries (about 200
    MB); building one costs 40-60 MB less at its peak.

    ``narrow=False`` keeps the rows in 32 bits: for a preparation that is used once and not
    stored (a single run's synthetic layers), where 16 bits save nothing and a run whose
    layers have both widths would compile the timing kernel for each (0.4-0.6 s on a cold
    cache)."""
    return _prepare(config, layer, keep=True, narrow=narrow)


def _prepare(
    config: EieConfig, layer: QuantizedMatVec, keep: bool, narrow: bool = True
) -> EiePrepared:
    if layer.activations.size and float(layer.activations.min()) < 0:
        raise WorkloadError(
            f"layer {layer.name}: activation {float(layer.activations.min())} is negative; "
            + NEGATIVE_ACTIVATIONS
        )
    n = config.pe_array.num_pes
    bound = float(layer_sums(layer)[1].max(initial=0.0))
    fp = choose_fixed_point(
        layer.codebook,
        layer.activations,
        bound,
        layer.has_bias,
        config.arithmetic.data_bits,
        config.arithmetic.accumulator_bits,
    )
    cols, groups, lanes, vals, n_groups = broadcast_items(
        fp.act_q, layer.has_bias, fp.bias_act_q, n
    )
    shape = (layer.n_rows, layer.n_cols, layer.indptr, layer.row_idx, layer.codes)
    weights = (*shape, layer.bias_codes, n, config.encoding.relative_index_bits)
    if keep:
        rows = np.union1d(cols, cols + 1)  # sorted: c + 1 follows c
        enc, ptr_rows = encode_eie_rows(*weights, rows)
        ptr_row = np.searchsorted(rows, cols)
    else:
        enc = encode_eie(*weights)
        ptr_rows, ptr_row = enc.col_ptr, cols
    # the functional walk also counts what the timing does not depend on (it reads an
    # item's column only to index the pointer table)
    out, counts, cand = eie_functional_counts(
        ptr_row,
        vals,
        n,
        ptr_rows,
        enc.base,
        enc.local_row,
        enc.code,
        fp.codebook_q,
        fp.shift,
        config.arithmetic.accumulator_bits,
        layer.n_rows,
    )
    if keep:
        enc = enc.sizes_only()
        if narrow and ptr_rows.size and int(ptr_rows[-1].max()) <= np.iinfo(np.uint16).max:
            ptr_rows = ptr_rows.astype(np.uint16)  # 16-bit, as EIE's own pointers: half
    return EiePrepared(
        layer, enc, fp, cols, groups, lanes, int(n_groups), out, counts, cand, ptr_rows, ptr_row
    )


def _timing(config: EieConfig, prep: EiePrepared) -> tuple[int, int, np.ndarray]:
    cycles, stall, scheduled = eie_schedule(
        prep.ptr_row,  # the kernel reads an item's column only to index the pointer table
        prep.groups,
        prep.lanes,
        prep.n_groups,
        config.pe_array.num_pes,
        config.activation_fifo.depth,
        prep.ptr_rows,
        prep.bypass_candidates,
        config.entries_per_line,
        config.pipeline_stages - 1,
    )
    return cycles, stall, timing_per_pe(prep.counts, prep.cols.size, scheduled)


def time_eie_layer(
    config: EieConfig, prep: EiePrepared, memo_key: Hashable | None = None
) -> EieLayerRun:
    """Run the timing kernel on a prepared layer (FIFO depth, line width, pipeline depth).

    With ``memo_key`` (the key ``prep`` is memoised under) and ``archsim.memo`` on, the timing
    is memoised per (FIFO depth, pipeline depth) and the SpMat line reads, which depend on the
    line width only, are counted apart: a sweep over widths does not re-run the timing kernel.
    """
    if memo_key is None or not memo_enabled():
        cycles, stalls, per_pe = _timing(config, prep)
    else:
        depth, drain = config.activation_fifo.depth, config.pipeline_stages - 1
        timing_key = ("eie.timing", memo_key, depth, drain)
        cycles, stalls, per_pe = memoized(timing_key, partial(_timing, config, prep))
        per_line, ptrs = config.entries_per_line, prep.ptr_rows
        lines = memoized(
            ("eie.line_reads", memo_key, per_line),
            partial(eie_line_reads, prep.ptr_row, config.pe_array.num_pes, ptrs, per_line),
        )
        per_pe = per_pe.copy()  # the memoised array is shared
        per_pe[TIMING_FIELDS.index("line_reads")] = lines
    return EieLayerRun(
        layer=prep.layer,
        encoded=prep.encoded,
        fixed_point=prep.fixed_point,
        cycles=int(cycles),
        scanner_stalls=int(stalls),
        per_pe={name: per_pe[i] for i, name in enumerate(TIMING_FIELDS)},
        n_items=int(prep.cols.size),
        n_groups=prep.n_groups,
        output_q=prep.output_q,
    )


def run_eie_layer(config: EieConfig, layer: QuantizedMatVec) -> EieLayerRun:
    """Encode ``layer`` for ``config`` and run the timing and functional kernels."""
    return time_eie_layer(config, prepare_eie_layer(config, layer))


def _largest_error_bound(run: EieLayerRun) -> float:
    return float(functional_error_bound(run).max(initial=0.0))


def functional_errors(run: EieLayerRun, bound: float | None = None) -> tuple[float, float]:
    """(largest |fixed-point - float| output error, its bound), pre-ReLU.

    ``bound``: the largest of ``functional_error_bound(run)`` when already known; it depends on
    the layer and its fixed-point formats only, not on the PE count.
    """
    err = np.abs(run.output_q * 2.0**-run.fixed_point.out_frac - layer_sums(run.layer)[0])
    return float(err.max(initial=0.0)), _largest_error_bound(run) if bound is None else bound


def run_eie_reference(
    config: EieConfig, run: EieLayerRun, trace: bool = False
) -> EieReferenceResult:
    """Re-run an already encoded layer on the slow literal per-cycle twin (small layers only)."""
    fp, enc = run.fixed_point, run.encoded
    return eie_reference(
        padded_activations(fp.act_q, config.pe_array.num_pes),
        run.layer.has_bias,
        fp.bias_act_q,
        config.pe_array.num_pes,
        config.activation_fifo.depth,
        enc.ptr,
        enc.base,
        enc.code,
        enc.z,
        config.entries_per_line,
        config.pipeline_stages - 1,
        fp.codebook_q,
        fp.shift,
        config.arithmetic.accumulator_bits,
        run.layer.n_rows,
        trace=trace,
    )


def _capacity(config: EieConfig, run: EieLayerRun) -> tuple[dict[str, float], list[str]]:
    """Fill of the fullest PE's memories (1.0 = full) and warnings for overflows."""
    n = config.pe_array.num_pes
    enc, lay = run.encoded, run.layer
    bits = config.encoding.entry_bits
    spmat = float(enc.entries_per_pe.max(initial=0)) * bits / 8 / config.spmat_sram.size_bytes
    ptr_bytes = (enc.cols_padded + 2) * config.encoding.pointer_bits / 8
    ptr_fill = ptr_bytes / config.pointer_sram.size_bytes
    act_words = -(-lay.n_cols // n) + -(-lay.n_rows // n)
    act_fill = act_words * config.arithmetic.data_bits / 8 / config.activation_sram.size_bytes
    max_ptr_value = int(enc.entries_per_pe.max(initial=0))  # a PE's last pointer
    fills = {"eie_spmat_fill": spmat, "eie_pointer_fill": ptr_fill, "eie_activation_fill": act_fill}
    warnings = [
        f"layer {lay.name}: {key[4:-5]} memory needs {v:.2f}x its capacity"
        for key, v in fills.items()
        if v > 1.0
    ]
    if max_ptr_value >= 2**config.encoding.pointer_bits:
        warnings.append(
            f"layer {lay.name}: pointer value {max_ptr_value} exceeds "
            f"{config.encoding.pointer_bits}-bit pointers"
        )
    return fills, warnings


def _outcome(
    config: EieConfig,
    spec: FcLayer | LstmLayer,
    run: EieLayerRun,
    errors: tuple[float, float],
) -> LayerOutcome:
    n = config.pe_array.num_pes
    pp = run.per_pe
    entries, real = int(pp["entries"].sum()), int(pp["real"].sum())
    bypass = int(pp["bypasses"].sum())
    busy = pp["entries"] + pp["empty_columns"]
    pushes = run.n_items * n
    examined = run.n_groups * n
    counts = {
        "spmat_sram": {"read": int(pp["line_reads"].sum())},
        "pointer_sram": {"read": int(pp["pointer_reads"].sum())},
        "activation_sram": {"read": real - bypass, "write": real, "scan_read": examined},
        "arithmetic": {"mac": real},
        "activation_fifo": {"push": pushes, "pop": pushes},
        "lnzd": {"examine": examined},
    }
    fills, warnings = _capacity(config, run)
    extras: dict[str, Any] = {
        "eie_load_balance": float(busy.mean() / run.cycles) if run.cycles else 1.0,
        "eie_real_work": real / entries if entries else 1.0,
        "eie_ideal_cycles": -(-entries // n),
        "eie_padding_entries": entries - real,
        "eie_empty_column_cycles": int(pp["empty_columns"].sum()),
        "eie_spmat_line_reads": counts["spmat_sram"]["read"],
        "eie_pointer_reads": counts["pointer_sram"]["read"],
        "eie_bypasses": bypass,
        "eie_broadcast_stall_cycles": run.scanner_stalls,
        "eie_nonzero_activations": run.n_items,
        "eie_max_pe_busy_cycles": int(busy.max(initial=0)),
        "eie_functional_max_error": errors[0],
        "eie_functional_error_bound": errors[1],
        **fills,
    }
    if config.strict_capacity and warnings:
        raise SimulationError(warnings[0] + " (strict_capacity is on)")
    return LayerOutcome(
        layer=spec.name,
        kind=spec.kind,
        cycles=run.cycles,
        start_cycle=0,
        end_cycle=0,
        macs_dense=run.layer.n_rows * run.layer.n_cols,
        macs_effective=real,
        peak_macs_per_cycle=n,
        dram_bytes=0,
        counts=counts,
        extras=extras,
        warnings=tuple(warnings),
    )


def _layer_key(spec: FcLayer | LstmLayer, seed: int, base_dir: Path, cb: int) -> tuple:
    """Cache key of a built layer: its spec and codebook size, plus the seed (synthetic
    layers) or the folder and the names, sizes and modification times of its data files."""
    if spec.data is None:
        return ("eie.layer", spec.model_dump_json(), seed, cb)
    folder = (Path(base_dir) / spec.data).resolve()
    return ("eie.layer", spec.model_dump_json(), str(folder), data_signature(folder), cb)


def _layer(
    config: EieConfig, spec: FcLayer | LstmLayer, seed: int, base_dir: Path
) -> tuple[tuple, QuantizedMatVec]:
    """(cache key, layer): built, or from the memo (see ``simulate_eie``)."""
    cb = config.encoding.codebook_entries
    lkey = _layer_key(spec, seed, base_dir, cb)
    build = partial(materialize_matvec, spec, seed, base_dir, cb)
    return lkey, memoized(lkey, build, spec.data is not None, lasting=True)


def warm_layers(config: EieConfig, workload: WorkloadSpec, seed: int) -> None:
    """Build ``workload``'s layers into the memo (switched on) under the keys ``simulate_eie``
    looks them up by, two at a time (NumPy's generators and array operations release the
    GIL): what a sweep's fork server does before forking workers (``explore.warm``)."""
    specs = [s for s in workload.layers if isinstance(s, FcLayer | LstmLayer)]
    with ThreadPoolExecutor(max(1, min(2, os.cpu_count() or 1))) as pool:
        list(pool.map(lambda s: _layer(config, s, seed, workload.base_dir), specs))


class _LayerAhead:
    """Builds the next layer in a background thread while the caller builds or works on this
    one (NumPy's generators and array operations release the GIL, and so do the EIE kernels),
    and only a layer that is not already in the memo. Results are the same as built in order:
    each layer has its own generator (``materialize.layer_rng``)."""

    def __init__(self, config: EieConfig, seed: int, base_dir: Path) -> None:
        self.config, self.seed, self.base_dir = config, seed, base_dir
        self._pool: ThreadPoolExecutor | None = None
        self._jobs: dict[int, Future] = {}  # id(spec) -> its layer being built

    def start(self, spec: object) -> None:
        """Begin building ``spec``'s layer (nothing for another kind of layer or a memoised one)."""
        if not isinstance(spec, FcLayer | LstmLayer):
            return
        cb = self.config.encoding.codebook_entries
        if memo_holds(_layer_key(spec, self.seed, self.base_dir, cb)):
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="archsim-layer")
        job = self._pool.submit(_layer, self.config, spec, self.seed, self.base_dir)
        self._jobs[id(spec)] = job

    def get(self, spec: FcLayer | LstmLayer) -> tuple[tuple, QuantizedMatVec]:
        """(key, layer) of ``spec``: the one built ahead, or built now."""
        job = self._jobs.pop(id(spec), None)
        if job is not None:
            return job.result()
        return _layer(self.config, spec, self.seed, self.base_dir)

    def close(self) -> None:
        """Drop what was not asked for and stop the thread (waits for a layer in progress)."""
        self._jobs.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _simulate_layers(
    config: EieConfig,
    workload: WorkloadSpec,
    ahead: _LayerAhead,
    outcomes: list[LayerOutcome],
    io_bytes: list[tuple[int, int]],
) -> None:
    """``simulate_eie``'s kernels, layer by layer (the next layer built ahead), appending
    each layer's outcome and its (input, output) bytes."""
    word = config.arithmetic.data_bits // 8 or 1
    layers = workload.layers
    for i, spec in enumerate(layers):  # walked once, in order: it reports progress
        if not isinstance(spec, FcLayer | LstmLayer):
            raise SimulationError(
                f"EIE runs fc and lstm layers; layer {spec.name!r} is {spec.kind!r}"
            )
        # memoised per process when archsim.memo is on (sweeps): the layer depends on
        # (spec, seed or data files, codebook size) only, its preparation on a few hardware
        # fields. A layer read from data files is also kept while the memo is off (keep):
        # reading and encoding it is most of a call, and it is small; keeping the larger
        # synthetic layers of a network made single runs slower (fresh pages for each).
        # The timing kernel runs on every call.
        keep = spec.data is not None
        if i + 1 < len(layers):
            ahead.start(layers[i + 1])  # built while this one is built and simulated
        lkey, layer = ahead.get(spec)
        widths = (config.arithmetic.data_bits, config.arithmetic.accumulator_bits)
        pkey = (lkey, config.pe_array.num_pes, config.encoding.relative_index_bits, *widths)
        # stored (memo on, or a kept layer): 16-bit pointer rows where they fit; else 32-bit
        stored = keep or memo_enabled()
        prepare = partial(_prepared_to_keep, config, layer, stored)
        prep = memoized(("eie.prepared", pkey), prepare, keep)
        run = time_eie_layer(config, prep, ("eie.prepared", pkey))
        # the bound depends on the layer and its fixed-point formats, not on the PE count
        bkey = ("eie.error_bound", lkey, *widths)
        bound = memoized(bkey, partial(_largest_error_bound, run), keep, lasting=True)
        errors = memoized(("eie.errors", pkey), partial(functional_errors, run, bound), keep)
        outcomes.append(_outcome(config, spec, run, errors))
        io_bytes.append((layer.n_cols * word, layer.n_rows * word))
        del layer, prep, run  # two layers alive at most: this one's successor is being built


def simulate_eie(
    config: EieConfig, workload: WorkloadSpec, seed: int
) -> tuple[list[LayerOutcome], SimContext]:
    """Run every layer's kernels, then schedule loads, compute and write-backs in SimPy."""
    outcomes: list[LayerOutcome] = []
    io_bytes: list[tuple[int, int]] = []
    ahead = _LayerAhead(config, seed, workload.base_dir)
    try:
        _simulate_layers(config, workload, ahead, outcomes, io_bytes)
    finally:
        ahead.close()
    ctx = SimContext(config.clock.frequency_hz)
    dram = Dram(ctx, config.dram.bandwidth_bytes_per_s, config.dram.latency_s)
    srams = {name: Sram(ctx, name) for name in ("spmat_sram", "pointer_sram", "activation_sram")}

    def record(i: int) -> None:  # on-chip actions of layer i, as its compute phase ends
        for name, sram in srams.items():
            acts = outcomes[i].counts[name]
            sram.read(acts.get("read", 0) + acts.get("scan_read", 0))
            sram.write(acts.get("write", 0))

    spans = double_buffered_pipeline(ctx, dram, [o.cycles for o in outcomes], io_bytes, record)
    return [
        replace(
            o,
            start_cycle=start,
            end_cycle=end,
            dram_bytes=rd + wr,
            counts={**o.counts, "dram": {"read_bytes": rd, "write_bytes": wr}},
        )
        for o, (start, end), (rd, wr) in zip(outcomes, spans, io_bytes, strict=True)
    ], ctx
