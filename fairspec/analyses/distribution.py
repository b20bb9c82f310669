"""Distributions over discretised features, for group-fairness metrics.

The distribution-based verifiers (Justicia, FVGM) compute, for a classifier and
a data-generating distribution, the *positive predictive value* (PPV) of every
compound protected group -- the probability of a positive prediction
``Pr[Yhat = 1 | A = a]``, also called the group's *passing rate*.  This module
holds the distribution side of that computation:

* ``Bins`` and ``discretise``: continuous features become ordered discrete
  variables by declared or learned (quantile) bins, right-closed
  ``(e[j-1], e[j]]`` so that a tree test ``x <= t`` is a union of bins when
  ``t`` is an edge.
* ``Variable``: a discrete feature (categorical values or bins).
* ``BayesNet``: one representation for every distribution we need.  With no
  edges it is the *independent marginals* distribution; with the protected
  attributes as the parents of every other variable it is Justicia's
  *conditional on the protected group* distribution; learned by hill climbing
  (K2 or BIC score, no edges into protected attributes, bounded in-degree) it
  is FVGM's correlated-feature model; declared with explicit CPTs it is
  whatever the user states.
* Finite-sample error bounds: Justicia's Theorem 3 (multiplicative epsilon_0)
  and a Hoeffding bound on each PPV (additive).

Every validation error raises ``DistributionError`` with one sentence.
numpy is imported at module level (it is a core dependency); nothing heavier.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from fairspec.verdict import Unsupported

__all__ = [
    "DistributionError",
    "Bins",
    "Variable",
    "Categorical",
    "Continuous",
    "DiscreteData",
    "discretise",
    "BayesNet",
    "independent",
    "conditional",
    "learn_bayes_net",
    "estimate",
    "all_groups",
    "GroupPPVs",
    "ErrorBound",
    "justicia_epsilon0",
    "parent_marginal",
    "refit",
    "ppv_error_bound",
    "PROB_TOL",
]

PROB_TOL = 1e-9


class DistributionError(Unsupported):
    """A distribution (or its pairing with a classifier) is invalid (a reason for unknown).

    ``message`` is one sentence meant for a person; the spec layer turns it
    into a diagnostic.
    """

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message


# --------------------------------------------------------------------------- bins


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@dataclass(frozen=True)
class Bins:
    """Right-closed bins of a continuous feature.

    ``edges`` are the interior cut points e_0 < e_1 < ... < e_{m-1}; there are
    m + 1 bins: (-inf, e_0], (e_0, e_1], ..., (e_{m-1}, +inf).  ``means`` is the
    mean of the data inside each bin (used as the bin's value by linear
    classifiers, as in Justicia and FVGM); ``None`` for declared bins without data.
    """

    edges: tuple[float, ...]
    means: tuple[float, ...] | None = None

    def __post_init__(self):
        e = tuple(float(x) for x in self.edges)
        object.__setattr__(self, "edges", e)
        if any(not math.isfinite(x) for x in e):
            raise DistributionError("bin edges must be finite numbers")
        if any(b <= a for a, b in zip(e, e[1:])):
            raise DistributionError(f"bin edges {list(e)} are not strictly increasing")
        if self.means is not None:
            m = tuple(float(x) for x in self.means)
            if len(m) != len(e) + 1:
                raise DistributionError(
                    f"{len(m)} bin means were given for {len(e) + 1} bins")
            object.__setattr__(self, "means", m)

    @property
    def k(self) -> int:
        return len(self.edges) + 1

    def index(self, values) -> np.ndarray:
        """The bin index of every value (numpy array of ints)."""
        x = np.asarray(values, dtype=float)
        return np.searchsorted(np.asarray(self.edges, dtype=float), x, side="left")

    def labels(self) -> tuple[str, ...]:
        e = self.edges
        if not e:
            return ("(-inf, inf)",)
        out = [f"(-inf, {_fmt(e[0])}]"]
        out += [f"({_fmt(a)}, {_fmt(b)}]" for a, b in zip(e, e[1:])]
        out.append(f"({_fmt(e[-1])}, inf)")
        return tuple(out)

    def upper_index(self, threshold: float, feature: str = "feature") -> int:
        """j such that ``x > threshold`` holds exactly for the bins j, j+1, ...

        Raises DistributionError when the threshold falls strictly inside a bin.
        """
        t = float(threshold)
        e = np.asarray(self.edges, dtype=float)
        j = int(np.searchsorted(e, t, side="left"))
        if j < len(e) and abs(e[j] - t) <= 1e-9 * max(1.0, abs(t)):
            return j + 1
        lo = "-inf" if j == 0 else _fmt(e[j - 1])
        hi = "inf" if j == len(e) else _fmt(e[j])
        raise DistributionError(
            f"the classifier's threshold {_fmt(t)} on '{feature}' falls inside the bin "
            f"({lo}, {hi}], so the bins cannot decide the test; add {_fmt(t)} as a bin edge")

    def refined(self, thresholds: Iterable[float]) -> "Bins":
        """These bins with extra edges (means dropped: re-estimate from data)."""
        e = sorted(set(self.edges) | {float(t) for t in thresholds})
        return Bins(tuple(e))

    @staticmethod
    def from_quantiles(values, n_bins: int) -> "Bins":
        """Learned bins: edges at the empirical quantiles (duplicates merged)."""
        x = np.asarray(values, dtype=float)
        x = x[np.isfinite(x)]
        if n_bins < 1:
            raise DistributionError("the number of bins must be at least 1")
        if len(x) == 0:
            raise DistributionError("cannot learn bins from a column with no numbers")
        qs = np.quantile(x, np.linspace(0, 1, n_bins + 1)[1:-1])
        edges = sorted(set(float(q) for q in qs))
        # an edge equal to the maximum would leave an empty last bin
        edges = [q for q in edges if q < x.max()]
        return Bins(tuple(edges)).with_means(x)

    def with_means(self, values) -> "Bins":
        """These bins with the data mean of every bin (bin midpoints for empty bins)."""
        x = np.asarray(values, dtype=float)
        idx = self.index(x)
        means = []
        e = self.edges
        for j in range(self.k):
            sel = x[idx == j]
            if len(sel):
                means.append(float(sel.mean()))
            elif not e:
                means.append(0.0)
            elif j == 0:
                means.append(e[0])
            elif j == len(e):
                means.append(e[-1])
            else:
                means.append((e[j - 1] + e[j]) / 2)
        return Bins(self.edges, tuple(means))


# --------------------------------------------------------------------------- variables


@dataclass(frozen=True)
class Variable:
    """A discrete feature: categorical ``values``, or the bins of a continuous feature."""

    name: str
    values: tuple
    bins: Bins | None = None

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(self.values))
        if len(self.values) < 1:
            raise DistributionError(f"feature '{self.name}' has no values")
        if len(set(self.values)) != len(self.values):
            raise DistributionError(f"feature '{self.name}' lists a value twice")
        if self.bins is not None and self.bins.k != len(self.values):
            raise DistributionError(
                f"feature '{self.name}' has {len(self.values)} values but {self.bins.k} bins")

    @property
    def k(self) -> int:
        return len(self.values)

    def index_of(self, value) -> int:
        """The index of a value label (ints/bools accepted for binary features)."""
        if value in self.values:
            return self.values.index(value)
        if isinstance(value, (bool, np.bool_)) and self.k == 2:
            return int(value)
        if isinstance(value, (int, np.integer)) and 0 <= int(value) < self.k and not any(
                isinstance(v, (int, np.integer)) for v in self.values):
            return int(value)
        raise DistributionError(f"'{value}' is not a value of feature '{self.name}' "
                                f"(values: {', '.join(map(str, self.values))})")

    @staticmethod
    def boolean(name: str) -> "Variable":
        return Variable(name, (0, 1))


@dataclass(frozen=True)
class Categorical:
    """Spec: a categorical column; ``values`` fixes the order (else sorted data values)."""

    values: tuple | None = None


@dataclass(frozen=True)
class Continuous:
    """Spec: a continuous column and its bins: a ``Bins``, a list of edges, or an
    int (that many quantile bins learned from the data).  ``None`` is an error."""

    bins: Any = None


@dataclass
class DiscreteData:
    """Data as value indices: ``codes[name]`` is an int array of length ``n_rows``."""

    variables: dict[str, Variable]
    codes: dict[str, np.ndarray]
    n_rows: int

    def column(self, name: str) -> np.ndarray:
        if name not in self.codes:
            raise DistributionError(f"the data has no column '{name}'")
        return self.codes[name]

    def take(self, rows) -> "DiscreteData":
        """The rows at these indices (repeats allowed: a bootstrap resample)."""
        rows = np.asarray(rows, dtype=np.int64)
        return DiscreteData(self.variables, {k: v[rows] for k, v in self.codes.items()}, len(rows))

    def subset(self, mask) -> "DiscreteData":
        mask = np.asarray(mask, dtype=bool)
        return DiscreteData(self.variables, {k: v[mask] for k, v in self.codes.items()},
                            int(mask.sum()))


def discretise(data: Mapping[str, Sequence], specs: Mapping[str, Any]) -> DiscreteData:
    """Discretise columns of ``data`` (a mapping name -> values, e.g. a DataFrame).

    ``specs`` maps each column to ``Categorical(...)``, ``Continuous(bins)``, a
    ``Bins`` or a ``Variable`` (whose values/bins are used as declared).
    """
    variables: dict[str, Variable] = {}
    codes: dict[str, np.ndarray] = {}
    n = None
    for name, spec in specs.items():
        try:
            col = data[name]
        except (KeyError, IndexError):
            raise DistributionError(f"the data has no column '{name}'") from None
        arr = np.asarray(col)
        if n is None:
            n = len(arr)
        elif len(arr) != n:
            raise DistributionError(f"column '{name}' has {len(arr)} rows, not {n}")
        if isinstance(spec, Variable):
            var = spec
            if var.bins is not None:
                codes[name] = var.bins.index(arr.astype(float))
            else:
                codes[name] = _category_codes(name, arr, var.values)
        elif isinstance(spec, Categorical):
            vals = spec.values
            if vals is None:
                vals = tuple(sorted(set(arr.tolist()), key=lambda v: (str(type(v)), v)))
            var = Variable(name, tuple(vals))
            codes[name] = _category_codes(name, arr, var.values)
        else:
            if isinstance(spec, Continuous):
                b = spec.bins
            else:
                b = spec
            x = _as_float(name, arr)
            if b is None:
                raise DistributionError(
                    f"continuous feature '{name}' has no bins; declare bin edges or a number "
                    f"of quantile bins")
            if isinstance(b, Bins):
                bins = b.with_means(x) if b.means is None else b
            elif isinstance(b, (int, np.integer)) and not isinstance(b, bool):
                bins = Bins.from_quantiles(x, int(b))
            else:
                bins = Bins(tuple(b)).with_means(x)
            var = Variable(name, bins.labels(), bins)
            codes[name] = bins.index(x)
        variables[name] = var
    return DiscreteData(variables, codes, int(n or 0))


def _as_float(name, arr) -> np.ndarray:
    try:
        x = np.asarray(arr, dtype=float)
    except (TypeError, ValueError):
        raise DistributionError(f"continuous feature '{name}' has values that are not numbers") from None
    if not np.all(np.isfinite(x)):
        raise DistributionError(f"continuous feature '{name}' has missing or infinite values")
    return x


def _category_codes(name, arr, values) -> np.ndarray:
    lookup = {v: i for i, v in enumerate(values)}
    # tolerate ints given as floats / strings given for numbers? keep it strict
    out = np.empty(len(arr), dtype=np.int64)
    for i, v in enumerate(arr.tolist()):
        j = lookup.get(v)
        if j is None and isinstance(v, float) and v.is_integer():
            j = lookup.get(int(v))
        if j is None:
            raise DistributionError(f"value '{v}' of feature '{name}' is not one of its declared values")
        out[i] = j
    return out


# --------------------------------------------------------------------------- Bayesian network


_TRUSTED = object()


class BayesNet:
    """A Bayesian network over discrete variables (the one distribution type).

    ``parents[name]`` is a tuple of parent names; ``cpts[name]`` an array of
    shape ``(k_parent_1, ..., k_parent_m, k)``: the conditional distribution of
    the variable for every parent assignment.  ``row_counts[name]`` (optional,
    shape ``(k_parent_1, ..., k_parent_m)``) is the number of data rows each CPT
    row was estimated from; ``n_rows`` the size of the data.  Both feed the
    finite-sample error bound; a declared network has neither.
    """

    def __init__(self, variables: Sequence[Variable], parents: Mapping[str, Sequence[str]] | None = None,
                 cpts: Mapping[str, Any] | None = None, *, n_rows: int | None = None,
                 row_counts: Mapping[str, Any] | None = None, kind: str = "declared"):
        self.variables: dict[str, Variable] = {}
        if parents is _TRUSTED:
            return
        for v in variables:
            if v.name in self.variables:
                raise DistributionError(f"feature '{v.name}' is declared twice in the distribution")
            self.variables[v.name] = v
        parents = dict(parents or {})
        cpts = dict(cpts or {})
        for name in parents:
            if name not in self.variables:
                raise DistributionError(f"parents are given for '{name}', which the distribution does not declare")
        for name in cpts:
            if name not in self.variables:
                raise DistributionError(f"a probability table is given for '{name}', which the distribution does not declare")
        self.parents: dict[str, tuple[str, ...]] = {}
        self.cpts: dict[str, np.ndarray] = {}
        for name, var in self.variables.items():
            pa = tuple(parents.get(name, ()))
            for p in pa:
                if p not in self.variables:
                    raise DistributionError(f"'{name}' has parent '{p}', which the distribution does not declare")
                if p == name:
                    raise DistributionError(f"'{name}' is declared as its own parent")
            if len(set(pa)) != len(pa):
                raise DistributionError(f"'{name}' lists a parent twice")
            self.parents[name] = pa
            if name not in cpts:
                raise DistributionError(f"no probability table is given for '{name}'")
            self.cpts[name] = self._check_cpt(name, pa, cpts[name])
        self.order: tuple[str, ...] = self._topological_order()
        self.n_rows = n_rows
        self.row_counts = {k: np.asarray(v) for k, v in (row_counts or {}).items()}
        self.kind = kind

    # ---- validation

    def _check_cpt(self, name, pa, table) -> np.ndarray:
        var = self.variables[name]
        shape = tuple(self.variables[p].k for p in pa) + (var.k,)
        try:
            t = np.asarray(table, dtype=float)
        except (TypeError, ValueError):
            raise DistributionError(f"the probability table of '{name}' holds values that are not numbers") from None
        if t.shape == shape[:-1] + (1,) and var.k == 2:
            t = t[..., 0]
        if var.k == 2 and t.shape == shape[:-1]:
            # Pr[X = 1 | parents] given alone
            t = np.stack([1.0 - t, t], axis=-1)
            given = "probabilities"
        else:
            given = "rows"
        if t.shape != shape:
            raise DistributionError(
                f"the probability table of '{name}' has shape {t.shape}, expected {shape} "
                f"(one row of {var.k} probabilities per assignment of {', '.join(pa) or 'no parents'})")
        if not np.all(np.isfinite(t)):
            raise DistributionError(f"the probability table of '{name}' holds a missing or infinite value")
        if np.any(t < -PROB_TOL) or np.any(t > 1 + PROB_TOL):
            bad = t[(t < -PROB_TOL) | (t > 1 + PROB_TOL)].flat[0]
            raise DistributionError(f"probability {bad:g} for '{name}' is outside [0, 1]")
        sums = t.sum(axis=-1)
        if np.any(np.abs(sums - 1.0) > 1e-6):
            where = np.argwhere(np.abs(sums - 1.0) > 1e-6)[0]
            row = ", ".join(f"{p}={self.variables[p].values[i]}" for p, i in zip(pa, where))
            raise DistributionError(
                f"the probabilities of '{name}'" + (f" given {row}" if row else "")
                + f" sum to {sums[tuple(where)]:g}, not 1")
        del given
        return np.clip(t, 0.0, 1.0)

    def _topological_order(self) -> tuple[str, ...]:
        order: list[str] = []
        state: dict[str, int] = {}

        def visit(n, stack):
            s = state.get(n, 0)
            if s == 2:
                return
            if s == 1:
                cyc = stack[stack.index(n):] + [n]
                raise DistributionError(f"the network has a cycle: {' -> '.join(cyc)}")
            state[n] = 1
            for p in self.parents[n]:
                visit(p, stack + [n])
            state[n] = 2
            order.append(n)

        for n in self.variables:
            visit(n, [])
        return tuple(order)

    # ---- queries

    def __contains__(self, name) -> bool:
        return name in self.variables

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.variables)

    def children(self, name: str) -> tuple[str, ...]:
        return tuple(c for c in self.order if name in self.parents[c])

    def edges(self) -> list[tuple[str, str]]:
        return [(p, c) for c in self.order for p in self.parents[c]]

    def row(self, name: str, assignment: Mapping[str, int]) -> np.ndarray:
        """The CPT row of ``name`` for the parent values in ``assignment`` (indices)."""
        idx = tuple(int(assignment[p]) for p in self.parents[name])
        return self.cpts[name][idx]

    def ancestors(self, names: Iterable[str]) -> set[str]:
        """The given variables and all their ancestors."""
        out: set[str] = set()
        stack = list(names)
        while stack:
            n = stack.pop()
            if n in out:
                continue
            if n not in self.variables:
                raise DistributionError(f"the distribution does not cover feature '{n}'")
            out.add(n)
            stack.extend(self.parents[n])
        return out

    @classmethod
    def _derived(cls, variables, parents, cpts, n_rows, row_counts, kind, order=None) -> "BayesNet":
        """A network built from already validated parts (no checks, no copies)."""
        bn = cls([], _TRUSTED)
        bn.variables = {v.name: v for v in variables}
        bn.parents = {n: tuple(parents[n]) for n in bn.variables}
        bn.cpts = {n: cpts[n] for n in bn.variables}
        bn.order = tuple(order) if order is not None else bn._topological_order()
        bn.n_rows = n_rows
        bn.row_counts = dict(row_counts or {})
        bn.kind = kind
        return bn

    def restricted(self, names: Iterable[str]) -> "BayesNet":
        """The marginal network over ``names`` and their ancestors (barren nodes removed)."""
        keep = self.ancestors(names)
        vs = [self.variables[n] for n in self.variables if n in keep]
        return BayesNet._derived(vs, self.parents, self.cpts, self.n_rows,
                                 {k: v for k, v in self.row_counts.items() if k in keep}, self.kind,
                                 [n for n in self.order if n in keep])

    def check_covers(self, features: Iterable[str], who: str = "the classifier") -> None:
        for f in features:
            if f not in self.variables:
                raise DistributionError(f"the distribution does not cover feature '{f}', which {who} reads")

    def check_choice(self, protected: Sequence[str]) -> None:
        """Protected (choice) attributes must be roots: no edges into them."""
        for a in protected:
            if a not in self.variables:
                raise DistributionError(f"the distribution does not cover protected attribute '{a}'")
            if self.parents[a]:
                raise DistributionError(
                    f"protected attribute '{a}' has parents ({', '.join(self.parents[a])}) in the "
                    f"distribution; a group is chosen, not drawn, so no edges may point into it")

    def joint(self, assignment: Mapping[str, int]) -> float:
        """Pr of a full assignment (indices) of all variables."""
        p = 1.0
        for n in self.order:
            p *= float(self.row(n, assignment)[int(assignment[n])])
        return p

    def sample(self, n: int, rng=None, fixed: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
        """Ancestral sampling: ``n`` rows as value indices; ``fixed`` clamps variables."""
        rng = np.random.default_rng(rng)
        out: dict[str, np.ndarray] = {}
        fixed = dict(fixed or {})
        for name in self.order:
            if name in fixed:
                out[name] = np.full(n, int(fixed[name]), dtype=np.int64)
                continue
            t = self.cpts[name]
            pa = self.parents[name]
            rows = t[tuple(out[p] for p in pa)] if pa else np.broadcast_to(t, (n, t.shape[-1]))
            cum = np.cumsum(rows, axis=1)
            u = rng.random(n)[:, None]
            out[name] = np.minimum((u > cum).sum(axis=1), t.shape[-1] - 1).astype(np.int64)
        return out

    # ---- transformations (for FIF and path-specific causal fairness)

    def with_uniform(self, name: str, keep_for_children: bool = True) -> "BayesNet":
        """D_{-S} of FVGM's fairness influence functions for one feature.

        The classifier's input ``name`` becomes an independent uniform variable;
        with ``keep_for_children`` the original variable survives under the name
        ``name + "~orig"`` so that its children keep their dependence on it.
        """
        var = self.variables[name]
        vs, pa, cp = [], {}, {}
        orig = name + "~orig"
        kids = self.children(name)
        for n, v in self.variables.items():
            if n == name:
                if keep_for_children and kids:
                    vs.append(Variable(orig, v.values, v.bins))
                    pa[orig] = self.parents[n]
                    cp[orig] = self.cpts[n]
                vs.append(v)
                pa[n] = ()
                cp[n] = np.full(var.k, 1.0 / var.k)
            else:
                vs.append(v)
                pa[n] = tuple(orig if (p == name and keep_for_children) else p for p in self.parents[n])
                cp[n] = self.cpts[n]
                if name in self.parents[n] and not keep_for_children:
                    raise DistributionError(f"cannot drop '{name}': '{n}' depends on it")
        return BayesNet(vs, pa, cp, n_rows=self.n_rows, kind=self.kind)

    def with_parent_fixed(self, child: str, parent: str, value: int) -> "BayesNet":
        """The network where ``child`` sees ``parent = value`` (an edge-specific intervention)."""
        pa = list(self.parents[child])
        if parent not in pa:
            return self
        i = pa.index(parent)
        t = np.take(self.cpts[child], int(value), axis=i)
        pa.pop(i)
        parents = dict(self.parents)
        parents[child] = tuple(pa)
        cpts = dict(self.cpts)
        cpts[child] = t
        rc = dict(self.row_counts)
        if child in rc and rc[child].ndim > i:
            rc[child] = np.take(rc[child], int(value), axis=i)
        return BayesNet(list(self.variables.values()), parents, cpts, n_rows=self.n_rows,
                        row_counts=rc, kind=self.kind)

    def with_variables(self, extra: Sequence[Variable], parents, cpts) -> "BayesNet":
        vs = list(self.variables.values()) + list(extra)
        pa = dict(self.parents)
        pa.update(parents)
        cp = dict(self.cpts)
        cp.update(cpts)
        return BayesNet(vs, pa, cp, n_rows=self.n_rows, row_counts=self.row_counts, kind=self.kind)

    def __repr__(self) -> str:
        return (f"BayesNet({self.kind}, {len(self.variables)} variables, "
                f"{sum(len(p) for p in self.parents.values())} edges)")

    # ---- construction helpers

    @staticmethod
    def boolean(probs: Mapping[str, float], parents: Mapping[str, Sequence[str]] | None = None,
                cpts: Mapping[str, Mapping[tuple, float]] | None = None,
                choice: Sequence[str] = ()) -> "BayesNet":
        """A network over Boolean variables, as the papers write their examples.

        ``probs[x] = Pr[x = 1]`` for root variables; ``cpts[x]`` maps parent
        values (a tuple of 0/1 in ``parents[x]`` order) to ``Pr[x = 1 | parents]``.
        ``choice`` lists protected variables; their own probability is unused
        (a PPV conditions on the group), so they default to 1/2.
        """
        parents = dict(parents or {})
        cpts = dict(cpts or {})
        names = list(dict.fromkeys(list(choice) + list(probs) + list(cpts)))
        vs = [Variable.boolean(n) for n in names]
        tables = {}
        for n in names:
            pa = tuple(parents.get(n, ()))
            if pa:
                if n not in cpts:
                    raise DistributionError(f"'{n}' has parents but no conditional probabilities")
                t = np.zeros((2,) * len(pa))
                for key in itertools.product((0, 1), repeat=len(pa)):
                    if key not in cpts[n]:
                        raise DistributionError(
                            f"Pr[{n} | {', '.join(f'{p}={k}' for p, k in zip(pa, key))}] is missing")
                    t[key] = cpts[n][key]
                tables[n] = t
            else:
                tables[n] = probs.get(n, 0.5)
                if n in cpts:
                    raise DistributionError(f"'{n}' has conditional probabilities but no parents")
        for n, t in tables.items():
            arr = np.asarray(t, dtype=float)
            if np.any(arr < -PROB_TOL) or np.any(arr > 1 + PROB_TOL):
                raise DistributionError(f"probability {arr[(arr < 0) | (arr > 1)].flat[0]:g} for '{n}' is outside [0, 1]")
        return BayesNet(vs, parents, tables)


# --------------------------------------------------------------------------- estimation from data


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


# --------------------------------------------------------------------------- error bounds


@dataclass(frozen=True)
class ErrorBound:
    """Finite-sample error of a value computed from an estimated distribution.

    ``epsilon0``: Justicia's Theorem 3 / Corollary 4 read with constant 1: from
    k rows, n existential (protected) and m random variables, with probability
    1 - delta the estimated PPVs satisfy p_hat <= epsilon0 * p with
    epsilon0 = exp((n + ln(1/delta)) * ln(m) / k), hence DI_hat <= epsilon0 * DI and
    SP_hat <= epsilon0 * SP.
    ``ppv_additive``: our Hoeffding bound: with probability 1 - delta every
    reported PPV is within this distance of the PPV under the true distribution
    (sum over the classifier's variables of the worst CPT row's total-variation
    bound, union bound over all rows).  ``value_additive`` is its consequence for
    the metric (2x for a difference; None for a ratio).
    """

    delta: float
    n_rows: int | None
    epsilon0: float | None
    ppv_additive: float | None
    value_additive: float | None = None

    def as_dict(self) -> dict:
        return {"delta": self.delta, "n_rows": self.n_rows, "epsilon0": self.epsilon0,
                "ppv_additive": self.ppv_additive, "value_additive": self.value_additive}


def justicia_epsilon0(n_rows: int, n_exists: int, n_random: int, delta: float = 0.05) -> float:
    """epsilon_0 of Justicia's Theorem 3 solved for k = n_rows (constant taken as 1)."""
    if n_rows <= 0:
        return math.inf
    if not 0 < delta < 1:
        raise DistributionError("the confidence parameter delta must be in (0, 1)")
    m = max(n_random, 2)
    return math.exp((n_exists + math.log(1 / delta)) * math.log(m) / n_rows)


