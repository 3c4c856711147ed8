"""Provenance: results carry version, fingerprint, full hardware and workload; the fingerprint
follows the energy/area tables as well as the model code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

import archsim
from archsim.cli import main
from archsim.provenance import model_fingerprint, source_digest

LAYER = "{name: a, kind: fc, inputs: 64, outputs: 32, weight_density: 0.2, activation_density: 0.5}"


def test_fingerprint_follows_energy_tables(tmp_path: Path) -> None:
    root = Path(archsim.__file__).parent
    copy = tmp_path / "archsim"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest(copy)
    assert before == model_fingerprint()
    table = copy / "energy" / "tables" / "horowitz_45nm.yaml"
    table.write_text(table.read_text(encoding="utf-8") + "\n# a changed table\n", "utf-8")
    assert source_digest(copy) != before
    table.write_text((root / "energy" / "tables" / "horowitz_45nm.yaml").read_text("utf-8"))
    assert source_digest(copy) == before
    (copy / "output.py").write_text("# presentation only\n", encoding="utf-8")
    assert source_digest(copy) == before


def test_results_json_carries_everything_to_reproduce(tmp_path: Path, capsys: Any) -> None:
    wl = tmp_path / "wl.yaml"
    wl.write_text(f"schema_version: 1\nname: r\nsource: test\nlayers:\n  - {LAYER}\n", "utf-8")
    out = tmp_path / "o"
    assert main(["run", "tiny_eie", str(wl), "-o", str(out), "-q", "--seed", "3"]) == 0
    meta = json.loads((out / "results.json").read_text(encoding="utf-8"))["metadata"]
    assert meta["archsim_version"] == archsim.__version__
    assert meta["model_fingerprint"] == model_fingerprint()
    assert meta["workload_spec"]["layers"][0]["inputs"] == 64
    assert meta["workload_spec"]["source"] == "test"
    assert meta["hardware_config"] == archsim.load_hardware("tiny_eie").model_dump(mode="json")
    # the recorded configs reproduce the run exactly
    again = archsim.simulate(
        archsim.config.io.hardware_from_dict(meta["hardware_config"]),
        archsim.config.workload.WorkloadSpec.model_validate(meta["workload_spec"]),
        seed=3,
    )
    res = archsim.RunResult.from_json(out / "results.json")
    assert again.total_cycles == res.total_cycles
    assert again.total_energy_pj == res.total_energy_pj


def test_sweep_tables_carry_the_provenance(tmp_path: Path) -> None:
    from archsim.config.io import hardware_from_dict
    from archsim.config.workload import WorkloadSpec
    from archsim.explore import SweepStore
    from archsim.output import frame_to_parquet
    from archsim.provenance import read_provenance

    wl = tmp_path / "wl.yaml"
    wl.write_text(f"schema_version: 1\nname: s\nsource: test\nlayers:\n  - {LAYER}\n", "utf-8")
    out = tmp_path / "sweep"
    axes = {"pe_array.num_pes": [2, 4]}
    frame = archsim.sweep("tiny_eie", wl, axes=axes, seeds=[5], out_dir=out, n_jobs=1)
    prov = frame.attrs["provenance"]
    assert read_provenance(out / "store" / "compacted.parquet") == prov
    assert prov["archsim_version"] == archsim.__version__
    assert prov["model_fingerprint"] == model_fingerprint()  # includes the energy tables
    assert "depends only on (hardware, workload, seed)" in prov["deterministic"]
    assert prov["hardware_config"] == archsim.load_hardware("tiny_eie").model_dump(mode="json")
    assert [w["layers"][0]["inputs"] for w in prov["workload_specs"]] == [64]
    assert prov["sweep_spec"]["axes"] == {"pe_array.num_pes": [2, 4]}
    assert prov["axes"] == ["pe_array.num_pes"]
    sweep_json = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert {k: sweep_json[k] for k in prov} == prov
    # the file `archsim sweep` writes, read back by any Arrow reader
    frame_to_parquet(frame, tmp_path / "results.parquet")
    assert read_provenance(tmp_path / "results.parquet") == prov
    assert len(pd.read_parquet(tmp_path / "results.parquet")) == len(frame) == 2
    # an Arrow part file (what a killed sweep leaves) carries it too
    store = SweepStore(tmp_path / "parts", prov)
    part = store.append(pa.table({"point_key": ["k"], "status": ["ok"]}))
    assert read_provenance(part) == prov
    # the recorded base hardware, with a row's axis value, reproduces that row
    row = frame[frame["pe_array.num_pes"] == 4].iloc[0]
    hw = hardware_from_dict(prov["hardware_config"]).with_overrides({"pe_array.num_pes": 4})
    again = archsim.simulate(hw, WorkloadSpec.model_validate(prov["workload_specs"][0]), seed=5)
    print("cycles: sweep", row["total_cycles"], "re-run from provenance", again.total_cycles)
    assert again.total_cycles == row["total_cycles"]
    assert again.layers[0].cycles == row["cycles"]
    assert again.total_energy_pj == row["total_energy_pj"]
