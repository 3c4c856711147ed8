"""Simulations shared by the claims of one validation run: each (hardware, workload) runs once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from archsim.config.base import ArchsimModel
from archsim.config.io import load_hardware, load_workload
from archsim.config.workload import WorkloadSpec
from archsim.errors import ArchsimError
from archsim.results import RunResult
from archsim.simulate import simulate
from archsim.validation.names import EIE_DATA_RELATIVE


class ClaimUnavailable(Exception):
    """A claim cannot be computed here (missing data folder, accelerator not simulated yet).

    Defined here, where runs raise it; ``archsim.validation.claims`` re-exports it."""


__all__ = [
    "Runs",
    "ClaimUnavailable",
    "alex8_real_workload",
    "default_eie_data",
    "EIE_DATA_RELATIVE",
    "ALEX8_REAL_LAYER",
]

#: Layer name of the real Alex-8 workload built by :meth:`Runs.alex8_real`.
ALEX8_REAL_LAYER = "Alex-8-real"


def default_eie_data() -> Path | None:
    """``../shared/data/eie_alexnet_fc8`` beside the current directory or this checkout.

    Returns the first that exists, else None (the data is not part of the package).
    """
    checkout = Path(__file__).resolve().parents[2]
    for base in (Path.cwd(), checkout):
        candidate = base.parent / EIE_DATA_RELATIVE
        if candidate.is_dir():
            return candidate
    return None


def alex8_real_workload(folder: str | Path) -> WorkloadSpec:
    """The one-layer workload of the real AlexNet FC8 in EIE's format stored in ``folder``."""
    return WorkloadSpec.model_validate(
        {
            "schema_version": 1,
            "name": "eie_alexnet_fc8_real",
            "source": "Real pruned, weight-shared AlexNet FC8 in EIE's format "
            "(RalphMao/EIE-simulator data/, commit 7ee0029); Han et al., ISCA 2016.",
            "layers": [
                {
                    "name": ALEX8_REAL_LAYER,
                    "kind": "fc",
                    "inputs": 4096,
                    "outputs": 1000,
                    "data": str(Path(folder).resolve()),
                }
            ],
        }
    )


def _label(hw: ArchsimModel) -> str:
    """The config's name, marked when it differs from the preset of that name."""
    name = str(hw.name)  # type: ignore[attr-defined]
    try:
        same = load_hardware(name) == hw
    except ArchsimError:
        same = False
    return name if same else f"{name} (modified)"


class Runs:
    """Memoised ``simulate`` calls, keyed by the full hardware and workload configs.

    ``eie_data`` is the folder of the real Alex-8 layer (None: claims needing it are skipped);
    ``progress`` is called with a short message before each new simulation.
    """

    def __init__(
        self,
        seed: int = 0,
        eie_data: str | Path | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.seed = seed
        self.eie_data = Path(eie_data) if eie_data is not None else None
        self._progress = progress
        self._results: dict[tuple[str, str, str], RunResult] = {}
        self._memo: dict[tuple, object] = {}

    @property
    def simulations(self) -> int:
        """Number of distinct simulations run so far."""
        return len(self._results)

    def run(
        self, hardware: ArchsimModel | str | Path, workload: WorkloadSpec | str | Path
    ) -> RunResult:
        """``simulate(hardware, workload, seed)``, computed once per distinct pair."""
        hw = load_hardware(hardware)
        wl = load_workload(workload)
        key = (hw.model_dump_json(), wl.model_dump_json(), str(wl.base_dir))
        if key not in self._results:
            if self._progress is not None:
                self._progress(f"simulating {_label(hw)} on {wl.name}")
            self._results[key] = simulate(hw, wl, seed=self.seed)
        return self._results[key]

    def memo(self, key: tuple, compute: Callable[[], object]) -> object:
        """``compute()`` once per ``key`` (for results that are not one ``simulate`` call)."""
        if key not in self._memo:
            if self._progress is not None:
                self._progress(f"computing {' '.join(map(str, key))}")
            self._memo[key] = compute()
        return self._memo[key]

    def alex8_real(self) -> RunResult:
        """EIE (preset) on the real AlexNet FC8 layer; ``ClaimUnavailable`` without the data."""
        folder = self.eie_data
        if folder is None or not folder.is_dir():
            where = f"{folder} does not exist" if folder is not None else "no folder given"
            raise ClaimUnavailable(
                f"real Alex-8 data not found ({where}); pass --eie-data DIR pointing at the "
                "eie_alexnet_fc8 folder (EIE's storage format, from RalphMao/EIE-simulator data/)"
            )
        return self.run("eie", alex8_real_workload(folder))
