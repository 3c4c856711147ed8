"""Eager device copies against the model's memory kernels (``validation.measured_memory``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import archsim
from archsim.accelerators.gpu_conv import MemoryStep, memory_cycles
from archsim.validation.measured_memory import copy_energy, format_memory, memory_rows


def test_rows_time_copies_eagerly_and_list_reductions() -> None:
    h100 = archsim.load_hardware("h100")
    eager = h100.with_overrides({"launch.mode": "eager"})
    clock = h100.clock.frequency_hz
    mem = {
        "copy_1MB": {"time_s": 7.7e-6, "bytes_moved": 2 << 20},
        "copy_256MB": {"time_s": 180e-6, "bytes_moved": 512 << 20},
        "read_256MB": {"time_s": 94e-6, "bytes": 256 << 20},
        "tiny_kernel_back_to_back_s": 1.17e-5,  # not a copy or read entry
    }
    rows = memory_rows(h100, mem).set_index("entry")
    assert list(rows.index) == ["copy_1MB", "copy_256MB", "read_256MB"]
    # a small copy waits for the host's launch interval (the eager floor)
    assert rows.loc["copy_1MB", "sim_time_s"] == pytest.approx(h100.launch.eager_s, rel=1e-3)
    # a large one is its bytes at the achievable HBM rate after the GPU's launch gap
    big = memory_cycles(eager, MemoryStep("c", 256 << 20, 256 << 20)) / clock
    assert rows.loc["copy_256MB", "sim_time_s"] == big
    hbm = h100.hbm.bandwidth_bytes_per_s * h100.hbm_achievable_fraction
    assert big == pytest.approx(h100.launch.graph_s + (512 << 20) / hbm, rel=1e-3)
    assert rows.loc["copy_256MB", "error"] == pytest.approx(big / 180e-6 - 1)
    assert math.isnan(rows.loc["read_256MB", "sim_time_s"]) and rows.loc["read_256MB", "reason"]
    text = "\n".join(format_memory(memory_rows(h100, mem)))
    assert "copies: median |error|" in text and "not compared: read_256MB" in text


def test_l2_resident_copies_run_at_l2_speed_larger_ones_at_hbm() -> None:
    """The L2 rule follows what stays resident between calls (40 MB on H100), not L2's size."""
    h100 = archsim.load_hardware("h100")
    clock = h100.clock.frequency_hz
    fits = h100.l2.resident_capacity_bytes
    inside = memory_cycles(h100, MemoryStep("a", fits // 2, fits // 2)) / clock
    outside = memory_cycles(h100, MemoryStep("b", fits // 2 + 4096, fits // 2 + 4096)) / clock
    assert outside > 2 * inside


def test_copy_energy_needs_a_power_block_and_the_bytes() -> None:
    h100, v100 = archsim.load_hardware("h100"), archsim.load_hardware("v100")
    entry = {"joules_per_call": 0.36, "bytes_per_call": 2 << 30}
    assert copy_energy(h100, "gemm_fp16_8192", entry) is None  # not a copy
    assert "power block" in copy_energy(v100, "hbm_copy_4GB", entry)["reason"]
    assert "bytes_per_call" in copy_energy(h100, "hbm_copy_4GB", {"joules_per_call": 1})["reason"]
    got = copy_energy(h100, "hbm_copy_4GB", entry)
    assert got["sim_clock_hz"] == h100.power.max_clock_hz  # memory-bound: far under 700 W
    assert h100.power.static_power_w < got["sim_power_w"] < h100.power.power_limit_w


def test_h100_copies_and_copy_energy_match_the_measurements(h100_dir: Path) -> None:
    """../shared/data/h100: every copy the GPU, not the host, limits (>= 16 MB) within 10 %,
    and the 4 GB copy's NVML energy within 5 % (the row the SM-active energy comes from, so a
    consistency check of the time and the prices)."""
    doc = json.loads((h100_dir / "device_memory_energy.json").read_text())
    h100 = archsim.load_hardware("h100")
    rows = memory_rows(h100, doc["memory_eager"])
    big = rows[(rows["kind"] == "copy") & (rows["bytes_moved"] >= 32 << 20)]
    assert len(big) >= 8
    worst = big.loc[big["error"].abs().idxmax()]
    assert abs(worst["error"]) < 0.10, worst.to_dict()
    entry = doc["energy"]["hbm_copy_4GB"]
    got = copy_energy(h100, "hbm_copy_4GB", entry)
    err = got["sim_energy_j"] / entry["joules_per_call"] - 1
    assert abs(err) < 0.05, f"{got['sim_energy_j']:.4f} J vs {entry['joules_per_call']:.4f} J"


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("device", "sms", 0),
        ("device", "max_sm_clock_mhz", 0),
        ("device", "power_limit_w", -700),
        ("memory_eager", "tiny_kernel_back_to_back_s", 0),
    ],
)
def test_device_readings_that_cannot_be(tmp_path, h100_dir, section, key, value) -> None:
    """`calibrate` accepted them (exit 0) and wrote a launch cost of 0 s."""
    import json
    import shutil

    from archsim.cli import main

    folder = tmp_path / "m"
    shutil.copytree(h100_dir, folder, copy_function=shutil.copyfile)
    path = folder / "device_memory_energy.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc[section][key] = value
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "cal.yaml"
    assert main(["calibrate", "tensor_core", "--measured", str(folder), "-o", str(out)]) == 2
    assert not out.exists()
