"""HTML pages of the multi-GPU model: a collective's bandwidth vs size, a training scaling curve
with the timeline of one step. Self-contained (inline SVG), like every archsim report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from markupsafe import Markup
from matplotlib.figure import Figure

from archsim.report.formatting import fmt_num, fmt_time
from archsim.report.page import environment, write_page
from archsim.report.plots import figure_to_svg
from archsim.simulate import archsim_version

__all__ = ["write_collective_report", "write_training_report"]

_GB = "GB/s"


def _figure(w: float = 8.0, h: float = 3.6) -> tuple[Figure, Any]:
    fig = Figure(figsize=(w, h))
    return fig, fig.add_subplot(1, 1, 1)


def _svg(fig: Figure, name: str, caption: str) -> dict[str, Any]:
    return {"id": name, "svg": Markup(figure_to_svg(fig, name)), "caption": caption}


def bandwidth_figure(frame: pd.DataFrame) -> Figure:
    """algbw and busbw (GB/s) against message size (bytes, log scale)."""
    fig, ax = _figure()
    ax.plot(frame["size_bytes"], frame["busbw_gb_s"], marker="o", ms=3, label="busbw")
    ax.plot(frame["size_bytes"], frame["algbw_gb_s"], marker="s", ms=3, label="algbw")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel(_GB)
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


#: what a collective's or a training step's results depend on (results.json and the pages)
COLLECTIVE_DETERMINISM = "results depend only on (system, collective, sizes, options)"
TRAIN_DETERMINISM = "results depend only on (system, workload, options)"


def _page(title: str, lead: str, cards, notes, figures, table_title, header, rows, out) -> Path:
    html = environment().get_template("system.html.j2").render(
        title=title, lead=lead, cards=cards, notes=notes, figures=figures,
        table_title=table_title, header=header, rows=rows, version=archsim_version(),
    )  # fmt: skip
    return write_page(html, out, "report.html")


def write_collective_report(frame: pd.DataFrame, out: str | Path) -> Path:
    """``report.html`` of ``archsim.collective``'s table."""
    system, op = frame.attrs.get("system", "?"), frame.attrs.get("op", "?")
    gpus = int(frame["gpus"].iloc[0]) if len(frame) else 0
    peak = frame["busbw_gb_s"].max() if len(frame) else 0.0
    cards = [("system", system), ("collective", op), ("GPUs", gpus),
             ("peak busbw", f"{peak:.1f} {_GB}")]  # fmt: skip
    notes = [
        "algbw = size / time; busbw = algbw x 2(n-1)/n (all-reduce), (n-1)/n (reduce-scatter, "
        "all-gather), 1 (broadcast, reduce): nccl-tests doc/PERFORMANCE.md. Time = NCCL's "
        "tuning model (latency + size / bandwidth) of the fastest algorithm and protocol.",
        f"Deterministic: {COLLECTIVE_DETERMINISM}.",
    ]
    rows = [
        [f"{r.size_bytes:,}", f"{r.count:,}", r.type, fmt_num(r.time_us), fmt_num(r.algbw_gb_s),
         fmt_num(r.busbw_gb_s), r.algorithm, r.protocol, r.channels,
         fmt_num(getattr(r, "energy_j", float("nan")))]
        for r in frame.itertuples()
    ]  # fmt: skip
    header = ["size (B)", "count", "type", "time (\u00b5s)", f"algbw ({_GB})", f"busbw ({_GB})",
              "algorithm", "protocol", "channels", "energy (J)"]  # fmt: skip
    figs = [_svg(bandwidth_figure(frame), "bw", "Bus and algorithm bandwidth against size.")]
    return _page(f"{op} on {system}", f"NCCL {op} on {gpus} GPUs.", cards, notes, figs,
                 "nccl-tests table", header, rows, out)  # fmt: skip


