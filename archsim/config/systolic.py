"""Dense systolic-array configuration (TPU-like; SCALE-Sim compatible)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt, model_validator

from archsim.config.base import ArchsimModel
from archsim.config.components import (
    ArithmeticConfig,
    ClockConfig,
    DramConfig,
    SramConfig,
    TechnologyConfig,
)
from archsim.config.names import Name

__all__ = ["SystolicArrayConfig", "ScalesimCompatConfig", "SystolicConfig"]


class SystolicArrayConfig(ArchsimModel):
    """An R x C grid of MAC PEs and the dataflow it runs."""

    rows: int = Field(ge=1, le=4096, description="R, PE rows.")
    cols: int = Field(ge=1, le=4096, description="C, PE columns.")
    dataflow: Literal["os", "ws", "is"] = Field(
        description="os: output, ws: weight, is: input stationary."
    )

    @property
    def num_pes(self) -> int:
        """R * C."""
        return self.rows * self.cols


class ScalesimCompatConfig(ArchsimModel):
    """SCALE-Sim 3.0.0's memory interface, used when ``timing_model`` is ``scalesim``.

    SCALE-Sim counts in words (``word_bytes``, 1 byte in 3.0.0) and its DRAM interface in words
    per cycle: IFMAP and FILTER reads at ``IfmapSRAMBankBandwidth`` / ``FilterSRAMBankBandwidth``
    and OFMAP writes at ``Bandwidth`` (USER mode); in CALC mode reads never stall and OFMAP
    drains at ``cols`` words per cycle.
    """

    interface_bandwidth: Literal["user", "calc"] = Field(
        default="user", description="SCALE-Sim's bandwidth mode: user (as given) or calc."
    )
    ifmap_words_per_cycle: PositiveInt = Field(
        default=10, description="IFMAP DRAM reads, words/cycle (IfmapSRAMBankBandwidth)."
    )
    filter_words_per_cycle: PositiveInt = Field(
        default=10, description="FILTER DRAM reads, words/cycle (FilterSRAMBankBandwidth)."
    )
    ofmap_words_per_cycle: PositiveInt = Field(
        default=10, description="OFMAP DRAM writes, words/cycle (Bandwidth)."
    )
    word_bytes: PositiveInt = Field(default=1, description="Bytes of one SCALE-Sim word.")


class SystolicConfig(ArchsimModel):
    """A dense systolic array with double-buffered IFMAP/FILTER/OFMAP SRAMs and a DRAM.

    ``timing_model`` ``archsim`` (default) times every fold as ``2R + C + T - 2`` cycles and
    overlaps each fold's DRAM loads with the previous fold's compute (double buffering);
    ``scalesim`` reproduces SCALE-Sim 3.0.0's cycles and stalls exactly (see
    ``archsim.accelerators.systolic``).
    """

    schema_version: Literal[1]
    accelerator: Literal["systolic"]
    name: Name = "systolic"
    description: str = ""
    source: str = Field(default="", description="Citation of the design's parameters.")
    clock: ClockConfig
    technology: TechnologyConfig
    array: SystolicArrayConfig
    arithmetic: ArithmeticConfig = ArithmeticConfig(data_bits=8, accumulator_bits=32)
    ifmap_sram: SramConfig
    filter_sram: SramConfig
    ofmap_sram: SramConfig
    dram: DramConfig
    timing_model: Literal["archsim", "scalesim"] = Field(
        default="archsim", description="archsim (double-buffered folds) or scalesim (exact)."
    )
    scalesim: ScalesimCompatConfig = ScalesimCompatConfig()

    @property
    def peak_macs_per_cycle(self) -> int:
        """R * C."""
        return self.array.num_pes

    @model_validator(mode="after")
    def _scalesim_buffers(self) -> SystolicConfig:
        """SCALE-Sim's buffers keep half their words active and prefetch into the other half,
        a DRAM line of ``*_words_per_cycle`` words at a time: a buffer of one word never
        prefetches (the read loop spun forever), and a line longer than the buffer counted
        reads past 64 bits (1e18 words per cycle gave negative energy)."""
        if self.timing_model != "scalesim":
            return self
        sc = self.scalesim
        for name in ("ifmap", "filter", "ofmap"):
            size = getattr(self, f"{name}_sram").size_bytes
            words = size // sc.word_bytes
            if words < 2:
                held = f"{name}_sram's {size} bytes hold {words} word(s) of {sc.word_bytes} bytes"
                if sc.word_bytes > size:  # the word is what changed
                    message = f"scalesim.word_bytes: {held}; allowed: at most {size // 2} bytes"
                else:
                    message = f"{name}_sram.size_bytes: {held}; allowed: at least 2 words"
                raise ValueError(f"{message} (SCALE-Sim's buffers hold 2 words or more)")
            bw = getattr(sc, f"{name}_words_per_cycle")
            if sc.interface_bandwidth == "user" and bw > words:
                raise ValueError(
                    f"scalesim.{name}_words_per_cycle: {bw} words per cycle, more than the "
                    f"{words} words {name}_sram holds; allowed: at most {words}"
                )
        return self
