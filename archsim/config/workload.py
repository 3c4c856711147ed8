"""Workload specs: a list of layers with shapes and densities (or a data file)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, model_validator

from archsim.config.base import ArchsimModel

__all__ = ["FcLayer", "LstmLayer", "LayerSpec", "WorkloadSpec"]

Density = Annotated[float, Field(ge=0.0, le=1.0)]


class _LayerBase(ArchsimModel):
    name: str = Field(min_length=1)
    weight_density: Density | None = None
    activation_density: Density | None = None
    weight_distribution: Literal["uniform"] = "uniform"
    data: str | None = Field(
        default=None, description="Directory of a real layer (relative to the workload file)."
    )
    data_format: Literal["eie"] = "eie"

    @model_validator(mode="after")
    def _densities_or_data(self) -> _LayerBase:
        if self.data is None:
            for f in ("weight_density", "activation_density"):
                if getattr(self, f) is None:
                    raise ValueError(f"{f} is required when no data: directory is given")
        return self


class FcLayer(_LayerBase):
    """Fully connected layer y = W x (+ b); W has ``outputs`` rows and ``inputs`` columns."""

    kind: Literal["fc"]
    inputs: int | None = Field(default=None, ge=1)
    outputs: int | None = Field(default=None, ge=1)
    bias: bool = True

    @model_validator(mode="after")
    def _shape_or_data(self) -> FcLayer:
        if self.data is None and (self.inputs is None or self.outputs is None):
            raise ValueError("inputs and outputs are required when no data: directory is given")
        return self

    @property
    def matrix_shape(self) -> tuple[int, int] | None:
        """(rows, columns) of W, or None when taken from the data file."""
        if self.inputs is None or self.outputs is None:
            return None
        return (self.outputs, self.inputs)


class LstmLayer(_LayerBase):
    """One LSTM step as one matrix: 4*hidden gate rows over [x; h] columns (+ bias column)."""

    kind: Literal["lstm"]
    input_size: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    bias: bool = True

    @property
    def matrix_shape(self) -> tuple[int, int]:
        """(rows, columns) of the stacked gate matrix."""
        return (4 * self.hidden_size, self.input_size + self.hidden_size)


LayerSpec = Annotated[FcLayer | LstmLayer, Field(discriminator="kind")]


class WorkloadSpec(ArchsimModel):
    """A named, cited list of layers."""

    schema_version: Literal[1]
    name: str = Field(min_length=1)
    source: str = Field(min_length=1, description="Citation of the shapes and densities.")
    description: str = ""
    layers: list[LayerSpec] = Field(min_length=1)
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _origin: str = PrivateAttr(default="<api>")

    @model_validator(mode="after")
    def _unique_names(self) -> WorkloadSpec:
        seen: set[str] = set()
        for layer in self.layers:
            if layer.name in seen:
                raise ValueError(f"duplicate layer name {layer.name!r}; names must be unique")
            seen.add(layer.name)
        return self

    @property
    def base_dir(self) -> Path:
        """Directory that relative ``data:`` paths are resolved against."""
        return self._base_dir

    @property
    def origin(self) -> str:
        """File the spec was loaded from (or ``<api>``)."""
        return self._origin

    def bind(self, base_dir: Path, origin: str) -> WorkloadSpec:
        """Return a copy that resolves data paths against ``base_dir``."""
        new = self.model_copy()
        new._base_dir = Path(base_dir)
        new._origin = origin
        return new
