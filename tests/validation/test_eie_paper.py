"""EIE against Han et al., ISCA 2016, through the claims registry (`archsim validate eie`).

Every EIE claim runs here; paper values, tolerances and reasons live in archsim/validation/eie.py.
"""

from __future__ import annotations

import pytest

from archsim.validation.eie import EIE_CLAIMS

#: documented FAILs (mechanism in the claim's reason) -> regression bound on |relative error|
KNOWN_GAPS = {"Table IV VGG-6 actual": 0.30}
_REAL_DATA = [c for c in EIE_CLAIMS if "real Alex-8" in c.source or "real layer" in c.name]
_SYNTHETIC = [c for c in EIE_CLAIMS if c not in _REAL_DATA]


@pytest.mark.parametrize("claim", _SYNTHETIC, ids=lambda c: c.name)
def test_synthetic_and_closed_form_claims(claim, check_claim):
    check_claim(claim, KNOWN_GAPS.get(claim.name))


@pytest.mark.parametrize("claim", _REAL_DATA, ids=lambda c: c.name)
def test_real_alex8_claims(claim, check_claim, alex8_dir):
    check_claim(claim, KNOWN_GAPS.get(claim.name))


def test_imbalance_only_adds_time(runs):
    df = runs.run("eie", "eie_benchmarks").to_dataframe()
    assert (df["cycles"] >= df["eie_ideal_cycles"]).all()


def test_real_alex8_functional(runs, alex8_dir):
    layer = runs.alex8_real().layers[0]
    err = layer.extras["eie_functional_max_error"]
    bound = layer.extras["eie_functional_error_bound"]
    assert err <= bound, f"functional error {err} above the rounding bound {bound}"


def test_table_ii_largest_modules_in_order(runs, alex8_dir):
    energy = runs.alex8_real().layers[0].energy_by_component_pj
    top = max(("spmat_sram", "pointer_sram", "arithmetic", "activation_sram"), key=energy.get)
    assert top == "spmat_sram", f"largest module {top}; the paper's is SpmatRead (54 %)"
    assert energy["pointer_sram"] > energy["activation_fifo"]
