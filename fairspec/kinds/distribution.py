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
4. compares it with the threshold.  Over a declared table the value is exact:
   ``holds (proved)`` / ``violated``.  Over a distribution estimated from data
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
import itertools
import math
import operator
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from fairspec import ir
from fairspec.analyses.distribution import (BayesNet, Bins, DiscreteData, DistributionError, Variable,
                                            conditional, independent, learn_bayes_net)
from fairspec.planning import plan, setting
from fairspec.verdict import Unsupported, Verdict, interval_status, unknown

__all__ = ["run", "Unsupported", "build_problem", "rule_form", "table_network", "LABEL", "compute_influence",
           "influence_subsets"]

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
LABEL = "label"
MAX_CLAUSES = 20_000
MAX_TABLE = 4096
DATA_KINDS = ("independent", "conditional", "bayes")
PARAMS = {"bins", "max_parents", "score", "alpha", "max_iter"}




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
    if dist.kind == "empirical":
        from fairspec.backends.data.metrics import run_empirical

        return run_empirical(prop, ctx, dist)
    wanted = prop.options.backend
    try:
        pb = build_problem(prop, ctx, dist)
    except Unsupported as e:
        return unknown(prop, _sentence(e), backend=wanted or "ssat", seconds=time.perf_counter() - t0)
    facts = {"form": pb.clf.kind,
             "feature_edges": pb.clf.kind == "tree" and _network_has_feature_edges(pb.bn, pb.clf, pb.protected)}
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
        return _verdict_influence(prop, pb, fif, backend, method, t0, boot)
    try:
        res = _compute(prop, pb, backend, method, delta, time_limit)
        boot = None
        if prop.options.bootstrap and pb.data is not None and res.status == "ok":
            boot = _bootstrap(prop, pb, ("metric", backend, method, delta, time_limit, None), time_limit, progress)
    except DistributionError as e:
        return unknown(prop, _sentence(e), backend=backend, seconds=time.perf_counter() - t0, details=pb.details)
    return _verdict(prop, pb, res, backend, t0, boot)


def _metric_value(prop, res):
    if prop.metric == "most_favoured":
        return res.most_favoured_ppv
    if prop.metric == "least_favoured":
        return res.least_favoured_ppv
    return res.value


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
    from fairspec.backends.executor import configured_workers, get_executor

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
                    if v is _SKIPPED:
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




# =========================================================================== the problem


@dataclass
class Problem:
    bn: BayesNet
    clf: object
    protected: tuple[str, ...]
    label: str | None
    exact_classifier: bool
    details: dict = field(default_factory=dict)
    data: DiscreteData | None = None     # the discretised rows a network was estimated from (for bootstrap)
    alpha: float = 0.0                   # the smoothing it was estimated with


def build_problem(prop: ir.GroupMetric, ctx, dist: ir.Distribution) -> Problem:
    """The network, the classifier in Boolean form and the choice attributes of ``prop``."""
    spec = ctx.spec
    fs = spec.feature_set(prop.features)
    protected = []
    for atom in prop.groups.atoms:
        if atom.feature is None:
            raise Unsupported(
                f"group '{atom.name}' is a condition on features, not a feature; over a distribution every "
                f"group is a protected bool or categorical feature (a choice), so add it to the data as a "
                f"column and declare it as a feature")
        protected.append(atom.feature)
    protected = tuple(protected)
    metric = prop.metric
    needs_label = metric in ("equalized_odds", "equal_opportunity")
    form = classifier_form(spec.model(prop.model), ctx, fs)
    details: dict = {"metric": metric, "classifier": {"form": form.kind}}
    params = dict(dist.params)
    for k in params:
        if k not in PARAMS:
            raise Unsupported(f"distribution '{dist.name}' has an unknown parameter '{k}' "
                              f"(parameters: {', '.join(sorted(PARAMS))})")
    mediators = tuple(prop.mediators)
    subset_features = tuple(f for S in prop.subsets for f in S)     # influence(...): the features made uniform
    names = list(dict.fromkeys(protected + tuple(form.reads) + mediators + subset_features))
    label = None
    rows_codes = None
    if dist.kind == "table":
        if needs_label:
            raise Unsupported(f"{metric} compares error rates, but the declared distribution '{dist.name}' has "
                              f"no label; estimate it from a data set with a label (conditional(DATA) or bayes(DATA))")
        bn, notes = table_network(dist, fs, protected)
        details["distribution"] = {"name": dist.name, "kind": "table", "rows": None, **_net_summary(bn)}
        if notes:
            details["distribution"]["notes"] = notes
        variables = bn.variables
        data_rows = None
        if form.kind == "linear" and form.source == "sklearn" and fs.data is not None:
            data_rows = ctx.rows(fs.name, fs.data)
    elif dist.kind in DATA_KINDS:
        t1 = time.perf_counter()
        data_rows = ctx.rows(fs.name, dist.data)
        if needs_label:
            if data_rows.labels is None:
                raise Unsupported(f"{metric} compares error rates, but data set '{dist.data}' declares no "
                                  f"label = ... expression")
            label = LABEL if fs.get(LABEL) is None else "label_"
        data, bins_info = discretise_rows(fs, data_rows, names, params, form.needs, label)
        bn = _estimate(dist, data, protected, names, label, params)
        details["distribution"] = {"name": dist.name, "kind": dist.kind, "data": dist.data, "rows": data.n_rows,
                                   **_net_summary(bn), **bins_info,
                                   "estimate_seconds": round(time.perf_counter() - t1, 4)}
        variables = data.variables
        rows_codes = data.codes
    else:
        raise Unsupported(f"unknown distribution kind '{dist.kind}'")
    clf = form.build(variables, ctx, data_rows, rows_codes)
    details["classifier"].update(form.describe(clf))
    return Problem(bn, clf, protected, label, form.exact, details,
                   data=data if dist.kind in DATA_KINDS else None, alpha=float(params.get("alpha", 0.0)))


def _net_summary(bn: BayesNet) -> dict:
    return {"variables": list(bn.variables), "edges": [f"{p} -> {c}" for p, c in bn.edges()]}


# --------------------------------------------------------------------------- tables


def _variable(f: ir.Feature) -> Variable:
    if isinstance(f.domain, ir.Boolean):
        return Variable(f.name, (False, True))
    if isinstance(f.domain, ir.Categorical):
        return Variable(f.name, tuple(f.domain.categories))
    raise DistributionError(f"feature '{f.name}' is numeric; a declared distribution lists bool and "
                            f"categorical features (estimate numeric ones from data, with bins)")


