"""Multi-GPU claims: published nccl-tests bus bandwidths and NVIDIA's ResNet-50 training
throughputs (DeepLearningExamples), against the collective and training-step models."""

from __future__ import annotations

from archsim.validation.claims import Claim
from archsim.validation.runs import Runs

__all__ = ["MULTIGPU_CLAIMS"]

_NCCL_212 = (
    "NVIDIA/nccl-tests issue 212, S. Jeaugey (NCCL maintainer), 2024-05-06: DGX H100, 8 GPUs"
)
_NCCL_290 = "NVIDIA/nccl-tests issue 290, AddyLaddy (NVIDIA), 2025-03-03: single H100 node"
_NCCL_175 = "NVIDIA/nccl-tests issue 175, lcw2, 2023-10-29: one node of 8 A100 (NVSwitch), 4 GB"
_NCCL_1374 = "NVIDIA/nccl issue 1374, yupatrick22, 2024-07-24: 8 H800 (8 NVLink 4 links each), NVLS"
_DLE = (
    "NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "
    "Training performance (pytorch-21.03 NGC container)"
)
_BIG = 8 << 30
_SYSTEM = {"dgx1_v100": ", DGX-1 16GB (8x V100 16GB)", "dgx_a100": ", DGX A100 (8x A100 80GB)"}


def _busbw(system: str, algorithm: str | None, nbytes: int = _BIG, links: int | None = None):
    """busbw (GB/s) of an all-reduce; ``links``: NVLink links per GPU to the switch instead."""

    def value(runs: Runs) -> float:
        from archsim.system import load_system
        from archsim.system.collectives import collective_time

        def compute():
            cfg = load_system(system)
            if links is not None:
                topo = cfg.topology.model_dump()
                for link in topo["links"]:
                    link["count"] = links
                cfg = cfg.with_overrides({"topology.links": topo["links"]})
            return collective_time(cfg, "all_reduce", nbytes, algorithm)

        c = runs.memo(("all_reduce", system, algorithm, nbytes, links), compute)
        return c.busbw_bytes_per_s / 1e9  # type: ignore[attr-defined]

    return value


def _step(system: str, precision: str, what: str, memory_format: str):
    """A figure of the 8-GPU step (which also carries its single-GPU throughput)."""

    def value(runs: Runs) -> float:
        from archsim.system.training import train_step

        run = runs.memo(
            ("train", system, "resnet50", precision, memory_format, 8),
            lambda: train_step(
                system, "resnet50", gpus=8, precision=precision, memory_format=memory_format
            ),
        )
        return float(run.metadata["train_step"][what])  # type: ignore[attr-defined]

    return value


_BW_REASON = (
    "Large-message bus bandwidth is the links' payload bandwidth as NCCL models it (topo.h per "
    "link x links) times the algorithm's efficiency; 10 % is the issue's goal."
)
_MID = (
    " NVLS pipelines heads x channels x chunk bytes per loop through three warp groups "
    "(all_reduce.h: scatter, reduce+multicast, gather; chunk 128 KiB, 64 KiB below 64 loops, "
    "enqueue.cc), so fill and drain cost two loops; measured times (issue 290: 128 MB .. 4 GB) "
    "fit 96 us + bytes / 272 GB/s, and at 128 MB the fill (57 us) does not cover the whole gap "
    "(a known remainder, not tuned away)."
)
_TRAIN_REASON = (
    "Per-GPU work comes from the single-GPU model (GEMMs) plus elementwise and optimizer memory "
    "passes; the published figure also carries data loading (DALI), host launch overhead and "
    "ResNet-50 v1.5's stride placement (about 5 % slower than v1, which the preset models), "
    "none of which is simulated. 15 % is the issue's goal."
)
_A100_REASON = (
    " On the A100, TF32 runs NCHW (DLE's configs.yml sets nhwc for AMP only), so cuDNN "
    "transposes the activations around every tensor-core conv (modelled: TF32 +102 % -> +39 %). "
    "A gap of about 40 % common to AMP and TF32 remains and its mechanism is not found: the A100 "
    "preset streams at its peak 2039 GB/s (no A100 measurement in the reference; the V100 preset "
    "uses 87.8 % of peak), its memory-bound convs average 48 % of tensor peak (V100: 42 %), and "
    "host time and DALI decoding at 2470 img/s are not modelled."
)
_SCALE_REASON = (
    "The model's speed-up loses only exposed all-reduce time and the SMs NCCL takes from "
    "overlapped compute; NVIDIA's 8-GPU runs also lose host-side time (8 processes sharing the "
    "CPUs for data loading and launches), which is not modelled. 0.4x is the issue's goal."
)


