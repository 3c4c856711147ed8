"""`validate tensor_core --measured` and `calibrate tensor_core` on a small measurement folder."""

from __future__ import annotations

import json
import math
import typing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import archsim
from archsim.cli import main
from archsim.config.workload import GemmLayer, WorkloadSpec
from archsim.measure.folder import DEVICE_FILE, MeasurementError, read_folder, write_folder
from archsim.validation import calibrate
from archsim.validation.calibrate import FIELDS, fit, write_yaml
from archsim.validation.measured import compare, measured_rows, spearman

#: the launch-floor field of this archsim's GPU config
LAUNCH = next(
    f.path
    for f in FIELDS
    if f.path.startswith("launch")
    and calibrate._get(archsim.load_hardware("h100"), f.path) is not None
)
GEMMS = [  # m, n, k, a_stored, b_stored, precision, time_s
    (512, 512, 512, "m x k", "k x n", "fp16", 3.4e-6),
    (1024, 1024, 1024, "m x k", "n x k", "fp16", 5.6e-6),
    (2048, 2048, 2048, "k x m", "k x n", "bf16", 25e-6),
    (1024, 1024, 1024, "m x k", "k x n", "int8", 6.1e-6),
    (1024, 1024, 1024, "m x k", "n x k", "fp8", 4.7e-6),
]
DEVICE = {
    "device": {"name": "Test GPU", "sms": 132},
    "memory_eager": {"tiny_kernel_back_to_back_s": 1.2e-5},
    "energy": {"idle_watts": 126.0, "gemm_fp16_2048": {"joules_per_call": 0.01, "watts": 600.0,
               "smi_mid": [{"clocks.sm": "1700"}]},
               "hbm_copy_1024MB": {"joules_per_call": 0.36, "watts": 510.0},
               "hbm_copy_2048MB": {"joules_per_call": 0.36, "watts": 510.0,
                                   "bytes_per_call": 2 << 30}},
}  # fmt: skip


def _gemm_frame(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(
        rows, columns=["m", "n", "k", "a_stored", "b_stored", "precision", "time_s"]
    )
    frame["min_s"] = frame["time_s"] * 0.99
    frame["tflops"] = 2 * frame["m"] * frame["n"] * frame["k"] / frame["time_s"] / 1e12
    frame["sm_mhz"] = [1980.0, 1980.0, 1500.0, math.nan, 1900.0][: len(frame)]
    frame["board_w"] = 400.0
    return frame


def _conv_frame() -> pd.DataFrame:
    rec = dict(net="alexnet", layer="conv3", batch=1, precision="fp16", c=256, k=384, h=13,
               w=13, r=3, s=3, stride=1, pad=1, groups=1, p=13, q=13, time_s=7.6e-6,
               min_s=7.6e-6, tflops=39.2, sm_mhz=1980.0, board_w=136.0)  # fmt: skip
    return pd.DataFrame([rec])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tables = {"gemm_square.csv": _gemm_frame(GEMMS), "conv_alexnet.csv": _conv_frame()}
    return write_folder(tmp_path_factory.mktemp("meas") / "gpu", tables, DEVICE)


@pytest.fixture(scope="module")
def comparison(folder: Path):
    return compare(archsim.load_hardware("h100"), read_folder(folder))


def _fp8_supported() -> bool:
    names = typing.get_args(GemmLayer.model_fields["precision"].annotation)
    return any(n.startswith("fp8") for n in names)


def test_spearman_matches_the_rank_formula() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # no ties: 1 - 6 sum d^2 / (n (n^2 - 1)); ranks x 1..5, y 2,1,4,3,5 -> sum d^2 = 4
    assert spearman([1, 2, 3, 4, 5], [20, 10, 40, 30, 50]) == pytest.approx(1 - 6 * 4 / 120)
    # ties share their mean rank: y ranks 1.5, 1.5, 3 -> Pearson of (1,2,3) and (1.5,1.5,3)
    expected = np.corrcoef([1, 2, 3], [1.5, 1.5, 3])[0, 1]
    assert spearman([1, 2, 3], [5, 5, 9]) == pytest.approx(expected)
    assert math.isnan(spearman([1], [2]))


def test_rows_map_stored_shapes_to_transpose_flags(folder: Path) -> None:
    rows = measured_rows(read_folder(folder)).set_index("label")
    nt = rows.loc["1024x1024x1024"].iloc[0]
    assert nt["layer"]["transpose_b"] and not nt["layer"]["transpose_a"] and nt["layout"] == "NT"
    tn = rows.loc["2048x2048x2048"]
    assert tn["layer"]["transpose_a"] and not tn["layer"]["transpose_b"] and tn["layout"] == "TN"
    int8 = rows[rows["precision"] == "int8"].iloc[0]
    assert int8["layer"]["accumulate"] == "int32"
    if "output" in GemmLayer.model_fields:  # C/D type where the layers have one
        assert int8["layer"]["output"] == "int32" and nt["layer"]["output"] == "fp16"
    conv = rows.loc["alexnet conv3 n=1"]
    assert conv["layer"]["kind"] == "conv" and conv["flops"] == 2 * 384 * 13 * 13 * 256 * 9


def test_errors_are_relative_to_a_direct_simulation(comparison) -> None:
    rows = comparison.rows
    r = rows[rows["label"] == "512x512x512"].iloc[0]
    layer = {
        "name": "x",
        "kind": "gemm",
        "m": 512,
        "n": 512,
        "k": 512,
        "precision": "fp16",
        "accumulate": "fp32",
        "output": "fp16",
    }  # fmt: skip  (torch.mm writes fp16)
    wl = WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "w", "source": "test", "layers": [layer]}
    )
    direct = archsim.simulate(archsim.load_hardware("h100"), wl).layers[0].time_s
    assert r["sim_time_s"] == pytest.approx(direct, rel=1e-12)
    assert r["error"] == pytest.approx((direct - 3.4e-6) / 3.4e-6)
    done = rows[rows["sim_time_s"].notna()]
    err = (done["sim_time_s"] / done["time_s"] - 1).abs()
    assert comparison.overall["median_abs_error"] == pytest.approx(float(np.median(err)))
    assert comparison.overall["p90_abs_error"] == pytest.approx(float(np.percentile(err, 90)))
    assert comparison.overall["n"] == len(done) >= 5


