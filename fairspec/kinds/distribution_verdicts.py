"""The verdict of a group metric over a distribution (kinds/distribution.py computes the value, here it is
judged): over a declared table the value is recomputed in exact rationals from the decimals as written
(``analyses.distribution_exact``, :func:`_exact_value`) and compared as the spec writes ``<`` / ``<=``
(:func:`_exact_verdict`: ``holds (proved)`` with an exact-arithmetic proof, or ``violated``; a float value
within :data:`FLOAT_ALLOWANCE` of the threshold when no exact value exists is only estimated); over a
distribution estimated from data the value carries its finite-sample error bound (:func:`_estimated_verdict`)
or its bootstrap interval (:func:`_bootstrap_verdict`, clipped to the metric's range)."""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec.syntax.literals import percent as _level  # a confidence level as the spec writes it
from fairspec import ir
from fairspec.analyses.distribution import BayesNet
from fairspec.kinds.distribution_problem import Problem, table_slack
from fairspec.kinds.distribution_rule import rule_gap as _rule_gap
from fairspec.verdict import Verdict, interval_status, unknown
from fairspec.syntax.literals import interval as _interval, shown as _shown, shown_pair
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


def _metric_value(prop, res):
    if prop.metric == "most_favoured":
        return res.most_favoured_ppv
    if prop.metric == "least_favoured":
        return res.least_favoured_ppv
    return res.value


#: the float computation's allowance when no exact value exists (a float64 sum-product over a
#: declared network: its rounding is far below this; the verdict is then only `estimated`)
FLOAT_ALLOWANCE = 1e-9


def _exact_value(prop, pb: Problem, subsets=None, ppvs: dict | None = None, fifs: dict | None = None,
                 readings: dict | None = None):
    """(the metric's value in exact rationals from the declared decimals, None) or (None, why not).
    ``ppvs``, when given, receives each group's exact PPV {group: Fraction} of the declared network (a
    plain group metric's, an influence's base; not path_specific's); ``fifs`` an influence's exact
    {subset: FIF} and {"base": the quantity's exact value}; ``readings`` path_specific's value for each group
    tied for most favoured ({a_max: value}: the definition does not say which a_max the mediators see).

    Recomputed independently of the backend that found the value (fairspec.analyses.distribution_exact)."""
    from fairspec.analyses.distribution import all_groups
    from fairspec.analyses.distribution_exact import ExactUnavailable, exact_metric, exact_ppvs
    net = getattr(pb.bn, "exact_tables", None)
    if net is None:
        return None, getattr(pb.bn, "exact_why", None) or "the distribution has no exact tables"
    groups = all_groups(pb.bn, pb.protected)
    try:
        if prop.metric == "influence":
            quantity = prop.influence_metric or "statistical_parity"
            found = exact_ppvs(net, pb.clf, pb.protected, groups)
            base = exact_metric(quantity, found)
            if base is None:
                return None, f"{quantity} is undefined"
            best, each = None, {}
            for S in subsets or ():
                d = net
                for f in S:
                    d = d.with_uniform(f)
                q = exact_metric(quantity, exact_ppvs(d, pb.clf, pb.protected, groups))
                if q is None:
                    return None, f"{quantity} is undefined without {list(S)}"
                each[tuple(S)] = base - q
                best = abs(base - q) if best is None else max(best, abs(base - q))
            if ppvs is not None:
                ppvs.update(found)
            if fifs is not None:
                fifs.update(each, base=base)
            return (best, None) if best is not None else (None, "no subset")
        if prop.metric == "path_specific":
            base = exact_ppvs(net, pb.clf, pb.protected, groups)
            vals = {g: p for g, p in base.items() if p is not None}
            if not vals:
                return None, "no group has a PPV"
            top = max(vals.values())
            tied = sorted((g for g, p in vals.items() if p == top), key=lambda g: [x for x in g])
            each = {}
            for amax in tied:           # the first is the one reported; every tied group is a reading
                d2 = net
                for z in prop.mediators:
                    for a, v in zip(pb.protected, amax):
                        if a in d2.parents.get(z, ()):
                            d2 = d2.with_parent_fixed(z, a, v)
                each[amax] = exact_metric("spread", exact_ppvs(d2, pb.clf, pb.protected, groups))
            if readings is not None and len(each) > 1:
                readings.update(each)
            return each[tied[0]], None
        found = exact_ppvs(net, pb.clf, pb.protected, groups)
        if ppvs is not None:
            ppvs.update(found)
        v = exact_metric(prop.metric, found)
        return v, (None if v is not None else f"{prop.metric} is undefined")
    except ExactUnavailable as e:
        return None, str(e)


def _said(reason, exact) -> str:
    """A violated verdict's reason: a text, or made from the exact value (a Fraction, None when there is none)."""
    return reason(exact) if callable(reason) else reason


