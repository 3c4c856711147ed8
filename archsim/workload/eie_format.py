"""Reader and writer of EIE's own storage format (the authors' simulator's data folder).

Folder layout (all little-endian): ``act.dat`` float32 activations, ``arithm.dat`` float32
codebook, ``ptr/ptrK.dat`` uint32 column pointers of PE K (padded columns + bias column + 1),
``spm/spmK.dat`` uint32 ``(code, z)`` pairs. See ``../shared/data/eie_alexnet_fc8/README.md``.
"""

from __future__ import annotations

import os
import re
import stat
import zlib
from pathlib import Path

import numpy as np

from archsim.errors import WorkloadError
from archsim.workload.sparse import QuantizedMatVec

__all__ = [
    "read_eie_dir",
    "write_eie_dir",
    "data_signature",
    "EieShapeError",
    "NEGATIVE_ACTIVATIONS",
]


class EieShapeError(WorkloadError):
    """The data holds more rows than the ``n_rows`` (layer outputs) asked for."""


def data_signature(folder: str | Path) -> tuple[tuple[str, object], ...]:
    """What identifies the files of ``folder``, ``ptr/`` and ``spm/``, sorted by name: size
    and CRC-32 of every file up to 64 KiB (activations, codebook, pointers, a small layer's
    entries), size, modification time and inode of larger ones (Alex-8's 64 ``spm`` files;
    about 2 ms for its 130 files, where reading and decoding them is 70 ms). A larger file
    rewritten in place gets a later modification time: the layer it holds takes longer than
    the clock's tick to simulate. It keys the per-process cache of layers read from the folder
    (empty when the folder is missing)."""
    out: list[tuple[str, object]] = []
    for sub in ("", "ptr", "spm"):
        try:
            with os.scandir(os.path.join(folder, sub)) as it:
                for entry in it:
                    st = entry.stat()
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    ident: object = (st.st_size, st.st_mtime_ns, st.st_ino)
                    if st.st_size <= _HASHED_BYTES:
                        fd = os.open(entry.path, os.O_RDONLY)
                        try:
                            ident = (st.st_size, zlib.crc32(os.read(fd, st.st_size + 1)))
                        finally:
                            os.close(fd)
                    out.append((f"{sub}/{entry.name}", ident))
        except OSError:
            continue
    return tuple(sorted(out))


#: files up to this size are identified by their content in ``data_signature``
_HASHED_BYTES = 1 << 16


def _read(path: Path, dtype: type, allow_empty: bool = False) -> np.ndarray:
    if not path.is_file():
        raise WorkloadError(f"{path}: required data file is missing")
    raw = path.read_bytes()
    size = np.dtype(dtype).itemsize
    if (len(raw) == 0 and not allow_empty) or len(raw) % size:
        what = "a multiple" if allow_empty else "a non-empty multiple"
        raise WorkloadError(f"{path}: malformed: {len(raw)} bytes is not {what} of {size}")
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)


def _finite(values: np.ndarray, path: Path) -> np.ndarray:
    """``values`` unchanged; a NaN or infinity (no fixed-point value) is a ``WorkloadError``."""
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise WorkloadError(
            f"{path}: malformed: value {values[bad[0]]} at index {bad[0]} ({bad.size} such); "
            "allowed: finite float32 numbers"
        )
    return values


#: why EIE's activations are >= 0: what every message refusing a negative one says
NEGATIVE_ACTIVATIONS = (
    "allowed: activations >= 0 (EIE broadcasts only activations > 0, as the authors' "
    "simulator does (nzfetch.cpp): its inputs are a ReLU's outputs)"
)


def _non_negative(values: np.ndarray, path: Path) -> np.ndarray:
    """``values`` unchanged; a negative one is a ``WorkloadError`` naming ``path``."""
    bad = np.flatnonzero(values < 0)
    if bad.size:
        raise WorkloadError(
            f"{path}: value {values[bad[0]]} at index {bad[0]} ({bad.size} such) is negative; "
            + NEGATIVE_ACTIVATIONS
        )
    return values


def _pe_files(folder: Path, stem: str) -> list[Path]:
    sub = folder / stem
    if not sub.is_dir():
        raise WorkloadError(f"{sub}: required folder is missing")
    found = {}
    for p in sub.glob(f"{stem}*.dat"):
        m = re.fullmatch(rf"{stem}(\d+)\.dat", p.name)
        if m:
            found[int(m.group(1))] = p
    n = len(found)
    if n == 0 or sorted(found) != list(range(n)):
        raise WorkloadError(f"{sub}: expected {stem}0.dat .. {stem}N-1.dat, found {sorted(found)}")
    return [found[k] for k in range(n)]


#: codebook entries a layer can index (``QuantizedMatVec.codes`` is uint8)
_MOST_CODES = 256

#: bytes a model holds per output row of a layer (codes, reference and bound in float64, the
#: fixed-point output): the most rows a folder may address follows from the memory limit
_BYTES_PER_ROW = 64


def _most_rows() -> int:
    from archsim.limits import limit

    return int(limit("ARCHSIM_MAX_MEMORY_BYTES")) // _BYTES_PER_ROW


