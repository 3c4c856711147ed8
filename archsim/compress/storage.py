"""Storage of a pruned, weight-shared matrix: CSC with relative row indices (Deep Compression,
Section 2 and Figure 2), codebook, pointers, and the Huffman-coded size.

A weight matrix is stored column by column (``rows`` = outputs); each non-zero is an entry
(code, z) with z = zero rows skipped since the previous entry of the column. A gap larger than
``2**index_bits - 1`` is bridged by padding entries (code 0, z = max) that advance the row by
``2**index_bits`` -- the rule EIE's encoder uses on one PE.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from archsim.compress.huffman import huffman_bits

__all__ = ["LayerStorage", "csc_entries", "layer_storage"]


@dataclass(frozen=True)
class LayerStorage:
    """Storage of one layer (bytes unless named bits)."""

    name: str
    rows: int
    cols: int
    nnz: int
    entries: int  # stored entries, padding included
    code_bits: int
    index_bits: int
    dense_bytes: int  # fp32 dense matrix
    csc_bytes: int  # entries x (code + index) bits, rounded up to bytes
    huffman_bytes: int  # code and index streams Huffman-coded, rounded up to bytes
    codebook_bytes: int  # 2**code_bits fp32 shared values
    pointer_bytes: int  # cols + 1 column pointers of pointer_bits

    @property
    def density(self) -> float:
        """Fraction of non-zero weights."""
        return self.nnz / float(self.rows * self.cols)

    @property
    def compressed_bytes(self) -> int:
        """Huffman-coded entries + codebook + pointers."""
        return self.huffman_bytes + self.codebook_bytes + self.pointer_bytes

    @property
    def ratio(self) -> float:
        """Dense fp32 bytes / compressed bytes."""
        return self.dense_bytes / self.compressed_bytes if self.compressed_bytes else 0.0

    def row(self) -> dict[str, float | int | str]:
        """A flat dict for tables (with density, compressed bytes and ratio)."""
        return {
            **asdict(self),
            "density": self.density,
            "compressed_bytes": self.compressed_bytes,
            "ratio": self.ratio,
        }


def csc_entries(codes: np.ndarray, index_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(code stream, index stream) of the entries of a (rows, cols) code matrix (0 = zero),
    padding entries included, in column order."""
    jump = 1 << index_bits
    cols, rows = np.nonzero(np.asarray(codes).T)  # column-major order, rows ascending
    first = np.ones(rows.size, dtype=bool)
    first[1:] = cols[1:] != cols[:-1]
    prev = np.where(first, -1, np.concatenate([[-1], rows[:-1]]))
    gap = rows - prev - 1
    pads = gap // jump
    real_codes = np.asarray(codes).T[cols, rows].astype(np.int64)
    n_pad = int(pads.sum())
    code_stream = np.concatenate([real_codes, np.zeros(n_pad, dtype=np.int64)])
    index_stream = np.concatenate([gap - pads * jump, np.full(n_pad, jump - 1, dtype=np.int64)])
    return code_stream, index_stream


def layer_storage(
    name: str, codes: np.ndarray, code_bits: int, index_bits: int, pointer_bits: int = 32
) -> LayerStorage:
    """Storage of a (rows, cols) matrix of codes (0 = pruned, 1.. = shared value index)."""
    codes = np.asarray(codes)
    rows, cols = codes.shape
    code_stream, index_stream = csc_entries(codes, index_bits)
    entries = int(code_stream.size)
    hbits = huffman_bits(code_stream, 1 << code_bits) + huffman_bits(index_stream, 1 << index_bits)
    return LayerStorage(
        name=name,
        rows=rows,
        cols=cols,
        nnz=int(np.count_nonzero(codes)),
        entries=entries,
        code_bits=code_bits,
        index_bits=index_bits,
        dense_bytes=rows * cols * 4,
        csc_bytes=-(-entries * (code_bits + index_bits) // 8),
        huffman_bytes=-(-hbits // 8),
        codebook_bytes=(1 << code_bits) * 4,
        pointer_bytes=(cols + 1) * pointer_bits // 8,
    )