def test_rows_the_model_cannot_run_keep_a_reason(comparison) -> None:
    fp8 = comparison.rows[comparison.rows["precision"] == "fp8"].iloc[0]
    if _fp8_supported():
        assert fp8["sim_time_s"] > 0 or "fp8" in fp8["reason"]
    else:
        assert math.isnan(fp8["sim_time_s"]) and "'fp8'" in fp8["reason"]
        assert any("not simulated: 1 row(s)" in n for n in comparison.notes)
    energy = comparison.energy.set_index("entry")
    assert energy.loc["hbm_copy_1024MB", "reason"].startswith("no bytes_per_call")
    copy = energy.loc["hbm_copy_2048MB"]  # a streaming kernel at its steady clock
    assert copy["reason"] == "" and copy["sim_clock_hz"] == 1.98e9
    assert copy["sim_energy_j"] == pytest.approx(0.36, rel=0.1), copy.to_dict()
    assert energy.loc["gemm_fp16_2048", "sim_energy_j"] > 0


def test_rows_a_preset_cannot_run_make_one_note_per_cause(folder: Path) -> None:
    """Against v100 every fp8 and bf16 row was its own note (113 lines for the shared folder:
    the reason named the row's layer); one note per cause now."""
    notes = compare(archsim.load_hardware("v100"), read_folder(folder)).notes
    skipped = [n for n in notes if n.startswith("not simulated")]
    assert len(skipped) == len({n.split(": ", 2)[2] for n in skipped})  # causes differ
    assert not any("'row" in n or "<api>" in n for n in skipped), skipped


