"""`validate --measured` says when the folder's GPU is not the part the config describes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.config.io import apply_set
from archsim.measure.folder import DEVICE_FILE, read_folder
from archsim.validation.measured_device import device_notes, measured_spec

#: an H200 as a lent machine reported it (143,771 MiB, 60 MB L2, 3201 MHz memory clock)
H200 = {"name": "NVIDIA H200", "sms": 132, "total_memory": 150754820096,
        "L2_cache_size": 62914560, "memory_clock_rate": 3201000, "memory_bus_width": 6144,
        "power_limit_w": 700, "max_sm_clock_mhz": 1980}  # fmt: skip


def test_the_reference_h100_is_the_h100_preset(h100_dir: Path) -> None:
    device = json.loads((h100_dir / DEVICE_FILE).read_text())["device"]
    spec = measured_spec(device)
    assert spec["sms"] == 132 and spec["l2.size_bytes"] == 52428800
    assert spec["hbm.bandwidth_bytes_per_s"] == pytest.approx(
        3352e9, rel=1e-3
    )  # 2619 MHz x 2 x 640 B
    assert spec["power.max_clock_hz"] == 1.98e9 and spec["tdp_w"] == 700
    assert device_notes(archsim.load_hardware("h100"), device) == []


def test_an_h200_against_h100_names_the_fields_and_the_sets_that_match_it() -> None:
    h100 = archsim.load_hardware("h100")
    (note,) = device_notes(h100, H200)
    assert note.startswith("the folder's device (NVIDIA H200) is not the part h100 describes")
    assert "l2.size_bytes 60 MiB measured, 50 MiB in h100" in note
    assert "hbm.bandwidth_bytes_per_s 4.92 TB/s measured, 3.35 TB/s in h100" in note
    sets = note.split("this part: ")[1].split()
    assert sets[0::2] == ["--set"] * 3 and "sms" not in note and "tdp_w" not in note
    assert device_notes(apply_set(h100, sets[1::2]), H200) == []  # the sets it names close it


@pytest.mark.parametrize("bad", ["fast", None, -1, 0, float("nan"), float("inf"), True, [3]])
def test_a_missing_or_garbled_device_field_is_not_compared(bad) -> None:
    device = {**H200, "L2_cache_size": bad, "memory_bus_width": bad, "total_memory": bad}
    spec = measured_spec(device)
    assert "l2.size_bytes" not in spec and "hbm.bandwidth_bytes_per_s" not in spec
    assert device_notes(archsim.load_hardware("h100"), device) == []


def test_cli_prints_the_note_for_another_part(h100_dir: Path, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "h200"
    folder.mkdir()
    rows = (h100_dir / "gemm_square.csv").read_text().splitlines()
    (folder / "gemm_square.csv").write_text("\n".join(rows[:4]) + "\n")
    (folder / DEVICE_FILE).write_text(json.dumps({"device": H200, "memory_eager": {},
                                                  "energy": {}}))  # fmt: skip
    assert read_folder(folder).device["name"] == "NVIDIA H200"
    assert main(["validate", "tensor_core", "--measured", str(folder), "-q"]) in (0, 1)
    out = capsys.readouterr().out
    assert "note: the folder's device (NVIDIA H200) is not the part h100 describes" in out
