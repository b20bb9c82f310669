"""Enumeration proofs: the caller evaluated the model's own runtime on every point / pair of a
finite domain; certify makes every comparison itself, exactly as the spec writes it.

The property at element ``i`` is a disjunction of :class:`Check` s (``lhs[i] - minus[i] op rhs``):
it holds at ``i`` when at least one check does. Comparisons are exact: float outputs are read
bit for bit, the threshold as written (``"0.41"`` is 41/100), a difference ``lhs - minus`` of two
runtime outputs is the exact real difference (decided by floats where their rigorous error
leaves no doubt, in exact rationals for the few elements near the threshold). A NaN output
satisfies no check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple, Sequence

import numpy as np

from fairspec.certify.exact import OPS, _cmp, threshold_of
from fairspec.certify.proof import Proof, _mint
from fairspec.certify.rounding import down, float_down, float_up, up

__all__ = ["Check", "SigmoidCheck", "IntervalCheck", "softmax_class_bounds", "softmax_check", "Enumerated", "by_enumeration", "compare_exact", "pair_checks",
           "sigmoid_bounds", "KEnumerated", "kdisc_by_enumeration", "kdisc_buckets", "Counted", "count_individuals"]


@dataclass(frozen=True, eq=False)
class Check:
    """``lhs - minus op rhs`` elementwise. ``lhs``/``minus``: runtime outputs (arrays, read
    exactly); ``rhs``: a threshold as the spec writes it (str / Fraction / int / float literal,
    see :func:`fairspec.certify.exact.threshold_of`) or an array of exact floats."""

    lhs: object
    op: str
    rhs: object = 0
    minus: object = None

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"unknown comparison {self.op!r}")


@dataclass(frozen=True, eq=False)
class SigmoidCheck:
    """``sigmoid(lhs) - sigmoid(minus) op rhs`` elementwise, ``sigmoid`` the real logistic function
    of runtime logits (a ``prob`` post-condition on a model whose score is a logit). No rational
    arithmetic decides it: certify bounds both logistics rigorously (:func:`sigmoid_bounds`) and an
    element is decided only when the bounds leave no doubt (or ``lhs == minus``: a difference of
    exactly 0). :meth:`decide` gives ``(fair, violated)``; an element in neither is undecided and
    counts as not fair in :func:`by_enumeration`. ``rounded``: the probability is a float the library
    computes from the logit (scikit-learn's ``predict_proba``, scipy's ``expit``), within the bounds
    but not strictly increasing (``expit(20)`` and ``expit(20 + 2**-48)`` are one float): only the
    bounds and equal logits decide, never the sign of ``lhs - minus`` alone."""

    lhs: object
    op: str
    rhs: object
    minus: object
    rounded: bool = False

    def __post_init__(self):
        if self.op not in ("<", "<="):
            raise ValueError(f"a sigmoid difference is compared by < or <=, not {self.op!r}")

    def decide(self) -> tuple[np.ndarray, np.ndarray]:
        a = _as_array(self.lhs).astype(np.float64)
        b = _as_array(self.minus).astype(np.float64)
        if a.shape != b.shape:
            raise ValueError(f"lhs has {a.shape[0]} entries, minus {b.shape[0]}")
        t = threshold_of(self.rhs)
        tlo, thi = float_down(t), float_up(t)
        alo, ahi = sigmoid_bounds(a)
        blo, bhi = sigmoid_bounds(b)
        with np.errstate(invalid="ignore"):
            dhi = up(ahi - blo)
            dlo = down(alo - bhi)
            fair = dhi < tlo
            bad = dlo > thi
            if self.op == "<=":
                fair |= dhi <= tlo if tlo == thi else np.zeros_like(fair)
            else:
                bad |= dlo >= thi if tlo == thi else np.zeros_like(bad)
        same = (a == b) & np.isfinite(a)
        zero_fair = _cmp(Fraction(0), self.op, t)
        fair = np.where(same, zero_fair, fair & np.isfinite(dhi))
        bad = np.where(same, not zero_fair, bad & np.isfinite(dlo))
        if self.rounded:
            return fair, bad
        # the logistic is strictly increasing: the sign of the difference is the sign of a - b, exactly
        below = (a < b) & np.isfinite(a) & np.isfinite(b)          # difference < 0
        above = (a > b) & np.isfinite(a) & np.isfinite(b)          # difference > 0
        if t > 0:
            fair |= below
        elif t == 0:
            fair = np.where(below, True, np.where(above, False, fair))
            bad = np.where(above, True, np.where(below, False, bad))
        return fair, bad


def sigmoid_bounds(z) -> tuple[np.ndarray, np.ndarray]:
    """Rigorous elementwise bounds ``lo <= 1 / (1 + exp(-z)) <= hi`` for float logits ``z`` (the
    libm/numpy ``exp`` is within a few ulps; a relative margin of 2**-40 covers it, as
    :func:`fairspec.certify.rounding.sigmoid_down`). NaN gives NaN bounds."""
    z = np.asarray(z, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(-np.abs(z))
        s = np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    lo = np.maximum(0.0, s * (1.0 - 2.0 ** -40) - 2.0 ** -1000)
    hi = np.minimum(1.0, s * (1.0 + 2.0 ** -40) + 2.0 ** -1000)
    return np.where(np.isnan(z), np.nan, lo), np.where(np.isnan(z), np.nan, hi)


def softmax_class_bounds(Y, c: int) -> tuple[np.ndarray, np.ndarray]:
    """Rigorous elementwise bounds ``lo <= p_c <= hi`` of the REAL softmax's column ``c`` of float logit
    rows ``Y`` (n, K) (README: ``prob(m(x), c)`` of a network whose runtime outputs logits); one column
    ``z`` is the logistic, ``[1 - p, p]``: the rows ``[0, z]``. ``p_c = 1 / (1 + sum_{j != c} exp(d_j))``
    with ``d_j = y_j - y_c`` rounded outward, ``exp`` within a relative 2**-40 (as :func:`sigmoid_bounds`),
    the sum and the last division with their own rounding counted. A row with a NaN gives NaN bounds."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y.reshape(-1, 1)
    if Y.shape[1] == 1:
        Y = np.concatenate([np.zeros_like(Y), Y], axis=1)
    n, K = Y.shape
    if not 0 <= int(c) < K:
        raise ValueError(f"class {c} of {K} columns")
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        d = Y - Y[:, [c]]                        # one rounding each: the real d_j lies within an ulp
        dlo, dhi = down(d), up(d)
        e_lo = np.exp(dlo) * (1.0 - 2.0 ** -40)
        e_hi = np.exp(dhi) * (1.0 + 2.0 ** -40)
        e_lo[:, c] = 0.0
        e_hi[:, c] = 0.0
        s_lo = e_lo.sum(axis=1) * (1.0 - (K + 2) * 2.0 ** -52)
        s_hi = e_hi.sum(axis=1) * (1.0 + (K + 2) * 2.0 ** -52)
        hi = np.where(np.isfinite(s_lo) & (s_lo > 0), np.minimum(1.0, (1.0 / (1.0 + s_lo)) * (1.0 + 2.0 ** -40)), 1.0)
        lo = np.where(np.isfinite(s_hi), np.maximum(0.0, (1.0 / (1.0 + s_hi)) * (1.0 - 2.0 ** -40) - 2.0 ** -1000),
                      0.0)
    bad = np.isnan(Y).any(axis=1)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


