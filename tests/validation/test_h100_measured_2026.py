"""The model against a second H100 SXM, measured 2026-11-27 (benchmarks/measured/h100_2026-11-27).

Nothing in that folder was used to fit the GEMM or conv timing except the preset fields whose
comments cite it (TF32's lanes and layouts, the conv kernels' set-up, PyTorch's batch-norm and
max-pool rates). Known gap, left out of the GEMM statistics: the int8 rows there were timed
with B stored k x n, which runs cuBLAS's slow wmma kernel (130 TOPS, kernels.csv); the model
follows ../shared/data/h100, whose int8 rows with that label run at the IMMA rate.

Tolerances are this session's figures rounded up (a regression guard, printed with the
actual value); issue 16's goals (median 10 %, p90 25 %) are printed beside them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.measure.folder import read_folder
from archsim.validation.measured import compare, error_stats

FOLDER = Path(__file__).parents[2] / "benchmarks" / "measured" / "h100_2026-11-27"


@pytest.fixture(scope="module")
def comparison():
    return compare(archsim.load_hardware("h100"), read_folder(FOLDER))


def _stats(rows) -> dict[str, float]:
    done = rows[rows["sim_time_s"].notna()]
    return {"n": len(done), **error_stats(done["time_s"], done["sim_time_s"])}


def _assert_within(label, rows, rows_min, median_max, p90_max, spearman_min) -> None:
    """Time errors of ``rows`` within the guard's bounds; the message gives actual, bound and
    issue 16's goal (median 10 %, p90 25 %)."""
    s = _stats(rows)
    msg = (
        f"{label}: {s['n']} rows, median |error| {s['median_abs_error']:.1%} (max "
        f"{median_max:.0%}; goal 10 %), p90 {s['p90_abs_error']:.1%} (max {p90_max:.0%}; goal "
        f"25 %), Spearman {s['spearman']:.4f} (min {spearman_min})"
    )
    print(msg)
    assert s["n"] >= rows_min, msg
    assert s["median_abs_error"] <= median_max, msg
    assert s["p90_abs_error"] <= p90_max, msg
    assert s["spearman"] >= spearman_min, msg


@pytest.mark.parametrize(
    "kind, median_max, p90_max, spearman_min",
    # conv p90 32.6 -> 35.9 % with the cited L2 hit latency (291 cycles): batch-1 1x1 convs the
    # model already ran 30 % slow (RESULTS.md, twentieth session)
    [("gemm", 0.08, 0.24, 0.985), ("conv", 0.12, 0.37, 0.96)],
)
def test_times_against_the_second_h100(comparison, kind, median_max, p90_max, spearman_min):
    rows = comparison.rows
    rows = rows[rows["file"].str.startswith(kind + "_")]
    if kind == "gemm":  # the known int8 gap (module docstring)
        rows = rows[~((rows["precision"] == "int8") & (rows["layout"] == "NN"))]
    _assert_within(kind, rows, 130 if kind == "gemm" else 380, median_max, p90_max, spearman_min)


@pytest.mark.parametrize("precision", ["fp16", "bf16", "fp8", "tf32", "fp32"])
def test_sustained_gemm_energy_and_power(comparison, precision):
    """NVML's energy counter around 4 s of 8192^3 GEMMs: joules per call within 15 % and
    board watts within 10 % (issue 16's goals)."""
    e = comparison.energy.set_index("entry").loc[f"gemm_{precision}_8192"]
    j_err = e["sim_energy_j"] / e["joules_per_call"] - 1
    w_err = e["sim_power_w"] / e["watts"] - 1
    msg = (
        f"{precision}: {e['joules_per_call']:.4g} J/call measured, {e['sim_energy_j']:.4g} "
        f"simulated ({j_err:+.1%}); {e['watts']:.0f} W vs {e['sim_power_w']:.0f} W ({w_err:+.1%})"
    )
    print(msg)
    assert abs(j_err) <= 0.15 and abs(w_err) <= 0.10, msg


