"""Sweep specs: expansion (grid, zip, random, ranges), up-front errors, constraints, keys."""

from __future__ import annotations

import json
import math
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import archsim
from archsim import memo
from archsim.cli import main
from archsim.config.io import list_presets, load_sweep
from archsim.errors import ConfigError
from archsim.explore import Expression, ExpressionError, plan_sweep, point_key

SMALL_WL = """\
schema_version: 1
name: small
source: test
layers:
  - {name: fc1, kind: fc, inputs: 96, outputs: 64, weight_density: 0.2, activation_density: 0.5}
"""


def write_spec(tmp_path: Path, body: str, name: str = "spec.yaml") -> Path:
    (tmp_path / "small.yaml").write_text(SMALL_WL)
    head = "schema_version: 1\nname: t\nhardware: tiny_eie\nworkload: small.yaml\n"
    path = tmp_path / name
    path.write_text(head + textwrap.dedent(body))
    return path


def test_presets_expand():
    assert {"eie_pes_fifo_width", "scnn_f_i_banks", "v100_sms_hbm"} <= set(list_presets("sweep"))
    eie = plan_sweep("eie_pes_fifo_width")
    assert len(eie.points) == 1000 and not eie.skipped
    assert eie.axes == ["pe_array.num_pes", "activation_fifo.depth", "spmat_sram.width_bits"]
    # grid order: the first axis varies slowest
    assert [p.values["pe_array.num_pes"] for p in eie.points[:101:100]] == [16, 24]
    assert eie.points[1].hardware.activation_fifo.depth == 1
    assert eie.points[1].hardware.spmat_sram.width_bits == 32
    scnn = plan_sweep("scnn_f_i_banks")
    assert len(scnn.points) + len(scnn.skipped) == 27
    for p in scnn.points:  # derived fields follow the axes
        hw = p.hardware
        assert hw.crossbar.inputs == hw.multipliers.weights_per_cycle * (
            hw.multipliers.activations_per_cycle
        )
        assert hw.crossbar.outputs == hw.accumulator.banks
    assert all(s.reason.startswith("constraint: ") for s in scnn.skipped)
    gpu = plan_sweep("v100_sms_hbm")
    assert [p.hardware.sms for p in gpu.points[::3]] == [40, 60, 80, 100, 120]
    assert gpu.points[1].hardware.hbm.bandwidth_bytes_per_s == 900e9