def _value_index(var: Variable, value, dist_name: str) -> int:
    if len(var.values) == 2 and var.values == (False, True):
        if isinstance(value, bool):
            return int(value)
        s = str(value).strip().lower()
        if s in ("true", "1", "yes"):
            return 1
        if s in ("false", "0", "no"):
            return 0
        raise DistributionError(f"'{value}' is not a value of bool feature '{var.name}' (write p({var.name}) "
                                f"or p(not {var.name}))")
    if isinstance(value, bool):
        raise DistributionError(f"feature '{var.name}' is categorical; name its value: "
                                f"p({var.name} = {var.values[0]})")
    for i, v in enumerate(var.values):
        if v == value or str(v) == str(value):
            return i
    raise DistributionError(f"'{value}' is not a category of '{var.name}' (categories: "
                            f"{', '.join(map(str, var.values))}) in distribution '{dist_name}'")




def table_network(dist: ir.Distribution, fs: ir.FeatureSet, protected=()) -> tuple[BayesNet, list[str]]:
    """The Bayesian network a declared ``distribution d { p(...) = ... }`` states.

    The parents of a feature are the features its conditional rows condition
    on (every row of the feature conditions on the same ones); a bool feature
    needs Pr[X | u] for every parent assignment u (Pr[not X | u] is the
    complement), a categorical feature all its values but at most one (the
    rest).  Protected features without a row get a placeholder uniform
    marginal: a group is chosen, so its own probability never enters a PPV.
    Unconditional rows of a feature that also has conditional rows are implied
    by the network and not used (returned as notes).
    """
    notes: list[str] = []
    order = list(dict.fromkeys(list(protected) + [r.feature for r in dist.table]
                               + [g for r in dist.table for g, _ in r.given]))
    variables = {}
    for n in order:
        f = fs.get(n)
        if f is None:
            raise DistributionError(f"distribution '{dist.name}' names '{n}', which {fs.name} does not declare")
        variables[n] = _variable(f)
    by_target: dict[str, list[ir.CptRow]] = {}
    for r in dist.table:
        by_target.setdefault(r.feature, []).append(r)
    parents, cpts = {}, {}
    for n, var in variables.items():
        rows = by_target.get(n, [])
        cond = [r for r in rows if r.given]
        if cond:
            uncond = [r for r in rows if not r.given]
            for r in uncond:
                notes.append(f"p({ir.event_text(n, r.value)}) = {r.prob:g} is not used: the table of '{n}' conditions on "
                             f"{', '.join(dict.fromkeys(g for g, _ in cond[0].given))}")
            rows = cond
            pa = tuple(dict.fromkeys(g for g, _ in cond[0].given))
            for r in cond:
                if set(g for g, _ in r.given) != set(pa) or len(r.given) != len(pa):
                    raise DistributionError(
                        f"the rows of '{n}' in distribution '{dist.name}' condition on different features "
                        f"({', '.join(pa)} and {', '.join(g for g, _ in r.given)}); give every row of '{n}' "
                        f"the same conditions")
        else:
            pa = ()
        if not rows:
            if n in protected:
                parents[n], cpts[n] = (), np.full(var.k, 1.0 / var.k)
                continue
            # named only as a condition: it needs its own probabilities
            raise DistributionError(f"distribution '{dist.name}' conditions on '{n}' but gives no probability of "
                                    f"'{n}' itself; add p({n}{' = ...' if var.k > 2 else ''}) = ...")
        shape = tuple(variables[p].k for p in pa)
        given_p = np.full(shape + (var.k,), np.nan)
        for r in rows:
            key = tuple(_value_index(variables[p], dict(r.given)[p], dist.name) for p in pa)
            j = _value_index(var, r.value, dist.name)
            if not math.isnan(given_p[key + (j,)]):
                raise DistributionError(f"p({ir.event_text(n, r.value)}{_given_text(r)}) is given twice in "
                                        f"distribution '{dist.name}'")
            given_p[key + (j,)] = r.prob
        table = np.empty_like(given_p)
        for key in itertools.product(*[range(k) for k in shape]):
            row = given_p[key]
            missing = np.isnan(row)
            where = ", ".join(ir.event_text(p, variables[p].values[i]) if variables[p].values != (False, True)
                              else (p if i else f"not {p}") for p, i in zip(pa, key))
            cond_txt = f" | {where}" if where else ""
            s = float(np.nansum(row))
            if missing.all():
                raise DistributionError(f"Pr[{n}{cond_txt}] is missing from distribution '{dist.name}'")
            if missing.sum() == 1:
                rest = 1.0 - s
                if rest < -1e-9:
                    raise DistributionError(f"the probabilities of '{n}'{cond_txt and ' given ' + where} in "
                                            f"distribution '{dist.name}' sum to {s:g}, more than 1")
                row = np.where(missing, max(rest, 0.0), row)
            elif missing.any():
                if abs(s - 1.0) > 1e-6:
                    lack = [str(var.values[i]) for i in np.flatnonzero(missing)]
                    raise DistributionError(f"Pr[{n} = {lack[0]}{cond_txt}] is missing from distribution "
                                            f"'{dist.name}' (values without a probability: {', '.join(lack)})")
                row = np.where(missing, 0.0, row)
            elif abs(s - 1.0) > 1e-6:
                raise DistributionError(f"the probabilities of '{n}'{cond_txt and ' given ' + where} in "
                                        f"distribution '{dist.name}' sum to {s:g}, not 1")
            table[key] = row
        parents[n], cpts[n] = pa, table
    return BayesNet(list(variables.values()), parents, cpts, kind="declared"), notes


def _given_text(r: ir.CptRow) -> str:
    if not r.given:
        return ""
    return " | " + ", ".join(ir.event_text(g, v) for g, v in r.given)


# --------------------------------------------------------------------------- data