def parent_marginal(bn: BayesNet, name: str, evidence: Mapping[str, int] | None = None) -> np.ndarray:
    """Pr[parents of ``name`` = r | evidence] under ``bn``: one entry per CPT row of ``name``.

    Exact, by summing the product of the CPTs of the parents' ancestors
    (``numpy.einsum``); ``evidence`` clamps variables to value indices.
    """
    pa = bn.parents[name]
    if not pa:
        return np.ones(())
    evidence = dict(evidence or {})
    keep = [n for n in bn.order if n in bn.ancestors(pa)]
    axis = {n: i for i, n in enumerate(keep)}
    operands: list = []
    for n in keep:
        t = bn.cpts[n]
        if n in evidence:
            ind = np.zeros(bn.variables[n].k)
            ind[int(evidence[n])] = 1.0
            t = t * ind
        operands += [t, [axis[q] for q in bn.parents[n]] + [axis[n]]]
    out = np.einsum(*operands, [axis[q] for q in pa], optimize="greedy")
    total = out.sum()
    return out / total if total > 0 else out


def _log_2k_minus_2(k: int) -> float:
    """ln(2^k - 2) without overflow (k >= 2)."""
    return k * math.log(2) + math.log1p(-2.0 ** (1 - k)) if k < 1000 else k * math.log(2)


