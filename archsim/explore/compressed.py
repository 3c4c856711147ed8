"""Deep Compression as sweep axes: ``compress.*`` values turn one ONNX model into workloads.

A sweep whose ``workload`` is an ``.onnx`` file may vary ``compress.density`` (fc and conv),
``compress.fc_density``, ``compress.conv_density`` (fractions kept, in (0, 1]),
``compress.bits``, ``compress.fc_bits`` and ``compress.conv_bits`` (codebook bits, 1-8). Each
distinct setting prunes and shares the model (``archsim.compress``, no fine-tuning), imports
the result with its real tensors and, when the spec has an ``evaluation`` set, measures the
compressed model's top-1 accuracy with onnxruntime (the point's ``accuracy`` column).

Built models live in ``$ARCHSIM_CACHE_DIR/compressed`` (default: the user cache directory),
one folder per hash of (model bytes, setting, evaluation files, archsim version), so re-runs
and resumed sweeps reuse them and the store keys stay the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from archsim.config.workload import WorkloadSpec
from archsim.errors import ConfigError, WorkloadError, one_line

__all__ = ["COMPRESS_AXES", "compress_axis", "check_compress_values", "compressed_workload"]

PREFIX = "compress."

#: axis -> the CompressionPlan fields it sets
COMPRESS_AXES: dict[str, tuple[str, ...]] = {
    "compress.density": ("fc_density", "conv_density"),
    "compress.fc_density": ("fc_density",),
    "compress.conv_density": ("conv_density",),
    "compress.bits": ("fc_bits", "conv_bits"),
    "compress.fc_bits": ("fc_bits",),
    "compress.conv_bits": ("conv_bits",),
}


def compress_axis(path: str) -> bool:
    """Whether ``path`` is a compression axis (``compress.``...)."""
    return path.startswith(PREFIX)


def check_compress_values(source: str, path: str, values: list[Any]) -> list[Any]:
    """Validate one ``compress.*`` axis: densities in (0, 1], bits integers 1-8."""
    where = f"axes.{path}"
    if path not in COMPRESS_AXES:
        raise ConfigError(
            source, where, f"unknown compression axis; allowed: {', '.join(COMPRESS_AXES)}"
        )
    out = []
    for v in values:
        if path.endswith("bits"):
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or v != int(v)
                or not 1 <= v <= 8
            ):
                raise ConfigError(source, where, f"{v!r} is not allowed; allowed: integers 1-8")
            out.append(int(v))
        else:
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 1:
                raise ConfigError(
                    source, where, f"{v!r} is not allowed; allowed: numbers in (0, 1]"
                )
            out.append(float(v))
    return out


def _cache_root() -> Path:
    env = os.environ.get("ARCHSIM_CACHE_DIR")
    if env:
        return Path(env) / "compressed"
    import platformdirs

    return Path(platformdirs.user_cache_dir("archsim", appauthor=False)) / "compressed"


def _digest(model: Path, setting: dict[str, Any], evaluation: tuple[Path, Path] | None) -> str:
    from archsim.provenance import model_fingerprint
    from archsim.simulate import archsim_version

    h = hashlib.sha256()
    for path in (model, *(evaluation or ())):
        h.update(path.read_bytes())
    h.update(json.dumps(setting, sort_keys=True).encode())
    # the code's fingerprint too, as sweep stores key points: a changed compressor, importer
    # or evaluation check under the same version number builds the point again
    h.update(archsim_version().encode() + model_fingerprint().encode())
    return h.hexdigest()[:20]


def _evaluation_array(path: Path, field: str, source: str) -> np.ndarray:
    """The numeric array in ``.npy`` file ``path`` (evaluation ``field``), at least 1-D."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            source, f"evaluation.{field}", f"{path}: cannot read as .npy ({one_line(exc, 120)}); "
            "allowed: a NumPy .npy array of numbers"
        ) from None  # fmt: skip
    if not isinstance(arr, np.ndarray) or arr.ndim == 0 or arr.dtype.kind not in "biuf":
        raise ConfigError(
            source, f"evaluation.{field}", f"{path}: an array of dtype "
            f"{getattr(arr, 'dtype', type(arr).__name__)} and shape {np.shape(arr)}; allowed: "
            "numbers (bool, int or float), one row per sample"
        )  # fmt: skip
    return arr


