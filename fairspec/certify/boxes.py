"""Many boxes of individuals decided at once (FairQuant's refinement of a refuted partition,
issue 24): each box proved *fair* (no individual in it has a counterfactual that breaks the
post-condition on the model's runtime), proved *unfair* (every individual in it has one), or
left undecided.

The counterfactuals are fixed: ``cases`` are assignments of the protected inputs, and for a
*fairness* proof they must be every value the protected inputs may take (the caller's
:func:`fairspec.backends.quantify.protected_cases` with ``complete=True``); ``pairs`` the ordered
(a, b) cases a pair may take. For each case the runtime's score over every box is bounded
rigorously, in one batch (numpy arrays of boxes, not a call per box):

* outward-rounded interval bounds of the exact network (:func:`fairspec.certify.rounding.interval_matmul`
  on every box as a column), intersected layer by layer with linear bounds back-substituted to the
  inputs (CROWN / DeepPoly: each ReLU between two lines on its interval; every product and sum
  with a rigorous error bound moved into the constant), one-hot groups relaxed to [0, 1] each;
* widened by the runtime error bound E of each case over a box containing every box (the
  domain: a bound over a box holds on each of its sub-boxes; :func:`runtime_error_bound`).

Then, per box, exactly as the spec writes the comparison:

* ``label`` (threshold t: 0 for a logit / margin, 1/2 for a probability): fair when, for every
  allowed (a, b), case a is surely not positive (``upper_a <= t``) or case b surely is
  (``lower_b > t``); unfair when some (a, b) has ``lower_a > t`` and ``upper_b < t``;
* ``logit`` / ``prob``: fair when every allowed ``upper_a - lower_b`` is ``<= eps`` (``< eps`` when
  the spec writes ``|...| < eps``), unfair when some ``lower_a - upper_b`` is ``> eps``
  (``>= eps``); differences rounded outward, eps read as written; probabilities of logits by
  rigorous logistic bounds.

One ``interval`` Proof covers the boxes of a batch proved fair, one the boxes proved unfair
(their count in ``detail``; the caller keeps the boxes beside it).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fairspec.certify.rounding import _factor, _neta, float_down, float_up, interval_matmul


def up(x):
    """A float >= the next float above ``x`` (so a rigorous upper bound of a round-to-nearest result):
    ``x + |x| 2^-52 + 2^-1074``, at least one ulp for every finite x, rounded monotonically; cheaper
    than ``nextafter`` on the large arrays of a batch. Infinities stay (the step is capped)."""
    return x + (np.minimum(np.abs(x) * 2.0 ** -52, 1e300) + 2.0 ** -1074)


def down(x):
    """A float <= the next float below ``x`` (see :func:`up`)."""
    return x - (np.minimum(np.abs(x) * 2.0 ** -52, 1e300) + 2.0 ** -1074)

__all__ = ["BoxDecisions", "decide_boxes", "box_bounds"]


def _lower_over_box(A, c, LO, HI):
    """Rigorous lower bound of ``A[k, r] . x + c[k, r]`` over box k: (N, r)."""
    Ap, An = np.maximum(A, 0.0), np.minimum(A, 0.0)
    N, r, n = A.shape
    M = np.concatenate([Ap, An], axis=2)                      # (N, r, 2n)
    X = np.concatenate([LO, HI], axis=1)                      # (N, 2n)
    y = np.einsum("krn,kn->kr", M, X)
    T = np.einsum("krn,kn->kr", np.abs(M), np.abs(X))
    neta = _neta(2 * n)
    err = up(up(_factor(2 * n) * up(T + neta)) + neta)
    return down(down(y - err) + c)


def _backsub(layers, bounds, k, rows, LO, HI):
    """Rigorous lower bounds (N, r) of ``rows[r] . p_k`` over each box, ``p_k`` the pre-activation of
    layer k, by back-substitution (CROWN / DeepPoly): every ReLU below replaced by a linear function
    that bounds it on its interval ``bounds[j]`` from the side the coefficient needs (a lower line
    ``lambda p`` with lambda 0 or 1, an upper line ``s (p - l)`` with ``s >= u / (u - l)``), every
    float product's error moved into the constant. Also the input coefficients (N, r, n)."""
    N = LO.shape[0]
    W, b, _ = layers[k]
    a = np.broadcast_to(rows, (N,) + rows.shape)             # (N, r, m_k): coefficients on p_k
    const = np.zeros((N, rows.shape[0]))
    for j in range(k, -1, -1):
        W, b, _ = layers[j]
        # a . p_j = (a W_j) . h_{j-1} + a . b_j, the products with their rounding errors
        beta, eb = _mm_right(a, W)                            # (N, r, m_{j-1}) and its error bound
        cb, ecb = _rowdot(a, b)                               # (N, r)
        hmax = np.abs(np.maximum(np.abs(LO), np.abs(HI))) if j == 0 else np.maximum(bounds[j - 1][1], 0.0)
        slack, es = _rowdot(eb, hmax)                         # sum_i err_i |h_i|
        const = down(down(down(const + down(cb - ecb)) - up(slack + es)))
        if j == 0:
            return down(_lower_over_box(beta, const, LO, HI)), beta
        l, u = bounds[j - 1]                                  # (N, m): h_{j-1} = relu(p_{j-1})
        l3, u3 = l[:, None, :], u[:, None, :]
        active = l3 >= 0
        dead = (u3 <= 0) & ~active
        unstable = ~active & ~dead
        with np.errstate(divide="ignore", invalid="ignore"):
            s_up = np.where(unstable, up(up(u3 / down(u3 - l3))), 0.0)
        lam = (u3 > -l3).astype(np.float64)
        pos = beta >= 0
        slope = np.where(active, 1.0, np.where(dead, 0.0, np.where(pos, lam, s_up)))
        off = np.where(unstable & ~pos, l3, 0.0)              # the upper line s (p - l)
        # exact: beta_i relu(p_i) >= beta_i slope_i (p_i - off_i); alpha = fl(beta slope) within e
        alpha = beta * slope
        e = up(np.abs(alpha) * 2.0 ** -52 + 2.0 ** -1074)
        w = up(up(np.maximum(np.abs(l3), np.abs(u3))) + np.abs(off))
        t1, et1 = _rowdot3(alpha, off)                        # sum alpha_i off_i
        t2, et2 = _rowdot3(e, w)                              # sum e_i |p_i - off_i|
        const = down(down(const - up(t1 + et1)) - up(t2 + et2))
        a = alpha
    raise AssertionError("unreachable")


