"""DP backend: PPVs of a linear classifier over a distribution by FVGM's
stochastic subset sum (see ``s3p.py``).

``ppv_per_group``  one S3P per compound group (the group fixed), evaluated in a
                   single bottom-up pass: every group's PPV at once;
``ppv_extremes``   FVGM's learning: existential quantifiers on the protected
                   attributes give the most favoured group and its PPV,
                   universal ones the least favoured.

Only ``LinearRule`` classifiers (pseudo-Boolean threshold rules) are accepted.
"""

from __future__ import annotations

import math
import time
from typing import Mapping, Sequence

import numpy as np

from fairspec.analyses.distribution import BayesNet, DistributionError, GroupPPVs, all_groups
from fairspec.backends.boolean import LinearRule
from fairspec.backends.dp.s3p import S3P, S3PVar, fvgm_order, solve_recursive, solve_vector

__all__ = ["build_s3p", "ppv_per_group", "ppv_extremes", "S3P", "S3PVar",
           "solve_recursive", "solve_vector"]

LINEAR_ONLY = True  # a PPV engine for linear classifiers only (analyses.group_metrics_exact; registry: forms)


def build_s3p(bn: BayesNet, clf: LinearRule, protected: Sequence[str], quant: str = "E",
              fixed: Mapping[str, int] | None = None, evidence: Mapping[str, Sequence[int]] | None = None,
              threshold: int | None = None, order: str = "fvgm") -> S3P:
    """The S3P of ``Pr[clf = 1 | ...]``: protected attributes quantified ``quant``
    (or fixed to ``fixed``), the other variables random, ``evidence`` restricting
    variables to some values.  ``threshold`` overrides the rule's threshold on
    the sum of the weights of the network's variables (used for Pr[evidence])."""
    if not isinstance(clf, LinearRule):
        raise DistributionError("the dynamic-programming backend handles linear classifiers only")
    bn.check_covers(clf.features)
    bn.check_choice(protected)
    evidence = dict(evidence or {})
    fixed = dict(fixed or {})
    names = list(clf.features) + list(protected) + list(evidence)
    sub = bn.restricted(names)
    for f, w in clf.weights.items():
        if f in sub.variables and len(w) != sub.variables[f].k:
            raise DistributionError(f"the classifier gives {len(w)} weights for the {sub.variables[f].k} values of '{f}'")
    vs = []
    for n in sub.order:
        var = sub.variables[n]
        w = clf.weights.get(n, np.zeros(var.k, dtype=np.int64))
        allowed = np.ones(var.k, dtype=bool)
        if n in evidence:
            allowed[:] = False
            allowed[list(evidence[n])] = True
        if n in protected:
            if n in fixed:
                allowed[:] = False
                allowed[int(fixed[n])] = True
            vs.append(S3PVar(n, quant, w, (), None, allowed))
        else:
            vs.append(S3PVar(n, "R", w, sub.parents[n], sub.cpts[n], allowed))
    if threshold is None:
        # constant weight vectors of variables left out of the network are plain offsets
        tau = clf.threshold - sum(int(w[0]) for f, w in clf.weights.items() if f not in sub.variables)
    else:
        tau = threshold   # given: the threshold on the sum over the network's variables
    children = {n: sub.children(n) for n in sub.order}
    if order == "fvgm":
        vs = fvgm_order(vs, children, tau, sub.order)
    else:
        # topological, choice variables first
        vs = [v for v in vs if v.quant != "R"] + [v for v in vs if v.quant == "R"]
    return S3P(vs, int(tau))


def _solve(problem, method, max_nodes, time_limit):
    if method == "recursive":
        return solve_recursive(problem, max_nodes=max_nodes, time_limit=time_limit)
    return solve_vector(problem, max_cells=max_nodes * 10, time_limit=time_limit)


