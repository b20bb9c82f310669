"""Our own exact SSAT solver for the exist-random (ER), universal-random (UR) and
random-exist (RE) fragments, with inner existential variables.

A DPLL search over the residual CNF with

* unit propagation: a unit literal on a random variable multiplies the value by
  its probability, on an existential variable forces it, on a universal one
  makes the branch 0;
* pure literals for existential variables (set to satisfy) and universal ones
  (set to falsify) -- never for random or defined variables;
* component decomposition: variable-disjoint parts of the residual CNF are
  solved separately and multiplied (valid for max/min/expectation alike since
  every part is non-negative and shares no variable);
* caching: every component's value (and its optimising outer assignment) is
  memoised by its clause set, across calls on the same formula;
* branching in quantifier order: outer E/A variables first (max/min), then
  random (weighted sum) or *defined* variables (plain sum, see formula.py),
  then a SAT check over the remaining inner existentials;
* large components (``INDEXED_MIN`` clauses and more) are frozensets of
  clauses propagated and split through a literal -> clauses index with set
  operations, so a decision costs what it touches rather than a copy of the
  component (the residual of a decision diagram is mostly untouched);
* a budget of nodes and seconds: past it ``solve`` returns status "unknown"
  with the reason, never a number.

The value of an ER formula is max over the E variables of the probability; the
solver returns the maximising assignment of the E variables it had to decide.
"""

from __future__ import annotations

import itertools
import sys
import time
from dataclasses import dataclass, field

from fairspec.backends.ssat.formula import SSATFormula

__all__ = ["SSATSolver", "SSATResult", "brute_force_ssat"]

_E, _A, _R, _D, _I = 0, 1, 2, 3, 4
_KIND = {"E": _E, "A": _A, "R": _R, "D": _D, "I": _I}


class _Budget(Exception):
    pass


@dataclass(frozen=True)
class SSATResult:
    status: str                      # "ok" | "unknown"
    probability: float | None        # (a numpy vector for a batched formula)
    assignment: dict = field(default_factory=dict)   # outer var -> bool (decided ones)
    nodes: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    reason: str | None = None


def _simplify(clauses, lits):
    """Clauses under the true literals ``lits`` (a set); None on an empty clause."""
    neg = {-l for l in lits}
    out = []
    app = out.append
    for c in clauses:
        if not lits.isdisjoint(c):
            continue
        if neg.isdisjoint(c):
            app(c)
        else:
            c2 = tuple([l for l in c if l not in neg])
            if not c2:
                return None
            app(c2)
    return out


def _components(clauses):
    """Variable-disjoint parts of a clause list (one BFS over variable occurrences)."""
    if len(clauses) <= 1:
        return [clauses]
    occ: dict = {}
    for i, c in enumerate(clauses):
        for l in c:
            v = l if l > 0 else -l
            lst = occ.get(v)
            if lst is None:
                occ[v] = [i]
            else:
                lst.append(i)
    seen = [False] * len(clauses)
    comps = []
    for i in range(len(clauses)):
        if seen[i]:
            continue
        seen[i] = True
        stack = [i]
        comp = []
        while stack:
            j = stack.pop()
            c = clauses[j]
            comp.append(c)
            for l in c:
                lst = occ.pop(l if l > 0 else -l, None)
                if lst:
                    for k in lst:
                        if not seen[k]:
                            seen[k] = True
                            stack.append(k)
        if len(comp) == len(clauses):
            return [clauses]
        comps.append(comp)
    return comps


def _zero(x) -> bool:
    """x == 0 for a probability or (batched) for every entry of a vector."""
    if type(x) is float:
        return x == 0.0
    return not x.any()