def discretise_rows(fs: ir.FeatureSet, rows, names, params: dict, needs: dict, label: str | None):
    """DiscreteData over ``names`` (+ the label) from a context's rows.

    Bool and categorical features keep their values; numeric ones are binned by
    their declared ``bins [...]`` or ``bins = N`` quantile bins of the
    distribution, refined with the edges the classifier's tests need.
    """
    values, n = rows.frame.values, rows.frame.n_rows
    variables, codes = {}, {}
    bins_out, refined = {}, {}
    n_bins = params.get("bins")
    if n_bins is not None and (isinstance(n_bins, bool) or not float(n_bins).is_integer() or n_bins < 1):
        raise Unsupported(f"bins = {n_bins} must be a whole number of quantile bins >= 1")
    for name in names:
        f = fs.get(name)
        if f is None:
            raise DistributionError(f"the distribution does not cover feature '{name}'")
        x = np.asarray(values[name])
        if f.is_discrete:
            var = _variable(f)
            codes[name] = x.astype(np.int64)
        else:
            if f.bins is not None:
                base = Bins(tuple(f.bins))
            elif n_bins is not None:
                base = Bins.from_quantiles(x, int(n_bins))
            else:
                raise Unsupported(f"continuous feature '{name}' has no bins; declare them on the feature "
                                  f"({name} : ... bins [...]) or learn them: bins = N in the distribution")
            want = needs.get(name, [])
            extra = _missing_edges(base.edges, want)
            bins = (base.refined(extra) if extra else base).with_means(x)
            if extra:
                refined[name] = sorted(extra)
            bins_out[name] = list(bins.edges)
            var = Variable(name, bins.labels(), bins)
            codes[name] = bins.index(x)
        variables[name] = var
    if label is not None:
        variables[label] = Variable(label, (False, True))
        codes[label] = np.asarray(rows.labels, dtype=np.int64)
    info = {}
    if bins_out:
        info["bins"] = bins_out
    if refined:
        info["refined_bins"] = refined
    return DiscreteData(variables, codes, n), info


def _missing_edges(edges, needs) -> list[float]:
    """Edges to add so that every need (lo, hi, preferred) has an edge e with lo <= e <= hi (< hi if lo < hi)."""
    have = list(edges)
    add = []
    for lo, hi, pref in needs:
        ok = any((abs(e - lo) <= 1e-9 * max(1.0, abs(lo))) if lo == hi else (lo <= e < hi) for e in have)
        if not ok:
            have.append(pref)
            add.append(pref)
    return sorted(set(add))


def _estimate(dist: ir.Distribution, data: DiscreteData, protected, names, label, params) -> BayesNet:
    alpha = float(params.get("alpha", 0.0))
    if dist.kind == "independent":
        return independent(data, list(names) + ([label] if label else []), alpha=alpha)
    if dist.kind == "conditional":
        return conditional(data, protected, names, label=label, alpha=alpha)
    kw = {"score": str(params.get("score", "k2")), "max_parents": int(params.get("max_parents", 2)),
          "alpha": alpha}
    if "max_iter" in params:
        kw["max_iter"] = int(params["max_iter"])
    return learn_bayes_net(data, protected, names, label=label, **kw)


# =========================================================================== classifiers


@dataclass
class Form:
    """A classifier on its way to Boolean form: what it reads, which bin edges its
    tests need, and how to build it once the variables are known."""

    kind: str                     # tree | cnf | linear
    reads: tuple[str, ...]
    needs: dict                   # feature -> [(lo, hi, preferred edge)]
    build_fn: object
    exact: bool = True
    source: str = "rule"          # rule | sklearn
    info: dict = field(default_factory=dict)

    def build(self, variables, ctx, rows, codes):
        return self.build_fn(variables, ctx, rows, codes)

    def describe(self, clf) -> dict:
        out = dict(self.info)
        if self.kind == "tree":
            out.update({"leaves": clf.n_leaves, "depth": clf.depth(), "reads": list(clf.features)})
        elif self.kind == "cnf":
            out.update({"clauses": len(clf.clauses), "reads": list(clf.features)})
        else:
            out.update({"rule": clf.describe() if len(clf.weights) <= 12 else f"{len(clf.weights)} weighted features",
                        "reads": list(clf.features)})
            if clf.multiplier is not None:
                out["multiplier"] = clf.multiplier
            if clf.agreement is not None:
                out["agreement"] = float(clf.agreement)
        return out


def classifier_form(model: ir.Model, ctx, fs: ir.FeatureSet) -> Form:
    if model.format == "rule":
        if model.rule is None:
            raise Unsupported(f"rule model '{model.name}' has no rule")
        return rule_form(model.rule, fs)
    if model.format in ("sklearn", "xgboost", "lightgbm"):
        return _sklearn_form(model, ctx, fs)
    what = {"onnx": "an ONNX network", "torch": "a TorchScript network"}.get(model.format, model.format)
    raise Unsupported(f"model '{model.name}' is {what}; over a distribution fairspec verifies classifiers in "
                      f"Boolean form (decision trees, linear models, rules); measure it on data instead "
                      f"(data = DATA)")


# --------------------------------------------------------------------------- rules


class _NotLinear(Exception):
    pass


def _feature(fs, e) -> ir.Feature | None:
    return fs.get(e.feature) if isinstance(e, ir.FeatureRef) else None


def _is_numeric(f: ir.Feature) -> bool:
    return isinstance(f.domain, (ir.IntRange, ir.RealRange))


def _const_index(f: ir.Feature, v) -> int:
    if isinstance(f.domain, ir.Boolean):
        return int(bool(v))
    return int(v)


def _literal(fs, e):
    """(feature, frozenset of value indices) for a test on a bool/categorical feature, else None."""
    if isinstance(e, ir.FeatureRef):
        f = fs.get(e.feature)
        if f is not None and isinstance(f.domain, ir.Boolean):
            return f.name, frozenset({1})
        return None
    if isinstance(e, ir.Cmp) and e.op in ("==", "!="):
        a, b = e.left, e.right
        if isinstance(a, ir.Const):
            a, b = b, a
        f = _feature(fs, a)
        if f is None or _is_numeric(f) or not isinstance(b, ir.Const):
            return None
        k = len(f.values())
        s = frozenset({_const_index(f, b.value)})
        return f.name, (s if e.op == "==" else frozenset(range(k)) - s)
    if isinstance(e, ir.InSet):
        f = _feature(fs, e.item)
        if f is None or _is_numeric(f):
            return None
        k = len(f.values())
        s = frozenset(_const_index(f, v) for v in e.values)
        return f.name, (frozenset(range(k)) - s if e.negated else s)
    if isinstance(e, ir.NotE):
        inner = _literal(fs, e.arg)
        if inner is None:
            return None
        f = fs.get(inner[0])
        return inner[0], frozenset(range(len(f.values()))) - inner[1]
    return None


