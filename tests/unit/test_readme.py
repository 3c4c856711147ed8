"""Every ```bash and ```python block of README.md runs as pasted, or is on the short, explicit
skip list below with the reason.

Bash blocks: each line is one command (a ``a && b`` chain counts as its links, so the install
steps of the first lines are skipped and their ``archsim run`` still runs), run by the shell in
a fresh folder. Python blocks: run in
order in one namespace, as pasted into a notebook or REPL (a later block may use an earlier
block's names). A block or command another helper adds to the README is run by default; put it
on ``SKIP`` (by its leading text) only if it cannot run here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)

#: leading text of a command or block -> why it is not run by this test
SKIP: dict[str, str] = {
    "python3 -m venv": "creates a venv and installs; .ci/run does exactly this before pytest",
    "pip install": "installation; done before the tests run",
    ". .venv/bin/activate": "activates the venv made above; the tests run inside the installed one",
    "pytest": "the test suite itself",
    "ruff ": "lint; run by .ci/run",
    ".ci/lowest": "builds a venv of the lowest declared versions (minutes); run by hand",
    "python benchmarks/": "speed benchmarks: minutes, not run by default (DESIGN.md)",
    "archsim validate": "paper reproduction, minutes; tests/validation checks every claim",
    "archsim sweep": "1,000 points or a Dask cluster address; tests/unit/test_sweep_*.py",
    "archsim run h100 my_gemms.yaml": "placeholder for the user's own workload file",
    "archsim run --from-scalesim my.cfg": "placeholder files; tests/unit/test_scalesim_io.py",
    "archsim run scnn alexnet": "long (AlexNet on SCNN and DCNN); tests/integration/test_scnn.py",
    "archsim run dcnn vgg16": "long (VGG-16 on DCNN); tests/integration/test_dcnn.py",
    "archsim run a100 resnet50": "long (ResNet-50, 53 layers); the GPU tests run its GEMMs",
    "archsim run v100 deepbench_gemm": "160 GEMMs; the GPU tests run DeepBench shapes",
    "import archsim\n\nif __name__": "a sweep with worker processes; tests/unit/test_sweep_*.py",
    "from archsim.report import write_sweep_report": "needs the sweep block's `points`",
    "archsim import onnx model.onnx": "placeholder for the user's model; tests/unit/test_onnx_*.py",
    "archsim run eie model.onnx": "placeholder model file; tests/integration/test_onnx_digits.py",
    "archsim compress model.onnx": "placeholder model file; tests/unit/test_compress.py",
    "python -m archsim.examples.digits": "trains the digits models (minutes); test_onnx_digits.py",
    "archsim probe gpu": "needs an NVIDIA GPU and PyTorch; the fake backend is tested instead",
    "archsim calibrate tensor_core --measured my_gpu": "reads the probe's folder; calibrate tests",
    "archsim train dgx1_v100 resnet50": "four ResNet-50 steps (a minute); test_multigpu.py trains",
    "import archsim\n\ntable = archsim.collective(": "a ResNet-50 step; test_multigpu.py runs both",
}


def _skip_reason(text: str) -> str | None:
    return next((why for lead, why in SKIP.items() if text.lstrip().startswith(lead)), None)


def blocks() -> list[tuple[str, int, str]]:
    """(language, line number, code) of every bash/python block, in README order."""
    text = README.read_text(encoding="utf-8")
    return [(m[1], text.count("\n", 0, m.start()) + 2, m[2]) for m in BLOCK.finditer(text)]


def commands() -> list[tuple[int, str]]:
    """(line number, command) of every line of every bash block."""
    out = []
    for lang, line, code in blocks():
        if lang == "bash":
            for i, cmd in enumerate(code.splitlines()):
                if cmd.strip() and not cmd.lstrip().startswith("#"):
                    out.extend((line + i, link.strip()) for link in cmd.split(" && "))
    return out


def test_the_readme_has_blocks_and_the_skip_list_is_in_use() -> None:
    texts = [c for _, c in commands()] + [code for lang, _, code in blocks() if lang == "python"]
    assert len(texts) >= 10
    unused = [lead for lead in SKIP if not any(t.lstrip().startswith(lead) for t in texts)]
    assert unused == [], f"SKIP entries that match nothing in README.md: {unused}"


def _run_ids() -> list[tuple[int, str]]:
    return [(n, c) for n, c in commands() if _skip_reason(c) is None]


@pytest.mark.parametrize(("line", "command"), _run_ids(), ids=[f"L{n}" for n, _ in _run_ids()])
def test_bash_command_runs_as_pasted(line: int, command: str, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    print(f"README.md:{line}: {command}\n{proc.stdout[-2000:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_python_blocks_run_as_pasted(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    ran = 0
    for lang, line, code in blocks():
        if lang != "python" or _skip_reason(code) is not None:
            continue
        exec(compile(code, f"README.md:{line}", "exec"), namespace)  # noqa: S102 - our README
        ran += 1
    assert ran >= 1
    assert namespace["res"].total_cycles > 0  # the contract snippet produced a result
    assert namespace["hw128"].pe_array.num_pes == 128