@dataclass(frozen=True, eq=False)
class IntervalCheck:
    """``u - v op rhs`` elementwise for reals known only by rigorous bounds ``u in [lhs, lhs_hi]``,
    ``v in [minus, minus_hi]`` (``<`` / ``<=``), as :class:`SigmoidCheck` decides a logistic: an element is
    fair / violated only when the bounds leave no doubt; ``same``: ``u == v`` exactly (a difference of 0);
    ``below`` / ``above``: ``u < v`` / ``u > v`` known exactly (a strictly monotone function of ordered
    arguments). :meth:`decide` gives ``(fair, violated)``; an element in neither is undecided."""

    lhs: object
    lhs_hi: object
    op: str
    rhs: object
    minus: object
    minus_hi: object
    same: object = None
    below: object = None
    above: object = None

    def __post_init__(self):
        if self.op not in ("<", "<="):
            raise ValueError(f"a bounded difference is compared by < or <=, not {self.op!r}")

    def decide(self) -> tuple[np.ndarray, np.ndarray]:
        alo, ahi = (_as_array(v).astype(np.float64) for v in (self.lhs, self.lhs_hi))
        blo, bhi = (_as_array(v).astype(np.float64) for v in (self.minus, self.minus_hi))
        n = alo.shape[0]
        if not (ahi.shape[0] == blo.shape[0] == bhi.shape[0] == n):
            raise ValueError("the bounds cover different numbers of elements")
        t = threshold_of(self.rhs)
        tlo, thi = float_down(t), float_up(t)
        with np.errstate(invalid="ignore"):
            dhi = up(ahi - blo)
            dlo = down(alo - bhi)
            fair = np.isfinite(dhi) & (dhi < tlo)
            bad = np.isfinite(dlo) & (dlo > thi)
            if tlo == thi:
                if self.op == "<=":
                    fair |= np.isfinite(dhi) & (dhi <= tlo)
                else:
                    bad |= np.isfinite(dlo) & (dlo >= thi)
        mask = lambda v: np.zeros(n, dtype=bool) if v is None else _as_array(v).astype(bool)
        same, below, above = mask(self.same), mask(self.below), mask(self.above)
        if t > 0:
            fair |= below
        elif t == 0:
            fair = np.where(below, True, fair)
            bad = np.where(below, False, bad)
            fair = np.where(above, False, fair)
            bad = np.where(above, True, bad)
        zero_fair = _cmp(Fraction(0), self.op, t)
        fair = np.where(same, zero_fair, fair)
        bad = np.where(same, not zero_fair, bad)
        return fair & ~bad, bad


