"""Provenance: results carry version, fingerprint, full hardware and workload; the fingerprint
follows the energy/area tables as well as the model code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

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
