"""find / prove / maximize on a tree ensemble's pair problem, by MILP (HiGHS, SCIP) or SMT (z3).

The problem is a :class:`~fairspec.backends.pair.PairProblem` whose ``net`` is a folded,
pruned :class:`~fairspec.models.trees.TreeEnsemble` (see :mod:`.space`); the results are the
same :class:`~fairspec.backends.pair.PairResult` as for ReLU networks. First
:func:`~fairspec.backends.trees.space.instant_verdict` may prove it with no solver; then (find
and prove, unless ``falsify=False``) the local search of :mod:`.search` looks for a violating
pair on a quarter of the budget (at most 10 s). Then, with
``S`` the aggregate of ``x`` and ``S'`` of ``x'`` and ``c`` the decision threshold on S
(1/2 for probabilities, 0 for logits); by symmetry a violation exists iff one with S >= S':

* ``label``: a violation is ``S > c >= S'``. MILP: first a feasible pair with
  ``S >= c + 1e-7``, ``S' <= c`` (a witness, no optimisation); when there is none, maximise
  ``S`` subject to ``S' <= c`` (a dual bound ``< c - 1e-9`` proves the property: the shared
  holds rule of :func:`fairspec.backends.pair.drivers.holds` on the measure ``S - c``);
* ``prob`` on a forest (S is the probability) and ``logit`` on a boosted model (S is the
  logit): a violation is ``S - S' > eps``; MILP: first ``S - S' >= eps + 1e-7``, then
  maximise ``S - S'`` (a dual bound ``<= eps`` proves it, the same rule);
* ``prob`` on a boosted model: ``sigmoid(S) - sigmoid(S') > eps``, decided with the convex
  tangent cuts of :func:`~fairspec.backends.pair.prob_cut`, added at each spurious solution;
* ``logit`` on a forest is not linear in the leaves and ends ``unknown``.

With ``portfolio`` (the default for HiGHS/SCIP) z3 runs first on a third of the budget (at
most 10 s): on forests and boosted models it finds violations several times faster
(bench/trees.py), and its unsat is a proof; the MILP gets the rest. Leaves make the outputs
exact sums, so only a MILP optimum within solver tolerance of the threshold is ambiguous; z3
(exact rationals) then settles it with the remaining time.
Every witness is rounded onto the domain and re-checked with
:func:`~fairspec.backends.pair.check_witness` on the ensemble before it is returned.

These answers are evidence about the converted ensemble in float64, not about the library's
runtime: the individual-fairness kind (:func:`fairspec.kinds.tree_engine_answers.solver_verdict`) reports
a violation only as a concrete domain pair that breaks the property on the library, and a
``holds`` from here as ``unknown`` (not certified). Certified tree answers come from enumeration
on the library in cells / leaf boxes (:mod:`fairspec.kinds.tree_pairs`, :mod:`fairspec.certify.trees`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec.backends.pair.drivers import holds
from fairspec.backends.pair import (PairProblem, PairResult, check_witness, clean_pair, logit_fn, make_witness,
                                    pair_measure, prob_cut, prob_cut_points)
from fairspec.models.network import sigmoid

__all__ = ["find", "prove", "maximize", "solve", "TOL"]

TOL = 1e-7
MAX_CUT_ROUNDS = 200
IMPROVE = 1e-7
ENGINES = ("highs", "scip", "z3")


def _kind(problem: PairProblem) -> str | None:
    link = problem.net.link
    if problem.post == "label":
        return "label"
    if (problem.post == "prob" and link == "identity") or (problem.post == "logit" and link == "logistic"):
        return "diff"
    if problem.post == "prob":
        # sigmoid is increasing: a positive probability gap is a positive logit gap
        return "diff" if problem.eps == 0 else "sigdiff"
    return None


def _difference_only(problem: PairProblem) -> PairProblem:
    """The problem the engine encodes. When every query reads only ``S - S'`` (``prob`` on a
    probability-averaging forest, ``logit`` on a boosted model) the trees that read no
    protected or relaxed input add the same leaf value to ``S`` and ``S'`` and cancel: the
    engine encodes only the others (its ``S`` is then not the model's, only the difference is)."""
    from dataclasses import replace

    from fairspec.backends.trees.space import vary_trees
    from fairspec.models.trees import TreeEnsemble

    ens = problem.net
    if not ((problem.post == "prob" and ens.link == "identity") or (problem.post == "logit"
                                                                       and ens.link == "logistic")):
        return problem
    keep = vary_trees(ens, set(problem.free) | {i for i, _ in problem.relaxed})
    if len(keep) == len(ens.trees) or not keep:
        return problem
    sub = TreeEnsemble(tuple(ens.trees[k] for k in keep), ens.n_inputs, ens.base, ens.link, ens.source, ens.divisor,
                       margin_scale=ens.margin_scale, cut=ens.cut, tie=ens.tie)
    return replace(problem, net=sub)


class _Run:
    def __init__(self, problem: PairProblem, engine: str, time_limit: float | None, portfolio: bool = False):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
        self.t0 = time.perf_counter()
        self.problem = problem
        self.engine_name = engine
        self.time_limit = time_limit
        self.deadline = None if time_limit is None else self.t0 + float(time_limit)
        self._eng = None
        self.portfolio = portfolio and engine != "z3"
        self.stats: dict = {"engine": engine}

    @property
    def eng(self):
        if self._eng is None:
            enc = _difference_only(self.problem)
            if self.engine_name == "z3":
                from fairspec.backends.trees.smt import SmtTreeEngine

                self._eng = SmtTreeEngine(enc)
            else:
                from fairspec.backends.trees.milp import MilpTreeEngine

                self._eng = MilpTreeEngine(enc, self.engine_name)
        return self._eng

    def remaining(self):
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def q(self, rows, objective=None):
        return self.eng.query(rows, objective, self.deadline)

    def checked(self, pair):
        if pair is None:
            return None
        p = self.problem
        x, xp = clean_pair(p, *pair)
        if not check_witness(p, x, xp, p.net.forward):
            return None
        # continuous values moved to the middle of their split interval: the same leaves, but
        # clear of float32 rounding at the thresholds (the libraries compare in float32)
        cx, cxp = centred(p, x, xp)
        if check_witness(p, cx, cxp, p.net.forward):
            x, xp = cx, cxp
        return _oriented(p, (x, xp))

    def result(self, status, mode, **kw) -> PairResult:
        stats = dict(self.stats)
        if self._eng is not None:
            stats.update(self._eng.stats)
        return PairResult(status, engine=self.engine_name, mode=mode, seconds=time.perf_counter() - self.t0,
                          stats=stats, **kw)


def centred(problem: PairProblem, x, xp) -> tuple[np.ndarray, np.ndarray]:
    """The pair with every continuous, non-relaxed input moved to the midpoint of the
    interval between split values (of the folded ensemble) it lies in: each tree reaches the
    same leaf, and the value is as far as it can be from a threshold."""
    from fairspec.backends.trees.space import cuts_by_feature

    cuts = cuts_by_feature(problem.net)
    relaxed = {i for i, _ in problem.relaxed}
    grouped = {i for g in problem.onehot_groups for i in g}
    x, xp = np.array(x, dtype=np.float64), np.array(xp, dtype=np.float64)
    for i, cs in cuts.items():
        if problem.integer[i] or i in relaxed or i in grouped:
            continue
        lo, hi = float(problem.lo[i]), float(problem.hi[i])
        edges = np.array([lo] + [c for c in cs if lo < c < hi] + [hi])
        for v in (x, xp):
            k = int(np.searchsorted(edges, v[i], side="left"))      # v in (edges[k-1], edges[k]]
            if k == 0:                                               # v == lo: in [lo, edges[1]]
                if any(c == lo for c in cs):                         # unless a split sits at lo
                    continue
                k = 1
            if k < len(edges):
                v[i] = 0.5 * (edges[k - 1] + edges[k])
    return x, xp


def _instant(run: _Run, mode: str) -> PairResult | None:
    from fairspec.backends.trees.space import instant_verdict

    v = instant_verdict(run.problem)
    if v is None:
        return None
    run.stats["instant"] = True
    bound = 0.0 if run.problem.post == "label" else run.problem.eps
    return run.result("holds", mode, how="proved", bound=bound, reason=v[1])


FALSIFY_SHARE = 0.25
FALSIFY_MAX = 10.0


def _falsified(run: _Run, mode: str) -> PairResult | None:
    """A violation found by :func:`fairspec.backends.trees.search.falsify` (a quarter of the
    budget, at most 10 s), re-checked on the ensemble; None when it finds none."""
    from fairspec.backends.trees.search import falsify

    left = run.remaining()
    budget = FALSIFY_MAX if left is None else min(FALSIFY_MAX, FALSIFY_SHARE * left)
    t0 = time.perf_counter()
    pair = falsify(run.problem, deadline=t0 + budget)
    run.stats["falsify_seconds"] = round(time.perf_counter() - t0, 4)
    w = run.checked(pair)
    if w is None:
        return None
    run.stats["falsified"] = True
    return run.result("violated", mode, value=_measure(run.problem, w), witness=w, best=w,
                      reason="found by local search over the split intervals before any solver")


def _tie_break(run: _Run, mode: str, why: str) -> PairResult:
    """Settle a MILP answer within solver tolerance of the threshold with z3 (exact)."""
    if run.engine_name == "z3":
        return run.result("unknown", mode, reason=why)
    left = run.remaining()
    if left is not None and left <= 0:
        return run.result("unknown", mode, reason=why + "; no time left to settle it exactly")
    sub = _Run(run.problem, "z3", left)
    res = _decide(sub, mode)
    run.stats["tie_break"] = "z3"
    if res.status == "unknown":
        return run.result("unknown", mode, reason=why + "; z3 did not settle it: " + res.reason)
    return run.result(res.status, mode, how=res.how, witness=res.witness, value=res.value, bound=res.bound,
                      reason=(res.reason + " (settled exactly by z3)").strip())


def _oriented(problem, pair):
    """The pair rounded onto the domain, as a Witness in the violating direction z >= z'."""
    x, xp = clean_pair(problem, *pair)
    w = make_witness(problem, x, xp)
    return w if w.z >= w.z_prime else make_witness(problem, xp, x)


def _measure(problem, w) -> float:
    return float(pair_measure(problem.post, w.z, w.z_prime))


def _decide(run: _Run, mode: str) -> PairResult:
    """The sound verdict (prove)."""
    p = run.problem
    kind = _kind(p)
    c = p.net.threshold
    if kind is None:
        return run.result("unknown", mode, reason="a logit bound on a probability-averaging forest is not linear in "
                                                  "its leaves; state it on prob(...) instead")
    exact = run.engine_name == "z3"
    if kind == "sigdiff":
        return _sigdiff(run, mode, p.eps)
    if exact:
        # first a pair clear of the threshold (exact rationals and the model's float64 sums
        # differ by rounding), then the exact strict condition, whose unsat is the proof
        for rows in (([("S>=", c + TOL), ("Sp<=", c)], [("S>", c), ("Sp<=", c)]) if kind == "label" else
                     ([("diff>=", p.eps + TOL)], [("diff>", p.eps)])):
            st, pair, _, _ = run.q(rows)
            if st == "timeout":
                return run.result("unknown", mode, reason="time limit reached before z3 decided the property")
            if st == "infeasible":
                continue
            w = run.checked(pair)
            if w is not None:
                return run.result("violated", mode, value=_measure(p, w), witness=w, best=w)
            if rows[0][0] in ("S>", "diff>"):
                return run.result("unknown", mode, reason="the only violating pairs z3 finds lie within float "
                                                          "rounding of the threshold")
        return run.result("holds", mode, how="proved", bound=0.0 if kind == "label" else p.eps,
                          reason="z3: no pair violates the post-condition (unsat)")
    if run.portfolio:
        # z3 first, on a third of the budget (at most 10 s): on tree ensembles it finds violating
        # pairs several times faster than HiGHS (bench/trees.py), and its unsat is a proof
        left = run.remaining()
        sub = _Run(p, "z3", 10.0 if left is None else min(10.0, left / 3.0))
        first = _decide(sub, mode)
        run.stats["z3_first"] = {"status": first.status, "seconds": round(first.seconds, 4)}
        if first.status != "unknown":
            return run.result(first.status, mode, how=first.how, witness=first.witness, value=first.value,
                              bound=first.bound, best=first.best, reason=(first.reason + " (z3, run first)").strip())
    # first a pair clear of the threshold (a feasibility query: much faster than optimising
    # when a violation exists), then the optimum over the rest
    rows = [("S>=", c + TOL), ("Sp<=", c)] if kind == "label" else [("diff>=", p.eps + TOL)]
    st, pair, _, _ = run.q(rows)
    w = run.checked(pair)
    if w is not None:
        return run.result("violated", mode, value=_measure(p, w), witness=w, best=w)
    if st in ("timeout", "error"):
        return run.result("unknown", mode, reason="time limit reached before the MILP was decided"
                          if st == "timeout" else "solver error")
    if kind == "label":
        st, pair, obj, bound = run.q([("Sp<=", c + TOL)], "S")
        limit = c
    else:
        st, pair, obj, bound = run.q([], "diff")
        limit = p.eps
    if st == "infeasible":
        return run.result("holds", mode, how="proved", bound=0.0,
                          reason="every input gets the same decision" if kind == "label"
                          else "no pair satisfies the pre-condition")
    w = run.checked(pair)
    if w is not None:
        return run.result("violated", mode, value=_measure(p, w), witness=w, best=w)
    if st in ("timeout", "error") and pair is None:
        return run.result("unknown", mode, reason="time limit reached before the MILP was decided"
                          if st == "timeout" else "solver error")
    # the shared holds rule (a non-strict dual bound on the violation measure: S - c given
    # S' <= c for a decision, S - S' otherwise)
    if st == "optimal" and bound is not None and holds(p.post if kind != "label" else "label", p.eps,
                                                        bound - limit if kind == "label" else bound):
        return run.result("holds", mode, how="proved", bound=0.0 if kind == "label" else bound,
                          reason="the MILP's optimum stays on the fair side of the threshold")
    if st == "optimal":
        return _tie_break(run, mode, "the MILP's optimum lies within solver tolerance of the threshold")
    return run.result("unknown", mode, reason="time limit reached before the MILP was decided")


def _sigdiff(run: _Run, mode: str, thr: float, accept=None) -> PairResult:
    """sigmoid(S) - sigmoid(S') > thr by lazily added tangent cuts."""
    p = run.problem
    ens = p.net
    exact = run.engine_name == "z3"
    if thr >= 1.0:
        return run.result("holds", mode, how="proved", bound=thr, reason="a probability difference is below 1")
    lo_s, hi_s = run.eng.s_bounds if hasattr(run.eng, "s_bounds") else (-50.0, 50.0)
    cuts = [(a, thr) for a in prob_cut_points(lo_s, hi_s, thr)]
    base = [("diff>=", 0.0)]
    if thr > 0:
        base += [("S>=", logit_fn(thr) - 1e-9), ("Sp<=", logit_fn(1.0 - thr) + 1e-9)]
    seen = set()
    for _ in range(MAX_CUT_ROUNDS):
        rows = list(base)
        for a, e in cuts:
            cc = prob_cut(a, e)
            if cc is not None:
                rows.append(("cut", cc[0], cc[1]))
        st, pair, _, _ = run.q(rows)
        if st == "infeasible":
            return run.result("holds", mode, how="proved", bound=thr,
                              reason="no pair passes the tangent cuts of the probability difference")
        if st in ("timeout", "error") or pair is None:
            return run.result("unknown", mode, reason="time limit reached before the cuts decided the property")
        w = (accept or run.checked)(pair)
        if w is not None:
            return run.result("violated", mode, value=_measure(p, w), witness=w, best=w)
        x, xp = clean_pair(p, *pair)
        s = ens.aggregate(np.vstack([x, xp]))
        a = float(min(s))
        if a in seen:
            why = "the tangent cuts stalled at the post-condition's boundary"
            return run.result("unknown", mode, reason=why) if exact or accept is not None else \
                _tie_break(run, mode, why + " (solver tolerance)")
        seen.add(a)
        cuts.append((a, thr))
        run.stats["cuts"] = run.stats.get("cuts", 0) + 1
    return run.result("unknown", mode, reason=f"no decision after {MAX_CUT_ROUNDS} rounds of tangent cuts")


def prove(problem: PairProblem, engine: str = "highs", time_limit: float | None = None, portfolio: bool = True,
          falsify: bool = True, **_) -> PairResult:
    """The sound verdict. ``falsify``: a short local search for a violation first
    (:mod:`fairspec.backends.trees.search`); off, the exact engine alone decides."""
    run = _Run(problem, engine, time_limit, portfolio)
    return _instant(run, "prove") or (falsify and _falsified(run, "prove")) or _decide(run, "prove")


def find(problem: PairProblem, engine: str = "highs", time_limit: float | None = None, portfolio: bool = True,
         falsify: bool = True, **_) -> PairResult:
    """The first violation found (local search, then a feasibility query, no optimisation),
    else the sound decision."""
    run = _Run(problem, engine, time_limit, portfolio)
    inst = _instant(run, "find") or (falsify and _falsified(run, "find")) or None
    if inst is not None:
        return inst
    # the sound decision already asks for a feasible violation first (no optimisation)
    return _decide(run, "find")


def maximize(problem: PairProblem, engine: str = "highs", time_limit: float | None = None, portfolio: bool = True,
         **_) -> PairResult:
    """The verdict plus the largest violation measure (flip margin in logit units for
    ``label``; ``S - S'`` for ``logit``/forest ``prob``; the probability gap otherwise)."""
    run = _Run(problem, engine, time_limit, portfolio)
    res = _instant(run, "maximize") or _decide(run, "maximize")
    p = problem
    kind = _kind(p)
    if kind is None or run.stats.get("instant") or (res.status == "unknown" and "time limit" in res.reason):
        return res
    link = p.net.link
    if p.post == "prob" and link == "logistic":
        return _max_sigdiff(run, res)
    if kind == "label":
        st, pair, obj, bound = run.q([], "margin")
    else:
        st, pair, obj, bound = run.q([], "diff")
    if pair is None:
        return res
    best = _oriented(p, pair)
    value = _measure(p, best)
    if kind == "label" and bound is not None:
        bound = float(logit_fn(p.net.threshold + bound)) if link == "identity" else bound
    proved = st == "optimal"
    if bound is not None:
        bound = max(bound, value)
    return run.result(res.status, "maximize", how=res.how if res.status == "holds" else ("proved" if proved else None),
                      value=value, bound=bound, witness=res.witness,
                      best=best if kind == "label" else (res.witness or best),   # label: the largest margin pair
                      reason=res.reason if proved else (res.reason + "; gap not closed").strip("; "))


def _max_sigdiff(run: _Run, res: PairResult) -> PairResult:
    """The largest probability gap of a boosted model: bisection between the incumbent and a
    proved bound, each round one tangent-cut feasibility query."""
    p = run.problem
    st, pair, obj, bound = run.q([], "diff")
    if pair is None:
        return res
    best = _oriented(p, pair)
    best_val = _measure(p, best)
    D = bound if bound is not None else obj
    hi = float(2.0 * sigmoid(np.array([D / 2.0]))[0] - 1.0) if st == "optimal" and D is not None else 1.0
    reason = ""

    def better(pair):
        w = _oriented(p, pair)
        return w if _measure(p, w) > best_val else None

    while hi - best_val > 1.01 * IMPROVE:
        thr = min(best_val + max(IMPROVE, 0.5 * (hi - best_val)), hi)
        r = _sigdiff(run, "maximize", thr, accept=better)
        if r.status == "violated":
            best, best_val = r.witness, _measure(p, r.witness)
        elif r.status == "holds":
            hi = thr
        else:
            reason = r.reason
            break
    proved = hi - best_val <= 1.01 * IMPROVE
    return run.result(res.status, "maximize", how="proved" if (proved or res.status == "holds") and res.status != "violated"
                      or (proved and res.status == "violated") else None,
                      value=best_val, bound=hi, witness=res.witness, best=res.witness or best,
                      reason=res.reason or reason)


def solve(problem: PairProblem, mode: str = "prove", **kw) -> PairResult:
    fn = {"find": find, "prove": prove, "maximize": maximize}.get(mode)
    if fn is None:
        raise ValueError(f"mode must be find, prove or maximize, not {mode!r}")
    return fn(problem, **kw)


def is_tree_problem(problem) -> bool:
    from fairspec.models.trees import TreeEnsemble

    return isinstance(problem.net, TreeEnsemble)


_ = math  # keep the import for type-checkers of callers