def _claims() -> tuple[Claim, ...]:
    out = [
        Claim("multigpu", "H100x8 NVLS busbw 8G (#212)", _NCCL_212, 480.0, "GB/s",
              0.10, "relative", _BW_REASON, _busbw("dgx_h100", None)),
        Claim("multigpu", "H100x8 NVLS busbw 4G (#290)", _NCCL_290, 476.53, "GB/s",
              0.10, "relative", _BW_REASON, _busbw("dgx_h100", None, 4 << 30)),
        Claim("multigpu", "H100x8 ring busbw 8G", _NCCL_212,
              370.0, "GB/s", 0.10, "relative", _BW_REASON, _busbw("dgx_h100", "ring")),
        Claim("multigpu", "H100x8 NVLS busbw 128M (#290)", _NCCL_290, 382.99, "GB/s",
              0.10, "relative", _BW_REASON + _MID, _busbw("dgx_h100", None, 128 << 20)),
        Claim("multigpu", "H100x8 NVLS busbw 1G (#290)", _NCCL_290, 465.25, "GB/s",
              0.10, "relative", _BW_REASON + _MID, _busbw("dgx_h100", None, 1 << 30)),
        Claim("multigpu", "A100x8 busbw 4G (#175)", _NCCL_175, 232.54, "GB/s",
              0.10, "relative", _BW_REASON, _busbw("dgx_a100", None, 4 << 30)),
        Claim("multigpu", "H800x8 NVLS busbw (#1374)", _NCCL_1374, 215.0,
              "GB/s", 0.10, "relative", _BW_REASON + " The H800 is the H100 with 8 NVLink links.",
              _busbw("dgx_h100", None, links=8)),
    ]  # fmt: skip
    # system, precision, layout, published 1-GPU img/s, published 8-GPU img/s, label. Layout:
    # DLE's configs.yml sets memory_format: nhwc for AMP only; FP32/TF32 run main.py's default
    # nchw (PyTorch/Classification/ConvNets/configs.yml)
    table = (
        ("dgx1_v100", "amp_fp16", "nhwc", 1200.0, 8322.0, "V100 AMP"),
        ("dgx1_v100", "fp32", "nchw", 367.0, 2855.0, "V100 FP32"),
        ("dgx_a100", "amp_fp16", "nhwc", 2470.0, 16621.0, "A100 AMP"),
        ("dgx_a100", "tf32", "nchw", 938.0, 7248.0, "A100 TF32"),
    )
    for system, prec, fmt, one, eight, label in table:
        out.append(Claim("multigpu", f"RN50 {label} 1-GPU img/s", _DLE + _SYSTEM[system], one,
                         "img/s", 0.15, "relative",
                         _TRAIN_REASON + (_A100_REASON if system == "dgx_a100" else ""),
                         _step(system, prec, "single_gpu_samples_per_s", fmt)))  # fmt: skip
        out.append(Claim("multigpu", f"RN50 {label} 8-GPU speed-up", _DLE + _SYSTEM[system],
                         round(eight / one, 2), "x", 0.4, "absolute", _SCALE_REASON,
                         _step(system, prec, "speedup_vs_1_gpu", fmt)))  # fmt: skip
    return tuple(out)


MULTIGPU_CLAIMS = _claims()
