"""``archsim probe gpu``: time kernels the way ``shared/data/h100`` was made, on any backend.

Timing rule (``shared/data/h100/README.md``): after warm-up calls, n back-to-back calls are
captured in one CUDA graph, n chosen so one replay takes >= 20 ms (at most 500); the graph is
replayed once more to warm up, then 5 times; ``time_s`` is the median replay / n, ``min_s``
the fastest. NVML's SM clock and board power are sampled every 10 ms by a thread during the 5
replays (``sm_mhz``, ``board_w``: their means). A kernel whose one call takes longer than
:data:`MAX_CALL_S` is left out (the data has no FP32 16384^3 row for that reason).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from archsim.errors import one_line
from archsim.measure.backend import Backend, ConvShape, GemmShape, Op
from archsim.measure.plan import ProbePlan, network_convs, square_gemm

__all__ = [
    "BURST_REPLAY_S",
    "MAX_CALL_S",
    "Timing",
    "burst_readings",
    "burst_summary",
    "burst_trace",
    "calls_per_replay",
    "measure_energy",
    "memory_eager",
    "run_probe",
    "time_in_graph",
]

REPLAY_S = 0.020  # one replay lasts at least this long
MAX_CALLS = 500
REPLAYS = 5
SAMPLE_S = 0.010  # NVML sampling period
MAX_CALL_S = 0.1
BURST_REPLAY_S = 0.002  # one replay of a burst trace lasts about this long
#: memory an op may use, as a fraction of the free device memory
MEMORY_HEADROOM = 0.8

Progress = Callable[[str], None]


def calls_per_replay(seconds_per_call: float, replay_s: float = REPLAY_S) -> int:
    """n such that n calls take >= ``replay_s`` (20 ms), capped at 500."""
    if seconds_per_call <= 0:
        return MAX_CALLS
    return min(MAX_CALLS, max(1, math.ceil(replay_s / seconds_per_call)))


@dataclass(frozen=True)
class Timing:
    """One timed kernel: median and fastest seconds per call, calls per replay, NVML means."""

    time_s: float
    min_s: float
    calls: int
    sm_mhz: float
    board_w: float


class _Sampler:
    """A thread reading (SM MHz, board W) every 10 ms until stopped; at least one reading."""

    def __init__(self, backend: Backend) -> None:
        self.backend, self.samples = backend, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a failed NVML read is a missing sample
                self.samples.append(self.backend.telemetry())
            if self._stop.wait(SAMPLE_S):
                return

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def means(self) -> tuple[float, float]:
        if not self.samples:
            return math.nan, math.nan
        return (
            statistics.fmean(s[0] for s in self.samples),
            statistics.fmean(s[1] for s in self.samples),
        )


def time_in_graph(backend: Backend, op: Op) -> Timing | None:
    """Time ``op`` by the rule above; None when one call exceeds :data:`MAX_CALL_S`."""
    backend.round_trip(op)  # first call: allocation, library autotuning (cudnn.benchmark)
    estimate = backend.round_trip(op)
    if estimate > MAX_CALL_S:
        return None
    calls = calls_per_replay(estimate)  # host round trips overestimate short kernels
    replay = backend.graph(op, calls)
    per_call = replay() / calls
    if calls_per_replay(per_call) != calls:
        calls = calls_per_replay(per_call)
        replay = backend.graph(op, calls)
        replay()
    with _Sampler(backend) as sampler:
        times = [replay() for _ in range(REPLAYS)]
    sm_mhz, board_w = sampler.means()
    return Timing(statistics.median(times) / calls, min(times) / calls, calls, sm_mhz, board_w)


#: bytes per element of A/B and of the output (fp8 -> bf16, int8 -> int32), by precision
_IN_BYTES = {"fp16": 2, "bf16": 2, "tf32": 4, "fp32": 4, "fp8": 1, "int8": 1}
_OUT_BYTES = {"fp16": 2, "bf16": 2, "tf32": 4, "fp32": 4, "fp8": 2, "int8": 4}


def _gemm_bytes(shape: GemmShape) -> int:
    ins = (shape.m * shape.k + shape.k * shape.n) * _IN_BYTES[shape.precision]
    return ins + shape.m * shape.n * _OUT_BYTES[shape.precision]


def _timed_row(timing: Timing, flops: int) -> dict[str, Any]:
    return {
        "time_s": timing.time_s,
        "min_s": timing.min_s,
        "tflops": flops / timing.time_s / 1e12,
        "sm_mhz": timing.sm_mhz,
        "board_w": timing.board_w,
    }


def _skip(progress: Progress | None, what: str, why: str) -> None:
    if progress:
        progress(f"skipped {what}: {why}")


def _time_or_skip(
    backend: Backend, make: Callable[[], Op], what: str, progress: Progress | None
) -> Timing | None:
    """Time the op ``make()`` builds; None (and a progress line saying why) past
    :data:`MAX_CALL_S` or when the device refuses it (out of memory, a shape the library
    rejects)."""
    try:
        timing = time_in_graph(backend, make())
    except RuntimeError as exc:  # torch's CUDA / OOM / library errors
        _skip(progress, what, "failed: " + one_line(exc, 200))
        return None
    finally:
        backend.release()
    if timing is None:
        _skip(progress, what, f"one call takes longer than {MAX_CALL_S} s")
    return timing


def gemm_rows(
    backend: Backend,
    shapes: Iterable[tuple[str | None, GemmShape]],
    progress: Progress | None = None,
) -> pd.DataFrame:
    """One row per GEMM that runs here (``model_projection`` first when names are given)."""
    rows = []
    for name, g in shapes:
        what = f"{name + ' ' if name else ''}{g.m}x{g.n}x{g.k} {g.precision}"
        why = backend.unsupported(g.precision)
        if not why and _gemm_bytes(g) > MEMORY_HEADROOM * backend.free_bytes():
            why = "does not fit in free device memory"
        if why:
            _skip(progress, what, why)
            continue
        timing = _time_or_skip(backend, lambda g=g: backend.gemm(g), what, progress)
        if timing is None:
            continue
        if progress:
            progress(f"{what} {g.a_stored}/{g.b_stored}: {timing.time_s * 1e6:.2f} us")
        row = {} if name is None else {"model_projection": name}
        row.update({"m": g.m, "n": g.n, "k": g.k, "a_stored": g.a_stored,
                    "b_stored": g.b_stored, "precision": g.precision})  # fmt: skip
        rows.append({**row, **_timed_row(timing, g.flops)})
    return pd.DataFrame(rows)


def conv_rows(
    backend: Backend, shapes: Iterable[ConvShape], progress: Progress | None = None
) -> pd.DataFrame:
    """One row per convolution (columns of ``conv_*.csv``)."""
    rows = []
    for c in shapes:
        what = f"{c.net} {c.layer} n={c.n}"
        timing = _time_or_skip(backend, lambda c=c: backend.conv(c), what, progress)
        if timing is None:
            continue
        if progress:
            progress(f"{what}: {timing.time_s * 1e6:.2f} us")
        rows.append({
            "net": c.net, "layer": c.layer, "batch": c.n, "precision": c.precision,
            **{f: getattr(c, f) for f in ("c", "k", "h", "w", "r", "s", "stride", "pad",
                                          "groups", "p", "q")},
            **_timed_row(timing, c.flops),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _eager_per_call(backend: Backend, op: Op) -> float:
    """Median over 5 runs of n eager back-to-back calls (n by the 20 ms / 500 rule), per call."""
    backend.round_trip(op)
    calls = calls_per_replay(backend.round_trip(op))
    return statistics.median(backend.eager(op, calls) / calls for _ in range(REPLAYS))


def memory_eager(
    backend: Backend, sizes_mb: Iterable[int], progress: Progress | None = None
) -> dict[str, Any]:
    """Copy (bytes moved = read + write) and read bandwidth by buffer size, and launch floors."""
    out: dict[str, Any] = {}
    for mb in sizes_mb:
        nbytes = mb << 20
        if 2 * nbytes > MEMORY_HEADROOM * backend.free_bytes():
            _skip(progress, f"copy/read {mb} MB", "does not fit in free device memory")
            continue
        t = _eager_per_call(backend, backend.copy(nbytes))
        backend.release()
        out[f"copy_{mb}MB"] = {"time_s": t, "bytes_moved": 2 * nbytes, "GBps": 2 * nbytes / t / 1e9}
        t = _eager_per_call(backend, backend.read(nbytes))
        backend.release()
        out[f"read_{mb}MB"] = {"time_s": t, "bytes": nbytes, "GBps": nbytes / t / 1e9}
        if progress:
            progress(f"copy/read {mb} MB: {out[f'copy_{mb}MB']['GBps']:.0f} / "
                     f"{out[f'read_{mb}MB']['GBps']:.0f} GB/s")  # fmt: skip
    tiny = backend.tiny()
    backend.round_trip(tiny)
    out["tiny_kernel_back_to_back_s"] = statistics.median(
        backend.eager(tiny, MAX_CALLS) / MAX_CALLS for _ in range(REPLAYS)
    )
    out["tiny_kernel_sync_latency_s"] = statistics.median(
        backend.round_trip(tiny) for _ in range(4 * REPLAYS)
    )
    backend.release()
    return out


def measure_energy(backend: Backend, op: Op, seconds: float) -> dict[str, Any]:
    """Energy counter around ~``seconds`` of back-to-back eager calls of ``op``.

    Calls are enqueued in batches of ~0.1 s and synchronised after each batch; the nvidia-smi
    style snapshot is read once, in the batch that crosses half of ``seconds``, while it runs.
    """
    backend.round_trip(op)
    batch = max(1, math.ceil(0.1 / max(backend.round_trip(op), 1e-9)))
    e0, t0 = backend.energy_j(), backend.now()
    calls, snap = 0, None
    while True:
        for _ in range(batch):
            op()
        calls += batch
        if snap is None and backend.now() - t0 >= seconds / 2:
            snap = backend.snapshot()
        backend.sync()
        if backend.now() - t0 >= seconds:
            break
    elapsed, joules = backend.now() - t0, backend.energy_j() - e0
    return {
        "calls": calls,
        "seconds": elapsed,
        "joules": joules,
        "watts": joules / elapsed,
        "joules_per_call": joules / calls,
        "smi_mid": [snap if snap is not None else backend.snapshot()],
    }


def energy_readings(
    backend: Backend, plan: ProbePlan, progress: Progress | None = None
) -> dict[str, Any]:
    """The ``energy`` block: GEMMs (pJ/FLOP), an HBM copy (pJ/byte) and idle watts."""
    out: dict[str, Any] = {}
    for precision, size, zeros in plan.energy_gemms:
        key = f"gemm_{precision}_{size}" + ("_zeros" if zeros else "")
        shape = square_gemm(size, precision, zeros)
        why = backend.unsupported(precision)
        if why:
            _skip(progress, key, why)
            continue
        entry = measure_energy(backend, backend.gemm(shape), plan.energy_seconds)
        backend.release()
        entry["flops_per_call"] = shape.flops
        entry["pj_per_flop"] = entry["joules_per_call"] / shape.flops * 1e12
        out[key] = entry
        if progress:
            progress(f"energy {key}: {entry['watts']:.0f} W, {entry['pj_per_flop']:.3f} pJ/FLOP")
    nbytes = plan.energy_copy_mb << 20
    if 2 * nbytes <= MEMORY_HEADROOM * backend.free_bytes():
        entry = measure_energy(backend, backend.copy(nbytes), plan.energy_seconds)
        backend.release()
        entry["bytes_per_call"] = 2 * nbytes
        entry["pj_per_byte"] = entry["joules_per_call"] / (2 * nbytes) * 1e12
        out[f"hbm_copy_{plan.energy_copy_mb}MB"] = entry
    backend.sleep(plan.idle_wait_s)
    readings = []
    for _ in range(3):
        readings.append(backend.telemetry()[1])
        backend.sleep(SAMPLE_S)
    out = {"idle_watts": statistics.fmean(readings), **out}
    return out


def burst_trace(backend: Backend, op: Op, seconds: float, idle_s: float) -> dict[str, Any]:
    """How the clock, board power and time per call move from idle into a sustained run.

    After ``idle_s`` with the GPU idle, graph replays of about :data:`BURST_REPLAY_S` run back
    to back for ``seconds``; as each one ends the host reads the SM clock, board power and the
    energy counter. Each ``trace`` row: [s from the first replay's start to this one's, s per
    call in this replay, MHz, W, J since the first replay began]. It settles whether a short
    run (the 17-77 ms of a mid-size row in ``gemm_square.csv``) holds max boost while a long
    one is held at the power limit, and how fast the clock comes down.
    """
    backend.round_trip(op)  # allocation, library autotuning
    calls = calls_per_replay(backend.round_trip(op), BURST_REPLAY_S)
    replay = backend.graph(op, calls)
    replay()
    backend.sleep(idle_s)
    t0, e0 = backend.now(), backend.energy_j()
    trace = []
    while True:
        t = backend.now() - t0
        if t >= seconds:
            break
        per_call = replay() / calls
        mhz, watts = backend.telemetry()
        trace.append([t, per_call, mhz, watts, backend.energy_j() - e0])
    return {"calls_per_replay": calls, "idle_s": idle_s, "trace": trace}


def burst_readings(
    backend: Backend, plan: ProbePlan, progress: Progress | None = None
) -> dict[str, Any]:
    """The ``bursts`` block: one :func:`burst_trace` per (precision, size) of ``plan``."""
    out: dict[str, Any] = {}
    for precision, size in plan.bursts:
        key = f"gemm_{precision}_{size}"
        why = backend.unsupported(precision)
        if why:
            _skip(progress, f"burst {key}", why)
            continue
        op = backend.gemm(square_gemm(size, precision))
        out[key] = burst_trace(backend, op, plan.burst_seconds, plan.idle_wait_s)
        backend.release()
        if progress:
            s = burst_summary(out[key])
            progress(f"burst {key}: {s['first_mhz']:.0f} -> {s['last_mhz']:.0f} MHz, "
                     f"{s['first_us']:.1f} -> {s['last_us']:.1f} us per call")  # fmt: skip
    return out


def burst_summary(entry: dict[str, Any], drop: float = 0.05) -> dict[str, float]:
    """First and last clock (MHz) and time per call (us) of a burst trace, and the time (s)
    at which the clock first fell more than ``drop`` below its first reading (NaN: never)."""
    trace = entry["trace"]
    first, last = trace[0], trace[-1]
    fell = next((row[0] for row in trace if row[2] < first[2] * (1 - drop)), math.nan)
    return {
        "first_mhz": first[2], "last_mhz": last[2], "first_us": first[1] * 1e6,
        "last_us": last[1] * 1e6, "clock_falls_s": fell, "seconds": last[0],
    }  # fmt: skip


def run_probe(
    backend: Backend, plan: ProbePlan, progress: Progress | None = None
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Every measurement of ``plan``: (CSV tables by file name, the device JSON document)."""
    device = backend.device_info()
    tables = {
        "gemm_square.csv": gemm_rows(backend, ((None, g) for g in plan.square()), progress),
        "gemm_layouts.csv": gemm_rows(backend, ((None, g) for g in plan.layouts()), progress),
        "gemm_unaligned.csv": gemm_rows(backend, ((None, g) for g in plan.unaligned()), progress),
        "gemm_llm.csv": gemm_rows(backend, plan.llm(), progress),
        **{
            f"conv_{net}.csv": conv_rows(backend, network_convs(net, plan.conv_batches), progress)
            for net in plan.conv_networks
        },
    }
    tables = {name: frame for name, frame in tables.items() if not frame.empty}
    doc = {
        "device": device,
        "memory_eager": memory_eager(backend, plan.memory_mb, progress),
        "energy": energy_readings(backend, plan, progress),
    }
    if plan.bursts:
        doc["bursts"] = burst_readings(backend, plan, progress)
    return tables, doc
