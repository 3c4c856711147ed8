"""Output folders written all-or-nothing, also when the folder is a mount point.

Files are first written into a hidden temporary folder *inside* the target folder, so every
rename stays on one filesystem (a Docker ``-v`` mount, an NFS share: renaming from the parent
would fail with "Invalid cross-device link"). Should a rename still fail across devices, the file
is copied next to its destination and renamed there, so a reader never sees half a file.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.errors import ConfigError, os_reason

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "RESULT_FILES",
    "check_out_dir",
    "check_out_file",
    "results_owner",
    "write_error",
    "first_missing_folder",
    "frame_to_parquet",
    "replace_after_writing",
    "write_outputs_atomically",
    "write_text_atomically",
]

_TMP_PREFIX = ".archsim-tmp-"

#: every file `archsim run`, `collective` and `train` may write into their folder: each removes
#: the ones it did not write (a re-run without --report or --trace, or another of the three
#: writing into the shared default folder, left the earlier results' page or traces behind)
RESULT_FILES = (
    "results.csv", "results.json", "report.html", "COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv",
    "DETAILED_ACCESS_REPORT.csv", "SRAM_TRACE_layer*.csv.gz",
)  # fmt: skip


def check_out_dir(
    text: str, option: str = "--out", *, results: bool = False, probe: bool = False
) -> Path:
    """The output folder named by ``text``; refuses an empty name or an existing non-folder.

    ``results`` (run, collective, train): also refuses a sweep's folder, whose page and
    tables the command's results.json and report.html would leave behind and replace (these
    three replace one another's results whole: they share the default ``archsim-out``).
    ``probe``: also refuses when nothing can be made where the folder is (a read-only mount,
    /sys), tried by making and removing an empty folder, so that a command refuses before it
    simulates."""
    if not text.strip():
        raise ConfigError(option, "", "empty folder name; allowed: a folder path, e.g. out")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(option, "", f"{path} exists and is not a folder; allowed: a folder")
    near = path if path.is_dir() else _nearest_folder(path, option, "a folder path")
    if results and (path / "sweep.json").is_file():
        allowed = "allowed: a new folder, or one that `archsim run`, `collective` or `train` wrote"
        problem = f"{path} holds an `archsim sweep` result (sweep.json); {allowed}"
        raise ConfigError(option, "", problem)
    if probe and near is not None:
        _probe_writable(near, option)
    return path


#: results.json top-level keys that say which command wrote it
_OWNER_KEYS = (("format_version", "run"), ("op", "collective"), ("rows", "collective"),
               ("steps", "train"), ("timeline", "train"))  # fmt: skip


def results_owner(folder: Path) -> str | None:
    """Which archsim command's results ``folder`` holds: ``sweep`` (a sweep.json), else
    ``run``, ``collective`` or ``train`` as its results.json's keys say; None when it holds
    neither file, or a results.json whose writer is unknown (unreadable, over 64 MiB, or
    another tool's)."""
    import json

    if (folder / "sweep.json").is_file():
        return "sweep"
    path = folder / "results.json"
    try:
        if not path.is_file() or path.stat().st_size > 64 << 20:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    return next((cmd for key, cmd in _OWNER_KEYS if key in data), None)


def write_error(folder: Path) -> OSError | None:
    """Why nothing can be made in ``folder`` (tried with an empty folder, removed at once, so
    nothing is left), or None when it can."""
    try:
        os.rmdir(tempfile.mkdtemp(dir=folder, prefix=".archsim-check-"))
    except OSError as exc:
        return exc
    return None


def _probe_writable(folder: Path, option: str) -> None:
    """Refuse ``folder`` when an empty folder cannot be made (and removed) in it."""
    exc = write_error(folder)
    if exc is not None:
        raise ConfigError(
            option, "", f"cannot write in {folder} ({os_reason(exc)}); allowed: a writable folder"
        )


def _nearest_folder(path: Path, option: str, allowed: str) -> Path | None:
    """The nearest existing folder above ``path`` (None: none exists); refused when that
    ancestor is a file, with ``allowed`` as what the option takes."""
    near = next((p for p in path.absolute().parents if p.exists()), None)
    if near is not None and not near.is_dir():
        raise ConfigError(option, "", f"{near} is a file; allowed: {allowed}")
    return near


def check_out_file(
    path: str | Path, option: str = "-o", inputs: Iterable[Path] = (), *, probe: bool = True
) -> Path:
    """``path``, refused when it names something that is not a regular file (a folder, a
    device such as /dev/null, a FIFO: replacing it would destroy it) or one of ``inputs``;
    ``probe``: also when no file can be made in its nearest existing folder (a read-only
    mount, /sys), tried by making and removing an empty folder there, so that a command refuses
    before its work, not after (a 25 s calibration fit, minutes of validate); a write itself
    learns that from the write."""
    target = Path(path)
    if target.exists() and not target.is_file():
        raise ConfigError(
            option, "", f"{target} exists and is not a regular file; allowed: a new file or a "
            "regular file to replace"
        )  # fmt: skip
    near = _nearest_folder(target, option, "a path inside a folder")
    if probe and near is not None:
        _probe_writable(near, option)
    for source in inputs:
        if target.exists() and Path(source).exists() and target.samefile(source):
            raise ConfigError(
                option, "", f"{target} is the input {source}; allowed: another file name"
            )
    return target


def first_missing_folder(path: Path) -> Path | None:
    """The outermost folder above ``path`` that does not exist yet (None: its folder does):
    what a writer that creates the folders removes again when its write fails."""
    missing = [p for p in Path(path).absolute().parents if not p.exists()]
    return missing[-1] if missing else None


def _remove_made(made: Path | None) -> None:
    """Remove the folders a failed writer created (``made``: the outermost; None: none)."""
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)


