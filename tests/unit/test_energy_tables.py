"""Tests for loading and validating the packaged 45 nm energy tables."""

from __future__ import annotations

import shutil
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
import yaml

from archsim.energy import EnergyTables, load_tables
from archsim.energy.tables import CACTI_FILE, HOROWITZ_FILE, SCALING_FILE

TABLE_DIR = Path(__file__).resolve().parents[2] / "archsim" / "energy" / "tables"


@pytest.fixture()
def tables() -> EnergyTables:
    return load_tables()


def test_default_load_is_cached_and_matches_explicit_dir(tables: EnergyTables) -> None:
    assert load_tables() is tables
    assert load_tables(TABLE_DIR) == tables


def test_tables_are_immutable(tables: EnergyTables) -> None:
    with pytest.raises(FrozenInstanceError):
        tables.node_nm = 7  # type: ignore[misc]
    with pytest.raises(TypeError):
        tables.int_add_pj[8] = 1.0  # type: ignore[index]


def test_horowitz_points_exact(tables: EnergyTables) -> None:
    assert tables.node_nm == 45
    assert dict(tables.int_add_pj) == {8: 0.03, 32: 0.1}
    assert dict(tables.int_mult_pj) == {8: 0.2, 32: 3.1}
    assert dict(tables.fp_add_pj) == {16: 0.4, 32: 0.9}
    assert dict(tables.fp_mult_pj) == {16: 1.1, 32: 3.7}
    assert dict(tables.sram_read_64b_pj) == {8192: 10.0, 32768: 20.0, 1048576: 100.0}
    assert dict(tables.dram_access_64b_pj) == {"min": 1300.0, "max": 2600.0}


def test_eie_gpu_and_dram_values(tables: EnergyTables) -> None:
    assert dict(tables.eie_pj) == {
        "int_mult_16b": 0.62,
        "int_mult_8b": 0.21,
        "register_file_32b": 1.0,
        "sram_32kb_read_32b": 5.0,
        "dram_read_32b": 640.0,
    }
    assert dict(tables.gpu_pj) == {
        "hfma": 1.5,
        "hdp4a": 6.0,
        "hmma": 110.0,
        "imma": 160.0,
        "instruction_overhead": 30.0,
        "l1_32b": 5.0,
        "llc_32b": 50.0,
        "dram_32b": 640.0,
    }
    assert dict(tables.dram_pj_per_bit) == {"lpddr4": 8.0, "hbm2": 6.25, "hbm3": 4.05}


def test_cacti_rows_loaded_in_order(tables: EnergyTables) -> None:
    caps = [r.capacity_bytes for r in tables.sram_rows]
    assert caps == [1024 * k for k in (1, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)]
    row = tables.sram_rows[4]
    assert (row.read_64b_pj, row.write_64b_pj, row.area_mm2, row.read_256b_pj) == (
        17.0,
        15.4,
        0.095,
        26.8,
    )


def test_every_number_has_a_source() -> None:
    for name in (HOROWITZ_FILE, CACTI_FILE, SCALING_FILE):
        data = yaml.safe_load((TABLE_DIR / name).read_text())
        assert data["schema_version"] == 1 and data["source"].strip()

        def walk(node: object, path: str, name: str = name) -> None:
            if isinstance(node, dict):
                numeric = [k for k, v in node.items() if isinstance(v, (int, float))]
                numeric = [k for k in numeric if k not in ("schema_version",)]
                if numeric and path:
                    assert isinstance(node.get("source"), str), f"{name}:{path} lacks source"
                for k, v in node.items():
                    walk(v, f"{path}.{k}")
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, f"{path}[{i}]")

        walk(data, "")


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "tables"
    shutil.copytree(TABLE_DIR, dest)
    return dest


def _edit(directory: Path, name: str, mutate) -> None:
    path = directory / name
    data = yaml.safe_load(path.read_text())
    mutate(data)
    path.write_text(yaml.safe_dump(data))


@pytest.mark.parametrize(
    ("name", "mutate", "key"),
    [
        (HOROWITZ_FILE, lambda d: d.pop("gpu_pj"), "gpu_pj"),
        (HOROWITZ_FILE, lambda d: d["int_mult_pj"].pop(32), "int_mult_pj.32"),
        (HOROWITZ_FILE, lambda d: d["fp_add_pj"][16].pop("source"), "fp_add_pj.16.source"),
        (HOROWITZ_FILE, lambda d: d["eie_pj"]["int_mult_16b"].update(value=-1), "int_mult_16b"),
        (HOROWITZ_FILE, lambda d: d.update(schema_version=2), "schema_version"),
        (HOROWITZ_FILE, lambda d: d.pop("source"), "source"),
        (CACTI_FILE, lambda d: d["rows"][3].pop("area_mm2"), "rows[3].area_mm2"),
        (CACTI_FILE, lambda d: d["rows"][0].update(read_64b_pj="x"), "rows[0].read_64b_pj"),
        (CACTI_FILE, lambda d: d["rows"].reverse(), "rows"),
        (SCALING_FILE, lambda d: d["nodes"][0].pop("energy"), "nodes[0].energy"),
        (SCALING_FILE, lambda d: d["nodes"].pop(1), "nodes"),
        (SCALING_FILE, lambda d: d.pop("schema_version"), "schema_version"),
    ],
)
def test_malformed_table_names_file_and_key(tmp_path: Path, name: str, mutate, key: str) -> None:
    directory = _copy(tmp_path)
    _edit(directory, name, mutate)
    with pytest.raises(ValueError) as info:
        load_tables(directory)
    assert name in str(info.value)
    assert key in str(info.value)


def test_invalid_yaml_and_missing_file(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    (directory / CACTI_FILE).write_text("rows: [unclosed\n")
    with pytest.raises(ValueError, match=CACTI_FILE):
        load_tables(directory)
    (directory / SCALING_FILE).unlink()
    (directory / CACTI_FILE).write_text((TABLE_DIR / CACTI_FILE).read_text())
    with pytest.raises(ValueError, match=SCALING_FILE):
        load_tables(directory)
