"""A fifth audit of hardware fields and sweeps: a SCALE-Sim buffer of one word spun forever (a
SIGTERM did not stop it), a DRAM line of 1e18 words gave negative energy, a word larger than an
SRAM traced back, a trace fold of 9.7e8 values ran out of memory, a depthwise layer was refused
for 2 TB, and a 12 MB derive text was parsed before its length was checked."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from archsim.cli import main

PRESETS = Path(__file__).resolve().parents[2] / "hw_configs"


def _systolic(tmp_path: Path, scalesim: dict, **srams: int) -> Path:
    doc = yaml.safe_load((PRESETS / "systolic_32x32_os.yaml").read_text())
    doc["timing_model"] = "scalesim"
    doc["scalesim"] = {"interface_bandwidth": "user", **scalesim}
    for name, size in srams.items():
        doc[name]["size_bytes"] = size
    path = tmp_path / "sys.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _gemm(tmp_path: Path, m: int, n: int, k: int) -> Path:
    wl = tmp_path / "g.yaml"
    wl.write_text(f"schema_version: 1\nname: g\nsource: t\nlayers:\n"
                  f"  - {{name: g, kind: gemm, m: {m}, n: {n}, k: {k}}}\n")  # fmt: skip
    return wl


def _refused(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("scalesim", "srams", "needle"),
    [
        ({"word_bytes": 1}, {"ifmap_sram": 1},
         "ifmap_sram.size_bytes: ifmap_sram's 1 bytes hold 1 word(s) of 1 bytes; allowed: at "
         "least 2 words"),
        ({"word_bytes": 65537}, {},
         "scalesim.word_bytes: ifmap_sram's 65536 bytes hold 0 word(s) of 65537 bytes; "
         "allowed: at most 32768 bytes"),
        ({"word_bytes": 1, "filter_words_per_cycle": 10**18}, {},
         "scalesim.filter_words_per_cycle: 1000000000000000000 words per cycle, more than the "
         "65536 words filter_sram holds; allowed: at most 65536"),
    ],
)  # fmt: skip
def test_scalesim_buffers_that_cannot_work_are_refused(tmp_path, capsys, scalesim, srams, needle):
    hw = _systolic(tmp_path, scalesim, **srams)
    err = _refused(capsys, ["run", str(hw), str(_gemm(tmp_path, 64, 64, 64)), "-q",
                            "-o", str(tmp_path / "o")])  # fmt: skip
    assert f"{hw}: {needle}" in err
    # two words and a line as long as the buffer still run
    ok = _systolic(tmp_path, {"word_bytes": 1, "ifmap_words_per_cycle": 2}, ifmap_sram=2)
    argv = ["run", str(ok), str(_gemm(tmp_path, 8, 8, 8)), "-q", "-o", str(tmp_path / "p")]
    assert main(argv) == 0


def test_a_trace_fold_too_large_to_write_is_refused_first(tmp_path, capsys):
    # one fold of 9.7e8 values (under ARCHSIM_MAX_TRACE_VALUES) needed about 25 GB
    wl = _gemm(tmp_path, 1, 1, 10_000_000)
    err = _refused(capsys, ["run", "systolic_32x32_os", str(wl), "--trace", "-q",
                            "-o", str(tmp_path / "o")])  # fmt: skip
    assert f"{wl}: layers.0: layer 'g' needs about 4.37e+10 bytes of memory for one fold's " \
           "trace; allowed: up to 8.59e+09" in err  # fmt: skip
    assert not (tmp_path / "o").exists()


def test_a_systolic_depthwise_layer_is_estimated_per_group():
    from archsim.config.workload import ConvLayer
    from archsim.limits import layer_memory_bytes

    dw = ConvLayer(kind="conv", name="dw", c=100_000, k=100_000, groups=100_000, h=7, w=7,
                   r=3, s=3, pad=1)  # fmt: skip
    one = ConvLayer(kind="conv", name="one", c=1, k=1, h=7, w=7, r=3, s=3, pad=1)
    # the model runs one group's 49 x 9 x 1 GEMM and repeats it: it was 2.16e12 bytes
    assert layer_memory_bytes("systolic", dw) == layer_memory_bytes("systolic", one)


def test_a_long_derive_text_is_refused_before_it_is_parsed(tmp_path, capsys, monkeypatch):
    sweep = importlib.import_module("archsim.config.sweep")
    parsed: list[int] = []
    real = sweep.ast.parse
    monkeypatch.setattr(sweep.ast, "parse", lambda text, *a, **k: parsed.append(len(text))
                        or real(text, *a, **k))  # fmt: skip
    spec = tmp_path / "s.yaml"
    text = "a + " * 1000 + "a"
    spec.write_text(
        "schema_version: 1\nname: s\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
        f"axes: {{pe_array.num_pes: [4]}}\nderive: {{clock.frequency_hz: '{text}'}}\n"
    )
    err = _refused(capsys, ["sweep", str(spec), "-o", str(tmp_path / "o"), "-q", "-j", "1"])
    assert "4001 characters; allowed: at most 2000" in err
    assert all(n <= 2000 for n in parsed), parsed  # a 12 MB text took 1.5 GB to parse


def test_a_value_of_2_to_the_63_is_shown(tmp_path, capsys):
    doc = yaml.safe_load((PRESETS / "dcnn.yaml").read_text())
    doc["technology"]["node_nm"] = 2**63
    hw = tmp_path / "d.yaml"
    hw.write_text(yaml.safe_dump(doc))
    err = _refused(capsys, ["run", str(hw), "alexnet", "-q", "-o", str(tmp_path / "o")])
    assert "technology.node_nm: 9223372036854775808; allowed: at most" in err  # was "None"


def test_a_long_list_of_column_bits_is_not_printed_whole(tmp_path, capsys):
    doc = yaml.safe_load((PRESETS / "v100.yaml").read_text())
    doc["dram_pages"]["column_address_bits"] = [0] * 100_000
    hw = tmp_path / "v.yaml"
    hw.write_text(yaml.safe_dump(doc))
    err = _refused(capsys, ["run", str(hw), "deepbench_gemm", "-q", "-o", str(tmp_path / "o")])
    assert "column_address_bits (a list of 100000) must be" in err and len(err) < 1000


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        (("hbm_achievable_fraction",), "hbm_achievable_fraction: Input should be greater than or "
         "equal to 0.01"),
        (("cuda_cores", "sustained_fraction"), "cuda_cores.sustained_fraction: Input should be "
         "greater than or equal to 0.01"),
        (("power", "clock_step_hz"), "power.clock_step_hz: Input should be greater than or "
         "equal to 1000"),
    ],
)  # fmt: skip
def test_a_vanishing_gpu_fraction_or_clock_step_is_refused(tmp_path, capsys, path, needle):
    # 1e-300 made cycle counts past any integer: tracebacks ("Int value is too large",
    # "cannot convert float infinity to integer")
    doc = yaml.safe_load((PRESETS / "h100.yaml").read_text())
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = 1e-300
    hw = tmp_path / "h.yaml"
    hw.write_text(yaml.safe_dump(doc))
    err = _refused(capsys, ["run", str(hw), "deepbench_gemm", "-q", "-o", str(tmp_path / "o")])
    assert f"{hw}: {needle}" in err


def test_an_overflow_the_checks_missed_is_one_line(tmp_path, capsys, monkeypatch):
    def overflow(*args, **kwargs):
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(importlib.import_module("archsim.simulate"), "simulate", overflow)
    err = _refused(capsys, ["run", "tiny_eie", "-q", "-o", str(tmp_path / "o")])
    assert err.startswith("archsim: error: run: a number overflowed (cannot convert float "
                          "infinity to integer); allowed:")  # fmt: skip


def _edited(tmp_path: Path, preset: str, edit) -> Path:
    doc = yaml.safe_load((PRESETS / f"{preset}.yaml").read_text())
    edit(doc)
    path = tmp_path / f"{preset}_x.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _family(doc: dict, name: str) -> dict:
    return next(f for f in doc["library"]["families"] if f["name"] == name)


def test_a_vanishing_fill_rate_names_the_hardware_field(tmp_path, capsys):
    # 1e-300 B/clk overflowed the cycle counts and the error blamed the workload's layer 40
    hw = _edited(tmp_path, "h100", lambda d: _family(d, "sm80_unaligned").update(
        fill_bytes_per_clock=1e-300))  # fmt: skip
    err = _refused(capsys, ["run", str(hw), "deepbench_gemm", "-q", "-o", str(tmp_path / "o")])
    assert f"{hw}: library.families.4.fill_bytes_per_clock: Input should be greater than or " \
           "equal to 0.001" in err  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: [link.update(count=10**18) for link in d["topology"]["links"]],
         "topology.links.0.count: Input should be less than or equal to 1024"),
        (lambda d: d.setdefault("nccl", {}).update(nvls_efficiency=1e-300),
         "nccl.nvls_efficiency: 1e-300; allowed: 0 (no NVLS) or 0.01 to 1"),
        (lambda d: d.setdefault("nccl", {}).update(nvls_pipeline_stages=10**18),
         "nccl.nvls_pipeline_stages: Input should be less than or equal to 64"),
    ],
)  # fmt: skip
def test_system_fields_that_ran_out_of_memory_or_gave_nonsense(tmp_path, capsys, edit, needle):
    # links x 1e18 ran out of memory; NVLS at 1e-300 efficiency or 1e18 stages: rc 0 with a
    # bus bandwidth of 4e-298 GB/s
    sys_yaml = _edited(tmp_path, "dgx_h100", edit)
    argv = ["collective", "all_reduce", "--system", str(sys_yaml), "--sizes", "1M:4M"]
    err = _refused(capsys, [*argv, "--algo", "nvls", "-q", "-o", str(tmp_path / "o")])
    assert needle in err and str(sys_yaml) in err


def test_a_training_field_past_64_bit_cycles_names_the_system_file(tmp_path, capsys):
    sys_yaml = _edited(tmp_path, "dgx_h100", lambda d: d.setdefault("training", {}).update(
        elementwise_launch_s=1e18))  # fmt: skip
    err = _refused(capsys, ["train", str(sys_yaml), "resnet50", "--gpus", "8", "-q",
                            "-o", str(tmp_path / "o")])  # fmt: skip
    assert err.startswith(f"archsim: error: {sys_yaml}: conv1: 6e+18 s, beyond what a 64-bit")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"tensor_cores.precision_rate": {"fp16": "abc"}},
         "tensor_cores.precision_rate: 'abc' under key 'fp16' is not a number; allowed: a valid "
         "number written without quotes"),
        ({"tensor_cores.instruction_mnk": [64, "a", 16]},
         "tensor_cores.instruction_mnk.1: 'a' is not a number; allowed: a valid integer"),
    ],
)  # fmt: skip
def test_text_in_a_dict_or_list_of_numbers_names_where_it_is(override, message):
    # "precision_rate: 'abc' is not a number; allowed: a valid integer" (its keys' Literal
    # held 'int8', so a float dict asked for integers, and the key was not named)
    import archsim

    with pytest.raises(archsim.ArchsimError) as err:
        archsim.load_hardware("h100").with_overrides(override)
    assert message in str(err.value)