def _linear(fs, e):
    """(weights: feature -> {value index: Fraction}, constant Fraction) of a linear expression."""
    if isinstance(e, ir.Const):
        if isinstance(e.value, bool):
            return {}, Fraction(int(e.value))
        if isinstance(e.value, (int, float)):
            return {}, Fraction(repr(e.value)) if isinstance(e.value, float) else Fraction(e.value)
        raise _NotLinear(f"the constant {e.value!r}")
    lit = _literal(fs, e)
    if lit is not None:
        return {lit[0]: {i: Fraction(1) for i in lit[1]}}, Fraction(0)
    if isinstance(e, ir.FeatureRef):
        raise _NotLinear(f"numeric feature '{e.feature}' (a linear rule weighs bool features and category tests; "
                         f"compare numeric features with thresholds instead)")
    if isinstance(e, ir.ArithE):
        wa, ca = _linear(fs, e.left)
        wb, cb = _linear(fs, e.right)
        if e.op in ("+", "-"):
            s = 1 if e.op == "+" else -1
            out = {f: dict(w) for f, w in wa.items()}
            for f, w in wb.items():
                d = out.setdefault(f, {})
                for i, x in w.items():
                    d[i] = d.get(i, Fraction(0)) + s * x
            return out, ca + s * cb
        if e.op == "*":
            if not wa:
                return {f: {i: ca * x for i, x in w.items()} for f, w in wb.items()}, ca * cb
            if not wb:
                return {f: {i: cb * x for i, x in w.items()} for f, w in wa.items()}, ca * cb
            raise _NotLinear("a product of two features")
        if e.op == "/" and not wb:
            if cb == 0:
                raise _NotLinear("a division by zero")
            return {f: {i: x / cb for i, x in w.items()} for f, w in wa.items()}, ca / cb
        raise _NotLinear(f"the operator '{e.op}'")
    raise _NotLinear(f"a {type(e).__name__}")


def _threshold_atom(fs, e):
    """('thr', feature, op, t) for ``numeric_feature OP constant`` (either order), else None."""
    if not (isinstance(e, ir.Cmp) and e.op in _OPS):
        return None
    a, b, op = e.left, e.right, e.op
    if isinstance(a, ir.Const) and isinstance(b, ir.FeatureRef):
        a, b, op = b, a, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
    f = _feature(fs, a)
    if f is None or not _is_numeric(f) or not isinstance(b, ir.Const) or isinstance(b.value, bool):
        return None
    return ("thr", f.name, op, float(b.value))


def _formula(fs, e):
    """A formula tree: ('lit', f, set) | ('thr', f, op, t) | ('lin', W, T) | ('const', b) |
    ('not', x) | ('and' | 'or', [x, ...])."""
    lit = _literal(fs, e)
    if lit is not None:
        return ("lit",) + lit
    if isinstance(e, ir.Const) and isinstance(e.value, bool):
        return ("const", bool(e.value))
    thr = _threshold_atom(fs, e)
    if thr is not None:
        return thr
    if isinstance(e, ir.Logic):
        return (e.op, [_formula(fs, a) for a in e.args])
    if isinstance(e, ir.NotE):
        return ("not", _formula(fs, e.arg))
    if isinstance(e, ir.Cmp) and e.op in _OPS:
        try:
            W, T = _linear_constraint(fs, e)
        except _NotLinear as x:
            raise Unsupported(f"the rule cannot be put in Boolean form: it uses {x}") from None
        return ("lin", W, T)
    if isinstance(e, ir.Cmp):
        t = _threshold_atom(fs, dataclasses.replace(e, op=">="))
        if t is not None:
            raise Unsupported(f"the rule tests '{t[1]} {e.op} {t[3]:g}', which has probability 0 (or 1) under a "
                              f"binned distribution; compare numeric features with <, <=, > or >=")
    raise Unsupported(f"the rule cannot be put in Boolean form: it uses a {type(e).__name__}")


def _linear_constraint(fs, e: ir.Cmp):
    """``lhs OP rhs`` as integer weights per value and T with ``sum_f W_f[x_f] >= T``."""
    wl, cl = _linear(fs, e.left)
    wr, cr = _linear(fs, e.right)
    w = {f: dict(x) for f, x in wl.items()}
    for f, x in wr.items():
        d = w.setdefault(f, {})
        for i, v in x.items():
            d[i] = d.get(i, Fraction(0)) - v
    c = cl - cr                                    # sum w + c OP 0
    dens = [c.denominator] + [v.denominator for d in w.values() for v in d.values()]
    L = math.lcm(*dens) if dens else 1
    W = {}
    for f, d in w.items():
        k = len(fs.get(f).values())
        W[f] = [int(d.get(i, 0) * L) for i in range(k)]
    T = int(-c * L)
    if e.op == ">=":
        return W, T
    if e.op == ">":
        return W, T + 1
    neg = {f: [-x for x in v] for f, v in W.items()}
    if e.op == "<=":
        return neg, -T
    return neg, -T + 1


def _formula_features(node, out):
    tag = node[0]
    if tag in ("lit", "thr"):
        out.setdefault(node[1], None)
    elif tag == "lin":
        for f in node[1]:
            out.setdefault(f, None)
    elif tag == "not":
        _formula_features(node[1], out)
    elif tag in ("and", "or"):
        for a in node[1]:
            _formula_features(a, out)
    return out


def _threshold_needs(fs, node, out):
    tag = node[0]
    if tag == "thr":
        _, f, op, t = node
        out.setdefault(f, []).append(_edge_need(fs.get(f), op, t))
    elif tag == "not":
        _threshold_needs(fs, node[1], out)
    elif tag in ("and", "or"):
        for a in node[1]:
            _threshold_needs(fs, a, out)
    return out


def _edge_need(f: ir.Feature, op: str, t: float):
    """(lo, hi, preferred): an edge e in [lo, hi) (or e == lo when lo == hi) makes ``f OP t`` a union of bins.

    Real features: e = t (``x > t`` and ``x >= t`` differ on a set of probability
    0).  Integer features: ``x >= m`` is ``x > e`` for any e in [m - 1, m)."""
    if isinstance(f.domain, ir.IntRange):
        m = math.floor(t) + 1 if op in (">", "<=") else math.ceil(t)
        return (float(m - 1), float(m), float(m - 1))
    return (t, t, t)


