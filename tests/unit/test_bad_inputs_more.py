"""Bad inputs found by fuzzing the CLI (issue 17's rules): each is one line naming the file
and field, exit 2, nothing written. Inputs that are not regular files (a FIFO, /dev/zero)
never ended or filled memory; numbers past Python's 4,300-digit ``int()`` limit, non-UTF-8
file names and layers whose training GEMMs pass 64 bits traced back."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archsim.cli import main

CONV_WL = (
    "schema_version: 1\nname: c\nsource: test\nlayers:\n"
    "  - {name: c1, kind: conv, n: 1, c: 3, k: 4, h: 8, w: 8, r: 3, s: 3, pad: 1, data: conv}\n"
)
CFG = (
    "[general]\nrun_name = x\n[architecture_presets]\nArrayHeight = 8\nArrayWidth = 8\n"
    "IfmapSramSzkB = 64\nFilterSramSzkB = 64\nOfmapSramSzkB = 64\nIfmapOffset = 0\n"
    "FilterOffset = 10000000\nOfmapOffset = 20000000\nDataflow = os\n"
)
TOPOLOGY = (
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
    "Strides,\nc1,8,8,3,3,3,4,1,\n"
)


def _refused(capsys: Any, argv: list[str], needle: str, out: Path) -> None:
    assert main([*argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("archsim: error: ") and needle in err[0], err
    assert not out.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_fifos_and_devices_as_inputs(tmp_path: Path, capsys: Any) -> None:
    fifo_yaml, fifo_cfg, fifo_csv = tmp_path / "f.yaml", tmp_path / "f.cfg", tmp_path / "f.csv"
    for f in (fifo_yaml, fifo_cfg, fifo_csv):
        os.mkfifo(f)
    cfg, topo = tmp_path / "ok.cfg", tmp_path / "ok.csv"
    cfg.write_text(CFG)
    topo.write_text(TOPOLOGY)
    (tmp_path / "conv").mkdir()
    os.mkfifo(tmp_path / "conv" / "weights.npy")
    np.save(tmp_path / "conv" / "activations.npy", np.ones((1, 3, 8, 8), np.float32))
    (tmp_path / "conv.yaml").write_text(CONV_WL)
    out = tmp_path / "out"
    regular = "not a regular file"
    for argv, needle in (
        (["run", str(fifo_yaml), "eie_benchmarks"], f"f.yaml: {regular}; allowed: a hardware"),
        (["run", "eie", str(fifo_yaml)], f"f.yaml: {regular}; allowed: a workload YAML"),
        (["run", "eie", "/dev/zero"], f"/dev/zero: {regular}"),
        (["run", "--from-scalesim", str(fifo_cfg), str(topo)], f"f.cfg: {regular}"),
        (["run", "--from-scalesim", str(cfg), str(fifo_csv)], f"f.csv: {regular}"),
        (["run", "--from-scalesim", "/dev/zero", str(topo)], f"/dev/zero: {regular}"),
        (["run", "scnn", str(tmp_path / "conv.yaml")], f"weights.npy: {regular}"),
        (["sweep", str(fifo_yaml)], f"f.yaml: {regular}; allowed: a sweep YAML"),
        (["collective", "all_reduce", "--system", str(fifo_yaml)], f"f.yaml: {regular}"),
        (["train", "dgx_a100", str(fifo_yaml)], f"f.yaml: {regular}"),
    ):  # fmt: skip
        _refused(capsys, argv, needle, out)
    assert main(["run", "--from-scalesim", str(cfg), str(topo), "-q", "-o", str(out)]) == 0


def _probe_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "m"
    assert main(["probe", "gpu", "--backend", "fake", "--quick", "-o", str(folder), "-q"]) == 0
    return folder


def test_numbers_past_4300_digits(tmp_path: Path, capsys: Any) -> None:
    folder = _probe_folder(tmp_path)
    device = folder / "device_memory_energy.json"
    good = device.read_text()
    device.write_text(good.replace('"sms": ', '"sms": ' + "9" * 5000 + ', "x": ', 1))
    assert main(["validate", "tensor_core", "--measured", str(folder), "-q"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "a number of more than 4,300 digits" in err[0], err


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS takes only UTF-8 file names")
def test_non_utf8_measurement_file_names(tmp_path: Path, capsys: Any) -> None:
    folder = _probe_folder(tmp_path)
    bad = os.fsencode(folder) + b"/gemm_\xff.csv"
    os.rename(os.fsencode(folder / "gemm_square.csv"), bad)
    assert main(["validate", "tensor_core", "--measured", str(folder), "-q"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "gemm_\\udcff.csv is not UTF-8; allowed: rename it" in err[0], err
    os.rename(bad, os.fsencode(folder) + b"/notes_\xff.txt")  # a file it does not read
    assert main(["validate", "tensor_core", "--measured", str(folder)]) in (0, 1)  # 1: misses
    assert "note: ignored notes_\\udcff.txt" in capsys.readouterr().out


def test_training_gemms_past_64_bits(tmp_path: Path, capsys: Any) -> None:
    wl = tmp_path / "pad.yaml"
    wl.write_text(CONV_WL.replace("pad: 1, data: conv", "pad: 2147483648"))
    out = tmp_path / "out"
    _refused(capsys, ["train", "dgx_a100", str(wl)], "pad.yaml: layers.0: 'c1' lowered for "
             "training at batch 256 has M = an integer of 73 bits, N = 4, K = 27", out)  # fmt: skip


def test_sweep_refuses_a_layer_kind_the_hardware_lacks(tmp_path: Path, capsys: Any) -> None:
    """It ran every point, each failing, and exited 1 where `archsim run` refuses at once."""
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "schema_version: 1\nname: s\nhardware: eie\nworkload: alexnet\nseeds: [0]\n"
        "mode: grid\naxes:\n  pe_array.num_pes: [16, 32]\nmetrics: {total_time_s: min}\n"
    )
    _refused(capsys, ["sweep", str(spec), "-q"], "alexnet.yaml: layers.0.kind: eie (eie) runs "
             "fc and lstm layers, not layer 'conv1' of kind 'conv'", tmp_path / "out")  # fmt: skip


def test_messages_say_the_field_once_and_cut_long_values(tmp_path: Path, capsys: Any) -> None:
    """``--set pe_array.num_pes=abc`` said ``pe_array.num_pes: num_pes:``; a 5,000-digit value
    (past int()'s limit, so text) was echoed whole."""
    big = "9" * 5000
    out = tmp_path / "out"
    _refused(capsys, ["run", "eie", "--set", "pe_array.num_pes=abc"],
             "--set: pe_array.num_pes: 'abc' is not a number", out)  # fmt: skip
    _refused(capsys, ["run", "eie", "--set", f"pe_array.num_pes={big}"],
             "--set: pe_array.num_pes: '9999", out)  # fmt: skip
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "schema_version: 1\nname: s\nhardware: eie\nworkload: eie_benchmarks\nseeds: [0]\n"
        f"mode: grid\naxes:\n  pe_array.num_pes: [16, '{big}']\n"
    )
    _refused(capsys, ["sweep", str(spec)], "(5002 chars) is not a number", out)
    for argv in (["run", "eie", "--set", f"pe_array.num_pes={big}"], ["sweep", str(spec)]):
        assert main([*argv, "-o", str(out)]) == 2
        assert len(capsys.readouterr().err) < 400


