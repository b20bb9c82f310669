"""Whether FVGM's rounded linear rule decides as a scikit-learn linear model's own ``predict`` on every
point of a discrete support (``support_agreement``), which ``kinds/distribution.py`` reads to let the
rule stand for the model or make the verdict unknown.

A point whose decision score lies within the dot product's float64 rounding of 0 may be decided one
way in one batch and the other alone (BLAS sums in an order of its own): it never counts as agreeing
(:func:`at_tie`) -- unless the score is an *exact tie* (:func:`exact_decisions`): every product and
every partial sum is representable, so ``predict`` computes the score's exact rational value in any
order and its decision (``score > 0``) is the same in every batch. The points left open (a real
disagreement or an undecided tie) are kept on the rule as ``support_open`` for the runner, which
lets the rule stand when the declared distribution gives all of them probability exactly 0.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MAX_SUPPORT_POINTS", "support_agreement", "at_tie", "exact_decisions", "example_of"]

#: the most points of a discrete support the rounded rule and the model are compared on
MAX_SUPPORT_POINTS = 1 << 16


def support_agreement(est, rule, reads, variables, fs, ctx, model_name: str, positive) -> dict:
    """Whether FVGM's rounded linear rule decides as the model's own ``predict`` on every point of the
    support: every combination of the values of the features either reads, when all are bool or
    categorical (a superset of the distribution's support). ``{"points": N, "disagree": k, ...}``, or
    ``{"points": None, "why": ...}`` when the support is not a finite set of points to run the model on
    (a binned numeric feature: a bin is not a point) or has more than :data:`MAX_SUPPORT_POINTS`.

    ``disagree`` counts the points left open: those where the two decide differently and those whose
    score is at a tie (``at_tie`` of them) that is not exact; ``exact_ties`` (when some) the points at
    a tie whose decision is exact (:func:`exact_decisions`), counted as agreeing or not by it. The open
    points themselves are set on ``rule.support_open`` (their codes, the model's and the rule's
    decisions, whether at a tie) -- not in the dict, which goes into the verdict's details."""
    rule.support_open = None
    feats = list(dict.fromkeys(tuple(reads) + tuple(rule.features)))
    sizes = []
    for f in feats:
        feat, var = fs.get(f), variables.get(f)
        if feat is None or var is None or not feat.is_discrete or var.bins is not None:
            return {"points": None, "why": f"feature '{f}' is numeric: its bins are not points the model can "
                                           f"be run on, so the support cannot be enumerated"}
        sizes.append(len(var.values))
    n = math.prod(sizes)
    if n > MAX_SUPPORT_POINTS:
        return {"points": None, "why": f"the support has {n} points, more than the {MAX_SUPPORT_POINTS} "
                                       f"fairspec enumerates"}
    grid = np.indices(sizes).reshape(len(sizes), -1) if feats else np.zeros((0, 1), dtype=np.int64)
    codes = {f: grid[i].astype(np.int64) for i, f in enumerate(feats)}
    enc = ctx.encoding(model_name)
    zeros = np.zeros(n, dtype=np.int64)          # a feature no column weighs: any value decides alike
    X = ctx.model_input(model_name, {c.feature: codes.get(c.feature, zeros) for c in enc.columns}, n)
    from fairspec.models.base import unnamed_inputs

    with unnamed_inputs():
        got = np.asarray(est.predict(X))
    classes = list(getattr(est, "classes_", [0, 1]))
    yes = classes[1] if positive is None else positive
    model = got == yes
    mine = np.broadcast_to(rule.predict(codes), (n,))
    # a point whose decision score lies within the dot product's rounding of 0 may be decided either way
    # in another batch (BLAS sums in an order of its own): it is never taken as agreeing, unless its
    # score is an exact tie, whose decision is the same in every batch
    tied = at_tie(est, X)
    exact = 0
    if tied.any():
        decided = exact_decisions(est, X, np.flatnonzero(tied))
        for i, cls in decided.items():
            if cls is not None and bool(got[i] == cls):      # the batch decided as the exact score says
                tied[i] = False
                exact += 1
    bad = np.flatnonzero((model != mine) | tied)
    out = {"points": int(n), "disagree": int(len(bad))}
    if tied.any():
        out["at_tie"] = int(tied.sum())
    if exact:
        out["exact_ties"] = exact
    if len(bad):
        rule.support_open = {"features": tuple(feats), "codes": {f: codes[f][bad] for f in feats},
                             "model": np.asarray(model[bad]), "rule": np.asarray(mine[bad]),
                             "tied": np.asarray(tied[bad]), "variables": {f: variables[f] for f in feats}}
        apart = np.flatnonzero(model[bad] != mine[bad])  # a real disagreement first, else a point at a tie
        out.update(example_of(rule.support_open, int(apart[0]) if len(apart) else 0))
    return out


def example_of(open_points: dict, i: int) -> dict:
    """The details of the ``i``-th open point: ``example`` (feature -> value), ``example_model``,
    ``example_rule`` and ``example_at_tie``."""
    variables, codes = open_points["variables"], open_points["codes"]
    return {"example_at_tie": bool(open_points["tied"][i]),
            "example": {f: _plain_value(variables[f].values[int(codes[f][i])]) for f in open_points["features"]},
            "example_model": bool(open_points["model"][i]), "example_rule": bool(open_points["rule"][i])}


def at_tie(est, X) -> np.ndarray:
    """Points whose binary linear decision score ``X @ w + b`` lies within twice its float64 rounding
    bound of 0, whichever order the sum is taken in: |fl(s) - s| <= gamma(m + 1) * (|X| @ |w| + |b|),
    gamma(k) = k u / (1 - k u), u = 2^-53 (the bound itself is computed in float64, hence the factor 2 and
    the slack). Elsewhere the sign, and so ``predict`` (``score > 0``), is the same in every batch.

    The score is computed in float64: ``X`` is the encoding's float64 matrix (``runtime.encoding``) and
    scikit-learn's ``decision_function`` is ``X @ coef_.T + intercept_``, which numpy computes in
    float64 for a float64 ``X`` whatever the float width of ``coef_`` (float32 weights are widened
    exactly). Should ``X`` ever be narrower, the unit roundoff is that of the narrower type."""
    w = np.asarray(est.coef_, dtype=np.float64).reshape(-1)
    b = float(np.asarray(getattr(est, "intercept_", 0.0), dtype=np.float64).reshape(-1)[0])
    A = np.asarray(X, dtype=np.float64)
    s = A @ w + b
    k = A.shape[1] + 1
    u = 2.0 ** -53
    try:
        computed = np.result_type(np.asarray(X).dtype, np.asarray(est.coef_).dtype)
        if np.issubdtype(computed, np.floating):
            u = max(u, float(np.finfo(computed).eps) / 2)
    except TypeError:
        pass
    gamma = k * u / (1 - k * u)
    bound = gamma * (np.abs(A) @ np.abs(w) + abs(b)) * (1 + 4 * k * u)
    return ~(np.abs(s) > 2 * bound) | ~np.isfinite(s)


#: the classes whose ``predict`` / ``decision_function`` are scikit-learn's binary linear decision
#: (``classes_[1]`` iff ``X @ coef_.T + intercept_ > 0``): the defining class, found along the MRO
_LINEAR_PREDICT = {("sklearn.linear_model._base", "LinearClassifierMixin"),
                   ("sklearn.linear_model._ridge", "_RidgeClassifierMixin")}   # binary: LinearClassifierMixin's
_LINEAR_SCORE = {("sklearn.linear_model._base", "LinearClassifierMixin"),
                 ("sklearn.discriminant_analysis", "LinearDiscriminantAnalysis")}  # super()'s, re-documented

#: the float64 significand (53 bits) and the normal exponent range
_P, _EMIN, _EMAX = 53, -1022, 1023


def _defined_by(est, name: str):
    for k in type(est).__mro__:
        if name in k.__dict__:
            return (k.__module__, k.__qualname__)
    return None


def exact_decisions(est, X, idx) -> dict:
    """{i: the class ``predict`` returns at row ``i`` of ``X``, or None} for the rows ``idx``: the class
    when the decision score is computed exactly in every summation order, None when not (or when the
    model's ``predict`` is not scikit-learn's binary linear decision).

    Why the class is then determined. ``predict`` is ``classes_[int(score > 0)]`` with ``score =
    X @ coef_.T + intercept_`` (``LinearClassifierMixin``; ``RidgeClassifier`` defers to it for a binary
    target; ``LinearDiscriminantAnalysis.decision_function`` is its ``super()``'s), computed in float64
    (``X`` float64, ``coef_`` / ``intercept_`` float64, float32 or float16, widened exactly). Let the
    terms be t_i = x_i * w_i (rationals: the products of the float values) and b the intercept. If
    every nonzero x_i, w_i and b is a normal float64, and every nonzero term and b is an integer multiple
    of 2^e with -1022 <= e and sum |t_i| + |b| <= 2^(53 + e) <= 2^1023, then every number BLAS forms on
    the way -- a product t_i, a partial sum over any subset of the terms in any association (with or
    without fused multiply-adds, in any register width of at least 53 bits) and the final ``+ b`` -- is
    an integer multiple of 2^e of magnitude at most 2^(53 + e): it is a float64 (an integer k * 2^e with
    |k| <= 2^53 is one, normal when k != 0 as e >= -1022, so no flush-to-zero mode changes it), so each
    operation, whose IEEE result is its exact value rounded, is exact. The computed score is then the
    exact rational sum in every batch and every order, and its sign, hence the class (exactly 0 ->
    ``classes_[0]``), is that of the rational. (The BLAS computes each score as a sum of the products
    x_i * w_i, as ``at_tie``'s bound assumes too; none recombines inputs before multiplying for a
    matrix-vector product.) Any row not meeting the condition gets None and stays at a tie."""
    out = {int(i): None for i in idx}
    if not out:
        return out
    classes = list(getattr(est, "classes_", []))
    coef, icpt = getattr(est, "coef_", None), getattr(est, "intercept_", 0.0)
    A = np.asarray(X)
    if (len(classes) != 2 or _defined_by(est, "predict") not in _LINEAR_PREDICT
            or _defined_by(est, "decision_function") not in _LINEAR_SCORE
            or not isinstance(coef, np.ndarray) or coef.dtype not in _WIDENED or coef.size != A.shape[1]
            or (coef.ndim == 2 and coef.shape[0] != 1) or A.dtype != np.float64):
        return out
    icpt = np.asarray(icpt)
    if icpt.dtype not in _WIDENED or icpt.size != 1:
        return out
    lb = getattr(est, "_label_binarizer", None)          # RidgeClassifier: binary, not multilabel
    if _defined_by(est, "predict")[1] == "_RidgeClassifierMixin" and \
            (lb is None or str(getattr(lb, "y_type_", "")).startswith("multilabel")):
        return out
    w = [float(x) for x in coef.reshape(-1)]
    b = float(icpt.reshape(-1)[0])
    if not _normal(b) or not all(_normal(x) for x in w):
        return out
    wr = [_dyadic(x) for x in w]
    br = _dyadic(b)
    for i in out:
        row = A[i]
        terms = []
        ok = True
        for x, (nw, ew) in zip(row.tolist(), wr):
            if x == 0 or nw == 0:
                continue
            if not _normal(x):
                ok = False
                break
            nx, ex = _dyadic(x)
            terms.append((nx * nw, ex + ew))
        if not ok:
            continue
        if br[0]:
            terms.append(br)
        if not terms:                                      # the score is 0 exactly: every term is 0
            out[i] = classes[0]
            continue
        e = min(ex for _, ex in terms)
        if e < _EMIN or _P + e > _EMAX:
            continue
        ints = [n << (ex - e) for n, ex in terms]         # each term as an integer multiple of 2^e
        if sum(abs(k) for k in ints) > (1 << _P):
            continue
        out[i] = classes[1] if sum(ints) > 0 else classes[0]
    return out


_WIDENED = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16))


def _normal(x: float) -> bool:
    return x == 0 or (math.isfinite(x) and abs(x) >= 2.0 ** _EMIN)


def _dyadic(x: float) -> tuple[int, int]:
    """x = n * 2^e with n an odd integer (or 0, e = 0)."""
    if x == 0:
        return 0, 0
    num, den = float(x).as_integer_ratio()           # den is a power of 2
    e = -(den.bit_length() - 1)
    while num % 2 == 0:
        num //= 2
        e += 1
    return num, e


def _plain_value(v):
    return v.item() if isinstance(v, np.generic) else v
