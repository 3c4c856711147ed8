"""What ``archsim probe gpu`` measures: the shapes of ``shared/data/h100`` (full) or a few (quick).

Square GEMMs in every precision, the same sizes in four layouts, unaligned sizes, the LLaMA
projections at several token counts, the convolutions of the network presets (full: AlexNet,
VGG-16, GoogLeNet and ResNet-50 of ``workloads/``; quick: AlexNet) at batch 1/32/256, copy/read
bandwidth by buffer size, launch floors and energy readings.
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.measure.backend import ConvShape, GemmShape

__all__ = ["FULL", "LLM_PROJECTIONS", "QUICK", "ProbePlan", "network_convs"]

#: (model:projection) -> (n, k) of the weight, stored n x k as in torch.nn.Linear
#: (LLaMA-7B: hidden 4096, MLP 11008; LLaMA-2-70B: hidden 8192, MLP 28672, GQA qkv 8192+2*1024...
#: as timed in shared/data/h100/gemm_llm.csv)
LLM_PROJECTIONS = {
    "llama7b:qkv": (12288, 4096),
    "llama7b:o": (4096, 4096),
    "llama7b:up_gate": (22016, 4096),
    "llama7b:down": (4096, 11008),
    "llama70b:qkv": (24576, 8192),
    "llama70b:o": (8192, 8192),
    "llama70b:up_gate": (57344, 8192),
    "llama70b:down": (8192, 28672),
}
LAYOUTS = (("m x k", "k x n"), ("m x k", "n x k"), ("k x m", "k x n"), ("k x m", "n x k"))


@dataclass(frozen=True)
class ProbePlan:
    """Sizes and precisions of one probe run; times in seconds."""

    square_sizes: tuple[int, ...]
    precisions: tuple[str, ...]
    layout_sizes: tuple[int, ...]
    layout_precisions: tuple[str, ...]
    unaligned_sizes: tuple[int, ...]
    unaligned_precisions: tuple[str, ...]
    llm_tokens: tuple[int, ...]
    llm_precisions: tuple[str, ...]
    conv_batches: tuple[int, ...]
    conv_networks: tuple[str, ...]  # workload presets whose conv layers are timed (conv_<net>.csv)
    memory_mb: tuple[int, ...]
    energy_gemms: tuple[tuple[str, int, bool], ...]  # (precision, size, all-zero operands)
    energy_copy_mb: int
    energy_seconds: float = 4.0
    idle_wait_s: float = 2.0
    bursts: tuple[tuple[str, int], ...] = ()  # (precision, size): probe.burst_trace from idle
    burst_seconds: float = 1.0

    def square(self) -> list[GemmShape]:
        """Square NN GEMMs, every precision (fp8: B column-major, as ``torch._scaled_mm``)."""
        return [square_gemm(s, p) for s in self.square_sizes for p in self.precisions]

    def layouts(self) -> list[GemmShape]:
        """Square GEMMs stored NN, NT, TN and TT."""
        return [
            GemmShape(s, s, s, a, b, p)
            for s in self.layout_sizes
            for p in self.layout_precisions
            for a, b in LAYOUTS
        ]

    def unaligned(self) -> list[GemmShape]:
        """Square GEMMs whose sizes are not multiples of 8."""
        return [square_gemm(s, p) for s in self.unaligned_sizes for p in self.unaligned_precisions]

    def llm(self) -> list[tuple[str, GemmShape]]:
        """(projection, GEMM): activations m x k times weights stored n x k."""
        return [
            (name, GemmShape(m, n, k, "m x k", "n x k", p))
            for name, (n, k) in LLM_PROJECTIONS.items()
            for m in self.llm_tokens
            for p in self.llm_precisions
        ]


def square_gemm(size: int, precision: str, zeros: bool = False) -> GemmShape:
    """A size^3 GEMM, A stored m x k; B k x n, or n x k for fp8 and int8.

    ``torch._scaled_mm`` wants B column-major; ``torch._int_mm`` takes either, but on an H100
    only B column-major runs cuBLASLt's IMMA kernels (cutlass_80_tensorop_i16832gemm_s8, 880
    TOPS at 8192^3): with B row-major it runs a wmma kernel at 130 TOPS
    (benchmarks/measured/h100_2026-11-27/floors.csv and kernels.csv). The int8 rows of
    ``shared/data/h100`` run at the column-major rate."""
    b = "n x k" if precision in ("fp8", "int8") else "k x n"
    return GemmShape(size, size, size, "m x k", b, precision, zeros)


def network_convs(network: str, batches: tuple[int, ...]) -> list[ConvShape]:
    """The conv layers of workload preset ``network`` at each batch, fp16 (as it lists them)."""
    from archsim.config.io import load_workload
    from archsim.config.workload import ConvLayer

    layers = [lay for lay in load_workload(network).layers if isinstance(lay, ConvLayer)]
    return [
        ConvShape(
            network,
            lay.name,
            n,
            lay.c,
            lay.k,
            lay.h,
            lay.w,
            lay.r,
            lay.s,
            lay.stride,
            lay.pad,
            lay.groups,
            lay.out_h,
            lay.out_w,
        )  # fmt: skip
        for n in batches
        for lay in layers
    ]


_ALL = ("fp16", "bf16", "tf32", "fp32", "fp8", "int8")
FULL = ProbePlan(
    square_sizes=(128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384),
    precisions=_ALL,
    layout_sizes=(1024, 4096, 8192),
    layout_precisions=("fp16", "bf16", "tf32"),
    unaligned_sizes=(1023, 4095, 4097),
    unaligned_precisions=("fp16", "bf16"),
    llm_tokens=(1, 8, 32, 128, 512, 2048, 8192),
    llm_precisions=("fp16", "fp8"),
    conv_batches=(1, 32, 256),
    conv_networks=("alexnet", "vgg16", "googlenet", "resnet50"),
    memory_mb=(1, 4, 8, 16, 24, 32, 40, 64, 256, 1024, 4096),
    energy_gemms=tuple((p, 8192, False) for p in _ALL) + (("fp16", 8192, True),),
    energy_copy_mb=1024,
    # a mid-size GEMM that held 1980 MHz in ../shared/data/h100 and a large one that did not
    bursts=(("fp16", 1536), ("fp16", 8192)),
)
QUICK = ProbePlan(
    square_sizes=(256, 1024, 4096),
    precisions=_ALL,
    layout_sizes=(1024,),
    layout_precisions=("fp16",),
    unaligned_sizes=(4095,),
    unaligned_precisions=("fp16",),
    llm_tokens=(1, 128),
    llm_precisions=("fp16", "fp8"),
    conv_batches=(1,),
    conv_networks=("alexnet",),
    memory_mb=(4, 64, 1024),
    energy_gemms=(("fp16", 8192, False),),
    energy_copy_mb=1024,
    energy_seconds=2.0,
    bursts=(("fp16", 1536),),
    burst_seconds=0.5,
)
