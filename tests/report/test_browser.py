"""Reports in a real browser: headless Chromium loads each page, a probe records what rendered.

The probe (injected into a copy of the page, before anything else) collects uncaught errors,
``console.error`` calls and network fetches, and on ``load`` writes the rendered size of every
plot, the row count of every table and the result of using the sweep table's sort and filter
into a ``<pre id="__probe">`` that ``--dump-dom`` prints. The same run writes a screenshot.
Skipped where Chromium is absent, except in CI (``CI`` set), where that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from report_data import AXES, METRICS

import archsim
from archsim.report import write_run_report, write_sweep_report

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

#: The probe script, run first in the page (see the module docstring).
PROBE = (
    "<script>\n" + (Path(__file__).parent / "probe.js").read_text(encoding="utf-8") + "</script>"
)


@pytest.fixture(scope="session")
def chromium() -> str:
    found = next((p for p in map(shutil.which, _BROWSERS) if p), None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing; .ci/run installs it (apt-get install chromium)")
        pytest.skip("Chromium not installed (Debian: apt-get install chromium)")
    return found


def _render(chromium: str, page: Path, screenshot: Path, height: int = 2400) -> dict[str, Any]:
    """Load ``page`` (with the probe) in headless Chromium; returns the probe's record."""
    html = page.read_text(encoding="utf-8")
    probed = page.with_name(f"probed-{page.name}")
    probed.write_text(html.replace("<head>", "<head>\n" + PROBE, 1), encoding="utf-8")
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={page.parent / 'chromium-profile'}",
        f"--window-size=1280,{height}",
        "--virtual-time-budget=10000",
        f"--screenshot={screenshot}",
        "--dump-dom",
        probed.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    m = re.search(r'<pre id="__probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"no probe output (rc {proc.returncode}): {proc.stderr[-2000:]}"
    text = m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    return json.loads(text.replace("&amp;", "&"))


def _check_figures(probe: dict[str, Any], expected: int) -> None:
    assert probe["errors"] == []
    assert probe["resources"] == 0  # nothing fetched: the page is self-contained
    assert len(probe["figures"]) == expected
    for fig in probe["figures"]:
        assert fig["width"] > 600 and fig["height"] > 150, fig
        assert fig["drawn_width"] > 300 and fig["drawn_height"] > 100, fig
        assert fig["shapes"] > 20, fig


def test_run_report_in_browser(chromium: str, tmp_path: Path) -> None:
    wl = archsim.load_workload("eie_benchmarks")
    wl = wl.model_copy(update={"layers": wl.layers[6:]})
    result = archsim.simulate("tiny_eie", wl, seed=0)
    page = write_run_report(result, tmp_path / "report.html")
    shot = tmp_path / "run.png"
    probe = _render(chromium, page, shot)
    _check_figures(probe, expected=4)
    assert probe["tables"]["layers-table"] == len(result.layers) == 3
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:4] == b"\x89PNG"


def test_sweep_report_in_browser(chromium: str, tmp_path: Path, sweep_points: pd.DataFrame) -> None:
    page = write_sweep_report(
        sweep_points, tmp_path / "sweep.html", axes=AXES, metrics=METRICS, title="sweep"
    )
    shot = tmp_path / "sweep.png"
    probe = _render(chromium, page, shot)
    _check_figures(probe, expected=2)
    assert probe["tables"]["points-table"] == len(sweep_points) == 200
    act = probe["interaction"]
    asc = [float(v) for v in act["ascending"]]
    desc = [float(v) for v in act["descending"]]
    ok_times = sweep_points.loc[sweep_points["status"] == "ok", "total_time_s"]
    assert asc == sorted(asc) and asc[0] == pytest.approx(ok_times.min())
    assert desc == sorted(desc, reverse=True) and desc[0] == pytest.approx(ok_times.max())
    assert act["errors_shown"] == 3 and act["count"] == "3 of 200 rows"
    assert shot.stat().st_size > 20_000