def _exact_verdict(prop, pb: Problem, value: float, common: dict, holds_reason, violated_reason,
                   subsets=None) -> Verdict:
    """A value over a declared distribution: recomputed in exact rationals from the decimals as
    written and compared with the threshold as written (``certify.exact.prove_exact``, the spec's
    ``<`` / ``<=``): ``holds (proved: exact arithmetic)`` or ``violated``. Unknown when the model
    was approximated (a linear model's rounded rule: :func:`_approximated`); estimated when no exact
    value exists (the float value with :data:`FLOAT_ALLOWANCE`, unknown when the threshold lies within it)."""
    from fairspec.certify import exact as cx
    details = common["details"]
    ppvs, fifs, readings = {}, {}, {}
    exact, why = _exact_value(prop, pb, subsets, ppvs, fifs, readings)
    if not pb.exact_classifier:
        return _approximated(prop, pb, exact, value, common)
    if exact is None and why is not None and (" is undefined" in why or why == "no group has a PPV"):
        return Verdict(prop.name, prop.kind, "unknown", reason=f"in exact rationals, {why} (0/0: no group has a "
                       f"positive decision, or a group has probability 0)", **common)
    if exact is not None:
        details["exact_value"] = str(exact)
        _exact_groups(details, ppvs, pb.bn, pb.protected)
        _exact_influence(details, fifs)
        common["value"] = float(exact)
        claim = f"{prop.metric} {prop.op} {_spec_number(prop.threshold)} over distribution '{prop.distribution}'"
        proof = cx.prove_exact(exact, prop.op, prop.threshold, claim=claim)
        if len(set(readings.values())) > 1:
            # several groups tied for most favoured, and path_specific's value depends on which the mediators
            # see: decided only where every such reading decides alike (nothing ambiguous resolved silently)
            names = {_group_name(tuple((a, pb.bn.variables[a].values[i]) for a, i in zip(pb.protected, g)), pb.bn):
                     x for g, x in readings.items()}
            details["a_max_readings"] = {n: str(x) for n, x in names.items()}
            held = [cx.prove_exact(x, prop.op, prop.threshold, claim=claim) is not None for x in readings.values()]
            if any(held) and not all(held):
                return Verdict(prop.name, prop.kind, "unknown",
                               reason=f"the groups {', '.join(names)} tie for most favoured, and path_specific's "
                                      f"value depends on which of them the mediators see: "
                                      + ", ".join(f"{float(x):.6g} with a_max {n}" for n, x in names.items())
                                      + f"; the claim {prop.op} {_spec_number(prop.threshold)} holds for some and "
                                        f"fails for others", **common)
        if proof is not None:
            return Verdict(prop.name, prop.kind, "holds", how="proved", reason=holds_reason, proof=proof, **common)
        return Verdict(prop.name, prop.kind, "violated", reason=_said(violated_reason, exact), **common)
    details["exact_value"] = None
    details["not_exact"] = why
    slack = float(table_slack(pb.bn))          # rows summing to 1 only within lint's 1e-6: no one distribution
    per = {"most_favoured": 1, "least_favoured": 1, "statistical_parity": 2}.get(prop.metric)
    if slack > 0 and per is None:
        return Verdict(prop.name, prop.kind, "unknown", reason=f"computed in floating point only ({why}): a table "
                       f"whose rows do not sum to 1 is no distribution, and {prop.metric} of its readings (as written, "
                       f"normalised) differ by an amount not bounded here; write the rows to sum to exactly 1", **common)
    allow = FLOAT_ALLOWANCE + per * slack if slack > 0 else FLOAT_ALLOWANCE
    lo, hi = value - allow, value + allow
    status = interval_status(prop.op, prop.threshold, lo, hi)
    if status == "holds":
        common["bound"] = (lo, hi)
        return Verdict(prop.name, prop.kind, "holds", how="estimated",
                       reason=f"computed in floating point only ({why}); the value is {value:.12g} "
                              f"+- {allow:g}", **common)
    if status == "violated":
        return Verdict(prop.name, prop.kind, "violated", reason=_said(violated_reason, None), **common)
    return Verdict(prop.name, prop.kind, "unknown",
                   reason=f"the value {value:.12g} was computed in floating point only ({why}) and lies within "
                          f"{allow:g} of the threshold {_spec_number(prop.threshold)}", **common)


