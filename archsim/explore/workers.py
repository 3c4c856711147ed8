"""How a local sweep starts its worker processes: forked by a server that has loaded the
simulator once, or spawned.

Where Python has the ``forkserver`` start method (Linux, macOS), the workers are forked by
multiprocessing's fork server, which imports ``explore.preload`` (the simulator, every model,
numba) before it forks anything: a worker then starts in milliseconds,
with nothing to import. Spawned workers imported all of that themselves, about 1.5 s of CPU
each before their first point, and two workers on two cores did it twice over.
``archsim sweep`` starts the server first thing (``executor.start_workers_early``), so that its
imports overlap the planning of the sweep, and stops it as it ends (``stop_workers``). A
program's sweeps reuse it.
"""

from __future__ import annotations

import contextlib
import inspect
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path
from typing import Any

__all__ = [
    "IMPORT_TIME_VARIABLES",
    "PRELOAD",
    "WARMED_PRELOAD",
    "join_pool_thread",
    "join_pool_threads",
    "mp_context",
    "sigint_blocked",
    "stop_workers",
]

#: the variables that the fork server's modules read as they are imported (numba's settings,
#: the thread counts of the BLAS and OpenMP libraries): a worker forked by a server that
#: started with other values would not follow a change. Every other variable a worker gets
#: from the caller as the worker starts (``_init_worker``).
IMPORT_TIME_VARIABLES = ("NUMBA_", "OMP_", "OPENBLAS_", "MKL_", "PYTHON")

#: those variables as they were when this process started the fork server
_server_environ: dict[str, str] = {}


def _environ() -> dict[str, str]:
    """This process's ``IMPORT_TIME_VARIABLES``; ``$NUMBA_CACHE_DIR`` without the
    ``src-<digest>`` folder that ``archsim.numba_cache`` adds to it on import (the same
    directory either way)."""
    env = {k: v for k, v in os.environ.items() if k.startswith(IMPORT_TIME_VARIABLES)}
    cache = env.get("NUMBA_CACHE_DIR")
    if cache is not None and Path(cache).name.startswith("src-"):
        env["NUMBA_CACHE_DIR"] = str(Path(cache).parent)
    return env


