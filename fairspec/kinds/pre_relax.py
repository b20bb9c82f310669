"""A further pre-condition the solver / tree paths cannot read as a box, decided on its relaxation (session 31).

The solver backends and the tree encodings read a further pre-condition only as bounds on int features the pair
ties (kinds/lowering.tied_int_bounds: one box shared by x and x'). Any other pre-condition -- a bound on a real, on
one side of a protected feature, ``x.a <= x'.a``, an ``or``, a ``not``, arithmetic, a category test, a feature the
model does not read -- was ``unknown`` beyond the small domains the enumeration decides exactly (kinds/pair_pre.py).

Here the problem is decided with the pre-condition RELAXED: the top-level ``and``-conjuncts that are exactly
lowerable (tied int bounds on an encoded feature) are kept, every other whole conjunct is dropped (never a part of
an ``or`` / ``not``). A dropped conjunct only enlarges the set of pairs, so the relaxation's pairs are a superset of
the pairs meeting the pre-condition, and:

* ``holds (proved)`` on the relaxation -- certify's Proof of the relaxed problem, unchanged -- is ``holds (proved)``
  of the property; the verdict says it was proved for a superset and which conjuncts were not used;
* maximize's certified bound over the relaxation is an UPPER bound of the largest measure over the pairs meeting
  the pre-condition: kept as the interval's upper end; its lower end (a pair's measure) only from a witness that
  meets the pre-condition;
* ``violated`` only with a witness that meets the whole pre-condition read exactly (kinds/pair_pre.PairPre's
  reading: Fractions, the operators as written, each constant as its float and as its decimal, ``unknown`` where
  they disagree); a feature only the pre-condition reads (the model does not) is given a value of its domain that
  meets it, and is named in the witness. A witness of the relaxation that does not meet it is ``unknown``, saying
  what was found;
* a holds (estimated) or unknown of the relaxation is ``unknown`` (an estimate over a superset says nothing of the
  subset's share).

A bound on a real the pair ties narrows the box to its closed hull (:func:`real_hull`, rounded outward in both
readings of the constant), which kinds/lowering.lower_pair reads from its RELAXED_HULL while the relaxation runs.
A binary tree model's leaf boxes and a tree model's class / prob(c) cells take no pre-condition: they decide it with
all of it relaxed (:func:`leaf_boxes_relaxed`, :func:`or_relaxed`); a network's class posts (kinds/multi_pairs) as
the binary ones.

The data flips (kinds/individual_fairness, kinds/tree_outputs) stay off during the relaxed run: its witnesses would be checked against
the pre-condition only afterwards, and a flip that misses it would cost the proof."""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass, replace

from fairspec import ir
from fairspec.ir.no_pair import _conjuncts
from fairspec.verdict import Unsupported, Verdict, unknown

#: value combinations tried to give the features only the pre-condition reads a value meeting it
MAX_COMPLETIONS = 4096

#: where a search may follow a relaxed problem (:func:`solver_share`), the search keeps this share of the property's
#: budget left, at most :data:`SEARCH_KEEPS_AT_MOST` seconds: it is bounded by a count of pairs, not by the budget --
#: 0.01-0.16 s of wall time on session 33's vacuous-solver cases and pre_search sweeps (74 searches, 6,824 pairs
#: scored at most; its whole MAX_SCORED ~0.6 s), so a long budget goes to the solver
SEARCH_KEEPS = 0.25
SEARCH_KEEPS_AT_MOST = 5.0

#: the relaxation being decided, its ``prop`` the original property (None: none is)
_RELAXING = contextvars.ContextVar("fairspec_pre_relaxing", default=None)


def relaxing() -> bool:
    """Is a relaxed pre-condition being decided (the data flips stay off: :mod:`fairspec.kinds.pre_relax`)?"""
    return _RELAXING.get() is not None


def original(prop: ir.IndividualFairness) -> ir.IndividualFairness:
    """The property a relaxed run decides ``prop`` for (its whole pre-condition), else ``prop``."""
    r = _RELAXING.get()
    return prop if r is None else r.prop


def pre_words() -> str:
    """How an engine names the pre-condition it reads, in its claims and counts: ``the pre-condition``, or inside
    a relaxed run the relaxation's kept conjuncts (``the relaxed pre-condition `x.a >= 1```), so an enumeration's
    proof of the relaxed problem does not claim its pair count as the count of the pairs meeting the property's."""
    r = _RELAXING.get()
    return "the pre-condition" if r is None or not r.words else r.words


