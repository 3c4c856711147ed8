"""How `archsim sweep -j 2` ends when Ctrl-C comes while its workers start: N tries, counted.

Each try writes a 24-point sweep of a slow EIE layer (each point re-encodes a 2,048 x 2,048
layer), starts `archsim sweep -j 2` in a new session, waits until the session has three live
processes (the parent, its resource tracker and the process that forks the workers), waits a
random 0-0.3 s more, sends SIGINT to the whole process group (what a terminal's Ctrl-C does) and
waits at most 20 s. It prints, per outcome, the count and a few (seconds to exit, end of
stderr): exit 130 (or -2, ended by SIGINT after its message; a shell's $? is 130 for both) is
right; 0 means the interrupt was lost; "hang" that the sweep did not end within 20 s; a
"+tmp" suffix that a hidden temporary file (``.*.tmp``) was left in the output folder, and
"+noise" that stderr held a line not from archsim (a library's warning, a traceback); "done
first" that the sweep had ended before the Ctrl-C was sent.
``--when running`` sends the Ctrl-C a random 0-0.3 s after the first part file is stored
instead, while the parent is writing parts.

Usage (Linux: the session's processes are read from /proc)::

    python benchmarks/sweep_ctrl_c.py [--tries 40] [--seed 0] [--when start|running]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
#: a one-layer EIE workload whose 2,048 x 2,048 layer takes tens of ms per point to encode
WORKLOAD = {
    "schema_version": 1, "name": "small", "source": "bench",
    "layers": [{"name": "fc1", "kind": "fc", "inputs": 2048, "outputs": 2048,
                "weight_density": 0.2, "activation_density": 0.5}],
}  # fmt: skip
#: 24 points, one per PE count
SPEC = {
    "schema_version": 1, "name": "t", "hardware": "tiny_eie", "workload": "small.yaml",
    "axes": {"pe_array.num_pes": {"low": 1, "high": 24, "num": 24, "integer": True}},
}  # fmt: skip


def _live_in_session(sid: int) -> int:
    """Live (not zombie) processes whose session id is ``sid``."""
    n = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        n += int(fields[3]) == sid and fields[0] != "Z"
    return n


def _started(proc: subprocess.Popen, folder: Path, when: str) -> bool:
    """Whether the moment to interrupt has come: the workers are starting (``start``: three
    live processes in the session) or the first part is stored (``running``)."""
    if when == "running":
        return any((folder / "out" / "store").glob("part-*")) or proc.poll() is not None
    return _live_in_session(proc.pid) >= 3


def one_try(folder: Path, rng: random.Random, when: str) -> tuple[int | str, float, str]:
    """(exit code or "hang", with "+tmp" when a temporary file was left; seconds from SIGINT
    to exit; end of stderr) of one try."""
    (folder / "small.yaml").write_text(yaml.safe_dump(WORKLOAD, sort_keys=False))
    (folder / "spec.yaml").write_text(yaml.safe_dump(SPEC, sort_keys=False))
    cmd = [sys.executable, "-m", "archsim", "sweep", "spec.yaml", "-o", "out", "-j", "2", "-q"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not _started(proc, folder, when) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(rng.random() * 0.3)
    if proc.poll() is not None:  # the sweep ended before the Ctrl-C: nothing to count
        return "done first", 0.0, (proc.stderr.read() if proc.stderr else "").strip()[-100:]
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
        code: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        code = "hang"
    seconds = time.monotonic() - t0
    if code in (0, -signal.SIGINT) and (folder / "out" / "results.parquet").exists():
        code = f"{code} (all written: the Ctrl-C came as it finished)"
    if any(folder.joinpath("out").rglob(".*.tmp")):
        code = f"{code}+tmp"
    if any(not line.startswith("archsim:") for line in err.strip().splitlines()):
        code = f"{code}+noise"
    return code, seconds, err.strip()[-100:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--when", choices=("start", "running"), default="start")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    outcomes: dict[int | str, list[tuple[float, str]]] = {}
    for _ in range(args.tries):
        with tempfile.TemporaryDirectory() as tmp:
            code, seconds, tail = one_try(Path(tmp), rng, args.when)
        outcomes.setdefault(code, []).append((round(seconds, 2), tail))
    for code, seen in sorted(outcomes.items(), key=lambda kv: str(kv[0])):
        print(f"exit {code}: {len(seen)} of {args.tries}; e.g. {seen[:2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
