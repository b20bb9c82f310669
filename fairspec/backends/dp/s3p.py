"""FVGM's stochastic subset-sum problem (S3P), solved by dynamic programming.

S(B, tau) = Pr[ sum_i w_i(B_i) >= tau ] where every variable B_i has a
quantifier: random (drawn from its distribution, possibly conditional on
earlier variables: a Bayesian network), existential (chosen to maximise S) or
universal (chosen to minimise S).  FVGM states it for Boolean variables with
one weight each; here a variable has a finite domain and one integer weight per
value (a Boolean B with weight w is the domain {0, 1} with weights (0, w)), so
a binned feature or a one-hot group is one variable rather than a cardinality
constraint.

Recursion (FVGM eq. 3, with the Bayesian-network extension of section 3.3):

    dp(i, tau, u) = max_v dp(i+1, tau - w_i(v), u')                    (exists)
                  = min_v dp(i+1, tau - w_i(v), u')                    (forall)
                  = sum_v Pr[B_i = v | Pa(B_i) = u] dp(i+1, tau - w_i(v), u')   (random)

where u holds the values of the already-decided variables that are parents of
variables still to come (FVGM enumerates them; we memoise on them, which is the
same recursion with fewer repeats).  Terminating conditions (FVGM eq. 4) use
suffix bounds, a tightening of FVGM's global w_neg / w_pos:

    dp(i, tau, u) = 1  if tau <= sum_{j>=i} min_v w_j(v)   (always reached)
                  = 0  if tau >  sum_{j>=i} max_v w_j(v)   (never reached)

Ordering heuristics (FVGM 3.2 and 3.3): choice variables first (those with
children in the network before the others), then random variables of the
network in topological order, then independent random variables sorted by
weight spread (descending when tau <= (w_pos - w_neg) / 2, else ascending).

Evidence (a variable restricted to some values, used for conditioning on the
label) drops the mass of the other values; the "always reached" bound then
returns the probability of the remaining evidence instead of 1.

Two solvers share the problem: ``solve_recursive`` (FVGM's memoised recursion,
node budget) and ``solve_vector`` (the same recurrence evaluated bottom-up for
every residual threshold at once with numpy; the default, much faster).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

__all__ = ["S3PVar", "S3P", "S3PResult", "solve_recursive", "solve_vector", "fvgm_order"]


class _Budget(Exception):
    pass


@dataclass
class S3PVar:
    name: str
    quant: str                    # "R" | "E" | "A"
    weights: np.ndarray           # int, one per value
    parents: tuple = ()           # names of parents (must precede in the order)
    cpt: np.ndarray | None = None  # shape (k_parents..., k) for R
    allowed: np.ndarray | None = None  # bool mask of allowed values (evidence / fixed group)

    def __post_init__(self):
        self.weights = np.asarray(self.weights, dtype=np.int64)
        k = len(self.weights)
        if self.allowed is None:
            self.allowed = np.ones(k, dtype=bool)
        else:
            self.allowed = np.asarray(self.allowed, dtype=bool)

    @property
    def k(self) -> int:
        return len(self.weights)


@dataclass
class S3P:
    variables: list            # S3PVar in solving order
    tau: int

    def check(self):
        seen = set()
        for v in self.variables:
            for p in v.parents:
                if p not in seen:
                    raise ValueError(f"parent {p} of {v.name} does not precede it")
            if v.quant == "R" and v.cpt is None:
                raise ValueError(f"random variable {v.name} has no distribution")
            if not v.allowed.any():
                raise ValueError(f"variable {v.name} has no allowed value")
            seen.add(v.name)


@dataclass(frozen=True)
class S3PResult:
    status: str
    probability: float | None
    choice: dict = field(default_factory=dict)   # name -> value index of E/A variables
    nodes: int = 0
    seconds: float = 0.0
    reason: str | None = None
    per_choice: dict | None = None   # (values of the leading choice block) -> (Pr, Pr[evidence])


def fvgm_order(variables: Sequence[S3PVar], children: dict, tau: int, topo: Sequence[str]) -> list:
    """FVGM's ordering: choice in the network, other choice, network random
    variables (topological), independent random variables by weight spread."""
    innet = {v.name for v in variables if v.parents or children.get(v.name)}
    spread = {v.name: int(v.weights.max() - v.weights.min()) for v in variables}
    w_pos = sum(int(max(v.weights.max(), 0)) for v in variables)
    w_neg = sum(int(min(v.weights.min(), 0)) for v in variables)
    desc = tau <= 0.5 * (w_pos - w_neg)
    pos = {n: i for i, n in enumerate(topo)}
    choice_net = [v for v in variables if v.quant != "R" and v.name in innet]
    choice_free = [v for v in variables if v.quant != "R" and v.name not in innet]
    rand_net = sorted([v for v in variables if v.quant == "R" and v.name in innet], key=lambda v: pos[v.name])
    rand_free = [v for v in variables if v.quant == "R" and v.name not in innet]
    key = (lambda v: -spread[v.name]) if desc else (lambda v: spread[v.name])
    choice_free.sort(key=key)
    rand_free.sort(key=key)
    return choice_net + choice_free + rand_net + rand_free


def _prepare(problem: S3P):
    problem.check()
    vs = problem.variables
    n = len(vs)
    idx = {v.name: i for i, v in enumerate(vs)}
    wmax = [int(v.weights[v.allowed].max()) for v in vs]
    wmin = [int(v.weights[v.allowed].min()) for v in vs]
    maxsuf = [0] * (n + 1)
    minsuf = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        maxsuf[i] = maxsuf[i + 1] + wmax[i]
        minsuf[i] = minsuf[i + 1] + wmin[i]
    # evidence: a random variable with a restricted domain
    ev_after = [False] * (n + 1)
    for i in range(n - 1, -1, -1):
        ev_after[i] = ev_after[i + 1] or (vs[i].quant == "R" and not vs[i].allowed.all())
    parent_idx = [tuple(idx[p] for p in v.parents) for v in vs]
    frontier = []
    for i in range(n + 1):
        fr = sorted({p for j in range(i, n) for p in parent_idx[j] if p < i})
        frontier.append(tuple(fr))
    has_children = [False] * n
    for j in range(n):
        for p in parent_idx[j]:
            has_children[p] = True
    return vs, n, wmax, wmin, maxsuf, minsuf, ev_after, parent_idx, frontier, has_children


def solve_recursive(problem: S3P, max_nodes: int = 5_000_000, time_limit: float = 60.0) -> S3PResult:
    """FVGM's memoised recursion (eq. 3 and 4), exact."""
    t0 = time.perf_counter()
    vs, n, wmax, wmin, maxsuf, minsuf, ev_after, parent_idx, frontier, has_children = _prepare(problem)
    memo: dict = {}
    count = [0]
    deadline = t0 + time_limit

    def dp(i, tau, ctx):
        if tau > maxsuf[i]:
            return 0.0
        if tau <= minsuf[i] and not ev_after[i]:
            return 1.0
        if i == n:
            return 1.0 if tau <= 0 else 0.0
        key = (i, tau, ctx)
        r = memo.get(key)
        if r is not None:
            return r
        count[0] += 1
        if count[0] > max_nodes:
            raise _Budget(f"the dynamic program exceeded its budget of {max_nodes} states")
        if (count[0] & 1023) == 0 and time.perf_counter() > deadline:
            raise _Budget(f"the dynamic program exceeded its time limit of {time_limit:g} s")
        var = vs[i]
        full = dict(zip(frontier[i], ctx))
        nxt = frontier[i + 1]
        vals = np.flatnonzero(var.allowed)
        if var.quant in ("E", "A") and not has_children[i]:
            # FVGM: a choice variable that conditions nothing takes its best weight
            w = var.weights[vals]
            vals = [int(vals[np.argmax(w)] if var.quant == "E" else vals[np.argmin(w)])]
        if var.quant == "R":
            row = var.cpt[tuple(full[p] for p in parent_idx[i])] if parent_idx[i] else var.cpt
            acc = 0.0
            for v in vals:
                pv = float(row[v])
                if pv == 0.0:
                    continue
                full[i] = int(v)
                acc += pv * dp(i + 1, tau - int(var.weights[v]), tuple(full[j] for j in nxt))
            r = acc
        else:
            best = None
            for v in vals:
                full[i] = int(v)
                s = dp(i + 1, tau - int(var.weights[v]), tuple(full[j] for j in nxt))
                if best is None or (s > best if var.quant == "E" else s < best):
                    best = s
            r = best
        memo[key] = r
        return r

    try:
        p = dp(0, int(problem.tau), ())
        choice = _trace(vs, n, frontier, has_children, int(problem.tau), lambda i, t, c: dp(i, t, c))
    except _Budget as b:
        return S3PResult("unknown", None, {}, count[0], time.perf_counter() - t0, str(b))
    except RecursionError:
        return S3PResult("unknown", None, {}, count[0], time.perf_counter() - t0,
                         "the dynamic program went deeper than the recursion limit")
    return S3PResult("ok", min(1.0, max(0.0, p)), choice, count[0], time.perf_counter() - t0)


