"""Distributions estimated from data (fairspec.analyses.distribution): maximum-likelihood CPTs with
Laplace smoothing, the independent and conditional networks, refitting a structure, and FVGM's
hill-climbing structure learning (K2 or BIC score, no edges into protected attributes, bounded in-degree)."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from .bayes_net import BayesNet
from .variables import DiscreteData, DistributionError


def _counts(data: DiscreteData, child: str, pa: Sequence[str], weights=None) -> np.ndarray:
    vs = data.variables
    shape = tuple(vs[p].k for p in pa) + (vs[child].k,)
    flat = np.zeros(int(np.prod(shape)), dtype=float)
    idx = np.zeros(data.n_rows, dtype=np.int64)
    for n in list(pa) + [child]:
        idx = idx * vs[n].k + data.column(n)
    np.add.at(flat, idx, 1.0 if weights is None else weights)
    return flat.reshape(shape)


def _mle(counts: np.ndarray, alpha: float, fallback: np.ndarray | None) -> np.ndarray:
    c = counts + alpha
    tot = c.sum(axis=-1, keepdims=True)
    k = counts.shape[-1]
    if fallback is None:
        fallback = np.full(k, 1.0 / k)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(tot > 0, c / np.where(tot > 0, tot, 1), fallback)
    return t


def independent(data: DiscreteData, names: Sequence[str] | None = None, alpha: float = 0.0) -> BayesNet:
    """Independent marginals estimated from data (Justicia's basic distribution)."""
    names = list(names or data.variables)
    cpts, rc = {}, {}
    for n in names:
        c = _counts(data, n, ())
        cpts[n] = _mle(c, alpha, None)
        rc[n] = np.asarray(c.sum())
    return BayesNet([data.variables[n] for n in names], {}, cpts, n_rows=data.n_rows,
                    row_counts=rc, kind="independent")


def conditional(data: DiscreteData, protected: Sequence[str], names: Sequence[str] | None = None,
                label: str | None = None, alpha: float = 0.0) -> BayesNet:
    """Justicia's distribution: every feature conditional on the compound protected group.

    Each non-protected feature has all protected attributes (and, when
    ``label`` is given, the label) as parents; the label has the protected
    attributes as parents.  A group without rows gets the feature's overall
    marginal (its ``row_counts`` entry is 0, so its error bound is infinite).
    """
    protected = list(protected)
    for a in protected:
        if a not in data.variables:
            raise DistributionError(f"the data has no protected attribute '{a}'")
    names = list(names or data.variables)
    for a in protected:
        if a not in names:
            names.insert(0, a)
    if label is not None and label not in names:
        names.append(label)
    parents, cpts, rc = {}, {}, {}
    for n in names:
        if n in protected:
            pa: tuple = ()
        elif n == label:
            pa = tuple(protected)
        else:
            pa = tuple(protected) + ((label,) if label is not None else ())
        c = _counts(data, n, pa)
        marg = _mle(_counts(data, n, ()), alpha, None)
        parents[n] = pa
        cpts[n] = _mle(c, alpha, marg)
        rc[n] = c.sum(axis=-1)
    return BayesNet([data.variables[n] for n in names], parents, cpts, n_rows=data.n_rows,
                    row_counts=rc, kind="conditional")


def refit(bn: BayesNet, data: DiscreteData, alpha: float = 0.0) -> BayesNet:
    """The same network structure with its tables re-estimated from ``data`` (maximum likelihood,
    ``alpha`` smoothing; a parent assignment without rows takes the variable's marginal)."""
    cpts, rc = {}, {}
    for n in bn.order:
        pa = bn.parents[n]
        c = _counts(data, n, pa)
        cpts[n] = _mle(c, alpha, _mle(_counts(data, n, ()), alpha, None) if pa else None)
        rc[n] = c.sum(axis=-1)
    return BayesNet._derived([bn.variables[n] for n in bn.variables], bn.parents, cpts, data.n_rows, rc, bn.kind,
                             bn.order)


def _family_score(data: DiscreteData, child: str, pa: tuple, score: str, cache: dict) -> float:
    key = (child, pa)
    if key in cache:
        return cache[key]
    c = _counts(data, child, pa)
    k = c.shape[-1]
    c2 = c.reshape(-1, k)
    nij = c2.sum(axis=1)
    if score == "bic":
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = np.where(c2 > 0, c2 * np.log(np.where(c2 > 0, c2, 1) / np.where(nij[:, None] > 0, nij[:, None], 1)), 0).sum()
        q = c2.shape[0]
        s = ll - 0.5 * math.log(max(data.n_rows, 1)) * q * (k - 1)
    elif score == "k2":
        from scipy.special import gammaln
        # K2: uniform Dirichlet(1) prior, log marginal likelihood
        s = float(np.sum(gammaln(k) - gammaln(nij + k)) + np.sum(gammaln(c2 + 1)))
    else:
        raise DistributionError(f"unknown network score '{score}' (use 'k2' or 'bic')")
    cache[key] = float(s)
    return float(s)


def learn_bayes_net(data: DiscreteData, protected: Sequence[str] = (), names: Sequence[str] | None = None,
                    score: str = "k2", max_parents: int = 2, max_iter: int = 1000,
                    label: str | None = None, alpha: float = 0.0,
                    forbidden: Iterable[tuple[str, str]] = ()) -> BayesNet:
    """Learn a Bayesian network by greedy hill climbing (FVGM section 4).

    Moves: add, remove or reverse one edge; the best improving move is taken
    until none improves the K2 (default) or BIC score.  No edge may point into a
    protected attribute (a group is chosen, not drawn); no node gets more than
    ``max_parents`` parents.  Parameters are maximum-likelihood estimates
    (``alpha`` adds Laplace smoothing).
    """
    score = score.lower()
    if score not in ("k2", "bic"):
        raise DistributionError(f"unknown network score '{score}' (use 'k2' or 'bic')")
    if max_parents < 0:
        raise DistributionError("the maximal in-degree must be at least 0")
    names = list(names or data.variables)
    if label is not None and label not in names:
        names.append(label)
    prot = set(protected)
    for a in prot:
        if a not in data.variables:
            raise DistributionError(f"the data has no protected attribute '{a}'")
        if a not in names:
            names.insert(0, a)
    forb = set(forbidden)
    parents: dict[str, tuple] = {n: () for n in names}
    cache: dict = {}

    def fs(n, pa):
        return _family_score(data, n, tuple(sorted(pa)), score, cache)

    def creates_cycle(src, dst, pa):
        # would src -> dst close a cycle? i.e. is src reachable from dst?
        stack, seen = [dst], set()
        children = {n: [c for c in names if n in pa[c]] for n in names}
        while stack:
            x = stack.pop()
            if x == src:
                return True
            if x in seen:
                continue
            seen.add(x)
            stack.extend(children[x])
        return False

    def allowed(src, dst, pa):
        return (dst not in prot and (src, dst) not in forb and len(pa[dst]) < max_parents)

    for _ in range(max_iter):
        best, move = 1e-9, None
        for src in names:
            for dst in names:
                if src == dst:
                    continue
                if src in parents[dst]:
                    # remove
                    new = tuple(p for p in parents[dst] if p != src)
                    d = fs(dst, new) - fs(dst, parents[dst])
                    if d > best:
                        best, move = d, ("del", src, dst)
                    # reverse
                    if allowed(dst, src, parents):
                        trial = dict(parents)
                        trial[dst] = new
                        if not creates_cycle(dst, src, trial):
                            d2 = d + fs(src, parents[src] + (dst,)) - fs(src, parents[src])
                            if d2 > best:
                                best, move = d2, ("rev", src, dst)
                elif allowed(src, dst, parents) and not creates_cycle(src, dst, parents):
                    d = fs(dst, parents[dst] + (src,)) - fs(dst, parents[dst])
                    if d > best:
                        best, move = d, ("add", src, dst)
        if move is None:
            break
        op, src, dst = move
        if op == "add":
            parents[dst] = parents[dst] + (src,)
        elif op == "del":
            parents[dst] = tuple(p for p in parents[dst] if p != src)
        else:
            parents[dst] = tuple(p for p in parents[dst] if p != src)
            parents[src] = parents[src] + (dst,)
    cpts, rc = {}, {}
    for n in names:
        c = _counts(data, n, parents[n])
        cpts[n] = _mle(c, alpha, _mle(_counts(data, n, ()), alpha, None))
        rc[n] = c.sum(axis=-1)
    return BayesNet([data.variables[n] for n in names], parents, cpts, n_rows=data.n_rows,
                    row_counts=rc, kind=f"learned-{score}")


def estimate(data: DiscreteData, kind: str = "conditional", protected: Sequence[str] = (),
             names: Sequence[str] | None = None, label: str | None = None, **kw) -> BayesNet:
    """One entry point for the spec layer: ``kind`` is "independent",
    "conditional" (Justicia: features given the compound protected group) or
    "bayes" (FVGM: a learned network; ``score``/``max_parents`` in ``kw``)."""
    if kind == "independent":
        return independent(data, names, alpha=kw.get("alpha", 0.0))
    if kind == "conditional":
        return conditional(data, protected, names, label=label, alpha=kw.get("alpha", 0.0))
    if kind in ("bayes", "bayesian", "learned"):
        return learn_bayes_net(data, protected, names, label=label, **kw)
    raise DistributionError(f"unknown distribution kind '{kind}' (use independent, conditional or bayes)")