def _mm_right(a, W):
    """``(a @ W, err)`` for a batch of row blocks a (N, r, m) and one matrix W (m, n)."""
    m = W.shape[0]
    Y = np.matmul(a, W)
    T = np.matmul(np.abs(a), np.abs(W))
    neta = _neta(m)
    return Y, up(up(_factor(m) * up(T + neta)) + neta)


def _rowdot(a, v):
    """``(a @ v, err)``: a (N, r, m) with v (m,) or (N, m)."""
    m = a.shape[-1]
    if v.ndim == 1:
        y, T = a @ v, np.abs(a) @ np.abs(v)
    else:
        y, T = np.einsum("krm,km->kr", a, v), np.einsum("krm,km->kr", np.abs(a), np.abs(v))
    neta = _neta(m)
    return y, up(up(_factor(m) * up(T + neta)) + neta)


def _rowdot3(a, v):
    """``(sum_i a_i v_i, err)`` over the last axis, elementwise arrays (N, r, m)."""
    m = a.shape[-1]
    y, T = np.sum(a * v, axis=-1), np.sum(np.abs(a * v), axis=-1)
    neta = _neta(m + 1)
    return y, up(up(_factor(m + 1) * up(T + neta)) + neta)


def box_bounds(layers, LO, HI):
    """``(out_lo, out_hi, influence)``: rigorous bounds of every output of the exact network
    ``layers`` (``[(W, b, relu), ...]``) over each box ``[LO[k], HI[k]]`` (arrays (N, n)): outward
    intervals intersected, at every layer after the first, with back-substituted linear bounds
    (:func:`_backsub`); and per box and input the magnitude of the output's linear coefficients
    times the box's width (which input the bounds depend on most: where to split)."""
    LO = np.asarray(LO, dtype=np.float64)
    HI = np.asarray(HI, dtype=np.float64)
    N, n = LO.shape
    bounds = []
    hlo, hhi = LO.T, HI.T
    infl = np.zeros((N, n))
    for k, (W, b, relu) in enumerate(layers):
        plo, phi = interval_matmul(W, b, hlo, hhi)
        plo, phi = plo.T, phi.T
        if k > 0:
            m = W.shape[0]
            rows = np.concatenate([np.eye(m), -np.eye(m)])
            low, beta = _backsub(layers, bounds, k, rows, LO, HI)
            plo = np.maximum(plo, low[:, :m])
            phi = np.minimum(phi, -low[:, m:])
            if not relu:
                infl = np.abs(beta).sum(axis=1) * (HI - LO)
        elif not relu:
            infl = np.abs(W).sum(axis=0)[None, :] * (HI - LO)
        bounds.append((plo, phi))
        if not relu:
            return plo, phi, infl
        hlo, hhi = np.maximum(plo, 0.0).T, np.maximum(phi, 0.0).T
    raise ValueError("the last layer of a network has no ReLU")


