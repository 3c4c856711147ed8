"""Issue 17's bad inputs: each is one line ``archsim: error: ...``, exit 2, nothing written.

In-process (``archsim.cli.main``) so the whole file stays fast; ``test_cli_errors.py`` covers
the real terminal.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from archsim.cli import main
from archsim.config.io import parse_yaml
from archsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
TINY = (ROOT / "hw_configs" / "tiny_eie.yaml").read_text(encoding="utf-8")
WORKLOAD = (
    "schema_version: 1\nname: t\nsource: test\nlayers:\n"
    "  - {name: fc1, kind: fc, inputs: 64, outputs: 32, weight_density: 0.2,"
    " activation_density: 0.5}\n"
)


def _hw(**changes: Any) -> str:
    data = yaml.safe_load(TINY)
    for dotted, value in changes.items():
        section, field = dotted.split("__")
        data[section][field] = value
    return yaml.safe_dump(data, sort_keys=False)


def _run(tmp_path: Path, capsys: Any, hw: str, wl: str = WORKLOAD, *extra: str) -> str:
    (tmp_path / "hw.yaml").write_text(hw, encoding="utf-8")
    (tmp_path / "wl.yaml").write_text(wl, encoding="utf-8")
    out = tmp_path / "out"
    argv = ["run", str(tmp_path / "hw.yaml"), str(tmp_path / "wl.yaml"), "-o", str(out), "-q"]
    code = main([*argv, *extra])
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert code == 2, captured
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("archsim: error: ")
    assert "Traceback" not in captured.err
    assert not out.exists()
    return lines[0]


@pytest.mark.parametrize(
    ("changes", "needles"),
    [
        ({"clock__frequency_hz": float("inf")}, ("clock.frequency_hz", "finite number")),
        ({"clock__frequency_hz": float("nan")}, ("clock.frequency_hz", "finite number")),
        ({"clock__frequency_hz": 1e30}, ("clock.frequency_hz", "less than or equal to 1")),
        ({"dram__latency_s": float("inf")}, ("dram.latency_s", "finite number")),
        ({"dram__bandwidth_bytes_per_s": 1e30}, ("dram.bandwidth_bytes_per_s", "less than")),
        ({"activation_fifo__depth": 10**9}, ("activation_fifo.depth", "65536")),
        ({"activation_fifo__depth": True}, ("activation_fifo.depth", "not a boolean")),
        ({"arithmetic__data_bits": True}, ("arithmetic.data_bits", "not a boolean")),
        ({"spmat_sram__size_bytes": 10**30}, ("spmat_sram.size_bytes", "1099511627776")),
        ({"spmat_sram__size_bytes": 1e30}, ("spmat_sram.size_bytes",)),
        ({"spmat_sram__width_bits": 6 * 10**12}, ("spmat_sram.width_bits", "65536")),
        ({"spmat_sram__area_mm2": float("inf")}, ("spmat_sram.area_mm2", "finite number")),
        ({"spmat_sram__read_energy_pj": float("nan")}, ("spmat_sram.read_energy_pj", "finite")),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, dict) else None,
)
def test_out_of_range_hardware(
    tmp_path: Path, capsys: Any, changes: dict[str, Any], needles: tuple[str, ...]
) -> None:
    line = _run(tmp_path, capsys, _hw(**changes))
    for needle in ("hw.yaml", *needles):
        assert needle in line, line


def test_bool_for_a_bool_field_still_works() -> None:
    """Only numbers refuse booleans: ``strict_capacity: true`` is a real boolean field."""
    from archsim.config.io import hardware_from_dict

    hw = hardware_from_dict({**yaml.safe_load(TINY), "strict_capacity": True})
    assert hw.strict_capacity is True


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (
            TINY + "pe_array: {num_pes: 8}\n",
            ("duplicate key 'pe_array'", "at line 16 (first at line 7)"),
        ),
        (TINY.replace("name: tiny_eie", "name: tiny_eie\nname: x"), ("duplicate key 'name'",)),
        (TINY.replace("{num_pes: 4}", "{num_pes: 4, num_pes: 8}"), ("duplicate key 'num_pes'",)),
        ("a: " + "[" * 2000 + "]" * 2000 + "\n", ("nested too deeply",)),
        ("{a: " * 2000 + "1" + "}" * 2000 + "\n", ("nested too deeply",)),
        (TINY + "1: 2\n", ("keys must be text",)),
    ],
    ids=["dup_top", "dup_name", "dup_flow", "nested_lists", "nested_maps", "int_key"],
)
def test_bad_yaml_structure(
    tmp_path: Path, capsys: Any, text: str, needles: tuple[str, ...]
) -> None:
    line = _run(tmp_path, capsys, text)
    for needle in ("hw.yaml", *needles):
        assert needle in line, line


def test_duplicate_key_in_workload_layer(tmp_path: Path, capsys: Any) -> None:
    line = _run(tmp_path, capsys, TINY, WORKLOAD.replace("inputs: 64,", "inputs: 64, inputs: 8,"))
    assert "wl.yaml" in line and "duplicate key 'inputs'" in line


def test_alias_bomb_is_refused() -> None:
    levels = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(Exception, match="more than 1,000,000 values"):
        parse_yaml("\n".join(levels), "bomb.yaml")


def test_merge_keys_may_be_overridden() -> None:
    data = parse_yaml("base: &b {x: 1, y: 2}\nother: {<<: *b, x: 3}\n", "m.yaml")
    assert data["other"] == {"x": 3, "y": 2}


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (("--set", "name="), ("--set", "name", "empty value")),
        (("--set", "pe_array.num_pes=true"), ("pe_array.num_pes", "not a boolean")),
        (("--set", "clock.frequency_hz=.inf"), ("clock.frequency_hz", "finite")),
        (("--set", "activation_fifo.depth=1000000000"), ("activation_fifo.depth", "65536")),
        (("--set", "pe_array..num_pes=1"), ("--set", "malformed")),
        (("--set", "pe_array.num_pes=4", "--set", "pe_array.num_pes=8"), ("given twice",)),
    ],
    ids=["empty", "bool", "inf", "deep_fifo", "double_dot", "twice"],
)
def test_bad_set(tmp_path: Path, capsys: Any, extra: tuple[str, ...], needles: tuple[str, ...]):
    line = _run(tmp_path, capsys, TINY, WORKLOAD, *extra)
    for needle in needles:
        assert needle in line, line


def test_empty_out_is_refused(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["run", "tiny_eie", "eie_benchmarks", "-o", "", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("archsim: error: --out: empty folder name")
    assert list(tmp_path.iterdir()) == []


def test_out_below_a_file_is_refused(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    code = main(["run", "tiny_eie", "eie_benchmarks", "-o", str(tmp_path / "f" / "out"), "-q"])
    assert code == 2 and "is a file" in capsys.readouterr().err


def test_out_on_another_filesystem(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    """``-o /mount/point``: a rename into the mounted folder from outside it fails with EXDEV.

    Emulated: any rename into the target folder whose source is outside it raises EXDEV
    (renames elsewhere, e.g. numba writing its cache on a cold start, are untouched). Results
    must arrive whole, and no temporary file may stay behind.
    """
    out = tmp_path / "mnt"
    out.mkdir()
    (out / "keep.txt").write_text("user file", encoding="utf-8")
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        if out in Path(dst).parents and out not in Path(src).parents:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(src, dst)

    (tmp_path / "wl.yaml").write_text(WORKLOAD, encoding="utf-8")
    monkeypatch.setattr(os, "replace", replace)
    assert main(["run", "tiny_eie", str(tmp_path / "wl.yaml"), "-o", str(out), "-q"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["keep.txt", "report.html", "results.csv", "results.json"]
    assert '"total_cycles"' in (out / "results.json").read_text(encoding="utf-8")


def test_exdev_fallback_copies_then_renames(tmp_path: Path, monkeypatch: Any) -> None:
    """Even a rename inside the folder failing with EXDEV falls back to copy + rename."""
    from archsim import output

    real_replace = os.replace
    calls: list[str] = []

    def replace(src: Any, dst: Any) -> None:
        calls.append(Path(src).name)
        if not Path(src).name.endswith(".part"):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)

    def write(tmp: Path) -> list[str]:
        (tmp / "a.txt").write_text("payload", encoding="utf-8")
        return ["a.txt"]

    paths = output.write_outputs_atomically(tmp_path / "o", write)
    assert paths == [tmp_path / "o" / "a.txt"]
    assert (tmp_path / "o" / "a.txt").read_text(encoding="utf-8") == "payload"
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["a.txt"]
    assert calls == ["a.txt", ".a.txt.part"]


def test_failed_write_leaves_nothing(tmp_path: Path) -> None:
    from archsim import output
    from archsim.errors import ConfigError

    def write(tmp: Path) -> list[str]:
        (tmp / "half.txt").write_text("half", encoding="utf-8")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(ConfigError, match="No space left"):
        output.write_outputs_atomically(tmp_path / "o", write)
    assert list(tmp_path.iterdir()) == []
    # new parent folders go too (they survived: only the output folder itself was removed)
    with pytest.raises(ConfigError, match="No space left"):
        output.write_outputs_atomically(tmp_path / "new" / "deeper" / "o", write)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()  # a folder that was there before stays
    with pytest.raises(ConfigError, match="No space left"):
        output.write_outputs_atomically(tmp_path / "kept" / "new" / "o", write)
    assert [p.name for p in tmp_path.rglob("*")] == ["kept"]


@pytest.mark.parametrize(("value", "file"), [(np.nan, "act.dat"), (np.inf, "act.dat")])
def test_non_finite_eie_data(
    tmp_path: Path, capsys: Any, alex8_dir: Path, value: float, file: str
) -> None:
    folder = tmp_path / "alex"
    shutil.copytree(alex8_dir, folder, copy_function=shutil.copyfile)
    for sub, _, _ in os.walk(folder):
        os.chmod(sub, 0o755)
    values = np.fromfile(folder / file, dtype="<f4")
    values[3] = value
    values.tofile(folder / file)
    wl = (
        "schema_version: 1\nname: a\nsource: test\nlayers:\n"
        f"  - {{name: fc8, kind: fc, data: {folder}, inputs: 4096, outputs: 1000}}\n"
    )
    line = _run(tmp_path, capsys, TINY, wl)
    for needle in ("wl.yaml", "layers.0.data", file, "index 3", "finite"):
        assert needle in line, line


# ------------------------------------------------------------------------------- size limits


def _workload(tmp_path: Path, layer: str) -> Path:
    path = tmp_path / "big.yaml"
    path.write_text(
        f"schema_version: 1\nname: big\nsource: test\nlayers:\n  - {layer}\n", encoding="utf-8"
    )
    return path


@pytest.mark.parametrize(
    ("hw", "layer", "needles"),
    [
        (
            "eie",
            "{name: huge, kind: fc, inputs: 1000000000, outputs: 1000000000,"
            " weight_density: 0.1, activation_density: 0.5}",
            ("layers.0", "'huge'", "bytes of memory", "ARCHSIM_MAX_MEMORY_BYTES"),
        ),
        (
            "systolic_32x32_os",
            "{name: g, kind: gemm, m: 10000000, n: 10000000, k: 10000000}",
            ("layers.0", "bytes of memory", "allowed: up to 8.59e+09"),
        ),
        (
            "systolic_32x32_os",
            "{name: g, kind: gemm, m: 32, n: 32, k: 32, batch: 20000000}",
            ("layers.0", "folds", "ARCHSIM_MAX_FOLDS"),
        ),
        (
            "scnn",
            "{name: c, kind: conv, c: 64, k: 64, h: 100000, w: 100000, r: 3, s: 3,"
            " weight_density: 0.5, activation_density: 0.5}",
            ("layers.0", "bytes of memory"),
        ),
        (
            "eie",
            "{name: g, kind: gemm, m: 8, n: 8, k: 8}",
            (
                "layers.0.kind",
                "runs fc and lstm layers, not layer 'g' of kind 'gemm'",
                "allowed: fc",
            ),
        ),
    ],
    ids=["fc_1e9", "gemm_1e7", "many_folds", "conv_1e5", "wrong_kind"],
)
def test_oversized_layer_is_refused_before_running(
    tmp_path: Path, capsys: Any, hw: str, layer: str, needles: tuple[str, ...]
) -> None:
    wl = _workload(tmp_path, layer)
    code = main(["run", hw, str(wl), "-o", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    for needle in ("big.yaml", *needles):
        assert needle in err, err
    assert not (tmp_path / "out").exists()


def test_limit_is_a_policy_the_user_can_change(tmp_path: Path, monkeypatch: Any) -> None:
    """A small layer passes by default, is refused under a lowered limit, and a bad value of
    the variable is itself a one-line error."""
    import archsim
    from archsim.errors import ConfigError, SimulationError

    wl = archsim.load_workload(_workload(tmp_path, "{name: g, kind: gemm, m: 64, n: 64, k: 64}"))
    assert archsim.simulate("systolic_32x32_os", wl).total_cycles > 0
    monkeypatch.setenv("ARCHSIM_MAX_CYCLES", "10")
    with pytest.raises(SimulationError, match=r"needs about 256 cycles; allowed: up to 10 "):
        archsim.simulate("systolic_32x32_os", wl)
    monkeypatch.setenv("ARCHSIM_MAX_CYCLES", "lots")
    with pytest.raises(ConfigError, match="ARCHSIM_MAX_CYCLES: 'lots' is not a positive number"):
        archsim.simulate("systolic_32x32_os", wl)


def test_baseline_that_cannot_run_the_workload_fails_first(tmp_path: Path, capsys: Any) -> None:
    code = main(["run", "scnn", "alexnet", "--baseline", "eie", "-o", str(tmp_path / "o"), "-q"])
    err = capsys.readouterr().err
    assert (
        code == 2 and "alexnet.yaml: layers.0.kind: eie (eie) runs fc and lstm layers, not" in err
    )
    assert err.startswith("archsim: error: --baseline eie: "), err  # it did not say the baseline


def test_scalesim_v3_settings_not_modelled_are_named(tmp_path: Path, capsys: Any) -> None:
    fixtures = ROOT / "tests" / "fixtures" / "scalesim"
    cfg = (fixtures / "gemm256_os_32x32_user.cfg").read_text(encoding="utf-8")
    cfg = cfg.replace("SparsitySupport : false", "SparsitySupport : true")
    cfg = cfg.replace("IfmapSRAMBankNum: 1", "IfmapSRAMBankNum: 4")
    cfg = cfg.replace("MemoryBanks:   1", "MemoryBanks:   2")
    cfg = cfg.replace("UseRamulatorTrace: False", "UseRamulatorTrace: True")  # was silent
    (tmp_path / "a.cfg").write_text(cfg, encoding="utf-8")
    topology = str(fixtures / "gemm256_os_32x32_user.csv")
    out = tmp_path / "out"
    assert main(["run", "--from-scalesim", str(tmp_path / "a.cfg"), topology, "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [e.split("] ")[1].split(" =")[0] for e in err] == [
        "SparsitySupport",
        "SparseRep",
        "BlockSize",
        "IfmapSRAMBankNum",
        "MemoryBanks",
        "UseRamulatorTrace",
    ], err
    assert all(e.startswith("archsim: warning: ") and "is not modelled; " in e for e in err)
    assert (out / "COMPUTE_REPORT.csv").is_file()
    code = main(["run", "--from-scalesim", str(fixtures / "gemm256_os_32x32_user.cfg"), topology,
                 "-o", str(tmp_path / "o2")])  # fmt: skip
    assert code == 0 and capsys.readouterr().err == ""
    # a hardware name beside --from-scalesim was ignored without a word (the CFG won)
    code = main(["run", "eie", "--from-scalesim", str(fixtures / "gemm256_os_32x32_user.cfg"),
                 topology, "-o", str(tmp_path / "o3")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "either --from-scalesim or HW" in err, err
    assert not (tmp_path / "o3").exists()


def test_empty_hardware_name_is_refused(tmp_path: Path, capsys: Any) -> None:
    line = _run(tmp_path, capsys, TINY.replace("name: tiny_eie", "name: ''"))
    assert "hw.yaml: name: must not be empty" in line


@pytest.mark.parametrize(
    ("changes", "needles"),
    [
        ({"pe_array__num_pes": "4"}, ("pe_array.num_pes", "'4' is not a number", "integer")),
        ({"clock__frequency_hz": "850000000.0"}, ("clock.frequency_hz", "is not a number")),
        ({"activation_sram__size_bytes": "64"}, ("activation_sram.size_bytes", "not a number")),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, dict) else None,
)
def test_quoted_numbers_are_refused(
    tmp_path: Path, capsys: Any, changes: dict[str, Any], needles: tuple[str, ...]
) -> None:
    """Text where a number belongs is a mistake (pydantic would read "4" as 4); found by
    ``benchmarks/bad_input_battery.py`` in every config kind (282 cases)."""
    line = _run(tmp_path, capsys, _hw(**changes))
    for needle in ("hw.yaml", *needles):
        assert needle in line, line


def test_yaml_floats_without_a_dot_are_numbers() -> None:
    """PyYAML reads ``1e9`` as text (YAML 1.1); configs read it as YAML 1.2 does, a float."""
    assert parse_yaml("a: 1e9\nb: -2.5E-3\nc: 1_000\nd: '4'\n", "t") == {
        "a": 1e9, "b": -2.5e-3, "c": 1000, "d": "4"
    }  # fmt: skip
    hw = TINY.replace("frequency_hz: 800.0e+6", "frequency_hz: 8e8")
    assert "8e8" in hw
    from archsim.config.io import hardware_from_dict

    assert hardware_from_dict(parse_yaml(hw, "t"), "t").clock.frequency_hz == 8e8


@pytest.mark.parametrize(
    ("path", "text", "needle"),
    [
        ("sweep", "  activation_fifo.depth: [2, '4']\n", "axes.activation_fifo.depth"),
        ("sweep", "  activation_fifo.depth: [true, 4]\n", "axes.activation_fifo.depth"),
        ("gpu", "tensor_cores.instruction_mnk", "instruction_mnk"),
    ],
)
def test_text_and_booleans_in_number_lists(
    tmp_path: Path, capsys: Any, path: str, text: str, needle: str
) -> None:
    if path == "sweep":
        (tmp_path / "wl.yaml").write_text(WORKLOAD)
        spec = "schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: wl.yaml\naxes:\n" + text
        (tmp_path / "s.yaml").write_text(spec)
        code = main(["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out"), "-q"])
    else:
        data = yaml.safe_load((ROOT / "hw_configs" / "h100.yaml").read_text())
        data["tensor_cores"]["instruction_mnk"][0] = True
        (tmp_path / "g.yaml").write_text(yaml.safe_dump(data))
        code = main(
            ["run", str(tmp_path / "g.yaml"), "deepbench_gemm", "-o", str(tmp_path / "out")]
        )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "out").exists()


def test_huge_gpu_batch_runs_without_listing_every_wave(tmp_path: Path, capsys: Any) -> None:
    """``--batch 1e13`` on a GPU: valid input, planned analytically (it used to die in a
    MemoryError building a list of every wave of CTAs)."""
    wl = tmp_path / "g.yaml"
    wl.write_text(WORKLOAD)  # one fc layer: a GEMM of batch x 64 x 32 on a GPU
    out = tmp_path / "out"
    assert main(["run", "h100", str(wl), "--batch", str(10**13), "-o", str(out), "-q"]) == 0
    import json

    res = json.loads((out / "results.json").read_text())
    assert res["total_cycles"] > 10**10  # 10^13 x 64 x 32 MACs take a while


def test_unknown_conv_memory_format_is_one_line(tmp_path: Path, capsys: Any) -> None:
    layer = "{name: c, kind: conv, c: 64, k: 64, h: 14, w: 14, r: 3, s: 3, memory_format: nchwc}"
    wl = _workload(tmp_path, layer)
    code = main(["run", "h100", str(wl), "-o", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    for needle in ("big.yaml", "layers.0.memory_format", "'nhwc' or 'nchw'", "nchwc"):
        assert needle in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["yes", "true", "off", 1, 0, 2.0])
def test_only_true_or_false_for_a_boolean(tmp_path: Path, capsys: Any, value: Any) -> None:
    """pydantic would read ``"yes"``, ``"off"``, ``1`` or ``0`` as a boolean."""
    line = _run(
        tmp_path, capsys, yaml.safe_dump({**yaml.safe_load(TINY), "strict_capacity": value})
    )
    for needle in ("hw.yaml", "strict_capacity", "not a boolean; allowed: true or false"):
        assert needle in line, line


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        ("l2.hit_latency_cycles", 2**64, "less than or equal to 100000"),
        ("tensor_cores.instruction_latency_cycles", 10**9, "less than or equal to 100000"),
        ("l2.bandwidth_bytes_per_clock", 1e-30, "greater than or equal to 1"),
        ("sm_memory.shared_bandwidth_bytes_per_clock", 1e-30, "greater than or equal to 1"),
        ("tensor_cores.precision_rate.fp16", 1e-30, "greater than or equal to 0.0009765625"),
    ],
)
def test_gpu_values_that_overflowed_the_timing_kernels(
    tmp_path: Path, capsys: Any, path: str, value: float, needle: str
) -> None:
    """They reached the numba kernels as integers beyond 64 bits (a typing traceback)."""
    data = yaml.safe_load((ROOT / "hw_configs" / "h100.yaml").read_text(encoding="utf-8"))
    node = data
    for key in path.split(".")[:-1]:
        node = node[key]
    node[path.rsplit(".", 1)[1]] = value
    line = _run(tmp_path, capsys, yaml.safe_dump(data))
    for text in ("hw.yaml", path, needle):
        assert text in line, line


@pytest.mark.parametrize("where", ["hardware", "workload"])
def test_a_name_longer_than_the_file_system_allows(tmp_path: Path, capsys: Any, where: str):
    """Looking it up as a path raised OSError (ENAMETOOLONG); it is an unknown preset."""
    name = "x" * 5000
    args = [name, "eie_benchmarks"] if where == "hardware" else ["eie", name]
    code = main(["run", *args, "-o", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"... (5000 chars): unknown {where} preset; allowed: " in err, err
    assert len(err) < 600 and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("command", "layer", "needle"),
    [
        (  # the k-loop of 9e12 steps: a MemoryError in the per-CTA timing
            ["run", "h100"],
            "{name: c, kind: conv, c: 1000000000000, k: 8, h: 8, w: 8, r: 3, s: 3, pad: 1}",
            "9,000,000,000,000 multiply-adds per output (K); allowed: up to 268,435,456",
        ),
        (  # dimensions beyond int64 in the planner's array arithmetic
            ["run", "h100"],
            "{name: g, kind: gemm, m: 18446744073709551616, n: 8, k: 8}",
            "at most 9,223,372,036,854,775,807 (64-bit)",
        ),
        (  # the same in a training step's lowered GEMMs: named by the workload file
            ["train", "dgx_h100"],
            "{name: c, kind: conv, c: 1000000000000, k: 8, h: 8, w: 8, r: 3, s: 3, pad: 1}",
            "layer 'c/fwd' needs 9,000,000,000,000 multiply-adds per output (K)",
        ),
        (  # SCNN's stride-phase split holds stride^2 virtual channels
            ["run", "scnn"],
            "{name: c, kind: conv, c: 8, k: 8, h: 8, w: 8, r: 3, s: 3, stride: 1000000000000, "
            "weight_density: 0.5, activation_density: 0.5}",
            "bytes of memory; allowed: up to",
        ),
    ],
)
def test_layers_too_large_for_the_model_are_refused_up_front(
    tmp_path: Path, capsys: Any, command: list[str], layer: str, needle: str
) -> None:
    wl = _workload(tmp_path, layer)
    code = main([*command, str(wl), "-o", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "big.yaml: layers.0" in err and needle in err, err  # layers.0[.field]:
    assert not (tmp_path / "out").exists()


def test_a_vanishing_density_keeps_no_weight_and_ends(tmp_path: Path) -> None:
    """A geometric gap at p = 1e-30 is beyond int64 (numpy returns INT64_MAX): their running
    sum wrapped around and the draw never ended."""
    from archsim.workload import synthetic_matvec

    layer = synthetic_matvec("tiny", 300, 200, 1e-30, 0.5, True, 0)
    assert layer.nnz == 0 and layer.indptr.tolist() == [0] * 201
    wl = _workload(
        tmp_path,
        "{name: a, kind: fc, inputs: 64, outputs: 32, weight_density: 1.0e-30, "
        "activation_density: 0.5}",
    )
    assert main(["run", "tiny_eie", str(wl), "-o", str(tmp_path / "out"), "-q"]) == 0


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["run", "scnn", "alexnet", "--baseline", "dgx_h100"], "'dgx_h100' is a multi-GPU system"),
        (["run", "scnn", "alexnet", "--baseline", ""], "--baseline: empty name"),
        (["train", "dgx_h100", "alexnet", "--gpus", "1,,2"], "--gpus '1,,2'; allowed"),
        (["train", "dgx_h100", "alexnet", "--tensor", "0"], "--tensor 0; allowed: an integer >= 1"),
        (["train", "dgx_h100", "alexnet", "--pipeline", "-1"], "--pipeline -1; allowed"),
        (
            ["collective", "--sizes", "1:" + "9" * 40],
            "is too large; allowed: up to 1125899906842624",
        ),
        # past Python's 4,300-digit int() limit: a ValueError traceback, the value echoed whole
        (["collective", "--sizes", "9" * 5000], "(5000 chars)' is too large; allowed: up to"),
        (["collective", "--sizes", "1:8:" + "9" * 5000], "(5004 chars)': bad factor; allowed"),
        (
            ["collective", "--sizes", "1M", "--set", "nccl.base_latency_us={}"],
            "base_latency_us has no entry for tree, ring, nvls",
        ),
        (
            ["collective", "--sizes", "1M", "--set", "nccl.hw_latency_us.nvlink.ring=[-1, 1, 1]"],
            "nccl.hw_latency_us.nvlink.ring.0: Input should be greater than or equal to 0",
        ),
        (["collective", "--sizes", "1M", "-o", "n" * 300], "File name too long"),
        (["run", "tiny_eie", "eie_benchmarks", "-o", "n" * 300], "(300 chars): File name too long"),
        (["sweep", "eie_pes_fifo_width", "--dask", " "], "--dask: empty name"),
    ],
)
def test_command_line_mistakes_are_one_line(
    tmp_path: Path, capsys: Any, monkeypatch: Any, argv: list[str], needle: str
) -> None:
    monkeypatch.chdir(tmp_path)
    if "-o" not in argv:
        argv = [*argv, "-o", "out"]
    code = main([*argv, "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("archsim: error: "), err
    assert needle in err, err
    assert list(tmp_path.iterdir()) == []


def _conv_data(folder: Path) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    w[np.abs(w) < 0.7] = 0.0
    folder.mkdir()
    np.save(folder / "weights.npy", w)
    np.save(folder / "activations.npy", np.maximum(rng.standard_normal((1, 4, 6, 6)), 0))


def test_scnn_runs_layers_read_from_files(tmp_path: Path, capsys: Any, alex8_dir: Path) -> None:
    """A conv ``data:`` layer has no activation_density (float(None) traced back) and an fc
    one no matrix shape (unpacking None traced back); both come from the files now."""
    _conv_data(tmp_path / "cd")
    shutil.copytree(
        alex8_dir,
        tmp_path / "fc",
        copy_function=shutil.copyfile,
    )
    wl = tmp_path / "w.yaml"
    wl.write_text(
        "schema_version: 1\nname: t\nsource: test\nlayers:\n"
        "  - {name: c, kind: conv, c: 4, k: 8, h: 6, w: 6, r: 3, s: 3, pad: 1, data: cd}\n"
        "  - {name: f, kind: fc, data: fc}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert main(["run", "scnn", str(wl), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    import pandas as pd

    rows = pd.read_csv(out / "results.csv")
    assert rows["macs_dense"].tolist() == [8 * 4 * 9 * 36, 4096 * 1000]
    assert (rows["cycles"] > 0).all()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (  # a header that claims 4 TB over a 16-byte body: refused before any allocation
            b"\x93NUMPY\x01\x00"
            + (118).to_bytes(2, "little")
            + b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }".ljust(117)
            + b"\n"
            + b"\x00" * 16,
            "not a NumPy .npy array: mmap length is greater than file size",
        ),
        (b"PK\x03\x04" + b"\x00" * 100, "not a NumPy .npy array"),  # BadZipFile traced back
        (  # a negative shape: mmap's OverflowError traced back
            b"\x93NUMPY\x01\x00"
            + (118).to_bytes(2, "little")
            + b"{'descr': '<f4', 'fortran_order': False, 'shape': (-5,), }".ljust(117)
            + b"\n",
            "not a NumPy .npy array",
        ),
        (  # float64 beyond float32's range: infinite once read in, a traceback
            b"f64",
            "values beyond float32's range",
        ),
    ],
)
def test_conv_data_files_that_lie(tmp_path: Path, capsys: Any, content: bytes, needle: str):
    _conv_data(tmp_path / "cd")
    if content == b"f64":
        np.save(tmp_path / "cd" / "weights.npy", np.full((8, 4, 3, 3), 1e300))
    else:
        (tmp_path / "cd" / "weights.npy").write_bytes(content)
    wl = _workload(tmp_path, "{name: c, kind: conv, c: 4, k: 8, h: 6, w: 6, r: 3, s: 3, data: cd}")
    assert main(["run", "scnn", str(wl), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "layers.0.data" in err and needle in err, err


def test_eie_data_with_a_corrupt_gap_and_no_outputs(
    tmp_path: Path, capsys: Any, alex8_dir: Path
) -> None:
    """With ``outputs`` left out the rows come from the data: a z of 2**32 - 1 asked for a
    256 GiB array."""
    data = tmp_path / "d"
    shutil.copytree(alex8_dir, data, copy_function=shutil.copyfile)
    spm = np.fromfile(data / "spm" / "spm0.dat", dtype="<u4")
    spm[1] = 0xFFFFFFFF
    spm.tofile(data / "spm" / "spm0.dat")
    wl = _workload(tmp_path, "{name: f, kind: fc, data: d}")
    assert main(["run", "eie", str(wl), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "malformed: data has a row 274877907136" in err, err


def _sweep_spec(tmp_path: Path, axis: str, workload: str = "eie_benchmarks") -> Path:
    """A sweep spec of tiny_eie over one axis line ``axis`` (``path: [values]``)."""
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: {workload}\naxes:\n  {axis}\n",
        encoding="utf-8",
    )
    return spec


def _sweep(spec: Path, out: Path) -> int:
    return main(["sweep", str(spec), "-o", str(out), "-q", "-j", "1"])


def test_sweep_values_beyond_64_bits_are_refused_before_running(
    tmp_path: Path, capsys: Any
) -> None:
    """They failed in pyarrow as the results were written, after every point had run."""
    spec = _sweep_spec(tmp_path, "pe_array.num_pes: [4, 18446744073709551616]")
    assert _sweep(spec, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "axes.pe_array.num_pes: value 18446744073709551616 is beyond the 64-bit" in err, err
    spec.write_text(spec.read_text().replace("[4, 18446744073709551616]", "[4]") + "seeds: [" +
                    str(2**64) + "]\n")  # fmt: skip
    assert _sweep(spec, tmp_path / "out") == 2
    assert "seeds.0: Input should be less than or equal to 9223372036854775807" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "out").exists()


def test_scnn_data_near_the_float32_limit_runs(tmp_path: Path, capsys: Any) -> None:
    """Per-filter sums of 3e38 overflowed float32 to inf: log2(inf) traced back."""
    folder = tmp_path / "cd"
    folder.mkdir()
    np.save(folder / "weights.npy", np.full((8, 4, 3, 3), 3e38, np.float32))
    np.save(folder / "activations.npy", np.full((1, 4, 6, 6), 3e38, np.float32))
    wl = _workload(tmp_path, "{name: c, kind: conv, c: 4, k: 8, h: 6, w: 6, r: 3, s: 3, data: cd}")
    assert main(["run", "scnn", str(wl), "-o", str(tmp_path / "out"), "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_report_on_a_results_json_that_lies(tmp_path: Path, capsys: Any) -> None:
    """A zero clock divided by zero; UTF-16 text and 100,000 nested brackets traced back."""
    out = tmp_path / "r"
    assert main(["run", "tiny_eie", "eie_benchmarks", "-o", str(out), "-q", "--no-report"]) == 0
    good = (out / "results.json").read_text(encoding="utf-8")
    cases = [
        (good.replace('"clock_hz": ', '"clock_hz": 0, "was": ', 1).encode(), "clock_hz 0"),
        (good.encode("utf-16"), "not UTF-8 text"),
        (("[" * 100_000 + "]" * 100_000).encode(), "nested too deeply"),
    ]
    for content, needle in cases:
        (out / "results.json").write_bytes(content)
        assert main(["report", str(out)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and needle in err, err


def test_scalesim_config_with_percent_signs_and_huge_numbers(tmp_path: Path, capsys: Any):
    """configparser's interpolation raised on a '%'; a 401-digit Bandwidth overflowed float."""
    fixtures = ROOT / "tests" / "fixtures" / "scalesim"
    cfg = tmp_path / "a.cfg"
    text = (fixtures / "small_gemm_os_4x4_user.cfg").read_text(encoding="utf-8")
    cfg.write_text(text.replace("run_name = small_gemm_os_4x4_user", "run_name = 100%"))
    topo = str(fixtures / "small_gemm_os_4x4_user.csv")
    assert main(["run", "--from-scalesim", str(cfg), topo, "-o", str(tmp_path / "o"), "-q"]) == 0
    cfg.write_text(text.replace("Bandwidth : 2", "Bandwidth : 1" + "0" * 400))
    assert main(["run", "--from-scalesim", str(cfg), topo, "-o", str(tmp_path / "p"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "a.cfg: line 13: Bandwidth = " in err and "from 1 to 1,000,000,000" in err, err


def test_a_sweep_axis_over_a_whole_section_is_refused(tmp_path: Path, capsys: Any) -> None:
    """Its values (configs) reached pyarrow as the results were written: ArrowInvalid."""
    spec = _sweep_spec(tmp_path, "pe_array: [{num_pes: 4}]")
    assert _sweep(spec, tmp_path / "out") == 2
    assert "axes.pe_array: names a whole section" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_resuming_into_a_damaged_store_is_one_line(tmp_path: Path, capsys: Any) -> None:
    """A store edited between runs traced back (KeyError / ArrowTypeError) on resume."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from archsim.errors import ArchsimError
    from archsim.explore.store import merge_tables

    (tmp_path / "w.yaml").write_text(WORKLOAD, encoding="utf-8")
    spec = _sweep_spec(tmp_path, "pe_array.num_pes: [2, 4]", workload="w.yaml")
    out = tmp_path / "out"
    assert _sweep(spec, out) == 0
    for table, missing in ((pa.table({"a": [1]}), "point_key"), (pa.table({"point_key": ["x"]}),
                                                                  "status")):  # fmt: skip
        pq.write_table(table, out / "store" / "compacted.parquet")
        assert _sweep(spec, out) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "the stored tables do not fit together" in err, err
        assert f'Field "{missing}" does not exist' in err, err
    with pytest.raises(ArchsimError, match="ArrowTypeError"):
        merge_tables([pa.table({"point_key": ["a"]}), pa.table({"point_key": [1]})])


def test_scalesim_topologies_too_large_or_strided_past_the_input(
    tmp_path: Path, capsys: Any
) -> None:
    """A depth-wise row of 3e6 channels was expanded into 3e6 layers (a hang); a stride larger
    than the input failed to reshape the im2col window (ValueError traceback)."""
    cfg = str(ROOT / "tests" / "fixtures" / "scalesim" / "small_gemm_os_4x4_user.cfg")
    head = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
    head += "Num Filter, Strides,\n"
    topo = tmp_path / "t.csv"
    topo.write_text(head + "DP1,8,8,3,3,3000000,1,1,\n", encoding="utf-8")
    assert main(["run", "--from-scalesim", cfg, str(topo), "-o", str(tmp_path / "o"), "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert "t.csv: line 2: depth-wise layer 'DP1', one layer per channel: 3000000 layers" in err
    assert "ARCHSIM_MAX_LAYERS" in err and not (tmp_path / "o").exists()
    # SCALE-Sim's ceil output size: 2 x 2 outputs, three of them past the 12 x 12 input
    topo.write_text(head + "C,12,12,3,3,8,16,1000000000,\n", encoding="utf-8")
    assert main(["run", "--from-scalesim", cfg, str(topo), "-o", str(tmp_path / "p"), "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_system_bandwidths_and_channels_out_of_range(tmp_path: Path, capsys: Any) -> None:
    """1e-30 B/s timed a collective beyond int64 cycles, which Arrow could not store after every
    point of a sweep had run; 10^8 NCCL channels were accepted."""
    base = ["collective", "all_reduce", "--system", "dgx_h100", "--sizes", "1M", "-q"]
    for setting, needle in (
        ("topology.link_kinds.nvlink.bandwidth_bytes_per_s=1e-300", "greater than or equal to"),
        ("nic.nccl_bandwidth_bytes_per_s=1e16", "less than or equal to 1000000000000000"),
        ("nccl.max_channels=100000000", "less than or equal to 64"),
    ):
        out = tmp_path / "o"
        assert main([*base, "-o", str(out), "--set", setting]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and setting.split("=")[0] in err and needle in err, err
        assert not out.exists()


def test_report_on_values_archsim_never_writes(tmp_path: Path, capsys: Any) -> None:
    """NaN or negative layer values and an unknown metric sense were drawn as if real."""
    out = tmp_path / "r"
    assert main(["run", "tiny_eie", "eie_benchmarks", "-o", str(out), "-q", "--no-report"]) == 0
    good = (out / "results.json").read_text(encoding="utf-8")
    for old, new, needle in (
        (
            '"time_s": ',
            '"time_s": NaN, "was": ',
            "layers.0.time_s: nan; allowed: an integer from 0 to 2**63 or a finite number >= 0",
        ),
        ('"energy_pj": ', '"energy_pj": -1, "was": ', "layers.0.energy_pj: -1.0; allowed"),
        ('"total_cycles": ', '"total_cycles": -5, "was": ', "total_cycles: -5; allowed"),
    ):
        (out / "results.json").write_text(good.replace(old, new, 1), encoding="utf-8")
        assert main(["report", str(out)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and needle in err, err
    (out / "results.json").write_text(
        good.replace('"cycles": ', '"cycles": 1' + "0" * 400 + ', "was": ', 1)
    )
    assert main(["report", str(out)]) == 2
    assert "layers.0.cycles: an integer of 1329 bits; allowed" in capsys.readouterr().err
    sweep = tmp_path / "s"
    spec = _sweep_spec(tmp_path, "pe_array.num_pes: [2, 4]", workload="eie_benchmarks")
    assert _sweep(spec, sweep) == 0
    meta = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
    meta["metrics"]["total_time_s"] = "sideways"
    (sweep / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    assert main(["report", str(sweep)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "is 'sideways', not min or max" in err, err


def test_small_nonsense_that_was_accepted(tmp_path: Path, capsys: Any) -> None:
    """schema_version 1.0 read as 1; a constant-string constraint was always true; a NUL byte
    in a SCALE-Sim layer name reached the results."""
    wl = tmp_path / "w.yaml"
    for version in ("1.0", "true"):
        wl.write_text(WORKLOAD.replace("schema_version: 1", f"schema_version: {version}"))
        assert main(["run", "tiny_eie", str(wl), "-o", str(tmp_path / "o"), "-q"]) == 2
        err = capsys.readouterr().err
        assert f"schema_version: unsupported version {version.title()}; allowed: 1" in err, err
    wl.write_text(WORKLOAD)
    spec = _sweep_spec(tmp_path, "pe_array.num_pes: [2, 4]\nconstraints: ['\"x\"']", "w.yaml")
    assert _sweep(spec, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "constraints.0: '\"x\"' gives 'x', not true or false" in err, err
    assert not (tmp_path / "out").exists()
    cfg = str(ROOT / "tests" / "fixtures" / "scalesim" / "small_gemm_os_4x4_user.cfg")
    topo = tmp_path / "t.csv"
    topo.write_text("Layer name, M, N, K,\nG\x00,8,8,8,\n", encoding="utf-8")
    assert main(["run", "--from-scalesim", cfg, str(topo), "-o", str(tmp_path / "p"), "-q"]) == 2
    assert "line 2: layer name 'G\\x00' has control characters" in capsys.readouterr().err


def test_outputs_never_replace_a_device_a_fifo_or_the_input(tmp_path: Path, capsys: Any) -> None:
    """As root, compress/import/calibrate/validate turned /dev/null into a regular file, and
    `import onnx m.onnx -o m.onnx` replaced the model with YAML."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], np.eye(4, 3).reshape(-1).tolist())
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 4))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], [w]),
                              opset_imports=[helper.make_opsetid("", 13)])  # fmt: skip
    model.ir_version = 8
    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    measured = str(ROOT.parent / "shared" / "data" / "h100")
    empty, words = tmp_path / "empty.npy", tmp_path / "words.npy"
    empty.write_bytes(b"")
    np.save(words, np.array(["a", "b", "c", "d"]))
    archive = tmp_path / "x.npz"
    np.savez(archive, x=np.zeros(4))
    for argv, needle in (
        (["compress", str(src), "-o", str(fifo), "--fc-density", "0.5"], "not a regular file"),
        (["compress", str(src), "-o", str(src), "--fc-density", "0.5"], "is the input"),
        (["import", "onnx", str(src), "-o", str(fifo)], "not a regular file"),
        (["import", "onnx", str(src), "-o", str(src)], "is the input"),
        (["import", "onnx", str(src), "-o", "w.yaml", "--no-measure", "--inputs", "x.npy"],
         "--inputs: unused with --no-measure"),
        (["import", "onnx", str(src), "-o", "w.yaml", "--inputs", str(empty)],
         "cannot read as .npy"),  # an empty file: EOFError
        (["import", "onnx", str(src), "-o", "w.yaml", "--inputs", str(words)],
         "<U1 values; allowed: a numeric"),
        (["import", "onnx", str(src), "-o", "w.yaml", "--inputs", str(archive)],
         "a .npz archive; allowed: one NumPy .npy array"),
        # a FIFO or a device as an input: the read never ended
        (["import", "onnx", str(src), "-o", "w.yaml", "--inputs", str(fifo)], "not a regular file"),
        (["import", "onnx", str(fifo), "-o", "w.yaml"], "not a regular file"),
        (["compress", "/dev/zero", "-o", "c.onnx", "--fc-density", "0.5"], "not a regular file"),
        (["calibrate", "tensor_core", "--measured", measured, "-o", str(fifo), "-q"],
         "not a regular file"),
    ):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and needle in err, err
    assert fifo.exists() and not fifo.is_file() and src.read_bytes() == model.SerializeToString()