@dataclass(frozen=True)
class Relaxation:
    prop: ir.IndividualFairness       # the property with the kept conjuncts only
    kept: tuple
    dropped: tuple
    hull: tuple = ()                  # (feature, least, most): a tied real's closed hull of dropped bounds on it
    words: str = ""                   # how the engines name the relaxed pre-condition (:func:`pre_words`)
    derived: tuple = ()               # (dropped conjunct, its whole-number bounds kept): kinds/pre_bounds


def relax(prop: ir.IndividualFairness, fs: ir.FeatureSet, enc: ir.Encoding) -> Relaxation | None:
    """``prop`` with its further pre-condition relaxed to the conjuncts the lowering reads exactly; None when it
    has none, when the lowering reads it whole (its refusal is then about something else), or when the kept
    conjuncts alone are refused (no whole number meets them: left to the caller's unknown)."""
    from fairspec.kinds.lowering import tied_int_bounds

    if not prop.pre:
        return None
    encoded = {c.feature for c in enc.columns}
    try:
        bounds = tied_int_bounds(prop, fs)
        if set(bounds) <= encoded:
            return None
    except Unsupported:
        pass
    kept, dropped = [], []
    for e in prop.pre:
        for atom in _conjuncts(e):
            try:
                ok = set(tied_int_bounds(replace(prop, pre=(atom,)), fs)) <= encoded
            except Unsupported:
                ok = False
            (kept if ok else dropped).append(atom)
    if not dropped:
        return None
    from fairspec.kinds.pre_bounds import derived_bounds

    derived = []                # a dropped conjunct's exact whole-number bounds (arithmetic, `not`), kept too
    for atom in dropped:
        got = derived_bounds(atom, prop, fs)
        try:
            if got and set(tied_int_bounds(replace(prop, pre=got), fs)) <= encoded:
                derived.append((atom, got))
        except Unsupported:
            pass
    extra = tuple(b for _, got in derived for b in got)
    out = replace(prop, pre=tuple(kept) + extra)
    try:
        tied_int_bounds(out, fs)
    except Unsupported:
        if not extra:
            return None
        out, extra, derived = replace(prop, pre=tuple(kept)), (), []      # as before, without the derived bounds
        try:
            tied_int_bounds(out, fs)
        except Unsupported:
            return None
    return Relaxation(out, tuple(kept) + extra, tuple(dropped), real_hull(prop, fs, enc, dropped), "",
                      tuple(derived))


def real_hull(prop, fs, enc, atoms) -> tuple:
    """The closed box the bounds ``x.f op c`` / ``x'.f op c`` / ``c op x.f`` among ``atoms`` give a real feature
    the pair ties (x.f == x'.f: one box for both), read safely: a lower end the largest float at or below the
    constant in both readings (the float it is stored as, the decimal it is written as), an upper end the least
    at or above it -- `x.f > 4.5` is [4.5, hi] -- so the box holds every value meeting the bounds in either
    reading. ((feature, least, most), ...), the declared range where a side is unbounded."""
    from fractions import Fraction

    import numpy as np

    from fairspec.ir.no_pair import _as_decimal, _as_float, _bound

    tied = {f.name for f in fs.features} - set(prop.free) - {f for f, _ in prop.relaxed}
    numeric = {c.feature for c in enc.columns if c.kind not in ("onehot", "code")}
    from fairspec.kinds.pre_bounds import real_bounds

    box: dict = {}
    found = []                  # (name, op, its constant's value in each reading)
    for atom in atoms:
        b = _bound(atom)
        if b is None:           # arithmetic / `not` on one tied real, solved for it (kinds/pre_bounds)
            found += real_bounds(atom, prop, fs)
            continue
        if b[0] not in (prop.var, prop.var_prime) or not math.isfinite(float(b[3])):
            continue
        found.append((b[1], b[2], [Fraction(*read(b[3])) for read in (_as_float, _as_decimal)]))
    for name, op, reads in found:
        f = fs.get(name)
        if name not in tied or name not in numeric or f is None or not isinstance(f.domain, ir.RealRange):
            continue
        try:
            lo_at, hi_at = float(min(reads)), float(max(reads))
        except OverflowError:
            continue
        if Fraction(lo_at) > min(reads):
            lo_at = float(np.nextafter(lo_at, -np.inf))
        if Fraction(hi_at) < max(reads):
            hi_at = float(np.nextafter(hi_at, np.inf))
        cur = box.get(name, (float(f.domain.lo), float(f.domain.hi)))
        if op in (">", ">=", "=="):
            cur = (max(cur[0], lo_at), cur[1])
        if op in ("<", "<=", "=="):
            cur = (cur[0], min(cur[1], hi_at))
        box[name] = cur
    return tuple((n, lo, hi) for n, (lo, hi) in box.items())


# -- text ---------------------------------------------------------------------------------------------------

_PREC = {"or": 1, "and": 2}