def test_measured_clock_pins_each_row(folder: Path) -> None:
    hw = archsim.load_hardware("h100")
    cmp = compare(hw, read_folder(folder), clock="measured")
    rows = cmp.rows.set_index("label")
    big = rows.loc["2048x2048x2048"]  # measured at 1500 MHz, preset 1830 MHz
    assert big["clock_source"] == "measured"
    model = compare(hw, read_folder(folder)).rows.set_index("label").loc["2048x2048x2048"]
    # pinned: the row locked at 1500 MHz with no limit that could lower it, still priced at
    # that clock's voltage; modelled: the solved clock (bf16 power-limited above 1500 MHz),
    # so the pinned row is the slower one and draws less
    pinned = hw.with_overrides({"power.locked_clock_hz": 1.5e9,
                                "power.tensor_current_clock_hz": None,
                                "power.power_limit_w": 1e9})  # fmt: skip
    wl = WorkloadSpec.model_validate(
        {
            "schema_version": 1,
            "name": "w",
            "source": "test",
            "layers": [{"name": "g", **big["layer"]}],
        }
    )
    at_lock = archsim.simulate(pinned, wl).layers[0]
    assert big["sim_time_s"] == pytest.approx(at_lock.time_s)
    assert at_lock.extras["clock_hz"] == 1.5e9
    assert at_lock.extras["tc_clock_limit"] == "locked_clock"
    assert big["sim_clock_hz"] == 1.5e9
    assert big["sim_board_w"] == pytest.approx(at_lock.extras["board_power_w"])
    solved = archsim.simulate(hw, wl).layers[0]
    assert model["sim_time_s"] == pytest.approx(solved.time_s)
    assert solved.extras["power_limited"] and solved.extras["clock_hz"] > 1.5e9
    assert big["sim_time_s"] > model["sim_time_s"] and big["sim_board_w"] < model["sim_board_w"]
    assert rows[rows["precision"] == "int8"].iloc[0]["clock_source"] == "preset"  # blank sm_mhz


def test_a_measured_clock_outside_the_vf_range_is_named_not_silently_clamped(tmp_path) -> None:
    """An sm_mhz above the preset's highest clock (a card with a higher boost, a mislabelled
    column) was locked at max_clock_hz with no word: the run looked like it honoured it."""
    frame = _gemm_frame(GEMMS[:2])
    frame["sm_mhz"] = [2200.0, 1980.0]
    folder = write_folder(tmp_path / "gpu", {"gemm_square.csv": frame}, DEVICE)
    hw = archsim.load_hardware("h100")
    cmp = compare(hw, read_folder(folder), clock="measured")
    fast = cmp.rows.set_index("label").loc["512x512x512"]
    assert fast["clock_source"] == "measured" and fast["sim_clock_hz"] == hw.power.max_clock_hz
    line = "1 row(s) read an sm_mhz outside h100's clock range"
    assert any(line in n and "(2200-2200 MHz read)" in n for n in cmp.notes), cmp.notes
    assert not any("clock range" in n for n in compare(hw, read_folder(folder)).notes)


def test_a_folder_with_no_row_the_gpu_runs_is_refused_and_writes_nothing(tmp_path, capsys):
    """fp8 rows against v100: validate printed NaN statistics and exited 1 (its HTML written);
    calibrate "fitted" seven fields on an infinite objective and wrote the YAML."""
    frame = _gemm_frame([g for g in GEMMS if g[5] == "fp8"])
    folder = write_folder(tmp_path / "gpu", {"gemm_square.csv": frame}, DEVICE)
    html, out = tmp_path / "v.html", tmp_path / "my.yaml"
    for argv in (["validate", "tensor_core", "--measured", str(folder), "--hardware", "v100",
                  "--html", str(html), "-q"],
                 ["calibrate", "tensor_core", "--measured", str(folder), "--hardware", "v100",
                  "-o", str(out), "-q"]):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "none of its 1 timed row(s) can be simulated on v100" in err[0]
        assert "gemm_square.csv line 2: precision" in err[0], err
    assert not html.exists() and not out.exists()


def test_a_gemm_row_whose_rate_contradicts_its_shape_and_time_is_refused(tmp_path, capsys):
    """m = 1e12 'done' in 2.7 us at 12.4 TFLOPS was simulated: +1.5e10 % in a table whose
    columns ran together, exit 1, and calibrate fitted to it."""
    frame = _gemm_frame(GEMMS[:2])
    folder = write_folder(tmp_path / "gpu", {"gemm_square.csv": frame}, DEVICE)
    frame.loc[1, "m"] = 10**12  # edited by hand after the probe wrote it
    frame.to_csv(folder / "gemm_square.csv", index=False)
    for argv in (["validate", "tensor_core", "--measured", str(folder), "-q"],
                 ["calibrate", "tensor_core", "--measured", str(folder), "-q", "-o",
                  str(tmp_path / "c.yaml")]):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "gemm_square.csv: line 3: tflops:" in err, err
        assert "383.479 disagrees with 2 m n k / time_s = 3.74491e+11" in err
    assert not (tmp_path / "c.yaml").exists()
    frame.loc[1, "tflops"] = 0.0  # not measured: the rate the time implies still bounds it
    frame.to_csv(folder / "gemm_square.csv", index=False)
    with pytest.raises(MeasurementError, match=r"line 3: time_s: .* is 3.74491e\+11 TFLOPS; "
                       r"allowed: a time a GPU can reach \(under 200000 TFLOPS\)"):  # fmt: skip
        read_folder(folder)
    frame.loc[1, "m"] = GEMMS[1][0]  # a real shape without a rate: accepted
    frame.to_csv(folder / "gemm_square.csv", index=False)
    assert len(read_folder(folder).tables["gemm_square.csv"]) == 2


