"""JSON Schemas: a ``$id`` each and a description for every field; result columns with units."""

from __future__ import annotations

import json
from typing import Any

import pytest

import archsim
from archsim.cli import main
from archsim.config.io import json_schema
from archsim.result_columns import COLUMNS, describe

#: Fields allowed to lack a description (none: every hardware, workload, sweep and result field
#: has one). A field added without one fails the test below by name.
NOT_YET_DESCRIBED: dict[str, set[str]] = {}


def _undescribed(schema: dict[str, Any]) -> set[str]:
    defs = schema.get("$defs", {})

    def described(sub: dict[str, Any]) -> bool:
        if sub.get("description"):
            return True
        refs = [sub.get("$ref")] + [a.get("$ref") for a in sub.get("anyOf", [])]
        ref = next((r for r in refs if r), None)  # a section: its model's docstring
        return bool(ref) and bool(defs[ref.split("/")[-1]].get("description"))

    return {
        f"{where}.{name}"
        for where, node in [("root", schema), *defs.items()]
        for name, sub in node.get("properties", {}).items()
        if not described(sub)
    }


@pytest.mark.parametrize("kind", ["hardware", "workload", "sweep", "results"])
def test_every_field_is_described(kind: str) -> None:
    schema = json_schema(kind)
    assert schema["$id"] == f"urn:archsim:schema:{kind}:1"
    missing = _undescribed(schema)
    allowed = NOT_YET_DESCRIBED.get(kind, set())
    print(kind, "undescribed:", sorted(missing))
    assert missing <= allowed, sorted(missing - allowed)
    assert allowed <= missing, f"now described, drop from NOT_YET_DESCRIBED: {allowed - missing}"


def test_schema_results_on_the_command_line(capsys: Any) -> None:
    assert main(["schema", "results"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["time_s"]["x-unit"] == "s"
    assert schema["properties"]["energy_pj"]["x-unit"] == "pJ"
    assert "Unit: W." in schema["properties"]["power_w"]["description"]


LAYERS = {
    "fc": "{name: f, kind: fc, inputs: 64, outputs: 32, weight_density: 0.3,"
    " activation_density: 0.5}",
    "conv": "{name: c, kind: conv, c: 8, k: 8, h: 8, w: 8, r: 3, s: 3, pad: 1,"
    " weight_density: 0.5, activation_density: 0.5}",
    "gemm": "{name: g, kind: gemm, m: 64, n: 64, k: 64}",
}


@pytest.mark.parametrize(
    ("hw", "kinds", "baseline"),
    [
        ("tiny_eie", ("fc",), None),
        ("scnn", ("conv", "fc"), "dcnn"),
        ("systolic_32x32_os", ("gemm", "conv"), None),
    ],
)
def test_every_result_column_is_documented(
    tmp_path: Any, hw: str, kinds: tuple[str, ...], baseline: str | None
) -> None:
    wl = tmp_path / "wl.yaml"
    body = "".join(f"  - {LAYERS[k]}\n" for k in kinds)
    wl.write_text(f"schema_version: 1\nname: w\nsource: t\nlayers:\n{body}", encoding="utf-8")
    if baseline and "fc" in kinds:  # DCNN runs conv only
        wl.write_text(wl.read_text().replace(f"  - {LAYERS['fc']}\n", ""), encoding="utf-8")
    df = archsim.simulate(hw, wl, baseline=baseline).to_dataframe()
    for column in df.columns:
        found = describe(column)
        assert found is not None, column
        if column.startswith(("eie_", "scnn_", "dcnn_", "systolic_")):
            assert column in COLUMNS, f"{column}: document it in archsim/result_columns.py"


def _rows(df: Any) -> list[dict[str, Any]]:
    """Result rows as JSON would hold them (NaN as null, NumPy scalars as Python ones)."""
    return json.loads(df.to_json(orient="records"))


def test_real_rows_of_every_family_satisfy_the_results_schema(tmp_path: Any) -> None:
    """`archsim schema results` describes the rows archsim writes: EIE, SCNN with its DCNN
    baseline, systolic, a GPU under its power limit, and a training step all validate, every
    column named (not left to the catch-all pattern) and with the type the row has."""
    import jsonschema

    from archsim.result_columns import results_schema

    wl = tmp_path / "wl.yaml"
    wl.write_text(
        f"schema_version: 1\nname: w\nsource: t\nlayers:\n  - {LAYERS['conv']}\n",
        encoding="utf-8",
    )
    frames = [
        archsim.simulate("tiny_eie", "eie_benchmarks").to_dataframe(),
        archsim.simulate("scnn", wl, baseline="dcnn").to_dataframe(),
        archsim.simulate("systolic_32x32_os", wl).to_dataframe(),
        archsim.simulate("h100", wl).to_dataframe(),
        archsim.train_step("dgx_a100", "resnet50_v1_5", gpus=2).to_dataframe(),
    ]
    validator = jsonschema.Draft202012Validator(results_schema())
    for df in frames:
        for row in _rows(df):
            errors = [
                f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(row)
            ]
            assert not errors, errors[:3]
        for column in df.columns:
            if column.startswith(("tc_", "train_", "comm_")) or column in ("clock_hz", "energy_j"):
                assert column in COLUMNS, f"{column}: document it in archsim/result_columns.py"
    # a training step's layer rows carry the column contract too (utilization, DRAM bytes)
    layers = frames[-1][frames[-1].kind == "train_layer"]
    assert ((layers.utilization > 0) & (layers.utilization <= 1)).all()
    assert (layers.dram_bytes > 0).all()


def test_unknown_names_in_the_api_are_archsim_errors() -> None:
    """A preset kind, schema kind or metric column archsim lacks is an ArchsimError (still a
    KeyError / ValueError, as these calls raised before) naming what is allowed."""
    import pandas as pd

    calls = (
        lambda: archsim.list_presets("foo"),
        lambda: json_schema("foo"),
        lambda: archsim.pareto(pd.DataFrame({"t": [1.0]}), minimize=["nope"]),
    )
    for call in calls:
        with pytest.raises(archsim.ArchsimError, match="allowed|available") as info:
            call()
        assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
        assert "\n" not in str(info.value) and not str(info.value).startswith("'")
