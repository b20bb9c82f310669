"""An individual-fairness pre-condition read exactly on enumerated pairs (session 30).

The enumerations of small domains (kinds/pair_enumeration.py for networks and pipelines,
kinds/tree_pairs.py for tree models) list the ordered pairs that ``x.* == x'.* except {...}`` and the
relaxed tolerances admit; a further pre-condition (``require x.age > 50``, ``x'.age <= 30``,
``x.age >= x'.age``, ``and`` / ``or`` / ``not`` of those, arithmetic, category tests) keeps the pairs
it holds on, and the post-condition and certify's enumeration proof are about exactly those.

Every comparison is decided exactly, with the operator as written: the domain's values are whole
numbers (int features, a boolean's 0 / 1) or category indices (sema writes a category constant as its index); each constant is read twice, as the float
it is stored as and as the decimal its shortest repr writes (fairspec.ir.no_pair's two readings, in
Fractions). Where the two readings disagree on a pair (``x.a * 0.3 >= 0.9`` at a = 3; a constant like 1e23,
whose decimal and float lie a whole number apart) no reading is chosen: by default the property is
``unknown``; with ``readings=True`` (the network enumeration, kinds/pair_enumeration.py) each reading
admits its own set of ordered pairs, :meth:`PairPre.closure` hands certify the comparisons of their union
(a proof over it covers both sets), and :meth:`PairPre.meets` is the pairs admitted in BOTH readings
(a witness must be one: :func:`readings_witnesses`); :attr:`PairPre.parted` says whether they part.
``mode = maximize`` there reports each reading's maximum (kinds/pre_readings.py, which holds PairPre to one
reading at a time: :func:`fairspec.kinds.pre_readings.reading`).

Each atom (a comparison, a set test, a boolean feature) is evaluated once per distinct combination of
the values it reads (:data:`MAX_COMBINATIONS`), and looked up per pair.

The post-condition is symmetric and certify's checks are directional, so the comparisons handed to
certify are the pairs meeting the pre-condition in either order (:meth:`PairPre.closure`); a witness
is reported in the order that meets it (:meth:`PairPre.meets`)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from fairspec import ir
from fairspec.verdict import Unsupported

#: distinct value combinations one atom of the pre-condition is evaluated on, at most
MAX_COMBINATIONS = 200_000


def pre_features(prop: ir.IndividualFairness) -> list[str]:
    """The features the further pre-condition reads, in order."""
    refs = (x.feature for e in prop.pre for x in ir.subexpressions(e) if isinstance(x, ir.FeatureRef))
    return list(dict.fromkeys(refs))


class PairPre:
    """``prop``'s further pre-condition on pairs of points whose feature values are ``values``
    (feature -> one value per point, as the enumeration encodes them: whole numbers, 0 / 1, category
    indices). Raises Unsupported (the property is then ``unknown``) where it cannot be read exactly."""

    def __init__(self, prop: ir.IndividualFairness, fs: ir.FeatureSet, values: dict, readings: bool = False):
        self.prop, self.fs, self.values = prop, fs, values
        self.readings = readings        # keep the two readings apart where they disagree (else Unsupported)
        self.parted = None              # where they disagree on a pair of the closure: "x.a = 3" (the first seen)
        for n in pre_features(prop):
            if n not in values:
                raise Unsupported(f"the pre-condition reads {n}, which the enumerated domain does not hold")

    # -- the mask ------------------------------------------------------------------------------
    def meets(self, a, b, either: bool = False) -> np.ndarray:
        """Does the ordered pair of points (a[k], b[k]) meet the pre-condition, exactly, in both readings of
        its constants (``either``: in one or the other; the two are one answer unless ``readings``)?"""
        f, d = self._readings(a, b)
        return (f | d) if either else (f & d)

    def _readings(self, a, b) -> tuple[np.ndarray, np.ndarray]:
        """(float reading, decimal reading) of :meth:`meets`."""
        a = np.asarray(a, dtype=np.int64).reshape(-1)
        b = np.asarray(b, dtype=np.int64).reshape(-1)
        f, d = np.ones(a.size, dtype=bool), np.ones(a.size, dtype=bool)
        for e in self.prop.pre:
            ef, ed = self._bool(e, a, b)
            f &= ef
            d &= ed
        from fairspec.kinds.pre_readings import one_reading

        r = one_reading()               # held to one reading (kinds/pre_readings: maximize's per-reading runs)
        return (f, d) if r is None else ((f, f) if r == 0 else (d, d))

    def closure(self, a, b) -> tuple[np.ndarray, np.ndarray, int]:
        """From a symmetric list of candidate ordered pairs (both orders of each): the comparisons
        ``(a, b)`` whose pair meets the pre-condition in one order or the other, in either reading, and how
        many ordered pairs meet it (in either reading: the union of the two admitted sets)."""
        mf, md = self._readings(a, b)
        m = mf | md
        keep = m | self.meets(b, a, either=True)
        if (mf != md).any():
            k = int(np.flatnonzero(mf != md)[0])
            i, j = int(np.asarray(a)[k]), int(np.asarray(b)[k])
            self.parted = ", ".join(f"{v}.{f} = {self._shown(f, int(round(float(self.values[f][p]))))}"
                                    for f in pre_features(self.prop) for v, p in ((self.prop.var, i),
                                                                                  (self.prop.var_prime, j)))
        return np.asarray(a)[keep], np.asarray(b)[keep], int(m.sum())

    def ordered_pairs(self, a, b, either: bool = True) -> int:
        """How many ordered pairs meeting the pre-condition (in either reading; ``either=False``: in both)
        break the post, given the comparisons that break it in one order (certify.enumerate.ordered_pairs,
        restricted to the pre-condition)."""
        a = np.asarray(a, dtype=np.int64).reshape(-1)
        b = np.asarray(b, dtype=np.int64).reshape(-1)
        if not a.size:
            return 0
        n = int(max(a.max(), b.max())) + 1
        u = np.unique(np.concatenate([a * n + b, b * n + a]))
        return int(self.meets(u // n, u % n, either=either).sum())

    def complete(self, w, i: int, j: int):
        """The witness ``w`` of points (i, j) with the values of the features the pre-condition reads that the
        model does not (decode_row gives the encoded ones only): what the pair is, as the spec names it."""
        from dataclasses import replace

        fx, fy = dict(w.features), dict(w.features_prime)
        for n in pre_features(self.prop):
            if n not in fx:
                dom = self.fs.get(n).domain
                for out, k in ((fx, i), (fy, j)):
                    v = int(round(float(self.values[n][k])))
                    out[n] = (dom.categories[v] if isinstance(dom, ir.Categorical) else
                              bool(v) if isinstance(dom, ir.Boolean) else v)
        return replace(w, features=fx, features_prime=fy)

    def in_order(self, w, i: int, j: int):
        """The witness ``w`` of points (i, j) in the order that meets the pre-condition."""
        return w if self.meets([i], [j])[0] else self.swapped(w)

    @staticmethod
    def swapped(w):
        """The witness ``w`` with x and x' exchanged (the post-condition is symmetric)."""
        from dataclasses import replace

        o = w.outputs
        return replace(w, x=w.x_prime, x_prime=w.x, features=w.features_prime, features_prime=w.features,
                       outputs=None if o is None else (o[1], o[0]),
                       output_labels=None if w.output_labels is None else tuple(reversed(w.output_labels)))

    # -- evaluation ----------------------------------------------------------------------------
    def _bool(self, e, a, b) -> tuple[np.ndarray, np.ndarray]:
        """(float reading, decimal reading) of ``e`` on the pairs."""
        if isinstance(e, ir.Logic):
            parts = [self._bool(x, a, b) for x in e.args]
            out = [parts[0][0].copy(), parts[0][1].copy()]
            for p in parts[1:]:
                for r in (0, 1):
                    out[r] = (out[r] & p[r]) if e.op == "and" else (out[r] | p[r])
            return out[0], out[1]
        if isinstance(e, ir.NotE):
            f, d = self._bool(e.arg, a, b)
            return ~f, ~d
        return self._atom(e, a, b)

    def _atom(self, e, a, b) -> tuple[np.ndarray, np.ndarray]:
        nodes = list(ir.subexpressions(e))
        if any(isinstance(x, ir.ModelOut) for x in nodes):
            raise Unsupported("a pre-condition that reads the model's output is not read by enumeration")
        leaves = list(dict.fromkeys((x.var, x.feature) for x in nodes if isinstance(x, ir.FeatureRef)))
        n = a.size
        if not leaves:
            f, d = self._decide_both(e, {})
            return np.full(n, f, dtype=bool), np.full(n, d, dtype=bool)
        cols = []
        for var, f in leaves:
            if var not in (self.prop.var, self.prop.var_prime):
                raise Unsupported(f"the pre-condition's {f} names no input of the pair ({var!r})")
            src = np.asarray(self.values[f])
            cols.append(np.rint(src[a if var == self.prop.var else b]).astype(np.int64))
        key = np.zeros(n, dtype=np.int64)
        radix = 1
        lows = [int(c.min()) if n else 0 for c in cols]
        for c, lo in zip(cols, lows):
            span = (int(c.max()) - lo + 1) if n else 1
            radix *= span
            if radix > 2 ** 62:
                raise Unsupported("the pre-condition reads too many value combinations to decide exactly")
            key = key * span + (c - lo)
        uniq, inv = np.unique(key, return_inverse=True)
        if uniq.size > MAX_COMBINATIONS:
            raise Unsupported(f"an atom of the pre-condition reads {uniq.size:,} value combinations (more than "
                              f"{MAX_COMBINATIONS:,}) to decide exactly")
        first = np.zeros(uniq.size, dtype=np.int64)
        first[inv[::-1]] = np.arange(n - 1, -1, -1)          # a pair holding each combination
        per = np.array([self._decide_both(e, {lv: int(c[k]) for lv, c in zip(leaves, cols)}) for k in first],
                       dtype=bool).reshape(-1, 2)
        return per[inv.reshape(-1), 0], per[inv.reshape(-1), 1]

    def _decide(self, e, env) -> bool:
        """``e`` at ``env`` (one reading: Unsupported where the two disagree, whatever ``readings`` says)."""
        f, d = self._decide_both(e, env)
        if f != d:
            raise Unsupported(f"a constant of the pre-condition reads differently as the float it is stored as "
                              f"and as the decimal it is written as at {self._said(env)}; enumeration does not choose one")
        return f

    def _said(self, env) -> str:
        return ", ".join(f"{var}.{f} = {self._shown(f, v)}" for (var, f), v in env.items())

    def _decide_both(self, e, env) -> tuple[bool, bool]:
        """(float reading, decimal reading) of the atom ``e`` at ``env``; Unsupported where they disagree,
        unless ``readings``."""
        from fairspec.ir.no_pair import _as_decimal, _as_float

        got = []
        for read in (_as_float, _as_decimal):
            v = self._exact(e, env, read)
            got.append(bool(v != 0) if isinstance(v, Fraction) else bool(v))
        if got[0] != got[1] and not self.readings:
            raise Unsupported(f"a constant of the pre-condition reads differently as the float it is stored as "
                              f"and as the decimal it is written as at {self._said(env)}; enumeration does not choose one")
        return got[0], got[1]

    def _shown(self, f: str, v: int):
        dom = self.fs.get(f).domain
        return repr(dom.categories[v]) if isinstance(dom, ir.Categorical) else v

    def _exact(self, e, env, read):
        if isinstance(e, ir.Const):
            v = e.value
            if isinstance(v, bool):
                return Fraction(int(v))
            if isinstance(v, (int, float)):
                if isinstance(v, float) and not np.isfinite(v):
                    raise Unsupported(f"the pre-condition's constant {v!r} is not a finite number")
                p, q = read(v)
                return Fraction(p, q)
            return v
        if isinstance(e, ir.FeatureRef):
            return Fraction(env[(e.var, e.feature)])      # sema writes a category as its index
        if isinstance(e, ir.Cmp):
            x, y = self._exact(e.left, env, read), self._exact(e.right, env, read)
            if not (isinstance(x, Fraction) and isinstance(y, Fraction)):
                raise Unsupported(f"the pre-condition compares {x!r} and {y!r} with {e.op}")
            return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[e.op]
        if isinstance(e, ir.InSet):
            x = self._exact(e.item, env, read)
            vals = [self._exact(ir.Const(v), env, read) for v in e.values]
            return (x in vals) != e.negated
        if isinstance(e, ir.Logic):
            parts = [self._truth(x, env, read) for x in e.args]
            return all(parts) if e.op == "and" else any(parts)
        if isinstance(e, ir.NotE):
            return not self._truth(e.arg, env, read)
        if isinstance(e, ir.ArithE):
            x, y = self._exact(e.left, env, read), self._exact(e.right, env, read)
            if not (isinstance(x, Fraction) and isinstance(y, Fraction)):
                raise Unsupported(f"the pre-condition's arithmetic {e.op} on {x!r} and {y!r}")
            if e.op == "/" and y == 0:
                raise Unsupported("the pre-condition divides by zero on a pair of the domain")
            if e.op not in ("+", "-", "*", "/"):
                raise Unsupported(f"the pre-condition's arithmetic {e.op}")
            return x + y if e.op == "+" else x - y if e.op == "-" else x * y if e.op == "*" else x / y
        if isinstance(e, ir.AbsE):
            x = self._exact(e.arg, env, read)
            if not isinstance(x, Fraction):
                raise Unsupported(f"the pre-condition takes |{x!r}|")
            return abs(x)
        raise Unsupported(f"the pre-condition's {type(e).__name__} is not read by enumeration")

    def _truth(self, e, env, read) -> bool:
        v = self._exact(e, env, read)
        return bool(v != 0) if isinstance(v, Fraction) else bool(v)