def _propagate(clauses, units, kind, prob):
    """Unit propagation and pure-literal elimination in one pass with occurrence lists.

    ``units`` are decisions (a branch): a random one multiplies the factor by
    its probability, a universal one is allowed.  Unit clauses force their
    literal (a random one with its probability, a universal one makes the value
    0).  A literal whose complement no longer occurs in an open clause is pure:
    existential (E, I) variables take it, universal ones take its complement.
    Returns (factor, chosen outer literals, residual clauses), or -- when a
    clause is falsified or a universal variable is forced -- the list of outer
    literals chosen so far (the value is then 0).
    """
    n = len(clauses)
    occ: dict = {}
    queue = list(units)
    for i, c in enumerate(clauses):
        if len(c) == 1:
            queue.append(c[0])
        for l in c:
            lst = occ.get(l)
            if lst is None:
                occ[l] = [i]
            else:
                lst.append(i)
    cnt = {l: len(v) for l, v in occ.items()}
    free = set(units)          # literals that may be assigned without a forcing clause
    for l in cnt:
        if -l not in cnt:
            k = kind[l if l > 0 else -l]
            if k == 0 or k == 4:      # E, I: pure, take it
                queue.append(l)
                free.add(l)
            elif k == 1:              # A: pure, the adversary falsifies it
                queue.append(-l)
                free.add(-l)
    if not queue:
        return 1.0, [], clauses
    val: dict = {}
    sat = [False] * n
    left = [len(c) for c in clauses]
    factor = 1.0
    chosen = []
    qi = 0
    while qi < len(queue):
        l = queue[qi]
        qi += 1
        v = l if l > 0 else -l
        b = val.get(v)
        if b is not None:
            if b != (l > 0):
                if l in free and kind[v] != 2 and kind[v] != 3:
                    continue   # a pure-literal choice overtaken by a forced value
                return chosen
            continue
        k = kind[v]
        if k == 2:      # R
            factor = factor * (prob[v] if l > 0 else 1.0 - prob[v])
            if _zero(factor):
                return chosen
        elif k == 1:    # A
            if l not in free:
                chosen.append(-l)
                return chosen
            chosen.append(l)
        elif k == 0:    # E
            chosen.append(l)
        val[v] = l > 0
        for i in occ.get(l, ()):
            if sat[i]:
                continue
            sat[i] = True
            for y in clauses[i]:
                if y == l:
                    continue
                c2 = cnt.get(y, 0) - 1
                cnt[y] = c2
                if c2 == 0:
                    vy = y if y > 0 else -y
                    if vy not in val and cnt.get(-y, 0) > 0:
                        ky = kind[vy]
                        if ky == 0 or ky == 4:
                            queue.append(-y)
                            free.add(-y)
                        elif ky == 1:
                            queue.append(y)
                            free.add(y)
        for i in occ.get(-l, ()):
            if sat[i]:
                continue
            left[i] -= 1
            if left[i] <= 1:
                # find the unassigned literal (or detect falsification)
                fr = None
                done = False
                for x in clauses[i]:
                    bx = val.get(x if x > 0 else -x)
                    if bx is None:
                        fr = x
                        break
                    if bx == (x > 0):
                        done = True
                        break
                if done:
                    continue
                if fr is None:
                    return chosen
                if left[i] == 1:
                    queue.append(fr)
    out = []
    app = out.append
    for i, c in enumerate(clauses):
        if sat[i]:
            continue
        if left[i] == len(c):
            app(c)
            continue
        app(tuple([x for x in c if (x if x > 0 else -x) not in val]))
    return factor, chosen, out


_NOTHING: frozenset = frozenset()

# components at least this large take the indexed path (``_propagate_indexed``)
INDEXED_MIN = 48


def _propagate_indexed(comp, lit, kind, prob, index):
    """``_propagate`` of one decision ``lit`` on a component at fixpoint.

    ``comp`` is a (frozen) set of clauses in which unit propagation and the
    pure-literal rule have nothing left to do (a component of a residual
    formula); ``index`` maps every literal to the set of all clauses seen so
    far that contain it.  Satisfied and shortened clauses are found by set
    intersections, so the work done in Python is proportional to the clauses
    the decision touches, not to the size of the component (the residual of a
    decision diagram is mostly untouched).  Same results as ``_propagate``."""
    cur = set(comp)
    queue = [lit]
    free = {lit}
    touched: set = set()      # variables of the clauses the propagation removed or shortened
    val: dict = {}
    factor = 1.0
    chosen: list = []
    qi = 0
    while qi < len(queue):
        l = queue[qi]
        qi += 1
        v = l if l > 0 else -l
        b = val.get(v)
        if b is not None:
            if b != (l > 0):
                if l in free and kind[v] != 2 and kind[v] != 3:
                    continue
                return chosen
            continue
        k = kind[v]
        if k == 2:
            factor = factor * (prob[v] if l > 0 else 1.0 - prob[v])
            if _zero(factor):
                return chosen
        elif k == 1:
            if l not in free:
                chosen.append(-l)
                return chosen
            chosen.append(l)
        elif k == 0:
            chosen.append(l)
        val[v] = l > 0
        s_l = index.get(l)
        if s_l:
            sat = cur.intersection(s_l)
            if sat:
                cur.difference_update(sat)
                touched.update(map(abs, itertools.chain.from_iterable(sat)))
                # literals whose last occurrence went: their complement is pure
                for c in sat:
                    for y in c:
                        vy = y if y > 0 else -y
                        if vy in val:
                            continue
                        ky = kind[vy]
                        if ky == 2 or ky == 3:
                            continue
                        sy = index.get(y)
                        if sy and not cur.isdisjoint(sy):
                            continue
                        sn = index.get(-y)
                        if not sn or cur.isdisjoint(sn):
                            continue
                        if ky == 1:
                            if y not in free:
                                queue.append(y)
                                free.add(y)
                        elif -y not in free:
                            queue.append(-y)
                            free.add(-y)
        s_n = index.get(-l)
        if s_n:
            short = cur.intersection(s_n)
            if short:
                cur.difference_update(short)
                touched.update(map(abs, itertools.chain.from_iterable(short)))
                nl = -l
                for c in short:
                    c2 = tuple([x for x in c if x != nl])
                    if not c2:
                        return chosen
                    if c2 not in cur:
                        cur.add(c2)
                        for x in c2:
                            sx = index.get(x)
                            if sx is None:
                                index[x] = {c2}
                            else:
                                sx.add(c2)
                    if len(c2) == 1:
                        queue.append(c2[0])
    touched.difference_update(val)
    return factor, chosen, cur, touched


