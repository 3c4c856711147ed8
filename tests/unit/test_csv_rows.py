"""results.csv without pandas: the same bytes as pandas' to_csv, for every accelerator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import archsim
from archsim.csv_rows import frame_records, rows_to_csv
from archsim.results import RunResult

SMALL_FC = """\
schema_version: 1
name: small
source: test
layers:
  - {name: fc1, kind: fc, inputs: 96, outputs: 64, weight_density: 0.3, activation_density: 0.5}
  - {name: fc2, kind: fc, inputs: 64, outputs: 32, weight_density: 0.5, activation_density: 0.6}
"""
SMALL_CONV = """\
schema_version: 1
name: small_conv
source: test
layers:
  - {name: c1, kind: conv, c: 8, k: 16, h: 10, w: 10, r: 3, s: 3, pad: 1,
     weight_density: 0.4, activation_density: 0.5}
  - {name: g1, kind: gemm, m: 64, n: 48, k: 40}
"""


def _pandas(rows: list[dict]) -> str:
    return pd.DataFrame(rows).to_csv(index=False)


@pytest.mark.parametrize(
    ("hw", "wl"),
    [
        ("tiny_eie", SMALL_FC),
        ("scnn", SMALL_CONV.split("  - {name: g1")[0]),
        ("dcnn", SMALL_CONV.split("  - {name: g1")[0]),
        ("systolic_32x32_os", SMALL_CONV),
        ("h100", SMALL_CONV),
        ("v100", SMALL_FC),
    ],
)
def test_run_results_csv_equals_pandas(hw, wl, tmp_path):
    path = tmp_path / "wl.yaml"
    path.write_text(wl)
    result = archsim.simulate(hw, path, seed=1)
    rows = [lr.row() for lr in result.layers]
    assert rows_to_csv(rows) == _pandas(rows)
    out = result.to_csv(tmp_path / "results.csv")
    assert out.read_bytes() == result.to_dataframe().to_csv(index=False).encode()
    # a results.json read back writes the same CSV
    again = RunResult.from_json(result.to_json(tmp_path / "r.json"))
    assert rows_to_csv(lr.row() for lr in again.layers) == _pandas(rows)


def test_column_types_follow_pandas():
    """Gaps make integers floats, booleans with gaps or mixed types are objects, text is
    quoted as the csv module does; columns in order of first appearance."""
    rows = [
        {"a": 1, "b": 0.1 + 0.2, "c": True, "d": "x,y", "e": 1e16, "g": np.int64(3)},
        {"a": 2, "b": 1, "c": False, "d": 'q"z\nw', "e": -0.0, "f": float("nan"), "k": 5},
        {"a": 3, "b": None, "c": True, "d": "", "e": float("inf"), "l": True, "m": 2**70},
        {"a": 4, "b": np.float32(0.1), "c": False, "o": "s", "l": 1, "n": np.float64(1e-5)},
    ]
    text = rows_to_csv(rows)
    assert text == _pandas(rows)
    assert text.splitlines()[0] == "a,b,c,d,e,g,f,k,l,m,o,n"
    assert rows_to_csv([]) == _pandas([])


def test_a_column_of_lists_is_left_to_pandas():
    rows = [{"a": 1, "m": [1, 2]}, {"a": 2, "m": {"x": 1}}]
    assert rows_to_csv(rows) == _pandas(rows)


def _same_cell(ours: object, theirs: object) -> bool:
    if isinstance(theirs, float) and theirs != theirs:  # NaN
        return isinstance(ours, float) and ours != ours
    return ours == theirs and type(ours) is type(theirs)


@pytest.mark.parametrize("with_objects", [False, True])
def test_frame_records_equal_pandas_records(with_objects):
    """``archsim run`` prints its table and draws its report from ``frame_records``: the same
    columns, values and Python types as ``DataFrame(rows).to_dict(orient="records")``."""
    rows = [
        {"a": 1, "b": 0.1 + 0.2, "c": True, "d": "x,y", "e": 1e16, "g": np.int64(3)},
        {"a": 2, "b": 1, "c": False, "d": "q", "e": -0.0, "f": float("nan"), "k": 5},
        {"a": 3, "b": None, "c": True, "d": "", "e": float("inf"), "l": True},
        {"a": 4, "b": np.float32(0.5), "c": False, "o": "s", "l": 1, "n": np.float64(1e-5)},
    ]
    if with_objects:
        rows[0]["m"] = 2**70
        rows[1]["m"] = [1, 2]
    columns, records = frame_records(rows)
    frame = pd.DataFrame(rows)
    assert columns == list(frame.columns)
    for ours, theirs in zip(records, frame.to_dict(orient="records"), strict=True):
        assert list(ours) == list(theirs)
        for key in theirs:
            assert _same_cell(ours[key], theirs[key]), (key, ours[key], theirs[key])
    assert frame_records([]) == ([], [])
