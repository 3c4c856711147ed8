"""DCNN and DCNN-opt (Parashar et al., ISCA 2017, Table 5): SCNN's dense baseline.

Compute: the PT-IS-DP-dense dataflow of ``archsim.datapath.dcnn_kernels`` (module docstring
there): per (image, conv group) *phase* the output plane is tiled over the PE grid, every PE's
F x I multiplier array does F output channels x an I-wide input-channel dot product per cycle,
loop order (output-channel block, position, tap, input-channel block); phase cycles =
``Pmax * R * S * ceil(Kg/F) * ceil(Cg/I) + 2``. DCNN-opt (``optimized``) has the same cycles;
its multipliers are gated when an operand is zero (``gated`` instead of ``multiply``) and its
DRAM traffic is compressed: ``ceil(non-zeros * (data_bits + index_bits) / 8)`` bytes, or dense
when that is smaller.

Memory (SimPy, one DRAM channel shared by reads and writes):

* A layer *fits* when its dense weights + input + output activations (all images, 2 bytes per
  value) fit the SRAM. It then runs as one DRAM tile per phase: the group's weights are read
  with the first image, the phase's input is read, the output written. The input is not read
  (it is the previous layer's output, still on chip) when this layer and the previous layer
  both fit and it is not the first layer; likewise the output is not written when this layer
  and the next both fit (the next reads it from the SRAM), as SCNN keeps such outputs.
* Otherwise the layer *streams* in DRAM tiles: every PE's output rows are cut into chunks of
  ``rh`` local rows (spatial chunks, the same for all PEs) and the output-channel blocks into
  chunks of ``kc`` blocks (channel chunks); per phase, for each spatial chunk, for each channel
  chunk, one tile reads its weight slice (``kc*F`` filters) and its input slice (the input rows
  and columns its outputs touch, halos included) and writes its output slice: weights are
  re-read for every spatial chunk and inputs for every channel chunk. ``(rh, kc)`` minimises
  dense DRAM bytes subject to two tiles (double buffering) fitting the SRAM, fewest tiles on a
  tie; the same plan is used by DCNN-opt. Tile compute cycles are the schedule restricted to the
  tile (they sum exactly to the phase's); the 2 fill/drain cycles go on a phase's last tile.
* Tiles of all layers form one double-buffered pipeline (``engine.double_buffered_pipeline``):
  load of tile i+1 overlaps compute of tile i; write-backs overlap later tiles. A layer's span
  runs from the end of the previous layer to the end of its last tile's compute (the last
  layer also waits for its write-backs), so ``cycles`` = max(compute, DRAM) per tile along the
  timeline; ``dcnn_compute_cycles`` is the datapath alone.

SRAM counts are datapath accesses (weight broadcasts, activation reads, output writes) in
``width_bits`` lines; DRAM fills of the SRAM are counted as DRAM bytes only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from archsim.accelerators.base import LayerOutcome
from archsim.config.scnn import DcnnConfig
from archsim.config.workload import ConvLayer, WorkloadSpec
from archsim.datapath.dcnn_kernels import (
    DCNN_FIELDS,
    FILL_DRAIN_CYCLES,
    DcnnFixedPoint,
    choose_dcnn_fixed_point,
    dcnn_phase,
    dcnn_schedule,
    pe_extents,
)
from archsim.datapath.dcnn_reference import DcnnReferenceResult, dcnn_reference
from archsim.engine.context import Dram, SimContext, Sram
from archsim.engine.pipeline import double_buffered_pipeline
from archsim.errors import SimulationError
from archsim.workload.conv import SparseConv, materialize_conv, reference_conv

__all__ = [
    "DcnnLayerRun",
    "DcnnTilePlan",
    "plan_dcnn_tiles",
    "run_dcnn_layer",
    "run_dcnn_reference",
    "simulate_dcnn",
]


@dataclass(frozen=True, eq=False)
class DcnnLayerRun:
    """Kernel results of one layer (all phases), before DRAM scheduling."""

    layer: SparseConv
    fixed_point: DcnnFixedPoint
    stats: dict[str, int]  # DCNN_FIELDS summed over phases
    phase_cycles: int  # cycles of one phase (fill/drain included)
    output_q: np.ndarray  # int64 (n, k, out_h, out_w) accumulator values, before ReLU
    i_vec: int  # I, activations per multiplier row (accumulation steps per tap)

    @property
    def output(self) -> np.ndarray:
        """Dequantised output before ReLU (float64)."""
        return self.output_q * 2.0**-self.fixed_point.out_frac

    def error_bound(self) -> float:
        """Bound on |fixed point - float| of any output (value units): 1/2 LSB per accumulation
        step plus the quantisation of every term, ``lsb_w/2 |a| + lsb_a/2 |w| + lsb_w lsb_a/4``."""
        fp, lay = self.fixed_point, self.layer
        cg = lay.c // lay.groups
        steps = lay.r * lay.s * -(-cg // self.i_vec)
        lsb_o, lsb_w, lsb_a = (2.0**-x for x in (fp.out_frac, fp.weight_frac, fp.act_frac))
        amax = float(np.max(lay.activations, initial=0.0))
        wmax = float(np.max(np.abs(lay.weights), initial=0.0))
        terms = cg * lay.r * lay.s
        per_term = 0.5 * lsb_w * amax + 0.5 * lsb_a * wmax + 0.25 * lsb_w * lsb_a
        return (0.5 * lsb_o if fp.shift > 0 else 0.0) * steps + terms * per_term


def run_dcnn_layer(config: DcnnConfig, layer: SparseConv) -> DcnnLayerRun:
    """Choose Q formats for ``layer`` and run the fast model on every (image, group) phase."""
    ar, mul = config.arithmetic, config.multipliers
    f, i_vec = mul.weights_per_cycle, mul.activations_per_cycle
    fp = choose_dcnn_fixed_point(
        layer.weights,
        layer.activations,
        layer.stride,
        layer.pad,
        layer.groups,
        ar.data_bits,
        ar.accumulator_bits,
        i_vec,
    )
    cg, kg = layer.c // layer.groups, layer.k // layer.groups
    out = np.zeros((layer.n, layer.k, layer.out_h, layer.out_w), dtype=np.int64)
    totals = dict.fromkeys(DCNN_FIELDS, 0)
    phase_cycles = 0
    for b in range(layer.n):
        for g in range(layer.groups):
            stats, o = dcnn_phase(
                fp.acts_q[b, g * cg : (g + 1) * cg],
                fp.weights_q[g * kg : (g + 1) * kg],
                layer.stride,
                layer.pad,
                config.pe_grid.rows,
                config.pe_grid.cols,
                f,
                i_vec,
                fp.shift,
                ar.accumulator_bits,
                ar.data_bits,
                config.sram.width_bits,
            )
            out[b, g * kg : (g + 1) * kg] = o
            for key in DCNN_FIELDS:
                totals[key] += stats[key]
            phase_cycles = stats["cycles"]
    return DcnnLayerRun(layer, fp, totals, phase_cycles, out, i_vec)


def run_dcnn_reference(config: DcnnConfig, run: DcnnLayerRun) -> DcnnReferenceResult:
    """Re-run every phase of ``run`` on the slow per-cycle twin (small layers only); summed."""
    lay, fp, ar = run.layer, run.fixed_point, config.arithmetic
    cg, kg = lay.c // lay.groups, lay.k // lay.groups
    out = np.zeros_like(run.output_q)
    sums = dict.fromkeys(DCNN_FIELDS, 0)
    for b in range(lay.n):
        for g in range(lay.groups):
            ref = dcnn_reference(
                fp.acts_q[b, g * cg : (g + 1) * cg],
                fp.weights_q[g * kg : (g + 1) * kg],
                lay.stride,
                lay.pad,
                config.pe_grid.rows,
                config.pe_grid.cols,
                config.multipliers.weights_per_cycle,
                config.multipliers.activations_per_cycle,
                fp.shift,
                ar.accumulator_bits,
                ar.data_bits,
                config.sram.width_bits,
            )
            out[b, g * kg : (g + 1) * kg] = ref.output
            for key in DCNN_FIELDS:
                sums[key] += getattr(ref, key)
    return DcnnReferenceResult(**sums, output=out)


@dataclass(frozen=True)
class DcnnTilePlan:
    """How one conv layer uses the SRAM (sizes in bytes, dense 2-byte values)."""

    fits: bool
    footprint_bytes: int  # whole layer: weights + input + output, all images
    rows_per_chunk: int  # rh: local output rows of every PE per spatial chunk
    blocks_per_chunk: int  # kc: output-channel blocks (of F filters) per channel chunk
    spatial_chunks: int
    channel_chunks: int
    tile_bytes: int  # largest single tile (weights + input + output slices)
    in_rows: tuple[tuple[int, ...], ...]  # per spatial chunk: input rows it reads
    in_cols: tuple[int, ...]  # input columns any output touches
    out_rows: tuple[tuple[int, ...], ...]  # per spatial chunk: output rows it produces


def _chunk_rows(spec: ConvLayer, th: int, lo: int, hi: int) -> tuple[list[int], list[int]]:
    """Output rows of local rows [lo, hi) over all PE rows, and the input rows they touch."""
    outs = [
        oy for y0 in range(0, spec.out_h, th) for oy in range(y0 + lo, min(y0 + hi, spec.out_h))
    ]
    ins: set[int] = set()
    for oy in outs:
        base = oy * spec.stride - spec.pad
        ins.update(range(max(0, base), min(spec.h, base + spec.r)))
    return outs, sorted(ins)


def _window_prefix(spec: ConvLayer) -> list[int]:
    """``[sum of the clipped input-row windows of output rows < i]`` for i in 0..out_h (a
    window: the ``r`` input rows one output row reads, cut to the image)."""
    oy = np.arange(spec.out_h, dtype=np.int64) * spec.stride - spec.pad
    clipped = np.clip(np.minimum(spec.h, oy + spec.r) - np.maximum(0, oy), 0, None)
    return [0, *np.cumsum(clipped).tolist()]


def _chunk_counts(spec: ConvLayer, th: int, lo: int, hi: int, prefix: list[int]) -> tuple[int, int]:
    """``len`` of the two lists :func:`_chunk_rows` gives, without building them: one block
    of output rows per PE row; input rows from each block's window union (one interval when
    windows overlap, stride <= r; else disjoint windows, summed from ``prefix``)."""
    s, r, pad, h = spec.stride, spec.r, spec.pad, spec.h
    n_out = n_in = 0
    end = 0  # input rows below ``end`` are counted (the blocks rise)
    for y0 in range(0, spec.out_h, th):
        a, b = y0 + lo, min(y0 + hi, spec.out_h)
        if a >= b:
            continue
        n_out += b - a
        if s <= r:
            i0, i1 = max(0, a * s - pad, end), min(h, (b - 1) * s - pad + r)
            if i1 > i0:
                n_in, end = n_in + i1 - i0, i1
        else:
            n_in += prefix[b] - prefix[a]
    return n_out, n_in


def plan_dcnn_tiles(config: DcnnConfig, spec: ConvLayer) -> DcnnTilePlan:
    """The SRAM plan of ``spec`` (rule in the module docstring); geometry only, no data."""
    byte = config.arithmetic.data_bits / 8
    f = config.multipliers.weights_per_cycle
    cg, kg = spec.c // spec.groups, spec.k // spec.groups
    th, _ = pe_extents(spec.out_h, config.pe_grid.rows)
    n_kb = -(-kg // f)
    cols = sorted(
        {
            x
            for ox in range(spec.out_w)
            for x in range(ox * spec.stride - spec.pad, ox * spec.stride - spec.pad + spec.s)
            if 0 <= x < spec.w
        }
    )
    size = config.sram.size_bytes
    w_all, i_all = spec.k * cg * spec.r * spec.s, spec.n * spec.c * spec.h * spec.w
    footprint = int((w_all + i_all + spec.n * spec.k * spec.out_h * spec.out_w) * byte)
    whole_o, whole_i = _chunk_rows(spec, th, 0, th)
    if footprint <= size:
        return DcnnTilePlan(
            True, footprint, th, n_kb, 1, 1, footprint, (tuple(whole_i),), tuple(cols),
            (tuple(whole_o),),
        )  # fmt: skip
    per_filter = cg * spec.r * spec.s * byte
    best: tuple[tuple[int, float, int], float, int, int] | None = None
    prefix = _window_prefix(spec)
    for rh in range(1, th + 1):  # counts only: the lists of the chosen rh are built below
        counts = [_chunk_counts(spec, th, lo, min(th, lo + rh), prefix) for lo in range(0, th, rh)]
        ns = len(counts)
        in_b = [n_in * len(cols) * cg * byte for _, n_in in counts]
        in_max, in_sum = max(in_b), sum(in_b)
        out_rows_max = max(n_out for n_out, _ in counts)
        for kc in range(1, n_kb + 1):
            nk = -(-n_kb // kc)
            filt = min(kc * f, kg)
            tile = filt * per_filter + in_max + out_rows_max * spec.out_w * filt * byte
            traffic = ns * kg * per_filter + nk * in_sum
            # feasible plans by traffic, then fewest tiles; if none fits, the smallest tile
            key = (0, traffic, ns * nk) if 2 * tile <= size else (1, tile, ns * nk)
            if best is None or key < best[0]:
                best = (key, tile, rh, kc)
    assert best is not None
    _, tile, rh, kc = best
    ch = [_chunk_rows(spec, th, lo, min(th, lo + rh)) for lo in range(0, th, rh)]
    return DcnnTilePlan(
        False,
        footprint,
        rh,
        kc,
        len(ch),
        -(-n_kb // kc),
        int(tile),
        tuple(tuple(i) for _, i in ch),
        tuple(cols),
        tuple(tuple(o) for o, _ in ch),
    )


def _nbytes(values: np.ndarray, config: DcnnConfig) -> int:
    """DRAM bytes of ``values``: dense, or in DCNN-opt the smaller of dense and compressed
    (non-zeros with an index; a dense tensor such as an input image is sent dense)."""
    bits = config.arithmetic.data_bits
    dense = -(-values.size * bits // 8)
    if config.optimized:
        return min(dense, -(-int(np.count_nonzero(values)) * (bits + config.index_bits) // 8))
    return dense


def _tiles(
    config: DcnnConfig,
    spec: ConvLayer,
    run: DcnnLayerRun,
    plan: DcnnTilePlan,
    input_on_chip: bool,
    output_on_chip: bool = False,
) -> tuple[list[int], list[tuple[int, int]]]:
    """Compute cycles and (read, write) DRAM bytes of every tile of the layer, in order;
    ``output_on_chip``: the next layer reads the output from the SRAM, so it is not written."""
    lay, fp, f = run.layer, run.fixed_point, config.multipliers.weights_per_cycle
    cg, kg = lay.c // lay.groups, lay.k // lay.groups
    th, _ = pe_extents(lay.out_h, config.pe_grid.rows)
    n_kb = -(-kg // f)
    relu = np.maximum(run.output_q, 0)
    cols = list(plan.in_cols)
    cycles: list[int] = []
    io: list[tuple[int, int]] = []
    for b in range(lay.n):
        for g in range(lay.groups):
            w_g = fp.weights_q[g * kg : (g + 1) * kg]
            a_g = fp.acts_q[b, g * cg : (g + 1) * cg]
            o_g = relu[b, g * kg : (g + 1) * kg]
            for j in range(plan.spatial_chunks):
                lo, hi = j * plan.rows_per_chunk, min(th, (j + 1) * plan.rows_per_chunk)
                in_slice = a_g[:, list(plan.in_rows[j])][:, :, cols]
                in_bytes = 0 if input_on_chip else _nbytes(in_slice, config)
                for t in range(plan.channel_chunks):
                    kb0, kb1 = t * plan.blocks_per_chunk, min(n_kb, (t + 1) * plan.blocks_per_chunk)
                    k0, k1 = kb0 * f, min(kg, kb1 * f)
                    sched = dcnn_schedule(
                        lay.h, lay.w, lay.r, lay.s, lay.stride, lay.pad, kg, cg,
                        config.pe_grid.rows, config.pe_grid.cols, f,
                        config.multipliers.activations_per_cycle,
                        local_rows=(lo, hi), channel_blocks=(kb0, kb1),
                    )["sched_cycles"]  # fmt: skip
                    last = j == plan.spatial_chunks - 1 and t == plan.channel_chunks - 1
                    cycles.append(sched + (FILL_DRAIN_CYCLES if last else 0))
                    w_bytes = _nbytes(w_g[k0:k1], config) if (not plan.fits or b == 0) else 0
                    out_slice = o_g[k0:k1][:, list(plan.out_rows[j])]
                    out_bytes = 0 if output_on_chip else _nbytes(out_slice, config)
                    io.append((w_bytes + in_bytes, out_bytes))
    return cycles, io


def _outcome(
    config: DcnnConfig,
    spec: ConvLayer,
    run: DcnnLayerRun,
    plan: DcnnTilePlan,
    on_chip: bool,
    output_on_chip: bool = False,
) -> tuple[LayerOutcome, list[int], list[tuple[int, int]]]:
    st = run.stats
    cycles, io = _tiles(config, spec, run, plan, on_chip, output_on_chip)
    if sum(cycles) != st["cycles"]:  # pragma: no cover - invariant of the tiling
        raise SimulationError(f"layer {spec.name}: DRAM tiles do not cover the phase schedule")
    if config.optimized:
        mult = {"multiply": st["useful_macs"], "gated": st["zero_macs"]}
    else:
        mult = {"multiply": st["multiplies"], "gated": 0}
    counts = {
        "multipliers": mult,
        "sram": {"read": st["weight_reads"] + st["activation_reads"], "write": st["output_writes"]},
        "accumulator": {"update": st["accumulator_updates"]},
    }
    err = np.abs(run.output - reference_conv(run.layer))
    warnings: list[str] = []
    if not plan.fits and 2 * plan.tile_bytes > config.sram.size_bytes:
        warnings.append(
            f"layer {spec.name}: the smallest DRAM tile needs {plan.tile_bytes} bytes, double "
            f"buffered more than the {config.sram.size_bytes}-byte SRAM"
        )
    extras: dict[str, Any] = {
        "dcnn_compute_cycles": st["cycles"],
        "dcnn_fragmentation": 1.0 - st["multiplies"] / st["slots"] if st["slots"] else 0.0,
        "dcnn_tiles": len(cycles),
        "dcnn_sram_fill": plan.footprint_bytes / config.sram.size_bytes,
        "dcnn_streamed": not plan.fits,
        "dcnn_spatial_chunks": plan.spatial_chunks,
        "dcnn_channel_chunks": plan.channel_chunks,
        "dcnn_input_on_chip": on_chip,
        "dcnn_output_on_chip": output_on_chip,
        "dcnn_phase_cycles": run.phase_cycles,
        "dcnn_weight_sram_reads": st["weight_reads"],
        "dcnn_activation_sram_reads": st["activation_reads"],
        "dcnn_zero_operand_macs": st["zero_macs"],
        "dcnn_functional_max_error": float(err.max(initial=0.0)),
        "dcnn_functional_error_bound": run.error_bound(),
    }
    outcome = LayerOutcome(
        layer=spec.name,
        kind=spec.kind,
        cycles=st["cycles"],
        start_cycle=0,
        end_cycle=0,
        macs_dense=spec.macs_dense,
        macs_effective=st["useful_macs"],
        peak_macs_per_cycle=config.peak_macs_per_cycle,
        dram_bytes=0,
        counts=counts,
        extras=extras,
        warnings=tuple(warnings),
    )
    return outcome, cycles, io


def simulate_dcnn(
    config: DcnnConfig, workload: WorkloadSpec, seed: int
) -> tuple[list[LayerOutcome], SimContext]:
    """Run every conv layer's kernels, then its DRAM tiles through one SimPy pipeline."""
    outcomes: list[LayerOutcome] = []
    tile_cycles: list[int] = []
    tile_io: list[tuple[int, int]] = []
    owner: list[int] = []
    prev_fits = False
    for spec in workload.layers:
        if not isinstance(spec, ConvLayer):
            raise SimulationError(f"DCNN runs conv layers; layer {spec.name!r} is {spec.kind!r}")
    plans = [plan_dcnn_tiles(config, spec) for spec in workload.layers]
    for idx, spec in enumerate(workload.layers):
        run = run_dcnn_layer(config, materialize_conv(spec, seed, workload.base_dir))
        plan = plans[idx]
        on_chip = idx > 0 and plan.fits and prev_fits
        # the next layer takes this output from the SRAM (its on_chip): no write-back
        kept = plan.fits and idx + 1 < len(plans) and plans[idx + 1].fits
        outcome, cycles, io = _outcome(config, spec, run, plan, on_chip, kept)
        outcomes.append(outcome)
        tile_cycles += cycles
        tile_io += io
        owner += [idx] * len(cycles)
        prev_fits = plan.fits
    ctx = SimContext(config.clock.frequency_hz)
    dram = Dram(ctx, config.dram.bandwidth_bytes_per_s, config.dram.latency_s)
    sram = Sram(ctx, "sram")
    last_tile = {owner[i]: i for i in range(len(owner))}

    def record(i: int) -> None:
        layer = owner[i]
        if last_tile[layer] != i:
            return
        counts = outcomes[layer].counts
        sram.read(counts["sram"]["read"])
        sram.write(counts["sram"]["write"])
        for comp in ("multipliers", "accumulator"):
            for action, n in counts[comp].items():
                ctx.counters.add(comp, action, n)

    per_layer_io = [[0, 0] for _ in outcomes]
    for i, (rd, wr) in zip(owner, tile_io, strict=True):
        per_layer_io[i][0] += rd
        per_layer_io[i][1] += wr
    spans = double_buffered_pipeline(ctx, dram, tile_cycles, tile_io, on_compute=record)
    result: list[LayerOutcome] = []
    start = 0
    for idx, o in enumerate(outcomes):
        end = spans[last_tile[idx]][1]
        if idx == len(outcomes) - 1:
            end = int(ctx.env.now)  # the run ends when the last write-back lands
        rd, wr = per_layer_io[idx]
        extras = {**o.extras, "dcnn_dram_stall_cycles": end - start - o.cycles}
        result.append(
            replace(
                o,
                cycles=end - start,
                start_cycle=start,
                end_cycle=end,
                dram_bytes=rd + wr,
                counts={**o.counts, "dram": {"read_bytes": rd, "write_bytes": wr}},
                extras=extras,
            )
        )
        start = end
    return result, ctx
