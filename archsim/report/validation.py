"""Self-contained HTML page of paper-vs-archsim claims, grouped by model with pass/fail counts.

Input: one row per claim with ``model``, ``claim``, ``source``, ``paper``, ``archsim``,
``error`` and ``tolerance`` (relative: 0.05 = 5 %), ``status`` (PASS/FAIL), ``reason`` and,
optionally, ``unit``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from archsim.errors import ArchsimError
from archsim.report.formatting import MISSING, fmt_num, fmt_value
from archsim.report.page import environment, write_page

__all__ = ["render_validation_report", "write_validation_report", "CLAIM_COLUMNS"]

VALIDATION_TEMPLATE = "validation.html.j2"
#: Columns a claims frame must have (``unit`` is optional).
CLAIM_COLUMNS = (
    "model",
    "claim",
    "source",
    "paper",
    "archsim",
    "error",
    "tolerance",
    "status",
    "reason",
)


def _signed_percent(value: Any) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return MISSING
    return MISSING if math.isnan(v) else f"{100.0 * v:+.1f} %"


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _row(rec: dict[str, Any]) -> dict[str, Any]:
    unit = _text(rec.get("unit"))
    tol = rec["tolerance"]
    try:
        tol_text = MISSING if math.isnan(float(tol)) else f"\u00b1{fmt_num(100.0 * float(tol))} %"
    except (TypeError, ValueError):
        tol_text = fmt_value(tol)
    passed = str(rec["status"]).strip().upper() == "PASS"
    return {
        "claim": _text(rec["claim"]),
        "source": _text(rec["source"]),
        "paper": fmt_value(rec["paper"]),
        "archsim": fmt_value(rec["archsim"]),
        "unit": unit,
        "error": _signed_percent(rec["error"]),
        "tolerance": tol_text,
        "status": "PASS" if passed else str(rec["status"]).strip().upper() or "FAIL",
        "passed": passed,
        "reason": _text(rec["reason"]),
    }


def _context(claims: pd.DataFrame, title: str) -> dict[str, Any]:
    from archsim.simulate import archsim_version

    groups = []
    for model, frame in claims.groupby("model", sort=False):
        rows = [_row(r) for r in frame.to_dict(orient="records")]
        n_pass = sum(r["passed"] for r in rows)
        groups.append(
            {"model": str(model), "rows": rows, "passed": n_pass, "failed": len(rows) - n_pass}
        )
    total_pass = sum(g["passed"] for g in groups)
    return {
        "title": title,
        "version": archsim_version(),
        "groups": groups,
        "cards": [
            ("claims", str(len(claims))),
            ("pass", str(total_pass)),
            ("fail", str(len(claims) - total_pass)),
            ("models", str(len(groups))),
        ],
        "has_unit": "unit" in claims,
    }


def render_validation_report(claims: pd.DataFrame, *, title: str) -> str:
    """The HTML text of the validation page (self-contained, deterministic)."""
    missing = [c for c in CLAIM_COLUMNS if c not in claims.columns]
    if missing:
        raise ArchsimError(
            f"validation report: column(s) {', '.join(missing)} missing from the claims frame; "
            f"required: {', '.join(CLAIM_COLUMNS)} (unit optional)"
        )
    template = environment().get_template(VALIDATION_TEMPLATE)
    return template.render(**_context(claims, title))


def write_validation_report(claims: pd.DataFrame, path: str | Path, *, title: str) -> Path:
    """Write the validation page atomically to ``path`` (a directory gets ``validation.html``)."""
    return write_page(render_validation_report(claims, title=title), path, "validation.html")
