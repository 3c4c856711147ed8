"""Measurement folders from a mutational fuzz of `validate --measured` / `calibrate`: each test
is one failure class it found (a traceback, an error that named no file or field or the wrong
one, nonsense taken as measured), now one `archsim: error:` line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

import archsim
from archsim.cli import main
from archsim.measure.folder import DEVICE_FILE, MeasurementError, read_folder, write_folder
from archsim.validation import calibrate
from archsim.validation.measured import compare

DEVICE = {
    "device": {"name": "Test GPU", "sms": 132},
    "memory_eager": {"tiny_kernel_back_to_back_s": 1.2e-5},
    "energy": {"idle_watts": 126.0, "gemm_fp16_2048": {"joules_per_call": 0.01, "watts": 600.0}},
}  # fmt: skip
HEADER = "m,n,k,a_stored,b_stored,precision,time_s,min_s,tflops,sm_mhz,board_w"
ROW = "1024,1024,1024,m x k,k x n,fp16,5.6e-06,5.5e-06,383.479,1980,400"
#: AlexNet conv1 at batch 1 as the probe times it (tflops = 2 batch k p q c r s / time_s)
CONV_HEADER = ("net,layer,batch,precision,c,k,h,w,r,s,stride,pad,groups,p,q,time_s,min_s,tflops,"
               "sm_mhz,board_w")  # fmt: skip
CONV_ROW = (
    "alexnet,conv1,1,fp16,3,96,227,227,11,11,4,0,1,55,55,3.1045e-05,3.1031e-05,6.7911,1980,387"
)


def _folder(tmp_path: Path, doc: dict | None = None, **files: str) -> Path:
    """A valid one-row folder; ``doc`` replaces its JSON, ``files`` (name without .csv) its
    CSV files' text."""
    frame = pd.DataFrame([ROW.split(",")], columns=HEADER.split(","))
    gpu = write_folder(tmp_path / "gpu", {"gemm_square.csv": frame}, DEVICE)
    if doc is not None:
        (gpu / DEVICE_FILE).write_text(json.dumps(doc))
    for name, text in files.items():
        (gpu / f"{name}.csv").write_text(text, encoding="utf-8")
    return gpu


def _refused(capsys: pytest.CaptureFixture[str], gpu: Path, tmp_path: Path, needle: str) -> None:
    """Both commands end with exit 2 and the one error line ``needle`` is in; no output left."""
    html, out = tmp_path / "new" / "v.html", tmp_path / "new" / "c.yaml"
    for argv in (
        ["validate", "tensor_core", "--measured", str(gpu), "--hardware", "h100", "-q",
         "--html", str(html)],
        ["calibrate", "tensor_core", "--measured", str(gpu), "-q", "-o", str(out)],
    ):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("archsim: error: "), err
        assert needle in err, err
    assert not (tmp_path / "new").exists()


def test_an_energy_entry_named_with_a_size_of_thousands_of_digits_is_not_compared(tmp_path):
    # int() of a 5,000-digit size raised ValueError: a traceback from `validate`
    doc = json.loads(json.dumps(DEVICE))
    doc["energy"]["gemm_fp16_" + "9" * 5000] = {"joules_per_call": 0.01, "watts": 600.0}
    rows = compare(archsim.load_hardware("h100"), read_folder(_folder(tmp_path, doc))).energy
    reason = rows.set_index("entry").loc["gemm_fp16_" + "9" * 5000, "reason"]
    assert reason == "a size of more than 9 digits (no GPU runs such a GEMM)"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["device"].update(name="H100\ud800"), "device.name"),
        (lambda d: d["energy"].update({"gemm_\udc80": {"joules_per_call": 1.0}}),
         "energy.gemm_\\udc80"),
        (lambda d: d.update(bursts={"b\ud800": {"calls_per_replay": 1, "trace": []}}),
         "bursts.b\\ud800"),
        (lambda d: d["energy"]["gemm_fp16_2048"].update(smi_mid=[{"name": "\ud800"}]),
         "energy.gemm_fp16_2048.smi_mid.0.name"),
    ],
    ids=["device-name", "energy-key", "burst-key", "snapshot-value"],
)  # fmt: skip
def test_json_text_with_a_lone_surrogate_is_one_line(tmp_path, capsys, edit, field):
    # JSON's "\ud800" escape read into a str no stream can encode: printing the device name or
    # an energy entry ended in a UnicodeEncodeError traceback
    doc = json.loads(json.dumps(DEVICE))
    edit(doc)
    gpu = _folder(tmp_path, doc)
    _refused(capsys, gpu, tmp_path, f"{DEVICE_FILE}: {field}: text with a lone surrogate "
             "(\\ud800-\\udfff); allowed: UTF-8 text")  # fmt: skip


