"""Individual fairness of a tree model decided on the library's own runtime.

A tree model's outputs are those of its library (scikit-learn's ``predict`` / ``predict_proba`` /
``decision_function``, XGBoost's and LightGBM's ``Booster.predict``): float32 thresholds,
float32 comparisons, the library's own summation order, its logistic in float32, its tie rule
between classes. The pair problem's **small domains** are therefore decided by enumeration
(issue 20, item 3): every domain point of the encoded features is encoded as the runtime encodes
it (:func:`fairspec.runtime.encoding.encode`), evaluated in one batch by the library, and every
admissible ordered pair is compared by :func:`fairspec.certify.by_enumeration`, exactly and with
the spec's strictness (``<`` / ``<=`` of the post-condition and of each relaxed feature):

* ``holds (proved: enumeration of N pairs)``, or ``violated`` with the first violating pair
  (a domain point pair, replayed on the library) -- ``find`` / ``prove``;
* ``maximize``: the exact largest violation measure over all admissible pairs (``|s - s'|`` for
  ``prob`` / ``logit``, ``min(z, -z')`` in the library's logit for ``label``), reported as the
  interval ``[value, value]`` (its two float neighbours when the exact difference is not a float).

The **label** of a tree model is the library's ``predict`` (scikit-learn: the class
``predict`` returns -- GradientBoosting sends a raw score of exactly 0 to the positive class,
forests and HistGradientBoosting to the negative one); for XGBoost and LightGBM the declared
output compared with its threshold (``p > 0.5`` on the float32 probability, ``margin > 0``).

Cut: at most :data:`MAX_POINTS` domain points and :data:`MAX_PAIRS` ordered pairs (bounded above by
points times the size of the varying sub-grid; a few seconds of library calls and numpy); larger
domains, or a continuous encoded feature, go to the exact encodings (:mod:`fairspec.backends.trees`).
"""

from __future__ import annotations

import math
import time
import warnings
from fractions import Fraction

import numpy as np

from fairspec import ir

__all__ = ["MAX_POINTS", "MAX_PAIRS", "runtime_outputs", "pair_domain", "decide_by_enumeration"]

MAX_POINTS = 400_000
MAX_PAIRS = 4_000_000


def _max_pairs() -> int:
    """:data:`MAX_PAIRS`, or ``FAIRSPEC_ENUMERATE_PAIRS`` (0 sends every domain to the exact
    encodings: the differential harness tests them against enumeration that way)."""
    import os

    v = os.environ.get("FAIRSPEC_ENUMERATE_PAIRS", "").strip()
    try:
        return int(float(v)) if v else MAX_PAIRS
    except ValueError:
        return MAX_PAIRS


# ---------------------------------------------------------------------------------------------
# the library's outputs
# ---------------------------------------------------------------------------------------------

def _sk_positive(model):
    est = model.raw
    classes = list(getattr(est, "classes_", []))
    if getattr(model, "method", "predict_proba") == "predict_proba":
        idx = 1 if model.index is None else int(model.index)
    else:
        idx = 1
    return est, classes, idx


