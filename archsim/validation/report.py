"""The validation table as terminal text (80 columns), Markdown and self-contained HTML.

Outputs depend only on the frame (no timestamps), so a regenerated report diffs cleanly.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from archsim.simulate import archsim_version
from archsim.validation.runner import summary_counts

__all__ = ["format_table", "render_markdown", "write_markdown", "render_html", "write_html"]

TITLE = "archsim validation against the papers"
REGENERATE = (
    "archsim validate all --eie-data ../shared/data/eie_alexnet_fc8 "
    "-o reports/validation.md --html reports/validation.html"
)
_MODEL_TITLE = {
    "eie": "EIE (Han et al., ISCA 2016)",
    "scnn": "SCNN / DCNN (Parashar et al., ISCA 2017)",
    "tensor_core": "Tensor Core GPUs (V100, A100, H100)",
}


def _num(x: float, width: int = 0) -> str:
    """4 significant digits (fewer if ``width`` needs it); ``-`` for NaN."""
    if not math.isfinite(x):
        return "-"
    for fmt in (".4g", ".3g", ".2g"):
        text = f"{x:{fmt}}"
        if not width or len(text) <= width:
            break
    return text


def _summary(frame: pd.DataFrame) -> str:
    c = summary_counts(frame)
    return f"{len(frame)} claims: {c['PASS']} PASS, {c['FAIL']} FAIL, {c['SKIPPED']} SKIPPED"


def format_table(frame: pd.DataFrame) -> str:
    """Per-model blocks of claim / paper / archsim / unit / error / tolerance / status."""
    head = f"{'claim':<31}{'paper':>9}{'archsim':>9} {'unit':<6}{'error':>8}{'tol':>8}{'status':>8}"
    lines = [head, "-" * len(head)]
    for model, block in frame.groupby("model", sort=False):
        lines.append(f"[{_MODEL_TITLE.get(str(model), model)}]")
        for _, r in block.iterrows():
            name = str(r["claim"])
            name = name if len(name) <= 30 else name[:29] + "~"
            lines.append(
                f"{name:<31}{_num(r['paper'], 8):>9}{_num(r['archsim'], 8):>9} "
                f"{str(r['unit'])[:6]:<6}"
                f"{r['error_text']:>8}{r['tolerance']:>8}{r['status']:>8}"
            )
    lines.append("-" * len(head))
    lines.append(_summary(frame))
    return "\n".join(lines)


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(
    frame: pd.DataFrame, *, seed: int = 0, title: str = TITLE, command: str = REGENERATE
) -> str:
    """The report as Markdown: a summary, one table per model, then every claim's reason;
    ``command``: the one that regenerates it (shown at the top)."""
    out = [
        f"# {title}",
        "",
        f"archsim {archsim_version()}, seed {seed}. {_summary(frame)}. Regenerate with:",
        "",
        "```bash",
        command,
        "```",
        "",
        inputs_line(frame),
        "",
        "Each claim is a published number, archsim's value for it, the error (relative, in % "
        "of the paper's value, or absolute in the claim's unit, `pt` = percentage points) and "
        "a tolerance chosen from what archsim's inputs can support; the reason for every "
        "tolerance, and the mechanism behind every FAIL, is listed under the table.",
    ]
    for model, block in frame.groupby("model", sort=False):
        out += [
            "",
            f"## {_MODEL_TITLE.get(str(model), model)}",
            "",
            "| claim | paper | archsim | unit | error | tolerance | status |",
            "|---|---:|---:|---|---:|---:|---|",
        ]
        for _, r in block.iterrows():
            status = f"**{r['status']}**" if r["status"] == "FAIL" else r["status"]
            out.append(
                f"| {_md_cell(r['claim'])} | {_num(r['paper'])} | {_num(r['archsim'])} | "
                f"{_md_cell(r['unit'])} | {r['error_text']} | {r['tolerance']} | {status} |"
            )
        out += ["", "Sources and reasons:", ""]
        out += [
            f"- **{', '.join(names)}** ({_md_cell(source)}): {_md_cell(why)}"
            for names, source, why in _reason_groups(block)
        ]
    return "\n".join(out) + "\n"


def _reason_text(row: dict) -> str:
    why = str(row["reason"])
    return f"{why} Skipped: {row['unavailable']}." if row.get("unavailable") else why


def _reason_groups(block: pd.DataFrame) -> list[tuple[list[str], str, str]]:
    """(claim names, source, reason) with consecutive claims of equal source and reason merged."""
    groups: list[tuple[list[str], str, str]] = []
    for r in block.to_dict("records"):
        source, why = str(r["source"]), _reason_text(r)
        if groups and groups[-1][1:] == (source, why):
            groups[-1][0].append(_md_cell(r["claim"]))
        else:
            groups.append(([_md_cell(r["claim"])], source, why))
    return groups


def render_html(
    frame: pd.DataFrame, *, seed: int = 0, title: str = TITLE, command: str = REGENERATE
) -> str:
    """The report as one self-contained HTML page (inline CSS, no scripts)."""
    env = Environment(
        loader=PackageLoader("archsim.validation", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    blocks = [
        {
            "title": _MODEL_TITLE.get(str(model), model),
            "rows": [
                {
                    **r,
                    "paper": _num(r["paper"]),
                    "archsim": _num(r["archsim"]),
                    "reason": _reason_text(r),
                }
                for r in block.to_dict("records")
            ],
        }
        for model, block in frame.groupby("model", sort=False)
    ]
    return env.get_template("validation.html.j2").render(
        title=title,
        version=archsim_version(),
        seed=seed,
        summary=_summary(frame),
        command=command,
        inputs=inputs_line(frame),
        blocks=blocks,
    )


def inputs_line(frame: pd.DataFrame) -> str:
    """What the claims depend on: archsim's model code, the seed and the real data folder
    (``frame.attrs["eie_data"]``: its path and a digest of its files, or none)."""
    from archsim.provenance import model_fingerprint

    data = frame.attrs.get("eie_data")
    where = f"{data['path']} (sha256 {data['sha256'][:16]})" if data else "none"
    return (
        f"Results depend only on archsim's model code (fingerprint {model_fingerprint()}), "
        f"the seed and the real Alex-8 data folder: {where}."
    )


def _write_atomic(text: str, path: Path) -> Path:
    """Write via a temporary file in the same folder, so no half-written report is left."""
    from archsim.output import write_text_atomically

    return write_text_atomically(path, text, "output")


def write_markdown(
    frame: pd.DataFrame, path: Path, *, seed: int = 0, title: str = TITLE,
    command: str = REGENERATE,
) -> Path:  # fmt: skip
    """Write :func:`render_markdown` to ``path``; returns the path."""
    return _write_atomic(render_markdown(frame, seed=seed, title=title, command=command), path)


def write_html(
    frame: pd.DataFrame, path: Path, *, seed: int = 0, title: str = TITLE,
    command: str = REGENERATE,
) -> Path:  # fmt: skip
    """Write :func:`render_html` to ``path``; returns the path."""
    return _write_atomic(render_html(frame, seed=seed, title=title, command=command), path)