def rule_form(rule: ir.Expr, fs: ir.FeatureSet) -> Form:
    """A rule model in Boolean form: a top-level linear threshold over bool
    features and category tests is a linear rule; anything else in and/or/not
    over tests is converted to CNF (numeric tests become tests on bins)."""
    if isinstance(rule, ir.Cmp) and rule.op in _OPS and _threshold_atom(fs, rule) is None:
        try:
            W, T = _linear_constraint(fs, rule)
        except _NotLinear as x:
            raise Unsupported(f"the rule cannot be put in Boolean form: it uses {x}") from None
        reads = tuple(f for f, w in W.items() if len(set(w)) > 1)

        def build(variables, ctx, rows, codes):
            from fairspec.backends.boolean import linear_rule
            return linear_rule({f: w for f, w in W.items()}, T, variables)

        return Form("linear", reads, {}, build, info={"from": "rule"})
    node = _formula(fs, rule)
    reads = tuple(_formula_features(node, {}))
    needs = _threshold_needs(fs, node, {})

    def build(variables, ctx, rows, codes):
        from fairspec.backends.boolean import CNFRule, Test
        ints = {f.name for f in fs.features if isinstance(f.domain, ir.IntRange)}
        clauses = _cnf(node, True, variables, ints)
        out = [[(Test(f, s), True) for f, s in sorted(c.items())] for c in clauses]
        return CNFRule(out, variables)

    return Form("cnf", reads, needs, build, info={"from": "rule"})


def _resolve_threshold(var: Variable, op: str, t: float, f_is_int: bool) -> frozenset:
    """The bins where ``x OP t`` holds."""
    if var.bins is None:
        raise DistributionError(f"feature '{var.name}' is compared with {t:g} but has no bins")
    if f_is_int:
        m = math.floor(t) + 1 if op in (">", "<=") else math.ceil(t)
        e = next((x for x in var.bins.edges if m - 1 <= x < m), None)
        if e is None:
            raise DistributionError(f"the bins of '{var.name}' have no edge in [{m - 1}, {m}) to decide "
                                    f"'{var.name} {op} {t:g}'; add {m - 1} as a bin edge")
    else:
        e = t
    j = var.bins.upper_index(e, var.name)            # x > e  <=>  bin >= j
    above = frozenset(range(j, var.k))
    return above if op in (">", ">=") else frozenset(range(var.k)) - above


def _cnf(node, positive: bool, variables, ints=frozenset()) -> list[dict]:
    tag = node[0]
    if tag == "const":
        val = node[1] if positive else not node[1]
        return [] if val else [{}]
    if tag in ("lit", "thr"):
        f = node[1]
        if f not in variables:
            raise DistributionError(f"the distribution does not cover feature '{f}', which the classifier reads")
        var = variables[f]
        if tag == "lit":
            s = frozenset(node[2])
        else:
            s = _resolve_threshold(var, node[2], node[3], f in ints)
        if not positive:
            s = frozenset(range(var.k)) - s
        return _clauses([{f: s}], variables)
    if tag == "not":
        return _cnf(node[1], not positive, variables, ints)
    if tag == "lin":
        return _lin_cnf(node[1], node[2], positive, variables)
    conj = (tag == "and") == positive
    parts = [_cnf(a, positive, variables, ints) for a in node[1]]
    if conj:
        return _clauses([c for p in parts for c in p], variables)
    out = [{}]
    for p in parts:
        if not p:                   # a true disjunct: the disjunction is true
            return []
        nxt = []
        for c1 in out:
            for c2 in p:
                m = dict(c1)
                for f, s in c2.items():
                    m[f] = m.get(f, frozenset()) | s
                nxt.append(m)
        out = _clauses(nxt, variables)
        if len(out) > MAX_CLAUSES:
            raise Unsupported(f"the rule's conjunctive normal form has more than {MAX_CLAUSES} clauses")
    return out


def _clauses(cs, variables) -> list[dict]:
    """Drop empty literals and tautological / duplicate clauses."""
    out, seen = [], set()
    for c in cs:
        c = {f: s for f, s in c.items() if s}
        if any(len(s) >= variables[f].k for f, s in c.items()):
            continue
        key = frozenset(c.items())
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
    return out


def _lin_cnf(W, T, positive, variables):
    """A linear constraint inside a Boolean formula, as CNF by its truth table."""
    feats = [f for f in W if f in variables]
    for f in W:
        if f not in variables:
            raise DistributionError(f"the distribution does not cover feature '{f}', which the classifier reads")
    ks = [variables[f].k for f in feats]
    if int(np.prod(ks)) > MAX_TABLE:
        raise Unsupported("a linear test nested inside and/or/not reads too many values to put in Boolean form; "
                          "write the linear rule on its own")
    out = []
    for vals in itertools.product(*[range(k) for k in ks]):
        s = sum(W[f][v] for f, v in zip(feats, vals))
        holds = s >= T
        if holds != positive:       # forbid this assignment
            out.append({f: frozenset(range(variables[f].k)) - {v} for f, v in zip(feats, vals)})
    return _clauses(out, variables)


# --------------------------------------------------------------------------- scikit-learn


def _columns(enc: ir.Encoding, fs: ir.FeatureSet):
    """(Column per model input, feature -> substitute Variable for code-encoded features)."""
    from fairspec.backends.boolean import Column
    cols = []
    code_vars = {}
    for c in sorted(enc.columns, key=lambda c: c.offset):
        f = fs.get(c.feature)
        if c.kind == "onehot":
            var = _variable(f)
            cols.extend(Column(c.feature, value=var.values[i]) for i in range(c.width))
        elif c.kind == "minmax":
            cols.append(Column(c.feature, None, offset=float(c.lo), scale=float(c.hi) - float(c.lo)))
        elif c.kind == "standard":
            cols.append(Column(c.feature, None, offset=float(c.mean), scale=float(c.std)))
        elif c.kind == "code":
            cols.append(Column(c.feature, None))
            code_vars[c.feature] = Variable(c.feature, tuple(float(x) for x in c.codes))
        else:
            cols.append(Column(c.feature, None))
    return cols, code_vars


def _model_variables(variables, code_vars, fs):
    """The variables as the model's columns read them: code-encoded categories by their codes
    (bools (False, True) already read as 0/1)."""
    out = dict(variables)
    for f, v in code_vars.items():
        if f in out:
            out[f] = v
    return out


MAX_COMPILED_LEAVES = 4096


