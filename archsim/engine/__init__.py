"""Transaction-level engine over SimPy: context, memories, action counters."""

from archsim.engine.context import ActionCounter, Dram, SimContext, Sram
from archsim.engine.pipeline import double_buffered_pipeline

__all__ = ["ActionCounter", "Dram", "SimContext", "Sram", "double_buffered_pipeline"]
