"""The candidate pairs of kinds/pre_search (steps 1 and 2 of its module's text): the admissible pairs of the
domain as arrays of feature values -- sampled, the relaxation's pair moved feature by feature (a real by ulps), the
best candidates moved by a local search -- filtered by the pre-condition read in floats, and scored on the model by
the post-condition's violation margin in floats (a guide only: a candidate is reported only after kinds/pre_search's
exact checks and replay).  Moved out of kinds/pre_search.py, unchanged."""

from __future__ import annotations

import math

import numpy as np

from fairspec import ir

#: ulp steps tried on a real the pre-condition reads (1, 2, 4, ... 2^(STEPS-1))
STEPS = 24


class _Scorer:
    """The post-condition's violation margin of candidate pairs in floats (a guide only: > 0 breaks it)."""

    def __init__(self, prop, model, enc, tree):
        self.prop, self.model, self.enc, self.tree = prop, model, enc, tree

    def scores(self, X):
        if self.tree and self.prop.post not in ("label", "prob", "logit"):
            from fairspec.kinds.tree_outputs import _outputs as library_outputs

            s = library_outputs(self.model, X, self.prop.post, self.prop.cls)
            return np.atleast_2d(np.asarray(s, dtype=np.float64)), None
        if self.tree:
            from fairspec.backends.trees.runtime import runtime_outputs

            what = "prob" if self.prop.post == "label" else self.prop.post
            s = runtime_outputs(self.model, X, what)
            if s is None:
                s = runtime_outputs(self.model, X, "label")
            return np.asarray(s, dtype=np.float64).reshape(-1), 0.5
        if self.prop.post == "class":             # a network's predicted class (multi_pairs' replay reads it)
            return np.atleast_2d(np.asarray(self.model.predict_class(X), dtype=np.float64)), None
        from fairspec.kinds.pair_runtime import label_threshold, library_probability, post_scores

        s, kind = post_scores(self.prop, self.model, X)
        if s is None:
            raise ValueError(f"the model's runtime gives no {self.prop.post} scores")
        s = np.asarray(s, dtype=np.float64)
        if self.prop.post in ("class_prob", "class_logit"):   # a network's class column(s): (columns, 2n)
            return (s.T if s.ndim == 2 else s.reshape(1, -1)), None
        if self.prop.post == "prob" and kind == "logit":
            # prob of a logit: the probabilities the witness check compares (predict_proba where the library
            # computes it, else the logistic's bounds of the logits, as SigmoidCheck reads them), not the logits
            P = library_probability(self.prop, self.model, X)
            if P is not None:
                return P.reshape(-1), None
            return s.reshape(-1), "sigmoid"
        return s.reshape(-1), label_threshold(self.prop, self.model)

    def margin(self, A, B) -> np.ndarray:
        from fairspec.runtime.encoding import encode

        n = len(next(iter(A.values())))
        V = {c.feature: np.concatenate([A[c.feature], B[c.feature]]) for c in self.enc.columns}
        s, t = self.scores(encode(self.enc, V, 2 * n))
        if s.ndim == 2:                 # a tree model's class / prob(c) / logit(c) / value: (columns, 2n)
            a, b = s[:, :n], s[:, n:]
            if self.prop.post == "class":
                return np.where(a[0] != b[0], 1.0, -1.0)
            d = np.max(np.abs(a - b), axis=0) - float(self.prop.eps)
            return np.where(np.isfinite(d), d, -np.inf)
        a, b = s[:n], s[n:]
        if self.prop.post == "label":
            t = float(t)
            return np.maximum(np.minimum(a - t, t - b), np.minimum(b - t, t - a))
        if t == "sigmoid":              # the logistic's certain difference: lower end of one minus upper of the other
            from fairspec.certify.enumerate import sigmoid_bounds

            (la, ha), (lb, hb) = sigmoid_bounds(a), sigmoid_bounds(b)
            d = np.maximum(la - hb, lb - ha) - float(self.prop.eps)
            return np.where(np.isfinite(d), d, -np.inf)
        d = np.abs(a - b) - float(self.prop.eps)
        return np.where(np.isfinite(d), d, -np.inf)