@pytest.mark.parametrize(
    ("body", "field", "problem"),
    [
        ("axes: {pe_array.num_pe: [2, 4]}\n", "axes.pe_array.num_pe", "did you mean 'num_pes'"),
        ("axes: {pe_array.num_pes: []}\n", "axes", "empty axis"),
        ("axes: {pe_array.num_pes: [2, four]}\n", "axes.pe_array.num_pes", "'four'"),
        ("axes: {pe_array.num_pes: [2, 0]}\n", "axes.pe_array.num_pes", "greater than"),
        ("axes: {clock.frequency_hz: [1.0e+9, fast]}\n", "axes.clock.frequency_hz", "'fast'"),
        ("axes: {pe_array.num_pes: [2]}\nmetrics: {speed: max}\n", "metrics", "unknown metric"),
        ("mode: random\naxes: {pe_array.num_pes: [2]}\n", "samples", "must be set in random"),
        (
            "mode: zip\naxes: {pe_array.num_pes: [2, 4], activation_fifo.depth: [1]}\n",
            "axes",
            "equal length",
        ),
        ("axes: {pe_array.num_pes: 5}\n", "axes", "pe_array.num_pes: an axis is a list"),
        (
            "axes: {pe_array.num_pes: {low: 1, high: 8, num: 2, lg: true}}\n",
            "axes",
            "pe_array.num_pes: lg: unknown field; allowed: low, high",
        ),
        (
            "axes: {pe_array.num_pes: {low: 1, high: 8}}\n",
            "axes",
            "needs num",
        ),
        (
            "axes: {pe_array.num_pes: [2]}\nderive: {pe_aray.num_pes: '2'}\n",
            "derive.pe_aray",
            "did you mean 'pe_array'",
        ),
        (  # file order decided which value each read (a cycle was accepted)
            "axes: {pe_array.num_pes: [2]}\nderive: {activation_fifo.depth: "
            "activation_fifo.width_bits, activation_fifo.width_bits: activation_fifo.depth}\n",
            "derive",
            "activation_fifo.depth reads activation_fifo.width_bits, which a later derive",
        ),
        (
            "axes: {pe_array.num_pes: [2]}\nconstraints: ['pe_array.num_pes >']\n",
            "constraints.0",
            "invalid expression",
        ),
        (
            "axes: {pe_array.num_pes: [2]}\nconstraints: ['pe_array.bogus > 1']\n",
            "constraints.0",
            "unknown name 'pe_array.bogus'",
        ),
        (
            "axes: {pe_array.num_pes: [2]}\nconstraints: [\"__import__('os')\"]\n",
            "constraints.0",
            "unknown function",
        ),
    ],
)
def test_bad_specs_fail_before_running(tmp_path, capsys, body, field, problem):
    path = write_spec(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        plan_sweep(path)
    msg = str(info.value)
    assert msg.startswith(str(path)) and problem in msg and "\n" not in msg
    if field:
        assert f": {field}" in msg
    assert main(["sweep", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archsim: error: ") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_derive_order_counts_only_the_names_an_expression_reads(tmp_path):
    """A later entry's name inside a string, or the ``e3`` of ``1e3``, is not a read of it (a
    regex over the text refused both)."""
    from archsim.config.sweep import SweepSpec

    plan = plan_sweep(
        write_spec(
            tmp_path,
            "axes: {pe_array.num_pes: [2]}\nderive:\n"
            "  activation_fifo.depth: \"4 if 'activation_fifo.width_bits' else 1\"\n"
            "  activation_fifo.width_bits: activation_fifo.depth * 8\n",
        )
    )
    hw = plan.points[0].hardware
    assert (hw.activation_fifo.depth, hw.activation_fifo.width_bits) == (4, 32)
    head = {"schema_version": 1, "name": "t", "hardware": "h", "workload": "w", "axes": {"a": [1]}}
    SweepSpec.model_validate({**head, "derive": {"b.c": "2 * 1e3 + 0x1F", "e3": "1", "x1F": "2"}})
    with pytest.raises(pydantic.ValidationError, match="derive: b.c reads e3, which a later"):
        SweepSpec.model_validate({**head, "derive": {"b.c": "min(e3, 1e3)", "e3": "1"}})
    with pytest.raises(pydantic.ValidationError, match="derive: b reads c.d.e, which a later"):
        SweepSpec.model_validate({**head, "derive": {"b": "'c.d.e' if c.d.e else 1", "c.d.e": "1"}})


def test_unknown_hardware_names_the_spec(tmp_path):
    path = write_spec(tmp_path, "axes: {pe_array.num_pes: [2]}\n")
    path.write_text(path.read_text().replace("tiny_eie", "tiny_eei"))
    with pytest.raises(ConfigError, match=r"spec\.yaml: hardware: 'tiny_eei': unknown"):
        plan_sweep(path)


def test_zip_random_ranges_and_seeds(tmp_path):
    zipped = plan_sweep(
        write_spec(
            tmp_path,
            "mode: zip\nseeds: [0, 1]\naxes:\n  pe_array.num_pes: [2, 4, 8]\n"
            "  activation_fifo.depth: {low: 1, high: 4, num: 3, log: true, integer: true}\n",
        )
    )
    assert zipped.axes == ["seed", "pe_array.num_pes", "activation_fifo.depth"]
    got = [
        (p.seed, p.hardware.pe_array.num_pes, p.hardware.activation_fifo.depth)
        for p in zipped.points
    ]
    assert got == [(0, 2, 1), (0, 4, 2), (0, 8, 4), (1, 2, 1), (1, 4, 2), (1, 8, 4)]
    random_body = (
        "mode: random\nsamples: 20\nsample_seed: {s}\naxes:\n  pe_array.num_pes: [2, 4, 8]\n"
        "  clock.frequency_hz: {{low: 1.0e+8, high: 1.0e+9, log: true}}\n"
    )
    a = plan_sweep(write_spec(tmp_path, random_body.format(s=1), "a.yaml"))
    b = plan_sweep(write_spec(tmp_path, random_body.format(s=1), "b.yaml"))
    c = plan_sweep(write_spec(tmp_path, random_body.format(s=2), "c.yaml"))
    assert [p.key for p in a.points] == [p.key for p in b.points]
    assert [p.key for p in a.points] != [p.key for p in c.points]
    freqs = [p.hardware.clock.frequency_hz for p in a.points]
    assert all(1e8 <= f <= 1e9 for f in freqs) and len(set(freqs)) == 20
    assert {p.hardware.pe_array.num_pes for p in a.points} <= {2, 4, 8}


def test_constraints_derived_quantities_and_invalid_combinations(tmp_path):
    plan = plan_sweep(
        write_spec(
            tmp_path,
            "axes:\n  pe_array.num_pes: [2, 4, 8]\n  spmat_sram.width_bits: [24, 28]\n"
            "constraints: ['total_sram_bytes <= 4 * (4096 + 1024 + 256)']\n",
        )
    )
    kept = [(p.hardware.pe_array.num_pes, p.hardware.spmat_sram.width_bits) for p in plan.points]
    assert kept == [(2, 24), (4, 24)]
    reasons = {
        (s.values["pe_array.num_pes"], s.values["spmat_sram.width_bits"]): s.reason
        for s in plan.skipped
    }
    assert reasons[(8, 24)].startswith("constraint: total_sram_bytes")
    assert reasons[(2, 28)].startswith("invalid: spmat_sram.width_bits")  # 28 % 6 != 0
    assert [s.index for s in plan.skipped] == [1, 3, 4, 5]  # numbers follow the spec's order


def test_points_share_the_sections_no_axis_changes_and_equal_full_validation(tmp_path):
    plan = plan_sweep(
        write_spec(
            tmp_path,
            "axes:\n  pe_array.num_pes: [2, 4]\n  activation_fifo.depth: [2, 8]\n"
            "derive: {spmat_sram.width_bits: '48 if pe_array.num_pes > 2 else 24'}\n",
        )
    )
    base = plan.base
    for p in plan.points:
        hw = p.hardware
        assert hw.dram is base.dram and hw.encoding is base.encoding  # taken as validated
        assert hw.pe_array is not base.pe_array and hw.spmat_sram is not base.spmat_sram
        full = type(base).model_validate(hw.model_dump())  # every section validated again
        assert full == hw
        assert hw.spmat_sram.width_bits == (48 if hw.pe_array.num_pes > 2 else 24)
    assert len({p.key for p in plan.points}) == 4


def test_point_key_depends_on_hardware_workload_seed():
    hw = archsim.load_hardware("tiny_eie")
    wl = archsim.load_workload("eie_benchmarks")
    k = point_key(hw, wl, 0)
    assert k == point_key(archsim.load_hardware("tiny_eie"), wl, 0) and len(k) == 16
    assert k != point_key(hw, wl, 1)
    assert k != point_key(hw.with_overrides({"activation_fifo.depth": 3}), wl, 0)


def _whole_payload_key(hw, wl, seed: int) -> str:
    """The key as stores have always been keyed: one ``json.dumps`` of the whole payload."""
    import hashlib

    from archsim.simulate import archsim_version, model_fingerprint

    data = wl.model_dump(mode="json")
    folders = [layer.data for layer in wl.layers if getattr(layer, "data", None)]
    if folders:
        base = Path(wl.base_dir).resolve()
        data["_data_dir"] = str(base)
        h = hashlib.sha256()  # the data files' contents: names and bytes, sorted
        for root in sorted({base / f for f in folders}):
            for f in sorted(root.rglob("*")) if root.is_dir() else [root]:
                if f.is_file():
                    h.update(str(f.relative_to(root.parent)).encode() + b"\0" + f.read_bytes())
        data["_data_sha256"] = h.hexdigest()
    payload = {"hardware": hw.model_dump(mode="json"), "workload": data, "seed": seed,
               "archsim": archsim_version(), "model": model_fingerprint()}  # fmt: skip
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_point_keys_are_the_keys_stores_already_hold(tmp_path, alex8_workload):
    # the plan makes each workload's text once; a store written before must still resume
    spec = write_spec(tmp_path, "seeds: [0, 3]\naxes:\n  pe_array.num_pes: [2, 4]\n")
    plan = plan_sweep(spec)
    assert len(plan.points) == 4
    for p in plan.points:
        assert p.key == _whole_payload_key(p.hardware, p.workload, p.seed)
        assert p.key == point_key(p.hardware, p.workload, p.seed)
    wl = archsim.load_workload(alex8_workload)  # a layer read from a data folder
    hw = archsim.load_hardware("eie")
    assert point_key(hw, wl, 7) == _whole_payload_key(hw, wl, 7)


def test_model_fingerprint_follows_the_model_code_not_the_reports(tmp_path):
    """A changed model must not resume points stored by the old one; a changed report may."""
    import shutil

    from archsim.simulate import model_fingerprint, source_digest

    root = Path(archsim.__file__).parent
    copy = tmp_path / "archsim"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest(copy)
    assert before == model_fingerprint()
    (copy / "report" / "page.py").write_text("# a report change\n", encoding="utf-8")
    assert source_digest(copy) == before
    eie = copy / "accelerators" / "eie.py"
    eie.write_text(eie.read_text(encoding="utf-8") + "\n# a model change\n", encoding="utf-8")
    assert source_digest(copy) != before


def test_expression_language():
    names = {"a": {"b": 3}, "c": 2.5}
    assert Expression("a.b * 2 ** 3 >= 24 and not c > 3").evaluate(names) is True
    assert Expression("max(a.b, c) + log2(8) if c else 0").evaluate(names) == 6.0
    assert Expression("1 < a.b <= 3").evaluate(names) is True
    for bad in ("a.__class__", "[1, 2]", "lambda: 1", "a.b.bit_length()", "open('x')"):
        with pytest.raises(ExpressionError):
            Expression(bad).evaluate(names)
    with pytest.raises(ExpressionError, match="is a section"):
        Expression("a > 1").evaluate(names)


def brute_force_front(values: np.ndarray) -> set[int]:
    front = set()
    for i, x in enumerate(values):
        dominated = any(np.all(y <= x) and np.any(y < x) for j, y in enumerate(values) if j != i)
        if not dominated:
            front.add(i)
    return front


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60),
    st.integers(2, 4),
    st.integers(0, 2**32 - 1),
)
def test_pareto_matches_brute_force(n, m, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 6, size=(n, m)).astype(float)  # small range: many ties
    frame = pd.DataFrame(values, columns=[f"m{i}" for i in range(m)])
    frame["status"] = "ok"
    # the last metric is maximised: negate it for the brute force
    signed = values.copy()
    signed[:, -1] *= -1
    got = archsim.pareto(frame, minimize=list(frame.columns[: m - 1]), maximize=[f"m{m - 1}"])
    assert set(got.index) == brute_force_front(signed)


def test_pareto_skips_errors_and_nans():
    frame = pd.DataFrame(
        {
            "t": [1.0, 0.5, np.nan, 2.0],
            "e": [1.0, 0.5, 0.1, 0.1],
            "status": ["ok", "error", "ok", "ok"],
        }
    )
    assert list(archsim.pareto(frame, minimize=["t", "e"]).index) == [0, 3]
    with pytest.raises(KeyError):
        archsim.pareto(frame, minimize=["nope"])


def test_memo_is_bounded_and_off_by_default():
    assert not memo.enabled()
    calls = []
    assert memo.memoized("k", lambda: calls.append(1) or 1) == 1
    assert memo.memoized("k", lambda: calls.append(1) or 1) == 1
    assert len(calls) == 2  # off: nothing held
    memo.enable(limit_bytes=3000)
    memo.clear()  # counters from sweeps that ran earlier in this process
    try:
        for i in range(3):
            memo.memoized(("a", i), lambda: np.zeros(100))  # 800 B + overhead each
        assert memo.stats()["entries"] == 3
        memo.memoized(("a", 3), lambda: np.zeros(100))
        assert memo.stats()["entries"] == 3 and memo.stats()["bytes"] <= 3000  # LRU dropped
        hit = memo.memoized(("a", 3), lambda: pytest.fail("should be cached"))
        assert hit.shape == (100,)
        assert memo.stats()["computed"] == {"a": 4} and memo.stats()["hits"] == 1
    finally:
        memo.disable()
        memo.clear()
    assert memo.stats()["entries"] == 0 and memo.stats()["computed"] == {}


def test_schema_and_list_show_sweeps(capsys):
    assert main(["schema", "sweep"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"axes", "hardware", "workload", "constraints", "derive"} <= set(schema["properties"])
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "sweep presets:" in out and "eie_pes_fifo_width" in out
    spec, _ = load_sweep("eie_pes_fifo_width")
    assert spec.metrics == {
        "total_time_s": "min",
        "total_energy_pj": "min",
        "total_area_mm2": "min",
    }


@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, 300),
    st.integers(1, 6),
    st.integers(1, 9),
    st.lists(st.integers(0, 5)),
    st.integers(0, 2**32 - 1),
)
def test_group_scheduler_hands_out_every_task_once(n, workers, chunk, order, seed):
    from archsim.explore.schedule import GroupScheduler, units

    levels = np.random.default_rng(seed).integers(0, 4, size=n).tolist()
    cut = units(n, workers, chunk, levels)
    assert [u[0] for u in cut[1:]] == [u[1] for u in cut[:-1]]  # contiguous, in plan order
    sched = GroupScheduler(n, workers, chunk, levels)
    seen: list[int] = []
    active = list(range(workers))
    turn = 0
    while active:  # workers ask in an arbitrary order, as they finish
        w = active[(order[turn % len(order)] if order else turn) % len(active)]
        turn += 1
        span = sched.next(w)
        if span is None:
            active.remove(w)
            continue
        assert 0 < span[1] - span[0] <= chunk
        assert any(lo <= span[0] and span[1] <= hi for lo, hi in cut)  # never across units
        seen.extend(range(*span))
    assert sorted(seen) == list(range(n))


