"""Start-up: what ``import archsim`` and ``archsim --help`` load, and where numba caches."""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import archsim

HEAVY = ("numba", "pandas", "matplotlib")


def _python(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter; return its stdout."""
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return p.stdout.strip()


def test_import_and_help_load_no_heavy_module():
    code = (
        f"import sys, json, archsim; a = [m for m in {HEAVY!r} if m in sys.modules]; "
        "from archsim.cli import build_parser; build_parser().format_help(); "
        f"b = [m for m in {HEAVY!r} if m in sys.modules]; print(json.dumps([a, b]))"
    )
    after_import, after_help = json.loads(_python(code))
    assert after_import == []
    assert after_help == []


def test_help_and_version_load_no_config_model_nor_numpy():
    """``archsim --help`` builds argparse's tree only: no pydantic, NumPy or claims (0.6-0.8 s
    before; the commands import them when they run)."""
    light = ("pydantic", "numpy", "yaml", "archsim.validation.runner", "importlib.metadata")
    code = (
        "import sys, json, contextlib, io; from archsim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        f"print(json.dumps([[m for m in {light!r} if m in sys.modules], out.getvalue()]))"
    )
    loaded, text = json.loads(_python(code))
    assert loaded == [] and "validate" in text
    from archsim.validation.runner import CLAIMS, MODELS

    assert tuple(CLAIMS) == MODELS  # the command line's names are the claims' models
    p = subprocess.run(
        [sys.executable, "-m", "archsim", "--version"], capture_output=True, text=True, check=True
    )
    assert p.stdout == f"archsim {archsim.__version__}\n"


def test_public_names_resolve_lazily():
    assert set(archsim.__all__) == {*archsim._WHERE, "__version__"}
    for name in archsim.__all__:
        assert getattr(archsim, name) is not None
    importlib.import_module("archsim.simulate")  # binds the submodule; the function stays

    assert callable(archsim.simulate)
    assert archsim.simulate.__module__ == "archsim.simulate"
    assert archsim.load_hardware("tiny_eie").accelerator == "eie"


def test_numba_cache_dir_honours_env_and_defaults_outside_the_package(tmp_path):
    code = "import numba, archsim.numba_cache as c; print(numba.config.CACHE_DIR, c.cache_dir())"
    numba_dir, ours = _python(code, NUMBA_CACHE_DIR=str(tmp_path)).split()
    assert numba_dir == ours and Path(ours).parent == tmp_path
    assert re.fullmatch(r"src-[0-9a-f]{12}", Path(ours).name)
    # a child process that inherits the subfolder keeps it (no src-x/src-x nesting)
    assert _python(code, NUMBA_CACHE_DIR=ours).split() == [ours, ours]
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    numba_dir, ours = p.stdout.split()
    assert numba_dir == ours
    package = Path(archsim.__file__).resolve().parent.parent
    assert not Path(ours).resolve().is_relative_to(package)


def _doctor(env: dict[str, str]) -> dict:
    p = subprocess.run(
        [sys.executable, "-m", "archsim", "doctor", "--json"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(p.stdout)


def test_doctor_reports_cache_dir_and_which_kernels_are_warm(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    before = _doctor(env)
    assert Path(before["numba_cache_dir"]).parent == cache  # cache/src-<digest of the kernels>
    assert before["numba_cache_from"] == "$NUMBA_CACHE_DIR"
    assert before["kernels"]["eie"]["compiled"] == 0
    # the encoder's two kernels (pointer rows, entries), the schedule, the functional model,
    # the line reads, the float reference and bounds (live sums, live error sums)
    assert before["kernels"]["eie"]["total"] == 7
    compile_one = (  # the smallest kernel: compiling it takes about a second
        "import numpy as np; from archsim.datapath.eie_kernels import eie_line_reads as f; "
        "f(np.array([0], np.int64), 1, np.array([[0], [3]], np.int32), 2)"
    )
    subprocess.run([sys.executable, "-c", compile_one], check=True, env=env)
    after = _doctor(env)["kernels"]["eie"]
    assert after["compiled"] == 1
    assert "eie_kernels._line_reads" not in after["cold"]
    assert len(after["cold"]) == 6
    assert any(cache.rglob("*.nbi"))
    assert after and _doctor(env)["numba_cache_writable"] is True


def test_doctor_calls_a_cache_it_cannot_make_not_writable(tmp_path):
    """A regular file where the cache folder goes, or a folder under /proc, was 'writable'
    (the check asked os.access of the nearest existing path, which says yes as root)."""
    from archsim.cli_doctor import _writable

    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert _writable(tmp_path / "new" / "cache") is True
    assert not (tmp_path / "new").exists()  # the check leaves nothing behind
    assert _writable(blocker) is False and _writable(blocker / "cache") is False
    assert _writable(Path("/proc/archsim-cache")) is False


def test_run_announces_a_first_compile_once(capsys, monkeypatch):
    from archsim import cli_doctor

    cold = {"eie_kernels.a": False, "eie_kernels.b": False}
    monkeypatch.setattr("archsim.numba_cache.kernel_status", lambda acc: cold)
    cli_doctor.announce_compile("eie", quiet=False)
    assert "archsim: compiling the eie kernels (first run only" in capsys.readouterr().err
    cli_doctor.announce_compile("eie", quiet=True)
    assert capsys.readouterr().err == ""
    cold["eie_kernels.a"] = True  # compiled by an earlier run; b is used by sweeps only
    cli_doctor.announce_compile("eie", quiet=False)
    assert capsys.readouterr().err == ""


def test_run_without_report_skips_matplotlib_and_pandas_and_report_rebuilds_it(tmp_path):
    wl, out = tmp_path / "wl.yaml", tmp_path / "o"
    layer = (
        "{name: a, kind: fc, inputs: 64, outputs: 32, weight_density: 0.2, activation_density: 0.5}"
    )
    wl.write_text(f"schema_version: 1\nname: r\nsource: test\nlayers:\n  - {layer}\n", "utf-8")
    code = (
        "import sys; from archsim.cli import main; "
        f"rc = main(['run', 'tiny_eie', {str(wl)!r}, '-o', {str(out)!r}, '-q', '--no-report']); "
        "print(rc, 'matplotlib' in sys.modules, 'pandas' in sys.modules)"
    )
    assert _python(code).split() == ["0", "False", "False"]  # results.csv: archsim.csv_rows
    assert sorted(p.name for p in out.iterdir()) == ["results.csv", "results.json"]
    from archsim.cli import main

    assert main(["report", str(out)]) == 0
    assert (out / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_run_with_report_loads_neither_matplotlib_nor_pandas(tmp_path):
    """The run report's figures are SVG written directly; the printed table needs no pandas."""
    wl, out = tmp_path / "wl.yaml", tmp_path / "o"
    layer = (
        "{name: a, kind: fc, inputs: 64, outputs: 32, weight_density: 0.2, activation_density: 0.5}"
    )
    wl.write_text(f"schema_version: 1\nname: r\nsource: test\nlayers:\n  - {layer}\n", "utf-8")
    code = (
        "import contextlib, io, sys; from archsim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as table:\n"
        f"    rc = main(['run', 'tiny_eie', {str(wl)!r}, '-o', {str(out)!r}])\n"
        "print(rc, 'matplotlib' in sys.modules, 'pandas' in sys.modules, 'a ' in table.getvalue())"
    )
    assert _python(code).split() == ["0", "False", "False", "True"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 4


def test_systolic_run_imports_only_the_systolic_model(tmp_path):
    """A SCALE-Sim case loads the systolic model, its kernels and its config model only (lazy
    registry, ``archsim.datapath`` and ``archsim.config``): no EIE/SCNN/GPU models, kernels or
    pydantic configs."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "scalesim"
    cfg, topo = fixtures / "small_gemm_os_4x4_user.cfg", fixtures / "small_gemm_os_4x4_user.csv"
    code = (
        "import sys, json; from archsim.cli import main; "
        f"rc = main(['run', '--from-scalesim', {str(cfg)!r}, {str(topo)!r}, '-q', "
        f"'--no-report', '-o', {str(tmp_path / 'o')!r}]); "
        "print(json.dumps([rc, sorted(m for m in sys.modules if m.startswith("
        "('archsim.accelerators.', 'archsim.datapath.', 'archsim.config.')))]))"
    )
    rc, modules = json.loads(_python(code))
    assert rc == 0
    assert [m for m in modules if not m.startswith("archsim.config.")] == [
        "archsim.accelerators.base",
        "archsim.accelerators.systolic",
        "archsim.datapath.systolic_folds",
        "archsim.datapath.systolic_kernels",
        "archsim.datapath.systolic_prefetch",
    ]
    configs = {m.rsplit(".", 1)[1] for m in modules if m.startswith("archsim.config.")}
    assert "systolic" in configs and "workload" in configs
    assert not configs & {"eie", "scnn", "gpu", "system", "sweep"}


def test_lazy_registries_import_a_model_only_when_looked_up():
    code = (
        "import sys, json; from archsim.accelerators import REGISTRY; "
        "from archsim.config.io import HARDWARE_MODELS as M; "
        "a = ['eie' in REGISTRY, 'nope' in REGISTRY, 'gpu' in M, 'eie' in M, sorted(REGISTRY), "
        "sorted(M)]; "
        "b = [m for m in ('archsim.accelerators.eie', 'archsim.config.eie') if m in sys.modules]; "
        "f = REGISTRY['systolic'].__name__; c = M['systolic'].__name__; "
        "print(json.dumps([a, b, f, c, 'archsim.accelerators.eie' in sys.modules]))"
    )
    looked, loaded, fn, model, eie_loaded = json.loads(_python(code))
    assert looked == [
        True,
        False,
        False,
        True,
        ["dcnn", "eie", "scnn", "systolic", "tensor_core"],
        ["dcnn", "eie", "scnn", "system", "systolic", "tensor_core"],
    ]
    assert loaded == [] and not eie_loaded
    assert (fn, model) == ("simulate_systolic", "SystolicConfig")
    from archsim.config.io import HARDWARE_MODELS
    from archsim.config.systolic import SystolicConfig

    HARDWARE_MODELS["mine"] = SystolicConfig  # new accelerators still register here
    try:
        assert HARDWARE_MODELS["mine"] is SystolicConfig and "mine" in HARDWARE_MODELS
    finally:
        del HARDWARE_MODELS["mine"]
    assert "mine" not in HARDWARE_MODELS


def test_cli_entry_point_freezes_the_collector_only_after_main(monkeypatch):
    """``python -m archsim`` / the console script skip the interpreter's last full collection
    (0.3-0.4 s of a run); ``main()`` itself, as programs and tests call it, leaves gc alone."""
    import gc

    from archsim import cli

    calls: list[str] = []
    monkeypatch.setattr(cli, "main", lambda **_: calls.append("main") or 7)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert cli.entry_point() == 7
    finally:  # entry_point installs the console script's handlers: not this process's
        for s, h in handlers.items():
            signal.signal(s, h)
    assert calls == ["main", "freeze"]
    p = subprocess.run(
        [sys.executable, "-m", "archsim", "list", "--json"], capture_output=True, text=True
    )
    assert p.returncode == 0 and "hardware" in json.loads(p.stdout)


def test_a_ctrl_c_while_the_cli_loads_ends_with_one_line_and_130(monkeypatch, capsys):
    """The console script and ``python -m archsim`` import the CLI inside a handler: a
    Ctrl-C before the CLI's own handlers exist gets archsim's line and 130, no traceback."""
    import types

    from archsim.console import main

    class Interrupted(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "archsim.cli", Interrupted("archsim.cli"))
    assert main() == 130
    assert capsys.readouterr().err == "archsim: interrupted\n"


def test_a_cached_kernel_loads_without_numbas_compiler_registries(tmp_path):
    """A kernel in the cache runs without numba's lowering registries (0.3 s of every warm
    run): the second process loads the machine code the first compiled, imports none of the
    registry modules, and gets the same answer; compiling still fills them."""
    call = (
        "import sys, numpy as np; from archsim.datapath.eie_kernels import eie_line_reads as f; "
        "r = f(np.array([0, 1], np.int64), 2, np.array([[0, 0], [3, 1], [7, 4]], np.int32), 2); "
        "from numba.core.caching import Cache; "
        "print(int(np.asarray(r).sum()), 'numba.np.linalg' in sys.modules, "
        "getattr(Cache.load_overload, '_archsim_light', False))"
    )
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    first = _python(call, **env).split()  # compiles: the compiler fills the registries
    second = _python(call, **env).split()  # loads from the cache
    assert first[1:] == ["True", "True"]
    assert second == [first[0], "False", "True"]


def test_planning_a_sweep_loads_no_pandas(tmp_path):
    """`archsim sweep` plans while its fork server builds the first layers: pandas (0.4 s) and
    pyarrow.compute load after the workers have started, not on that path."""
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "schema_version: 1\nname: t\nhardware: tiny_eie\nworkload: eie_benchmarks\n"
        "axes:\n  pe_array.num_pes: [2, 4]\n",
        "utf-8",
    )
    code = (
        "import sys; from archsim.explore import plan_sweep, run_plan; "
        f"plan = plan_sweep({str(spec)!r}); "
        "print(len(plan.points), 'pandas' in sys.modules, 'pyarrow.compute' in sys.modules)"
    )
    assert _python(code).split() == ["2", "False", "False"]
