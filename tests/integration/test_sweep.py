"""Running sweeps: identical frames whatever the executor, resume, errors, SIGKILL, the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from procfs import PARENT, live_processes

import archsim
from archsim.cli import main
from archsim.explore import SweepStore, plan_sweep, run_plan
from archsim.provenance import read_provenance

ROOT = Path(__file__).resolve().parents[2]

WORKLOAD = """\
schema_version: 1
name: small
source: test
layers:
  - {name: fc1, kind: fc, inputs: 160, outputs: 96, weight_density: 0.2, activation_density: 0.5}
  - {name: fc2, kind: fc, inputs: 96, outputs: 40, weight_density: 0.3, activation_density: 0.7}
"""


def write_spec(folder: Path, axes: str, extra: str = "", workload: str = WORKLOAD) -> Path:
    (folder / "small.yaml").write_text(workload)
    spec = folder / "spec.yaml"
    spec.write_text(
        "schema_version: 1\nname: t\nhardware: tiny_eie\nworkload: small.yaml\n"
        + textwrap.dedent(axes)
        + extra
    )
    return spec


AXES = "axes:\n  pe_array.num_pes: [2, 3, 4]\n  activation_fifo.depth: [1, 2, 8]\n"


def test_frame_matches_simulate_and_executors_agree(tmp_path):
    spec = write_spec(tmp_path, AXES)
    plan = plan_sweep(spec)
    serial = run_plan(plan, n_jobs=1)
    assert len(serial) == 9 * 2 and list(serial["point"].unique()) == list(range(9))
    # every row is exactly what simulate() gives for that point
    for p in (plan.points[0], plan.points[7]):
        res = archsim.simulate(p.hardware, p.workload, p.seed)
        rows = serial[serial["point"] == p.index]
        assert rows["cycles"].tolist() == [lr.cycles for lr in res.layers]
        assert rows["energy_pj"].tolist() == [lr.energy_pj for lr in res.layers]
        assert rows["total_cycles"].iloc[0] == res.total_cycles
        assert rows["pe_array.num_pes"].iloc[0] == p.hardware.pe_array.num_pes
    points = archsim.totals(serial)
    assert list(points.columns[:6]) == [
        "point",
        "point_key",
        "workload",
        "seed",
        "pe_array.num_pes",
        "activation_fifo.depth",
    ]
    assert (points["status"] == "ok").all() and (points["error"] == "").all()
    assert points["total_energy_pj"].tolist() == serial.groupby("point")["energy_pj"].sum().tolist()
    pool = run_plan(plan, tmp_path / "pool", n_jobs=2)
    dask = run_plan(plan, tmp_path / "dask", n_jobs=2, dask="local")
    pd.testing.assert_frame_equal(serial, pool)
    pd.testing.assert_frame_equal(serial, dask)
    stored = pd.read_parquet(tmp_path / "pool" / "store" / "compacted.parquet")
    assert sorted(stored["point_key"].unique()) == sorted(points["point_key"])


def test_local_cluster_keeps_freed_memory_and_dask_does_not_steal_chunks():
    import dask

    from archsim.explore.executor import local_cluster_config

    base = {"OMP_NUM_THREADS": 1, "MALLOC_TRIM_THRESHOLD_": 65536, "MY_VAR": "x"}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": base}):
        config = local_cluster_config()
    assert config == {
        "distributed.scheduler.work-stealing": False,
        "distributed.scheduler.allowed-failures": 0,
        "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MY_VAR": "x"},
    }
    assert base["MALLOC_TRIM_THRESHOLD_"] == 65536  # the user's config is not modified


def test_resume_runs_only_new_points_and_errors_are_recorded(tmp_path):
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2, 4]\n")
    seen = []
    first = archsim.sweep(
        spec, out_dir=tmp_path / "out", n_jobs=1, progress=lambda d, t: seen.append((d, t))
    )
    assert seen[0] == (0, 2) and seen[-1] == (2, 2)
    assert first.attrs["counts"]["ran"] == 2
    # a wider spec: the two stored points are reused; strict_capacity raises on the overflow
    spec.write_text(
        spec.read_text().replace("[2, 4]", "[2, 4, 1]") + "  strict_capacity: [false, true]\n"
    )
    plan = plan_sweep(spec)
    second = run_plan(plan, tmp_path / "out", n_jobs=1)
    c = second.attrs["counts"]
    assert (c["resumed"], c["ran"]) == (2, 4)
    points = archsim.totals(second)
    errors = points[points["status"] == "error"]
    assert len(errors) >= 1 and errors["error"].str.contains("SimulationError").all()
    assert errors["strict_capacity"].all() and errors["total_cycles"].isna().all()
    assert c["errors"] == len(errors)
    ok = points[points["status"] == "ok"].set_index("point_key")
    first_points = archsim.totals(first).set_index("point_key")
    assert (
        ok.loc[first_points.index, "total_cycles"].tolist() == first_points["total_cycles"].tolist()
    )
    # a third run does nothing, the store holds each key once
    third = run_plan(plan, tmp_path / "out", n_jobs=1)
    assert third.attrs["counts"]["ran"] == 0
    pd.testing.assert_frame_equal(second, third)
    keys = pq.read_table(tmp_path / "out" / "store" / "compacted.parquet").to_pandas()
    assert (
        keys.groupby("point_key")["layer_index"]
        .apply(lambda s: s.isna().all() or s.is_unique)
        .all()
    )


def _children(pid: int) -> list[int]:
    return live_processes(PARENT, pid)


def _alive(pid: int) -> bool:
    try:  # a zombie (state Z) has exited; whoever adopted it may not have reaped it yet
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sigkill_loses_nothing_finished(tmp_path):
    # 40 PE counts: every point re-encodes a 2,048 x 2,048 layer (tens of ms), so the sweep is
    # still running when the kill comes; two workers, chunks of ceil(40 / 8) = 5 points;
    # the kill comes once two chunks are stored
    workload = WORKLOAD.replace("inputs: 160, outputs: 96", "inputs: 2048, outputs: 2048")
    spec = write_spec(
        tmp_path,
        "axes:\n  pe_array.num_pes: {low: 1, high: 40, num: 40, integer: true}\n",
        workload=workload,
    )
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "archsim", "sweep", str(spec), "-o", str(out), "-j", "2", "-q"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path)
    store = out / "store"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and len(list(store.glob("part-*.arrow"))) < 2:
        time.sleep(0.02)
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = SweepStore(out).finished()
    assert 10 <= len(finished) < 40  # killed halfway: some parts on disk, not all
    deadline = time.monotonic() + 20  # the workers notice and exit: no orphans
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    assert workers and not any(_alive(w) for w in workers)
    res = subprocess.run(cmd[:-1], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"({40 - len(finished)} run, {len(finished)} already in" in res.stdout
    points = pd.read_csv(out / "points.csv")
    assert len(points) == 40 and points["point_key"].is_unique and (points["status"] == "ok").all()
    stored = pq.read_table(store / "compacted.parquet").to_pandas()
    assert len(stored) == 40 * 2 and not stored.duplicated(["point_key", "layer_index"]).any()
    assert [f.name for f in store.iterdir() if f.name != ".lock"] == ["compacted.parquet"]


def test_cli_writes_outputs_and_prints_the_front(tmp_path, capsys):
    spec = write_spec(tmp_path, AXES, "metrics: {total_time_s: min, total_energy_pj: min}\n")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1"]) == 0
    text = capsys.readouterr().out
    assert "9 points (9 run, 0 already in" in text and "Pareto front over" in text
    points = pd.read_csv(out / "points.csv")
    front = archsim.pareto(points, minimize=["total_time_s", "total_energy_pj"])
    for p in front["point"]:
        assert any(line.split()[0] == str(p) for line in text.splitlines() if line.strip())
    html = (out / "report.html").read_text()
    assert "<html" in html.lower() and "pe_array.num_pes" in html
    meta = (out / "sweep.json").read_text()
    assert "results depend only on" in meta or "depends only on" in meta
    assert len(pd.read_parquet(out / "results.parquet")) == 18
    prov = read_provenance(out / "results.parquet")  # schema metadata, as in store/
    assert prov == read_provenance(out / "store" / "compacted.parquet")
    assert prov["sweep_spec"]["name"] == "t" and prov["hardware_config"]["name"] == "tiny_eie"
    # `archsim report DIR` rebuilds the sweep report from what the sweep left, running nothing
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").read_text() == html
    (out / "sweep.json").write_text("{}")
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        "sweep.json: not a sweep.json written by `archsim sweep`" in err and "Traceback" not in err
    )
    (out / "sweep.json").unlink()  # was "results.json: cannot read results", a file never there
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out / 'sweep.json'}: missing, and the sweep's report" in err


def test_unreachable_scheduler_fails_fast(tmp_path, capsys):
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2]\n")
    t0 = time.monotonic()
    code = main(["sweep", str(spec), "-o", str(tmp_path / "o"), "--dask", "tcp://127.0.0.1:9"])
    assert code == 2 and time.monotonic() - t0 < 30
    err = capsys.readouterr().err
    assert err.startswith("archsim: error: --dask tcp://127.0.0.1:9: cannot reach")
    assert err.count("\n") == 1
    assert not (tmp_path / "o").exists()  # nothing left behind
    assert main(["sweep", str(spec), "-o", str(tmp_path / "o"), "--dask", "nohost"]) == 2
    assert "not a scheduler address" in capsys.readouterr().err


def test_a_port_that_is_not_dask_fails_fast(tmp_path, capsys):
    """Something listens but never answers Dask's handshake (a web server): the sweep
    waited for ever (Client's timeout bounds only the TCP connect)."""
    import socket

    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2]\n")
    with socket.create_server(("127.0.0.1", 0)) as server:
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        t0 = time.monotonic()
        code = main(["sweep", str(spec), "-o", str(tmp_path / "o"), "--dask", address])
        assert code == 2 and time.monotonic() - t0 < 30
    err = capsys.readouterr().err
    assert f"--dask {address}: cannot reach the Dask scheduler within 5 s" in err, err
    assert "no Dask handshake" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_bad_job_count(tmp_path, capsys, jobs):
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2]\n")
    assert main(["sweep", str(spec), "-o", str(tmp_path / "o"), "-j", jobs]) == 2
    assert "-j" in capsys.readouterr().err


