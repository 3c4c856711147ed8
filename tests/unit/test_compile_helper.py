"""The compile helper: a first CLI run on an empty cache compiles EIE's last kernels (SCNN's
16-input phase loop) in a second process, with exactly the argument types the run calls them
with."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from archsim import compile_helper

_CODE = """
import json, sys
from importlib import import_module
import numba.core.event as ev
compiled = []
class Listener(ev.Listener):
    def on_start(self, event):
        compiled.append(event.data["dispatcher"].py_func.__name__)
    def on_end(self, event):
        pass
ev.register("numba:compile", Listener())
from archsim.cli import main
hw, acc, wl, out = sys.argv[1:5]
rc = main(["run", hw, wl, "-o", out, "-q", "--no-report"])
from archsim import compile_helper
from numba.core.sigutils import normalize_signature
kernels = compile_helper.HELPER_KERNELS[acc]
wanted = {k: tuple(normalize_signature(s)[0]) for _, k, s in kernels}
used = {k: getattr(import_module(m), k).signatures for m, k, _ in kernels}
print(json.dumps([rc, compiled, all(used[k] == [wanted[k]] for k in wanted)]))
"""


_FC = "{name: a, kind: fc, inputs: 64, outputs: 32, weight_density: 0.2, activation_density: 0.5}"
_CONV = (
    "{name: c, kind: conv, c: 8, k: 16, h: 10, w: 10, r: 3, s: 3, pad: 1, "
    "weight_density: 0.4, activation_density: 0.5}"
)


def _run(tmp_path, name: str, hw: str = "tiny_eie", layer: str = _FC, **env: str) -> list:
    wl = tmp_path / "wl.yaml"
    wl.write_text(f"schema_version: 1\nname: r\nsource: test\nlayers:\n  - {layer}\n", "utf-8")
    acc = "scnn" if hw == "scnn" else "eie"
    p = subprocess.run(
        [sys.executable, "-c", _CODE, hw, acc, str(wl), str(tmp_path / name)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / f"nb-{name}"), **env},
    )
    return json.loads(p.stdout)


def test_first_run_compiles_the_last_eie_kernels_in_the_helper(tmp_path):
    rc, compiled, same_types = _run(tmp_path, "helper", ARCHSIM_COMPILE_HELPER="1")
    assert rc == 0 and same_types  # the run used the helper's compiled code, no other types
    # _functional, _schedule: in the helper
    assert sorted(compiled) == ["_fill", "_live_error_sums", "_live_sums", "_pointer_rows"]
    rc, compiled, same_types = _run(tmp_path, "own", ARCHSIM_COMPILE_HELPER="0")
    assert rc == 0 and same_types
    assert sorted(compiled) == [
        "_fill",
        "_functional",
        "_live_error_sums",
        "_live_sums",
        "_pointer_rows",
        "_schedule",
    ]


def test_first_scnn_run_compiles_the_16_input_phase_loop_in_the_helper(tmp_path):
    rc, compiled, same_types = _run(tmp_path, "helper", "scnn", _CONV, ARCHSIM_COMPILE_HELPER="1")
    assert rc == 0 and same_types
    assert "_chunk_sum16" not in compiled and "_pe_phase_sum16" not in compiled
    assert "_operand_terms" in compiled  # the run's own share
    rc, compiled, same_types = _run(tmp_path, "own", "scnn", _CONV, ARCHSIM_COMPILE_HELPER="0")
    assert rc == 0 and same_types
    assert "_chunk_sum16" in compiled


def test_warm_cache_or_other_models_start_no_helper(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not compile_helper.start("systolic")  # nothing to compile in a helper
    assert not compile_helper._running
    compile_helper.wait()  # no helper: returns at once
    monkeypatch.setenv("ARCHSIM_COMPILE_HELPER", "0")
    assert not compile_helper.start("eie")
    monkeypatch.delenv("ARCHSIM_COMPILE_HELPER")
    monkeypatch.setattr(os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    assert not compile_helper.start("eie")  # no idle core: the run compiles alone
