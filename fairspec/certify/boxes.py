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
  (``lower_b > t``); unfair when some (a, b) has ``lower_a > t`` and ``upper_b < t``. The class
  score of a K-output network (readout ``("argmax", c)``: ``min_{j != c} (y_c - y_j)``, bounded by
  its margins' bounds) has t = 0, and a case is surely not class c only when ``upper_a < 0``: at 0
  the runtime's argmax breaks a tie, for c or not;
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
    float product's error moved into the constant. A layer without a ReLU below (a linear layer inside
    a runtime chain) passes its coefficients on unchanged: ``h = p`` there. Also the input
    coefficients (N, r, n)."""
    N = LO.shape[0]
    W, b, _ = layers[k]
    a = np.broadcast_to(rows, (N,) + rows.shape)             # (N, r, m_k): coefficients on p_k
    const = np.zeros((N, rows.shape[0]))
    for j in range(k, -1, -1):
        W, b, _ = layers[j]
        # a . p_j = (a W_j) . h_{j-1} + a . b_j, the products with their rounding errors
        beta, eb = _mm_right(a, W)                            # (N, r, m_{j-1}) and its error bound
        cb, ecb = _rowdot(a, b)                               # (N, r)
        if j == 0:
            hmax = np.abs(np.maximum(np.abs(LO), np.abs(HI)))
        elif layers[j - 1][2]:
            hmax = np.maximum(bounds[j - 1][1], 0.0)          # h = relu(p) in [0, max(u, 0)]
        else:
            hmax = np.maximum(np.abs(bounds[j - 1][0]), np.abs(bounds[j - 1][1]))     # h = p in [l, u]
        slack, es = _rowdot(eb, hmax)                         # sum_i err_i |h_i|
        const = down(down(down(const + down(cb - ecb)) - up(slack + es)))
        if j == 0:
            return down(_lower_over_box(beta, const, LO, HI)), beta
        if not layers[j - 1][2]:
            a = beta                                          # a linear layer: beta . h_{j-1} = beta . p_{j-1}
            continue
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


def linear_output(layers) -> list:
    """``layers`` with the network's output as a layer of its own: when the last layer has a ReLU (a
    network whose output is ``relu(W h + b)``, as a model's graph may end), an exact identity layer
    (``I h + 0``, no ReLU) is appended, so that layer's ReLU is a hidden one and the output the
    identity's pre-activations, which :func:`box_bounds` reads (as ``models.network`` appends one before
    a two-output head). The same function in exact arithmetic; the runtime's error bound is the original
    layers' (the runtime computes no identity). Otherwise ``layers`` as a list."""
    layers = list(layers)
    if layers and layers[-1][2]:
        m = np.shape(layers[-1][0])[0]
        layers.append((np.eye(m), np.zeros(m), False))
    return layers


def _last(layers) -> int:
    """The index of the output layer (the last); ValueError when it has a ReLU. A layer without a ReLU
    before it (a runtime chain of linear layers, models.network._Chain.own) is a layer like any other,
    its values passed on unclipped."""
    layers = list(layers)
    if not layers or layers[-1][2]:
        raise ValueError("the box bounds read a network's last layer as its output: it must have no ReLU")
    return len(layers) - 1


