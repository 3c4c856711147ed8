"""Tests for CACTI-based SRAM energy/area interpolation at 45 nm."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archsim.energy import (
    load_tables,
    sram_area_mm2,
    sram_read_energy_pj,
    sram_width_exponent,
    sram_write_energy_pj,
)

T = load_tables()
KB = 1024
CACTI = [
    (1 * KB, 1.7, 3.5, 0.004, 9.1),
    (4 * KB, 3.4, 6.5, 0.014, 10.2),
    (8 * KB, 6.1, 7.9, 0.026, 11.5),
    (16 * KB, 11.6, 10.7, 0.051, 14.3),
    (32 * KB, 17.0, 15.4, 0.095, 26.8),
    (64 * KB, 25.9, 19.6, 0.209, 51.8),
    (128 * KB, 32.3, 26.1, 0.430, 73.8),
    (256 * KB, 44.7, 38.5, 0.872, 124.6),
    (1024 * KB, 93.5, 76.2, 3.263, 251.9),
    (4096 * KB, 188.7, 155.1, 11.989, 521.7),
]


@pytest.mark.parametrize(("cap", "r64", "w64", "area", "r256"), CACTI)
def test_cacti_rows_reproduced(cap: int, r64: float, w64: float, area: float, r256: float) -> None:
    assert sram_read_energy_pj(T, cap, 64) == r64
    assert sram_write_energy_pj(T, cap, 64) == w64
    assert sram_read_energy_pj(T, cap, 256) == r256
    assert sram_area_mm2(T, cap, 64) == area
    assert sram_area_mm2(T, cap, 256) == area
    # the power law itself also reproduces the 256-bit point
    alpha = sram_width_exponent(T, cap)
    assert r64 * 4**alpha == pytest.approx(r256, rel=1e-12)
    assert alpha == pytest.approx(math.log(r256 / r64) / math.log(4), rel=1e-12)


CAPS = [2**k for k in range(8, 25)]  # 256 B .. 16 MB, includes extrapolation


@pytest.mark.parametrize("width", [32, 64, 128, 256])
def test_read_and_area_monotone_in_capacity(width: int) -> None:
    for fn in (sram_read_energy_pj, sram_area_mm2):
        vals = [fn(T, c, width) for c in CAPS]
        assert all(b > a for a, b in pairwise(vals)), fn.__name__


def test_write_64b_monotone_in_capacity() -> None:
    # Wider writes borrow the read width exponent, which dips at 8-16 KB in CACTI, so only the
    # tabulated 64-bit write column is guaranteed monotone.
    vals = [sram_write_energy_pj(T, c, 64) for c in CAPS]
    assert all(b > a for a, b in pairwise(vals))


def test_interpolation_between_neighbours_and_geometric_midpoint() -> None:
    for lo, hi in pairwise(CACTI):
        mid = math.sqrt(lo[0] * hi[0])
        for col, width, fn in ((1, 64, sram_read_energy_pj), (4, 256, sram_read_energy_pj)):
            v = fn(T, mid, width)
            assert lo[col] < v < hi[col]
            assert v == pytest.approx(math.sqrt(lo[col] * hi[col]), rel=1e-12)
        assert lo[3] < sram_area_mm2(T, mid, 64) < hi[3]
        assert lo[2] < sram_write_energy_pj(T, mid, 64) < hi[2]


def test_extrapolation_uses_end_segment_slope() -> None:
    slope_lo = math.log(3.4 / 1.7) / math.log(4)
    assert sram_read_energy_pj(T, 512, 64) == pytest.approx(1.7 * 0.5**slope_lo, rel=1e-12)
    slope_hi = math.log(188.7 / 93.5) / math.log(4)
    assert sram_read_energy_pj(T, 8 * 1024 * KB, 64) == pytest.approx(
        188.7 * 2**slope_hi, rel=1e-12
    )


def test_width_power_law() -> None:
    cap = 32 * KB
    alpha = math.log(26.8 / 17.0) / math.log(4)
    assert sram_read_energy_pj(T, cap, 128) == pytest.approx(17.0 * 2**alpha, rel=1e-12)
    assert sram_read_energy_pj(T, cap, 32) == pytest.approx(17.0 * 0.5**alpha, rel=1e-12)
    assert sram_write_energy_pj(T, cap, 256) == pytest.approx(15.4 * 4**alpha, rel=1e-12)
    # wider words cost more per access but less per bit at this capacity
    assert sram_read_energy_pj(T, cap, 256) / 256 < sram_read_energy_pj(T, cap, 64) / 64


@given(
    st.floats(min_value=1024, max_value=4 * 1024 * KB),
    st.floats(min_value=64, max_value=256),
)
def test_read_between_64_and_256_bit_values(cap: float, width: float) -> None:
    e = sram_read_energy_pj(T, cap, width)
    lo, hi = sram_read_energy_pj(T, cap, 64), sram_read_energy_pj(T, cap, 256)
    assert lo * (1 - 1e-12) <= e <= hi * (1 + 1e-12)


@pytest.mark.parametrize("fn", [sram_read_energy_pj, sram_write_energy_pj, sram_area_mm2])
@pytest.mark.parametrize(
    ("size", "width", "name"),
    [(0, 64, "size_bytes"), (-5, 64, "size_bytes"), (1024, 0, "width_bits"),
     (float("nan"), 64, "size_bytes"), (1024, True, "width_bits"), ("1KB", 64, "size_bytes")],
)  # fmt: skip
def test_bad_inputs_raise(fn, size, width, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        fn(T, size, width)