def softmax_check(Ya, Yb, c: int, op: str, eps) -> IntervalCheck:
    """``p_c(a) - p_c(b) op eps`` for the REAL softmax (:func:`softmax_class_bounds`) of the float logit rows
    ``Ya``, ``Yb`` (n, K; one column: the logistic), as an :class:`IntervalCheck`: equal rows differ by
    exactly 0, and where every ``y_j - y_c`` of one row lies strictly below (above) the other's (each a
    float subtraction, one rounding, so strictly ordered floats are strictly ordered reals) ``p_c`` is
    strictly larger (smaller) there."""
    Ya = np.asarray(Ya, dtype=np.float64)
    Yb = np.asarray(Yb, dtype=np.float64)
    Ya = Ya.reshape(-1, 1) if Ya.ndim == 1 else Ya
    Yb = Yb.reshape(-1, 1) if Yb.ndim == 1 else Yb
    alo, ahi = softmax_class_bounds(Ya, c)
    blo, bhi = softmax_class_bounds(Yb, c)
    if Ya.shape[1] == 1:
        Ya = np.concatenate([np.zeros_like(Ya), Ya], axis=1)
        Yb = np.concatenate([np.zeros_like(Yb), Yb], axis=1)
    fin = np.isfinite(Ya).all(axis=1) & np.isfinite(Yb).all(axis=1)
    same = fin & (Ya == Yb).all(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        da = np.delete(Ya - Ya[:, [c]], c, axis=1)
        db = np.delete(Yb - Yb[:, [c]], c, axis=1)
    below = fin & (da > db).all(axis=1)          # p_c(a) < p_c(b)
    above = fin & (da < db).all(axis=1)          # p_c(a) > p_c(b)
    return IntervalCheck(alo, ahi, op, eps, blo, bhi, same, below, above)


class Enumerated(NamedTuple):
    """The outcome of :func:`by_enumeration`: the Proof when every element satisfies the
    property, else the index of the first violating element, how many violate and which
    (``bad``: their indices)."""

    proof: Proof | None
    index: int | None
    violations: int
    bad: np.ndarray | None = None


def _as_array(v) -> np.ndarray:
    a = np.asarray(v)
    if a.dtype == object or a.dtype.kind not in "fiub":
        raise TypeError(f"runtime outputs must be a numeric array, got dtype {a.dtype}")
    return a.reshape(-1)


def _exact_elem(x) -> Fraction | float:
    f = x.item() if hasattr(x, "item") else x
    if isinstance(f, float) and not math.isfinite(f):
        return f
    return Fraction(f)


def compare_exact(lhs, op: str, rhs, minus=None) -> np.ndarray:
    """Boolean array: ``lhs[i] - minus[i] op rhs[i]`` decided exactly (see the module docstring)."""
    a = _as_array(lhs)
    n = a.shape[0]
    m = None if minus is None else _as_array(minus)
    if m is not None and m.shape[0] != n:
        raise ValueError(f"minus has {m.shape[0]} entries, lhs {n}")
    scalar_rhs = np.ndim(rhs) == 0 and not isinstance(rhs, np.ndarray)
    if scalar_rhs:
        t = threshold_of(rhs)
        tf = float(t)
        tlo, thi = float_down(t), float_up(t)
        texact = tlo == thi
        tlo_a, thi_a = np.full(n, tlo), np.full(n, thi)
    else:
        r = _as_array(rhs)
        if r.shape[0] != n:
            raise ValueError(f"rhs has {r.shape[0]} entries, lhs {n}")
        if r.dtype.kind in "iu" and np.any(np.abs(r.astype(np.float64)) >= 2.0 ** 53):
            raise ValueError("integer thresholds beyond 2**53 are not supported")
        tlo_a = thi_a = r.astype(np.float64)
        texact = True
    big_int = lambda x: x.dtype.kind in "iu" and np.any(np.abs(x.astype(np.float64)) >= 2.0 ** 53)
    if big_int(a) or (m is not None and big_int(m)):
        raise ValueError("integer outputs beyond 2**53 are not supported")
    with np.errstate(invalid="ignore", over="ignore"):
        a64 = a.astype(np.float64)
        if m is None:
            dlo = dhi = a64
            dexact = np.ones(n, dtype=bool)
        else:
            d = a64 - m.astype(np.float64)
            dlo, dhi = down(d), up(d)     # the exact difference lies in [dlo, dhi]
            # exact when the float difference loses nothing (TwoSum error term is zero)
            bb = d - a64
            err = (a64 - (d - bb)) + (-m.astype(np.float64) - bb)
            dexact = np.isfinite(d) & (err == 0)
            dlo = np.where(dexact, d, dlo)
            dhi = np.where(dexact, d, dhi)
        finite = np.isfinite(dlo) & np.isfinite(dhi) & np.isfinite(tlo_a) & np.isfinite(thi_a)
        less = finite & (dhi < tlo_a)
        greater = finite & (dlo > thi_a)
        equal = finite & dexact & texact & (dlo == tlo_a)
    sure = less | greater | equal
    out = np.zeros(n, dtype=bool)
    if op == "<":
        out = less.copy()
    elif op == "<=":
        out = less | equal
    elif op == ">":
        out = greater.copy()
    elif op == ">=":
        out = greater | equal
    elif op == "==":
        out = equal.copy()
    elif op == "!=":
        out = less | greater
    for i in np.flatnonzero(~sure):            # the few elements near the threshold: exactly
        x = _exact_elem(a[i])
        if m is not None:
            y = _exact_elem(m[i])
            if isinstance(x, float) or isinstance(y, float):
                x = float(x) - float(y)     # an infinity or NaN is involved
            else:
                x = x - y
        if isinstance(x, float) and math.isnan(x):
            out[i] = False
            continue
        thr = t if scalar_rhs else _exact_elem(r[i])
        if isinstance(thr, float) and math.isnan(thr):
            out[i] = False
            continue
        out[i] = _cmp(x, op, thr)
    return out


def by_enumeration(fair_when: Check | Sequence[Check], *, count: int, claim: str, unit: str = "pairs",
                   **detail) -> Enumerated:
    """An ``enumeration`` Proof that the property holds at each of the ``count`` elements of a finite
    domain, or the first violating index.

    ``fair_when``: one :class:`Check` or a list of them (a disjunction: element ``i`` is fine when
    any check holds at ``i``); every array must have exactly ``count`` entries (the whole domain,
    evaluated on the model's runtime by the caller)."""
    checks = [fair_when] if isinstance(fair_when, (Check, SigmoidCheck, IntervalCheck)) else list(fair_when)
    if not checks:
        raise ValueError("at least one check")
    count = int(count)
    if count < 0:
        raise ValueError("count must be >= 0")
    ok = np.zeros(count, dtype=bool)
    for c in checks:
        for part in (c.lhs, c.minus) + ((c.rhs,) if isinstance(c.rhs, np.ndarray) else ()):
            if part is not None and _as_array(part).shape[0] != count:
                raise ValueError(f"the outputs cover {_as_array(part).shape[0]} elements, the domain has {count}")
        if isinstance(c, (SigmoidCheck, IntervalCheck)):
            ok |= c.decide()[0]
        else:
            ok |= compare_exact(c.lhs, c.op, c.rhs, c.minus)
    bad = np.flatnonzero(~ok)
    if bad.size:
        return Enumerated(None, int(bad[0]), int(bad.size), bad)
    return Enumerated(_mint("enumeration", claim, count=count, unit=unit, **detail), None, 0)


def class_post(post: str) -> str:
    """A class's probability / logit (``class_prob`` / ``class_logit``) is compared as ``prob`` /
    ``logit``; any other post as itself."""
    return {"class_prob": "prob", "class_logit": "logit"}.get(post, post)


def compared_kind(post: str, score_kind: str) -> str:
    """The ``post`` of :func:`pair_checks` for a post-condition on the runtime's scores of kind
    ``score_kind``: :func:`class_post`, and a probability of a runtime that gives logits as
    ``prob-of-logit``."""
    post = class_post(post)
    return "prob-of-logit" if post == "prob" and score_kind == "logit" else post


def pair_checks(post: str, z, z_prime, eps=0, decision_threshold=0, eps_strict: bool = False,
                rounded: bool = False) -> list:
    """The fairness of ordered pairs as checks (see :mod:`fairspec.backends.pair`):

    * ``label``: not (``z > t`` and ``z' <= t``), i.e. ``z <= t`` or ``z' > t`` (``t`` the decision
      threshold of the runtime's score: 0 for a logit, ``"0.5"`` for a probability);
    * ``logit`` / ``prob``: ``z - z' <= eps`` (``z`` the runtime's logit / probability), or
      ``< eps`` when ``eps_strict`` (the spec writes ``|...| < eps``);
    * ``prob-of-logit``: ``sigmoid(z) - sigmoid(z') <= eps`` (``< eps``) for runtime logits
      (a :class:`SigmoidCheck`; ``rounded`` where the probability is the library's float of z);
    * ``class``: ``z - z' <= 0`` for the predicted classes (column indices, small integers: exact),
      so both orders together say ``class(x) == class(x')``.

    Both orders of every pair must be in the enumeration (the measures are directional: a pair
    that breaks the post-condition fails one of its two orders; :func:`ordered_pairs` counts them)."""
    op = "<" if eps_strict else "<="
    if post == "label":
        return [Check(z, "<=", decision_threshold), Check(z_prime, ">", decision_threshold)]
    if post in ("logit", "prob"):
        return [Check(z, op, eps, minus=z_prime)]
    if post == "prob-of-logit":
        return [SigmoidCheck(z, op, eps, z_prime, rounded)]
    if post == "class":
        return [Check(z, "<=", 0, minus=z_prime)]
    raise ValueError(f"unknown post-condition {post!r}")


def ordered_pairs(a, b) -> int:
    """How many ordered pairs ``(x, x')`` break a post-condition, given the comparisons found to break
    it in one order (``(a[k], b[k])``: their points' indices). Every post-condition an individual-fairness
    property states is symmetric (``label`` / ``class`` equality, ``|out(x) - out(x')| op eps``; sema
    refuses a one-sided one, FS501), so ``(x', x)`` breaks it whenever ``(x, x')`` does, while the
    comparisons of :func:`pair_checks` are directional: each breaking pair fails in one order only
    (both, or several class columns, for some). The count is that of the pairs and their reverses,
    each once (``(x, x)`` once)."""
    a = np.asarray(a, dtype=np.int64).reshape(-1)
    b = np.asarray(b, dtype=np.int64).reshape(-1)
    if not a.size:
        return 0
    n = int(max(a.max(), b.max())) + 1
    return int(np.unique(np.concatenate([a * n + b, b * n + a])).size)


# ---------------------------------------------------------------------------------------------
# k-discrimination over a finite domain
# ---------------------------------------------------------------------------------------------


class KEnumerated(NamedTuple):
    """The outcome of :func:`kdisc_by_enumeration`: the Proof when every individual's k satisfies
    the claim; per individual a lower and an upper bound of its k (equal where every
    counterfactual's bucket is decided)."""

    proof: Proof | None
    k_lo: np.ndarray
    k_hi: np.ndarray


def _buckets_exact(p: np.ndarray, eps: Fraction, nb: int) -> np.ndarray:
    """floor(p / eps) clipped to [0, nb - 1] for exact float values p (read bit for bit)."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        q = p / float(eps)
        b = np.floor(q)
        near = ~np.isfinite(q) | (np.abs(q - np.round(q)) <= 1e-7 * np.maximum(1.0, np.abs(q)))
    b = np.where(np.isfinite(b), b, 0.0)
    out = b.astype(np.int64)
    for i in np.flatnonzero(near):
        x = p[i]
        if not math.isfinite(x):
            out[i] = 0 if x < 0 else nb - 1
            continue
        out[i] = math.floor(Fraction(x) / eps)
    out = np.where(p <= 0, 0, out)
    return np.clip(out, 0, nb - 1)


def kdisc_buckets(p, eps) -> np.ndarray:
    """Each probability's bucket as :func:`kdisc_by_enumeration` counts it: ``floor(p / eps)`` in exact
    arithmetic (``eps`` as written, each ``p`` read bit for bit), the last of the ``ceil(1 / eps)``
    buckets closed. A search's pruning that brackets the library's probability in ``[lo, hi]`` knows
    every bucket it can take is between ``kdisc_buckets(lo)`` and ``kdisc_buckets(hi)`` (monotone)."""
    e = threshold_of(eps)
    if e <= 0:
        raise ValueError("eps must be > 0")
    inv = 1 / e
    nb = inv.numerator // inv.denominator + (inv.denominator != 1)
    return _buckets_exact(np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0), e, nb)


def kdisc_by_enumeration(scores, *, K: int, eps, op: str, k: int, logit: bool, claim: str, classes: bool = False,
                         bounds=None, **detail) -> KEnumerated:
    """k-discrimination (HyFair's C_eps with buckets) decided over a finite domain.

    ``scores``: the runtime's outputs on every point, individual-major (individual i's K
    counterfactuals are ``scores[i K : (i + 1) K]``), evaluated by the caller on the model's own
    runtime. A counterfactual's probability is the score itself, or (``logit``) the real logistic
    of the runtime's logit (bounded rigorously; a logit of exactly 0 is 1/2). Its bucket is
    ``floor(p / eps)`` in exact arithmetic (``eps`` as written), the last of the ``ceil(1 / eps)``
    buckets closed; k is the number of distinct buckets of an individual's K counterfactuals.
    The claim is ``k op k_claim`` for every individual (``<`` or ``<=``). A bucket certify cannot
    decide (a logistic within rounding of a bucket boundary) widens that individual's bounds; the
    Proof is made only when every upper bound satisfies the claim. A NaN score takes any bucket.

    ``classes`` (issue 25): the scores are a multiclass model's predicted classes (whole numbers,
    the runtime's own argmax); k is the number of distinct classes among an individual's K
    counterfactuals (``eps`` and ``logit`` unused): integer comparisons, nothing to round.

    ``bounds``: rigorous ``(lo, hi)`` of every point's REAL probability (``prob(m(x), c)`` of a logit network:
    :func:`softmax_class_bounds`); the buckets are those of the bounds, never of the float ``scores`` (fairspec's
    float64 softmax rounds a probability just below a bucket boundary onto it)."""
    if op not in ("<", "<="):
        raise ValueError(f"k-discrimination claims are k < c or k <= c, not {op!r}")
    if classes:
        c = _as_array(scores)
        K = int(K)
        if K < 1 or c.shape[0] % K:
            raise ValueError(f"{c.shape[0]} classes are not whole individuals of K = {K} counterfactuals")
        if c.dtype.kind not in "iu":
            cf = c.astype(np.float64)
            if not np.all(np.isfinite(cf)) or np.any(cf != np.round(cf)):
                raise ValueError("predicted classes must be whole numbers")
            c = cf.astype(np.int64)
        n = c.shape[0] // K
        srt = np.sort(c.reshape(n, K), axis=1)
        kk = (np.count_nonzero(np.diff(srt, axis=1), axis=1) + 1).astype(np.int64) if n else np.zeros(0, np.int64)
        ok = kk < k if op == "<" else kk <= k
        if n and not ok.all():
            return KEnumerated(None, kk, kk.copy())
        proof = _mint("enumeration", claim, count=n, unit="individuals", counterfactuals=K, over="predicted classes",
                      op=op, k=int(k), max_k=int(kk.max()) if n else 0, **detail)
        return KEnumerated(proof, kk, kk.copy())
    s = _as_array(scores).astype(np.float64)
    K = int(K)
    if K < 1 or s.shape[0] % K:
        raise ValueError(f"{s.shape[0]} scores are not whole individuals of K = {K} counterfactuals")
    e = threshold_of(eps)
    if e <= 0:
        raise ValueError("eps must be > 0")
    inv = 1 / e
    nb = inv.numerator // inv.denominator + (inv.denominator != 1)
    n = s.shape[0] // K
    if bounds is not None:
        lo, hi = (np.asarray(b, dtype=np.float64).reshape(-1) for b in bounds)
        s = np.where(np.isnan(lo) | np.isnan(hi), np.nan, s)
        blo, bhi = _buckets_exact(lo, e, nb), _buckets_exact(hi, e, nb)
    elif logit:
        lo, hi = sigmoid_bounds(s)
        half = s == 0.0
        blo = _buckets_exact(np.where(half, 0.5, lo), e, nb)
        bhi = _buckets_exact(np.where(half, 0.5, hi), e, nb)
    else:
        blo = bhi = _buckets_exact(s, e, nb)
    nan = np.isnan(s)
    blo = np.where(nan, 0, blo).reshape(n, K)
    bhi = np.where(nan, nb - 1, bhi).reshape(n, K)
    sure = blo == bhi
    srt = np.sort(np.where(sure, blo, -1), axis=1)
    distinct = np.count_nonzero(np.diff(srt, axis=1), axis=1) + 1
    # distinct decided buckets (the -1 placeholder of undecided entries not counted); at least 1
    has_unsure = ~sure.all(axis=1)
    k_lo = np.where(has_unsure, np.maximum(1, distinct - (srt[:, 0] == -1)), distinct).astype(np.int64)
    k_hi = k_lo.copy()
    for i in np.flatnonzero(has_unsure):
        cover = set()
        for a, b in zip(blo[i], bhi[i]):
            cover.update(range(int(a), int(b) + 1))
        k_hi[i] = min(K, len(cover))
    ok = k_hi < k if op == "<" else k_hi <= k
    if n and not ok.all():
        return KEnumerated(None, k_lo, k_hi)
    proof = _mint("enumeration", claim, count=n, unit="individuals", counterfactuals=K, eps=e, op=op, k=int(k),
                  max_k=int(k_hi.max()) if n else 0, **detail)
    return KEnumerated(proof, k_lo, k_hi)


# ---------------------------------------------------------------------------------------------
# Fair and unfair individuals of a finite box, counted (FairQuant's shares, issue 24)
# ---------------------------------------------------------------------------------------------


class Counted(NamedTuple):
    """The outcome of :func:`count_individuals`: per individual, fair (every allowed pair of its
    counterfactuals meets the post-condition) or unfair (some pair surely breaks it); an individual
    in neither is undecided (a logistic within rounding of the threshold, or ``unsure``). The Proof
    states the counts. ``unsure_unfair``: the ``unsure`` individuals whose scores in this batch break
    it (None without ``unsure``): candidates whose pair the caller may still replay."""

    proof: Proof
    fair: np.ndarray
    unfair: np.ndarray
    unsure_unfair: np.ndarray | None = None


def class_scores_of(outputs: Sequence, readout, post: str = "label", decision_threshold=0) -> list:
    """The runtime's class-``c`` scores (readout ``("argmax", c)``) of each case's output rows (k, K),
    read here by the argmax rule (the first largest column); ValueError for another readout or post,
    rows that are not (k, K) with K >= 2 and 0 <= c < K, or a score whose sign is not the argmax's
    decision (positive iff c is the first largest column)."""
    from fairspec.certify.network import argmax_class_score

    from fairspec.certify.argmax import class_readout

    if class_readout(readout) is None:
        raise ValueError(f"readout {readout!r} is not a class of the runtime's outputs")
    if post != "label" or Fraction(decision_threshold) != 0:
        raise ValueError("a class readout is counted as the label post at 0")
    c = int(readout[1])
    out = []
    for Y in outputs:
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim != 2 or Y.shape[1] < 2 or not 0 <= c < Y.shape[1]:
            raise ValueError(f"class {c} of outputs shaped {Y.shape}: not rows of K >= 2 outputs")
        g = argmax_class_score(Y, c)
        wins = np.argmax(Y, axis=1) == c
        ok = np.isnan(g) | ((g > 0) == wins)
        if not np.all(ok):
            raise ValueError(f"a class-{c} score disagrees with the runtime's argmax")
        out.append(g)
    return out


def count_individuals(scores: Sequence, pairs: Sequence[tuple[int, int]], post: str, *, eps=0,
                      decision_threshold=0, eps_strict: bool = False, claim: str, unsure=None, cases=None,
                      readout=None, rounded: bool = False, decisions: bool = False, **detail) -> Counted:
    """Every individual of a finite set decided on the runtime: ``scores[c][i]`` is the runtime's
    output (evaluated by the caller) for individual ``i`` under counterfactual case ``c`` (every
    value the protected inputs may take), ``pairs`` the allowed ordered (a, b). Each pair is
    compared exactly by :func:`pair_checks` (``post`` as there, ``prob-of-logit`` included); an
    ``enumeration`` Proof of the counts of fair and unfair individuals. ``unsure`` (bool per
    individual): those the caller's runtime may score otherwise in another batch size or order (a
    pair within its rounding of the threshold, not shown exact), counted neither fair nor unfair.
    ``cases``: the ``{input: value}`` assignment of each case, recorded with ``pairs``
    (:func:`fairspec.certify.claims.relation_record`) when given. ``rounded`` (``prob-of-logit``): the
    probability is the library's float of the logit (:class:`SigmoidCheck`'s ``rounded``: decided by the
    logistic's bounds and equal logits only, never by the sign of ``z - z'``, which expit can round
    to one float); the Proof's detail says so.

    ``readout`` ``("argmax", c)`` (the class post's sub-problem of class c): ``scores[k]`` are the
    runtime's K outputs of each individual (rows (n, K)), and certify reads class c from them itself
    (:func:`fairspec.certify.network.argmax_class_score`: positive exactly when c is the first largest
    column, the runtime's argmax), checked again against numpy's argmax on every row; the ``label``
    post at 0 only. The record and the Proof then name the class (``readout``), which
    :func:`fairspec.certify.partitions.combine_partitions` and
    :func:`fairspec.certify.network.prove_class_stable` require of a class part.

    ``decisions``: the scores are the model's own 0/1 decisions (a ``label`` post at 1/2: an argmax's class, a
    library's predict), checked here (every finite value 0 or 1); the record says so (``compared``), which
    certify.partitions accepts for a readout whose own decision threshold is 0 (two logits' margin)."""
    if not pairs:
        raise ValueError("at least one pair of counterfactuals")
    if decisions:
        if post != "label" or readout is not None or Fraction(decision_threshold) != Fraction(1, 2):
            raise ValueError("decisions are a label compared at 1/2")
        for s in scores:
            v = np.asarray(s, dtype=np.float64).reshape(-1)
            if np.any(np.isfinite(v) & (v != 0.0) & (v != 1.0)):
                raise ValueError("a decision that is neither 0 nor 1")
    if readout is not None:
        scores = class_scores_of(scores, readout, post, decision_threshold)
    arrays = [_as_array(s) for s in scores]
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError("every case needs one output per individual")
    fair = np.ones(n, dtype=bool)
    unfair = np.zeros(n, dtype=bool)
    for a, b in pairs:
        checks = pair_checks(post, arrays[a], arrays[b], eps=eps, decision_threshold=decision_threshold,
                             eps_strict=eps_strict, rounded=rounded)
        ok = np.zeros(n, dtype=bool)
        bad = np.ones(n, dtype=bool)
        for c in checks:
            if isinstance(c, SigmoidCheck):
                f, v = c.decide()
                ok |= f
                bad &= v
            else:
                r = compare_exact(c.lhs, c.op, c.rhs, c.minus)
                ok |= r
                bad &= ~r
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(arrays[a].astype(np.float64)) & np.isfinite(arrays[b].astype(np.float64))
        fair &= ok
        unfair |= bad & finite              # a NaN or infinite output: never counted as unfair
    unfair &= ~fair
    if unsure is not None:
        unsure = np.asarray(unsure, dtype=bool).reshape(-1)
        if unsure.shape[0] != n:
            raise ValueError("unsure needs one flag per individual")
        maybe = unfair & unsure
        fair &= ~unsure
        unfair &= ~unsure
        detail = {**detail, "batch_dependent": int(unsure.sum())}
    from fairspec.certify.claims import direct_record

    rec = direct_record(post, eps=eps, eps_strict=eps_strict, decision_threshold=decision_threshold,
                        relation=None if cases is None else (cases, pairs), decisions=decisions)
    if rounded and post == "prob-of-logit":     # the library's float of the logistic, by its bounds
        detail = {**detail, "logistic": "library (bounds only)"}
    if readout is not None:                 # the class it read from the runtime's outputs itself
        # (under a softmax head the outputs are the runtime's own probabilities, whose first largest is its class)
        rec["readout"] = ["argmax", int(readout[1])] + (["softmax"] if len(readout) == 3 else [])
        detail = {**detail, "readout": rec["readout"]}
    proof = _mint("enumeration", claim, count=n, unit="individuals", counterfactuals=len(arrays),
                  fair=int(fair.sum()), unfair=int(unfair.sum()), record=rec, **detail)
    return Counted(proof, fair, unfair, maybe if unsure is not None else None)


def largest_class(rows, first: int) -> int:
    """The class (row of ``rows``: each class's outputs of x and x') whose exact difference is the
    largest, the first such from ``first`` (a class that breaks the claim): a `forall c` pair's
    measure is the largest of its classes' differences (the L-infinity distance), so the witness
    shows that class and the value is its difference."""
    diffs = [abs(Fraction(float(r[0])) - Fraction(float(r[1]))) for r in rows]
    best = max(range(len(diffs)), key=lambda c: (diffs[c], c == first, -c))
    return best if diffs[best] > diffs[first] else first
