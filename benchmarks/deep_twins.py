"""Every fast-vs-reference twin property test, with many more random cases than CI runs.

The suite's hypothesis tests compare each numba model with its literal per-cycle twin on a few
hundred generated cases each (fixed count, so that CI stays within its time). This script runs
the same test functions with ``--scale`` times their examples, freshly randomised (no example
database, not derandomised), and prints one line per test: cases run, seconds, OK or the
failing case hypothesis shrank to. (The systolic twins are checked on fixed shapes and the
SCALE-Sim goldens, not generated cases: ``tests/integration/test_systolic.py``.)

    python benchmarks/deep_twins.py                 # 10x the suite's cases (a few minutes)
    python benchmarks/deep_twins.py --scale 100     # 100x (about 10 minutes on 2 cores)

Exit code 1 when any twin disagrees.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings

ROOT = Path(__file__).resolve().parents[1]

#: (module under tests/integration, test function) of every twin property test
TWIN_TESTS = (
    ("test_eie_reference", "test_fast_equals_reference"),
    ("test_eie_reference", "test_fast_equals_reference_on_wide_arrays"),
    ("test_gpu_reference", "test_fast_equals_reference"),
    ("test_scnn_reference", "test_fast_equals_reference_and_numpy"),
    ("test_scnn_reference", "test_saturating_accumulators_equal_reference"),
    ("test_scnn_reference", "test_sixteen_input_phase_equals_reference"),
    ("test_scnn_phase_grid", "test_phase_grid_unit_stride_equals_the_strided_kernel"),
    ("test_dcnn", "test_fast_equals_reference_and_numpy"),
)


def run(scale: float) -> bool:
    """Run every twin test at ``scale`` times its examples; True when all agree."""
    sys.path[:0] = [str(ROOT / "tests" / "integration"), str(ROOT / "tests"), str(ROOT)]
    ok = True
    for module, name in TWIN_TESTS:
        test = getattr(importlib.import_module(module), name)
        base = test._hypothesis_internal_use_settings.max_examples
        n = max(1, round(base * scale))
        # the test's own @settings, re-set: hypothesis refuses a second decorator
        test._hypothesis_internal_use_settings = settings(
            max_examples=n,
            deadline=None,
            database=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.generate, Phase.shrink],
        )
        t0 = time.perf_counter()
        try:
            test()
            verdict = "OK"
        except Exception as exc:  # noqa: BLE001 - reported, then the next test runs
            ok = False
            verdict = f"FAILED: {type(exc).__name__}: {' '.join(str(exc).split())[:2000]}"
        wall = time.perf_counter() - t0
        print(f"{module}.{name}: {n} cases, {wall:.0f} s, {verdict}", flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=10.0, help="x the suite's cases (10)")
    args = parser.parse_args()
    if not args.scale > 0:
        parser.error(f"--scale: must be > 0 (got {args.scale})")
    return 0 if run(args.scale) else 1


if __name__ == "__main__":
    sys.exit(main())
