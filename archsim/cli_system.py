"""``archsim collective`` (nccl-tests' table) and ``archsim train`` (a DDP training step)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from archsim.cli_args import integer, number
from archsim.errors import ArchsimError, one_line

__all__ = ["add_parsers", "cmd_collective", "cmd_train"]

_OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``collective`` and ``train``."""
    c = sub.add_parser(
        "collective",
        help="NCCL collective on a multi-GPU system: nccl-tests' size/time/algbw/busbw table",
        description="Time an NCCL collective over a range of sizes on a system preset "
        "(dgx1_v100, dgx_a100, dgx_h100, pcie4_v100, pcie8_v100) and print nccl-tests' table; "
        "writes results.csv, results.json and report.html (bandwidth vs size).",
    )
    c.add_argument("op", nargs="?", default="all_reduce", choices=_OPS, help="collective")
    c.add_argument("--system", default="dgx_h100", help="system preset or YAML (dgx_h100)")
    c.add_argument("--sizes", default="8:8G", help="MIN:MAX[:FACTOR] as nccl-tests -b -e -f")
    c.add_argument("--gpus", type=integer, help="GPUs used (default: all of the system)")
    c.add_argument("--algo", choices=("ring", "tree", "nvls"), help="force NCCL_ALGO")
    c.add_argument("--proto", choices=("LL", "LL128", "Simple"), help="force NCCL_PROTO")
    _common(c)
    t = sub.add_parser(
        "train",
        help="one data-parallel training step (PyTorch DDP) of a network on a multi-GPU system",
        description="Simulate one DDP training step of WORKLOAD on SYSTEM at each GPU count: "
        "compute, exposed and overlapped all-reduce, optimizer, samples/s, scaling efficiency, "
        "energy. Writes results.csv, results.json and report.html (scaling curve, timeline); "
        "with --tensor or --pipeline (model parallelism) results.csv and results.json only.",
    )
    t.add_argument("system", help="system preset or YAML, e.g. dgx_a100")
    t.add_argument("workload", help="workload preset or YAML, e.g. resnet50")
    t.add_argument(
        "--gpus",
        help="GPU counts, comma separated (default: 1, 2, 4, ... up to all of the system's "
        "GPUs, whole nodes past one; with --tensor/--pipeline, multiples of tensor x pipeline)",
    )
    t.add_argument("--precision", default="amp_fp16",
                   choices=("amp_fp16", "amp_bf16", "tf32", "fp32"))  # fmt: skip
    t.add_argument("--batch", type=integer, default=256, help="samples per GPU (256)")
    t.add_argument("--optimizer", default="sgd", choices=("sgd", "adam"))
    t.add_argument("--topk", type=number, help="gradient compression: fraction of gradients sent")
    t.add_argument(
        "--memory-format",
        default="nhwc",
        choices=("nhwc", "nchw"),
        help="activation layout (nchw: cuDNN transposes around tensor-core convs)",
    )
    t.add_argument(
        "--conv-lowering",
        default="gemm",
        choices=("gemm", "cudnn"),
        help="a conv's forward and data gradient: plain GEMMs (gemm) or cuDNN convs (cudnn)",
    )
    t.add_argument(
        "--tensor", type=integer, default=1, help="tensor-parallel GPUs (Megatron split)"
    )
    t.add_argument("--pipeline", type=integer, default=1, help="pipeline stages (GPipe)")
    t.add_argument("--micro-batches", type=integer, default=1, help="micro-batches per pipeline")
    _common(t)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--out", default="archsim-out", help="output folder (archsim-out)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a system field, e.g. --set nodes=8")  # fmt: skip
    p.add_argument("-q", "--quiet", action="store_true", help="no table on stdout")


def _system(args: argparse.Namespace):
    from archsim.config.io import parse_overrides
    from archsim.system import load_system

    cfg = load_system(args.system)
    if args.overrides:
        over = parse_overrides(args.overrides)
        step = next((p for p in over if p.split(".")[0] == "step"), None)
        if step is not None:  # a sweep point's step: this command's options set it
            what = _COLLECTIVE_OPTIONS if hasattr(args, "op") else _STEP_OPTIONS
            raise ArchsimError(
                f"--set {step}: the step block is what a sweep point runs, not read here; "
                f"allowed: {what}"
            )
        cfg = cfg.with_overrides(over, source="--set")
    return cfg