def text(e, fs: ir.FeatureSet | None = None) -> str:
    """The expression as the spec writes it (near enough to recognise: a category constant by its name where the
    comparison names its feature)."""
    if isinstance(e, ir.Const):
        from fairspec.syntax import literals

        v = e.value        # a string is a category: bare where it reads back as one, else quoted ("Fe-male")
        return ("true" if v else "false") if isinstance(v, bool) else repr(v) if isinstance(v, float) \
            else literals.category(v) if isinstance(v, str) else str(v)
    if isinstance(e, ir.FeatureRef):
        return f"{e.var}.{e.feature}" if e.var else e.feature
    if isinstance(e, ir.Cmp):
        return f"{_side(e.left, e.right, fs)} {e.op} {_side(e.right, e.left, fs)}"
    if isinstance(e, ir.InSet):
        f = e.item.feature if isinstance(e.item, ir.FeatureRef) else None
        vals = ", ".join(_named(v, f, fs) for v in e.values)
        return f"{text(e.item, fs)} {'not in' if e.negated else 'in'} {{{vals}}}"
    if isinstance(e, ir.Logic):
        return f" {e.op} ".join(f"({text(a, fs)})" if isinstance(a, ir.Logic) and _PREC[a.op] < _PREC[e.op]
                                else text(a, fs) for a in e.args)
    if isinstance(e, ir.NotE):
        return f"not ({text(e.arg, fs)})"
    if isinstance(e, ir.ArithE):     # a nested operation in parentheses: the text parses to the same tree
        def operand(a):
            return f"({text(a, fs)})" if isinstance(a, ir.ArithE) else text(a, fs)
        return f"{operand(e.left)} {e.op} {operand(e.right)}"
    if isinstance(e, ir.AbsE):
        return f"|{text(e.arg, fs)}|"
    return type(e).__name__


def _side(e, other, fs) -> str:
    if isinstance(e, ir.Const) and isinstance(other, ir.FeatureRef):
        return _named(e.value, other.feature, fs)
    return text(e, fs)


def _named(v, feature, fs) -> str:
    f = fs.get(feature) if fs is not None and feature is not None else None
    if f is not None and isinstance(f.domain, ir.Categorical) and isinstance(v, int) and not isinstance(v, bool) \
            and 0 <= v < len(f.domain.categories):
        from fairspec.syntax import literals

        return literals.category(f.domain.categories[v])     # spec text: "Fe-male" quoted, Male bare
    return text(ir.Const(v))


def _texts(es, fs) -> str:
    return ", ".join(f"`{text(e, fs)}`" for e in es)


def claim(rel: Relaxation, fs) -> str:
    """Which pairs the relaxed problem was decided over."""
    hull = [f"{n} in [{lo!r}, {hi!r}]" for n, lo, hi in rel.hull]
    box = (f"every pair of the domain with {', '.join([_texts(rel.kept, fs)] * bool(rel.kept) + hull)}"
           if rel.kept or hull else "every pair of the domain")
    read = {a for a, _ in rel.derived}
    plain = tuple(a for a in rel.dropped if a not in read)
    as_bounds = "; ".join(f"`{text(a, fs)}` only as {_texts(got, fs)}" for a, got in rel.derived)
    return (f"{box}, a superset of the pairs meeting the pre-condition; the pre-condition's "
            + (f"{_texts(plain, fs)} {'was' if len(plain) == 1 else 'were'} not used" if plain else "")
            + ("; " * bool(plain and as_bounds))
            + (f"{as_bounds} (the whole numbers it holds on in both readings of its constants)" if as_bounds else "")
            + (" (a bound on a tied real only as its closed hull, rounded outward)" if hull else ""))


def shares_of(prop: ir.IndividualFairness, fs, shares: dict, rel: Relaxation | None = None) -> dict:
    """A partition's ``shares`` (details.coverage.shares) saying, in ``of`` and in its summary, what they are shares
    of under a further pre-condition: the box its tied int bounds narrow (all of it, or the kept ones of a
    relaxation), not the whole domain; unchanged without one."""
    if not prop.pre:
        return shares
    if rel is not None:
        kept = rel.kept
        tail = f"; the pre-condition's {_texts(rel.dropped, fs)} not used (a superset of the pairs meeting it)"
    else:
        kept, tail = tuple(a for e in prop.pre for a in _conjuncts(e)), ""
    of = ((f"shares of the box the pre-condition's bounds {_texts(kept, fs)} narrow, not of the whole domain"
           if kept else "shares of the whole domain") + tail)
    summary = str(shares.get("summary") or "")
    if shares.get("of"):
        summary = summary.replace(f" ({shares['of']})", "")
    return {**shares, "of": of, "summary": f"{summary} ({of})" if summary else summary}


# -- the relaxed run ----------------------------------------------------------------------------------------