def _compiled(model: ir.Model, trees, cols, fs: ir.FeatureSet):
    """A forest's or boosted model's decision as one decision tree over the model's inputs
    (:mod:`fairspec.backends.trees.compile`), within the encoded domain; Unsupported when its
    Boolean form would have more than MAX_COMPILED_LEAVES leaves."""
    from fairspec.backends.trees.compile import TooLarge, compile_decision

    lo, hi = np.full(len(cols), -np.inf), np.full(len(cols), np.inf)
    for i, c in enumerate(cols):
        f = fs.get(c.feature)
        if c.value is not None:                       # one-hot column: 0 or 1
            lo[i], hi[i] = -0.5, 1.0
            continue
        dom = getattr(f, "domain", None)
        if isinstance(dom, (ir.IntRange, ir.RealRange)) and c.scale > 0:
            a, b = (float(dom.lo) - c.offset) / c.scale, (float(dom.hi) - c.offset) / c.scale
            lo[i], hi[i] = float(np.nextafter(a, -np.inf)), b
        elif f is not None and f.is_discrete:
            lo[i], hi[i] = -0.5, float(len(f.values()) - 1)
    try:
        return compile_decision(trees, lo, hi, MAX_COMPILED_LEAVES)
    except TooLarge:
        raise Unsupported(f"model '{model.name}' ({len(trees.trees)} trees) has no small Boolean form: its decision "
                          f"as one decision tree needs more than {MAX_COMPILED_LEAVES} leaves; measure it on data "
                          f"instead (data = DATA)") from None


def _sklearn_form(model: ir.Model, ctx, fs: ir.FeatureSet) -> Form:
    loaded = ctx.model(model.name)
    est = getattr(loaded, "raw", None)
    enc = ctx.encoding(model.name)
    cols, code_vars = _columns(enc, fs)
    classes = list(getattr(est, "classes_", [0, 1]))
    positive = None
    if getattr(loaded, "method", None) == "predict_proba" and loaded.index is not None and len(classes) == 2:
        positive = classes[loaded.index]
    name = type(est).__name__
    if name != "DecisionTreeClassifier":
        from fairspec.models.network import UnsupportedModel

        try:
            trees = loaded.tree_ensemble()
        except UnsupportedModel as e:
            raise Unsupported(f"model '{model.name}': {e.message}") from e
        if trees is not None:
            est, positive = _compiled(model, trees, cols, fs), 1
            name = f"{name} compiled into one decision tree ({est.tree_.n_leaves} leaves)"
    if hasattr(est, "tree_") and hasattr(est, "classes_"):
        from fairspec.backends.boolean import tree_from_sklearn, tree_split_points
        t = est.tree_
        if t.n_features != len(cols):
            raise Unsupported(f"tree '{model.name}' reads {t.n_features} columns, its encoding gives {len(cols)}")
        used = sorted({int(i) for i in t.feature[t.children_left != -1]})
        reads = tuple(dict.fromkeys(cols[i].feature for i in used))
        needs = {}
        ints = set()
        for f, ts in tree_split_points(est, cols).items():
            feat = fs.get(f)
            if feat is not None and _is_numeric(feat) and f not in code_vars:
                if isinstance(feat.domain, ir.IntRange):
                    # on whole numbers x > t is x > floor(t): an integer edge, not t's float noise
                    ints.add(f)
                    needs[f] = sorted({(float(math.floor(x)), float(math.floor(x)) + 1.0, float(math.floor(x)))
                                       for x in ts})
                else:
                    needs[f] = [(x, x, x) for x in ts]

        def build(variables, ctx_, rows, codes):
            mv = _model_variables(variables, code_vars, fs)
            for f in ints:
                v = mv.get(f)
                if v is not None and v.bins is not None:
                    mv[f] = Variable(v.name, v.values, _IntBins(v.bins.edges, v.bins.means))
            tree = tree_from_sklearn(est, cols, mv, positive_class=positive)
            tree.variables = dict(variables)
            return tree

        return Form("tree", reads, needs, build, source="sklearn", info={"model": name})
    coef = getattr(est, "coef_", None)
    if coef is not None and np.ndim(coef) >= 1 and (np.ndim(coef) == 1 or np.shape(coef)[0] == 1):
        from fairspec.backends.boolean import linear_from_sklearn
        w = np.asarray(coef, dtype=float).reshape(-1)
        if len(w) != len(cols):
            raise Unsupported(f"model '{model.name}' reads {len(w)} columns, its encoding gives {len(cols)}")
        reads = tuple(dict.fromkeys(c.feature for c, x in zip(cols, w) if x != 0))

        def build(variables, ctx_, rows, codes):
            mv = _model_variables(variables, code_vars, fs)
            X = cd = None
            if rows is not None:
                X = ctx_.model_input(model.name, rows.frame.values, rows.frame.n_rows)
                cd = codes if codes is not None else _codes_for(variables, rows, fs)
            rule = linear_from_sklearn(est, cols, mv, X=X, codes=cd,
                                       multiplier=None if X is not None else 100, positive_class=positive)
            rule.variables = dict(variables)
            return rule

        return Form("linear", reads, {}, build, exact=False, source="sklearn", info={"model": name})
    raise Unsupported(f"model '{model.name}' is a scikit-learn {name}; over a distribution fairspec verifies "
                      f"decision trees and linear models (and rules); measure it on data instead (data = DATA)")


@dataclass(frozen=True)
class _IntBins(Bins):
    """Bins of a whole-number feature: a tree's ``x > t`` is decided by any edge in [floor(t), floor(t) + 1)."""

    def upper_index(self, threshold: float, feature: str = "feature") -> int:
        m = math.floor(float(threshold)) + 1
        for j, e in enumerate(self.edges):
            if m - 1 <= e < m:
                return j + 1
        return super().upper_index(threshold, feature)


def _codes_for(variables, rows, fs):
    """Value indices of the rows for discrete variables (a declared table: no bins)."""
    out = {}
    for n in variables:
        f = fs.get(n)
        if f is not None and f.is_discrete:
            out[n] = np.asarray(rows.frame.values[n]).astype(np.int64)
    return out


# =========================================================================== trees over networks: elimination
#
# A decision tree's PPV is the sum over its positive leaves of Pr[path | group],
# and Pr[path | group] -- a conjunction of tests X in S -- is one sum-product
# over the network (variable elimination with the tests as indicator factors).
# All leaves and all groups go through one elimination (a leaf axis and a group
# axis ride along).  Exact, like the SSAT encoding of the same tree, but its
# cost grows with the network's width rather than with a DPLL search over
# order-encoded bins, which makes it the default for trees over networks whose
# features depend on each other (learned or declared); `using ssat` forces the
# SSAT solver.

MAX_FACTOR = 50_000_000       # cells of the largest table elimination may build


def _network_has_feature_edges(bn: BayesNet, clf, protected) -> bool:
    sub = bn.restricted(list(clf.features) + list(protected))
    return any(p not in protected for p, _ in sub.edges())


