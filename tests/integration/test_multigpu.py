"""Multi-GPU systems: topology, NCCL collectives (against a literal SimPy ring), DDP steps."""

from __future__ import annotations

import itertools
import json
import math

import pandas as pd
import pytest

from archsim.cli import main
from archsim.config.io import preset_dirs
from archsim.config.system import SystemConfig
from archsim.errors import ArchsimError, ConfigError, SimulationError
from archsim.system import load_system
from archsim.system.api import collective, size_range
from archsim.system.collectives import bus_factor, collective_time
from archsim.system.ring_reference import (
    pipelined_broadcast_time,
    ring_all_reduce_time,
    seeds_broadcast_time,
)
from archsim.system.topology import find_rings
from archsim.system.training import StepOptions, run_step
from archsim.system.workload import training_layers

SYSTEMS = ("dgx1_v100", "dgx_a100", "dgx_h100", "pcie4_v100", "pcie8_v100")


def _ideal(name: str) -> SystemConfig:
    """``name`` with every NCCL latency zero (the seeds' idealised ring)."""
    cfg = load_system(name)
    zero = {
        "nccl.base_latency_us": {a: (0.0, 0.0, 0.0) for a in ("tree", "ring", "nvls")},
        "nccl.hw_latency_us": {
            hw: {a: (0.0, 0.0, 0.0) for a in ("tree", "ring", "nvls")}
            for hw in ("nvlink", "pcie", "net")
        },
    }
    return cfg.with_overrides(zero)


@pytest.mark.parametrize("k,s", [(2, 1), (3, 5), (4, 3), (8, 16), (5, 7), (7, 2)])
def test_seeds_pipelined_ring_formula_is_exact(k: int, s: int) -> None:
    n, b = 3.0e6, 12.0e9
    sim = pipelined_broadcast_time(k, n, s, b)
    assert sim == pytest.approx(seeds_broadcast_time(k, n, s, b), rel=1e-12)
    assert seeds_broadcast_time(k, n, 10**9, b) == pytest.approx(n / b, rel=1e-6)  # -> N / B


@pytest.mark.parametrize("name", ["pcie4_v100", "dgx_a100", "dgx1_v100"])
def test_model_ring_all_reduce_equals_simpy_ring_without_latency(name: str) -> None:
    cfg = _ideal(name)
    rings = find_rings(cfg)
    for nbytes in (1 << 20, 3 << 24):
        c = collective_time(cfg, "all_reduce", nbytes, "ring", "Simple")
        b = rings.bandwidth_bytes_per_s
        sim = ring_all_reduce_time(cfg.gpus, nbytes, 4, b)
        assert c.time_s == pytest.approx(sim, rel=1e-12), (name, nbytes)
        assert c.busbw_bytes_per_s == pytest.approx(b, rel=1e-12)
        bc = collective_time(cfg, "broadcast", nbytes, "ring", "Simple")
        assert bc.time_s == pytest.approx(nbytes / b, rel=1e-12)  # the seeds' N / B limit


def test_bus_factors_follow_nccl_tests() -> None:
    assert bus_factor("all_reduce", 8) == pytest.approx(14 / 8)
    assert bus_factor("reduce_scatter", 8) == bus_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert bus_factor("broadcast", 8) == bus_factor("reduce", 8) == 1.0


def test_dgx1_rings_are_hamiltonian_cycles_within_link_counts() -> None:
    cfg = load_system("dgx1_v100")
    rings = find_rings(cfg)
    assert rings.count == 6 and rings.kind == "nvlink"
    use: dict[tuple[int, int], int] = {}
    for order in rings.orders:
        assert sorted(order) == list(range(8))
        for u, v in itertools.pairwise((*order, order[0])):
            use[(u, v)] = use.get((u, v), 0) + 1
    count = {}
    for link in cfg.topology.links:
        if link.kind == "nvlink":
            a, b = int(link.a[3:]), int(link.b[3:])
            count[(a, b)] = count[(b, a)] = link.count
    assert all(n <= count.get(e, 0) for e, n in use.items()), use
    assert rings.bandwidth_bytes_per_s == pytest.approx(6 * 20e9)


@pytest.mark.parametrize(
    "name,count,bw", [("dgx_a100", 12, 20e9), ("dgx_h100", 18, 20.6e9), ("pcie8_v100", 1, 12e9)]
)
def test_ring_bandwidth_per_system(name: str, count: int, bw: float) -> None:
    rings = find_rings(load_system(name))
    assert (rings.count, rings.ring_bandwidth_bytes_per_s) == (count, pytest.approx(bw))


def test_shared_pcie_uplink_divides_the_ring() -> None:
    """Two GPUs on one switch whose uplink the ring crosses twice each way: half bandwidth."""
    data = load_system("pcie4_v100").model_dump()
    data["topology"]["switches"] = ["pcie0", "pcie1", "cpu0"]
    data["topology"]["links"] = [
        {"a": "gpu0", "b": "pcie0", "kind": "pcie", "count": 1},
        {"a": "gpu1", "b": "pcie1", "kind": "pcie", "count": 1},
        {"a": "gpu2", "b": "pcie0", "kind": "pcie", "count": 1},
        {"a": "gpu3", "b": "pcie1", "kind": "pcie", "count": 1},
        {"a": "pcie0", "b": "cpu0", "kind": "pcie", "count": 1},
        {"a": "pcie1", "b": "cpu0", "kind": "pcie", "count": 1},
    ]
    rings = find_rings(SystemConfig.model_validate(data))
    assert rings.ring_bandwidth_bytes_per_s == pytest.approx(6e9)  # 12 GB/s over 2 hops


