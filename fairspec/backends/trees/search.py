"""Falsification before the exact encoding: a primal heuristic on the pair problem.

On boosted ensembles a violating pair is usually easy to find by local search and slow to
find by the MILP (its LP relaxation of a sum of 100 trees is weak). :func:`falsify` searches
the pair space directly with the ensemble's own batched evaluation:

* every input only matters through the interval between consecutive split values it falls
  in, so each input's candidate values are the two ends of each interval inside the
  domain (the split value ``c`` and ``c + 1``, or the next float for a continuous input);
* a pair is a value per tied input (both copies), one per copy for a protected (free)
  input or one-hot group, and a couple ``(a, b)`` with ``|a - b| <= t`` for a relaxed one;
* from random starting pairs (seeded) it moves to the best pair among all one-block
  changes (best improvement; only the trees reading the changed input are re-evaluated)
  of the violation measure — ``min(S - c, c - S')`` for a decision, ``S - S' - eps`` (or the
  probability gap) otherwise — and restarts when no change improves it.

It never proves anything: a pair it finds is re-checked by the caller exactly as a solver's
witness is (:func:`fairspec.backends.pair.check_witness`); when it finds none the exact
encoding decides. The search is deterministic for a seed except where the deadline stops it.
"""

from __future__ import annotations

import time

import numpy as np

from fairspec.models.network import sigmoid

__all__ = ["falsify"]


def _candidates(ens, lo: float, hi: float, integer: bool, cuts) -> np.ndarray:
    vals = {float(lo), float(hi)}
    for c in cuts:
        if lo <= c < hi:
            vals.add(float(c))
            vals.add(float(c + 1.0) if integer else float(np.nextafter(c, np.inf)))
    return np.array(sorted(v for v in vals if lo <= v <= hi))


class _Pairs:
    """Incremental evaluation of S on batches of pairs that differ from a base pair in one input block."""

    def __init__(self, problem):
        from fairspec.backends.trees.space import cuts_by_feature

        p = problem
        self.p = p
        ens = p.net
        self.ens = ens
        self.trees = ens.trees
        cuts = cuts_by_feature(ens)
        self.reads: dict[int, list[int]] = {}
        for k, t in enumerate(ens.trees):
            for f in t.features():
                self.reads.setdefault(f, []).append(k)
        self.cand = [_candidates(ens, p.lo[i], p.hi[i], bool(p.integer[i]), cuts.get(i, ())) for i in range(p.n)]
        in_group = {i for g in p.onehot_groups for i in g}
        free = set(p.free)
        relaxed = dict(p.relaxed)
        # blocks: (kind, indices) with kind tied | free | relaxed; one-hot groups are one block
        self.blocks: list[tuple[str, tuple[int, ...], bool]] = []
        for g in p.onehot_groups:
            self.blocks.append(("free" if free.intersection(g) else "tied", tuple(g), True))
        for i in range(p.n):
            if i in in_group:
                continue
            kind = "free" if i in free else ("relaxed" if i in relaxed else "tied")
            self.blocks.append((kind, (i,), False))
        self.relaxed = relaxed
        self.must = list(p.must_differ or ())
        self.kind = self._kind()

    def _kind(self):
        p = self.p
        if p.post == "label":
            return "label"
        link = self.ens.link
        if p.post == "logit" and link == "logistic":
            return "diff"
        if p.post == "prob":
            return "diff" if link == "identity" else "sigdiff"
        return None                                   # a logit bound on a probability average

    # ---- evaluation ---------------------------------------------------------------------------
    def contributions(self, X) -> np.ndarray:
        """(rows, trees) leaf values."""
        return np.stack([t.value[t.apply(X)] for t in self.trees], axis=1)

    def measure(self, S, Sp) -> np.ndarray:
        """The violation measure of (S, S') in the better of both directions (> 0: violated)."""
        ens, p = self.ens, self.p
        if self.kind == "label":
            c = ens.threshold
            return np.maximum(np.minimum(S - c, c - Sp), np.minimum(Sp - c, c - S))
        if self.kind == "diff":
            return np.abs(S - Sp) - p.eps
        return np.abs(sigmoid(S) - sigmoid(Sp)) - p.eps

    def valid(self, X, XP) -> np.ndarray:
        if not self.must:
            return np.ones(len(X), dtype=bool)
        return np.any(X[:, self.must] != XP[:, self.must], axis=1)

    # ---- moves --------------------------------------------------------------------------------
    def random_pairs(self, rng, m: int):
        p = self.p
        X = np.empty((m, p.n))
        XP = np.empty((m, p.n))
        for kind, idx, group in self.blocks:
            if group:
                for M in (X, XP):
                    M[:, list(idx)] = 0.0
                    M[np.arange(m), np.array(idx)[rng.integers(0, len(idx), m)]] = 1.0
                if kind == "tied":
                    XP[:, list(idx)] = X[:, list(idx)]
                continue
            i = idx[0]
            c = self.cand[i]
            X[:, i] = c[rng.integers(0, len(c), m)]
            if kind == "tied":
                XP[:, i] = X[:, i]
            elif kind == "free":
                XP[:, i] = c[rng.integers(0, len(c), m)]
            else:
                XP[:, i] = self._near(X[:, i], i, rng)
        return X, XP

    def _near(self, a, i, rng):
        t = self.relaxed[i]
        p = self.p
        d = rng.uniform(-t, t, len(a))
        if p.integer[i]:
            d = np.round(d)
        return np.clip(a + d, p.lo[i], p.hi[i])

    def neighbours(self, x, xp):
        """Yields (affected inputs, X, XP) per block move: every pair that changes one block of (x, x')."""
        p = self.p
        for kind, idx, group in self.blocks:
            if group:
                units = np.eye(len(idx))
                copies = (0,) if kind == "tied" else (0, 1)
                for copy in copies:
                    X = np.tile(x, (len(idx), 1))
                    XP = np.tile(xp, (len(idx), 1))
                    if kind == "tied" or copy == 0:
                        X[:, list(idx)] = units
                    if kind == "tied" or copy == 1:
                        XP[:, list(idx)] = units
                    yield idx, X, XP
                continue
            i = idx[0]
            c = self.cand[i]
            if kind == "tied":
                X = np.tile(x, (len(c), 1))
                XP = np.tile(xp, (len(c), 1))
                X[:, i] = XP[:, i] = c
                yield idx, X, XP
            elif kind == "free":
                for copy in (0, 1):
                    X = np.tile(x, (len(c), 1))
                    XP = np.tile(xp, (len(c), 1))
                    (X if copy == 0 else XP)[:, i] = c
                    yield idx, X, XP
            else:
                t = self.relaxed[i]
                a_vals = np.unique(np.concatenate([c, [x[i]]]))
                pairs = []
                for a in a_vals:
                    near = c[(c >= a - t) & (c <= a + t)]
                    bs = np.unique(np.concatenate([near, np.clip([a - t, a, a + t], p.lo[i], p.hi[i])]))
                    if p.integer[i]:
                        bs = np.unique(np.round(bs))
                    pairs.extend((a, b) for b in bs if abs(a - b) <= t)
                pairs = np.array(pairs)
                X = np.tile(x, (len(pairs), 1))
                XP = np.tile(xp, (len(pairs), 1))
                X[:, i] = pairs[:, 0]
                XP[:, i] = pairs[:, 1]
                yield idx, X, XP


