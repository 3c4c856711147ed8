"""Outputs that cannot be written (a full disk, a file-size limit, a folder in a file's place)
and compress's weight checks: one line, exit 2, nothing half-written (an audit found
tracebacks, folders holding only results.csv, and 'cannot write: None')."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from archsim.cli import main  # noqa: E402


def _gemm_model(path: Path, weights: list[tuple[str, np.ndarray]], inputs: int) -> Path:
    """A chain of Gemm nodes (name, weight n_out x n_in), transB = 1."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, inputs])
    nodes, inits, prev = [], [], "x"
    for i, (name, w) in enumerate(weights):
        out = "y" if i == len(weights) - 1 else f"h{i}"
        nodes.append(helper.make_node("Gemm", [prev, f"W{i}"], [out], name=name, transB=1))
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"W{i}"))
        prev = out
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, weights[-1][1].shape[0]])
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y], inits),
        opset_imports=[helper.make_opsetid("", 13)],
    )
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _one_line_exit_2(capsys: Any, argv: list[str], needle: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err
    return err


def _fail_writes(monkeypatch: pytest.MonkeyPatch, suffixes: tuple[str, ...]) -> None:
    """Path.write_text of files ending in ``suffixes`` fails as a file-size limit does."""
    real = Path.write_text

    def write_text(self: Path, *args: Any, **kw: Any) -> int:
        if self.name.endswith(suffixes):
            raise OSError(errno.EFBIG, "File too large")
        return real(self, *args, **kw)

    monkeypatch.setattr(Path, "write_text", write_text)


@pytest.mark.parametrize("command", ["collective", "train"])
def test_system_commands_write_all_their_files_or_none(tmp_path, capsys, monkeypatch, command):
    """collective/train wrote results.csv, then failed on results.json with an OSError
    traceback, leaving a new folder with results.csv alone."""
    argv = {
        "collective": ["collective", "all_reduce", "--system", "dgx_h100", "--sizes", "1K"],
        "train": ["train", "dgx_a100", "resnet50", "--gpus", "1", "--batch", "8"],
    }[command]
    out = tmp_path / "new"
    _fail_writes(monkeypatch, ("results.json",))
    _one_line_exit_2(capsys, [*argv, "-q", "-o", str(out)], "cannot write")
    assert not out.exists()
    monkeypatch.undo()
    # a folder where an output goes: refused before any file lands (results.csv did)
    old = tmp_path / "old"
    (old / "results.json").mkdir(parents=True)
    _one_line_exit_2(capsys, [*argv, "-q", "-o", str(old)],
                     f"{old / 'results.json'} exists and is not a regular file")  # fmt: skip
    assert sorted(p.name for p in old.iterdir()) == ["results.json"]


def test_run_names_the_output_in_the_way_and_writes_none(tmp_path, capsys) -> None:
    out = tmp_path / "o"
    (out / "report.html").mkdir(parents=True)
    _one_line_exit_2(capsys, ["run", "tiny_eie", "-q", "-o", str(out)],
                     f"{out / 'report.html'} exists and is not a regular file")  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == ["report.html"]  # no results.csv/json


def test_a_sweep_store_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    import archsim.explore.store as store

    def refuse(target: Path, write: Any) -> Path:
        raise OSError(errno.EFBIG, None)  # pyarrow's errors carry no strerror

    monkeypatch.setattr(store, "replace_after_writing", refuse)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
        "axes:\n  pe_array.num_pes: [2, 4]\n"
    )
    _one_line_exit_2(capsys, ["sweep", str(spec), "-o", str(tmp_path / "o"), "-j", "1", "-q"],
                     "cannot write the sweep's results")  # fmt: skip


