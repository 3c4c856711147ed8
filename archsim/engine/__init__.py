"""Transaction-level engine over SimPy: context, memories, action counters."""

from archsim.engine.context import ActionCounter, Dram, SimContext, Sram

__all__ = ["ActionCounter", "Dram", "SimContext", "Sram"]