def ppv_error_bound(bn: BayesNet, names: Iterable[str], delta: float = 0.05,
                    group: Mapping[str, int] | None = None) -> float | None:
    """Hoeffding bound on |PPV_hat - PPV| for a classifier reading ``names``.

    Write both distributions as products of CPTs in topological order and
    telescope: replacing the true CPT of variable j by its estimate moves
    E[f] (f in [0, 1]) by at most sum_r Pr_hat[pa_j = r] * TV_r, where the
    parent weights are those of the *estimated* network (the variables before j
    are already estimated in the hybrid) and TV_r is the total-variation error
    of row r.  A k-valued row estimated from n rows has
    TV_r <= min(1, sqrt((ln(2^k - 2) + ln(R / delta)) / (2 n))) for all R rows in
    play at once with probability 1 - delta (the L1 deviation inequality of
    Weissman et al. 2003, P(||p_hat - p||_1 >= e) <= (2^k - 2) exp(-n e^2 / 2),
    and a union bound); an empty row has TV_r <= 1 and weighs what the estimate
    gives its parents.
    Returns None for a declared network (no sample).
    """
    if bn.n_rows is None or not bn.row_counts:
        return None
    group = dict(group or {})
    use = [n for n in bn.order if n in bn.ancestors(names) and n not in group]
    counts = {}
    for n in use:
        rc = bn.row_counts.get(n)
        if rc is None:
            return None
        counts[n] = np.asarray(rc, dtype=float)
    R = sum(max(c.size, 1) for c in counts.values()) or 1
    tot = 0.0
    for n in use:
        k = bn.variables[n].k
        n_r = counts[n].reshape(bn.cpts[n].shape[:-1])
        with np.errstate(divide="ignore"):
            tv = np.minimum(1.0, np.sqrt((_log_2k_minus_2(k) + math.log(R / delta)) / (2 * n_r)))
        w = parent_marginal(bn, n, group)
        tot += float(np.sum(w * tv))
    return float(min(tot, 1.0))