def scaling_figure(steps: list[dict[str, Any]]) -> Figure:
    """Samples per second and scaling efficiency against GPU count."""
    fig, ax = _figure(8.0, 3.4)
    gpus = [s["gpus"] for s in steps]
    ax.plot(gpus, [s["samples_per_s"] for s in steps], marker="o", label="simulated")
    ax.plot(gpus, [s["single_gpu_samples_per_s"] * g for s, g in zip(steps, gpus, strict=True)],
            ls="--", color="gray", label="linear")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("samples / s")
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def timeline_figure(timeline: list) -> Figure:
    """One step: compute and NCCL streams (same on every GPU), seconds; ``timeline`` holds
    (stream, name, start s, end s) entries. One bar collection per lane and colour (a bar per
    entry as its own artist took 7.7 s for 13,000 entries; this 1.2 s)."""
    fig, ax = _figure(9.0, 2.2)
    lanes = {"compute": 1, "nccl": 0}
    colors = {"fwd": "#4c72b0", "dgrad": "#dd8452", "wgrad": "#55a868", "nccl": "#c44e52"}
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for stream, name, start, end in timeline:
        kind = "nccl" if stream == "nccl" else name.rsplit("/", 1)[-1]
        key = (lanes[stream], colors.get(kind, "#8c8c8c"))
        bars.setdefault(key, []).append((start, end - start))
    for (lane, color), spans in bars.items():
        ax.broken_barh(spans, (lane - 0.3, 0.6), facecolors=color, linewidth=0)
    if timeline:
        ax.set_xlim(min(e[2] for e in timeline), max(e[3] for e in timeline))
    ax.set_yticks([0, 1], ["NCCL", "compute"])
    ax.set_xlabel("time in step (s)")
    fig.tight_layout()
    return fig


def write_training_report(
    steps: list[dict[str, Any]], timeline: list, workload: str, out: str | Path
) -> Path:
    """``report.html`` of training steps at several GPU counts (``steps``: each step's
    ``train_step`` metadata, as results.json keeps them) with the last one's ``timeline``."""
    last = steps[-1]
    cards = [
        ("system", last["system"]),
        ("workload", workload),
        ("precision", last["precision"]),
        ("batch / GPU", last["batch_per_gpu"]),
        ("step", fmt_time(last["step_s"])),
        ("scaling eff.", f"{100 * last['scaling_efficiency']:.1f} %"),
    ]
    energy = "energy/step (J)"
    if any(s.get("gpu_energy") == "actions only" for s in steps):  # v100, a100: no power model
        energy = "energy/step (J; GPUs: priced actions only, no static power)"
    header = ["GPUs", "nodes", "step", "compute", "exposed comm", "DDP copy-back",
              "optimizer", "overlapped comm", "samples/s", "speed-up", "efficiency",
              energy]  # fmt: skip
    rows = []
    for s in steps:
        rows.append([
            s["gpus"], s["nodes"], fmt_time(s["step_s"]), fmt_time(s["compute_s"]),
            fmt_time(s["exposed_communication_s"]), fmt_time(s.get("ddp_copy_back_s", 0.0)),
            fmt_time(s["optimizer_s"]), fmt_time(s["overlapped_communication_s"]),
            fmt_num(s["samples_per_s"]),
            f"{s['speedup_vs_1_gpu']:.2f}x", f"{100 * s['scaling_efficiency']:.1f} %",
            fmt_num(s["energy_j"]),
        ])  # fmt: skip
    figs = [
        _svg(scaling_figure(steps), "scaling", "Throughput against GPU count; dashed: linear."),
        _svg(timeline_figure(timeline), "timeline",
             f"One step on {last['gpus']} GPUs: forward (blue), data gradient (orange), weight "
             "gradient (green), elementwise (grey) and the bucketed all-reduces (red)."),
    ]  # fmt: skip
    notes = [
        "Per GPU: GEMMs from the single-GPU Tensor Core model; elementwise passes and the "
        "optimizer at achievable HBM bandwidth; DDP buckets all-reduced on one NCCL stream as "
        "their gradients are ready, slowing the compute they overlap by the SMs NCCL occupies.",
        f"Deterministic: {TRAIN_DETERMINISM}.",
    ]
    return _page(f"Training step: {workload} on {last['system']}",
                 "Data-parallel training (PyTorch DDP) on the SimPy engine.", cards, notes, figs,
                 "Scaling", header, rows, out)  # fmt: skip
