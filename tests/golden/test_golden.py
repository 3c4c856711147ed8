"""Golden results: exact cycles and counts of preset runs.

Regenerate after an intended model change with ``pytest tests/golden --regen-golden`` and
explain the change in CHANGELOG.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim

GOLDEN = Path(__file__).parent
CASES = {
    "eie_benchmarks_seed0": ("eie", "eie_benchmarks", 0),
    "tiny_eie_benchmarks_seed3": ("tiny_eie", "eie_benchmarks", 3),
}
KEYS = (
    "cycles",
    "macs_effective",
    "eie_ideal_cycles",
    "eie_spmat_line_reads",
    "eie_pointer_reads",
    "eie_bypasses",
    "eie_broadcast_stall_cycles",
    "eie_padding_entries",
)


def _snapshot(hw: str, wl: str, seed: int) -> dict:
    if hw == "tiny_eie":  # keep the tiny run fast: a slice of the benchmark layers
        spec = archsim.load_workload(wl)
        wl = spec.model_copy(update={"layers": spec.layers[7:]})
    res = archsim.simulate(hw, wl, seed=seed)
    df = res.to_dataframe()
    layers = {row["layer"]: {k: int(row[k]) for k in KEYS} for _, row in df.iterrows()}
    return {"total_cycles": res.total_cycles, "layers": layers}


@pytest.mark.parametrize("case", list(CASES))
def test_golden(case, regen_golden):
    path = GOLDEN / f"{case}.json"
    got = _snapshot(*CASES[case])
    if regen_golden:
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert got == want, f"{case} differs from {path.name}; rerun with --regen-golden if intended"
