"""Run sweep points: in this process, in a local process pool, or on a Dask cluster.

Work is sent in small chunks of consecutive points, to long-lived workers: numba's compiled
kernels load once per worker, and ``archsim.memo`` lets a worker reuse what consecutive points
share (the materialised workload, EIE's encoding for a PE count); each worker works through its
share of whole memo groups, largest first (``schedule.py``). Every
point runs ``simulate(hardware, workload, seed)`` and nothing else, so results are bit-identical
whichever executor runs them. A point that raises becomes an ``error`` record; the sweep goes on.
A point that kills its worker process is found by running its chunk again point by point
(``schedule.run_scheduled``) and recorded as an ``error`` too.
Local workers are forked by multiprocessing's ``forkserver`` (where the platform has it), which
imports ``explore.preload`` (the simulator and numba) once for all of them;
``start_workers_early`` starts it while the caller plans, ``stop_workers`` ends it.
A worker sends back each chunk's records as plain Python values, and the parent turns them into
one Arrow table (``store.records_to_table``) as it saves them: pyarrow imports pandas the first
time it converts Python values, which would cost every worker about 0.8 s and 50 MB.
"""

from __future__ import annotations

import ast
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim import memo
from archsim.config.base import ArchsimModel
from archsim.config.workload import WorkloadSpec
from archsim.errors import ArchsimError, integral, is_count, one_line
from archsim.explore.schedule import WorkerDied, group_starts, run_scheduled, units
from archsim.explore.warm import warm_layers
from archsim.explore.workers import (
    join_pool_thread,
    join_pool_threads,
    mp_context,
    sigint_blocked,
    stop_workers,
)
from archsim.interrupts import interrupts_held

if TYPE_CHECKING:  # workers never import pyarrow (see the module docstring)
    import pyarrow as pa

__all__ = [
    "Task",
    "run_task",
    "run_chunk",
    "execute",
    "default_jobs",
    "chunk_size",
    "local_cluster_config",
    "check_dask",
    "check_main_guard",
    "WORKER_MEMO_BYTES",
    "start_workers_early",
    "stop_workers",
]

#: (store key, hardware, workload, seed)
Task = tuple[str, ArchsimModel, WorkloadSpec, int]
#: what a worker sends back for one point: key, status, error, point-level values, layer rows
Record = dict[str, Any]

DASK_CONNECT_TIMEOUT_S = 5

#: memo budget of a sweep worker (and of a serial sweep). The planner keeps the points that
#: share a preparation together, and a worker forgets a group's entries when it starts the
#: next (``memo.new_group``), so it needs one group's at a time: the nine EIE benchmark
#: layers (61 MB) and their preparations for one PE count (about 40 MB at 512 PEs, see
#: ``eie._prepared_to_keep``). Least recently used entries are dropped first. A group that
#: did not fit would be prepared again at every point: 192 MB leaves room for PE counts up
#: to about 1,500 (a random-order sweep mixes groups: its LRU holds as many as fit).
WORKER_MEMO_BYTES = 192 << 20


def local_cluster_config() -> dict[str, Any]:
    """Dask settings for the ``LocalCluster`` that ``dask="local"`` starts.

    * No retries of a task whose worker died (``allowed-failures`` 0): the sweep runs such a
      chunk again point by point itself, and records the point that kills its worker.
    * Work stealing off: the sweep places every chunk itself (see ``schedule.py``), and Dask's
      stealing would move queued chunks away from the worker that holds their preparation.
    * No ``MALLOC_TRIM_THRESHOLD_`` in the workers' environment (the nanny sets 65536 by
      default): with it, glibc hands every freed block back to the system, so each EIE
      preparation faults in fresh pages, and two workers on one machine then wait on the
      kernel. Measured on the 1,000-point EIE sweep, one worker: 560 k -> 16-40 k page
      faults, 1.5 s -> 0.4-0.7 s system time. The other variables are kept.
    """
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return {
        "distributed.scheduler.work-stealing": False,
        "distributed.scheduler.allowed-failures": 0,
        "distributed.nanny.pre-spawn-environ": environ,
    }


