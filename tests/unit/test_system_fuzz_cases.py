"""Multi-GPU system configs from a structural fuzz of `archsim collective` / `archsim train`
(links, switches and GPUs deleted, duplicated, renamed or left dangling; sections moved; huge
lists): each test is one failure class it found, now one `archsim: error:` line naming the file
and field, exit 2, nothing written (or, for valid input, a result)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from archsim.cli import main
from archsim.config.system import SystemConfig
from archsim.system import load_system
from archsim.system.api import collective
from archsim.system.subsystem import subsystem

HW = Path(__file__).resolve().parents[2] / "hw_configs"


def _preset(name: str) -> dict[str, Any]:
    return yaml.safe_load((HW / f"{name}.yaml").read_text())


def _refused(capsys: Any, tmp_path: Path, data: dict[str, Any], argv: list[str],
             needle: str) -> str:  # fmt: skip
    """``data`` as sys.yaml, run with ``argv`` (the system as sys.yaml): exit 2, one line
    naming the file and ``needle``, no output folder."""
    system = tmp_path / "sys.yaml"
    system.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    out = tmp_path / "out"
    argv = [str(system) if a == "SYS" else a for a in argv]
    assert main([*argv, "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"archsim: error: {system}: "), err
    assert needle in err[0], err
    assert not out.exists()
    return err[0]


COLLECTIVE = ["collective", "all_reduce", "--system", "SYS", "--sizes", "1M"]
TRAIN = ["train", "SYS", "alexnet", "--gpus", "2"]


def test_many_switches_are_checked_in_linear_time() -> None:
    """100,000 switches (a generated topology) ran the duplicate-name check for minutes (each
    name compared with every earlier one); the error listed every switch on its line."""
    data = _preset("dgx_h100")
    names = [f"s{i}" for i in range(30_000)]
    data["topology"]["switches"] = ["nvswitch", *names, "s7"]
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"topology.switches.30001: 's7' also names "
                       r"topology.switches.8; allowed: a name of its own"):  # fmt: skip
        SystemConfig.model_validate(data)
    data["topology"]["switches"] = ["nvswitch", *names]
    data["topology"]["links"].append({"a": "gpu0", "b": "ghost", "kind": "nvlink"})
    with pytest.raises(ValueError, match="allowed: gpu0..gpu7, nvswitch, s0, .*, s14 and "
                       "29985 more of topology.switches") as exc:  # fmt: skip
        SystemConfig.model_validate(data)
    assert len(str(exc.value)) < 2000
    assert time.perf_counter() - t0 < 2.5


@pytest.mark.parametrize("argv", [COLLECTIVE, TRAIN])
@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ("dangling", "topology.switches.6: the topology is disconnected: switch 'lonely' "
         "cannot reach gpu0 over topology.links; allowed: links that join every switch to the "
         "GPUs, or no entry for an unused switch"),
        ("island", "topology.switches.6: the topology is disconnected: switch 'isl0'"),
    ],
)  # fmt: skip
def test_a_switch_no_gpu_reaches_is_a_disconnected_topology(
    capsys: Any, tmp_path: Path, argv: list[str], change: str, needle: str
) -> None:
    """A switch declared but never linked (or linked only to another such switch) was taken:
    a topology with a piece the GPUs cannot reach, most likely a link left out."""
    data = _preset("dgx1_v100")
    topo = data["topology"]
    if change == "dangling":
        topo["switches"].append("lonely")
    else:
        topo["switches"] += ["isl0", "isl1"]
        topo["links"].append({"a": "isl0", "b": "isl1", "kind": "pcie"})
    _refused(capsys, tmp_path, data, argv, needle)


def test_a_cut_system_leaves_out_the_switches_only_other_gpus_reach() -> None:
    """`--gpus N` cuts the system to its first N GPUs: a switch only the others reach is left
    out of the cut (it would be a disconnected topology there), and the rings are the same."""
    data = _preset("pcie8_v100")
    topo = data["topology"]
    topo["switches"] = ["pcie0", "pcie1"]  # no root complex: pcie1 hangs off gpu3
    topo["links"] = [link for link in topo["links"] if "cpu0" not in (link["a"], link["b"])]
    topo["links"].append({"a": "gpu3", "b": "pcie1", "kind": "pcie"})
    cfg = load_system(SystemConfig.model_validate(data))
    cut = subsystem(cfg, 2)
    assert cut.topology.switches == ["pcie0"]
    assert {(link.a, link.b) for link in cut.topology.links} == {
        ("gpu0", "pcie0"), ("gpu1", "pcie0")}  # fmt: skip
    for name in ("dgx1_v100", "dgx_a100", "dgx_h100", "pcie4_v100", "pcie8_v100"):
        system = load_system(name)
        for gpus in range(1, system.gpus_per_node + 1):
            assert subsystem(system, gpus).gpus == gpus


@pytest.mark.parametrize("system", ["dgx1_v100", "pcie4_v100"])
@pytest.mark.parametrize("argv", [[*COLLECTIVE, "--algo", "nvls"], TRAIN])
def test_in_switch_reduction_needs_an_nvswitch(
    capsys: Any, tmp_path: Path, system: str, argv: list[str]
) -> None:
    """topology.nvswitch_reduction on a switchless NVLink mesh (DGX-1) or a PCIe box ran NVLS
    all-reduces there (a DGX-1 with H100s: 144 GB/s busbw through a switch it has not)."""
    data = _preset(system)
    data["gpu"] = "h100"
    data["topology"]["nvswitch_reduction"] = True
    data["nccl"]["nvls_efficiency"] = 0.85
    _refused(capsys, tmp_path, data, argv,
             "topology.nvswitch_reduction: true, but no switch of topology.switches has an "
             "NVLink link to every GPU (an NVSwitch); allowed: false, or an NVSwitch")  # fmt: skip
    data = _preset("dgx_a100")  # an NVSwitch: NVLS runs (Hopper GPUs)
    data["gpu"] = "h100"
    data["topology"]["nvswitch_reduction"] = True
    data["nccl"]["nvls_efficiency"] = 0.85
    assert SystemConfig.model_validate(data).topology.nvswitch_reduction


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("nv\nswitch", "topology.switches.0: contains a control character (newline); allowed: "
         "one line of printable text"),
        ("", "topology.switches.0: String should have at least 1 character"),
    ],
)  # fmt: skip
def test_switch_names_are_one_line_of_text(
    capsys: Any, tmp_path: Path, name: str, needle: str
) -> None:
    """A switch named with a newline or named '' was taken (names are shown in tables and
    one-line errors); any other Unicode name still is."""
    data = _preset("dgx_h100")
    data["topology"]["switches"] = [name]
    for link in data["topology"]["links"]:
        link["b"] = name
    _refused(capsys, tmp_path, data, COLLECTIVE, needle)
    for link in data["topology"]["links"]:
        link["b"] = "開關"
    data["topology"]["switches"] = ["開關"]
    assert SystemConfig.model_validate(data).topology.switches == ["開關"]


def test_two_gpus_joined_by_many_links_pack_their_rings(tmp_path: Path) -> None:
    """`--set topology.links.0.count=1024` on a DGX-1 cut to 2 GPUs (`--gpus 2`, or the
    training step's default GPU counts) raised a RecursionError: the ring packing recursed
    once per ring it packed."""
    out = tmp_path / "out"
    argv = ["collective", "all_reduce", "--system", "dgx1_v100", "--set",
            "topology.links.0.count=1024", "--gpus", "2", "--sizes", "1M",
            "-o", str(out), "-q"]  # fmt: skip
    assert main(argv) == 0
    frame = pd.read_csv(out / "results.csv")
    assert frame["channels"].iloc[0] == 32  # nccl.max_channels of the 1,024 rings


@pytest.mark.parametrize("system", ["dgx_h100", "dgx_a100", "dgx1_v100"])
def test_rings_beyond_max_channels_carry_nothing(system: str) -> None:
    """nccl.max_channels=1 on a DGX H100 still timed its 18 NVLink rings: one channel moved
    367 GB/s of busbw (NCCL: nChannels x the ring's bandwidth, 20.6 GB/s)."""
    cfg = load_system(system)
    nvlink = cfg.topology.link_kinds["nvlink"].nccl_bandwidth_bytes_per_s
    one = cfg.with_overrides({"nccl.max_channels": 1, "nccl.nvls_efficiency": 0.0})
    frame = collective(one, "all_reduce", [1 << 30], algorithm="ring", protocol="Simple")
    assert frame["channels"].iloc[0] == 1
    assert 0.9 * nvlink / 1e9 < frame["busbw_gb_s"].iloc[0] <= nvlink / 1e9
    full = collective(cfg, "all_reduce", [1 << 30], algorithm="ring", protocol="Simple")
    assert full["busbw_gb_s"].iloc[0] > 2 * frame["busbw_gb_s"].iloc[0]  # the defaults: as before


def test_a_missing_system_file_and_a_one_gpu_system_read_right(tmp_path) -> None:
    """The helper's notes: "hardware file not found" said nothing of what is allowed, and a
    one-GPU system "has 1 GPUs"."""
    import archsim
    from archsim.errors import ConfigError, SimulationError
    from archsim.system.subsystem import subsystem

    with pytest.raises(ConfigError) as info:
        archsim.load_hardware(tmp_path / "missing.yaml")
    assert str(info.value) == (
        f"{tmp_path / 'missing.yaml'}: hardware file not found; allowed: an existing hardware "
        "YAML file, or a preset name"
    )
    one = archsim.load_hardware("dgx_h100").with_overrides(
        {
            "gpus_per_node": 1,
            "topology.links": [],
            "topology.switches": [],
            "topology.nvswitch_reduction": False,
        }  # fmt: skip
    )
    with pytest.raises(SimulationError, match=r"has 1 GPU \(1 node\(s\) x 1\); asked for 2"):
        subsystem(one, 2)