def relaxed_run(prop: ir.IndividualFairness, ctx, progress, backend: str, t0: float, run_pair,
                search=None) -> Verdict | None:
    """``prop`` decided on its relaxation by ``run_pair`` (kinds/individual_fairness), the verdict read back
    against the whole pre-condition (:func:`finish`); None when there is no relaxation to decide. ``search``
    (kinds/pre_search.searcher, given by the caller: it imports the engines that import this module):
    ``search(prop, ctx, fs, enc, backend)`` is finish's search for a pair meeting the whole pre-condition."""
    fs = ctx.spec.feature_set(prop.features)
    try:
        enc = ctx.encoding(prop.model)
    except Exception:  # noqa: BLE001 - the caller reports its own refusal
        return None
    rel = relax(prop, fs, enc)
    if rel is None:
        return None
    from fairspec.kinds.lowering import RELAXED_HULL

    # the original property; the relaxed one's pre-condition as its engines name it
    token = _RELAXING.set(replace(rel, prop=prop, words=f"the relaxed pre-condition {_texts(rel.kept, fs)}"
                                  * bool(rel.kept)))
    hull = RELAXED_HULL.set({n: (lo, hi) for n, lo, hi in rel.hull})     # what the lowering narrows
    try:
        with solver_share(prop, ctx, backend, rel, search):
            v = run_pair(rel.prop, ctx, progress, backend)
    finally:
        RELAXED_HULL.reset(hull)
        _RELAXING.reset(token)
    return finish(prop, rel, v, fs, enc, backend, t0, None if search is None else search(prop, ctx, fs, enc, backend))


def solver_share(prop, ctx, backend: str, rel: Relaxation, search):
    """Where conjuncts were dropped and a search may follow the relaxed problem (kinds/pre_search): the relaxed
    solver is given what is left of the property's time budget but the search's share (:data:`SEARCH_KEEPS` of
    it, at most :data:`SEARCH_KEEPS_AT_MOST` seconds). Before, a relaxed solver that ran to its time limit left
    the search none: ``unknown``, the time budget spent, where the pair was there to find. No budget, no search,
    nothing dropped: the whole of it. A time-out of either is ``unknown``, as before."""
    from fairspec.planning import setting

    if search is None or not rel.dropped:
        return contextlib.nullcontext()
    left = ctx.remaining(setting(prop, "timeout", backend))
    return contextlib.nullcontext() if left is None else ctx.capped(left - min(SEARCH_KEEPS * left,
                                                                               SEARCH_KEEPS_AT_MOST))


def leaf_boxes_relaxed(prop, ctx, backend: str, t0: float, decide, search=None) -> Verdict:
    """A binary tree model's branch and bound over leaf boxes (kinds/tree_boxes, ``decide``) takes no further
    pre-condition: decided with the whole of it relaxed -- of the property being decided, the original one
    inside a relaxed run -- and read back against it (:func:`finish`)."""
    orig = _RELAXING.get().prop if _RELAXING.get() is not None else prop
    fs = ctx.spec.feature_set(orig.features)
    whole = Relaxation(replace(orig, pre=()), (), tuple(a for e in orig.pre for a in _conjuncts(e)))
    from fairspec.kinds.lowering import RELAXED_HULL

    token = _RELAXING.set(replace(whole, prop=orig))
    hull = RELAXED_HULL.set({})
    try:
        with solver_share(orig, ctx, backend, whole, search):
            v = decide(whole.prop)
    finally:
        RELAXED_HULL.reset(hull)
        _RELAXING.reset(token)
    enc = ctx.encoding(orig.model)
    return finish(orig, whole, v, fs, enc, backend, t0, None if search is None else search(orig, ctx, fs, enc, backend))


def or_relaxed(prop, ctx, backend: str, t0: float, before: Verdict, decide, search=None) -> Verdict:
    """A tree model's class / prob(c) / logit(c) / value post (kinds/tree_outputs, ``decide``) left ``before``
    (``unknown``) under a further pre-condition -- read on values, every value its own cell, too many cells --
    decided on the cells of the split tests with the whole of it relaxed (:func:`leaf_boxes_relaxed`); ``before``,
    with why the relaxation did not decide it either, where it does not. Not where the property's time budget is
    spent: ``before`` timed out, and the relaxation would take its time again."""
    from fairspec.planning import setting

    left = ctx.remaining(setting(prop, "timeout", backend))
    if left is not None and left <= 0:
        return replace(before, reason=f"{before.reason}; its relaxation was not tried: the time budget was spent")
    try:
        v = leaf_boxes_relaxed(prop, ctx, backend, t0, decide, search)
    except Unsupported as e:
        return replace(before, reason=f"{before.reason}; its relaxation was not decided either ({e})")
    if v.status != "unknown":
        return v
    return replace(before, reason=f"{before.reason}; on its relaxation: {v.reason}")