def test_a_gemm_rate_from_the_fastest_replay_is_accepted(tmp_path):
    """A folder whose tflops is 2 m n k / min_s (3 % off the median's rate here) was refused."""
    frame = _gemm_frame(GEMMS[:2])
    frame["min_s"] = frame["time_s"] * 0.97
    frame["tflops"] = 2 * frame["m"] * frame["n"] * frame["k"] / frame["min_s"] / 1e12
    folder = write_folder(tmp_path / "gpu", {"gemm_square.csv": frame}, DEVICE)
    assert len(read_folder(folder).tables["gemm_square.csv"]) == 2
    frame.loc[1, "tflops"] *= 1.05  # neither time's rate
    frame.to_csv(folder / "gemm_square.csv", index=False)
    with pytest.raises(MeasurementError, match=r"line 3: tflops: .* disagrees with 2 m n k / "
                       r"time_s = .* and / min_s = .*; allowed: .*time_s or min_s"):  # fmt: skip
        read_folder(folder)


def test_networks_sum_their_conv_layers(comparison) -> None:
    """Issue 16 states whole-network goals: each conv file's network at each batch, its
    layers' measured and simulated times summed."""
    nets = comparison.networks
    assert list(nets[["net", "batch", "precision", "layers", "simulated"]].itertuples(
        index=False, name=None)) == [("alexnet", 1, "fp16", 1, 1)]  # fmt: skip
    conv = comparison.rows[comparison.rows["kind"] == "conv"]
    w = nets.iloc[0]
    assert w["time_s"] == pytest.approx(conv["time_s"].sum())
    assert w["sim_time_s"] == pytest.approx(conv["sim_time_s"].sum())
    assert w["error"] == pytest.approx(w["sim_time_s"] / w["time_s"] - 1)


def test_cli_validate_measured_prints_table_and_writes_html(folder: Path, tmp_path, capsys):
    html = tmp_path / "m.html"
    code = main(["validate", "tensor_core", "--measured", str(folder), "--hardware", "h100",
                 "--html", str(html), "-q"])  # fmt: skip
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "all simulated rows" in out and "512x512x512" in out and "spearman" in out
    assert ("FAIL" in out) == (code == 1)
    assert "networks: their conv layers' times summed" in out
    assert "alexnet n=1 fp16: 1 layers, 7.6 us measured" in out
    page = html.read_text()
    assert "<svg" in page and "alexnet conv3 n=1" in page and 'id="networks"' in page


def _sim_us(out: str, shape: str) -> float:
    """The simulated microseconds of ``shape``'s row in the printed per-shape table."""
    line = next(x for x in out.splitlines() if f" {shape} " in f" {x} ")
    return float(line.split()[-2])