def test_units_are_the_slowest_axis_groups_cut_only_when_too_few():
    from archsim.explore.schedule import units

    # 4 groups of 25 points (level 0 where the slowest axis changes), inner boundaries level
    # 1 every 5 points, level 2 elsewhere
    levels = [0 if i % 25 == 0 else 1 if i % 5 == 0 else 2 for i in range(100)]
    assert units(100, 2, 8, levels) == [[0, 25], [25, 50], [50, 75], [75, 100]]
    # 3 workers want 6 units: the two largest groups are cut at a level-1 boundary mid-way
    assert units(100, 3, 8, levels) == [[0, 10], [10, 25], [25, 35], [35, 50], [50, 75], [75, 100]]
    # groups smaller than a chunk are merged with their neighbours (they share nothing)
    assert units(12, 1, 4, [0] * 12) == [[0, 4], [4, 8], [8, 12]]
    assert units(0, 2, 4) == []


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 12), st.integers(5, 40), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_two_workers_prepare_each_group_once_and_finish_together(groups, size, chunk, seed):
    """Simulated clock: two workers on groups of points whose costs differ by up to 10x, and
    a worker's first point of a group also pays the group's preparation (3 points' worth).
    With at least two groups per worker no group is prepared twice; with fewer, only the cut
    groups are. The one that ends first waits at most for one unit of the other's work (a unit
    merged from several small groups pays each group's preparation)."""
    import heapq

    from archsim.explore.schedule import GroupScheduler, units

    rng = np.random.default_rng(seed)
    cost = np.repeat(rng.uniform(1, 10, groups), size)
    group = np.repeat(np.arange(groups), size)
    levels = [0 if i % size == 0 else 1 for i in range(groups * size)]
    sched = GroupScheduler(groups * size, 2, chunk, levels)
    clock = [(0.0, 0), (0.0, 1)]
    started: set[tuple[int, int]] = set()
    finish = [0.0, 0.0]
    seen: list[int] = []
    while clock:
        now, w = heapq.heappop(clock)
        span = sched.next(w)
        if span is None:
            finish[w] = now
            continue
        seen.extend(range(*span))
        fresh = {int(g) for g in group[span[0] : span[1]]} - {g for v, g in started if v == w}
        started.update((w, g) for g in fresh)
        took = float(cost[span[0] : span[1]].sum()) + sum(3 * cost[g * size] for g in fresh)
        heapq.heappush(clock, (now + took, w))
    assert sorted(seen) == list(range(groups * size))
    assert len(started) <= groups + max(0, 4 - groups), f"{len(started)} starts, {groups} groups"
    if groups >= 4:
        assert len(started) == groups
    cut = units(groups * size, 2, chunk, levels)
    # a unit merged from groups smaller than a chunk pays every one of its groups' preparation
    longest = max(
        float(cost[lo:hi].sum()) + sum(3 * cost[g * size] for g in set(group[lo:hi].tolist()))
        for lo, hi in cut
    )
    assert abs(finish[0] - finish[1]) <= longest + 1e-9, (finish, longest)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("((10**256)**256)**256 > num_pes", "a power would have about 217,"),
        ("(((2**256)**256)**256)**256", "a power would have about 65,"),
        ("'aaaaaaaa' * 2**34", "a repeated sequence would have 137,438,953,472 items"),
        ("2**34 * 'a'", "a repeated sequence would have"),
        (" * ".join(["10**200"] * 7), "a product would have about 4,6"),
        ("'%999999999d' % 1", "string formatting (%) is not allowed"),
        ("round(7, -10**9)", "round() to"),
        ("2 ** 1000", "exponent 1000 is too large"),
        ("1 + " * 1000 + "1", "characters; allowed: at most 2000"),
        ("-" * 100 + "1", "nested more than 50 levels deep"),
    ],
)
def test_expressions_cannot_hang_or_exhaust_memory(text, message):
    t0 = time.perf_counter()
    with pytest.raises(ExpressionError) as err:
        Expression(text).evaluate({"num_pes": 64})
    assert message in str(err.value) and "\n" not in str(err.value)
    assert time.perf_counter() - t0 < 0.5
    assert Expression("num_pes * 2**20 <= 8 * 2**20").evaluate({"num_pes": 8}) is True


