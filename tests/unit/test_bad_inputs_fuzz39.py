"""Bad inputs found by the thirty-ninth session's fuzzing: each is refused with one line naming
the file and field, exit 2, nothing written (or, for a sweep whose every point failed, exit 1
with its folder complete)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import archsim.config.io as config_io
from archsim.cli import main
from archsim.cli_args import integer, number
from archsim.errors import ConfigError
from archsim.measure.folder import DEVICE_FILE, MeasurementError, read_folder, write_folder

CONV_WL = (
    "schema_version: 1\nname: c\nsource: t\nlayers:\n"
    "  - {name: c1, kind: conv, c: 16, k: 16, h: 16, w: 16, r: 3, s: 3, pad: 1}\n"
)


def _refused(capsys: Any, argv: list[str], needle: str, out: Path) -> None:
    try:
        code = main([*argv, "-o", str(out), "-q"])
    except SystemExit as exc:  # argparse's own errors leave through sys.exit
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("archsim: error: ") and needle in err[0], err
    assert not out.exists()


def test_nvlink_sharp_needs_a_gpu_that_takes_part(tmp_path: Path, capsys: Any) -> None:
    """dgx_h100 with V100s or A100s ran NVLS all-reduces (Hopper and later only)."""
    for gpu in ("v100", "a100"):
        _refused(capsys, ["collective", "all_reduce", "--system", "dgx_h100", "--set",
                          f"gpu={gpu}", "--sizes", "1G"],
                 f"gpu: '{gpu}' takes no part in NVLink SHARP", tmp_path / gpu)  # fmt: skip
    out = tmp_path / "off"  # without the in-switch reduction the same GPUs run rings
    argv = ["collective", "all_reduce", "--system", "dgx_h100", "--set", "gpu=v100", "--set",
            "topology.nvswitch_reduction=false", "--sizes", "1G", "-o", str(out), "-q"]  # fmt: skip
    assert main(argv) == 0 and (out / "results.csv").exists()


@pytest.mark.parametrize(
    ("setting", "needle"),
    [
        ("sms=1000000000", "sms: Input should be less than or equal to 100000"),
        ("tensor_cores.per_sm=1000000000000", "tensor_cores.per_sm: Input should be less"),
        ("tensor_cores.fp16_fma_per_clock=100000000000000", "fp16_fma_per_clock: Input should"),
        ("cuda_cores.fp32_fma_per_clock=100000000000000", "fp32_fma_per_clock: Input should"),
    ],
)
def test_gpu_sizes_have_upper_bounds(
    tmp_path: Path, capsys: Any, setting: str, needle: str
) -> None:
    """sms=9223372036854775807 ran with stock h100's cycles and a utilisation of 1.5e-19."""
    wl = tmp_path / "c.yaml"
    wl.write_text(CONV_WL)
    _refused(capsys, ["run", "h100", str(wl), "--set", setting], needle, tmp_path / "out")


def test_nvls_channels_are_bounded(tmp_path: Path, capsys: Any) -> None:
    argv = ["collective", "all_reduce", "--system", "dgx_h100", "--set",
            "nccl.nvls_channels=1000000000", "--sizes", "1M"]  # fmt: skip
    _refused(capsys, argv, "nccl.nvls_channels: Input should be less than or equal to 64",
             tmp_path / "o")  # fmt: skip


def _device_folder(tmp_path: Path, device_text: str) -> Path:
    doc = {"device": {"name": "G", "sms": 132}, "memory_eager": {}, "energy": {}}
    row = {"m": 1024, "n": 1024, "k": 1024, "a_stored": "m x k", "b_stored": "k x n",
           "precision": "fp16", "time_s": 5.6e-06, "min_s": 5.5e-06, "tflops": 383.5,
           "sm_mhz": 1980, "board_w": 400}  # fmt: skip
    import pandas as pd

    folder = write_folder(tmp_path / "m", {"gemm_square.csv": pd.DataFrame([row])}, doc)
    (folder / DEVICE_FILE).write_text(device_text)
    return folder


@pytest.mark.parametrize(
    ("device", "needle"),
    [
        ('{"name": "G", "sms": 132, "L2_cache_size": 1e400}', "device: L2_cache_size: inf"),
        ('{"name": "G", "sms": 132, "total_memory": true}', "device: total_memory: True"),
        ('{"name": "G", "sms": 132, "memory_bus_width": -5120}', "memory_bus_width: -5120"),
        ('{"name": "G", "sms": 132, "sms": 80}', "sms: appears twice in one object"),
    ],
)
def test_a_device_block_states_its_numbers_once_and_finite(
    tmp_path: Path, device: str, needle: str
) -> None:
    """Garbled device readings were skipped silently (and JSON's last duplicate key won),
    while the same block refused a text or NaN SM count."""
    text = '{"device": ' + device + ', "memory_eager": {}, "energy": {}}'
    folder = _device_folder(tmp_path, text)
    with pytest.raises(MeasurementError, match=needle):
        read_folder(folder)
    doc = json.loads('{"device": {"name": "G", "sms": 132, "L2_cache_size": 52428800}, '
                     '"memory_eager": {}, "energy": {}}')  # fmt: skip
    (folder / DEVICE_FILE).write_text(json.dumps(doc))
    assert read_folder(folder).device["L2_cache_size"] == 52428800


