"""Board power of a Tensor Core GPU: limit, clocks, V/f curve and per-action energies.

The numbers are named, cited fields of the preset's ``power:`` block (the YAML comments give the
file/row or paper each comes from). Every energy is at the voltage the V/f curve gives for
``max_clock_hz``; ``accelerators.gpu_power`` scales it by (V(f) / V(max))^2 at clock f.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated, Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, model_validator

from archsim.config.base import ArchsimModel

__all__ = ["GpuPowerConfig", "VfPoint", "SIGNIFICAND_BITS", "FP16_SIGNIFICAND_BITS"]

#: significand bits of one A/B element in the tensor core's multiplier array, the implicit 1
#: included: FP16 1+10, BF16 1+7, TF32 1+10 (stored in 32 bits, multiplied as 19: NVIDIA A100
#: whitepaper, "TF32"), FP8 E4M3 1+3 (E5M2's 1+2 is priced as E4M3), INT8 8
SIGNIFICAND_BITS = {"fp16": 11, "bf16": 8, "tf32": 11, "fp8": 4, "int8": 8}
FP16_SIGNIFICAND_BITS = SIGNIFICAND_BITS["fp16"]


class VfPoint(ArchsimModel):
    """One point of the SM voltage/frequency curve."""

    clock_hz: PositiveFloat = Field(description="SM clock, Hz.")
    voltage_v: PositiveFloat = Field(description="Core supply voltage at that clock, V.")


class GpuPowerConfig(ArchsimModel):
    """Power limit, clock range, static power and per-action energies of one GPU board."""

    power_limit_w: PositiveFloat = Field(description="Board power limit (TDP), W.")
    max_clock_hz: PositiveFloat = Field(description="Maximum boost SM clock, Hz.")
    clock_step_hz: float = Field(
        ge=1.0e3,  # 1e-300 Hz made infinitely many clocks (an OverflowError traceback)
        le=1.0e10,
        description="Spacing of the SM clocks the GPU can run at, Hz (clocks are max_clock_hz "
        "minus whole steps), 1 kHz to 10 GHz.",
    )
    static_power_w: PositiveFloat = Field(
        description="Board power with the GPU warm and no kernel running (leakage, memory "
        "refresh, fans/VRM), W; charged for every second of a run."
    )
    vf_curve: list[VfPoint] = Field(
        min_length=2,
        description="SM voltage vs clock, clocks and voltages strictly increasing; linear "
        "between points. Its first clock is the lowest clock the solve may choose.",
    )
    tensor_current_clock_hz: PositiveFloat | None = Field(
        default=None,
        description="Clock at which tensor pipes busy every cycle reach the chip's peak-current "
        "limit (independent of the data); at tensor duty d the cap is the clock f with "
        "d * f * V(f) = this clock * V(this clock). None: no such limit.",
    )
    locked_clock_hz: PositiveFloat | None = Field(
        default=None,
        description="SM clock locked by the user (nvidia-smi --lock-gpu-clocks), Hz: the GPU "
        "runs at it unless the power or peak-current limit forces it lower. None: it boosts "
        "up to max_clock_hz.",
    )
    sm_active_energy_pj_per_cycle: NonNegativeFloat = Field(
        description="Energy of one SM for one clock while a kernel runs (clock tree, schedulers, "
        "control), independent of the data, pJ at V(max_clock_hz)."
    )
    tensor_busy_energy_pj_per_cycle: NonNegativeFloat = Field(
        description="Extra energy of one SM's tensor pipes for one busy clock that does not "
        "depend on the data (zero operands), pJ at V(max_clock_hz)."
    )
    mma_fp16_energy_pj: NonNegativeFloat = Field(
        description="Data-dependent energy of one FP16 tensor-core FMA accumulating in FP32 on "
        "random operands (multiplier array, adder tree, operand delivery), pJ at "
        "V(max_clock_hz)."
    )
    mma_multiplier_fraction: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Share of mma_fp16_energy_pj spent in the significand multiplier array. An "
        "FMA at precision p costs mma_fp16_energy_pj x (1 - fraction + fraction x "
        "(SIGNIFICAND_BITS[p] / 11)^2): an array's partial products grow with the square of "
        "the significand width, while the unnormalised adder tree that sums the products is "
        "the same for every input precision. 0: every precision costs the FP16 price.",
    )
    multiplier_lanes: dict[Literal["tf32"], Annotated[float, Field(ge=1.0, le=16.0)]] = Field(
        default_factory=dict,
        description="FP16 multiplier lanes one FMA of a precision slower than FP16 ties up "
        "(tf32: 2 where the part runs TF32 at half the FP16 rate on the same arrays): its "
        "multiplier-array energy counts that many times. Absent: 1.",
    )
    data_independent_fraction: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="Fraction of a data-dependent action's random-operand energy (tensor and "
        "CUDA-core FMAs, shared-memory and L2 accesses) that is spent whatever the data: "
        "clocked pipeline registers, SRAM word lines and sense amplifiers. An action at "
        "operand toggle t costs its price x (fraction + (1 - fraction) x t).",
    )
    cuda_fma_energy_pj: NonNegativeFloat = Field(
        description="Data-dependent energy of one FP32 FMA on a CUDA core (multiply, add, "
        "register-file reads and write, instruction share), pJ at V(max_clock_hz)."
    )
    shared_energy_pj_per_byte: NonNegativeFloat = Field(
        description="Shared memory / L1 access energy per byte, pJ at V(max_clock_hz)."
    )
    l2_energy_pj_per_byte: NonNegativeFloat = Field(
        description="L2 access energy per byte, pJ at V(max_clock_hz)."
    )

    @model_validator(mode="after")
    def _check(self) -> GpuPowerConfig:
        for i, (a, b) in enumerate(pairwise(self.vf_curve)):
            if b.clock_hz <= a.clock_hz or b.voltage_v <= a.voltage_v:
                raise ValueError(
                    f"vf_curve.{i + 1}: clock_hz and voltage_v must both increase from one "
                    f"point to the next (got {a.clock_hz:g} Hz/{a.voltage_v:g} V then "
                    f"{b.clock_hz:g} Hz/{b.voltage_v:g} V); allowed: strictly increasing"
                )
        lo, hi = self.vf_curve[0].clock_hz, self.vf_curve[-1].clock_hz
        if not lo <= self.max_clock_hz <= hi:
            raise ValueError(
                f"max_clock_hz={self.max_clock_hz:g} lies outside vf_curve; allowed: "
                f"{lo:g} .. {hi:g} Hz"
            )
        cap = self.tensor_current_clock_hz
        if cap is not None and not lo <= cap <= self.max_clock_hz:
            raise ValueError(
                f"tensor_current_clock_hz={cap:g} must lie in {lo:g} .. {self.max_clock_hz:g} Hz"
            )
        lock = self.locked_clock_hz
        if lock is not None and not lo <= lock <= self.max_clock_hz:
            raise ValueError(
                f"locked_clock_hz={lock:g} must lie in {lo:g} .. {self.max_clock_hz:g} Hz"
            )
        if self.power_limit_w <= self.static_power_w:
            raise ValueError(
                f"power_limit_w={self.power_limit_w:g} must exceed static_power_w="
                f"{self.static_power_w:g}; allowed: power_limit_w > static_power_w"
            )
        return self

    @property
    def min_clock_hz(self) -> float:
        """Lowest clock of the V/f curve, Hz."""
        return self.vf_curve[0].clock_hz

    def voltage_v(self, clock_hz: float) -> float:
        """Supply voltage at ``clock_hz`` (linear between curve points, clamped at the ends)."""
        pts = self.vf_curve
        if clock_hz <= pts[0].clock_hz:
            return pts[0].voltage_v
        for a, b in pairwise(pts):
            if clock_hz <= b.clock_hz:
                w = (clock_hz - a.clock_hz) / (b.clock_hz - a.clock_hz)
                return a.voltage_v + w * (b.voltage_v - a.voltage_v)
        return pts[-1].voltage_v

    def energy_scale(self, clock_hz: float) -> float:
        """(V(clock_hz) / V(max_clock_hz))^2: dynamic energy per action relative to max clock."""
        return (self.voltage_v(clock_hz) / self.voltage_v(self.max_clock_hz)) ** 2

    def mma_energy_pj(self, precision: str) -> float:
        """Data-dependent energy of one tensor-core FMA at ``precision`` (a key of
        :data:`SIGNIFICAND_BITS`), pJ at V(max_clock_hz)."""
        f = self.mma_multiplier_fraction
        width = SIGNIFICAND_BITS[precision] / FP16_SIGNIFICAND_BITS
        lanes = self.multiplier_lanes.get(precision, 1.0)  # type: ignore[call-overload]
        return self.mma_fp16_energy_pj * (1.0 - f + f * lanes * width**2)