def _approximated(prop, pb: Problem, exact, value: float, common: dict) -> Verdict:
    """A declared distribution and a classifier fairspec only approximates (FVGM's linear rule of a
    scikit-learn linear model: its weights scaled and rounded to integers): the value is the rule's,
    and with no data rows nothing measures how far the rule's decisions are from the model's, so it
    bounds nothing about the model -- ``unknown`` with the value in its reason (it was ``holds
    (estimated)`` with no bound at all, or ``violated`` on the rule's decisions)."""
    d = common["details"]
    if exact is not None:
        d["exact_value"] = str(exact)
        common["value"] = value = float(exact)
    rule = (d.get("classifier") or {}).get("rule")
    return Verdict(prop.name, prop.kind, "unknown",
                   reason=f"{prop.metric} = {_shown(value, (prop.threshold,), digits=6, exact=exact)} for the model's "
                          f"linear approximation"
                          f"{f' ({rule})' if rule else ''}, its weights rounded to integers, not for the model: "
                          f"{_rule_gap(pb)}, so nothing bounds the model's value over the declared distribution; "
                          f"measure it on data rows (data = DATA)", **common)


def _exact_influence(details: dict, fifs: dict) -> None:
    """An influence's FIFs, its base and the values without each subset as the exact value is: each the
    float nearest its rational, given as written too (``0.12000000000000005`` for a FIF of 3/25 beside
    the value 0.12)."""
    base = fifs.get("base")
    if base is None:
        return
    if isinstance(details.get("base"), dict):
        details["base"].update(value=float(base), value_exact=str(base))
    for row in details.get("influence", ()):
        x = fifs.get(tuple(row["subset"]))
        if x is not None:  # details["largest"] is one of these rows
            row.update(fif=float(x), fif_exact=str(x), value_without=float(base - x),
                       value_without_exact=str(base - x))


