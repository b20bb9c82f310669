"""Group metrics over a declared distribution in exact rational arithmetic (issue 20, class 6).

A declared ``distribution d { p(Q | P) = 0.41 ... }`` states rational probabilities: the
decimals as written (``0.41`` is 41/100, read by :func:`fairspec.certify.exact.threshold_of`),
the rest of a row as ``1 - sum`` in Fractions. :class:`ExactNet` holds those tables (numpy
object arrays of ``Fraction``); :func:`exact_ppvs` computes every group's PPV
``Pr[clf = 1 | group]`` by variable elimination over them (``numpy.einsum`` on object arrays:
every sum and product is a Fraction operation), the classifier entering as a 0/1 indicator
table over the features it reads (its Boolean form's ``predict``, integer / set arithmetic
only). :func:`exact_metric` turns the PPVs into the metric's exact value; the runner compares
it with the threshold through ``certify.exact.prove_exact``, which mints the
``exact-arithmetic`` proof. The floating-point backends (dp, ssat, elimination) still find
the value and the extreme groups; this module is the independent exact re-check.

:class:`ExactUnavailable` says why no exact value exists (a row whose written probabilities
do not sum to exactly 1, a classifier table too large to enumerate); the runner then reports
the float value as an estimate, never as proved.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

from fairspec.certify.exact import threshold_of

__all__ = ["ExactNet", "ExactUnavailable", "exact_ppvs", "exact_metric", "exact_probability",
           "exact_point_weighed", "MAX_CELLS"]

MAX_CELLS = 500_000       # the largest table (classifier indicator or intermediate factor) built
TIME_LIMIT = 60.0         # seconds of Fraction arithmetic before the exact re-check gives up


class ExactUnavailable(Exception):
    """No exact value: the sentence says why."""


def exact_probability(p) -> Fraction:
    """A probability written in the spec (a decimal literal parsed to a float) as the rational it writes."""
    return threshold_of(p)


def _fractions(shape, fill=Fraction(0)) -> np.ndarray:
    a = np.empty(shape, dtype=object)
    a.fill(fill)
    return a


class ExactNet:
    """A Bayesian network with exact rational tables: ``sizes[n]`` values per variable,
    ``parents[n]``, ``cpts[n]`` an object array of Fractions of shape ``parents' sizes + (k,)``,
    ``order`` topological."""

    def __init__(self, sizes: Mapping[str, int], parents: Mapping[str, Sequence[str]],
                 cpts: Mapping[str, np.ndarray], order: Sequence[str]):
        self.sizes = dict(sizes)
        self.parents = {n: tuple(parents[n]) for n in sizes}
        self.cpts = dict(cpts)
        self.order = tuple(order)

    def ancestors(self, names) -> set:
        out, stack = set(), [n for n in names if n in self.sizes]
        while stack:
            n = stack.pop()
            if n in out:
                continue
            out.add(n)
            stack.extend(self.parents[n])
        return out

    def with_uniform(self, name: str, keep_for_children: bool = True) -> "ExactNet":
        """FVGM's D_-S for one feature, exactly as ``BayesNet.with_uniform``: ``name`` becomes an
        independent uniform variable (1/k each); its children keep the original (``name~orig``)."""
        k = self.sizes[name]
        orig = name + "~orig"
        kids = [c for c in self.sizes if name in self.parents[c]]
        sizes, parents, cpts, order = {}, {}, {}, []
        for n in self.order:
            if n == name:
                if keep_for_children and kids:
                    sizes[orig], parents[orig], cpts[orig] = k, self.parents[n], self.cpts[n]
                    order.append(orig)
                sizes[n], parents[n], cpts[n] = k, (), _fractions((k,), Fraction(1, k))
                order.append(n)
            else:
                sizes[n], cpts[n] = self.sizes[n], self.cpts[n]
                parents[n] = tuple(orig if (p == name and keep_for_children) else p for p in self.parents[n])
                if name in self.parents[n] and not keep_for_children:
                    raise ExactUnavailable(f"cannot drop '{name}': '{n}' depends on it")
                order.append(n)
        # the original keeps its place before its children: re-sort topologically
        return ExactNet(sizes, parents, cpts, _topological(order, parents))

    def with_parent_fixed(self, child: str, parent: str, value: int) -> "ExactNet":
        """``child`` sees ``parent = value`` (as ``BayesNet.with_parent_fixed``)."""
        pa = list(self.parents[child])
        if parent not in pa:
            return self
        i = pa.index(parent)
        parents = dict(self.parents)
        cpts = dict(self.cpts)
        cpts[child] = np.take(self.cpts[child], int(value), axis=i)
        pa.pop(i)
        parents[child] = tuple(pa)
        return ExactNet(self.sizes, parents, cpts, self.order)


def _topological(order, parents) -> list:
    seen, out = set(), []

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        for p in parents[n]:
            visit(p)
        out.append(n)

    for n in order:
        visit(n)
    return out


# --------------------------------------------------------------------------- elimination


def _eliminate(factors, sizes, keep=(), deadline=None) -> np.ndarray:
    """Sum out every axis not in ``keep`` (smallest table first) over object (Fraction) arrays."""
    import time

    fs = [(tuple(ax), t) for ax, t in factors]
    todo = {a for ax, _ in fs for a in ax} - set(keep)
    while todo:
        if deadline is not None and time.perf_counter() > deadline:
            raise ExactUnavailable("the exact computation ran over its time limit")
        def cost(v):
            axes = set()
            for ax, _ in fs:
                if v in ax:
                    axes |= set(ax)
            return int(np.prod([sizes[a] for a in axes], dtype=np.int64)), str(v)
        c, _ = min(cost(v) for v in todo)
        v = min((x for x in todo if cost(x)[0] == c), key=str)
        if c > MAX_CELLS:
            raise ExactUnavailable(f"the exact computation would need a table of {c:,} cells (over {MAX_CELLS:,})")
        use = [(ax, t) for ax, t in fs if v in ax]
        rest = [(ax, t) for ax, t in fs if v not in ax]
        out = tuple(sorted({a for ax, _ in use for a in ax} - {v}, key=str))
        fs = rest + [(out, _einsum(use, out))]
        todo.discard(v)
    keep = tuple(keep)
    res = _einsum(fs, keep) if fs else _fractions(tuple(sizes[a] for a in keep), Fraction(1))
    return res


def _einsum(factors, out) -> np.ndarray:
    letters: dict = {}
    for ax, _ in factors:
        for a in ax:
            letters.setdefault(a, chr(ord("a") + len(letters)) if len(letters) < 26 else chr(ord("A") + len(letters) - 26))
    for a in out:
        letters.setdefault(a, chr(ord("a") + len(letters)))
    spec = ",".join("".join(letters[a] for a in ax) for ax, _ in factors) + "->" + "".join(letters[a] for a in out)
    res = np.einsum(spec, *[t for _, t in factors], dtype=object)
    return np.asarray(res, dtype=object)


def _indicator(clf, sizes) -> tuple[tuple, np.ndarray]:
    """(axes, 0/1 object table) of the classifier's decision over the features it reads."""
    feats = tuple(clf.features)
    dims = tuple(sizes[f] for f in feats)
    total = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if total > MAX_CELLS:
        raise ExactUnavailable(f"the classifier reads {len(feats)} features with {total:,} value combinations "
                               f"(over {MAX_CELLS:,})")
    grid = np.indices(dims).reshape(len(dims), total) if dims else np.zeros((0, 1), dtype=np.int64)
    codes = {f: grid[i] for i, f in enumerate(feats)}
    pred = np.asarray(clf.predict(codes), dtype=bool).reshape(total)
    table = _fractions(total)
    table[pred] = Fraction(1)
    return feats, table.reshape(dims) if dims else table.reshape(())


