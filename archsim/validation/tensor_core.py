"""Tensor Core GPU claims: vendor peaks, DeepBench V100 cuBLAS times, A100/H100 GEMM anchors.

The timing claims need ``simulate`` for ``tensor_core`` hardware; until that simulator is
registered they are SKIPPED with a clear reason, and they pass or fail as soon as it is.
"""

from __future__ import annotations

from dataclasses import replace

from archsim.config.io import load_hardware
from archsim.config.workload import WorkloadSpec
from archsim.validation.claims import Claim, ClaimUnavailable
from archsim.validation.runs import Runs

__all__ = [
    "TENSOR_CORE_CLAIMS",
    "PEAK_FP16_TFLOPS",
    "DEEPBENCH_V100_MS",
    "gemm_workload",
    "gemm_time_claim",
    "gemm_name",
]

#: Dense FP16 tensor peak, TFLOPS, at the clock each vendor uses for it.
PEAK_FP16_TFLOPS = {"v100": 125.3, "a100": 311.9, "h100": 989.4}
#: DeepBench's published V100 SXM2 cuBLAS results (training GEMMs, NN, "half": FP16 A/B/C and
#: compute type CUDA_R_16F in code/nvidia/gemm_bench.cu, CUDA 10.1): (M, N, K) -> ms per call.
#: gemm_bench prints whole microseconds (an int of the mean over 400 calls).
DEEPBENCH_V100_MS = {
    (4096, 7000, 4096): 2.092,
    (1760, 7000, 1760): 0.485,
    (7680, 24000, 2560): 9.009,
    (4096, 128, 4096): 0.067,
    (4096, 16, 4096): 0.051,
    (35, 8457, 1760): 0.083,
    (512, 8, 500000): 0.658,
    (512, 16, 512): 0.008,
}
_DEEPBENCH = "Baidu DeepBench V100 results (cuBLAS, CUDA 10.1)"
_PEAK_SOURCE = {
    "v100": "NVIDIA Tesla V100 whitepaper (80 SMs x 8 TCs x 64 FMA x 1530 MHz)",
    "a100": "NVIDIA A100 whitepaper (108 SMs x 4 TCs x 256 FMA x 1410 MHz)",
    "h100": "NVIDIA H100 whitepaper (132 SMs x 4 TCs x 512 FMA x 1830 MHz)",
}


def gemm_name(m: int, n: int, k: int) -> str:
    """Layer name of one NN GEMM, as in the ``deepbench_gemm`` preset: ``gemm_MxNxK_NN``."""
    return f"gemm_{m}x{n}x{k}_NN"


def gemm_workload(
    name: str,
    shapes: tuple[tuple[int, int, int], ...],
    accumulate: str = "fp32",
    column_major: bool = False,
) -> WorkloadSpec:
    """FP16-in NN GEMMs of ``shapes`` (M, N, K), one layer each, accumulating in
    ``accumulate`` (DeepBench's "half" runs accumulate in FP16). ``column_major``: NN as
    cuBLAS stores it (DeepBench), i.e. in archsim's row-major terms A stored k x m and B stored
    n x k (both transposed), so A is read along M and B along K."""
    flags = {"transpose_a": True, "transpose_b": True} if column_major else {}
    layers = [
        {"name": gemm_name(m, n, k), "kind": "gemm", "m": m, "n": n, "k": k,
         "accumulate": accumulate, **flags}
        for m, n, k in shapes
    ]  # fmt: skip
    return WorkloadSpec.model_validate(
        {"schema_version": 1, "name": name, "source": _DEEPBENCH, "layers": layers}
    )


def _require_simulator() -> None:
    from archsim.accelerators import REGISTRY  # the kernels load when a claim runs

    if "tensor_core" not in REGISTRY:
        raise ClaimUnavailable(
            "this archsim has no tensor_core simulator yet (simulate() supports: "
            f"{', '.join(sorted(REGISTRY))})"
        )


def _gemm_ms(gpu: str, workload: WorkloadSpec, shape: tuple[int, int, int]):
    def value(runs: Runs) -> float:
        _require_simulator()
        return runs.run(gpu, workload).layer(gemm_name(*shape)).time_s * 1e3

    return value


def _gemm_pct_of_peak(gpu: str, workload: WorkloadSpec, shape: tuple[int, int, int]):
    def value(runs: Runs) -> float:
        _require_simulator()
        seconds = runs.run(gpu, workload).layer(gemm_name(*shape)).time_s
        m, n, k = shape
        peak = load_hardware(gpu).peak_tflops("fp16") * 1e12  # type: ignore[attr-defined]
        return 100.0 * 2 * m * n * k / seconds / peak

    return value