def test_measurement_files_that_are_not_files(tmp_path: Path, capsys: Any) -> None:
    """A FIFO in place of a CSV hung `validate --measured`; 100,000 nested brackets in the
    device JSON traced back (RecursionError)."""
    folder = tmp_path / "m"
    assert main(["probe", "gpu", "--backend", "fake", "--quick", "-o", str(folder), "-q"]) == 0
    (folder / "gemm_square.csv").unlink()
    os.mkfifo(folder / "gemm_square.csv")
    assert main(["validate", "tensor_core", "--measured", str(folder), "-q"]) == 2
    assert "gemm_square.csv: not a regular file" in capsys.readouterr().err
    (folder / "gemm_square.csv").unlink()
    (folder / "device_memory_energy.json").write_text("[" * 100_000 + "]" * 100_000)
    # an output the probe cannot create is refused before it measures (it printed 636 lines)
    assert main(["probe", "gpu", "--backend", "fake", "--quick", "-o", "/proc/archsim-x"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "cannot create it in /proc" in lines[0], lines
    assert main(["validate", "tensor_core", "--measured", str(folder), "-q"]) == 2
    assert "not valid JSON (nested too deeply)" in capsys.readouterr().err


def test_trace_addresses_take_the_scalesim_offsets(tmp_path: Path, capsys: Any) -> None:
    """The .cfg's IfmapOffset/FilterOffset/OfmapOffset were ignored by --trace."""
    import gzip

    fixtures = ROOT / "tests" / "fixtures" / "scalesim"
    text = (fixtures / "small_gemm_os_4x4_user.cfg").read_text(encoding="utf-8")
    cfg = tmp_path / "a.cfg"
    cfg.write_text(text.replace("FilterOffset:   10000000", "FilterOffset:   5000"))
    topo = str(fixtures / "small_gemm_os_4x4_user.csv")
    out = tmp_path / "o"
    assert main(["run", "--from-scalesim", str(cfg), topo, "--trace", "-o", str(out), "-q"]) == 0
    with gzip.open(out / "SRAM_TRACE_layer0.csv.gz", "rt") as f:
        first = [int(v) for v in f.readline().split(",")]
    assert first[:6] == [0, 0, -1, -1, -1, 5000]  # cycle, 4 IFMAP rows, first FILTER column
    cfg.write_text(text.replace("FilterOffset:   10000000", "FilterOffset:   -5"))
    assert main(["run", "--from-scalesim", str(cfg), topo, "-o", str(tmp_path / "p"), "-q"]) == 2
    assert "FilterOffset = '-5': allowed an integer from 0" in capsys.readouterr().err


def test_sigterm_leaves_no_half_written_output(tmp_path: Path) -> None:
    """`kill` (a batch system's time limit) ended a run without its cleanup: a partial
    `.archsim-tmp-*` folder (287 MB of trace) stayed in the output folder."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "o"
    proc = subprocess.Popen(
        [sys.executable, "-m", "archsim", "run", "scnn", "vgg16", "-o", str(out), "-q"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(3.0)  # well into the run (about 9 s in all)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip() == "archsim: interrupted", err
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [
        ("groups", "5", "groups: 5 does not divide c = 3 and k = 96"),
        ("r", "500", "r: 500 is larger than h + 2 pad"),
        ("p", "999", "p: 999 is not the output size 55"),
        ("time_s", "1e308", "time_s: 1e308 is out of range; allowed: a number up to 3600"),
        ("sm_mhz", "1e9", "sm_mhz: 1e9 is out of range"),
    ],
)
def test_conv_measurements_that_do_not_hold_together(
    tmp_path: Path, capsys: Any, column: str, value: str, needle: str
) -> None:
    """`validate --measured` used such rows as if measured."""
    import csv

    folder = tmp_path / "m"
    shutil.copytree(ROOT.parent / "shared" / "data" / "h100", folder)
    path = folder / "conv_alexnet.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    rows[0][column] = value  # conv1, batch 1: 96 filters of 3 x 11 x 11 on 227 x 227
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["validate", "tensor_core", "--measured", str(folder), "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "conv_alexnet.csv: line 2" in err and needle in err, err


def test_interrupt_inside_a_c_callback_is_an_interrupt(monkeypatch, capsys) -> None:
    """SIGTERM landing while numba unpickles its cache reached the user as a SystemError
    traceback (the interrupt wrapped by the C callback): it is an interrupt, exit 130."""
    from archsim import cli

    def wrapped(_args: object) -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError(
                "<function _numba_unpickle> returned a result with an exception set"
            ) from exc

    monkeypatch.setitem(cli._COMMANDS, "list", wrapped)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "archsim: interrupted"

    def other(_args: object) -> int:
        raise SystemError("not an interrupt")

    monkeypatch.setitem(cli._COMMANDS, "list", other)
    with pytest.raises(SystemError):
        cli.main(["list"])


def test_an_error_a_library_raises_after_a_ctrl_c_is_the_interrupt(monkeypatch, capsys) -> None:
    """A Ctrl-C that lands while pydantic-core builds a schema reached the user as a
    SchemaError traceback, exit 1 (its message ends "KeyboardInterrupt:"; nothing chains the
    interrupt): with the console script's word that a SIGINT came, any error is the interrupt,
    exit 130; without it the error stays an error."""
    from archsim import cli

    def wrapped(_args: object) -> int:
        raise ValueError("Error building `literal` serializer:\n  KeyboardInterrupt:")

    monkeypatch.setitem(cli._COMMANDS, "list", wrapped)
    assert cli.main(["list"], interrupted=lambda: True) == 130
    assert capsys.readouterr().err.strip() == "archsim: interrupted"
    with pytest.raises(ValueError):
        cli.main(["list"], interrupted=lambda: False)
    with pytest.raises(ValueError):
        cli.main(["list"])


def test_an_interrupt_dropped_inside_a_weakref_callback_is_delivered_again(monkeypatch) -> None:
    """A SIGINT handler that runs inside a weakref callback (importlib's module-lock callbacks
    run during every import) raises its KeyboardInterrupt where Python drops it: an interrupted
    `archsim sweep` then ran all its points (1 start in ~60). The console script's
    unraisable hook delivers such an interrupt again, and it reaches the main thread's code."""
    import signal
    import sys
    import time
    import weakref

    from archsim import cli

    calls: list[str] = []

    def handler(_signum: int, _frame: object) -> None:
        calls.append("handler")
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    monkeypatch.setattr(sys, "unraisablehook", cli._redeliver_interrupts(sys.unraisablehook))
    try:

        class Thing:
            pass

        thing = Thing()

        def dropped(_ref: object) -> None:
            raise KeyboardInterrupt  # as the handler would, run inside the callback

        ref = weakref.ref(thing, dropped)
        with pytest.raises(KeyboardInterrupt):
            del thing  # the callback runs now
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                time.sleep(0.01)
        assert calls == ["handler"] and ref() is None
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_a_library_swallowed_still_stops_a_sweep(tmp_path, capsys) -> None:
    """Cython's module initialisation registers its memoryview types with ``collections.abc``
    under a bare ``except: pass``; a Ctrl-C whose handler ran there (numpy.random's import,
    while a sweep was planned) vanished, and the sweep ran every point (1 start in ~60). With
    the console script's word that a SIGINT came, the sweep stops before its first point and
    nothing is created; and a swallowed first Ctrl-C inside the sweep stops it at the next
    check."""
    import contextlib
    import signal

    from archsim import cli
    from archsim.cli_sweep import _interrupts

    (tmp_path / "w.yaml").write_text(
        "schema_version: 1\nname: w\nsource: test\nlayers:\n  - {name: fc, kind: fc, inputs: "
        "64, outputs: 64, weight_density: 0.5, activation_density: 0.5}\n"
    )
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: w.yaml\n"
        "axes:\n  pe_array.num_pes: {low: 2, high: 4, num: 2, integer: true}\n"
    )
    out = tmp_path / "out"
    assert (
        cli.main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"], interrupted=lambda: True)
        == 130
    )
    assert capsys.readouterr().err.strip() == "archsim: interrupted" and not out.exists()
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), _interrupts(out) as check:
        with contextlib.suppress(BaseException):  # what the library does
            signal.raise_signal(signal.SIGINT)  # the sweep's first-Ctrl-C handler runs here
        check()
    signal.signal(signal.SIGINT, before)
    assert "stopping the workers" in capsys.readouterr().err


