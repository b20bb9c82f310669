"""The elimination backend: exact PPVs of a decision tree over a Bayesian network by variable
elimination over the tree's paths (no SSAT search), for trees over networks whose features
depend on each other.  Registered as "elimination" in fairspec.planning.registry."""

from __future__ import annotations

import time

import numpy as np

from fairspec.analyses.distribution import BayesNet, DistributionError

__all__ = ["tree_ppvs_elimination", "network_has_feature_edges", "MAX_FACTOR"]


# and Pr[path | group] -- a conjunction of tests X in S -- is one sum-product
# over the network (variable elimination with the tests as indicator factors).
# All leaves and all groups go through one elimination (a leaf axis and a group
# axis ride along).  Exact, like the SSAT encoding of the same tree, but its
# cost grows with the network's width rather than with a DPLL search over
# order-encoded bins, which makes it the default for trees over networks whose
# features depend on each other (learned or declared); `using ssat` forces the
# SSAT solver.

MAX_FACTOR = 50_000_000       # cells of the largest table elimination may build


def network_has_feature_edges(bn: BayesNet, clf, protected) -> bool:
    sub = bn.restricted(list(clf.features) + list(protected))
    return any(p not in protected for p, _ in sub.edges())


def tree_ppvs_elimination(bn: BayesNet, tree, protected, groups=None, evidence=None,
                          time_limit: float = 60.0) -> dict:
    """{group (value indices): Pr[tree = 1 (, evidence) | group] / Pr[evidence | group]} exactly."""
    from fairspec.analyses.distribution import all_groups
    from fairspec.backends.ssat import sliced
    t0 = time.perf_counter()
    protected = tuple(protected)
    evidence = {k: sorted(int(x) for x in v) for k, v in (evidence or {}).items()}
    bn.check_covers(tree.features)
    bn.check_choice(protected)
    names = list(dict.fromkeys(list(tree.features) + list(evidence)))
    base = bn.restricted(list(dict.fromkeys(names + list(protected))))
    groups = list(groups) if groups is not None else all_groups(base, protected)
    nets = [sliced(base, protected, g).restricted(names) for g in groups]
    net = nets[0]
    ids = {n: i + 2 for i, n in enumerate(net.order)}          # axis 0: leaves, axis 1: groups
    size = {0: 1, 1: len(groups)}
    size.update({ids[n]: net.variables[n].k for n in net.order})
    factors = []
    for n in net.order:
        t = np.stack([b.cpts[n] for b in nets])
        factors.append(((1,) + tuple(ids[p] for p in net.parents[n]) + (ids[n],), t))
    ev_factors = []
    for n, vals in evidence.items():
        m = np.zeros(net.variables[n].k)
        m[vals] = 1.0
        ev_factors.append(((ids[n],), m))
    leaves = tree.paths(1)
    size[0] = max(1, len(leaves))
    masks: dict = {}
    for i, path in enumerate(leaves):
        for test, pol in path:
            k = net.variables[test.feature].k
            m = masks.setdefault(test.feature, np.ones((len(leaves), k)))
            hit = np.zeros(k)
            hit[list(test.values)] = 1.0
            m[i] *= hit if pol else 1.0 - hit
    leaf_factors = [((0, ids[n]), m) for n, m in masks.items()]
    if not leaves:
        num = np.zeros(len(groups))
    else:
        num = _eliminate(factors + ev_factors + leaf_factors, size, (0, 1), t0, time_limit).sum(axis=0)
    if evidence:
        den = _eliminate(factors + ev_factors, size, (1,), t0, time_limit)
        with np.errstate(invalid="ignore", divide="ignore"):
            num = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return {g: float(v) for g, v in zip(groups, np.broadcast_to(num, (len(groups),)))}


def _eliminate(factors, size, keep, t0, time_limit):
    """Sum out every axis not in ``keep`` (min-size order); the result over ``keep``."""
    fs = [(tuple(ax), np.asarray(t, dtype=float)) for ax, t in factors]
    todo = {a for ax, _ in fs for a in ax} - set(keep)
    while todo:
        if time.perf_counter() - t0 > time_limit:
            raise DistributionError(f"the elimination exceeded its time limit of {time_limit:g} s")

        def cost(v):
            axes = set()
            for ax, _ in fs:
                if v in ax:
                    axes |= set(ax)
            return int(np.prod([size[a] for a in axes])), v
        c, v = min(cost(v) for v in todo)
        if c > MAX_FACTOR:
            raise DistributionError(f"the network is too dense to eliminate exactly (a table of {c} cells "
                                    f"would be needed); use fewer bins or fewer parents (max_parents)")
        use = [(ax, t) for ax, t in fs if v in ax]
        rest = [(ax, t) for ax, t in fs if v not in ax]
        out = tuple(sorted({a for ax, _ in use for a in ax} - {v}))
        args = []
        for ax, t in use:
            args += [t, list(ax)]
        fs = rest + [(out, np.einsum(*args, list(out)))]
        todo.discard(v)
    args = []
    for ax, t in fs:
        args += [t, list(ax)]
    res = np.einsum(*args, list(keep)) if args else np.ones([size[a] for a in keep])
    return res
