"""EIE encoder: interleave W's rows over N PEs and store each PE's slice as CSC.

Entry = (v: codebook index, z: zeros skipped before it within the PE's rows). A run of more than
``2**relative_index_bits - 1`` zeros is bridged by padding entries (v = 0, z = max), each of which
advances the row cursor by ``2**relative_index_bits``. Columns are padded with empty columns to a
multiple of N (activation j lives in PE j mod N) and one bias column follows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from archsim.numba_cache import nb

__all__ = ["EieEncoded", "encode_eie", "encode_eie_rows"]


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

    def pointers_only(self) -> EieEncoded:
        """This encoding without its per-entry arrays (codes, z, rows, real-entry prefix):
        what timing and memory fill need once the functional pass has run. A sweep keeps
        one PE count's layers this way (``simulate_eie``): at 16-64 PEs the pointers are a
        few MB where the entries are tens of MB per layer."""
        empty_u8, empty_i32 = np.empty(0, np.uint8), np.empty(0, np.int32)
        return replace(self, code=empty_u8, z=empty_u8, local_row=empty_i32, real_cum=empty_i32)

    def sizes_only(self) -> EieEncoded:
        """This encoding without its pointer table and per-entry arrays: the sizes (``base``,
        ``cols_padded``) that memory fill reads. ``simulate_eie`` keeps the pointer rows that
        timing reads apart (``EiePrepared.ptr_rows``)."""
        empty_ptr = np.empty((0, self.num_pes), np.int32)
        return replace(self.pointers_only(), col_ptr=empty_ptr)

    @property
    def has_entries(self) -> bool:
        """Whether the per-entry arrays are here (not a ``pointers_only`` copy)."""
        return self.code.size == self.total_entries

    def pe_arrays(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pointers, codes, z) of PE ``k`` as EIE's files store them."""
        if not self.has_entries:
            raise ValueError("a pointers_only() encoding has no entries to store")
        lo, hi = int(self.base[k]), int(self.base[k + 1])
        return np.ascontiguousarray(self.col_ptr[:, k]), self.code[lo:hi], self.z[lo:hi]


#: largest pointer, row index and real-entry count the int32 arrays hold
INT32_MAX = 2**31 - 1


# The kernels below are written as plain index loops on purpose, and allocate nothing: array
# expressions (slices iterated over, ``np.full``, ``.max()``, ``np.cumsum``) and every
# distinct ``np.zeros``/``np.empty`` signature make numba compile an implementation of its own
# on first use (0.06-0.5 s each on a cold cache); so do helper kernels (one per literal type
# of their arguments). The arrays come from NumPy, and the bias column is the loop's last.


@nb.njit(inline="always")  # inlined into the (cached) kernels: nothing of its own to cache
def _shift_of(n):  # pragma: no cover - compiled
    """(k, True) when ``n == 2**k``, else (0, False). The encoding kernels divide by the row
    count per PE and by the largest relative jump for every entry; numba's int64 divide by a
    value known only at run time took most of their time. Row indices are >= 0 (CSC), so the
    PE division is the float64 quotient truncated (exact for a correctly rounded quotient of
    integers below 2**53) and the jump (``1 << relative_index_bits``) an arithmetic shift,
    which floors as ``//`` does."""
    k = 0
    while (1 << k) < n:
        k += 1
    return k, (1 << k) == n


@nb.njit(inline="always")
def _floor_jumps(d, max_jump, shift, pow2):  # pragma: no cover - compiled
    """``d // max_jump`` (floor), as a shift when ``max_jump == 2**shift`` (see ``_shift_of``)."""
    return (d >> shift) if pow2 else d // max_jump


@nb.njit(inline="always")
def _pe_row(r, num_pes, pes, shift, pow2):  # pragma: no cover - compiled
    """(PE, local row) of row ``r >= 0``: ``r % num_pes``, ``r // num_pes``; a mask and a shift
    where ``num_pes == 2**shift`` (``pow2``, see ``_shift_of``), else the float64 quotient
    truncated (``pes`` = ``float(num_pes)``)."""
    if pow2:
        return np.int64(r) & (num_pes - 1), np.int64(r) >> shift
    lr = np.int64(np.float64(r) / pes)
    return np.int64(r) - lr * num_pes, lr


