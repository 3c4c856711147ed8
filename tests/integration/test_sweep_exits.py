"""How sweeps end: Ctrl-C, a missing `__main__` guard, Dask not installed, nothing to run;
exit codes, what is left on disk, and no process left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from procfs import SESSION, live_processes

from archsim.cli import main
from archsim.explore import SweepStore

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

WORKLOAD = """\
schema_version: 1
name: small
source: test
layers:
  - {name: fc1, kind: fc, inputs: 160, outputs: 96, weight_density: 0.2, activation_density: 0.5}
"""
#: each point re-encodes a 2,048 x 2,048 layer (tens of ms): the sweep runs long enough to stop
SLOW = WORKLOAD.replace("inputs: 160, outputs: 96", "inputs: 2048, outputs: 2048")


def write_spec(folder: Path, axes: str, workload: str = WORKLOAD, extra: str = "") -> Path:
    (folder / "small.yaml").write_text(workload)
    spec = folder / "spec.yaml"
    spec.write_text(
        "schema_version: 1\nname: t\nhardware: tiny_eie\nworkload: small.yaml\n" + axes + extra
    )
    return spec


def _session(sid: int) -> list[int]:
    """Live processes of session ``sid`` (zombies are done)."""
    return live_processes(SESSION, sid)


def _sweep(spec: Path, out: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "archsim", "sweep", str(spec), "-o", str(out), "-j", "2", "-q"]
    return subprocess.Popen(
        cmd, env=ENV, cwd=spec.parent, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _wait_for_parts(out: Path, parts: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list((out / "store").glob("part-*.arrow"))) >= parts:
            return
        time.sleep(0.02)
    raise AssertionError(f"no {parts} parts stored (exit {proc.poll()})")


def _no_process_left(sid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _session(sid):
        time.sleep(0.1)
    assert _session(sid) == []


def test_ctrl_c_stops_at_once_and_the_rerun_resumes(tmp_path):
    spec = write_spec(
        tmp_path, "axes:\n  pe_array.num_pes: {low: 1, high: 24, num: 24, integer: true}\n", SLOW
    )
    out = tmp_path / "out"
    # Ctrl-C in a terminal signals the whole foreground process group; while the workers
    # start (import archsim), they ignore it: no traceback from them, nothing saved, no folder
    proc = _sweep(spec, out)
    deadline = time.monotonic() + 60
    while len(_session(proc.pid)) < 3 and time.monotonic() < deadline:  # parent + 2 workers
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    # 130 (an exit by SIGINT after the message, seen in CI, was CPython's flag for an interrupt
    # caught inside exec(): cli.entry_point clears it)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert "interrupted" in err, err
    if "nothing was saved" in err:
        assert not out.exists()
    _no_process_left(proc.pid)
    proc = _sweep(spec, out)
    _wait_for_parts(out, 1, proc)
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    stopped = time.monotonic() - t0
    print(f"stopped {stopped:.2f} s after Ctrl-C (goal 1-2 s on an idle machine)")
    assert proc.returncode == 130, err
    assert "interrupted: stopping the workers" in err and "Traceback" not in err
    assert "run the same command again to resume" in err
    # archsim's own lines only: no "leaked semaphore objects" warning from multiprocessing's
    # resource tracker for the workers it killed (numba's thread-pool lock in each)
    assert all(line.startswith("archsim:") for line in err.strip().splitlines()), err
    assert stopped < 10  # generous: the test machine is shared
    _no_process_left(proc.pid)
    first = SweepStore(out).finished()
    assert 0 < len(first) < 24
    assert not list((out / "store").glob(".*.tmp"))  # no half-written part
    # a second Ctrl-C quits without waiting for anything
    proc = _sweep(spec, out)
    _wait_for_parts(out, len(list((out / "store").glob("part-*.arrow"))) + 1, proc)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.3)  # two signals at once would arrive as one
    try:
        os.killpg(proc.pid, signal.SIGINT)
        again = True
    except ProcessLookupError:  # it had already stopped
        again = False
    _, err = proc.communicate(timeout=60)
    # 130, or killed by SIGINT (a shell's $? is 130 too) when the second Ctrl-C lands while
    # Python finalises, after it has given SIGINT back its default action
    assert proc.returncode in (130, -signal.SIGINT) and "Traceback" not in err, err
    # the first Ctrl-C's shutdown may finish before the second lands: nothing left to quit then
    finished = "run the same command again to resume" in err
    assert "interrupted again: quitting now" in err or proc.returncode < 0 or not again or finished
    _no_process_left(proc.pid)
    second = SweepStore(out).finished()
    assert first < second
    # the re-run runs only what is missing, and ends with every point and nothing else running
    proc = _sweep(spec, out)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    _no_process_left(proc.pid)
    points = pd.read_csv(out / "points.csv")
    assert len(points) == 24 and points["point_key"].is_unique and (points["status"] == "ok").all()
    assert len(pd.read_csv(out / "errors.csv")) == 0


SCRIPT = """\
import archsim

