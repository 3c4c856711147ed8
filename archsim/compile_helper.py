"""Compile the kernels a run calls last in a helper process, while the run itself starts.

On an empty numba cache ``archsim run`` compiles each kernel the first time it calls it, one
after the other (EIE: the encoder's two kernels, then the functional model and the schedule;
about 2 s of a 4-5 s first run. SCNN: the 16-input phase loop ``scnn_phase._chunk_sum16`` with
its callees is ~8 s of ~14 s of compiles). numba compiles in Python, holding the GIL, so a
thread would not overlap it with anything; a second process does. Once the hardware is known,
the CLI calls :func:`start`: when the accelerator's helper kernels are not in the cache yet, a
helper process (``python -m archsim.compile_helper eie``, or ``scnn``) imports numba and
compiles them, with the argument types the run uses, into the same cache while the run imports
its models, builds the first layer and compiles the encoder (SCNN: the operand terms, the
no-saturation flags and weight rows; the phases of a layer that may saturate, or of a general
one, compile their own loops). Before the run's first call of a helper kernel
the kernel module calls :func:`wait`; numba then loads the compiled code from the cache.

The helper costs CPU of its own (its interpreter, ``import numba`` and numba's first-compile
set-up: ~0.9 s), so it starts only where a core is mostly idle: a warm cache, a library call
of ``simulate`` (only the CLI calls :func:`start`), one CPU, or a 1-minute load average above
CPUs - 0.5 start none (2 cores: at load 1.1-1.3 it took the run from 7.6 to 5.5 s median, at
load 9 it only added CPU); ``ARCHSIM_COMPILE_HELPER=0`` never starts it, ``=1`` whatever the load.
Should the helper fail, the run compiles the kernels itself, as without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

__all__ = ["ENV_VAR", "HELPER_KERNELS", "start", "wait"]

#: ``0``: no helper (every kernel compiles in the run's own process); ``1``: a helper whatever
#: the load; unset: a helper when a core is idle
ENV_VAR = "ARCHSIM_COMPILE_HELPER"

_EIE_FUNCTIONAL = (
    "(int64[::1], int64[::1], int64, int32[:, ::1], int64[::1], int32[::1], uint8[::1], "
    "int64[::1], int64, int64, int64[::1], int64[:, ::1], boolean[:, ::1], int64[::1])"
)
_EIE_SCHEDULE = (
    "(int64[::1], int64[::1], int64[::1], int64, int64, int64, int32[:, ::1], boolean[:, ::1], "
    "int64, int64, int64[:, ::1], int64[:, ::1], int64[:, ::1], int64[:, ::1])"
)
# the published SCNN's phase loop (16 inputs, no-saturation path); its callees come with it
_SCNN_CHUNK_SUM16 = (
    "(int64, int64, int64[::1], int64, int64[::1], UniTuple(int64, 11), "
    + "int64[::1], " * 8
    + "int64[:, ::1], int64[:, ::1])"
)

#: accelerator -> (module, kernel, argument types) the helper compiles: the kernels a run calls
#: after others it compiles itself meanwhile (a test checks the types against a real run)
HELPER_KERNELS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "eie": (
        ("archsim.datapath.eie_kernels", "_functional", _EIE_FUNCTIONAL),
        ("archsim.datapath.eie_kernels", "_schedule", _EIE_SCHEDULE),
    ),
    "scnn": (("archsim.datapath.scnn_phase", "_chunk_sum16", _SCNN_CHUNK_SUM16),),
}

_running: list[subprocess.Popen] = []


def _cached(folder: Path, module: str, kernel: str) -> bool:
    """Whether numba's index of ``module.kernel`` exists in ``folder`` (imports no numba)."""
    return any(folder.glob(f"*/{module.rsplit('.', 1)[1]}.{kernel}-*.nbi"))


def _idle_core() -> bool:
    """Whether another core is likely free: 2+ CPUs and a 1-minute load average of at most
    CPUs - 0.5 (where the platform reports none, the CPU count alone decides)."""
    cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        load = 0.0
    return cpus >= 2 and load <= cpus - 0.5


def start(accelerator: str) -> bool:
    """Start the helper process for ``accelerator`` when some of its helper kernels are not in
    the cache; returns whether it started one."""
    kernels = HELPER_KERNELS.get(accelerator)
    choice = os.environ.get(ENV_VAR, "")
    if not kernels or _running or choice == "0" or (choice != "1" and not _idle_core()):
        return False
    from archsim.numba_cache import cache_dir  # sets $NUMBA_CACHE_DIR, which the helper reads

    folder = cache_dir()
    if all(_cached(folder, module, kernel) for module, kernel, _ in kernels):
        return False
    root = str(Path(__file__).resolve().parents[1])  # the helper compiles this archsim's kernels
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "archsim.compile_helper", accelerator],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:  # no helper: the run compiles everything itself
        return False
    _running.append(proc)
    return True


def wait() -> None:
    """Wait for the helper this process started, if any (a no-op otherwise): its kernels are
    then in the cache, and numba loads them instead of compiling them again."""
    while _running:
        _running[-1].wait()
        _running.pop()


def compile_kernels(accelerator: str) -> None:
    """Compile (or load from the cache) ``accelerator``'s helper kernels: the helper's work."""
    from numba.core.sigutils import normalize_signature

    for module, kernel, signature in HELPER_KERNELS[accelerator]:
        args, _ = normalize_signature(signature)
        # a tuple of types, as a call passes them: numba keys its cache on the signature as
        # given, so the string itself would be a cache entry the run never finds
        getattr(import_module(module), kernel).compile(tuple(args))


if __name__ == "__main__":  # pragma: no cover - run by start() in a child process
    compile_kernels(sys.argv[1])
