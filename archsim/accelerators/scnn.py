"""SCNN (PT-IS-CP-sparse): super-tiling, Kc choice, kernel runs per group, SimPy DRAM overlap.

Per layer, image and conv group the input plane is split into ``T = tx x ty`` super-tiles (1 when
it fits) processed one after another; each super-tile is tiled in the plane over the PE grid.
Rules (all from the configured capacities):

* Compressed streams carry placeholder zeros for zero runs longer than ``index_bits`` can
  express; they occupy multiplier slots and deliver no product.
* Kc = min(K per conv group, ``max_output_channels_per_group``, accumulator entries // (WW*WH))
  where WW x WH is the largest output window of a PE's tile.
* The plane is super-tiled (tx, ty grow, the wider side first) until Kc >= 1, every PE's
  compressed input tile fits IARAM, and its compressed output estimate fits OARAM (outputs x
  this layer's activation density x (data + index) bits; the real output fill is reported).
* Within a super-tile, output-channel groups run back to back with a barrier; with a double-
  buffered accumulator the drain of group g (window entries / A per cycle) overlaps group g+1.
* The weight FIFO holds a (group, channel)'s weight vectors when they fit; otherwise they are
  re-streamed for every activation vector (``scnn_weight_refills``), at one entry per cycle.
* DRAM (SimPy, double-buffered): a super-tile loads its compressed inputs (unless the whole
  layer fits on chip and is not the first layer) and the layer's compressed weights, and writes
  its compressed outputs (unless the layer fits and is not the last).
"""

from __future__ import annotations

import math

import numpy as np

from archsim.accelerators.base import LayerOutcome
from archsim.accelerators.scnn_fc import run_scnn_matvec
from archsim.accelerators.scnn_run import ScnnConvRun, rounded_to_zero
from archsim.config.scnn import ScnnConfig
from archsim.config.workload import ConvLayer, FcLayer, LstmLayer, WorkloadSpec
from archsim.datapath.fixed_point import frac_bits_for, quantize
from archsim.datapath.scnn_kernels import scnn_layer
from archsim.datapath.scnn_prepare import compress_activations, compress_weights, scnn_tiling
from archsim.engine.context import Dram, SimContext
from archsim.engine.pipeline import double_buffered_pipeline
from archsim.errors import SimulationError
from archsim.workload.conv import SparseConv, materialize_conv
from archsim.workload.matvec import materialize_matvec

__all__ = ["simulate_scnn", "run_scnn_conv", "ScnnConvRun"]


def _fixed_point(conv: SparseConv, data_bits: int, acc_bits: int) -> tuple[int, int, int]:
    """(weight_frac, act_frac, out_frac): no accumulator overflow for any partial sum."""
    w_abs = np.abs(conv.weights)
    wmax = float(np.max(w_abs, initial=0.0))
    amax = float(np.max(conv.activations, initial=0.0))
    wf = frac_bits_for(wmax, data_bits)
    af = frac_bits_for(amax, data_bits)
    with np.errstate(over="ignore"):  # an overflow is caught below
        per_k = w_abs.reshape(conv.k, -1).sum(axis=1)
    bound = amax * float(per_k.max(initial=0.0))
    if not math.isfinite(bound):  # float32 sums of values near 3e38 (real data): in float64
        per_k = w_abs.reshape(conv.k, -1).sum(axis=1, dtype=np.float64)
        bound = amax * float(per_k.max(initial=0.0))
    return wf, af, frac_bits_for(bound, acc_bits)