def finish(prop, rel: Relaxation, v: Verdict, fs, enc, backend: str, t0: float, search=None) -> Verdict:
    """The relaxed problem's verdict ``v`` as a verdict of ``prop`` (the module's rules), whichever engine decided
    it (an enumeration of the relaxed property too); a verdict this function already read back against ``prop``'s
    whole pre-condition (:func:`leaf_boxes_relaxed`, inside the relaxed run) as it is (:func:`_read_back`).
    Where it would be ``unknown``, ``search(pair)`` (kinds/pre_search.searcher's, from the relaxation's
    witness or None) may find a replayed pair meeting the whole pre-condition: ``violated`` with it."""
    import time

    if _read_back(v):
        return v
    said = claim(rel, fs)
    read = {a for a, _ in rel.derived}
    details = {**(v.details or {}), "pre_condition": {
        "relaxed": said, "kept": [text(e, fs) for e in rel.kept],
        "not_used": [text(e, fs) for e in rel.dropped if e not in read],
        **({"as_bounds": {text(a, fs): [text(b, fs) for b in got] for a, got in rel.derived}} if read else {})}}
    cov = details.get("coverage")
    if isinstance(cov, dict) and isinstance(cov.get("shares"), dict):
        details["coverage"] = {**cov, "shares": shares_of(prop, fs, cov["shares"], rel)}
    seconds = time.perf_counter() - t0
    upper = None if v.bound is None or not math.isfinite(float(v.bound[1])) else (float("-inf"), float(v.bound[1]))

    def not_decided(why: str, pair=None) -> Verdict:
        d = dict(details)
        if search is not None:
            got = search(pair)              # kinds/pre_search.Found
            if got.witness is not None:
                return got.verdict(prop, v, d, upper, said, backend, t0)
            why = f"{why}; {got.tried}"
        if upper is not None:
            d["maximum"] = (f"at most {upper[1]!r}: the certified upper bound over {said}; no pair meeting the "
                            "pre-condition measured")
        return unknown(prop, why, backend=v.backend or backend, seconds=time.perf_counter() - t0, details=d,
                       bound=upper)

    if v.status == "holds" and v.how == "proved":
        d = dict(details)
        bound, value = v.bound, v.value
        if bound is not None:
            # the maximum over a superset: an upper bound; its lower end was a pair's that may not meet it
            bound, value = upper, None
            d["maximum"] = (f"at most {upper[1]!r}: the certified upper bound over {said}" if upper is not None
                            else "no certified upper bound")
        elif value is not None:
            value = None
        reason = f"proved for {said}" + (f"; {v.reason}" if v.reason else "")
        return replace(v, name=prop.name, value=value, bound=bound, details=d, reason=reason, seconds=seconds)
    if v.status == "holds":
        return not_decided(f"the relaxation ({said}) holds only {v.how}: an estimate over a superset of the pairs "
                           "says nothing of the pairs meeting the pre-condition")
    if v.status == "violated":
        w = v.witness
        if w is None:
            return not_decided(f"the relaxation ({said}) is violated with no witness pair to check against the "
                               "pre-condition")
        try:
            got = meeting_witness(prop, fs, enc, w)    # complete_witness, categories sharing a code chosen too
        except Unsupported as e:
            return not_decided(f"the relaxation ({said}) is violated by a pair the pre-condition cannot be read on "
                               f"exactly ({e})", w)
        if got is None:
            return not_decided(f"a pair violating the relaxation was found ({_pair_text(w)}), but it does not meet "
                               f"the pre-condition's {_texts(rel.dropped, fs)}: not reported; decided over {said}", w)
        d = dict(details)
        value, bound = v.value, v.bound
        if bound is not None and "domain_maximum" in d:
            # the relaxation's largest measure is another pair's (the enumeration's witness is not at it), which
            # may not meet the pre-condition: only its certified upper bound is one of the property's maximum
            value, bound = None, upper
            d["maximum"] = (f"at most {upper[1]!r}: the certified upper bound over {said}; the witness (its measure "
                            "details.witness_value) meets the pre-condition, the relaxation's largest "
                            "(details.domain_maximum) is another pair's" if upper is not None else
                            "no certified upper bound")
        elif bound is not None and upper is not None:
            d["maximum"] = (f"[the witness's measure, the certified upper bound over {said}]; the witness meets the "
                            "pre-condition")
        return replace(v, name=prop.name, witness=got, details=d, seconds=seconds, value=value, bound=bound,
                       reason=f"{v.reason or 'a counterexample pair'}; the pair meets the pre-condition, read "
                              f"exactly (decided over {said})")
    return not_decided(f"{v.reason} (decided over {said})")


