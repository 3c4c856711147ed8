"""How a local sweep starts its workers: forked by a server that has loaded the simulator once
(``explore.preload``), spawned when the caller's environment changed since that server started,
and no server left running after ``archsim sweep``."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from multiprocessing import forkserver
from pathlib import Path

import pandas as pd
import pytest

import archsim
from archsim.cli import main
from archsim.explore import executor, plan_sweep, run_plan, workers

SPEC = """\
schema_version: 1
name: t
hardware: tiny_eie
workload: small.yaml
axes:
  pe_array.num_pes: [2, 3, 4]
  activation_fifo.depth: [1, 2]
"""
WORKLOAD = """\
schema_version: 1
name: small
source: test
layers:
  - {name: fc1, kind: fc, inputs: 160, outputs: 96, weight_density: 0.2, activation_density: 0.5}
"""

pytestmark = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no forkserver here"
)


def _spec(folder: Path) -> Path:
    (folder / "small.yaml").write_text(WORKLOAD)
    (folder / "spec.yaml").write_text(SPEC)
    return folder / "spec.yaml"


def _python(code: str) -> list[str]:
    """The words ``code`` prints, run by a new interpreter on this checkout (which must exit 0)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def _preloaded_only(tasks, new_group=False):  # run_chunk's stand-in, in the worker
    """Refuse to run unless the worker was forked with the simulator already loaded and sees
    the caller's environment as it was when the sweep started."""
    from archsim.explore.executor import run_chunk

    if "archsim.explore.preload" not in sys.modules or "numba" not in sys.modules:
        raise RuntimeError("this worker did not start from the preloaded server")
    if os.environ.get("ARCHSIM_TEST_SET_LATER") != "yes":
        raise RuntimeError("this worker does not see the caller's environment")
    return run_chunk(tasks, new_group)


def test_workers_start_preloaded_and_agree_with_a_serial_run(tmp_path, monkeypatch):
    plan = plan_sweep(_spec(tmp_path))
    serial = archsim.totals(run_plan(plan, n_jobs=1))
    executor.start_workers_early(2)
    monkeypatch.setenv("ARCHSIM_TEST_SET_LATER", "yes")  # after the server started
    monkeypatch.setattr(executor, "run_chunk", _preloaded_only)
    pooled = archsim.totals(run_plan(plan, n_jobs=2))
    assert (pooled["status"] == "ok").all(), pooled["error"].tolist()
    pd.testing.assert_frame_equal(serial, pooled)


def test_a_changed_numba_setting_gets_spawned_workers(monkeypatch):
    executor.start_workers_early(2)
    assert workers.mp_context().get_start_method() == "forkserver"
    monkeypatch.setenv("ARCHSIM_TEST_ANYTHING", "1")  # read when used: the server serves
    assert workers.mp_context().get_start_method() == "forkserver"
    monkeypatch.setenv("NUMBA_OPT", "1")  # read as numba is imported: the server cannot
    assert workers.mp_context().get_start_method() == "spawn"
    monkeypatch.delenv("NUMBA_OPT")
    assert workers.mp_context().get_start_method() == "forkserver"


def test_the_cli_stops_the_server_it_started(tmp_path):
    spec = _spec(tmp_path)
    workers.stop_workers()  # one left by an earlier test of this process
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "-j", "2", "-q"]) == 0
    assert getattr(forkserver._forkserver, "_forkserver_pid", None) is None
    assert len(pd.read_csv(tmp_path / "out" / "points.csv")) == 6
    assert sorted(os.listdir(tmp_path / "out" / "store")) == [".lock", "compacted.parquet"]


@pytest.mark.parametrize("early", [True, False])
def test_the_cli_forks_the_server_from_itself_a_program_does_not(early):
    # archsim sweep starts it as it starts (small); a program's sweep gets a new interpreter,
    # which does not share the program's data. The server's command line tells which.
    start = "executor.start_workers_early(2)" if early else "workers.mp_context()"
    code = (
        "from multiprocessing import forkserver\n"
        "from archsim.explore import executor, workers\n"
        f"{start}\n"
        "pid = forkserver._forkserver._forkserver_pid\n"
        "same = open(f'/proc/{pid}/cmdline').read() == open('/proc/self/cmdline').read()\n"
        "print('forked' if same else 'spawned')\n"
        "workers.stop_workers()\n"
        "print('stopped', forkserver._forkserver._forkserver_pid)\n"
    )
    assert _python(code) == ["forked" if early else "spawned", "stopped", "None"]


def test_a_warmed_server_preloads_only_the_sweeps_model(tmp_path):
    # after building an EIE sweep's layers, the server forks workers that have the EIE model
    # (imported by the warm-up) and the workers' entry points, not the other models
    spec = _spec(tmp_path)
    code = (
        "import sys\n"
        "from archsim.explore import executor, workers\n"
        f"executor.start_workers_early(2, {str(spec)!r})\n"
        "pool = executor._new_pool(1)\n"
        "names = ['archsim.accelerators.eie', 'archsim.explore.executor', 'archsim.simulate',"
        " 'archsim.accelerators.scnn', 'archsim.explore.preload']\n"
        "found = pool.submit(eval, f'[n in __import__(\"sys\").modules for n in {names}]')\n"
        "print(*found.result(timeout=100))\n"
        "pool.shutdown()\n"
        "workers.stop_workers()\n"
    )
    assert _python(code) == ["True", "True", "True", "False", "False"]