@pytest.mark.parametrize(
    "sub, rows_min, median_max, p90_max, spearman_min",
    [
        # the presets' convs at batch 64 and 128: 11.0 / 34.9 %, 0.9771 (p90 was 29.6 % before
        # both cuDNN engines were timed: 1x1 convs that cuBLAS's nvjet kernels run, RESULTS.md);
        # 10.4 / 36.8 % with the L2 hit latency of 291 cycles
        ("batches_64_128", 250, 0.12, 0.38, 0.975),
        # 150 seeded random convs: 17.8 / 44.9 %, 0.9637 (issue 16's open gap, RESULTS.md);
        # 15.7 / 42.6 %, 0.9676 later; 15.2 / 36.5 %, 0.9705 with cuDNN's indexed 7x7 kernels
        # (twenty-third session, read off this folder's and random_convs_2031's kernel names)
        ("random_convs", 145, 0.16, 0.38, 0.965),
    ],
)
def test_convs_measured_after_the_conv_changes(sub, rows_min, median_max, p90_max, spearman_min):
    """Convs timed on the H100 after the conv model's cluster multicast, tile menu,
    first-layer kernel and write-back floor were made (only the k = 64 menu and the 7x7 rule
    were then chosen with them, see RESULTS.md): a regression guard at this session's figures
    rounded up."""
    c = compare(archsim.load_hardware("h100"), read_folder(FOLDER / sub))
    _assert_within(sub, c.rows, rows_min, median_max, p90_max, spearman_min)


@pytest.mark.parametrize(
    "sub, rows_min, median_max, p90_max, spearman_min",
    [
        # 164 seeded random GEMMs, every precision and layout, a third with unaligned rows
        # (the int8 ones with B stored k x n apart, as above): 13.4 / 27.0 %, 0.9864; before
        # the output-row alignment rule and the fallback tile menu they were made to check,
        # 14.5 / 38.1 %, 0.9731 (RESULTS.md, nineteenth session); 11.2 / 24.2 % with the
        # cited L2 hit latency (291 cycles) and the launch cost re-derived at 1980 MHz; 10.3 /
        # 22.4 %, 0.9891 with no Stream-K under one wave and nvjet's larger tile multicast
        # (twenty-first session)
        ("random_gemms_2031", 155, 0.12, 0.24, 0.985),
        # timed after those two changes were made (held out from them): 162 random GEMMs of
        # a third seed, 15.0 / 35.4 %, 0.9755 (before: 17.5 / 44.9 %, 0.9656), and 90 with a
        # dimension off a multiple of 8, 13.2 / 35.5 %, 0.9741 (before: 20.4 / 73.7 %, 0.9284);
        # 14.8 / 35.4 % and 12.6 / 32.2 % after the TF32 family lost Stream-K (chosen with
        # these sets in view); 13.1 / 33.4 % and 11.1 / 31.7 % with the L2 latency of 291
        # cycles and the launch cost re-derived (twentieth session); 11.3 / 28.1 %, 0.9867 and
        # 11.1 / 31.7 % with no Stream-K under one wave and the larger tile multicast
        ("random_gemms_2033", 155, 0.13, 0.30, 0.98),
        ("unaligned_gemms_2032", 85, 0.12, 0.33, 0.97),
        # 120 random convs of a second seed, timed before any model change of that session
        # and untouched by them: 13.3 / 44.8 %, 0.9802; 12.8 / 36.5 %, 0.9807 with the indexed
        # 7x7 kernels (whose names were read off this folder's kernels too)
        ("random_convs_2031", 115, 0.14, 0.38, 0.975),
        # `archsim probe gpu --quick` with that session's tree on the same lend (60 kernels,
        # every precision, layouts, unaligned, LLM shapes, AlexNet convs): 5.6 / 14.5 %, 0.9930
        ("probe_quick_2", 55, 0.07, 0.17, 0.985),
    ],
)
def test_random_sets_measured_on_a_third_lend(sub, rows_min, median_max, p90_max, spearman_min):
    """Random GEMMs and convs timed on a later lend of an H100 SXM (same model, driver and
    software; `benchmarks/gpu_gemm_random.py --seed 2031`, `benchmarks/gpu_conv_random.py
    --seed 2031`): a regression guard at the session's figures rounded up."""
    rows = compare(archsim.load_hardware("h100"), read_folder(FOLDER / sub)).rows
    rows = rows[~((rows["precision"] == "int8") & (rows["layout"] == "NN"))]
    _assert_within(sub, rows, rows_min, median_max, p90_max, spearman_min)
