"""Every column of ``RunResult.to_dataframe()`` (and the sweep frames built from it), with unit.

``archsim schema results`` prints this as a JSON Schema of one result row. Columns an
accelerator adds carry its prefix (``eie_``, ``scnn_``, ``dcnn_``, ``systolic_``, ``tc_``);
families of columns (``energy_<component>_pj``, ``speedup_vs_<baseline>``) are patterns.
"""

from __future__ import annotations

from typing import Any

__all__ = ["COLUMNS", "PATTERNS", "results_schema", "describe"]

# name -> (JSON type, unit ("1" for a plain count or ratio, "" for text), description)
_C = tuple[str, str, str]
COLUMNS: dict[str, _C] = {
    "layer": ("string", "", "Layer name, as in the workload."),
    "kind": (
        "string",
        "",
        "Layer kind: fc, lstm, conv or gemm; a training step's rows: train_layer, the "
        "collective (all_reduce ...) or optimizer.",
    ),
    "cycles": (
        "integer",
        "cycles",
        "Cycles of the layer's compute phase, at the run's clock (a GPU whose layer ran at "
        "another clock_hz: its length in the preset's clock periods; tc_sm_cycles in its own).",
    ),
    "time_s": ("number", "s", "Time of the layer's compute phase (cycles / clock)."),
    "macs_dense": ("integer", "MACs", "Dense-equivalent multiply-accumulates."),
    "macs_effective": ("integer", "MACs", "Multiplies performed on non-zero operand pairs."),
    "utilization": (
        "number",
        "1",
        "macs_effective / (cycles x peak MACs per cycle), cycles at the clock the layer ran at.",
    ),
    "energy_pj": ("number", "pJ", "Energy of the layer, all components."),
    "power_w": ("number", "W", "energy_pj / time_s."),
    "dram_bytes": ("integer", "bytes", "Bytes moved to and from DRAM/HBM."),
    "start_cycle": ("integer", "cycles", "First cycle of the compute phase in the run."),
    "end_cycle": ("integer", "cycles", "Cycle after the last of the compute phase."),
    # EIE
    "eie_load_balance": ("number", "1", "Mean PE busy cycles / layer cycles."),
    "eie_real_work": ("number", "1", "Real entries / all entries (padding included)."),
    "eie_ideal_cycles": ("integer", "cycles", "Entries / PEs: cycles with perfect balance."),
    "eie_padding_entries": ("integer", "entries", "Padding entries bridging long zero runs."),
    "eie_empty_column_cycles": ("integer", "cycles", "Cycles spent on columns with no entry."),
    "eie_spmat_line_reads": ("integer", "reads", "Sparse-matrix SRAM line reads, all PEs."),
    "eie_pointer_reads": ("integer", "reads", "Column-pointer SRAM reads, all PEs."),
    "eie_bypasses": ("integer", "1", "Accumulations forwarded on back-to-back same-row writes."),
    "eie_broadcast_stall_cycles": ("integer", "cycles", "Broadcast stalls on a full FIFO."),
    "eie_nonzero_activations": ("integer", "1", "Non-zero input activations broadcast."),
    "eie_max_pe_busy_cycles": ("integer", "cycles", "Busy cycles of the busiest PE."),
    "eie_functional_max_error": ("number", "1", "Largest |output - NumPy reference|."),
    "eie_functional_error_bound": ("number", "1", "Fixed-point error bound of that output."),
    "eie_spmat_fill": ("number", "1", "Fill of the fullest PE's sparse-matrix SRAM."),
    "eie_pointer_fill": ("number", "1", "Fill of the fullest PE's pointer SRAM."),
    "eie_activation_fill": ("number", "1", "Fill of the fullest PE's activation SRAM."),
    # SCNN
    "scnn_barrier_idle": ("number", "1", "PE-cycles idle at output-channel-group barriers."),
    "scnn_conflict_stalls": ("integer", "cycles", "Stalls on accumulator bank conflicts."),
    "scnn_bank_conflicts": ("integer", "1", "Products that met a busy accumulator bank."),
    "scnn_dropped_products": ("integer", "1", "Products outside the output (strided layers)."),
    "scnn_kc": ("integer", "channels", "Output channels per group (Kc)."),
    "scnn_weight_refills": ("integer", "1", "Weight-FIFO refills from the weight buffer."),
    "scnn_supertiles": ("integer", "1", "Super-tiles the layer is cut into (DRAM tiling)."),
    "scnn_output_density": ("number", "1", "Non-zero fraction of the ReLU output."),
    # DCNN
    "dcnn_compute_cycles": ("integer", "cycles", "Cycles of the dense dot-product datapath."),
    "dcnn_fragmentation": ("number", "1", "Multiplier slots left empty by tile shapes."),
    "dcnn_tiles": ("integer", "1", "Tiles the layer is cut into."),
    "dcnn_sram_fill": ("number", "1", "Footprint / SRAM size."),
    "dcnn_streamed": ("boolean", "", "The layer does not fit on chip and is streamed."),
    "dcnn_spatial_chunks": ("integer", "1", "Spatial chunks of the input plane."),
    "dcnn_channel_chunks": ("integer", "1", "Chunks of the input channels."),
    "dcnn_input_on_chip": ("boolean", "", "The input activations stay on chip."),
    "dcnn_output_on_chip": (
        "boolean",
        "",
        "The output activations stay on chip for the next layer (not written to DRAM).",
    ),
    "dcnn_phase_cycles": ("integer", "cycles", "Cycles of the longest phase."),
    "dcnn_weight_sram_reads": ("integer", "reads", "Weight SRAM reads."),
    "dcnn_activation_sram_reads": ("integer", "reads", "Activation SRAM reads."),
    "dcnn_zero_operand_macs": ("integer", "MACs", "MACs with a zero operand (gated in -opt)."),
    "dcnn_functional_max_error": ("number", "1", "Largest |output - NumPy reference|."),
    "dcnn_functional_error_bound": ("number", "1", "Fixed-point error bound of that output."),
    "dcnn_dram_stall_cycles": ("integer", "cycles", "Cycles waiting on DRAM, not hidden."),
    # systolic
    "systolic_timing_model": ("string", "", "archsim or scalesim (SCALE-Sim 3.0.0 exact)."),
    "systolic_dataflow": ("string", "", "os, ws or is."),
    "systolic_m": ("integer", "1", "GEMM rows M (conv: output pixels)."),
    "systolic_n": ("integer", "1", "GEMM columns N (conv: filters)."),
    "systolic_k": ("integer", "1", "GEMM reduction K (conv: r x s x c)."),
    "systolic_gemms": ("integer", "1", "Identical GEMMs run back to back."),
    "systolic_folds": ("integer", "1", "Folds of the array over the GEMMs."),
    "systolic_mapping_efficiency": ("number", "1", "M*N*K / (folds x R x C x T)."),
    "systolic_functional_max_error": ("number", "1", "Largest |output - NumPy reference|."),
    "systolic_compute_cycles": ("integer", "cycles", "Cycles of the folds' compute."),
    "systolic_stall_cycles": ("integer", "cycles", "Cycles waiting on DRAM."),
    "systolic_total_cycles_incl_prefetch": ("integer", "cycles", "SCALE-Sim's total."),
    "systolic_ifmap_dram_reads": ("integer", "words", "IFMAP words read from DRAM."),
    "systolic_filter_dram_reads": ("integer", "words", "FILTER words read from DRAM."),
    "systolic_ofmap_dram_writes": ("integer", "words", "OFMAP words written to DRAM."),
    "systolic_ifmap_sram_reads": ("integer", "words", "IFMAP words the array read from SRAM."),
    "systolic_filter_sram_reads": ("integer", "words", "FILTER words the array read from SRAM."),
    "systolic_ofmap_sram_writes": ("integer", "words", "OFMAP words the array wrote to SRAM."),
    "systolic_ifmap_sram_start": (
        "integer",
        "cycles",
        "First IFMAP SRAM request serviced (-1: none).",
    ),
    "systolic_ifmap_sram_stop": (
        "integer",
        "cycles",
        "Last IFMAP SRAM request serviced (-1: none).",
    ),
    "systolic_ifmap_dram_start": ("integer", "cycles", "First IFMAP DRAM transfer (-1: none)."),
    "systolic_ifmap_dram_stop": ("integer", "cycles", "Last IFMAP DRAM transfer (-1: none)."),
    "systolic_filter_sram_start": (
        "integer",
        "cycles",
        "First FILTER SRAM request serviced (-1: none).",
    ),
    "systolic_filter_sram_stop": (
        "integer",
        "cycles",
        "Last FILTER SRAM request serviced (-1: none).",
    ),
    "systolic_filter_dram_start": ("integer", "cycles", "First FILTER DRAM transfer (-1: none)."),
    "systolic_filter_dram_stop": ("integer", "cycles", "Last FILTER DRAM transfer (-1: none)."),
    "systolic_ofmap_sram_start": (
        "integer",
        "cycles",
        "First OFMAP SRAM request serviced (-1: none).",
    ),
    "systolic_ofmap_sram_stop": (
        "integer",
        "cycles",
        "Last OFMAP SRAM request serviced (-1: none).",
    ),
    "systolic_ofmap_dram_start": ("integer", "cycles", "First OFMAP DRAM transfer (-1: none)."),
    "systolic_ofmap_dram_stop": ("integer", "cycles", "Last OFMAP DRAM transfer (-1: none)."),
    # Tensor Core GPUs
    "tc_tile": ("string", "", "Thread-block tile chosen (m x n x k)."),
    "tc_split_k": ("integer", "1", "Split-K factor."),
    "tc_tensor_ops": ("boolean", "", "True: a tensor-core kernel; False: CUDA cores (SIMT)."),
    "tc_kernel_family": ("string", "", "Library kernel family that ran it (library.families)."),
    "tc_plans_tried": ("integer", "1", "Tile plans compared."),
    "tc_ctas": ("integer", "1", "Thread blocks (CTAs) launched."),
    "tc_ctas_per_sm": ("integer", "1", "CTAs resident per SM."),
    "tc_waves": ("number", "1", "CTAs / (SMs x CTAs per SM)."),
    "tc_bound": ("string", "", "What limits the layer: compute, memory or latency."),
    "tc_tflops": ("number", "TFLOP/s", "Achieved throughput."),
    "tc_peak_tflops": ("number", "TFLOP/s", "Peak tensor throughput of the GPU."),
    "tc_peak_fraction": ("number", "1", "tc_tflops / tc_peak_tflops."),
    "tc_hbm_bandwidth_bytes_per_s": ("number", "bytes/s", "HBM bandwidth of the GPU."),
    "tc_arithmetic_intensity": ("number", "FLOP/byte", "FLOPs per HBM byte."),
    "tc_l2_bytes": ("integer", "bytes", "Bytes read through L2."),
    "tc_launch_cycles": ("integer", "cycles", "Kernel launch overhead."),
    "tc_gemm_mnk": ("string", "", "GEMM shape m x n x k (x batch)."),
    "tc_functional_max_error": ("number", "1", "Largest |output - NumPy reference|."),
    "tc_functional_error_bound": ("number", "1", "Floating-point error bound of that output."),
    "tc_conv_algo": ("string", "", "Conv algorithm kept (implicit_gemm, gemm_1x1, winograd_...)."),
    "tc_conv_kernels": ("integer", "1", "Kernels the kept conv algorithm launches."),
    "tc_conv_tried": ("string", "", "Conv algorithms timed, as name=SM cycles; fastest kept."),
    "tc_conv_functional_max_error": (
        "number",
        "1",
        "Largest |output - direct convolution| of the kept algorithm (NaN: layer too large).",
    ),
    # GPU board power (presets with a power block)
    "clock_hz": ("number", "Hz", "SM clock the layer ran at (solved under the power limit)."),
    "board_power_w": ("number", "W", "Board power at clock_hz: static + priced actions."),
    "power_limited": ("boolean", "", "True where the power limit set the clock."),
    "energy_j": ("number", "J", "energy_pj in joules."),
    "pj_per_flop": ("number", "pJ/FLOP", "energy_pj / (2 x macs_dense)."),
    "tc_clock_limit": (
        "string",
        "",
        "What set the clock: max_clock, locked_clock, tensor_current or power.",
    ),
    "tc_voltage_v": ("number", "V", "Core voltage at clock_hz (power.vf_curve)."),
    "tc_operand_toggle": ("number", "1", "Operand activity dynamic energy was priced at."),
    "tc_sm_cycles": ("integer", "cycles", "The layer's length in SM clocks at clock_hz."),
    # data-parallel training step (archsim train / train_step)
    "train_fwd_s": ("number", "s", "The layer's forward kernels on one GPU."),
    "train_elementwise_s": ("number", "s", "The layer's element-wise kernels, both passes."),
    "comm_bytes": ("integer", "bytes", "Bytes of the all-reduced gradient bucket."),
    "comm_algorithm": ("string", "", "NCCL algorithm of the bucket (ring, tree, nvls)."),
    "comm_protocol": ("string", "", "NCCL protocol of the bucket (LL, LL128, Simple)."),
    "comm_layers": ("integer", "1", "Layers whose gradients the bucket holds."),
    "comm_busbw_gb_s": ("number", "GB/s", "Bus bandwidth of the bucket (nccl-tests' busbw)."),
}