def default_jobs() -> int:
    """Worker processes by default: the CPUs this process may use."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def run_task(task: Task) -> Record:
    """Simulate one point (a system runs its configured training step); never raises for a
    failing point (status ``error``)."""
    from archsim.simulate import simulate

    key, hw, wl, seed = task
    try:
        if hw.accelerator == "system":  # type: ignore[attr-defined]
            from archsim.system.training import configured_step

            result = configured_step(hw, wl)  # type: ignore[arg-type]  # deterministic
        else:
            result = simulate(hw, wl, seed)
    except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
        message = " ".join(f"{type(exc).__name__}: {exc}".split())
        return {"point_key": key, "status": "error", "error": message, "rows": []}
    s = result.summary()
    cycles = sum(lr.cycles for lr in result.layers)
    weighted = sum(lr.utilization * lr.cycles for lr in result.layers)
    return {
        "point_key": key,
        "status": "ok",
        "error": "",
        "accelerator": s["accelerator"],
        "hardware": s["hardware"],
        "total_cycles": s["total_cycles"],
        "total_time_s": s["total_time_s"],
        "total_energy_pj": s["total_energy_pj"],
        "average_power_w": s["average_power_w"],
        "effective_gops": s["effective_gops"],
        "total_area_mm2": s["total_area_mm2"],
        "mean_utilization": weighted / cycles if cycles else 0.0,
        "warnings": len(result.warnings),
        **_system_metrics(result),
        "rows": [{"layer_index": i, **lr.row()} for i, lr in enumerate(result.layers)],
    }


def _system_metrics(result: Any) -> dict[str, float]:
    """A training step's throughput and communication (``SYSTEM_METRICS``); {} otherwise."""
    from archsim.config.sweep import SYSTEM_METRICS

    step = result.metadata.get("train_step") if result.accelerator == "system" else None
    return {m: float(step[m]) for m in SYSTEM_METRICS} if step else {}


def run_chunk(tasks: Sequence[Task], new_group: bool = False) -> list[Record]:
    """Run consecutive points in one worker, with the per-process memo switched on: one record
    per point (``store.records_to_table`` makes the table the parent saves). ``new_group``:
    the chunk starts another group of points (``memo.new_group``)."""
    if not memo.enabled():
        memo.enable(WORKER_MEMO_BYTES)
    if new_group:
        memo.new_group()
    records = [run_task(t) for t in tasks]
    memo.release_free_memory()
    return records


def died_record(task: Task, detail: str) -> list[Record]:
    """The failure record of a point that killed its worker process when run alone."""
    message = (
        f"the worker process died while running this point alone ({detail}): a crash, or "
        "the system out of memory"
    )
    return [{"point_key": task[0], "status": "error", "error": message}]


