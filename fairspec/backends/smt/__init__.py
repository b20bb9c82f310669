"""SMT backend for pair (2-fairness) problems: pysmt with z3, Fairify's formulation.

    from fairspec.backends.smt import find, prove, maximize, solve

Same :class:`~fairspec.backends.pair.PairProblem`, same results as the MILP backend
(:mod:`fairspec.backends.milp`). The network is asserted once (see
:mod:`fairspec.backends.smt.encoding`); each query pushes the violated post-condition at a
threshold, checks, and pops:

* ``find``: first with the margin of the MILP backend (1e-3 on logits, 1e-6 on
  probabilities) for witnesses that replay on the float32 model, then the exact strict
  condition (``z > 0 >= z'``, ``z - z' > eps``) whose ``unsat`` proves the property;
* ``prove``: only the exact stage;
* ``maximize``: strictly improving rounds: each asks for a pair whose measure beats the
  incumbent by 1e-7; ``sat`` raises the incumbent to the replayed value, ``unsat`` proves it
  maximal (``how="proved"``, ``bound = value + 1e-7``). Bisection (as in the MILP backend's
  ``prob`` rounds) was slower with z3: its hard ``unsat`` answers near the optimum come once
  here instead of at every halving. Until then the bound is the interval bound on the
  output difference.

``prob`` uses the convex tangent cuts of :func:`~fairspec.backends.pair.prob_cut`, added at
each spurious model. A z3 time-out (``unknown``) is always reported ``unknown``. pysmt and z3
are imported inside these functions; each query runs in a fresh pysmt environment.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec.backends.pair_drivers import holds
from fairspec.backends.pair import (PairProblem, PairResult, check_witness, clean_pair, logit_fn, make_witness,
                                    pair_measure, precondition_holds, prob_cut, prob_cut_points)
from fairspec.models.network import sigmoid

__all__ = ["find", "prove", "maximize", "solve", "LABEL_MARGIN", "PROB_MARGIN"]

LABEL_MARGIN = 1e-3
PROB_MARGIN = 1e-6
IMPROVE = 1e-7
MAX_CUT_ROUNDS = 200


class _Ctx:
    def __init__(self, problem: PairProblem, time_limit, env):

        from fairspec.backends.bounds import pair_bounds
        from fairspec.backends.smt.encoding import SmtPairEncoding

        self.t0 = time.perf_counter()
        self.problem = problem
        self.deadline = None if time_limit is None else self.t0 + float(time_limit)
        self.bounds = pair_bounds(problem)
        self.mgr = env.formula_manager
        self.enc = SmtPairEncoding(problem, self.bounds, self.mgr)
        self.solver = env.factory.Solver(name="z3", logic=None)
        for a in self.enc.assertions:
            self.solver.add_assertion(a)
        self.stats = {"engine": "z3", "assertions": len(self.enc.assertions), "checks": 0,
                      "solver_seconds": 0.0, "cuts": 0}

    def remaining(self):
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def elapsed(self):
        return time.perf_counter() - self.t0

    def check(self, extra) -> tuple[str, tuple | None]:
        """Push extra assertions, solve; returns ('sat', (x, xp, z)) | ('unsat', None) | ('unknown', None)."""
        from pysmt.exceptions import SolverReturnedUnknownResultError

        r = self.remaining()
        if r is not None and r <= 0:
            return "unknown", None
        if r is not None:
            self.solver.z3.set("timeout", max(1, int(r * 1000)))
        self.solver.push()
        t = time.perf_counter()
        try:
            for a in extra:
                self.solver.add_assertion(a)
            try:
                from fairspec import interrupt

                with interrupt.solver_section(self.solver.z3.ctx.interrupt):  # Ctrl-C: z3 stops
                    sat = self.solver.solve()
            except SolverReturnedUnknownResultError:
                return "unknown", None
            if not sat:
                return "unsat", None
            return "sat", self.enc.pair_from_model(self.solver)
        finally:
            self.stats["checks"] += 1
            self.stats["solver_seconds"] = round(self.stats["solver_seconds"] + time.perf_counter() - t, 4)
            self.solver.pop()

    def result(self, status, mode, **kw) -> PairResult:
        return PairResult(status, engine="z3", mode=mode, seconds=self.elapsed(), stats=dict(self.stats), **kw)

    def checked(self, x, xp):
        p = self.problem
        if check_witness(p, x, xp, p.net.forward):
            w = make_witness(p, x, xp)
            return w if w.z >= w.z_prime else make_witness(p, xp, x)
        return None


def _post(ctx: _Ctx, thr: float, strict: bool, cuts) -> list | None:
    """The violated post-condition at threshold thr (measure units); None if impossible."""
    m = ctx.mgr
    R = ctx.enc.R
    z, zp = ctx.enc.z
    p = ctx.problem
    if p.post == "label":
        if strict:
            return [m.GT(z, R(thr)), m.LE(zp, R(-thr))]
        return [m.GE(z, R(thr)), m.LE(zp, R(-thr))]
    if p.post == "logit":
        d = m.Minus(z, zp)
        return [m.GT(d, R(thr)) if strict else m.GE(d, R(thr))]
    if thr >= 1.0:
        return None
    out = [m.GE(m.Minus(z, zp), m.Real(0))]
    if thr > 0:
        out += [m.GE(z, R(logit_fn(thr) - 1e-9)), m.LE(zp, R(logit_fn(1.0 - thr) + 1e-9))]
    for a, e in cuts:
        c = prob_cut(a, min(e, thr))
        if c is not None:
            out.append(m.GE(z, m.Plus(m.Times(R(c[0]), zp), R(c[1]))))
    return out


def _feasible(ctx: _Ctx, thr: float, strict: bool, cuts=None, accept=None):
    p = ctx.problem
    if cuts is None:
        cuts = []
    if p.post == "prob" and not cuts:
        zl = float(ctx.bounds.single.h_lo[-1][0])
        zh = float(ctx.bounds.single.h_hi[-1][0])
        cuts.extend((a, thr) for a in prob_cut_points(zl, zh, thr))
    accept = accept or ctx.checked
    for _ in range(MAX_CUT_ROUNDS):
        extra = _post(ctx, thr, strict, cuts)
        if extra is None:
            return "infeasible", None
        st, val = ctx.check(extra)
        if st == "unsat":
            return "infeasible", None
        if st == "unknown":
            return "timeout", None
        x, xp, (zv, zpv) = val
        x, xp = clean_pair(p, x, xp)
        w = accept(x, xp)
        if w is not None:
            return "witness", w
        if p.post != "prob":
            return "spurious", (x, xp)
        a = float(zpv)
        c = prob_cut(a, thr)
        if c is None or zv >= c[0] * a + c[1] - 1e-7 or any(abs(a - b) < 1e-9 and e >= thr for b, e in cuts):
            return "spurious", (x, xp)
        cuts.append((a, thr))
        ctx.stats["cuts"] += 1
    return "spurious", None


def _run(problem, time_limit, body):
    from pysmt.environment import Environment, pop_env, push_env

    env = Environment()
    push_env(env)
    try:
        ctx = _Ctx(problem, time_limit, env)
        try:
            return body(ctx)
        finally:
            ctx.solver.exit()
    finally:
        pop_env()


def _measure(post, w) -> float:
    return float(pair_measure(post, w.z, w.z_prime))


def _prove_body(ctx: _Ctx, mode: str) -> PairResult:
    p = ctx.problem
    thr = 0.0 if p.post == "label" else p.eps
    kind, val = _feasible(ctx, thr, strict=p.post != "prob")
    if kind == "witness":
        return ctx.result("violated", mode, value=_measure(p.post, val), witness=val)
    if kind == "infeasible":
        return ctx.result("holds", mode, how="proved", bound=thr,
                          reason="the SMT query with the violated post-condition is unsat")
    if kind == "timeout":
        return ctx.result("unknown", mode, reason="time limit reached before z3 decided the query")
    res = _maximize_body(ctx, "maximize")
    if res.status != "unknown":
        return PairResult(res.status, res.how, res.value, res.bound, res.witness, res.reason, ctx.elapsed(),
                          engine="z3", mode=mode, best=res.best, stats=dict(ctx.stats))
    return ctx.result("unknown", mode, value=res.value, bound=res.bound, best=res.best,
                      reason="the only violations found lie on the post-condition's boundary; " + res.reason)


def prove(problem: PairProblem, time_limit: float | None = None, **_ignored) -> PairResult:
    """``holds`` (unsat: proved), ``violated`` (replayed witness) or ``unknown``."""
    return _run(problem, time_limit, lambda ctx: _prove_body(ctx, "prove"))


def find(problem: PairProblem, time_limit: float | None = None, margin: float | None = None,
         **_ignored) -> PairResult:
    """First a violation with a margin, then the exact query (whose unsat proves the property)."""
    def body(ctx: _Ctx):
        p = ctx.problem
        mg = (PROB_MARGIN if p.post == "prob" else LABEL_MARGIN) if margin is None else margin
        if mg > 0:
            kind, val = _feasible(ctx, mg if p.post == "label" else p.eps + mg, strict=False)
            if kind == "witness":
                return ctx.result("violated", "find", value=_measure(p.post, val), witness=val)
            if kind == "timeout":
                return ctx.result("unknown", "find", reason="time limit reached before a violation was found")
        return _prove_body(ctx, "find")
    return _run(problem, time_limit, body)


def _maximize_body(ctx: _Ctx, mode: str) -> PairResult:
    p = ctx.problem
    # any pair at all (the pre-condition alone)
    st, val = ctx.check([])
    if st == "unsat":
        return ctx.result("holds", mode, how="proved", value=-math.inf, bound=-math.inf,
                          reason="no pair satisfies the pre-condition")
    if st == "unknown":
        return ctx.result("unknown", mode, reason="time limit reached before any pair was found")
    x, xp = clean_pair(p, val[0], val[1])
    best = make_witness(p, x, xp)
    if _measure(p.post, make_witness(p, xp, x)) > _measure(p.post, best):
        best = make_witness(p, xp, x)
    best_val = _measure(p.post, best)
    b = ctx.bounds
    zl, zh = float(b.single.h_lo[-1][0]), float(b.single.h_hi[-1][0])
    D = float(b.dh_hi[-1][0])
    if p.post == "label":
        hi = min(zh, -zl) + 1e-9
    elif p.post == "logit":
        hi = D + 1e-9
    else:
        hi = float(2.0 * sigmoid(np.array([D / 2.0]))[0] - 1.0) + 1e-9
    cuts: list = []
    reason = ""

    def better(x, xp):
        ok, _ = precondition_holds(p, x, xp)
        if not ok:
            return None
        w = make_witness(p, x, xp)
        if _measure(p.post, make_witness(p, xp, x)) > _measure(p.post, w):
            w = make_witness(p, xp, x)
        return w if _measure(p.post, w) > best_val else None

    while hi - best_val > 1.01 * IMPROVE:
        thr = best_val + IMPROVE
        kind, val = _feasible(ctx, thr, strict=False, cuts=cuts if p.post == "prob" else None, accept=better)
        if kind == "witness":
            best, best_val = val, _measure(p.post, val)
            continue
        if kind == "infeasible":
            hi = thr
            continue
        if kind == "spurious" and val is not None:
            w = better(*val)
            if w is not None:
                best, best_val = w, _measure(p.post, w)
                continue
        reason = {"timeout": "time limit reached before the maximal violation was proved",
                  "spurious": "stalled at the post-condition's boundary"}.get(kind, kind)
        break
    proved = hi - best_val <= 1.01 * IMPROVE
    how = "proved" if proved else None
    w = ctx.checked(best.x, best.x_prime)
    if w is not None:
        return ctx.result("violated", mode, how=how, value=best_val, bound=hi, witness=w, best=w, reason=reason)
    if holds(p.post, p.eps, hi, strict=True):     # hi: no pair reaches it
        return ctx.result("holds", mode, how="proved", value=best_val, bound=hi, best=best,
                          reason="maximal violation proved below the threshold")
    return ctx.result("unknown", mode, value=best_val, bound=hi, best=best,
                      reason=reason or "the maximal violation equals the threshold within 1e-7")


def maximize(problem: PairProblem, time_limit: float | None = None, **_ignored) -> PairResult:
    """The maximal violation measure, by strictly improving rounds (see module docs)."""
    return _run(problem, time_limit, lambda ctx: _maximize_body(ctx, "maximize"))


def solve(problem: PairProblem, mode: str = "find", **kw) -> PairResult:
    fn = {"find": find, "prove": prove, "maximize": maximize}.get(mode)
    if fn is None:
        raise ValueError(f"mode must be find, prove or maximize, not {mode!r}")
    return fn(problem, **kw)
