"""The probe's logic on the fake backend, and the measurement-folder format (read/write/check)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from archsim.cli import main
from archsim.measure.backend import BackendUnavailable, GemmShape
from archsim.measure.fake import EAGER_FLOOR_S, REPLAY_FACTORS, SYNC_S, FakeBackend
from archsim.measure.folder import (
    CONV_COLUMNS,
    DEVICE_FILE,
    GEMM_COLUMNS,
    MeasurementError,
    read_folder,
    write_folder,
)
from archsim.measure.loader import load_backend
from archsim.measure.plan import QUICK, square_gemm
from archsim.measure.probe import (
    BURST_REPLAY_S,
    MAX_CALL_S,
    burst_summary,
    burst_trace,
    calls_per_replay,
    gemm_rows,
    measure_energy,
    run_probe,
    time_in_graph,
)


@pytest.fixture(scope="module")
def quick_probe() -> tuple[dict[str, pd.DataFrame], dict]:
    return run_probe(FakeBackend(unsupported=("int8",)), QUICK)


def test_calls_per_replay_follows_the_20ms_500_rule() -> None:
    assert calls_per_replay(1e-3) == 20
    assert calls_per_replay(3e-3) == 7  # ceil(20 / 3)
    assert calls_per_replay(2.5e-6) == 500  # capped
    assert calls_per_replay(0.5) == 1


def test_fp8_and_int8_are_timed_with_b_column_major() -> None:
    """torch._scaled_mm needs B column-major; torch._int_mm runs its IMMA kernel on an H100
    only so (benchmarks/measured/h100_2026-11-27/floors.csv: 880 against 130 TOPS)."""
    for p, b in (("fp8", "n x k"), ("int8", "n x k"), ("fp16", "k x n"), ("tf32", "k x n")):
        g = square_gemm(256, p)
        assert (g.a_stored, g.b_stored) == ("m x k", b), p
    floors = pd.read_csv(
        Path(__file__).parents[2] / "benchmarks/measured/h100_2026-11-27/floors.csv"
    )
    t = floors.set_index("op").time_s
    assert t["int8_mm m x k/k x n"].max() > 6 * t["int8_mm m x k/n x k"].max()  # 8192^3


def test_graph_timing_is_median_and_min_of_five_replays_per_call() -> None:
    fake = FakeBackend()
    op = fake.gemm(GemmShape(1024, 1024, 1024))
    t = time_in_graph(fake, op)
    assert t is not None
    # per-call estimate from host round trips (8 us floor + 20 us sync) -> 20 ms / 28 us
    # rounds up to 715 -> capped at 500; the graph then confirms 500
    assert t.calls == 500
    # the first replay only checks n (it stays 500: no re-capture); the 5 timed replays see
    # factors 2..6 of the fixed cycle
    factors = [REPLAY_FACTORS[i % len(REPLAY_FACTORS)] for i in range(1, 6)]
    assert t.time_s == pytest.approx(op.seconds * sorted(factors)[2], rel=1e-12)
    assert t.min_s == pytest.approx(op.seconds * min(factors), rel=1e-12)
    assert t.sm_mhz == 1755.0 and t.board_w == pytest.approx(op.watts)


def test_a_kernel_longer_than_the_limit_is_left_out() -> None:
    fake = FakeBackend()
    huge = GemmShape(16384, 16384, 16384, precision="fp32")  # 8.8e12 FLOP at 50 TFLOP/s
    assert time_in_graph(fake, fake.gemm(huge)) is None
    notes: list[str] = []
    frame = gemm_rows(fake, [(None, huge)], notes.append)
    assert frame.empty and f"longer than {MAX_CALL_S} s" in notes[0]


def test_unsupported_precision_and_too_big_shapes_are_skipped_with_a_reason() -> None:
    fake = FakeBackend(unsupported=("fp8",), free_bytes=64 << 20)
    notes: list[str] = []
    shapes = [
        (None, GemmShape(256, 256, 256, precision="fp8")),
        (None, GemmShape(8192, 8192, 8192)),
    ]
    assert gemm_rows(fake, shapes, notes.append).empty
    assert "not supported" in notes[0] and "free device memory" in notes[1]


def test_energy_reading_integrates_power_over_about_the_window() -> None:
    fake = FakeBackend()
    op = fake.gemm(GemmShape(8192, 8192, 8192))
    e = measure_energy(fake, op, 4.0)
    assert 4.0 <= e["seconds"] < 4.0 + 0.2
    assert e["joules"] == pytest.approx(e["calls"] * op.seconds * op.watts, rel=1e-9)
    assert e["watts"] == pytest.approx(op.watts, rel=1e-9)
    assert e["smi_mid"][0]["clocks.sm"] == "1755"


def test_quick_probe_rows_and_device_document(quick_probe) -> None:
    tables, doc = quick_probe
    square = tables["gemm_square.csv"]
    assert list(square.columns) == list(GEMM_COLUMNS)
    assert set(square["precision"]) == {"fp16", "bf16", "tf32", "fp32", "fp8"}  # no int8 here
    assert len(square) == 3 * 5
    assert set(square.loc[square["precision"] == "fp8", "b_stored"]) == {"n x k"}
    assert list(tables["conv_alexnet.csv"].columns) == list(CONV_COLUMNS)
    conv1 = tables["conv_alexnet.csv"].iloc[0]
    assert (conv1["p"], conv1["q"]) == (55, 55)
    layouts = tables["gemm_layouts.csv"]
    assert set(zip(layouts["a_stored"], layouts["b_stored"], strict=True)) == {
        ("m x k", "k x n"), ("m x k", "n x k"), ("k x m", "k x n"), ("k x m", "n x k")
    }  # fmt: skip
    llm = tables["gemm_llm.csv"]
    assert llm.columns[0] == "model_projection" and len(llm) == 8 * 2 * 2
    # TFLOPS column is 2mnk / time
    r = square.iloc[0]
    assert r["tflops"] == pytest.approx(2 * r["m"] * r["n"] * r["k"] / r["time_s"] / 1e12)
    mem = doc["memory_eager"]
    assert mem["tiny_kernel_back_to_back_s"] == pytest.approx(EAGER_FLOOR_S)
    assert mem["copy_1024MB"]["bytes_moved"] == 2 << 30
    assert mem["copy_1024MB"]["GBps"] == pytest.approx(
        (2 << 30) / mem["copy_1024MB"]["time_s"] / 1e9
    )
    energy = doc["energy"]
    assert energy["idle_watts"] == pytest.approx(72.5)
    assert energy["gemm_fp16_8192"]["pj_per_flop"] == pytest.approx(
        energy["gemm_fp16_8192"]["joules_per_call"] / 2 / 8192**3 * 1e12
    )
    assert energy["hbm_copy_1024MB"]["bytes_per_call"] == 2 << 30


def test_probe_is_deterministic(quick_probe) -> None:
    tables, doc = run_probe(FakeBackend(unsupported=("int8",)), QUICK)
    for name, frame in quick_probe[0].items():
        pd.testing.assert_frame_equal(frame, tables[name])
    assert json.dumps(doc, sort_keys=True) == json.dumps(quick_probe[1], sort_keys=True)


def test_written_folder_reads_back_identically(quick_probe, tmp_path: Path) -> None:
    tables, doc = quick_probe
    out = write_folder(tmp_path / "gpu", tables, doc)
    assert sorted(p.name for p in out.iterdir()) == sorted([*tables, DEVICE_FILE])
    back = read_folder(out)
    for name, frame in tables.items():
        pd.testing.assert_frame_equal(back.tables[name], frame, check_dtype=False, rtol=1e-9)
    assert back.energy["gemm_fp16_8192"]["calls"] == doc["energy"]["gemm_fp16_8192"]["calls"]
    assert [p.name for p in tmp_path.iterdir()] == ["gpu"]  # no temporary folder left
    with pytest.raises(MeasurementError, match="not an empty folder"):
        write_folder(out, tables, doc)


def test_shared_h100_folder_reads(h100_dir: Path) -> None:
    f = read_folder(h100_dir)
    assert {n: len(t) for n, t in f.tables.items()} == {
        "gemm_llm.csv": 112, "gemm_square.csv": 77, "gemm_unaligned.csv": 6,
        "conv_alexnet.csv": 15,
    }  # fmt: skip
    assert f.ignored == ("README.md",)
    assert math.isnan(f.gemm["gemm_square.csv"].loc[0, "sm_mhz"])  # blank NVML reading
    assert f.device["sms"] == 132


@pytest.fixture(scope="module")
def fake_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tables, doc = run_probe(FakeBackend(), QUICK)
    return write_folder(tmp_path_factory.mktemp("fake") / "m", tables, doc)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: (d / "gemm_square.csv").unlink() or (d / "gemm_llm.csv").unlink()
         or (d / "gemm_layouts.csv").unlink() or (d / "gemm_unaligned.csv").unlink()
         or (d / "conv_alexnet.csv").unlink(), "no measurement files"),
        (lambda d: (d / DEVICE_FILE).unlink(), f"{DEVICE_FILE}: file missing"),
        (lambda d: (d / DEVICE_FILE).write_text("{"), "not valid JSON"),
        (lambda d: (d / DEVICE_FILE).write_text('{"device": {"name": "x"}}'), "sms: missing"),
        (lambda d: _sed(d / "gemm_square.csv", ",fp16,", ",fp4,"), "precision: 'fp4' is not valid"),
        (lambda d: _sed(d / "gemm_square.csv", "b_stored", "bstored"), "b_stored: column missing"),
        (lambda d: _sed(d / "gemm_square.csv", "m x k,", "m by k,"), "line 2: a_stored"),
        (lambda d: _sed(d / "conv_alexnet.csv", ",227,", ",-227,"), "h: -227 is out of range"),
        (lambda d: (d / "gemm_square.csv").write_text(""), "empty file"),
        (lambda d: _edit_json(d, lambda doc: doc["bursts"]["gemm_fp16_1536"]["trace"].append(
            [0.0, 1e-5, 1980, 500, 1.0])), "bursts.gemm_fp16_1536.trace."),
        (lambda d: _edit_json(d, lambda doc: doc.update(bursts=[1, 2])), "bursts: [1, 2]"),
        (lambda d: _edit_json(d, lambda doc: next(v for k, v in doc["memory_eager"].items()
            if k.startswith("copy_")).update(time_s=0)), "time_s: 0 is not valid"),
        (lambda d: _edit_json(d, lambda doc: next(v for k, v in doc["memory_eager"].items()
            if k.startswith("copy_")).update(bytes_moved="lots")), "bytes_moved: 'lots'"),
        (lambda d: _edit_json(d, lambda doc: next(v for k, v in doc["energy"].items()
            if k.startswith("hbm_copy")).update(bytes_per_call=-5)), "bytes_per_call: -5"),
    ],
)  # fmt: skip
def test_malformed_folder_is_one_line_naming_file_and_field(
    tmp_path: Path, fake_folder: Path, edit, needle
) -> None:
    d = Path(shutil.copytree(fake_folder, tmp_path / "m"))
    edit(d)
    with pytest.raises(MeasurementError) as info:
        read_folder(d)
    message = str(info.value)
    assert needle in message and "\n" not in message


def _edit_json(d: Path, change) -> None:
    doc = json.loads((d / DEVICE_FILE).read_text())
    change(doc)
    (d / DEVICE_FILE).write_text(json.dumps(doc))


def _sed(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new, 1))


def test_cli_probe_with_fake_backend_writes_a_readable_folder(tmp_path, capsys) -> None:
    assert main(["probe", "gpu", "-o", str(tmp_path / "p"), "--quick", "--backend", "fake"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert len(read_folder(tmp_path / "p").gemm["gemm_square.csv"]) == 18


def test_cli_probe_without_torch_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    assert main(["probe", "gpu", "-o", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PyTorch is not installed" in err
    assert 'pip install "archsim[probe]"' in err
    assert list(tmp_path.iterdir()) == []


def test_backend_without_nvml_is_one_line(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", object())
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(BackendUnavailable, match="nvidia-ml-py"):
        load_backend("torch")


def test_cli_probe_refuses_a_non_empty_folder(tmp_path, capsys) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "keep.txt").write_text("x")
    assert main(["probe", "gpu", "-o", str(tmp_path / "p"), "--backend", "fake"]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["keep.txt"]


def _fake_torch(cuda: bool) -> SimpleNamespace:
    return SimpleNamespace(
        __version__="2.9.0+cpu",
        version=SimpleNamespace(cuda=None),
        cuda=SimpleNamespace(is_available=lambda: cuda),
    )


def test_torch_without_a_cuda_gpu_is_one_line(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(cuda=False))
    monkeypatch.setitem(sys.modules, "pynvml", SimpleNamespace())
    with pytest.raises(BackendUnavailable, match="no CUDA GPU visible to PyTorch 2.9.0"):
        load_backend("torch")


def test_nvml_that_does_not_start_is_one_line(monkeypatch) -> None:
    class NVMLError(Exception):
        pass

    def init() -> None:
        raise NVMLError("Driver Not Loaded")

    monkeypatch.setitem(sys.modules, "torch", _fake_torch(cuda=True))
    monkeypatch.setitem(sys.modules, "pynvml", SimpleNamespace(NVMLError=NVMLError, nvmlInit=init))
    with pytest.raises(BackendUnavailable, match=r"NVML did not start \(Driver Not Loaded\)"):
        load_backend("torch")


def test_a_kernel_the_device_refuses_is_skipped_with_its_error() -> None:
    class Refusing(FakeBackend):
        def gemm(self, shape: GemmShape):  # type: ignore[override]
            if shape.m == 4096:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return super().gemm(shape)

    notes: list[str] = []
    shapes = [(None, GemmShape(4096, 4096, 4096)), (None, GemmShape(1024, 1024, 1024))]
    frame = gemm_rows(Refusing(), shapes, notes.append)
    assert list(frame["m"]) == [1024]
    assert "failed: CUDA out of memory" in notes[0]


def test_full_plan_times_the_convs_of_every_network_preset() -> None:
    """Issue 16's whole-network goals name VGG-16, GoogLeNet and ResNet-50: the full probe
    times every conv layer of each network preset (as the workload lists it) at batch 1, 32 and
    256, one ``conv_<net>.csv`` each, so that `validate --measured` can sum each network."""
    from archsim.measure.plan import FULL

    tables, _ = run_probe(FakeBackend(), FULL)
    sizes = {n: len(t) for n, t in tables.items() if n.startswith("conv_")}
    assert sizes == {"conv_alexnet.csv": 15, "conv_vgg16.csv": 39, "conv_googlenet.csv": 171,
                     "conv_resnet50.csv": 159}  # fmt: skip
    r50 = tables["conv_resnet50.csv"]
    assert set(r50["net"]) == {"resnet50"} and sorted(set(r50["batch"])) == [1, 32, 256]
    assert list(r50["layer"][:2]) == ["conv1", "res2a_branch1"]


def test_burst_trace_from_idle_on_the_fake() -> None:
    """Replays of ~2 ms back to back for the window, each row [t, s/call, MHz, W, J]; times
    start at 0 and grow, energy accumulates, the GPU idled before."""
    fake = FakeBackend()
    op = fake.gemm(GemmShape(1536, 1536, 1536))
    entry = burst_trace(fake, op, seconds=0.5, idle_s=2.0)
    calls, trace = entry["calls_per_replay"], entry["trace"]
    assert calls == math.ceil(BURST_REPLAY_S / (max(op.seconds, EAGER_FLOOR_S) + SYNC_S))
    assert entry["idle_s"] == 2.0 and len(trace) >= 10
    assert trace[0][0] == 0.0 and all(b[0] > a[0] for a, b in zip(trace, trace[1:], strict=False))
    assert trace[-1][0] < 0.5 <= trace[-1][0] + calls * op.seconds * max(REPLAY_FACTORS)
    assert {round(r[1] / op.seconds, 9) for r in trace} <= {round(f, 9) for f in REPLAY_FACTORS}
    assert all(b[4] > a[4] for a, b in zip(trace, trace[1:], strict=False))
    s = burst_summary(entry)
    assert s["first_us"] == pytest.approx(trace[0][1] * 1e6)
    assert math.isnan(s["clock_falls_s"])  # the fake never throttles


def test_burst_summary_finds_the_first_clock_drop() -> None:
    trace = [[0.0, 1e-5, 1980, 600, 0.0], [0.01, 1e-5, 1965, 700, 6.0],
             [0.02, 1.2e-5, 1500, 700, 13.0], [0.03, 1.3e-5, 1380, 700, 20.0]]  # fmt: skip
    s = burst_summary({"calls_per_replay": 200, "trace": trace})
    assert s["clock_falls_s"] == 0.02 and s["first_mhz"] == 1980 and s["last_mhz"] == 1380
    assert s["last_us"] == pytest.approx(13.0)


def test_quick_probe_writes_a_burst_trace_that_validate_summarises(
    quick_probe, fake_folder: Path, capsys
) -> None:
    bursts = quick_probe[1]["bursts"]
    assert list(bursts) == ["gemm_fp16_1536"] and bursts["gemm_fp16_1536"]["trace"]
    assert read_folder(fake_folder).bursts.keys() == {"gemm_fp16_1536"}
    main(["validate", "tensor_core", "--measured", str(fake_folder), "--hardware", "h100", "-q"])
    out = capsys.readouterr().out
    assert "bursts from idle" in out and "gemm_fp16_1536: 1755 -> 1755 MHz, " in out


def _script(name: str, *args: str) -> subprocess.CompletedProcess:
    """``benchmarks/<name> args`` run from the benchmarks folder, as the scripts are run."""
    root = Path(__file__).parents[2]
    cmd = [sys.executable, name, *args]
    return subprocess.run(cmd, cwd=root / "benchmarks", capture_output=True, text=True)


def test_conv_script_times_a_folders_convs_again(tmp_path: Path) -> None:
    """`benchmarks/gpu_conv_random.py --from-folder` re-times a measured folder's convs, the
    same geometry in the same order, into a folder `compare` reads; the settings are recorded."""
    root = Path(__file__).parents[2]
    src = root / "benchmarks/measured/h100_2026-11-27/random_convs"
    out = tmp_path / "again"
    done = _script("gpu_conv_random.py", "-o", str(out), "--backend", "fake",
                   "--from-folder", str(src), "--benchmark-limit", "0")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    geometry = ["net", "layer", "batch", "precision", "c", "k", "h", "w", "r", "s", "stride",
                "pad", "groups", "p", "q"]  # fmt: skip
    before = pd.read_csv(src / "conv_random.csv")[geometry]
    after = pd.read_csv(out / "conv_random.csv")
    assert len(after) == len(before) == 150 and after[geometry].equals(before)
    assert (after["time_s"] > 0).all()
    doc = json.loads((out / "device_memory_energy.json").read_text())
    assert doc["settings"] == {"from_folder": str(src), "cudnn_benchmark_limit": None}  # fake
    assert len(read_folder(out).conv["conv_random.csv"]) == 150


def test_conv_script_times_one_nets_convs_of_a_folder(tmp_path: Path) -> None:
    """`--nets alexnet` keeps the folder's AlexNet convs (5 layers x 3 batches), in file order;
    a net the folder lacks is one argparse line and writes nothing."""
    root = Path(__file__).parents[2]
    src = root / "benchmarks/measured/h100_2026-11-27"
    out = tmp_path / "alex"
    done = _script("gpu_conv_random.py", "-o", str(out), "--backend", "fake",
                   "--from-folder", str(src), "--nets", "alexnet")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    got = pd.read_csv(out / "conv_random.csv")
    want = pd.read_csv(src / "conv_alexnet.csv")
    cols = ["net", "layer", "batch", "groups"]
    assert got[cols].equals(want[cols])
    done = _script("gpu_conv_random.py", "-o", str(tmp_path / "x"), "--backend", "fake",
                   "--from-folder", str(src), "--nets", "lenet")  # fmt: skip
    assert done.returncode == 2 and "--nets: no conv of lenet" in done.stderr
    assert not (tmp_path / "x").exists()


def test_conv_script_refuses_a_negative_benchmark_limit(tmp_path: Path) -> None:
    done = _script("gpu_conv_random.py", "-o", str(tmp_path / "x"), "--backend", "fake",
                   "--benchmark-limit", "-1")  # fmt: skip
    assert done.returncode == 2 and "allowed: 0 (every engine) or more" in done.stderr
    assert not (tmp_path / "x").exists()


def test_gemm_script_times_the_gemms_of_a_folders_1x1_convs(tmp_path: Path) -> None:
    """`benchmarks/gpu_gemm_random.py --gemms-of-1x1`: each plain 1x1 conv of the folder as the
    GEMM cuBLAS would run (m = batch x h x w, n = filters, k = channels; A m x k, B n x k), each
    shape once; a folder without such convs is one argparse line."""
    root = Path(__file__).parents[2]
    src = root / "benchmarks/measured/h100_2026-11-27/batches_64_128"
    out = tmp_path / "gemms"
    done = _script("gpu_gemm_random.py", "-o", str(out), "--backend", "fake", "--gemms-of-1x1",
                   str(src))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    convs = pd.concat(read_folder(src).conv.values())
    # convs["pad"]: before pandas 2.2 removed it, `convs.pad` is DataFrame.pad (a fillna)
    plain = convs[(convs.r == 1) & (convs.s == 1) & (convs.stride == 1) & (convs["pad"] == 0)]
    plain = plain[plain.groups == 1]
    want = {(b * h * w, k, c) for b, h, w, k, c in plain[["batch", "h", "w", "k", "c"]].values}
    got = pd.read_csv(out / "gemm_random.csv")
    assert len(got) == len(want) > 20
    assert set(zip(got.m, got.n, got.k, strict=True)) == want
    assert (got.a_stored == "m x k").all() and (got.b_stored == "n x k").all()
    assert (got.precision == "fp16").all() and (got.time_s > 0).all()
    done = _script("gpu_gemm_random.py", "-o", str(tmp_path / "none"), "--backend", "fake",
                   "--gemms-of-1x1", str(src.parent / "random_gemms_2031"))  # fmt: skip
    assert done.returncode == 2 and "has no plain 1x1 convs" in done.stderr
    assert not (tmp_path / "none").exists()


def test_cupti_gap_script_times_the_same_gemms_twice(tmp_path: Path) -> None:
    """`benchmarks/gpu_cupti_gap.py`: the two reference rows of the shared folder and the first
    small rows of random_gemms_2031, timed before and after a profiler session, as two
    measurement folders and a per-shape table (the fake backend times them alike: no change)."""
    root = Path(__file__).parents[2]
    out = tmp_path / "gap"
    done = _script("gpu_cupti_gap.py", "-o", str(out), "--backend", "fake", "--count", "10")
    assert done.returncode == 0, done.stderr[-2000:]
    src = pd.read_csv(
        root / "benchmarks/measured/h100_2026-11-27/random_gemms_2031/gemm_random.csv"
    )
    want = src[src.time_s < 20e-6].head(10)
    table = pd.read_csv(out / "gap.csv")
    assert len(table) == 12
    assert list(table.m[2:]) == list(want.m) and list(table.precision[:2]) == ["fp8", "fp16"]
    assert (table.change_us == table.after_us - table.before_us).all()
    assert (table.change_us == 0).all() and (table.before_us > 0).all()
    for name in ("before", "after"):
        assert len(read_folder(out / name).gemm["gemm_random.csv"]) == 12
    assert "median +0.000 us" in done.stdout
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import gpu_cupti_gap
    finally:
        sys.path.remove(str(root / "benchmarks"))
    one = table.head(2).rename(columns={"before_us": "time_s"})[[*gpu_cupti_gap.KEY, "time_s"]]
    none = gpu_cupti_gap.gaps(pd.DataFrame([]), pd.DataFrame([]))
    assert none.empty and "change_us" in none.columns  # nothing timed: an empty table
    half = gpu_cupti_gap.gaps(one, one.head(1))  # the second shape timed only before
    assert len(half) == 2 and half.change_us.isna().tolist() == [False, True]


def test_train_step_trace_puts_each_kernel_in_its_phase() -> None:
    """`benchmarks/gpu_train_step.py --trace`: kernels are assigned to the phase range that
    holds their start (ranges end with a synchronize), in start order, with the gap to the
    phase's next kernel; kernels outside every range and other annotations are left out."""
    root = Path(__file__).parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import gpu_train_step as gts
    finally:
        sys.path.remove(str(root / "benchmarks"))

    def kernel(ts: float, dur: float, name: str) -> dict:
        return {"cat": "kernel", "ts": ts, "dur": dur, "name": f"{name}(int)",
                "args": {"grid": [2, 1, 1], "block": [128, 1, 1]}}  # fmt: skip

    events = [
        {"cat": "user_annotation", "name": "phase:backward", "ts": 100.0, "dur": 50.0},
        {"cat": "user_annotation", "name": "phase:forward", "ts": 0.0, "dur": 100.0},
        {"cat": "user_annotation", "name": "aten::conv2d", "ts": 1.0, "dur": 5.0},
        kernel(30.0, 10.0, "fprop_b"),
        kernel(10.0, 15.0, "fprop_a"),
        kernel(120.0, 20.0, "wgrad"),
        kernel(160.0, 5.0, "stray"),
    ]
    table = gts.phase_kernels(events)
    assert table.phase.tolist() == ["forward", "forward", "backward"]
    assert table.kernel.tolist() == ["fprop_a", "fprop_b", "wgrad"]
    assert table["index"].tolist() == [0, 1, 0]
    assert table.gap_to_next_us.iloc[0] == 5.0 and pd.isna(table.gap_to_next_us.iloc[1])
    assert table.grid.iloc[0] == "[2, 1, 1]"
    summary = gts.phase_summary(table)
    assert summary.to_dict("records") == [
        {"phase": "forward", "kernels": 2, "busy_us": 25.0, "span_us": 30.0},
        {"phase": "backward", "kernels": 1, "busy_us": 20.0, "span_us": 20.0},
    ]
    assert gts.phase_kernels([]).empty and list(gts.phase_summary(gts.phase_kernels([]))) == [
        "phase", "kernels", "busy_us", "span_us"
    ]  # fmt: skip


