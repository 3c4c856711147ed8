"""Progress bars for long runs and sweeps: on a TTY or in Jupyter, silent when quiet or in CI.

``progress_bar`` yields an ``advance(n=1, label="")`` callable; when the bar is disabled the
callable does nothing, so callers never branch. ``layer_progress`` reports a workload's layers
as a simulator works through them (see ``archsim.simulate(..., progress=...)``).
``progress_callback`` gives notebook and script users one callable that fits both
``archsim.simulate(progress=...)`` and ``archsim.sweep(progress=...)``.

In Jupyter the bar is rich's live display, an ipywidgets ``Output`` (``pip install
"archsim[notebook]"``); without ipywidgets a notebook shows no bar rather than warnings.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, Protocol

__all__ = [
    "Advance",
    "ProgressFn",
    "progress_enabled",
    "progress_bar",
    "layer_progress",
    "ReportingLayers",
    "in_notebook",
    "progress_callback",
    "check_progress",
]

#: ``progress(done, total, label)``: called after each finished item (e.g. a layer).
ProgressFn = Callable[[int, int, str], None]


def check_progress(fn: Any, call: str) -> None:
    """Refuse a ``progress=`` argument that cannot be called as ``call`` says (``"progress(done,
    total, layer_name)"``): an int or a one-argument lambda failed inside the run with a
    TypeError. None passes."""
    from archsim.errors import ConfigError

    if fn is None:
        return
    if not callable(fn):
        raise ConfigError("<api>", "progress", f"got {type(fn).__name__} {_shown(fn)}; allowed: "
                          f"None or a callable {call}")  # fmt: skip
    import inspect

    try:
        inspect.signature(fn).bind(*range(call.count(",") + 1))
    except ValueError:  # a callable whose signature Python cannot read (some builtins)
        return
    except TypeError:
        raise ConfigError("<api>", "progress", f"{_shown(fn)} cannot be called as {call}; "
                          f"allowed: None or a callable {call}") from None  # fmt: skip


def _shown(value: Any) -> str:
    from archsim.errors import shown_name

    return shown_name(repr(value))


class Advance(Protocol):
    """Moves a progress bar on by ``n`` items and shows ``label`` (e.g. the item's name)."""

    def __call__(self, n: int = 1, label: str = "") -> None: ...


def in_notebook() -> bool:
    """True inside a Jupyter kernel (a ZMQ IPython shell) that can show ipywidgets, the only
    place rich draws a live bar in a notebook."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    if type(shell).__name__ != "ZMQInteractiveShell":
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def progress_enabled(quiet: bool = False, stream: IO[str] | None = None) -> bool:
    """True when a bar is wanted: not ``quiet``, no ``CI`` variable, and ``stream`` is a TTY
    or this is a Jupyter kernel (:func:`in_notebook`).

    ``stream`` defaults to stderr, where the bar is drawn (stdout stays clean for tables).
    """
    if quiet or os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    if in_notebook():
        return True
    out = sys.stderr if stream is None else stream
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False


def _noop(n: int = 1, label: str = "") -> None:
    return None


def _columns() -> tuple[Any, ...]:
    """The bar's columns: description, bar, done/total, elapsed, eta, the current item."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return (
        TextColumn("{task.description}"),
        BarColumn(bar_width=None),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[label]}", style="dim"),
    )


def _console() -> Any:
    """stderr on a terminal; in Jupyter rich draws the bar as a widget in the cell instead."""
    from rich.console import Console

    return Console(file=sys.stderr)


@contextmanager
def progress_bar(total: int, description: str, enabled: bool) -> Iterator[Advance]:
    """A rich progress bar with ``total`` steps on stderr, removed when done.

    Yields ``advance(n=1, label="")``. With ``enabled`` false (see :func:`progress_enabled`)
    nothing is drawn and ``advance`` does nothing.
    """
    if not enabled or total <= 0:
        yield _noop
        return
    from rich.progress import Progress

    with Progress(*_columns(), console=_console(), transient=True, expand=False) as bar:
        task = bar.add_task(description, total=total, label="")

        def advance(n: int = 1, label: str = "") -> None:
            bar.update(task, advance=n, label=label[:32])

        yield advance


@contextmanager
def progress_callback(
    description: str, enabled: bool | None = None
) -> Iterator[Callable[..., None]]:
    """A bar driven by ``progress(done, total, label="")`` calls, as ``archsim.simulate`` and
    ``archsim.sweep`` make them; the bar is sized by the first call's ``total``.

    ``enabled`` defaults to :func:`progress_enabled` (a terminal or a notebook, not CI)::

        with progress_callback("sweep") as progress:
            frame = archsim.sweep(hw, wl, axes=..., progress=progress)
    """
    if enabled is None:
        enabled = progress_enabled()
    if not enabled:
        yield lambda done, total, label="": None
        return
    from rich.progress import Progress

    with Progress(*_columns(), console=_console(), transient=True, expand=False) as bar:
        task = bar.add_task(description, total=None, label="")

        def progress(done: int, total: int, label: str = "") -> None:
            bar.update(task, completed=done, total=total, label=label[:32])

        yield progress


def layer_progress(advance: Advance) -> ProgressFn:
    """Adapt a bar's ``advance`` to the ``progress(done, total, label)`` callback of simulate.

    A ``done`` that does not grow starts a new pass (simulate's baseline run counts from 1
    again); the bar keeps adding, so give it the total of all passes.
    """
    last = [0]

    def progress(done: int, total: int, label: str) -> None:
        step = done - last[0] if done > last[0] else done
        last[0] = done
        advance(step, label)

    return progress


class ReportingLayers(list):  # type: ignore[type-arg]
    """A workload's list of layers that calls ``progress(done, total, name)`` as it is walked.

    A simulator's ``for spec in workload.layers`` loop asks for the next layer when it has
    finished the previous one, so that is when the previous layer is reported done (the last
    one when the loop ends). Only the first complete walk reports; later walks are silent.
    """

    def __init__(self, layers: list[Any], progress: ProgressFn) -> None:
        super().__init__(layers)
        self._progress: ProgressFn | None = progress

    def __iter__(self) -> Iterator[Any]:
        progress, self._progress = self._progress, None
        if progress is None:
            yield from super().__iter__()
            return
        total = len(self)
        for i, layer in enumerate(super().__iter__()):
            yield layer
            progress(i + 1, total, str(getattr(layer, "name", i)))
