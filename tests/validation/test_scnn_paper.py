"""SCNN vs DCNN against Parashar et al., ISCA 2017 (a CI-sized subset; the full table is
``python benchmarks/scnn_paper.py``). Each claim states its tolerance and why."""

from __future__ import annotations

import pytest

import archsim


def _speedup(workload) -> float:
    res = archsim.simulate("scnn", workload, seed=0, baseline="dcnn")
    return res.metadata["baseline"]["speedup_vs_dcnn"]


def test_googlenet_network_speedup_within_15_percent():
    # paper 2.19x; synthetic uniform sparsity at the Figure 1 densities: 15 % (the figure)
    sp = _speedup("googlenet")
    assert abs(sp - 2.19) / 2.19 <= 0.15, f"GoogLeNet SCNN/DCNN {sp:.2f}x vs paper 2.19x"


def test_alexnet_network_speedup_within_30_percent():
    # paper 2.37x. archsim: 1.69x (seed 0). Mechanism of the gap: the crossbar's input
    # buffering is not published; with the assumed 2-entry FIFOs, conflict stalls cost about a
    # fifth of SCNN's cycles (16-entry FIFOs recover most of it), and 13x13 planes over 8x8 PEs
    # leave PEs idle at every barrier. 30 % until the buffering is known.
    sp = _speedup("alexnet")
    assert abs(sp - 2.37) / 2.37 <= 0.30, f"AlexNet SCNN/DCNN {sp:.2f}x vs paper 2.37x"
    assert sp > 1.0


def _inception_3a(density: float):
    wl = archsim.load_workload("googlenet")
    layers = [
        lay.model_copy(update={"weight_density": density, "activation_density": density})
        for lay in wl.layers
        if lay.name.startswith("inception_3a")
    ]
    return wl.model_copy(update={"layers": layers, "name": f"3a_d{density}"})


@pytest.mark.parametrize(
    ("density", "low", "high"),
    [
        # paper: 24x at 0.1/0.1; the same per-cycle overheads that cost ~25 % at full density
        # apply here, so at least 12x
        (0.1, 12.0, 30.0),
        # paper: 0.79 of DCNN at 1.0/1.0; archsim 0.59 on full GoogLeNet (crossbar stalls with
        # 2-entry FIFOs, see above). Dense SCNN must stay slower than DCNN.
        (1.0, 0.45, 0.95),
    ],
)
def test_density_sweep_endpoints(density, low, high):
    sp = _speedup(_inception_3a(density))
    assert low <= sp <= high, f"SCNN/DCNN at density {density}: {sp:.2f}x"


def test_deeper_crossbar_buffers_close_the_dense_gap():
    wl = _inception_3a(1.0)
    base = archsim.simulate("dcnn", wl).total_cycles
    shallow = archsim.simulate("scnn", wl).total_cycles
    deep_hw = archsim.load_hardware("scnn").with_overrides({"crossbar_input_fifo_depth": 16})
    deep = archsim.simulate(deep_hw, wl).total_cycles
    assert deep < shallow
    assert base / deep > base / shallow + 0.05


def test_vgg16_network_speedup_within_35_percent():
    # paper 3.52x; archsim 2.32x (seed 0). On top of the crossbar-buffering assumption (see
    # AlexNet), VGG's late 14x14 and 28x28 planes give 2x2 and 4x4 tiles per PE, so with Kc = 8
    # most activation vectors of I = 4 are partly empty (intra-PE fragmentation) and 14 = 7 x 2
    # leaves a PE row and column idle at every barrier. 35 % until real pruned data is available.
    sp = _speedup("vgg16")
    assert abs(sp - 3.52) / 3.52 <= 0.35, f"VGG-16 SCNN/DCNN {sp:.2f}x vs paper 3.52x"
    assert sp > 2.0


def test_energy_ratios_vs_dcnn():
    # paper: SCNN 2.3x and DCNN-opt 2.0x more energy-efficient than DCNN (mean of 3 networks);
    # AlexNet only here (CI time). archsim prices counts with generic 45 nm tables scaled to
    # 16 nm, not the paper's unpublished per-access table: SCNN within 40 %, DCNN-opt must gain.
    res = archsim.simulate("scnn", "alexnet", seed=0, baseline="dcnn")
    e_scnn = res.metadata["baseline"]["energy_ratio_vs_dcnn"]
    opt = archsim.simulate(
        archsim.load_hardware("dcnn").with_overrides({"optimized": True}), "alexnet", seed=0
    )
    e_opt = res.metadata["baseline"]["total_energy_pj"] / opt.total_energy_pj
    assert abs(e_scnn - 2.3) / 2.3 <= 0.40, f"SCNN energy gain {e_scnn:.2f}x vs 2.3x"
    assert 1.0 < e_opt < e_scnn + 0.5, f"DCNN-opt energy gain {e_opt:.2f}x"