def test_more_jobs_than_cpus_run_one_worker_per_cpu(tmp_path, capsys, monkeypatch):
    # -j 99999999999 started one process per point (1,000 for the preset EIE sweep) and made
    # no progress in a minute on 2 CPUs; more workers than CPUs now run as many as the CPUs
    from archsim.explore import executor

    monkeypatch.setattr(executor, "default_jobs", lambda: 1)
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2, 3]\n")
    out = tmp_path / "o"
    assert main(["sweep", str(spec), "-o", str(out), "-j", "99999999999"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "archsim: warning: -j 99999999999: more worker processes than the 1 CPUs this process "
        "may use; running 1\n"
    )
    assert len(pd.read_csv(out / "points.csv")) == 2
    # -q: nothing but errors, as `archsim run -q` leaves out its warnings
    assert main(["sweep", str(spec), "-o", str(tmp_path / "q"), "-j", "7", "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_a_damaged_store_file_says_what_to_do(tmp_path, capsys):
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2, 3]\n")
    out = tmp_path / "o"
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"]) == 0
    stored = out / "store" / "compacted.parquet"
    stored.write_bytes(stored.read_bytes()[:100])  # damaged outside archsim
    capsys.readouterr()
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{stored}: unreadable sweep store file (" in err
    assert err.endswith(
        "); allowed: a file `archsim sweep` wrote (delete this one to run its points again)\n"
    )
    stored.unlink()  # as the message says
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"]) == 0
    assert len(pd.read_csv(out / "points.csv")) == 2


def test_memoised_eie_path_is_identical(tmp_path):
    """With the memo on, timing is reused across line widths and line reads across FIFO
    depths; every point must still equal a fresh, memo-free simulate()."""
    from archsim import memo

    (tmp_path / "small.yaml").write_text(WORKLOAD)
    wl = archsim.load_workload(tmp_path / "small.yaml")
    base = archsim.load_hardware("tiny_eie")
    grid = [
        {"pe_array.num_pes": n, "activation_fifo.depth": d, "spmat_sram.width_bits": w}
        for n in (2, 3)
        for d in (1, 3)
        for w in (6, 24, 48)
    ]
    fresh = [archsim.simulate(base.with_overrides(g), wl, 1) for g in grid]
    memo.enable()
    try:
        cached = [archsim.simulate(base.with_overrides(g), wl, 1) for g in grid]
        assert memo.stats()["hits"] > 0
    finally:
        memo.disable()
    for a, b in zip(fresh, cached, strict=True):
        pd.testing.assert_frame_equal(a.to_dataframe(), b.to_dataframe())
        assert a.total_cycles == b.total_cycles
    reads = [r.layers[0].extras["eie_spmat_line_reads"] for r in fresh]
    assert len(set(reads)) > 2  # the widths really change the line reads


def test_all_points_failing_still_gives_a_full_frame_and_report(tmp_path, capsys):
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [1]\n  strict_capacity: [true]\n")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1"]) == 1  # points failed: 1
    captured = capsys.readouterr()
    assert "1 errors" in captured.out
    assert "error at point 0: SimulationError" in captured.err
    assert "1 of 1 points failed; listed in" in captured.err
    points = pd.read_csv(out / "points.csv")
    assert points["status"].tolist() == ["error"]
    assert points["total_time_s"].isna().all() and "total_energy_pj" in points.columns
    assert (out / "report.html").stat().st_size > 1000
    errors = pd.read_csv(out / "errors.csv")
    assert (
        errors["point"].tolist() == [0] and errors["error"].str.startswith("SimulationError").all()
    )


def test_a_second_sweep_into_a_busy_folder_fails_at_once(tmp_path, capsys):
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2]\n")
    out = tmp_path / "out"
    with SweepStore(out).lock():
        assert main(["sweep", str(spec), "-o", str(out), "-j", "1"]) == 2
        assert "another sweep is writing into this folder" in capsys.readouterr().err
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"]) == 0


