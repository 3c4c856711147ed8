"""EIE encoder: byte-exact against the authors' files, and re-encoding for any N / index width."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from archsim import load_hardware
from archsim.accelerators.eie import run_eie_layer
from archsim.datapath.eie_encode import encode_eie
from archsim.errors import WorkloadError
from archsim.workload import read_eie_dir, synthetic_matvec, write_eie_dir


def _encode(layer, n, bits=4):
    return encode_eie(
        layer.n_rows,
        layer.n_cols,
        layer.indptr,
        layer.row_idx,
        layer.codes,
        layer.bias_codes,
        n,
        bits,
    )


def test_reproduces_shipped_files_byte_for_byte(alex8_dir, tmp_path):
    layer = read_eie_dir(alex8_dir, "alex8", n_rows=1000)
    assert (layer.n_rows, layer.n_cols) == (1000, 4096)
    enc = _encode(layer, 64)
    assert enc.total_entries == 1_051_991
    write_eie_dir(tmp_path, layer, enc)
    for k in range(64):
        for sub, stem in (("ptr", "ptr"), ("spm", "spm")):
            mine = (tmp_path / sub / f"{stem}{k}.dat").read_bytes()
            theirs = (alex8_dir / sub / f"{stem}{k}.dat").read_bytes()
            assert mine == theirs, f"{stem}{k}.dat differs"
    assert (tmp_path / "act.dat").read_bytes() == (alex8_dir / "act.dat").read_bytes()
    assert (tmp_path / "arithm.dat").read_bytes() == (alex8_dir / "arithm.dat").read_bytes()


def test_bias_column_count(alex8_dir):
    layer = read_eie_dir(alex8_dir, "alex8", n_rows=1000)
    assert np.count_nonzero(layer.bias_codes) == 959
    assert np.count_nonzero(layer.activations > 0) == 1759


@pytest.mark.parametrize("n", [1, 3, 7, 64, 100, 1024])
@pytest.mark.parametrize("bits", [1, 2, 4, 8])
def test_round_trip_any_pe_count_and_index_width(n, bits, tmp_path):
    layer = synthetic_matvec("rt", 97, 53, 0.08, 0.5, True, seed=n * 10 + bits)
    enc = _encode(layer, n, bits)
    # every stored entry decodes back to its row; padding bridges runs longer than 2**bits - 1
    assert int(enc.real_cum[-1]) == layer.nnz + int(np.count_nonzero(layer.bias_codes))
    assert int(enc.z.max(initial=0)) <= 2**bits - 1
    if bits == 4:  # the file format stores 4-bit z; other widths round-trip through arrays only
        write_eie_dir(tmp_path, layer, enc)
        back = read_eie_dir(tmp_path, "rt", n_rows=97)
        assert np.array_equal(back.indptr, layer.indptr)
        assert np.array_equal(back.row_idx, layer.row_idx)
        assert np.array_equal(back.codes, layer.codes)
        assert np.array_equal(back.bias_codes, layer.bias_codes)


def test_padding_rule_matches_paper_example():
    # column [0,0,1,2,0 x18,3] -> v=[1,2,0,3], z=[2,0,15,2]  (EIE paper, Section IV)
    col = np.array([0, 0, 1, 2] + [0] * 18 + [3])
    rows = np.flatnonzero(col).astype(np.int32)
    enc = encode_eie(
        col.size,
        1,
        np.array([0, rows.size]),
        rows,
        col[rows].astype(np.uint8),
        np.zeros(col.size, np.uint8),
        1,
        4,
    )
    ptr, code, z = enc.pe_arrays(0)
    assert code.tolist() == [1, 2, 0, 3]
    assert z.tolist() == [2, 0, 15, 2]
    assert ptr.tolist() == [0, 4, 4]


def test_pointer_table_is_one_int32_column_major_array():
    layer = synthetic_matvec("cm", 97, 53, 0.2, 0.5, True, seed=5)
    enc = _encode(layer, 7)
    assert enc.col_ptr.dtype == np.int32 and enc.col_ptr.flags.c_contiguous
    assert enc.col_ptr.shape == (enc.cols_padded + 2, 7)
    assert np.shares_memory(enc.ptr, enc.col_ptr) and np.array_equal(enc.ptr, enc.col_ptr.T)
    assert np.array_equal(enc.ptr[:, -1], enc.entries_per_pe)  # last pointer: the PE's entries
    assert enc.real_cum.dtype == np.int32
    assert np.array_equal(enc.real_cum, np.r_[0, np.cumsum(enc.code != 0)])


@pytest.mark.parametrize(("n", "bits", "bias"), [(1, 4, True), (7, 2, True), (16, 4, False)])
def test_rows_of_the_pointer_table_without_the_table(n, bits, bias):
    """``encode_eie_rows``: the chosen rows of ``encode_eie``'s pointer table, the same base
    and entries, and no whole table; rows that do not rise within the table are refused."""
    from archsim.datapath.eie_encode import encode_eie_rows

    layer = synthetic_matvec("rows", 97, 45, 0.2, 0.5, bias, seed=3)
    full = _encode(layer, n, bits)
    last = full.cols_padded + 1
    rng = np.random.default_rng(n)
    args = (layer.n_rows, layer.n_cols, layer.indptr, layer.row_idx, layer.codes)
    weights = (*args, layer.bias_codes, n, bits)
    for rows in (
        np.arange(last + 1),
        np.array([0, last]),
        np.unique(rng.integers(0, last + 1, 20)),
        np.zeros(0, np.int64),
    ):
        enc, table = encode_eie_rows(*weights, rows)
        assert table.dtype == np.int32 and table.shape == (rows.size, n)
        assert np.array_equal(table, full.col_ptr[rows])
        assert enc.col_ptr.shape == (0, n) and enc.real_cum.size == 0
        for name in ("base", "code", "z", "local_row"):
            assert np.array_equal(getattr(enc, name), getattr(full, name)), name
    for bad in ([3, 3], [2, 1], [-1], [last + 1]):
        with pytest.raises(ValueError, match="pointer rows"):
            encode_eie_rows(*weights, np.array(bad))


def test_a_codebook_past_8_bit_codes_is_refused(tmp_path):
    # codes are held as uint8: a 300-entry codebook's code 299 used to wrap to 43 silently
    layer = synthetic_matvec("cb", 40, 24, 0.2, 0.5, False, seed=3)
    write_eie_dir(tmp_path, layer, _encode(layer, 2))
    codebook = np.zeros(300, "<f4")
    codebook[1:] = np.linspace(-1.0, 1.0, 299)
    codebook.tofile(tmp_path / "arithm.dat")
    with pytest.raises(
        WorkloadError, match=r"arithm.dat: codebook has 300 entries; allowed: at most 256"
    ):
        read_eie_dir(tmp_path, "cb")
    codebook[:256].tofile(tmp_path / "arithm.dat")
    assert read_eie_dir(tmp_path, "cb").codebook.size == 256


def test_negative_activations_are_refused_where_eie_would_skip_them(tmp_path):
    # EIE (and the authors' nzfetch.cpp) broadcasts only activations > 0: a negative one was
    # dropped from the product while the NumPy reference kept it (max error 14.6 against a
    # bound of 0.63 on Alex-8 negated), and nothing said so
    layer = synthetic_matvec("neg", 40, 24, 0.2, 0.5, False, seed=4)
    write_eie_dir(tmp_path, layer, _encode(layer, 2))
    act = layer.activations.astype("<f4")
    act[5] = -0.25
    act.tofile(tmp_path / "act.dat")
    with pytest.raises(
        WorkloadError,
        match=r"act.dat: value -0.25 at index 5 \(1 such\) is negative; allowed: activations >= 0",
    ):
        read_eie_dir(tmp_path, "neg")
    negated = dataclasses.replace(layer, activations=-layer.activations)
    with pytest.raises(WorkloadError, match=r"layer neg: activation -\d.* is negative; allowed"):
        run_eie_layer(load_hardware("tiny_eie"), negated)
    act[5] = -0.0  # a negative zero is a zero
    act.tofile(tmp_path / "act.dat")
    assert read_eie_dir(tmp_path, "neg").activations[5] == 0.0