def _read_back(v: Verdict) -> bool:
    """Did :func:`finish` read ``v`` back? Its details.pre_condition is the object only it sets (the enumerations
    set a sentence there, about the pre-condition of the property they decided: a relaxed one inside the run)."""
    pc = (v.details or {}).get("pre_condition")
    return isinstance(pc, dict) and "relaxed" in pc and "not_used" in pc


def named_witness(prop, ctx, v: Verdict) -> Verdict:
    """A violated verdict of a property with a further pre-condition, its witness naming the features only the
    pre-condition reads (the solvers' pair has none of them: a tied int bound on a feature the model does not read
    narrows no column) with values of their domains that meet it (:func:`complete_witness`); ``unknown`` if it
    cannot be given such values. Inside a relaxed run, and where the witness names them all, as it is."""
    from fairspec.kinds.pair_pre import pre_features

    w = v.witness
    if relaxing() or all(n in w.features and n in w.features_prime for n in pre_features(prop)):
        return v
    fs = ctx.spec.feature_set(prop.features)
    try:
        got = complete_witness(prop, fs, ctx.encoding(prop.model), w)
    except Unsupported as e:
        got, why = None, str(e)
    else:
        why = "no values of the features only the pre-condition reads make the pair meet it"
    if got is None:
        return unknown(prop, f"a counterexample pair was found ({_pair_text(w)}), but {why}: not reported",
                       backend=v.backend, seconds=v.seconds, details=v.details)
    return replace(v, witness=got)


def _pair_text(w) -> str:
    """The pair in the spec's terms, each value as spec text (`sex = "Fe-male"`, `age = 69`; not Python's 'M')."""
    from fairspec.syntax import literals

    def shown(val):
        if isinstance(val, str):
            return literals.category(val)
        if isinstance(val, bool):
            return "true" if val else "false"
        return literals.number(val) if isinstance(val, (int, float)) else repr(val)

    def one(f):
        return ", ".join(f"{k} = {shown(val)}" for k, val in f.items())
    return f"x: {one(w.features)}; x': {one(w.features_prime)}"


# -- the witness against the whole pre-condition ------------------------------------------------------------

def complete_witness(prop, fs, enc, w):
    """The witness ``w`` if it meets ``prop``'s whole pre-condition read exactly -- with values of the features
    only the pre-condition reads (the model does not: the witness lacks them) that meet it, each from its domain,
    in the order that meets it (the post-condition is symmetric), and a feature after ``except`` differing where
    the witness shows them all -- else None. Raises Unsupported where the
    pre-condition cannot be read exactly on it."""
    import numpy as np

    from fairspec.kinds.pair_pre import PairPre, pre_features
    from fairspec.runtime.encoding import _column_value

    names = pre_features(prop)
    cols = {c.feature: c for c in enc.columns}
    for side in (w.features, w.features_prime):
        for n in names:
            if n in side and n not in cols and searched_unread(fs.get(n)) and \
                    isinstance(fs.get(n).domain, ir.IntRange):
                _unread_int(fs.get(n), side[n])  # a wide int the model does not read (kinds/pre_search gives it)
                continue
            if n in side and isinstance(fs.get(n).domain, ir.RealRange):
                c, x = cols.get(n), (w.x if side is w.features else w.x_prime)
                if c is None:
                    # a real the model does not read (kinds/pre_search gives it): a float of its domain, read
                    # exactly as the float it prints
                    _unread_real(fs.get(n), side[n])
                    continue
                # the value the witness prints is the one the model read (decode_row's shortest number)
                if c.kind in ("onehot", "code") or _column_value(c, float(side[n])) != float(x[c.offset]):
                    raise Unsupported(f"its value of {n} is not exactly the model's input")
    tol = dict(prop.relaxed)
    for n in names:
        if n in cols or n in prop.free or n not in w.features or n not in w.features_prime:
            continue
        a, b = w.features[n], w.features_prime[n]      # a feature the model does not read: tie, tolerance
        if not searched_unread(fs.get(n)):
            _unread_value(fs.get(n), a)                 # a narrow one the search gave (kinds/pre_search): its domain's
            _unread_value(fs.get(n), b)
        if not (_within(a, b, prop.relaxed_op(n), tol[n]) if n in tol else a == b):
            raise Unsupported(f"its values of {n} are not an admissible pair (the pair ties it or bounds its gap)")
    missing = [n for n in names if n not in w.features or n not in w.features_prime]
    choices = []
    for n in missing:
        f = fs.get(n)
        if searched_unread(f):
            raise Unsupported(f"the pre-condition reads {n}, which the model does not, on too many values to choose one")
        vals = list(f.values()) if f.is_discrete else list(range(int(f.domain.lo), int(f.domain.hi) + 1))
        if n in prop.free:
            choices.append([(a, b) for a in vals for b in vals])
        elif n in tol:
            choices.append([(a, b) for a in vals for b in vals if _within(a, b, prop.relaxed_op(n), tol[n])])
        else:
            choices.append([(a, a) for a in vals])
    from fairspec.kinds.shared_codes import completions

    too_many = (f"the pre-condition reads {', '.join(missing)}, which the model does not, on more than "
                f"{MAX_COMPLETIONS:,} value combinations")
    pre = PairPre(prop, fs, {n: np.zeros(2) for n in names}) if missing else None
    for swap in (False, True):      # x and x' as the witness has them, then exchanged (the post is symmetric)
        known = {}                  # the witness's values of the features it names, in this order
        if missing:
            try:
                for n in names:
                    if n not in missing:
                        px, py = (w.features_prime, w.features) if swap else (w.features, w.features_prime)
                        known[(prop.var, n)] = _exact_value(fs.get(n), px[n])
                        known[(prop.var_prime, n)] = _exact_value(fs.get(n), py[n])
            except Unsupported:
                known = None        # read on each completion below, which says why
        per = [_pruned(prop, fs, pre, n, c, swap, missing, known) for n, c in zip(missing, choices)] \
            if missing and known is not None else choices
        if any(not c for c in per):
            continue
        for fx, fy in completions(prop, w, missing, per, MAX_COMPLETIONS, too_many):
            if pre is None:         # built once, at the first completion (as it was built only where there is one)
                pre = PairPre(prop, fs, {n: np.zeros(2) for n in names})
            px, py = (fy, fx) if swap else (fx, fy)
            env = {}
            for n in names:
                env[(prop.var, n)] = _exact_value(fs.get(n), px[n])
                env[(prop.var_prime, n)] = _exact_value(fs.get(n), py[n])
            if all(pre._decide(e, env) for e in prop.pre):
                got = replace(w, features=fx, features_prime=fy)
                return PairPre.swapped(got) if swap else got
    return None