def box_bounds(layers, LO, HI, linear: bool = False, keep: list | None = None):
    """``(out_lo, out_hi, influence)``: rigorous bounds of every output of the exact network
    ``layers`` (``[(W, b, relu), ...]``) over each box ``[LO[k], HI[k]]`` (arrays (N, n)): outward
    intervals intersected, at every layer after the first, with back-substituted linear bounds
    (:func:`_backsub`); and per box and input the magnitude of the output's linear coefficients
    times the box's width (which input the bounds depend on most: where to split).

    ``linear``: also ``(low, g, nlow, ng)``, the output's linear bounds before the intersection:
    for every x of box k, ``p(x) >= low[k] + sum_i (g[k, i] x_i - min(g[k, i] LO[k, i], g[k, i] HI[k, i]))``
    and ``-p(x) >= nlow[k] + (the same with ng)`` in exact real arithmetic (arrays (N, m) and (N, m, n)):
    what :func:`decide_boxes` cuts a box with.

    ``keep``: a list that gets every layer's pre-activation bounds ``(plo, phi)`` (arrays (N, m_k),
    after the intersection), what :func:`relational_bounds` propagates a difference through.

    The output is the last layer; a layer without a ReLU before it passes its interval on unclipped."""
    LO = np.asarray(LO, dtype=np.float64)
    HI = np.asarray(HI, dtype=np.float64)
    N, n = LO.shape
    bounds = []
    hlo, hhi = LO.T, HI.T
    infl = np.zeros((N, n))
    last = _last(layers)
    for k, (W, b, relu) in enumerate(layers):
        plo, phi = interval_matmul(W, b, hlo, hhi)
        plo, phi = plo.T, phi.T
        if k > 0:
            m = W.shape[0]
            rows = np.concatenate([np.eye(m), -np.eye(m)])
            low, beta = _backsub(layers, bounds, k, rows, LO, HI)
            if k == last and linear:
                lin = (low[:, :m], beta[:, :m], low[:, m:], beta[:, m:])
            plo = np.maximum(plo, low[:, :m])
            phi = np.minimum(phi, -low[:, m:])
            if k == last:
                infl = np.abs(beta).sum(axis=1) * (HI - LO)
        elif k == last:
            infl = np.abs(W).sum(axis=0)[None, :] * (HI - LO)
            if linear:      # one affine layer: its interval bounds are the linear bounds' minima
                G = np.broadcast_to(np.asarray(W, dtype=np.float64), (N,) + np.shape(W))
                lin = (plo, G, -phi, -G)
        bounds.append((plo, phi))
        if keep is not None:
            keep.append((plo, phi))
        if k == last:
            return (plo, phi, infl, lin) if linear else (plo, phi, infl)
        if relu:
            hlo, hhi = np.maximum(plo, 0.0).T, np.maximum(phi, 0.0).T
        else:                   # a linear layer inside the network: its values pass on as they are
            hlo, hhi = plo.T, phi.T
    raise AssertionError("unreachable")


def relu_difference(dl, du, la, ua, lb, ub):
    """Bounds of ``relu(p_b) - relu(p_a)`` elementwise, given ``p_b - p_a`` in ``[dl, du]``,
    ``p_a`` in ``[la, ua]`` and ``p_b`` in ``[lb, ub]`` (ReluDiff's interval rule, Paulsen et al. 2020):
    the difference itself when both are surely active, 0 when both are surely inactive, otherwise
    between ``min(0, dl)`` and ``max(0, du)`` (ReLU is monotone and 1-Lipschitz); always within
    ``[relu(lb) - relu(ua), relu(ub) - relu(la)]``, those differences rounded outward."""
    act = (la >= 0) & (lb >= 0)
    dead = (ua <= 0) & (ub <= 0)
    hl = np.where(act, dl, np.where(dead, 0.0, np.minimum(dl, 0.0)))
    hh = np.where(act, du, np.where(dead, 0.0, np.maximum(du, 0.0)))
    hl = np.maximum(hl, down(np.maximum(lb, 0.0) - np.maximum(ua, 0.0)))
    hh = np.minimum(hh, up(np.maximum(ub, 0.0) - np.maximum(la, 0.0)))
    return hl, hh