def restrict_domain(prop: ir.IndividualFairness, fs: ir.FeatureSet, dom, words: str = "the pre-condition",
                    readings: bool = False):
    """A tree enumeration's pair domain (kinds/tree_pairs.PairDomain, every value its own cell) kept to the
    pairs meeting ``prop``'s further pre-condition, compared in both orders (the checks are directional):
    (the PairPre or None, how many ordered pairs meet it, what certify_pairs says it enumerated, naming the
    pre-condition ``words``: a relaxed run's, kinds/pre_relax.pre_words). ``readings``: PairPre's (the union of
    the two readings' pairs where they part, :attr:`PairPre.parted`; the words then say so)."""
    if not prop.pre:
        return None, int(dom.I.size), {}
    pre = PairPre(prop, fs, {f.name: f.values[f.rep[g]] for f, g in zip(dom.factors, dom.grid())}, readings)
    dom.I, dom.J, meeting = pre.closure(dom.I, dom.J)
    words = f"{words}{EITHER}" if pre.parted else words
    return pre, meeting, {"unit": f"comparisons (the {meeting:,} ordered pairs meeting {words}, both orders)",
                          "pairs": meeting}


#: what the pairs meeting a pre-condition whose readings part are (their union)
EITHER = " in either reading of its constants (the float each is stored as, the decimal it is written as)"
#: what a property whose pre-condition's readings part is unknown for (kinds/pair_enumeration.py)
READINGS = ("the pre-condition's constants, read as the floats they are stored as and as the decimals they are "
            "written as, admit different pairs (they part at {at}); {n:,} pairs break the post-condition, each "
            "meeting the pre-condition in one reading only, and no pair meeting it in both readings is shown to: "
            "enumeration does not choose one reading")


