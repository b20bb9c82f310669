"""Sound bounds for all cases at once: interval and linear (CROWN-style) relaxation.

Per copy (x and x'), every pre-activation gets bounds: the first layer exactly
(``z0 = C + A d`` is affine in the offsets), each later layer from linear lower and
upper functions of the offsets carried through the ReLU relaxations (CROWN's lines:
upper ``u (z - l) / (u - l)``, lower ``alpha z`` with alpha 0 or 1 by the larger side),
intersected with plain interval bounds. All of it is batched numpy over the cases.

The PBA objective ``f = tau sigma (g(x) - g(x'))`` is bounded *jointly*: both copies
are back-substituted to linear functions of the same offsets, added, and only then
concretised over the box, so the correlation of the two copies through the shared
offsets is kept (bounding ``min g(x) - max g(x')`` apart would lose it).

The lower bound is sound for the relaxed problem without Eq. (3) (both predictions =
c_i), hence for the real one. ``robust_lower`` bounds ``sigma g`` of one copy
(robustness accuracy for the RB metric).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairspec.backends.pba.twin import TwinCases

__all__ = ["CopyBounds", "copy_bounds", "objective_lower", "robust_lower", "relu_relax"]

_MEM = 3_000_000  # float64 entries of one back-substitution chunk


def relu_relax(l: np.ndarray, u: np.ndarray):
    """(lower slope, upper slope, upper intercept) of the CROWN relaxation of relu on [l, u]."""
    active = l >= 0
    unstable = (l < 0) & (u > 0)
    width = np.where(unstable, u - l, 1.0)
    su = np.where(active, 1.0, np.where(unstable, u / width, 0.0))
    bu = np.where(unstable, -su * l, 0.0)
    sl = np.where(active, 1.0, np.where(unstable, (u >= -l).astype(np.float64), 0.0))
    return sl, su, bu


@dataclass(eq=False)
class CopyBounds:
    """Bounds of every pre-activation of one copy for P cases: lists over layers of (P, n_j)."""

    l: list
    u: list
    relax: list  # per layer (sl, su, bu) or None when the layer has no ReLU

    def unstable(self) -> np.ndarray:
        """(P,) number of unstable ReLUs per case."""
        tot = 0
        for lj, uj, r in zip(self.l, self.u, self.relax):
            if r is not None:
                tot = tot + ((lj < 0) & (uj > 0)).sum(axis=1)
        return np.asarray(tot)

    def take(self, idx) -> "CopyBounds":
        return CopyBounds([a[idx] for a in self.l], [a[idx] for a in self.u],
                          [None if r is None else tuple(x[idx] for x in r) for r in self.relax])


def _weights(tc: TwinCases, j: int):
    layer = tc.layers[j - 1]
    return layer.W, layer.b


def _back(tc: TwinCases, C, relax, Lam, bias, j):
    """Back-substitute ``Lam`` (k, r, n_j), the coefficients of the *output* h_j of layer j,
    down to the offsets: returns (k, r, m) coefficients and the (k, r) constant, valid as a
    lower bound of ``Lam . h_j + bias``."""
    while True:
        r = relax[j]
        if r is not None:
            sl, su, bu = r
            Lp = np.maximum(Lam, 0.0)
            Ln = np.minimum(Lam, 0.0)
            bias = bias + np.einsum("krn,kn->kr", Ln, bu)
            Lam = Lp * sl[:, None, :] + Ln * su[:, None, :]
        if j == 0:
            bias = bias + np.einsum("krn,kn->kr", Lam, C)
            return Lam @ tc.A, bias
        W, b = _weights(tc, j)
        bias = bias + Lam @ b
        Lam = Lam @ W
        j -= 1


def _concretize(Lam, bias, lo, hi):
    return bias + np.einsum("krm,km->kr", np.maximum(Lam, 0.0), lo) + np.einsum("krm,km->kr", np.minimum(Lam, 0.0), hi)


def _wmul(W: np.ndarray, L: np.ndarray) -> np.ndarray:
    """W (n1, n) applied to per-case coefficients L (P, n, m): one GEMM, (P, n1, m)."""
    P, n, m = L.shape
    out = W @ np.ascontiguousarray(L.transpose(1, 0, 2)).reshape(n, P * m)
    return out.reshape(W.shape[0], P, m).transpose(1, 0, 2)


def copy_bounds(tc: TwinCases, C: np.ndarray) -> CopyBounds:
    """Bounds of every pre-activation of the copy with first-layer bias C (P, n0).

    The first layer is exact. Each later layer gets linear lower/upper functions of the
    offsets propagated forward through the ReLU relaxations (``(P, n, m)`` coefficients:
    the offsets are few, so this never builds ``(P, n, n_prev)`` arrays), concretised over
    the box and intersected with interval bounds. For the second layer this is exactly the
    CROWN bound (the first layer is affine in the offsets); deeper layers are bounded
    forward (sound, a little looser than back-substitution). The objective itself is
    back-substituted (:func:`objective_lower`).
    """
    lo, hi = tc.lo, tc.hi
    A = tc.A
    Ap, An = np.maximum(A, 0.0), np.minimum(A, 0.0)
    l0 = C + lo @ Ap.T + hi @ An.T
    u0 = C + hi @ Ap.T + lo @ An.T
    ls, us = [l0], [u0]
    relax = [relu_relax(l0, u0) if tc.relu0 else None]
    # linear bounds of h0 in the offsets: coefficients (P, n, m), constants (P, n)
    if tc.relu0:
        sl, su, bu = relax[0]
        Ll, cl = sl[:, :, None] * A[None], sl * C
        Lu, cu = su[:, :, None] * A[None], su * C + bu
        hl, hh = np.maximum(l0, 0.0), np.maximum(u0, 0.0)
    else:
        Ll = Lu = np.broadcast_to(A[None], (tc.P,) + A.shape)
        cl = cu = C
        hl, hh = l0, u0
    for j in range(1, tc.depth):
        W, b = _weights(tc, j)
        Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
        il = hl @ Wp.T + hh @ Wn.T + b
        iu = hh @ Wp.T + hl @ Wn.T + b
        zLl = _wmul(Wp, Ll) + _wmul(Wn, Lu)
        zcl = cl @ Wp.T + cu @ Wn.T + b
        zLu = _wmul(Wp, Lu) + _wmul(Wn, Ll)
        zcu = cu @ Wp.T + cl @ Wn.T + b
        lj = np.maximum(_concretize(zLl, zcl, lo, hi), il)
        uj = np.minimum(-_concretize(-zLu, -zcu, lo, hi), iu)
        uj = np.maximum(uj, lj)      # guard round-off
        relu = tc.layers[j - 1].relu
        ls.append(lj); us.append(uj)
        if relu:
            r = relu_relax(lj, uj)
            sl, su, bu = r
            Ll, cl = sl[:, :, None] * zLl, sl * zcl
            Lu, cu = su[:, :, None] * zLu, su * zcu + bu
            hl, hh = np.maximum(lj, 0.0), np.maximum(uj, 0.0)
        else:
            r = None
            Ll, cl, Lu, cu = zLl, zcl, zLu, zcu
            hl, hh = lj, uj
        relax.append(r)
    return CopyBounds(ls, us, relax)


# Multipliers of Eq. (3) (both predictions = the true class, ``sigma g >= 0`` on each copy):
# for lam >= 0, ``f - lam_x sigma g(x) - lam_p sigma g(x') <= f`` on the feasible set, so the
# relaxation's lower bound of the left side, for any lam, bounds min f over that set.
LAMBDAS = (0.0, 0.1, 0.3, 1.0, 3.0)


def _grid(lambdas):
    lx, lp = np.meshgrid(np.asarray(lambdas, dtype=np.float64), np.asarray(lambdas, dtype=np.float64))
    return lx.ravel(), lp.ravel()


def joint_lower(tc: TwinCases, bx: CopyBounds, bp: CopyBounds, a: np.ndarray, b: np.ndarray):
    """Lower bounds of ``a g(x) + b g(x')`` for coefficient rows a, b (P, r): the bound (P, r)
    and its linear coefficients on the offsets (P, r, m). Both copies are back-substituted to
    the shared offsets before concretisation."""
    P, r = a.shape
    m = tc.m
    if tc.depth == 1:                    # affine: g = C + A d
        L = (a + b)[:, :, None] * tc.A[0][None, None, :]
        c = a * tc.C[:, :1] + b * tc.Cp[:, :1]
        return _concretize(L, c, tc.lo, tc.hi), L
    last = tc.layers[-1]
    n_last = last.n_in
    out = np.empty((P, r))
    lin = np.empty((P, r, m))
    chunk = max(1, int(_MEM // max(1, 4 * r * max(n_last, tc.A.shape[0]))))
    j = tc.depth - 2
    for s in range(0, P, chunk):
        sl = slice(s, min(P, s + chunk))
        ra = [None if q is None else tuple(x[sl] for x in q) for q in bx.relax]
        rp = [None if q is None else tuple(x[sl] for x in q) for q in bp.relax]
        La, ca = a[sl][:, :, None] * last.W[0][None, None, :], a[sl] * last.b[0]
        Lb, cb = b[sl][:, :, None] * last.W[0][None, None, :], b[sl] * last.b[0]
        L1, c1 = _back(tc, tc.C[sl], ra, La, ca, j)
        L2, c2 = _back(tc, tc.Cp[sl], rp, Lb, cb, j)
        L = L1 + L2
        out[sl] = _concretize(L, c1 + c2, tc.lo[sl], tc.hi[sl])
        lin[sl] = L
    return out, lin


def objective_lower(tc: TwinCases, bx: CopyBounds, bp: CopyBounds, lambdas=LAMBDAS, with_coef: bool = False):
    """(P,) sound lower bound of ``min f``, ``f = tau sigma (g(x) - g(x'))``, over each case's box
    restricted to Eq. (3), the best over the multipliers ``lambdas`` (``(0,)``: Eq. (3) ignored).
    With ``with_coef`` also the offsets' coefficients (P, m) of the best bound and of f's own
    bound (``lambdas[0]`` must then be 0)."""
    coef = tc.tau * tc.sigma
    lx, lp = _grid(lambdas)
    a = coef[:, None] - lx[None, :] * tc.sigma[:, None]
    b = -coef[:, None] - lp[None, :] * tc.sigma[:, None]
    lb, lin = joint_lower(tc, bx, bp, a, b)
    best = np.argmax(lb, axis=1)
    rows = np.arange(tc.P)
    out = lb[rows, best]
    # never looser than the two copies' intervals apart (Eq. (3) ignored)
    gl_x, gu_x = bx.l[-1][:, 0], bx.u[-1][:, 0]
    gl_p, gu_p = bp.l[-1][:, 0], bp.u[-1][:, 0]
    apart = np.where(coef > 0, gl_x - gu_p, gl_p - gu_x) * np.abs(coef)
    out = np.maximum(out, apart)
    if with_coef:     # the best bound's coefficients and those of f alone (lam = 0, the first)
        return out, lin[rows, best], lin[:, 0]
    return out


def robust_lower(tc: TwinCases, b: CopyBounds) -> np.ndarray:
    """(P,) lower bound of ``sigma g`` of one copy (its last-layer bounds are CROWN already)."""
    return np.where(tc.sigma > 0, b.l[-1][:, 0], -b.u[-1][:, 0])