def _die_at_fifo_2(tasks, new_group=False):  # run_chunk's stand-in: one point kills its worker
    from archsim.explore.executor import run_chunk

    if any(t[1].pe_array.num_pes == 3 and t[1].activation_fifo.depth == 2 for t in tasks):
        os.kill(os.getpid(), signal.SIGKILL)
    return run_chunk(tasks, new_group)


def test_a_point_that_kills_its_worker_is_run_alone_and_recorded(tmp_path, monkeypatch):
    from archsim.explore import executor

    spec = write_spec(
        tmp_path, "axes:\n  pe_array.num_pes: [2, 3, 4]\n  activation_fifo.depth: [1, 2, 3, 4]\n"
    )
    plan = plan_sweep(spec)
    monkeypatch.setattr(executor, "run_chunk", _die_at_fifo_2)
    frame = run_plan(plan, tmp_path / "out", n_jobs=2)  # chunks of 2: (3, 1) shares one
    points = archsim.totals(frame).set_index("point")
    failed = points[points["status"] != "ok"]
    assert failed.index.tolist() == [5]  # num_pes 3, depth 2: the only point lost
    assert (
        failed["error"]
        .iloc[0]
        .startswith("the worker process died while running this point alone (killed by SIGKILL)")
    )
    assert frame.attrs["counts"]["errors"] == 1
    monkeypatch.undo()
    serial = archsim.totals(run_plan(plan, n_jobs=1)).set_index("point")
    ok = points.index != 5
    pd.testing.assert_frame_equal(points[ok], serial[ok], check_dtype=False)  # NaN at 5
    # the point is stored as failed: a resume does not run it again, --retry-errors does
    again = run_plan(plan, tmp_path / "out", n_jobs=1)
    assert again.attrs["counts"]["ran"] == 0
    retried = run_plan(plan, tmp_path / "out", n_jobs=1, retry_errors=True)
    assert retried.attrs["counts"]["ran"] == 1
    assert (archsim.totals(retried)["status"] == "ok").all()


