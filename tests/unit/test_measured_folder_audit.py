"""A fourth audit of measurement folders: what `validate --measured` / `calibrate` crashed on,
blamed on the wrong line or file, or took at face value."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pandas as pd
import pytest

import archsim
from archsim.cli import main
from archsim.measure import folder as folder_mod
from archsim.measure.folder import DEVICE_FILE, MeasurementError, read_folder, write_folder
from archsim.validation.measured import compare, error_stats

DEVICE = {
    "device": {"name": "Test GPU", "sms": 132},
    "memory_eager": {"tiny_kernel_back_to_back_s": 1.2e-5},
    "energy": {"idle_watts": 126.0, "gemm_fp16_2048": {"joules_per_call": 0.01, "watts": 600.0,
               "smi_mid": [{"clocks.sm": "1700"}]}},
}  # fmt: skip
HEADER = "m,n,k,a_stored,b_stored,precision,time_s,min_s,tflops,sm_mhz,board_w"
ROW = "1024,1024,1024,m x k,k x n,fp16,5.6e-06,5.5e-06,383.479,1980,400"


def _folder(tmp_path: Path, doc: dict | None = None, csv: str | None = None) -> Path:
    frame = pd.DataFrame([ROW.split(",")], columns=HEADER.split(","))
    gpu = write_folder(tmp_path / "gpu", {"gemm_square.csv": frame}, DEVICE)
    if doc is not None:
        (gpu / DEVICE_FILE).write_text(json.dumps(doc))
    if csv is not None:
        (gpu / "gemm_square.csv").write_text(csv)
    return gpu


def _device(**energy_entry: object) -> dict:
    doc = copy.deepcopy(DEVICE)
    doc["energy"]["gemm_fp16_2048"].update(energy_entry)
    return doc


def test_an_energy_entry_without_watts_prints_a_dash(tmp_path, capsys):
    # `validate` crashed formatting None (exit 1, a traceback, half a report on stdout)
    doc = copy.deepcopy(DEVICE)
    del doc["energy"]["gemm_fp16_2048"]["watts"]
    gpu = _folder(tmp_path, doc)
    assert main(["validate", "tensor_core", "--measured", str(gpu), "-q"]) in (0, 1)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("gemm_fp16_2048"))
    assert "; - W vs " in line


def test_an_energy_key_with_a_superscript_size_is_not_a_gemm(tmp_path):
    # '²'.isdigit() is True but int('²') raises: a ValueError traceback
    doc = copy.deepcopy(DEVICE)
    doc["energy"]["gemm_fp16_\u00b2"] = dict(doc["energy"]["gemm_fp16_2048"])
    rows = compare(archsim.load_hardware("h100"), read_folder(_folder(tmp_path, doc))).energy
    entry = rows.set_index("entry").loc["gemm_fp16_\u00b2"]
    assert entry["reason"] == "no archsim kernel for this operation"


def test_a_file_that_fails_to_read_is_one_line(tmp_path, monkeypatch):
    # an OSError without a file name (EIO from /proc/self/mem) reached the CLI as a traceback
    gpu = _folder(tmp_path)
    real_open = Path.open

    def failing(self: Path, *args: object, **kwargs: object):
        if self.name == "gemm_square.csv":
            raise OSError(5, "Input/output error")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", failing)
    with pytest.raises(MeasurementError, match=r"gemm_square.csv: cannot read: Input/output"):
        read_folder(gpu)


def test_a_file_past_the_size_limit_is_refused(tmp_path, monkeypatch):
    # a link to /proc/self/pagemap (a regular file without end) was read until the OOM killer
    gpu = _folder(tmp_path)
    monkeypatch.setattr(folder_mod, "MAX_FILE_BYTES", 64)
    with pytest.raises(MeasurementError, match=r"gemm_square.csv: larger than 0 MiB"):
        read_folder(gpu)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"{HEADER}\n{ROW}\n\n\n{ROW.replace('1024,1024,1024', 'abc,1024,1024')}\n", 5),
        (
            f"model_projection,{HEADER}\n\"llama:q\nproj\",{ROW}\n"
            f"llama:k,{ROW.replace('1024,1024,1024', 'abc,1024,1024')}\n",
            4,
        ),
    ],
    ids=["blank-lines", "quoted-newline"],
)  # fmt: skip
def test_errors_name_the_file_line_of_the_row(tmp_path, text, line):
    # the row number + 2 was given: line 3 for a row on line 5 after two blank lines
    gpu = _folder(tmp_path, csv=text)
    with pytest.raises(MeasurementError, match=rf"gemm_square.csv: line {line}: "):
        read_folder(gpu)


def test_compare_rows_carry_their_file_lines(tmp_path):
    gpu = _folder(tmp_path, csv=f"{HEADER}\n\n{ROW}\n\n{ROW}\n")
    rows = compare(archsim.load_hardware("h100"), read_folder(gpu)).rows
    assert rows["line"].tolist() == [3, 5]


def test_a_row_with_more_fields_than_the_header_says_so(tmp_path):
    # pandas took the extra fields as an index and shifted the values: "n: 'm x k' is not an
    # integer"
    gpu = _folder(tmp_path, csv=f"{HEADER}\n9,9,{ROW}\n")
    with pytest.raises(MeasurementError, match=r"line 2: 13 fields where the header has 11"):
        read_folder(gpu)


def test_a_column_given_twice_is_refused(tmp_path):
    gpu = _folder(tmp_path, csv=f"{HEADER},m\n{ROW},5\n")
    with pytest.raises(MeasurementError, match=r"gemm_square.csv: m: column given twice"):
        read_folder(gpu)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: d["device"].update(sms=10**30), "device: sms: 1000000000000000000000000000000 "
         "is out of range; allowed: a number up to 10000"),
        (lambda d: d["energy"]["gemm_fp16_2048"].update(joules_per_call=1e308),
         "energy.gemm_fp16_2048: joules_per_call: 1e+308 is out of range"),
        (lambda d: d["memory_eager"].update(copy_1MB={"time_s": 1e300}),
         "memory_eager.copy_1MB: time_s: 1e+300 is out of range; allowed: a number up to 3600"),
        (lambda d: d["memory_eager"].update(tiny_kernel_back_to_back_s=5.0),
         "memory_eager: tiny_kernel_back_to_back_s: 5.0 is out of range; allowed: a time in s "
         "up to 1"),
        (lambda d: d.update(bursts={"x": {"calls_per_replay": -5, "trace": []}}),
         "bursts.x: calls_per_replay: -5 is out of range"),
        (lambda d: d.update(bursts={"x": {"calls_per_replay": 5, "trace": [[0, -1, 5, 1, 1]]}}),
         "bursts.x.trace.0: [0, -1, 5, 1, 1] is not valid"),
        (lambda d: d["energy"]["gemm_fp16_2048"].update(smi_mid=[5]),
         "energy.gemm_fp16_2048.smi_mid: [5] is not valid; allowed: a list of nvidia-smi "
         "snapshots (objects)"),
    ],
    ids=["sms", "joules", "copy-time", "launch-floor", "calls", "trace", "smi"],
)  # fmt: skip
def test_readings_past_what_a_gpu_can_show_are_refused_when_read(tmp_path, edit, needle):
    doc = copy.deepcopy(DEVICE)
    edit(doc)
    gpu = _folder(tmp_path, doc)
    with pytest.raises(MeasurementError) as exc:
        read_folder(gpu)
    assert f"{DEVICE_FILE}: {needle}" in str(exc.value)


def test_a_copy_entry_named_past_a_petabyte_is_not_compared(tmp_path):
    doc = copy.deepcopy(DEVICE)
    doc["memory_eager"]["copy_99999999999999999999999MB"] = {"time_s": 1.0}
    doc["memory_eager"]["copy_64MB"] = {"time_s": 5e-5}
    memory = compare(archsim.load_hardware("h100"), read_folder(_folder(tmp_path, doc))).memory
    assert memory["entry"].tolist() == ["copy_64MB"]


def test_error_stats_count_only_simulated_rows():
    # calibrate printed n 2 with a median over one row and p90 '-' (NaN from np.percentile)
    s = error_stats(pd.Series([1.0, 2.0, 4.0]), pd.Series([1.1, math.nan, math.nan]))
    assert s["n"] == 1
    assert s["median_abs_error"] == pytest.approx(0.1) == s["p90_abs_error"]


def test_a_layer_too_large_for_the_model_is_noted_once_without_internal_names(tmp_path, capsys):
    big = ROW.replace("1024,1024,1024", "3000000,3000000,3000000").replace("383.479", "0")
    big = big.replace("5.6e-06,5.5e-06", "3000,3000")
    gpu = _folder(tmp_path, csv=f"{HEADER}\n{ROW}\n{big}\n{big}\n")
    main(["validate", "tensor_core", "--measured", str(gpu), "-q"])
    notes = [x for x in capsys.readouterr().out.splitlines() if x.startswith("note: not sim")]
    assert len(notes) == 1, notes
    assert "2 row(s) of gemm_square.csv: the row's layer needs about" in notes[0]
    assert "<api>" not in notes[0] and "row1" not in notes[0]


def test_calibrate_refuses_a_launch_floor_the_preset_cannot_take_before_fitting(tmp_path, capsys):
    # the error named a deleted temporary YAML, after the whole fit
    doc = copy.deepcopy(DEVICE)
    doc["memory_eager"]["tiny_kernel_back_to_back_s"] = 0.5
    gpu = _folder(tmp_path, doc)
    out = tmp_path / "c.yaml"
    argv = ["calibrate", "tensor_core", "--measured", str(gpu), "-q", "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ".tmp" not in err
    assert f"{DEVICE_FILE}: memory_eager.tiny_kernel_back_to_back_s: 0.5 cannot be the " in err
    assert "launch.eager_s" in err and not out.exists()


def test_a_file_given_as_the_folder_is_named_as_such(tmp_path):
    gpu = _folder(tmp_path)
    with pytest.raises(MeasurementError, match=r"gemm_square.csv: not a folder; allowed: a "):
        read_folder(gpu / "gemm_square.csv")


def test_an_html_path_that_cannot_be_written_is_refused_before_the_report(tmp_path, capsys):
    # the whole report went to stdout first, then exit 2
    gpu = _folder(tmp_path)
    (tmp_path / "f").write_text("")
    argv = ["validate", "tensor_core", "--measured", str(gpu), "--html", str(tmp_path / "f/r")]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("archsim: error: --html") and err.count("\n") == 1
