"""Measure each layer's input activations by running the model in onnxruntime.

Default input (documented in the README): one batch of uniform [0, 1) values drawn with
``numpy.random.default_rng(0)`` in the data input's shape. A user ``.npy`` must have the data
input's shape, or that shape without the batch dimension (one sample).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from archsim.errors import WorkloadError, one_line
from archsim.workload.onnx_graph import OnnxGraph

__all__ = ["DEFAULT_INPUT", "load_input", "measure_activations"]

DEFAULT_INPUT = "uniform [0, 1) values, numpy.random.default_rng(0), one batch"


def load_input(g: OnnxGraph, npy: str | Path | np.ndarray | None) -> tuple[np.ndarray, str]:
    """(input array of the first data input's shape, its provenance)."""
    name, shape = next(iter(g.inputs.items()))
    from archsim.limits import limit

    cap = limit("ARCHSIM_MAX_MEMORY_BYTES")
    if 4 * math.prod(shape) > cap:
        raise WorkloadError(
            f"{g.path}: input {name!r} of shape {tuple(shape)} needs {4 * math.prod(shape):.3g} "
            f"bytes for one batch; allowed: up to {cap:.3g} (ARCHSIM_MAX_MEMORY_BYTES; or a "
            "smaller --batch / --input-shape, or `archsim import onnx --no-measure`)"
        )
    big = max(g.shapes, key=lambda t: math.prod(g.shapes[t]), default=None)
    if big is not None and 4 * math.prod(g.shapes[big]) > cap:  # a tensor the run makes
        raise WorkloadError(
            f"{g.path}: tensor {big!r} of shape {tuple(g.shapes[big])} needs "
            f"{4 * math.prod(g.shapes[big]):.3g} bytes to measure densities; allowed: up to "
            f"{cap:.3g} (ARCHSIM_MAX_MEMORY_BYTES; or `archsim import onnx --no-measure`)"
        )
    if npy is None:
        return np.random.default_rng(0).random(shape, dtype=np.float32), DEFAULT_INPUT
    where = "<array>"
    if not isinstance(npy, np.ndarray):
        where = str(npy)
        if Path(where).exists() and not Path(where).is_file():  # a FIFO: the read never ends
            raise WorkloadError(f"{where}: not a regular file; allowed: a NumPy .npy array")
        try:  # mapped: a header's shape is checked before memory is allocated for it
            with np.errstate(over="ignore"):  # a shape past 2^63 elements: numpy's error below
                arr = np.load(where, allow_pickle=False, mmap_mode="r")
        except (OSError, ValueError, EOFError, OverflowError) as exc:  # EOFError: an empty file
            raise WorkloadError(
                f"{where}: cannot read as .npy ({one_line(exc) or type(exc).__name__}); "
                "allowed: a NumPy .npy array"
            ) from None
        if not isinstance(arr, np.ndarray):  # a .npz archive: np.load gives its members
            arr.close()
            raise WorkloadError(f"{where}: a .npz archive; allowed: one NumPy .npy array")
    else:
        arr = npy
    if arr.dtype.kind not in "biuf":
        raise WorkloadError(
            f"{where}: {arr.dtype} values; allowed: a numeric (bool, integer or float) array"
        )
    if tuple(arr.shape) == tuple(shape[1:]):
        arr = arr[None]
    if tuple(arr.shape) != tuple(shape):
        raise WorkloadError(
            f"{where}: shape {tuple(arr.shape)} does not fit input {name!r} of {g.path}; "
            f"allowed: {tuple(shape)} or {tuple(shape[1:])} (one sample)"
        )
    out = np.ascontiguousarray(arr, dtype=np.float32)
    if not np.all(np.isfinite(out)):
        raise WorkloadError(f"{where}: NaN or infinite input values; allowed: finite numbers")
    samples = arr.shape[0]
    return out, f"{where} ({samples} sample{'' if samples == 1 else 's'})"


def measure_activations(g: OnnxGraph, tensor_names: list[str], x: np.ndarray) -> dict:
    """Values of ``tensor_names`` when the model runs on ``x`` (onnxruntime, CPU, 1 thread)."""
    try:
        import onnxruntime as ort
        from onnx import helper
    except ImportError:  # pragma: no cover - depends on the environment
        raise WorkloadError(
            "measuring activations needs the onnx extra: pip install 'archsim[onnx]'"
        ) from None
    model = type(g.model)()
    model.CopyFrom(g.model)
    have = {o.name for o in model.graph.output}
    extra = [n for n in dict.fromkeys(tensor_names) if n not in have and n not in g.inputs]
    for n in extra:
        model.graph.output.append(helper.make_empty_tensor_value_info(n))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 4  # fatal only: its errors come back as one exception
    ort.set_default_logger_severity(4)
    try:
        sess = ort.InferenceSession(
            model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
        )
        name = next(iter(g.inputs))
        outs = sess.run(None, {name: x})
    except Exception as exc:
        msg = one_line(exc, 300)
        raise WorkloadError(
            f"{g.path}: onnxruntime cannot run the model: {msg}; allowed: a model onnxruntime "
            "runs, or `archsim import onnx --no-measure` (densities not measured)"
        ) from None
    got = {o.name: v for o, v in zip(sess.get_outputs(), outs, strict=True)}
    got[next(iter(g.inputs))] = x
    return {n: np.asarray(got[n]) for n in tensor_names if n in got}
