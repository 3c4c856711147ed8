"""The EIE datapath computes real outputs: fixed point vs NumPy within the rounding bound."""

from __future__ import annotations

import numpy as np
import pytest

import archsim
from archsim.accelerators.eie import functional_error_bound, run_eie_layer
from archsim.workload import read_eie_dir, synthetic_matvec

EIE = archsim.load_hardware("eie")


def _check(run):
    got = run.output_q * 2.0**-run.fixed_point.out_frac
    want = run.layer.reference_output()
    err = np.abs(got - want)
    bound = functional_error_bound(run)
    worst = int(np.argmax(err - bound))
    assert np.all(err <= bound + 1e-12), (
        f"row {worst}: |{got[worst]:.6f} - {want[worst]:.6f}| = {err[worst]:.3g} "
        f"> bound {bound[worst]:.3g}"
    )
    # ReLU output
    assert np.array_equal(run.output, np.maximum(got, 0))
    return err


def test_real_alex8_matches_numpy(alex8_dir):
    layer = read_eie_dir(alex8_dir, "alex8", n_rows=1000)
    run = run_eie_layer(EIE, layer)
    err = _check(run)
    # also against the dense float32 matrix-vector product of the decoded weights
    dense = layer.dense_weights().astype(np.float64) @ layer.activations.astype(np.float64)
    dense += layer.codebook[layer.bias_codes]
    got = run.output_q * 2.0**-run.fixed_point.out_frac
    assert np.max(np.abs(dense - got)) <= np.max(functional_error_bound(run))
    assert err.max() < 0.01 * np.abs(dense).max(), "fixed-point error above 1% of the range"


@pytest.mark.parametrize("n", [1, 16, 64, 256])
@pytest.mark.parametrize("acc_bits", [16, 24, 32])
def test_synthetic_layers_match_numpy(n, acc_bits):
    cfg = EIE.with_overrides({"pe_array.num_pes": n, "arithmetic.accumulator_bits": acc_bits})
    layer = synthetic_matvec(f"f{n}", 300, 500, 0.1, 0.4, True, seed=acc_bits)
    run = run_eie_layer(cfg, layer)
    err = _check(run)
    assert run.layer.reference_output().any()
    if acc_bits == 32:
        assert err.max() < 1e-3


def test_output_independent_of_pe_count():
    layer = synthetic_matvec("pe", 200, 300, 0.2, 0.5, True, seed=3)
    outs = [
        run_eie_layer(EIE.with_overrides({"pe_array.num_pes": n}), layer).output_q
        for n in (1, 7, 64)
    ]
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
