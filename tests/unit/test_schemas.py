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
