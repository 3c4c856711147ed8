"""SCNN and DCNN hardware configurations (Parashar et al., ISCA 2017)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, model_validator

from archsim.config.base import ArchsimModel
from archsim.config.components import (
    ArithmeticConfig,
    ClockConfig,
    CrossbarConfig,
    DramConfig,
    FifoConfig,
    SramConfig,
    TechnologyConfig,
)
from archsim.config.names import Name

__all__ = [
    "PeGridConfig",
    "MultiplierArrayConfig",
    "AccumulatorConfig",
    "ScnnConfig",
    "DcnnConfig",
]


class PeGridConfig(ArchsimModel):
    """A rows x cols grid of PEs; inputs are tiled in the plane over it."""

    rows: int = Field(ge=1, le=64, description="PE rows of the grid.")
    cols: int = Field(ge=1, le=64, description="PE columns of the grid.")

    @property
    def num_pes(self) -> int:
        """rows * cols."""
        return self.rows * self.cols


class MultiplierArrayConfig(ArchsimModel):
    """F x I multipliers per PE: F weights times I activations per cycle."""

    weights_per_cycle: int = Field(default=4, ge=1, le=64, description="F")
    activations_per_cycle: int = Field(default=4, ge=1, le=64, description="I")

    @property
    def multipliers(self) -> int:
        """F * I."""
        return self.weights_per_cycle * self.activations_per_cycle


class AccumulatorConfig(ArchsimModel):
    """Banked accumulator buffer per PE (one set; ``double_buffered`` adds a draining set)."""

    banks: int = Field(default=32, ge=1, le=1024, description="A")
    entries_per_bank: int = Field(
        default=32, ge=1, le=16384, description="Accumulator entries in each bank."
    )
    double_buffered: bool = Field(
        default=True, description="A second set drains outputs while the first accumulates."
    )
    update_energy_pj: NonNegativeFloat | None = Field(
        default=None, description="Override: one read-modify-write of an entry, pJ."
    )
    area_mm2: NonNegativeFloat | None = Field(
        default=None, description="Override of the modelled area of one instance, mm^2."
    )

    @property
    def entries(self) -> int:
        """Entries of one set."""
        return self.banks * self.entries_per_bank


class _CnnAcceleratorConfig(ArchsimModel):
    """Fields SCNN and its dense baseline share: a PE grid of F x I multipliers and a DRAM."""

    schema_version: Literal[1]
    description: str = ""
    clock: ClockConfig
    technology: TechnologyConfig
    pe_grid: PeGridConfig
    multipliers: MultiplierArrayConfig = MultiplierArrayConfig()
    arithmetic: ArithmeticConfig = ArithmeticConfig(data_bits=16, accumulator_bits=24)
    index_bits: int = Field(default=4, ge=1, le=8, description="Zero-run index width.")
    dram: DramConfig

    @property
    def peak_macs_per_cycle(self) -> int:
        """PEs x F x I."""
        return self.pe_grid.num_pes * self.multipliers.multipliers


class ScnnConfig(_CnnAcceleratorConfig):
    """SCNN: PT-IS-CP-sparse over a grid of PEs with F x I multipliers and A banks each."""

    accelerator: Literal["scnn"]
    name: Name = "scnn"
    accumulator: AccumulatorConfig = AccumulatorConfig()
    crossbar: CrossbarConfig
    crossbar_input_fifo_depth: int = Field(
        default=2, ge=1, le=64, description="Products each crossbar input can hold."
    )
    iaram: SramConfig
    oaram: SramConfig
    weight_fifo: FifoConfig
    max_output_channels_per_group: int = Field(
        default=8,
        ge=1,
        description=("Kc cap; Kc = min(K, cap, accumulator entries // (output window of a tile))."),
    )
    stride_phase_decomposition: bool = Field(
        default=True,
        description=(
            "Strided layers: pair only activations and weights of the same stride phase "
            "(stride^2 unit-stride sub-problems), so no product misses the output grid. The "
            "paper does not say how SCNN handles strides; False multiplies every pair and drops "
            "the products that miss."
        ),
    )

    @model_validator(mode="after")
    def _crossbar_shape(self) -> ScnnConfig:
        m = self.multipliers.multipliers
        if self.crossbar.inputs != m or self.crossbar.outputs != self.accumulator.banks:
            raise ValueError(
                f"crossbar.inputs x outputs is {self.crossbar.inputs} x {self.crossbar.outputs}; "
                f"allowed: inputs = F*I = {m} multipliers and outputs = the "
                f"{self.accumulator.banks} accumulator banks"
            )
        return self


class DcnnConfig(_CnnAcceleratorConfig):
    """DCNN: the dense PT-IS-DP baseline with the same multipliers; ``optimized`` = DCNN-opt.

    ``index_bits`` is used by DCNN-opt's compressed DRAM traffic.
    """

    accelerator: Literal["dcnn"]
    name: Name = "dcnn"
    sram: SramConfig
    optimized: bool = Field(
        default=False,
        description="DCNN-opt: multipliers gated on zero operands and compressed DRAM traffic.",
    )