def test_import_and_compress_leave_no_folder_they_made_when_a_write_fails(
    tmp_path, capsys, monkeypatch
) -> None:
    """import onnx said 'cannot write: None' and left the new folder behind, empty."""
    model = _gemm_model(tmp_path / "m.onnx", [("fc1", np.ones((4, 8)))], 8)
    _fail_writes(monkeypatch, (".yaml",))
    out = tmp_path / "new" / "deeper" / "w.yaml"
    err = _one_line_exit_2(capsys, ["import", "onnx", str(model), "-o", str(out)],
                           "w.yaml: cannot write: File too large; allowed:")  # fmt: skip
    assert "None" not in err and not (tmp_path / "new").exists()
    monkeypatch.undo()

    def no_room(*args: Any, **kw: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(onnx, "save", no_room)
    dst = tmp_path / "made" / "c.onnx"
    _one_line_exit_2(capsys, ["compress", str(model), "-o", str(dst)], "No space left on device")
    assert not (tmp_path / "made").exists()


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (hidden ones too) -> its bytes (None for a folder)."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("step", ["data folder", "yaml"])
def test_a_failed_reimport_keeps_the_earlier_yaml_and_data_folder(
    tmp_path, capsys, monkeypatch, step
) -> None:
    """The earlier import's w.data/ was moved into the temp folder first: a failure putting the
    new folder or YAML in place removed it with the temp folder, leaving a YAML without data."""
    import archsim.workload.onnx_export as onnx_export

    rng = np.random.default_rng(0)
    first = _gemm_model(tmp_path / "a.onnx", [("fc1", rng.random((4, 8)) - 0.3)], 8)
    second = _gemm_model(tmp_path / "b.onnx", [("fc2", rng.random((6, 8)) - 0.3)], 8)
    out = tmp_path / "w.yaml"
    assert main(["import", "onnx", str(first), "-o", str(out)]) == 0
    capsys.readouterr()
    before = _tree(tmp_path)
    assert "w.data/fc1/spm/spm0.dat" in before
    real, target = onnx_export.os.replace, out if step == "yaml" else tmp_path / "w.data"
    calls: list[str] = []

    def replace(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        calls.append(str(dst))
        if Path(dst) == target and calls.count(str(target)) == 1:  # the swap's step, once
            raise OSError(errno.EACCES, "Permission denied")
        real(src, dst, *args, **kw)

    monkeypatch.setattr(onnx_export.os, "replace", replace)
    _one_line_exit_2(capsys, ["import", "onnx", str(second), "-o", str(out)],
                     "w.yaml: cannot write: Permission denied; allowed:")  # fmt: skip
    monkeypatch.undo()
    assert _tree(tmp_path) == before  # old YAML and data intact, no temp folder left
    assert main(["import", "onnx", str(second), "-o", str(out)]) == 0
    after = _tree(tmp_path)
    assert "w.data/fc2/spm/spm0.dat" in after and not any("fc1" in p for p in after)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.onnx", "b.onnx", "w.data", "w.yaml"]


def test_compress_refuses_empty_weights_repeated_and_ambiguous_densities(tmp_path, capsys):
    """A (16, 0) weight crashed the report with ZeroDivisionError after -o was written; a
    repeated --density NODE kept the last; a name two nodes share set both."""
    empty = _gemm_model(tmp_path / "e.onnx", [("fc1", np.zeros((16, 0)))], 0)
    out = tmp_path / "c.onnx"
    _one_line_exit_2(
        capsys,
        ["compress", str(empty), "-o", str(out)],
        "has shape (16, 0); allowed: a 2-D weight tensor with no empty dimension",
    )
    assert not out.exists()
    ok = _gemm_model(tmp_path / "ok.onnx", [("fc1", np.ones((4, 8)))], 8)
    _one_line_exit_2(capsys, ["compress", "--density", "fc1=0.5", "--density", "fc1=0.7",
                              str(ok)], "--density: fc1: given twice")  # fmt: skip
    rng = np.random.default_rng(0)
    dup = _gemm_model(tmp_path / "d.onnx", [("fc", rng.random((8, 8))),
                                            ("fc", rng.random((4, 8)))], 8)  # fmt: skip
    _one_line_exit_2(capsys, ["compress", "--density", "fc=0.5", str(dup)],
                     "'fc' names more than one Conv/Gemm/MatMul node")  # fmt: skip
