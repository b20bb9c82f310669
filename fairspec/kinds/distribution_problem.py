"""The problem of a group metric over a distribution: the Bayesian network and the classifier.

``build_problem(prop, ctx, dist)`` builds the distribution as a ``BayesNet`` -- a declared
``distribution d { p(Q | P) = 0.6 ... }`` table over bool and categorical features, or one
estimated from a data set's rows (``independent``, ``conditional`` on the compound protected
group, ``bayes`` learned by hill climbing) after discretising numeric features into their
declared ``bins [...]`` or ``bins = N`` quantile bins, refined with the thresholds the
classifier tests -- and the classifier in Boolean form (fairspec.backends.boolean.compile).
"""

from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction
from dataclasses import dataclass, field

import numpy as np

from fairspec import ir
from fairspec.analyses.distribution import (BayesNet, Bins, DiscreteData, DistributionError, Variable,
                                            conditional, independent, learn_bayes_net)
from fairspec.analyses.distribution_exact import ExactNet, ExactUnavailable, exact_probability, table_rows_exact
from fairspec.backends.boolean.compile import _variable, classifier_form
from fairspec.verdict import Unsupported
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

__all__ = ["Problem", "build_problem", "table_network", "discretise_rows", "LABEL"]

LABEL = "label"
DATA_KINDS = ("independent", "conditional", "bayes")
PARAMS = {"bins", "max_parents", "score", "alpha", "max_iter"}


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
    exact_cpts: dict = {}
    exact_why: list[str] = []
    slack = Fraction(0)     # sum over features of the largest |row sum - 1| as written (see table_slack)
    for n, var in variables.items():
        rows = by_target.get(n, [])
        cond = [r for r in rows if r.given]
        if cond:
            uncond = [r for r in rows if not r.given]
            for r in uncond:
                notes.append(f"p({ir.event_text(n, r.value)}) = {_spec_number(r.prob)} is not used: the table of '{n}' conditions on "
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
                exact_cpts[n] = table_rows_exact({(j,): Fraction(1, var.k) for j in range(var.k)}, (), var.k)
                continue
            # named only as a condition: it needs its own probabilities
            raise DistributionError(f"distribution '{dist.name}' conditions on '{n}' but gives no probability of "
                                    f"'{n}' itself; add p({n}{' = ...' if var.k > 2 else ''}) = ...")
        shape = tuple(variables[p].k for p in pa)
        given_p = np.full(shape + (var.k,), np.nan)
        given_x: dict = {}
        for r in rows:
            key = tuple(_value_index(variables[p], dict(r.given)[p], dist.name) for p in pa)
            j = _value_index(var, r.value, dist.name)
            if not math.isnan(given_p[key + (j,)]):
                raise DistributionError(f"p({ir.event_text(n, r.value)}{_given_text(r)}) is given twice in "
                                        f"distribution '{dist.name}'")
            given_p[key + (j,)] = r.prob
            given_x[key + (j,)] = exact_probability(r.prob)
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
                                            f"distribution '{dist.name}' sum to {_spec_number(round(s, 12))}, more than 1")
                row = np.where(missing, max(rest, 0.0), row)
            elif missing.any():
                if abs(s - 1.0) > 1e-6:
                    lack = [str(var.values[i]) for i in np.flatnonzero(missing)]
                    raise DistributionError(f"Pr[{n} = {lack[0]}{cond_txt}] is missing from distribution "
                                            f"'{dist.name}' (values without a probability: {', '.join(lack)})")
                row = np.where(missing, 0.0, row)
            elif abs(s - 1.0) > 1e-6:
                raise DistributionError(f"the probabilities of '{n}'{cond_txt and ' given ' + where} in "
                                        f"distribution '{dist.name}' sum to {_spec_number(round(s, 12))}, not 1")
            table[key] = row
        parents[n], cpts[n] = pa, table
        slack += max((_row_deviation(given_x, key, var.k) for key in itertools.product(*[range(k) for k in shape])),
                     default=Fraction(0))
        try:
            exact_cpts[n] = table_rows_exact(given_x, shape, var.k)
        except ExactUnavailable as e:
            exact_why.append(f"the probabilities of '{n}' in distribution '{dist.name}' as written: {e}")
    bn = BayesNet(list(variables.values()), parents, cpts, kind="declared")
    # the same tables in exact rationals (the decimals as written): the exact re-check of the value
    bn.exact_tables = (None if exact_why else
                       ExactNet({n: v.k for n, v in variables.items()}, parents, exact_cpts, bn.order))
    bn.exact_why = "; ".join(exact_why) or None
    bn.table_slack = slack
    return bn, notes


def _row_deviation(given_x: dict, key: tuple, k: int) -> Fraction:
    """How far one row's probabilities as written are from a distribution: |sum - 1| (a row with one
    value left out gets the rest, so only a sum above 1 counts)."""
    row = [given_x.get(key + (j,)) for j in range(k)]
    total = sum((p for p in row if p is not None), Fraction(0))
    if sum(p is None for p in row) == 1:
        return max(total - 1, Fraction(0))
    return abs(total - 1)


def table_slack(bn) -> Fraction:
    """A declared table whose rows sum to 1 only within lint's 1e-6 (0.3333333 three times) is no
    distribution: every reading of it (as written, normalised, the rest on one value) is within L1
    2 |sum - 1| of another in each row, so a group's PPV -- an event's probability under the product
    of the rows -- moves by at most the sum over features of their largest such deviation, twice
    (second-order terms included while it is small). 0 for a table whose rows sum to exactly 1."""
    return 2 * Fraction(getattr(bn, "table_slack", 0) or 0)


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
    """Edges to add so that every need (lo, hi, preferred) has an edge e with lo <= e <= hi (< hi if lo < hi):
    e == lo exactly when lo == hi (a split's raw cut: an edge a float away holds the values between them)."""
    have = list(edges)
    add = []
    for lo, hi, pref in needs:
        ok = any((e == lo) if lo == hi else (lo <= e < hi) for e in have)
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