def test_point_count_is_checked_before_any_point_is_built(tmp_path):
    axis = "[" + ", ".join(str(v) for v in range(1000)) + "]"
    spec = tmp_path / "huge.yaml"
    spec.write_text(
        "schema_version: 1\nname: huge\nhardware: tiny_eie\nworkload: eie_benchmarks\naxes:\n"
        f"  pe_array.num_pes: {axis}\n  activation_fifo.depth: {axis}\n"
        "  spmat_sram.width_bits: {low: 8, high: 4096, num: 1000, integer: true}\n"
    )
    t0 = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        plan_sweep(spec)
    assert time.perf_counter() - t0 < 5  # nothing expanded: a 10^9-point grid is refused
    assert str(err.value) == (
        f"{spec}: axes: 1,000,000,000 points (1,000 x 1,000 x 1,000 (grid)) is more than the "
        "limit of 100,000; allowed: fewer values, or a higher limit (archsim sweep "
        "--max-points N; max_points=N in Python)"
    )
    random = tmp_path / "random.yaml"
    random.write_text(
        "schema_version: 1\nname: r\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
        "mode: random\nsamples: 3000000000\naxes:\n  pe_array.num_pes: [2, 4]\n"
    )
    with pytest.raises(ConfigError, match="random.yaml: samples: 3,000,000,000 points"):
        plan_sweep(random)
    small = tmp_path / "small.yaml"
    small.write_text(
        "schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
        "seeds: [0, 1]\naxes:\n  pe_array.num_pes: [2, 4, 8]\n"
    )
    with pytest.raises(ConfigError, match=r"6 points \(3 \(grid\) x 2 seeds\) is more than"):
        plan_sweep(small, max_points=5)
    assert len(plan_sweep(small, max_points=6).points) == 6


