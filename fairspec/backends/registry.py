"""Which backend can evaluate which property kind.

Each backend declares the property kinds it lowers; the planner picks the
first capable backend in PREFERENCE order unless the spec says `using NAME`.
Nothing here imports a solver.
"""

from __future__ import annotations

import importlib.util

# backend -> property kinds it can lower
BACKENDS: dict[str, frozenset[str]] = {
    "data": frozenset({"group_metric", "individual_fairness"}),
    "search": frozenset({"individual_fairness", "k_discrimination"}),
    "milp": frozenset({"individual_fairness", "k_discrimination", "pba"}),
    "smt": frozenset({"individual_fairness", "repair"}),
    "ssat": frozenset({"group_metric"}),
    "dp": frozenset({"group_metric"}),
}

# what a property kind runs on when the spec does not say `using`
PREFERENCE: dict[str, tuple[str, ...]] = {
    "individual_fairness": ("milp", "data"),
    "k_discrimination": ("search",),
    "pba": ("milp",),
    "group_metric": ("data",),
    "repair": ("smt",),
}


# a group metric over a `distribution` (Justicia, FVGM): the distribution runner
# then takes dp for linear rules and linear models, ssat for trees and CNF rules
PREFERENCE_OVER_DISTRIBUTION: tuple[str, ...] = ("ssat", "dp")


# group metrics that exist only over a distribution, and the backends that evaluate them:
# FVGM's fairness influence redraws features (D_{-S}), which data rows alone cannot do
DISTRIBUTION_ONLY_METRICS: dict[str, tuple[str, ...]] = {
    "influence": ("ssat", "dp"),
}


def supports(backend: str, kind: str) -> bool:
    return kind in BACKENDS.get(backend, frozenset())


def supports_metric(backend: str, metric: str) -> bool:
    """True when ``backend`` can evaluate the group metric ``metric``."""
    if not supports(backend, "group_metric"):
        return False
    only = DISTRIBUTION_ONLY_METRICS.get(metric)
    return only is None or backend in only


def implemented(backend: str) -> bool:
    """True when the backend's package is present in this installation."""
    try:
        return importlib.util.find_spec(f"fairspec.backends.{backend}") is not None
    except (ImportError, ValueError):
        return False