#: what sets the training step in `archsim train` (``step.*`` is a sweep's)
_STEP_OPTIONS = (
    "archsim train's --gpus, --precision, --batch, --optimizer, --topk, --memory-format, "
    "--conv-lowering"
)
#: what sets a collective in `archsim collective` (the step block is a training step's)
_COLLECTIVE_OPTIONS = "archsim collective's op, --sizes, --gpus, --algo, --proto"


def json_text(payload: Any) -> str:
    """Standard JSON (``results.json_text``; loaded on use: ``--help`` loads no pydantic)."""
    from archsim.results import json_text as strict

    return strict(payload)


def _write_outputs(
    arg: str, texts: dict[str, str], page: Callable[[Path], Any] | None = None
) -> Path:
    """Write ``texts`` (file name -> text) and ``page(folder)``'s report.html into the folder
    ``arg``, all or nothing (a full disk, a file limit or a folder in a file's place leaves
    neither a half-written folder nor some of the files); the folder's other result files (an
    earlier report.html without ``page``, a run's traces) are removed: they would describe
    other results."""
    from archsim.output import RESULT_FILES, write_outputs_atomically

    def write(tmp: Path) -> list[str]:
        for name, text in texts.items():
            (tmp / name).write_text(text, encoding="utf-8", newline="\n")
        if page is not None:
            page(tmp)
        return [*texts, *(["report.html"] if page is not None else [])]

    out = Path(arg)
    write_outputs_atomically(out, write, "-o", stale=RESULT_FILES)
    return out


def _determinism(kind: str) -> str:
    """The determinism statement of ``kind`` ('collective' or 'train'), as the pages print it."""
    from archsim.report.system_report import COLLECTIVE_DETERMINISM, TRAIN_DETERMINISM

    return {"collective": COLLECTIVE_DETERMINISM, "train": TRAIN_DETERMINISM}[kind]


def _provenance(determinism: str, system: Any, workload: str | None = None) -> dict[str, Any]:
    """What reproduces a collective's or training step's results: version, model
    fingerprint, the determinism statement, the GPU config the system names (its ``gpu`` is
    a name or path, whose file may change) and (training) the full workload spec."""
    from archsim.provenance import archsim_version, model_fingerprint
    from archsim.system.subsystem import gpu_config

    out: dict[str, Any] = {
        "archsim_version": archsim_version(),
        "model_fingerprint": model_fingerprint(),
        "deterministic": determinism,
        "gpu_config": gpu_config(system).model_dump(mode="json"),
    }
    if workload is not None:
        from archsim.config.io import load_workload

        spec = load_workload(workload)
        out |= {"workload_spec": spec.model_dump(mode="json"), "workload_origin": spec.origin}
    return out


def cmd_collective(args: argparse.Namespace) -> int:
    """Run ``archsim collective``."""
    from archsim.output import check_out_dir
    from archsim.report.system_report import write_collective_report
    from archsim.system.api import collective

    check_out_dir(args.out, "-o", results=True, probe=True)  # before the simulation
    cfg = _system(args)
    if args.gpus is not None and args.gpus < 2:
        raise ArchsimError(f"--gpus {args.gpus}: a collective needs 2 GPUs or more; allowed: "
                           f"2 to {cfg.gpus}")  # fmt: skip
    with _naming_the_file(args.system, cfg):
        frame = collective(cfg, args.op, args.sizes, args.gpus, args.algo, args.proto)
        # before anything is written: it loads the GPU the system names (a collective's
        # time does not), whose file may be missing or not a GPU
        provenance = _provenance(_determinism("collective"), cfg)
    meta: dict[str, Any] = {"system": cfg.model_dump(mode="json"), "op": args.op}
    # the options that change the results, as given (None: NCCL's choice / every GPU)
    meta["options"] = {"gpus": args.gpus, "algorithm": args.algo, "protocol": args.proto,
                       "sizes": args.sizes}  # fmt: skip
    meta |= provenance
    out = _write_outputs(
        args.out,
        {"results.csv": frame.to_csv(index=False),
         "results.json": json_text({**meta, "rows": frame.to_dict(orient="records")})},
        lambda tmp: write_collective_report(frame, tmp),
    )  # fmt: skip
    if not args.quiet:
        print(f"# {args.op} on {cfg.name}: {int(frame['gpus'].iloc[0])} GPUs, "
              f"{cfg.nodes} node(s); busbw = algbw x nccl-tests' bus factor")  # fmt: skip
        print(_table(frame))
        print(f"wrote {out / 'results.csv'}, results.json, report.html")
    return 0