def test_store_reads_ipc_and_older_parquet_parts_and_compacts_them(tmp_path):
    import pyarrow as pa

    from archsim.explore.store import records_to_table

    def part(key: str, cycles: int) -> pa.Table:
        return records_to_table(
            [{"point_key": key, "status": "ok", "rows": [{"layer_index": 0, "cycles": cycles}]}]
        )

    store = SweepStore(tmp_path / "out")
    # a part as an earlier archsim wrote it (Parquet), then IPC parts; the later "b" wins
    pq.write_table(part("a", 1), store.parts / "part-00000000000000000001-1-x.parquet")
    store.append(part("b", 2))
    store.append(part("b", 3))
    names = sorted(f.suffix for f in store.parts.iterdir() if f.name.startswith("part-"))
    assert names == [".arrow", ".arrow", ".parquet"]
    assert store.finished() == {"a", "b"}
    store.compact()
    assert [f.name for f in store.parts.iterdir() if f.name != ".lock"] == ["compacted.parquet"]
    got = pq.read_table(store.parts / "compacted.parquet").to_pydict()
    assert dict(zip(got["point_key"], got["cycles"], strict=True)) == {"a": 1, "b": 3}
    # one new part after a compaction is compacted too: the store always ends as Parquet
    store.append(part("c", 4))
    store.compact()
    assert [f.name for f in store.parts.iterdir() if f.name != ".lock"] == ["compacted.parquet"]
    assert store.finished() == {"a", "b", "c"}