def exact_ppvs(net: ExactNet, clf, protected: Sequence[str], groups: Sequence[tuple],
               evidence: Mapping[str, Sequence[int]] | None = None, time_limit: float = TIME_LIMIT) -> dict:
    """{group (value indices): Pr[clf = 1 (, evidence) | group] / Pr[evidence | group]} as Fractions
    (None where Pr[evidence | group] = 0). Protected attributes are roots, fixed by the group."""
    import time

    deadline = time.perf_counter() + time_limit
    protected = tuple(protected)
    evidence = {k: sorted(int(x) for x in v) for k, v in (evidence or {}).items()}
    feats, ind = _indicator(clf, net.sizes)
    keep = net.ancestors(list(feats) + list(evidence) + list(protected))
    free = [n for n in net.order if n in keep and n not in protected]
    out = {}
    for g in groups:
        fixed = dict(zip(protected, (int(x) for x in g)))
        factors = []
        for n in free:
            idx, axes = [], []
            for p in net.parents[n]:
                if p in fixed:
                    idx.append(fixed[p])
                else:
                    idx.append(slice(None))
                    axes.append(p)
            t = net.cpts[n][tuple(idx)] if idx else net.cpts[n]
            factors.append((tuple(axes) + (n,), t))
        ev = []
        for n, vals in evidence.items():
            m = _fractions(net.sizes[n])
            m[vals] = Fraction(1)
            if n in fixed:
                if fixed[n] not in vals:
                    ev = None
                    break
                continue
            ev.append(((n,), m))
        if ev is None:
            out[g] = None
            continue
        clf_axes, clf_t = feats, ind
        if any(f in fixed for f in feats):
            idx = tuple(fixed[f] if f in fixed else slice(None) for f in feats)
            clf_t = ind[idx]
            clf_axes = tuple(f for f in feats if f not in fixed)
        num = _eliminate(factors + ev + [(clf_axes, clf_t)], net.sizes, deadline=deadline)
        num = Fraction(num[()] if isinstance(num, np.ndarray) else num)
        if evidence:
            den = _eliminate(factors + ev, net.sizes, deadline=deadline)
            den = Fraction(den[()] if isinstance(den, np.ndarray) else den)
            out[g] = None if den == 0 else num / den
        else:
            out[g] = num
    return out