def test_nccl_choice_by_size() -> None:
    h100 = load_system("dgx_h100")
    small = collective_time(h100, "all_reduce", 8 << 10)
    big = collective_time(h100, "all_reduce", 1 << 30)
    assert small.protocol == "LL" and big.algorithm == "nvls"
    assert (
        big.busbw_bytes_per_s
        > collective_time(h100, "all_reduce", 1 << 30, "ring").busbw_bytes_per_s
    )
    a100 = load_system("dgx_a100")
    assert collective_time(a100, "all_reduce", 1 << 30).algorithm == "ring"  # no NVLS on A100
    times = [collective_time(a100, "all_reduce", 1 << p).time_s for p in range(10, 34)]
    assert times == sorted(times)  # more bytes never take less time


def test_multinode_ring_is_capped_by_the_nics() -> None:
    two = load_system("dgx_a100").with_overrides({"nodes": 2})
    c = collective_time(two, "all_reduce", 8 << 30, "ring", "Simple")
    assert c.ranks == 16 and c.inter_bytes > 0
    assert c.busbw_bytes_per_s == pytest.approx(8 * 24e9, rel=0.02)  # 8 HDR NICs as NCCL models


def test_collective_table_and_sizes() -> None:
    assert size_range("8:64") == [8, 16, 32, 64]
    assert size_range("1K:1M:32") == [1024, 32768, 1048576]
    frame = collective("dgx_h100", "all_gather", "1M:8M")
    assert list(frame["size_bytes"]) == [1 << 20, 1 << 21, 1 << 22, 1 << 23]
    algbw = frame["size_bytes"] / (frame["time_us"] * 1e-6) / 1e9
    assert (frame["algbw_gb_s"] - algbw).abs().max() < 1e-9
    assert (frame["busbw_gb_s"] - frame["algbw_gb_s"] * 7 / 8).abs().max() < 1e-9