def _accuracy(model: Path, evaluation: tuple[Path, Path], source: str) -> float:
    """Top-1 accuracy of ``model`` on the evaluation inputs and labels (``.npy``)."""
    import onnxruntime as ort

    x = _evaluation_array(evaluation[0], "inputs", source)
    y = _evaluation_array(evaluation[1], "labels", source)
    if len(x) != len(y) or y.ndim != 1 or not len(y):
        raise ConfigError(
            source, "evaluation", f"{len(x)} inputs but labels of shape {y.shape}; allowed: "
            "inputs (n, ...) and labels (n,), n >= 1"
        )  # fmt: skip
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feed = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else -1 for d in feed.shape]
    x = x.astype(np.float32)
    if not np.isfinite(x).all():  # NaN inputs "scored" 0.1 on ten classes
        raise ConfigError(
            source, "evaluation.inputs", f"{evaluation[0]}: NaN or infinite values; allowed: "
            "finite numbers"
        )  # fmt: skip
    try:
        if shape and shape[0] == 1:  # a batch-1 graph: one sample at a time
            out = [sess.run(None, {feed.name: xi.reshape(shape)})[0] for xi in x]
            logits = np.concatenate([o.reshape(1, -1) for o in out])
        else:
            logits = sess.run(None, {feed.name: x.reshape([len(x), *shape[1:]])})[0]
    except (ValueError, RuntimeError) as exc:
        raise ConfigError(
            source, "evaluation.inputs", f"do not fit the model's input {feed.shape} "
            f"({str(exc).splitlines()[0]}); allowed: one sample per row"
        ) from None  # fmt: skip
    classes = logits.reshape(len(x), -1).shape[1]
    if y.dtype.kind not in "biu" or y.min() < 0 or y.max() >= classes:  # else a fake accuracy
        raise ConfigError(
            source, "evaluation.labels", f"{evaluation[1]}: labels of dtype {y.dtype} from "
            f"{y.min()} to {y.max()}; allowed: integer class indices 0 to {classes - 1} (the "
            "model's outputs)"
        )  # fmt: skip
    pred = logits.reshape(len(x), -1).argmax(axis=1)
    return float(np.mean(pred == y))


def _build(model: Path, setting: dict[str, Any], evaluation, folder: Path, source: str) -> None:
    from archsim.compress.model import CompressionPlan, compress_onnx
    from archsim.workload.onnx import read_onnx
    from archsim.workload.onnx_export import write_workload

    fields: dict[str, Any] = {}
    for axis, value in setting.items():
        fields.update(dict.fromkeys(COMPRESS_AXES[axis], value))
    built = folder / "model.onnx"
    try:
        compress_onnx(model, built, CompressionPlan(**fields))
        write_workload(read_onnx(built), folder / "workload.yaml")
    except WorkloadError as exc:  # named the cache's copy, not the user's model
        raise WorkloadError(str(exc).replace(str(built), str(model))) from None
    acc = _accuracy(built, evaluation, source) if evaluation else None
    (folder / "point.json").write_text(json.dumps({"setting": setting, "accuracy": acc}))


def compressed_workload(
    model: Path,
    setting: dict[str, Any],
    evaluation: tuple[Path, Path] | None,
    source: str = "<api>",
) -> tuple[WorkloadSpec, float | None]:
    """The workload of ``model`` compressed by ``setting`` (``compress.*`` axis -> value), and
    its accuracy on ``evaluation`` (inputs, labels) when given; built once, then cached."""
    from archsim.config.io import load_workload

    folder = _cache_root() / _digest(model, setting, evaluation)
    if not (folder / "point.json").is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
        try:
            _build(model, setting, evaluation, tmp, source)
            with contextlib.suppress(OSError):  # built meanwhile by another process: keep it
                tmp.rename(folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            with contextlib.suppress(OSError):  # a cache folder this failure left empty
                folder.parent.rmdir()
    acc = json.loads((folder / "point.json").read_text())["accuracy"]
    wl = load_workload(folder / "workload.yaml")
    name = ", ".join(f"{k.removeprefix(PREFIX)}={v}" for k, v in setting.items())
    return wl.model_copy(update={"name": f"{model.stem} ({name})"}), acc
