"""A fifth audit of sizes: an SCNN filter wider than the accumulator tried every super-tiling
(hours on a 500 x 500 plane), an EIE with many PEs passed the memory check and died in NumPy,
and an out-of-memory error was a traceback."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from archsim.cli import main
from archsim.limits import layer_memory_bytes


def _workload(tmp_path: Path, layer: str) -> Path:
    wl = tmp_path / "w.yaml"
    wl.write_text(f"schema_version: 1\nname: w\nsource: t\nlayers:\n  - {layer}\n")
    return wl


def _one_line(capsys: Any, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_an_scnn_filter_wider_than_the_accumulator_is_refused_at_once(tmp_path, capsys):
    # every split was tried before "a 1x1 input tile still does not fit": 8.5 s on this 80 x 80
    # plane, hours on a 500 x 500 one with a 50 x 50 filter
    wl = _workload(tmp_path, "{name: c2, kind: conv, c: 1, k: 1, h: 80, w: 80, r: 40, s: 40, "
                             "weight_density: 1.0, activation_density: 1.0}")  # fmt: skip
    err = _one_line(capsys, ["run", "scnn", str(wl), "-o", str(tmp_path / "o"), "-q"])
    want = (f"{wl}: layers.0: layer 'c2': one input pixel of its 40x40 filter at stride 1 "
            "reaches 1600 output positions, more than the accumulator's 1024 entries")  # fmt: skip
    assert want in err
    # at stride 2 a pixel reaches floor or ceil(65 / 2) rows and columns: the check took the
    # centre pixel only, 32 x 32 = 1,024 with pad 1, and the planner tried every split
    strided = _workload(tmp_path, "{name: s2, kind: conv, c: 1, k: 1, h: 300, w: 300, r: 65, "
                                  "s: 65, stride: 2, pad: 1, weight_density: 1.0, "
                                  "activation_density: 1.0}")  # fmt: skip
    err = _one_line(capsys, ["run", "scnn", str(strided), "-o", str(tmp_path / "o"), "-q"])
    assert "its 65x65 filter at stride 2 reaches 1089 output positions" in err
    # a window that fits still runs (one pixel's 30 x 30 = 900 positions of 1,024)
    fits = _workload(tmp_path, "{name: c3, kind: conv, c: 1, k: 1, h: 40, w: 40, r: 30, s: 30, "
                               "weight_density: 1.0, activation_density: 1.0}")  # fmt: skip
    assert main(["run", "scnn", str(fits), "-o", str(tmp_path / "p"), "-q", "--no-report"]) == 0


def test_eie_memory_estimate_counts_the_per_pe_tables(tmp_path, capsys):
    from archsim.config.workload import FcLayer

    layer = FcLayer(kind="fc", name="f", inputs=1_000_000, outputs=4096, weight_density=1e-6,
                    activation_density=1.0)  # fmt: skip
    one, many = layer_memory_bytes("eie", layer, 1), layer_memory_bytes("eie", layer, 4096)
    # two int32 pointers and a flag per non-zero activation and PE: 9 x 1e6 x 4096 bytes more
    assert many - one == 9 * (1_000_000 + 1) * 4095
    assert layer_memory_bytes("scnn", layer) < one  # the per-PE tables are EIE's
    wl = _workload(tmp_path, "{name: fc2, kind: fc, inputs: 1000000, outputs: 4096, "
                             "weight_density: 1.0e-6, activation_density: 1.0}")  # fmt: skip
    err = _one_line(capsys, ["run", "eie", str(wl), "-o", str(tmp_path / "o"), "-q",
                             "--set", "pe_array.num_pes=4096"])  # fmt: skip
    assert f"{wl}: layers.0: layer 'fc2' needs about 3.69e+10 bytes of memory" in err
    assert not (tmp_path / "o").exists()


def test_running_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch):
    def exhausted(*args: Any, **kwargs: Any) -> None:
        raise MemoryError("Unable to allocate 15.3 GiB")

    monkeypatch.setattr(importlib.import_module("archsim.simulate"), "simulate", exhausted)
    err = _one_line(capsys, ["run", "tiny_eie", "-o", str(tmp_path / "o"), "-q"])
    # NumPy's text names the size asked for: an estimate's bug shows in it
    assert err.startswith("archsim: error: run: out of memory (Unable to allocate 15.3 GiB); "
                          "allowed: a smaller workload")  # fmt: skip
    assert not (tmp_path / "o").exists()
