"""``archsim import onnx MODEL.onnx -o workload.yaml`` and ``archsim run HW MODEL.onnx``."""

from __future__ import annotations

import argparse
import atexit
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.cli_args import integer, number
from archsim.errors import ConfigError

if TYPE_CHECKING:  # the config models load with a command, not for `archsim --help`
    from archsim.config.workload import WorkloadSpec

__all__ = ["add_parser", "cmd", "load_onnx_workload"]


def _shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(integer(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: sizes like 1,3,227,227") from None
    if not dims or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be >= 1")
    if max(dims) > 2**31 - 1:  # ONNX shapes hold 64-bit ints; no tensor dimension is that long
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be < 2^31")
    return dims


def add_import_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``import onnx`` (and usable by other commands that import)."""
    p.add_argument(
        "--batch", type=integer, help="size of a dynamic batch dimension (required when dynamic)"
    )
    p.add_argument("--input-shape", type=_shape, help="data input shape, e.g. 1,3,227,227")
    p.add_argument("--inputs", metavar="NPY", help="input .npy for the activation measurement")
    p.add_argument(
        "--zero-threshold", type=number, default=0.0, help="|w| <= this counts as zero (0)"
    )
    p.add_argument(
        "--no-measure", action="store_true", help="do not run onnxruntime (densities 1.0)"
    )
    p.add_argument(
        "--densities-from",
        metavar="WORKLOAD",
        help="preset/YAML whose densities fill layers with placeholder weights (same shape)",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``archsim import onnx``."""
    imp = sub.add_parser("import", help="import a model (ONNX) as a workload YAML")
    kinds = imp.add_subparsers(dest="import_kind", metavar="FORMAT", required=True)
    p = kinds.add_parser(
        "onnx",
        help="ONNX model -> workload YAML (+ real fc/conv tensors in <stem>.data/)",
        description="Find every Conv/Gemm/MatMul/LSTM/GRU node, measure weight densities from "
        "the initialisers and activation densities with onnxruntime, list the other ops.",
    )
    p.add_argument("model", help="the .onnx file")
    p.add_argument("-o", "--out", required=True, help="workload YAML to write")
    add_import_options(p)


def _read(args: argparse.Namespace):
    from archsim.workload.onnx import read_onnx

    if args.batch is not None and args.batch < 1:
        raise ConfigError(
            "--batch", "", f"must be >= 1 (got {args.batch}); allowed: an integer >= 1"
        )
    return read_onnx(
        args.model,
        batch=args.batch,
        input_shape=args.input_shape,
        inputs=args.inputs,
        zero_threshold=args.zero_threshold,
        measure=not args.no_measure,
        densities_from=args.densities_from,
        batch_required=args.batch is not None,
    )


def format_import(imp) -> str:  # noqa: ANN001 - OnnxImport, imported lazily
    """Layers (shape, MACs, densities) and the op table with shares of FLOPs and bytes."""
    lines = [f"{'layer':<18}{'kind':<6}{'MACs':>16}{'w dens':>8}{'a dens':>8}"]
    for spec, pl in zip(imp.spec.layers, imp.layers, strict=True):
        lines.append(
            f"{spec.name[:17]:<18}{spec.kind:<6}{pl.macs:>16,}"
            f"{spec.weight_density:>8.3f}{spec.activation_density:>8.3f}"
        )
    lines.append(
        f"total {imp.macs_total:,} MACs in {len(imp.layers)} layers "
        f"({imp.folded_nodes} BatchNorm folded)"
    )
    lines.append(f"{'op':<22}{'count':>6}{'FLOPs %':>9}{'bytes %':>9}")
    for row in imp.op_table():
        lines.append(
            f"{str(row['op'])[:21]:<22}{row['count']:>6}{100 * row['flops_share']:>9.2f}"
            f"{100 * row['bytes_share']:>9.2f}"
        )
    return "\n".join(lines)


def cmd(args: argparse.Namespace) -> int:
    """Run ``archsim import onnx``."""
    from archsim.output import check_out_file
    from archsim.workload.onnx_export import check_data_folder, write_workload

    # before the import: not the model itself, a device or a FIFO (nor its .data folder)
    check_out_file(args.out, "-o", inputs=[Path(args.model)])
    if Path(args.out).suffix.lower() not in (".yaml", ".yml"):  # `-o model.onnx` became YAML
        where = "the workload; its tensors go to a .data folder beside it"
        problem = f"{args.out}: not a YAML file name; allowed: a path ending in .yaml or .yml "
        problem += f"({where})"
        raise ConfigError("-o", "", problem)
    check_data_folder(args.out)
    if args.no_measure and args.inputs is not None:
        raise ConfigError("--inputs", "", "unused with --no-measure; allowed: one of the two")
    imp = _read(args)
    notes = write_workload(imp, args.out)
    print(format_import(imp))
    for note in notes:
        print(f"tensors: {note}")
    for w in imp.warnings:
        print(f"warning: {w}")
    print(f"wrote {args.out}")
    return 0


def load_onnx_workload(
    path: str, batch: int | None = None, tensors: bool = True
) -> tuple[WorkloadSpec, tuple[str, ...]]:
    """Import ``path`` and load it as a workload; (workload, the import's warnings).

    ``batch`` sets a dynamic batch dimension (default 1); a model whose batch is fixed at
    another size is refused (its layers, activations and token rows hold that size).
    ``tensors``: write the real weights and activations into a temporary folder removed at
    exit, for the simulators that read them (eie, scnn, dcnn); else only the layers."""
    from archsim.config.io import load_workload
    from archsim.workload.onnx import read_onnx
    from archsim.workload.onnx_export import write_workload

    imp = read_onnx(path, batch=1 if batch is None else batch, batch_required=batch is not None)
    if not tensors:
        return imp.spec, imp.warnings
    tmp = Path(tempfile.mkdtemp(prefix="archsim-onnx-"))
    atexit.register(shutil.rmtree, tmp, True)
    yaml_path = tmp / f"{Path(path).stem}.yaml"
    write_workload(imp, yaml_path)
    # data files resolve in the temporary folder; messages name the model the user gave
    return load_workload(yaml_path).bind(tmp, str(path)), imp.warnings