class _Space:
    """The admissible pairs of the domain as arrays of feature values (whole numbers, a boolean's 0 / 1, a
    category's index, a real as a float): sampling, moves, the float filter of the pre-condition."""

    def __init__(self, prop, fs, enc):
        from fairspec.kinds.pair_pre import pre_features
        from fairspec.kinds.pre_relax import searched_unread

        self.prop, self.fs = prop, fs
        self.encoded = [c.feature for c in enc.columns]
        self.names = list(dict.fromkeys(self.encoded + pre_features(prop)))
        self.tol = dict(prop.relaxed)
        self.pre_reads = set(pre_features(prop))
        consts = []
        for e in prop.pre:
            for x in ir.subexpressions(e):
                if isinstance(x, ir.Const) and isinstance(x.value, (int, float)) and not isinstance(x.value, bool):
                    if math.isfinite(float(x.value)):
                        consts.append(float(x.value))
        self.consts = sorted(set(consts))
        self.dom = {}
        self.unread_given = [n for n in self.names if n not in self.encoded and fs.get(n) is not None
                             and searched_unread(fs.get(n))]    # its values given here: a real, a wide int
        # a discrete one only the pre-condition reads, of at most 256 values: pre_relax.complete_witness chooses its
        # values, the first meeting the pre-condition; where it cannot (more combinations than it walks), the
        # candidate's own (:meth:`given`)
        self.unread_chosen = [n for n in self.names if n not in self.encoded and n not in self.unread_given
                              and fs.get(n) is not None]
        for n in self.names:
            f = fs.get(n)
            if f is None:
                raise ValueError(f"the feature {n} is not declared")
            d = f.domain
            if isinstance(d, ir.RealRange):
                if not (math.isfinite(float(d.lo)) and math.isfinite(float(d.hi))):
                    raise ValueError(f"the real {n} has no finite range to sample")
                self.dom[n] = ("real", float(d.lo), float(d.hi))
            elif isinstance(d, ir.IntRange):
                self.dom[n] = ("int", int(d.lo), int(d.hi))
            elif isinstance(d, ir.Boolean):
                self.dom[n] = ("int", 0, 1)
            elif isinstance(d, ir.Categorical):
                self.dom[n] = ("int", 0, len(d.categories) - 1)
            else:
                raise ValueError(f"the feature {n}'s domain is not sampled")

    def given(self, A, k) -> dict:
        """Candidate ``k``'s values of :attr:`unread_chosen` as a witness prints them: a whole number, a category's
        name, a boolean."""
        out = {}
        for n in self.unread_chosen:
            d, v = self.fs.get(n).domain, int(A[n][k])
            out[n] = bool(v) if isinstance(d, ir.Boolean) else d.categories[v] if isinstance(d, ir.Categorical) else v
        return out

    # -- values -----------------------------------------------------------------------------------------
    def specials(self, n) -> np.ndarray:
        """The values of ``n`` the pre-condition's constants point at: each constant and its neighbours (whole
        numbers either side; for a real the floats 1, 2 and 4 ulps either side), the domain's ends."""
        kind, lo, hi = self.dom[n]
        out = [lo, hi]
        for c in self.consts:
            if kind == "int":
                out += [math.floor(c) - 1, math.floor(c), math.ceil(c), math.ceil(c) + 1]
            else:
                out += [c, *_ulps(c, (1, 2, 4)), *_ulps(c, (-1, -2, -4))]
        v = np.array([x for x in out if lo <= x <= hi], dtype=np.float64)
        return np.unique(v)

    def draw(self, rng, n, size) -> np.ndarray:
        kind, lo, hi = self.dom[n]
        if kind == "int":
            v = rng.integers(lo, hi + 1, size=size).astype(np.float64)
        else:
            v = rng.uniform(lo, hi, size=size)
        sp = self.specials(n)
        if sp.size and n in self.pre_reads:
            pick = rng.random(size) < 0.3
            v[pick] = sp[rng.integers(0, sp.size, size=int(pick.sum()))]
        return v

    def partner(self, rng, n, a) -> np.ndarray:
        """x'.n for x.n = ``a``: equal (tied), drawn anew (protected), or within the tolerance (relaxed)."""
        if n in self.prop.free:
            return self.draw(rng, n, a.size)
        if n not in self.tol:
            return a.copy()
        kind, lo, hi = self.dom[n]
        t = float(self.tol[n])
        if kind == "int":
            k = math.floor(t)
            d = rng.integers(-k, k + 1, size=a.size).astype(np.float64)
        else:
            d = rng.uniform(-t, t, size=a.size)
        return np.clip(a + d, lo, hi)

    def samples(self, rng, size):
        A = {n: self.draw(rng, n, size) for n in self.names}
        B = {n: self.partner(rng, n, A[n]) for n in self.names}
        return A, B

    def from_witness(self, w) -> list:
        """The relaxation's pair in both orders, as value arrays of one row each (missing features: none)."""
        out = []
        for fx, fy in ((w.features, w.features_prime), (w.features_prime, w.features)):
            try:
                a = {n: np.array([self._num(n, fx[n])]) for n in self.names if n in fx}
                b = {n: np.array([self._num(n, fy[n])]) for n in self.names if n in fy}
            except (KeyError, ValueError, TypeError):
                continue
            out.append((a, b))
        return out

    def _num(self, n, v) -> float:
        d = self.fs.get(n).domain
        if isinstance(d, ir.Categorical):
            return float(d.categories.index(v))
        if isinstance(d, ir.Boolean):
            # decode_row gives a code / one-hot column's value as its category text ("false" / "true"): bool("false")
            # is True, which read every such pair as tied in it (a protected bool: "differs in no protected feature")
            if isinstance(v, str):
                return float(d.categories.index(v))
            if v not in (0, 1):
                raise ValueError(f"{v!r} is neither true nor false")
            return float(bool(v))
        return float(v)

    def moves(self, seeds):
        """Each seed with the features the pre-condition reads moved one at a time (and the features only it
        reads given every special value): the smallest steps into the region it holds on."""
        rows_a, rows_b = [], []
        rng = np.random.default_rng(0)
        for a, b in seeds:
            a = {n: a.get(n, self.draw(rng, n, 1)) for n in self.names}
            b = {n: b.get(n, self.partner(rng, n, a[n])) for n in self.names}
            rows_a.append(a)
            rows_b.append(b)
            for n in self.names:
                if n not in self.pre_reads:
                    continue
                kind, lo, hi = self.dom[n]
                for side in (0, 1):
                    base = (a, b)[side][n][0]
                    if kind == "real":
                        vals = [*_ulps(base, [2 ** i for i in range(STEPS)]),
                                *_ulps(base, [-(2 ** i) for i in range(STEPS)]), *self.specials(n)]
                    else:
                        vals = list(range(lo, hi + 1)) if hi - lo <= 64 else [*self.specials(n), base - 1, base + 1]
                    for v in vals:
                        if not lo <= v <= hi:
                            continue
                        na, nb = dict(a), dict(b)
                        tied = n not in self.prop.free and n not in self.tol
                        if side == 0 or tied:
                            na[n] = np.array([v], dtype=np.float64)
                        if side == 1 or tied:
                            nb[n] = np.array([v], dtype=np.float64)
                        rows_a.append(na)
                        rows_b.append(nb)
        if not rows_a:
            return None
        return ({n: np.concatenate([r[n] for r in rows_a]) for n in self.names},
                {n: np.concatenate([r[n] for r in rows_b]) for n in self.names})

    def local(self, rng, best, size):
        """``size`` moves of the best candidates: one or two features changed (a real by a step of a random
        scale, a discrete one redrawn), the pair kept admissible."""
        if best is None:
            return None
        A0, B0 = best
        m = len(next(iter(A0.values())))
        if not m:
            return None
        pick = rng.integers(0, m, size=size)
        A = {n: v[pick].copy() for n, v in A0.items()}
        B = {n: v[pick].copy() for n, v in B0.items()}
        for _ in range(2):
            which = rng.integers(0, len(self.names), size=size)
            for j, n in enumerate(self.names):
                rows = np.flatnonzero(which == j)
                if not rows.size:
                    continue
                kind, lo, hi = self.dom[n]
                for side in (A, B) if n in self.prop.free or n in self.tol else (A,):
                    if kind == "real":
                        scale = (hi - lo) * 10.0 ** rng.integers(-6, 0, size=rows.size)
                        side[n][rows] = np.clip(side[n][rows] + rng.normal(size=rows.size) * scale, lo, hi)
                    else:
                        side[n][rows] = self.draw(rng, n, rows.size)
                if n not in self.prop.free and n not in self.tol:
                    B[n][rows] = A[n][rows]
                elif n in self.tol:
                    B[n][rows] = self.partner(rng, n, A[n][rows])
        return A, B

    # -- filters ----------------------------------------------------------------------------------------
    def admissible(self, A, B) -> np.ndarray:
        n = len(next(iter(A.values())))
        ok = np.ones(n, dtype=bool)
        differ = np.zeros(n, dtype=bool)
        for f in self.names:
            kind, lo, hi = self.dom[f]
            for v in (A[f], B[f]):
                ok &= (v >= lo) & (v <= hi)
                if kind == "int":
                    ok &= v == np.round(v)
            if f in self.prop.free:
                differ |= A[f] != B[f]
            elif f in self.tol:
                d = np.abs(A[f] - B[f])
                ok &= (d < self.tol[f]) if self.prop.relaxed_op(f) == "<" else (d <= self.tol[f])
            else:
                ok &= A[f] == B[f]
        return ok & (differ if any(f in self.prop.free for f in self.names) else True)

    def pre_float(self, A, B, loose: bool = False) -> np.ndarray:
        """The pre-condition read in floats: a filter (the exact reading decides). ``loose``: without its top-level
        conjuncts reading a feature whose values pre_relax.complete_witness chooses (:attr:`unread_chosen`: it
        tries every value of them meeting the conjuncts on one alone, given the candidate's others)."""
        from fairspec.ir.no_pair import _conjuncts

        env = {(self.prop.var, n): A[n] for n in self.names} | {(self.prop.var_prime, n): B[n] for n in self.names}
        n = len(next(iter(A.values())))
        out = np.ones(n, dtype=bool)
        chosen = set(self.unread_chosen) if loose else set()
        with np.errstate(all="ignore"):
            for e in (c for e in self.prop.pre for c in _conjuncts(e)):
                if chosen and any(isinstance(x, ir.FeatureRef) and x.feature in chosen for x in ir.subexpressions(e)):
                    continue
                try:
                    out &= np.broadcast_to(np.asarray(_fl(e, env), dtype=bool), (n,))
                except (ValueError, TypeError, KeyError):
                    pass            # not read in floats: the exact reading decides
        return out

    def outside(self, w) -> str:
        """Why the witness ``w`` (its printed values) is no admissible pair of the domain, or ''."""
        from fractions import Fraction

        from fairspec.kinds.pre_relax import in_real_range

        differ = False
        for n in self.encoded + self.unread_given:
            a, b = w.features.get(n), w.features_prime.get(n)
            if a is None or b is None:
                return f"it has no value of {n}"
            try:
                x, y = self._num(n, a), self._num(n, b)
            except (ValueError, TypeError):
                return f"its {n} is no value of the domain"
            kind, lo, hi = self.dom[n]
            for v in (x, y):
                if not lo <= Fraction(v) <= hi or kind == "int" and v != round(v):
                    return f"its {n} lies outside the domain"
                if kind == "real" and not in_real_range(self.fs.get(n).domain, v):
                    return f"its {n} lies outside the domain (its ends read as stored and as written)"
            if n in self.prop.free:
                differ |= x != y
            elif n in self.tol:
                from fairspec.kinds.pre_relax import _within

                if not _within(x, y, self.prop.relaxed_op(n), self.tol[n]):
                    return f"its {n} differs beyond the tolerance (read as stored and as written)"
            elif x != y:
                return f"its {n} differs, which the pair ties"
        if not differ and any(n in self.prop.free for n in self.encoded + self.unread_given):
            return "it differs in no protected feature"
        return ""