def _pruned(prop, fs, pre, n, pairs: list, swap: bool, missing: list, known: dict) -> list:
    """The value pairs ``pairs`` of ``n`` (a feature only the pre-condition reads, x's first: x'`s first where
    ``swap``) without those a top-level conjunct of the pre-condition reading ``n`` and no other missing feature --
    the witness's ``known`` values of the rest -- is false on, exactly in both readings: no completion with one
    meets the pre-condition. A conjunct that cannot be read exactly there keeps the pair (the whole pre-condition,
    read on the completion, decides). Before, the completion walked its first 4,096 combinations from the least
    values: `x.u >= 150 and x.v >= 150`, or `x.u == x.a * 20 + 7 and x.v > 100`, over two ints of 200 values found
    none."""
    from fairspec.ir.no_pair import _conjuncts

    alone = [c for e in prop.pre for c in _conjuncts(e)
             if {x.feature for x in ir.subexpressions(c) if isinstance(x, ir.FeatureRef)} & set(missing) == {n}]
    if not alone:
        return pairs
    f = fs.get(n)
    out = []
    for a, b in pairs:
        px, py = (b, a) if swap else (a, b)
        env = {**known, (prop.var, n): _exact_value(f, px), (prop.var_prime, n): _exact_value(f, py)}
        keep = True
        for c in alone:
            try:
                if not any(pre._decide_both(c, env)):
                    keep = False
                    break
            except (Unsupported, KeyError):
                continue
        if keep:
            out.append((a, b))
    return out


def searched_unread(f) -> bool:
    """Is ``f``, where the model does not read it, given its value by kinds/pre_search (a real; an int of more
    than 256 values) rather than chosen here among its values (:func:`complete_witness`)?"""
    d = f.domain
    return isinstance(d, ir.RealRange) or (isinstance(d, ir.IntRange) and d.hi - d.lo > 255)


def _unread_value(f, v) -> None:
    """A witness's value ``v`` of a discrete feature ``f`` the model does not read, of at most 256 values (given by
    kinds/pre_search where the completion cannot choose it): one of its domain's, as decode_row prints it (a whole
    number, a category's name, a boolean), else Unsupported."""
    import numbers

    d = f.domain
    if isinstance(d, ir.IntRange):
        if isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v)) and \
                float(v) == round(float(v)) and d.lo <= v <= d.hi:
            return None
    elif isinstance(d, ir.Boolean):
        if isinstance(v, str) and v in d.categories or not isinstance(v, str) and v in (0, 1):
            return None
    elif isinstance(d, ir.Categorical) and isinstance(v, str) and v in d.categories:
        return None
    raise Unsupported(f"its value of {f.name} ({v!r}) is no value of its domain")


