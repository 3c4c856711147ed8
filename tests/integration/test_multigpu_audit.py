"""Multi-GPU behaviours a fresh audit found wrong (twenty-ninth session): topologies without a
switch, NVLS time against size, board energy over the whole step, network bytes, DDP buckets
and parameters, nccl-tests' count, top-k's own kernels, error fields, stale pages."""

from __future__ import annotations

import json
import math

import pytest

from archsim.cli import main
from archsim.config.io import load_workload
from archsim.config.system import SystemConfig
from archsim.errors import ConfigError, SimulationError
from archsim.system import load_system
from archsim.system.api import collective
from archsim.system.collectives import collective_time
from archsim.system.training import StepOptions, _buckets, run_step
from archsim.system.workload import training_layers


def _pair(links: list[dict], gpus: int = 2) -> dict:
    """A V100 box described as data: ``gpus`` GPUs joined only by ``links`` (no switch)."""
    return {
        "schema_version": 1, "accelerator": "system", "name": "pair", "gpu": "v100",
        "gpus_per_node": gpus,
        "topology": {
            "link_kinds": {"nvlink": {"bandwidth_bytes_per_s": 25e9,
                                      "nccl_bandwidth_bytes_per_s": 20e9}},
            "links": links,
        },
        "nic": {"count": 1, "bandwidth_bytes_per_s": 12.5e9, "nccl_bandwidth_bytes_per_s": 12e9},
        "nccl": {"ll_max_bandwidth_bytes_per_s": 39e9,
                 "ring_ll128_channel_max_bytes_per_s": 20e9,
                 "tree_channel_max_bytes_per_s": 18.5e9},
        "energy": {"nvlink_pj_per_bit": 5.5, "pcie_pj_per_bit": 32.5, "nic_pj_per_bit": 62.5},
    }  # fmt: skip


def _load(tmp_path, data: dict) -> SystemConfig:
    """``data`` as a user's system YAML file, loaded as the CLI loads it."""
    path = tmp_path / f"{data['name']}_{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return load_system(str(path))


def _mlp(tmp_path, widths=(1024, 4096, 4096, 1024)) -> str:
    layers = [
        {"name": f"fc{i + 1}", "kind": "fc", "inputs": a, "outputs": b, "weight_density": 1.0,
         "activation_density": 1.0}
        for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False))
    ]  # fmt: skip
    path = tmp_path / "mlp.yaml"
    path.write_text(json.dumps({"schema_version": 1, "name": "mlp", "source": "test",
                                "layers": layers}))  # fmt: skip
    return str(path)


def test_a_switchless_pair_trains_and_its_one_gpu_baseline_needs_no_links(tmp_path) -> None:
    """The 1-GPU baseline of a step cut a GPU-to-GPU-only topology down to no links, which
    the schema refused (a traceback from `archsim train`)."""
    pair = _load(tmp_path, _pair([{"a": "gpu0", "b": "gpu1", "kind": "nvlink", "count": 2}]))
    s = run_step(pair, _mlp(tmp_path), StepOptions(gpus=2, batch_per_gpu=16))
    step = s.metadata["train_step"]
    assert step["gpus"] == 2 and 0 < step["scaling_efficiency"] <= 1
    alone = _load(tmp_path, {**_pair([]), "gpus_per_node": 1})
    assert alone.topology.links == []
    with pytest.raises(ConfigError, match=r"topology\.links: the topology is disconnected"):
        _load(tmp_path, _pair([]))


@pytest.mark.parametrize(
    "link, field, needle",
    [
        ({"a": "gpu1", "b": "gpu1", "kind": "nvlink"}, "topology.links.0.b", "to itself"),
        ({"a": "gpu0", "b": "gpu1", "kind": "pcie"}, "topology.links.0.kind", "no entry"),
        ({"a": "gpu0", "b": "gpu9", "kind": "nvlink"}, "topology.links.0.b", "does not exist"),
    ],
)
def test_topology_errors_name_the_link_they_are_about(tmp_path, link, field, needle) -> None:
    """The field came from the last place the quoted value occurs (link 7 for link 0)."""
    data = _pair([link, {"a": "gpu0", "b": "gpu1", "kind": "nvlink"}])
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, data)
    assert f"{field}: " in str(err.value) and needle in str(err.value), str(err.value)