def test_constraints_that_skip_every_point_are_an_error(tmp_path):
    spec = tmp_path / "none.yaml"
    spec.write_text(
        "schema_version: 1\nname: n\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
        "axes:\n  pe_array.num_pes: [2, 4]\nconstraints:\n  - num_pes > 100\n"
    )
    with pytest.raises(ConfigError) as err:
        plan_sweep(spec)
    assert str(err.value) == (
        f"{spec}: constraints: every one of the 2 points is skipped, 2 by 'constraint: "
        "num_pes > 100'; allowed: axes and constraints that leave at least one point to run"
    )


def test_memo_counts_a_shared_field_once():
    """A dataclass field marked ``metadata={"memo": "shared"}`` (memoised on its own, as an EIE
    preparation's layer) is not counted again in the value that holds it."""
    import dataclasses

    @dataclasses.dataclass
    class Held:
        shared: np.ndarray = dataclasses.field(metadata={"memo": "shared"})
        own: np.ndarray

    value = Held(np.zeros(10_000), np.zeros(100))
    assert memo._nbytes(value) < 2_000  # the 800 B of ``own`` and a little


def test_memo_new_group_keeps_only_lasting_entries():
    memo.enable(limit_bytes=1 << 20)
    memo.clear()
    try:
        memo.memoized(("layer", 0), lambda: np.zeros(10), lasting=True)
        memo.memoized(("prepared", 0), lambda: np.zeros(10))
        memo.new_group()
        assert memo.stats()["entries"] == 1
        memo.memoized(("layer", 0), lambda: pytest.fail("a lasting entry was dropped"))
        memo.memoized(("prepared", 0), lambda: np.ones(10))
        assert memo.stats()["computed"] == {"layer": 1, "prepared": 2}
        assert memo.stats()["bytes"] == 2 * memo._nbytes(np.zeros(10))
    finally:
        memo.disable()
        memo.clear()


