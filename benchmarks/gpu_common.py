"""What the GPU measurement scripts share: a timestamped log line, conv shapes, torchvision nets.

Imported by the ``benchmarks/gpu_*.py`` scripts (run as ``python benchmarks/<script>.py``, so
this folder is on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from archsim.measure.backend import ConvShape

#: torchvision networks the scripts time and trace, by name (``tv``: the torchvision module)
NETS = {
    "resnet50": lambda tv: tv.models.resnet50(),
    "googlenet": lambda tv: tv.models.googlenet(aux_logits=False, init_weights=False),
    "vgg16": lambda tv: tv.models.vgg16(),
}


def log(msg: str) -> None:
    """One progress line on stderr, with the wall-clock time."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def conv_shape(
    net: str, layer: str, n: int, c: int, k: int, hw: int, r: int, stride: int, pad: int
) -> ConvShape:
    """A square conv (``hw`` x ``hw`` input, ``r`` x ``r`` filter, one group) with its output
    size."""
    q = (hw + 2 * pad - r) // stride + 1
    return ConvShape(net, layer, n, c, k, hw, hw, r, r, stride, pad, 1, q, q)


def conv_shapes_of(folder: Path) -> list[ConvShape]:
    """The convs of a measurement folder's ``conv_*.csv`` files (read and checked as
    ``archsim validate --measured`` reads them), in file order, to time them again (at other
    settings, or on another card)."""
    from archsim.measure.folder import read_folder

    out: list[ConvShape] = []
    for frame in read_folder(folder).conv.values():
        for r in frame.to_dict(orient="records"):
            ints = [int(r[c]) for c in ("batch", "c", "k", "h", "w", "r", "s", "stride", "pad",
                                        "groups", "p", "q")]  # fmt: skip
            out.append(ConvShape(str(r["net"]), str(r["layer"]), *ints, str(r["precision"])))
    return out


def shapes_from_folder(ap: Any, option: str, folder: Path, read: Any, none: str) -> list[Any]:
    """``read(folder)``'s shapes for a script's ``option``; a folder the reader refuses, or one
    without any (``none`` says what it lacks), ends the script as an argparse error (exit 2)."""
    from archsim.measure.folder import MeasurementError

    try:
        shapes = read(folder)
    except MeasurementError as exc:
        ap.error(f"{option}: {exc}")
    if not shapes:
        ap.error(f"{option}: {folder} has no {none}")
    return shapes


def torchvision_net(torch: Any, name: str) -> Any:
    """torchvision network ``name`` on the GPU as the scripts time it: fp16, channels-last,
    eval."""
    import torchvision

    return NETS[name](torchvision).cuda().half().to(memory_format=torch.channels_last).eval()


def forward_op(torch: Any, model: Any, batch: int) -> Any:
    """A call running ``model`` forward (no autograd) on ``batch`` random 224 x 224 images."""
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.float16)
    x = x.to(memory_format=torch.channels_last)

    def op() -> None:
        with torch.no_grad():
            model(x)

    return op


def timed_with_kernels(
    backend_name: str,
    out: Path,
    items: list[Any],
    budget_s: float,
    names: tuple[str, str],
    rows: Callable[[Any, Any], pd.DataFrame],
    op: Callable[[Any, Any], Any],
    head: Callable[[Any], dict],
    setup: Callable[[Any], dict] | None = None,
) -> None:
    """Time each of ``items`` the probe's way (``rows(backend, item)``, a measurement CSV
    ``names[0]`` with an empty-readings ``device_memory_energy.json``) and, on the torch
    backend, list its kernels (``op(backend, item)`` under CUPTI, ``names[1]``, each row led by
    ``head(item)``), writing both after every item and stopping when ``budget_s`` is spent.
    ``setup(backend)`` runs before the first item; what it returns is recorded in the JSON's
    ``settings``."""
    from archsim.measure.loader import load_backend

    t0 = time.monotonic()
    b = load_backend(backend_name)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"device": b.device_info(), "memory_eager": {}, "energy": {}}
    if setup is not None:
        doc["settings"] = setup(b)
    (out / "device_memory_energy.json").write_text(json.dumps(doc, indent=1) + "\n")
    frames, kern = [], []
    for i, item in enumerate(items):
        if time.monotonic() - t0 > budget_s:
            log(f"out of time at item {i}")
            break
        try:
            frames.append(rows(b, item))
            pd.concat(frames).to_csv(out / names[0], index=False)
            if backend_name == "torch":
                import torch
                from gpu_kernel_names import kernels_of

                kern += [{**head(item), **k} for k in kernels_of(torch, op(b, item), reps=3)]
                pd.DataFrame(kern).to_csv(out / names[1], index=False)
        except Exception as exc:  # noqa: BLE001 - keep the other rows
            log(f"item {i} {item} failed: {exc!r}")
        finally:
            b.release()
    log(f"done in {time.monotonic() - t0:.0f} s")


def script_parser(doc: str) -> argparse.ArgumentParser:
    """The measurement scripts' common arguments: ``-o/--out`` (the folder written) and
    ``--backend`` (``torch`` on the GPU, ``fake`` here); ``doc``: the script's docstring."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--backend", default="torch", choices=["torch", "fake"])
    return ap


def add_v100_set(ap: argparse.ArgumentParser) -> None:
    """The repeatable ``--v100-set PATH=YAML`` option (read by :func:`v100_preset`)."""
    ap.add_argument(
        "--v100-set", action="append", default=[], metavar="PATH=YAML",
        help="override a V100 preset field (repeatable)",
    )  # fmt: skip


def v100_preset(items: list[str]) -> tuple[Any, dict[str, Any]]:
    """The ``v100`` preset with each ``--v100-set PATH=YAML`` of ``items`` applied (parsed as
    ``archsim run --set`` parses its items), and those overrides (empty: the preset as shipped)."""
    import archsim
    from archsim.config.io import parse_overrides

    hw = archsim.load_hardware("v100")
    over = parse_overrides(items)
    return (hw.with_overrides(over, "--v100-set") if over else hw), over


def pair_errors(pairs: list[tuple[float, float]]) -> dict[str, float]:
    """Statistics of (simulated, measured) pairs: ``archsim.validation.measured.error_stats``
    (n, median and p90 |relative error|, Spearman) with the largest |error| and the signed
    median beside them."""
    from archsim.validation.measured import error_stats

    sim = pd.Series([s for s, _ in pairs], dtype=float)
    meas = pd.Series([m for _, m in pairs], dtype=float)
    out = error_stats(meas, sim)
    err = sim / meas - 1
    out.update(max_abs_error=float(err.abs().max()), signed_median=float(err.median()))
    return out
