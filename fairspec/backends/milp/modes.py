"""MILP modes on a :class:`~fairspec.backends.pair.PairProblem`: find, prove, maximize.

By the symmetry of the pre-condition every encoding looks for a violation with ``z >= z'``
(``z`` the logit of ``x``). Post-condition rows, at threshold ``tau``:

* ``label``: ``z >= tau`` and ``z' <= -tau`` — the flip of the decision ``logit > 0``;
* ``logit``: ``z - z' >= eps + tau``;
* ``prob``:  ``sigmoid(z) - sigmoid(z') > eps + tau`` as tangent cuts of the convex
  ``g(w) = logit(sigmoid(w) + eps + tau)`` (``z >= g(a) + g'(a)(z' - a)``), added lazily at
  each spurious solution (outer approximation / Kelley cutting planes), plus
  ``z >= logit(eps + tau)`` and ``z' <= logit(1 - eps - tau)``.

**Margin** (``find``): the first stage asks for a violation with ``tau = margin``
(default :data:`LABEL_MARGIN` = 1e-3 on logits, :data:`PROB_MARGIN` = 1e-6 on probabilities):
the network is evaluated in float64 here but the real model (ONNX in float32) differs by
up to ~5e-4 on the Fairify networks, and a big-M MILP's integrality tolerance leaves similar
slack, so a witness with a clear margin replays on the real model (each witness is also
re-evaluated in float32, :func:`is_robust`; a fragile one triggers a search for a more
robust one and is flagged in ``stats["fragile"]``). Only if that stage is
infeasible does the second, *sound* stage run with ``tau = 0`` (``>=`` for the strict ``>``,
an over-approximation of the violations): infeasible there proves the property (``holds``,
``how="proved"``). Every candidate pair is rounded onto the domain and re-checked with
:func:`~fairspec.backends.pair.check_witness` on ``net.forward`` before it is returned; a
time-out is ``unknown``, never ``holds``.

``maximize`` returns the largest violation measure with a certificate: ``how="proved"`` and
``bound == value`` (up to the solver's absolute gap 1e-9) when the solver closed the gap,
else the incumbent and the dual bound. For ``prob`` (not linear) the maximum is bracketed
by bisection between the incumbent and a proved bound, starting from the pair of maximal
logit difference ``D`` and the bound ``2 sigmoid(D/2) - 1`` (sigmoid's steepest window):
each round asks for a pair reaching the midpoint, which either raises the incumbent to the
pair's replayed value or (infeasible) lowers the bound; the tangent cuts are kept between
rounds (a cut for threshold e stays valid for every larger one). ``how="proved"`` once
bound and incumbent are within 1e-7.

Engines (``engine="highs"`` or ``"scip"``), measured 2026-11 on this project's 2-core
machine under a load average of 5-8 (other jobs running: absolute times are ~2x inflated),
one thread per solve, Fairify's networks and verification domains (all 13 / 16 / 20 inputs
integral), protected attribute free, everything else tied::

    AC-1, sex, label   find 0.2-0.3 s (HiGHS) / 1.0-1.3 s (SCIP); maximize flip margin,
                       proved 1.2051: 4.3-6.1 s / 8.1-9.5 s
    AC-1, sex, logit   maximize |z - z'|, proved 4.3303: 3.8 s / 11.4 s
    AC-1, sex, prob .05  find 0.3-0.6 s / 0.4-0.7 s; maximize not closed in 120 s
                       (HiGHS 0.4525 <= max <= 0.7942; SCIP 0.5398 <= max <= 0.5398+1e-4)
    difference rows off: AC-1 maximize not proved in 120 s with either engine (bound 2.92)
    LP-tightened bounds: 0.03-0.2 s on 1-2 hidden layers, 22-27 s on the 5-layer nets;
                       they shrink big-M constants but stabilise almost no ReLU over
                       Fairify's wide domains, and did not speed the solves up
    find, label, all 25 networks x 42 (network, protected) pairs, 60 s each: HiGHS found
                       a witness for 39 (median 0.96 s, max 36 s, AC-11 race); unknown:
                       AC-12 sex, GC-5 age, GC-5 sex, where Fairify's SAT count is 0 too.
                       SCIP: 32 (10 time-outs). prob eps=.05: HiGHS 35 witnesses + GC-4
                       proved fair for both attributes, 5 unknown. Every witness replayed
                       on onnxruntime.
    partitions (Fairify's), prove, label, 2 workers: GC-4 201 partitions in 3.3 s
                       (199 proved / 2 refuted, Fairify: 199 / 2), BM-6 510 in 7.7 s
                       (354 / 156, Fairify: 354 / 156), GC-3 195 refuted / 6 proved (= Fairify),
                       BM-5 394 / 116 (Fairify 394 / 114 + 2 unknown); prob eps=.05:
                       GC-4 all 201 proved (3.7 s), BM-6 298 / 212 (15.7 s)

HiGHS is the default (:data:`DEFAULT_ENGINE`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec.backends.milp.encoding import PairEncoding, encode_pair
from fairspec.backends.milp.model import ENGINES, INF, SolveOutcome
from fairspec.backends.pair_drivers import holds
from fairspec.backends.pair import (PairProblem, PairResult, Witness, check_witness, clean_pair, precondition_holds,
                                    logit_fn, make_witness, pair_measure, prob_cut,
                                    prob_cut_points)
from fairspec.models.network import sigmoid

__all__ = ["find", "prove", "maximize", "solve", "is_robust", "LABEL_MARGIN", "PROB_MARGIN", "DEFAULT_ENGINE"]

LABEL_MARGIN = 1e-3        # on logits: label and logit posts
PROB_MARGIN = 1e-6         # on probabilities
DEFAULT_ENGINE = "highs"
MAX_CUT_ROUNDS = 200
IMPROVE = 1e-7             # maximize(prob): each round must beat the incumbent by this much


class _Ctx:
    """One query's shared state: problem, bounds, base encoding, deadline, statistics."""

    def __init__(self, problem: PairProblem, engine: str, time_limit: float | None,
                 lp_bounds: bool, diff_rows: bool, threads: int):
        from fairspec.backends.bounds import pair_bounds

        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {sorted(ENGINES)}, not {engine!r}")
        self.t0 = time.perf_counter()
        self.problem = problem
        self.engine = engine
        self.solve_fn = ENGINES[engine]
        self.deadline = None if time_limit is None else self.t0 + float(time_limit)
        self.threads = threads
        self.bounds = pair_bounds(problem, lp=lp_bounds,
                                  lp_time=None if time_limit is None else 0.3 * float(time_limit))
        self.enc: PairEncoding = encode_pair(problem, self.bounds, diff_rows=diff_rows)
        self.stats = {"engine": engine, "vars": self.enc.model.n_vars, "rows": self.enc.model.n_rows,
                      "binaries": self.enc.model.n_int, "bounds_seconds": round(self.bounds.seconds, 4),
                      "solves": 0, "solver_seconds": 0.0, "cuts": 0}

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - time.perf_counter()

    def expired(self) -> bool:
        r = self.remaining()
        return r is not None and r <= 0

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def run(self, lm, **kw) -> SolveOutcome:
        out = self.solve_fn(lm, time_limit=self.remaining(), threads=self.threads, **kw)
        self.stats["solves"] += 1
        self.stats["solver_seconds"] = round(self.stats["solver_seconds"] + out.seconds, 4)
        return out

    def pair_of(self, sol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = sol[self.enc.x]
        xp = sol[self.enc.xp]
        return clean_pair(self.problem, x, xp)

    def checked(self, x, xp) -> Witness | None:
        p = self.problem
        if check_witness(p, x, xp, p.net.forward):
            w = make_witness(p, x, xp)
            if w.z < w.z_prime:                       # report in the violating direction z >= z'
                w = make_witness(p, xp, x)
            return w
        return None

    def result(self, status, mode, **kw) -> PairResult:
        return PairResult(status, engine=self.engine, mode=mode, seconds=self.elapsed(),
                          stats=dict(self.stats), **kw)


def _post_rows(ctx: _Ctx, lm, thr: float, cuts: list[tuple[float, float]]) -> bool:
    """Add the post-condition's violation at threshold ``thr`` (in the measure's units:
    label ``z >= thr, z' <= -thr``; logit ``z - z' >= thr``; prob ``sigmoid(z) - sigmoid(z') >= thr``
    via tangent cuts ``(a, e)`` with ``e <= thr``). False if trivially infeasible."""
    p = ctx.problem
    z, zp = ctx.enc.z
    if p.post == "label":
        lm.row([z], [1.0], thr, INF)
        lm.row([zp], [1.0], -INF, -thr)
    elif p.post == "logit":
        lm.row([z, zp], [1.0, -1.0], thr, INF)
    else:
        if thr >= 1.0:
            return False
        if thr > 0:
            lm.row([z], [1.0], logit_fn(thr) - 1e-9, INF)
            lm.row([zp], [1.0], -INF, logit_fn(1.0 - thr) + 1e-9)
        lm.row([z, zp], [1.0, -1.0], 0.0, INF)
        for a, e in cuts:
            c = prob_cut(a, min(e, thr))
            if c is not None:
                slope, icpt = c
                lm.row([z, zp], [1.0, -slope], icpt, INF)
    return True


def _feasible_violation(ctx: _Ctx, thr: float, cuts: list | None = None, accept=None, start=None):
    """Find a pair whose measure reaches ``thr`` (cuts added lazily for prob) and that
    ``accept`` takes (default: a replayed violation of the problem).

    Returns ("witness", Witness) | ("infeasible", None) | ("timeout", None) |
    ("spurious", (x, xp)) — a solution that did not replay (boundary / tolerance) — |
    ("error", message).
    """
    p = ctx.problem
    zlo, zhi = ctx.enc.z_bounds
    if cuts is None:
        cuts = []
    if p.post == "prob" and not cuts:
        cuts.extend((a, thr) for a in prob_cut_points(zlo, zhi, thr))
    accept = accept or ctx.checked
    for _ in range(MAX_CUT_ROUNDS):
        if ctx.expired():
            return "timeout", None
        lm = ctx.enc.model.copy()
        if not _post_rows(ctx, lm, thr, cuts):
            return "infeasible", None
        lm.set_objective({}, maximize=True)
        out = ctx.run(lm, first_solution=True, start=start)
        if out.status == "infeasible":
            return "infeasible", None
        if out.status in ("timeout",):
            return "timeout", None
        if out.status == "error":
            return "error", out.raw_status
        x, xp = ctx.pair_of(out.x)
        w = accept(x, xp)
        if w is not None:
            return "witness", w
        if p.post != "prob":
            return "spurious", (x, xp)
        # a spurious point of the outer approximation: cut it off at its z'
        a = float(out.x[ctx.enc.z[1]])
        c = prob_cut(a, thr)
        zval = float(out.x[ctx.enc.z[0]])
        if c is None or zval >= c[0] * a + c[1] - 1e-7 or any(abs(a - b) < 1e-9 and e >= thr for b, e in cuts):
            return "spurious", (x, xp)
        cuts.append((a, thr))
        ctx.stats["cuts"] += 1
    return "spurious", None


def _label_measure(w: Witness, post: str) -> float:
    return float(pair_measure(post, w.z, w.z_prime))


def prove(problem: PairProblem, engine: str = DEFAULT_ENGINE, time_limit: float | None = None,
          lp_bounds: bool = False, diff_rows: bool = True, threads: int = 1, _ctx=None) -> PairResult:
    """Decide the property soundly: ``holds`` (proved: no pair violates it), ``violated``
    (a replayed witness) or ``unknown`` (time-out, or only boundary pairs within solver
    tolerance)."""
    ctx = _ctx or _Ctx(problem, engine, time_limit, lp_bounds, diff_rows, threads)
    kind, val = _feasible_violation(ctx, 0.0 if problem.post == "label" else problem.eps)
    if kind == "witness":
        return ctx.result("violated", "prove", value=_label_measure(val, problem.post), witness=val)
    if kind == "infeasible":
        bound = 0.0 if problem.post == "label" else problem.eps
        return ctx.result("holds", "prove", how="proved", bound=bound,
                          reason="the MILP with the violated post-condition is infeasible")
    if kind == "timeout":
        return ctx.result("unknown", "prove", reason="time limit reached before the MILP was decided")
    if kind == "error":
        return ctx.result("unknown", "prove", reason=f"solver error: {val}")
    # only a boundary solution (e.g. z == z' for logit with eps = 0): first ask for a pair a
    # hair beyond the threshold, which is cheap and usually settles it
    if problem.post != "prob":
        thr = (0.0 if problem.post == "label" else problem.eps) + 1e-6
        kind, val = _feasible_violation(ctx, thr)
        if kind == "witness":
            return ctx.result("violated", "prove", value=_label_measure(val, problem.post), witness=val)
        if kind == "timeout":
            return ctx.result("unknown", "prove", reason="time limit reached before the MILP was decided")
    # then settle it by maximising the measure
    res = maximize(problem, engine=engine, time_limit=ctx.remaining(), lp_bounds=lp_bounds,
                   diff_rows=diff_rows, threads=threads, _ctx=ctx)
    if res.status != "unknown":
        return PairResult(res.status, res.how, res.value, res.bound, res.witness, res.reason, ctx.elapsed(),
                          engine=ctx.engine, mode="prove", best=res.best, stats=dict(ctx.stats))
    return ctx.result("unknown", "prove", value=res.value, bound=res.bound, best=res.best,
                      reason="the only violations the MILP finds lie on the boundary of the "
                             "post-condition within solver tolerance; " + res.reason)


def is_robust(problem: PairProblem, w: Witness) -> bool:
    """Does the witness also violate the property when the network runs in float32 (a proxy
    for the float32 model files)? Witnesses within rounding of the boundary are fragile."""
    import numpy as np

    return check_witness(problem, w.x, w.x_prime, lambda X: problem.net.forward(X, dtype=np.float32))


def find(problem: PairProblem, engine: str = DEFAULT_ENGINE, time_limit: float | None = None,
         margin: float | None = None, lp_bounds: bool = False, diff_rows: bool = True,
         threads: int = 1) -> PairResult:
    """Stop at the first violation: first with a margin (``LABEL_MARGIN`` on logits,
    ``PROB_MARGIN`` on probabilities), then soundly (so an infeasible MILP still proves the
    property). A witness that does not also violate in float32 (:func:`is_robust`) is
    *fragile*: for label/logit the remaining time (at most 10 s) then goes to maximising the
    violation for a more robust one; ``stats["fragile"]`` tells the caller."""
    ctx = _Ctx(problem, engine, time_limit, lp_bounds, diff_rows, threads)
    if margin is None:
        margin = PROB_MARGIN if problem.post == "prob" else LABEL_MARGIN
    ctx.stats["margin"] = margin
    res = None
    if margin > 0:
        kind, val = _feasible_violation(ctx, margin if problem.post == "label" else problem.eps + margin)
        if kind == "witness":
            res = ctx.result("violated", "find", value=_label_measure(val, problem.post), witness=val)
        elif kind == "timeout":
            return ctx.result("unknown", "find", reason="time limit reached before a violation was found")
        elif kind == "error":
            return ctx.result("unknown", "find", reason=f"solver error: {val}")
    if res is None:
        res = prove(problem, engine, time_limit, lp_bounds, diff_rows, threads, _ctx=ctx)
    if res.status == "violated":
        robust = is_robust(problem, res.witness)
        if not robust and problem.post != "prob":
            left = ctx.remaining()
            budget = 10.0 if left is None else min(10.0, left)
            if budget > 0.05:
                saved = ctx.deadline
                ctx.deadline = time.perf_counter() + budget
                better = maximize(problem, engine=engine, _ctx=ctx)
                ctx.deadline = saved
                if better.status == "violated" and better.value is not None and better.value > res.value:
                    res = better
                    robust = is_robust(problem, res.witness)
        ctx.stats["fragile"] = not robust
    return PairResult(res.status, res.how if res.status == "holds" else None, res.value, res.bound, res.witness,
                      res.reason, ctx.elapsed(), engine=ctx.engine, mode="find", best=res.best, stats=dict(ctx.stats))


def maximize(problem: PairProblem, engine: str = DEFAULT_ENGINE, time_limit: float | None = None,
             lp_bounds: bool = False, diff_rows: bool = True, threads: int = 1,
             start: tuple | None = None, _ctx=None) -> PairResult:
    """The maximal violation measure (``label``: flip margin ``min(z, -z')``; ``logit``:
    ``z - z'``; ``prob``: ``sigmoid(z) - sigmoid(z')``) with a certificate (see module docs).
    ``start`` = (x, x') warm-starts the solver with a known pair (e.g. from a search)."""
    ctx = _ctx or _Ctx(problem, engine, time_limit, lp_bounds, diff_rows, threads)
    p = problem
    z, zp = ctx.enc.z
    st = ctx.enc.start(p, *start) if start is not None else None
    lm = ctx.enc.model.copy()
    if p.post == "label":
        t = lm.var(-INF, INF, False, "t")
        lm.row([t, z], [1.0, -1.0], -INF, 0.0)
        lm.row([t, zp], [1.0, 1.0], -INF, 0.0)
        lm.set_objective({t: 1.0}, maximize=True)
        if st is not None:
            st[t] = min(st[z], -st[zp])
    else:
        lm.set_objective({z: 1.0, zp: -1.0}, maximize=True)
    out = ctx.run(lm, start=st)
    if out.status in ("timeout", "error", "infeasible") and out.x is None:
        why = {"timeout": "time limit reached before any pair was found",
               "error": f"solver error: {out.raw_status}",
               "infeasible": "no pair satisfies the pre-condition"}[out.status]
        if out.status == "infeasible":
            return ctx.result("holds", "maximize", how="proved", value=-math.inf, bound=-math.inf, reason=why)
        return ctx.result("unknown", "maximize", reason=why)
    x, xp = ctx.pair_of(out.x)
    if p.post != "prob":
        best = make_witness(p, x, xp)
        if best.z < best.z_prime and p.post == "logit":
            best = make_witness(p, xp, x)
        value = max(float(pair_measure(p.post, best.z, best.z_prime)),
                    float(pair_measure(p.post, best.z_prime, best.z)))
        proved = out.status == "optimal"
        bound = out.bound if out.bound is not None else None
        if bound is not None:
            bound = max(bound, value)
        w = ctx.checked(x, xp)
        if w is not None:
            return ctx.result("violated", "maximize", how="proved" if proved else None, value=value,
                              bound=bound, witness=w, best=w,
                              reason="" if proved else "gap not closed within the time limit")
        if proved and holds(p.post, p.eps, bound):
            return ctx.result("holds", "maximize", how="proved", value=value, bound=bound, best=best,
                              reason="maximal violation proved within the tolerance")
        if proved:
            return ctx.result("unknown", "maximize", how=None, value=value, bound=bound, best=best,
                              reason="the maximal violation equals the threshold within solver tolerance")
        return ctx.result("unknown", "maximize", value=value, bound=bound, best=best,
                          reason="time limit reached before the maximal violation was proved")
    # ---- prob: strictly improving rounds, seeded by the maximal logit difference ----------
    D = out.bound if out.bound is not None else (out.objective if out.status == "optimal" else None)
    d_bound = None if D is None else float(2.0 * sigmoid(np.array([D / 2.0]))[0] - 1.0)
    cand = make_witness(p, x, xp)
    if cand.z < cand.z_prime:
        cand = make_witness(p, xp, x)
    best = cand
    best_val = float(pair_measure("prob", cand.z, cand.z_prime))
    if start is not None:
        sw = make_witness(p, *start)
        sv = abs(float(pair_measure("prob", sw.z, sw.z_prime)))
        if sv > best_val:
            best, best_val = sw if sw.z >= sw.z_prime else make_witness(p, start[1], start[0]), sv
    hi = d_bound if d_bound is not None else 1.0       # proved: no pair reaches hi
    cuts: list[tuple[float, float]] = []
    reason = ""

    def better(x, xp):
        ok, _ = precondition_holds(p, x, xp)
        if not ok:
            return None
        w = make_witness(p, x, xp)
        if w.z < w.z_prime:
            w = make_witness(p, xp, x)
        return w if float(pair_measure("prob", w.z, w.z_prime)) > best_val else None

    # bisection between the incumbent and the proved bound: each round either improves the
    # incumbent or lowers the bound; stop when they are IMPROVE apart
    while hi - best_val > 1.01 * IMPROVE:
        thr = min(best_val + max(IMPROVE, 0.5 * (hi - best_val)), hi)
        kind, val = _feasible_violation(ctx, thr, cuts, accept=better)
        if kind == "witness":
            best, best_val = val, float(pair_measure("prob", val.z, val.z_prime))
            continue
        if kind == "infeasible":
            hi = thr
            continue
        if kind == "spurious" and val is not None and thr > best_val + IMPROVE:
            # a boundary point between the incumbent and thr: its value is the new incumbent
            w = better(*val)
            if w is not None:
                best, best_val = w, float(pair_measure("prob", w.z, w.z_prime))
                continue
        reason = {"timeout": "time limit reached before the maximal violation was proved",
                  "spurious": "cutting planes stalled at the post-condition's boundary",
                  "error": f"solver error: {val}"}.get(kind, kind)
        break
    proved = hi - best_val <= 1.01 * IMPROVE
    bound = hi
    w = ctx.checked(best.x, best.x_prime) if best_val > p.eps else None
    how = "proved" if proved else None
    if w is not None:
        return ctx.result("violated", "maximize", how=how, value=best_val, bound=bound, witness=w, best=w,
                          reason=reason)
    if proved and holds(p.post, p.eps, bound):
        return ctx.result("holds", "maximize", how="proved", value=best_val, bound=bound, best=best,
                          reason="maximal violation proved")
    if holds(p.post, p.eps, hi):
        return ctx.result("holds", "maximize", how="proved", value=best_val, bound=hi, best=best,
                          reason="no pair reaches the bound")
    return ctx.result("unknown", "maximize", value=best_val, bound=bound, best=best, reason=reason)


def solve(problem: PairProblem, mode: str = "find", **kw) -> PairResult:
    """Dispatch on ``mode`` in find | prove | maximize."""
    fn = {"find": find, "prove": prove, "maximize": maximize}.get(mode)
    if fn is None:
        raise ValueError(f"mode must be find, prove or maximize, not {mode!r}")
    return fn(problem, **kw)
