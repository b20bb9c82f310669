"""Group metrics over a distribution: the spec side of Justicia and FVGM.

``run(prop, ctx)`` evaluates an ``ir.GroupMetric`` whose ``distribution`` is
set.  It

1. builds the distribution as a ``BayesNet``: a declared ``distribution d {
   p(Q | P) = 0.6 ... }`` table over the feature set's bool and categorical
   features, or one estimated from a data set's rows (``independent``,
   ``conditional`` on the compound protected group, ``bayes`` learned by hill
   climbing) after discretising numeric features into their declared ``bins
   [...]`` or ``bins = N`` quantile bins -- refined with the thresholds the
   classifier tests, so that every test is a union of bins;
2. puts the classifier in Boolean form (``fairspec.backends.boolean``): a
   rule ``P + Q + R - S >= 2`` is a linear rule, a rule in and/or/not over
   tests is a CNF rule, a scikit-learn decision tree a ``DecisionTree`` (the
   spec's encoding maps its input columns back to features), a linear
   scikit-learn model (logistic regression, ...) a linear rule on bin means
   whose agreement with the model on the data is reported;
3. computes the metric exactly for that distribution on the dp backend
   (linear rules) or the ssat backend (trees, CNF), unless ``using`` says; a
   tree over a network whose features depend on each other (a learned or
   declared network) goes to exact variable elimination over the tree's
   paths instead (backend "elimination"), since the SSAT search over
   order-encoded bins does not scale there (Adult: seconds to minutes vs
   0.04 s); ``using ssat`` still forces the SSAT solver;
4. compares it with the threshold.  Over a declared table the value is recomputed in exact
   rationals from the decimals as written (``analyses.distribution_exact``) and compared as the
   spec writes ``<`` / ``<=`` (``certify.exact.prove_exact``): ``holds (proved)`` with an
   exact-arithmetic proof, or ``violated``.  Over a distribution estimated from data
   the value carries the finite-sample error bound (Hoeffding, Justicia's
   epsilon_0 in ``details``): ``bound = value +- the bound``, ``holds
   (estimated)`` or ``violated`` when the whole interval is on one side of the
   threshold, ``unknown`` when the threshold lies inside.

``influence(m, groups sex, distribution d, metric = statistical_parity, subsets
= [{age}, ...])`` is FVGM's fairness influence: FIF(S) = Q(D) - Q(D_-S), where
D_-S gives the classifier independent uniform values for the features S
(``group_metrics_exact.fairness_influence`` on dp / ssat; the same construction
on the elimination path).  The value is max_S |FIF(S)|; every subset's FIF is
in ``details["influence"]``.  Over an estimated distribution each FIF is a
difference of two metric values, so its interval is widened by twice the
metric's error bound.

``distribution = DATA`` / ``empirical(DATA)`` is the data set itself: it is
measured by the data backend.  Anything that cannot be put in Boolean form
(a neural network, a derived ``group older = age >= 40``) and any solver over
its budget gives ``unknown`` with the reason.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from fairspec.syntax.literals import percent as _level  # a confidence level as the spec writes it
from fairspec import ir
from fairspec.analyses.distribution import DistributionError
from fairspec.backends.boolean.elimination import network_has_feature_edges, tree_ppvs_elimination
from fairspec.kinds.distribution_problem import LABEL, Problem, build_problem, table_network  # noqa: F401
from fairspec.kinds.distribution_rule import model_or_unknown as _model_or_unknown
from fairspec.kinds.distribution_rule import rule_matches as _rule_matches
from fairspec.kinds.distribution_verdicts import (_bootstrap_verdict, _estimated_verdict, _exact_verdict,
                                                  _group_name, _metric_value, _plain, _verdict)
from fairspec.planning import plan, setting
from fairspec.verdict import Unsupported, Verdict, unknown
from fairspec.syntax.literals import interval as _interval, shown as _shown
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

__all__ = ["run", "build_problem", "Problem", "table_network", "LABEL", "compute_influence", "influence_subsets"]



# =========================================================================== entry point


def run(prop: ir.GroupMetric, ctx, progress=None) -> Verdict:
    t0 = time.perf_counter()
    dist = next((d for d in ctx.spec.distributions if d.name == prop.distribution), None)
    if dist is None:
        return unknown(prop, f"distribution '{prop.distribution}' is not declared", backend="ssat")
    if prop.metric == "influence" and dist.kind == "empirical":
        return unknown(prop, "fairness influence needs a distribution it can redraw features from (evaluated on "
                             "the dp or ssat backend); data rows alone cannot make a feature uniform and "
                             "independent: pass distribution = bayes(DATA), independent(DATA), conditional(DATA) "
                             "or a declared distribution", backend=prop.options.backend or "data")
    if dist.kind != "empirical" and (prop.param("class") is not None or prop.param("threshold") is not None):
        return unknown(prop, "a multiclass model's class against the rest (class = c) and a regression's value above a "
                             "threshold (threshold = t) are measured on data rows; over a distribution the dp, ssat "
                             "and elimination backends read a binary classifier's Boolean form only (issue 25)",
                       backend=prop.options.backend or "dp")
    if dist.kind == "empirical":
        from fairspec.backends.data.metrics import run_empirical

        return run_empirical(prop, ctx, dist, resamples=setting(prop, "bootstrap", "data"),
                             timeout=setting(prop, "timeout", "data"))
    wanted = prop.options.backend
    try:
        pb = build_problem(prop, ctx, dist)
    except Unsupported as e:
        return unknown(prop, _sentence(e), backend=wanted or "ssat", seconds=time.perf_counter() - t0)
    _rule_matches(prop, pb)
    facts = {"form": pb.clf.kind,
             "feature_edges": pb.clf.kind == "tree" and network_has_feature_edges(pb.bn, pb.clf, pb.protected)}
    p = plan(prop, ctx.spec, facts)
    if not p.runs:
        return unknown(prop, p.why, backend=wanted, seconds=time.perf_counter() - t0, details=pb.details)
    backend = p.backend
    method = setting(prop, "method", backend)
    delta = 1.0 - prop.options.confidence
    time_limit = ctx.remaining(setting(prop, "timeout", backend))  # the budget covers the preparation too
    if prop.metric == "influence":
        try:
            subsets = influence_subsets(prop, pb, ctx.spec.feature_set(prop.features))
            fif = compute_influence(prop, pb, backend, method, delta, time_limit, subsets)
            boot = None
            if prop.options.bootstrap and pb.data is not None and fif.status == "ok":
                boot = _bootstrap(prop, pb, ("influence", backend, method, delta, time_limit, subsets),
                                  time_limit, progress)
        except DistributionError as e:
            return unknown(prop, _sentence(e), backend=backend, seconds=time.perf_counter() - t0, details=pb.details)
        return _model_or_unknown(prop, pb, _verdict_influence(prop, pb, fif, backend, method, t0, boot))
    try:
        res = _compute(prop, pb, backend, method, delta, time_limit)
        boot = None
        if prop.options.bootstrap and pb.data is not None and res.status == "ok":
            boot = _bootstrap(prop, pb, ("metric", backend, method, delta, time_limit, None), time_limit, progress)
    except DistributionError as e:
        return unknown(prop, _sentence(e), backend=backend, seconds=time.perf_counter() - t0, details=pb.details)
    return _model_or_unknown(prop, pb, _verdict(prop, pb, res, backend, t0, boot))


def _ok_value(prop, res):
    return _metric_value(prop, res) if res.status == "ok" else None


def _largest_influence(fif):
    """The value of influence(...): the largest |FIF| over the subsets (None when undefined)."""
    if fif.status != "ok" or not fif.influence:
        return None
    return max(abs(float(x)) for _, x in fif.influence)


def _bootstrap(prop, pb: Problem, how: tuple, time_limit, progress=None) -> dict:
    """The value over networks re-estimated from bootstrap resamples of the rows (the structure
    stays the one estimated from all rows): a percentile interval for ``bootstrap = N``.

    Resample r draws its rows from its own generator (``SeedSequence(seed).spawn``), so the
    resamples are independent jobs: they go through the executor in batches and give the same
    values whatever runs them (resamples not started within ``time_limit`` are left out)."""
    from fairspec.runtime.executor import configured_workers, get_executor

    n_boot = int(prop.options.bootstrap)
    seeds = np.random.SeedSequence(prop.options.seed).spawn(n_boot)
    t0 = time.perf_counter()
    workers = configured_workers()
    size = max(1, min(50, n_boot // (4 * workers) or 1))
    batches = [seeds[a:a + size] for a in range(0, n_boot, size)]
    shared = (prop, pb, how, time.time() + time_limit)
    task = progress.add_task(f"{prop.name}: bootstrap", total=n_boot) if progress else None
    ex = get_executor(len(batches)) if workers > 1 else None
    values, failed = [], 0
    try:
        step = len(batches) if ex is not None else 1
        for a in range(0, len(batches), step):
            group = batches[a:a + step]
            outs = ex.map(_bootstrap_batch, group, shared=shared, on_error=lambda b, why: [None] * len(b)) \
                if ex is not None else [_bootstrap_batch(shared, b) for b in group]
            for out in outs:
                for v in out:
                    if isinstance(v, str) and v == _SKIPPED:  # by value: a worker process pickles it
                        continue
                    if v is None or (isinstance(v, float) and math.isnan(v)):
                        failed += 1
                    else:
                        values.append(float(v))
                if task is not None:
                    progress.advance(task, len(out))
    finally:
        if ex is not None:
            ex.close()
    if task is not None:
        progress.remove_task(task)
    return {"requested": n_boot, "values": values, "undefined": failed, "seconds": time.perf_counter() - t0}


_SKIPPED = "skipped"


def _bootstrap_batch(shared, seeds) -> list:
    """One executor job: the value on each resample of a batch (``_SKIPPED`` after the deadline)."""
    from fairspec.analyses.distribution import refit

    prop, pb, how, deadline = shared
    kind, backend, method, delta, time_limit, subsets = how
    n = pb.data.n_rows
    out = []
    for seed in seeds:
        if time.time() > deadline:
            out.append(_SKIPPED)
            continue
        rng = np.random.default_rng(seed)
        q = dataclasses.replace(pb, bn=refit(pb.bn, pb.data.take(rng.integers(0, n, n)), pb.alpha))
        if kind == "influence":
            out.append(_largest_influence(compute_influence(prop, q, backend, method, delta, time_limit, subsets)))
        else:
            out.append(_ok_value(prop, _compute(prop, q, backend, method, delta, time_limit)))
    return out


def _sentence(e: Exception) -> str:
    return getattr(e, "message", None) or str(e)




def _compute_elimination(prop, pb: Problem, delta, time_limit):
    """The metric from PPVs computed by elimination (same results as the core's metric functions)."""
    from fairspec.analyses.distribution import ErrorBound, GroupPPVs, all_groups
    from fairspec.analyses.group_metrics_exact import MetricResult, error_bound
    t0 = time.perf_counter()
    bn, clf, protected = pb.bn, pb.clf, pb.protected
    groups = all_groups(bn, protected)
    metric = prop.metric

    def ppvs(net, evidence=None):
        return tree_ppvs_elimination(net, clf, protected, groups, evidence, time_limit)

    def labels(g):
        return tuple((a, bn.variables[a].values[int(i)]) for a, i in zip(protected, g))

    def result(name, values, value, bound, details=None):
        gp = GroupPPVs.from_values(protected, values)
        per = tuple((labels(g), p) for g, p in sorted(values.items()))
        s = time.perf_counter() - t0
        return MetricResult(name, value, per, labels(gp.best[0]) if gp.best else None, gp.best[1] if gp.best else None,
                            labels(gp.worst[0]) if gp.worst else None, gp.worst[1] if gp.worst else None,
                            bound, s, "ok", None, "elimination", "enumerate",
                            {**(details or {}), "solver": {"engine": "variable elimination", "paths": len(clf.paths(1))},
                             "solve_seconds": s})

    def spread(values):
        v = [p for p in values.values() if not math.isnan(p)]
        return max(v) - min(v) if v else math.nan

    if metric in ("disparate_impact", "statistical_parity", "most_favoured", "least_favoured"):
        P = ppvs(bn)
        hi, lo = max(P.values()), min(P.values())
        if metric == "disparate_impact":
            value = (lo / hi) if hi > 0 else (1.0 if lo <= 0 else math.nan)
        elif metric == "statistical_parity":
            value = hi - lo
        else:
            value = hi if metric == "most_favoured" else lo
        core = metric if metric in ("disparate_impact", "statistical_parity") else "ppv"
        return result(metric, P, value, error_bound(bn, clf, protected, delta, groups, core, P))
    if metric in ("equalized_odds", "equal_opportunity"):
        lab = bn.variables[pb.label]
        pos = lab.index_of(True)
        T = ppvs(bn, {pb.label: [pos]})
        b1 = error_bound(bn, clf, protected, delta, groups, "ppv", T, {pb.label: [pos]})
        details = {"tpr": [(dict(labels(g)), p) for g, p in sorted(T.items())], "tpr_spread": spread(T)}
        value, bounds = spread(T), [b1]
        if metric == "equalized_odds":
            neg = [i for i in range(lab.k) if i != pos]
            F = ppvs(bn, {pb.label: neg})
            bounds.append(error_bound(bn, clf, protected, delta, groups, "ppv", F, {pb.label: neg}))
            details.update({"fpr": [(dict(labels(g)), p) for g, p in sorted(F.items())], "fpr_spread": spread(F)})
            value = max(value, spread(F))
        bound = None
        if all(b is not None for b in bounds):
            adds = [b.ppv_additive for b in bounds]
            add = None if any(a is None for a in adds) else max(adds)
            bound = ErrorBound(bounds[0].delta, bounds[0].n_rows, max(b.epsilon0 for b in bounds), add,
                               None if add is None else 2 * add)
        return result(metric, T, value, bound, details)
    if metric == "path_specific":
        base = ppvs(bn)
        amax = max(base.items(), key=lambda kv: (kv[1], [-x for x in kv[0]]))[0]
        d2 = bn
        for z in prop.mediators:
            bn.check_covers([z], "the mediator list")
            if z in protected:
                raise DistributionError(f"mediator '{z}' is a protected attribute")
            for a, v in zip(protected, amax):
                if a in d2.parents[z]:
                    d2 = d2.with_parent_fixed(z, a, v)
        P = ppvs(d2)
        return result("path_specific_causal_fairness", P, spread(P),
                      error_bound(bn, clf, protected, delta, groups, "path_specific_causal_fairness", P),
                      {"a_max": dict(labels(amax)), "mediators": list(prop.mediators)})
    raise DistributionError(f"metric {metric} is not available over a distribution")


# =========================================================================== metrics


def ppv_engine(backend: str):
    """The PPV engine of a planned backend (dp or ssat) for analyses.group_metrics_exact."""
    from fairspec.backends import dp, ssat

    return {"dp": dp, "ssat": ssat}[backend]


def _compute(prop, pb: Problem, backend, method, delta, time_limit):
    from fairspec.analyses import group_metrics_exact as gm
    if backend == "elimination":
        return _compute_elimination(prop, pb, delta, time_limit)
    kw = dict(backend=ppv_engine(backend), method=method, delta=delta, time_limit=time_limit)
    metric = prop.metric
    if method not in ("enumerate", "learn"):
        raise DistributionError(f"method = {method} is not known (enumerate or learn)")
    if metric in ("disparate_impact", "statistical_parity"):
        return gm.evaluate(metric, pb.clf, pb.bn, pb.protected, **kw)
    if metric in ("most_favoured", "least_favoured"):
        return gm.group_ppvs(pb.clf, pb.bn, pb.protected, **kw)
    if metric == "equalized_odds":
        kw.pop("method")
        return gm.equalized_odds(pb.clf, pb.bn, pb.protected, pb.label, positive=True, **kw)
    if metric == "equal_opportunity":
        kw.pop("method")
        r = gm.group_ppvs(pb.clf, pb.bn, pb.protected, evidence={pb.label: [True]}, **kw)
        if r.status != "ok":
            return r
        vals = [p for _, p in r.per_group if not math.isnan(p)]
        value = max(vals) - min(vals) if vals else math.nan
        b = r.bound
        if b is not None:
            b = dataclasses.replace(b, value_additive=None if b.ppv_additive is None else 2 * b.ppv_additive)
        return dataclasses.replace(r, metric="equal_opportunity", value=value, bound=b)
    if metric == "path_specific":
        return gm.path_specific_causal_fairness(pb.clf, pb.bn, pb.protected, list(prop.mediators), **kw)
    raise DistributionError(f"metric {metric} is not available over a distribution")


# --------------------------------------------------------------------------- fairness influence


def influence_subsets(prop, pb: Problem, fs: ir.FeatureSet) -> list[tuple[str, ...]]:
    """The spec's subsets, or each feature the classifier reads that is not protected, alone."""
    if prop.subsets:
        return [tuple(S) for S in prop.subsets]
    skip = set(pb.protected) | {f.name for f in fs.protected}
    return [(f,) for f in pb.clf.features if f not in skip]


def compute_influence(prop, pb: Problem, backend, method, delta, time_limit, subsets):
    """FIF(S) = Q(D) - Q(D_-S) for every subset S, Q = ``prop.influence_metric``."""
    from fairspec.analyses import group_metrics_exact as gm
    quantity = prop.influence_metric or "statistical_parity"
    if quantity not in ("statistical_parity", "disparate_impact"):
        raise DistributionError(f"the influence on {quantity} is not available (statistical_parity or "
                                f"disparate_impact)")
    if method not in ("enumerate", "learn"):
        raise DistributionError(f"method = {method} is not known (enumerate or learn)")
    if backend != "elimination":
        return gm.fairness_influence(pb.clf, pb.bn, pb.protected, subsets, quantity, backend=ppv_engine(backend),
                                     method=method, delta=delta, time_limit=time_limit)
    # a tree over a network whose features depend on each other: the same D_-S, by elimination
    t0 = time.perf_counter()
    q = dataclasses.replace(prop, metric=quantity)
    base = _compute_elimination(q, pb, delta, time_limit)
    out = []
    for S in subsets:
        d = pb.bn
        for f in S:
            if f in pb.protected:
                raise DistributionError(f"feature subset {list(S)} contains protected attribute '{f}'")
            d.check_covers([f], "the influence subset")
            d = d.with_uniform(f)
        r = _compute_elimination(q, dataclasses.replace(pb, bn=d), delta, time_limit)
        out.append((tuple(S), base.value - r.value))
    return gm.FIFResult(quantity, base.value, tuple(out), None, time.perf_counter() - t0, base_result=base)


def _subset_text(S) -> str:
    return "{" + ", ".join(S) + "}"


def _verdict_influence(prop, pb: Problem, fif, backend, method, t0, boot: dict | None = None) -> Verdict:
    details = dict(pb.details)
    details["backend"] = backend
    details["method"] = method
    quantity = fif.quantity
    details["influence_metric"] = quantity
    seconds = time.perf_counter() - t0
    base = fif.base_result
    bn = pb.bn
    if base is not None and base.status == "ok":
        details["groups"] = [{"group": _group_name(g, bn), "ppv": p} for g, p in base.per_group]
        if base.most_favoured is not None:
            details["most_favoured"] = {"group": _group_name(base.most_favoured, bn), "ppv": base.most_favoured_ppv}
            details["least_favoured"] = {"group": _group_name(base.least_favoured, bn),
                                         "ppv": base.least_favoured_ppv}
    details["solve_seconds"] = round(float(fif.seconds), 6)
    if fif.status != "ok":
        return unknown(prop, fif.reason or "the solver gave no answer", backend=backend, seconds=seconds,
                       details=details)
    b0 = fif.base
    details["base"] = {"metric": quantity, "value": b0}
    items = [{"subset": list(S), "fif": float(x), "value_without": float(b0 - x)} for S, x in fif.influence]
    details["influence"] = items
    if not items:
        return unknown(prop, f"there is no feature subset to measure: {prop.model} reads no feature besides the "
                             f"protected ones", backend=backend, seconds=seconds, details=details)
    if b0 is None or any(math.isnan(x) for x in [b0] + [i["fif"] for i in items]):
        return unknown(prop, f"{quantity} is undefined for this distribution or for one of its D_-S (no group "
                             f"has a positive decision, or a group has probability 0)", backend=backend,
                       seconds=seconds, details=details)
    top = max(items, key=lambda i: abs(i["fif"]))
    value = abs(top["fif"])
    details["largest"] = top
    fif = ("+" if top["fif"] >= 0 else "") + _shown(top["fif"], (prop.threshold, -prop.threshold), digits=6)
    largest = (f"the largest is FIF({_subset_text(top['subset'])}) = {fif}: making "
               f"{_subset_text(top['subset'])} uniform and independent moves {quantity} from {b0:.6g} to "
               f"{top['value_without']:.6g}")
    claim = f"influence on {quantity} {prop.op} {_spec_number(prop.threshold)}"
    common = dict(value=value, backend=backend, seconds=seconds, details=details)
    if bn.n_rows is None:                       # a declared distribution: every FIF is exact
        return _exact_verdict(prop, pb, value, common, largest, f"{claim} fails: {largest}",
                              subsets=[tuple(i["subset"]) for i in items])
    b = base.bound if base is not None else None
    add = None if b is None or b.value_additive is None else 2 * b.value_additive
    if b is not None:
        details["error_bound"] = {**_plain(b.as_dict()), "influence_additive": add}
    if boot is not None:
        return _bootstrap_verdict(prop, value, boot, bn.n_rows, claim, f"; {largest}", common, add)
    if add is None or not math.isfinite(add):
        return Verdict(prop.name, prop.kind, "unknown",
                       reason=f"the largest influence on {quantity} is {value:.6g} over the distribution estimated "
                              f"from {bn.n_rows} rows, but no finite-sample error bound is available for it",
                       **common)
    lo, hi = max(0.0, value - add), min(1.0, value + add)
    conf = 1.0 - b.delta
    bound_text = (f"+- {_shown(add, end='high', style='f')}, twice the {_level(conf)} error bound of {quantity} "
                  f"for a distribution estimated "
                  f"from {bn.n_rows} rows")
    return _estimated_verdict(
        prop, lo, hi, common, holds_reason=f"{largest} ({bound_text})",
        violated_reason=f"{claim} fails: {largest} ({bound_text})",
        unknown_reason=f"the threshold {_spec_number(prop.threshold)} lies inside {_interval(lo, hi, (prop.threshold,))}: {largest} "
                       f"({bound_text}); more data (or fewer bins) would decide it")