def test_gpu_session_runs_each_step_and_archives_them(tmp_path: Path) -> None:
    """`benchmarks/gpu_session.sh` with stand-ins for python3 and nvidia-smi: every step runs
    in order under its timeout, their logs and the session log land in one archive under $OUT,
    and a step the budget cannot hold is skipped, not started."""
    root = Path(__file__).parents[2]
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("python3", "nvidia-smi"):
        (stubs / name).write_text(f'#!/bin/sh\necho "{name} $*"\nsleep "${{STUB_S:-0}}"\n')
        (stubs / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "OUT": str(tmp_path / "out")}
    done = subprocess.run(["bash", str(root / "benchmarks/gpu_session.sh")], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "out" / "session.log").read_text()
    steps = ["gap", "train", "beta", "probe", "groups", "convs"]
    assert [line.split()[2].rstrip(":") for line in log.splitlines() if " end " in line] == steps
    assert all(f"end {s}: exit 0" in log for s in steps)
    assert "benchmarks/gpu_train_step.py -o" in log and "--trace" in log
    with tarfile.open(tmp_path / "out" / "session.tar.gz") as tar:
        names = set(tar.getnames())
    assert {f"./{s}.log" for s in steps} <= names and "./session.log" in names
    for script in ("gpu_cupti_gap", "gpu_train_step", "gpu_beta_epilogue", "gpu_conv_random"):
        assert (root / "benchmarks" / f"{script}.py").exists()
    env.update(BUDGET_S="24", STUB_S="1")  # each stand-in takes 1 s: the last steps do not fit
    done = subprocess.run(["bash", str(root / "benchmarks/gpu_session.sh")], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "out" / "session.log").read_text()
    started = [line for line in log.splitlines() if " start " in line]
    assert started and started[0].split()[2] == "gap" and "skip convs: " in log
    assert int(started[0].split("at most ")[1].split()[0]) <= 24 and len(started) < 6
