"""What the convolution library (cuDNN) may do on a Tensor Core GPU."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, PositiveFloat, PositiveInt

from archsim.config.base import ArchsimModel
from archsim.config.gpu_family import MAX_MENU_ITEMS, KernelFamily, KernelRate, KernelSeconds

__all__ = ["CONV_ALGORITHMS", "ConvLibraryConfig", "FirstLayerKernel"]

ConvAlgorithm = Literal[
    "implicit_gemm",
    "grouped_per_launch",
    "winograd_2x2",
    "winograd_4x4",
    "depthwise_direct",
    "image_first_layer",
]

#: every algorithm family ``accelerators.gpu_conv`` can time
CONV_ALGORITHMS: tuple[str, ...] = get_args(ConvAlgorithm)


class FirstLayerKernel(ArchsimModel):
    """A library's dedicated kernel for a network's image-input conv (few input channels): the
    input is first padded to ``channels`` by a padding kernel, then one direct tensor-core
    kernel of fixed filter shape runs; each CTA computes ``cta_rows`` x ``cta_cols`` output
    pixels for all ``filters``."""

    library_behaviour: str = Field(min_length=1, description="The library behaviour it stands for.")
    precisions: list[Literal["fp16", "bf16"]] = Field(
        min_length=1, description="Input precisions it runs (priced at the FP16 rate)."
    )
    channels: PositiveInt = Field(description="Input channels it computes (C <= this, padded).")
    filters: PositiveInt = Field(description="Output channels K it is built for.")
    filter_size: PositiveInt = Field(description="R = S it is built for (pixels).")
    stride: PositiveInt = Field(description="Stride it is built for (pixels).")
    cta_rows: PositiveInt = Field(description="Output rows per CTA.")
    cta_cols: PositiveInt = Field(description="Output columns per CTA.")
    macs_per_clock_per_sm: PositiveFloat = Field(
        le=1e5, description="Sustained MACs (padded channels included) per SM clock."
    )
    padding_bytes_per_s: KernelRate = Field(
        description="Rate of the padding kernels, bytes read + written per second."
    )


class ConvLibraryConfig(ArchsimModel):
    """Algorithms a cuDNN-like library tries for a conv layer (``cudnn.benchmark``: all of them
    are timed and the fastest kept) and the rules that restrict them."""

    algorithms: list[ConvAlgorithm] = Field(
        default=list(CONV_ALGORITHMS),
        min_length=1,
        description="Algorithm families tried per conv layer; the fastest applicable one wins.",
    )
    tensor_op_channel_alignment_elements: PositiveInt = Field(
        default=8,
        description="NHWC tensor-core conv kernels need input channels C and filters K to be "
        "multiples of this (FP16: 8 elements = 16 bytes; cuDNN Developer Guide, Legacy API, "
        "'Convolution Functions / Data and Filter Formats'); other layers run an implicit GEMM "
        "on the CUDA cores. Not padded: ../shared/data/h100/conv_alexnet.csv conv1 (C=3) runs "
        "at 39-42 TFLOPS at batch 32/256, below the part's CUDA-core FP16 peak.",
    )
    simt_tile_mnk: tuple[PositiveInt, PositiveInt, PositiveInt] = Field(
        default=(128, 128, 8),
        description="CTA tile (m, n, k) of the CUDA-core implicit-GEMM conv kernel: CUTLASS's "
        "SIMT conv2d fprop (test/unit/conv/device/conv2d_fprop_implicit_gemm_f16nhwc_f16nhwc_"
        "f16nhwc_simt_f16_sm60.cu: threadblock 128x128x8, warp 64x64x8, 2 stages).",
    )
    simt_tile_warps: PositiveInt = Field(
        default=4, description="Warps of that CTA (128x128 / 64x64)."
    )
    simt_tile_stages: int = Field(default=2, ge=1, le=8, description="Its pipeline stages.")
    grouped_batched_tensor_op: bool = Field(
        default=False,
        description="Whether a grouped conv runs as ONE tensor-core implicit GEMM with the groups "
        "as a grid dimension (cuDNN's native group count), in ``grouped_families``. False: only "
        "per-group launches (or the CUDA-core kernel).",
    )
    families: list[KernelFamily] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MENU_ITEMS,
        description="Kernel families of the tensor-core conv GEMMs, fastest first (a conv GEMM "
        "runs in the first it is eligible for); None: the GEMM library's families.",
    )
    grouped_families: list[KernelFamily] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MENU_ITEMS,
        description="Kernel families of the ONE-launch grouped tensor-core conv (groups > 1, "
        "each group a grid dimension of the same kernel), fastest first; None: ``families``.",
    )
    large_filter_families: list[KernelFamily] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MENU_ITEMS,
        description="Kernel families of the tensor-core conv GEMMs whose filter is at least "
        "``large_filter_min_size`` wide (ungrouped), fastest first; None: ``families``.",
    )
    narrow_channel_families: list[KernelFamily] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MENU_ITEMS,
        description="Tensor-core kernel families that cudnn.benchmark also times for an "
        "ungrouped conv whose channels break ``tensor_op_channel_alignment_elements`` (the "
        "CUDA-core kernel is timed too; the faster wins); None: only the CUDA-core kernel.",
    )
    narrow_channel_filter_multiple: PositiveInt = Field(
        default=4,
        le=64,
        description="narrow_channel_families take only layers whose input channels C break "
        "the tensor-op rule and whose filters K are multiples of this (cuDNN's traced aligna2 "
        "kernels end alignc4 or alignc8: output channels stored in 4- or 8-element vectors).",
    )
    large_filter_min_size: PositiveInt = Field(
        default=7,
        le=64,
        description="Filter width (R or S, pixels) from which a conv runs "
        "in ``large_filter_families``.",
    )
    winograd_memory_formats: list[Literal["nhwc", "nchw"]] = Field(
        default=["nchw"],
        description="Layer memory formats for which the Winograd algorithms apply. cuDNN's "
        "Winograd algorithms (WINOGRAD, WINOGRAD_NONFUSED) take NCHW filters only: with an NHWC "
        "filter descriptor cudnnConvolutionForward supports IMPLICIT_GEMM and "
        "IMPLICIT_PRECOMP_GEMM alone (cuDNN API Reference, cudnnConvolutionForward, supported "
        "configurations; the same table as encoded in Rust-GPU/Rust-CUDA@3cb598f "
        "crates/cudnn/src/convolution_algo.rs, where every Winograd entry has an NCHW filter). "
        "So a channels-last conv (torch.channels_last, the layout of ../shared/data/h100/"
        "conv_alexnet.csv) runs implicit GEMM whatever cudnn.benchmark times.",
    )
    first_layer: FirstLayerKernel | None = Field(
        default=None,
        description="The dedicated image-input conv kernel (algorithm image_first_layer); None: "
        "the library has none.",
    )
    kernel_overhead_s: KernelSeconds = Field(
        default=0.0,
        description="Fixed time each tensor-core implicit-GEMM conv kernel spends beyond a GEMM "
        "kernel of its tiles, s (the conv iterators' per-thread set-up of filter-tap offsets "
        "and padding masks before the main loop); 0: none.",
    )
    split_k: bool = Field(
        default=False,
        description="Whether forward conv kernels split the reduction (C*R*S) across CTAs. "
        "False: one CTA per output tile, as ../shared/data/h100/conv_alexnet.csv shows: conv1 at "
        "batch 1 (24 output tiles, K = 363) takes 31.0 us; unsplit CTAs predict 29.2 us, split-K "
        "18.7 us.",
    )
