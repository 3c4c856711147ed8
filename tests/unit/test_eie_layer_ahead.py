"""EIE builds the next layer in a thread while it works on this one, and a sweep's fork server
builds the first point's layers before it forks the workers: the same results as building
them one by one, the same errors, progress in layer order, no thread left behind."""

from __future__ import annotations

import threading

import pytest

import archsim
from archsim import memo
from archsim.accelerators import eie
from archsim.errors import ArchsimError
from archsim.explore.warm import warm_layers

FC = (
    "{{name: {n}, kind: fc, inputs: {i}, outputs: {o}, weight_density: 0.3, "
    "activation_density: 0.6}}"
)
LAYERS = [FC.format(n=f"fc{k}", i=40 + 17 * k, o=30 + 11 * k) for k in range(5)]


def _workload(tmp_path, layers: list[str], name: str = "w.yaml"):
    body = "\n".join(f"  - {lay}" for lay in layers)
    path = tmp_path / name
    path.write_text(f"schema_version: 1\nname: w\nsource: test\nlayers:\n{body}\n", "utf-8")
    return path


def _rows(result) -> list[tuple]:
    return [
        (r.layer, r.cycles, r.energy_pj, tuple(sorted(r.extras.items()))) for r in result.layers
    ]


@pytest.fixture(autouse=True)
def _fresh_memo():
    memo.clear()
    yield
    memo.disable()
    memo.clear()


def test_layers_built_ahead_give_the_results_built_in_order(tmp_path, monkeypatch):
    wl = _workload(tmp_path, LAYERS)
    built_by: list[str] = []
    layer = eie._layer

    def recorded(*args):
        built_by.append(threading.current_thread().name)
        return layer(*args)

    monkeypatch.setattr(eie, "_layer", recorded)
    ahead = archsim.simulate("tiny_eie", wl, seed=3)
    # the first layer in this thread, the other four ahead, in the builder thread
    assert sorted(n.split("_")[0] for n in built_by) == ["MainThread"] + ["archsim-layer"] * 4
    monkeypatch.setattr(eie._LayerAhead, "start", lambda self, spec: None)  # one by one
    in_order = archsim.simulate("tiny_eie", wl, seed=3)
    assert _rows(ahead) == _rows(in_order)
    assert ahead.total_cycles == in_order.total_cycles


def test_progress_in_layer_order_and_no_thread_left(tmp_path):
    wl = _workload(tmp_path, LAYERS)
    before = threading.active_count()
    seen: list[tuple[int, int, str]] = []
    archsim.simulate("tiny_eie", wl, seed=0, progress=lambda d, t, n: seen.append((d, t, n)))
    assert seen == [(k + 1, 5, f"fc{k}") for k in range(5)]
    assert threading.active_count() == before


def test_a_bad_layer_after_good_ones_is_the_same_error(tmp_path):
    conv = "{name: c, kind: conv, c: 4, k: 4, h: 6, w: 6, r: 3, s: 3, pad: 1}"
    wl = archsim.load_workload(_workload(tmp_path, [*LAYERS[:2], conv, LAYERS[2]]))
    before = threading.active_count()
    # (``simulate`` refuses it before any layer runs; the model's own check, as called alone)
    with pytest.raises(ArchsimError, match="EIE runs fc and lstm layers; layer 'c' is 'conv'"):
        eie.simulate_eie(archsim.load_hardware("tiny_eie"), wl, 0)
    assert threading.active_count() == before


def test_a_layer_whose_data_is_missing_fails_as_before(tmp_path):
    missing = (
        "{name: real, kind: fc, inputs: 64, outputs: 8, data: nowhere, data_format: eie, "
        "weight_density: null, activation_density: null}"
    )
    wl = _workload(tmp_path, [LAYERS[0], missing])  # built ahead, in the thread
    with pytest.raises(ArchsimError, match="nowhere"):
        archsim.simulate("tiny_eie", wl, seed=0)


def test_fork_server_warm_up_memoises_what_the_workers_look_up(tmp_path):
    _workload(tmp_path, LAYERS, "small.yaml")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "schema_version: 1\nname: t\nhardware: tiny_eie\nworkload: small.yaml\nseeds: [5, 6]\n"
        "axes:\n  pe_array.num_pes: [2, 4]\n",
        "utf-8",
    )
    assert warm_layers(spec, 64 << 20)
    hw = archsim.load_hardware("tiny_eie")
    wl = archsim.load_workload(tmp_path / "small.yaml")
    cb = hw.encoding.codebook_entries
    keys = [eie._layer_key(s, 5, wl.base_dir, cb) for s in wl.layers]
    assert all(memo.holds(k) for k in keys)  # the first seed's layers, as simulate keys them
    assert not memo.holds(eie._layer_key(wl.layers[0], 6, wl.base_dir, cb))
    built = memo.stats()
    archsim.simulate(hw, wl, seed=5)  # a worker's first point: every layer a memo hit
    assert memo.stats()["hits"] >= built["hits"] + len(keys)


def test_fork_server_warm_up_has_nothing_for_other_models(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "schema_version: 1\nname: t\nhardware: systolic_32x32_os\nworkload: alexnet\n"
        "axes:\n  array.rows: [8, 16]\n",
        "utf-8",
    )
    assert not warm_layers(spec, 64 << 20)
    assert not memo.enabled()