def test_python_m_archsim_exits_130_after_an_interrupt_caught_inside_exec(tmp_path) -> None:
    """CPython marks a KeyboardInterrupt raised inside exec() of a string (dataclasses and
    namedtuple build methods so during imports) as unhandled even when caught, and
    ``python -m`` then ends by SIGINT (-2) after "archsim: interrupted". The console script's
    entry point clears the mark: exit 130."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "fake_archsim.py").write_text(
        "import sys\nfrom archsim import cli\n\n"
        "def main(argv=None, *, interrupted=None):\n"
        "    try:\n"
        "        exec('raise KeyboardInterrupt')\n"
        "    except KeyboardInterrupt:\n"
        "        print('archsim: interrupted', file=sys.stderr)\n"
        "        return 130\n\n"
        "cli.main = main\n"
        "sys.exit(cli.entry_point())\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "fake_archsim"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.strip() == "archsim: interrupted"


def test_a_ctrl_c_while_the_parser_is_built_is_one_line(monkeypatch, capsys) -> None:
    """A Ctrl-C that landed while argparse built the parser (before main's handlers) ended in a
    KeyboardInterrupt traceback; it is now "archsim: interrupted", exit 130."""
    from archsim import cli

    def interrupted_build() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted_build)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "archsim: interrupted"


def test_a_ctrl_c_while_a_kernel_loads_is_held_until_it_has_loaded() -> None:
    """llvmlite hands a module to its JIT engine in two steps (the C call, then the Python flag
    that the engine owns it); an interrupt between them made both free it: an interrupted
    ``archsim run`` aborted with "free(): double free" (2 in ~520 early Ctrl-Cs). A Ctrl-C
    during a kernel's load is held and delivered to the handler in place once it has loaded."""
    import signal

    from archsim.interrupts import interrupts_held

    order: list[str] = []

    def handler(_signum: int, _frame: object) -> None:
        order.append("handler")
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        with pytest.raises(KeyboardInterrupt), interrupts_held():
            signal.raise_signal(signal.SIGINT)
            order.append("loaded")
        assert order == ["loaded", "handler"]
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_runtime_error_that_carries_a_ctrl_c_is_the_interrupt(monkeypatch, capsys) -> None:
    """An interrupt landing in a descriptor's ``__set_name__`` while a class statement runs
    (numba's ``CPUTarget``, imported as ``archsim run`` starts) comes back as RuntimeError
    ("Error calling __set_name__ ...") caused by the KeyboardInterrupt; it reached the user as
    a traceback, exit 1 (the symlink-loop branch re-raised every other RuntimeError)."""
    from archsim import cli

    class Descriptor:
        def __set_name__(self, _owner: type, _name: str) -> None:
            raise KeyboardInterrupt

    def command(_args: object) -> int:
        type("Target", (), {"context": Descriptor()})
        return 0

    monkeypatch.setitem(cli._COMMANDS, "list", command)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "archsim: interrupted"


@pytest.mark.parametrize(
    ("hw", "wl", "needle"),
    [
        # Python refuses to read an integer of more than 4,300 digits (a traceback)
        (TINY, WORKLOAD.replace("inputs: 64", "inputs: " + "9" * 5000), "more than 4,300 digits"),
        # beyond 64 bits: OverflowError inside the models
        (TINY, WORKLOAD.replace("inputs: 64", "inputs: " + "1" + "0" * 72), "integer of 240 bits"),
        # a subnormal bandwidth made every transfer infinitely long
        (re.sub(r"bandwidth_bytes_per_s: [^,]+", "bandwidth_bytes_per_s: 1.0e-320", TINY, count=1),
         WORKLOAD, "below the smallest normal float"),
    ],
)  # fmt: skip
def test_numbers_out_of_any_range_are_one_line(tmp_path: Path, capsys: Any, hw, wl, needle) -> None:
    assert needle in _run(tmp_path, capsys, hw, wl)


def test_inputs_that_traced_back_in_a_fuzzing(tmp_path: Path, capsys: Any) -> None:
    """A SCALE-Sim topology with a 200,000-character cell (csv.Error) and a measurement
    folder whose nvidia-smi snapshot is a number (TypeError) each traced back."""
    topo = tmp_path / "t.csv"
    topo.write_text("Layer, M, N, K,\nl0, " + "1" * 200_000 + ", 4, 4,\n")
    cfg = ROOT / "tests" / "fixtures" / "scalesim" / "gemm256_os_32x32_user.cfg"
    assert main(["run", "--from-scalesim", str(cfg), str(topo), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "t.csv: not a CSV table (field larger" in err, err
    folder = tmp_path / "m"
    assert main(["probe", "gpu", "--backend", "fake", "--quick", "-o", str(folder), "-q"]) == 0
    path = folder / "device_memory_energy.json"
    data = json.loads(path.read_text())
    key = next(k for k, v in data["energy"].items() if isinstance(v, dict) and "smi_mid" in v)
    data["energy"][key]["smi_mid"] = 3.5
    path.write_text(json.dumps(data))
    assert main(["validate", "tensor_core", "--measured", str(folder), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"energy.{key}.smi_mid: 3.5 is not valid; allowed" in err, err


def test_integers_too_long_to_print(tmp_path: Path, capsys: Any) -> None:
    """An override of 5,000 hex digits traced back while its error (or the design's new
    name) printed it; a measured row with a 30-digit m traced back in the measured check."""
    import archsim
    from archsim.errors import ConfigError
    from archsim.validation.measured import _run_group

    huge = "0x" + "f" * 5000
    for path in ("pe_array.num_pes", "description"):
        argv = ["run", "tiny_eie", "--set", f"{path}={huge}", "-o", str(tmp_path / "o"), "-q"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "an integer of 20000 bits" in err, err
    row = {"kind": "gemm", "m": 10**29, "n": 8, "k": 8}
    with pytest.raises(ConfigError, match="at most 9,223,372,036,854,775,807"):
        _run_group(archsim.load_hardware("h100"), [row], ["r"])


def test_yaml_nesting_limit_does_not_depend_on_libyaml_or_the_recursion_limit() -> None:
    # 2,000 levels used to be refused only by libyaml >= 0.2.5's own limit or a RecursionError;
    # under PyYAML 6.0's libyaml in a pytest-xdist worker (higher recursion limit) it parsed
    from archsim.config.io import MAX_YAML_DEPTH

    deepest = MAX_YAML_DEPTH - 1  # lists under the top-level mapping
    assert parse_yaml("a: " + "[" * deepest + "]" * deepest + "\n", "x.yaml") == {
        "a": functools.reduce(lambda inner, _: [inner], range(deepest - 1), [])
    }
    for text in ("a: " + "[" * (deepest + 1) + "]" * (deepest + 1) + "\n",
                 "a: " + "{b: " * (deepest + 1) + "1" + "}" * (deepest + 1) + "\n"):  # fmt: skip
        with pytest.raises(
            ConfigError,
            match=rf"^x.yaml: invalid YAML: nested too deeply; allowed: at most {MAX_YAML_DEPTH} "
            "levels$",
        ):
            parse_yaml(text, "x.yaml")


@pytest.mark.parametrize("field", ["launch.graph_s", "launch.eager_s"])
def test_a_launch_time_beyond_a_millisecond_names_the_field(tmp_path: Path, capsys, field) -> None:
    """`--set launch.graph_s=1e300` was blamed on the workload's first layer ("beyond what the
    GPU model's 64-bit arithmetic holds")."""
    out = tmp_path / "o"
    assert main(["run", "h100", "resnet50", "--set", f"{field}=1e300", "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"--set: {field}: Input should be less than" in err, err
    assert "layer" not in err and not out.exists()


@pytest.mark.parametrize("workload", ["alexnet", "resnet50"])
def test_a_batch_whose_macs_pass_64_bits_is_refused_before_writing(
    tmp_path: Path, capsys, workload: str
) -> None:
    """`--batch 1e15` on h100 exited 0 with a results.json that `report` (and
    RunResult.from_json) then refused: its MAC counts and total cycles were 66-bit integers."""
    out = tmp_path / "o"
    argv = ["run", "h100", workload, "--batch", str(10**15), "-o", str(out), "-q"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"{workload}.yaml: layers.0: layer 'conv1' needs" in err
    assert (
        "multiply-adds, past 64-bit results" in err and "allowed: a smaller layer or batch" in err
    )
    assert not out.exists()
    # a batch whose counts fit still runs and reads back (its energy, 1.1e19 pJ for ResNet-50,
    # is a float past 2**63: the reader refused it)
    assert main(["run", "h100", workload, "--batch", str(10**10), "-o", str(out), "-q"]) == 0
    assert main(["report", str(out)]) == 0
    from archsim.results import RunResult

    assert RunResult.from_json(out / "results.json").total_energy_pj > 2**63


def test_a_systolic_run_whose_layers_together_need_too_many_folds_is_refused(
    tmp_path: Path, capsys
) -> None:
    """AlexNet on a 1 x 1 array: every layer under the per-layer fold limit (1e7 then), the
    run 2.3e6 folds, about 82 s of pipelining at ~30,000 folds a second."""
    out = tmp_path / "o"
    argv = ["run", "systolic_tpu_128x128_ws", "alexnet", "--set", "array.rows=1", "--set",
            "array.cols=1", "-o", str(out), "-q"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        len(err.splitlines()) == 1 and "alexnet.yaml: layers: the run needs about 2.33e+06" in err
    )
    assert "(layer 'conv3' 8.85e+05)" in err and "allowed: up to 1e+06 in one run" in err, err
    assert not out.exists()