def test_nvls_time_never_falls_as_the_buffer_grows() -> None:
    """A partial last NVLS loop adds its own bytes (it used to count as a whole loop's fill,
    averaged, so 4 MiB + 1 B ran 9 % faster than 4 MiB); whole loops are unchanged."""
    h100 = load_system("dgx_h100")
    sizes = sorted({m * (1 << 20) + d for m in range(1, 300, 3) for d in (-1, 0, 1)})
    times = [collective_time(h100, "all_reduce", n, "nvls").time_s for n in sizes]
    falls = [(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1)
             if times[i + 1] < times[i] * (1 - 1e-12)]  # fmt: skip
    assert not falls, falls[:5]
    # at whole loops the fill is still stages - 1 loops (the validated 1 GiB figure)
    assert collective_time(h100, "all_reduce", 1 << 30).busbw_bytes_per_s / 1e9 == (
        pytest.approx(443.1, abs=0.05)
    )


def test_a_board_draws_static_power_all_step_long() -> None:
    """The memory passes, the optimizer and the waits of an H100 step were priced as HBM
    bytes only (100 W on a 126 W-static board); rows other than the collectives now cover
    the step, and each GPU draws at least its static power over it."""
    run = run_step(load_system("dgx_h100"), "resnet50", StepOptions(gpus=8, batch_per_gpu=64))
    s, df = run.metadata["train_step"], run.to_dataframe()
    static = load_system("dgx_h100")
    from archsim.system.subsystem import gpu_config

    static_w = gpu_config(static).power.static_power_w
    timed = df[df["kind"] != "all_reduce"]
    assert timed["time_s"].sum() == pytest.approx(s["step_s"], rel=1e-9)
    for _, row in timed.iterrows():
        assert row["power_w"] >= 8 * static_w * (1 - 1e-9) or row["time_s"] == 0, row["layer"]
    rest = df[df["kind"] == "step_rest"]
    assert len(rest) == 1 and rest["time_s"].iloc[0] > 0 and rest["dram_bytes"].iloc[0] > 0
    assert s["energy_j"] > 8 * static_w * s["step_s"]


def test_a_multinode_ring_crosses_the_network_on_one_edge_per_node() -> None:
    """A ring of n GPUs over N nodes has N of its n edges between nodes (the network share
    was (N - 1) / (n - 1): 2.15 GB of a 2-node 1 GiB all-reduce instead of 4.03)."""
    a100 = load_system("dgx_a100").with_overrides({"nodes": 2})
    ring = collective_time(a100, "all_reduce", 1 << 30, "ring")
    moved = ring.intra_bytes + ring.inter_bytes
    assert moved == pytest.approx(2 * 15 * (1 << 30))
    assert ring.inter_bytes == pytest.approx(moved * 2 / 16)
    tree = collective_time(a100, "all_reduce", 1 << 30, "tree")
    assert tree.inter_bytes == pytest.approx((tree.intra_bytes + tree.inter_bytes) / 15)
    for op in ("broadcast", "reduce"):  # an open chain from the root: N - 1 crossings
        chain = collective_time(a100, op, 1 << 30, "ring")
        assert chain.inter_bytes == pytest.approx((chain.intra_bytes + chain.inter_bytes) / 15)


def test_tree_correction_ends_with_ncclS_table() -> None:
    """tuning.cc applies treeCorrectionFactor while log2i(nBytes >> 6) < 23 (below 512 MiB):
    from 512 MiB a tree runs at its modelled bandwidth (archsim kept 0.9 for Simple)."""
    h100 = load_system("dgx_h100").with_overrides({"nodes": 4})
    sizes = (1 << 28, 1 << 29, 1 << 30, 4 << 30)  # 256 MiB, 512 MiB, 1 GiB, 4 GiB
    runs = [collective_time(h100, "all_reduce", n, "tree", "Simple") for n in sizes]
    bw = [c.bytes / (c.time_s - c.latency_s) for c in runs]
    assert bw[1] == pytest.approx(bw[2], rel=1e-9) and bw[2] == pytest.approx(bw[3], rel=1e-9)
    assert bw[0] == pytest.approx(0.9 * bw[1], rel=1e-9)  # Simple's entry 22


