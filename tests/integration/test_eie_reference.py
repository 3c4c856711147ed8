"""The fast EIE model must equal the literal per-cycle reference twin, cycle for cycle."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import archsim
from archsim.accelerators.eie import (
    _prepared_to_keep,
    prepare_eie_layer,
    run_eie_reference,
    time_eie_layer,
)
from archsim.datapath.eie_kernels import TIMING_FIELDS, eie_timing
from archsim.workload import synthetic_matvec

TINY = archsim.load_hardware("tiny_eie")
TOTALS: dict[str, int] = {"bypasses": 0, "stalls": 0, "padding": 0, "empty": 0, "cases": 0}


def _compare(cfg, layer):
    prep = prepare_eie_layer(cfg, layer)
    fast = time_eie_layer(cfg, prep)
    ref = run_eie_reference(cfg, fast)
    # the public one-call timing (counts from the functional walk) gives the same
    enc = prep.encoded
    cycles, stalls, per_pe = eie_timing(
        prep.cols, prep.groups, prep.lanes, prep.n_groups, cfg.pe_array.num_pes,
        cfg.activation_fifo.depth, enc.col_ptr, enc.base, enc.local_row, enc.code,
        enc.real_cum, cfg.entries_per_line, cfg.pipeline_stages - 1,
    )  # fmt: skip
    assert (cycles, stalls) == (fast.cycles, fast.scanner_stalls)
    for i, name in enumerate(TIMING_FIELDS):
        assert per_pe[i].tolist() == fast.per_pe[name].tolist(), f"eie_timing {name}"
    # and so does what simulate() keeps: the broadcast columns' pointer rows (here 16-bit)
    kept = time_eie_layer(cfg, _prepared_to_keep(cfg, layer))
    assert (kept.cycles, kept.scanner_stalls) == (fast.cycles, fast.scanner_stalls)
    for name in TIMING_FIELDS:
        assert kept.per_pe[name].tolist() == fast.per_pe[name].tolist(), f"kept {name}"
    assert np.array_equal(kept.output_q, fast.output_q)
    pp = fast.per_pe
    pairs = {
        "cycles": (fast.cycles, ref.cycles),
        "broadcast stalls": (fast.scanner_stalls, ref.scanner_stall_cycles),
        "entries": (pp["entries"].tolist(), ref.entries),
        "macs": (pp["real"].tolist(), ref.real),
        "empty columns": (pp["empty_columns"].tolist(), ref.empty_columns),
        "spmat line reads": (pp["line_reads"].tolist(), ref.line_reads),
        "pointer reads": (pp["pointer_reads"].tolist(), ref.pointer_reads),
        "bypasses": (pp["bypasses"].tolist(), ref.bypasses),
        "output": (fast.output_q.tolist(), ref.output.tolist()),
    }
    for name, (a, b) in pairs.items():
        assert a == b, f"{name}: fast {a} != reference {b}"
    TOTALS["bypasses"] += int(pp["bypasses"].sum())
    TOTALS["stalls"] += fast.scanner_stalls
    TOTALS["padding"] += int(pp["entries"].sum() - pp["real"].sum())
    TOTALS["empty"] += int(pp["empty_columns"].sum())
    TOTALS["cases"] += 1
    return fast, ref


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_pes=st.integers(1, 8),
    rows=st.integers(1, 48),
    cols=st.integers(1, 40),
    wd=st.sampled_from([0.02, 0.1, 0.3, 0.6, 1.0]),
    ad=st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0]),
    bias=st.booleans(),
    depth=st.integers(1, 6),
    rel_bits=st.integers(1, 4),
    line_entries=st.sampled_from([1, 2, 4, 8]),
    stages=st.integers(2, 6),
    seed=st.integers(0, 10_000),
)
def test_fast_equals_reference(
    num_pes, rows, cols, wd, ad, bias, depth, rel_bits, line_entries, stages, seed
):
    cfg = TINY.with_overrides(
        {
            "pe_array.num_pes": num_pes,
            "activation_fifo.depth": depth,
            "encoding.relative_index_bits": rel_bits,
            "spmat_sram.width_bits": line_entries * (4 + rel_bits),
            "pipeline_stages": stages,
        }
    )
    layer = synthetic_matvec(f"h{seed}", rows, cols, wd, ad, bias, seed)
    _compare(cfg, layer)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_pes=st.sampled_from([9, 16, 31, 33, 64, 77]),
    rows_per_pe=st.integers(1, 4),
    cols=st.integers(1, 24),
    wd=st.sampled_from([0.05, 0.2, 0.6]),
    ad=st.sampled_from([0.3, 0.9]),
    depth=st.integers(1, 4),
    line_entries=st.sampled_from([1, 4]),
    seed=st.integers(0, 10_000),
)
def test_fast_equals_reference_on_wide_arrays(
    num_pes, rows_per_pe, cols, wd, ad, depth, line_entries, seed
):
    """The timing kernel updates all PEs in vector loops (8 int64 lanes and more per step):
    PE counts beyond one vector and with a remainder, against the same twin."""
    cfg = TINY.with_overrides(
        {
            "pe_array.num_pes": num_pes,
            "activation_fifo.depth": depth,
            "spmat_sram.width_bits": line_entries * 6,  # 4-bit codes, 2-bit jumps
        }
    )
    rows = num_pes * rows_per_pe + seed % num_pes
    _compare(cfg, synthetic_matvec(f"w{seed}", rows, cols, wd, ad, True, seed))


def test_random_cases_exercise_every_mechanism():
    """The property test above must actually hit stalls, bypasses, padding and empty columns."""
    rng = np.random.default_rng(7)
    for i in range(60):
        cfg = TINY.with_overrides(
            {"pe_array.num_pes": int(rng.integers(2, 6)), "activation_fifo.depth": 1}
        )
        layer = synthetic_matvec(f"m{i}", int(rng.integers(8, 40)), 30, 0.15, 0.8, True, i)
        _compare(cfg, layer)
    assert TOTALS["stalls"] > 0 and TOTALS["bypasses"] > 0
    assert TOTALS["padding"] > 0 and TOTALS["empty"] > 0


def test_single_column_trace_is_as_documented():
    """Hand-checked timeline: 1 PE, one activation, a 3-entry column, 5-stage pipeline.

    c0 load group 0; c1 LNZD pushes; c2 PE pops; c3-c5 three entries; c6-c9 drain -> 10 cycles.
    """
    cfg = TINY.with_overrides({"pe_array.num_pes": 1, "pipeline_stages": 5})
    layer = synthetic_matvec("one", 3, 1, 1.0, 1.0, False, 0)
    fast, ref = _compare(cfg, layer)
    assert fast.cycles == 10
    assert ref.pointer_reads == [1] and ref.entries == [3]