def relational_bounds(layers, bounds_a, bounds_b, dlo, dhi):
    """Rigorous bounds ``(lo, hi)`` (arrays (N, m_out)) of the difference ``p_b - p_a`` of the last
    layer's pre-activations of the exact network ``layers`` at two copies of each individual of box k
    (ReluDiff's interval rule, Paulsen et al. 2020, propagated through both copies jointly), where:

    * ``bounds_a`` / ``bounds_b``: each copy's pre-activation bounds per layer over the box (from
      :func:`box_bounds` with ``keep``), so copy a's pre-activations lie in ``bounds_a[j]``;
    * ``dlo, dhi`` (N, n): bounds of the input difference ``x_b - x_a`` (zero where the copies share
      the input: what makes the difference tight when the protected input moves few neurons).

    In exact arithmetic the biases cancel: ``dp_0 = W_0 dx``, ``dp_j = W_j dh_{j-1}``; per ReLU,
    ``dh = relu(p_b) - relu(p_a)`` is ``dp`` when both copies are surely active, 0 when both are surely
    inactive, and otherwise between ``min(0, dp)`` and ``max(0, dp)`` (ReLU is monotone and
    1-Lipschitz); always within ``[relu(l_b) - relu(u_a), relu(u_b) - relu(l_a)]``, and ``dp`` within
    ``[l_b - u_a, u_b - l_a]``. Every product and difference rounded outward. A layer without a ReLU
    before the last (a linear layer inside a runtime chain) passes its difference on: ``dh = dp``."""
    hl, hh = np.asarray(dlo, dtype=np.float64), np.asarray(dhi, dtype=np.float64)
    last = _last(layers)
    for j, (W, b, relu) in enumerate(layers):
        zl, zh = interval_matmul(W, np.zeros_like(b), hl.T, hh.T)
        (la, ua), (lb, ub) = bounds_a[j], bounds_b[j]
        dl = np.maximum(zl.T, down(lb - ua))
        du = np.minimum(zh.T, up(ub - la))
        if j == last:
            return dl, du
        hl, hh = relu_difference(dl, du, la, ua, lb, ub) if relu else (dl, du)
    raise AssertionError("unreachable")


def _slope_max(hl, hh):
    """An upper bound of the logistic's derivative ``s(t) (1 - s(t))`` over each interval
    ``[hl, hh]`` of logits: 1/4 when it holds 0, else its value at the end nearest 0 (the derivative
    falls with |t|), from rigorous bounds of the logistic there."""
    from fairspec.certify.enumerate import sigmoid_bounds

    with np.errstate(invalid="ignore"):
        t = np.where(hl > 0, hl, np.where(hh < 0, -hh, 0.0))
        t = np.nan_to_num(t, nan=0.0)
        sl, su = sigmoid_bounds(t)
        m = up(su * up(1.0 - sl))
    return np.where((hl <= 0) & (hh >= 0), 0.25, np.minimum(m, 0.25))


class BoxDecisions:
    """The outcome of :func:`decide_boxes`: ``status[k]`` 1 (box k proved fair), -1 (proved unfair),
    0 (undecided); ``fair_proof`` / ``unfair_proof`` the Proofs of the boxes with status 1 / -1 (None
    when there are none); ``influence`` (N, n) where to split an undecided box.

    With ``cuts``: ``cut`` (N, 4) int64 rows ``(input, first, last, kind)``: the slice
    ``first <= x_input <= last`` of undecided box k is proved fair (kind 1) or unfair (kind -1) by the
    box's own linear bounds (kind 0: no slice); ``cut_fair_proof`` / ``cut_unfair_proof`` their Proofs."""

    __slots__ = ("status", "fair_proof", "unfair_proof", "influence", "cut", "cut_fair_proof", "cut_unfair_proof")

    def __init__(self, status, fair_proof, unfair_proof, influence, cut=None, cut_fair_proof=None,
                 cut_unfair_proof=None):
        self.status, self.fair_proof, self.unfair_proof, self.influence = status, fair_proof, unfair_proof, influence
        self.cut, self.cut_fair_proof, self.cut_unfair_proof = cut, cut_fair_proof, cut_unfair_proof


