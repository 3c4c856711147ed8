"""The example notebook runs in a Jupyter kernel and computes what ``archsim.simulate`` does:
its run and every sweep point are re-simulated here and must agree exactly; the result's HTML
view, the sweep's progress bar (an ipywidgets view) and the plot must all appear."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

import archsim

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "quickstart.ipynb"


def _outputs(nb: Any) -> list[dict[str, Any]]:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def test_quickstart_notebook_runs_and_agrees_with_simulate(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)  # the kernel inherits it; bars are off under CI
    nb = nbformat.read(NOTEBOOK, as_version=4)
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    print(f"notebook executed in {time.perf_counter() - start:.1f} s")
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<b>tiny_eie</b> on <b>two_fc</b>" in h for h in html)  # RunResult._repr_html_
    assert any("pe_array.num_pes" in h for h in html)  # the sweep's table
    kinds = {k for o in outputs for k in o.get("data", {})}
    assert "application/vnd.jupyter.widget-view+json" in kinds  # rich's bar in Jupyter
    assert "image/png" in kinds  # the plot
    text = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stdout")
    summary = json.loads(text.strip().splitlines()[-1])

    hw = archsim.load_hardware("tiny_eie")
    wl = archsim.WorkloadSpec.model_validate(summary["workload"])
    res = archsim.simulate(hw, wl, seed=0)
    assert summary["run_total_cycles"] == res.total_cycles > 0
    assert summary["run_energy_pj"] == res.total_energy_pj > 0
    assert len(summary["sweep"]) == 4
    for point in summary["sweep"]:
        over = {k: v for k, v in point.items() if "." in k}
        again = archsim.simulate(hw.with_overrides(over), wl, seed=0)
        print(over, point["total_cycles"], again.total_cycles)
        assert point["total_cycles"] == again.total_cycles
        assert point["total_energy_pj"] == again.total_energy_pj
    cycles = {p["pe_array.num_pes"]: p["total_cycles"] for p in summary["sweep"]}
    assert cycles[8] < cycles[2]  # more PEs, fewer cycles on these layers
