"""SCALE-Sim .cfg / topology CSV reading and the CLI's one-line, line-numbered errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.config.scalesim import (
    BANDWIDTH_REPORT_COLUMNS,
    COMPUTE_REPORT_COLUMNS,
    DETAILED_ACCESS_REPORT_COLUMNS,
    load_scalesim,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scalesim"
CFG = FIXTURES / "test_mnk_os_32x32_user.cfg"
CSV = FIXTURES / "test_mnk_os_32x32_user.csv"
CONV = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"  # noqa: E501


def test_reads_cfg_and_csv() -> None:
    hw, wl = load_scalesim(CFG, CSV)
    assert (hw.array.rows, hw.array.cols, hw.array.dataflow) == (32, 32, "os")
    assert hw.ifmap_sram.size_bytes == 64 * 1024 and hw.timing_model == "scalesim"
    assert hw.scalesim.interface_bandwidth == "user" and hw.scalesim.ofmap_words_per_cycle == 10
    (layer,) = wl.layers
    assert (layer.kind, layer.m, layer.n, layer.k) == ("gemm", 256, 128, 256)


def test_conv_csv_and_depthwise_expansion(tmp_path: Path) -> None:
    csv = tmp_path / "net.csv"
    csv.write_text(CONV + "Conv1,13,13,3,3,4,8,2,\nDP1,9,9,3,3,3,1,1,\n")
    _, wl = load_scalesim(CFG, csv)
    assert [lay.name for lay in wl.layers] == [
        "Conv1",
        "DP1Channel_0",
        "DP1Channel_1",
        "DP1Channel_2",
    ]
    assert (wl.layers[0].h, wl.layers[0].r, wl.layers[0].c, wl.layers[0].stride) == (13, 3, 4, 2)


def _rows(path: Path) -> tuple[str, list[list[float]]]:
    lines = path.read_text().splitlines()
    return lines[0], [[float(c) for c in ln.split(",") if c.strip()] for ln in lines[1:]]


def test_run_from_scalesim_writes_scalesims_three_reports(tmp_path: Path) -> None:
    """COMPUTE, BANDWIDTH and DETAILED_ACCESS reports in SCALE-Sim's layout; the last two
    equal SCALE-Sim 3.0.0's own files for the same cfg (stored by scalesim_compare --regen)."""
    out = tmp_path / "out"
    assert main(["run", "--from-scalesim", str(CFG), str(CSV), "-o", str(out), "-q"]) == 0
    head, rows = _rows(out / "COMPUTE_REPORT.csv")
    assert head == ", ".join(COMPUTE_REPORT_COLUMNS) + ","
    assert rows[0][0] == 0 and rows[0][2] > rows[0][3] > 0
    (gold,) = json.loads(CFG.with_suffix(".json").read_text())["layers"]
    for name, columns, key in (
        ("BANDWIDTH_REPORT.csv", BANDWIDTH_REPORT_COLUMNS, "bandwidth_report"),
        ("DETAILED_ACCESS_REPORT.csv", DETAILED_ACCESS_REPORT_COLUMNS, "detailed_access_report"),
    ):
        head, (row,) = _rows(out / name)
        assert head == ", ".join(columns) + ","
        print(name, "archsim", row, "SCALE-Sim", gold[key])
        assert row == pytest.approx(gold[key], rel=1e-12)


def _bad_cfg(tmp_path: Path, old: str, new: str) -> Path:
    text = CFG.read_text()
    assert old in text
    path = tmp_path / "bad.cfg"
    path.write_text(text.replace(old, new))
    return path


def _line_no(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


@pytest.mark.parametrize(
    ("old", "new", "needle", "words"),
    [
        ("ArrayHeight:    32", "ArrayHeight:    lots", "ArrayHeight", "integer"),
        ("Dataflow : os", "Dataflow : xs", "Dataflow", "allowed: os, ws, is"),
        ("InterfaceBandwidth: USER", "InterfaceBandwidth: FAST", "InterfaceBandwidth", "USER"),
        ("IfmapSramSzkB:   64", "IfmapSramSzkB:   0", "IfmapSramSzkB", "from 1 to 1,000,000,000"),
        ("ArrayWidth:     32\n", "this line is not ini\n", "this line is not ini", "malformed"),
    ],
)
def test_bad_cfg_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, needle: str, words: str
) -> None:
    cfg = _bad_cfg(tmp_path, old, new)
    out = tmp_path / "out"
    code = main(["run", "--from-scalesim", str(cfg), str(CSV), "-o", str(out), "-q"])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == "" and "Traceback" not in cap.err
    (line,) = cap.err.splitlines()
    assert line.startswith(f"archsim: error: {cfg}: line {_line_no(cfg, needle)}: "), line
    assert words in line
    assert not out.exists()


def test_missing_cfg_key_names_its_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _bad_cfg(tmp_path, "ArrayWidth:     32\n", "")
    assert main(["run", "--from-scalesim", str(cfg), str(CSV), "-o", str(tmp_path / "o")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert str(cfg) in line and "ArrayWidth is missing" in line and "line " in line


@pytest.mark.parametrize(
    ("body", "line_no", "words"),
    [
        (CONV + "Conv1,13,13,3,3,4,8,2,\nConv2,13,x,3,3,4,8,1,\n", 3, "IFMAP Width"),
        (CONV + "Conv1,13,13,3,3,\n", 2, "5 fields"),
        (CONV + "Conv1,3,3,5,5,4,8,1,\n", 2, "larger than"),
        ("Layer Name, M, N, K,\nG1, 4, 0, 8,\n", 2, "N = '0'"),
        ("Layer, A, B,\nG1, 4, 5,\n", 1, "header must be"),
        (CONV + "Conv1,13,13,3,3,4,8,2,\nConv1,13,13,3,3,4,8,2,\n", 3, "duplicate"),
    ],
)
def test_bad_topology_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, line_no: int, words: str
) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text(body)
    out = tmp_path / "out"
    assert main(["run", "--from-scalesim", str(CFG), str(csv), "-o", str(out), "-q"]) == 2
    cap = capsys.readouterr()
    (line,) = cap.err.splitlines()
    assert line.startswith(f"archsim: error: {csv}: line {line_no}: "), line
    assert words in line and cap.out == ""
    assert not out.exists()
