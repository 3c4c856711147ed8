"""API arguments a run cannot use, refused in one line before anything runs: a ``progress=`` it
cannot call (an int, or a lambda of the wrong arity, was a TypeError from inside the layer
loop), an empty preset name."""

from __future__ import annotations

import pytest

import archsim
from archsim.progress import check_progress


@pytest.mark.parametrize(
    ("bad", "needle"),
    [(5, "progress: got int 5; allowed: None or a callable"),
     (lambda a: None, "cannot be called as progress(done, total, layer_name); allowed:")],
)  # fmt: skip
def test_simulate_refuses_a_progress_it_cannot_call(bad, needle) -> None:
    with pytest.raises(archsim.ConfigError) as exc:
        archsim.simulate("tiny_eie", "eie_benchmarks", progress=bad)
    assert "\n" not in str(exc.value) and str(exc.value).startswith("<api>: progress: ")
    assert needle in str(exc.value), exc.value


def test_sweep_refuses_a_progress_it_cannot_call(tmp_path) -> None:
    with pytest.raises(archsim.ConfigError, match=r"cannot be called as progress\(done, total\)"):
        archsim.sweep("tiny_eie", "eie_benchmarks", axes={"pe_array.num_pes": [2]},
                      n_jobs=1, out_dir=tmp_path / "s", progress=lambda done: None)  # fmt: skip
    assert not (tmp_path / "s").exists()


def test_callables_of_the_right_shape_pass() -> None:
    seen: list[tuple[int, int, str]] = []
    archsim.simulate("tiny_eie", "eie_benchmarks", progress=lambda *a: seen.append(a))
    assert seen and seen[-1][0] == seen[-1][1]  # the last call: all layers done
    for fn in (None, print, lambda d, t, label="": None, lambda d, t, *rest: None):
        check_progress(fn, "progress(done, total, layer_name)")
    check_progress(lambda d, t: None, "progress(done, total)")


@pytest.mark.parametrize("kind", ["hardware", "workload"])
def test_an_empty_preset_name_is_named_as_empty(kind) -> None:
    """`simulate("", ...)` said ": a folder, and no hardware preset has that name" (the empty
    name is the current folder to pathlib)."""
    args = ("", "alexnet") if kind == "hardware" else ("h100", " ")
    with pytest.raises(archsim.ConfigError) as exc:
        archsim.simulate(*args)
    text = str(exc.value)
    assert text.startswith(f"{kind}: an empty name ") and "allowed: a " in text, text
    assert "h100" in text if kind == "hardware" else "alexnet" in text


def test_messages_that_lacked_what_is_allowed() -> None:
    """From the third audit: each of these was one line without an ``allowed:`` part."""
    h100 = archsim.load_hardware("h100")
    cases = [
        (lambda: h100.with_overrides({"tensor_cores.instruction_mnk.0": 128}),
         "tensor_cores.instruction_mnk is a value set as a whole, not a section; allowed: "
         "tensor_cores.instruction_mnk=[64, 256, 16] with the item changed"),
        (lambda: archsim.load_hardware("scnn").with_overrides({"crossbar.inputs": 32}),
         "crossbar.inputs x outputs is 32 x 32; allowed: inputs = F*I = 16 multipliers"),
        (lambda: archsim.load_sweep(None),
         "<api>: sweep: got NoneType None; allowed: a sweep config, a sweep preset name"),
        (lambda: archsim.simulate("tiny_eie", "eie_benchmarks", seed=1.5),
         "<api>: seed: got 1.5; allowed: an integer from 0 to 2**63-1"),
    ]  # fmt: skip
    for call, needle in cases:
        with pytest.raises(archsim.ConfigError) as exc:
            call()
        assert "\n" not in str(exc.value) and needle in str(exc.value), exc.value


def test_a_sweep_folder_that_cannot_be_made_says_why_and_what_is_allowed(tmp_path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(archsim.ArchsimError) as exc:
        archsim.sweep("tiny_eie", "eie_benchmarks", axes={"pe_array.num_pes": [2]}, n_jobs=1,
                      out_dir=afile / "s")  # fmt: skip
    text = str(exc.value)
    assert "cannot create the sweep folder: Not a directory; allowed: a new or existing" in text


def test_to_json_writes_through_a_symlink(tmp_path) -> None:
    """The atomic write replaced a symlink at the path with a regular file; a plain write (as
    before) goes to the link's target."""
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("old")
    link.symlink_to(real)
    run = archsim.simulate("tiny_eie", "eie_benchmarks")
    run.to_json(link)
    assert link.is_symlink() and archsim.RunResult.from_json(real).total_cycles == run.total_cycles