class BoxDecisions:
    """The outcome of :func:`decide_boxes`: ``status[k]`` 1 (box k proved fair), -1 (proved unfair),
    0 (undecided); ``fair_proof`` / ``unfair_proof`` the Proofs of the boxes with status 1 / -1 (None
    when there are none); ``influence`` (N, n) where to split an undecided box."""

    __slots__ = ("status", "fair_proof", "unfair_proof", "influence")

    def __init__(self, status, fair_proof, unfair_proof, influence):
        self.status, self.fair_proof, self.unfair_proof, self.influence = status, fair_proof, unfair_proof, influence


def _scores(plo, phi, readout):
    kind, cols = readout[0], list(readout[1:])
    if kind in ("logit", "prob"):
        s_lo, s_hi = plo[:, cols[0]], phi[:, cols[0]]
    elif kind in ("margin", "softmax"):
        i, j = cols
        s_lo, s_hi = down(plo[:, i] - phi[:, j]), up(phi[:, i] - plo[:, j])
    else:
        raise ValueError(f"readout {kind!r} is not bounded box by box")
    if kind in ("prob", "softmax"):
        s_lo, s_hi = _sigmoid_lo(s_lo), _sigmoid_hi(s_hi)
    return s_lo, s_hi


def _sigmoid_lo(z):
    from fairspec.certify.enumerate import sigmoid_bounds

    return np.where(np.isneginf(z), 0.0, sigmoid_bounds(np.where(np.isneginf(z), 0.0, z))[0])


def _sigmoid_hi(z):
    from fairspec.certify.enumerate import sigmoid_bounds

    return np.where(np.isposinf(z), 1.0, sigmoid_bounds(np.where(np.isposinf(z), 0.0, z))[1])


def _encoded(encoding, LO, HI, integer, precision):
    if encoding is None or all(e.kind == "raw" for e in encoding):
        return LO, HI
    from fairspec.certify.network import _encoded_box_and_error

    XLO, XHI = np.empty_like(LO), np.empty_like(HI)
    for k in range(LO.shape[0]):
        XLO[k], XHI[k], _ = _encoded_box_and_error(encoding, LO[k], HI[k], integer, precision)
    return XLO, XHI


