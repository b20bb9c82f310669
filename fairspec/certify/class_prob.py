"""One class's softmax probability of a K-output ReLU network, certified over a pair domain
(issue 25: ``|prob(m(x), c) - prob(m(x'), c)| op eps`` with K > 2 beyond enumeration).

The softmax is not piecewise linear, but ``p_c = 1 / (1 + sum_{j != c} exp(d_j))`` with the logit
differences ``d_j = y_j - y_c`` is *decreasing in every d_j*. So rigorous bounds ``[dlo_j, dhi_j]``
of the differences over a box give ``p_c`` in ``[f(dhi), f(dlo)]``, and over a pair of boxes
(``x`` in one, ``x'`` in the other) ``p_c(x) - p_c(x') <= f(dlo(x)) - f(dhi(x'))``.

The branch and bound (:func:`bound_class_prob`) runs **here**, in certify, so the Proof is minted by
the code that computed every bound:

* a node is a box of the feature space (the domain's integers, one-hot groups and bounds); the
  *protected* (free) columns of both sides range over the finite list of their value combinations
  (``combos``, ``admissible[a, b]``: the pair of combinations is allowed, e.g. they differ), the
  *relaxed* columns of ``x'`` over the node's interval widened by their tolerance, every other column
  is shared by ``x`` and ``x'``;
* per combination, the margins ``y_j - y_c`` are bounded by outward-rounded interval arithmetic
  (:func:`fairspec.certify.network.rigorous_ibp`, intersected with the symbolic bounds of
  :func:`~fairspec.certify.network.symbolic_bounds`) on the margin network (the last layer's rows
  ``W_j - W_c``, checked exact in float64), widened by the runtime error bound ``E_j`` of each
  margin (:func:`~fairspec.certify.network.runtime_error_bound`, readout ``("margin", j, c)``, over
  the whole domain: float32 layers, the input encoding);
* ``exp`` is numpy's, within a relative ``2**-40`` (a few ulps: the margin of
  :func:`~fairspec.certify.rounding.sigmoid_down`); the runtime's own softmax evaluation is
  *assumed* within :data:`SOFTMAX_ABS_ERROR` of the exact softmax of its float logits (fairspec's
  float64 softmax of a logit output: ``2**-40``; a softmax the float32 file computes: ``2**-18``,
  ``tests/test_class_prob_bab.py`` measures onnxruntime's and torch's against it);
* a node whose upper bound satisfies the claim (``U op eps``, exactly as written) is a proved leaf;
  a node whose shared columns are a single point is an **enumerated leaf**: the caller's
  ``evaluate`` (the model's runtime, as for :mod:`fairspec.certify.enumerate`) scores every pair of
  combinations (and relaxed values) and certify compares each exactly; any other node is split
  (its widest weighted column; an integer range at its middle, a one-hot group's allowed columns in
  halves).

The node's centre is also scored on the runtime (a probe): a pair that breaks the claim there,
compared exactly, is returned (``violated``; the caller replays it), and under ``maximize`` the
largest difference found is the lower end of [best, certified bound].

Pure numpy and fractions: no solver, no model library.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np

from fairspec.certify.exact import decide, threshold_of
from fairspec.certify.argmax import SOFTMAX_ABS_ERROR   # the one figure (see the docstring)
from fairspec.certify.network import (_encoded_box_and_error, _exact_diff, as_layers, rigorous_ibp,
                                      runtime_error_bound, symbolic_bounds)
from fairspec.certify.rounding import down, interval_matmul, up

__all__ = ["SOFTMAX_ABS_ERROR", "ClassProbQuery", "ClassProbResult", "bound_class_prob", "softmax_bounds",
           "join_class_prob"]

_EXP_REL = 2.0 ** -40
#: tighten the hidden layers' bounds by symbolic bounds (see _Bounder.side; off: on the German 20-32-32-3
#: network it left the bound unchanged and cost a third of the nodes)
SYMBOLIC_HIDDEN = False


def softmax_bounds(dlo, dhi) -> tuple[float, float]:
    """Rigorous ``[lo, hi]`` of ``1 / (1 + sum_j exp(d_j))`` for every ``d`` in the box
    ``[dlo, dhi]`` (monotone decreasing in each ``d_j``)."""
    dlo = np.asarray(dlo, dtype=np.float64)
    dhi = np.asarray(dhi, dtype=np.float64)
    n = dlo.size
    with np.errstate(over="ignore", under="ignore"):
        e_lo = np.exp(dlo) * (1.0 - _EXP_REL)
        e_hi = np.exp(dhi) * (1.0 + _EXP_REL)
        s_lo = float(np.sum(e_lo)) * (1.0 - (n + 2) * 2.0 ** -52)
        s_hi = float(np.sum(e_hi)) * (1.0 + (n + 2) * 2.0 ** -52)
    hi = 1.0 if not math.isfinite(s_lo) or s_lo <= 0 else min(1.0, (1.0 / (1.0 + s_lo)) * (1.0 + _EXP_REL))
    lo = 0.0 if not math.isfinite(s_hi) else max(0.0, (1.0 / (1.0 + s_hi)) * (1.0 - _EXP_REL) - 2.0 ** -1000)
    return lo, hi


@dataclass(frozen=True, eq=False)
class ClassProbQuery:
    """The pair problem of ``|p_c(x) - p_c(x')| op eps`` in feature space (see the module docstring).

    layers:      the runtime's layers ``[(W, b, relu)]`` over the model's inputs, K outputs (logits).
    cls:         the class c.
    encoding:    one :class:`fairspec.certify.network.InputEncoding` per model input (None: raw).
    precision:   the runtime's arithmetic ("float32" ONNX / torch, "float64" scikit-learn).
    head:        "none" (fairspec's float64 softmax of the logits) or "softmax" (the runtime's own).
    lo, hi, integer, onehot_groups: the domain (feature space).
    free:        the protected columns; ``combos`` (V, len(free)) their value combinations and
                 ``admissible`` (V, V) the ordered pairs of combinations allowed.
    relaxed:     ``(i, t)``: ``|x_i - x'_i| <= t`` (integral tolerances on integer columns).
    eps, op:     the claim ``p_c(x) - p_c(x') op eps`` for every admissible ordered pair.
    """

    layers: list
    cls: int
    encoding: object
    precision: str
    head: str
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray
    onehot_groups: tuple
    free: tuple
    combos: np.ndarray
    admissible: np.ndarray
    relaxed: tuple = ()
    eps: object = 0
    op: str = "<="


@dataclass
class ClassProbResult:
    status: str                       # proved | violated | open
    proof: object = None
    pair: tuple | None = None         # (x, x') feature-space points: a violation or the best pair found
    value: float | None = None        # the largest difference found on the runtime (float of the exact one)
    bound: float | None = None        # a certified upper bound of the largest difference (None: none yet)
    reason: str = ""
    stats: dict = field(default_factory=dict)


class _Bounder:
    def __init__(self, q: ClassProbQuery):
        layers = as_layers(q.layers)
        self.q = q
        W, b, relu = layers[-1]
        K = W.shape[0]
        if relu:
            raise ValueError("a ReLU on the output layer is outside the runtime error model of a softmax")
        if not 0 <= q.cls < K or K < 2:
            raise ValueError(f"class {q.cls} of a {K}-output network")
        self.K = K
        c = q.cls
        others = [j for j in range(K) if j != c]
        try:
            Wd = np.stack([_exact_diff(W[j], W[c]) for j in others])
            bd = np.array([float(_exact_diff(np.array([b[j]]), np.array([b[c]]))[0]) for j in others])
            self.mlayers = layers[:-1] + [(Wd, bd, False)]
            self.exact_margins = True
        except ValueError:
            self.mlayers = layers
            self.exact_margins = False
        self.others = others
        self.lo = np.asarray(q.lo, dtype=np.float64)
        self.hi = np.asarray(q.hi, dtype=np.float64)
        self.integer = np.asarray(q.integer, dtype=bool)
        self.groups = tuple(tuple(g) for g in q.onehot_groups)
        # the runtime error of every margin, over the whole domain (every box of the search is inside it)
        self.E = np.array([runtime_error_bound(layers, self.lo, self.hi, encoding=q.encoding,
                                               readout=("margin", j, c), precision=q.precision,
                                               integer=self.integer, onehot_groups=self.groups)
                           for j in others])
        prec = q.precision if q.head == "softmax" else "float64"
        self.delta = SOFTMAX_ABS_ERROR[prec]
        self._zero_b = [np.zeros(W.shape[0]) for W, _, _ in self.mlayers]
        V = q.combos.shape[0]
        self.din = {(a, b): self.input_difference(q.combos[a], q.combos[b])
                    for a in range(V) for b in range(V) if q.admissible[a, b]} if V * V <= 4096 else None

    def side(self, lo, hi):
        """``(P_lo, P_hi, dlo, dhi, ibp)`` over the box: the runtime's p_c, its margins ``y_j - y_c``
        (widened by E) and the exact network's pre-activation bounds; None when the box is empty."""
        q = self.q
        xlo, xhi, _ = _encoded_box_and_error(q.encoding, lo, hi, self.integer, q.precision)
        clip = None
        if SYMBOLIC_HIDDEN and len(self.mlayers) > 2:
            # the hidden pre-activations after the first layer by symbolic bounds (tighter than
            # intervals: more ReLUs stable on both sides, so tighter margins and margin differences)
            clip = {}
            for k in range(1, len(self.mlayers) - 1):
                sub = self.mlayers[:k] + [(self.mlayers[k][0], self.mlayers[k][1], False)]
                sym_k = symbolic_bounds(sub, xlo, xhi)
                if sym_k is None:
                    return None
                for j in range(sym_k[0].shape[0]):
                    clip[(k, j)] = (float(sym_k[0][j]), float(sym_k[1][j]))
        ibp = rigorous_ibp(self.mlayers, xlo, xhi, self.groups, clip=clip)
        if ibp is None:
            return None
        plo, phi = ibp[-1]
        sym = symbolic_bounds(self.mlayers, xlo, xhi)
        if sym is not None:
            plo, phi = np.maximum(plo, sym[0]), np.minimum(phi, sym[1])
        if self.exact_margins:
            dlo, dhi = plo, phi
        else:
            c = self.q.cls
            dlo = down(plo[self.others] - phi[c])
            dhi = up(phi[self.others] - plo[c])
        dlo = down(dlo - self.E)
        dhi = up(dhi + self.E)
        p_lo, p_hi = softmax_bounds(dlo, dhi)
        return (max(0.0, float(down(p_lo - self.delta))), min(1.0, float(up(p_hi + self.delta))), dlo, dhi, ibp)

    def input_difference(self, combo_a, combo_b):
        """Rigorous bounds of the encoded inputs' difference ``enc(x) - enc(x')`` of a pair whose
        protected columns are ``combo_a`` / ``combo_b`` (relaxed columns within their tolerance,
        every other column shared)."""
        q = self.q
        n = self.lo.shape[0]
        dlo, dhi = np.zeros(n), np.zeros(n)
        spans = []
        if q.free:
            spans += [(i, float(a) - float(b), float(a) - float(b)) for i, a, b in zip(q.free, combo_a, combo_b)]
        spans += [(i, -float(t), float(t)) for i, t in q.relaxed]
        for i, a, b in spans:
            e = q.encoding[i] if q.encoding is not None else None
            scale = e.exact()[0] if e is not None else Fraction(1)
            lo_q, hi_q = sorted((scale * Fraction(a), scale * Fraction(b)))
            from fairspec.certify.rounding import float_down, float_up
            dlo[i], dhi[i] = float_down(lo_q), float_up(hi_q)
        return dlo, dhi

    def margin_difference(self, ibp_a, ibp_b, din_lo, din_hi):
        """Rigorous bounds of ``d(x) - d(x')`` (the exact margins) from the input difference and both
        sides' pre-activation bounds (ReluDiff's interval rule: ``relu(u) - relu(u')`` is ``u - u'`` when
        both are active, 0 when both are inactive, else between ``min(0, lo)`` and ``max(0, hi)``; a
        layer with no ReLU, as between the products of a chain of linear layers, passes it on)."""
        L = self.mlayers
        lo, hi = din_lo, din_hi
        for k, (W, b, relu) in enumerate(L):
            z = self._zero_b[k]
            lo, hi = interval_matmul(W, z, lo, hi)
            if not relu:
                continue
            (alo, ahi), (blo, bhi) = ibp_a[k], ibp_b[k]
            both_on = (alo >= 0) & (blo >= 0)
            both_off = (ahi <= 0) & (bhi <= 0)
            glo = np.maximum(np.minimum(lo, 0.0), -np.maximum(bhi, 0.0))
            ghi = np.minimum(np.maximum(hi, 0.0), np.maximum(ahi, 0.0))
            lo = np.where(both_on, lo, np.where(both_off, 0.0, glo))
            hi = np.where(both_on, hi, np.where(both_off, 0.0, ghi))
        if not self.exact_margins:
            c = self.q.cls
            return down(lo[self.others] - hi[c]), up(hi[self.others] - lo[c])
        return lo, hi


def _mean_value_bound(B, sa, sb, Dlo) -> float:
    """An upper bound of ``p_c(x) - p_c(x')`` by the mean value theorem: ``dp_c / dd_j = -p_c p_j``, so
    ``p_c(d) - p_c(d') <= sum_j max(p_c p_j) * max(0, -(d_j - d'_j))`` over the hull of both boxes, and
    (the weights ``p_c p_j`` summing to ``p_c (1 - p_c)``) ``<= max(p_c (1 - p_c)) max_j (-(d_j - d'_j))``."""
    dlo = np.minimum(sa[2], sb[2])
    dhi = np.maximum(sa[3], sb[3])
    pc_hi = softmax_bounds(dlo, dhi)[1]
    K1 = dlo.size
    tot = 0.0
    for j in range(K1):
        neg = float(-Dlo[j])
        if neg <= 0:
            continue
        # p_j = exp(d_j) / (1 + sum_k exp(d_k)) is increasing in d_j and decreasing in the others
        rest_lo = np.delete(dlo, j)
        ex = np.concatenate([[-dhi[j]], down(rest_lo - dhi[j])])
        pj_hi = softmax_bounds(ex, ex)[1]
        g = min(0.25, float(up(pc_hi * pj_hi)) * (1.0 + 2.0 ** -40))
        tot = float(up(tot + float(up(g * neg))))
    # the weights p_c p_j sum to p_c (1 - p_c) <= 1/4: at most that times the largest -(d_j - d'_j)
    pc_lo = softmax_bounds(dhi, dhi)[0]
    pq = 0.25 if pc_lo <= 0.5 <= pc_hi else max(pc_lo * (1.0 - pc_lo), pc_hi * (1.0 - pc_hi))
    pq = min(0.25, pq * (1.0 + 2.0 ** -40))
    neg_max = max(0.0, float(np.max(-Dlo))) if Dlo.size else 0.0
    tot = min(tot, float(up(pq * neg_max)))
    return float(up(tot + 2.0 * B.delta))


def _with_combo(q, lo, hi, combo):
    lo = lo.copy()
    hi = hi.copy()
    if q.free:
        idx = list(q.free)
        lo[idx] = combo
        hi[idx] = combo
    return lo, hi


def _widen(q, dom_lo, dom_hi, lo, hi):
    if not q.relaxed:
        return lo, hi
    lo, hi = lo.copy(), hi.copy()
    for i, t in q.relaxed:
        lo[i] = max(dom_lo[i], lo[i] - t)
        hi[i] = min(dom_hi[i], hi[i] + t)
    return lo, hi


def _node_bound(B: _Bounder, lo, hi):
    """The certified upper bound of p_c(x) - p_c(x') over the node (-inf: no admissible pair): per
    admissible pair of combinations the smaller of the decoupled bound ``P_hi(x) - P_lo(x')`` and the
    mean value bound on the coupled margin differences (:meth:`_Bounder.margin_difference`, widened by
    the runtime error of both sides)."""
    q = B.q
    V = q.combos.shape[0]
    sx, sp = [], []
    for a in range(V):
        l, h = _with_combo(q, lo, hi, q.combos[a])
        s = B.side(l, h)
        sx.append(s)
        l2, h2 = _widen(q, B.lo, B.hi, l, h)
        sp.append(s if (l2 is l) else B.side(l2, h2))
    m = -math.inf
    for a in range(V):
        if sx[a] is None:
            continue
        for b in range(V):
            if not q.admissible[a, b] or sp[b] is None:
                continue
            u = float(up(sx[a][1] - sp[b][0]))
            if B.din is not None and u > m:
                din_lo, din_hi = B.din[(a, b)]
                Dlo, _ = B.margin_difference(sx[a][4], sp[b][4], din_lo, din_hi)
                Dlo = down(Dlo - 2.0 * B.E)
                u = min(u, _mean_value_bound(B, sx[a], sp[b], Dlo))
            m = max(m, u)
    return m


def _split_weights(q: ClassProbQuery, layers) -> np.ndarray:
    W1 = np.abs(np.asarray(layers[0][0], dtype=np.float64))
    col = W1.sum(axis=0)
    if q.encoding is not None:
        col = col * np.array([abs(float(e.exact()[0])) for e in q.encoding])
    return col


def _is_point(q, lo, hi, shared_scalar, shared_groups) -> bool:
    if any(lo[i] != hi[i] for i in shared_scalar):
        return False
    for g in shared_groups:
        if sum(1 for k in g if hi[k] >= 1.0) != 1:
            return False
    return True


def _choose_split(q, lo, hi, w, shared_scalar, shared_groups):
    best, arg = -1.0, None
    for i in shared_scalar:
        if hi[i] > lo[i]:
            s = (hi[i] - lo[i] + (1.0 if q.integer[i] else 0.0)) * w[i]
            if s > best:
                best, arg = s, ("x", i)
    for gi, g in enumerate(shared_groups):
        allowed = [k for k in g if hi[k] >= 1.0]
        if len(allowed) > 1:
            s = float(sum(w[k] for k in allowed))
            if s > best:
                best, arg = s, ("g", gi)
    return arg


def _children(q, lo, hi, arg, shared_groups):
    kind, i = arg
    if kind == "x":
        a, b = lo.copy(), hi.copy()
        c, d = lo.copy(), hi.copy()
        if q.integer[i]:
            m = math.floor((lo[i] + hi[i]) / 2.0)
            b[i], c[i] = float(m), float(m + 1)
        else:
            m = lo[i] + (hi[i] - lo[i]) / 2.0
            if not (lo[i] < m < hi[i]):
                return []
            b[i], c[i] = m, m
        return [(a, b), (c, d)]
    g = shared_groups[i]
    allowed = [k for k in g if hi[k] >= 1.0]
    half = len(allowed) // 2
    out = []
    for part in (allowed[:half], allowed[half:]):
        l, h = lo.copy(), hi.copy()
        for k in g:
            if k not in part:
                h[k] = 0.0
                l[k] = 0.0
        if len(part) == 1:
            l[part[0]] = 1.0
        out.append((l, h))
    return out


def _centre(q, lo, hi, shared_scalar, shared_groups):
    x = lo.copy()
    for i in shared_scalar:
        m = lo[i] + (hi[i] - lo[i]) / 2.0
        x[i] = float(min(hi[i], max(lo[i], round(m)))) if q.integer[i] else m
    for g in shared_groups:
        allowed = [k for k in g if hi[k] >= 1.0]
        for k in g:
            x[k] = 0.0
        if allowed:
            x[allowed[len(allowed) // 2]] = 1.0
    return x


def _relaxed_grid(q, B, x):
    """Every x' relaxed part around the point x (integer tolerances), as offsets rows; None when a
    relaxed column is continuous (no finite grid)."""
    if not q.relaxed:
        return [x]
    axes = []
    for i, t in q.relaxed:
        if not q.integer[i]:
            return None
        lo = max(B.lo[i], x[i] - math.floor(t))
        hi = min(B.hi[i], x[i] + math.floor(t))
        axes.append((i, np.arange(lo, hi + 1.0)))
    out = []
    import itertools

    for vals in itertools.product(*[a for _, a in axes]):
        y = x.copy()
        for (i, _), v in zip(axes, vals):
            y[i] = v
        out.append(y)
    return out


def _score_pairs(q, B, evaluate, x, xps, logits=None):
    """Every admissible pair at the shared point ``x`` (x' over the relaxed points ``xps``) scored on
    the runtime: ``(violating pair or None, best float difference, its pair, its exact difference rounded
    up, undecided)``, compared exactly -- or, with ``logits`` (the runtime's logit rows, whose REAL softmax
    ``p_c`` is: :func:`fairspec.certify.enumerate.softmax_check`), by rigorous bounds of it: a pair breaks
    the claim only where certain, and ``undecided`` says some pair lies within the bounds of eps."""
    from fairspec.certify.enumerate import compare_exact, softmax_check

    V = q.combos.shape[0]
    X = np.array([_with_combo(q, x, x, q.combos[a])[0] for a in range(V)])
    XP = np.array([_with_combo(q, y, y, q.combos[a])[0] for y in xps for a in range(V)])
    P = np.asarray(evaluate(np.vstack([X, XP])), dtype=np.float64)[:, q.cls]
    Y = None if logits is None else np.asarray(logits(np.vstack([X, XP])), dtype=np.float64)
    px, pp = P[:V], P[V:]
    ia, ib = [], []
    for r in range(len(xps)):
        a_idx, b_idx = np.nonzero(q.admissible)
        ia.append(a_idx)
        ib.append(b_idx + r * V)
    ia = np.concatenate(ia) if ia else np.zeros(0, dtype=int)
    ib = np.concatenate(ib) if ib else np.zeros(0, dtype=int)
    if not ia.size:
        return None, -math.inf, None, -math.inf, False
    undecided = False
    if Y is None:
        fair = compare_exact(px[ia], q.op, q.eps, minus=pp[ib])
    else:
        ok, bad = softmax_check(Y[:V][ia], Y[V:][ib], q.cls, q.op, q.eps).decide()
        fair = ~bad
        undecided = bool(np.any(~ok & ~bad))
    d = px[ia] - pp[ib]
    k = int(np.argmax(d))
    best = (X[ia[k]], XP[ib[k]])
    bad = np.flatnonzero(~fair)
    viol = None
    if bad.size:
        j = int(bad[int(np.argmax(d[bad]))])
        viol = (X[ia[j]], XP[ib[j]])
    # the exact maximum: rounding is monotone, so it is the exact difference of a pair whose float
    # difference is the largest (read exactly; one rounding up when there are too many such pairs)
    cand = np.flatnonzero(d == d[k])
    if cand.size <= 256:
        from fairspec.certify.rounding import float_up

        ex = max(Fraction(float(px[ia[i]])) - Fraction(float(pp[ib[i]])) for i in cand)
        d_up = float_up(ex)
    else:
        d_up = float(up(d[k]))
    if Y is not None:               # the real softmax: its bounds' largest upper end
        from fairspec.certify.enumerate import softmax_class_bounds

        lo, hi = softmax_class_bounds(Y, q.cls)
        d_up = max(d_up, float(np.max(up(hi[:V][ia] - lo[V:][ib]))))
    return viol, float(d[k]), best, d_up, undecided


def _in_every_batch(q, x, xps) -> bool:
    """Does the runtime give the rows of the point leaf at ``x`` (every combination, x' over ``xps``) the same
    probabilities in every batch size and order? Where :func:`fairspec.certify.exact_runtime.logits_in_every_order`
    shows every row's layers exact in every order and the probability is read off those logits alone (no softmax
    head of the runtime's own, ``q.head == "none"``: fairspec's softmax of the row, or the real softmax of the
    logits). A softmax the runtime computes may round one row otherwise by its place in the batch: never."""
    from fairspec.certify.exact_runtime import logits_in_every_order

    if q.head != "none":
        return False
    V = q.combos.shape[0]
    rows = [_with_combo(q, y, y, q.combos[a])[0] for y in [x, *xps] for a in range(V)]
    return logits_in_every_order(q.layers, q.encoding, q.precision, np.array(rows)) is not None


def bound_class_prob(q: ClassProbQuery, evaluate: Callable, *, mode: str = "prove", deadline: float | None = None,
                     max_nodes: int = 200_000, tol: float = 1e-6, logits: Callable | None = None) -> ClassProbResult:
    """The certified branch and bound (module docstring). ``evaluate(points) -> (k, K)`` the runtime's
    class probabilities of feature-space points (the caller's model, as for enumeration).
    ``mode``: ``prove`` / ``find`` (stop at the first violation) or ``maximize`` (keep going until the
    largest difference is known within ``tol`` -- or within the runtime error floor ``E/2 + 2 delta`` --
    or the budget ends). ``deadline``: a ``time.monotonic()``
    instant. Returns ``proved`` (with the Proof), ``violated`` (a pair breaking the claim on the
    runtime, compared exactly) or ``open`` (the budget ended; ``bound`` the certified bound so far).
    ``logits(points) -> (k, K)``: the runtime's logits, whose REAL softmax the claim is about (a logit
    network's ``prob(m(x), c)``): an enumerated leaf is then decided by rigorous bounds of it
    (:func:`_score_pairs`), and one whose pair lies within them of eps leaves the search ``open``."""

    t0 = time.monotonic()
    B = _Bounder(q)
    layers = as_layers(q.layers)
    w = _split_weights(q, layers)
    n = B.lo.shape[0]
    free = set(q.free)
    grouped = {k for g in B.groups for k in g}
    shared_groups = [g for g in B.groups if not free.intersection(g)]
    shared_scalar = [i for i in range(n) if i not in free and i not in grouped]
    thr = threshold_of(q.eps)
    stats = {"nodes": 0, "interval_leaves": 0, "point_leaves": 0, "probes": 0,
             "runtime_error": [float(e) for e in B.E], "softmax_error": B.delta}
    best_val, best_pair = -math.inf, None
    point_max = -math.inf            # largest exact-rounded-up difference of an enumerated leaf
    closed_max = -math.inf           # largest bound of a proved leaf
    viol_pair = None                 # maximize: a pair found that breaks the claim
    heap: list = []
    counter = 0

    def done(status, **kw):
        stats["seconds"] = round(time.monotonic() - t0, 4)
        return ClassProbResult(status, stats=stats, value=(best_val if math.isfinite(best_val) else None),
                               **kw)

    def claim_ok(U) -> bool:
        return U == -math.inf or decide(U, q.op, thr)

    # maximize stops once the gap is within the runtime's error floor: the bound of a pair whose margins
    # differ by nothing but the runtime error of both sides (no split can go below it)
    floor = float(up(0.5 * float(np.max(B.E, initial=0.0)) * (1.0 + 1e-6) + 2.0 * B.delta))
    U0 = _node_bound(B, B.lo.copy(), B.hi.copy())
    heapq.heappush(heap, (-U0, counter, B.lo.copy(), B.hi.copy()))
    while heap:
        negU, _, lo, hi = heap[0]
        U = -negU
        if mode == "maximize":
            top = max(U, point_max)
            if U <= best_val or (math.isfinite(best_val) and top - best_val <= max(tol, floor)):
                break
        if deadline is not None and time.monotonic() > deadline or stats["nodes"] >= max_nodes:
            bound = max(U, point_max, best_val, closed_max)
            if viol_pair is not None:
                return done("violated", pair=viol_pair, bound=bound, reason="a pair breaks the claim on the runtime")
            if decide(bound, q.op, thr):          # maximize: the bound reached proves the claim
                stats["interval_leaves"] += len(heap)
                return done("proved", proof=_mint_proof(q, B, stats, bound), bound=bound, pair=best_pair)
            return done("open", bound=bound, pair=best_pair,
                        reason=f"the budget ended after {stats['nodes']:,} nodes with the certified bound "
                               f"{bound:.6g} of the largest difference")
        heapq.heappop(heap)
        stats["nodes"] += 1
        if mode != "maximize" and claim_ok(U):
            stats["interval_leaves"] += 1
            closed_max = max(closed_max, U)
            continue
        point = _is_point(q, lo, hi, shared_scalar, shared_groups)
        x = _centre(q, lo, hi, shared_scalar, shared_groups)
        xps = _relaxed_grid(q, B, x) if point else [x]
        if xps is None:
            xps = [x]
            point = False
        viol, val, pair, val_up, undecided = _score_pairs(q, B, evaluate, x, xps, logits)
        if undecided and point:
            stats["undecided_points"] = stats.get("undecided_points", 0) + 1
        stats["probes"] += 1
        if val > best_val:
            best_val, best_pair = val, pair
        if viol is not None:
            if mode != "maximize":
                return done("violated", pair=viol, reason="a pair breaks the claim on the runtime")
            if viol_pair is None or val >= best_val:
                viol_pair = viol
        if point:
            stats["point_leaves"] += 1
            steady = viol is None and _in_every_batch(q, x, xps)
            if viol is None and not steady:
                # fair in the batch scored, but another batch may round its rows otherwise (README, "Whatever
                # the batch"): only the box's certified bound (runtime error included) holds for every batch
                stats["batch_dependent_points"] = stats.get("batch_dependent_points", 0) + 1
            if math.isfinite(val):
                point_max = max(point_max, val_up if steady or viol is not None else max(val_up, U))
            continue
        arg = _choose_split(q, lo, hi, w, shared_scalar, shared_groups)
        kids = _children(q, lo, hi, arg, shared_groups) if arg is not None else []
        if not kids:                # a continuous column too narrow to halve: no finer bound
            bound = max(U, point_max, best_val, closed_max)
            if viol_pair is not None:
                return done("violated", pair=viol_pair, bound=bound, reason="a pair breaks the claim on the runtime")
            if mode == "maximize" and decide(bound, q.op, thr):
                stats["interval_leaves"] += len(heap) + 1
                return done("proved", proof=_mint_proof(q, B, stats, bound), bound=bound, pair=best_pair)
            return done("open", bound=bound, pair=best_pair,
                        reason="a box too narrow to split further keeps its bound above the threshold")
        for l2, h2 in kids:
            Uk = _node_bound(B, l2, h2)
            if Uk == -math.inf:
                stats["interval_leaves"] += 1
                continue
            counter += 1
            heapq.heappush(heap, (-Uk, counter, l2, h2))
    # the search ended: every leaf proved or enumerated, or (maximize) below the best found
    open_max = -(heap[0][0]) if heap else -math.inf
    bound = max(open_max, point_max, best_val, closed_max)
    stats["interval_leaves"] += len(heap)
    if viol_pair is not None:
        return done("violated", pair=viol_pair, bound=bound, reason="a pair breaks the claim on the runtime")
    if stats.get("undecided_points"):
        return done("open", bound=bound, pair=best_pair,
                    reason=f"{stats['undecided_points']:,} enumerated boxes hold a pair within the rounding of the "
                           f"softmax of the threshold; no exact comparison decides them")
    if mode != "maximize" and stats.get("batch_dependent_points"):
        return done("open", bound=bound, pair=best_pair,
                    reason=f"{stats['batch_dependent_points']:,} enumerated point(s) hold a pair within the runtime's "
                           "rounding error of the threshold, fair in the batch it was scored in; the runtime is not "
                           "shown to score it so in every batch (its layers are not exact in every summation order), "
                           "so whether the property holds depends on how the model is batched")
    if mode != "maximize" or bound == -math.inf or decide(bound, q.op, thr):
        return done("proved", proof=_mint_proof(q, B, stats, bound), bound=bound, pair=best_pair)
    return done("open", bound=bound, pair=best_pair,
                reason=f"the certified bound {bound:.6g} of the largest difference does not meet the threshold")


def _mint_proof(q, B, stats, bound):
    from fairspec.certify.proof import _mint

    return _mint("bab-certificate",
                 f"p_{q.cls}(x) - p_{q.cls}(x') {q.op} {q.eps!s} for every admissible ordered pair "
                 f"(softmax of {B.K} outputs on the runtime)",
                 leaves=stats["interval_leaves"] + stats["point_leaves"],
                 interval_leaves=stats["interval_leaves"], enumerated_leaves=stats["point_leaves"],
                 bound=bound, runtime_error=stats["runtime_error"], softmax_error=B.delta, cls=q.cls)


def join_class_prob(parts: dict, K: int, eps, op: str):
    """One Proof of ``forall c: |p_c(x) - p_c(x')| op eps`` from one bab-certificate per class."""
    from fairspec.certify.proof import Proof, _mint

    if set(parts) != set(range(K)) or not all(isinstance(parts[c], Proof) for c in range(K)):
        return None
    if any(parts[c].method != "bab-certificate" or parts[c].detail.get("cls") != c for c in range(K)):
        return None
    return _mint("bab-certificate", f"|p_c(x) - p_c(x')| {op} {eps!s} for each of the {K} classes c and every "
                                    f"admissible pair",
                 leaves=sum(int(parts[c].detail.get("leaves", 0)) for c in range(K)), classes=K,
                 cases=[parts[c].to_json() for c in range(K)])
