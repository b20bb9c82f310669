"""Exact group-fairness metrics of a classifier over a distribution.

Terms (Justicia, FVGM): the *positive predictive value* (PPV) of a compound
protected group a is Pr[Yhat = 1 | A = a] -- the group's *passing rate*; the
*most favoured* group has the largest PPV, the *least favoured* the smallest.

* disparate impact (DI)   = min_a PPV(a) / max_a PPV(a)       (1 is fair; the four-fifths rule asks >= 0.8)
* statistical parity (SP) = max_a PPV(a) - min_a PPV(a)       (0 is fair)
* equalized odds (EO)     = max over y in {0,1} of the spread of Pr[Yhat = 1 | A = a, Y = y]
                            (TPR for y = 1, FPR for y = 0); needs the label in the distribution
* path-specific causal fairness (PCF, FVGM): the mediators Z see the most favoured
  group a_max instead of a; PCF = spread of Pr[Yhat = 1 | A = a, Z ~ Z | a_max]
* fairness influence function (FIF, FVGM): FIF(S) = Q(D) - Q(D_{-S}) where D_{-S}
  replaces the features S read by the classifier with independent uniform values
  and Q is a group's PPV, DI or SP.

Every value computed from an estimated distribution carries ``ErrorBound``
(Justicia's epsilon_0 and our rigorous L1 (Weissman) bound, weighted by the rows in play).  ``backend=``
is the PPV engine the caller picked (this module calls no backend of its own): the module
``fairspec.backends.ssat`` (trees, CNF, linear), ``fairspec.backends.dp`` (linear) or "brute"
(enumeration of the joint distribution; reference).  Methods: "enumerate"
(a PPV per group) and "learn" (only the most and least favoured groups).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from fairspec.analyses.distribution import (BayesNet, DistributionError, ErrorBound, GroupPPVs,
                                            all_groups, justicia_epsilon0, ppv_error_bound)

__all__ = [
    "MetricResult", "FIFResult", "group_ppvs", "disparate_impact", "statistical_parity",
    "equalized_odds", "path_specific_causal_fairness", "fairness_influence",
    "brute_force_ppvs", "empirical_ppvs", "error_bound", "METRICS", "evaluate",
]

Group = tuple  # ((attribute, value label), ...)


@dataclass(frozen=True)
class MetricResult:
    """One metric over one distribution.  ``value`` is None unless status is "ok"."""

    metric: str
    value: float | None
    per_group: tuple = ()                  # ((group, ppv), ...) -- for EO: TPR / FPR in details
    most_favoured: Group | None = None
    most_favoured_ppv: float | None = None
    least_favoured: Group | None = None
    least_favoured_ppv: float | None = None
    bound: ErrorBound | None = None
    seconds: float = 0.0
    status: str = "ok"
    reason: str | None = None
    backend: str = ""
    method: str = ""
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        def g(x):
            return None if x is None else {a: _jsonable(v) for a, v in x}
        return {
            "metric": self.metric, "value": self.value, "status": self.status, "reason": self.reason,
            "per_group": [{"group": g(k), "ppv": v} for k, v in self.per_group],
            "most_favoured": g(self.most_favoured), "most_favoured_ppv": self.most_favoured_ppv,
            "least_favoured": g(self.least_favoured), "least_favoured_ppv": self.least_favoured_ppv,
            "bound": None if self.bound is None else self.bound.as_dict(),
            "seconds": self.seconds, "backend": self.backend, "method": self.method,
            "details": _jsonable(self.details),
        }


@dataclass(frozen=True)
class FIFResult:
    """Fairness influence of feature subsets: ``influence[subset] = Q(D) - Q(D_-S)``."""

    quantity: str
    base: float | None
    influence: tuple = ()        # ((subset tuple, influence), ...)
    group: Group | None = None
    seconds: float = 0.0
    status: str = "ok"
    reason: str | None = None
    base_result: MetricResult | None = None   # Q(D) itself: its per-group PPVs and error bound


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    return x


# --------------------------------------------------------------------------- helpers


def _labels(bn: BayesNet, protected, g) -> Group:
    return tuple((a, bn.variables[a].values[int(i)]) for a, i in zip(protected, g))


def _group_indices(bn: BayesNet, protected, groups):
    """Groups given as mappings or tuples of value labels -> tuples of value indices."""
    if groups is None:
        return None
    out = []
    for g in groups:
        vals = [g[a] for a in protected] if isinstance(g, Mapping) else list(g)
        out.append(tuple(bn.variables[a].index_of(v) for a, v in zip(protected, vals)))
    return out


class _Brute:
    """The reference engine: enumerate every joint assignment (small instances)."""

    name = "brute"

    @staticmethod
    def ppv_per_group(bn, clf, protected, groups=None, evidence=None, **_):
        return brute_force_ppvs(bn, clf, protected, groups, evidence)

    ppv_extremes = None


BRUTE = _Brute()


def _engine(backend, clf):
    """The PPV engine: an object with ``ppv_per_group`` and ``ppv_extremes`` (the ssat and dp
    backends' modules; the runner picks which, see fairspec.planning), or "brute"."""
    if backend == "brute" or backend is BRUTE:
        return BRUTE
    if isinstance(backend, str) or not hasattr(backend, "ppv_per_group"):
        raise ValueError(f"pass the PPV engine (the module fairspec.backends.ssat or fairspec.backends.dp), not "
                         f"{backend!r}: which one runs is chosen by fairspec.planning.plan")
    if getattr(backend, "LINEAR_ONLY", False) and getattr(clf, "kind", None) != "linear":
        raise DistributionError("the dynamic-programming backend handles linear classifiers only")
    return backend


def _run(bn, clf, protected, backend, method, groups, evidence, max_nodes, time_limit) -> GroupPPVs:
    protected = tuple(protected)
    bn.check_covers(clf.features)
    bn.check_choice(protected)
    for n in (evidence or {}):
        bn.check_covers([n], "the condition")
    if method not in ("enumerate", "learn"):
        raise ValueError(f"unknown method {method!r}")
    engine = _engine(backend, clf)
    if method == "learn" and evidence:
        method = "enumerate"     # a conditional PPV is a ratio; learning maximises a joint
    if engine is BRUTE:
        return brute_force_ppvs(bn, clf, protected, groups, evidence)
    if method == "learn":
        return engine.ppv_extremes(bn, clf, protected, max_nodes=max_nodes, time_limit=time_limit)
    return engine.ppv_per_group(bn, clf, protected, groups, evidence, max_nodes=max_nodes, time_limit=time_limit)


def error_bound(bn: BayesNet, clf, protected, delta: float = 0.05, groups=None,
                metric: str = "ppv", ppvs: Mapping | None = None,
                evidence: Mapping[str, Sequence[int]] | None = None) -> ErrorBound | None:
    """Justicia's epsilon_0 and the Hoeffding bound for a distribution estimated from data.

    ``evidence`` (value indices, e.g. the label's positive value for a TPR): the PPVs are conditional on it,
    so the bound clamps it with the group (the rows the conditional reads are the CPT rows under that value,
    not all rows weighted by its probability). That is the product of the CPTs with the evidence clamped only
    when each evidence variable is one value whose parents are all protected (a non-descendant of it is then
    independent of it given the group); otherwise conditioning reweighs its ancestors and no bound is given
    (session 36, h7: the TPR's bound was the unconditional PPV's, 35% outside at "95%")."""
    if bn.n_rows is None:
        return None
    protected = tuple(protected)
    names = list(clf.features)
    evidence = dict(evidence or {})
    for n, idx in evidence.items():
        if len(idx) != 1 or not set(bn.parents[n]) <= set(protected):
            return ErrorBound(delta, bn.n_rows, None, None, None)
    sub = bn.restricted(names + list(protected) + list(evidence))
    n_exists = sum(1 if sub.variables[a].k == 2 else sub.variables[a].k for a in protected)
    n_random = 0
    for n in sub.order:
        if n in protected:
            continue
        rows = int(np.prod([sub.variables[p].k for p in sub.parents[n]])) if sub.parents[n] else 1
        n_random += rows * (sub.variables[n].k - 1)
    eps0 = justicia_epsilon0(sub.n_rows, n_exists, n_random, delta)
    groups = groups if groups is not None else all_groups(sub, protected)
    add = None
    for g in groups:
        b = ppv_error_bound(sub, names, delta, {**dict(zip(protected, g)),
                                                **{n: int(idx[0]) for n, idx in evidence.items()}})
        if b is None:
            add = None
            break
        add = b if add is None else max(add, b)
    value_add = None
    if add is not None and ppvs:
        hi = max(ppvs.values())
        lo = min(ppvs.values())
        if metric in ("statistical_parity", "equalized_odds", "path_specific_causal_fairness"):
            value_add = 2 * add
        elif metric == "disparate_impact":
            di = lo / hi if hi > 0 else math.nan
            # the ratio's range when each PPV may move by ``add`` (the upper end is 1 once the
            # larger PPV may reach 0)
            upper = min((lo + add) / (hi - add), 1.0) if hi - add > 0 else 1.0
            value_add = max(abs(di - max(lo - add, 0) / (hi + add)), abs(upper - di))
        else:
            value_add = add
    return ErrorBound(delta, sub.n_rows, eps0, add, value_add)


def _result(metric, bn, clf, protected, res: GroupPPVs, value_fn, delta, t0, details=None,
            evidence=None) -> MetricResult:
    if res.status != "ok":
        return MetricResult(metric, None, status="unknown", reason=res.reason, seconds=time.perf_counter() - t0,
                            backend=res.backend, method=res.method, details=dict(details or {}))
    ppvs = res.per_group if res.method == "enumerate" else {res.best[0]: res.best[1], res.worst[0]: res.worst[1]}
    value = value_fn(res.best[1], res.worst[1]) if res.best else None
    per = tuple((_labels(bn, protected, g), p) for g, p in sorted(ppvs.items()))
    bound = error_bound(bn, clf, protected, delta, list(ppvs), metric, ppvs, evidence)
    return MetricResult(metric, value, per,
                        _labels(bn, protected, res.best[0]) if res.best else None, res.best[1] if res.best else None,
                        _labels(bn, protected, res.worst[0]) if res.worst else None, res.worst[1] if res.worst else None,
                        bound, time.perf_counter() - t0, "ok", None, res.backend, res.method,
                        {**(details or {}), "solver": res.stats, "solve_seconds": res.seconds})


def _di(hi, lo):
    if hi <= 0:
        return 1.0 if lo <= 0 else math.nan
    return lo / hi


def _sp(hi, lo):
    return hi - lo


# --------------------------------------------------------------------------- metrics


def group_ppvs(clf, dist: BayesNet, protected: Sequence[str], *, backend=None,
               method: str = "enumerate", groups=None, evidence: Mapping[str, Sequence] | None = None,
               delta: float = 0.05, max_nodes: int = 2_000_000, time_limit: float = 60.0) -> MetricResult:
    """PPV (passing rate) of every compound group, or only of the most and least
    favoured groups with ``method="learn"``.  ``value`` is the largest PPV."""
    t0 = time.perf_counter()
    protected = tuple(protected)
    ev = _evidence(dist, evidence)
    res = _run(dist, clf, protected, backend, method, _group_indices(dist, protected, groups), ev,
               max_nodes, time_limit)
    return _result("ppv", dist, clf, protected, res, lambda hi, lo: hi, delta, t0, evidence=ev)


def _evidence(dist, evidence):
    if not evidence:
        return None
    out = {}
    for n, vals in evidence.items():
        dist.check_covers([n], "the condition")
        var = dist.variables[n]
        if not isinstance(vals, (list, tuple, set, frozenset)):
            vals = [vals]
        out[n] = sorted({var.index_of(v) for v in vals})
    return out


def disparate_impact(clf, dist: BayesNet, protected: Sequence[str], **kw) -> MetricResult:
    """DI = min_a PPV(a) / max_a PPV(a)  (Justicia 2.1.1; FVGM prints the inverse ratio)."""
    t0 = time.perf_counter()
    r = group_ppvs(clf, dist, protected, **kw)
    return _rename(r, "disparate_impact", _di, dist, clf, protected, kw.get("delta", 0.05), t0)


def statistical_parity(clf, dist: BayesNet, protected: Sequence[str], **kw) -> MetricResult:
    """SP = max_a PPV(a) - min_a PPV(a)."""
    t0 = time.perf_counter()
    r = group_ppvs(clf, dist, protected, **kw)
    return _rename(r, "statistical_parity", _sp, dist, clf, protected, kw.get("delta", 0.05), t0)


def _rename(r: MetricResult, metric, fn, dist, clf, protected, delta, t0) -> MetricResult:
    if r.status != "ok":
        return MetricResult(metric, None, status=r.status, reason=r.reason, seconds=time.perf_counter() - t0,
                            backend=r.backend, method=r.method)
    ppvs = {tuple(dist.variables[a].index_of(v) for a, v in g): p for g, p in r.per_group}
    value = fn(r.most_favoured_ppv, r.least_favoured_ppv)
    bound = error_bound(dist, clf, protected, delta, list(ppvs), metric, ppvs)
    return MetricResult(metric, value, r.per_group, r.most_favoured, r.most_favoured_ppv, r.least_favoured,
                        r.least_favoured_ppv, bound, time.perf_counter() - t0, "ok", None, r.backend, r.method,
                        r.details)


def equalized_odds(clf, dist: BayesNet, protected: Sequence[str], label: str, positive: Any = 1,
                   **kw) -> MetricResult:
    """EO = max(spread of TPR, spread of FPR) over the compound groups.

    TPR(a) = Pr[Yhat = 1 | A = a, Y = 1], FPR(a) = Pr[Yhat = 1 | A = a, Y = 0], by
    conditioning the distribution on the label (``label`` must be one of its
    variables, e.g. ``conditional(data, protected, label=...)``)."""
    t0 = time.perf_counter()
    if label not in dist.variables:
        raise DistributionError(f"equalized odds needs the label '{label}' in the distribution")
    var = dist.variables[label]
    pos = var.index_of(positive)
    neg = [i for i in range(var.k) if i != pos]
    kw = dict(kw)
    kw.pop("method", None)
    tpr = group_ppvs(clf, dist, protected, evidence={label: [var.values[pos]]}, **kw)
    fpr = group_ppvs(clf, dist, protected, evidence={label: [var.values[i] for i in neg]}, **kw)
    for r in (tpr, fpr):
        if r.status != "ok":
            return MetricResult("equalized_odds", None, status="unknown", reason=r.reason,
                                seconds=time.perf_counter() - t0, backend=r.backend, method="enumerate")
    def spread(r):
        vals = [p for _, p in r.per_group if not math.isnan(p)]
        return max(vals) - min(vals) if vals else math.nan
    d_tpr, d_fpr = spread(tpr), spread(fpr)
    value = max(d_tpr, d_fpr)
    b1, b2 = tpr.bound, fpr.bound
    bound = None
    if b1 is not None and b2 is not None:
        add = None if b1.ppv_additive is None else max(b1.ppv_additive, b2.ppv_additive)
        bound = ErrorBound(b1.delta, b1.n_rows, max(b1.epsilon0, b2.epsilon0), add, None if add is None else 2 * add)
    return MetricResult("equalized_odds", value, tpr.per_group, tpr.most_favoured, tpr.most_favoured_ppv,
                        tpr.least_favoured, tpr.least_favoured_ppv, bound, time.perf_counter() - t0, "ok", None,
                        tpr.backend, "enumerate",
                        {"tpr": [(dict(g), p) for g, p in tpr.per_group], "fpr": [(dict(g), p) for g, p in fpr.per_group],
                         "tpr_spread": d_tpr, "fpr_spread": d_fpr})


def path_specific_causal_fairness(clf, dist: BayesNet, protected: Sequence[str], mediators: Sequence[str],
                                  **kw) -> MetricResult:
    """FVGM's PCF: the mediators are drawn as for the most favoured group a_max
    (their edges from the protected attributes see a_max), every other path sees
    the group a; PCF = max_a - min_a of the resulting PPVs."""
    t0 = time.perf_counter()
    protected = tuple(protected)
    base = group_ppvs(clf, dist, protected, **kw)
    if base.status != "ok":
        return MetricResult("path_specific_causal_fairness", None, status="unknown", reason=base.reason,
                            seconds=time.perf_counter() - t0, backend=base.backend)
    amax = {a: dist.variables[a].index_of(v) for a, v in base.most_favoured}
    d2 = dist
    for z in mediators:
        dist.check_covers([z], "the mediator list")
        if z in protected:
            raise DistributionError(f"mediator '{z}' is a protected attribute")
        for a in protected:
            if a in d2.parents[z]:
                d2 = d2.with_parent_fixed(z, a, amax[a])
    r = group_ppvs(clf, d2, protected, **kw)
    if r.status != "ok":
        return MetricResult("path_specific_causal_fairness", None, status="unknown", reason=r.reason,
                            seconds=time.perf_counter() - t0, backend=r.backend)
    value = r.most_favoured_ppv - r.least_favoured_ppv
    ppvs = {tuple(dist.variables[a].index_of(v) for a, v in g): p for g, p in r.per_group}
    bound = error_bound(dist, clf, protected, kw.get("delta", 0.05), list(ppvs), "path_specific_causal_fairness", ppvs)
    return MetricResult("path_specific_causal_fairness", value, r.per_group, r.most_favoured, r.most_favoured_ppv,
                        r.least_favoured, r.least_favoured_ppv, bound, time.perf_counter() - t0, "ok", None,
                        r.backend, r.method, {"a_max": dict(base.most_favoured), "mediators": list(mediators)})


def fairness_influence(clf, dist: BayesNet, protected: Sequence[str], subsets: Sequence[Sequence[str]] | None = None,
                       quantity: str = "ppv", group: Mapping | None = None, **kw) -> FIFResult:
    """FVGM's fairness influence functions: FIF(S) = Q(D) - Q(D_{-S}) for every
    feature subset S (default: each feature the classifier reads, alone).

    ``quantity`` is "ppv" (of ``group``; required), "disparate_impact" or
    "statistical_parity".  D_{-S} gives the classifier independent uniform values
    for S while the rest of the distribution is unchanged."""
    t0 = time.perf_counter()
    protected = tuple(protected)
    if subsets is None:
        subsets = [(f,) for f in clf.features if f not in protected]
    if quantity == "ppv":
        if group is None:
            raise DistributionError("a PPV influence needs the group it is computed for")
        gl = tuple((a, group[a]) for a in protected)
        fn = lambda d: _ppv_of(clf, d, protected, group, **kw)
    elif quantity == "disparate_impact":
        gl = None
        fn = lambda d: disparate_impact(clf, d, protected, **kw)
    elif quantity == "statistical_parity":
        gl = None
        fn = lambda d: statistical_parity(clf, d, protected, **kw)
    else:
        raise ValueError(f"unknown quantity {quantity!r}")
    base = fn(dist)
    if base.status != "ok":
        return FIFResult(quantity, None, group=gl, seconds=time.perf_counter() - t0, status="unknown", reason=base.reason,
                         base_result=base)
    out = []
    for S in subsets:
        d = dist
        for f in S:
            if f in protected:
                raise DistributionError(f"feature subset {list(S)} contains protected attribute '{f}'")
            d.check_covers([f], "the influence subset")
            d = d.with_uniform(f)
        r = fn(d)
        if r.status != "ok":
            return FIFResult(quantity, base.value, tuple(out), gl, time.perf_counter() - t0, "unknown", r.reason,
                             base)
        out.append((tuple(S), base.value - r.value))
    return FIFResult(quantity, base.value, tuple(out), gl, time.perf_counter() - t0, base_result=base)


def _ppv_of(clf, dist, protected, group, **kw) -> MetricResult:
    g = [tuple(group[a] for a in protected)]
    kw = dict(kw)
    kw.pop("method", None)
    return group_ppvs(clf, dist, protected, groups=g, **kw)


# --------------------------------------------------------------------------- references


def brute_force_ppvs(bn: BayesNet, clf, protected: Sequence[str], groups=None,
                     evidence: Mapping[str, Sequence[int]] | None = None, max_assignments: int = 2_000_000) -> GroupPPVs:
    """PPVs by enumerating every joint assignment (reference for small instances)."""
    t0 = time.perf_counter()
    protected = tuple(protected)
    evidence = dict(evidence or {})
    names = list(clf.features) + list(protected) + list(evidence)
    sub = bn.restricted(names)
    free = [n for n in sub.order if n not in protected]
    total = int(np.prod([sub.variables[n].k for n in free])) if free else 1
    if total > max_assignments:
        return GroupPPVs.unknown(protected, f"enumeration needs {total} assignments, over its budget of {max_assignments}",
                                 backend="brute", method="enumerate")
    groups = list(groups) if groups is not None else all_groups(sub, protected)
    grids = np.array(list(itertools.product(*[range(sub.variables[n].k) for n in free])), dtype=np.int64).reshape(total, len(free))
    values = {}
    for g in groups:
        codes = {n: grids[:, i] for i, n in enumerate(free)}
        for a, v in zip(protected, g):
            codes[a] = np.full(total, int(v), dtype=np.int64)
        w = np.ones(total)
        for n in free:
            t = sub.cpts[n]
            pa = sub.parents[n]
            w = w * (t[tuple(codes[p] for p in pa) + (codes[n],)] if pa else t[codes[n]])
        ev = np.ones(total, dtype=bool)
        for n, vals in evidence.items():
            ev &= np.isin(codes[n], list(vals))
        pred = np.asarray(clf.predict(codes), dtype=bool) if total else np.zeros(0, dtype=bool)
        den = float(w[ev].sum())
        values[g] = float(w[ev & pred].sum()) / den if den > 0 else math.nan
    return GroupPPVs.from_values(protected, values, seconds=time.perf_counter() - t0, backend="brute",
                                 method="enumerate")


def empirical_ppvs(clf, codes: Mapping[str, np.ndarray], protected: Sequence[str]) -> dict:
    """PPV of every group present in a sample (AIF360-style, for cross-checks)."""
    pred = np.asarray(clf.predict(codes), dtype=bool)
    keys = np.stack([np.asarray(codes[a]) for a in protected], axis=1)
    out = {}
    for g in {tuple(int(x) for x in row) for row in keys}:
        m = np.all(keys == np.asarray(g), axis=1)
        out[g] = float(pred[m].mean())
    return out


METRICS = {
    "ppv": group_ppvs,
    "passing_rate": group_ppvs,
    "disparate_impact": disparate_impact,
    "statistical_parity": statistical_parity,
    "equalized_odds": equalized_odds,
    "path_specific_causal_fairness": path_specific_causal_fairness,
}


def evaluate(metric: str, clf, dist: BayesNet, protected: Sequence[str], **kw) -> MetricResult:
    """Dispatch by metric name (the names of ``METRICS``); keyword arguments as the
    metric's function takes them (``label=`` for equalized odds, ``mediators=``
    for path-specific causal fairness, ``backend=``, ``method=``, ``delta=``,
    ``max_nodes=``, ``time_limit=``)."""
    fn = METRICS.get(metric)
    if fn is None:
        raise ValueError(f"unknown metric {metric!r} (known: {', '.join(METRICS)})")
    return fn(clf, dist, protected, **kw)
