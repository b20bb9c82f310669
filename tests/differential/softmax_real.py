"""The truth's own REAL softmax (mpmath interval arithmetic, independent of fairspec's certify): the eps-bucket
floor(p_c / eps) of class c's probability of a row of float logits, decided exactly (README: k-discrimination of
``prob(m(x), c)`` of a logit network buckets the real softmax of the runtime's logits, not a float64 rounding).

``p_c = 1 / sum_j exp(y_j - y_c)`` is enclosed by :mod:`mpmath.iv` (every float logit is exact in binary, each
operation rounded outward) at 200 bits, then 800 (then more for logits far apart); where both ends fall in one bucket that is the bucket. A real
softmax is on a bucket boundary ``k * eps`` only where it is rational, i.e. (Lindemann-Weierstrass) where every
logit equals y_c and p_c = 1 / K exactly -- the interval is then the exact point at any precision (1/4 is a float;
1/3 is on no boundary of a decimal eps), so the refinement always decides; None (never seen) if it does not.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

_PRECS = (200, 800)


def _frac(m) -> Fraction:
    from mpmath.libmp import to_rational

    n, d = to_rational(m)
    return Fraction(n, d)


def _nbuckets(eps: Fraction) -> int:
    n = 1 / eps
    return n.numerator // n.denominator + (n.denominator != 1)


def _clip(q: Fraction, eps: Fraction) -> int:
    """kdisc._bucket's rule on an exact rational: floor(q / eps), clipped to the buckets (the last closed)."""
    b = (q / eps).__floor__() if q > 0 else 0
    return min(max(int(b), 0), _nbuckets(eps) - 1)


def enclose(row, c: int, prec: int) -> tuple[Fraction, Fraction]:
    """Exact rationals lo <= p_c <= hi of the real softmax of the float logit ``row``."""
    from mpmath import iv

    old = iv.prec
    iv.prec = prec
    try:
        y = [float(v) for v in row]
        s = iv.mpf(0)
        for v in y:
            s += iv.exp(iv.mpf(v) - iv.mpf(y[int(c)]))
        p = 1 / s
        lo, hi = p._mpi_
        return _frac(lo), _frac(hi)
    finally:
        iv.prec = old


def bucket(row, c: int, eps: Fraction) -> int | None:
    """floor(p_c / eps) of the real softmax (clipped as kdisc._bucket), or None if undecided at 800 bits and at
    the bits a spread of the logits needs (e**-d is about 2**(-1.45 d): 2 d + 200 bits, at most 20,000)."""
    y = [float(v) for v in row]
    spread = max(y) - min(y) if all(np.isfinite(y)) else 0.0
    for prec in _PRECS + (min(20_000, 200 + 2 * int(spread)),):
        lo, hi = enclose(row, c, prec)
        a, b = _clip(lo, eps), _clip(hi, eps)
        if a == b:
            return a
    return None


def buckets(Y: np.ndarray, c: int, eps: Fraction) -> np.ndarray:
    """Per row of the logits ``Y``, the real softmax's bucket of class c (-1 where undecided)."""
    return np.array([(lambda b: -1 if b is None else b)(bucket(r, c, eps)) for r in np.asarray(Y, np.float64)],
                    dtype=np.int64)


def _shifted(ra, rb, c: int) -> bool:
    """Two logit rows one constant apart (the same softmax, exactly): y_j - y_c equal for every j."""
    return all(Fraction(float(u)) - Fraction(float(ra[c])) == Fraction(float(v)) - Fraction(float(rb[c]))
               for u, v in zip(ra, rb))


def difference(Y, c: int, a: int, b: int, prec: int = 200) -> tuple[Fraction, Fraction]:
    """Exact rationals lo <= |p_c(Y[a]) - p_c(Y[b])| <= hi of the real softmax (0 exactly for rows one shift
    apart)."""
    if _shifted(Y[a], Y[b], c):
        return Fraction(0), Fraction(0)
    la, ha = enclose(Y[a], c, prec)
    lb, hb = enclose(Y[b], c, prec)
    lo, hi = la - hb, ha - lb
    if lo >= 0:
        return lo, hi
    if hi <= 0:
        return -hi, -lo
    return Fraction(0), max(-lo, hi)


#: the float64 softmax is within a few ulps of the real one: pairs whose float difference is this close to the
#: largest are enclosed exactly (the others are below the largest's lower end)
_NEAR = 1e-9


def max_difference(Y, Pr, classes, groups) -> tuple[Fraction, Fraction, tuple] | None:
    """Exact rationals L <= max |p_c(x) - p_c(x')| <= U over ``classes`` and the ordered pairs ``groups`` yields
    (point indices, admissible mask), the real softmax of the logits ``Y``; with the pair (c, a, b) whose lower
    end is L. ``Pr``, the float64 softmax, only picks the candidates. None without a pair."""
    Y = np.asarray(Y, np.float64)
    cands, fmax = [], -1.0
    for idx, M in groups:
        if not M.any():
            continue
        for c in classes:
            v = Pr[idx, c]
            F = np.where(M, np.abs(v[:, None] - v[None, :]), -1.0)
            cands.append((c, idx, F))
            fmax = max(fmax, float(F.max()))
    if fmax < 0:
        return None
    L = U = None
    arg = None
    for c, idx, F in cands:
        for i, j in zip(*np.nonzero(F >= fmax - _NEAR)):
            lo, hi = difference(Y, c, int(idx[i]), int(idx[j]))
            if L is None or lo > L:
                L, arg = lo, (c, int(idx[i]), int(idx[j]))
            U = hi if U is None else max(U, hi)
    return L, max(U, L), arg


def status(L: Fraction, U: Fraction, op: str, eps: Fraction) -> str:
    """``|d| op eps`` for every pair, of the largest |d| in [L, U]: holds, violated, or ambiguous (straddling)."""
    if (U <= eps) if op == "<=" else (U < eps):
        return "holds"
    if (L > eps) if op == "<=" else (L >= eps):
        return "violated"
    return "ambiguous"


def pair_breaks(Y, c: int, a: int, b: int, op: str, eps: Fraction) -> bool | None:
    """Does the pair (a, b) break ``|p_c(x) - p_c(x')| op eps`` on the real softmax? None if undecided."""
    lo, hi = difference(Y, c, a, b)
    if (lo > eps) if op == "<=" else (lo >= eps):
        return True
    if (hi <= eps) if op == "<=" else (hi < eps):
        return False
    return None