@nb.njit(cache=True, error_model="numpy", nogil=True)
def _pointer_rows(
    n_cols, cols_padded, indptr, row_idx, bias_rows, num_pes, max_jump, wanted, out, last, run, base
):  # pragma: no cover - compiled
    """Rows ``wanted`` (sorted, distinct, within ``[0, cols_padded + 2)``) of the pointer
    table, written to ``out`` (len(wanted), num_pes): row ``c``, PE ``pe`` is the local
    address where column ``c``'s entries start in that PE, i.e. the entries (padding
    included) of the columns before ``c``, summed column by column in ``run`` (int64
    scratch, num_pes); the bias column comes after the padded ones. ``base``: PE ``pe`` owns
    ``base[pe]:base[pe + 1]``. False when a PE would hold more than ``INT32_MAX`` entries.
    ``last``: int64 scratch, num_pes."""
    pes = np.float64(num_pes)  # for _pe_row
    pe_shift, pe_pow2 = _shift_of(num_pes)
    shift, pow2 = _shift_of(max_jump)
    for pe in range(num_pes):
        last[pe] = -1
        run[pe] = 0
    w = 0
    for c in range(cols_padded + 2):  # row c: the entries of the columns before c
        if w < wanted.size and wanted[w] == c:
            row = out[w]
            for pe in range(num_pes):
                row[pe] = run[pe]
            w += 1
        if c < n_cols:
            rows, lo, hi = row_idx, indptr[c], indptr[c + 1]
        elif c == cols_padded:  # the bias column
            rows, lo, hi = bias_rows, 0, bias_rows.size
        else:  # a padding column, or past the bias column
            continue
        for i in range(lo, hi):
            pe, lr = _pe_row(rows[i], num_pes, pes, pe_shift, pe_pow2)
            d = lr - last[pe] - 1
            run[pe] += _floor_jumps(d, max_jump, shift, pow2) + 1
            last[pe] = lr
        for i in range(lo, hi):
            last[_pe_row(rows[i], num_pes, pes, pe_shift, pe_pow2)[0]] = -1
    base[0] = 0
    for pe in range(num_pes):  # int64 sums: an overflow of the int32 rows shows here
        if run[pe] > INT32_MAX:
            return False
        base[pe + 1] = base[pe] + run[pe]
    return True


@nb.njit(cache=True, error_model="numpy", nogil=True)
def _fill(
    n_cols,
    indptr,
    row_idx,
    codes,
    bias_rows,
    bias_vals,
    num_pes,
    max_jump,
    base,
    write,
    last,
    code,
    z,
    local_row,
    real_cum,
):  # pragma: no cover - compiled
    """Write every entry (``code`` zeros, ``z`` and ``local_row`` any values on entry),
    padding first where a gap is longer than ``max_jump``: code 0, z = max_jump - 1, the row
    cursor advanced by ``max_jump``. Then ``real_cum[e + 1]``: real (code != 0) entries among
    the first ``e + 1``. ``write``, ``last``: int64 scratch, num_pes."""
    pes = np.float64(num_pes)  # for _pe_row
    pe_shift, pe_pow2 = _shift_of(num_pes)
    shift, pow2 = _shift_of(max_jump)
    for pe in range(num_pes):
        write[pe] = base[pe]  # next entry address per PE: columns in order
        last[pe] = -1
    pad_z = max_jump - 1
    for e in range(z.size):
        z[e] = pad_z
    for col in range(n_cols + 1):  # the last one is the bias column
        if col < n_cols:
            rows, vals, lo, hi = row_idx, codes, indptr[col], indptr[col + 1]
        else:
            rows, vals, lo, hi = bias_rows, bias_vals, 0, bias_rows.size
        for i in range(lo, hi):
            pe, lr = _pe_row(
                rows[i], num_pes, pes, pe_shift, pe_pow2
            )  # exact: r >= 0, r < 2**53 / num_pes
            pos = write[pe]
            d = lr - last[pe] - 1
            npad = _floor_jumps(d, max_jump, shift, pow2)
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
            last[_pe_row(rows[i], num_pes, pes, pe_shift, pe_pow2)[0]] = -1
    if real_cum.size == 0:  # not wanted (``encode_eie_rows``)
        return
    run = 0
    real_cum[0] = 0
    for e in range(code.size):
        if code[e] != 0:
            run += 1
        real_cum[e + 1] = run


