"""``archsim calibrate tensor_core --measured DIR [--hardware HW] -o FILE.yaml``.

Fits the documented calibration fields (``validation/calibrate.py``) of a GPU preset to a
measurement folder, writes the calibrated hardware YAML and prints the residuals per file x
precision (fit and held-out rows, before and after).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from archsim.errors import ArchsimError, os_reason

__all__ = ["add_parser", "cmd"]


def add_parser(sub: Any) -> None:
    """Register ``calibrate`` on the CLI's subparsers."""
    p = sub.add_parser(
        "calibrate",
        help="fit a GPU preset's documented calibration fields to a measurement folder",
        description="Fit only the documented calibration fields (the registry in "
        "archsim/validation/calibrate.py: launch floor, CUDA-core sustained issue, kernel-family "
        "MMA and fill rates, power fields) of a GPU preset to the rows of a measurement folder "
        "(bounded, deterministic search), write a hardware YAML and print the residuals before "
        "and after.",
    )
    p.add_argument("model", choices=["tensor_core"], help="which model (tensor_core)")
    p.add_argument("--measured", required=True, metavar="DIR", help="measurement folder")
    p.add_argument("--hardware", default="h100", metavar="HW", help="preset or YAML (default h100)")
    p.add_argument("-o", "--out", required=True, metavar="FILE.yaml", help="calibrated YAML")
    p.add_argument(
        "--clock",
        choices=["model", "measured"],
        default="model",
        help="simulate at the model's clock (default) or at each row's measured sm_mhz",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def cmd(args: argparse.Namespace) -> int:
    """Implementation of ``archsim calibrate``."""
    from archsim.measure.folder import read_folder
    from archsim.validation.calibrate import check_measured_fields, fit, residuals, write_yaml
    from archsim.validation.measured import load_gpu, skipped_notes

    out = Path(args.out)
    if out.suffix not in (".yaml", ".yml"):
        raise ArchsimError(f"-o: {out}: not a YAML file name; allowed: a path ending in .yaml")
    if out.is_dir():
        raise ArchsimError(f"-o: {out}: is a folder; allowed: a YAML file path")
    from archsim.output import check_out_file

    check_out_file(out)  # before the fit: not a device or a FIFO
    hw = load_gpu(args.hardware)
    folder = read_folder(args.measured)
    check_measured_fields(hw, folder)

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"  ... {message}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    result = fit(hw, folder, clock=args.clock, progress=progress)
    seconds = time.perf_counter() - t0
    try:
        path = write_yaml(args.hardware, result, folder, out)
    except OSError as exc:
        raise ArchsimError(f"-o: {out}: cannot write: {os_reason(exc)}") from None
    print(f"fitted {len(result.after)} field(s) of {hw.name} to {folder.path} "
          f"({result.evaluations} evaluations, {seconds:.1f} s):")  # fmt: skip
    for p, v in result.after.items():
        print(f"  {p:<34}{result.before[p]:>12.4g} -> {v:<12.4g}")
    for p in result.skipped:
        print(f"  {p:<34} not in this config: not fitted")
    print(f"objective mean |ln(sim/measured)| over the fit rows: {result.objective_before:.4f} "
          f"-> {result.objective_after:.4f}")  # fmt: skip
    print(f"\n{'file':<22}{'prec':<6}{'rows':<9}{'n':>4}{'median':>16}{'p90':>18}")
    for _, r in residuals(result).iterrows():
        print(
            f"{r['file'][:21]:<22}{r['precision']:<6}{r['rows']:<9}{r['n']:>4}"
            f"{_pct(r['median_before']):>8}->{_pct(r['median_after']):<7}"
            f"{_pct(r['p90_before']):>9}->{_pct(r['p90_after']):<7}"
        )
    for note in skipped_notes(result.rows_before):
        print(f"note: {note}")
    for warning in _thin_data(result):
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {path}")
    return 0


def _thin_data(result: Any) -> list[str]:
    """What the fit cannot tell from the rows it had: fewer fit rows than fields (most fields
    then stay where the preset had them, and the ones that move are fitted to noise), or no
    held-out row (the residuals cannot show that the fit generalises)."""
    rows = result.rows_before
    ran = rows["sim_time_s"].notna()  # rows the model could not run inform no field
    fit_rows = int((rows["fit"] & ran).sum())
    held = int((~rows["fit"] & ran).sum())
    out = []
    if fit_rows < len(result.after):
        out.append(f"{fit_rows} fit row(s) for {len(result.after)} field(s): the rows do not "
                   "determine the fields; measure more shapes (archsim probe gpu) before using "
                   "the YAML")  # fmt: skip
    if held == 0:
        out.append("no held-out row (each file x precision has one row): nothing shows that "
                   "the fit carries over to other shapes")  # fmt: skip
    return out