def gemm_time_claim(
    gpu: str,
    shape: tuple[int, int, int],
    paper_ms: float,
    tolerance: float,
    reason: str,
    source: str,
    workload: WorkloadSpec | None = None,
) -> Claim:
    """Claim: archsim's time (ms) of one FP16 NN GEMM on ``gpu`` vs a measured ``paper_ms``.

    Pass the same ``workload`` (from :func:`gemm_workload`) to claims that should share one
    simulation; by default the GEMM runs alone.
    """
    wl = workload or gemm_workload(f"{gpu}_{gemm_name(*shape)}", (shape,))
    m, n, k = shape
    return Claim(
        "tensor_core",
        f"{gpu.upper()} GEMM {m}x{n}x{k} time",
        source,
        paper_ms,
        "ms",
        tolerance,
        "relative",
        reason,
        _gemm_ms(gpu, wl, shape),
    )


def _peak(gpu: str):
    return lambda runs: load_hardware(gpu).peak_tflops("fp16")  # type: ignore[attr-defined]


_DEEPBENCH_WL = gemm_workload(
    "deepbench_v100_anchors", tuple(DEEPBENCH_V100_MS), "fp16", column_major=True
)
_BIG = (
    "A cuBLAS measurement against a tile/wave/bandwidth model with no fitted curves; cuBLAS "
    "picks among many hand-tuned kernels that a tile menu only approximates: 15 %."
)
_TRUNCATED = (
    "As above (15 %), but DeepBench printed whole microseconds: the published 8 us means "
    "[8, 9) us, so the tolerance is 15 % of 9 us plus the 1 us of truncation (2.35 us)."
)


#: the one DeepBench point the kernel-family model misses (a known gap, kept as a FAIL)
KNOWN_GAP_SHAPE = (35, 8457, 1760)
_M35 = (
    "15 %, as above. Known gap: it passed before only because the old alignment rule sent m = 35 "
    "to the CUDA cores, the rule issue 16 removes (DeepBench runs such shapes on tensor cores). "
    "DeepBench's 35 x 8457 rows are not monotonic in K (K = 1760 / 2048 / 2560 / 4096: 0.083 / "
    "0.064 / 0.125 / 0.121 ms), so neither engine explains all four. DeepBench's B is stored "
    "along K (column-major NN), so its loads pay a DRAM page per 64-byte piece (v100.yaml "
    "dram_pages): the model gives -26 / +10 / -31 / +9 % (-37 / -7 / -42 / -9 % without the "
    "page model); the slow K = 1760 and 2560 stay unexplained. Not tuned away."
)


def _deepbench_claims() -> list[Claim]:
    out = []
    for (m, n, k), ms in DEEPBENCH_V100_MS.items():
        reason = _M35 if (m, n, k) == KNOWN_GAP_SHAPE else _BIG
        claim = gemm_time_claim(
            "v100", (m, n, k), ms, 0.15, reason, f"{_DEEPBENCH}, GEMM {m}x{n}x{k} NN",
            workload=_DEEPBENCH_WL,
        )  # fmt: skip
        if ms < 0.05:  # a few microseconds: the printed integer's truncation matters
            claim = replace(claim, tolerance=0.15 * (ms + 0.001) + 0.001, kind="absolute")
            claim = replace(claim, reason=_TRUNCATED)
        out.append(claim)
    return out


_SQUARE = (8192, 8192, 8192)
_SQUARE_WL = gemm_workload("gemm_8192_cubed", (_SQUARE,))

TENSOR_CORE_CLAIMS: tuple[Claim, ...] = (
    *(
        Claim(
            "tensor_core",
            f"{gpu.upper()} peak FP16 dense",
            _PEAK_SOURCE[gpu],
            tflops,
            "TFLOPS",
            0.05,
            "absolute",
            "Closed form from the preset's SMs, tensor cores, FMA per clock and clock; the "
            "vendor prints one decimal.",
            _peak(gpu),
        )
        for gpu, tflops in PEAK_FP16_TFLOPS.items()
    ),
    *_deepbench_claims(),
    gemm_time_claim(
        "a100",
        _SQUARE,
        3.96,
        0.15,
        _BIG,
        "Published A100 80 GB FP16 8192^3 cuBLAS time (277.6 TFLOPS, 89 % of peak)",
        workload=_SQUARE_WL,
    ),
    Claim(
        "tensor_core",
        "H100 GEMM 8192^3 % of peak",
        "Best published H100 SXM dense matmul (about 795 TFLOPS BF16, 80 % of peak)",
        85.0,
        "%",
        0.0,
        "at_most",
        "No public H100 GEMM reaches 85 % of the dense peak (power and clock limits); a model "
        "that does is too optimistic. A bound, not a value.",
        _gemm_pct_of_peak("h100", _SQUARE_WL, _SQUARE),
    ),
)
