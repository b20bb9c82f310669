"""What a distribution backend returns (fairspec.analyses.distribution): every compound protected group
and its positive predictive value (GroupPPVs), or unknown with the reason."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .bayes_net import BayesNet
from .variables import DistributionError


def all_groups(bn: BayesNet, protected: Sequence[str]) -> list[tuple[int, ...]]:
    """Every compound group: a tuple of value indices, one per protected attribute."""
    for a in protected:
        if a not in bn.variables:
            raise DistributionError(f"the distribution does not cover protected attribute '{a}'")
    return list(itertools.product(*[range(bn.variables[a].k) for a in protected]))


@dataclass(frozen=True)
class GroupPPVs:
    """What a backend returns: PPVs per compound group (value indices, in
    ``protected`` order) and/or the most and least favoured group.

    ``status`` is "ok" or "unknown" (then ``reason`` says why and no value is
    given).  ``method`` is "enumerate" (one RE-SSAT / S3P per group) or "learn"
    (ER-SSAT for the most favoured group, ER-SSAT on the negated classifier for
    the least favoured one; S3P with exists / forall).
    """

    protected: tuple
    per_group: dict
    best: tuple | None          # (group, ppv)
    worst: tuple | None         # (group, ppv)
    status: str = "ok"
    reason: str | None = None
    seconds: float = 0.0
    backend: str = ""
    method: str = ""
    stats: dict = field(default_factory=dict)

    @staticmethod
    def from_values(protected, values: Mapping, **kw) -> "GroupPPVs":
        vals = {g: p for g, p in values.items() if p is not None and not math.isnan(p)}
        best = max(vals.items(), key=lambda kv: (kv[1], [-x for x in kv[0]])) if vals else None
        worst = min(vals.items(), key=lambda kv: (kv[1], kv[0])) if vals else None
        return GroupPPVs(tuple(protected), dict(values), best, worst, **kw)

    @staticmethod
    def unknown(protected, reason: str, **kw) -> "GroupPPVs":
        return GroupPPVs(tuple(protected), {}, None, None, status="unknown", reason=reason, **kw)