def exact_point_weighed(net: ExactNet, protected: Sequence[str], groups: Sequence[tuple],
                        features: Sequence[str], codes: Mapping[str, Sequence[int]],
                        time_limit: float = TIME_LIMIT) -> np.ndarray:
    """For points ``codes[f][i]`` over ``features``: whether some group's PPV in :func:`exact_ppvs`
    weighs the point, i.e. Pr[features = x | group] > 0 in exact rationals for some group (the same
    factors as :func:`exact_ppvs`: the tables of the features' ancestors, the protected roots fixed by
    the group; a protected feature among ``features`` must have the group's value). A point no group
    weighs adds exactly 0 to every PPV (numerator and, with evidence, denominator), whatever the
    classifier decides there. Raises :class:`ExactUnavailable` when a feature is not in the network or
    a table is too large."""
    import time

    deadline = time.perf_counter() + time_limit
    protected = tuple(protected)
    features = tuple(features)
    for f in features:
        if f not in net.sizes:
            raise ExactUnavailable(f"feature '{f}' is not in the distribution")
    n = len(codes[features[0]]) if features else 1
    cols = {f: np.asarray(codes[f], dtype=np.int64).reshape(-1) for f in features}
    weighed = np.zeros(n, dtype=bool)
    keep_all = net.ancestors(list(features) + list(protected))
    free = [v for v in net.order if v in keep_all and v not in protected]
    for g in groups:
        fixed = dict(zip(protected, (int(x) for x in g)))
        factors = []
        for v in free:
            idx, axes = [], []
            for p in net.parents[v]:
                if p in fixed:
                    idx.append(fixed[p])
                else:
                    idx.append(slice(None))
                    axes.append(p)
            factors.append((tuple(axes) + (v,), net.cpts[v][tuple(idx)] if idx else net.cpts[v]))
        keep = tuple(f for f in features if f not in fixed)
        table = _eliminate(factors, net.sizes, keep=keep, deadline=deadline)
        match = np.ones(n, dtype=bool)
        for f in features:
            if f in fixed:
                match &= cols[f] == fixed[f]
        for i in np.flatnonzero(match & ~weighed):
            p = table[tuple(int(cols[f][i]) for f in keep)] if keep else (
                table[()] if isinstance(table, np.ndarray) else table)
            weighed[i] = Fraction(p) > 0
    return weighed


def exact_metric(metric: str, ppvs: Mapping) -> Fraction | None:
    """most_favoured / least_favoured / statistical_parity / disparate_impact of exact PPVs
    ; None when undefined (disparate impact when every group's PPV is 0: 0/0, as on data rows)."""
    vals = [p for p in ppvs.values() if p is not None]
    if not vals:
        return None
    hi, lo = max(vals), min(vals)
    if metric in ("most_favoured", "ppv_max"):
        return hi
    if metric in ("least_favoured", "ppv_min"):
        return lo
    if metric in ("statistical_parity", "spread"):
        return hi - lo
    if metric == "disparate_impact":
        return lo / hi if hi > 0 else None
    raise ExactUnavailable(f"{metric} has no exact evaluation")


def table_rows_exact(given: Mapping[tuple, Fraction], shape: tuple, k: int):
    """An exact CPT from the written probabilities ``given[(parent values..., j)]``: a row with one
    value missing gets ``1 - sum``; several missing get 0 when the rest sums to exactly 1. Raises
    :class:`ExactUnavailable` when a row's written probabilities do not sum to exactly 1."""
    table = _fractions(shape + (k,))
    for key in itertools.product(*[range(s) for s in shape]):
        row = [given.get(key + (j,)) for j in range(k)]
        s = sum((p for p in row if p is not None), Fraction(0))
        missing = [j for j, p in enumerate(row) if p is None]
        if len(missing) == 1:
            if s > 1:
                raise ExactUnavailable(f"probabilities summing to {s} > 1")
            row[missing[0]] = 1 - s
        else:
            if s != 1:
                raise ExactUnavailable(f"probabilities that sum to {s}, not exactly 1")
            row = [Fraction(0) if p is None else p for p in row]
        for j, p in enumerate(row):
            table[key + (j,)] = p
    return table
