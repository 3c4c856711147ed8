"""Reusable hardware component configs. Units are in the field names."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, NonNegativeFloat

from archsim.config.base import ArchsimModel

__all__ = [
    "SUPPORTED_NODES_NM",
    "NodeNm",
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

# Sanity bounds: far beyond any real design, but small enough that the models' arrays and
# SimPy's clock stay finite. A value outside them is a typo (1e30, a missing unit), not a design.
MAX_CLOCK_HZ = 1.0e11  # 100 GHz
MAX_SRAM_BYTES = 2**40  # 1 TiB in one on-chip memory
MAX_WIDTH_BITS = 65536  # one read or port
MAX_BANKS = 4096
MAX_FIFO_DEPTH = 65536  # entries; the fast models allocate depth-sized arrays per PE
MAX_BANDWIDTH_BYTES_PER_S = 1.0e15  # 1 PB/s
MAX_LATENCY_S = 1.0
MAX_AREA_MM2 = 1.0e5  # larger than a 300 mm wafer
MAX_ENERGY_PJ = 1.0e9  # one action costing a millijoule


def _area_field() -> Any:
    return Field(
        default=None,
        le=MAX_AREA_MM2,
        description="Override of the modelled area of one instance, mm^2 (None: modelled).",
    )


def _energy_field(what: str) -> Any:
    return Field(default=None, le=MAX_ENERGY_PJ, description=f"Override: energy of {what}, pJ.")


class ClockConfig(ArchsimModel):
    """Core clock."""

    frequency_hz: float = Field(
        ge=1.0, le=MAX_CLOCK_HZ, description="Clock frequency, Hz (1 Hz .. 100 GHz)."
    )


def _known_node(v: int) -> int:
    if v not in SUPPORTED_NODES_NM:
        raise ValueError(f"unsupported node {v} nm; allowed: {list(SUPPORTED_NODES_NM)}")
    return v


#: a process node with scaling factors (any field that names one)
NodeNm = Annotated[int, AfterValidator(_known_node)]


class TechnologyConfig(ArchsimModel):
    """Process node; energies and areas are scaled from the 45 nm tables."""

    node_nm: NodeNm = Field(description=f"Process node, nm; one of {list(SUPPORTED_NODES_NM)}.")


class _Priced(ArchsimModel):
    """Optional per-component overrides of the energy model (45 nm tables, node-scaled)."""

    area_mm2: NonNegativeFloat | None = _area_field()


class SramConfig(_Priced):
    """An on-chip SRAM (one instance; per PE where the accelerator replicates it)."""

    size_bytes: int = Field(
        gt=0, le=MAX_SRAM_BYTES, description="Capacity of one instance, bytes (at most 1 TiB)."
    )
    width_bits: int = Field(
        gt=0, le=MAX_WIDTH_BITS, description="Bits delivered by one read (one bank)."
    )
    banks: int = Field(default=1, gt=0, le=MAX_BANKS, description="Independent banks.")
    read_energy_pj: NonNegativeFloat | None = _energy_field("one read of width_bits (one bank)")
    write_energy_pj: NonNegativeFloat | None = _energy_field("one write of width_bits (one bank)")


class FifoConfig(_Priced):
    """A FIFO; ``depth`` is the number of entries it can hold at once."""

    depth: int = Field(
        gt=0, le=MAX_FIFO_DEPTH, description="Entries it can hold at once (at most 65536)."
    )
    width_bits: int = Field(gt=0, le=MAX_WIDTH_BITS, description="Bits of one entry.")
    access_energy_pj: NonNegativeFloat | None = _energy_field("one push or pop")


class PeArrayConfig(ArchsimModel):
    """Number of processing elements."""

    num_pes: int = Field(ge=1, le=4096, description="Processing elements.")


class DramConfig(ArchsimModel):
    """Off-chip memory channel."""

    kind: Literal["lpddr4", "hbm2", "hbm3", "ddr_eie"] = Field(
        default="lpddr4", description="DRAM technology; selects the energy table's pJ/bit."
    )
    bandwidth_bytes_per_s: float = Field(
        ge=1e6,
        le=MAX_BANDWIDTH_BYTES_PER_S,
        description="Peak bandwidth, bytes/s (1 MB/s to 1 PB/s).",
    )
    latency_s: float = Field(
        default=0.0, ge=0.0, le=MAX_LATENCY_S, description="Latency of one access, s (<= 1 s)."
    )
    energy_pj_per_bit: NonNegativeFloat | None = Field(
        default=None,
        le=MAX_ENERGY_PJ,
        description="Override of the table's pJ/bit for this DRAM kind.",
    )


class CrossbarConfig(_Priced):
    """An inputs x outputs crossbar of width_bits-wide ports."""

    inputs: int = Field(gt=0, le=MAX_BANKS, description="Input ports.")
    outputs: int = Field(gt=0, le=MAX_BANKS, description="Output ports.")
    width_bits: int = Field(gt=0, le=MAX_WIDTH_BITS, description="Bits of one port.")
    energy_pj_per_bit: NonNegativeFloat | None = _energy_field("moving one bit through")


class MmaUnitConfig(_Priced):
    """A matrix-multiply-accumulate unit: m x n x k FMAs per clock."""

    m: int = Field(gt=0, le=1024, description="Rows of the MMA tile.")
    n: int = Field(gt=0, le=1024, description="Columns of the MMA tile.")
    k: int = Field(gt=0, le=1024, description="Reduction length of the MMA tile.")
    latency_cycles: int = Field(default=1, gt=0, le=65536, description="Cycles of one MMA.")
    energy_per_mma_pj: NonNegativeFloat | None = _energy_field("one m x n x k MMA")


class ArithmeticConfig(_Priced):
    """Fixed-point datapath widths."""

    data_bits: int = Field(default=16, ge=4, le=32, description="Operand width, bits.")
    accumulator_bits: int = Field(default=16, ge=4, le=48, description="Accumulator width, bits.")
    mac_energy_pj: NonNegativeFloat | None = _energy_field("one multiply-accumulate")