def test_group_starts_are_the_units_of_one_group():
    """A worker forgets the group before (``memo.new_group``) only where a unit holds one
    group or part of one, never at a unit of small groups merged (random order)."""
    from archsim.explore.schedule import GroupScheduler, group_starts, units

    levels = [0 if i % 25 == 0 else 1 if i % 5 == 0 else 2 for i in range(100)]
    assert GroupScheduler(100, 2, 8, levels).group_starts == {0, 25, 50, 75}
    assert GroupScheduler(100, 3, 8, levels).group_starts == {0, 10, 25, 35, 50, 75}  # cut
    merged = units(12, 1, 4, [0] * 12)
    assert group_starts(merged, [0] * 12) == set() and group_starts(merged, None) == set()


class Fut:
    """A stand-in future: the worker, that worker's epoch at submission, the chunk."""

    def __init__(self, worker: int, epoch: int, part: list[int]) -> None:
        self.worker, self.epoch, self.part = worker, epoch, part


@pytest.mark.parametrize("bad", [0, 5, 11])
def test_only_the_point_that_kills_its_worker_alone_is_blamed(bad: int) -> None:
    """A worker that dies takes every chunk queued on it along; those chunks' points are run
    again one at a time, each alone on its worker, so only the point that kills its worker
    on its own is recorded (a point queued beside it used to be blamed too)."""
    from archsim.explore.schedule import IN_FLIGHT_PER_WORKER, WorkerDied, run_scheduled

    assert IN_FLIGHT_PER_WORKER >= 2  # else nothing is ever queued beside a point
    epoch = [0, 0]  # per worker: bumped when it dies or is replaced
    order: list[Fut] = []  # futures in submission order

    def submit(part: list[int], worker: int, fresh: bool) -> Fut:
        order.append(Fut(worker, epoch[worker], list(part)))
        return order[-1]

    def wait_first(futs: list[Fut]) -> list[Fut]:
        return [min(futs, key=order.index)]  # oldest first, one at a time

    def result(fut: Fut) -> list[int]:
        worker, at, part = fut.worker, fut.epoch, fut.part
        if at != epoch[worker]:
            raise WorkerDied("killed with its worker")
        if bad in part:
            epoch[worker] += 1
            raise WorkerDied("killed by SIGKILL")
        return part

    def restart(worker: int) -> None:
        epoch[worker] += 1

    out = list(run_scheduled(list(range(12)), 2, 2, submit, wait_first, result,
                             died=lambda task, why: ("died", task), restart=restart))  # fmt: skip
    died = [r for r in out if isinstance(r, tuple)]
    done = sorted(t for r in out if isinstance(r, list) for t in r)
    assert died == [("died", bad)]
    assert done == [t for t in range(12) if t != bad]


