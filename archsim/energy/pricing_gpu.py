"""Prices of tensor-core GPU actions (Dally's 45 nm GPU estimates, node-scaled).

* tensor-core FMA: HMMA energy / 64 (one Volta 4x4x4 tensor-core operation), plus the
  instruction fetch/decode/operand overhead once per 64 FMA (``op``);
* CUDA-core FMA: FP32 multiply + add (Horowitz), plus the overhead per thread instruction;
* shared memory: L1 energy per 32-bit word; L2: last-level-cache energy per 32-bit word;
* HBM: device energy per bit of the configured kind (not node-scaled).

Energy scales with the configured node; no area model for GPUs (no public per-unit areas).
"""

from __future__ import annotations

from archsim.config.gpu import GpuConfig
from archsim.energy.ops import fp_add_energy_pj, fp_mult_energy_pj
from archsim.energy.pricing import PriceList, dram_pj_per_byte
from archsim.energy.scaling import energy_scale
from archsim.energy.tables import EnergyTables, load_tables

__all__ = ["gpu_price_list"]


def gpu_price_list(config: GpuConfig, tables: EnergyTables | None = None) -> PriceList:
    """pJ per action of every component the tensor-core model counts."""
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