def test_options_read_ascii_digits_only(tmp_path: Path, capsys: Any) -> None:
    """int() and float() read other scripts' digits (int('٨') == 8); --set, YAML and the
    size strings did not."""
    assert integer("8") == 8 and number("0.5") == 0.5 and number("nan") != number("nan")
    for bad in ("٨", "８"):
        with pytest.raises(ValueError):
            integer(bad)
        with pytest.raises(ValueError):
            number(bad)
    _refused(capsys, ["collective", "all_reduce", "--system", "dgx_a100", "--sizes", "١٢"],
             "size '١٢' is not a byte count", tmp_path / "a")  # fmt: skip
    argv = ["collective", "all_reduce", "--system", "dgx_a100", "--sizes", "1M", "--gpus", "٨"]
    _refused(capsys, argv, "argument --gpus: invalid integer value", tmp_path / "b")
    wl = tmp_path / "c.yaml"
    wl.write_text(CONV_WL)
    _refused(capsys, ["train", "dgx_a100", str(wl), "--gpus", "٨"], "--gpus '٨'", tmp_path / "c")
    _refused(capsys, ["train", "dgx_a100", str(wl), "--batch", "١٦", "--gpus", "1"],
             "argument --batch: invalid integer value", tmp_path / "d")  # fmt: skip


def test_a_huge_yaml_is_refused_before_it_is_built(monkeypatch: Any) -> None:
    """A 20 MB workload of 400,000 layers was refused after 71 s and 2 GB: its values were
    counted once the document was built in Python. Now libyaml's events are counted first,
    as the built document's values are counted and never more (merge keys, sets, ordered
    maps and pairs count less), so nothing the old check accepted is refused."""
    monkeypatch.setattr(config_io, "MAX_YAML_VALUES", 50_000)
    monkeypatch.setattr(config_io, "_PRESCAN_CHARS", 1_000)
    layer = "  - {name: g, kind: gemm, m: 8, n: 8, k: 8}\n"
    over = "layers:\n" + layer * 8_334  # 1 + 1 + 8,334 x 6 = 50,006 values
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="YAML too large: more than 50,000 values"):
        config_io.parse_yaml(over, "w.yaml")
    assert time.perf_counter() - t0 < 5
    built = config_io.parse_yaml("layers:\n" + layer * 8_333, "w.yaml")  # 50,000: allowed
    assert len(built["layers"]) == 8_333
    monkeypatch.setattr(config_io, "_PRESCAN_CHARS", 0)  # the small texts below are scanned too
    texts = {  # text -> values of the built document
        "[]": 1, "{}": 1, "a: [1, {b: []}]": 5, "- &x {k: [1, 2]}\n- *x\n": 9,
        "a: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\n": 7, "<<: {}\n": 1,
        "a: &a {x: 1}\nb: &b {x: 2, z: 3}\nc:\n  <<: [*a, *b]\n  x: 5\n": 9,
        "c: {<<: {x: 1, y: 2}, z: 3}": 5, "s: !!set {a, b, c}": 2,
        "o: !!omap [a: 1, b: 2]": 4, "p: !!pairs [a: 1, a: 2]": 4,
    }  # fmt: skip
    for text, values in texts.items():
        monkeypatch.setattr(config_io, "MAX_YAML_VALUES", values)
        assert config_io.parse_yaml(text, "t") is not None, text
        monkeypatch.setattr(config_io, "MAX_YAML_VALUES", values - 1)
        with pytest.raises(ConfigError, match="YAML too large"):
            config_io.parse_yaml(text, "t")


def test_a_sweep_whose_points_all_failed_keeps_a_complete_folder(tmp_path: Path) -> None:
    """A training sweep ranked by samples_per_s whose every point failed exited 2 from its
    report ('column(s) samples_per_s missing') and left the folder without report.html."""
    (tmp_path / "c.yaml").write_text(CONV_WL)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "schema_version: 1\nname: s\nhardware: dgx1_v100\nworkload: c.yaml\nmode: grid\n"
        "axes:\n  step.precision: [tf32]\nmetrics: {samples_per_s: max}\n"
    )
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "-q", "-j", "1"]) == 1
    assert (out / "report.html").exists() and (out / "errors.csv").exists()


def test_calibrate_warns_when_the_rows_cannot_determine_the_fields() -> None:
    """One measured row fitted 16 fields and wrote the YAML without a word."""
    from types import SimpleNamespace

    import pandas as pd

    from archsim.cli_calibrate import _thin_data

    fields = {f"f{i}": 1.0 for i in range(16)}
    one = SimpleNamespace(
        after=fields, rows_before=pd.DataFrame({"fit": [True], "sim_time_s": [1e-5]})
    )
    warnings = _thin_data(one)
    assert len(warnings) == 2
    assert warnings[0].startswith("1 fit row(s) for 16 field(s)")
    assert warnings[1].startswith("no held-out row")
    rows = pd.DataFrame({"fit": [True, False] * 20, "sim_time_s": [1e-5] * 40})
    many = SimpleNamespace(after=fields, rows_before=rows)
    assert _thin_data(many) == []