def encode_eie_rows(
    n_rows: int,
    n_cols: int,
    indptr: np.ndarray,
    row_idx: np.ndarray,
    codes: np.ndarray,
    bias_codes: np.ndarray,
    num_pes: int,
    relative_index_bits: int,
    rows: np.ndarray,
) -> tuple[EieEncoded, np.ndarray]:
    """``encode_eie`` that keeps only rows ``rows`` (sorted, distinct) of the pointer table:
    (the encoding with an empty ``col_ptr`` and ``real_cum``, ``col_ptr[rows]``), for the
    functional and timing kernels, which read nothing else. The whole table is never built:
    at 512 PEs VGG-16 FC6's is 49 MB, where the rows its broadcast columns use are 18."""
    args = (n_rows, n_cols, indptr, row_idx, codes, bias_codes, num_pes, relative_index_bits)
    return _encode(*args, rows)


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
    args = (n_rows, n_cols, indptr, row_idx, codes, bias_codes, num_pes, relative_index_bits)
    return _encode(*args, None)[0]


def _encode(
    n_rows: int,
    n_cols: int,
    indptr: np.ndarray,
    row_idx: np.ndarray,
    codes: np.ndarray,
    bias_codes: np.ndarray,
    num_pes: int,
    relative_index_bits: int,
    wanted: np.ndarray | None,
) -> tuple[EieEncoded, np.ndarray]:
    """``encode_eie`` (``wanted`` None), or ``encode_eie_rows`` (``rows`` = ``wanted``)."""
    max_jump = 1 << relative_index_bits
    cols_padded = -(-n_cols // num_pes) * num_pes
    if n_rows > INT32_MAX:
        raise OverflowError(f"{n_rows} rows: row indices are int32")
    bias_rows = np.flatnonzero(bias_codes).astype(np.int32)
    bias_vals = bias_codes[bias_rows].astype(np.uint8)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    row_idx = np.ascontiguousarray(row_idx, dtype=np.int32)  # the layers' own dtype: no copy
    base = np.zeros(num_pes + 1, dtype=np.int64)
    last = np.empty(num_pes, dtype=np.int64)
    args = (n_cols, cols_padded, indptr, row_idx, bias_rows, num_pes, max_jump)
    if wanted is None:  # the whole table
        rows = np.arange(cols_padded + 2, dtype=np.int64)
    else:
        rows = np.ascontiguousarray(wanted, dtype=np.int64)
        if rows.size and (
            rows[0] < 0 or rows[-1] >= cols_padded + 2 or bool((np.diff(rows) <= 0).any())
        ):
            raise ValueError(f"pointer rows must rise strictly within [0, {cols_padded + 2})")
    table = np.empty((rows.size, num_pes), dtype=np.int32)
    fits = _pointer_rows(*args, rows, table, last, np.empty_like(last), base)
    col_ptr = table if wanted is None else np.empty((0, num_pes), dtype=np.int32)
    if not fits:
        raise OverflowError(f"more than {INT32_MAX} entries in one PE")
    total = int(base[-1])
    code = np.zeros(total, dtype=np.uint8)
    z = np.empty(total, dtype=np.uint8)
    local_row = np.zeros(total, dtype=np.int32)
    cum_size = total + 1 if wanted is None else 0  # nothing after encoding reads it there
    real_cum = np.empty(cum_size, np.int64 if total > INT32_MAX else np.int32)
    _fill(
        n_cols,
        indptr,
        row_idx,
        np.ascontiguousarray(codes, dtype=np.uint8),
        bias_rows,
        bias_vals,
        num_pes,
        max_jump,
        base,
        np.empty(num_pes, dtype=np.int64),
        last,
        code,
        z,
        local_row,
        real_cum,
    )
    enc = EieEncoded(
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
    return enc, table
