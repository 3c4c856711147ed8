"""Configs: strict, frozen, overridable by dotted path, JSON Schema, presets."""

from __future__ import annotations

import json

import pydantic
import pytest

import archsim
from archsim.cli import main
from archsim.config.io import load_hardware, load_workload


def test_eie_preset_values():
    hw = archsim.load_hardware("eie")
    assert hw.pe_array.num_pes == 64
    assert hw.clock.frequency_hz == 800e6
    assert hw.technology.node_nm == 45
    assert hw.activation_fifo.depth == 8
    assert hw.spmat_sram.width_bits == 64 and hw.spmat_sram.size_bytes == 128 * 1024
    assert hw.pointer_sram.size_bytes == 32 * 1024 and hw.pointer_sram.banks == 2
    assert hw.activation_sram.size_bytes == 2 * 1024
    assert hw.encoding.weight_index_bits == 4 and hw.encoding.codebook_entries == 16
    assert hw.arithmetic.data_bits == 16
    assert hw.entries_per_line == 8


def test_frozen_and_extra_forbidden():
    hw = archsim.load_hardware("eie")
    with pytest.raises(pydantic.ValidationError):
        hw.pe_array.num_pes = 3
    data = hw.model_dump()
    data["bogus"] = 1
    with pytest.raises(pydantic.ValidationError):
        type(hw).model_validate(data)


def test_with_overrides_revalidates_and_names_the_path():
    hw = archsim.load_hardware("eie")
    hw2 = hw.with_overrides({"activation_fifo.depth": 2, "clock.frequency_hz": 1e9})
    assert (hw2.activation_fifo.depth, hw2.clock.frequency_hz) == (2, 1e9)
    assert hw.activation_fifo.depth == 8  # original untouched
    with pytest.raises(archsim.ConfigError, match=r"activation_fifo\.depht: unknown field"):
        hw.with_overrides({"activation_fifo.depht": 2})
    with pytest.raises(archsim.ConfigError, match=r"activation_fifo\.depth"):
        hw.with_overrides({"activation_fifo.depth": 0})
    with pytest.raises(archsim.ConfigError, match="multiple of the entry size"):
        hw.with_overrides({"spmat_sram.width_bits": 60})


def test_schema_command(capsys):
    assert main(["schema", "hardware"]) == 0
    schema = json.loads(capsys.readouterr().out)
    eie = schema["$defs"]["EieConfig"]
    assert "pe_array" in eie["properties"] and eie["additionalProperties"] is False
    assert {"EieConfig", "ScnnConfig", "DcnnConfig", "GpuConfig"} <= set(schema["$defs"])
    assert main(["schema", "workload"]) == 0
    assert "layers" in json.loads(capsys.readouterr().out)["properties"]


def test_list_command(capsys):
    assert main(["list", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {p["name"] for p in out["hardware"]} >= {"eie", "tiny_eie"}
    assert {p["name"] for p in out["workload"]} >= {"eie_benchmarks"}


def test_lstm_matrix_shape_matches_table_iii():
    wl = archsim.load_workload("eie_benchmarks")
    lstm = next(lay for lay in wl.layers if lay.kind == "lstm")
    rows, cols = lstm.matrix_shape
    assert (rows, cols + int(lstm.bias)) == (2400, 1201)


def test_a_config_changed_in_place_is_not_handed_out_again() -> None:
    """Loads share one validated model while it is as loaded; a caller that changes a list
    inside it (frozen stops assignment only) does not change what the next load returns."""
    h100 = load_hardware("h100")
    assert load_hardware("h100") is h100
    tiles = len(h100.tiles)
    h100.tiles.clear()
    fresh = load_hardware("h100")
    assert fresh is not h100 and len(fresh.tiles) == tiles
    wl = load_workload("eie_benchmarks")
    layers = len(wl.layers)
    wl.layers.append(wl.layers[0])
    assert len(load_workload("eie_benchmarks").layers) == layers


def test_dotted_paths_index_lists() -> None:
    """``--set``, sweep axes and ``with_overrides`` reach list items by index (the paths
    `archsim calibrate` fits, e.g. ``library.families.2.mma_rate_fraction``); a bad index
    names the list's length."""
    from archsim.errors import ConfigError

    h100 = load_hardware("h100")
    changed = h100.with_overrides(
        {"library.families.2.mma_rate_fraction": 0.5, "tiles.0.stages": 2}
    )
    assert changed.library.families[2].mma_rate_fraction == 0.5 and changed.tiles[0].stages == 2
    assert h100.library.families[2].mma_rate_fraction == 1.0
    n = len(h100.library.families)
    for bad in ("library.families.99.name", "library.families.x.name", "library.families.-1.name"):
        with pytest.raises(
            ConfigError, match=f"is not an item of a list of {n}; allowed: an index"
        ):
            h100.with_overrides({bad: "a"})
