"""``archsim compress MODEL.onnx -o OUT.onnx``: Deep Compression and its storage report."""

from __future__ import annotations

import argparse

from archsim.cli_args import integer, number
from archsim.errors import ConfigError

__all__ = ["add_parser", "cmd"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``archsim compress``."""
    p = sub.add_parser(
        "compress",
        help="prune + share (k-means) an ONNX model's weights; print the storage report",
        description="Deep Compression (Han et al., ICLR 2016): magnitude pruning to target "
        "densities, k-means weight sharing with linear initialisation, CSC storage with "
        "relative indices, Huffman-coded sizes. The output is a valid ONNX model.",
    )
    p.add_argument("model", help="the .onnx file")
    p.add_argument("-o", "--out", help="compressed .onnx to write (omit: report only)")
    p.add_argument("--fc-density", type=number, default=1.0, help="Gemm/MatMul density (1.0)")
    p.add_argument("--conv-density", type=number, default=1.0, help="Conv density (1.0)")
    p.add_argument(
        "--density",
        action="append",
        default=[],
        metavar="NODE=D",
        help="density of one layer (ONNX node name); repeatable",
    )
    p.add_argument(
        "--plan",
        choices=["alexnet"],
        help="per-layer densities in graph order: alexnet = Han et al. 2016 Table 4 "
        "(conv 84/38/35/37/37 %%, fc 9/9/25 %%)",
    )
    p.add_argument("--fc-bits", type=integer, default=4, help="fc codebook bits (4)")
    p.add_argument("--conv-bits", type=integer, default=8, help="conv codebook bits (8)")
    p.add_argument("--fc-index-bits", type=integer, default=5, help="fc relative index bits (5)")
    p.add_argument(
        "--conv-index-bits", type=integer, default=8, help="conv relative index bits (8)"
    )


def _plan(args: argparse.Namespace):
    from archsim.compress.model import ALEXNET_DENSITIES, CompressionPlan

    per: dict[str, float] = {}
    for item in args.density:
        name, sep, val = item.rpartition("=")
        if name in per:  # the last one silently won
            raise ConfigError("--density", name, "given twice; allowed: each NODE once")
        try:
            per[name] = number(val)
        except ValueError:
            name = ""
        if not sep or not name:
            raise ConfigError("--density", item, "malformed; allowed: NODE=D, e.g. fc1=0.1")
    for flag, d in [
        ("--fc-density", args.fc_density),
        ("--conv-density", args.conv_density),
        *((f"--density {k}", v) for k, v in per.items()),
    ]:
        if not 0.0 < d <= 1.0:
            raise ConfigError(flag, "", f"{d} is outside (0, 1]; allowed: a density in (0, 1]")
    for flag, b in [
        ("--fc-bits", args.fc_bits),
        ("--conv-bits", args.conv_bits),
        ("--fc-index-bits", args.fc_index_bits),
        ("--conv-index-bits", args.conv_index_bits),
    ]:
        if not 1 <= b <= 8:
            raise ConfigError(flag, "", f"{b} is outside 1..8; allowed: 1 to 8 bits")
    return CompressionPlan(
        args.fc_density,
        args.conv_density,
        args.fc_bits,
        args.conv_bits,
        args.fc_index_bits,
        args.conv_index_bits,
        per,
        ALEXNET_DENSITIES if args.plan == "alexnet" else None,
    )


def format_report(report) -> str:  # noqa: ANN001 - list[LayerStorage]
    """Per-layer and total storage: density, CSC, Huffman, codebook, ratio."""
    head = f"{'layer':<16}{'density':>8}{'entries':>10}{'dense KB':>10}{'csc KB':>9}"
    head += f"{'huff KB':>9}{'ratio':>8}"
    lines = [head]
    for st in report:
        lines.append(
            f"{st.name[:15]:<16}{st.density:>8.3f}{st.entries:>10,}{st.dense_bytes / 1e3:>10.1f}"
            f"{st.csc_bytes / 1e3:>9.1f}{st.huffman_bytes / 1e3:>9.1f}{st.ratio:>7.1f}x"
        )
    dense = sum(st.dense_bytes for st in report)
    comp = sum(st.compressed_bytes for st in report)
    lines.append(
        f"total {dense / 1e3:.1f} KB -> {comp / 1e3:.1f} KB (Huffman-coded entries, "
        f"codebooks, pointers): {dense / comp:.1f}x"
    )
    return "\n".join(lines)


def cmd(args: argparse.Namespace) -> int:
    """Run ``archsim compress``."""
    from archsim.compress.model import compress_onnx

    report = compress_onnx(args.model, args.out, _plan(args))
    print(format_report(report))
    if args.out:
        print(f"wrote {args.out}")
    return 0