def read_eie_dir(
    folder: str | Path, name: str = "eie_layer", n_rows: int | None = None
) -> QuantizedMatVec:
    """Decode an EIE data folder into a hardware-independent layer.

    ``n_rows`` (outputs) is not stored in the format; when omitted it is the last row with a
    non-zero weight or bias, plus one.
    """
    folder = Path(folder)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "data folder not found"
        raise WorkloadError(
            f"{folder}: {what}; allowed: a folder in EIE's format (act.dat, arithm.dat, ...)"
        )
    act_file = folder / "act.dat"
    act = _non_negative(_finite(_read(act_file, np.float32), act_file), act_file)
    codebook = _finite(_read(folder / "arithm.dat", np.float32), folder / "arithm.dat")
    if codebook[0] != 0.0:
        raise WorkloadError(f"{folder / 'arithm.dat'}: codebook entry 0 must be 0.0 (padding)")
    if codebook.size > _MOST_CODES:
        raise WorkloadError(
            f"{folder / 'arithm.dat'}: codebook has {codebook.size} entries; allowed: at most "
            f"{_MOST_CODES} (a layer's codes are 8-bit)"
        )
    ptr_files, spm_files = _pe_files(folder, "ptr"), _pe_files(folder, "spm")
    if len(ptr_files) != len(spm_files):
        raise WorkloadError(
            f"{folder}: {len(ptr_files)} ptr files but {len(spm_files)} spm files; must match"
        )
    n_pes = len(ptr_files)
    n_cols = act.size
    cols_padded = -(-n_cols // n_pes) * n_pes
    rows_all, cols_all, codes_all = [], [], []
    for k, (pf, sf) in enumerate(zip(ptr_files, spm_files, strict=True)):
        ptr = _read(pf, np.uint32).astype(np.int64)
        spm = _read(sf, np.uint32, allow_empty=True)
        if ptr.size != cols_padded + 2:
            raise WorkloadError(
                f"{pf}: shape mismatch: {ptr.size} pointers, expected {cols_padded + 2} for "
                f"{n_cols} activations on {n_pes} PEs"
            )
        if ptr[0] != 0 or np.any(np.diff(ptr) < 0) or spm.size != 2 * ptr[-1]:
            raise WorkloadError(
                f"{pf}: malformed: pointers must start at 0, not decrease, and end at the "
                f"{spm.size // 2} entries of {sf.name}"
            )
        code, z = spm[0::2].astype(np.int64), spm[1::2].astype(np.int64)
        if code.size and code.max() >= codebook.size:
            raise WorkloadError(
                f"{sf}: code {code.max()} outside the {codebook.size}-entry codebook"
            )
        col = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
        step = np.cumsum(z + 1)
        start = np.concatenate([[0], step])[ptr[:-1]]
        cursor = step - np.repeat(start, np.diff(ptr)) - 1
        real = code != 0
        rows_all.append(k + n_pes * cursor[real])
        cols_all.append(col[real])
        codes_all.append(code[real])
    rows = np.concatenate(rows_all)
    cols = np.concatenate(cols_all)
    codes = np.concatenate(codes_all).astype(np.uint8)
    if np.any((cols >= n_cols) & (cols != cols_padded)):
        raise WorkloadError(f"{folder}: entries in padding columns beyond the {n_cols} inputs")
    is_bias = cols == cols_padded
    inferred = int(rows.max()) + 1 if rows.size else 0
    most = _most_rows()
    if inferred > most:
        raise WorkloadError(
            f"{folder}: malformed: data has a row {inferred - 1} (a corrupt z, rows skipped, in "
            f"spm/); allowed: rows up to {most - 1} (ARCHSIM_MAX_MEMORY_BYTES / "
            f"{_BYTES_PER_ROW} bytes per output row)"
        )
    if n_rows is None:
        n_rows = inferred
    elif inferred > n_rows:
        raise EieShapeError(
            f"{folder}: shape mismatch: data has a row {inferred - 1} but outputs is {n_rows}; "
            f"allowed: outputs >= {inferred} (or leave outputs out)"
        )
    bias_codes = np.zeros(n_rows, dtype=np.uint8)
    bias_codes[rows[is_bias]] = codes[is_bias]
    w_rows, w_cols, w_codes = rows[~is_bias], cols[~is_bias], codes[~is_bias]
    # column-major order; each PE's entries are already in it, so a stable sort (timsort)
    # only merges the PEs' runs
    order = np.argsort(w_cols * np.int64(max(n_rows, 1)) + w_rows, kind="stable")
    indptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(w_cols, minlength=n_cols), out=indptr[1:])
    return QuantizedMatVec(
        name=name,
        n_rows=n_rows,
        n_cols=n_cols,
        indptr=indptr,
        row_idx=w_rows[order].astype(np.int32),
        codes=w_codes[order],
        codebook=codebook,
        bias_codes=bias_codes,
        activations=act,
    )


def write_eie_dir(folder: str | Path, layer: QuantizedMatVec, encoded: object) -> None:
    """Write ``layer`` encoded by :func:`archsim.datapath.eie_encode.encode_eie` in EIE's format."""
    folder = Path(folder)
    (folder / "ptr").mkdir(parents=True, exist_ok=True)
    (folder / "spm").mkdir(parents=True, exist_ok=True)
    layer.activations.astype("<f4").tofile(folder / "act.dat")
    layer.codebook.astype("<f4").tofile(folder / "arithm.dat")
    for k in range(encoded.num_pes):  # type: ignore[attr-defined]
        ptr, code, z = encoded.pe_arrays(k)  # type: ignore[attr-defined]
        ptr.astype("<u4").tofile(folder / "ptr" / f"ptr{k}.dat")
        pairs = np.empty(2 * code.size, dtype="<u4")
        pairs[0::2], pairs[1::2] = code, z
        pairs.tofile(folder / "spm" / f"spm{k}.dat")