def tree_ppvs_elimination(bn: BayesNet, tree, protected, groups=None, evidence=None,
                          time_limit: float = 60.0) -> dict:
    """{group (value indices): Pr[tree = 1 (, evidence) | group] / Pr[evidence | group]} exactly."""
    from fairspec.analyses.distribution import all_groups
    from fairspec.backends.ssat import sliced
    t0 = time.perf_counter()
    protected = tuple(protected)
    evidence = {k: sorted(int(x) for x in v) for k, v in (evidence or {}).items()}
    bn.check_covers(tree.features)
    bn.check_choice(protected)
    names = list(dict.fromkeys(list(tree.features) + list(evidence)))
    base = bn.restricted(list(dict.fromkeys(names + list(protected))))
    groups = list(groups) if groups is not None else all_groups(base, protected)
    nets = [sliced(base, protected, g).restricted(names) for g in groups]
    net = nets[0]
    ids = {n: i + 2 for i, n in enumerate(net.order)}          # axis 0: leaves, axis 1: groups
    size = {0: 1, 1: len(groups)}
    size.update({ids[n]: net.variables[n].k for n in net.order})
    factors = []
    for n in net.order:
        t = np.stack([b.cpts[n] for b in nets])
        factors.append(((1,) + tuple(ids[p] for p in net.parents[n]) + (ids[n],), t))
    ev_factors = []
    for n, vals in evidence.items():
        m = np.zeros(net.variables[n].k)
        m[vals] = 1.0
        ev_factors.append(((ids[n],), m))
    leaves = tree.paths(1)
    size[0] = max(1, len(leaves))
    masks: dict = {}
    for i, path in enumerate(leaves):
        for test, pol in path:
            k = net.variables[test.feature].k
            m = masks.setdefault(test.feature, np.ones((len(leaves), k)))
            hit = np.zeros(k)
            hit[list(test.values)] = 1.0
            m[i] *= hit if pol else 1.0 - hit
    leaf_factors = [((0, ids[n]), m) for n, m in masks.items()]
    if not leaves:
        num = np.zeros(len(groups))
    else:
        num = _eliminate(factors + ev_factors + leaf_factors, size, (0, 1), t0, time_limit).sum(axis=0)
    if evidence:
        den = _eliminate(factors + ev_factors, size, (1,), t0, time_limit)
        with np.errstate(invalid="ignore", divide="ignore"):
            num = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return {g: float(v) for g, v in zip(groups, np.broadcast_to(num, (len(groups),)))}


def _eliminate(factors, size, keep, t0, time_limit):
    """Sum out every axis not in ``keep`` (min-size order); the result over ``keep``."""
    fs = [(tuple(ax), np.asarray(t, dtype=float)) for ax, t in factors]
    todo = {a for ax, _ in fs for a in ax} - set(keep)
    while todo:
        if time.perf_counter() - t0 > time_limit:
            raise DistributionError(f"the elimination exceeded its time limit of {time_limit:g} s")

        def cost(v):
            axes = set()
            for ax, _ in fs:
                if v in ax:
                    axes |= set(ax)
            return int(np.prod([size[a] for a in axes])), v
        c, v = min(cost(v) for v in todo)
        if c > MAX_FACTOR:
            raise DistributionError(f"the network is too dense to eliminate exactly (a table of {c} cells "
                                    f"would be needed); use fewer bins or fewer parents (max_parents)")
        use = [(ax, t) for ax, t in fs if v in ax]
        rest = [(ax, t) for ax, t in fs if v not in ax]
        out = tuple(sorted({a for ax, _ in use for a in ax} - {v}))
        args = []
        for ax, t in use:
            args += [t, list(ax)]
        fs = rest + [(out, np.einsum(*args, list(out)))]
        todo.discard(v)
    args = []
    for ax, t in fs:
        args += [t, list(ax)]
    res = np.einsum(*args, list(keep)) if args else np.ones([size[a] for a in keep])
    return res


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
        b1 = error_bound(bn, clf, protected, delta, groups, "ppv", T)
        details = {"tpr": [(dict(labels(g)), p) for g, p in sorted(T.items())], "tpr_spread": spread(T)}
        value, bounds = spread(T), [b1]
        if metric == "equalized_odds":
            F = ppvs(bn, {pb.label: [i for i in range(lab.k) if i != pos]})
            bounds.append(error_bound(bn, clf, protected, delta, groups, "ppv", F))
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
    largest = (f"the largest is FIF({_subset_text(top['subset'])}) = {top['fif']:+.6g}: making "
               f"{_subset_text(top['subset'])} uniform and independent moves {quantity} from {b0:.6g} to "
               f"{top['value_without']:.6g}")
    claim = f"influence on {quantity} {prop.op} {prop.threshold:g}"
    common = dict(value=value, backend=backend, seconds=seconds, details=details)
    if bn.n_rows is None:                       # a declared distribution: every FIF is exact
        return _exact_verdict(prop, pb, value, common, largest, f"{claim} fails: {largest}")
    b = base.bound if base is not None else None
    add = None if b is None or b.value_additive is None else 2 * b.value_additive
    if b is not None:
        details["error_bound"] = {**_plain(b.as_dict()), "influence_additive": add}
    if boot is not None:
        return _bootstrap_verdict(prop, value, boot, bn.n_rows, claim, f"; {largest}", common)
    if add is None or not math.isfinite(add):
        return Verdict(prop.name, prop.kind, "unknown",
                       reason=f"the largest influence on {quantity} is {value:.6g} over the distribution estimated "
                              f"from {bn.n_rows} rows, but no finite-sample error bound is available for it",
                       **common)
    lo, hi = max(0.0, value - add), min(1.0, value + add)
    conf = 1.0 - b.delta
    bound_text = (f"+- {add:.4f}, twice the {conf:.0%} error bound of {quantity} for a distribution estimated "
                  f"from {bn.n_rows} rows")
    return _estimated_verdict(
        prop, lo, hi, common, holds_reason=f"{largest} ({bound_text})",
        violated_reason=f"{claim} fails: {largest} ({bound_text})",
        unknown_reason=f"the threshold {prop.threshold:g} lies inside [{lo:.4f}, {hi:.4f}]: {largest} "
                       f"({bound_text}); more data (or fewer bins) would decide it")


def _exact_verdict(prop, pb: Problem, value: float, common: dict, holds_reason, violated_reason) -> Verdict:
    """A value over a declared distribution is exact: proved for the model itself, estimated when the
    model was approximated (a linear model on bin means)."""
    how = "proved" if pb.exact_classifier else "estimated"
    if not pb.exact_classifier:
        common["details"]["note"] = ("the value is exact for the linear approximation of the model, whose "
                                     "agreement with the model is in classifier.agreement")
    if interval_status(prop.op, prop.threshold, value, value) == "holds":
        return Verdict(prop.name, prop.kind, "holds", how=how, reason=holds_reason, **common)
    return Verdict(prop.name, prop.kind, "violated", reason=violated_reason, **common)