def mp_context(fork_self: bool = False, warm: Callable[[], bool] | None = None) -> Any:
    """How workers start: forked by multiprocessing's ``forkserver``, which has imported
    ``explore.preload`` (the simulator and numba) once for all of them, where
    the platform has it and this process's environment is still the one the server started
    with; else ``spawn`` (each worker imports what it needs itself). ``fork_self``: a server
    started now is forked from this process (``_fork_server``), for a process that is still
    small (the CLI as it starts): the server, and every worker, shares what it holds; it
    calls ``warm`` before it forks any worker (see ``_fork_server``)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return get_context("spawn")  # pragma: no cover - Windows
    from multiprocessing import forkserver

    server = forkserver._forkserver
    before = getattr(server, "_forkserver_pid", None)
    if before is not None and _environ() != _server_environ:
        return get_context("spawn")  # a worker imports numba with the caller's settings
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    with sigint_blocked():  # the server, and every worker it forks, never sees Ctrl-C
        if fork_self and before is None and hasattr(os, "fork"):
            _fork_server(server, warm)
        forkserver.ensure_running()  # (re)starts it when it is not running
    pid = getattr(server, "_forkserver_pid", None)
    if pid != before:  # (re)started now, with this environment
        _server_environ.clear()
        _server_environ.update(_environ())
        _started[:] = [pid]
    return ctx


#: what the fork server imports before it forks any worker
PRELOAD = ["archsim.explore.preload"]

#: what it imports instead after a warm-up that built the sweep's layers (``explore.warm``),
#: which imported the sweep's model: the workers' entry points only. The other models' modules
#: (0.1 s, between the warm-up and the first fork) are left to a worker that needs one.
WARMED_PRELOAD = ["archsim.explore.executor", "archsim.simulate"]


def _fork_server(server: Any, warm: Callable[[], bool] | None = None) -> None:
    """``ForkServer.ensure_running``, but with the server forked from this process rather than
    started as a new interpreter: it starts with what this process has imported (the CLI's
    pydantic configs, numpy: about 0.5 s of its 1.9 s of imports), which it would import
    again. Not for a large process (a program's data would be in every worker's address
    space, and copied as the workers touch it): ``archsim sweep`` does it as it starts.
    multiprocessing's own ``forkserver.main`` then serves the fork requests, after ``warm()``
    when given (``explore.warm``: what every worker would build alone, built once here and
    shared by the forks; anything it raises is ignored, the sweep reports its own errors;
    when it built something, the server preloads ``WARMED_PRELOAD``, not ``PRELOAD``).
    Nothing is done when this process runs threads of its own (a fork copies only the calling
    one)."""
    from multiprocessing import connection, forkserver, resource_tracker, util

    if (
        threading.active_count() > 1
        or getattr(server, "_forkserver_pid", 0) is not None
        or "authkey_r" in inspect.signature(forkserver.main).parameters  # Python >= 3.13
    ):
        return
    resource_tracker.ensure_running()
    with socket.socket(socket.AF_UNIX) as listener:
        address = connection.arbitrary_address("AF_UNIX")
        listener.bind(address)
        if not util.is_abstract_socket_namespace(address):
            os.chmod(address, 0o600)
        listener.listen()
        alive_r, alive_w = os.pipe()
        # SIGTERM held back across the fork: the child would otherwise run this process's
        # handler (the CLI's, which raises KeyboardInterrupt) in its after-fork hooks when
        # stop_workers ends it at once, and print "Exception ignored ..." with a traceback
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        pid = os.fork()
        if pid == 0:  # the server: until every client has closed the "alive" pipe
            code = 0
            try:
                os.close(alive_w)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)  # how stop_workers ends it
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                preload = PRELOAD
                if warm is not None:
                    with contextlib.suppress(Exception):
                        if warm():
                            preload = WARMED_PRELOAD
                forkserver.main(listener.fileno(), alive_r, preload)
            except SystemExit:
                pass
            except BaseException:  # noqa: BLE001 - the parent's requests then fail
                code = 1
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(alive_r)
    server._forkserver_address = address
    server._forkserver_alive_fd = alive_w
    server._forkserver_pid = pid


#: the fork server this process started (its pid), for ``stop_workers``
_started: list[int | None] = []


#: longest wait for process pools' manager threads to finish, s
POOL_THREAD_JOIN_S = 2.0


def join_pool_threads(timeout_s: float = POOL_THREAD_JOIN_S) -> None:
    """Wait (at most ``timeout_s``) for the manager threads of this process's shut-down or
    broken process pools to finish (a live pool's thread, e.g. a caller's own pool, is left
    alone). Python's exit hook for process pools (``concurrent.futures.process._python_exit``)
    wakes each such thread through a pipe that the thread closes as it finishes; when the two
    meet (3.11 takes no lock there) the hook writes to a closed descriptor and Python prints an
    "Exception ignored ... Bad file descriptor" traceback on the way out. A thread that has
    finished is never woken."""
    deadline = time.monotonic() + timeout_s
    for thread in threading.enumerate():
        if type(thread).__name__ != "_ExecutorManagerThread" or not thread.is_alive():
            continue
        ref = getattr(thread, "executor_reference", None)
        pool = ref() if ref is not None else None
        in_use = pool is not None and not (
            getattr(pool, "_shutdown_thread", True) or getattr(pool, "_broken", True)
        )
        if in_use:
            continue  # a pool still in use: its thread does not end now
        thread.join(max(0.0, deadline - time.monotonic()))


def join_pool_thread(pool: Any, timeout_s: float = POOL_THREAD_JOIN_S) -> None:
    """Wait (at most ``timeout_s``) for one broken or shut-down pool's manager thread: it
    joins the pool's workers, and a forkserver-started worker's exit code must not be read by
    two threads at once (``popen_forkserver.Popen.poll`` is not thread-safe: the second reader
    finds the status pipe at its end and records exit code 255 over the real one)."""
    thread = getattr(pool, "_executor_manager_thread", None)
    if thread is not None and thread.is_alive():
        thread.join(timeout_s)


def stop_workers() -> None:
    """Stop the fork server that ``start_workers_early`` or a sweep started and wait for it,
    so that no process outlives the command and its CPU time counts as this process's
    children's (``archsim sweep`` calls it as it ends; a program may keep it for its next
    sweep). The pools' manager threads are waited for first (:func:`join_pool_threads`)."""
    from multiprocessing import forkserver

    join_pool_threads()

    server = forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None or _started != [pid] or not hasattr(server, "_stop"):
        return
    # it holds nothing: SIGTERM ends it at once, not after the interpreter's teardown of numba
    # and LLVM (0.3-0.7 s) that closing its pipe alone would wait for
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    server._stop()  # closes its pipe and reaps it
    _started.clear()


@contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT held back meanwhile: a worker process started now inherits the mask, so it never
    sees Ctrl-C (the parent's to handle), and a Ctrl-C that comes meanwhile is acted on
    afterwards, not lost. The mask alone is not enough: the process-directed SIGINT may land on
    another thread (pyarrow's, numba's) and Python then runs its handler in this one, in the
    middle of writing the new worker's start-up data, which leaves the worker an empty pipe
    (``EOFError`` traceback on the terminal). So the Python-level handler defers too."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    caught: list[int] = []
    main = threading.current_thread() is threading.main_thread()
    handler = signal.signal(signal.SIGINT, lambda s, _f: caught.append(s)) if main else None
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if main:
            restored = signal.default_int_handler if handler is None else handler
            signal.signal(signal.SIGINT, restored)
            if caught and callable(restored):  # act on it now, without a second OS signal
                restored(signal.SIGINT, None)
            elif caught and restored == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)