def falsify(problem, deadline: float | None = None, seed: int = 0, max_rounds: int = 400,
            restarts: int = 64) -> tuple[np.ndarray, np.ndarray] | None:
    """A pair (x, x') that the heuristic finds violating (to be re-checked by the caller), or
    None. Stops at ``deadline`` (a ``time.perf_counter()`` value), after ``restarts`` local
    searches, or after ``max_rounds`` moves in all."""
    ev = _Pairs(problem)
    if ev.kind is None or not problem.free and not problem.relaxed:
        return None
    rng = np.random.default_rng(seed)

    def expired():
        return deadline is not None and time.perf_counter() >= deadline

    # a random population first: the best few start the local searches
    X, XP = ev.random_pairs(rng, 256)
    C, CP = ev.contributions(X), ev.contributions(XP)
    S = ev.ens.base + C.sum(axis=1) / ev.ens.divisor
    Sp = ev.ens.base + CP.sum(axis=1) / ev.ens.divisor
    m = np.where(ev.valid(X, XP), ev.measure(S, Sp), -np.inf)
    order = np.argsort(-m, kind="stable")
    if m[order[0]] > 0:
        k = int(order[0])
        return X[k], XP[k]
    starts = [int(k) for k in order[:8]]
    rounds = 0
    for r in range(restarts):
        if expired() or rounds >= max_rounds:
            return None
        if r < len(starts):
            x, xp = X[starts[r]].copy(), XP[starts[r]].copy()
        else:
            a, b = ev.random_pairs(rng, 1)
            x, xp = a[0], b[0]
        cx, cxp = ev.contributions(x[None])[0], ev.contributions(xp[None])[0]
        cur = float(np.where(ev.valid(x[None], xp[None]), ev.measure(
            np.array([ev.ens.base + cx.sum() / ev.ens.divisor]),
            np.array([ev.ens.base + cxp.sum() / ev.ens.divisor])), -np.inf)[0])
        while rounds < max_rounds and not expired():
            rounds += 1
            best, best_pair = cur, None
            for idx, NX, NXP in ev.neighbours(x, xp):
                trees = sorted({k for i in idx for k in ev.reads.get(i, ())})
                if not trees:
                    continue
                if expired():
                    break
                sx, sxp = cx.sum(), cxp.sum()
                ox, oxp = cx[trees].sum(), cxp[trees].sum()
                nx = np.zeros(len(NX))
                nxp = np.zeros(len(NX))
                for k in trees:
                    t = ev.trees[k]
                    nx += t.value[t.apply(NX)]
                    nxp += t.value[t.apply(NXP)]
                S = ev.ens.base + (sx - ox + nx) / ev.ens.divisor
                Sp = ev.ens.base + (sxp - oxp + nxp) / ev.ens.divisor
                mm = np.where(ev.valid(NX, NXP), ev.measure(S, Sp), -np.inf)
                j = int(np.argmax(mm))
                if mm[j] > best + 1e-12:
                    best, best_pair = float(mm[j]), (NX[j].copy(), NXP[j].copy())
            if best_pair is None:
                break
            x, xp = best_pair
            cx, cxp = ev.contributions(x[None])[0], ev.contributions(xp[None])[0]
            cur = best
            if cur > 0:
                return x, xp
    return None
