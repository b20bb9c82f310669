"""The search space of the batched falsifier and of the k-discrimination search.

Everything is in *model-input space*: a point is the vector the model reads.

A search *state* is one row of a float64 matrix of width ``Space.width``::

    [ x (the model input, d columns) | band representatives | relaxed offsets ]

* ``x``: the shared, non-protected part of an individual; its protected
  coordinates are ignored (every state is expanded into its K protected
  counterfactuals before evaluation).
* band representatives: a protected attribute declared by *bands* (intervals,
  e.g. two age bands) is set, in the counterfactual of band j, to a value the
  search chooses inside band j (one extra column per band).
* relaxed offsets: a relaxed pre-condition ``|x.a - x'.a| <= t`` lets the
  second individual of a pair move coordinate ``a`` by an offset in [-t, t]
  (one extra column per relaxed coordinate; only pairs use them).

``Space.expand(S)`` gives the K counterfactuals of every state, ``(n, K, d)``;
``Space.expand_prime(S)`` the same with the relaxed offsets applied (the
second member of a pair). K is the product of the attributes' value counts
(every combination, in ``itertools.product`` order: ``Space.combos``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np


@dataclass(frozen=True, eq=False)
class Box:
    """The domain: per-coordinate bounds, integrality, and one-hot groups.

    lo, hi:         float arrays (d,), inclusive bounds.
    integer:        bool array (d,): the coordinate takes integer values only.
    onehot_groups:  tuples of coordinates of which exactly one is 1 and the rest 0.
    """

    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray
    onehot_groups: tuple[tuple[int, ...], ...] = ()

    @staticmethod
    def make(lo, hi, integer=None, onehot_groups=()) -> "Box":
        lo = np.array(lo, dtype=np.float64).reshape(-1)
        hi = np.array(hi, dtype=np.float64).reshape(-1)
        if lo.shape != hi.shape:
            raise ValueError(f"lo and hi differ in shape: {lo.shape} vs {hi.shape}")
        if np.any(lo > hi):
            bad = int(np.argmax(lo > hi))
            raise ValueError(f"coordinate {bad} has lo {lo[bad]} > hi {hi[bad]}")
        if integer is None:
            integer = np.zeros(lo.shape, dtype=bool)
        elif isinstance(integer, bool):
            integer = np.full(lo.shape, integer, dtype=bool)
        else:
            integer = np.array(integer, dtype=bool).reshape(-1)
            if integer.shape != lo.shape:
                raise ValueError("the integer mask does not match the bounds")
        groups = tuple(tuple(int(i) for i in g) for g in onehot_groups)
        for g in groups:
            integer[list(g)] = True
            lo[list(g)] = np.maximum(lo[list(g)], 0.0)
            hi[list(g)] = np.minimum(hi[list(g)], 1.0)
        lo = np.where(integer, np.ceil(lo), lo)
        hi = np.where(integer, np.floor(hi), hi)
        return Box(lo, hi, integer, groups)

    @property
    def dim(self) -> int:
        return int(self.lo.shape[0])

    def contains(self, X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Bool (n,): rows inside the bounds, integral where required, one-hot groups valid."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        ok = np.all((X >= self.lo - tol) & (X <= self.hi + tol), axis=1)
        if self.integer.any():
            xi = X[:, self.integer]
            ok &= np.all(np.abs(xi - np.round(xi)) <= tol, axis=1)
        for g in self.onehot_groups:
            ok &= np.abs(X[:, list(g)].sum(axis=1) - 1.0) <= tol
        return ok

    def project(self, X: np.ndarray) -> np.ndarray:
        """Clip into the bounds, round integer coordinates, and make each one-hot group a unit vector."""
        X = np.clip(np.asarray(X, dtype=np.float64), self.lo, self.hi)
        if self.integer.any():
            X[:, self.integer] = np.round(X[:, self.integer])
        for g in self.onehot_groups:
            cols = list(g)
            arg = np.argmax(X[:, cols], axis=1)
            X[:, cols] = 0.0
            X[np.arange(X.shape[0]), np.asarray(cols)[arg]] = 1.0
        return X


@dataclass(frozen=True, eq=False)
class Protected:
    """One protected attribute and the values its counterfactuals take.

    index:   the model-input coordinates the attribute occupies (one for a
             label-coded attribute, the group for a one-hot attribute).
    values:  the point values: each a tuple assigning every coordinate of ``index``.
    bands:   instead of values, for a one-coordinate attribute: intervals
             (lo, hi); the search picks one representative inside each band.
    name:    for messages and reports.
    """

    index: tuple[int, ...]
    values: tuple[tuple[float, ...], ...] = ()
    bands: tuple[tuple[float, float], ...] = ()
    name: str = ""

    def __post_init__(self):
        if bool(self.values) == bool(self.bands):
            raise ValueError(f"protected attribute {self.name or self.index}: give either values or bands")
        if self.bands and len(self.index) != 1:
            raise ValueError(f"protected attribute {self.name or self.index}: bands need a single coordinate")
        for v in self.values:
            if len(v) != len(self.index):
                raise ValueError(f"protected attribute {self.name or self.index}: value {v} does not match its coordinates")

    @staticmethod
    def label(index: int, codes: Sequence[float], name: str = "") -> "Protected":
        """A label-coded attribute at one coordinate taking the given integer codes."""
        return Protected((int(index),), tuple((float(c),) for c in codes), (), name)

    @staticmethod
    def onehot(indices: Sequence[int], name: str = "") -> "Protected":
        """A one-hot attribute: its counterfactuals are the group's unit vectors."""
        idx = tuple(int(i) for i in indices)
        vals = tuple(tuple(1.0 if j == i else 0.0 for j in range(len(idx))) for i in range(len(idx)))
        return Protected(idx, vals, (), name)

    @staticmethod
    def banded(index: int, bands: Sequence[tuple[float, float]], name: str = "") -> "Protected":
        """A one-coordinate attribute whose counterfactuals range over bands (intervals)."""
        return Protected((int(index),), (), tuple((float(a), float(b)) for a, b in bands), name)

    @property
    def size(self) -> int:
        return len(self.values) if self.values else len(self.bands)