def _regions(w: int, h: int, tx: int, ty: int):
    """The (x_lo, x_hi, y_lo, y_hi) super-tile regions of a w x h plane split tx x ty."""
    rw, rh = -(-w // tx), -(-h // ty)
    for sy in range(ty):
        for sx in range(tx):
            x_lo, y_lo = sx * rw, sy * rh
            if x_lo < w and y_lo < h:
                yield x_lo, min(w, x_lo + rw), y_lo, min(h, y_lo + rh)


def _plan(cfg: ScnnConfig, conv: SparseConv, act_q: np.ndarray, density: float):
    """Choose (tx, ty, kc) for one conv group's plane (see the module rules).

    Every super-tile region is checked: interior regions have unclipped (larger) windows.
    """
    grid = cfg.pe_grid
    kg = conv.k // conv.groups
    word_bits = cfg.arithmetic.data_bits + cfg.index_bits
    nz = (act_q != 0).sum(axis=0)  # non-zeros per pixel over channels: once, not per try
    tx = ty = 1
    # a tile holds at least one pixel and one output position: when even those overflow IARAM
    # or OARAM no super-tiling fits, so go straight to the 1x1 tiles (the same error, without
    # trying every split on the way: a 10-byte OARAM took minutes on AlexNet)
    pixel_in = int(nz.max(initial=0)) * word_bits / 8 > cfg.iaram.size_bytes
    if pixel_in or kg * density * word_bits / 8 > cfg.oaram.size_bytes:
        tx, ty = max(conv.w, 1), max(conv.h, 1)
    while True:
        rw, rh = -(-conv.w // tx), -(-conv.h // ty)
        window = tile_w = tile_h = 1
        for region in _regions(conv.w, conv.h, tx, ty):
            tl = scnn_tiling(
                conv.w,
                conv.h,
                conv.r,
                conv.s,
                conv.stride,
                conv.pad,
                grid.cols,
                grid.rows,
                region=region,
            )
            window = max(window, tl.win_w * tl.win_h)
            tile_w, tile_h = max(tile_w, tl.tile_w), max(tile_h, tl.tile_h)
        kc = min(kg, cfg.max_output_channels_per_group, cfg.accumulator.entries // window)
        tile_nnz = _max_tile_nnz(nz, tile_w, tile_h)
        in_ok = tile_nnz * word_bits / 8 <= cfg.iaram.size_bytes
        out_pos = -(-tl.out_w // (grid.cols * tx)) * -(-tl.out_h // (grid.rows * ty))
        out_ok = out_pos * kg * density * word_bits / 8 <= cfg.oaram.size_bytes
        if kc >= 1 and in_ok and out_ok:
            return tx, ty, kc
        if rw <= 1 and rh <= 1:
            raise SimulationError(
                f"layer {conv.name!r}: a 1x1 input tile still does not fit (Kc={kc}, IARAM "
                f"{'ok' if in_ok else 'overflow'}, OARAM {'ok' if out_ok else 'overflow'}); "
                "allowed: larger accumulator/IARAM/OARAM"
            )
        if (rw >= rh and rw > 1) or rh <= 1:
            tx += 1
        else:
            ty += 1


def _one_pixel_window(cfg: ScnnConfig, conv: SparseConv) -> int:
    """Most output positions one input pixel reaches: the window of a 1x1 tile, the least any
    super-tiling gives (``_plan`` takes the largest over its regions). Interior pixels of one
    stride period cover every phase (at stride s a pixel reaches floor or ceil(r / s) rows)."""
    w0, h0 = conv.w // 2, conv.h // 2
    xs = range(w0, min(conv.w, w0 + conv.stride))
    ys = range(h0, min(conv.h, h0 + conv.stride))
    most = 1
    shape = (conv.w, conv.h, conv.r, conv.s, conv.stride, conv.pad, cfg.pe_grid.cols)
    for y in ys:
        for x in xs:
            tl = scnn_tiling(*shape, cfg.pe_grid.rows, region=(x, x + 1, y, y + 1))
            most = max(most, tl.win_w * tl.win_h)
    return most


def _check_window_fits(cfg: ScnnConfig, conv: SparseConv) -> None:
    """Refuse a layer one input pixel of which reaches more output positions than the
    accumulator holds: no super-tiling fits, and trying them all took hours on a 500 x 500
    plane with a 50 x 50 filter."""
    window = _one_pixel_window(cfg, conv)
    if window > cfg.accumulator.entries:
        raise SimulationError(
            f"layer {conv.name!r}: one input pixel of its {conv.r}x{conv.s} filter at stride "
            f"{conv.stride} reaches {window} output positions, more than the accumulator's "
            f"{cfg.accumulator.entries} entries, so no tiling fits; allowed: a filter window "
            "within the accumulator, or a larger accumulator (accumulator.banks x "
            "entries_per_bank)"
        )


def _max_tile_nnz(nz: np.ndarray, tw: int, th: int) -> int:
    """Most non-zeros any tw x th tile holds, from the per-pixel counts ``nz`` (h, w)."""
    h, w = nz.shape
    ph, pw = -(-h // th) * th, -(-w // tw) * tw
    padded = np.zeros((ph, pw), dtype=np.int64)
    padded[:h, :w] = nz
    return int(padded.reshape(ph // th, th, pw // tw, tw).sum(axis=(1, 3)).max(initial=0))


def _group_time(phase: np.ndarray, drains: list[int], double_buffered: bool) -> int:
    """Barrier per group; the accumulator drain overlaps the next group when double-buffered."""
    compute = [int(c) for c in phase.max(axis=1)]
    if not double_buffered:
        return sum(c + d for c, d in zip(compute, drains, strict=True))
    total, prev_drain = 0, 0
    for c, d in zip(compute, drains, strict=True):
        total += max(c, prev_drain)
        prev_drain = d
    return total + prev_drain


def _phase_split(
    wq: np.ndarray, aq: np.ndarray, stride: int, pad: int
) -> tuple[np.ndarray, np.ndarray]:
    """Stride-phase decomposition: channel c becomes stride^2 virtual channels (qy, qx) holding
    the activations with (y + pad) % stride == qy (x likewise) and the weights with r % stride
    == qy (s likewise). Every product of a virtual channel then lands on the output grid."""
    k, c, r, s = wq.shape
    _, h, w = aq.shape
    st = stride
    w_out = np.zeros((k, c * st * st, r, s), dtype=wq.dtype)
    a_out = np.zeros((c * st * st, h, w), dtype=aq.dtype)
    ry, sx = np.arange(r) % st, np.arange(s) % st
    yy, xx = (np.arange(h) + pad) % st, (np.arange(w) + pad) % st
    for qy in range(st):
        for qx in range(st):
            v = qy * st + qx
            wmask = (ry[:, None] == qy) & (sx[None, :] == qx)
            amask = (yy[:, None] == qy) & (xx[None, :] == qx)
            w_out[:, v :: st * st] = wq * wmask
            a_out[v :: st * st] = aq * amask
    return w_out, a_out


def _phase_grid(
    ax: np.ndarray, ay: np.ndarray, a_ptr: np.ndarray, n_pes: int, stride: int, pad: int
) -> tuple[np.ndarray, np.ndarray]:
    """Activation coordinates of phase-split channels (``_phase_split``: channel c's phase
    (qy, qx) is virtual channel ``c * stride**2 + qy * stride + qx``) on their phase's sub-grid:
    ``x' = (x + pad - qx) / stride`` (exact: the channel holds only x with ``(x + pad) %
    stride == qx``), y likewise. With the taps of :func:`_phase_taps`, ``x' - s'`` is the output
    column ``(x + pad - s) / stride`` of every product, so the unit-stride kernel, with no
    padding, delivers the same products to the same accumulator addresses in the same order
    as the strided one: the same cycles, counts and outputs (placeholders carry the
    coordinates of the entry they precede, so theirs divide exactly too)."""
    channel = np.repeat(np.arange(a_ptr.size - 1, dtype=np.int64) // n_pes, np.diff(a_ptr))
    q = channel % (stride * stride)
    return (ax + pad - q % stride) // stride, (ay + pad - q // stride) // stride


def _phase_taps(
    wr: np.ndarray, ws: np.ndarray, w_ptr: np.ndarray, n_channels: int, stride: int
) -> tuple[np.ndarray, np.ndarray]:
    """Filter taps of phase-split channels on their phase's sub-grid: ``r' = (r - qy) /
    stride``, ``s' = (s - qx) / stride`` (see :func:`_phase_grid`)."""
    channel = np.repeat(np.arange(w_ptr.size - 1, dtype=np.int64) % n_channels, np.diff(w_ptr))
    q = channel % (stride * stride)
    return (wr - q // stride) // stride, (ws - q % stride) // stride


def _channels_with_weights(w_ptr: np.ndarray, n_groups: int, n_channels: int) -> np.ndarray | None:
    """The channels in which some group has weight entries (placeholders count); None when
    every channel has. A PE skips a channel without weights at no cost, and the traffic of a
    super-tile is counted from the whole lists, so the kernel need not walk such channels
    (three in four of a stride-2 1x1 conv's phase-split channels: its taps are all phase 0)."""
    has = np.diff(w_ptr).reshape(n_groups, n_channels).sum(axis=0) > 0
    return None if bool(has.all()) else np.flatnonzero(has)


def _kept_lists(ptr: np.ndarray, keep: np.ndarray, *arrays: np.ndarray) -> tuple:
    """The segments ``keep`` (ascending indices) of the lists ``ptr`` bounds: (new pointers,
    each of ``arrays`` restricted to those segments' entries)."""
    lens = np.diff(ptr)[keep]
    new = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(lens, out=new[1:])
    idx = np.repeat(ptr[:-1][keep] - new[:-1], lens) + np.arange(new[-1], dtype=np.int64)
    return (new, *(a[idx] for a in arrays))


def _operand_traffic(
    na: np.ndarray, nw: np.ndarray, i_vec: int, f_vec: int, fifo_depth: int
) -> tuple[int, int, int]:
    """(IARAM vector reads, weight-FIFO pushes, pushes if every list fit the FIFO) of one
    super-tile, from ``na[c, p]`` (PE p's non-zero activations of channel c) and ``nw[g, c]``
    (group g's non-zero weights of channel c).

    A PE reads its activation vectors of a channel once per group with weights there. A
    (group, channel)'s weight vectors are pushed once when they fit the FIFO, else re-streamed
    for every activation vector (the broadcast is assumed to deliver one entry per cycle, the
    rate a PE consumes them); a PE with no activation vectors in the channel takes none.
    Summed over PEs first, per channel: O(G C + C P) integers, not a (G, C, P) array."""
    vecs = -(-na.astype(np.int64) // i_vec)  # (C, P) activation vectors
    wvecs = -(-nw.astype(np.int64) // f_vec)  # (G, C) weight vectors
    busy_pes = (vecs > 0).sum(axis=1)  # (C,) PEs with activation vectors in the channel
    vec_sum = vecs.sum(axis=1)  # (C,)
    reads = int(((nw > 0).sum(axis=0) * vec_sum).sum())
    fits = wvecs <= fifo_depth
    once = int((wvecs * busy_pes[None, :]).sum())
    pushed = int(np.where(fits, wvecs * busy_pes[None, :], wvecs * vec_sum[None, :]).sum())
    return reads, pushed, once


def run_scnn_conv(cfg: ScnnConfig, conv: SparseConv, density: float) -> ScnnConvRun:
    """Run every image, conv group and super-tile of ``conv`` through the SCNN kernel."""
    ar, mul, grid = cfg.arithmetic, cfg.multipliers, cfg.pe_grid
    wf, af, of = _fixed_point(conv, ar.data_bits, ar.accumulator_bits)
    shift = wf + af - of
    wq_all = quantize(conv.weights, wf, ar.data_bits)
    aq_all = quantize(conv.activations, af, ar.data_bits)
    cg, kg = conv.c // conv.groups, conv.k // conv.groups
    out_h, out_w = conv.out_h, conv.out_w
    out = np.zeros((conv.n, conv.k, out_h, out_w), dtype=np.int64)
    word_bits = ar.data_bits + cfg.index_bits
    totals = np.zeros(6, dtype=np.int64)
    items: list[tuple[int, int, int]] = []
    busy = idle_total = 0
    drained = iaram_reads = fifo_push = refills = 0
    kc_used, supertiles = [], 0
    _check_window_fits(cfg, conv)  # once per layer, before any plane is planned
    for img in range(conv.n):
        for j in range(conv.groups):
            wq = wq_all[j * kg : (j + 1) * kg]
            aq = aq_all[img, j * cg : (j + 1) * cg]
            if conv.stride > 1 and cfg.stride_phase_decomposition:
                wq, aq = _phase_split(wq, aq, conv.stride, conv.pad)
            vc = aq.shape[0]  # channels the kernel walks (virtual ones when phase-split)
            tx, ty, kc = _plan(cfg, conv, aq, density)
            kc_used.append(kc)
            phase = conv.stride if conv.stride > 1 and cfg.stride_phase_decomposition else 1
            w_ptr, wk, wr, ws, wv, n_groups = compress_weights(wq, kc, cfg.index_bits, phase)
            w_bytes = int(w_ptr[-1]) * word_bits // 8
            # the kernel's stride and padding: phase-split channels run as unit-stride ones
            k_stride, k_pad = (1, 0) if phase > 1 else (conv.stride, conv.pad)
            if phase > 1:
                wr, ws = _phase_taps(wr, ws, w_ptr, vc, phase)
            kept = _channels_with_weights(w_ptr, n_groups, vc)
            kw = (w_ptr, wk, wr, ws, wv)
            if kept is not None:  # weight lists are group-major, channel-minor
                segments = (np.arange(n_groups)[:, None] * vc + kept).ravel()
                kw = _kept_lists(w_ptr, segments, *kw[1:])
            k_vc = vc if kept is None else kept.size
            for x_lo, x_hi, y_lo, y_hi in _regions(conv.w, conv.h, tx, ty):
                supertiles += 1
                tl = scnn_tiling(
                    conv.w,
                    conv.h,
                    conv.r,
                    conv.s,
                    conv.stride,
                    conv.pad,
                    grid.cols,
                    grid.rows,
                    region=(x_lo, x_hi, y_lo, y_hi),
                )
                region = aq[:, y_lo:y_hi, x_lo:x_hi]
                a_ptr, ax, ay, av = compress_activations(region, tl, cfg.index_bits, phase)
                if phase > 1:
                    ax, ay = _phase_grid(ax, ay, a_ptr, tl.n_pes, phase, conv.pad)
                # the kernel adds its products into the group's block of ``out`` (a C-contiguous
                # view): no per-super-tile zeroed copy to sum in afterwards
                part = out[img, j * kg : (j + 1) * kg]
                ka = (a_ptr, ax, ay, av)
                if kept is not None:  # activation lists are channel-major, PE-minor
                    segments = (kept[:, None] * tl.n_pes + np.arange(tl.n_pes)).ravel()
                    ka = _kept_lists(a_ptr, segments, ax, ay, av)
                stats = scnn_layer(
                    n_groups,
                    kc,
                    k_vc,
                    tl.n_pes,
                    *ka,
                    *kw,
                    tl.win_x0,
                    tl.win_y0,
                    tl.win_w,
                    tl.win_h,
                    out_w,
                    out_h,
                    k_stride,
                    k_pad,
                    mul.weights_per_cycle,
                    mul.activations_per_cycle,
                    cfg.accumulator.banks,
                    cfg.crossbar_input_fifo_depth,
                    shift,
                    ar.accumulator_bits,
                    part,
                )
                totals += stats.sum(axis=(1, 2))
                window = kc * tl.win_w * tl.win_h
                if window > cfg.accumulator.entries:  # _plan guarantees this never happens
                    raise SimulationError(
                        f"layer {conv.name!r}: accumulator window {window} > "
                        f"{cfg.accumulator.entries} entries"
                    )
                drains = [math.ceil(window / cfg.accumulator.banks)] * n_groups
                cycles = _group_time(stats[0], drains, cfg.accumulator.double_buffered)
                busy += int(stats[0].sum())
                idle_total += int(stats[0].max(axis=1).sum()) * tl.n_pes
                drained += window * n_groups * tl.n_pes
                in_bytes = int(a_ptr[-1]) * word_bits // 8
                items.append((cycles, in_bytes + w_bytes, 0))
                reads, pushed, once = _operand_traffic(
                    np.diff(a_ptr).reshape(vc, tl.n_pes),
                    np.diff(w_ptr).reshape(n_groups, vc),
                    mul.activations_per_cycle,
                    mul.weights_per_cycle,
                    cfg.weight_fifo.depth,
                )
                iaram_reads += reads
                fifo_push += pushed
                refills += pushed - once
    nnz_out = int(np.count_nonzero(out > 0))
    input_nnz = int(np.count_nonzero(aq_all))
    halo = drained - conv.n * conv.k * out_h * out_w  # partial sums beyond one per output
    per_access = math.ceil(mul.activations_per_cycle * word_bits / cfg.iaram.width_bits)
    counts = {
        "multipliers": {"multiply": int(totals[2])},
        "crossbar": {"transfer": int(totals[3])},
        "accumulator": {"update": int(totals[3]), "drain": drained},
        "iaram": {
            "read": iaram_reads * per_access,
            "write": math.ceil(input_nnz * word_bits / cfg.iaram.width_bits),
        },
        "oaram": {"write": math.ceil(nnz_out * word_bits / cfg.oaram.width_bits)},
        "weight_fifo": {"push": fifo_push, "pop": int(totals[1])},
        "ppu": {"output": conv.n * conv.k * out_h * out_w},
        "halo": {"transfer": max(halo, 0)},
    }
    extras = {
        "scnn_barrier_idle": 1.0 - busy / idle_total if idle_total else 0.0,
        "scnn_conflict_stalls": int(totals[4]),
        "scnn_bank_conflicts": int(totals[5]),
        "scnn_dropped_products": int(totals[2] - totals[3]),
        "scnn_kc": min(kc_used),
        "scnn_weight_refills": refills,
        "scnn_supertiles": supertiles,
        "scnn_output_density": nnz_out / out.size if out.size else 0.0,
    }
    return ScnnConvRun(
        layer=conv,
        items=items,
        counts=counts,
        extras=extras,
        output_q=out,
        out_frac=of,
        macs_effective=int(totals[3]),
        input_nnz=input_nnz,
        output_nnz=nnz_out,
        warnings=tuple(
            rounded_to_zero("weights", conv.weights, wq_all, wf, ar.data_bits)
            + rounded_to_zero("activations", conv.activations, aq_all, af, ar.data_bits)
        ),
    )


def simulate_scnn(
    config: ScnnConfig, workload: WorkloadSpec, seed: int
) -> tuple[list[LayerOutcome], SimContext]:
    """Run every conv layer; schedule super-tile loads, compute and write-backs in SimPy."""
    runs: list[tuple[ConvLayer | FcLayer | LstmLayer, ScnnConvRun]] = []
    macs: list[int] = []  # dense-equivalent MACs of each layer (a data layer: its files' shape)
    for index, spec in enumerate(workload.layers):
        if isinstance(spec, ConvLayer):
            conv = materialize_conv(spec, seed, workload.base_dir)
            density = spec.activation_density  # None for a layer read from files: measure it
            if density is None:
                density = float(np.count_nonzero(conv.activations)) / max(conv.activations.size, 1)
            try:
                runs.append((spec, run_scnn_conv(config, conv, float(density))))
            except SimulationError as exc:  # "layer 'x': ... does not fit": name the file too
                raise SimulationError(f"{workload.origin}: layers.{index}: {exc}") from None
            macs.append(spec.macs_dense)
        elif isinstance(spec, FcLayer | LstmLayer):
            mv = materialize_matvec(spec, seed, workload.base_dir, codebook_entries=16)
            runs.append((spec, run_scnn_matvec(config, mv)))
            macs.append(mv.n_rows * mv.n_cols)
        else:
            raise SimulationError(f"SCNN cannot run layer {spec.name!r} of kind {spec.kind!r}")
    word_bits = config.arithmetic.data_bits + config.index_bits
    flat_cycles, flat_io, owner = [], [], []
    for li, (_, run) in enumerate(runs):
        spilled = len(run.items) > 1
        for ti, (cyc, in_b, _) in enumerate(run.items):
            first, last = li == 0 and ti == 0, li == len(runs) - 1
            rd = in_b if (spilled or first) else in_b - _act_bytes(run, word_bits)
            wr = 0
            if spilled or last:
                wr = math.ceil(run.output_nnz * word_bits / 8 / len(run.items))
            flat_cycles.append(cyc)
            flat_io.append((max(rd, 0), wr))
            owner.append(li)
    ctx = SimContext(config.clock.frequency_hz)
    dram = Dram(ctx, config.dram.bandwidth_bytes_per_s, config.dram.latency_s)
    spans = double_buffered_pipeline(ctx, dram, flat_cycles, flat_io)
    outcomes = []
    for li, (spec, run) in enumerate(runs):
        mine = [i for i, o in enumerate(owner) if o == li]
        start, end = spans[mine[0]][0], spans[mine[-1]][1]
        rd = sum(flat_io[i][0] for i in mine)
        wr = sum(flat_io[i][1] for i in mine)
        outcomes.append(
            LayerOutcome(
                layer=spec.name,
                kind=spec.kind,
                cycles=end - start,
                start_cycle=start,
                end_cycle=end,
                macs_dense=macs[li],
                macs_effective=run.macs_effective,
                peak_macs_per_cycle=config.peak_macs_per_cycle,
                dram_bytes=rd + wr,
                counts={**run.counts, "dram": {"read_bytes": rd, "write_bytes": wr}},
                extras=dict(run.extras),
                warnings=tuple(f"layer {spec.name!r}: {w}" for w in run.warnings),
            )
        )
    return outcomes, ctx


def _act_bytes(run: ScnnConvRun, word_bits: int) -> int:
    """Compressed input bytes of one super-tile (they are on chip when the layer fits)."""
    return run.input_nnz * word_bits // 8 // max(1, len(run.items))
