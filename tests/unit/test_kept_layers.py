"""Built EIE layers kept per process (archsim.memo keep=True): reused while unchanged, rebuilt
when a data file changes, and never a different result from a fresh build."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

import archsim
from archsim import memo
from archsim.config.workload import WorkloadSpec
from archsim.datapath.eie_encode import encode_eie
from archsim.workload import synthetic_matvec, write_eie_dir
from archsim.workload.eie_format import data_signature
from archsim.workload.sparse import QuantizedMatVec


def _write(folder: Path, layer: QuantizedMatVec) -> None:
    enc = encode_eie(
        layer.n_rows, layer.n_cols, layer.indptr, layer.row_idx, layer.codes,
        layer.bias_codes, 4, 4,
    )  # fmt: skip
    write_eie_dir(folder, layer, enc)


def _workload(folder: Path) -> WorkloadSpec:
    layer = {"name": "d", "kind": "fc", "inputs": 64, "outputs": 96, "data": str(folder)}
    return WorkloadSpec.model_validate(
        {"schema_version": 1, "name": "kept", "source": "test", "layers": [layer]}
    )


def test_kept_values_outlive_the_memo_being_off() -> None:
    memo.clear()
    calls: list[int] = []

    def build() -> np.ndarray:
        calls.append(1)
        return np.zeros(8)

    assert not memo.enabled()
    first = memo.memoized(("test.kept", 1), build, keep=True)
    assert memo.memoized(("test.kept", 1), build, keep=True) is first
    assert len(calls) == 1 and memo.stats()["kept_entries"] == 1
    memo.memoized(("test.other", 1), build)  # not kept: computed every time
    memo.memoized(("test.other", 1), build)
    assert len(calls) == 3
    memo.set_resident_limit(0)
    try:
        assert memo.stats()["kept_entries"] == 0
        memo.memoized(("test.kept", 1), build, keep=True)
        assert len(calls) == 4
    finally:
        memo.set_resident_limit()
    memo.clear()
    assert memo.stats()["kept_entries"] == 0


def test_data_layer_rebuilt_when_its_files_change(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    layer = synthetic_matvec("d", 96, 64, 0.3, 0.6, True, seed=1)
    _write(folder, layer)
    wl = _workload(folder)
    memo.clear()
    first = archsim.simulate("eie", wl)
    assert memo.stats()["kept_entries"] > 0
    assert archsim.simulate("eie", wl).to_json() == first.to_json()
    signature = data_signature(folder)
    other = synthetic_matvec("d", 96, 64, 0.3, 0.2, True, seed=1)  # fewer activations
    (folder / "act.dat").write_bytes(other.activations.astype("<f4").tobytes())
    assert data_signature(folder) != signature
    changed = archsim.simulate("eie", wl)
    memo.clear()
    assert changed.to_json() == archsim.simulate("eie", wl).to_json()  # = a fresh build
    assert changed.layers[0].extras != first.layers[0].extras
    memo.clear()


def test_same_size_rewrite_of_a_small_layer_is_seen(tmp_path: Path) -> None:
    """Rewritten in place within one clock tick, a file keeps its size, inode and perhaps its
    modification time: small files are identified by their content."""
    folder = tmp_path / "d"
    layer = synthetic_matvec("d", 96, 64, 0.3, 0.6, True, seed=1)
    _write(folder, layer)
    wl = _workload(folder)
    memo.clear()
    archsim.simulate("eie", wl)
    archsim.simulate("eie", wl)
    assert memo.stats()["computed"]["eie.layer"] == 1
    codes = np.where(layer.codes == 1, 2, np.where(layer.codes == 2, 1, layer.codes))
    swapped = dataclasses.replace(layer, codes=codes.astype(np.uint8))
    _write(folder, swapped)  # same sizes everywhere: only spm*.dat's bytes differ
    archsim.simulate("eie", wl)
    assert memo.stats()["computed"]["eie.layer"] == 2
    memo.clear()
