"""Tests for per-operation energies at 45 nm."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest

from archsim.energy import (
    DRAM_KINDS,
    dram_energy_pj_per_bit,
    fp_add_energy_pj,
    fp_mult_energy_pj,
    int_add_energy_pj,
    int_mult_energy_pj,
    load_tables,
    register_file_energy_pj,
)

T = load_tables()


def test_horowitz_points_exact() -> None:
    assert int_add_energy_pj(T, 8) == 0.03
    assert int_add_energy_pj(T, 32) == 0.1
    assert int_mult_energy_pj(T, 8) == 0.2
    assert int_mult_energy_pj(T, 32) == 3.1
    assert fp_add_energy_pj(T, 16) == 0.4
    assert fp_add_energy_pj(T, 32) == 0.9
    assert fp_mult_energy_pj(T, 16) == 1.1
    assert fp_mult_energy_pj(T, 32) == 3.7


def test_eie_16bit_mult() -> None:
    assert int_mult_energy_pj(T, 16) == 0.62


def test_loglog_interpolation() -> None:
    # 16-bit add: geometric mean of the 8- and 32-bit points
    assert int_add_energy_pj(T, 16) == pytest.approx(math.sqrt(0.03 * 0.1), rel=1e-12)
    # 12-bit mult: on the 8 -> 16 segment through the EIE point
    slope = math.log(0.62 / 0.2) / math.log(2)
    assert int_mult_energy_pj(T, 12) == pytest.approx(0.2 * 1.5**slope, rel=1e-12)
    assert 0.2 < int_mult_energy_pj(T, 12) < 0.62 < int_mult_energy_pj(T, 24) < 3.1
    # fp8 is an extrapolation of the fp16 -> fp32 segment
    slope = math.log(3.7 / 1.1) / math.log(2)
    assert fp_mult_energy_pj(T, 8) == pytest.approx(1.1 * 0.5**slope, rel=1e-12)
    assert fp_add_energy_pj(T, 8) < 0.4


def test_monotone_in_bits() -> None:
    for fn in (int_add_energy_pj, int_mult_energy_pj, fp_add_energy_pj, fp_mult_energy_pj):
        vals = [fn(T, b) for b in range(1, 65)]
        assert all(b > a for a, b in pairwise(vals)), fn.__name__


def test_register_file_linear() -> None:
    assert register_file_energy_pj(T, 32) == 1.0
    assert register_file_energy_pj(T, 16) == 0.5
    assert register_file_energy_pj(T, 64) == 2.0


def test_dram_per_bit() -> None:
    assert dram_energy_pj_per_bit(T, "lpddr4") == 8.0
    assert dram_energy_pj_per_bit(T, "hbm2") == 6.25
    assert dram_energy_pj_per_bit(T, "HBM3") == 4.05
    assert dram_energy_pj_per_bit(T, "ddr_eie") == 20.0
    assert set(DRAM_KINDS) == {"lpddr4", "hbm2", "hbm3", "ddr_eie"}


def test_dram_unknown_kind_lists_allowed() -> None:
    with pytest.raises(ValueError, match="ddr5.*lpddr4, hbm2, hbm3, ddr_eie"):
        dram_energy_pj_per_bit(T, "ddr5")


@pytest.mark.parametrize("bits", [0, -8, 8.0, True, "8"])
@pytest.mark.parametrize(
    "fn",
    [
        int_add_energy_pj,
        int_mult_energy_pj,
        fp_add_energy_pj,
        fp_mult_energy_pj,
        register_file_energy_pj,
    ],
)
def test_bad_bits_raise(fn, bits) -> None:
    with pytest.raises(ValueError, match="bits must be a positive integer"):
        fn(T, bits)
