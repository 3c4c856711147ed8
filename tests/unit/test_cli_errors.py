"""Bad input gets one clear line: ``archsim: error: <file>: <field>: <problem>``, exit code 2.

Every case checks: exit code 2, exactly one line on stderr starting ``archsim: error:``, the file
(or ``--set``/preset name) and the field named, no traceback, nothing on stdout, and no output
folder (nor temporary folder) left behind.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
TINY_HW = ROOT / "hw_configs" / "tiny_eie.yaml"

FC_LAYER: dict[str, Any] = {
    "name": "fc1",
    "kind": "fc",
    "inputs": 64,
    "outputs": 32,
    "weight_density": 0.2,
    "activation_density": 0.5,
}
WORKLOAD: dict[str, Any] = {
    "schema_version": 1,
    "name": "tiny",
    "source": "test",
    "layers": [FC_LAYER],
}

DELETE = object()


# --------------------------------------------------------------------------------------- helpers


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    """``data[a][b] = value`` for ``"a.b"`` (``DELETE`` removes the key)."""
    *parents, last = dotted.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is DELETE:
        del node[last]
    else:
        node[last] = value


def _write_yaml(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _hw_data() -> dict[str, Any]:
    return yaml.safe_load(TINY_HW.read_text(encoding="utf-8"))


def _wl_data(**layer: Any) -> dict[str, Any]:
    data = copy.deepcopy(WORKLOAD)
    data["layers"] = [{**FC_LAYER, **layer}]
    return data


class Env:
    """A tmp folder with a valid tiny hardware file, a valid 1-layer workload and an out path."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.hw = _write_yaml(tmp_path / "hw.yaml", _hw_data())
        self.wl = _write_yaml(tmp_path / "wl.yaml", WORKLOAD)
        self.out = tmp_path / "out"

    def run_args(self, hw: Path | str | None = None, wl: Path | str | None = None) -> list[str]:
        return ["run", str(hw or self.hw), str(wl or self.wl), "-o", str(self.out), "-q"]


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def assert_one_line_error(code: int, out: str, err: str, *needles: str) -> str:
    """The project standard for user mistakes; returns the error line."""
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("archsim: error: "), line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def assert_nothing_written(env: Env) -> None:
    assert not env.out.exists()
    assert not list(env.dir.glob(".out*")), "temporary output folder left behind"


def run_main(capsys: pytest.CaptureFixture[str], argv: list[str], *needles: str) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    return assert_one_line_error(code, captured.out, captured.err, *needles)


def copy_alex8(src: Path, dst: Path) -> Path:
    """Writable copy of the real AlexNet FC8 data folder (the original is read-only)."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)
    for folder, _, _ in os.walk(dst):
        os.chmod(folder, 0o755)
    return dst


# ---------------------------------------------------------------------------------- control


def test_valid_tiny_run_succeeds(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline the error cases mutate is itself valid."""
    assert main(env.run_args()) == 0
    assert (env.out / "results.json").is_file()
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- hardware YAML