def _slice(low, g, LO, HI, E, strict):
    """Along every input i of every box k, the integer values v of a slice where the linear bound
    ``low + g_i (v - a_i)`` (a_i the end of the box where ``g_i x_i`` is least; the other inputs at
    their least contribution, 0) minus E is surely > 0 (``strict``) or >= 0: arrays (N, n) ``first,
    last`` (empty when first > last). Every float step is rounded down; the bound is linear in v, so
    checking the slice's inner end rigorously proves every value of it."""
    low = low[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        pos = g > 0
        neg = g < 0
        a = np.where(pos, LO, HI)
        # the real root of low + g (v - a) = E, then the first integer past it
        root = a + (E - low) / np.where(pos | neg, g, 1.0)
        first = np.where(pos, np.floor(root) + 1, LO)
        last = np.where(neg, np.ceil(root) - 1, HI)
        first = np.clip(np.nan_to_num(first, nan=np.inf), LO, HI + 1)
        last = np.clip(np.nan_to_num(last, nan=-np.inf), LO - 1, HI)

        def ok(v):
            val = down(down(low + down(g * (v - a))) - E)
            return (val > 0) if strict else (val >= 0)

        for _ in range(3):       # the float root may miss by an ulp: move the inner end inward
            inner = np.where(pos, first, last)
            bad = (first <= last) & ~ok(inner)
            first = np.where(bad & pos, first + 1, first)
            last = np.where(bad & neg, last - 1, last)
        inner = np.where(pos, first, last)
        good = (first <= last) & (pos | neg) & ok(inner)
    return np.where(good, first, HI + 1), np.where(good, last, HI)


def _cuts(lins, errors, LO, HI, cols, pairs, complete):
    """The largest slice along one input of each box proved fair (every case surely positive, or
    every case surely not positive) or unfair (case a surely positive and case b surely negative)
    by the boxes' linear bounds: rows ``(input, first, last, kind)`` (see :class:`BoxDecisions`)."""
    N, n = LO.shape
    P, Nle, Nlt = [], [], []
    for (low, g, nlow, ng), E in zip(lins, errors):
        P.append(_slice(low, g, LO, HI, E, True))
        Nle.append(_slice(nlow, ng, LO, HI, E, False))
        Nlt.append(_slice(nlow, ng, LO, HI, E, True))

    def meet(iv):
        return np.max([f for f, _ in iv], axis=0), np.min([t for _, t in iv], axis=0)

    cands = []
    if complete:
        cands += [(meet(P), 1), (meet(Nle), 1)]
    cands += [(meet([P[a], Nlt[b]]), -1) for a, b in pairs]
    best = np.zeros(N)
    cut = np.zeros((N, 4), dtype=np.int64)
    allowed = np.zeros(n, dtype=bool)
    allowed[cols] = True
    width = HI - LO + 1
    rows = np.arange(N)
    for (f, t), kind in cands:
        frac = np.where(allowed[None, :] & (t >= f), (t - f + 1) / width, 0.0)
        i = np.argmax(frac, axis=1)
        fr = frac[rows, i]
        take = fr > best
        best = np.where(take, fr, best)
        cut[take] = np.stack([i, f[rows, i], t[rows, i], np.full(N, kind)], axis=1)[take]
    return cut


def _scores(plo, phi, readout):
    kind, cols = readout[0], list(readout[1:])
    if kind in ("logit", "prob"):
        s_lo, s_hi = plo[:, cols[0]], phi[:, cols[0]]
    elif kind in ("margin", "softmax"):
        i, j = cols
        s_lo, s_hi = down(plo[:, i] - phi[:, j]), up(phi[:, i] - plo[:, j])
    elif kind == "argmax":
        # the class score g_c = min_{j != c} (y_c - y_j) (certify.network.argmax_layers): its margins' bounds
        # combined by the minimum (a lower bound of each margin bounds the minimum below, likewise above)
        c = cols[0]
        others = [j for j in range(plo.shape[1]) if j != c]
        s_lo = np.min([down(plo[:, c] - phi[:, j]) for j in others], axis=0)
        s_hi = np.min([up(phi[:, c] - plo[:, j]) for j in others], axis=0)
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


def _logits(plo, phi, readout):
    """Bounds of the readout's logit (a column, or a margin of two: before any logistic)."""
    kind, cols = readout[0], list(readout[1:])
    if kind in ("logit", "prob"):
        return plo[:, cols[0]], phi[:, cols[0]]
    i, j = cols
    return down(plo[:, i] - phi[:, j]), up(phi[:, i] - plo[:, j])


def _pair_difference(layers, per_layer, xs, cases, a, b, readout):
    """Bounds (N,) of ``score_b - score_a`` in exact arithmetic (the readout's logit or margin), for
    each individual of each box under the protected values of cases a and b (:func:`relational_bounds`;
    the inputs the cases do not set are the same in both copies)."""
    (xla, xha), (xlb, xhb) = xs[a], xs[b]
    dlo = np.zeros_like(xla)
    dhi = np.zeros_like(xla)
    for i in set(cases[a]) | set(cases[b]):
        dlo[:, i] = down(xlb[:, i] - xha[:, i])
        dhi[:, i] = up(xhb[:, i] - xla[:, i])
    dl, du = relational_bounds(layers, per_layer[a], per_layer[b], dlo, dhi)
    kind, cols = readout[0], list(readout[1:])
    if kind in ("logit", "prob"):
        return dl[:, cols[0]], du[:, cols[0]]
    i, j = cols
    return down(dl[:, i] - du[:, j]), up(du[:, i] - dl[:, j])


def decide_boxes(runtime_net, LO, HI, cases: Sequence[dict], pairs: Sequence[tuple[int, int]], *, post: str,
                 errors: Sequence[float], eps=0.0, eps_strict: bool = False, readout=("logit", 0),
                 encoding=None, integer=None, precision: str = "float32", complete: bool, claim_fair: str,
                 claim_unfair: str, cuts: bool = False, keep_boxes: bool = False, relational: bool = True,
                 keep_layers: list | None = None, **detail) -> BoxDecisions:
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
    cuts:     also cut each undecided box (``BoxDecisions.cut``): the largest slice along one integer
              input, not a protected one, that its own linear bounds prove fair or unfair (on every
              individual of the slice: the bound of each case at the slice's inner end, the other
              inputs at their worst, minus E, compared as above). Only for the ``label`` post-condition
              on a ``logit`` readout of raw inputs; elsewhere no cut.
    keep_boxes: each fair Proof lists the boxes it proved (``detail["_boxes"]``: (LO, HI) of those
              boxes, of the slices for the cuts' Proof; not in its JSON), so
              :func:`fairspec.certify.tiling.prove_tiled` can check a tile against it.
    relational: for the ``logit`` / ``prob`` posts on raw inputs, also bound each pair's difference
              through both copies at once (:func:`relational_bounds`: the two copies share every
              input but the protected ones, so neurons the protected input barely moves cancel), widened
              by both copies' E; ``prob`` by the mean value theorem (the logistic's largest slope over
              both copies' logit range times the logit difference). A box is fair when either the
              per-copy bounds or this one meets eps; the per-copy bounds alone decide unfair boxes.
    keep_layers: a list that gets, per case, every layer's pre-activation bounds over the boxes (the
              ``keep`` of :func:`box_bounds`): what a backend's search for a split at a hidden layer
              starts from (:func:`fairspec.backends.layer_splits.layer_split_plans`; certify's check recomputes
              its own).
    """
    from fairspec.certify.exact import threshold_of
    from fairspec.certify.network import as_layers
    from fairspec.certify.proof import _mint

    layers = linear_output(as_layers(runtime_net))        # a final ReLU a hidden layer's (box_bounds reads the last)
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
    raw = encoding is None or all(e.kind == "raw" for e in encoding)
    cut_cols = []
    if cuts and post == "label" and kind == "logit" and raw:
        fixed = {i for c in cases for i in c}
        cut_cols = [i for i in range(LO.shape[1]) if i not in fixed and (integer is None or integer[i])]
        if integer is None:
            cut_cols = []
    lins = []
    # the relational bound (both copies of an individual at once) for a difference post on raw inputs
    rel = relational and post in ("logit", "prob") and raw and kind in ("logit", "prob", "margin", "softmax")
    per_layer, xs, reals = [], [], []
    for case, E in zip(cases, errors):
        clo, chi = LO.copy(), HI.copy()
        for i, v in case.items():
            clo[:, i] = chi[:, i] = v
        xlo, xhi = _encoded(encoding, clo, chi, integer, precision)
        keep = [] if rel or keep_layers is not None else None
        if keep_layers is not None:
            keep_layers.append(keep)
        if cut_cols:
            plo, phi, inf, lin = box_bounds(layers, xlo, xhi, linear=True, keep=keep)
            c = readout[1]
            lins.append((lin[0][:, c], lin[1][:, c, :], lin[2][:, c], lin[3][:, c, :]))
        else:
            plo, phi, inf = box_bounds(layers, xlo, xhi, keep=keep)
        if rel:
            per_layer.append(keep)
            xs.append((xlo, xhi))
            reals.append(_logits(plo, phi, readout))
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
            if kind == "argmax":
                # a class score of exactly 0 is a tie, which the runtime's argmax (the first largest column)
                # may break either way: only a score below 0 is surely another class
                fair &= (highs[a] < t) | (lows[b] > t)
            else:
                fair &= (highs[a] <= t) | (lows[b] > t)
            unfair |= (lows[a] > t) & (highs[b] < t)
    elif post in ("logit", "prob"):
        if post == "prob" and kind not in ("prob", "softmax"):
            lows = [_sigmoid_lo(v) for v in lows]
            highs = [_sigmoid_hi(v) for v in highs]
        e = threshold_of(eps)
        elo, ehi = float_down(e), float_up(e)
        exact = elo == ehi
        moved = {}
        for a, b in pairs:
            dhi = up(highs[a] - lows[b])
            dlo = down(lows[a] - highs[b])
            if rel:
                if (b, a) in moved:             # the difference of (b, a) is minus that of (a, b)
                    rl, ru = -moved[(b, a)][1], -moved[(b, a)][0]
                else:
                    rl, ru = _pair_difference(layers, per_layer, xs, cases, a, b, readout)
                    moved[(a, b)] = (rl, ru)
                # rl <= score_b - score_a <= ru in exact arithmetic: score_a - score_b <= -rl
                Ea, Eb = float(errors[a]), float(errors[b])
                if kind in ("logit", "margin"):
                    top = up(-rl + up(Ea + Eb))                     # runtime logits: each within its E
                    if post == "prob":
                        # the mean value theorem: |s(z) - s(z')| <= max s' over the hull * |z - z'|
                        hl = np.minimum(reals[a][0], reals[b][0]) - up(max(Ea, Eb) + 1e-300)
                        hh = np.maximum(reals[a][1], reals[b][1]) + up(max(Ea, Eb) + 1e-300)
                        top = up(_slope_max(down(hl), up(hh)) * np.maximum(top, 0.0))
                else:                                              # E in probability units
                    hl, hh = np.minimum(reals[a][0], reals[b][0]), np.maximum(reals[a][1], reals[b][1])
                    top = up(up(_slope_max(hl, hh) * np.maximum(up(-rl), 0.0)) + up(Ea + Eb))
                with np.errstate(invalid="ignore"):
                    dhi = np.where(np.isfinite(top) & (top < dhi), top, dhi)
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
    from fairspec.certify.claims import direct_record

    common = dict(post=post, cases=len(cases), runtime_error=max(float(E) for E in errors), readout=list(readout),
                  record=direct_record(post, eps=eps, eps_strict=eps_strict, readout=readout, precision=precision,
                                       relation=(cases, pairs)),
                  **detail)
    kept = {"_boxes": (LO[fair].copy(), HI[fair].copy())} if keep_boxes else {}
    fp = _mint("interval", claim_fair, boxes=int(fair.sum()), side="fair", **kept, **common) if fair.any() else None
    up_ = _mint("interval", claim_unfair, boxes=int(unfair.sum()), side="unfair", **common) if unfair.any() else None
    if not cut_cols:
        return BoxDecisions(status, fp, up_, infl)
    cut = _cuts(lins, [float(E) for E in errors], LO, HI, cut_cols, pairs, complete)
    cut[status != 0, 3] = 0
    cf, cu = cut[:, 3] == 1, cut[:, 3] == -1
    kept = {}
    if keep_boxes:
        # the slices: box k with input cut[k, 0] narrowed to [cut[k, 1], cut[k, 2]]
        rows = np.flatnonzero(cf)
        SL, SH = LO[rows].copy(), HI[rows].copy()
        SL[np.arange(len(rows)), cut[rows, 0]] = cut[rows, 1]
        SH[np.arange(len(rows)), cut[rows, 0]] = cut[rows, 2]
        kept = {"_boxes": (SL, SH)}
    cfp = _mint("interval", claim_fair, boxes=int(cf.sum()), side="fair", cut="a slice along one input, by the box's "
                "linear bounds", **kept, **common) if cf.any() else None
    cup = _mint("interval", claim_unfair, boxes=int(cu.sum()), side="unfair", cut="a slice along one input, by the "
                "box's linear bounds", **common) if cu.any() else None
    return BoxDecisions(status, fp, up_, infl, cut, cfp, cup)
