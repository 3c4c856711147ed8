"""EIE hardware configuration (Han et al., ISCA 2016)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, model_validator

from archsim.config.base import ArchsimModel
from archsim.config.components import (
    SUPPORTED_NODES_NM,
    ArithmeticConfig,
    ClockConfig,
    DramConfig,
    FifoConfig,
    NodeNm,
    PeArrayConfig,
    SramConfig,
    TechnologyConfig,
)
from archsim.config.names import Name

__all__ = ["EieConfig", "EieEncodingConfig", "EieStaticPowerConfig", "EieLnzdConfig"]


class EieEncodingConfig(ArchsimModel):
    """Compressed sparse column encoding of each PE's slice of W."""

    weight_index_bits: int = Field(default=4, ge=1, le=8, description="Codebook index width v.")
    relative_index_bits: int = Field(
        default=4, ge=1, le=8, description="Zero-run index width z; longer runs need padding."
    )
    codebook_entries: int = Field(
        default=16, ge=2, le=256, description="Shared weights in the codebook (<= 2^v)."
    )
    pointer_bits: int = Field(default=16, ge=8, le=32, description="Column-pointer width.")

    @property
    def entry_bits(self) -> int:
        """Bits of one stored entry (v, z)."""
        return self.weight_index_bits + self.relative_index_bits

    @model_validator(mode="after")
    def _codebook_fits(self) -> EieEncodingConfig:
        if self.codebook_entries > 2**self.weight_index_bits:
            raise ValueError(
                f"codebook_entries {self.codebook_entries} needs more than "
                f"weight_index_bits={self.weight_index_bits} bits; allowed <= "
                f"{2**self.weight_index_bits}"
            )
        return self


class EieLnzdConfig(ArchsimModel):
    """Leading-non-zero detection (central control)."""

    examine_energy_pj: NonNegativeFloat | None = Field(
        default=None, description="Override: energy per activation examined, pJ."
    )


class EieStaticPowerConfig(ArchsimModel):
    """Power not proportional to actions, per PE, in watts (added as energy x time)."""

    clock_network_w_per_pe: NonNegativeFloat = Field(
        default=0.0, description="Clock-network power of one PE, W."
    )
    leakage_w_per_pe: NonNegativeFloat = Field(default=0.0, description="Leakage of one PE, W.")
    reference_clock_hz: PositiveFloat | None = Field(
        default=None,
        description="Clock at which clock_network_w_per_pe was found. Set: the clock network "
        "costs a fixed energy per cycle (W / this clock), so its power follows "
        "clock.frequency_hz. Unset: a fixed power whatever the clock.",
    )
    reference_node_nm: NodeNm | None = Field(
        default=None,
        description="Process node of clock_network_w_per_pe, nm (one of "
        f"{list(SUPPORTED_NODES_NM)}). Set: the clock network's energy is scaled to "
        "technology.node_nm as the other on-chip energies are. Unset: not scaled.",
    )

    source: str = ""


class EieConfig(ArchsimModel):
    """One EIE chip: N PEs each with pointer, sparse-matrix and activation memories."""

    schema_version: Literal[1]
    accelerator: Literal["eie"]
    name: Name = "eie"
    description: str = ""
    clock: ClockConfig
    technology: TechnologyConfig
    pe_array: PeArrayConfig
    activation_fifo: FifoConfig
    spmat_sram: SramConfig
    pointer_sram: SramConfig
    activation_sram: SramConfig
    encoding: EieEncodingConfig = EieEncodingConfig()
    arithmetic: ArithmeticConfig = ArithmeticConfig()
    lnzd: EieLnzdConfig = EieLnzdConfig()
    pipeline_stages: int = Field(
        default=5,
        ge=2,
        le=16,
        description=(
            "PE pipeline depth: pointer read, SpMat read, decode, multiply, accumulate/write. "
            "Sets fill and drain; stages after the pointer stage drain after the last entry."
        ),
    )
    dram: DramConfig
    static_power: EieStaticPowerConfig = EieStaticPowerConfig()
    strict_capacity: bool = Field(
        default=False,
        description=(
            "Raise an error when a layer overflows a PE memory (SpMat, pointer, activation) "
            "instead of reporting the fill and a warning."
        ),
    )

    @property
    def entries_per_line(self) -> int:
        """Sparse-matrix entries delivered by one SpMat SRAM read."""
        return self.spmat_sram.width_bits // self.encoding.entry_bits

    @property
    def peak_macs_per_cycle(self) -> int:
        """One entry per PE per cycle."""
        return self.pe_array.num_pes

    @model_validator(mode="after")
    def _consistent(self) -> EieConfig:
        bits = self.encoding.entry_bits
        if self.spmat_sram.width_bits % bits != 0:
            raise ValueError(
                f"spmat_sram.width_bits={self.spmat_sram.width_bits} must be a multiple of the "
                f"entry size {bits} bits (weight_index_bits + relative_index_bits)"
            )
        if self.pointer_sram.banks != 2:
            raise ValueError(
                "pointer_sram.banks must be 2: EIE reads p[j] and p[j+1] in one cycle from "
                "even/odd banks"
            )
        if self.arithmetic.accumulator_bits < self.arithmetic.data_bits:
            raise ValueError("arithmetic.accumulator_bits must be >= arithmetic.data_bits")
        return self