def violating_words(pre, I, J, violating: int, meeting: int, what: str) -> str:
    """``"N of the M <what>"`` of a violated enumeration's reason, the two counts of ONE population: where the
    pre-condition's readings part the violating pairs counted are those meeting it in both readings (a witness
    must: :func:`readings_witnesses`), so the denominator is the pairs meeting it in both readings too, among
    the comparisons ``(I, J)`` (the union's count, ``meeting`` of ``what``, said beside it)."""
    if pre is None or not pre.parted:
        return f"{violating:,} of the {meeting:,} {what}"
    both = pre.ordered_pairs(I, J, False)
    return (f"{violating:,} of the {both:,} ordered pairs meeting the pre-condition in both readings of its constants "
            f"(of the {meeting:,} {what})")


def readings_witnesses(pre, a, b, bad) -> tuple[np.ndarray, np.ndarray]:
    """``bad`` (per comparison (a[k], b[k]): certify found it breaks the post) kept to the comparisons whose
    pair meets the pre-condition in BOTH readings of its constants, in one order or the other (the post is
    symmetric: :meth:`PairPre.in_order` reports that order), and those dropped (pairs admitted in one reading
    only: a violation of that reading alone, not of the property as both read it)."""
    if pre is None or not pre.parted:
        return bad, np.zeros_like(bad)
    both = pre.meets(a, b) | pre.meets(b, a)
    return bad & both, bad & ~both


def readings_witness(pre, i, j, bad):
    """The first of the violating comparisons ``bad`` (of points i[k], j[k]) whose pair both readings admit in one
    order (:func:`readings_witnesses`), or None; ``bad[0]`` where the readings do not part."""
    bad = np.asarray(bad, dtype=np.int64).reshape(-1)
    if pre is None or not pre.parted:
        return int(bad[0]) if bad.size else None
    keep = bad[pre.meets(i, j) | pre.meets(j, i)]
    return int(keep[0]) if keep.size else None