def _exit_with_parent() -> None:
    """End this worker when the sweep process dies (SIGKILL included): no orphans left behind
    holding their memo."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="archsim-parent-watch").start()


def _init_worker(numba_threads: int, environ: dict[str, str] | None = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if environ is not None:  # the caller's, as now (a forked worker has its server's)
        os.environ.clear()
        os.environ.update(environ)
    _exit_with_parent()
    memo.enable(WORKER_MEMO_BYTES)
    if "fork" in multiprocessing.get_all_start_methods():
        # numba guards its thread pool's start with a process lock; under this process's
        # forkserver default that lock is a named semaphore registered with multiprocessing's
        # resource tracker, which prints a "leaked semaphore objects" warning whenever a
        # Ctrl-C kills the worker. A worker starts no process, so its default can be fork:
        # the lock is then unlinked as it is made, and nothing is left to leak.
        multiprocessing.set_start_method("fork", force=True)
    import numba

    numba.set_num_threads(max(1, min(numba_threads, numba.config.NUMBA_NUM_THREADS)))


#: most points in one chunk. A chunk is saved at once, so a killed sweep loses at most
#: ``workers x IN_FLIGHT_PER_WORKER`` chunks; each chunk costs about 14 ms of Dask CPU time
#: (scheduler, client and worker event loop). On the 1,000-point EIE sweep, 16 rather than 8
#: took the median of 4 runs from 8.8 s to 8.1 s on 2 workers, 14.2 s to 13.9 s on 1.
MAX_CHUNK_POINTS = 16


def chunk_size(n: int, workers: int) -> int:
    """Points per chunk: about four chunks per worker, at most ``MAX_CHUNK_POINTS``."""
    return max(1, min(MAX_CHUNK_POINTS, math.ceil(n / (workers * 4))))


def _serial(tasks: Sequence[Task], levels: Sequence[int] | None) -> Iterator[list[Record]]:
    """In plan order, chunk by chunk, a chunk never across two memo groups (see
    ``schedule.units``), as a worker of the pool runs them."""
    was_on = memo.enabled()
    if not was_on:
        memo.enable(WORKER_MEMO_BYTES)
    try:
        size = chunk_size(len(tasks), 1)
        found = units(len(tasks), 0, size, levels)  # no worker to share with: no cut
        starts = group_starts(found, levels)
        for lo, hi in found:
            for i in range(lo, hi, size):
                yield run_chunk(tasks[i : min(i + size, hi)], i in starts)
    finally:
        if not was_on:
            memo.disable()


def _result(fut: Any) -> list[Record]:
    """A chunk's records; ``WorkerDied`` when its worker process died (killed, out of memory)."""
    try:
        return fut.result()
    except ArchsimError:
        raise
    except BrokenProcessPool:
        raise WorkerDied("the process pool broke") from None
    except Exception as exc:  # noqa: BLE001 - Dask's KilledWorker, or a lost connection
        if type(exc).__name__ == "KilledWorker":
            raise WorkerDied("the Dask worker was lost") from None
        detail = one_line(exc, 200)
        raise ArchsimError(
            f"the sweep stopped ({type(exc).__name__}: {detail}); the points that finished "
            "are saved, run the sweep again to resume"
        ) from None


def _processes(pool: ProcessPoolExecutor) -> list[Any]:
    """A pool's worker processes (started by its first ``submit``; gone after ``shutdown``)."""
    return list((getattr(pool, "_processes", None) or {}).values())


def _exit_status(processes: list[Any]) -> str:
    """How a dead pool's worker ended: ``killed by SIGKILL``, ``exit code 3``."""
    for proc in processes:
        proc.join(timeout=1)
        code = proc.exitcode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        if code:
            return f"exit code {code}"
    return "it ended"


def _first_done(futures: list[Any]) -> list[Any]:
    return list(wait(futures, return_when=FIRST_COMPLETED).done)


def start_workers_early(jobs: int | None = None, spec: str | Path | None = None) -> None:
    """Start the process that forks the sweep's workers now, forked from this one (see
    ``workers.mp_context``), so that its imports overlap the caller's own work (planning the
    sweep); nothing for ``jobs`` 1. For a process that is still small: ``archsim sweep``
    calls it as it starts. With the sweep ``spec`` (a path), that process also builds the
    layers of the sweep's first workload and seed before it forks any worker
    (``explore.warm``), so the workers start with them instead of each building them."""
    if (default_jobs() if jobs is None else jobs) > 1:
        warm = None if spec is None else partial(warm_layers, spec, WORKER_MEMO_BYTES)
        mp_context(fork_self=True, warm=warm)