def decide_boxes(runtime_net, LO, HI, cases: Sequence[dict], pairs: Sequence[tuple[int, int]], *, post: str,
                 errors: Sequence[float], eps=0.0, eps_strict: bool = False, readout=("logit", 0),
                 encoding=None, integer=None, precision: str = "float32", complete: bool, claim_fair: str,
                 claim_unfair: str, **detail) -> BoxDecisions:
    """Decide the boxes ``[LO[k], HI[k]]`` (model inputs, (N, n)) as the module docstring says.

    cases:    ``{input: value}`` assignments of the protected inputs; ``pairs`` the allowed (a, b).
    errors:   per case, the runtime error bound E over a box containing every box (the caller's
              :func:`fairspec.certify.network.runtime_error_bound` over the domain, in the
              readout's units), added outward to every bound.
    encoding: the runtime's input encoding (:class:`fairspec.certify.network.InputEncoding` per
              input; None: raw inputs); each box is encoded exactly, outward, as
              :func:`fairspec.certify.network.score_interval` does.
    complete: ``cases`` are every value the protected inputs may take (else no box is proved fair:
              a case left out could break it).
    """
    from fairspec.certify.exact import threshold_of
    from fairspec.certify.network import as_layers
    from fairspec.certify.proof import _mint

    layers = as_layers(runtime_net)
    LO = np.asarray(LO, dtype=np.float64)
    HI = np.asarray(HI, dtype=np.float64)
    N = LO.shape[0]
    status = np.zeros(N, dtype=np.int8)
    if N == 0 or not pairs:
        return BoxDecisions(status, None, None, np.zeros(LO.shape))
    kind = readout[0]
    if post == "logit" and kind in ("prob", "softmax"):
        return BoxDecisions(status, None, None, np.zeros(LO.shape))
    lows, highs = [], []
    infl = np.zeros(LO.shape)
    for case, E in zip(cases, errors):
        clo, chi = LO.copy(), HI.copy()
        for i, v in case.items():
            clo[:, i] = chi[:, i] = v
        xlo, xhi = _encoded(encoding, clo, chi, integer, precision)
        plo, phi, inf = box_bounds(layers, xlo, xhi)
        infl += inf
        s_lo, s_hi = _scores(plo, phi, readout)
        E = float(E)
        if not (E >= 0):
            raise ValueError("the runtime error bound must be >= 0")
        lows.append(down(s_lo - E))
        highs.append(up(s_hi + E))
    fair = np.ones(N, dtype=bool)
    unfair = np.zeros(N, dtype=bool)
    if post == "label":
        t = 0.5 if kind in ("prob", "softmax") else 0.0
        for a, b in pairs:
            fair &= (highs[a] <= t) | (lows[b] > t)
            unfair |= (lows[a] > t) & (highs[b] < t)
    elif post in ("logit", "prob"):
        if post == "prob" and kind not in ("prob", "softmax"):
            lows = [_sigmoid_lo(v) for v in lows]
            highs = [_sigmoid_hi(v) for v in highs]
        e = threshold_of(eps)
        elo, ehi = float_down(e), float_up(e)
        exact = elo == ehi
        for a, b in pairs:
            dhi = up(highs[a] - lows[b])
            dlo = down(lows[a] - highs[b])
            if eps_strict:        # fair: |...| < eps; a violation is >= eps
                fair &= dhi < elo
                unfair |= (dlo >= ehi) if exact else (dlo > ehi)
            else:                 # fair: |...| <= eps; a violation is > eps
                fair &= (dhi <= elo) if exact else (dhi < elo)
                unfair |= dlo > ehi
    else:
        raise ValueError(f"unknown post-condition {post!r}")
    with np.errstate(invalid="ignore"):
        fair &= np.all([np.isfinite(v) for v in lows + highs], axis=0)
    if not complete:
        fair[:] = False
    unfair &= ~fair
    status[fair] = 1
    status[unfair] = -1
    common = dict(post=post, cases=len(cases), runtime_error=max(float(E) for E in errors), readout=list(readout),
                  **detail)
    fp = _mint("interval", claim_fair, boxes=int(fair.sum()), **common) if fair.any() else None
    up_ = _mint("interval", claim_unfair, boxes=int(unfair.sum()), **common) if unfair.any() else None
    return BoxDecisions(status, fp, up_, infl)
