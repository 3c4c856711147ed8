"""Deep Compression on arrays: pruning, k-means sharing, Huffman sizes, CSC storage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csc_matrix

from archsim.compress import csc_entries, huffman_bits, kmeans_share, layer_storage, prune_mask
from archsim.compress.huffman import huffman_lengths
from archsim.datapath.eie_encode import encode_eie


def test_prune_keeps_exact_count_of_largest() -> None:
    w = np.array([[0.5, -3.0, 0.1], [2.0, 0.0, -0.2]])
    mask = prune_mask(w, 0.5)
    assert mask.sum() == 3
    assert set(np.abs(w[mask])) == {3.0, 2.0, 0.5}


def test_kmeans_linear_init_and_codes() -> None:
    v = np.array([-1.0, -0.9, 0.0, 0.1, 2.0, 2.1])
    cents, codes = kmeans_share(v, 2)  # 3 shared values
    np.testing.assert_allclose(cents, [-0.95, 0.05, 2.05], rtol=1e-6)
    assert codes.tolist() == [0, 0, 1, 1, 2, 2]


def test_huffman_lengths_and_bits() -> None:
    # counts 5, 2, 1, 1 -> lengths 1, 2, 3, 3
    assert huffman_lengths(np.array([5, 2, 1, 1])).tolist() == [1, 2, 3, 3]
    assert huffman_bits(np.array([0] * 5 + [1] * 2 + [2, 3]), 4) == 5 + 4 + 3 + 3
    assert huffman_bits(np.array([2, 2, 2]), 4) == 3  # one symbol: 1 bit each


def test_csc_relative_index_padding() -> None:
    codes = np.zeros((40, 2), dtype=np.int64)
    codes[[0, 20, 39], 0] = [1, 2, 3]  # gaps 0, 19, 18 with 4-bit indices (jump 16)
    code_stream, index_stream = csc_entries(codes, 4)
    assert code_stream.tolist() == [1, 2, 3, 0, 0]
    assert index_stream.tolist() == [0, 3, 2, 15, 15]


def test_storage_matches_eie_encoder_on_one_pe() -> None:
    """The report's entries equal those EIE's encoder stores (one PE, same index bits)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((300, 200)).astype(np.float32)
    mask = prune_mask(w, 0.08)
    _, codes = kmeans_share(w[mask], 4)
    cm = np.zeros(w.shape, np.int64)
    cm[mask] = codes + 1
    st = layer_storage("x", cm, 4, 4)
    s = csc_matrix(cm)
    enc = encode_eie(
        300, 200, s.indptr, s.indices, s.data.astype(np.uint8), np.zeros(300, np.uint8), 1, 4
    )
    assert enc.total_entries == st.entries
    assert st.csc_bytes == enc.total_entries * 8 // 8
    assert st.nnz == int(mask.sum()) == 4800
    print(f"ratio {st.ratio:.1f}x, huffman {st.huffman_bytes} B vs csc {st.csc_bytes} B")
    assert st.huffman_bytes < st.csc_bytes


def test_prune_rejects_bad_density() -> None:
    with pytest.raises(ValueError):
        prune_mask(np.ones(3), 1.5)
