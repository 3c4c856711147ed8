"""Design-space sweeps: expand axes, run points (process pool or Dask), resume, Pareto fronts."""

from archsim.explore.expression import Expression, ExpressionError, derived_quantities
from archsim.explore.frame import POINT_COLUMNS, pareto, totals
from archsim.explore.plan import SkippedPoint, SweepPlan, SweepPoint, build_plan, point_key
from archsim.explore.store import SweepStore
from archsim.explore.sweep import DETERMINISM, plan_sweep, run_plan, sweep

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
