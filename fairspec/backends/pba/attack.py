"""Batched falsification: look for offsets with ``f <= 0`` that keep both predictions.

For every open case at once: the box centre, its corners along the gradient sign,
random starts, then projected signed-gradient descent on ``f`` (a penalty keeps both
predictions at the true class), with integral offsets rounded before every
evaluation, and a final coordinate sweep over the integral offsets. Only real
evaluations of the network count: a candidate is a witness when ``f <= 0`` and both
copies keep the true class at the rounded point. Nothing here proves anything.
"""

from __future__ import annotations

import numpy as np

from fairspec.backends.pba.twin import TwinCases

__all__ = ["search", "grad_pair"]


def _forward_masks(tc: TwinCases, C, D):
    """Forward one copy keeping the ReLU masks: C (k, n0), D (k, S, m)."""
    masks = []
    H = C[:, None, :] + D @ tc.A.T
    if tc.relu0:
        masks.append(H > 0)
        H = np.maximum(H, 0.0)
    else:
        masks.append(None)
    for layer in tc.layers:
        H = H @ layer.W.T + layer.b
        if layer.relu:
            masks.append(H > 0)
            H = np.maximum(H, 0.0)
        else:
            masks.append(None)
    return H[..., 0], masks


def _grad(tc: TwinCases, masks, shape):
    """d g / d offsets for one copy from its ReLU masks: (k, S, m)."""
    G = np.ones(shape + (1,))
    if masks[-1] is not None:
        G = G * masks[-1]
    for j in range(tc.depth - 1, -1, -1):
        G = G @ (tc.A if j == 0 else tc.layers[j - 1].W)
        if j > 0 and masks[j - 1] is not None:
            G = G * masks[j - 1]
    return G


def grad_pair(tc: TwinCases, idx, D):
    """(f, sg_x, sg_x', df/dD, d(sg_x)/dD, d(sg_x')/dD) at D (k, S, m)."""
    gx, mx = _forward_masks(tc, tc.C[idx], D)
    gp, mp = _forward_masks(tc, tc.Cp[idx], D)
    Gx = _grad(tc, mx, D.shape[:2])
    Gp = _grad(tc, mp, D.shape[:2])
    s = tc.sigma[idx][:, None]
    t = tc.tau[idx][:, None]
    f = t * s * (gx - gp)
    return f, s * gx, s * gp, (t * s)[..., None] * (Gx - Gp), s[..., None] * Gx, s[..., None] * Gp


def _valid(f, ax, ap):
    """A witness: f <= 0 and both copies keep the true class (strict for class 1: ax > 0;
    class 0 holds at g <= 0, i.e. ax >= 0)."""
    return (f <= 0) & (ax >= 0) & (ap >= 0)


def search(tc: TwinCases, idx=None, starts: int = 8, steps: int = 30, seed: int = 0,
           margin: float = 1e-9):
    """Best offsets per case: returns (D (k, m), f (k,), found (k,) bool).

    ``found`` marks cases where the best point is a real witness (``f <= 0`` with both
    predictions kept, margins ``> margin`` on class 1's strict side).
    """
    idx = np.arange(tc.P) if idx is None else np.asarray(idx)
    k, m = len(idx), tc.m
    best_D = np.zeros((k, m))
    best_f = np.full(k, np.inf)
    found = np.zeros(k, dtype=bool)
    if k == 0:
        return best_D, best_f, found
    lo, hi = tc.lo[idx], tc.hi[idx]
    rng = np.random.default_rng(seed)
    cls1 = tc.sigma[idx] > 0

    def consider(D):
        nonlocal best_D, best_f, found
        D = tc.round_offsets(D, idx)
        f, ax, ap = tc.pair(D, idx)
        strict = np.where(cls1[:, None], margin, 0.0)
        ok = (ax > strict) | ((ax >= 0) & ~cls1[:, None])
        ok &= (ap > strict) | ((ap >= 0) & ~cls1[:, None])
        score = np.where(ok, f, np.inf)
        j = np.argmin(score, axis=1)
        fb = score[np.arange(k), j]
        better = fb < best_f
        best_f = np.where(better, fb, best_f)
        best_D[better] = D[np.arange(k), j][better]
        found |= best_f <= 0
        return D

    if m == 0:
        consider(np.zeros((k, 1, 0)))
        return best_D, best_f, found
    width = hi - lo
    S = max(2, starts)
    D0 = np.concatenate([np.zeros((k, 1, m)), (lo + rng.random((k, S - 1, m)).transpose(1, 0, 2) * width)
                         .transpose(1, 0, 2)], axis=1)
    D0 = np.clip(D0, lo[:, None, :], hi[:, None, :])
    D = consider(D0).astype(np.float64)
    # one step to the corner the gradient points at, from the centre
    f, ax, ap, gf, gx, gp = grad_pair(tc, idx, np.zeros((k, 1, m)))
    corner = np.where(gf[:, 0, :] > 0, lo, hi)
    consider(corner[:, None, :])
    lam = 1.0
    for it in range(steps):
        f, ax, ap, gf, gx, gp = grad_pair(tc, idx, D)
        # penalty: leave the side where a prediction would change
        pen = (ax < 1e-6)[..., None] * gx + (ap < 1e-6)[..., None] * gp
        direction = gf - lam * pen
        step = width[:, None, :] * (0.5 * (1 - it / steps) + 0.02)
        D = np.clip(D - step * np.sign(direction), lo[:, None, :], hi[:, None, :])
        consider(D)
        if found.all():
            break
    # coordinate sweep over integral offsets around the best point
    ints = np.flatnonzero(tc.integer)
    if ints.size and not found.all():
        for c in ints:
            span = np.arange(-3, 4, dtype=np.float64)
            cand = np.repeat(best_D[:, None, :], span.size, axis=1)
            cand[:, :, c] = np.clip(best_D[:, None, c] + span[None, :], lo[:, None, c], hi[:, None, c])
            consider(cand)
    return best_D, best_f, found