HW_CASES: list[tuple[str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = [
    (
        "unknown_field",
        lambda d: d.update(pe_aray=d.pop("pe_array")),
        ("pe_aray", "unknown field", "did you mean 'pe_array'", "allowed:"),
    ),
    (
        "unknown_nested_field",
        lambda d: _set(d, "spmat_sram.size_byte", 4096),
        ("spmat_sram.size_byte", "unknown field", "size_bytes"),
    ),
    (
        "wrong_type",
        lambda d: _set(d, "pe_array.num_pes", "many"),
        ("pe_array.num_pes", "valid integer", "'many'"),
    ),
    (
        "zero_sram_size",
        lambda d: _set(d, "spmat_sram.size_bytes", 0),
        ("spmat_sram.size_bytes", "greater than 0", "got 0"),
    ),
    (
        "negative_frequency",
        lambda d: _set(d, "clock.frequency_hz", -1),
        ("clock.frequency_hz", "greater than or equal to 1", "got -1"),
    ),
    (
        "fifo_depth_zero",
        lambda d: _set(d, "activation_fifo.depth", 0),
        ("activation_fifo.depth", "greater than 0"),
    ),
    (
        "num_pes_too_many",
        lambda d: _set(d, "pe_array.num_pes", 5000),
        ("pe_array.num_pes", "less than or equal to 4096"),
    ),
    (
        "unsupported_node",
        lambda d: _set(d, "technology.node_nm", 3),
        ("technology.node_nm", "allowed:"),
    ),
    (
        "schema_version_2",
        lambda d: _set(d, "schema_version", 2),
        ("schema_version", "unsupported version 2", "allowed: 1"),
    ),
    (
        "schema_version_missing",
        lambda d: _set(d, "schema_version", DELETE),
        ("schema_version", "missing", "allowed: 1"),
    ),
    (
        "unknown_accelerator",
        lambda d: _set(d, "accelerator", "tpu"),
        ("accelerator", "'tpu'", "allowed: dcnn, eie, scnn, system, systolic, tensor_core"),
    ),
    (
        "accelerator_missing",
        lambda d: _set(d, "accelerator", DELETE),
        ("accelerator", "missing", "allowed: dcnn, eie, scnn, system, systolic, tensor_core"),
    ),
    (
        "required_section_missing",
        lambda d: _set(d, "dram", DELETE),
        ("dram", "required field is missing"),
    ),
    (
        "bad_literal",
        lambda d: _set(d, "dram.kind", "ddr9"),
        ("dram.kind", "'lpddr4'", "'ddr9'"),
    ),
    # errors raised by model validators must still name the field
    (
        "model_validator_width",
        lambda d: _set(d, "spmat_sram.width_bits", 25),
        ("hw.yaml: spmat_sram.width_bits: ", "multiple of the entry size 6"),
    ),
    (
        "model_validator_banks",
        lambda d: _set(d, "pointer_sram.banks", 1),
        ("hw.yaml: pointer_sram.banks: must be 2", "got 1"),
    ),
    (
        "model_validator_nested",
        lambda d: _set(d, "encoding.codebook_entries", 17),
        ("hw.yaml: encoding.codebook_entries: ", "allowed <= 16"),
    ),
    (
        "model_validator_accumulator",
        lambda d: _set(d, "arithmetic.accumulator_bits", 8),
        ("hw.yaml: arithmetic.accumulator_bits: must be >= arithmetic.data_bits", "got 8"),
    ),
]


@pytest.mark.parametrize(
    ("mutate", "needles"), [c[1:] for c in HW_CASES], ids=[c[0] for c in HW_CASES]
)
def test_bad_hardware_yaml(
    env: Env,
    capsys: pytest.CaptureFixture[str],
    mutate: Callable[[dict[str, Any]], None],
    needles: tuple[str, ...],
) -> None:
    data = _hw_data()
    mutate(data)
    _write_yaml(env.hw, data)
    run_main(capsys, env.run_args(), "hw.yaml", *needles)
    assert_nothing_written(env)


def test_model_validator_error_never_has_empty_field(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _hw_data()
    _set(data, "pointer_sram.banks", 3)
    _write_yaml(env.hw, data)
    line = run_main(capsys, env.run_args())
    source, field, _ = line.removeprefix("archsim: error: ").split(": ", 2)
    assert source.endswith("hw.yaml")
    assert field == "pointer_sram.banks"


def test_invalid_yaml_syntax_reports_line(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    lines = TINY_HW.read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(lines) if line.startswith("pe_array:"))
    lines[n] = "pe_array: {num_pes: 4"  # unclosed flow mapping
    env.hw.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run_main(capsys, env.run_args(), "hw.yaml", "invalid YAML", "line ")
    assert_nothing_written(env)


def test_invalid_yaml_syntax_in_workload(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.wl.write_text("schema_version: 1\nname: tiny\nlayers: [\n  - a: b: c\n", encoding="utf-8")
    run_main(capsys, env.run_args(), "wl.yaml", "invalid YAML", "line ")
    assert_nothing_written(env)


def test_yaml_not_a_mapping(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.hw.write_text("- just\n- a list\n", encoding="utf-8")
    run_main(capsys, env.run_args(), "hw.yaml", "mapping")
    assert_nothing_written(env)


def test_hardware_file_not_found(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    run_main(capsys, env.run_args(hw=env.dir / "nope.yaml"), "nope.yaml", "not found")
    assert_nothing_written(env)


def test_a_folder_named_like_a_preset_does_not_hide_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``archsim run v100 -o v100`` leaves a folder named like the preset; the next run from
    there still finds the preset, and a folder named like no preset is still no file."""
    from archsim.config.io import load_hardware

    monkeypatch.chdir(tmp_path)
    (tmp_path / "v100").mkdir()
    (tmp_path / "mine").mkdir()
    assert load_hardware("v100").name == "v100"
    run_main(capsys, ["run", "mine", "eie_benchmarks", "-o", "out"], "mine: a folder, and no")
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- workload YAML

WL_CASES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    (
        "density_above_one",
        _wl_data(weight_density=1.5),
        ("layers.0.weight_density", "less than or equal to 1", "1.5"),
    ),
    (
        "density_negative",
        _wl_data(activation_density=-0.1),
        ("layers.0.activation_density", "greater than or equal to 0"),
    ),
    (
        "fc_without_inputs",
        {**WORKLOAD, "layers": [{k: v for k, v in FC_LAYER.items() if k != "inputs"}]},
        ("layers.0.inputs", "required"),
    ),
    (
        "fc_without_density",
        {**WORKLOAD, "layers": [{k: v for k, v in FC_LAYER.items() if k != "weight_density"}]},
        ("layers.0.weight_density", "required"),
    ),
    (
        "duplicate_layer_names",
        {**WORKLOAD, "layers": [FC_LAYER, dict(FC_LAYER)]},
        ("layers.1.name", "duplicate layer name 'fc1'", "unique"),
    ),
    (
        "unknown_layer_kind",
        _wl_data(kind="pool"),
        ("layers.0.kind", "'pool'", "allowed: fc, lstm, conv, gemm"),
    ),
    (
        "layer_kind_missing",
        {**WORKLOAD, "layers": [{k: v for k, v in FC_LAYER.items() if k != "kind"}]},
        ("layers.0.kind", "missing", "allowed: fc, lstm"),
    ),
    (
        "unknown_layer_field",
        _wl_data(densty=0.3),
        ("layers.0.densty", "unknown field", "allowed:", "weight_density"),
    ),
    (
        "zero_inputs",
        _wl_data(inputs=0),
        ("layers.0.inputs", "greater than or equal to 1"),
    ),
    (
        "no_layers",
        {**WORKLOAD, "layers": []},
        ("layers", "at least 1 item"),
    ),
    (
        "schema_version_2",
        {**WORKLOAD, "schema_version": 2},
        ("schema_version", "unsupported version 2", "allowed: 1"),
    ),
    (
        "schema_version_missing",
        {k: v for k, v in WORKLOAD.items() if k != "schema_version"},
        ("schema_version", "missing", "allowed: 1"),
    ),
    (
        "source_missing",
        {k: v for k, v in WORKLOAD.items() if k != "source"},
        ("source", "required field is missing"),
    ),
]


@pytest.mark.parametrize(
    ("data", "needles"), [c[1:] for c in WL_CASES], ids=[c[0] for c in WL_CASES]
)
def test_bad_workload_yaml(
    env: Env, capsys: pytest.CaptureFixture[str], data: dict[str, Any], needles: tuple[str, ...]
) -> None:
    _write_yaml(env.wl, data)
    line = run_main(capsys, env.run_args(), "wl.yaml", *needles)
    assert ".fc." not in line  # discriminator tags are not part of the path
    assert_nothing_written(env)


# ---------------------------------------------------------------------------- data folders


def test_missing_data_folder(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    _write_yaml(env.wl, _wl_data(data="no_such_folder"))
    run_main(capsys, env.run_args(), "wl.yaml", "layers.0.data", "no_such_folder", "not found")
    assert_nothing_written(env)


def _data_workload(env: Env, folder: Path, **layer: Any) -> None:
    spec = {"name": "alex8", "kind": "fc", "data": str(folder), **layer}
    _write_yaml(env.wl, {**WORKLOAD, "layers": [spec]})


@pytest.mark.parametrize(
    ("corrupt", "needles"),
    [
        (
            lambda d: (d / "ptr" / "ptr0.dat").write_bytes(
                (d / "ptr" / "ptr0.dat").read_bytes()[:-2]
            ),
            ("ptr0.dat", "malformed", "multiple of 4"),
        ),
        (
            lambda d: (d / "ptr" / "ptr3.dat").write_bytes(
                (d / "ptr" / "ptr3.dat").read_bytes()[:-4]
            ),
            ("ptr3.dat", "shape mismatch", "expected 4098"),
        ),
        (
            lambda d: (d / "act.dat").write_bytes((d / "act.dat").read_bytes()[:-1]),
            ("act.dat", "malformed", "multiple of 4"),
        ),
        (
            lambda d: (d / "arithm.dat").unlink(),
            ("arithm.dat", "missing"),
        ),
        (
            lambda d: (d / "spm" / "spm5.dat").unlink(),
            ("spm", "spm0.dat .. spmN-1.dat"),
        ),
    ],
    ids=["truncated_ptr_odd", "truncated_ptr_short", "odd_length_act", "no_codebook", "spm_gap"],
)
def test_malformed_data_file(
    env: Env,
    capsys: pytest.CaptureFixture[str],
    alex8_dir: Path,
    corrupt: Callable[[Path], Any],
    needles: tuple[str, ...],
) -> None:
    folder = copy_alex8(alex8_dir, env.dir / "alex8")
    corrupt(folder)
    _data_workload(env, folder, inputs=4096, outputs=1000)
    run_main(capsys, env.run_args(), "wl.yaml", "layers.0.data", *needles)
    assert_nothing_written(env)


def test_shape_mismatch_inputs(
    env: Env, capsys: pytest.CaptureFixture[str], alex8_dir: Path
) -> None:
    _data_workload(env, alex8_dir, inputs=4000, outputs=1000)
    run_main(capsys, env.run_args(), "wl.yaml", "layers.0.inputs", "shape mismatch", "4000", "4096")
    assert_nothing_written(env)


def test_shape_mismatch_outputs(
    env: Env, capsys: pytest.CaptureFixture[str], alex8_dir: Path
) -> None:
    _data_workload(env, alex8_dir, inputs=4096, outputs=10)
    run_main(capsys, env.run_args(), "wl.yaml", "layers.0.outputs", "shape mismatch", ">= 1000")
    assert_nothing_written(env)


# ----------------------------------------------------------------------- presets and flags


def test_unknown_hardware_preset(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    run_main(capsys, env.run_args(hw="no_such_hw"), "no_such_hw", "unknown hardware preset", "eie")
    assert_nothing_written(env)


def test_unknown_workload_preset(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    run_main(
        capsys, env.run_args(wl="no_such_wl"), "no_such_wl", "unknown workload preset", "allowed"
    )
    assert_nothing_written(env)


@pytest.mark.parametrize(
    ("override", "needles"),
    [
        ("pe_array.num_pe=3", ("pe_array.num_pe", "unknown field", "num_pes")),
        ("pe_aray.num_pes=3", ("pe_aray", "unknown field", "did you mean 'pe_array'")),
        ("pe_array.num_pes=0", ("pe_array.num_pes", "greater than or equal to 1", "got 0")),
        ("pe_array.num_pes=many", ("pe_array.num_pes", "valid integer")),
        ("pe_array.num_pes", ("pe_array.num_pes", "PATH=VALUE")),
        ("=3", ("PATH=VALUE",)),
        ("spmat_sram.width_bits=25", ("spmat_sram.width_bits", "multiple of the entry size")),
        ("pe_array.num_pes.x=1", ("pe_array.num_pes.x", "not a section")),
    ],
    ids=[
        "bad_path",
        "bad_section",
        "bad_value",
        "bad_type",
        "no_equals",
        "empty_path",
        "model_level",
        "into_scalar",
    ],
)
def test_bad_set(
    env: Env, capsys: pytest.CaptureFixture[str], override: str, needles: tuple[str, ...]
) -> None:
    run_main(capsys, [*env.run_args(), "--set", override], "--set", *needles)
    assert_nothing_written(env)


def test_negative_seed(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    run_main(capsys, [*env.run_args(), "--seed", "-1"], "--seed", "from 0 to 2**63-1", "-1")
    assert_nothing_written(env)


def test_non_integer_seed_is_one_line(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*env.run_args(), "--seed", "abc"])
    captured = capsys.readouterr()
    assert_one_line_error(info.value.code, captured.out, captured.err, "--seed", "'abc'")
    assert_nothing_written(env)


def test_out_is_a_file(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.out.write_text("not a folder", encoding="utf-8")
    run_main(capsys, env.run_args(), "--out", "not a folder")
    assert env.out.read_text(encoding="utf-8") == "not a folder"
    assert not list(env.dir.glob(".out*"))


# ---------------------------------------------------------------------------------- report


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_report_missing_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_main(capsys, ["report", str(tmp_path)], "results.json", "cannot read")
    assert list(tmp_path.iterdir()) == []


def test_report_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "never_ran"
    run_main(capsys, ["report", str(folder)], "never_ran", "not found")
    assert not folder.exists()


@pytest.mark.parametrize(
    "text",
    [
        '{"format_version": 1, "layers": [',
        '{"format_version": 99, "layers": []}',
        "[1, 2, 3]",
        '{"format_version": 1, "layers": [{"layer": "x"}]}',
        "",
    ],
    ids=["truncated", "wrong_version", "not_an_object", "incomplete_layer", "empty"],
)
def test_report_malformed_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    (tmp_path / "results.json").write_text(text, encoding="utf-8")
    before = _listing(tmp_path)
    run_main(capsys, ["report", str(tmp_path)], "results.json", "malformed")
    assert _listing(tmp_path) == before  # no report.html, no temporary file


def test_report_results_with_bad_values(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    """Parseable but nonsensical values (a run never writes them) are one line, not a crash."""
    assert main(env.run_args()) == 0
    results = env.out / "results.json"
    data = json.loads(results.read_text(encoding="utf-8"))
    data["layers"][0]["cycles"] = "many"
    data["layers"][0]["energy_by_component_pj"] = "none"
    results.write_text(json.dumps(data), encoding="utf-8")
    (env.out / "report.html").unlink()
    before = _listing(env.out)
    capsys.readouterr()
    run_main(capsys, ["report", str(env.out)], "results.json")
    assert _listing(env.out) == before


# ----------------------------------------------------- the real terminal: python -m archsim


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archsim", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_subprocess_unknown_field_no_traceback(env: Env) -> None:
    data = _hw_data()
    data["pe_aray"] = data.pop("pe_array")
    _write_yaml(env.hw, data)
    proc = _cli(*env.run_args(), cwd=env.dir)
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "hw.yaml", "pe_aray")
    assert_nothing_written(env)


def test_subprocess_bad_set_no_traceback(env: Env) -> None:
    proc = _cli(*env.run_args(), "--set", "pe_array.num_pes=0", cwd=env.dir)
    assert_one_line_error(
        proc.returncode, proc.stdout, proc.stderr, "--set", "pe_array.num_pes", "greater than"
    )
    assert_nothing_written(env)


def test_subprocess_malformed_data_no_traceback(env: Env, alex8_dir: Path) -> None:
    folder = copy_alex8(alex8_dir, env.dir / "alex8")
    act = folder / "act.dat"
    act.write_bytes(act.read_bytes()[:-1])
    _data_workload(env, folder)
    proc = _cli(*env.run_args(), cwd=env.dir)
    assert_one_line_error(
        proc.returncode, proc.stdout, proc.stderr, "wl.yaml", "layers.0.data", "act.dat"
    )
    assert_nothing_written(env)


def test_subprocess_report_missing_results_no_traceback(tmp_path: Path) -> None:
    proc = _cli("report", str(tmp_path), cwd=tmp_path)
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "results.json")
    assert list(tmp_path.iterdir()) == []


def test_subprocess_argparse_error_is_one_line(tmp_path: Path) -> None:
    proc = _cli("run", "--seed", "abc", "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "--seed")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------ SCNN
def test_scnn_tile_that_cannot_fit_is_one_line(tmp_path: Path, capsys) -> None:
    wl = tmp_path / "conv.yaml"
    wl.write_text(
        "schema_version: 1\nname: c\nsource: test\nlayers:\n"
        "  - {name: c1, kind: conv, c: 4, k: 8, h: 16, w: 16, r: 3, s: 3, pad: 1,\n"
        "     weight_density: 0.5, activation_density: 0.5}\n",
        encoding="utf-8",
    )
    out = tmp_path / "o"
    code = main(
        [
            "run",
            "scnn",
            str(wl),
            "-o",
            str(out),
            "--set",
            "accumulator.banks=1",
            "--set",
            "crossbar.outputs=1",
            "--set",
            "accumulator.entries_per_bank=4",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "c1" in err[0], err
    assert f"{wl}: layers.0: layer 'c1': one input pixel of its 3x3 filter at stride 1 " in err[0]
    assert "more than the accumulator's 4 entries" in err[0] and "no tiling fits" in err[0]
    assert not out.exists()


@pytest.mark.parametrize(
    ("field", "needle"),
    [("oaram.size_bytes=4", "IARAM ok, OARAM overflow"),
     ("iaram.size_bytes=1", "IARAM overflow, OARAM ok")],
)  # fmt: skip
def test_scnn_buffers_too_small_for_one_pixel(
    tmp_path: Path, field: str, needle: str, capsys, monkeypatch
) -> None:
    """When one pixel's or one output position's compressed data overflows IARAM or OARAM, no
    super-tiling fits; the planner tried every split first (AlexNet with a 1-byte IARAM: 236 s
    before its one-line error, now the same error at once; a small layer keeps this test
    quick)."""
    wl = tmp_path / "c.yaml"
    wl.write_text(
        "schema_version: 1\nname: c\nsource: test\nlayers:\n"
        "  - {name: c1, kind: conv, c: 3, k: 8, h: 16, w: 16, r: 3, s: 3, pad: 1,\n"
        "     weight_density: 0.5, activation_density: 0.5}\n",
        encoding="utf-8",
    )
    from archsim.accelerators import scnn

    splits: list[tuple[int, int]] = []  # the (tx, ty) super-tilings the planner tried
    regions = scnn._regions
    monkeypatch.setattr(scnn, "_regions", lambda w, h, tx, ty: splits.append((tx, ty))
                        or regions(w, h, tx, ty))  # fmt: skip
    out = tmp_path / "o"
    assert main(["run", "scnn", str(wl), "--set", field, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"archsim: error: {wl}: layers.0: layer 'c1': a 1x1 input tile still does not fit (Kc=8, "
        f"{needle}); allowed: larger accumulator/IARAM/OARAM"
    ]
    assert splits == [(16, 16)]  # straight to 1x1 tiles; before: 31 splits, (1, 1) first
    assert not out.exists()


def test_scnn_crossbar_shape_must_match(tmp_path: Path, capsys) -> None:
    code = main(["run", "scnn", "alexnet", "-o", str(tmp_path / "o"), "--set", "crossbar.inputs=8"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "crossbar.inputs" in err[0]


def test_a_rerun_into_the_folder_leaves_only_its_own_outputs(tmp_path: Path) -> None:
    """`-o DIR` holds one run: a re-run without a report (or without traces) removed nothing,
    so the first run's report.html described the second run's results. Files that are not
    archsim's stay."""
    out = tmp_path / "o"
    assert main(["run", "tiny_eie", "eie_benchmarks", "-o", str(out), "-q"]) == 0
    assert (out / "report.html").is_file()
    (out / "notes.txt").write_text("mine")
    (out / "SRAM_TRACE_layer0.csv.gz").write_bytes(b"old")
    assert main(["run", "tiny_eie", "eie_benchmarks", "-o", str(out), "-q", "--no-report"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "results.csv", "results.json"]


@pytest.mark.parametrize("gpu", ["/nonexistent.yaml", "eie"])
def test_a_collective_on_a_system_whose_gpu_is_bad_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gpu: str
) -> None:
    """The GPU a system names is loaded for the results' provenance only; a missing or non-GPU
    file is an error before the output folder exists (results.csv was left behind)."""
    out = tmp_path / "o"
    argv = ["collective", "all_reduce", "--system", "dgx_h100", "--set", f"gpu={gpu}",
            "--sizes", "1M:1M", "-o", str(out)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and ("gpu" in err or gpu in err)
    assert not out.exists()


def test_a_baseline_column_header_keeps_its_space(tmp_path: Path, capsys) -> None:
    argv = ["run", "h100", "resnet50_v1_5", "--baseline", "a100", "-o", str(tmp_path / "o")]
    assert main(argv) == 0
    head = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("layer"))
    assert head.endswith("power mW vs tensor_core x")


def test_a_training_step_beyond_64_bit_cycles_is_one_line(tmp_path: Path, capsys) -> None:
    """A huge per-kernel launch time made a step of 1e300 s: an OverflowError traceback."""
    out = tmp_path / "o"
    argv = ["train", "dgx_h100", "resnet50_v1_5", "--gpus", "8", "--set",
            "training.elementwise_launch_s=1e300", "-o", str(out)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "beyond what a 64-bit cycle count holds" in err
    assert not out.exists()


def test_a_step_whose_rows_fit_but_whose_sum_does_not_is_one_line(tmp_path: Path, capsys) -> None:
    """Each row under 2**63 cycles, the step over it: a sweep's parent crashed in pyarrow."""
    argv = ["train", "dgx_h100", "resnet50_v1_5", "--gpus", "8", "--set",
            "training.elementwise_launch_s=4.6e7", "-o", str(tmp_path / "o")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "beyond what a 64-bit cycle count holds" in err


def test_validate_seed_range_and_file_outputs_named_as_files(tmp_path: Path, capsys) -> None:
    """`validate --seed 1e23` said `<api>: seed`; `-o ''` on commands whose -o is a file asked
    for "a folder path"."""
    for argv, line in (
        (["validate", "eie", "--seed", "99999999999999999999999", "-q"],
         "--seed: must be from 0 to 2**63-1 (got 99999999999999999999999); allowed:"),
        (["compress", "m.onnx", "-o", ""], "--out: empty file name; allowed: a .onnx file path"),
        (["import", "onnx", "m.onnx", "-o", ""], "--out: empty file name; allowed: a .yaml"),
        (["calibrate", "tensor_core", "--measured", "d", "-o", ""], "--out: empty file name"),
    ):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and line in err, err


def test_report_on_damaged_system_results_says_what_is_missing(tmp_path: Path, capsys) -> None:
    """A collective's results.json without `op` was 'written by archsim train --tensor/
    --pipeline'; a timeline entry that is a string showed 'not enough values to unpack'."""
    coll, train = tmp_path / "c", tmp_path / "t"
    assert main(["collective", "all_reduce", "--system", "dgx_h100", "--sizes", "1K", "-q",
                 "-o", str(coll)]) == 0  # fmt: skip
    data = json.loads((coll / "results.json").read_text())
    del data["op"]
    (coll / "results.json").write_text(json.dumps(data))
    assert main(["train", "dgx_a100", "resnet50", "--gpus", "1", "--batch", "8", "-q",
                 "-o", str(train)]) == 0  # fmt: skip
    data = json.loads((train / "results.json").read_text())
    data["timeline"][0] = "compute"
    (train / "results.json").write_text(json.dumps(data))
    for folder, line in ((coll, ": no 'op'; allowed:"),
                         (train, "timeline.0 is not [compute|nccl, name, start, end")):  # fmt: skip
        assert main(["report", str(folder)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and line in err and "--tensor" not in err, err
