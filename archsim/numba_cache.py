"""Where numba keeps archsim's compiled kernels: a per-user cache directory.

Every kernel module imports numba as ``from archsim.numba_cache import nb``, so the cache
directory is chosen before numba compiles anything: ``$NUMBA_CACHE_DIR`` when set, else the
user cache directory (``platformdirs``; e.g. ``~/.cache/archsim/numba`` on Linux). Compiled
code is therefore never written into a source checkout or site-packages.

Kernels live in a subfolder named after a digest of the kernel sources (``src-<digest>``).
numba checks only the timestamp of the file that defines a cached function, not of the modules
it calls (``scnn_phase._chunk_sum16`` calls ``scnn_sum``), so without the digest an edit or an
upgrade that changes only a callee's file would run stale machine code.
"""

from __future__ import annotations

import hashlib
import os
import sys
from importlib import import_module
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_VAR",
    "KERNEL_MODULES",
    "USER_SET",
    "cache_dir",
    "cold_kernels",
    "kernel_status",
    "nb",  # noqa: F822  (module __getattr__)
]

#: the environment variable numba reads for its cache directory
ENV_VAR = "NUMBA_CACHE_DIR"

#: whether the user chose the directory (``$NUMBA_CACHE_DIR`` set before archsim started)
USER_SET = bool(os.environ.get(ENV_VAR))

#: accelerator -> the modules holding the numba kernels its simulation compiles
KERNEL_MODULES: dict[str, tuple[str, ...]] = {
    "eie": ("archsim.datapath.eie_encode", "archsim.datapath.eie_kernels"),
    "scnn": ("archsim.datapath.scnn_kernels",),
    "dcnn": ("archsim.datapath.dcnn_kernels",),
    "systolic": ("archsim.datapath.systolic_kernels",),
    "tensor_core": ("archsim.datapath.gemm_kernels", "archsim.datapath.gpu_sm"),
}


def _source_digest() -> str:
    """12 hex digits of SHA-1 over every ``archsim/datapath/*.py`` file (names and bytes)."""
    h = hashlib.sha1()
    for path in sorted((Path(__file__).parent / "datapath").glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


_LEAF = f"src-{_source_digest()}"


def cache_dir() -> Path:
    """The directory numba caches compiled kernels in (not created here): the ``src-<digest>``
    subfolder of ``$NUMBA_CACHE_DIR`` or of the user cache directory."""
    env = os.environ.get(ENV_VAR)
    if env:
        root = Path(env)
        return root if root.name == _LEAF else root / _LEAF  # a child process inherits the leaf
    import platformdirs

    return Path(platformdirs.user_cache_dir("archsim", appauthor=False)) / "numba" / _LEAF


def _configure() -> None:
    """Point numba at ``cache_dir()``; also works when numba was imported before archsim."""
    path = str(cache_dir())
    os.environ[ENV_VAR] = path
    numba_config = sys.modules.get("numba.core.config")
    if numba_config is not None:
        numba_config.CACHE_DIR = path


_configure()


def __getattr__(name: str) -> Any:
    """``nb``, numba itself, imported on first use (after the cache directory is set): the
    paths above serve ``archsim.compile_helper`` before the run has imported numba."""
    if name == "nb":
        import numba

        _light_cache_loads()
        globals()["nb"] = numba
        return numba
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _light_cache_loads() -> None:
    """Load cached kernels without first filling numba's compiler registries.

    numba's ``Cache.load_overload`` refreshes the CPU target context before it loads a
    cached kernel: it imports and installs every lowering registry (NumPy, linear algebra,
    typed containers...; 0.27-0.31 s, a third of a warm ``archsim run``), which only
    compiling needs; the compiler refreshes the context itself when a kernel is not in the
    cache (``numba.core.compiler.CompilerBase``). Loading machine code needs the runtime
    (NRT) alone, which the refresh would also have initialised. Applied once; left alone
    when this numba lacks the pieces, and any failure of the light load falls back to numba's
    own (the caches, results and every reference-twin test are the same either way)."""
    from numba.core import caching

    from archsim.interrupts import interrupts_held

    original = caching.Cache.load_overload
    if getattr(original, "_archsim_light", False) or not hasattr(caching.Cache, "_load_overload"):
        return
    try:
        from numba.core.runtime import rtsys
    except ImportError:  # pragma: no cover - a numba without it keeps its own load
        return

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        with interrupts_held():
            try:
                rtsys.initialize(target_context)
                with self._guard_against_spurious_io_errors():
                    return self._load_overload(sig, target_context)
            except Exception:  # noqa: BLE001 - numba's own path, with the full refresh
                return original(self, sig, target_context)

    load_overload._archsim_light = True  # type: ignore[attr-defined]
    caching.Cache.load_overload = load_overload  # type: ignore[method-assign]
    from numba.core.registry import cpu_target

    with interrupts_held():  # its JIT engine's first LLVM objects, made now (3 ms), not mid-run
        cpu_target.target_context  # noqa: B018 - the property builds the context


def kernel_status(accelerator: str) -> dict[str, bool]:
    """``module.function`` -> whether its compiled code is in the cache and matches the source,
    for every cached kernel of ``accelerator`` (imports the kernel modules, compiles nothing)."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    status: dict[str, bool] = {}
    for mod_name in KERNEL_MODULES[accelerator]:
        module = import_module(mod_name)
        for name, obj in sorted(vars(module).items()):
            cache = getattr(obj, "_cache", None)
            if not isinstance(obj, CPUDispatcher) or cache is None or isinstance(cache, NullCache):
                continue  # not a kernel, or an uncached (inlined) helper
            status[f"{mod_name.rsplit('.', 1)[-1]}.{name}"] = _is_warm(cache)
    return status


def _is_warm(cache: object) -> bool:
    """True when numba's index for one kernel exists and is current (numba's own check)."""
    try:
        return bool(cache._cache_file._load_index())  # type: ignore[attr-defined]
    except (OSError, AttributeError, EOFError, ValueError):
        return False


def cold_kernels(accelerator: str) -> list[str]:
    """The kernels of ``accelerator`` a run would still have to compile (none if unknown)."""
    if accelerator not in KERNEL_MODULES:
        return []
    return [name for name, warm in kernel_status(accelerator).items() if not warm]