def test_kernel_menus_are_bounded(tmp_path: Path, capsys: Any) -> None:
    """5,000 conv kernel families ran for hours (each family's derived config validated every
    family: the square of the menu); 500 took over 2 minutes and 5 GB."""
    import yaml

    from archsim.config.io import preset_dirs

    hw = yaml.safe_load((preset_dirs("hardware")[0] / "h100.yaml").read_text())
    fams = hw["conv_library"]["families"]
    hw["conv_library"]["families"] = [dict(f, name=f"f{i}") for i, f in enumerate(fams * 33)]
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(hw))
    _refused(capsys, ["run", str(path), "alexnet"], "h.yaml: conv_library.families: List "
             "should have at most 64 items after validation, not 66", tmp_path / "out")  # fmt: skip


def test_true_is_not_the_choice_1(tmp_path: Path, capsys: Any) -> None:
    """``fill_access_widths: [true, 2, 8]`` was accepted as a width of 1 byte: True == 1 matches
    a choice of numbers, and the list was optional (``list[Literal[1, 2, ...]] | None``)."""
    import yaml

    from archsim.config.io import preset_dirs

    hw = yaml.safe_load((preset_dirs("hardware")[0] / "h100.yaml").read_text())
    fam = next(f for f in hw["library"]["families"] if f.get("fill_access_widths"))
    fam["fill_access_widths"][0] = True
    index = hw["library"]["families"].index(fam)
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(hw))
    _refused(capsys, ["run", str(path), "deepbench_gemm"], f"h.yaml: library.families.{index}."
             "fill_access_widths.0: True is not a number", tmp_path / "out")  # fmt: skip