@pytest.mark.parametrize("name", ["H100\nname: x", "H100\x07", "a\u2028b"])
def test_a_device_name_that_is_not_one_printable_line_is_refused(tmp_path, capsys, name):
    # calibrate wrote it into a YAML comment: the line after the newline was YAML, and the
    # error named a deleted temporary file ("duplicate key 'name'", "invalid YAML")
    doc = json.loads(json.dumps(DEVICE))
    doc["device"]["name"] = name
    gpu = _folder(tmp_path, doc)
    _refused(capsys, gpu, tmp_path, f"{DEVICE_FILE}: device: name: {name!r} is not valid; "
             "allowed: printable text on one line")  # fmt: skip


def test_calibrate_writes_a_folder_path_with_a_newline_as_one_comment_line(
    tmp_path, capsys, monkeypatch
):
    # "-o: .c.yaml.xxxx.tmp: b: unknown field": the path's second line was read as YAML
    monkeypatch.setattr(calibrate, "FIELDS", calibrate.FIELDS[:1])  # a fast fit
    gpu = _folder(tmp_path).rename(tmp_path / "a\nb: 1")
    out = tmp_path / "c.yaml"
    assert main(["calibrate", "tensor_core", "--measured", str(gpu), "-q", "-o", str(out)]) == 0
    assert "measurement folder " + str(gpu).replace("\n", " ") in out.read_text()
    assert "b" not in yaml.safe_load(out.read_text())


@pytest.mark.parametrize("value", ["9" * 400, str(2**63)])
def test_an_integer_cell_past_64_bits_names_its_file_line_and_column(tmp_path, capsys, value):
    # "validate: a number overflowed (int too large to convert to float)": no file, no field
    gpu = _folder(tmp_path, gemm_square=f"{HEADER}\n{ROW}\n{value},{ROW[5:]}\n")
    shown = repr(value) if len(value) < 58 else repr(value)[:57] + "..."
    _refused(capsys, gpu, tmp_path, f"gemm_square.csv: line 3: m: {shown} is out of range; "
             "allowed: 1 to 9,223,372,036,854,775,807 (64-bit)")  # fmt: skip


def test_a_cell_that_is_no_number_says_what_is_allowed_and_is_cut_short(tmp_path, capsys):
    # the whole 5,000-digit cell was printed back, and no "allowed:"
    gpu = _folder(tmp_path, gemm_square=f"{HEADER}\n{'9' * 5000},{ROW[5:]}\n")
    _refused(capsys, gpu, tmp_path, "gemm_square.csv: line 2: m: '" + "9" * 56 + "... is not "
             "an integer; allowed: an integer >= 1")  # fmt: skip
    gpu = _folder(tmp_path / "b", gemm_square=f"{HEADER}\n{ROW[:-3]}fast\n")
    _refused(capsys, gpu, tmp_path, "gemm_square.csv: line 2: board_w: 'fast' is not a number; "
             "allowed: a number > 0, or blank (no reading)")  # fmt: skip


