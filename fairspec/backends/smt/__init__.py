"""SMT backend for pair (2-fairness) problems: z3 over exact rationals, Fairify's formulation.

    from fairspec.backends.smt import find, prove, maximize, solve, Runtime

``find`` / ``prove`` / ``maximize`` are the certified modes of :mod:`fairspec.backends.smt.exact`:
certify writes the exact query (:mod:`fairspec.certify.smt`), z3 answers it, certify mints the
``exact-smt`` proof; witnesses are replayed on the model's runtime (``runtime=``). What follows
describes :class:`Z3Engine`, the pysmt engine of the shared pair drivers (kept for the
:class:`~fairspec.backends.pair.drivers.Engine` interface; its answers are never a proof):

Same :class:`~fairspec.backends.pair.PairProblem`, same results as the MILP backend
(:mod:`fairspec.backends.milp`), and the same drivers: the modes are those of
:mod:`fairspec.backends.pair.drivers` over :class:`Z3Engine`. The network is asserted once
(see :mod:`fairspec.backends.smt.encoding`); each query pushes the violated post-condition
at a threshold (strict ``z > 0 >= z'``, ``z - z' > eps`` for the exact query), checks, and
pops. z3 does not optimise here: ``maximize`` starts from any pair and the interval bound
on the output difference, then steps (strictly improving rounds, each asking for a pair
beating the incumbent by 1e-7; ``unsat`` proves it maximal, ``bound = value + 1e-7``).
Bisection (the MILP's rounds) was slower with z3: its hard ``unsat`` answers near the
optimum come once here instead of at every halving.

A z3 time-out (``unknown``) is always reported ``unknown``. pysmt and z3 are imported
inside these functions; each query runs in a fresh pysmt environment.
"""

from __future__ import annotations

import time

from fairspec.backends.pair import PairProblem, logit_fn, prob_cut
from fairspec.backends.pair.drivers import LABEL_MARGIN, PROB_MARGIN, Check

__all__ = ["find", "prove", "maximize", "solve", "Runtime", "Z3Engine", "LABEL_MARGIN", "PROB_MARGIN"]


class Z3Engine:
    """The :class:`~fairspec.backends.pair.drivers.Engine` of z3 (through pysmt): the
    network's assertions added once, each query pushed and popped."""

    name = "z3"
    query = "the SMT query"
    no = "unsat"
    bisect = False             # maximize: steps of IMPROVE (see module docs)
    can_optimize = False

    def __init__(self, problem: PairProblem, time_limit, env):
        from fairspec.backends.pair.bounds import pair_bounds
        from fairspec.backends.smt.encoding import SmtPairEncoding

        self.t0 = time.perf_counter()
        self.problem = problem
        self.deadline = None if time_limit is None else self.t0 + float(time_limit)
        self.bounds = pair_bounds(problem)
        self.z_bounds = (float(self.bounds.single.h_lo[-1][0]), float(self.bounds.single.h_hi[-1][0]))
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

    def _post(self, thr: float, strict: bool, cuts, thr_prime: float | None = None) -> list | None:
        """The violated post-condition at threshold thr (measure units; label: ``z' <= -thr_prime`` when
        given); None if impossible."""
        m = self.mgr
        R = self.enc.R
        z, zp = self.enc.z
        p = self.problem
        if p.post == "label":
            low = -(thr if thr_prime is None else thr_prime)
            if strict:
                return [m.GT(z, R(thr)), m.LE(zp, R(low))]
            return [m.GE(z, R(thr)), m.LE(zp, R(low))]
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

    def check(self, thr: float | None, strict: bool = False, cuts=(), start=None,
              thr_prime: float | None = None) -> Check:
        """Push the violated post-condition (``thr=None``: nothing), solve, pop."""
        from pysmt.exceptions import SolverReturnedUnknownResultError

        extra = [] if thr is None else self._post(thr, strict, cuts, thr_prime)
        if extra is None:
            return Check("unsat")
        r = self.remaining()
        if r is not None and r <= 0:
            return Check("timeout")
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
                return Check("timeout")
            if not sat:
                return Check("unsat")
            x, xp, (zv, zpv) = self.enc.pair_from_model(self.solver)
            return Check("sat", x, xp, zv, zpv)
        finally:
            self.stats["checks"] += 1
            self.stats["solver_seconds"] = round(self.stats["solver_seconds"] + time.perf_counter() - t, 4)
            self.solver.pop()

    def optimize(self, start=None):
        raise NotImplementedError("z3 engine: no optimisation (can_optimize is False)")


def _run(problem, time_limit, body):
    from pysmt.environment import Environment, pop_env, push_env

    env = Environment()
    push_env(env)
    try:
        eng = Z3Engine(problem, time_limit, env)
        try:
            return body(eng)
        finally:
            eng.solver.exit()
    finally:
        pop_env()


from fairspec.backends.smt.exact import Runtime, find, maximize, prove, solve  # noqa: E402,F401 - the certified modes
