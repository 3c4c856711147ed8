"""Prices of tensor-core GPU actions (Dally's 45 nm GPU estimates, node-scaled).

* tensor-core FMA: HMMA energy / 64 (one Volta 4x4x4 tensor-core operation), plus the
  instruction fetch/decode/operand overhead once per 64 FMA (``op``);
* CUDA-core FMA: FP32 multiply + add (Horowitz), plus the overhead per thread instruction;
* shared memory: L1 energy per 32-bit word; L2: last-level-cache energy per 32-bit word;
* HBM: device energy per bit of the configured kind (not node-scaled).

Energy scales with the configured node; no area model for GPUs (no public per-unit areas).

With a ``power:`` block the prices are the board's instead (``board_price_list``): static power,
SM-active and tensor-busy energy per cycle, FMA energy by significand width and per-byte access
energies, all named, cited fields of the preset at the max-clock voltage; the clock solve
(``accelerators.gpu_power``) scales them per layer by V(f)^2 and operand activity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.energy.ops import fp_add_energy_pj, fp_mult_energy_pj
from archsim.energy.pricing import PriceList, dram_pj_per_byte
from archsim.energy.scaling import energy_scale
from archsim.energy.tables import EnergyTables, load_tables

if TYPE_CHECKING:  # annotations only: a run imports its own config model
    from archsim.config.gpu import GpuConfig

__all__ = ["board_price_list", "gpu_price_list"]

#: tensor-core precisions priced (whether or not a preset runs them)
TENSOR_PRECISIONS = ("fp16", "bf16", "tf32", "fp8", "int8")


def _with_padding(fma: dict[str, float]) -> dict[str, float]:
    """``fma`` plus ``pad_<action>`` at the same price: FMAs of padded tile rows, priced like
    any FMA and scaled to their zero operands by ``gpu_power.action_scale``."""
    return {**fma, **{f"pad_{a}": e for a, e in fma.items()}}


def board_price_list(config: GpuConfig, tables: EnergyTables | None = None) -> PriceList:
    """Board-level pJ per action at the max-clock voltage, and the static board power."""
    p = config.power
    if p is None:
        raise ValueError(f"{config.name}: no power block to price the board from")
    hbm = dram_pj_per_byte(tables or load_tables(), config.hbm)
    tensor = _with_padding({f"fma_{q}": p.mma_energy_pj(q) for q in TENSOR_PRECISIONS})
    cuda = _with_padding({f"fma_{q}": p.cuda_fma_energy_pj for q in ("fp32", "fp16")})
    energy = {
        "sm": {"active_cycles": p.sm_active_energy_pj_per_cycle},
        # instruction issue is inside the SM-active energy per cycle
        "tensor_core": {**tensor, "op": 0.0, "busy_cycles": p.tensor_busy_energy_pj_per_cycle},
        "cuda_core": {**cuda, "instruction": 0.0},
        "shared_memory": {"read_bytes": p.shared_energy_pj_per_byte,
                          "write_bytes": p.shared_energy_pj_per_byte},
        "l2": {"read_bytes": p.l2_energy_pj_per_byte, "write_bytes": p.l2_energy_pj_per_byte},
        "hbm": {"read_bytes": hbm, "write_bytes": hbm},
    }  # fmt: skip
    static = {"board_static": p.static_power_w}
    return PriceList(energy_pj=energy, static_power_w=static, area_mm2={})


def gpu_price_list(config: GpuConfig, tables: EnergyTables | None = None) -> PriceList:
    """pJ per action of every component the tensor-core model counts (board prices when the
    preset has a ``power`` block, else node-scaled per-operation prices and no static power)."""
    if config.power is not None:
        return board_price_list(config, tables)
    t = tables or load_tables()
    e = energy_scale(t, config.technology.node_nm)
    g = t.gpu_pj
    fma = config.tensor_cores.mma_energy_pj
    if fma is None:
        fma = g["hmma"] / 64 * e
    overhead = g["instruction_overhead"] * e
    ffma = (fp_mult_energy_pj(t, 32) + fp_add_energy_pj(t, 32)) * e
    hbm = dram_pj_per_byte(t, config.hbm)
    energy = {
        "tensor_core": {"fma": fma, "op": overhead},
        "cuda_core": {"fma": ffma, "instruction": 32 * overhead},
        "shared_memory": {"read_bytes": g["l1_32b"] / 4 * e, "write_bytes": g["l1_32b"] / 4 * e},
        "l2": {"read_bytes": g["llc_32b"] / 4 * e, "write_bytes": g["llc_32b"] / 4 * e},
        "hbm": {"read_bytes": hbm, "write_bytes": hbm},
    }
    return PriceList(energy_pj=energy, static_power_w={}, area_mm2={})