{indent}axes = {{"pe_array.num_pes": [2, 3]}}
{indent}frame = archsim.sweep("tiny_eie", "{workload}", axes=axes, n_jobs=2)
{indent}print("points", len(archsim.totals(frame)))
"""


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_without_the_main_guard_gets_one_line_saying_what_to_add(tmp_path, guarded):
    (tmp_path / "small.yaml").write_text(WORKLOAD)
    body = SCRIPT.format(indent="    " if guarded else "", workload=tmp_path / "small.yaml")
    if guarded:
        body = body.replace("\n    axes", '\nif __name__ == "__main__":\n    axes', 1)
    script = tmp_path / "my_sweep.py"
    script.write_text(body)
    res = subprocess.run(
        [sys.executable, str(script)], env=ENV, cwd=tmp_path, capture_output=True, text=True
    )
    if guarded:
        assert res.returncode == 0 and "points 2" in res.stdout, res.stderr
        return
    assert res.returncode == 1
    last = res.stderr.strip().splitlines()[-1]
    assert last == (
        f"archsim.errors.ArchsimError: {script}: line 4 starts sweep worker processes, which "
        'import this script again; allowed: put the sweep under `if __name__ == "__main__":` '
        "(or n_jobs=1)"
    )
    assert res.stderr.count("Traceback") == 1 and "worker died" not in res.stderr


def test_a_script_read_from_stdin_gets_one_line_instead_of_dead_workers(tmp_path):
    """`python - < script.py`: the workers would re-import "<stdin>" and die, and every point
    said "the worker process died ... out of memory"."""
    (tmp_path / "small.yaml").write_text(WORKLOAD)
    body = SCRIPT.format(indent="", workload=tmp_path / "small.yaml")
    res = subprocess.run(
        [sys.executable, "-"], input=body, env=ENV, cwd=tmp_path, capture_output=True, text=True
    )
    assert res.returncode == 1 and "points" not in res.stdout
    assert res.stderr.strip().splitlines()[-1] == (
        "archsim.errors.ArchsimError: <stdin>: sweep worker processes import the running "
        "script, and it is not a file (read from standard input?); allowed: n_jobs=1, or run "
        "the script from a file"
    )


def test_dask_not_installed_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    spec = write_spec(tmp_path, "axes:\n  pe_array.num_pes: [2]\n")
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails as if absent
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "--dask", "local"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "archsim: error: --dask: dask.distributed is not installed; allowed: pip install "
        '"archsim[dask]" (from a clone: pip install ".[dask]"), or no --dask\n'
    )
    assert not out.exists()


def test_nothing_to_run_is_exit_2_without_a_report(tmp_path, capsys):
    spec = write_spec(
        tmp_path, "axes:\n  pe_array.num_pes: [2, 4]\n", extra="constraints: [num_pes > 64]\n"
    )
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"archsim: error: {spec}: constraints: every one of the 2 points")
    assert err.count("\n") == 1 and not out.exists()
    assert main(["sweep", str(spec), "-o", str(out), "--max-points", "1"]) == 2
    assert "2 points (2 (grid)) is more than the limit of 1" in capsys.readouterr().err
    assert main(["sweep", str(spec), "-o", str(out), "--max-points", "0"]) == 2
    assert "--max-points: must be >= 1" in capsys.readouterr().err


class _Stop(Exception):
    pass


def test_a_ctrl_c_while_a_worker_starts_is_acted_on_after_the_start():
    """A SIGINT that lands on another thread while the parent writes a new worker's start-up
    data (the CI failure: the worker read an empty pipe) is held until the start is done."""
    from archsim.explore.workers import sigint_blocked

    def stop(_s, _f):
        raise _Stop

    import threading

    go, done = threading.Event(), threading.Event()
    # started before the block, so SIGINT is not masked in it: the kernel hands it the signal
    # (it stays alive meanwhile, as pyarrow's and numba's threads do)
    sender = threading.Thread(
        target=lambda: (go.wait(), os.kill(os.getpid(), signal.SIGINT), done.wait(10))
    )
    previous = signal.signal(signal.SIGINT, stop)
    try:
        events = []
        sender.start()
        with pytest.raises(_Stop), sigint_blocked():
            go.set()
            time.sleep(0.2)
            for _ in range(100_000):  # bytecode boundaries at which a handler would run
                pass
            events.append("start finished")
        assert events == ["start finished"]
        assert signal.getsignal(signal.SIGINT) is stop
    finally:
        done.set()
        sender.join()
        signal.signal(signal.SIGINT, previous)