def _components_indexed(clauses, index, seeds=None):
    """``_components`` of a clause set through the literal index (frozensets);
    the traversal runs over variables, its set operations in C.

    ``seeds``: when ``clauses`` is what a propagation left of a *connected*
    component, the variables of the clauses it removed or shortened.  Every
    part of the residual contains one of them (a part without would have been
    cut off from the rest before), so the residual is connected as soon as a
    breadth-first traversal from one seed has met all the others -- usually
    after a few steps around the decision instead of a full traversal."""
    if len(clauses) <= 1:
        return [frozenset(clauses)]
    remaining = set(clauses)
    comps = []
    chain = itertools.chain.from_iterable
    if seeds:
        live = set()
        for v in seeds:
            sp, sn = index.get(v), index.get(-v)
            if (sp and not remaining.isdisjoint(sp)) or (sn and not remaining.isdisjoint(sn)):
                live.add(v)
        seeds = live or None     # (none left: only if the input was not connected)
    while remaining:
        if seeds:
            v0 = next(iter(seeds))
            seen = {v0}
            seeds.discard(v0)
            comp = []
        else:
            c0 = remaining.pop()
            comp = [c0]
            seen = set(map(abs, c0))
            if seeds is not None:
                seeds.difference_update(seen)
        stack = list(seen)
        qi = 0
        while qi < len(stack) and remaining:
            if seeds is not None and not seeds and not comps:
                # every seed reached from the first: one component
                return [clauses if isinstance(clauses, frozenset) else frozenset(clauses)]
            v = stack[qi]
            qi += 1
            for y in (v, -v):
                sy = index.get(y)
                if not sy:
                    continue
                found = remaining.intersection(sy)
                if not found:
                    continue
                remaining.difference_update(found)
                comp.extend(found)
                vs = set(map(abs, chain(found)))
                vs.difference_update(seen)
                if vs:
                    seen.update(vs)
                    stack.extend(vs)
                    if seeds:
                        seeds.difference_update(vs)
        if not comps and not remaining:
            return [clauses if isinstance(clauses, frozenset) else frozenset(clauses)]
        comps.append(frozenset(comp))
    return comps


