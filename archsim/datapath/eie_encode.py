"""EIE encoder: interleave W's rows over N PEs and store each PE's slice as CSC.

Entry = (v: codebook index, z: zeros skipped before it within the PE's rows). A run of more than
``2**relative_index_bits - 1`` zeros is bridged by padding entries (v = 0, z = max), each of which
advances the row cursor by ``2**relative_index_bits``. Columns are padded with empty columns to a
multiple of N (activation j lives in PE j mod N) and one bias column follows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.numba_cache import nb

__all__ = ["EieEncoded", "encode_eie"]


@dataclass(frozen=True, eq=False)
class EieEncoded:
    """Per-PE CSC arrays, concatenated over PEs (PE k owns ``base[k]:base[k+1]``)."""

    num_pes: int
    relative_index_bits: int
    n_cols: int  # logical input columns
    cols_padded: int  # columns padded to a multiple of num_pes; the bias column has this index
    col_ptr: np.ndarray  # int32 (cols_padded + 2, num_pes): PE i's column c starts at [c, i]
    base: np.ndarray  # int64 (num_pes + 1)
    code: np.ndarray  # uint8 per entry (0 = padding)
    z: np.ndarray  # uint8 per entry
    local_row: np.ndarray  # int32 per entry: row cursor within the PE
    real_cum: np.ndarray  # int32 (int64 past 2**31 entries), entries + 1: prefix count of real
    # (code != 0) entries

    @property
    def ptr(self) -> np.ndarray:
        """int32 (num_pes, cols_padded + 2): each PE's local entry address of each column start
        (a transposed view of ``col_ptr``, which keeps one column's pointers adjacent)."""
        return self.col_ptr.T

    @property
    def entries_per_pe(self) -> np.ndarray:
        """Stored entries (padding included) per PE."""
        return np.diff(self.base)

    @property
    def total_entries(self) -> int:
        """Stored entries over all PEs."""
        return int(self.base[-1])

    def pe_arrays(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pointers, codes, z) of PE ``k`` as EIE's files store them."""
        lo, hi = int(self.base[k]), int(self.base[k + 1])
        return np.ascontiguousarray(self.col_ptr[:, k]), self.code[lo:hi], self.z[lo:hi]


#: largest pointer, row index and real-entry count the int32 arrays hold
INT32_MAX = 2**31 - 1


# The kernels below are written as plain index loops on purpose: array expressions (slices
# iterated over, ``np.full``, ``.max()``, ``np.cumsum``) make numba compile each one's
# implementation on first use, 4.0 s instead of 0.9 s for ``_pointers`` on a cold cache.


@nb.njit(cache=True)
def _count_column(rows, lo, hi, num_pes, max_jump, last, counts):  # pragma: no cover
    """Add the entries (padding included) of ``rows[lo:hi]`` (one column) to ``counts``."""
    for i in range(lo, hi):
        r = rows[i]
        pe = r % num_pes
        lr = r // num_pes
        counts[pe] += (lr - last[pe] - 1) // max_jump + 1
        last[pe] = lr
    for i in range(lo, hi):
        last[rows[i] % num_pes] = -1


@nb.njit(cache=True)
def _pointers(
    n_cols, cols_padded, indptr, row_idx, bias_rows, num_pes, max_jump
):  # pragma: no cover
    """(col_ptr, base): ``col_ptr[c, pe]`` is the local address where column ``c``'s entries
    start in PE ``pe`` (the entry count of every column, padding entries included, summed in
    column order); ``base`` is empty when a PE would hold more than ``INT32_MAX`` entries."""
    col_ptr = np.zeros((cols_padded + 2, num_pes), dtype=np.int32)
    last = np.empty(num_pes, dtype=np.int64)
    for pe in range(num_pes):
        last[pe] = -1
    for col in range(n_cols):
        _count_column(
            row_idx, indptr[col], indptr[col + 1], num_pes, max_jump, last, col_ptr[col + 1]
        )
    _count_column(bias_rows, 0, bias_rows.size, num_pes, max_jump, last, col_ptr[cols_padded + 1])
    running = np.zeros(num_pes, dtype=np.int64)  # summed in int64: an overflow shows
    for c in range(1, cols_padded + 2):
        row = col_ptr[c]
        for pe in range(num_pes):
            running[pe] += row[pe]
            row[pe] = running[pe]
    base = np.zeros(num_pes + 1, dtype=np.int64)
    for pe in range(num_pes):  # the last pointer is each PE's largest
        if running[pe] > INT32_MAX:
            return col_ptr, np.zeros(0, dtype=np.int64)
        base[pe + 1] = base[pe] + running[pe]
    return col_ptr, base


@nb.njit(cache=True)
def _fill_column(rows, vals, lo, hi, num_pes, max_jump, last, write, code, z, local_row):
    """Write the entries of ``rows[lo:hi]`` (one column), padding first where a gap is longer
    than ``max_jump``: code 0, z = max_jump - 1, the row cursor advanced by ``max_jump``."""
    for i in range(lo, hi):  # pragma: no cover - compiled
        r = rows[i]
        pe = r % num_pes
        lr = r // num_pes
        pos = write[pe]
        d = lr - last[pe] - 1
        npad = d // max_jump
        cursor = last[pe]
        for _ in range(npad):
            cursor += max_jump
            local_row[pos] = cursor
            pos += 1
        code[pos] = vals[i]
        z[pos] = d - npad * max_jump
        local_row[pos] = lr
        write[pe] = pos + 1
        last[pe] = lr
    for i in range(lo, hi):
        last[rows[i] % num_pes] = -1


@nb.njit(cache=True)
def _fill(
    n_cols, indptr, row_idx, codes, bias_rows, bias_vals, num_pes, max_jump, base
):  # pragma: no cover
    total = base[num_pes]
    write = np.empty(num_pes, dtype=np.int64)  # next entry address per PE: columns in order
    last = np.empty(num_pes, dtype=np.int64)
    for pe in range(num_pes):
        write[pe] = base[pe]
        last[pe] = -1
    code = np.zeros(total, dtype=np.uint8)
    z = np.empty(total, dtype=np.uint8)
    pad_z = max_jump - 1
    for e in range(total):
        z[e] = pad_z
    local_row = np.zeros(total, dtype=np.int32)
    args = (num_pes, max_jump, last, write, code, z, local_row)
    for col in range(n_cols):
        _fill_column(row_idx, codes, indptr[col], indptr[col + 1], *args)
    _fill_column(bias_rows, bias_vals, 0, bias_rows.size, *args)
    return code, z, local_row


@nb.njit(cache=True)
def _real_prefix(code, out):  # pragma: no cover
    """``out[e + 1]``: real (code != 0) entries among the first ``e + 1`` (one pass, no
    boolean temporary: 0.2-0.3 s less than ``np.cumsum(code != 0)`` per 1,000-point sweep)."""
    run = 0
    out[0] = 0
    for e in range(code.size):
        if code[e] != 0:
            run += 1
        out[e + 1] = run
    return out


def encode_eie(
    n_rows: int,
    n_cols: int,
    indptr: np.ndarray,
    row_idx: np.ndarray,
    codes: np.ndarray,
    bias_codes: np.ndarray,
    num_pes: int,
    relative_index_bits: int,
) -> EieEncoded:
    """Encode a CSC weight matrix (rows ascending per column) for ``num_pes`` PEs."""
    max_jump = 1 << relative_index_bits
    cols_padded = -(-n_cols // num_pes) * num_pes
    if n_rows > INT32_MAX:
        raise OverflowError(f"{n_rows} rows: row indices are int32")
    bias_rows = np.flatnonzero(bias_codes).astype(np.int32)
    bias_vals = bias_codes[bias_rows].astype(np.uint8)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    row_idx = np.ascontiguousarray(row_idx, dtype=np.int32)  # the layers' own dtype: no copy
    col_ptr, base = _pointers(n_cols, cols_padded, indptr, row_idx, bias_rows, num_pes, max_jump)
    if base.size == 0:
        raise OverflowError(f"more than {INT32_MAX} entries in one PE")
    code, z, local_row = _fill(
        n_cols,
        indptr,
        row_idx,
        np.ascontiguousarray(codes, dtype=np.uint8),
        bias_rows,
        bias_vals,
        num_pes,
        max_jump,
        base,
    )
    wide = code.size > INT32_MAX
    real_cum = _real_prefix(code, np.empty(code.size + 1, np.int64 if wide else np.int32))
    return EieEncoded(
        num_pes=num_pes,
        relative_index_bits=relative_index_bits,
        n_cols=n_cols,
        cols_padded=cols_padded,
        col_ptr=col_ptr,
        base=base,
        code=code,
        z=z,
        local_row=local_row,
        real_cum=real_cum,
    )
