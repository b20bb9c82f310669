"""A tree engine's answer on a domain too large to enumerate, decided on the library's own runtime.

Split from :mod:`fairspec.kinds.tree_pairs` (which enumerates the small domains): the exact encodings
(:mod:`fairspec.backends.trees`: MILP, SMT, the local search) read the lowering's relaxed tolerances with the
spec's strictness on integral inputs (:func:`tree_relaxed`) and compare ``S - S'`` with :func:`engine_eps`;
their answer becomes a Verdict here (:func:`solver_verdict`): a violation only with a concrete domain pair
(:func:`_checked_pair`) that breaks the property on the library's runtime, pre-condition and post-condition
checked exactly with the strictness as written; a ``holds`` is ``unknown`` (a floating-point solver's word is no
proof); a ``maximize`` value is the replayed pair's exact measure, its upper end certified where
:mod:`fairspec.certify.trees` bounds the difference (:func:`_certified_difference_bound`). A tree model's
partitions get no estimate of an undecided share (:data:`TREE_NO_ESTIMATE`)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from fairspec import ir
from fairspec.kinds.tree_cells import runtime_name, tree_ensemble
from fairspec.kinds.tree_pairs import NO_MARGIN, _interval, _label_measure, label_maximum, runtime_outputs

__all__ = ["tree_relaxed", "encode_features", "engine_eps", "solver_verdict", "TREE_NO_ESTIMATE"]


def tree_relaxed(prop: ir.IndividualFairness, enc: ir.Encoding, low) -> tuple:
    """The lowering's relaxed tolerances with the spec's strictness on integral inputs: ``|v - v'| < t``
    is ``|v - v'| <= ceil(t) - 1`` and ``<= t`` is ``<= floor(t)`` (continuous inputs keep t; their
    witnesses are re-checked exactly)."""
    from fairspec.certify.exact import threshold_of

    tol = dict(prop.relaxed)
    names = [c.feature for c in enc.columns if c.feature in tol]      # the lowering's order
    out = []
    for (col, tf), name in zip(low.relaxed, names):
        if bool(low.integer[col]):
            t = threshold_of(tol[name])
            lim = (math.ceil(t) - 1) if prop.relaxed_op(name) == "<" else math.floor(t)
            out.append((col, float(lim)))
        else:
            out.append((col, tf))
    return tuple(out)


def _feature_point(enc: ir.Encoding, v: np.ndarray) -> dict:
    """Feature values (as the runtime encoding reads them) of a feature-space vector of the lowering
    (a code column's variable is its code's rank: kinds.lowering.code_index gives the table's position)."""
    from fairspec.kinds.lowering import code_index

    out = {}
    for c in enc.columns:
        seg = np.asarray(v[c.offset:c.offset + c.width], dtype=np.float64)
        out[c.feature] = (float(np.argmax(seg)) if c.kind == "onehot" else
                          float(code_index(c, seg[0])) if c.kind == "code" else float(seg[0]))
    return out


def encode_features(enc: ir.Encoding, V: np.ndarray) -> np.ndarray:
    """Model-input rows of feature-space rows of the lowering, encoded as the runtime encodes them."""
    from fairspec.runtime.encoding import encode

    V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    pts = [_feature_point(enc, v) for v in V]
    return encode(enc, {c.feature: np.array([p[c.feature] for p in pts]) for c in enc.columns}, V.shape[0])


def _certified_difference_bound(prop, ctx, model, enc) -> float | None:
    """certify.trees.difference_bound of the pair's output difference, for a ``logit`` (or the margin a
    ``label`` reads) of a boosted model or a ``prob`` of a probability-averaging forest (None otherwise)."""
    from fairspec.certify.trees import difference_bound

    ens = tree_ensemble(model)
    if ens is None or not ((prop.post in ("logit", "label") and ens.link == "logistic")
                           or (prop.post == "prob" and ens.link == "identity")):
        return None
    vary = set()
    for c in enc.columns:
        if c.feature in prop.free or c.feature in dict(prop.relaxed):
            vary |= set(range(c.offset, c.offset + c.width))
    leaves = [t.value[t.left < 0] for t in ens.trees]
    varying = [bool(t.features() & vary) for t in ens.trees]
    ub, _ = difference_bound(leaves, varying, divisor=ens.divisor, base=ens.base,
                             precision="float32" if ens.source == "xgboost" else "float64")
    if ub is not None and ens.link == "logistic" and ens.margin_scale != 1.0:
        # S is LightGBM's sigmoid factor times the raw score the library (and every replay) reads as
        # the margin: the bound on the margin's difference is S's divided by it, widened by 2^-40
        # relatively for the float64 products factor * leaf the ensemble holds, and rounded up
        ub = float(np.nextafter(ub / ens.margin_scale * (1 + 2.0 ** -40), np.inf))
    return ub


def engine_eps(prop, ens) -> float:
    """The tolerance the tree engines compare ``S - S'`` with. A LightGBM ensemble's S is its sigmoid
    factor times the raw score ``logit(m(x))`` reads (``TreeEnsemble.margin_scale``), so a ``logit``
    post's eps, written in the library's units, is multiplied by the factor, and lowered by 2^-40
    relatively: the engines miss no pair whose replay (exact, in the library's units) breaks the
    property, and a candidate at the edge is dropped by that replay. Any other post or ensemble
    (``prob`` reads sigmoid(S), the library's probability; ``label`` the sign): eps as written."""
    scale = getattr(ens, "margin_scale", 1.0)
    if prop.post != "logit" or getattr(ens, "link", None) != "logistic" or scale == 1.0:
        return prop.eps
    return float(prop.eps) * scale * (1.0 - 2.0 ** -40)


def _checked_pair(prop, fs, enc, model, pair):
    """(the pair encoded, x first as the violation reads it, None) when ``pair`` (a solver's candidate)
    lies in the domain, satisfies the pre-condition and breaks the property on the library's runtime;
    (None, why) otherwise."""
    from fairspec.certify.enumerate import compare_exact
    from fairspec.certify.exact import decide
    from fairspec.runtime.encoding import encode

    XW = None
    px, py = _feature_point(enc, pair.x), _feature_point(enc, pair.x_prime)
    why = None
    for c in enc.columns:
        f = fs.get(c.feature)
        a, b = px[c.feature], py[c.feature]
        d = f.domain
        if isinstance(d, (ir.IntRange, ir.Boolean, ir.Categorical)):
            hi = d.hi if isinstance(d, ir.IntRange) else (1 if isinstance(d, ir.Boolean) else len(d.categories) - 1)
            lo = d.lo if isinstance(d, ir.IntRange) else 0
            if any(v != round(v) or not lo <= v <= hi for v in (a, b)):
                why = f"feature {f.name} is outside its domain"
        elif not (d.lo <= a <= d.hi and d.lo <= b <= d.hi):
            why = f"feature {f.name} is outside its domain"
        tol = dict(prop.relaxed)
        if f.name in tol and not decide(Fraction(a) - Fraction(b) if a >= b else Fraction(b) - Fraction(a),
                                        prop.relaxed_op(f.name), tol[f.name]):
            why = f"feature {f.name} differs beyond its tolerance"
        if f.name not in prop.free and f.name not in tol and a != b:
            why = f"feature {f.name} differs, which the pre-condition ties"
    if why is None and prop.pre:            # the lowering's box holds it (tied int bounds); checked again, exactly
        from fairspec.kinds.pair_pre import PairPre

        if not PairPre(prop, fs, {n: np.array([px[n], py[n]]) for n in px}).meets([0], [1])[0]:
            why = "the pair does not meet the pre-condition"
    if why is None and not any(px[n] != py[n] for n in prop.free if n in px) and \
            all(n in px for n in prop.free):
        why = "the pair does not differ in a protected feature"
    if why is None:
        XW = encode(enc, {n: np.array([px[n], py[n]]) for n in px}, 2)
        if prop.post == "label":
            lw = runtime_outputs(model, XW, "label")
            ok = bool(lw[0] != lw[1])
            if ok and lw[0] == 0:
                XW = XW[::-1].copy()
        else:
            sw = runtime_outputs(model, XW, prop.post)
            ok = sw is not None and not bool(compare_exact(sw[:1], prop.eps_op, prop.eps, minus=sw[1:])[0])
            if sw is not None and not ok:
                ok = not bool(compare_exact(sw[1:], prop.eps_op, prop.eps, minus=sw[:1])[0])
                XW = XW[::-1].copy()
        if not ok:
            why = "it does not break the property on the library's runtime"
    return (XW, None) if why is None else (None, why)


#: why a tree model's partitions get no estimate of their undecided share (backends/estimate.py): its sampled
#: individuals would be decided on the ensemble's forward, which sums the leaves in float64 where the
#: library may not (XGBoost sums float32): "0% unfair" where a quarter of the domain is, on the library
TREE_NO_ESTIMATE = ("a tree model's sampled individuals would be decided on fairspec's float64 sums of its leaves, "
                    "not on the library's runtime")


def _no_estimate(prop, details: dict, backend: str) -> dict:
    """``details`` with the partitions' shares saying why there is no estimate (kinds.individual_fairness
    asks for none of a tree model) where the spec's ``estimate`` asked for one and a share is undecided."""
    from fairspec.planning import setting

    shares = (details.get("coverage") or {}).get("shares")
    if not isinstance(shares, dict) or "estimate" in shares or Fraction(shares.get("undecided", "0")) == 0:
        return details
    samples = int(setting(prop, "estimate", backend) or 0)
    if not samples:
        return details
    from fairspec.backends.estimate import Estimate

    est = Estimate(samples=samples, seed=int(setting(prop, "seed", backend) or 0),
                   undecided=Fraction(shares["undecided"]), reason=TREE_NO_ESTIMATE)
    return {**details, "coverage": {**details["coverage"], "shares": {**shares, "estimate": est.to_json()}}}


def solver_verdict(prop: ir.IndividualFairness, ctx, res, backend: str, seconds: float, details: dict):
    """The Verdict of a tree engine's answer on a domain too large to enumerate: a violation only
    with a concrete domain pair that breaks the property on the library's runtime (pre-condition
    and post-condition checked exactly, strictness as written); a `holds` the engines cannot
    certify is `unknown` (a floating-point solver's word is no proof)."""
    from fairspec.runtime.encoding import decode_row
    from fairspec.verdict import Verdict, Witness, unknown

    mode = details.get("mode")
    details = _no_estimate(prop, details, backend)
    if res.status == "holds":
        return unknown(prop, f"the {backend} tree encoding found no violating pair, but its answer is not certified "
                             "(the domain is too large to enumerate on the library's runtime, and a floating-point "
                             "solver's word is no proof)", backend=backend, seconds=seconds, details=details)
    if res.status != "violated" or res.witness is None:
        return unknown(prop, res.reason or f"the {backend} solver did not decide the property", backend=backend,
                       seconds=seconds, details=details)
    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    model = ctx.model(prop.model)
    XW, why = _checked_pair(prop, fs, enc, model, res.witness)
    if why is not None:
        return unknown(prop, f"the {backend} solver's candidate pair was dropped ({why}); not reported as a violation",
                       backend=backend, seconds=seconds, details=details)
    value = bound = None
    if prop.post == "label" and mode == "maximize":
        # min(z - c, c - z') of the replayed pair (x labelled 1; c the margin the library's label cuts
        # at): a value the runtime reaches; a boosted model's certified bound on z - z' bounds it by half
        # (min(z - c, c - z') <= (z - z') / 2), as the enumeration's exact value would be; a forest's
        # runtime outputs no margin: no value (its logit of a probability, computed here, only picks the
        # pair reported)
        z, margin, cut = _label_measure(model, XW)
        _, ex = label_maximum(z[:1], z[1:], cut)
        if res.best is not None and res.best is not res.witness:
            # the solver's largest margin pair (on its float encoding), kept when the runtime agrees
            XB, _ = _checked_pair(prop, fs, enc, model, res.best)
            if XB is not None:
                zb, _, _ = _label_measure(model, XB)
                _, exb = label_maximum(zb[:1], zb[1:], cut)
                if exb > ex:
                    XW, ex = XB, exb
        v, v_down, _ = _interval(ex)
        ub = _certified_difference_bound(prop, ctx, model, enc) if margin else None
        if not margin:
            details = {**details, "maximum": NO_MARGIN}
        elif ub is not None:
            value, bound = v, (v_down, max(v, ub / 2))
            details = {**details, "maximum": "[best replayed pair, certified upper bound]"}
        else:
            details = {**details, "best_value": v, "maximum": "no certified upper bound"}
    elif prop.post != "label":
        sw = runtime_outputs(model, XW, prop.post)
        # the pair's exact difference, to the nearest float as its value; the interval's lower end is
        # the float at or below it (the nearest may lie half an ulp above the largest difference)
        v, v_down, _ = _interval(Fraction(float(sw[0])) - Fraction(float(sw[1])))
        if mode != "maximize":
            value = v
        else:
            ub = _certified_difference_bound(prop, ctx, model, enc)
            if ub is None and prop.post == "prob":
                ub = 1.0                         # a difference of probabilities is at most 1
            if ub is not None:
                value, bound = v, (v_down, max(v, ub))
                details = {**details, "maximum": "[best replayed pair, certified upper bound]"}
            else:
                details = {**details, "best_value": v, "maximum": "no certified upper bound"}
    out = runtime_outputs(model, XW, prop.post)     # what the post reads, as every tree path's witness shows
    w = Witness(tuple(map(float, XW[0])), tuple(map(float, XW[1])), decode_row(enc, fs, XW[0]),
                decode_row(enc, fs, XW[1]), (float(out[0]), float(out[1])), replayed_by=runtime_name(model))
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=w, backend=backend,
                   seconds=seconds, details=details,
                   reason=f"the {backend} solver found a pair that breaks it on the library's runtime")