class SSATSolver:
    """Exact solver for one formula; its cache persists across ``solve`` calls."""

    def __init__(self, formula: SSATFormula, max_nodes: int = 2_000_000, time_limit: float = 60.0,
                 max_cache: int = 2_000_000):
        self.formula = formula
        n = formula.nv + 1
        self.kind = [_I] * n
        self.prob = [0.5] * n
        for v, k in formula.kind.items():
            self.kind[v] = _KIND[k]
        for v, p in formula.prob.items():
            self.prob[v] = p
        self.rank = dict(formula.priority)
        self._outer = {v for v, k in formula.kind.items() if k in ("E", "A")}
        self._ranked_rd = {v for v in self.rank if formula.kind.get(v) in ("R", "D")}
        self.max_nodes = max_nodes
        self.time_limit = time_limit
        self.max_cache = max_cache
        self.batched = any(type(p) is not float for p in formula.prob.values())
        if self.batched:
            import numpy as np
            size = {len(p) for p in formula.prob.values() if type(p) is not float}
            if len(size) != 1:
                raise ValueError("the batched probabilities have different lengths")
            if any(k in ("E", "A") for k in formula.kind.values()):
                raise ValueError("a batched formula must be random-exist (no outer E/A variables)")
            for v, p in formula.prob.items():
                if type(p) is float:
                    self.prob[v] = np.full(next(iter(size)), p)
        self.cache: dict = {}
        self.index: dict = {}          # literal -> every clause seen that contains it
        self.indexed: set = set()      # the clauses in ``index``
        self.nodes = 0
        self.hits = 0
        self._deadline = 0.0

    # ------------------------------------------------------------------ API

    def solve(self, assumptions=(), max_nodes: int | None = None, time_limit: float | None = None) -> SSATResult:
        """Pr of the formula with the unit clauses ``assumptions`` added."""
        t0 = time.perf_counter()
        self.nodes = 0
        self.hits = 0
        budget_nodes = self.max_nodes if max_nodes is None else max_nodes
        limit = self.time_limit if time_limit is None else time_limit
        self._node_limit = budget_nodes
        self._deadline = t0 + limit
        if self.formula.unsat:
            return SSATResult("ok", 0.0, {}, 0, 0, time.perf_counter() - t0)
        clauses = list(self.formula.clauses) + [(int(l),) for l in assumptions]
        old = sys.getrecursionlimit()
        if old < 20000:
            sys.setrecursionlimit(20000)
        try:
            value, chosen = self._solve(clauses)
        except _Budget as b:
            return SSATResult("unknown", None, {}, self.nodes, self.hits, time.perf_counter() - t0, str(b))
        except RecursionError:
            return SSATResult("unknown", None, {}, self.nodes, self.hits, time.perf_counter() - t0,
                              "the search went deeper than the recursion limit")
        finally:
            sys.setrecursionlimit(old)
        assignment = {abs(l): l > 0 for l in chosen}
        if self.batched:
            import numpy as np
            value = np.clip(np.broadcast_to(np.asarray(value, dtype=float), (len(next(iter(self.formula.prob.values()))),)), 0.0, 1.0)
        else:
            value = min(1.0, max(0.0, value))
        return SSATResult("ok", value, assignment, self.nodes, self.hits, time.perf_counter() - t0)

    # ------------------------------------------------------------------ search

    def _solve(self, clauses, units=()):
        if len(units) == 1 and type(clauses) is frozenset and len(clauses) >= INDEXED_MIN:
            return self._solve_indexed(clauses, units[0])
        r = _propagate(list(clauses), units, self.kind, self.prob)
        if type(r) is list:
            return 0.0, tuple(r)
        factor, chosen, clauses = r
        if not clauses:
            return factor, tuple(chosen)
        for comp in sorted(_components(clauses), key=len):
            v, ch = self._component(frozenset(comp))
            chosen.extend(ch)
            factor = factor * v
            if _zero(factor):
                return 0.0, tuple(chosen)
        return factor, tuple(chosen)

    def _solve_indexed(self, comp, lit):
        new = comp.difference(self.indexed)
        if new:
            index = self.index
            self.indexed.update(new)
            for c in new:
                for x in c:
                    sx = index.get(x)
                    if sx is None:
                        index[x] = {c}
                    else:
                        sx.add(c)
        r = _propagate_indexed(comp, lit, self.kind, self.prob, self.index)
        if type(r) is list:
            return 0.0, tuple(r)
        factor, chosen, clauses, seeds = r
        if not clauses:
            return factor, tuple(chosen)
        self.indexed.update(clauses)
        for comp in sorted(_components_indexed(clauses, self.index, seeds), key=len):
            v, ch = self._component(comp)
            chosen.extend(ch)
            factor = factor * v
            if _zero(factor):
                return 0.0, tuple(chosen)
        return factor, tuple(chosen)

    def _component(self, key):
        comp = key
        hit = self.cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.nodes += 1
        if self.nodes > self._node_limit:
            raise _Budget(f"the exact SSAT search exceeded its budget of {self._node_limit} nodes")
        if time.perf_counter() > self._deadline:
            raise _Budget(f"the exact SSAT search exceeded its time limit of {self.time_limit:g} s")
        kind = self.kind
        if self._ranked_rd:
            # a ranked random/defined variable and no outer one: branch on it
            # without counting occurrences (set operations in C)
            vs = set(map(abs, itertools.chain.from_iterable(comp)))
            if vs.isdisjoint(self._outer):
                ranked = vs.intersection(self._ranked_rd)
                if ranked:
                    v = min(ranked, key=self.rank.__getitem__)
                    res = (self._branch(comp, v)[0] + self._branch(comp, -v)[0], ())
                    if len(self.cache) >= self.max_cache:
                        self.cache.clear()
                    self.cache[key] = res
                    return res
        cnt: dict = {}
        pos: dict = {}
        for c in comp:
            for l in c:
                v = l if l > 0 else -l
                cnt[v] = cnt.get(v, 0) + 1
                if l > 0:
                    pos[v] = pos.get(v, 0) + 1
        outer = [v for v in cnt if kind[v] <= _A]
        if outer:
            v = max(outer, key=lambda x: (cnt[x], -x))
        else:
            rd = [v for v in cnt if kind[v] == _R or kind[v] == _D]
            ranked = [v for v in rd if v in self.rank] if self.rank else None
            if ranked:
                v = min(ranked, key=lambda x: self.rank[x])
            elif rd:
                v = max(rd, key=lambda x: (cnt[x], kind[x], -x))
            else:
                v = max(cnt, key=lambda x: (cnt[x], -x))
        k = kind[v]
        first = v if 2 * pos.get(v, 0) >= cnt[v] else -v
        if k == _R or k == _D:
            # the branch literal's probability (R) is applied by the propagation
            res = (self._branch(comp, v)[0] + self._branch(comp, -v)[0], ())
        elif k == _A:
            a = self._branch(comp, first)
            if a[0] <= 0.0:
                res = a
            else:
                b = self._branch(comp, -first)
                res = a if a[0] <= b[0] else b
        else:  # E or I: max, stop at 1
            a = self._branch(comp, first)
            if a[0] >= 1.0:
                res = a if k == _E else (a[0], ())
            else:
                b = self._branch(comp, -first)
                res = a if a[0] >= b[0] else b
                if k == _I:
                    res = (res[0], ())
        if len(self.cache) >= self.max_cache:
            self.cache.clear()
        self.cache[key] = res
        return res

    def _branch(self, comp, lit):
        return self._solve(comp, (lit,))


