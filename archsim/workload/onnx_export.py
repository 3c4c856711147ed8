"""Write an imported ONNX model as a workload YAML whose fc and conv layers carry real tensors.

An fc layer with real weights and a measured, non-negative input (batch 1) gets an EIE data
folder (``<yaml stem>.data/<layer>/``, the format of ``eie_format``) holding its real weights
on a codebook and its measured activations; EIE (and every model that materialises fc layers
from ``data:``) then runs the real tensors. A conv layer with real weights and a measured,
non-negative input gets a folder of ``weights.npy`` and ``activations.npy``
(:func:`~archsim.workload.conv.write_conv_dir`) that SCNN and DCNN run. Other layers keep the
measured densities and are materialised as seeded synthetic tensors; the workload's ``source``
and description say which is which.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import yaml

from archsim.datapath.eie_encode import encode_eie
from archsim.errors import WorkloadError, os_reason
from archsim.output import first_missing_folder
from archsim.workload.conv import write_conv_dir
from archsim.workload.eie_format import write_eie_dir
from archsim.workload.materialize import layer_rng, quantize_to_codebook
from archsim.workload.onnx import OnnxImport, unique_name
from archsim.workload.sparse import QuantizedMatVec

__all__ = ["check_data_folder", "real_matvec", "write_workload"]


def _csc(codes_dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cols, rows = np.nonzero(codes_dense.T)
    indptr = np.zeros(codes_dense.shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=codes_dense.shape[1]), out=indptr[1:])
    return indptr, rows.astype(np.int32), codes_dense.T[cols, rows].astype(np.uint8)


def real_matvec(
    name: str,
    weights: np.ndarray,
    bias: np.ndarray | None,
    activations: np.ndarray,
    codebook_entries: int = 16,
) -> tuple[QuantizedMatVec, str]:
    """A :class:`QuantizedMatVec` of real (outputs, inputs) weights, and how it was coded.

    Weights with at most ``codebook_entries - 1`` distinct non-zero values (a weight-shared
    model, e.g. from ``archsim compress``) keep them exactly as the codebook; otherwise weights
    and bias are shared by archsim's k-means (seeded by the layer name). A bias is rounded to
    the nearest codebook value, as EIE stores it in the weight codebook.
    """
    w = np.asarray(weights, dtype=np.float32)
    distinct = np.unique(w[w != 0])
    b = np.zeros(w.shape[0], np.float32) if bias is None else np.asarray(bias, np.float32)
    if distinct.size <= codebook_entries - 1:
        codebook = np.zeros(codebook_entries, dtype=np.float32)
        codebook[1 : distinct.size + 1] = distinct
        codes = np.zeros(w.shape, dtype=np.uint8)
        codes[w != 0] = np.searchsorted(distinct, w[w != 0]).astype(np.uint8) + 1
        how = f"real weights, exact {distinct.size}-value codebook"
        if distinct.size:
            mids = (distinct[1:] + distinct[:-1]) / 2
            bias_codes = np.where(b != 0, np.searchsorted(mids, b) + 1, 0).astype(np.uint8)
        else:
            bias_codes = np.zeros(w.shape[0], np.uint8)
        if np.any(b != 0):
            how += " (bias rounded to it)"
    else:
        nz = w != 0
        values = np.concatenate([w[nz], b[b != 0]])
        codebook, all_codes = quantize_to_codebook(values, codebook_entries, layer_rng(0, name))
        codes = np.zeros(w.shape, dtype=np.uint8)
        codes[nz] = all_codes[: int(nz.sum())]
        bias_codes = np.zeros(w.shape[0], np.uint8)
        bias_codes[b != 0] = all_codes[int(nz.sum()) :]
        how = f"real weights shared by archsim k-means ({codebook_entries}-entry codebook)"
    indptr, rows, vals = _csc(codes)
    layer = QuantizedMatVec(
        name=name,
        n_rows=w.shape[0],
        n_cols=w.shape[1],
        indptr=indptr,
        row_idx=rows,
        codes=vals,
        codebook=codebook,
        bias_codes=bias_codes,
        activations=np.asarray(activations, dtype=np.float32).reshape(-1),
    )
    return layer, how


def _folder_name(name: str, used: set[str]) -> str:
    # at most 100 characters: a 5,000-character node name is no folder name ("File name too
    # long"); names cut alike are told apart by unique_name
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:100].strip("._") or "layer"
    return unique_name(base, used, sep="_")


_MARKER = ".archsim-import"


def check_data_folder(out: str | Path) -> None:
    """Refuse ``-o out`` when its ``<stem>.data`` folder exists and an earlier import did not
    write it (``write_workload`` would replace it); the CLI asks before importing."""
    out = Path(out).resolve()
    _check_data_dir(out, out.parent / f"{out.stem}.data")


def _check_data_dir(out: Path, data_dir: Path) -> None:
    """Refuse a ``<stem>.data`` that an earlier import did not write: replacing it would
    delete the user's files. Ours: it holds the import marker, or (written before the marker
    existed) ``out`` is a workload whose layers point into it."""
    if not data_dir.exists() and not data_dir.is_symlink():
        return
    if data_dir.is_dir() and not data_dir.is_symlink():
        if (data_dir / _MARKER).is_file():
            return
        try:
            if out.is_file() and f"data: {data_dir.name}/" in out.read_text(errors="replace"):
                return
        except OSError:
            pass
    raise WorkloadError(
        f"{out}: -o: its data folder {data_dir} exists and was not written by archsim import "
        "onnx; allowed: another -o, or move that folder away"
    )


def write_workload(imp: OnnxImport, out: str | Path, codebook_entries: int = 16) -> list[str]:
    """Write ``out`` (YAML) and its ``<stem>.data/`` folder atomically; returns one line per
    layer saying which tensors the simulators will use. A ``<stem>.data/`` an earlier import
    wrote is replaced (removed when this model has no real tensors); any other is refused."""
    out = Path(out).resolve()
    if out.is_dir():
        raise WorkloadError(f"{out}: -o: is a folder; allowed: a .yaml file path")
    data_name = f"{out.stem}.data"
    _check_data_dir(out, out.parent / data_name)
    made = first_missing_folder(out)  # removed again if the write fails
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:
        raise WorkloadError(f"{out}: cannot create: {os_reason(exc)}") from None
    aside = tmp / f"{data_name}.old"  # an earlier import's data folder, until the swap is done
    done = False
    used: set[str] = set()
    layers, lines = [], []
    real_names: list[str] = []
    try:
        for spec in imp.spec.layers:
            d = spec.model_dump(mode="json", exclude_defaults=True)
            d["kind"] = spec.kind
            t = imp.tensors[spec.name]
            acts = t.activations
            usable = t.weights is not None and acts is not None and bool(np.all(acts >= 0))
            real = (
                usable
                and spec.kind == "fc"
                and getattr(spec, "batch", 1) == 1
                and acts.size == spec.inputs
            )
            if usable and spec.kind == "conv" and acts.shape == spec.input_shape:
                folder = _folder_name(spec.name, used)
                write_conv_dir(tmp / data_name / folder, t.weights, acts)
                d["data"] = f"{data_name}/{folder}"
                real_names.append(spec.name)
                lines.append(
                    f"{spec.name}: real weights ({t.weight_source}) and measured activations "
                    "(conv data folder)"
                )
            elif real:
                layer, how = real_matvec(spec.name, t.weights, t.bias, acts, codebook_entries)
                folder = _folder_name(spec.name, used)
                enc = encode_eie(
                    layer.n_rows,
                    layer.n_cols,
                    layer.indptr,
                    layer.row_idx,
                    layer.codes,
                    layer.bias_codes,
                    1,
                    4,
                )
                write_eie_dir(tmp / data_name / folder, layer, enc)
                d["data"] = f"{data_name}/{folder}"
                real_names.append(spec.name)
                lines.append(f"{spec.name}: {how}; measured activations (EIE data folder)")
            else:
                lines.append(f"{spec.name}: seeded synthetic tensors at the densities above")
            layers.append(d)
        doc = {
            "schema_version": 1,
            "name": imp.spec.name,
            "source": f"{imp.spec.source}; real tensors (data folders): "
            f"{', '.join(real_names) or 'none'}; other layers: seeded synthetic tensors at the "
            "recorded densities",
            "description": imp.spec.description + ". Tensors used -- " + "; ".join(lines),
            "layers": layers,
        }
        (tmp / out.name).write_text(yaml.safe_dump(doc, sort_keys=False, width=100))
        if (tmp / data_name).is_dir():
            (tmp / data_name / _MARKER).write_text("written by archsim import onnx\n")
        _swap_in(tmp / data_name, out.parent / data_name, aside, tmp / out.name, out)
        done = True
    except OSError as exc:
        kept = f"; the earlier {data_name}/ is kept at {aside}" if aside.exists() else ""
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise WorkloadError(
            f"{out}: cannot write: {os_reason(exc)}{kept}; allowed: a writable folder with room "
            "for it"
        ) from None
    finally:
        if done or not aside.exists():  # an earlier data folder goes only after success
            shutil.rmtree(tmp, ignore_errors=True)
    return lines


def _swap_in(new_data: Path, data: Path, aside: Path, new_yaml: Path, yaml_path: Path) -> None:
    """Put ``new_data`` (when written) at ``data``, then ``new_yaml`` at ``yaml_path``. An
    existing ``data`` (an earlier import's) waits at ``aside`` and is moved back if a step
    fails, so a failed write leaves the earlier YAML and data folder as they were; on a failure
    to move it back it stays at ``aside``."""
    moved = placed = False
    try:
        if data.is_dir():
            os.replace(data, aside)
            moved = True
        if new_data.is_dir():
            os.replace(new_data, data)
            placed = True
        os.replace(new_yaml, yaml_path)
    except BaseException:
        if placed:
            os.replace(data, new_data)
        if moved:
            os.replace(aside, data)
        raise
