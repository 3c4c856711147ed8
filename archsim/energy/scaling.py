"""Technology-node scaling factors from the 45 nm reference (Stillmaker and Baas, 0.8 V)."""

from __future__ import annotations

from archsim.energy.tables import EnergyTables, NodeFactors


def _factors(tables: EnergyTables, node_nm: int) -> NodeFactors:
    factors = tables.node_factors
    if isinstance(node_nm, bool) or not isinstance(node_nm, int) or node_nm not in factors:
        allowed = ", ".join(str(n) for n in sorted(factors, reverse=True))
        raise ValueError(f"unknown technology node {node_nm!r} nm; allowed nodes (nm): {allowed}")
    return factors[node_nm]


def energy_scale(tables: EnergyTables, node_nm: int) -> float:
    """Multiplier (dimensionless) taking a 45 nm energy to ``node_nm``; 1.0 at 45 nm."""
    return _factors(tables, node_nm).energy


def area_scale(tables: EnergyTables, node_nm: int) -> float:
    """Multiplier (dimensionless) taking a 45 nm area to ``node_nm``; 1.0 at 45 nm."""
    return _factors(tables, node_nm).area