# --------------------------------------------------------------------------- backend results


def all_groups(bn: BayesNet, protected: Sequence[str]) -> list[tuple[int, ...]]:
    """Every compound group: a tuple of value indices, one per protected attribute."""
    for a in protected:
        if a not in bn.variables:
            raise DistributionError(f"the distribution does not cover protected attribute '{a}'")
    return list(itertools.product(*[range(bn.variables[a].k) for a in protected]))


@dataclass(frozen=True)
class GroupPPVs:
    """What a backend returns: PPVs per compound group (value indices, in
    ``protected`` order) and/or the most and least favoured group.

    ``status`` is "ok" or "unknown" (then ``reason`` says why and no value is
    given).  ``method`` is "enumerate" (one RE-SSAT / S3P per group) or "learn"
    (ER-SSAT for the most favoured group, ER-SSAT on the negated classifier for
    the least favoured one; S3P with exists / forall).
    """

    protected: tuple
    per_group: dict
    best: tuple | None          # (group, ppv)
    worst: tuple | None         # (group, ppv)
    status: str = "ok"
    reason: str | None = None
    seconds: float = 0.0
    backend: str = ""
    method: str = ""
    stats: dict = field(default_factory=dict)

    @staticmethod
    def from_values(protected, values: Mapping, **kw) -> "GroupPPVs":
        vals = {g: p for g, p in values.items() if p is not None and not math.isnan(p)}
        best = max(vals.items(), key=lambda kv: (kv[1], [-x for x in kv[0]])) if vals else None
        worst = min(vals.items(), key=lambda kv: (kv[1], kv[0])) if vals else None
        return GroupPPVs(tuple(protected), dict(values), best, worst, **kw)

    @staticmethod
    def unknown(protected, reason: str, **kw) -> "GroupPPVs":
        return GroupPPVs(tuple(protected), {}, None, None, status="unknown", reason=reason, **kw)