def test_every_tree_protocol_starts_from_the_capped_tree_bandwidth() -> None:
    """tuning.cc caps every tree all-reduce at min(busBw x 0.92, channels x perChMaxTreeBw)
    before LL's and LL128's own refinements (archsim applied it to Simple only)."""
    from archsim.system.collectives import _fabric

    v100 = load_system("dgx1_v100").with_overrides({"nodes": 4})
    f = _fabric(v100)
    base = min(f.bandwidth * 0.92, f.channels * 10.0e9)  # perChMaxTreeBws Volta, 3+ nodes
    ll128 = min(base * 120 / 128, f.channels * 20.0e9)
    n = 1 << 30  # past the correction table
    c = collective_time(v100, "all_reduce", n, "tree", "LL128")
    assert c.bytes / (c.time_s - c.latency_s) == pytest.approx(0.5 * ll128, rel=1e-9)


def test_buckets_close_as_pytorch_closes_them(tmp_path) -> None:
    """compute_bucket_assignment_by_size: a layer joins the open bucket, which closes once it
    holds at least its cap (so it may pass the cap by its last layer)."""
    layers = training_layers(load_workload("resnet50"), 32)
    buckets = _buckets(layers, load_system("dgx_a100"), 4)
    caps = [1 << 20] + [25 << 20] * (len(buckets) - 1)
    sizes = [sum(layers[i].params for i in b) * 4 for b in buckets]
    for size, cap, b in zip(sizes[:-1], caps, buckets, strict=False):
        assert size >= cap and size - layers[b[-1]].params * 4 < cap
    assert sizes[-1] < caps[-1] or len(buckets[-1]) == 1
    assert [i for b in buckets for i in b] == list(reversed(range(len(layers))))
    assert len(buckets) == 5  # PyTorch's rule on ResNet-50: 4.0, 26.0, 27.0, 25.1, 7.5 MiB


def test_trained_parameters_include_biases_and_batch_norm(tmp_path) -> None:
    """ResNet-50's convs (the v1 preset, which has no fc): 23,454,912 weights plus 53,120
    batch-norm scales and shifts; with the classifier's 2,048,000 weights and 1,000 biases
    (resnet50_v1_5) 25,557,032, torchvision's resnet50 parameter count; an fc layer's bias
    counts too."""
    assert sum(t.params for t in training_layers(load_workload("resnet50"), 1)) == 23_508_032
    v15 = training_layers(load_workload("resnet50_v1_5"), 1)
    assert sum(t.params for t in v15) == 25_557_032
    mlp = training_layers(load_workload(_mlp(tmp_path, (8, 4))), 1)
    assert mlp[0].params == 8 * 4 + 4


def test_a_default_bucket_on_a_small_model_is_not_an_error(tmp_path) -> None:
    """Changing any other ddp field made the default 25 MiB bucket an error on a model with
    less gradient than that; a bucket the user sets beyond the model still is one."""
    wl = _mlp(tmp_path, (64, 64, 64))
    base = load_system("dgx_h100")
    opts = StepOptions(gpus=8, batch_per_gpu=8)
    for change in ({"ddp.gradient_copies": 0}, {"ddp.first_bucket_bytes": 4096}):
        assert run_step(base.with_overrides(change), wl, opts).metadata["train_step"]["gpus"] == 8
    with pytest.raises(SimulationError, match="ddp.bucket_bytes=1048576 is larger"):
        run_step(base.with_overrides({"ddp.bucket_bytes": 1 << 20}), wl, opts)


