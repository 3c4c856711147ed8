"""Reusable hardware component configs. Units are in the field names."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, field_validator

from archsim.config.base import ArchsimModel

__all__ = [
    "SUPPORTED_NODES_NM",
    "ClockConfig",
    "TechnologyConfig",
    "SramConfig",
    "FifoConfig",
    "PeArrayConfig",
    "DramConfig",
    "CrossbarConfig",
    "MmaUnitConfig",
    "ArithmeticConfig",
]

#: Technology nodes with scaling factors in ``archsim/energy/tables/node_scaling.yaml``.
SUPPORTED_NODES_NM = (65, 45, 40, 32, 28, 20, 16, 14, 12, 10, 7)


class ClockConfig(ArchsimModel):
    """Core clock."""

    frequency_hz: PositiveFloat


class TechnologyConfig(ArchsimModel):
    """Process node; energies and areas are scaled from the 45 nm tables."""

    node_nm: int

    @field_validator("node_nm")
    @classmethod
    def _known_node(cls, v: int) -> int:
        if v not in SUPPORTED_NODES_NM:
            raise ValueError(f"unsupported node {v} nm; allowed: {list(SUPPORTED_NODES_NM)}")
        return v


class _Priced(ArchsimModel):
    """Optional per-component overrides of the energy model (45 nm tables, node-scaled)."""

    area_mm2: NonNegativeFloat | None = Field(
        default=None, description="Override of the modelled area of one instance, mm^2."
    )


class SramConfig(_Priced):
    """An on-chip SRAM (one instance; per PE where the accelerator replicates it)."""

    size_bytes: PositiveInt
    width_bits: PositiveInt = Field(description="Bits delivered by one read.")
    banks: PositiveInt = 1
    read_energy_pj: NonNegativeFloat | None = Field(
        default=None, description="Override: energy of one read of width_bits (one bank), pJ."
    )
    write_energy_pj: NonNegativeFloat | None = Field(
        default=None, description="Override: energy of one write of width_bits (one bank), pJ."
    )


class FifoConfig(_Priced):
    """A FIFO; ``depth`` is the number of entries it can hold at once."""

    depth: PositiveInt
    width_bits: PositiveInt
    access_energy_pj: NonNegativeFloat | None = Field(
        default=None, description="Override: energy of one push or pop, pJ."
    )


class PeArrayConfig(ArchsimModel):
    """Number of processing elements."""

    num_pes: int = Field(ge=1, le=4096)


class DramConfig(ArchsimModel):
    """Off-chip memory channel."""

    kind: Literal["lpddr4", "hbm2", "hbm3", "ddr_eie"] = "lpddr4"
    bandwidth_bytes_per_s: PositiveFloat
    latency_s: NonNegativeFloat = 0.0
    energy_pj_per_bit: NonNegativeFloat | None = Field(
        default=None, description="Override of the table's pJ/bit for this DRAM kind."
    )


class CrossbarConfig(_Priced):
    """An inputs x outputs crossbar of width_bits-wide ports."""

    inputs: PositiveInt
    outputs: PositiveInt
    width_bits: PositiveInt
    energy_pj_per_bit: NonNegativeFloat | None = None


class MmaUnitConfig(_Priced):
    """A matrix-multiply-accumulate unit: m x n x k FMAs per clock."""

    m: PositiveInt
    n: PositiveInt
    k: PositiveInt
    latency_cycles: PositiveInt = 1
    energy_per_mma_pj: NonNegativeFloat | None = None


class ArithmeticConfig(_Priced):
    """Fixed-point datapath widths."""

    data_bits: int = Field(default=16, ge=4, le=32)
    accumulator_bits: int = Field(default=16, ge=4, le=48)
    mac_energy_pj: NonNegativeFloat | None = Field(
        default=None, description="Override: energy of one multiply-accumulate, pJ."
    )
