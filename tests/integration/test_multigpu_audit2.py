"""A fourth audit of the multi-GPU model: a ring search that ran for minutes, a GPU subset that
crashed, topologies whose links were silently merged or double-counted, and messages that
blamed the wrong input."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import pytest
import yaml

from archsim import collective, train_step
from archsim.cli import main
from archsim.cli_system import _gpu_counts
from archsim.config.io import _resolve, hardware_from_dict, load_workload
from archsim.errors import ArchsimError, ConfigError, SimulationError
from archsim.system import load_system
from archsim.system.subsystem import subsystem
from archsim.system.topology import find_rings


def _data(name: str) -> dict:
    return copy.deepcopy(load_system(name).model_dump(mode="json"))


def _mesh(n: int, doubled: int = 1) -> dict:
    """An n-GPU NVLink full mesh, one link per pair (the first pair ``doubled`` links)."""
    data = _data("dgx1_v100")
    links = [
        {"a": f"gpu{i}", "b": f"gpu{j}", "kind": "nvlink", "count": 1}
        for i in range(n)
        for j in range(i + 1, n)
    ]
    links[0]["count"] = doubled
    data.update(gpus_per_node=n, nodes=1, name=f"mesh{n}")
    data["topology"].update(switches=[], links=links)
    return data


@pytest.mark.parametrize("doubled", [2, 20])
def test_a_dense_mesh_with_one_doubled_link_finds_its_rings_fast(doubled):
    # the packing search was bounded by GPU 0's out-degree, which the others cannot match: it
    # tried every combination of 5,040 Hamiltonian cycles (minutes)
    plain = find_rings(hardware_from_dict(_mesh(8)))
    t0 = time.perf_counter()
    rings = find_rings(hardware_from_dict(_mesh(8, doubled)))
    assert time.perf_counter() - t0 < 20
    assert plain.count == rings.count == 7  # one out-link and one in-link of each GPU per ring


def test_a_gpu_subset_linked_only_through_the_others_is_one_line():
    data = _data("dgx1_v100")
    data["gpus_per_node"] = 4
    data["topology"].update(
        switches=[],
        links=[
            {"a": "gpu0", "b": "gpu2", "kind": "nvlink", "count": 1},
            {"a": "gpu2", "b": "gpu1", "kind": "nvlink", "count": 1},
            {"a": "gpu2", "b": "gpu3", "kind": "nvlink", "count": 1},
        ],
    )
    system = hardware_from_dict(data)
    with pytest.raises(SimulationError) as exc:  # a pydantic ValidationError traceback before
        subsystem(system, 2)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("gpus=2: dgx1_v100's first 2 GPUs without the ")
    assert "'gpu1' cannot reach gpu0" in msg


@pytest.mark.parametrize("kind", ["nvlink", "pcie"])
def test_a_pair_listed_twice_is_refused(kind):
    # a second entry was added to the first (twice the physical NVLink bandwidth), and with
    # another kind it re-priced all the pair's links at the last entry's kind (busbw / 20)
    data = _data("dgx_h100")
    data["topology"]["link_kinds"].setdefault(
        "pcie", {"bandwidth_bytes_per_s": 32e9, "nccl_bandwidth_bytes_per_s": 24e9}
    )
    data["topology"]["links"].append({"a": "nvswitch", "b": "gpu0", "kind": kind, "count": 1})
    with pytest.raises(ConfigError, match=r"topology\.links\.8: joins 'nvswitch' and 'gpu0' as "
                       r"link 0 does; allowed: each pair once"):  # fmt: skip
        hardware_from_dict(data)


@pytest.mark.parametrize("name", ["nvswitch", "gpu3"])
def test_a_switch_name_used_twice_is_refused(name):
    data = _data("dgx_h100")
    data["topology"]["switches"].append(name)
    with pytest.raises(ConfigError, match=r"topology\.switches\.1: '.*' also names"):
        hardware_from_dict(data)


def test_four_nvswitch_chips_are_one_fabric():
    # DGX H100 as wired (5/4/4/5 NVLinks to four NVSwitch chips) got 5 rings, not 18
    data = _data("dgx_h100")
    data["topology"]["switches"] = ["sw0", "sw1", "sw2", "sw3"]
    data["topology"]["links"] = [
        {"a": f"gpu{g}", "b": f"sw{s}", "kind": "nvlink", "count": c}
        for g in range(8)
        for s, c in enumerate((5, 4, 4, 5))
    ]
    four, one = hardware_from_dict(data), load_system("dgx_h100")
    assert find_rings(four).count == find_rings(one).count == 18
    a = collective(four, "all_reduce", [1 << 30])["busbw_gb_s"].iloc[0]
    b = collective(one, "all_reduce", [1 << 30])["busbw_gb_s"].iloc[0]
    assert a == pytest.approx(b)


def test_a_systems_gpu_file_is_found_beside_it(tmp_path, monkeypatch):
    # it was looked up in the current folder
    sub = tmp_path / "rel" / "sub"
    sub.mkdir(parents=True)
    gpu = yaml.safe_load(_resolve("h100", "hardware").read_text())
    gpu["name"] = "my_h100"
    (sub / "mygpu.yaml").write_text(yaml.safe_dump(gpu))
    data = _data("dgx_h100")
    data.update(gpu="mygpu.yaml", schema_version=1)
    (sub / "sys.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    system = load_system("rel/sub/sys.yaml")
    assert Path(system.gpu).resolve() == (sub / "mygpu.yaml").resolve()
    assert collective(system, "all_reduce", [1 << 20])["time_us"].iloc[0] > 0


def test_a_precision_the_gpu_lacks_names_the_option_not_the_workload():
    with pytest.raises(SimulationError) as exc:
        train_step("dgx1_v100", "resnet50", precision="tf32")
    assert str(exc.value) == (
        "precision 'tf32': dgx1_v100's v100 has no tf32 tensor cores; allowed: amp_fp16, fp32"
    )


def test_a_collective_on_one_gpu_says_how_many_the_system_has():
    data = _data("dgx_h100")
    data["gpus_per_node"] = 1
    data["topology"]["links"] = []
    with pytest.raises(ArchsimError, match=r"^dgx_h100 has 1 GPU: a collective needs 2 GPUs"):
        collective(hardware_from_dict(data), "all_reduce", [1 << 20])


def test_model_parallel_default_counts_stay_inside_a_node():
    # --tensor 2 on two nodes defaulted to 2, 4, 8 and 16 GPUs, then refused 16
    two = load_system("dgx_h100").with_overrides({"nodes": 2})
    assert _gpu_counts(None, two, 2) == [2, 4, 8]
    assert _gpu_counts(None, two, 3) == [3, 6]
    assert _gpu_counts(None, two, 1) == [1, 2, 4, 8, 16]


def test_a_hardware_file_given_as_the_workload_says_so(capsys):
    path = _resolve("h100", "hardware")
    with pytest.raises(ConfigError, match=r"accelerator: a hardware file, not a workload"):
        load_workload(path)
    assert main(["train", "dgx_h100", str(path), "-q"]) == 2
    assert "a hardware file, not a workload" in capsys.readouterr().err
