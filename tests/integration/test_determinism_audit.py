"""What a result depends on, recorded where a re-run or a reader can see it (twenty-ninth
session's audit): a sweep resumed stale points when a system's GPU file or a layer's data
files changed; collective options and wall-clock run counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import yaml

import archsim
from archsim.cli import main
from archsim.config.io import load_hardware, load_workload, preset_dirs
from archsim.explore.plan import point_key
from archsim.output import frame_to_parquet
from archsim.system import load_system


def _preset(kind: str, name: str) -> dict:
    path = next(d / f"{name}.yaml" for d in preset_dirs(kind) if (d / f"{name}.yaml").is_file())
    return yaml.safe_load(path.read_text())


def test_a_system_point_is_keyed_by_the_gpu_config_it_names(tmp_path) -> None:
    """The key hashed the system's config, whose `gpu` is a name or path: a changed GPU file
    resumed the old points (0 run, 2 already in the store)."""
    gpu = _preset("hardware", "v100")
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump(gpu))
    system = {**_preset("hardware", "pcie4_v100"), "gpu": str(tmp_path / "gpu.yaml")}
    (tmp_path / "sys.yaml").write_text(yaml.safe_dump(system))
    wl = load_workload("resnet50")
    before = point_key(load_system(str(tmp_path / "sys.yaml")), wl, 0)
    assert before == point_key(load_system(str(tmp_path / "sys.yaml")), wl, 0)
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump({**gpu, "sms": 54}))
    assert point_key(load_system(str(tmp_path / "sys.yaml")), wl, 0) != before


def test_a_layer_with_data_files_is_keyed_by_their_contents(tmp_path) -> None:
    """The key held the data folder's path only: rewritten tensors resumed the old point."""
    data = tmp_path / "d"
    data.mkdir()
    rng = np.random.default_rng(0)
    np.save(data / "weights.npy", rng.random((4, 2, 3, 3)).astype(np.float32))
    np.save(data / "activations.npy", rng.random((1, 2, 6, 6)).astype(np.float32))
    spec = {"schema_version": 1, "name": "w", "source": "t", "layers": [
        {"kind": "conv", "name": "c", "c": 2, "k": 4, "h": 6, "w": 6, "r": 3, "s": 3, "pad": 1,
         "data": "d"}]}  # fmt: skip
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(spec))
    hw = load_hardware("scnn")
    before = point_key(hw, load_workload(str(tmp_path / "w.yaml")), 0)
    assert before == point_key(hw, load_workload(str(tmp_path / "w.yaml")), 0)
    acts = np.load(data / "activations.npy")
    acts[0, 0] = 0.0
    np.save(data / "activations.npy", acts)
    assert point_key(hw, load_workload(str(tmp_path / "w.yaml")), 0) != before


def test_collective_and_train_record_what_their_results_depend_on(tmp_path) -> None:
    out = tmp_path / "c"
    assert main(["collective", "all_reduce", "--system", "dgx_a100", "--sizes", "1M:4M",
                 "--algo", "ring", "--proto", "Simple", "-o", str(out), "-q"]) == 0  # fmt: skip
    meta = json.loads((out / "results.json").read_text())
    assert meta["options"] == {"gpus": None, "algorithm": "ring", "protocol": "Simple",
                               "sizes": "1M:4M"}  # fmt: skip
    assert meta["gpu_config"]["name"] == "a100" and meta["gpu_config"]["sms"] == 108
    out = tmp_path / "t"
    assert main(["train", "dgx_a100", "resnet50", "--gpus", "1", "--batch", "8", "-o",
                 str(out), "-q"]) == 0  # fmt: skip
    assert json.loads((out / "results.json").read_text())["gpu_config"]["name"] == "a100"


def test_a_sweep_parquet_holds_no_run_counts_or_wall_time(tmp_path) -> None:
    """pandas wrote the frame's attrs into the file, `counts.seconds` among them, so the same
    points gave other bytes on every run."""
    import pandas as pd

    frame = pd.DataFrame({"a": [1, 2]})
    frame.attrs = {"counts": {"seconds": 12.3, "ran": 2}, "axes": ["a"]}
    frame_to_parquet(frame, tmp_path / "r.parquet")
    schema = pq.read_schema(tmp_path / "r.parquet").metadata
    text = schema[b"pandas"].decode()
    assert "seconds" not in text and '"axes"' in text
    assert frame.attrs["counts"]["seconds"] == 12.3  # the caller's frame keeps them


def test_board_totals_are_the_runs_own_sums() -> None:
    """`gpu_board.energy_j` was a plain sum beside fsum totals (last-digit differences), and
    a run at one clock reported 1979999999.9999995 Hz."""
    run = archsim.simulate("h100", "deepbench_gemm")
    board = run.metadata["gpu_board"]
    assert board["energy_j"] == run.total_energy_pj * 1e-12
    clocks = {lr.extras["clock_hz"] for lr in run.layers}
    if len(clocks) == 1:
        assert board["clock_hz"] == clocks.pop()
    one = archsim.simulate("h100", _one_gemm())
    assert one.metadata["gpu_board"]["clock_hz"] == one.layers[0].extras["clock_hz"]


def _one_gemm() -> archsim.WorkloadSpec:
    return archsim.WorkloadSpec.model_validate(
        {
            "schema_version": 1,
            "name": "g",
            "source": "t",
            "layers": [
                {"kind": "gemm", "name": "a", "m": 512, "n": 512, "k": 512},
                {"kind": "gemm", "name": "b", "m": 512, "n": 512, "k": 512},
            ],
        }  # fmt: skip
    )


def test_readme_states_the_seed_semantics() -> None:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    if readme.is_file():  # a checkout; an installed package has no README
        assert "(seed, the layer's name)" in readme.read_text()


def test_fc_on_a_systolic_array_is_sized_and_traced_as_its_gemm(tmp_path, monkeypatch) -> None:
    """An fc runs as a dense GEMM on the array: its memory limit, fold limit and SRAM trace are
    the GEMM's (it was sized as a sparse fc, so a huge one was not refused, and --trace wrote
    nothing for it)."""
    from archsim.errors import SimulationError
    from archsim.limits import check_workload_size

    def wl(kind_fields: dict) -> archsim.WorkloadSpec:
        return archsim.WorkloadSpec.model_validate(
            {"schema_version": 1, "name": "w", "source": "t", "layers": [kind_fields]}
        )

    fc = {"kind": "fc", "name": "f", "inputs": 8, "outputs": 30000, "batch": 30000,
          "weight_density": 1.0, "activation_density": 1.0}  # fmt: skip
    gemm = {"kind": "gemm", "name": "f", "m": 30000, "n": 30000, "k": 8}
    hw = load_hardware("systolic_32x32_os")
    monkeypatch.setenv("ARCHSIM_MAX_MEMORY_BYTES", "1e9")
    for spec in (fc, gemm):
        try:
            check_workload_size(hw, wl(spec))
            refused = False
        except SimulationError as exc:
            refused = "bytes of memory" in str(exc)
        assert refused, spec["kind"]
    small = tmp_path / "fc.yaml"
    small.write_text(json.dumps({"schema_version": 1, "name": "w", "source": "t", "layers": [
        {**fc, "outputs": 64, "batch": 4}]}))  # fmt: skip
    out = tmp_path / "o"
    assert main(["run", "systolic_32x32_os", str(small), "--trace", "-o", str(out), "-q",
                 "--no-report"]) == 0  # fmt: skip
    assert (out / "SRAM_TRACE_layer0.csv.gz").is_file()