@pytest.mark.parametrize(
    "change,needle",
    [
        (
            {"topology.links": [{"a": "gpu0", "b": "gpu9", "kind": "nvlink"}]},
            "'gpu9' does not exist",
        ),
        ({"topology.links": [{"a": "gpu0", "b": "gpu1", "kind": "nvlink"}]}, "disconnected"),
        (
            {"topology.link_kinds.nvlink.bandwidth_bytes_per_s": 0},
            "greater than or equal to 1000000",
        ),
        (
            {"topology.link_kinds.nvlink.nccl_bandwidth_bytes_per_s": -5},
            "greater than or equal to 1000000",
        ),
        ({"nodes": 0}, "greater than or equal to 1"),
        ({"gpus_per_node": 4096}, "less than or equal to 1024"),
        ({"gpu": "eie"}, "not a GPU preset; allowed: a100, h100, v100"),
        ({"step.gpus": 12}, "step.gpus is 12 but the system has 8 GPUs"),
        ({"step.memory_format": "chwn"}, "'nhwc' or 'nchw'"),
        ({"host.images_per_s_per_core": 0}, "greater than 0"),
        (
            {"host.images_per_s_per_core": 150.0, "host.cpu_cores": None},
            "host.cpu_cores: cpu_cores is unset but images_per_s_per_core is set; allowed",
        ),
    ],
)
def test_bad_systems_are_one_line_config_errors(change: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_system("dgx_a100").with_overrides(change)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_bad_collective_requests() -> None:
    h100 = load_system("dgx_h100")
    with pytest.raises(SimulationError, match="size 0 bytes; allowed: an integer >= 1"):
        collective_time(h100, "all_reduce", 0)
    with pytest.raises(SimulationError, match="has 8 GPUs"):
        collective(h100, "all_reduce", [1024], gpus=9)
    with pytest.raises(SimulationError, match="nvls"):
        collective_time(load_system("dgx_a100"), "all_reduce", 1024, "nvls")
    with pytest.raises(ArchsimError, match="not a byte count"):
        size_range("8:lots")
    # one NVLS channel: NCCL's (channels - 1) / channels leaves it no bandwidth, so NVLS is not
    # a choice (it divided by zero); rings carry the large sizes instead
    one = h100.with_overrides({"nccl.nvls_channels": 1})
    assert collective_time(one, "all_reduce", 1 << 30).algorithm == "ring"
    with pytest.raises(SimulationError, match="cannot use algorithm=nvls"):
        collective_time(one, "all_reduce", 1 << 30, "nvls")


def _tiny_workload(tmp_path):
    path = tmp_path / "mlp.yaml"
    layers = [
        {"name": "fc1", "kind": "fc", "inputs": 1024, "outputs": 4096, "weight_density": 1.0,
         "activation_density": 1.0},
        {"name": "fc2", "kind": "fc", "inputs": 4096, "outputs": 4096, "weight_density": 1.0,
         "activation_density": 1.0},
        {"name": "fc3", "kind": "fc", "inputs": 4096, "outputs": 1024, "weight_density": 1.0,
         "activation_density": 1.0},
    ]  # fmt: skip
    path.write_text(json.dumps({"schema_version": 1, "name": "mlp", "source": "test",
                                "layers": layers}))  # fmt: skip
    return str(path)


def test_training_step_accounts_for_every_second(tmp_path) -> None:
    wl = _tiny_workload(tmp_path)
    sysm = load_system("pcie8_v100")
    run = run_step(sysm, wl, StepOptions(gpus=8, batch_per_gpu=64))
    s = run.metadata["train_step"]
    assert s["gpus"] == 8 and s["buckets"] >= 2
    assert s["step_s"] == pytest.approx(s["compute_s"] + s["exposed_communication_s"]
                                        + s["ddp_copy_back_s"] + s["optimizer_s"],
                                        rel=1e-9)  # fmt: skip
    assert 0 < s["ddp_copy_back_s"] < s["ddp_copy_s"]  # the hook's copy runs inside compute_s
    assert s["overlapped_communication_s"] + s["exposed_communication_s"] == pytest.approx(
        s["communication_s"], rel=1e-9
    )
    assert s["exposed_communication_s"] > 0  # PCIe: the last bucket cannot hide
    assert 0 < s["scaling_efficiency"] < 1
    one = run_step(sysm, wl, StepOptions(gpus=1, batch_per_gpu=64)).metadata["train_step"]
    assert one["communication_s"] == 0 and one["scaling_efficiency"] == 1.0
    assert s["single_gpu_samples_per_s"] == pytest.approx(one["samples_per_s"], rel=1e-12)
    nccl = [e for e in s["timeline"] if e[0] == "nccl"]
    assert len(nccl) == s["buckets"] and all(b[2] >= a[3] for a, b in itertools.pairwise(nccl))


def test_step_rows_charge_energy_where_their_time_is() -> None:
    """A layer row holds its elementwise passes' time, so their HBM energy too; the optimizer
    row only the optimizer's bytes (it once carried the whole step's elementwise energy in its
    0.2 ms: 131 kW on dgx_h100 ResNet-50). The step's total is the same either way."""
    run = run_step(load_system("dgx_h100"), "resnet50", StepOptions(gpus=8, batch_per_gpu=32))
    df = run.to_dataframe()
    opt, layers = df[df["kind"] == "optimizer"], df[df["kind"] == "train_layer"]
    # per GPU the optimizer streams at HBM speed, so its power is HBM's dynamic power, far
    # below a board's 700 W; the layer rows (GEMMs + passes) stay within eight boards' limit
    assert len(opt) == 1 and opt["power_w"].iloc[0] / 8 < 300, opt["power_w"].iloc[0]
    assert (layers["power_w"] / 8 < 750).all(), layers["power_w"].max()
    assert df["energy_pj"].sum() * 1e-12 == pytest.approx(
        run.metadata["train_step"]["energy_j"], rel=1e-12
    )


def test_faster_links_and_compression_shrink_exposed_communication(tmp_path) -> None:
    wl = _tiny_workload(tmp_path)
    base = load_system("pcie8_v100")
    fast = base.with_overrides({"topology.link_kinds.pcie.nccl_bandwidth_bytes_per_s": 1.2e12})
    opts = StepOptions(gpus=8, batch_per_gpu=64)
    slow_s = run_step(base, wl, opts).metadata["train_step"]
    fast_s = run_step(fast, wl, opts).metadata["train_step"]
    topk = run_step(base, wl, StepOptions(8, batch_per_gpu=64, topk_density=0.01))
    assert fast_s["exposed_communication_s"] < slow_s["exposed_communication_s"]
    assert fast_s["scaling_efficiency"] > slow_s["scaling_efficiency"]
    assert topk.metadata["train_step"]["communication_s"] < slow_s["communication_s"]


def test_host_loader_workers_bound_the_step(tmp_path, capsys) -> None:
    """host: a node's loader workers, at most one per core, feed its GPUs equally."""
    wl = _tiny_workload(tmp_path)
    opts = StepOptions(gpus=8, batch_per_gpu=64)
    dgx1 = load_system("dgx1_v100")
    assert (dgx1.host.cpu_cores, dgx1.host.loader_workers_per_gpu) == (40, 8)
    base = run_step(dgx1, wl, opts).metadata["train_step"]
    assert base["input_stall_s"] == 0.0  # the presets leave the per-core rate unset
    slow = dgx1.with_overrides({"host.images_per_s_per_core": 100.0})
    s = run_step(slow, wl, opts).metadata["train_step"]
    # 8 GPUs: 64 workers on 40 cores, 4000 img/s, 500 per GPU; 1 GPU: 8 workers, 800 img/s
    assert s["step_s"] == pytest.approx(64 / 500, rel=1e-12)
    assert s["samples_per_s"] == pytest.approx(4000.0, rel=1e-12)
    assert s["single_gpu_samples_per_s"] == pytest.approx(800.0, rel=1e-12)
    assert s["speedup_vs_1_gpu"] == pytest.approx(5.0, rel=1e-12)
    assert s["input_stall_s"] == pytest.approx(s["step_s"] - base["step_s"], rel=1e-9)
    assert s["step_s"] == pytest.approx(s["compute_s"] + s["exposed_communication_s"]
                                        + s["ddp_copy_back_s"] + s["optimizer_s"]
                                        + s["input_stall_s"], rel=1e-9)  # fmt: skip
    assert s["timeline"][-1][1] == "input_stall"
    # DGX A100 as DLE runs it: 16 workers x 8 GPUs = 128 = its cores, so every worker has a
    # core at 1 and at 8 GPUs and no per-core rate costs the 8-GPU step more than the 1-GPU one
    a100 = load_system("dgx_a100").with_overrides({"host.images_per_s_per_core": 100.0})
    a = run_step(a100, wl, opts).metadata["train_step"]
    assert a["samples_per_s"] == pytest.approx(12800.0, rel=1e-12)
    assert a["speedup_vs_1_gpu"] == pytest.approx(8.0, rel=1e-12)
    fast = dgx1.with_overrides({"host.images_per_s_per_core": 1e12})
    f = run_step(fast, wl, opts).metadata["train_step"]
    assert f["input_stall_s"] == 0.0 and f["step_s"] == base["step_s"]
    bad = ["train", "dgx_a100", wl, "--gpus", "8", "--batch", "8", "-o", str(tmp_path / "h"),
           "--set", "host.images_per_s_per_core=-5"]  # fmt: skip
    assert main(bad) == 2
    err = capsys.readouterr().err
    assert "host.images_per_s_per_core" in err and "greater than 0" in err


def test_ddp_buckets_follow_pytorch_caps(tmp_path) -> None:
    from archsim.config.io import load_workload
    from archsim.system.training import _buckets
    from archsim.system.workload import training_layers

    layers = training_layers(load_workload(_tiny_workload(tmp_path)), 64)
    sysm = load_system("dgx_a100")
    buckets = _buckets(layers, sysm, 4)
    assert [b[0] for b in buckets][0] == 2  # reverse layer order: fc3 first
    assert sorted(i for b in buckets for i in b) == [0, 1, 2]
    small = sysm.with_overrides({"ddp.bucket_bytes": 1, "ddp.first_bucket_bytes": 1})
    assert len(_buckets(layers, small, 4)) == 3


def test_train_errors(tmp_path) -> None:
    wl = _tiny_workload(tmp_path)
    h100 = load_system("dgx_h100")
    with pytest.raises(SimulationError, match="allowed: 1 to 8"):
        run_step(h100, wl, StepOptions(gpus=16))
    with pytest.raises(SimulationError, match="precision 'fp64'"):
        run_step(h100, wl, StepOptions(precision="fp64"))
    big = h100.with_overrides({"ddp.bucket_bytes": 1 << 40})
    with pytest.raises(SimulationError, match="ddp.bucket_bytes"):
        run_step(big, wl, StepOptions(gpus=2, batch_per_gpu=8))


def test_cli_collective_and_train(tmp_path, capsys) -> None:
    out = tmp_path / "coll"
    assert main(["collective", "--system", "dgx_a100", "--sizes", "1M:4M", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "busbw" in text and "ring/" in text
    for name in ("results.csv", "results.json", "report.html"):
        assert (out / name).stat().st_size > 0
    assert "<svg" in (out / "report.html").read_text()
    page = (out / "report.html").read_text()  # its energy and what it depends on (audit F)
    assert "energy (J)" in page and "Deterministic: results depend only on (system" in page
    assert main(["collective", "--sizes", "0", "-o", str(tmp_path / "x")]) == 2
    assert "allowed" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    wl = _tiny_workload(tmp_path)
    tout = tmp_path / "train"
    assert main(["train", "pcie4_v100", wl, "--gpus", "1,4", "--batch", "32", "-o", str(tout)]) == 0
    saved = json.loads((tout / "results.json").read_text())
    rows = saved["steps"]
    assert [r["gpus"] for r in rows] == [1, 4]
    assert "Deterministic: results depend only on" in (tout / "report.html").read_text()
    # both record what reproduces them, as `archsim run` does
    coll = json.loads((out / "results.json").read_text())
    for data in (coll, saved):
        assert data["archsim_version"] and len(data["model_fingerprint"]) == 16
        assert data["deterministic"].startswith("results depend only on")
    assert saved["workload_spec"]["layers"] and saved["workload_origin"]
    assert main(["train", "pcie4_v100", wl, "--gpus", "8", "-o", str(tmp_path / "y")]) == 2
    assert "has 4 GPUs" in capsys.readouterr().err
    # `archsim report` rebuilds both pages from results.json alone, byte for byte
    for folder in (out, tout):
        page = (folder / "report.html").read_bytes()
        (folder / "report.html").unlink()
        assert main(["report", str(folder)]) == 0
        assert (folder / "report.html").read_bytes() == page
    data = json.loads((out / "results.json").read_text())
    (out / "results.json").write_text(json.dumps({**data, "rows": [{"size_bytes": 1}]}))
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "not a results.json written by" in err, err
    for edit, needle in (
        (lambda j: j["rows"][0].update(gpus=float("inf")), "rows.0.gpus is inf, not a finite"),
        (lambda j: j["rows"][0].update(time_us=-5), "rows.0.time_us is -5, not a finite"),
        (lambda j: j.update(op="bogus"), "op 'bogus' is not one of all_reduce"),
        (lambda j: j.pop("system"), "system must be an object with a name"),
    ):  # a traceback (inf GPUs) or a page of nonsense
        bad = json.loads(json.dumps(data))
        edit(bad)
        (out / "results.json").write_text(json.dumps(bad))
        assert main(["report", str(out)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and needle in err, err
    steps = json.loads((tout / "results.json").read_text())
    steps["timeline"][0][2] = 5.0  # starts after it ends
    (tout / "results.json").write_text(json.dumps(steps))
    assert main(["report", str(tout)]) == 2
    assert "timeline.0 is not [compute|nccl, name, start, end >= start]" in capsys.readouterr().err
    assert (
        main(["collective", "--system", "dgx_a100", "--gpus", "1", "-o", str(tmp_path / "1")]) == 2
    )
    assert "a collective needs 2 GPUs or more" in capsys.readouterr().err  # printed inf / nan
    # the step block is a training step's: the hint names collective's own options
    assert main(["collective", "--set", "step.batch_per_gpu=64", "-o", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "allowed: archsim collective's op, --sizes" in err and "--optimizer" not in err, err
    for extra, needle in (
        (["--pipeline", "2", "--topk", "0.01"], "--topk: data-parallel training only"),
        (["--tensor", "2", "--memory-format", "nchw"], "--memory-format: data-parallel"),
        (["--micro-batches", "4"], "micro-batches feed pipeline stages"),
    ):  # silently ignored before
        assert (
            main(["train", "pcie4_v100", wl, "--gpus", "4", *extra, "-o", str(tmp_path / "z")]) == 2
        )
        assert needle in capsys.readouterr().err
    pout = tmp_path / "par"
    assert main(["train", "pcie4_v100", wl, "--gpus", "4", "--tensor", "2", "-o", str(pout)]) == 0
    assert main(["report", str(pout)]) == 2
    assert "`archsim train --tensor/--pipeline`, which makes no report" in capsys.readouterr().err


def test_train_default_gpu_counts_fit_the_system_and_errors_name_the_option(tmp_path, capsys):
    """The counts were 1,2,4,8 whatever the system: a 4-GPU box failed with its defaults,
    --set nodes=2 stopped at 8, --pipeline 2 failed on 1 GPU; a copied preset's error named
    the preset, not the file."""
    wl = _tiny_workload(tmp_path)

    def gpus(*args: str) -> list[int]:
        out = tmp_path / f"o{len(list(tmp_path.iterdir()))}"
        assert main(["train", *args, wl, "--batch", "32", "-q", "-o", str(out)]) == 0
        return [r["gpus"] for r in json.loads((out / "results.json").read_text())["steps"]]

    assert gpus("pcie4_v100") == [1, 2, 4]
    assert gpus("dgx_a100", "--set", "nodes=2") == [1, 2, 4, 8, 16]
    assert gpus("dgx_a100", "--pipeline", "2") == [2, 4, 8]
    # no default count is a multiple of 3: its own multiples (was "3: more than the 8 GPUs")
    assert gpus("dgx_a100", "--pipeline", "3", "--micro-batches", "4") == [3, 6]
    # two nodes: 12 is neither within a node nor whole nodes, so not a default
    assert gpus("dgx_a100", "--set", "nodes=2", "--pipeline", "3", "--micro-batches", "4") == [3, 6]
    mine = tmp_path / "mine.yaml"
    preset = next(
        d / "dgx_a100.yaml" for d in preset_dirs("hardware") if (d / "dgx_a100.yaml").is_file()
    )  # installed or in the checkout
    mine.write_text(preset.read_text() + "ddp:\n  bucket_bytes: 999999999999\n")  # fmt: skip
    for args, line in (
        (["dgx_a100", "--pipeline", "2", "--gpus", "3"],
         "--gpus 3: 3 is not a multiple of --tensor x --pipeline = 2; allowed: multiples of 2"),
        (["dgx_a100", "--pipeline", "2", "--micro-batches", "5"],
         "--micro-batches 5 does not divide --batch 32; allowed: divisors of the batch"),
        (["dgx_a100", "--topk", "0"], "--topk 0.0; allowed: a fraction in (0, 1]"),
        (["dgx_a100", "--tensor", "16"],
         "--tensor x --pipeline = 16: more than the 8 GPUs of dgx_a100; allowed: up to 8"),
        ([str(mine), "--gpus", "8"], f"{mine}: ddp.bucket_bytes=999999999999 is larger"),
        # the sweep's step block was accepted and ignored: the step ran at --batch 32
        (["dgx_a100", "--set", "step.batch_per_gpu=64"],
         "--set step.batch_per_gpu: the step block is what a sweep point runs, not read here"),
    ):  # fmt: skip
        out = tmp_path / "bad"
        assert main(["train", args[0], wl, *args[1:], "--batch", "32", "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and line in err, err
        assert not out.exists()
    # a weight gradient past the reduction limit: its K grows with the batch, say so
    big = ["--gpus", "1", "--batch", "100000", "-o", str(tmp_path / "w")]
    assert main(["train", "dgx_a100", "resnet50", *big]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "so a smaller batch per GPU brings it under" in err


def test_simulate_refuses_a_system_with_a_pointer() -> None:
    import archsim

    with pytest.raises(SimulationError, match="archsim train"):
        archsim.simulate("dgx_h100", "deepbench_gemm")
    assert math.isfinite(collective_time(load_system("dgx1_v100"), "reduce", 1 << 20).time_s)


def test_train_sweep_over_link_bandwidth_and_algorithm(tmp_path) -> None:
    from archsim.system.api import train_sweep

    frame = train_sweep(
        "pcie4_v100",
        _tiny_workload(tmp_path),
        {"topology.link_kinds.pcie.nccl_bandwidth_bytes_per_s": [6e9, 24e9], "gpus": [2, 4]},
        batch_per_gpu=32,
    )
    assert len(frame) == 4 and list(frame["gpus"]) == [2, 4, 2, 4]
    slow, fast = frame[frame["gpus"] == 4]["communication_s"]
    assert slow == pytest.approx(4 * fast, rel=0.05)  # bandwidth-bound buckets
    ring = load_system("dgx_h100").with_overrides({"nccl.algorithm": "ring"})
    assert collective_time(ring, "all_reduce", 1 << 30).algorithm == "ring"
    c = collective_time(load_system("dgx_h100"), "all_reduce", 1 << 30)
    assert c.energy_pj(load_system("dgx_h100")) == pytest.approx(8 * c.intra_bytes * 11.0)


def _uniform(tmp_path, n: int = 8):
    path = tmp_path / "uniform.yaml"
    fc = {
        "kind": "fc",
        "inputs": 2048,
        "outputs": 2048,
        "weight_density": 1.0,
        "activation_density": 1.0,
    }
    layers = [{"name": f"fc{i}", **fc} for i in range(n)]
    path.write_text(json.dumps({"schema_version": 1, "name": "u", "source": "t", "layers": layers}))
    return str(path)


def test_pipeline_bubble_and_tensor_split(tmp_path) -> None:
    from archsim.system.parallel import _stages, parallel_step

    assert _stages([1, 1, 1, 1, 4], 2) == [[0, 1, 2, 3], [4]]
    wl = _uniform(tmp_path)
    ideal = lambda p, m: (p - 1) / (m + p - 1)  # noqa: E731
    from archsim.config.io import load_workload
    from archsim.system.subsystem import subsystem
    from archsim.system.topology import find_rings
    from archsim.system.workload import PRECISIONS

    for p, m in ((4, 1), (4, 8), (8, 16)):
        s = parallel_step("dgx_h100", wl, gpus=p, pipeline=p, micro_batches=m, batch_per_replica=64)
        # the sends between stages add idle time to the ideal GPipe bubble: at most one send per
        # stage boundary on the way in (forward fill) and one on the way out (backward drain)
        sysn = subsystem(load_system("dgx_h100"), p)
        ring = find_rings(sysn)
        nbytes = training_layers(load_workload(wl), 64 // m)[0].outputs * PRECISIONS["amp_fp16"][2]
        hop = sysn.nccl.hw_latency_us[ring.kind]["ring"][2] * 1e-6
        send = nbytes / ring.bandwidth_bytes_per_s + hop
        extra = 2 * (p - 1) * send / s["pipeline_s"]
        assert ideal(p, m) <= s["bubble_fraction"] <= ideal(p, m) + extra, (p, m, extra, s)
        assert len(s["stages"]) == p and all(len(st) == 8 // p for st in s["stages"])
    from archsim.system.workload import split_tensor

    layers = training_layers(load_workload(wl), 64)
    split = split_tensor(layers, 4)
    assert split[1].forward == (64, 512, 2048, 1) and split[1].dgrad == (64, 2048, 512, 1)
    assert split[1].wgrad == (2048, 512, 64, 1) and split[1].params * 4 == layers[1].params
    tp = parallel_step("dgx_h100", wl, gpus=4, tensor=4, batch_per_replica=64)
    assert tp["data"] == 1 and tp["bubble_fraction"] == 0.0
    dp = parallel_step("dgx_h100", wl, gpus=4, batch_per_replica=64)
    assert dp["data"] == 4 and dp["data_allreduce_s"] > 0
    with pytest.raises(SimulationError, match="does not divide"):
        parallel_step("dgx_h100", wl, gpus=8, tensor=3)
    with pytest.raises(SimulationError, match="inside one node"):
        parallel_step(load_system("dgx_h100").with_overrides({"nodes": 2}), wl, gpus=16)


def test_nvls_pipeline_fill_follows_nccl_chunking() -> None:
    """NVLS chunks shrink as enqueue.cc shrinks them, and the fill costs stages - 1 loops."""
    from archsim.system.collectives import nvls_chunk_bytes

    h100 = load_system("dgx_h100")
    # 16 channels x 8 heads = 128 concurrent chunks: 64 loops of 128 KiB = 1 GiB
    assert nvls_chunk_bytes(h100, 1 << 30, 8) == 128 << 10
    assert nvls_chunk_bytes(h100, (1 << 30) - 1, 8) == 64 << 10
    assert nvls_chunk_bytes(h100, 1 << 20, 8) == 16 << 10
    big = collective_time(h100, "all_reduce", 1 << 30, "nvls")
    no_fill = collective_time(
        h100.with_overrides({"nccl.nvls_pipeline_stages": 1}), "all_reduce", 1 << 30, "nvls"
    )
    loop_s = 8 * 16 * (128 << 10) * (no_fill.time_s - no_fill.latency_s) / (1 << 30)
    print(f"1 GiB NVLS: {big.time_s * 1e6:.1f} us, without fill {no_fill.time_s * 1e6:.1f} us")
    assert big.time_s - no_fill.time_s == pytest.approx(2 * loop_s, rel=1e-9)


def test_sweep_spec_over_a_system_stores_resumes_and_skips(tmp_path) -> None:
    """`archsim sweep` with a system as hardware: every point runs the step of its `step` block
    through the normal machinery (plan, store, resume); impossible GPU counts are skipped."""
    import archsim
    from archsim.explore import totals

    spec = tmp_path / "sys.yaml"
    spec.write_text(json.dumps({
        "schema_version": 1, "name": "pcie", "hardware": "pcie4_v100",
        "workload": _tiny_workload(tmp_path),
        "axes": {"step.gpus": [4, 8],
                 "topology.link_kinds.pcie.nccl_bandwidth_bytes_per_s": [6e9, 24e9]},
        "metrics": {"samples_per_s": "max", "total_energy_pj": "min"},
    }))  # fmt: skip
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1"]) == 0
    frame = pd.read_parquet(out / "results.parquet")
    t = totals(frame)
    assert list(t["step.gpus"]) == [4, 4] and (t["status"] == "ok").all()
    assert len(pd.read_csv(out / "skipped.csv")) == 2  # 8 GPUs on a 4-GPU box
    direct = run_step(
        load_system("pcie4_v100").with_overrides(
            {"topology.link_kinds.pcie.nccl_bandwidth_bytes_per_s": 6e9}
        ),
        _tiny_workload(tmp_path),
        StepOptions(gpus=4),
    )
    assert t["total_time_s"].iloc[0] == pytest.approx(direct.metadata["train_step"]["step_s"])
    assert t["total_time_s"].iloc[1] < t["total_time_s"].iloc[0]  # faster links, shorter step
    # the step's own figures are point columns, so a sweep can rank by them (they were absent)
    step = direct.metadata["train_step"]
    for col in ("samples_per_s", "speedup_vs_1_gpu", "scaling_efficiency",
                "exposed_communication_s", "overlapped_communication_s"):  # fmt: skip
        assert t[col].iloc[0] == pytest.approx(step[col], rel=1e-12), col
    assert "samples_per_s" in pd.read_csv(out / "points.csv").columns
    assert (out / "report.html").stat().st_size > 0
    again = archsim.sweep(str(spec), out_dir=out, n_jobs=1)  # resumed from the store
    assert again.attrs["counts"]["resumed"] == 2 and again.attrs["counts"]["ran"] == 0
    single = tmp_path / "eie.yaml"  # a step's metric on a single accelerator: refused up front
    single.write_text("schema_version: 1\nname: e\nhardware: tiny_eie\n"
                      "workload: eie_benchmarks\naxes: {pe_array.num_pes: [2]}\n"
                      "metrics: {samples_per_s: max}\n")  # fmt: skip
    assert main(["sweep", str(single), "-o", str(tmp_path / "e"), "-q"]) == 2
    assert not (tmp_path / "e").exists()


def test_nchw_tensor_core_convs_pay_for_transposes(tmp_path) -> None:
    """NCHW activations: cuDNN transposes X and Y around the forward conv, dY and dX around the
    data gradient, X and dY for the weight gradient (a read and a write each); FP32 CUDA-core
    convs and NHWC need none."""
    from archsim.config.io import load_workload
    from archsim.system.passes import transposes_moved

    conv = {"kind": "conv", "c": 16, "k": 32, "h": 14, "w": 14, "r": 3, "s": 3, "pad": 1}
    layers = [{"name": "c1", **conv}, {"name": "c2", **conv, "c": 32}]
    path = tmp_path / "convs.yaml"
    path.write_text(json.dumps({"schema_version": 1, "name": "convs", "source": "t",
                                "layers": layers}))  # fmt: skip
    wl = load_workload(str(path))
    tls = training_layers(wl, 8)
    out_el, in1, in2 = 8 * 32 * 14 * 14, 8 * 16 * 14 * 14, 8 * 32 * 14 * 14
    moved = transposes_moved
    assert moved(tls[0], wl.layers[0], 2) == (2 * (in1 + out_el), 2 * (in1 + out_el), 2, 2)
    assert moved(tls[1], wl.layers[1], 2) == (2 * (in2 + out_el), 4 * (in2 + out_el), 2, 4)
    # passes that run cuDNN's Winograd take NCHW themselves: no transposes around them
    one = 2 * (in2 + out_el)
    assert moved(tls[1], wl.layers[1], 2, (True, False, True)) == (0, one, 0, 2)
    assert moved(tls[1], wl.layers[1], 2, (False, True, False)) == (one, one, 2, 2)
    assert moved(tls[0], wl.layers[0], 2, (True, True, True)) == (0, 0, 0, 0)
    sysm = load_system("pcie4_v100")

    def step(precision: str, fmt: str) -> float:
        opts = StepOptions(gpus=1, precision=precision, batch_per_gpu=8, memory_format=fmt)
        return run_step(sysm, str(path), opts).metadata["train_step"]["step_s"]

    assert step("fp32", "nchw") == step("fp32", "nhwc")
    assert step("amp_fp16", "nchw") > step("amp_fp16", "nhwc")
    with pytest.raises(SimulationError, match="memory format"):
        step("amp_fp16", "chwn")


def test_a_training_step_finds_no_gemm_operand_resident() -> None:
    """The H100 preset's l2.resident_across_calls stands for back-to-back calls of one GEMM;
    a training step's GEMMs (ResNet-50 at batch 64: forward, data- and weight-gradient) touch
    far more than L2 keeps between two visits of one, so the step prices them cold."""
    from archsim.config.io import load_hardware, load_workload
    from archsim.system.passes import footprint_bytes
    from archsim.system.workload import gemm_workload, training_layers

    h100 = load_hardware("h100")
    assert h100.l2.resident_across_calls
    wl = load_workload("resnet50_v1_5")
    gemms = gemm_workload(training_layers(wl, 64), "amp_fp16", wl.name)
    assert footprint_bytes(gemms) > 10 * h100.l2.resident_capacity_bytes


def _net_file(tmp_path, layers: list[dict]):
    """(path, loaded workload) of a workload file ``net.yaml`` of ``layers``."""
    from archsim.config.io import load_workload

    path = tmp_path / "net.yaml"
    path.write_text(json.dumps({"schema_version": 1, "name": "net", "source": "t",
                                "layers": layers}))  # fmt: skip
    return path, load_workload(str(path))


def test_cudnn_conv_lowering_runs_forward_and_data_gradient_as_convs(tmp_path, capsys) -> None:
    """--conv-lowering cudnn: a conv's forward is the conv model's run of the layer at the
    batch, its data gradient the transposed conv (stride 2: its phases, merged into one
    result, and a zero fill of the phases no tap reaches); the weight gradient and the fc
    layer stay GEMMs, so their results equal the gemm lowering's."""
    import archsim
    from archsim.config.io import load_hardware
    from archsim.system.passes import elementwise_passes, gemm_times

    layers = [
        {"name": "c1", "kind": "conv", "c": 16, "k": 32, "h": 14, "w": 14, "r": 3, "s": 3,
         "pad": 1},
        {"name": "c2", "kind": "conv", "c": 32, "k": 64, "h": 14, "w": 14, "r": 1, "s": 1,
         "stride": 2},
        {"name": "fc", "kind": "fc", "inputs": 64 * 49, "outputs": 10, "weight_density": 1.0,
         "activation_density": 1.0},
    ]  # fmt: skip
    path, wl = _net_file(tmp_path, layers)
    h100 = load_hardware("h100")
    tls = training_layers(wl, 8)
    gemm = gemm_times(h100, tls, "amp_fp16", wl)
    conv = gemm_times(h100, tls, "amp_fp16", wl, "nhwc", "cudnn")
    assert sorted(gemm) == sorted(conv)  # c2/dgrad's phases merged under one key
    for key in ("c1/wgrad", "c2/wgrad", "fc/fwd", "fc/dgrad", "fc/wgrad"):
        assert conv[key].time_s == gemm[key].time_s, key
    fwd = {**layers[0], "n": 8, "precision": "fp16", "name": "c1/fwd"}
    from archsim.config.workload import WorkloadSpec

    spec = WorkloadSpec.model_validate({"schema_version": 1, "name": "x", "source": "t",
                                        "layers": [fwd]})  # fmt: skip
    one = archsim.simulate(h100, spec).layers[0]
    assert conv["c1/fwd"].time_s == one.time_s
    assert conv["c1/fwd"].extras["tc_conv_algo"] == "implicit_gemm"
    assert conv["c2/dgrad"].extras["tc_conv_kernels"] == 1  # one of four phases has the tap
    assert conv["c2/dgrad"].macs_dense == 8 * 7 * 7 * 64 * 32
    sysm = load_system("pcie4_v100")
    hbm = 1e12
    _, b_gemm, m_gemm = elementwise_passes(tls, wl, sysm, 2, hbm)
    _, b_conv, m_conv = elementwise_passes(tls, wl, sysm, 2, hbm, zero_fill=True)
    zero = 8 * 32 * 14 * 14 * 3 // 4 * 2  # c2's dX, three phases of four, fp16
    assert [c - g for c, g in zip(m_conv, m_gemm, strict=True)] == [0, zero, 0]
    assert b_conv[1] > b_gemm[1] and b_conv[0] == b_gemm[0]

    def step(lowering: str) -> dict:
        opts = StepOptions(gpus=1, batch_per_gpu=8, conv_lowering=lowering)
        return run_step(sysm, str(path), opts).metadata["train_step"]

    s_gemm, s_conv = step("gemm"), step("cudnn")
    assert (s_gemm["conv_lowering"], s_conv["conv_lowering"]) == ("gemm", "cudnn")
    assert s_conv["step_s"] != s_gemm["step_s"]
    with pytest.raises(SimulationError, match="conv lowering 'direct'"):
        step("direct")
    out = tmp_path / "out"
    assert main(["train", "pcie4_v100", str(path), "--gpus", "1", "--batch", "8",
                 "--conv-lowering", "cudnn", "-o", str(out), "-q"]) == 0  # fmt: skip
    rows = pd.read_csv(out / "results.csv")
    assert list(rows["conv_lowering"]) == ["cudnn"]
    assert main(["train", "pcie4_v100", str(path), "--gpus", "2", "--tensor", "2",
                 "--conv-lowering", "cudnn", "-o", str(tmp_path / "o2")]) == 2  # fmt: skip
    assert "--conv-lowering: data-parallel training only" in capsys.readouterr().err


def test_cudnn_weight_gradient_takes_the_faster_of_gemm_and_winograd(tmp_path) -> None:
    """A 3x3 stride-1 NCHW conv's weight gradient (cudnn lowering): cuDNN's non-fused Winograd
    (batched GEMMs plus three transform passes) where that is faster than the GEMM, its
    transforms moved with the layer's backward elementwise passes; NHWC convs, 1x1 convs and
    the gemm lowering keep the GEMM."""
    from archsim.config.io import load_hardware
    from archsim.system.conv_phases import WGRAD_TRANSFORM_KERNELS, winograd_wgrad
    from archsim.system.passes import gemm_times

    conv = {"kind": "conv", "c": 256, "k": 256, "h": 28, "w": 28, "r": 3, "s": 3, "pad": 1}
    layers = [{"name": "a", **conv}, {"name": "b", **conv}, {"name": "p", **conv, "r": 1, "s": 1,
                                                            "pad": 0}]  # fmt: skip
    path, wl = _net_file(tmp_path, layers)
    v100 = load_hardware("v100")
    tls = training_layers(wl, 16)
    got = gemm_times(v100, tls, "fp32", wl, "nchw", "cudnn", 3e-6)
    assert got["b/wgrad"].extras["tc_wgrad_algo"] == "winograd_4x4"
    assert got["p/wgrad"].extras["tc_wgrad_algo"] == "gemm"  # 1x1: no Winograd candidate
    (g2, b2), (g4, b4) = winograd_wgrad(wl.layers[1], 16, 256, "fp32", "nchw", v100.conv_library)
    assert (g4["m"], g4["n"], g4["k"], g4["batch"]) == (256, 256, 16 * 7 * 7, 36)
    assert g2["k"] == 16 * 14 * 14 and g2["batch"] == 16
    x, dy = 16 * 256 * 28 * 28, 16 * 256 * 28 * 28
    assert b4 == 4 * (x + 36 * 784 * 256 + dy + 36 * 784 * 256 + 36 * 256 * 256 + 9 * 256 * 256)
    assert got["b/wgrad"].extras["tc_wgrad_transform_bytes"] == b4
    direct = gemm_times(v100, tls, "fp32", wl, "nchw", "gemm")["b/wgrad"]
    hbm = v100.hbm.bandwidth_bytes_per_s * v100.hbm_achievable_fraction
    wino = got["b/wgrad"].time_s + max(b4 / hbm, WGRAD_TRANSFORM_KERNELS * 3e-6)
    assert wino < direct.time_s
    assert winograd_wgrad(wl.layers[1], 16, 256, "fp32", "nhwc", v100.conv_library) == []
    nhwc = gemm_times(v100, tls, "fp32", wl, "nhwc", "cudnn")
    assert "tc_wgrad_transform_bytes" not in nhwc["b/wgrad"].extras
    sysm = load_system("pcie4_v100")
    opts = StepOptions(gpus=1, precision="fp32", batch_per_gpu=16, memory_format="nchw",
                       conv_lowering="cudnn")  # fmt: skip
    rows = {r.layer: r for r in run_step(sysm, str(path), opts).layers}
    plain = {r.layer: r for r in run_step(sysm, str(path), StepOptions(
        gpus=1, precision="fp32", batch_per_gpu=16, memory_format="nchw")).layers}  # fmt: skip
    assert rows["b"].dram_bytes > rows["b"].dram_bytes - b4 > 0
    assert rows["b"].time_s < plain["b"].time_s


@pytest.mark.parametrize("lowering", ["gemm", "cudnn"])
def test_layer_names_that_look_like_phase_names(tmp_path, lowering: str) -> None:
    """A layer may be named like a generated phase (``c0/dgrad.0``, ``a/wgrad.winograd4``):
    the phases are told apart by exact name, not by suffix (a fuzz found a KeyError)."""
    conv = {"kind": "conv", "c": 8, "k": 8, "h": 8, "w": 8, "r": 3, "s": 3, "pad": 1}
    names = ["c0/dgrad.0", "c0", "a/wgrad.winograd4"]
    layers = [{**conv, "name": n, "stride": 2 if n == "c0" else 1} for n in names]
    path, _ = _net_file(tmp_path, layers)
    opts = StepOptions(gpus=1, batch_per_gpu=2, conv_lowering=lowering)
    rows = run_step(load_system("dgx_a100"), str(path), opts).layers
    assert [r.layer for r in rows[:3]] == names
    assert all(r.time_s > 0 for r in rows[:3])