def _ulps(v: float, steps) -> list:
    """The floats ``k`` ulps from ``v`` for each ``k`` of ``steps`` (one nextafter at a time up to 4; beyond, ``k``
    times the ulp of ``v`` at once: close enough for a search's step)."""
    out = []
    for k in steps:
        if abs(k) <= 4:
            x = float(v)
            for _ in range(abs(int(k))):
                x = float(np.nextafter(x, math.inf if k > 0 else -math.inf))
        else:
            x = float(v) + k * math.ulp(float(v))
        out.append(x)
    return out


def _fl(e, env):
    """An expression in floats over value arrays (a filter's reading: the exact one is pair_pre's)."""
    if isinstance(e, ir.Const):
        return float(e.value) if not isinstance(e.value, str) else e.value
    if isinstance(e, ir.FeatureRef):
        return env[(e.var, e.feature)]
    if isinstance(e, ir.Cmp):
        x, y = _fl(e.left, env), _fl(e.right, env)
        return {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
                ">=": np.greater_equal}[e.op](x, y)
    if isinstance(e, ir.InSet):
        x = _fl(e.item, env)
        hit = np.zeros(np.shape(x), dtype=bool)
        for v in e.values:
            hit = hit | np.equal(x, float(v))
        return ~hit if e.negated else hit
    if isinstance(e, ir.Logic):
        parts = [np.asarray(_fl(a, env), dtype=bool) for a in e.args]
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if e.op == "and" else (out | p)
        return out
    if isinstance(e, ir.NotE):
        return ~np.asarray(_fl(e.arg, env), dtype=bool)
    if isinstance(e, ir.ArithE):
        x, y = _fl(e.left, env), _fl(e.right, env)
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[e.op](x, y)
    if isinstance(e, ir.AbsE):
        return np.abs(_fl(e.arg, env))
    raise ValueError(f"the pre-condition's {type(e).__name__}")
