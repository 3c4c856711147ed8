"""DRAM page activations (``gpu_plan.activation_limited_load_bandwidth``): on in the V100 preset
(cited values in ``hw_configs/v100.yaml``), off where a preset has no ``dram_pages``."""

from __future__ import annotations

import pytest

import archsim
from archsim.accelerators.gpu_plan import (
    _bytes_per_activation,
    activation_limited_load_bandwidth,
    plans_for,
)
from archsim.accelerators.tensor_core import run_gemm
from archsim.config.gpu import DramPageConfig
from archsim.errors import ConfigError
from archsim.workload.gemm import GemmProblem

RATE = 9.067e9
PAGES = {"page_bytes": 1024, "column_address_bits": list(range(10)), "activations_per_s": RATE}


def _v100(pages: dict | None = PAGES):
    return archsim.load_hardware("v100").with_overrides({"dram_pages": pages})


def _prob(m: int, n: int, k: int, ta: bool = False, tb: bool = False) -> GemmProblem:
    return GemmProblem(
        layer="g", kind="gemm", m=m, n=n, k=k, batch=1, precision="fp16", accumulate="fp32",
        transpose_a=ta, transpose_b=tb,
    )  # fmt: skip


def test_v100_preset_values_and_off_elsewhere() -> None:
    assert archsim.load_hardware("v100").dram_pages == DramPageConfig(**PAGES)
    for name in ("a100", "h100"):
        hw = archsim.load_hardware(name)
        prob = _prob(7680, 16, 2560)
        assert hw.dram_pages is None
        assert activation_limited_load_bandwidth(hw, prob, plans_for(hw, prob)[0]) is None


def test_k_contiguous_rows_open_a_page_per_piece() -> None:
    hw, prob = _v100(), _prob(7680, 16, 2560)  # A stored m x k: rows 5120 B apart
    plan = plans_for(hw, prob)[0]
    piece = plan.k_step * 2
    share_a = 7680 / (7680 + 16)  # B (k x n, N contiguous) is read in whole pages
    expected = RATE / (share_a / piece + (1 - share_a) / 1024)
    assert activation_limited_load_bandwidth(hw, prob, plan) == pytest.approx(expected)


def test_m_and_n_contiguous_operands_read_whole_pages() -> None:
    hw, prob = _v100(), _prob(7680, 16, 2560, ta=True)
    plan = plans_for(hw, prob)[0]
    assert activation_limited_load_bandwidth(hw, prob, plan) == pytest.approx(RATE * 1024)


def test_rows_closer_than_a_page_share_it() -> None:
    pages = DramPageConfig(**PAGES)
    assert _bytes_per_activation(pages, 128, 128, 64) == 512  # 8 rows of 128 B per 1 KB page
    assert _bytes_per_activation(pages, 5120, 128, 64) == 64
    assert _bytes_per_activation(pages, 5120, 8, 64) == 1024  # 512 B in all: under a page
    two_kb = DramPageConfig(
        page_bytes=2048, column_address_bits=[*range(10), 14], activations_per_s=RATE
    )
    assert _bytes_per_activation(two_kb, 4096, 128, 64) == 128  # rows r and r + 4 share a page


def test_only_the_k_contiguous_layout_slows() -> None:
    on, off = _v100(), _v100(None)
    kmajor, mmajor = _prob(7680, 16, 2560), _prob(7680, 16, 2560, ta=True)
    assert run_gemm(on, mmajor)[0].cycles == run_gemm(off, mmajor)[0].cycles
    slow = run_gemm(on, kmajor)[0]
    assert slow.cycles > 1.15 * run_gemm(off, kmajor)[0].cycles
    seconds = slow.cycles / on.clock.frequency_hz
    assert 7680 * 2560 * 2 / seconds <= RATE * 64 * 1.001  # A at most at the activation cap


def test_page_bits_must_make_the_page() -> None:
    with pytest.raises(ConfigError, match="column_address_bits"):
        _v100({"page_bytes": 2048, "column_address_bits": list(range(10)), "activations_per_s": 1})
