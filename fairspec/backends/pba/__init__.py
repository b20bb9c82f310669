"""Ceteris-paribus PBA fairness (paper 004): per-point verification and its aggregation.

    from fairspec.backends.pba import CaseSet, analyse, aggregate, logit_difference_net

    net = logit_difference_net(plnet)            # g = logit(class 1) - logit(class 0)
    cs = CaseSet(net, U, Up, cols, scale, lo, hi, integer, cls)
    res = analyse(cs, score=..., replay=..., mode="exact")   # or mode="lp"
    res.observed / res.flipped                    # proved | refuted | unknown | excluded
    agg = aggregate(groups, ...)                  # per-group shares, SP, TPR, CFA, RB
    render_table(agg, console); write_chart(agg, "pba.png")

Modules: ``twin`` (the batched twin-network problem), ``relax`` (interval + linear
bounds), ``attack`` (batched falsification), ``exact`` (LP relaxation / MILP via
LinModel), ``verify`` (the staged decision), ``core`` (points -> statuses and
replayed witnesses), ``aggregate`` (tables, JSON, chart). The spec-level runner is
:mod:`fairspec.kinds.pba`.
"""

from __future__ import annotations

from fairspec.backends.pba.aggregate import Aggregate, aggregate, render_table, write_chart
from fairspec.backends.pba.core import Analysis, CaseSet, analyse
from fairspec.backends.pba.twin import TwinCases, logit_difference_net, make_cases
from fairspec.backends.pba.verify import Decisions, decide, decide_robust

__all__ = ["Aggregate", "Analysis", "CaseSet", "Decisions", "TwinCases", "aggregate", "analyse", "decide",
           "decide_robust", "logit_difference_net", "make_cases", "render_table", "write_chart"]