def _new_pool(threads: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(
        max_workers=1,
        mp_context=mp_context(),
        initializer=_init_worker,
        initargs=(threads, dict(os.environ)),
    )


def _kill(pool: ProcessPoolExecutor) -> None:
    """Stop a pool's worker at once (Ctrl-C, a dead worker's pool): its chunk is not saved."""
    for proc in _processes(pool):
        if proc.is_alive():
            proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def _pool(tasks: list[Task], jobs: int, levels: Sequence[int] | None) -> Iterator[list[Record]]:
    """One single-process executor per worker, so that chunks can go to a chosen worker and a
    worker that dies is replaced alone."""
    threads = max(1, default_jobs() // jobs)
    with interrupts_held():  # a Ctrl-C mid-way left a queue's semaphores to the tracker
        pools = [_new_pool(threads) for _ in range(jobs)]

    owner: dict[Any, tuple[Any, list[Any]]] = {}  # future -> its pool and worker process

    def submit(chunk: list[Task], w: int, new_group: bool) -> Any:
        with sigint_blocked():  # a worker started here inherits the mask
            fut = pools[w].submit(run_chunk, chunk, new_group)
        owner[fut] = (pools[w], _processes(pools[w]))  # before a restart shuts the pool down
        return fut

    def result(fut: Any) -> list[Record]:
        pool, processes = owner.pop(fut)
        try:
            return _result(fut)
        except WorkerDied:
            join_pool_thread(pool)  # it reads the dead worker's exit code first (see there)
            raise WorkerDied(_exit_status(processes)) from None

    def restart(w: int) -> None:
        _kill(pools[w])
        with interrupts_held():
            pools[w] = _new_pool(threads)

    finished = False
    try:
        yield from run_scheduled(
            tasks,
            jobs,
            chunk_size(len(tasks), jobs),
            submit,
            _first_done,
            result,
            levels,
            died=died_record,
            restart=restart,
        )
        finished = True
    finally:
        for pool in pools:
            if not finished:  # Ctrl-C or an error: do not wait for the chunks in flight
                _kill(pool)
            # after the last chunk a worker's exit (numba's and LLVM's teardown) takes 0.3-0.7
            # s: the caller writes its outputs meanwhile; the pool's own thread reaps the
            # workers, and Python joins that thread before the process exits
            pool.shutdown(wait=not finished, cancel_futures=True)
        if not finished:
            join_pool_threads()  # before this process exits (see there)


def check_dask(address: str) -> None:
    """Raise ``ArchsimError`` unless Dask is installed and ``address`` has a scheduler
    address's form (before a sweep creates anything)."""
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ArchsimError(
            '--dask: dask.distributed is not installed; allowed: pip install "archsim[dask]" '
            '(from a clone: pip install ".[dask]"), or no --dask'
        ) from None
    if address != "local" and "://" not in address and ":" not in address:
        raise ArchsimError(
            f"--dask: {address!r} is not a scheduler address; allowed: local, or tcp://HOST:PORT"
        )


def check_main_guard() -> None:
    """Raise ``ArchsimError`` when the running script starts worker processes from its top
    level without ``if __name__ == "__main__":``: each worker would import the script again
    and start the sweep again (``spawn`` and ``forkserver`` start methods)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec_name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if main is None or not path or spec_name.endswith("__main__"):
        return  # an interactive session, a notebook, python -c, python -m package
    if not spec_name and not Path(path).is_file():  # python - < script.py: "<stdin>"
        raise ArchsimError(
            f"{path}: sweep worker processes import the running script, and it is not a file "
            "(read from standard input?); allowed: n_jobs=1, or run the script from a file"
        )
    frame, top = sys._getframe(1), None
    while frame is not None:  # the script's own top-level frame, however deep the call
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            top = frame
        frame = frame.f_back
    if top is None:
        return
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return
    line = top.f_lineno
    guarded = any(
        isinstance(node, ast.If)
        and _is_main_test(node.test)
        and any(s.lineno <= line <= (s.end_lineno or s.lineno) for s in node.body)
        for node in ast.walk(tree)
    )
    if not guarded:
        raise ArchsimError(
            f"{path}: line {line} starts sweep worker processes, which import this script "
            'again; allowed: put the sweep under `if __name__ == "__main__":` (or n_jobs=1)'
        )


def _is_main_test(test: ast.expr) -> bool:
    """Whether ``test`` is ``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    sides = {ast.dump(test.left), ast.dump(test.comparators[0])}
    return isinstance(test.ops[0], ast.Eq) and sides == {
        ast.dump(ast.Name("__name__", ast.Load())),
        ast.dump(ast.Constant("__main__")),
    }


def _handshake(address: str) -> None:
    """Open and close one Dask comm to ``address`` within ``DASK_CONNECT_TIMEOUT_S``, the
    handshake included: ``Client(address, timeout=...)`` bounds only the TCP connect and waits
    for ever on a port where something else listens (a web server). In its own thread, so a
    caller's running event loop (Jupyter) is not in the way."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect

    async def probe() -> None:
        limit = DASK_CONNECT_TIMEOUT_S
        comm = await asyncio.wait_for(connect(address, timeout=limit), limit)
        await comm.close()

    with ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(asyncio.run, probe()).result()
        except asyncio.TimeoutError:  # the connect's own timeout is an OSError
            raise TimeoutError("no Dask handshake (is it a Dask scheduler's port?)") from None


def _dask_client(address: str, jobs: int) -> tuple[Any, Any]:
    check_dask(address)
    from dask.distributed import Client, LocalCluster

    if address == "local":
        import dask

        with dask.config.set(local_cluster_config()):
            cluster = LocalCluster(
                n_workers=jobs,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
            )
        return Client(cluster), cluster
    try:
        _handshake(address)
        return Client(address, timeout=f"{DASK_CONNECT_TIMEOUT_S}s"), None
    except (OSError, TimeoutError, ValueError) as exc:
        detail = one_line(exc, 160)
        raise ArchsimError(
            f"--dask {address}: cannot reach the Dask scheduler within "
            f"{DASK_CONNECT_TIMEOUT_S} s ({type(exc).__name__}: {detail}); allowed: the "
            "address of a running `dask scheduler`, or local"
        ) from None


def _dask(
    tasks: list[Task], address: str, jobs: int, levels: Sequence[int] | None
) -> Iterator[list[Record]]:
    from dask.distributed import as_completed

    client, cluster = _dask_client(address, jobs)
    try:
        client.wait_for_workers(1, timeout=60)
        workers = sorted(client.scheduler_info()["workers"])
        finished = as_completed()  # fed as chunks are submitted: no wait() call per chunk

        def submit(chunk: list[Task], w: int, new_group: bool) -> Any:
            # a loose restriction: the chosen worker, or another one if it has gone
            fut = client.submit(
                run_chunk,
                chunk,
                new_group,
                pure=False,
                workers=[workers[w]],
                allow_other_workers=True,
            )
            finished.add(fut)
            return fut

        def first_done(futures: list[Any]) -> list[Any]:  # every future in flight is in it
            return finished.next_batch(block=True)

        yield from run_scheduled(
            tasks,
            len(workers),
            chunk_size(len(tasks), len(workers)),
            submit,
            first_done,
            _result,
            levels,
            died=died_record,
        )
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def execute(
    tasks: Sequence[Task],
    jobs: int | None = None,
    dask: str | None = None,
    on_table: Callable[[pa.Table], None] | None = None,
    levels: Sequence[int] | None = None,
) -> None:
    """Run ``tasks``; ``on_table`` receives each finished chunk's table as it arrives (one
    row per point and layer, one row for a point that failed; see ``run_chunk``).

    ``jobs``: worker processes (default: the CPUs available; 1 runs in this process).
    ``dask``: ``"local"`` for a ``LocalCluster`` of ``jobs`` single-threaded worker processes,
    or a scheduler address (``tcp://host:port``). ``levels[i]``: how much task ``i`` shares
    with task ``i - 1`` (see ``schedule.units``), for keeping related points together.
    """
    if not tasks:
        return
    jobs = default_jobs() if jobs is None else integral(jobs)
    if not is_count(jobs):
        raise ArchsimError(f"-j/n_jobs must be an integer >= 1 (got {jobs!r})")
    tasks = list(tasks)
    if dask == "local" or (not dask and jobs > 1 and len(tasks) > 1):
        check_main_guard()
    if dask:
        stream = _dask(tasks, dask, jobs, levels)
    elif jobs == 1 or len(tasks) == 1:
        stream = _serial(tasks, levels)
    else:
        stream = _pool(tasks, min(jobs, len(tasks)), levels)
    from archsim.explore.store import records_to_table

    for records in stream:
        if on_table is not None:
            on_table(records_to_table(records))
