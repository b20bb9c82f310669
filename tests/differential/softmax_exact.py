"""Session 34: the exact truth of ``|prob(m(x), c) - prob(m(x'), c)| op eps`` on a network whose output
holds logits (the multiclass family's logit heads).

README ('Multiclass'): ``prob(m(x), c)`` of logits is the REAL softmax of the runtime's logits. The truth
here computes it independently of fairspec (neither its float64 readout nor certify's rational bounds):
p_c(y) = 1 / sum_j exp(y_j - y_c) in mpmath at PREC bits, the exponents y_j - y_c exact (float32 /
float64 logits differ exactly at that precision) and summed in sorted order, so two points whose
logits agree up to a shift and an order of the other columns get the very same number (their real
difference is exactly 0). Each probability is then a multiple of 2^-PREC within one unit of the
real one (``ULPS`` units for a difference): a difference that close to eps is left undecided
(``ambiguous``), which never happened in the runs (a real difference of two such softmaxes equal to
a decimal eps other than 0 would be a transcendental coincidence).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .core import exact

PREC = 400                 # bits
ULPS = 4                   # a difference of two probabilities is within this many 2^-PREC of the real one


def class_prob_units(Y: np.ndarray, c: int) -> list[int]:
    """Per point, floor(p_c * 2^PREC) of the real softmax of its logits (row of ``Y``, each entry read
    exactly as the float it is)."""
    import mpmath

    out = []
    with mpmath.workprec(PREC + 64):
        scale = mpmath.mpf(2) ** PREC
        for row in np.asarray(Y, dtype=np.float64):
            yc = mpmath.mpf(float(row[c]))
            exps = sorted(mpmath.mpf(float(v)) - yc for v in row)       # exact at this precision
            s = mpmath.fsum(mpmath.exp(e) for e in exps)
            out.append(int(mpmath.floor(scale / s)))
    return out


def _decide(D: int, op: str, eps: str) -> str:
    """``D`` (units of 2^-PREC, the real difference within ULPS of it) against ``op eps``: the status of one
    difference, 'violated' / 'holds' / 'ambiguous'."""
    E = exact(eps) * 2 ** PREC
    if D == 0 and E == 0:
        # the same number twice: logits equal up to a shift and an order (the real difference is 0)
        return "violated" if op == "<" else "holds"
    if D - ULPS > E:
        return "violated"
    if D + ULPS < E:
        return "holds"
    return "ambiguous"


def diff_truth(U: list[int], P, ps, op: str, eps: str, pair_groups, admissible):
    """(status, (largest difference as a Fraction, a, b) or None, pairs) over the admissible pairs, the
    difference of the real softmaxes (``class_prob_units``): 'ambiguous' when the largest lies within the
    units' rounding of eps."""
    best, n = None, 0
    for idx in pair_groups(P, ps):
        M = admissible(P, idx, ps)
        n += int(M.sum())
        if not M.any():
            continue
        v = np.array([U[i] for i in idx], dtype=object)
        D = np.abs(v[:, None] - v[None, :])
        D = np.where(M, D, -1)
        a, b = np.unravel_index(int(np.argmax(D)), D.shape)
        d = int(D[a, b])
        if best is None or d > best[0]:
            best = (d, int(idx[a]), int(idx[b]))
    if best is None:
        return "holds", None, n
    status = _decide(best[0], op, eps)
    return status, (Fraction(best[0], 2 ** PREC), best[1], best[2]), n


SLACK = Fraction(ULPS, 2 ** PREC)


def witness_check(base_check, U: list[int], fs, op: str, eps: str):
    """The network checker's structural checks (domain point, pre-condition), then the real softmax
    difference of the pair must break ``op eps`` (an ambiguous difference is taken in fairspec's favour)."""
    radix = [f.size for f in fs]
    offs = [f.lo if f.kind == "int" else 0 for f in fs]

    def check(w):
        msg = base_check(w)
        if msg is not None and "difference" not in msg:
            return msg
        idx = []
        for side in ("features", "features_prime"):
            i = 0
            for f, r, o in zip(fs, radix, offs):
                i = i * r + (f.read(w[side][f.name]) - o)
            idx.append(i)
        st = _decide(abs(U[idx[0]] - U[idx[1]]), op, eps)
        if st == "holds":
            return (f"the witness pair's real softmax difference {float(Fraction(abs(U[idx[0]] - U[idx[1]]), 2 ** PREC))!r}"
                    f" does not break {op} {eps}")
        return None

    return check