def test_a_sweep_refuses_a_folder_holding_another_sweep_or_a_run(tmp_path) -> None:
    """A second sweep into a folder replaced the first one's points and report; one into an
    `archsim run` folder mixed the two, and `archsim report` then rebuilt the run's page."""
    from archsim.cli_sweep import _check_not_another
    from archsim.errors import ArchsimError

    _check_not_another(tmp_path / "new", "a")  # a new folder
    (tmp_path / "sweep.json").write_text('{"spec": {"name": "a"}}')
    _check_not_another(tmp_path, "a")  # its own folder: resumes
    with pytest.raises(ArchsimError, match="holds the sweep 'a', not 'b'; allowed: a new folder"):
        _check_not_another(tmp_path, "b")
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text('{"format_version": 1}')
    with pytest.raises(ArchsimError, match="holds an `archsim run` result"):
        _check_not_another(run, "a")
    (run / "results.json").write_text("{}")  # no command's: still not this sweep's folder
    with pytest.raises(ArchsimError, match="holds a results.json; allowed: a new folder"):
        _check_not_another(run, "a")


def test_a_run_refuses_a_sweeps_folder(tmp_path, capsys) -> None:
    """`archsim run -o SWEEP_DIR` replaced the sweep's report.html with a run's, and
    `archsim report` then rebuilt the run's page there (the reverse of the test above)."""
    from archsim.cli import main

    (tmp_path / "sweep.json").write_text('{"spec": {"name": "a"}}')
    assert main(["run", "tiny_eie", "-o", str(tmp_path), "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "holds an `archsim sweep` result (sweep.json)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.json"]


def test_a_range_whose_spacing_overflows_is_refused() -> None:
    """low -1.7e308 to high 1.7e308 made NaN values, which an integer axis traced back on."""
    from archsim.config.sweep import AxisRange

    with pytest.raises(pydantic.ValidationError, match="high - low overflows a float"):
        AxisRange(low=-1.7e308, high=1.7e308, num=3)
    assert AxisRange(low=1.0, high=1.7e308, num=3).high == 1.7e308


def test_log_charts_take_limits_that_are_not_finite() -> None:
    """A hand-edited results.json with 1e308 in a log-scaled column: no decade ticks, no
    traceback."""
    from archsim.report.svg_charts import _decades

    assert _decades(1.0, 1000.0) == [1.0, 10.0, 100.0, 1000.0]
    assert _decades(1.0, math.inf) == [] and _decades(0.0, 10.0) == []