@dataclass(frozen=True, eq=False)
class Gene:
    """One unit the mutation operator changes: a coordinate, a one-hot group, a band
    representative or a relaxed offset (all as columns of the state matrix)."""

    kind: str                 # "coord" | "group" | "band" | "relax"
    cols: tuple[int, ...]     # state columns
    lo: float = 0.0
    hi: float = 0.0
    integer: bool = False


@dataclass(eq=False)
class Space:
    """A box, the protected attributes, and the relaxed coordinates (pairs only)."""

    box: Box
    protected: tuple[Protected, ...]
    relaxed: Mapping[int, float] = field(default_factory=dict)

    def __post_init__(self):
        self.protected = tuple(self.protected)
        if not self.protected:
            raise ValueError("at least one protected attribute is needed")
        d = self.box.dim
        self.d = d
        pcols: list[int] = []
        for p in self.protected:
            for i in p.index:
                if not 0 <= i < d:
                    raise ValueError(f"protected coordinate {i} is outside the input width {d}")
                if i in pcols:
                    raise ValueError(f"coordinate {i} belongs to two protected attributes")
                pcols.append(i)
        self.protected_cols = np.array(sorted(pcols), dtype=np.int64)
        self.relaxed = {int(k): float(v) for k, v in dict(self.relaxed).items()}
        for i in self.relaxed:
            if i in pcols:
                raise ValueError(f"coordinate {i} is both protected and relaxed")
        # extra state columns
        col = d
        self._band_cols: list[list[int]] = []
        for p in self.protected:
            cols = []
            for _ in p.bands:
                cols.append(col)
                col += 1
            self._band_cols.append(cols)
        self._relax_cols: dict[int, int] = {}
        for i in sorted(self.relaxed):
            self._relax_cols[i] = col
            col += 1
        self.width = col
        self.combos = np.array(list(itertools.product(*[range(p.size) for p in self.protected])), dtype=np.int64)
        self.K = int(self.combos.shape[0])
        # shared (non-protected) coordinates of x
        mask = np.ones(d, dtype=bool)
        mask[self.protected_cols] = False
        self.shared_mask = mask
        # key columns: what identifies an individual (shared part + band representatives)
        key_cols = [i for i in range(d) if mask[i]] + [c for cols in self._band_cols for c in cols]
        self.key_cols = np.array(key_cols, dtype=np.int64)
        # genes
        genes: list[Gene] = []
        in_group = set()
        for g in self.box.onehot_groups:
            in_group.update(g)
            if all(mask[i] for i in g):
                if len(g) > 1:
                    genes.append(Gene("group", tuple(g), 0.0, 1.0, True))
            elif any(mask[i] for i in g):
                raise ValueError(f"one-hot group {g} is only partly protected")
        for i in range(d):
            if mask[i] and i not in in_group and self.box.hi[i] > self.box.lo[i]:
                genes.append(Gene("coord", (i,), float(self.box.lo[i]), float(self.box.hi[i]), bool(self.box.integer[i])))
        for p, cols in zip(self.protected, self._band_cols):
            i = p.index[0]
            for (a, b), c in zip(p.bands, cols):
                lo_, hi_ = self._band_range(i, a, b)
                if hi_ > lo_:
                    genes.append(Gene("band", (c,), lo_, hi_, bool(self.box.integer[i])))
        for i, c in self._relax_cols.items():
            t = self.relaxed[i]
            integer = bool(self.box.integer[i])
            if integer:
                t = float(np.floor(t))
            if t > 0:
                genes.append(Gene("relax", (c,), -t, t, integer))
        self.genes = tuple(genes)
        if not self.genes:
            raise ValueError("nothing to search: every shared coordinate is fixed")
        self._gene_weights = np.ones(len(self.genes)) / len(self.genes)

    # ------------------------------------------------------------------ helpers
    def _band_range(self, i: int, a: float, b: float) -> tuple[float, float]:
        lo_ = max(a, float(self.box.lo[i]))
        hi_ = min(b, float(self.box.hi[i]))
        if self.box.integer[i]:
            lo_, hi_ = float(np.ceil(lo_)), float(np.floor(hi_))
        if hi_ < lo_:
            raise ValueError(f"band [{a}, {b}] of coordinate {i} is empty inside the domain")
        return lo_, hi_

    @property
    def has_relaxed(self) -> bool:
        return bool(self._relax_cols)

    def combo_labels(self) -> list[str]:
        """One readable label per counterfactual, e.g. 'race=2,sex=1'."""
        out = []
        for row in self.combos:
            parts = []
            for p, j in zip(self.protected, row):
                nm = p.name or "/".join(str(i) for i in p.index)
                if p.values:
                    v = p.values[j]
                    val = str(int(v[0])) if len(v) == 1 and float(v[0]).is_integer() else (
                        str(v[0]) if len(v) == 1 else f"#{int(np.argmax(v))}")
                else:
                    a, b = p.bands[j]
                    val = f"[{a:g},{b:g}]"
                parts.append(f"{nm}={val}")
            out.append(",".join(parts))
        return out

    # ------------------------------------------------------------------ states
    def from_inputs(self, X: np.ndarray) -> np.ndarray:
        """States from model-input rows (data rows, solver witnesses): projected into the
        box; band representatives from the row's own value (clipped into each band)."""
        X = self.box.project(np.atleast_2d(np.asarray(X, dtype=np.float64)))
        n = X.shape[0]
        S = np.zeros((n, self.width), dtype=np.float64)
        S[:, : self.d] = X
        for p, cols in zip(self.protected, self._band_cols):
            i = p.index[0] if p.bands else None
            for (a, b), c in zip(p.bands, cols):
                lo_, hi_ = self._band_range(i, a, b)
                S[:, c] = np.clip(X[:, i], lo_, hi_)
        return S

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Uniform random states (integer coordinates uniform over their integers)."""
        b = self.box
        U = rng.random((n, self.d))
        X = b.lo + U * (b.hi - b.lo)
        if b.integer.any():
            # uniform over {lo..hi}: floor(lo + U*(hi-lo+1))
            Xi = np.floor(b.lo + U * (b.hi - b.lo + 1.0))
            X = np.where(b.integer, np.minimum(Xi, b.hi), X)
        for g in b.onehot_groups:
            cols = np.asarray(g)
            X[:, cols] = 0.0
            X[np.arange(n), cols[rng.integers(0, len(cols), n)]] = 1.0
        S = np.zeros((n, self.width), dtype=np.float64)
        S[:, : self.d] = X
        for p, cols in zip(self.protected, self._band_cols):
            # a band of one value inside the domain has no gene: its representative is that value (it was
            # left at 0, outside the band: `int in [-6, -4] bins [-6]` searched counterfactuals at a = 0)
            for (a, b), c in zip(p.bands, cols):
                S[:, c] = self._band_range(p.index[0], a, b)[0]
        for gene in self.genes:
            if gene.kind in ("band",):
                S[:, gene.cols[0]] = self._uniform(rng, n, gene)
        return S

    @staticmethod
    def _uniform(rng, n, gene: Gene) -> np.ndarray:
        if gene.integer:
            return rng.integers(int(gene.lo), int(gene.hi) + 1, n).astype(np.float64)
        return gene.lo + rng.random(n) * (gene.hi - gene.lo)

    def mutate(self, rng: np.random.Generator, S: np.ndarray, n_children: int,
               max_genes: int = 3, p_uniform: float = 0.3) -> np.ndarray:
        """``n_children`` mutants of every state (row-major: parent i's children are rows
        i*n_children ... i*n_children + n_children - 1). Each mutant changes 1..max_genes
        genes: a local step (Gaussian, scale drawn from 1%..30% of the range, at least
        one unit for integers) or, with probability ``p_uniform``, a fresh uniform value."""
        S = np.repeat(np.asarray(S, dtype=np.float64), n_children, axis=0)
        m = S.shape[0]
        if m == 0:
            return S
        G = len(self.genes)
        n_genes = rng.integers(1, max_genes + 1, m)
        rows = np.repeat(np.arange(m), n_genes)
        which = rng.integers(0, G, rows.shape[0])
        for gi in np.unique(which):
            gene = self.genes[gi]
            r = rows[which == gi]
            k = r.shape[0]
            if gene.kind == "group":
                # a row may draw the same gene twice: one category per row, or two of one
                # one-hot block would be switched on (a state that is no domain point)
                r = np.unique(r)
                cols = np.asarray(gene.cols)
                S[np.ix_(r, cols)] = 0.0
                S[r, cols[rng.integers(0, len(cols), r.shape[0])]] = 1.0
                continue
            c = gene.cols[0]
            span = gene.hi - gene.lo
            uni = rng.random(k) < p_uniform
            scale = span * np.exp(rng.uniform(np.log(0.01), np.log(0.3), k))
            step = rng.standard_normal(k) * scale
            if gene.integer:
                step = np.round(step)
                zero = step == 0
                step[zero] = rng.choice([-1.0, 1.0], int(zero.sum()))
            new = S[r, c] + step
            new = np.where(uni, self._uniform(rng, k, gene), new)
            new = np.clip(new, gene.lo, gene.hi)
            if gene.integer:
                new = np.round(new)
            S[r, c] = new
        return S

    def keys(self, S: np.ndarray) -> list[bytes]:
        """A hashable key per state identifying the individual (shared coordinates and band
        representatives), for counting distinct discriminatory instances."""
        K = np.ascontiguousarray(np.round(S[:, self.key_cols], 9))
        K[K == 0] = 0.0  # -0.0 and 0.0 alike
        return [r.tobytes() for r in K]

    def hash_keys(self, S: np.ndarray) -> np.ndarray:
        """A 64-bit hash per state of the same key as ``keys`` (for counting millions of
        distinct individuals in little memory; collisions are negligible)."""
        K = np.ascontiguousarray(np.round(np.asarray(S, dtype=np.float64)[:, self.key_cols], 9))
        K[K == 0] = 0.0
        U = K.view(np.uint64)
        if not hasattr(self, "_hash_mult"):
            r = np.random.default_rng(0x5EED)
            self._hash_mult = r.integers(1, 2**63 - 1, U.shape[1], dtype=np.uint64) | np.uint64(1)
        with np.errstate(over="ignore"):
            h = np.zeros(U.shape[0], dtype=np.uint64)
            for c in range(U.shape[1]):
                x = U[:, c] ^ (U[:, c] >> np.uint64(29))
                h = (h ^ (x * self._hash_mult[c])) * np.uint64(0x9E3779B97F4A7C15)
                h ^= h >> np.uint64(31)
        return h

    # ------------------------------------------------------------------ expansion
    def _assign(self, X: np.ndarray, S: np.ndarray) -> np.ndarray:
        """Write the protected values of every combination into X (n, K, d)."""
        for a, (p, cols) in enumerate(zip(self.protected, self._band_cols)):
            choice = self.combos[:, a]
            if p.values:
                V = np.asarray(p.values, dtype=np.float64)  # (size, len(index))
                X[:, :, list(p.index)] = V[choice][None, :, :]
            else:
                R = S[:, cols]  # (n, bands)
                X[:, :, p.index[0]] = R[:, choice]
        return X

    def expand(self, S: np.ndarray) -> np.ndarray:
        """(n, width) states -> (n, K, d) counterfactual model inputs."""
        S = np.asarray(S, dtype=np.float64)
        X = np.repeat(S[:, None, : self.d], self.K, axis=1)
        return self._assign(X, S)

    def expand_prime(self, S: np.ndarray) -> np.ndarray:
        """Like ``expand`` with the relaxed offsets applied (the second member of a pair)."""
        X = self.expand(S)
        if self._relax_cols:
            for i, c in self._relax_cols.items():
                X[:, :, i] = np.clip(X[:, :, i] + S[:, c][:, None], self.box.lo[i], self.box.hi[i])
        return X