def test_cli_validate_measured_set_overrides_the_gpu(folder: Path, capsys) -> None:
    """`--set PATH=VALUE` holds the folder against the preset with a field changed (an H200's
    memory on the h100 preset, say), and names the changed config in the header."""
    base = ["validate", "tensor_core", "--measured", str(folder), "-q"]
    assert main(base) in (0, 1)
    before = capsys.readouterr().out
    assert main([*base, "--set", "launch.graph_s=8e-6"]) in (0, 1)
    after = capsys.readouterr().out
    assert "vs archsim h100, clock: model" in before
    assert "vs archsim h100 (launch.graph_s=8e-06), clock: model" in after
    # a 512^3 GEMM is launch-bound: 6.01 us more of launch, the kernel unchanged
    grown = _sim_us(after, "512x512x512") - _sim_us(before, "512x512x512")
    assert grown == pytest.approx(8.0 - 1.99, abs=0.02)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["validate", "tensor_core", "--measured", "{folder}", "--hardware", "nope"],
         "unknown hardware preset"),
        (["validate", "tensor_core", "--measured", "{folder}", "--hardware", "eie"],
         "allowed: a tensor_core"),
        (["validate", "eie", "--measured", "{folder}"], "compares tensor_core only"),
        (["validate", "tensor_core", "--measured", "{folder}", "--set", "hbm.nope=1"],
         "--set: hbm.nope: unknown field"),
        (["validate", "tensor_core", "--measured", "{folder}", "--set", "launch.graph_s"],
         "--set: launch.graph_s: malformed"),
        (["validate", "tensor_core", "--set", "launch.graph_s=1e-6"], "only used with --measured"),
        (["validate", "tensor_core", "--measured", "{missing}"], "folder not found"),
        (["calibrate", "tensor_core", "--measured", "{folder}", "-o", "{tmp}/x.txt"],
         "allowed: a path ending in .yaml"),
        (["calibrate", "tensor_core", "--measured", "{missing}", "-o", "{tmp}/x.yaml"],
         "folder not found"),
    ],
)  # fmt: skip
def test_cli_bad_input_is_one_line_exit_2(folder, tmp_path, capsys, argv, needle) -> None:
    subst = {"folder": str(folder), "missing": str(tmp_path / "none"), "tmp": str(tmp_path)}
    assert main([a.format(**subst) for a in argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.parametrize("mhz", [-3, 0, float("nan"), float("inf"), True, "fast", None])
def test_a_snapshot_clock_that_is_not_a_positive_number_is_one_line(tmp_path, capsys, mhz):
    # a negative or NaN mid-run SM clock was taken as measured (-3 MHz) or as no reading
    gpu = write_folder(tmp_path / "gpu", {"gemm_square.csv": _gemm_frame(GEMMS[:1])}, DEVICE)
    doc = json.loads((gpu / DEVICE_FILE).read_text())
    doc["energy"]["gemm_fp16_2048"]["smi_mid"][0]["clocks.sm"] = mhz
    (gpu / DEVICE_FILE).write_text(json.dumps(doc))  # NaN and Infinity as Python writes them
    argv = [
        "validate",
        "tensor_core",
        "--measured",
        str(gpu),
        "-q",
        "--html",
        str(tmp_path / "r.html"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    want = f"energy.gemm_fp16_2048.smi_mid.0.clocks.sm: {mhz!r} is not valid; allowed: a number"
    assert want + " of MHz above 0, up to 10000" in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    "path",
    [("energy", "gemm_fp16_2048", "joules_per_call"), ("energy", "idle_watts"),
     ("device", "max_sm_clock_mhz")],
)  # fmt: skip
def test_an_infinite_reading_is_one_line(tmp_path, capsys, path) -> None:
    """JSON's Infinity (Python's json reads it) passed as a measured energy or clock: an
    infinite J/call was printed against the model and calibrate fitted to it."""
    gpu = write_folder(tmp_path / "gpu", {"gemm_square.csv": _gemm_frame(GEMMS[:1])}, DEVICE)
    doc = json.loads((gpu / DEVICE_FILE).read_text())
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = float("inf")
    (gpu / DEVICE_FILE).write_text(json.dumps(doc))
    assert main(["validate", "tensor_core", "--measured", str(gpu), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path[-1]}: inf is not valid; allowed: a finite" in err


def test_golden_section_finds_a_bracketed_minimum() -> None:
    x, fx = calibrate._golden(lambda v: (v - 0.3) ** 2, 0.0, 1.0)
    width = 0.618 ** (calibrate.STEPS - 2)
    assert abs(x - 0.3) < width and fx == pytest.approx((x - 0.3) ** 2)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows 'measured' on h100 with an 8 us launch floor (the preset has 1.99 us): small,
    launch-bound GEMMs."""
    hw = archsim.load_hardware("h100").with_overrides({LAUNCH: 8e-6})
    shapes = [(512, 512, 512), (768, 768, 768), (1024, 1024, 1024), (1536, 1536, 1536)]
    layers = [{"name": f"g{i}", "kind": "gemm", "m": m, "n": n, "k": k}
              for i, (m, n, k) in enumerate(shapes)]  # fmt: skip
    wl = WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "w", "source": "test", "layers": layers}
    )
    times = [lay.time_s for lay in archsim.simulate(hw, wl).layers]
    rows = [
        (m, n, k, "m x k", "k x n", "fp16", t) for (m, n, k), t in zip(shapes, times, strict=True)
    ]
    frame = _gemm_frame(rows)
    return write_folder(tmp_path_factory.mktemp("syn") / "gpu", {"gemm_square.csv": frame}, DEVICE)


@pytest.fixture(scope="module")
def fitted(synthetic: Path):
    return fit(archsim.load_hardware("h100"), read_folder(synthetic))


def test_calibrate_fits_only_registered_fields_within_bounds(synthetic, fitted, tmp_path) -> None:
    hw, result = archsim.load_hardware("h100"), fitted
    fields = calibrate.fields_for(hw)  # FIELDS, one family field per kernel family
    assert set(result.after) | set(result.skipped) == {f.path for f in fields}
    assert {f.path for f in FIELDS if "*" not in f.path} <= {f.path for f in fields}
    names = [f.name for f in hw.library.families]
    unaligned, wgmma = names.index("sm80_unaligned"), names.index("sm90_tma_wgmma")
    assert f"library.families.{unaligned}.fill_bytes_per_clock" in result.after  # its 10.15
    assert f"library.families.{wgmma}.fill_bytes_per_clock" in result.skipped  # unset there
    assert LAUNCH in result.after and LAUNCH not in result.skipped
    for f in fields:
        assert f.path in result.skipped or f.low <= result.after[f.path] <= f.high
    assert result.objective_after < result.objective_before
    # the launch floor moves from the preset's 1.99 us towards the 8 us the rows were made with
    start = result.before[LAUNCH]
    assert abs(result.after[LAUNCH] - 8e-6) < abs(start - 8e-6)
    out = write_yaml("h100", result, read_folder(synthetic), tmp_path / "cal" / "my_gpu.yaml")
    text = out.read_text()
    assert text.startswith("# h100_calibrated: preset 'h100'") and str(synthetic) in text
    cal = archsim.load_hardware(out)
    assert calibrate._get(cal, LAUNCH) == pytest.approx(result.after[LAUNCH], rel=1e-5)
    assert cal.sms == hw.sms and cal.name == "h100_calibrated"
    # the host's eager launch interval is the folder's own reading, not a fit
    assert cal.launch.eager_s == 1.2e-5 and "launch.eager_s: 1.2e-05 (memory_eager" in text
    assert sorted(p.name for p in (tmp_path / "cal").iterdir()) == ["my_gpu.yaml"]


def test_cli_calibrate_prints_residuals_and_is_deterministic(synthetic, fitted, tmp_path, capsys):
    out = tmp_path / "my_gpu.yaml"
    assert main(["calibrate", "tensor_core", "--measured", str(synthetic), "-o", str(out),
                 "-q"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert LAUNCH in text and "held out" in text and "fit" in text
    api = write_yaml("h100", fitted, read_folder(synthetic), tmp_path / "api.yaml")
    assert out.read_text() == api.read_text()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["validate", "eie", "--clock", "measured"], "--clock: only used with --measured"),
        (["validate", "--hardware", "h100"], "--hardware: only used with --measured"),
        (["validate", "tensor_core", "--measured", "{folder}", "-o", "x.md"], "--html FILE"),
    ],
)
def test_cli_measured_options_out_of_place(folder, capsys, argv, needle) -> None:
    assert main([a.format(folder=folder) for a in argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_calibration_fields_expand_over_every_family_list() -> None:
    """``*`` expands over the list it follows: the GEMM library's families and the conv
    library's narrow-channel families (H100: one); a fitted value lands inside its list, the
    rest of the list unchanged."""
    hw = archsim.load_hardware("h100")
    paths = [f.path for f in calibrate.fields_for(hw)]
    narrow = "conv_library.narrow_channel_families.0.cta_fill_bytes_per_clock"
    assert narrow in paths and not any("narrow_channel_families.1" in p for p in paths)
    fams = len(hw.library.families)
    assert sum(p.startswith("library.families.") for p in paths) == 2 * fams
    cal = calibrate._with(hw, {narrow: 3.0, "library.families.1.mma_rate_fraction": 0.5})
    (fam,) = cal.conv_library.narrow_channel_families or []
    assert fam.cta_fill_bytes_per_clock == 3.0 and fam.registers_per_thread == 106
    assert cal.library.families[1].mma_rate_fraction == 0.5
    assert cal.library.families[0] == hw.library.families[0]
    v100 = [f.path for f in calibrate.fields_for(archsim.load_hardware("v100"))]
    assert not any(p.startswith("conv_library.") for p in v100)