def rebuild_system_report(folder: Path, data: dict[str, Any]) -> Path:
    """Re-write ``folder/report.html`` from the results.json ``data`` that ``archsim
    collective`` or ``archsim train`` wrote there; raises ``ArchsimError`` for another
    results.json, OSError when it cannot write."""
    import pandas as pd

    from archsim.report.system_report import write_collective_report, write_training_report
    from archsim.system.collectives import OPS

    source = folder / "results.json"
    try:
        if not isinstance(data.get("system"), dict) or "name" not in data["system"]:
            raise ValueError("system must be an object with a name (the system's config)")
        system = data["system"]["name"]
        if "op" in data or "rows" in data:  # a collective's (its op missing: "no 'op'")
            if data["op"] not in OPS:
                raise ValueError(f"op {data['op']!r} is not one of {', '.join(OPS)}")
            rows = _checked_rows(data["rows"], "rows", _COLLECTIVE_NUMBERS)
            frame = pd.DataFrame(rows)
            frame.attrs.update({"system": system, "op": data["op"]})
            return write_collective_report(frame, folder)
        if "timeline" not in data:
            raise ArchsimError(
                f"{source}: written by `archsim train --tensor/--pipeline`, which makes no "
                "report; allowed: a folder written by `archsim train` or `archsim collective`"
            )
        steps = _checked_rows(data["steps"], "steps", _STEP_NUMBERS)
        if not isinstance(data["timeline"], list):
            raise ValueError("timeline must be a list of spans")
        timeline = [_checked_span(i, e) for i, e in enumerate(data["timeline"])]
        name = str(data.get("workload_name", data["workload"]))
        return write_training_report(steps, timeline, name, folder)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as exc:
        what = f"no {exc}" if isinstance(exc, KeyError) else one_line(exc, 160)
        raise ArchsimError(
            f"{source}: not a results.json written by `archsim collective` or `archsim "
            f"train`: {what}; allowed: the file as that command writes it (run it again)"
        ) from None


#: the numbers a collective row and a training step must hold (the pages read them)
_COLLECTIVE_NUMBERS = ("gpus", "size_bytes", "count", "time_us", "algbw_gb_s", "busbw_gb_s")
_STEP_NUMBERS = (
    "gpus", "nodes", "batch_per_gpu", "step_s", "compute_s", "exposed_communication_s",
    "overlapped_communication_s", "optimizer_s", "samples_per_s", "single_gpu_samples_per_s",
    "speedup_vs_1_gpu", "scaling_efficiency", "energy_j",
)  # fmt: skip