def test_a_write_interrupted_by_ctrl_c_leaves_no_temporary_file(tmp_path, monkeypatch):
    """A Ctrl-C while the parent writes a part or the compacted file: the temporary file is
    deleted and the interrupt goes on (a loaded machine once kept a ``.part-*.arrow.tmp``
    after an interrupted sweep); the finished parts stay as they were."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from archsim.explore.store import records_to_table

    def part(key: str) -> pa.Table:
        return records_to_table([{"point_key": key, "status": "ok", "rows": [{"cycles": 1}]}])

    def half_then_interrupt(sink: pa.NativeFile, *_args: object) -> None:
        sink.write(b"half a file")
        raise KeyboardInterrupt

    def files() -> list[str]:
        return sorted(f.name for f in store.parts.iterdir() if f.name != ".lock")

    store = SweepStore(tmp_path / "out")
    first = store.append(part("a")).name
    monkeypatch.setattr(ipc, "new_file", half_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        store.append(part("b"))
    assert files() == [first] and store.finished() == {"a"}

    def parquet_then_interrupt(_table: pa.Table, where: object, **_kwargs: object) -> None:
        Path(str(where)).write_bytes(b"half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", parquet_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        store.compact()
    assert files() == [first] and store.finished() == {"a"}


@pytest.mark.parametrize("value", [-1.0, float("nan")])
def test_report_refuses_a_results_table_with_impossible_numbers(tmp_path, capsys, value):
    """A negated or NaN total_time_s drew 'best time (us) -494' or a Pareto front of none."""
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2, 3]\n")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "-j", "1", "-q"]) == 0
    frame = pd.read_parquet(out / "results.parquet")
    frame["total_time_s"] = frame["total_time_s"] * 0 + value
    frame.to_parquet(out / "results.parquet")
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results.parquet: total_time_s: " in err
    assert "allowed: a finite number >= 0" in err and err.count("allowed:") == 1, err
