"""``simulate``: hardware x workload x seed -> RunResult (timing, energy, area)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.config.base import ArchsimModel
from archsim.config.io import load_hardware, load_workload
from archsim.config.workload import WorkloadSpec
from archsim.energy.pricing import PriceList, eie_price_list, price_counts
from archsim.energy.pricing_cnn import dcnn_price_list, scnn_price_list
from archsim.energy.pricing_gpu import gpu_price_list
from archsim.energy.pricing_systolic import systolic_price_list
from archsim.errors import ConfigError, SimulationError, integral, shown_name
from archsim.limits import check_workload_size
from archsim.progress import ProgressFn, ReportingLayers, check_progress
from archsim.provenance import archsim_version, model_fingerprint, provenance, source_digest
from archsim.results import LayerResult, RunResult
from archsim.units import INT64_MAX, cycles_to_seconds, power_w
from archsim.workload.gemm import lower_to_gemm

if TYPE_CHECKING:
    from archsim.accelerators.base import LayerOutcome

__all__ = ["simulate", "archsim_version", "model_fingerprint", "source_digest", "PRICE_LISTS"]


def _with_baseline(
    result: RunResult,
    baseline: ArchsimModel | str | Path,
    workload: WorkloadSpec | str | Path,
    seed: int,
    progress: ProgressFn | None = None,
) -> RunResult:
    """Attach per-layer speed-up and energy ratio against ``baseline`` (see ``simulate``)."""
    base = simulate(baseline, workload, seed, progress=progress)
    tag = base.accelerator
    by_name = {lr.layer: lr for lr in base.layers}
    layers = []
    for lr in result.layers:
        b = by_name[lr.layer]
        extras = {
            **lr.extras,
            f"speedup_vs_{tag}": b.time_s / lr.time_s if lr.time_s else 0.0,
            f"energy_ratio_vs_{tag}": b.energy_pj / lr.energy_pj if lr.energy_pj else 0.0,
        }
        layers.append(replace(lr, extras=extras))
    warnings = result.warnings
    hw = result.metadata.get("hardware_config", {})
    if (hw.get("power") is None) != (getattr(baseline, "power", None) is None):
        board = result.hardware if hw.get("power") is not None else base.hardware
        other = base.hardware if board == result.hardware else result.hardware
        warnings += (
            f"energy_ratio_vs_{tag}: {board} prices board energy (static power + actions), "
            f"{other} only its actions (no power: block), so the ratio mixes the two",
        )
    meta = {
        **result.metadata,
        "baseline": {
            **base.summary(),
            f"speedup_vs_{tag}": base.total_time_s / result.total_time_s,
            f"energy_ratio_vs_{tag}": base.total_energy_pj / result.total_energy_pj,
        },
    }
    return replace(result, layers=tuple(layers), metadata=meta, warnings=warnings)


#: accelerator name -> function(config) -> PriceList
PRICE_LISTS = {
    "eie": eie_price_list,
    "scnn": scnn_price_list,
    "dcnn": dcnn_price_list,
    "tensor_core": gpu_price_list,
    "systolic": systolic_price_list,
}


def _board_columns(extras: dict, energy_pj: float, macs: int) -> dict:
    """GPU layers solved under a power limit also report joules and pJ per FLOP."""
    if "board_power_w" not in extras:
        return extras
    flops = 2 * macs
    return {**extras, "energy_j": energy_pj * 1e-12, "pj_per_flop": energy_pj / flops}


def _board_totals(layers: list[LayerResult]) -> dict:
    """Per run: joules, average board watts, pJ/FLOP, time-weighted clock, any power limit."""
    t = math.fsum(lr.time_s for lr in layers)  # as RunResult's totals sum (correctly rounded)
    e = math.fsum(lr.energy_pj for lr in layers)
    flops = 2 * sum(lr.macs_dense for lr in layers)
    clocks = {lr.extras["clock_hz"] for lr in layers}
    mean_clock = math.fsum(lr.extras["clock_hz"] * lr.time_s for lr in layers) / t if t else 0.0
    return {
        "energy_j": e * 1e-12,
        "average_power_w": e * 1e-12 / t if t else 0.0,
        "pj_per_flop": e / flops if flops else 0.0,
        # one clock for every layer: that clock, not a weighted mean's last-bit rounding
        "clock_hz": clocks.pop() if len(clocks) == 1 else mean_clock,
        "power_limited": any(lr.extras["power_limited"] for lr in layers),
    }


def _check_representable(
    wl: WorkloadSpec, o: LayerOutcome, energy: float, by_comp: dict[str, float]
) -> None:
    """Refuse a layer whose cycles (its end cycle: the run's total so far), MACs or bytes pass
    64 bits or whose energy is not finite (a GPU layer is not bounded by ARCHSIM_MAX_CYCLES; a
    price field of 1e308 pJ): results.json and a sweep's store could not hold it (a run at
    batch 1e15 exited 0 and its results.json was refused), and a sweep died writing it after
    every point had run."""
    layer = o.layer
    for what, value in (("cycles", max(o.cycles, o.end_cycle)), ("dense MACs", o.macs_dense),
                        ("MACs", o.macs_effective), ("DRAM bytes", o.dram_bytes)):  # fmt: skip
        if value > INT64_MAX:
            raise SimulationError(
                f"{wl.origin}: layer {layer!r} takes about {float(value):.3g} {what}, past "
                f"64-bit results ({INT64_MAX:,}); allowed: a smaller layer or batch, "
                "or hardware fields nearer real parts (launch times, rates)"
            )
    if not math.isfinite(energy):
        bad = sorted(c for c, pj in by_comp.items() if not math.isfinite(pj))
        raise SimulationError(
            f"{wl.origin}: layer {layer!r}: its energy overflows (components {', '.join(bad)}); "
            "allowed: energy and power fields nearer real parts"
        )


#: accelerators whose models read a layer's ``data:`` folder (real tensors)
READS_DATA = frozenset({"eie", "scnn", "dcnn"})


def _listed(names: list[str], most: int = 3) -> str:
    """``layer a, layer b, layer c and 4 more``."""
    shown = ", ".join(f"layer {n}" for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


#: ``layer NAME: text`` (NAME bare or quoted), the form of every per-layer warning
_LAYER_WARNING = re.compile(r"^layer ('[^']*'|\S+?): (.*)$", re.DOTALL)
_FIGURES = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def merge_layer_warnings(warnings: list[str]) -> list[str]:
    """One line per cause: warnings that differ only in the layer and their figures (53
    ResNet-50 layers over a power limit were 53 lines) become ``layer a, layer b, layer c and
    50 more: <the text, each differing figure as its lowest-highest range> (each figure's
    range over the 53 layers)``; order of first appearance."""
    groups: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for i, w in enumerate(warnings):
        m = _LAYER_WARNING.match(w)
        if m is None:  # a warning of no layer stays as it is, each one
            groups[("", str(i))] = [("", w)]
            continue
        members = groups.setdefault(("L", _FIGURES.sub("#", m.group(2))), [])
        if any(n == m.group(1) for n, _ in members):  # a layer's second such warning: apart
            groups[("L", str(i))] = [(m.group(1), m.group(2))]
        else:
            members.append((m.group(1), m.group(2)))
    out = []
    for members in groups.values():
        name, text = members[0]
        if not name or len(members) == 1:
            out.append(f"layer {name}: {text}" if name else text)
            continue
        names = [n for n, _ in members]
        same = all(t == text for _, t in members)
        out.append(f"{_listed(names)}: " + (text if same else
                   f"{_ranged([t for _, t in members])} (each figure's range over the "
                   f"{len(members)} layers)"))  # fmt: skip
    return out


def _ranged(texts: list[str]) -> str:
    """``texts`` (one template, other figures) with each figure that differs shown as its
    ``lowest-highest`` range: ``board power 215-227 W at 345 MHz``."""
    pieces = _FIGURES.split(texts[0])
    figures = [_FIGURES.findall(t) for t in texts]
    out = [pieces[0]]
    for i, piece in enumerate(pieces[1:]):
        seen = [f[i] for f in figures]
        lo, hi = min(seen, key=float), max(seen, key=float)
        out += [lo if float(lo) == float(hi) else f"{lo}-{hi}", piece]
    return "".join(out)


#: each model's functional check: (largest |output - NumPy reference| column, its bound column;
#: None where the output must be exact)
FUNCTIONAL_CHECKS: tuple[tuple[str, str | None], ...] = (
    ("eie_functional_max_error", "eie_functional_error_bound"),
    ("dcnn_functional_max_error", "dcnn_functional_error_bound"),
    ("systolic_functional_max_error", None),
    ("tc_functional_max_error", "tc_functional_error_bound"),
)


def _hbm_overflow(hw: Any, wl: WorkloadSpec) -> list[str]:
    """One warning naming the GPU layers whose operands and output exceed the part's HBM
    (``hbm_capacity_bytes``): the real part cannot run them as one kernel."""
    cap = getattr(hw, "hbm_capacity_bytes", None)
    if cap is None:
        return []
    over = []
    for spec in wl.layers:
        try:
            need = lower_to_gemm(spec).footprint_bytes
        except ValueError:  # a layer the GPU cannot lower: the model says so itself
            continue
        if need > cap:
            over.append((spec.name, need))
    if not over:
        return []
    most = max(n for _, n in over)
    return [
        f"{_listed([n for n, _ in over])}: operands and output need up to {most / 2**30:.4g} "
        f"GiB, more than the {cap / 2**30:.4g} GiB of HBM of {hw.name}; timed as if they fit"
    ]


def _functional_warnings(layer: str, extras: Mapping[str, Any]) -> list[str]:
    """A warning for each functional check of ``extras`` whose error passes its bound: the
    datapath computed something other than the layer (a check not run is NaN or absent)."""
    out = []
    for err_key, bound_key in FUNCTIONAL_CHECKS:
        err = extras.get(err_key)
        bound = 0.0 if bound_key is None else extras.get(bound_key)
        if err is None or bound is None or not err > bound:  # NaN: not checked
            continue
        out.append(
            f"layer {layer}: functional check failed: {err_key} {err:.6g} exceeds "
            f"{bound_key or 'exact agreement'} {bound:.6g}: a simulator bug, please report it"
        )
    return out


def simulate(
    hardware: ArchsimModel | str | Path,
    workload: WorkloadSpec | str | Path,
    seed: int = 0,
    baseline: ArchsimModel | str | Path | None = None,
    progress: ProgressFn | None = None,
) -> RunResult:
    """Simulate ``workload`` on ``hardware`` (configs, preset names or YAML paths).

    With ``baseline`` (e.g. ``"dcnn"`` for SCNN) the same workload and seed also run on the
    baseline, and every layer gets ``speedup_vs_<baseline>`` (baseline time / this time) and
    ``energy_ratio_vs_<baseline>`` (baseline energy / this energy); the baseline's totals go to
    ``metadata["baseline"]``. The result depends only on (hardware, workload, seed).
    ``progress(done, total, layer_name)`` is called as each layer's simulation finishes (for
    the run, then again from 1 for the baseline's run).
    """
    check_progress(progress, "progress(done, total, layer_name)")
    if baseline is not None:
        base_hw, base_wl = load_hardware(baseline), load_workload(workload)
        if getattr(base_hw, "accelerator", None) == "system":
            raise ConfigError(
                "--baseline", "", f"{base_hw.name!r} is a multi-GPU system; allowed: one "  # type: ignore[attr-defined]
                "accelerator (eie, scnn, dcnn, systolic or tensor_core hardware)"
            )  # fmt: skip
        try:  # refuse before the first run, not after it
            check_workload_size(base_hw, base_wl)
        except SimulationError as exc:  # it named the workload, not the baseline
            raise SimulationError(f"--baseline {base_hw.name}: {exc}") from None  # type: ignore[attr-defined]
        run = simulate(hardware, base_wl, seed, progress=progress)
        return _with_baseline(run, base_hw, base_wl, seed, progress)
    hw = load_hardware(hardware)
    wl = load_workload(workload)
    seed = integral(seed)  # a NumPy integer from a sweep's frame
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= INT64_MAX:
        raise ConfigError(
            "<api>", "seed", f"got {shown_name(repr(seed))}; allowed: an integer from 0 to 2**63-1"
        )
    from archsim.accelerators import REGISTRY  # numba and the kernels load with the first run

    acc = hw.accelerator  # type: ignore[attr-defined]
    if acc == "system":
        raise SimulationError(
            f"{hw.name!r} is a multi-GPU system: simulate one of its GPUs (hardware "  # type: ignore[attr-defined]
            f"{hw.gpu!r}), or use `archsim train` / archsim.train_step and "  # type: ignore[attr-defined]
            "`archsim collective` / archsim.collective"
        )
    check_workload_size(hw, wl)
    if acc not in REGISTRY:
        raise SimulationError(
            f"no simulator for accelerator {acc!r} in this version; allowed: "
            f"{', '.join(sorted(REGISTRY))}"
        )
    origin = provenance(hw, wl)  # before progress reporting wraps the layer list
    # layers whose real tensors (a data: folder) the sparse engines simulate; others: seeded
    with_data = [spec.name for spec in wl.layers if getattr(spec, "data", None) is not None]
    real_tensors = with_data if acc in READS_DATA else []
    if progress is not None:  # reports each layer as the simulator walks the list
        wl = wl.model_copy(update={"layers": ReportingLayers(wl.layers, progress)})
    prices: PriceList = PRICE_LISTS[acc](hw)
    # the GPU model solves each layer's clock under the power limit: it needs the prices
    priced = {"energy_pj": prices.energy_pj} if acc == "tensor_core" else {}
    outcomes, ctx = REGISTRY[acc](hw, wl, seed, **priced)
    clock = hw.clock.frequency_hz  # type: ignore[attr-defined]
    layers = []
    warnings: list[str] = []
    if with_data and not real_tensors:
        warnings.append(
            f"{_listed(with_data)}: data: folder not read; {acc} times a layer from its shape "
            "and checks its datapath on seeded operands (only eie, scnn and dcnn read real "
            "tensors)"
        )
    warnings.extend(_hbm_overflow(hw, wl))
    active = [spec.name for spec in wl.layers if spec.operand_activity != "random"]
    if active and getattr(hw, "power", None) is None:
        warnings.append(
            f"{_listed(active)}: operand_activity not used; only a GPU preset with a power: "
            f"block (h100) prices operand data, and {hw.name} has none"  # type: ignore[attr-defined]
        )
    per_layer: list[str] = []
    for o in outcomes:
        t = cycles_to_seconds(o.cycles, clock)
        by_comp = price_counts(prices, o.counts, t, o.action_scale)
        energy = sum(by_comp.values())
        _check_representable(wl, o, energy, by_comp)
        extras = _board_columns(o.extras, energy, o.macs_dense)
        own = o.cycles if o.own_clock_cycles is None else o.own_clock_cycles
        peak = own * o.peak_macs_per_cycle  # MACs the datapath could do at its own clock
        layers.append(
            LayerResult(
                layer=o.layer,
                kind=o.kind,
                cycles=o.cycles,
                time_s=t,
                macs_dense=o.macs_dense,
                macs_effective=o.macs_effective,
                utilization=o.macs_effective / peak if peak else 0.0,
                energy_pj=energy,
                power_w=power_w(energy, t),
                dram_bytes=o.dram_bytes,
                start_cycle=o.start_cycle,
                end_cycle=o.end_cycle,
                energy_by_component_pj=by_comp,
                counts=o.counts,
                extras=extras,
            )
        )
        per_layer.extend(o.warnings)
        per_layer.extend(_functional_warnings(o.layer, o.extras))
    warnings.extend(merge_layer_warnings(per_layer))
    meta = {
        **origin,
        "deterministic": "results depend only on (hardware, workload, seed)",
        "workload_source": wl.source,
        "real_tensor_layers": real_tensors,
        "simpy_events": ctx.events,
        "exposed_io_cycles": ctx.env.now - sum(o.cycles for o in outcomes),
    }
    if layers and "board_power_w" in layers[0].extras:
        meta["gpu_board"] = _board_totals(layers)
    return RunResult(
        accelerator=acc,
        hardware=hw.name,  # type: ignore[attr-defined]
        workload=wl.name,
        seed=seed,
        clock_hz=clock,
        total_cycles=int(ctx.env.now),
        layers=tuple(layers),
        area_mm2=dict(prices.area_mm2),
        metadata=meta,
        warnings=tuple(warnings),
    )