@pytest.mark.parametrize(
    ("workload", "needle"),
    [("-3", "s.yaml: workload: Input should be a valid string (got -3)"),
     ("[eie_benchmarks, 3]", "s.yaml: workload.1: Input should be a valid string (got 3)")],
)  # fmt: skip
def test_a_sweeps_workload_names_the_field_not_pydantics_member(
    tmp_path: Path, capsys: Any, workload: str, needle: str
) -> None:
    """``workload: str | list[str]`` said ``workload.str: ...`` (the union member pydantic
    tried), and for a list with a number in it, not which item was wrong."""
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"schema_version: 1\nname: s\nhardware: eie\nworkload: {workload}\nseeds: [0]\n"
        "mode: grid\naxes:\n  pe_array.num_pes: [16]\n"
    )
    _refused(capsys, ["sweep", str(spec)], needle, tmp_path / "out")


def _npy_header(path: Path, shape: tuple[int, ...]) -> None:
    """A .npy file whose header claims ``shape`` (float32) over 64 bytes of data."""
    from numpy.lib import format as npy_format

    with path.open("wb") as fh:
        npy_format.write_array_header_1_0(
            fh, {"descr": "<f4", "fortran_order": False, "shape": shape}
        )
        fh.write(b"\0" * 64)


def test_npy_headers_that_claim_huge_shapes(tmp_path: Path, capsys: Any) -> None:
    """numpy's overflow warnings came out before the error (conv data); an ONNX input whose
    header claims 256 TiB was allocated (MemoryError)."""
    import warnings

    (tmp_path / "big").mkdir()
    np.save(tmp_path / "big" / "activations.npy", np.ones((1, 3, 8, 8), np.float32))
    _npy_header(tmp_path / "big" / "weights.npy", (2**40, 2**40, 4, 3))
    (tmp_path / "wl.yaml").write_text(CONV_WL.replace("data: conv", "data: big"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        argv = ["run", "scnn", str(tmp_path / "wl.yaml")]
        _refused(
            capsys, argv, "weights.npy: not a NumPy .npy array: array is too big", tmp_path / "o"
        )
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], np.eye(4, 3).reshape(-1).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 4))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    _npy_header(tmp_path / "x.npy", (2**20, 2**20, 64))
    out = tmp_path / "w.yaml"
    assert main(["import", "onnx", str(tmp_path / "m.onnx"), "-o", str(out),
                 "--inputs", str(tmp_path / "x.npy")]) == 2  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "x.npy: cannot read as .npy" in err[0], err
    assert not out.exists()


def test_layer_table_widens_for_huge_values(tmp_path: Path, capsys: Any) -> None:
    """A conv padded by 10^8 is a valid, absurd GPU layer (4.3e18 MACs, just inside 64-bit
    results; padded by 2^31 its counts passed them and are refused): its numbers ran into one
    another; each column now widens to its longest cell, right edges under the header's."""
    wl = tmp_path / "pad.yaml"
    wl.write_text(CONV_WL.replace("pad: 1, data: conv", "pad: 100000000"))
    assert main(["run", "h100", str(wl), "-o", str(tmp_path / "o"), "--no-report"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head, row = lines[1], lines[3]
    assert head.split()[:3] == ["layer", "cycles", "time"] and len(row.split()) == 7, row
    ends = [m.end() for m in re.finditer(r"\S+", row)][1:]
    assert ends == [m.end() for m in re.finditer(r"cycles|us|%|uJ|mW|%", head)], (head, row)


def test_an_output_file_in_a_file_or_an_unwritable_folder_is_refused_before_the_work(
    tmp_path: Path, capsys: Any
) -> None:
    """`validate -o afile/x.md` said "File exists" after simulating, and `calibrate -o
    /sys/kernel/c.yaml` failed after its 25 s fit; both are refused up front now."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (["validate", "eie", "-o", str(afile / "x.md")], f"{afile} is a file; allowed: a path"),
        (["validate", "eie", "--html", str(afile / "x.html")], f"{afile} is a file"),
    ]
    if Path("/proc/self").is_dir():  # no folder can be made in /proc, even by root
        cases.append((["validate", "eie", "-o", "/proc/x.md"], "cannot write in /proc"))
        cases.append((["calibrate", "tensor_core", "--measured", str(tmp_path), "-o",
                       "/proc/c.yaml"], "cannot write in /proc"))  # fmt: skip
    for argv, needle in cases:
        assert main([*argv, "-q"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and needle in err[0], err
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]