# ---------------------------------------------------------------------- reference


def brute_force_ssat(formula: SSATFormula, assumptions=()) -> float:
    """The SSAT semantics by exhaustive enumeration (tiny formulas only; for tests).

    Outer E/A variables in index order (max/min), then all random variables
    (expectation), then a satisfiability check over the inner D/I variables.
    """
    clauses = [tuple(c) for c in formula.clauses] + [(int(l),) for l in assumptions]
    if formula.unsat:
        return 0.0
    outer = [v for v in range(1, formula.nv + 1) if formula.kind.get(v) in ("E", "A")]
    rand = [v for v in range(1, formula.nv + 1) if formula.kind.get(v) == "R"]
    inner = [v for v in range(1, formula.nv + 1) if formula.kind.get(v) in ("D", "I")]

    def sat_inner(assign):
        cl = []
        for c in clauses:
            rest = []
            ok = False
            for l in c:
                v = abs(l)
                if v in assign:
                    if assign[v] == (l > 0):
                        ok = True
                        break
                else:
                    rest.append(l)
            if ok:
                continue
            if not rest:
                return False
            cl.append(rest)
        vs = sorted({abs(l) for c in cl for l in c})
        for bits in itertools.product((False, True), repeat=len(vs)):
            a = dict(zip(vs, bits))
            if all(any(a[abs(l)] == (l > 0) for l in c) for c in cl):
                return True
        return not cl

    def rec_outer(i, assign):
        if i == len(outer):
            tot = 0.0
            for bits in itertools.product((False, True), repeat=len(rand)):
                w = 1.0
                for v, b in zip(rand, bits):
                    w *= formula.prob[v] if b else 1.0 - formula.prob[v]
                if w == 0.0:
                    continue
                a = dict(assign)
                a.update(zip(rand, bits))
                if sat_inner(a):
                    tot += w
            return tot
        v = outer[i]
        vals = []
        for b in (False, True):
            a = dict(assign)
            a[v] = b
            vals.append(rec_outer(i + 1, a))
        return max(vals) if formula.kind[v] == "E" else min(vals)

    del inner
    return rec_outer(0, {})