def test_allgather_and_reduce_scatter_count_elements_per_rank() -> None:
    """nccl-tests: count is elements per rank, and the size is rounded down to whole ranks."""
    frame = collective("dgx_h100", "all_gather", [1 << 20, 100, 8, 32])
    assert frame["size_bytes"].tolist() == [1 << 20, 96, 32]  # 8 B: under an element per rank
    assert frame["count"].tolist() == [(1 << 20) // 32, 3, 1]
    three = collective(load_system("dgx_h100").with_overrides({"nodes": 3}), "reduce_scatter",
                       [1 << 20])  # fmt: skip
    assert three["size_bytes"].iloc[0] == 1_048_512 and three["count"].iloc[0] == 10_922
    assert collective("dgx_h100", "all_reduce", [100])["count"].iloc[0] == 25
    with pytest.raises(Exception, match="under one 4-byte element per rank"):
        collective("dgx_h100", "reduce_scatter", [8])
    # every op rounds to whole elements: 1 and 2 bytes of floats were rows of count 0
    reduce = collective("dgx_h100", "all_reduce", [1, 2, 4, 6, 7, 8])  # 4, 6, 7: one row
    assert reduce["size_bytes"].tolist() == [4, 8] and reduce["count"].tolist() == [1, 2]
    with pytest.raises(Exception, match="every size is under one 4-byte element; allowed: si"):
        collective("dgx_h100", "broadcast", [1, 3])


def test_topk_compression_pays_for_its_selection_and_scatter(tmp_path) -> None:
    """The hook's kernels (one pass to select, a scatter-add to decompress) take time, so
    a lower density no longer comes for free below the point where the bytes stop mattering."""
    wl, sysm = "resnet50", load_system("pcie8_v100")
    steps = {
        d: run_step(sysm, wl, StepOptions(8, batch_per_gpu=64, topk_density=d)).metadata[
            "train_step"
        ]
        for d in (None, 0.01)
    }
    assert steps[None]["topk_hook_s"] == 0
    hook = steps[0.01]["topk_hook_s"]
    grads = sum(t.params for t in training_layers(load_workload(wl), 64)) * 2  # fp16 grads
    hbm = 900e9 * 0.878
    assert hook > 2 * grads / hbm  # at least: read the gradients, write the dense result
    assert steps[0.01]["communication_s"] < steps[None]["communication_s"]
    nccl = [e for e in steps[0.01]["timeline"] if e[0] == "nccl" and e[1].endswith("/topk")]
    assert len(nccl) == steps[0.01]["buckets"]


def test_a_model_parallel_run_leaves_no_stale_page(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["train", "dgx_a100", "resnet50", "--gpus", "2", "--batch", "8", "-o",
                 str(out), "-q"]) == 0  # fmt: skip
    assert (out / "report.html").exists()
    assert main(["train", "dgx_a100", "resnet50", "--gpus", "2", "--pipeline", "2", "--batch",
                 "8", "-o", str(out), "-q"]) == 0  # fmt: skip
    assert not (out / "report.html").exists() and (out / "results.csv").exists()
    assert math.isfinite(json.loads((out / "results.json").read_text())["steps"][0]["step_s"])


def test_nccl_caps_follow_the_node_count_and_the_hosts_cpu() -> None:
    """tuning.cc: beyond one node llMaxBws is the CPU vendor's row (Intel 39.0 / 20.4 GB/s,
    AMD 22.5 / 19.0), and the tree caps are indexed by node count; archsim used the GPU's
    one-node 141 GB/s everywhere (a 4-node 128 KiB all-reduce 1.5x fast)."""

    def ll_algbw(name: str, nodes: int) -> float:
        cfg = load_system(name).with_overrides({"nodes": nodes})
        c = collective_time(cfg, "all_reduce", 128 << 10, "tree", "LL")
        return c.bytes / (c.time_s - c.latency_s)

    # 128 KiB: tree correction for LL at log2(2048) = 11 is 0.5; algbw = busbw x 0.5
    assert ll_algbw("dgx_h100", 4) == pytest.approx(0.5 * 0.5 * 20.4e9, rel=1e-9)
    assert ll_algbw("dgx_h100", 2) == pytest.approx(0.5 * 0.5 * 39.0e9, rel=1e-9)
    assert ll_algbw("dgx_a100", 2) == pytest.approx(0.5 * 0.5 * 22.5e9, rel=1e-9)
    four = load_system("dgx_h100").with_overrides({"nodes": 4})
    assert collective_time(four, "all_reduce", 128 << 10).time_s * 1e6 == pytest.approx(
        60.9, abs=0.05
    )  # NCCL's own model with the Intel row (the audit's independent count)
    one = load_system("dgx_h100")  # one node: the GPU's row and caps, as before
    assert one.nccl.ll_max_bandwidth_bytes_per_s == 141.0e9
    assert load_system("dgx_a100").nccl.net_overhead_us == 2.0  # AMD hosts


def test_topk_rows_carry_their_hook() -> None:
    """The bucket rows held the collective only while communication_s held the hook too."""
    run = run_step(load_system("dgx_a100"), "resnet50",
                   StepOptions(8, batch_per_gpu=64, topk_density=0.01))  # fmt: skip
    df, s = run.to_dataframe(), run.metadata["train_step"]
    comm = df[df["kind"] == "all_gather"]
    assert comm["time_s"].sum() == pytest.approx(s["communication_s"], rel=1e-9)
    assert comm["dram_bytes"].sum() > 0
