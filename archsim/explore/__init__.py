"""Design-space sweeps: expand axes, run points (process pool or Dask), resume, Pareto fronts.

The names load on first use (PEP 562): a sweep worker process imports ``explore.executor``
without pandas, which only the parent's frame assembly needs.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from archsim.lazy import lazy_names

#: public name -> module that defines it
_WHERE = {
    "Expression": "archsim.explore.expression",
    "ExpressionError": "archsim.explore.expression",
    "derived_quantities": "archsim.explore.expression",
    "POINT_COLUMNS": "archsim.explore.frame",
    "pareto": "archsim.explore.frame",
    "totals": "archsim.explore.frame",
    "SkippedPoint": "archsim.explore.plan",
    "SweepPlan": "archsim.explore.plan",
    "SweepPoint": "archsim.explore.plan",
    "build_plan": "archsim.explore.plan",
    "point_key": "archsim.explore.plan",
    "SweepStore": "archsim.explore.store",
    "DETERMINISM": "archsim.explore.sweep",
    "plan_sweep": "archsim.explore.sweep",
    "run_plan": "archsim.explore.sweep",
    "sweep": "archsim.explore.sweep",
}

__all__ = [
    "DETERMINISM",
    "POINT_COLUMNS",
    "Expression",
    "ExpressionError",
    "SkippedPoint",
    "SweepPlan",
    "SweepPoint",
    "SweepStore",
    "build_plan",
    "derived_quantities",
    "pareto",
    "plan_sweep",
    "point_key",
    "run_plan",
    "sweep",
    "totals",
]

if TYPE_CHECKING:
    from archsim.explore.expression import Expression, ExpressionError, derived_quantities
    from archsim.explore.frame import POINT_COLUMNS, pareto, totals
    from archsim.explore.plan import SkippedPoint, SweepPlan, SweepPoint, build_plan, point_key
    from archsim.explore.store import SweepStore
    from archsim.explore.sweep import DETERMINISM, plan_sweep, run_plan, sweep


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())


class _Package(types.ModuleType):
    """``archsim.explore``: importing the submodule ``explore.sweep`` makes Python bind it as
    the package attribute ``sweep``; the public function keeps that name instead."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "sweep" and isinstance(value, types.ModuleType):
            value = value.sweep
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