def write_text_atomically(
    path: str | Path, text: str, option: str = "-o", check: Callable[[Path], Any] | None = None
) -> Path:
    """Write ``text`` to ``path`` through a temporary file in its folder, renamed over it (no
    reader sees half a file, nothing is left behind on failure); mode 0644, as ``open`` under
    the usual umask gives (``mkstemp`` makes 0600). ``path`` must pass :func:`check_out_file`;
    ``check(temporary path)``, when given, must accept the file before it is renamed; the
    folders the write created are removed again when it fails."""
    target = check_out_file(path, option, probe=False)
    made = first_missing_folder(target)  # removed again when the write or the check fails
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        if check is not None:
            check(Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        _remove_made(made)
        raise
    return target


def replace_after_writing(target: Path, write: Callable[[Path], Any]) -> Path:
    """Call ``write(tmp)`` on ``.NAME.tmp`` beside ``target``, then rename it over ``target``.
    On any exception, a Ctrl-C included, the temporary file is deleted before the exception
    goes on: no half-written file is left behind. Returns ``target``."""
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def frame_to_parquet(
    frame: pd.DataFrame, path: str | Path, provenance: dict[str, Any] | None = None
) -> None:
    """Write ``frame`` (no index) as Parquet with ``provenance`` (default: the frame's
    ``attrs["provenance"]``, which sweeps set) in the schema metadata, readable with
    ``archsim.provenance.read_provenance``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from archsim.provenance import with_provenance

    # pandas stores a frame's attrs in the file: not a sweep's run counts and wall time,
    # which differ between runs of the same points (the file would not be reproducible)
    frame = frame.copy(deep=False)
    frame.attrs = {k: v for k, v in frame.attrs.items() if k != "counts"}
    table = pa.Table.from_pandas(frame, preserve_index=False)
    record = provenance if provenance is not None else frame.attrs.get("provenance")
    if record is not None:
        table = with_provenance(table, record)
    pq.write_table(table, path)


def _move(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``; across filesystems, copy beside ``dst`` and rename there."""
    try:
        os.replace(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        part = dst.with_name(f".{dst.name}.part")
        try:
            shutil.copyfile(src, part)
            os.replace(part, dst)
        finally:
            part.unlink(missing_ok=True)


def write_outputs_atomically(
    out_dir: Path,
    write: Callable[[Path], Iterable[str]],
    option: str = "--out",
    stale: Iterable[str] = (),
) -> list[Path]:
    """Call ``write(tmp)`` (which writes files into ``tmp`` and returns their names), then move
    them into ``out_dir``. On failure nothing new is left: no temporary folder, and no
    ``out_dir`` when this call created it. Returns the final paths. ``stale``: glob patterns
    of the command's other outputs; files matching them that this call did not write are
    removed once the new ones are in place (a re-run without --report, or without traces, left
    the previous run's report.html or SRAM traces beside its own results).
    """
    out_dir = check_out_dir(str(out_dir), option)
    made = first_missing_folder(out_dir / "_")  # out_dir or a parent: removed on failure
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=out_dir))
    except OSError as exc:
        _remove_made(made)
        raise ConfigError(option, "", f"cannot create {out_dir}: {os_reason(exc)}") from None
    target = out_dir
    try:
        names = list(write(tmp))
        for name in names:  # before any is moved: none or all of them land
            target = out_dir / name
            if target.exists() and not target.is_file():
                raise ConfigError(
                    option, "", f"{target} exists and is not a regular file; allowed: a folder "
                    "whose output names are free or regular files to replace"
                )  # fmt: skip
        for name in names:
            target = out_dir / name
            _move(tmp / name, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_made(made)
        raise ConfigError(
            option, "", f"cannot write {target}: {os_reason(exc)}; allowed: a writable "
            "folder with room for the outputs"
        ) from None  # fmt: skip
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_made(made)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    for pattern in stale:
        for old in out_dir.glob(pattern):
            if old.name not in names and old.is_file():
                old.unlink(missing_ok=True)
    return [out_dir / n for n in names]