def _exact_groups(details: dict, ppvs: dict, bn: BayesNet, protected) -> None:
    """The per-group PPVs of an exact value as the value is: each the float nearest its exact rational,
    which ``ppv_exact`` gives as written (the float computation's ``0.13999999999999999`` for a PPV of
    7/50 read as a second, different number beside the value 0.14 an auditor compares it with)."""
    exact = {_group_name(tuple((a, bn.variables[a].values[i]) for a, i in zip(protected, g)), bn): p
             for g, p in ppvs.items() if p is not None}
    for row in [*details.get("groups", ()), details.get("most_favoured"), details.get("least_favoured")]:
        if isinstance(row, dict) and row.get("group") in exact:
            row["ppv"], row["ppv_exact"] = float(exact[row["group"]]), str(exact[row["group"]])


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
    if prop.metric == "disparate_impact" and res.most_favoured_ppv is not None and res.most_favoured_ppv <= 0:
        value = None        # 0/0: every group's PPV is 0 (it was read as 1 and proved >= 0.8)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return unknown(prop, f"{prop.metric} is undefined for this distribution (no group has a positive "
                             f"decision, or a group has probability 0)", backend=backend, seconds=seconds,
                       details=details)
    value = float(value)
    claim = f"{prop.metric} {prop.op} {_spec_number(prop.threshold)}"

    def extremes_text() -> str:
        """The least and most favoured groups' PPVs (the exact ones once _exact_groups put them in details),
        their printed ratio and difference on the side of the threshold the PPVs' own are on."""
        if res.most_favoured is None or res.least_favoured is None:
            return ""
        lf, mf = details.get("least_favoured") or {}, details.get("most_favoured") or {}
        lo = lf.get("ppv") if lf.get("ppv_exact") else res.least_favoured_ppv
        hi = mf.get("ppv") if mf.get("ppv_exact") else res.most_favoured_ppv
        least, most = shown_pair(float(lo), float(hi), (prop.threshold,))
        return (f"; least favoured {_group_name(res.least_favoured, bn)} ({least}), "
                f"most favoured {_group_name(res.most_favoured, bn)} ({most})")

    common = dict(value=value, backend=backend, seconds=seconds, details=details)
    if bn.n_rows is None:                       # a declared distribution: the value is exact
        # the value printed on the violated side of the threshold, as its exact rational is (literals.shown)
        return _exact_verdict(prop, pb, value, common, None, lambda exact: f"{claim} fails: the value is "
                              f"{_shown(value if exact is None else float(exact), (prop.threshold,), digits=6, exact=exact)}"
                              f"{extremes_text()}")
    extremes = extremes_text()
    b = res.bound
    add = None if b is None else b.value_additive
    if b is not None:
        details["error_bound"] = _plain(b.as_dict())
    if boot is not None:
        return _bootstrap_verdict(prop, value, boot, bn.n_rows, claim, extremes, common, add)
    if add is None or not math.isfinite(add):
        return Verdict(prop.name, prop.kind, "unknown",
                       reason=f"{prop.metric} = {_shown(value, (prop.threshold,), digits=6)} over the distribution estimated from "
                              f"{bn.n_rows} rows, but no finite-sample error bound is available for it", **common)
    lo, hi = max(0.0, value - add), min(1.0, value + add)
    conf = 1.0 - b.delta
    return _estimated_verdict(
        prop, lo, hi, common,
        violated_reason=f"{claim} fails: the value is {_shown(value, (prop.threshold,), style='f')} "
                        f"+- {_shown(add, end='high', style='f')} ({_level(conf)} error bound of "
                        f"the distribution estimated from {bn.n_rows} rows){extremes}",
        unknown_reason=f"the threshold {_spec_number(prop.threshold)} lies inside {_interval(lo, hi, (prop.threshold,))}, the {_level(conf)} "
                       f"error bound of {prop.metric} = {_shown(value, (prop.threshold,), style='f')} for a distribution estimated from "
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


#: metrics over a distribution whose values lie in [0, 1]
_UNIT_METRICS = frozenset({"disparate_impact", "statistical_parity", "equalized_odds", "equal_opportunity",
                           "most_favoured", "least_favoured"})


def _range_end(prop) -> float | None:
    """The end of the metric's range at which alone the claim is met (``>= 1`` or ``<= 0`` of a metric in [0, 1]),
    else None."""
    if not isinstance(prop, ir.GroupMetric) or prop.metric not in _UNIT_METRICS or prop.threshold is None:
        return None
    t = float(prop.threshold)
    if (prop.op == ">=" and t == 1.0) or (prop.op == "<=" and t == 0.0):
        return t
    return None


def _bootstrap_verdict(prop, value: float, boot: dict, n_rows: int, claim: str, extremes: str,
                       common: dict, add: float | None = None) -> Verdict:
    """holds (estimated) / violated when the whole bootstrap percentile interval is on one side; ``add``, the
    rigorous error bound of the value when there is one, widens that interval to contain value +- add (a
    percentile interval is no bound where a CPT row has few rows: a TPR from 30 positives all decided 1 resamples
    to 1 every time; session 36, h7: 8 wrong holds in 80 samples at 95%)."""
    vals = np.asarray(boot["values"], dtype=float)
    conf = prop.options.confidence
    done = len(vals) + boot["undefined"]
    info = {"resamples": done, "requested": boot["requested"], "undefined": boot["undefined"],
            "confidence": conf, "structure": "fixed (estimated from all rows)",
            "seconds": round(boot["seconds"], 4)}
    common["details"]["bootstrap"] = info
    if len(vals) < max(20, boot["requested"] // 2):
        from fairspec.syntax.literals import longer_timeout

        budget = prop.options.timeout or 60.0
        why = (f"the time budget of {_spec_number(budget)}s ran out after {done} resamples: raise timeout = ... "
               f"(e.g. {longer_timeout(budget, 120)}) or lower bootstrap = ..." if done < boot["requested"] else
               f"{prop.metric} is undefined on {boot['undefined']} resamples")
        return Verdict(prop.name, prop.kind, "unknown",
                       reason=f"{prop.metric} = {_shown(value, (prop.threshold,), digits=6)}, but only {len(vals)} of "
                              f"{boot['requested']} bootstrap "
                              f"resamples gave a value ({why})", **common)
    lo, hi = (float(x) for x in np.quantile(vals, [(1 - conf) / 2, 1 - (1 - conf) / 2]))
    info["interval"] = [lo, hi]
    where = (f"{_level(conf)} bootstrap interval over {len(vals)} networks re-estimated from resamples of the "
             f"{n_rows} rows")
    if add is not None and math.isfinite(add) and (value - add < lo or value + add > hi):
        lo, hi = min(lo, max(0.0, value - add)), max(hi, min(1.0, value + add))
        where += f", widened to the value +- its error bound {_shown(add, end='high', style='f')}"
    end = _range_end(prop)
    if end is not None and interval_status(prop.op, prop.threshold, lo, hi) == "violated":
        # the claim is met only at the end of the metric's range (a ratio or rate >= 1, a difference <= 0): every
        # resample lies at or past that end, so a percentile interval excludes it whatever the population's value
        common["bound"] = (lo, hi)
        return Verdict(prop.name, prop.kind, "unknown",
                       reason=f"{claim} is met only at the end of {prop.metric}'s range ({_spec_number(end)}), which "
                              f"no bootstrap interval can hold: {_interval(lo, hi, (prop.threshold,))}, the {where}, is below it for a "
                              f"population exactly at it too; {prop.metric} = {_shown(value, (prop.threshold,), style='f')} (without bootstrap = ..., "
                              "the error bound decides it)", **common)
    return _estimated_verdict(
        prop, lo, hi, common,
        violated_reason=f"{claim} fails: the value is {_shown(value, (prop.threshold,), style='f')}, {_interval(lo, hi, (prop.threshold,))} ({where}){extremes}",
        unknown_reason=f"the threshold {_spec_number(prop.threshold)} lies inside {_interval(lo, hi, (prop.threshold,))}, the {where}; "
                       f"{prop.metric} = {_shown(value, (prop.threshold,), style='f')}")


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
