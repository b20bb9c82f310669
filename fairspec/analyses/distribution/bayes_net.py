"""The Bayesian network every distribution is (fairspec.analyses.distribution): independent marginals
(no edges), Justicia's distribution conditional on the protected group, FVGM's learned network, or
declared CPTs; joints, sampling, and the interventions FVGM's influence and path-specific effects use."""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .variables import DistributionError, PROB_TOL, Variable
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


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
            raise DistributionError(f"probability {_spec_number(bad)} for '{name}' is outside [0, 1]")
        sums = t.sum(axis=-1)
        if np.any(np.abs(sums - 1.0) > 1e-6):
            where = np.argwhere(np.abs(sums - 1.0) > 1e-6)[0]
            row = ", ".join(f"{p}={self.variables[p].values[i]}" for p, i in zip(pa, where))
            raise DistributionError(
                f"the probabilities of '{name}'" + (f" given {row}" if row else "")
                + f" sum to {_spec_number(round(float(sums[tuple(where)]), 12))}, not 1")
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
                raise DistributionError(f"probability {_spec_number(arr[(arr < 0) | (arr > 1)].flat[0])} for '{n}' is outside [0, 1]")
        return BayesNet(vs, parents, tables)
