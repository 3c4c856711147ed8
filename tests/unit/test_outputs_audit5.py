"""A fifth audit of output folders: one command's folder taken over by another, refusals that
came only after the simulation, a full disk that named a temporary folder, and the files
`validate`, `import onnx` and `probe` write."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from archsim.cli import main

COLLECTIVE = ["collective", "all_reduce", "--system", "dgx_h100", "--sizes", "1M:2M", "-q"]
TRAIN = ["train", "dgx_a100", "resnet50", "--gpus", "1", "--batch", "8", "-q"]
RUN = ["run", "tiny_eie", "eie_benchmarks", "-q", "--no-report"]


def _refused(capsys: Any, argv: list[str], needle: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("first", "then"), [(COLLECTIVE, TRAIN), (TRAIN, COLLECTIVE), (COLLECTIVE, RUN), (RUN, TRAIN)]
)
def test_commands_sharing_the_default_folder_replace_its_results(
    tmp_path, monkeypatch, first, then
):
    # run, collective and train all write to archsim-out unless told otherwise (the README
    # runs them one after the other): the later one's results replace the earlier's whole
    from archsim.output import results_owner

    monkeypatch.chdir(tmp_path)
    assert main(first) == 0 and main(then) == 0
    out = tmp_path / "archsim-out"
    assert results_owner(out) == then[0]
    assert main(["report", str(out)]) == 0


def test_a_run_s_traces_do_not_outlive_its_results(tmp_path):
    wl = tmp_path / "g.yaml"
    wl.write_text("schema_version: 1\nname: g\nsource: t\nlayers:\n"
                  "  - {name: g, kind: gemm, m: 64, n: 64, k: 64}\n")  # fmt: skip
    out = tmp_path / "o"
    assert main(["run", "systolic_32x32_os", str(wl), "--trace", "-q", "-o", str(out)]) == 0
    assert (out / "SRAM_TRACE_layer0.csv.gz").is_file()
    assert main([*TRAIN, "-o", str(out)]) == 0  # they described the run's layers
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "results.csv",
                                                      "results.json"]  # fmt: skip


@pytest.mark.parametrize("argv", [COLLECTIVE, TRAIN])
def test_collective_and_train_refuse_a_sweep_folder(tmp_path, capsys, argv):
    spec = tmp_path / "s.yaml"
    spec.write_text("schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
                    "axes: {pe_array.num_pes: [4]}\n")  # fmt: skip
    out = tmp_path / "sw"
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"]) == 0
    _refused(capsys, [*argv, "-o", str(out)], "holds an `archsim sweep` result (sweep.json)")
    assert not (out / "results.json").exists()


def test_a_sweep_names_the_command_whose_folder_it_refuses(tmp_path, capsys):
    out = tmp_path / "c"
    assert main([*COLLECTIVE, "-o", str(out)]) == 0
    spec = tmp_path / "s.yaml"
    spec.write_text("schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
                    "axes: {pe_array.num_pes: [4]}\n")  # fmt: skip
    # it said "holds an `archsim run` result"
    _refused(capsys, ["sweep", str(spec), "-o", str(out), "-j", "1", "-q"],
             "holds an `archsim collective` result (results.json)")  # fmt: skip


@pytest.mark.parametrize("argv", [RUN, COLLECTIVE, TRAIN])
def test_an_unwritable_place_is_refused_before_simulating(capsys, monkeypatch, argv):
    # `run scnn vgg16 -o /sys/x` simulated for 17 s before it found it could not write
    import importlib

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("simulated before the output folder was checked")

    for module, name in (("archsim.simulate", "simulate"), ("archsim.system.api", "collective"),
                         ("archsim.system.training", "run_step")):  # fmt: skip
        monkeypatch.setattr(importlib.import_module(module), name, never)
    _refused(capsys, [*argv, "-o", "/proc/archsim-audit/out"], "cannot write in /proc")


def test_a_full_disk_names_the_output_folder(tmp_path, capsys, monkeypatch):
    # "<api>: to_json: out/.archsim-tmp-_drhr2s1/results.json: cannot write results"
    real = Path.write_text

    def full(self: Path, *args: Any, **kw: Any) -> int:
        if self.name == "results.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *args, **kw)

    monkeypatch.setattr(Path, "write_text", full)
    out = tmp_path / "o"
    err = _refused(capsys, [*RUN, "-o", str(out)], f"--out: cannot write {out}: No space left")
    assert "<api>" not in err and ".archsim-tmp" not in err and not out.exists()


def test_validate_refuses_one_file_for_both_reports(tmp_path, capsys):
    # the page silently replaced the Markdown table
    same = tmp_path / "same.md"
    _refused(capsys, ["validate", "eie", "-o", str(same), "--html", str(tmp_path / "." / "same.md"),
                      "-q"], "is also -o (the page would replace the Markdown table)")  # fmt: skip
    assert not same.exists()


def test_import_onnx_writes_yaml_only(tmp_path, capsys):
    pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W"], ["y"], name="fc", transB=1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.ones((4, 8), np.float32), "W")],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    import onnx

    src, other = tmp_path / "m.onnx", tmp_path / "other.onnx"
    onnx.save(m, str(src))
    onnx.save(m, str(other))
    kept = other.read_bytes()
    # `-o other.onnx` replaced a model with 600 bytes of YAML
    _refused(capsys, ["import", "onnx", str(src), "-o", str(other)],
             "not a YAML file name; allowed: a path ending in .yaml")  # fmt: skip
    assert other.read_bytes() == kept and not (tmp_path / "other.data").exists()


def test_probe_interrupted_exits_130_and_writes_nothing(tmp_path, capsys, monkeypatch):
    # Ctrl-C was an error (exit 2) here and exit 130 in every other command
    import archsim.measure.probe as probe

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(probe, "run_probe", interrupted)
    out = tmp_path / "p"
    assert main(["probe", "gpu", "--backend", "fake", "-o", str(out), "-q"]) == 130
    err = capsys.readouterr().err
    assert f"nothing written to {out}" in err and "archsim: interrupted" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("edit", "needle"),
    [({"timeline": None}, "timeline must be a list of spans"),
     ({"system": 5}, "system must be an object with a name")],
)  # fmt: skip
def test_report_names_a_bad_training_field(tmp_path, capsys, edit, needle):
    # "'NoneType' object is not iterable", "'int' object is not subscriptable"
    out = tmp_path / "t"
    assert main([*TRAIN, "-o", str(out)]) == 0
    data = json.loads((out / "results.json").read_text())
    (out / "results.json").write_text(json.dumps(data | edit))
    _refused(capsys, ["report", str(out)], needle)
