"""The pair query (:class:`PairQuery`): a pure description of what a ``bab-certificate`` proves --
the network's layers, the box of its inputs, the tied, free and relaxed inputs, the protected
cases, the post-condition and its exact threshold -- with the index layout of its node LPs
(``_Layout``), and :func:`moved_threshold`, the claim that makes the runtime's floats fair.
See :mod:`fairspec.certify.pairlp` for the whole picture."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction

import numpy as np

from fairspec.certify.claims import net_fingerprint, pair_scope, tied_inputs
from fairspec.certify.exact import threshold_of
from fairspec.certify.network import argmax_layers, as_layers
from fairspec.certify.rounding import float_up

POSTS = ("label", "logit", "prob")


@dataclass(frozen=True, eq=False)
class PairQuery:
    """A pair query (see the module docstring). ``threshold`` is read exactly (a Fraction, an int,
    a float bit for bit or a decimal str); ``relaxed`` tolerances as the spec writes them (a float
    through its shortest decimal, then rounded up: the LP's set is never smaller than the spec's)."""

    layers: tuple
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray | None = None
    onehot_groups: tuple = ()
    free: tuple = ()
    must_differ: tuple | None = None
    relaxed: tuple = ()
    post: str = "label"
    threshold: object = 0
    strict: bool = True
    max_cases: int = 100_000
    coupling: bool = False

    def __post_init__(self):
        layers = as_layers(self.layers)
        if layers[-1][0].shape[0] != 1:
            raise ValueError("the network must end in one logit (one output)")
        # the network as given, before the identity layer below: what a proof records it is about
        object.__setattr__(self, "_given", len(layers))
        if layers[-1][2]:
            layers = layers + [(np.ones((1, 1)), np.zeros(1), False)]
        n = layers[0][0].shape[1]
        lo = np.array(self.lo, dtype=np.float64).reshape(-1)
        hi = np.array(self.hi, dtype=np.float64).reshape(-1)
        if lo.shape != (n,) or hi.shape != (n,):
            raise ValueError(f"the box must have {n} sides")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError("a pair query needs a finite box")
        integer = np.zeros(n, dtype=bool) if self.integer is None else np.array(self.integer, dtype=bool).reshape(-1)
        groups = tuple(tuple(int(i) for i in g) for g in self.onehot_groups)
        for g in groups:
            for i in g:
                integer[i] = True
                lo[i], hi[i] = max(lo[i], 0.0), min(hi[i], 1.0)
        lo = np.where(integer, np.ceil(lo), lo)
        hi = np.where(integer, np.floor(hi), hi)
        free = tuple(sorted({int(i) for i in self.free}))
        must = free if self.must_differ is None else tuple(sorted({int(i) for i in self.must_differ}))
        if not set(must) <= set(free):
            raise ValueError("must_differ must be a subset of the free inputs (cases are enumerated over them)")
        relaxed = tuple(sorted((int(i), float_up(threshold_of(t))) for i, t in self.relaxed))
        rset = {i for i, _ in relaxed}
        if rset & set(free):
            raise ValueError("an input is both free and relaxed")
        for g in groups:
            if set(g) & set(free) and not set(g) <= set(free):
                raise ValueError(f"one-hot group {g} is partly free")
            if set(g) & rset:
                raise ValueError(f"one-hot group {g} cannot be relaxed")
        for i in free:
            if not integer[i]:
                raise ValueError(f"free input {i} is continuous: its cases cannot be enumerated")
        if self.post not in POSTS:
            raise ValueError(f"post must be one of {POSTS}")
        thr = threshold_of(self.threshold) if isinstance(self.threshold, str) else _exact(self.threshold)
        for name, v in (("layers", tuple(layers)), ("lo", lo), ("hi", hi), ("integer", integer),
                        ("onehot_groups", groups), ("free", free), ("must_differ", must),
                        ("relaxed", relaxed), ("threshold", thr), ("strict", bool(self.strict))):
            object.__setattr__(self, name, v)
        object.__setattr__(self, "_zeros", [np.zeros(W.shape[0]) for W, _, _ in layers])
        object.__setattr__(self, "cases", self._cases())
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "layout", _Layout(self))

    # -- derived -------------------------------------------------------------------------------
    @cached_property
    def net_sha(self) -> str:
        """SHA-256 of the network as given (:func:`fairspec.certify.claims.net_fingerprint`; without
        the identity layer a ReLU output gets): what a proof records it is about. Computed when a
        record is made, once: most queries (smt maximize's bisection) never record it."""
        return net_fingerprint(self.layers[: self._given])

    @property
    def n(self) -> int:
        return self.layers[0][0].shape[1]

    @property
    def tied(self) -> tuple[int, ...]:
        return tied_inputs(self.n, self.free, self.relaxed)

    @property
    def tied_groups(self) -> tuple:
        fs = set(self.free)
        return tuple(g for g in self.onehot_groups if not set(g) & fs)

    @property
    def free_groups(self) -> tuple:
        fs = set(self.free)
        return tuple(g for g in self.onehot_groups if set(g) & fs)

    def _cases(self) -> tuple:
        """Every ordered (a, a') of free-input values (vectors over ``free``) differing on must_differ."""
        if not self.free:
            return ((np.zeros(0), np.zeros(0)),)
        pos = {i: k for k, i in enumerate(self.free)}
        factors = []
        in_group = set()
        for g in self.free_groups:
            in_group.update(g)
            allowed = [i for i in g if self.hi[i] >= 1]
            fixed = [i for i in g if self.lo[i] >= 1]
            if fixed:
                allowed = fixed[:1] if len(fixed) == 1 else []
            factors.append([(tuple(pos[j] for j in g), tuple(1.0 if j == i else 0.0 for j in g)) for i in allowed])
        for i in self.free:
            if i in in_group:
                continue
            vals = np.arange(self.lo[i], self.hi[i] + 0.5)
            factors.append([((pos[i],), (float(v),)) for v in vals])
        count = math.prod(len(f) for f in factors)
        if count * count > self.max_cases * 4:
            raise ValueError(f"{count} values of the free inputs: too many cases")
        vecs = [np.zeros(len(self.free))]
        for f in factors:
            nxt = []
            for v in vecs:
                for idx, val in f:
                    w = v.copy()
                    w[list(idx)] = val
                    nxt.append(w)
            vecs = nxt
        mpos = [pos[i] for i in self.must_differ]
        cases = [(a, b) for a in vecs for b in vecs if not mpos or np.any(a[mpos] != b[mpos])]
        if len(cases) > self.max_cases:
            raise ValueError(f"{len(cases)} protected cases exceed {self.max_cases}")
        return tuple(cases)

    def scope(self) -> dict:
        """The pair question's shape as a proof records it (:func:`fairspec.certify.claims.pair_scope`)."""
        return pair_scope(self.net_sha, self.integer, self.onehot_groups, self.free, self.must_differ,
                          self.relaxed, tolerances_read=True)

    def class_base(self, readout, base_net) -> str | None:
        """The fingerprint of the K-output network ``base_net`` when the query's network is exactly
        its class score :func:`fairspec.certify.network.argmax_layers` ``(base_net, c)`` for the
        readout ``("argmax", c)`` (compared by fingerprint); None otherwise (no base network, another
        class, another network, a readout that names no class). What a per-class part records as its
        K-output network (``detail["base_net"]``), checked where it is minted."""
        from fairspec.certify.argmax import class_readout

        got = class_readout(readout)
        if base_net is None or got is None:
            return None
        try:
            c = got[0]
            base = as_layers(base_net)
            want = argmax_layers(base, c)
        except (ValueError, TypeError, IndexError):
            return None
        if net_fingerprint(want) != self.net_sha:
            return None
        return net_fingerprint(base)

    def box(self) -> list:
        """The box ``[lo, hi]`` of the query (integral inputs rounded inward) as lists of floats."""
        return [[float(v) for v in self.lo], [float(v) for v in self.hi]]

    def describe(self) -> str:
        op = "<" if self.strict else "<="
        m = {"label": "min(z, -z')", "logit": "z - z'", "prob": "sigmoid(z) - sigmoid(z')"}[self.post]
        return f"{m} {op} {self.threshold} for every pair of the box ({len(self.cases)} protected cases)"

    @classmethod
    def from_problem(cls, problem, threshold, strict: bool, post: str | None = None,
                     coupling: bool = False) -> "PairQuery":
        """From a :class:`fairspec.backends.pair.PairProblem` (read by duck typing)."""
        return cls(as_layers(problem.net), problem.lo, problem.hi, problem.integer, problem.onehot_groups,
                   problem.free, problem.must_differ, problem.relaxed, post or problem.post, threshold, strict,
                   coupling=coupling)

    @property
    def first_shift(self) -> bool:
        """The first layer's pre-activations of the two copies differ by a constant per case
        (no relaxed input): ``p' = p - d`` with ``d = W[:, free] (a - a')`` (the coupling rows'
        hull facets, :func:`fairspec.certify.pairlp.nodes.node_lp`)."""
        return self.coupling and not self.relaxed and bool(self.free)


def _exact(v) -> Fraction:
    if isinstance(v, Fraction):
        return v
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    f = float(v)
    if not math.isfinite(f):
        raise ValueError("the threshold must be finite")
    return Fraction(f)


class _Layout:
    """Variable and row indices of the node LPs of a query (the same for every node and case)."""

    def __init__(self, q: PairQuery):
        n = q.n
        tied = set(q.tied)
        self.x = np.arange(n)
        xp = np.arange(n)
        nxt = n
        for i in range(n):
            if i not in tied:
                xp[i] = nxt
                nxt += 1
        self.xp = xp
        self.p = [[], []]
        self.h = [[], []]
        for c in (0, 1):
            for W, b, relu in q.layers:
                k = W.shape[0]
                self.p[c].append(np.arange(nxt, nxt + k))
                nxt += k
                if relu:
                    self.h[c].append(np.arange(nxt, nxt + k))
                    nxt += k
                else:
                    self.h[c].append(None)
        self.z = (int(self.p[0][-1][0]), int(self.p[1][-1][0]))
        self.t = None
        if q.post == "label":
            self.t = nxt
            nxt += 1
        self.n_vars = nxt
        # ---- equality rows: p - W h_prev = b (both copies), one-hot sums of tied groups
        er, ec, ev, eb = [], [], [], []
        row = 0
        for c in (0, 1):
            prev = self.x if c == 0 else self.xp
            for k, (W, b, relu) in enumerate(q.layers):
                P = self.p[c][k]
                nz_r, nz_c = np.nonzero(W)
                rows = row + np.arange(W.shape[0])
                er += [rows, rows[nz_r]]
                ec += [P, prev[nz_c]]
                ev += [np.ones(W.shape[0]), -W[nz_r, nz_c]]
                eb.append(b)
                row += W.shape[0]
                prev = self.h[c][k] if relu else P
        for g in q.tied_groups:
            er.append(np.full(len(g), row))
            ec.append(np.asarray(g))
            ev.append(np.ones(len(g)))
            eb.append(np.ones(1))
            row += 1
        self.eq = (row, np.concatenate(er), np.concatenate(ec), np.concatenate(ev))
        self.b_eq = np.concatenate(eb)
        # ---- inequality rows
        ur, uc, uv = [], [], []
        row = 0
        self.relu_rows = [[], []]      # per copy per relu layer: (row of h >= p, row of triangle, index of s in uv)
        nv = 0
        for c in (0, 1):
            for k, (W, b, relu) in enumerate(q.layers):
                if not relu:
                    self.relu_rows[c].append(None)
                    continue
                P, H = self.p[c][k], self.h[c][k]
                m = len(P)
                ra = row + np.arange(m)                  # p - h <= 0
                rb = row + m + np.arange(m)              # h - s p <= r
                ur += [ra, ra, rb, rb]
                uc += [P, H, H, P]
                uv += [np.ones(m), -np.ones(m), np.ones(m), np.zeros(m)]
                s_at = nv + 3 * m + np.arange(m)         # where the -s coefficients sit in the value list
                nv += 4 * m
                self.relu_rows[c].append((ra, rb, s_at))
                row += 2 * m
        self.rel_rows = []
        for i, t in q.relaxed:
            ur += [np.array([row, row]), np.array([row + 1, row + 1])]
            uc += [np.array([self.x[i], self.xp[i]]), np.array([self.xp[i], self.x[i]])]
            uv += [np.array([1.0, -1.0]), np.array([1.0, -1.0])]
            nv += 4
            self.rel_rows.append((row, t))
            row += 2
        self.diff_rows = []                              # per relu layer: rows h - h' <= DU, h' - h <= -DL
        for k, (W, b, relu) in enumerate(q.layers):
            if not relu:
                continue
            H0, H1 = self.h[0][k], self.h[1][k]
            m = len(H0)
            r1 = row + np.arange(m)
            r2 = row + m + np.arange(m)
            ur += [r1, r1, r2, r2]
            uc += [H0, H1, H1, H0]
            uv += [np.ones(m), -np.ones(m), np.ones(m), -np.ones(m)]
            nv += 4 * m
            self.diff_rows.append((k, r1, r2))
            row += 2 * m
        # coupling rows (q.coupling): per ReLU neuron, with e = p - p' (the pre-activations'
        # difference, in [el, eu]): h - h' - s1 e <= r1 (relu(p) - relu(p') <= relu(e)) and
        # h' - h + s2 e <= r2 (relu(p) - relu(p') >= -relu(-e)); for the first layer when its
        # difference is a constant d (q.first_shift) two facets of the hull of
        # {(p, relu(p), relu(p - d))}: a p + b h + c h' <= r. Coefficients change per node.
        self.coef_at = [np.concatenate([rr[2] for rr in self.relu_rows[c] if rr is not None] or [np.zeros(0, int)])
                        for c in (0, 1)]
        self.coupling_rows = []          # per relu layer: (k, rows R1, rows R2, s1 positions (2 per row), s2 positions)
        self.hull_rows = None            # (rows, positions of the p, h, h' coefficients)
        if q.coupling:
            for k, (W, b, relu) in enumerate(q.layers):
                if not relu:
                    continue
                P0, P1, H0, H1 = self.p[0][k], self.p[1][k], self.h[0][k], self.h[1][k]
                m = len(P0)
                r1 = row + np.arange(m)
                r2 = row + m + np.arange(m)
                ur += [r1, r1, r1, r1, r2, r2, r2, r2]
                uc += [H0, H1, P0, P1, H0, H1, P0, P1]
                uv += [np.ones(m), -np.ones(m), np.zeros(m), np.zeros(m),
                       -np.ones(m), np.ones(m), np.zeros(m), np.zeros(m)]
                s1 = np.concatenate([nv + 2 * m + np.arange(m), nv + 3 * m + np.arange(m)])
                s2 = np.concatenate([nv + 6 * m + np.arange(m), nv + 7 * m + np.arange(m)])
                nv += 8 * m
                self.coupling_rows.append((k, r1, r2, s1, s2))
                row += 2 * m
            if q.first_shift and q.layers[0][2]:
                P0, H0, H1 = self.p[0][0], self.h[0][0], self.h[1][0]
                m = len(P0)
                rows = row + np.arange(2 * m)
                ur += [rows, rows, rows]
                uc += [np.tile(P0, 2), np.tile(H0, 2), np.tile(H1, 2)]
                uv += [np.zeros(2 * m)] * 3
                at = (nv + np.arange(2 * m), nv + 2 * m + np.arange(2 * m), nv + 4 * m + np.arange(2 * m))
                nv += 6 * m
                self.hull_rows = (rows, at)
                row += 2 * m
            self.coef_at.append(np.concatenate([np.concatenate([s1, s2]) for _, _, _, s1, s2 in self.coupling_rows]
                                               or [np.zeros(0, int)]))
            if self.hull_rows is not None:
                self.coef_at.append(np.concatenate(self.hull_rows[1]))
        self.coef_at = np.concatenate(self.coef_at).astype(np.int64)
        z0, z1 = self.z
        self.zdiff_rows = (row, row + 1)
        ur += [np.array([row, row]), np.array([row + 1, row + 1])]
        uc += [np.array([z0, z1]), np.array([z1, z0])]
        uv += [np.array([1.0, -1.0]), np.array([1.0, -1.0])]
        nv += 4
        row += 2
        self.label_rows = None
        if q.post == "label":
            self.label_rows = (row, row + 1)               # t - z <= 0 ; t + z' <= 0
            ur += [np.array([row, row]), np.array([row + 1, row + 1])]
            uc += [np.array([self.t, z0]), np.array([self.t, z1])]
            uv += [np.array([1.0, -1.0]), np.array([1.0, 1.0])]
            nv += 4
            row += 2
        self.ub = (row, np.concatenate(ur), np.concatenate(uc), np.concatenate(uv))
        c = np.zeros(self.n_vars)
        if q.post == "label":
            c[self.t] = 1.0
        elif q.post == "logit":
            c[z0], c[z1] = 1.0, -1.0
        else:
            c[z0] = 1.0
        self.c = c


def moved_threshold(post: str, eps, E: float, eps_strict: bool = False) -> tuple[Fraction, bool]:
    """The claim a proof about the real-arithmetic network must make so that the runtime (within
    E of it, see :func:`fairspec.certify.network.runtime_error_bound`) is fair, as
    ``(threshold, strict)`` for :class:`PairQuery` / ``prove_below``:

    * label (runtime violation ``z > 0 >= z'``): ``min(z, -z') < -E``;
    * logit / prob, fair when ``|out - out'| <= eps`` (``eps_strict``: ``< eps``): a violation has
      ``out - out' > eps`` (``>= eps``), so the claim is ``measure <= eps - 2E`` (``< eps - 2E``).

    ``eps`` is read as the spec writes it (:func:`fairspec.certify.exact.threshold_of`)."""
    if not math.isfinite(float(E)):
        raise ValueError("no finite runtime error bound")
    e = Fraction(float(E))
    if e < 0:
        raise ValueError("E must be >= 0")
    if post == "label":
        return -e, True
    if post in ("logit", "prob"):
        return threshold_of(eps) - 2 * e, bool(eps_strict)
    raise ValueError(f"unknown post-condition {post!r}")