def _trace(vs, n, frontier, has_children, tau, value):
    """The optimising values of the leading choice variables."""
    choice = {}
    full: dict = {}
    t = tau
    for i in range(n):
        var = vs[i]
        if var.quant == "R":
            break
        vals = np.flatnonzero(var.allowed)
        best = None
        for v in vals:
            f2 = dict(full)
            f2[i] = int(v)
            s = value(i + 1, t - int(var.weights[v]), tuple(f2[j] for j in frontier[i + 1]))
            if best is None or (s > best[0] + 1e-15 if var.quant == "E" else s < best[0] - 1e-15):
                best = (s, int(v))
        full[i] = best[1]
        choice[var.name] = best[1]
        t -= int(var.weights[best[1]])
    return choice


def solve_vector(problem: S3P, max_cells: int = 50_000_000, time_limit: float = 60.0,
                 per_choice: bool = False) -> S3PResult:
    """The same recurrence, bottom-up over every residual threshold at once (numpy).

    With ``per_choice`` the result also holds, for every assignment of the
    leading choice variables, the probability and the evidence mass: all the
    groups' PPVs from the one pass.
    """
    t0 = time.perf_counter()
    vs, n, wmax, wmin, maxsuf, minsuf, ev_after, parent_idx, frontier, has_children = _prepare(problem)
    tau0 = int(problem.tau)
    # reachable residual thresholds at position i: tau0 - prefix sums
    lo = [tau0] * (n + 1)
    hi = [tau0] * (n + 1)
    for i in range(n):
        lo[i + 1] = lo[i] - wmax[i]
        hi[i + 1] = hi[i] - wmin[i]
    # stored window [a_i, b_i]; below: g_i(ctx) (evidence mass, 1 without), above: 0
    a = [max(lo[i], minsuf[i] + 1) for i in range(n + 1)]
    b = [min(hi[i], maxsuf[i]) for i in range(n + 1)]
    doms = [np.flatnonzero(v.allowed) for v in vs]
    cells = 0
    for i in range(n + 1):
        nctx = 1
        for p in frontier[i]:
            nctx *= len(doms[p])
        cells += nctx * max(0, b[i] - a[i] + 1)
    if cells > max_cells:
        return S3PResult("unknown", None, {}, 0, time.perf_counter() - t0,
                         f"the dynamic program needs {cells} cells, over its budget of {max_cells}")
    F: list = [None] * (n + 1)   # F[i][ctx] = (array over [a_i, b_i], g scalar)
    # base: i = n, window: tau in (0, 0] is empty: a_n = max(lo, 1), b_n = min(hi, 0)
    F[n] = {(): (np.zeros(max(0, b[n] - a[n] + 1)), 1.0)}
    deadline = t0 + time_limit

    def lookup(i, ctx, taus):
        arr, g = F[i][ctx]
        j = taus - a[i]
        out = np.zeros(len(taus))
        below = j < 0
        out[below] = g
        inside = (~below) & (j < len(arr))
        out[inside] = arr[j[inside]]
        return out

    for i in range(n - 1, -1, -1):
        if time.perf_counter() > deadline:
            return S3PResult("unknown", None, {}, 0, time.perf_counter() - t0,
                             f"the dynamic program exceeded its time limit of {time_limit:g} s")
        var = vs[i]
        taus = np.arange(a[i], b[i] + 1, dtype=np.int64)
        fr, nfr = frontier[i], frontier[i + 1]
        Fi = {}
        for ctx in itertools.product(*[doms[p] for p in fr]):
            ctx = tuple(int(c) for c in ctx)
            full = dict(zip(fr, ctx))
            if var.quant == "R":
                row = var.cpt[tuple(full[p] for p in parent_idx[i])] if parent_idx[i] else var.cpt
                acc = np.zeros(len(taus))
                gacc = 0.0
                for v in doms[i]:
                    pv = float(row[v])
                    if pv == 0.0:
                        continue
                    full[i] = int(v)
                    c2 = tuple(full[j] for j in nfr)
                    acc += pv * lookup(i + 1, c2, taus - int(var.weights[v]))
                    gacc += pv * F[i + 1][c2][1]
            else:
                acc = None
                gacc = None
                for v in doms[i]:
                    full[i] = int(v)
                    c2 = tuple(full[j] for j in nfr)
                    s = lookup(i + 1, c2, taus - int(var.weights[v]))
                    g2 = F[i + 1][c2][1]
                    if acc is None:
                        acc, gacc = s, g2
                    elif var.quant == "E":
                        acc = np.maximum(acc, s)
                        gacc = max(gacc, g2)
                    else:
                        acc = np.minimum(acc, s)
                        gacc = min(gacc, g2)
            Fi[ctx] = (acc, gacc)
        F[i] = Fi

    def value(i, t, ctx):
        return float(lookup(i, ctx, np.asarray([t], dtype=np.int64))[0])

    p = value(0, tau0, ())
    choice = _trace(vs, n, frontier, has_children, tau0, value)
    table = None
    if per_choice:
        m = 0
        while m < n and vs[m].quant != "R":
            m += 1
        table = {}
        for combo in itertools.product(*[doms[i] for i in range(m)]):
            combo = tuple(int(c) for c in combo)
            full = dict(enumerate(combo))
            t = tau0 - sum(int(vs[i].weights[c]) for i, c in enumerate(combo))
            ctx = tuple(full[j] for j in frontier[m])
            table[combo] = (min(1.0, max(0.0, value(m, t, ctx))), F[m][ctx][1])
    return S3PResult("ok", min(1.0, max(0.0, p)), choice, cells, time.perf_counter() - t0, per_choice=table)