#: regular expression -> (JSON type, unit, description)
PATTERNS: dict[str, _C] = {
    r"^energy_[a-z0-9_]+_pj$": ("number", "pJ", "Energy of one priced component."),
    r"^speedup_vs_[a-z0-9_]+$": ("number", "1", "Baseline time / this time (--baseline)."),
    r"^energy_ratio_vs_[a-z0-9_]+$": ("number", "1", "Baseline energy / this energy."),
    r"^(eie|scnn|dcnn|systolic|tc)_[a-z0-9_]+$": (
        "any",
        "",
        "Accelerator-specific column not yet listed here; see the accelerator's module.",
    ),
}


def describe(column: str) -> tuple[str, str, str] | None:
    """(JSON type, unit, description) of ``column``, or None when it is unknown."""
    import re

    if column in COLUMNS:
        return COLUMNS[column]
    return next((v for p, v in PATTERNS.items() if re.match(p, column)), None)


def _entry(tp: str, unit: str, text: str) -> dict[str, Any]:
    """One column's schema; ``any``: no type (a pattern also applies to the columns the
    properties name, so a pattern's type would contradict theirs)."""
    shown = f"{text} Unit: {unit}." if unit else text
    out: dict[str, Any] = {"description": shown, "x-unit": unit}
    if tp != "any":
        out["type"] = [tp, "null"]  # sweep frames leave other accelerators' columns empty
    return out


def results_schema() -> dict[str, Any]:
    """JSON Schema of one row of ``results.csv`` / ``to_dataframe()``."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:archsim:schema:results:1",
        "title": "archsim result row",
        "description": "One layer of one run: a row of results.csv, RunResult.to_dataframe() "
        "and the sweep frames. Times s, energy pJ, power W.",
        "type": "object",
        "properties": {k: _entry(*v) for k, v in COLUMNS.items()},
        "patternProperties": {k: _entry(*v) for k, v in PATTERNS.items()},
        "required": ["layer", "kind", "cycles", "time_s", "energy_pj"],
    }
