"""Tensor Core GPU presets: peaks from the fields, precision support, validation."""

from __future__ import annotations

import pytest

import archsim

PEAKS = {"v100": 125.3, "a100": 311.9, "h100": 989.4}  # dense FP16 TFLOPS, reference table


@pytest.mark.parametrize("name", list(PEAKS))
def test_peak_fp16_tflops(name):
    hw = archsim.load_hardware(name)
    assert hw.peak_tflops("fp16") == pytest.approx(PEAKS[name], abs=0.05)


def test_precisions_per_part():
    v100, a100 = archsim.load_hardware("v100"), archsim.load_hardware("a100")
    assert v100.peak_tflops("bf16") == 0.0  # Volta tensor cores have no BF16
    assert a100.peak_tflops("bf16") == pytest.approx(311.9, abs=0.05)
    assert a100.peak_tflops("tf32") == pytest.approx(311.9 / 2, abs=0.05)


def test_v100_structure():
    hw = archsim.load_hardware("v100")
    assert hw.sms == 80 and hw.tensor_cores.per_sm == 8
    assert hw.tensor_cores.per_sm // hw.tensor_cores.sub_cores_per_sm == 2
    assert hw.peak_fma_per_cycle == 80 * 8 * 64


def test_tile_that_does_not_fit_shared_memory_is_rejected():
    hw = archsim.load_hardware("v100")
    with pytest.raises(archsim.ConfigError, match=r"tiles\.0.*shared memory"):
        hw.with_overrides({"tiles": [{"m": 256, "n": 256, "k": 64, "stages": 3}]})


def test_tensor_cores_must_split_over_sub_cores():
    hw = archsim.load_hardware("a100")
    with pytest.raises(archsim.ConfigError, match="sub_cores_per_sm"):
        hw.with_overrides({"tensor_cores.per_sm": 6})


def test_gpu_runs_eie_benchmark_layers_as_batch_1_gemms():
    df = archsim.simulate("a100", "eie_benchmarks").to_dataframe()
    assert len(df) == 9
    assert df.tc_gemm_mnk.iloc[0] == "4096x1x9216"  # Alex-6: M x V at batch 1
    assert (df.tc_bound != "compute").all()  # matrix-vector products never fill tensor cores
    # cuBLAS 10.1 (DeepBench's V100 runs) keeps FP16 GEMMs of any shape on the tensor cores
    v100 = archsim.simulate("v100", "eie_benchmarks").to_dataframe()
    assert (v100.tc_kernel_family == "volta_tensor_op").all() and v100.tc_tensor_ops.all()


@pytest.mark.parametrize(
    "path, value, words",
    [
        ("conv_library.kernel_overhead_s", 1e9, "less than or equal to 0.001"),
        ("conv_library.kernel_overhead_s", -1e-6, "greater than or equal to 0"),
        ("framework_kernels.batchnorm_bytes_per_s", 0.0, "greater than or equal to 1000000"),
        ("framework_kernels.batchnorm_parameter_kernels", 10**6, "less than or equal to 16"),
        ("framework_kernels.batchnorm_floor_s", float("nan"), "finite number"),
        ("power.multiplier_lanes", {"tf32": 0.5}, "greater than or equal to 1"),
        ("power.multiplier_lanes", {"fp16": 2.0}, "'tf32'"),
        ("l2.resident_capacity_bytes", 10**9, "allowed: at most size_bytes"),
    ],
)
def test_measured_h100_fields_are_bounded(path, value, words):
    """The fields this session's H100 measurements added refuse impossible values (one line
    naming the field), as every other field does."""
    with pytest.raises(archsim.ArchsimError, match=words) as err:
        archsim.load_hardware("h100").with_overrides({path: value})
    assert path.split(".")[0] in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "section, field, value, words",
    [
        ("library", "max_macs", 0, "greater than 0"),
        ("library", "fragments_from_shared", "maybe", "is not a boolean; allowed: true or false"),
        ("library", "kernel_overhead_s", 1e-6, "only in conv_library families"),
        ("conv_library", "kernel_overhead_s", 1.0, "less than or equal to 0.001"),
        ("conv_library", "kernel_overhead_s", -1e-6, "greater than or equal to 0"),
    ],
)
def test_kernel_family_fields_are_bounded(section, field, value, words):
    """The kernel-family fields added for small TF32 GEMMs, mma.sync fragment reads and the
    conv engines' set-up refuse impossible values in one line naming the section."""
    h100 = archsim.load_hardware("h100")
    fams = [f.model_dump() for f in getattr(h100, section).families]
    fams[0][field] = value
    with pytest.raises(archsim.ArchsimError, match=words) as err:
        h100.with_overrides({f"{section}.families": fams})
    assert section in str(err.value) and "\n" not in str(err.value)


def test_one_mn_major_precisions_must_be_k_major():
    h100 = archsim.load_hardware("h100")
    fams = [f.model_dump() for f in h100.library.families]
    i = next(j for j, f in enumerate(fams) if f["name"] == "sm90_tma_wgmma")
    fams[i]["one_mn_major_precisions"] = ["fp16"]
    with pytest.raises(archsim.ArchsimError, match="allowed: a subset of k_major_precisions"):
        h100.with_overrides({"library.families": fams})