def _group_name(group, bn: BayesNet) -> str:
    parts = []
    for a, v in group:
        var = bn.variables[a]
        if var.values == (False, True):
            parts.append(a if v else f"not {a}")
        else:
            parts.append(f"{a}={v}")
    return " x ".join(parts)


def _verdict(prop, pb: Problem, res, backend, t0, boot: dict | None = None) -> Verdict:
    details = dict(pb.details)
    details["backend"] = res.backend or backend
    details["method"] = res.method
    seconds = time.perf_counter() - t0
    if res.status != "ok":
        details["solve_seconds"] = round(res.seconds, 6)
        return unknown(prop, res.reason or "the solver gave no answer", backend=backend, seconds=seconds,
                       details=details)
    bn = pb.bn
    value = _metric_value(prop, res)
    details["groups"] = [{"group": _group_name(g, bn), "ppv": p} for g, p in res.per_group]
    if res.most_favoured is not None:
        details["most_favoured"] = {"group": _group_name(res.most_favoured, bn), "ppv": res.most_favoured_ppv}
        details["least_favoured"] = {"group": _group_name(res.least_favoured, bn), "ppv": res.least_favoured_ppv}
    for k in ("tpr", "fpr", "tpr_spread", "fpr_spread", "a_max", "mediators"):
        if k in res.details:
            details[k] = _plain(res.details[k])
    solver = res.details.get("solver")
    if solver:
        details["solver"] = _plain(solver)
    details["solve_seconds"] = round(float(res.details.get("solve_seconds", res.seconds)), 6)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return unknown(prop, f"{prop.metric} is undefined for this distribution (no group has a positive "
                             f"decision, or a group has probability 0)", backend=backend, seconds=seconds,
                       details=details)
    value = float(value)
    claim = f"{prop.metric} {prop.op} {prop.threshold:g}"
    extremes = ""
    if res.most_favoured is not None and res.least_favoured is not None:
        extremes = (f"; least favoured {_group_name(res.least_favoured, bn)} ({res.least_favoured_ppv:.4f}), "
                    f"most favoured {_group_name(res.most_favoured, bn)} ({res.most_favoured_ppv:.4f})")
    common = dict(value=value, backend=backend, seconds=seconds, details=details)
    if bn.n_rows is None:                       # a declared distribution: the value is exact
        return _exact_verdict(prop, pb, value, common, None, f"{claim} fails: the value is {value:.6g}{extremes}")
    b = res.bound
    add = None if b is None else b.value_additive
    if b is not None:
        details["error_bound"] = _plain(b.as_dict())
    if boot is not None:
        return _bootstrap_verdict(prop, value, boot, bn.n_rows, claim, extremes, common)
    if add is None or not math.isfinite(add):
        return Verdict(prop.name, prop.kind, "unknown",
                       reason=f"{prop.metric} = {value:.6g} over the distribution estimated from "
                              f"{bn.n_rows} rows, but no finite-sample error bound is available for it", **common)
    lo, hi = max(0.0, value - add), min(1.0, value + add)
    conf = 1.0 - b.delta
    return _estimated_verdict(
        prop, lo, hi, common,
        violated_reason=f"{claim} fails: the value is {value:.4f} +- {add:.4f} ({conf:.0%} error bound of "
                        f"the distribution estimated from {bn.n_rows} rows){extremes}",
        unknown_reason=f"the threshold {prop.threshold:g} lies inside [{lo:.4f}, {hi:.4f}], the {conf:.0%} "
                       f"error bound of {prop.metric} = {value:.4f} for a distribution estimated from "
                       f"{bn.n_rows} rows; more data (or fewer bins) would decide it")


def _estimated_verdict(prop, lo: float, hi: float, common: dict, *, violated_reason: str, unknown_reason: str,
                       holds_reason: str | None = None) -> Verdict:
    """An estimate with its interval [lo, hi]: holds (estimated) or violated only when the whole
    interval is on one side of the threshold, unknown otherwise."""
    common["bound"] = (lo, hi)
    status = interval_status(prop.op, prop.threshold, lo, hi)
    if status == "holds":
        return Verdict(prop.name, prop.kind, "holds", how="estimated", reason=holds_reason, **common)
    reason = violated_reason if status == "violated" else unknown_reason
    return Verdict(prop.name, prop.kind, status, reason=reason, **common)


def _bootstrap_verdict(prop, value: float, boot: dict, n_rows: int, claim: str, extremes: str,
                       common: dict) -> Verdict:
    """holds (estimated) / violated when the whole bootstrap percentile interval is on one side."""
    vals = np.asarray(boot["values"], dtype=float)
    conf = prop.options.confidence
    done = len(vals) + boot["undefined"]
    info = {"resamples": done, "requested": boot["requested"], "undefined": boot["undefined"],
            "confidence": conf, "structure": "fixed (estimated from all rows)",
            "seconds": round(boot["seconds"], 4)}
    common["details"]["bootstrap"] = info
    if len(vals) < max(20, boot["requested"] // 2):
        budget = prop.options.timeout or 60.0
        why = (f"the time budget of {budget:g}s ran out after {done} resamples: raise timeout = ... "
               f"(e.g. timeout = {max(2 * budget, 120):g}s) or lower bootstrap = ..." if done < boot["requested"] else
               f"{prop.metric} is undefined on {boot['undefined']} resamples")
        return Verdict(prop.name, prop.kind, "unknown",
                       reason=f"{prop.metric} = {value:.6g}, but only {len(vals)} of {boot['requested']} bootstrap "
                              f"resamples gave a value ({why})", **common)
    lo, hi = (float(x) for x in np.quantile(vals, [(1 - conf) / 2, 1 - (1 - conf) / 2]))
    info["interval"] = [lo, hi]
    where = (f"{conf:.0%} bootstrap interval over {len(vals)} networks re-estimated from resamples of the "
             f"{n_rows} rows")
    return _estimated_verdict(
        prop, lo, hi, common,
        violated_reason=f"{claim} fails: the value is {value:.4f}, [{lo:.4f}, {hi:.4f}] ({where}){extremes}",
        unknown_reason=f"the threshold {prop.threshold:g} lies inside [{lo:.4f}, {hi:.4f}], the {where}; "
                       f"{prop.metric} = {value:.4f}")


def _plain(x):
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x
