"""Progress bars: TTY only, silent when quiet or in CI; simulate reports each layer."""

from __future__ import annotations

import io

import pytest

import archsim
from archsim.progress import (
    ReportingLayers,
    layer_progress,
    progress_bar,
    progress_enabled,
)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_enabled_only_on_a_tty_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert progress_enabled(stream=_Tty())
    assert not progress_enabled(quiet=True, stream=_Tty())
    assert not progress_enabled(stream=io.StringIO())
    monkeypatch.setenv("CI", "true")
    assert not progress_enabled(stream=_Tty())
    monkeypatch.setenv("CI", "0")
    assert progress_enabled(stream=_Tty())


def test_bar_draws_on_stderr_and_disabled_is_silent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with progress_bar(3, "layers", enabled=False) as advance:
        advance(1, "a")
    assert capsys.readouterr() == ("", "")
    fake = _Tty()
    monkeypatch.setattr("sys.stderr", fake)
    with progress_bar(3, "layers", enabled=True) as advance:
        advance(2, "conv1")
        advance(1, "conv2")
    assert "layers" in fake.getvalue() and "3/3" in fake.getvalue()


def test_reporting_layers_and_passes() -> None:
    seen: list[tuple[int, int, str]] = []
    lay = ReportingLayers(["a", "b", "c"], lambda d, t, n: seen.append((d, t, n)))
    assert list(lay) == ["a", "b", "c"] and list(lay) == ["a", "b", "c"]  # 2nd walk: silent
    assert seen == [(1, 3, "0"), (2, 3, "1"), (3, 3, "2")]
    steps: list[tuple[int, str]] = []
    progress = layer_progress(lambda n=1, label="": steps.append((n, label)))
    for done in (1, 2, 3, 1, 2, 3):  # a run, then its baseline
        progress(done, 3, f"L{done}")
    assert sum(n for n, _ in steps) == 6 and steps[-1] == (1, "L3")


def test_simulate_reports_each_layer_with_baseline() -> None:
    wl = archsim.load_workload("eie_benchmarks")
    wl = wl.model_copy(update={"layers": wl.layers[7:]})
    calls: list[tuple[int, int, str]] = []
    hw = archsim.load_hardware("tiny_eie")
    res = archsim.simulate(hw, wl, progress=lambda *a: calls.append(a), baseline=hw)
    names = [lr.layer for lr in res.layers]
    assert calls == [(i + 1, len(names), n) for i, n in enumerate(names)] * 2
    assert res.total_cycles == archsim.simulate(hw, wl).total_cycles  # progress changes nothing


def test_terminal_table_fits_80_columns() -> None:
    from report_data import make_gpu_result

    from archsim.cli import format_layer_table

    wl = archsim.load_workload("eie_benchmarks")
    wl = wl.model_copy(update={"layers": wl.layers[7:]})
    for result in (archsim.simulate("tiny_eie", wl), make_gpu_result(6)):
        lines = format_layer_table(result).splitlines()
        # 80 columns when names have at most 17 characters; longer names widen the table
        # instead of being cut (ResNet's res2a_branch2a/b/c must stay distinct)
        longest = max(len(lr.layer) for lr in result.layers)
        assert max(map(len, lines)) <= 80 + max(0, longest - 17)
        exposed = result.total_cycles > sum(lr.cycles for lr in result.layers)
        # head, rule, rows, rule, 2 total lines (+1 saying why layer cycles do not add up)
        assert len(lines) == len(result.layers) + 5 + exposed
    assert "peak %" in format_layer_table(make_gpu_result(2))