def runtime_outputs(model, X: np.ndarray, what: str) -> np.ndarray | None:
    """The library's own ``label`` (0/1 int64, its ``predict``), ``prob`` (the positive class's
    probability) or ``logit`` (its raw margin / decision function) of a tree model on the
    model-input rows X; None when the library has no such output (a forest's logit)."""
    fmt = getattr(model, "format", "")
    X = np.asarray(X, dtype=np.float64)
    if fmt == "sklearn":
        est, classes, idx = _sk_positive(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if what == "label":
                if len(classes) != 2:
                    return model.decide(X)
                pred = np.asarray(est.predict(X))
                return (pred == classes[idx]).astype(np.int64)
            if what == "prob":
                if not hasattr(est, "predict_proba"):
                    return None
                return np.asarray(est.predict_proba(X), dtype=np.float64)[:, idx].copy()
            if what == "logit":
                if not callable(getattr(est, "decision_function", None)) or len(classes) != 2:
                    return None
                z = np.asarray(est.decision_function(X), dtype=np.float64).reshape(-1)
                return z if idx == 1 else -z
        raise ValueError(what)
    if fmt in ("xgboost", "lightgbm"):
        if what == "label":
            return model.decide(X)
        margin = what == "logit"
        y = np.asarray(model._predict(X, margin), dtype=np.float64).reshape(-1)
        if model.index == 0:
            y = -y if margin else 1.0 - y
        return y
    if what == "label":
        return model.decide(X)
    if what == model.score_kind:
        return model.score(X)
    return None


# ---------------------------------------------------------------------------------------------
# the finite pair domain
# ---------------------------------------------------------------------------------------------

class PairDomain:
    """Every domain point of the encoded features (tied features outermost, so that the points
    sharing the tied values form consecutive blocks of ``m``), and the admissible ordered pairs
    (``I``, ``J``) as indices into it."""

    def __init__(self, names, values, n, m, I, J):
        self.names = names            # encoded feature names, in grid order
        self.values = values          # feature -> (n,) values as the runtime encoding reads them
        self.n = n
        self.m = m
        self.I = I
        self.J = J


def _feature_values(f: ir.Feature) -> np.ndarray | None:
    d = f.domain
    if isinstance(d, ir.Categorical):
        return np.arange(len(d.categories), dtype=np.float64)
    if isinstance(d, ir.Boolean):
        return np.array([0.0, 1.0])
    if isinstance(d, ir.IntRange):
        if d.hi - d.lo + 1 > MAX_POINTS:
            return None
        return np.arange(d.lo, d.hi + 1, dtype=np.float64)
    return None


def _exact_leq(d: np.ndarray, op: str, tol) -> np.ndarray:
    """``d op tol`` for the few distinct values of d, exactly (tol read as the spec wrote it)."""
    from fairspec.certify.exact import decide

    out = np.zeros(d.shape, dtype=bool)
    for v in np.unique(d):
        out[d == v] = decide(float(v), op, tol)
    return out


def pair_domain(prop: ir.IndividualFairness, fs: ir.FeatureSet, enc: ir.Encoding) -> tuple[PairDomain | None, str]:
    """The finite pair domain of ``prop`` (None with the reason when it is not small)."""
    if prop.pre:
        return None, "a further pre-condition"
    encoded = [c.feature for c in enc.columns]
    feats = [fs.get(n) for n in encoded]
    if any(f is None for f in feats):
        return None, "an encoded feature outside the feature set"
    axes = {}
    for f in feats:
        v = _feature_values(f)
        if v is None:
            return None, f"feature {f.name} is continuous or too wide to enumerate"
        axes[f.name] = v
    free = [n for n in encoded if n in prop.free]
    tol = dict(prop.relaxed)
    varying = [n for n in encoded if n in prop.free or n in tol]
    tied = [n for n in encoded if n not in varying]
    # a protected feature the model does not read lets any pair differ there
    any_free_elsewhere = any(n not in encoded for n in prop.free)
    sizes = [len(axes[n]) for n in tied + varying]
    n = int(np.prod(sizes, dtype=np.float64)) if sizes else 1
    m = int(np.prod([len(axes[k]) for k in varying], dtype=np.float64)) if varying else 1
    if n > MAX_POINTS or float(n) * m > _max_pairs():
        return None, f"{n:,} points and up to {n * m:,} pairs"
    order = tied + varying
    grids = np.meshgrid(*[axes[k] for k in order], indexing="ij") if order else []
    values = {k: g.reshape(-1) for k, g in zip(order, grids)}
    # admissible pairs inside one block (the varying sub-grid, the same in every block)
    if varying:
        sub = np.meshgrid(*[axes[k] for k in varying], indexing="ij")
        V = {k: g.reshape(-1) for k, g in zip(varying, sub)}
    else:
        V = {}
    ok = np.ones((m, m), dtype=bool)
    if not any_free_elsewhere:
        differs = np.zeros((m, m), dtype=bool)
        for k in free:
            differs |= V[k][:, None] != V[k][None, :]
        ok &= differs
    for k in varying:
        if k in tol:
            d = np.abs(V[k][:, None] - V[k][None, :])
            ok &= _exact_leq(d, prop.relaxed_op(k), tol[k])
    A, C = np.nonzero(ok)
    blocks = np.arange(n // m, dtype=np.int64) * m
    I = (blocks[:, None] + A[None, :]).reshape(-1)
    J = (blocks[:, None] + C[None, :]).reshape(-1)
    return PairDomain(order, values, n, m, I, J), ""


# ---------------------------------------------------------------------------------------------
# the decision
# ---------------------------------------------------------------------------------------------

def _exact_max_diff(a: np.ndarray, b: np.ndarray) -> tuple[int, Fraction]:
    """The index and exact value of the largest ``a[k] - b[k]`` (rounding is monotone, so the
    exact maximum is among the largest float differences)."""
    d = a - b
    top = np.flatnonzero(d == d.max())
    best, arg = None, int(top[0])
    for k in top[:4096]:
        v = Fraction(float(a[k])) - Fraction(float(b[k]))
        if best is None or v > best:
            best, arg = v, int(k)
    return arg, best


def _interval(v: Fraction) -> tuple[float, float, float]:
    """(nearest float, float below or equal, float above or equal) of an exact rational."""
    from fairspec.certify.rounding import float_down, float_up

    return float(v), float_down(v), float_up(v)


def decide_by_enumeration(prop: ir.IndividualFairness, ctx, mode: str, backend: str, t0: float):
    """The Verdict of ``prop`` by enumeration on the library's runtime, or None when the domain is
    not small (see the module docstring)."""
    from fairspec.certify import Check, by_enumeration
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.verdict import Verdict, Witness, unknown

    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    dom, why = pair_domain(prop, fs, enc)
    if dom is None:
        return None
    model = ctx.model(prop.model)
    details = {"mode": mode, "points": dom.n, "pairs": int(dom.I.size), "runtime": _runtime_name(model)}
    X = encode(enc, dom.values, dom.n)
    post = prop.post
    if dom.I.size == 0:
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=None, backend=backend,
                       seconds=time.perf_counter() - t0, details=details,
                       proof=by_enumeration(Check(np.zeros(0), "<=", 0), count=0,
                                            claim="no pair of the domain satisfies the pre-condition").proof,
                       reason="no pair of the domain satisfies the pre-condition")
    I, J = dom.I, dom.J
    if post == "label":
        L = runtime_outputs(model, X, "label")
        checks = [Check(L[I], "<=", 0), Check(L[J], ">", 0)]
        claim = (f"no two of the {dom.n:,} domain points that the pre-condition pairs get different labels "
                 f"from the library's predict")
        measure = runtime_outputs(model, X, "logit") if mode == "maximize" else None
        if mode == "maximize" and measure is None:
            from fairspec.models.trees import agg_to_logit

            measure = agg_to_logit(runtime_outputs(model, X, "prob"), "identity")
    else:
        s = runtime_outputs(model, X, post)
        if s is None:
            return unknown(prop, f"the library of model '{prop.model}' has no {post} output", backend=backend,
                           seconds=time.perf_counter() - t0)
        checks = [Check(s[I], prop.eps_op, prop.eps, minus=s[J])]
        claim = (f"|{post}(x) - {post}(x')| {prop.eps_op} {prop.eps:g} for every pair of the {dom.n:,} domain "
                 "points that the pre-condition pairs, on the library's runtime")
        measure = s
    res = by_enumeration(checks, count=int(I.size), claim=claim, unit="pairs", points=dom.n,
                         runtime=details["runtime"])
    value = bound = None
    best = None
    if mode == "maximize" and measure is not None:
        if post == "label":
            mm = np.minimum(measure[I], -measure[J])
            k = int(np.argmax(mm))
            v = float(mm[k])             # min and negation are exact: the float is the exact value
            value, bound, best = v, (v, v), k
        else:
            k, ex = _exact_max_diff(measure[I], measure[J])
            v, lo, hi = _interval(ex)
            value, bound, best = v, (lo, hi), k
        details["maximum"] = "exact over every admissible pair (enumeration)"
    seconds = time.perf_counter() - t0
    if res.proof is not None:
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=value, bound=bound, backend=backend,
                       seconds=seconds, details=details, proof=res.proof,
                       reason=f"enumeration of {int(I.size):,} pairs on the library's runtime")
    k = res.index
    if mode == "maximize" and post != "label" and best is not None:
        k = best                          # the largest violation is a violation too
    elif mode == "maximize" and post == "label":
        # the violating pair with the largest margin
        bad = (L[I] == 1) & (L[J] == 0)
        mm = np.where(bad, np.minimum(measure[I], -measure[J]), -np.inf)
        k = int(np.argmax(mm))
    i, j = int(I[k]), int(J[k])
    x, xp = X[i], X[j]
    out = model.replay(np.stack([x, xp]))
    w = Witness(tuple(map(float, x)), tuple(map(float, xp)), decode_row(enc, fs, x), decode_row(enc, fs, xp),
                (float(out[0]), float(out[1])), replayed_by=details["runtime"])
    if value is None and post != "label":
        value = float(Fraction(float(measure[i])) - Fraction(float(measure[j])))
    details["violating_pairs"] = res.violations
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=w, backend=backend,
                   seconds=seconds, details=details,
                   reason=f"{res.violations:,} of {int(I.size):,} pairs violate it on the library's runtime "
                          "(enumeration)")


def _runtime_name(model) -> str:
    from fairspec.backends.data.flips import replayer_name

    return replayer_name(model)


_ = math