def _finite(value: Any, where: str) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite number from 0 to 2**63."""
    from archsim.results import is_count

    if not is_count(value):
        huge = isinstance(value, int) and abs(value) >= 2**63
        shown = f"a {len(str(abs(value)))}-digit number" if huge else repr(value)
        raise ValueError(f"{where} is {shown}, not a finite number >= 0")


def _checked_rows(rows: Any, name: str, numbers: tuple[str, ...]) -> list[dict[str, Any]]:
    """``rows``: a non-empty list of objects whose ``numbers`` are finite and >= 0, and whose
    other numbers are too (None stands for a value not computed)."""
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{name} must be a non-empty list of objects")
    for i, row in enumerate(rows):
        for key in numbers:
            _finite(row[key], f"{name}.{i}.{key}")
        for key, value in row.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                _finite(value, f"{name}.{i}.{key}")
    return rows


def _checked_span(i: int, entry: Any) -> list[Any]:
    """One timeline entry: [stream, name, start s, end s], 0 <= start <= end."""
    if not isinstance(entry, list) or len(entry) != 4:  # not "not enough values to unpack"
        raise ValueError(f"timeline.{i} is not [compute|nccl, name, start, end >= start]")
    stream, label, start, end = entry
    _finite(start, f"timeline.{i}.start")
    _finite(end, f"timeline.{i}.end")
    if stream not in ("compute", "nccl") or not isinstance(label, str) or start > end:
        raise ValueError(f"timeline.{i} is not [compute|nccl, name, start, end >= start]")
    return [stream, label, start, end]


def _table(frame) -> str:
    """nccl-tests' columns, the size and count as wide as the largest row needs (8 GB sizes
    have 13-digit counts)."""
    ws = max(14, *(len(f"{v:,}") for v in frame["size_bytes"]))
    wc = max(12, *(len(f"{v:,}") for v in frame["count"]))
    head = (f"{'size (B)':>{ws}} {'count':>{wc}} {'type':>6} {'time (us)':>11} "
            f"{'algbw GB/s':>11} {'busbw GB/s':>11}  algorithm")  # fmt: skip
    lines = [head]
    for r in frame.itertuples():
        lines.append(
            f"{r.size_bytes:>{ws},} {r.count:>{wc},} {r.type:>6} {r.time_us:>11.2f} "
            f"{r.algbw_gb_s:>11.2f} {r.busbw_gb_s:>11.2f}  {r.algorithm}/{r.protocol}"
        )
    return "\n".join(lines)


def _gpu_counts(text: str | None, cfg: Any, unit: int = 1) -> list[int]:
    """The GPU counts of ``--gpus`` (each a multiple of ``unit``, tensor x pipeline), or by
    default 1, 2, 4, ... within a node, then 2, 4, ... whole nodes, and the whole system;
    with model parallelism (``unit`` > 1) only counts within one node."""
    if text is None:
        per, nodes = cfg.gpus_per_node, cfg.nodes
        counts = [g for g in (1 << i for i in range(per.bit_length())) if g <= per]
        counts += [per * k for k in (1 << i for i in range(nodes.bit_length())) if k <= nodes]
        counts = [g for g in {*counts, per, cfg.gpus} if g % unit == 0]
        if unit > cfg.gpus:
            raise ArchsimError(
                f"--tensor x --pipeline = {unit}: more than the {cfg.gpus} GPUs of {cfg.name}; "
                f"allowed: up to {cfg.gpus}"
            )
        if unit > 1:  # model parallelism is modelled inside one node (system.parallel)
            counts = [g for g in counts if g <= per]
        if not counts:  # e.g. 3 pipeline stages on 8 GPUs: 3 and 6, within a node
            counts = [g for g in (unit << i for i in range(per.bit_length())) if g <= per]
        if not counts:
            raise ArchsimError(
                f"--tensor x --pipeline = {unit}: more than one node of {per} GPUs of "
                f"{cfg.name} (model parallelism runs inside a node); allowed: up to {per}"
            )
        return sorted(counts)
    try:
        counts = [integer(x) for x in str(text).split(",")]  # an empty item ("1,,2") is an error
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise ArchsimError(f"--gpus {text!r}; allowed: positive integers, e.g. 1,2,4,8")
    odd = [g for g in counts if g % unit]
    if odd:
        raise ArchsimError(
            f"--gpus {text}: {odd[0]} is not a multiple of --tensor x --pipeline = {unit}; "
            f"allowed: multiples of {unit}"
        )
    return sorted(set(counts))


@contextlib.contextmanager
def _naming_the_file(arg: str, cfg: Any) -> Iterator[None]:
    """Errors found while running a system given as a YAML file name that file (they name the
    config's ``name:`` field, which for a copied preset is the preset's)."""
    try:
        yield
    except ArchsimError as exc:
        msg = str(exc)
        named = msg.startswith((f"{cfg.name}: ", f"{cfg.name} "))  # not a workload's error
        if Path(arg).suffix.lower() not in (".yaml", ".yml") or not named:
            raise
        head = f"{cfg.name}: "
        msg = msg[len(head) :] if msg.startswith(head) else msg
        raise ArchsimError(f"{arg}: {msg}") from None


def cmd_train(args: argparse.Namespace) -> int:
    """Run ``archsim train``."""
    from archsim.output import check_out_dir
    from archsim.report.system_report import write_training_report
    from archsim.system.training import StepOptions, run_step

    check_out_dir(args.out, "-o", results=True, probe=True)  # before the simulation
    for flag in ("tensor", "pipeline", "micro_batches"):
        if getattr(args, flag) < 1:
            raise ArchsimError(
                f"--{flag.replace('_', '-')} {getattr(args, flag)}; allowed: an integer >= 1"
            )
    if args.micro_batches > 1 and args.pipeline == 1:
        raise ArchsimError(f"--micro-batches {args.micro_batches}: micro-batches feed pipeline "
                           "stages; allowed: with --pipeline 2 or more")  # fmt: skip
    if args.batch % args.micro_batches:
        raise ArchsimError(f"--micro-batches {args.micro_batches} does not divide --batch "
                           f"{args.batch}; allowed: divisors of the batch")  # fmt: skip
    if args.topk is not None and not 0 < args.topk <= 1:  # NaN fails both
        raise ArchsimError(f"--topk {args.topk}; allowed: a fraction in (0, 1]")
    parallel = args.tensor > 1 or args.pipeline > 1
    unused = [
        flag
        for flag, used in (
            ("--topk", args.topk is not None),
            ("--memory-format", args.memory_format != "nhwc"),
            ("--conv-lowering", args.conv_lowering != "gemm"),
        )
        if used
    ]
    if parallel and unused:  # the model-parallel step models neither
        raise ArchsimError(f"{unused[0]}: data-parallel training only; allowed: without "
                           "--tensor/--pipeline")  # fmt: skip
    cfg = _system(args)
    if parallel:
        with _naming_the_file(args.system, cfg):
            return _cmd_parallel(args, cfg)
    with _naming_the_file(args.system, cfg):
        results = [
            run_step(cfg, args.workload, StepOptions(g, args.precision, args.batch,
                                                       args.optimizer, args.topk,
                                                       args.memory_format,
                                                       args.conv_lowering))
            for g in _gpu_counts(args.gpus, cfg)
        ]  # fmt: skip
    rows = []
    for r in results:
        s = {k: v for k, v in r.metadata["train_step"].items() if k != "timeline"}
        rows.append(s)
    import pandas as pd

    timeline, name = results[-1].metadata["train_step"]["timeline"], results[-1].workload
    out = _write_outputs(
        args.out,
        {"results.csv": pd.DataFrame(rows).to_csv(index=False),
         "results.json": json_text(
             {"system": cfg.model_dump(mode="json"), "workload": args.workload,
              "workload_name": name, **_provenance(_determinism("train"), cfg, args.workload),
              "steps": rows, "timeline": timeline})},
        lambda tmp: write_training_report(rows, timeline, name, tmp),
    )  # fmt: skip
    if not args.quiet:
        print(f"# {args.workload} on {cfg.name}, {args.precision}, batch {args.batch}/GPU")
        print(f"{'GPUs':>5} {'step ms':>9} {'compute':>9} {'exposed':>9} {'overlap':>9} "
              f"{'samples/s':>11} {'speed-up':>9} {'eff.':>6}")  # fmt: skip
        for s in rows:
            print(
                f"{s['gpus']:>5} {s['step_s'] * 1e3:>9.2f} {s['compute_s'] * 1e3:>9.2f} "
                f"{s['exposed_communication_s'] * 1e3:>9.3f} "
                f"{s['overlapped_communication_s'] * 1e3:>9.3f} {s['samples_per_s']:>11.1f} "
                f"{s['speedup_vs_1_gpu']:>8.2f}x {100 * s['scaling_efficiency']:>5.1f}%"
            )
        print(f"wrote {out / 'results.csv'}, results.json, report.html")
    return 0


def _cmd_parallel(args: argparse.Namespace, cfg) -> int:
    """``archsim train --tensor T --pipeline P``: model parallelism inside one node."""
    import pandas as pd

    from archsim.system.parallel import parallel_step

    rows = [
        parallel_step(cfg, args.workload, g, args.tensor, args.pipeline, args.micro_batches,
                      args.precision, args.batch, args.optimizer)
        for g in _gpu_counts(args.gpus, cfg, args.tensor * args.pipeline)
    ]  # fmt: skip
    # no page for model-parallel steps: one left by an earlier run would describe other results
    out = _write_outputs(
        args.out,
        {
            "results.csv": pd.DataFrame(rows).to_csv(index=False),
            "results.json": json_text(
                {
                    "system": cfg.model_dump(mode="json"),
                    "workload": args.workload,
                    **_provenance(_determinism("train"), cfg, args.workload),
                    "steps": rows,
                }
            ),
        },
    )
    if not args.quiet:
        print(
            f"# {args.workload} on {cfg.name}: tensor {args.tensor} x pipeline {args.pipeline}"
            f" x data, {args.micro_batches} micro-batches of {args.batch} samples per replica"
        )
        print(
            f"{'GPUs':>5} {'data':>5} {'step ms':>9} {'bubble':>7} {'allreduce ms':>13} "
            f"{'samples/s':>11}"
        )
        for r in rows:
            print(
                f"{r['gpus']:>5} {r['data']:>5} {r['step_s'] * 1e3:>9.2f} "
                f"{100 * r['bubble_fraction']:>6.1f}% {r['data_allreduce_s'] * 1e3:>13.3f} "
                f"{r['samples_per_s']:>11.1f}"
            )
        print(f"wrote {out / 'results.csv'}, results.json")
    return 0
