"""`archsim report` on a sweep folder whose table was edited by hand: each refusal names the
file (some named neither file, or showed the API's `<api>: totals` label), and tables that
drew a page of nonsense (no rows, points renumbered into one, numbers stored as text) are
refused."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from archsim.cli import main


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sw")
    spec = root / "s.yaml"
    spec.write_text("schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
                    "axes: {pe_array.num_pes: [2, 4]}\n")  # fmt: skip
    assert main(["sweep", str(spec), "-o", str(root / "out"), "-j", "1", "-q"]) == 0
    return root / "out"


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in ("results.parquet", "sweep.json"):
        (dst / name).write_bytes((src / name).read_bytes())
    return dst


def _time_as_text(f: pd.DataFrame) -> pd.DataFrame:
    return f.assign(total_time_s=f["total_time_s"].astype(str))


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda f: f.drop(columns="pe_array.num_pes"), "no column 'pe_array.num_pes', an axis"),
        (lambda f: f.drop(columns="point"), "not a results table written by `archsim sweep`"),
        (_time_as_text, "total_time_s: stored as"),
        (lambda f: f.iloc[0:0], "holds no rows"),
        (lambda f: f.assign(point=0), "point 0 holds layer 0 twice"),
    ],
)
def test_a_hand_edited_table_is_refused_naming_it(sweep_dir, tmp_path, capsys, edit, needle):
    folder = _copy(sweep_dir, tmp_path / "s")
    parquet = folder / "results.parquet"
    edit(pd.read_parquet(parquet)).to_parquet(parquet)
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{parquet}: " in err and needle in err, err
    assert "<api>" not in err and not (folder / "report.html").exists()


def test_a_sweep_json_axis_the_table_lacks_names_both_files(sweep_dir, tmp_path, capsys):
    folder = _copy(sweep_dir, tmp_path / "s")
    meta = json.loads((folder / "sweep.json").read_text())
    meta["axes"] = {"pe_array.num_pes": [2, 4], "activation_fifo.depth": [8]}
    (folder / "sweep.json").write_text(json.dumps(meta))
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'results.parquet'}: no column 'activation_fifo.depth'" in err, err
    assert f"an axis {folder / 'sweep.json'} names" in err


def test_the_untouched_folder_still_rebuilds(sweep_dir, tmp_path):
    folder = _copy(sweep_dir, tmp_path / "s")
    assert main(["report", str(folder)]) == 0 and (folder / "report.html").is_file()


@pytest.mark.parametrize("field", ["axes", "metrics"])
def test_a_sweep_json_with_no_axes_or_metrics_is_refused(sweep_dir, tmp_path, capsys, field):
    # drew a page with no figures and no columns
    folder = _copy(sweep_dir, tmp_path / "s")
    meta = json.loads((folder / "sweep.json").read_text())
    meta[field] = {}
    (folder / "sweep.json").write_text(json.dumps(meta))
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'sweep.json'}: not a sweep.json" in err and f"{field} is empty" in err
