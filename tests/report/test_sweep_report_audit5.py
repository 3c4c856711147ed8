"""`archsim report` on a sweep folder whose table was edited by hand: each refusal names the
file (some named neither file, or showed the API's `<api>: totals` label), and tables that
drew a page of nonsense (no rows, points renumbered into one, numbers stored as text) are
refused."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from archsim.cli import main


def _time_as_text(f: pd.DataFrame) -> pd.DataFrame:
    return f.assign(total_time_s=f["total_time_s"].astype(str))


def _status_none(f: pd.DataFrame) -> pd.DataFrame:
    return f.assign(status=None)


def _area(value: object):
    return lambda f: f.assign(total_area_mm2=value)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda f: f.drop(columns="pe_array.num_pes"), "no column 'pe_array.num_pes', an axis"),
        (lambda f: f.drop(columns="point"), "not a results table written by `archsim sweep`"),
        (_time_as_text, "total_time_s: stored as"),
        (lambda f: f.iloc[0:0], "holds no rows"),
        (lambda f: f.assign(point=0), "point 0 holds layer 0 twice"),
        # found by a fuzz of tampered folders (forty-first session): a traceback, or accepted
        (lambda f: f.drop(columns="error"), "(KeyError: 'error')"),  # a traceback
        (lambda f: f.assign(status="banana"), "status: 'banana'"),  # drawn as failed points
        (_status_none, "in a row; allowed: ok or error"),
        (lambda f: f.assign(total_time_s=True), "total_time_s: stored as bool"),
        (_area(np.inf), "total_area_mm2: inf in an ok row"),  # a metric the page ranks by
        (_area(-5.0), "total_area_mm2: -5.0 in an ok row"),
        (lambda f: f.assign(point=f["point"] - 1), "point: -1"),
        (lambda f: f.assign(point=f["point"] + 0.5), "point: stored as float64"),
        (lambda f: f.assign(**{"pe_array.num_pes": [{"a": 1}] * len(f)}), "holds {'a': 1}"),
    ],
)
def test_a_hand_edited_table_is_refused_naming_it(sweep_copy, tmp_path, capsys, edit, needle):
    folder = sweep_copy
    parquet = folder / "results.parquet"
    edit(pd.read_parquet(parquet)).to_parquet(parquet)
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{parquet}: " in err and needle in err, err
    assert "<api>" not in err and "Traceback" not in err
    assert not (folder / "report.html").exists()


def test_a_sweep_json_axis_the_table_lacks_names_both_files(sweep_copy, tmp_path, capsys):
    folder = sweep_copy
    meta = json.loads((folder / "sweep.json").read_text())
    meta["axes"] = {"pe_array.num_pes": [2, 4], "activation_fifo.depth": [8]}
    (folder / "sweep.json").write_text(json.dumps(meta))
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'results.parquet'}: no column 'activation_fifo.depth'" in err, err
    assert f"an axis {folder / 'sweep.json'} names" in err


def test_the_untouched_folder_still_rebuilds(sweep_copy, tmp_path):
    folder = sweep_copy
    assert main(["report", str(folder)]) == 0 and (folder / "report.html").is_file()


@pytest.mark.parametrize("field", ["axes", "metrics"])
def test_a_sweep_json_with_no_axes_or_metrics_is_refused(sweep_copy, tmp_path, capsys, field):
    # drew a page with no figures and no columns
    folder = sweep_copy
    meta = json.loads((folder / "sweep.json").read_text())
    meta[field] = {}
    (folder / "sweep.json").write_text(json.dumps(meta))
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'sweep.json'}: not a sweep.json" in err and f"{field} is empty" in err