def ppv_per_group(bn: BayesNet, clf: LinearRule, protected: Sequence[str], groups=None,
                  evidence: Mapping[str, Sequence[int]] | None = None, method: str = "vector",
                  max_nodes: int = 5_000_000, time_limit: float = 60.0) -> GroupPPVs:
    """PPV of every compound group (value-index tuples), one S3P each.

    With ``evidence`` the PPV is Pr[Yhat=1, evidence | group] / Pr[evidence | group].
    """
    t0 = time.perf_counter()
    protected = tuple(protected)
    groups = list(groups) if groups is not None else all_groups(bn, protected)
    values = {}
    if method == "vector":
        # one bottom-up pass: the protected attributes lead the order, every group read off
        allowed = {a: sorted({g[i] for g in groups}) for i, a in enumerate(protected)}
        ev = dict(evidence or {})
        prob = build_s3p(bn, clf, protected, "E", None, ev, order="fvgm")
        for v in prob.variables:
            if v.name in allowed:
                v.allowed = np.zeros(v.k, dtype=bool)
                v.allowed[allowed[v.name]] = True
        r = solve_vector(prob, max_cells=max_nodes * 10, time_limit=time_limit, per_choice=True)
        if r.status != "ok":
            return GroupPPVs.unknown(protected, r.reason, seconds=time.perf_counter() - t0,
                                     backend="dp", method="enumerate")
        lead = [v.name for v in prob.variables if v.quant != "R"]
        for g in groups:
            gd = dict(zip(protected, g))
            key = tuple(gd[nm] for nm in lead)
            p, mass = r.per_choice[key]
            if ev:
                p = p / mass if mass > 0 else math.nan
            values[g] = p
        return GroupPPVs.from_values(protected, values, seconds=time.perf_counter() - t0, backend="dp",
                                     method="enumerate", stats={"cells": r.nodes, "solver": method})
    nodes = 0
    for g in groups:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return GroupPPVs.unknown(protected, f"the dynamic program exceeded its time limit of {time_limit:g} s",
                                     seconds=time.perf_counter() - t0, backend="dp", method="enumerate")
        prob = build_s3p(bn, clf, protected, "E", dict(zip(protected, g)), evidence)
        r = _solve(prob, method, max_nodes, left)
        if r.status != "ok":
            return GroupPPVs.unknown(protected, r.reason, seconds=time.perf_counter() - t0,
                                     backend="dp", method="enumerate")
        nodes += r.nodes
        p = r.probability
        if evidence:
            # Pr[evidence | group]: the same problem with an always-true threshold
            low = int(sum(int(v.weights.min()) for v in prob.variables)) - 1
            prob_e = build_s3p(bn, clf, protected, "E", dict(zip(protected, g)), evidence, threshold=low)
            re = _solve(prob_e, method, max_nodes, max(left, 1e-3))
            if re.status != "ok":
                return GroupPPVs.unknown(protected, re.reason, seconds=time.perf_counter() - t0,
                                         backend="dp", method="enumerate")
            p = p / re.probability if re.probability > 0 else math.nan
        values[g] = p
    return GroupPPVs.from_values(protected, values, seconds=time.perf_counter() - t0, backend="dp",
                                 method="enumerate", stats={"states": nodes, "solver": method})


def ppv_extremes(bn: BayesNet, clf: LinearRule, protected: Sequence[str], method: str = "vector",
                 max_nodes: int = 5_000_000, time_limit: float = 60.0) -> GroupPPVs:
    """Most favoured group (exists) and least favoured group (forall), FVGM section 3.1."""
    t0 = time.perf_counter()
    protected = tuple(protected)
    out = {}
    nodes = 0
    for quant in ("E", "A"):
        prob = build_s3p(bn, clf, protected, quant)
        r = _solve(prob, method, max_nodes, time_limit - (time.perf_counter() - t0))
        if r.status != "ok":
            return GroupPPVs.unknown(protected, r.reason, seconds=time.perf_counter() - t0,
                                     backend="dp", method="learn")
        nodes += r.nodes
        g = tuple(int(r.choice.get(a, 0)) for a in protected)
        out[quant] = (g, r.probability)
    return GroupPPVs(protected, {out["E"][0]: out["E"][1], out["A"][0]: out["A"][1]}, out["E"], out["A"],
                     seconds=time.perf_counter() - t0, backend="dp", method="learn",
                     stats={"states": nodes, "solver": method})