def _unread_int(f, v) -> None:
    """A witness's value ``v`` of a wide int ``f`` the model does not read: a whole number of its declared range
    (a Python int, not a bool or a float), else Unsupported."""
    if isinstance(v, bool) or not isinstance(v, int) or not f.domain.lo <= v <= f.domain.hi:
        raise Unsupported(f"its value of {f.name} ({v!r}) is no whole number of its declared range")


def _unread_real(f, v) -> None:
    """A witness's value ``v`` of a real ``f`` the model does not read: a finite float (what the witness prints and
    the pre-condition is read on) within its declared range, else Unsupported."""
    if not isinstance(v, float) or not math.isfinite(v) or not in_real_range(f.domain, v):
        raise Unsupported(f"its value of {f.name} ({v!r}) is no float of its declared range")


def in_real_range(d, v: float) -> bool:
    """``v`` within the real range ``d`` with each end read both as the float it is stored as and as the decimal it
    is written as (``real in [0, 0.1]``: at most the float 0.1 and 1/10)."""
    from fractions import Fraction

    from fairspec.certify.exact import threshold_of

    x = Fraction(float(v))
    ends = []
    for e in (d.lo, d.hi):
        e = float(e)
        ends.append((Fraction(e), threshold_of(e)) if math.isfinite(e) else None)
    return (ends[0] is None and d.lo < 0 or ends[0] is not None and x >= max(ends[0])) and \
        (ends[1] is None and d.hi > 0 or ends[1] is not None and x <= min(ends[1]))


def meeting_witness(prop, fs, enc, w):
    """``w`` with the categories of its shared codes (kinds/shared_codes) chosen so that the printed pair is
    admissible and meets the whole pre-condition (:func:`complete_witness`), or None where no choice does; without
    shared codes, ``w`` checked as :func:`complete_witness` checks it. Raises Unsupported where the pre-condition
    cannot be read exactly on it."""
    from fairspec.kinds.shared_codes import choices

    cands = choices(prop, enc, w)
    if cands is None:
        return complete_witness(prop, fs, enc, w) if prop.pre else w
    for got in cands:
        got = complete_witness(prop, fs, enc, got) if prop.pre else got
        if got is not None:
            return got
    return None


def with_categories(prop, ctx, v: Verdict) -> Verdict:
    """A violated verdict whose witness prints the categories of shared codes that make it the property's pair
    (:func:`meeting_witness`), or ``unknown`` saying what was found where none does."""
    fs = ctx.spec.feature_set(prop.features)
    w = v.witness
    try:
        got = meeting_witness(prop, fs, ctx.encoding(prop.model), w)
    except Unsupported as e:
        got, why = None, str(e)
    else:
        why = ("no categories of the codes the model read make the pair one the property compares (its "
               "pre-condition, and a feature after `except` differing)")
    if got is None:
        return unknown(prop, f"a counterexample pair was found ({_pair_text(w)}), but {why}: not reported",
                       backend=v.backend, seconds=v.seconds, details=v.details)
    return replace(v, witness=got)


def _within(a, b, op, t) -> bool:
    """``|a - b| op t`` with the tolerance read both as the float it is stored as and as the decimal it is
    written as (a pair is taken only where both readings admit it: ``<= 0.1`` is not met by a gap of the
    float 0.1, above 1/10)."""
    from fractions import Fraction

    from fairspec.certify.exact import threshold_of

    d = abs(Fraction(a) - Fraction(b))
    ts = (Fraction(t), threshold_of(t))
    return all(d < x for x in ts) if op == "<" else all(d <= x for x in ts)


def _exact_value(f, v):
    """A witness's feature value as PairPre reads it: a category's index, a boolean's 0 / 1, a number as it is."""
    d = f.domain
    if isinstance(d, ir.Categorical):
        if v not in d.categories:
            raise Unsupported(f"the witness's {f.name} = {v!r} is no category of it")
        return d.categories.index(v)
    if isinstance(d, ir.Boolean):
        # decode_row gives a raw column's value as a bool and a code / one-hot column's as its category text
        # ("false" / "true"): bool("false") is True, so text is read by its category
        if isinstance(v, str):
            if v not in d.categories:
                raise Unsupported(f"the witness's {f.name} = {v!r} is neither true nor false")
            return d.categories.index(v)
        if v not in (0, 1):
            raise Unsupported(f"the witness's {f.name} = {v!r} is neither true nor false")
        return int(v)
    if isinstance(d, ir.IntRange):
        if float(v) != round(float(v)):
            raise Unsupported(f"the witness's {f.name} = {v!r} is no whole number")
        return int(round(float(v)))
    return float(v)
