"""The compile helper: a first CLI run on an empty cache compiles EIE's last kernels in a
second process, with exactly the argument types the run calls them with."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from archsim import compile_helper

_CODE = """
import json, sys
import numba.core.event as ev
compiled = []
class Listener(ev.Listener):
    def on_start(self, event):
        compiled.append(event.data["dispatcher"].py_func.__name__)
    def on_end(self, event):
        pass
ev.register("numba:compile", Listener())
from archsim.cli import main
wl, out = sys.argv[1], sys.argv[2]
rc = main(["run", "tiny_eie", wl, "-o", out, "-q", "--no-report"])
from archsim import compile_helper
from archsim.datapath import eie_kernels
from numba.core.sigutils import normalize_signature
wanted = {k: tuple(normalize_signature(s)[0]) for _, k, s in compile_helper.HELPER_KERNELS["eie"]}
used = {k: getattr(eie_kernels, k).signatures for k in wanted}
print(json.dumps([rc, compiled, all(used[k] == [wanted[k]] for k in wanted)]))
"""


def _run(tmp_path, name: str, **env: str) -> list:
    wl = tmp_path / "wl.yaml"
    layer = (
        "{name: a, kind: fc, inputs: 64, outputs: 32, weight_density: 0.2, activation_density: 0.5}"
    )
    wl.write_text(f"schema_version: 1\nname: r\nsource: test\nlayers:\n  - {layer}\n", "utf-8")
    p = subprocess.run(
        [sys.executable, "-c", _CODE, str(wl), str(tmp_path / name)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / f"nb-{name}"), **env},
    )
    return json.loads(p.stdout)


def test_first_run_compiles_the_last_eie_kernels_in_the_helper(tmp_path):
    rc, compiled, same_types = _run(tmp_path, "helper", ARCHSIM_COMPILE_HELPER="1")
    assert rc == 0 and same_types  # the run used the helper's compiled code, no other types
    assert sorted(compiled) == ["_fill", "_pointer_rows"]  # _functional, _schedule: helper
    rc, compiled, same_types = _run(tmp_path, "own", ARCHSIM_COMPILE_HELPER="0")
    assert rc == 0 and same_types
    assert sorted(compiled) == ["_fill", "_functional", "_pointer_rows", "_schedule"]


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