def test_a_conv_row_whose_rate_contradicts_its_shape_and_time_is_refused(tmp_path, capsys):
    # batch 1,000,000 'done' in 31 us at 6.8 TFLOPS was simulated (+14,243,798 %), exit 0
    big = CONV_ROW.replace("conv1,1,", "conv1,1000000,")
    gpu = _folder(tmp_path, conv_alexnet=f"{CONV_HEADER}\n{CONV_ROW}\n{big}\n")
    _refused(capsys, gpu, tmp_path, "conv_alexnet.csv: line 3: tflops: 6.7911 disagrees with "
             "2 batch k p q (c / groups) r s / time_s = 6.79112e+06 and / min_s = 6.79419e+06; "
             "allowed: the row's own rate over time_s or min_s (within 1%), or 0 when not "
             "measured")  # fmt: skip
    rate0 = big.replace(",6.7911,", ",0,").replace("3.1045e-05,3.1031e-05", "1e-6,1e-6")
    gpu = _folder(tmp_path / "b", conv_alexnet=f"{CONV_HEADER}\n{rate0}\n")
    with pytest.raises(MeasurementError) as exc:
        read_folder(gpu)
    want = "line 2: time_s: 1e-06 s for 2 batch k p q (c / groups) r s = 210.83 TFLOP is "
    assert want + "2.1083e+08 TFLOPS; allowed: a time a GPU can reach" in str(exc.value)
    gpu = _folder(tmp_path / "c", conv_alexnet=f"{CONV_HEADER}\n{CONV_ROW}\n")
    assert len(read_folder(gpu).conv["conv_alexnet.csv"]) == 1  # the probe's own rate


def test_a_last_line_cut_short_is_refused(tmp_path, capsys):
    # "...,1980,400" cut to "...,19" read as sm_mhz = 19 MHz and no board power, exit 0
    gpu = _folder(tmp_path, gemm_square=f"{HEADER}\n{ROW}\n{ROW[:-6]}")
    _refused(capsys, gpu, tmp_path, "gemm_square.csv: line 3: 10 fields where the header has 11 "
             "and no newline ends the file (cut short?); allowed: the whole last line, ending "
             "with a newline")  # fmt: skip
    # a short row that a newline ends reads with blank trailing cells, as before
    gpu = _folder(tmp_path / "b", gemm_square=f"{HEADER}\n{ROW}\n{ROW[:-4]}\n")
    assert read_folder(gpu).gemm["gemm_square.csv"]["board_w"].isna().tolist() == [False, True]


def test_blank_header_columns_are_ignored_however_many(tmp_path):
    # two trailing commas: "gemm_square.csv: column given twice", naming no column
    gpu = _folder(tmp_path, gemm_square=f"{HEADER},,\n{ROW},,x\n")
    assert len(read_folder(gpu).gemm["gemm_square.csv"]) == 1


def test_a_device_file_with_a_byte_order_mark_reads_as_the_csv_files_do(tmp_path):
    # "not valid JSON (Unexpected UTF-8 BOM ...)" while a CSV file's BOM was skipped
    gpu = _folder(tmp_path)
    path = gpu / DEVICE_FILE
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert read_folder(gpu).device["name"] == "Test GPU"


def test_a_calibrated_yaml_that_fails_its_check_leaves_no_folder_behind(
    tmp_path, capsys, monkeypatch
):
    # a device name "X\nfoo: 1" made the YAML fail its load check: the file was removed, the
    # folders -o had created for it were left (the name is refused when read now; any other
    # failed check must clean up as well)
    monkeypatch.setattr(calibrate, "FIELDS", calibrate.FIELDS[:1])  # a fast fit
    dump = yaml.safe_dump
    monkeypatch.setattr(yaml, "safe_dump", lambda *args, **kw: dump(*args, **kw) + "foo: 1\n")
    out = tmp_path / "new" / "sub" / "c.yaml"
    argv = ["calibrate", "tensor_core", "--measured", str(_folder(tmp_path)), "-q", "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "foo: unknown field" in err, err
    assert not (tmp_path / "new").exists()
