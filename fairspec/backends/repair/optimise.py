"""The LP for the desired passing rates (FairRepair IV-D) and the exact choice of patches (IV-E/F).

LP: minimise sum_g p_g |x_g - r_g| subject to x_i >= c x_j for every ordered pair of groups and
0 <= x_g <= 1.  Its optimum, `minimal`, is a lower bound on the semantic difference of any repair.

The goal is decided exactly, as the spec writes it: c is the decimal literal as a Fraction a/b
(0.8 is 4/5) and on integer passing counts P the pair (i, j) meets it iff
P_i n_j b - a P_j n_i >= 0 (``>=``) or >= 1 (``>``: an integer > 0 is >= 1).  The MILP rows are
exactly these integer rows, and every answer of a floating-point solver is re-checked on exact
counts (``ratio_ok``) before it is used: one that fails (solver tolerances) is solved again with
the goal tightened by a small margin, a bounded number of times, and then the choice is
``unknown`` with the reason -- never a crash, never a float taken as proof.

Choice: a set of *options* (flip a whole cell, or flip the first j points of a refined cell),
each with a group, a signed change of that group's passing count and a number of changed rows;
at most one option per cell.  Hard constraints: every pairwise passing-rate ratio >= c, changed
rows <= alpha x minimal x N.  Objective: the fewest options (changed paths) -- the paper's soft
constraints X = I.  Solved exactly by a MILP (HiGHS through scipy, or SCIP), or for comparison
by z3's Optimize (the paper's MaxSMT) and python-sat's RC2 over pseudo-Boolean encodings.

With HiGHS the whole-cell flips are solved in their aggregated, exact form: options with the same
group, count change and rows are interchangeable, so one integer count per class replaces one
binary per option (a 30-tree forest's ~24,000 intersections on Adult become a few hundred
classes), started from a greedy incumbent that is kept if the time limit stops the search first.
"""

from __future__ import annotations

from fairspec.runtime.stdio import new_highs, quiet

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from fairspec.certify.exact import threshold_of

SOLVERS = ("highs", "scip", "z3", "rc2")
# margins (in passing-rate units) by which a goal row is tightened when a solver's answer fails the
# exact re-check: the first solve is exact (margin 0), then at most three tightened ones
MARGINS = (Fraction(0), Fraction(1, 10 ** 9), Fraction(1, 10 ** 7), Fraction(1, 10 ** 5))
UNCHECKED = ("the solver's answers did not pass the exact re-check of the goal (passing counts as exact rationals) "
             "even with the goal tightened by a margin of up to 1e-5 (floating-point tolerances); no repair is claimed")


def _count(x) -> int:
    """An integer count held in an int or float array entry (exactly)."""
    v = int(x)
    if v != x:
        raise ValueError(f"a passing count must be a whole number, got {x!r}")
    return v


@dataclass
class Lp:
    minimal: float           # the LP optimum: share of rows (lower bound on the semantic difference)
    rates: np.ndarray        # desired passing rates x_g


def minimal_change(rates: np.ndarray, sizes: np.ndarray, c, strict: bool = False) -> Lp:
    """Solve the LP of section IV-D with HiGHS (scipy.optimize.linprog).  It is the relaxation of
    the goal on integer counts: a strict goal ``> c`` is x_i - c x_j >= 1 / (n_i n_j b) (c = a/b; on
    counts, > 0 is >= 1), so at a tie `minimal` is not 0; and some row passes (sum n_g x_g >= 1:
    0/0 is no ratio).  Every repair meets these rows, so the optimum stays a lower bound."""
    from scipy.optimize import linprog

    G = len(rates)
    cf = threshold_of(c)
    c = float(cf)
    p = sizes / sizes.sum()
    # variables x_0..x_{G-1}, t_0..t_{G-1};  t_g >= |x_g - r_g|
    cost = np.concatenate([np.zeros(G), p])
    rows, rhs = [], []
    for g in range(G):
        r = np.zeros(2 * G); r[g], r[G + g] = 1, -1; rows.append(r); rhs.append(rates[g])     # x - t <= r
        r = np.zeros(2 * G); r[g], r[G + g] = -1, -1; rows.append(r); rhs.append(-rates[g])   # -x - t <= -r
    for i in range(G):
        for j in range(G):
            if i != j:
                gap = float(Fraction(1, int(sizes[i]) * int(sizes[j]) * cf.denominator)) if strict else 0.0
                r = np.zeros(2 * G); r[i], r[j] = -1, c; rows.append(r); rhs.append(-gap)   # c x_j - x_i <= -gap
    r = np.zeros(2 * G); r[:G] = -np.asarray(sizes, dtype=float); rows.append(r); rhs.append(-1.0)  # sum n x >= 1
    res = quiet(linprog)(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(0, 1)] * G + [(0, None)] * G,
                         method="highs")
    if res.status != 0:  # pragma: no cover - x = 1 everywhere is feasible (a strict c = 1: core stops first)
        raise RuntimeError(f"the passing-rate LP failed: {res.message}")
    return Lp(float(max(0.0, res.fun)), np.asarray(res.x[:G]))


@dataclass
class Options:
    """Candidate patches: one row per option."""

    cell: np.ndarray     # the cell it changes (at most one option per cell)
    group: np.ndarray    # the cell's sensitive group
    delta: np.ndarray    # signed change of the group's passing count
    rows: np.ndarray     # rows whose decision changes (>= 1)
    part: np.ndarray     # 0: the whole cell flipped; j > 0: the first j distinct points (refinement)


@dataclass
class Choice:
    status: str          # optimal | feasible (time limit, incumbent kept) | infeasible | timeout
    chosen: np.ndarray   # indices into the options
    seconds: float
    solver: str
    greedy: bool = False  # the solution kept is the greedy warm start (the solver found none better in time)
    note: str = ""        # why the status is unknown, or why a feasible answer is not proven fewest (a margin)


def exact_ratio(passing, sizes) -> Fraction | None:
    """The passing-rate ratio, exactly: the lowest passing rate over the highest, of integer counts
    as exact rationals (7/10 : 7/8 is 4/5, not a quotient of two rounded rates); None when every rate
    is 0 (0/0 is no ratio). The one computation of it: the goal's check, the report, the proof."""
    rates = [Fraction(_count(p), _count(n)) for p, n in zip(passing, sizes)]
    hi = max(rates)
    return min(rates) / hi if hi > 0 else None


def ratio_ok(passing, sizes, c, strict: bool) -> bool:
    """The goal, exactly: :func:`exact_ratio` against c as the spec writes it
    (``certify.exact.threshold_of``), ``>`` when strict else ``>=``. False when every rate is 0."""
    cf = threshold_of(c)
    r = exact_ratio(passing, sizes)
    if r is None:
        return False
    return r > cf if strict else r >= cf


def tightening(solve, accept, time_limit: float | None = None):
    """Solve, re-check the answer exactly, and when a floating-point solver's answer fails the
    re-check (its tolerances), solve again with the goal tightened by the next of ``MARGINS``.
    ``solve(margin, seconds_left)`` returns (status, answer or None); ``accept(answer)`` is the
    exact check.  Returns (status, answer or None, note): the first solve's status when it found
    nothing (its infeasible is the goal's: its rows are the exact integer rows); "feasible" for an
    answer found only with a margin (the fewest paths is then proven for the tightened goal only);
    "unknown" with the reason when no answer passed."""
    t0 = time.perf_counter()
    for k, margin in enumerate(MARGINS):
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if k and left is not None and left <= 0:
            break
        status, ans = solve(margin, left)
        if ans is None:
            if k == 0:
                return status, None, ""
            if status == "timeout":
                break
            return "unknown", None, (f"the solver's answer did not pass the exact re-check of the goal (floating-point "
                                     f"tolerances), and with the goal tightened by {float(margin):g} it found no "
                                     f"answer ({status}); no repair is claimed")
        if accept(ans):
            return (status, ans, "") if k == 0 else \
                ("feasible", ans, f"the solver's first answer failed the exact re-check of the goal (floating-point "
                                  f"tolerances); this one was found with the goal tightened by {float(margin):g}, so "
                                  f"the fewest changed paths is not proven")
    return "unknown", None, UNCHECKED


def choose(opts: Options, base: np.ndarray, sizes: np.ndarray, c, strict: bool, budget: int,
           solver: str = "highs", time_limit: float | None = None, weights: np.ndarray | None = None) -> Choice:
    """Fewest options meeting every pairwise ratio with at most ``budget`` changed rows
    (``weights``: minimise their weighted sum instead; MILP solvers only).  Every answer is
    re-checked exactly (``tightening``): status "unknown" (``note`` says why) when none passes."""
    t0 = time.perf_counter()
    if len(opts.cell) == 0:
        st = "optimal" if ratio_ok(base, sizes, c, strict) else "infeasible"
        return Choice(st, np.zeros(0, dtype=np.int64), 0.0, solver)
    fn = {"highs": _milp_highs, "scip": _milp_scip, "z3": _z3, "rc2": _rc2}[solver]
    classes = weights is None and solver == "highs" and np.unique(opts.cell).size == len(opts.cell)

    def solve(margin, left):
        greedy = False
        if weights is not None:
            status, x = _milp_highs(opts, base, sizes, c, strict, budget, left, weights, margin=margin)
        elif classes:
            status, x, greedy = _classes_highs(opts, base, sizes, c, strict, budget, left, margin=margin)
        else:
            status, x = fn(opts, base, sizes, c, strict, budget, left, margin=margin)
        return status, (None if x is None else (np.flatnonzero(np.asarray(x) > 0.5), greedy))

    def accept(ans) -> bool:
        # the hard constraints, checked exactly on counts (solvers work with tolerances)
        chosen = ans[0]
        passing = base.astype(np.int64).copy()
        np.add.at(passing, opts.group[chosen], opts.delta[chosen].astype(np.int64))
        return (int(opts.rows[chosen].sum()) <= budget and ratio_ok(passing, sizes, c, strict)
                and np.bincount(opts.cell[chosen]).max(initial=0) <= 1)

    status, ans, note = tightening(solve, accept, time_limit)
    chosen, greedy = ans if ans is not None else (np.zeros(0, dtype=np.int64), False)
    return Choice(status, chosen, time.perf_counter() - t0, solver, greedy, note)


# ------------------------------------------------------------------ the linear rows

def pair_rows(sizes, base, c, strict: bool, margin=0):
    """The goal on integer passing counts, one row per ordered pair (i, j) of groups, c = a/b exactly:
    P_i n_j b - a P_j n_i >= rhs, rhs = 1 when strict (an integer > 0 is >= 1) else 0, plus
    ceil(margin n_i n_j b) (``margin`` tightens the rates' gap).  Yields (i, j, w_i, w_j, need):
    the integer changes d of the passing counts must meet d_i w_i - d_j w_j >= need (Python ints;
    the row divided by g = gcd(w_i, w_j), its need rounded up -- the same integer points, smaller
    coefficients for the solver)."""
    cf = threshold_of(c)
    a, b = cf.numerator, cf.denominator
    G = len(sizes)
    for i in range(G):
        for j in range(G):
            if i == j:
                continue
            ni, nj = int(sizes[i]), int(sizes[j])
            wi, wj = nj * b, a * ni
            rhs = (1 if strict else 0) + math.ceil(Fraction(margin) * ni * nj * b)
            need = rhs - (int(base[i]) * wi - int(base[j]) * wj)
            g = math.gcd(wi, wj) or 1
            yield i, j, wi // g, wj // g, -(-need // g)


def _ratio_rows(group: np.ndarray, coef: np.ndarray, sizes, base, c, strict: bool, col0: int = 0, margin=0):
    """Sparse triplets of the goal's rows (``pair_rows``: integer coefficients, so an integer point
    meets them exactly or misses by a whole unit), where d_g sums coef over the variables of group g
    (variable k is column col0 + k); for ``>=`` also sum_g (base_g + d_g) >= 1 (some row passes:
    0/0 is no ratio; a strict row already excludes it)."""
    data, ri, ci, lb = [], [], [], []
    by_group = [np.flatnonzero(group == g) for g in range(len(sizes))]
    r = 0
    for i, j, wi, wj, need in pair_rows(sizes, base, c, strict, margin):
        ki, kj = by_group[i], by_group[j]
        data += list(coef[ki] * float(wi)) + list(-float(wj) * coef[kj])
        ri += [r] * (len(ki) + len(kj))
        ci += list(col0 + ki) + list(col0 + kj)
        lb.append(float(need))
        r += 1
    if not strict:
        K = len(group)
        data += list(coef); ri += [r] * K; ci += list(col0 + np.arange(K)); lb.append(float(1 - int(np.sum(base))))
        r += 1
    return data, ri, ci, lb, [np.inf] * r, r


def _linear_rows(opts: Options, base, sizes, c, strict, budget, margin=0):
    """(A, lb, ub) as sparse triplets: ratio rows, budget row, one-per-cell rows."""
    K = len(opts.cell)
    data, ri, ci, lb, ub, r = _ratio_rows(opts.group, opts.delta.astype(float), sizes, base, c, strict, margin=margin)
    data += list(opts.rows); ri += [r] * K; ci += list(range(K)); lb.append(-np.inf); ub.append(budget); r += 1
    cells, counts = np.unique(opts.cell, return_counts=True)
    for cell in cells[counts > 1]:
        ks = np.flatnonzero(opts.cell == cell)
        data += [1.0] * len(ks); ri += [r] * len(ks); ci += list(ks); lb.append(-np.inf); ub.append(1); r += 1
    return np.array(data, dtype=float), np.array(ri), np.array(ci), np.array(lb, dtype=float), np.array(ub, dtype=float), r


def _milp_highs(opts, base, sizes, c, strict, budget, time_limit, weights=None, margin=0):
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_array

    data, ri, ci, lb, ub, R = _linear_rows(opts, base, sizes, c, strict, budget, margin)
    K = len(opts.cell)
    A = csr_array((data, (ri, ci)), shape=(R, K))
    o = {"disp": False}
    if time_limit is not None:
        o["time_limit"] = float(time_limit)
    res = quiet(milp)(np.ones(K) if weights is None else weights, constraints=LinearConstraint(A, lb, ub),
                      integrality=np.ones(K), bounds=Bounds(0, 1), options=o)
    if res.status == 0:
        return "optimal", res.x
    if res.status == 2:
        return "infeasible", None
    if res.x is not None:
        return "feasible", res.x
    return "timeout", None


def option_classes(opts: Options):
    """Options that change the same group by the same count with the same rows are interchangeable
    in the choice (constraints and objective see only these three numbers), so the MILP over one
    binary per option has the same optimum as an integer program over one count per class
    (0 <= k_j <= options in class j): the exact, aggregated form.  With 30 trees nearly every
    intersection holds a row or two, so ~30,000 options fall into a few hundred classes.
    Returns (keys (J, 3): group, delta, rows; class of each option; options per class)."""
    keys = np.column_stack([opts.group, opts.delta, opts.rows]).astype(np.int64)
    uniq, inv, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    return uniq, inv.reshape(-1), counts


def greedy_counts(keys: np.ndarray, counts: np.ndarray, base, sizes, c, strict: bool, budget: int):
    """A feasible choice of counts per class, or None: each group is moved towards the LP's desired
    passing count (IV-D), rounded away from its current rate, by its largest options first, with
    the smallest option that covers what is left last.  Checked exactly; used as HiGHS's starting
    incumbent and kept when the solver finds nothing better within its time limit."""
    if strict and threshold_of(c) >= 1:
        return None     # no ratio exceeds 1
    lp = minimal_change(base / sizes, sizes, c, strict)
    take = np.zeros(len(keys), dtype=np.int64)
    for g in range(len(sizes)):
        want = lp.rates[g] * sizes[g] - base[g]
        if abs(want) < 1e-9:
            continue
        need = int(np.ceil(abs(want) - 1e-9)) + (1 if strict else 0)
        s = 1 if want > 0 else -1
        idx = np.flatnonzero((keys[:, 0] == g) & (np.sign(keys[:, 1]) == s))
        idx = idx[np.argsort(-keys[idx, 2], kind="stable")]
        for j in idx:
            if need <= 0:
                break
            k = min(int(counts[j]), need // int(keys[j, 2]))
            take[j] += k
            need -= k * int(keys[j, 2])
        if need > 0:
            spare = [j for j in idx[::-1] if take[j] < counts[j] and keys[j, 2] >= need]
            if not spare:
                return None
            take[spare[0]] += 1
    passing = base.astype(np.int64).copy()
    np.add.at(passing, keys[:, 0], keys[:, 1] * take)
    if (keys[:, 2] * take).sum() > budget or not ratio_ok(passing, sizes, c, strict):
        return None
    return take


def _classes_highs(opts, base, sizes, c, strict, budget, time_limit, margin=0):
    """The flip choice as an integer program over option classes (``option_classes``), solved by
    HiGHS from the greedy incumbent.  Returns (status, 0/1 per option or None, greedy kept)."""
    import highspy

    keys, cls, counts = option_classes(opts)
    J = len(keys)
    start = greedy_counts(keys, counts, base, sizes, c, strict, budget)
    data, ri, ci, lb, ub, R = _ratio_rows(keys[:, 0], keys[:, 1].astype(float), sizes, base, c, strict,
                                          margin=margin)
    data += list(keys[:, 2].astype(float)); ri += [R] * J; ci += list(range(J)); lb.append(-np.inf); ub.append(budget)
    R += 1
    from scipy.sparse import csr_array

    A = csr_array((np.array(data, float), (np.array(ri), np.array(ci))), shape=(R, J))
    inf = highspy.kHighsInf
    h = new_highs()
    h.setOptionValue("threads", 1)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    lpm = highspy.HighsLp()
    lpm.num_col_, lpm.num_row_ = J, R
    lpm.col_cost_ = np.ones(J)
    lpm.col_lower_ = np.zeros(J)
    lpm.col_upper_ = counts.astype(float)
    lpm.row_lower_ = np.array([-inf if np.isinf(v) else v for v in lb], dtype=float)
    lpm.row_upper_ = np.array([inf if np.isinf(v) else v for v in ub], dtype=float)
    lpm.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lpm.a_matrix_.num_col_, lpm.a_matrix_.num_row_ = J, R
    lpm.a_matrix_.start_ = A.indptr.astype(np.int32)
    lpm.a_matrix_.index_ = A.indices.astype(np.int32)
    lpm.a_matrix_.value_ = A.data.astype(float)
    lpm.sense_ = highspy.ObjSense.kMinimize
    lpm.integrality_ = [highspy.HighsVarType.kInteger] * J
    h.passModel(lpm)
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(start.astype(float))
        sol.value_valid = True
        h.setSolution(sol)
    quiet(h.run)()    # fd 1 quiet: HiGHS's bare printf (runtime.stdio.quiet)
    ms = h.getModelStatus()
    k, greedy = None, False
    if ms == highspy.HighsModelStatus.kOptimal:
        status, k = "optimal", np.round(np.asarray(h.getSolution().col_value)).astype(np.int64)
    elif ms == highspy.HighsModelStatus.kInfeasible:
        return "infeasible", None, False
    else:
        if h.getInfo().primal_solution_status == 2:
            status, k = "feasible", np.round(np.asarray(h.getSolution().col_value)).astype(np.int64)
        elif start is not None:
            status, k = "feasible", start
        else:
            return "timeout", None, False
        greedy = start is not None and (k.sum() >= start.sum())
        if greedy:
            k = start
    # back to options: the first k_j options of each class (any k_j of them are equivalent)
    k = np.clip(k, 0, counts)
    x = np.zeros(len(opts.cell))
    order = np.argsort(cls, kind="stable")
    first = np.searchsorted(cls[order], np.arange(J))
    for j in np.flatnonzero(k):
        x[order[first[j]:first[j] + k[j]]] = 1.0
    return status, x, greedy


def _milp_scip(opts, base, sizes, c, strict, budget, time_limit, margin=0):
    from pyscipopt import Model, quicksum

    data, ri, ci, lb, ub, R = _linear_rows(opts, base, sizes, c, strict, budget, margin)
    K = len(opts.cell)
    m = Model()
    m.hideOutput()
    if time_limit is not None:
        m.setParam("limits/time", float(time_limit))
    x = [m.addVar(vtype="B") for _ in range(K)]
    order = np.argsort(ri, kind="stable")
    starts = np.searchsorted(ri[order], np.arange(R + 1))
    for r in range(R):
        idx = order[starts[r]:starts[r + 1]]
        expr = quicksum(float(data[k]) * x[int(ci[k])] for k in idx)
        if np.isfinite(lb[r]):
            m.addCons(expr >= float(lb[r]))
        if np.isfinite(ub[r]):
            m.addCons(expr <= float(ub[r]))
    m.setObjective(quicksum(x), "minimize")
    from fairspec import interrupt

    # as the MILP backend: the solve runs without the GIL and Ctrl-C / SIGTERM interrupt it at once
    nogil = getattr(m, "optimizeNogil", None)
    with interrupt.solver_section(m.interruptSolve if nogil else None):
        (nogil or m.optimize)()
        if m.getStatus() == "userinterrupt":  # SCIP caught the Ctrl-C itself
            interrupt.request()
    st = m.getStatus()
    if st == "optimal":
        return "optimal", [m.getVal(v) for v in x]
    if st == "infeasible":
        return "infeasible", None
    if m.getNSols() > 0:
        return "feasible", [m.getVal(v) for v in x]
    return "timeout", None


def _integer_rows(opts, base, sizes, c, strict, budget, margin=0):
    """The goal's rows (``pair_rows``) with integer coefficients: what pseudo-Boolean solvers take;
    for ``>=`` also some row passes (0/0 is no ratio)."""
    rows = []
    for i, j, wi, wj, need in pair_rows(sizes, base, c, strict, margin):
        ks = np.flatnonzero((opts.group == i) | (opts.group == j))
        coef = [int(opts.delta[k]) * wi if opts.group[k] == i else -wj * int(opts.delta[k]) for k in ks]
        rows.append((list(map(int, ks)), coef, need))   # sum coef x >= need
    if not strict:
        rows.append((list(range(len(opts.cell))), [int(d) for d in opts.delta], 1 - int(np.sum(base))))
    return rows


def _z3(opts, base, sizes, c, strict, budget, time_limit, margin=0):
    import z3

    K = len(opts.cell)
    x = [z3.Bool(f"x{k}") for k in range(K)]
    o = z3.Optimize()
    if time_limit is not None:
        o.set("timeout", int(time_limit * 1000))
    for ks, coef, rhs in _integer_rows(opts, base, sizes, c, strict, budget, margin):
        pos = [(x[k], w) for k, w in zip(ks, coef) if w > 0]
        neg = [(x[k], -w) for k, w in zip(ks, coef) if w < 0]
        # sum pos - sum neg >= rhs
        o.add(z3.Sum([z3.If(v, w, 0) for v, w in pos] + [z3.If(v, -w, 0) for v, w in neg] + [z3.IntVal(0)]) >= rhs)
    o.add(z3.PbLe([(x[k], int(opts.rows[k])) for k in range(K)], int(budget)))
    for cell in np.unique(opts.cell):
        ks = np.flatnonzero(opts.cell == cell)
        if len(ks) > 1:
            o.add(z3.AtMost(*[x[k] for k in ks], 1))
    for v in x:
        o.add_soft(z3.Not(v), 1)
    r = o.check()
    if r == z3.sat:
        mdl = o.model()
        return "optimal", [1.0 if z3.is_true(mdl.eval(v, model_completion=True)) else 0.0 for v in x]
    if r == z3.unsat:
        return "infeasible", None
    return "timeout", None


def _rc2(opts, base, sizes, c, strict, budget, time_limit, margin=0):
    from pysat.card import CardEnc, EncType
    from pysat.examples.rc2 import RC2
    from pysat.formula import WCNF, IDPool
    from pysat.pb import PBEnc

    K = len(opts.cell)
    pool = IDPool(start_from=K + 1)
    w = WCNF()
    lits = list(range(1, K + 1))
    for ks, coef, rhs in _integer_rows(opts, base, sizes, c, strict, budget, margin):
        # sum coef x >= rhs with negative coefficients: w*x = w - w*(not x)
        ls, ws, shift = [], [], 0
        for k, cf in zip(ks, coef):
            if cf > 0:
                ls.append(lits[k]); ws.append(cf)
            elif cf < 0:
                ls.append(-lits[k]); ws.append(-cf); shift += cf
        bound = rhs - shift
        if bound <= 0:
            continue
        if sum(ws) < bound:
            return "infeasible", None
        enc = PBEnc.atleast(lits=ls, weights=ws, bound=bound, vpool=pool)
        for cl in enc.clauses:
            w.append(cl)
    enc = PBEnc.atmost(lits=lits, weights=[int(r) for r in opts.rows], bound=int(budget), vpool=pool)
    for cl in enc.clauses:
        w.append(cl)
    for cell in np.unique(opts.cell):
        ks = np.flatnonzero(opts.cell == cell)
        if len(ks) > 1:
            for cl in CardEnc.atmost(lits=[lits[k] for k in ks], bound=1, vpool=pool, encoding=EncType.pairwise).clauses:
                w.append(cl)
    for k in range(K):
        w.append([-lits[k]], weight=1)
    with RC2(w) as s:
        m = s.compute()
    if m is None:
        return "infeasible", None
    on = set(v for v in m if 0 < v <= K)
    return "optimal", [1.0 if k + 1 in on else 0.0 for k in range(K)]


def choose_counts(group: np.ndarray, sign: np.ndarray, size: np.ndarray, base: np.ndarray, sizes: np.ndarray,
                  c, strict: bool, budget: int, time_limit: float | None = None,
                  minimise_rows: bool = False) -> tuple[str, np.ndarray | None, str]:
    """The refinement problem with each cell's changed rows an integer k_c in [0, n_c] (any count
    reachable): fewest cells changed (or, with ``minimise_rows``, fewest rows).  A relaxation of
    the exact choice over sub-hypercubes: infeasible here means infeasible there, and its optimum
    is a lower bound.  Returns (status, k) with k the rows to change per cell; the answer is
    re-checked exactly (``tightening``; status "unknown" when none passes)."""
    # Cells with the same group, sign and size are interchangeable: per class j of m_j such cells,
    # z_j of them change (0..m_j) and k_j rows in all, and z_j cells changing 1..s_j rows each reach
    # exactly the totals z_j <= k_j <= s_j z_j -- the same optimum as one (z, k) pair per cell.
    keys = np.column_stack([group, sign, size]).astype(np.int64)
    uniq, cls, m = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    cls = cls.reshape(-1)

    def accept(per_cell) -> bool:
        passing = base.astype(np.int64).copy()
        np.add.at(passing, group.astype(np.int64), sign.astype(np.int64) * per_cell)
        return bool(int(per_cell.sum()) <= budget and np.all(per_cell >= 0) and np.all(per_cell <= size)
                    and ratio_ok(passing, sizes, c, strict))

    return tightening(
        lambda margin, left: _counts_milp(uniq, cls, m, group, base, sizes, c, strict, budget, left, minimise_rows,
                                          margin), accept, time_limit)


def _counts_milp(uniq, cls, m, group, base, sizes, c, strict, budget, time_limit, minimise_rows, margin):
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array

    J = len(uniq)
    s_j = uniq[:, 2].astype(float)
    # variables: z_0..z_{J-1} (cells changed), k_0..k_{J-1} (rows changed)
    data, ri, ci, lb, ub, r = _ratio_rows(uniq[:, 0], uniq[:, 1].astype(float), sizes, base, c, strict, col0=J,
                                          margin=margin)
    data += [1.0] * J; ri += [r] * J; ci += list(range(J, 2 * J)); lb.append(-np.inf); ub.append(budget); r += 1
    for j in range(J):   # k_j - s_j z_j <= 0 ;  k_j - z_j >= 0
        data += [1.0, -s_j[j]]; ri += [r, r]; ci += [J + j, j]; lb.append(-np.inf); ub.append(0.0); r += 1
        data += [1.0, -1.0]; ri += [r, r]; ci += [J + j, j]; lb.append(0.0); ub.append(np.inf); r += 1
    A = coo_array((np.array(data, float), (np.array(ri), np.array(ci))), shape=(r, 2 * J)).tocsr()
    cost = np.concatenate([np.zeros(J), np.ones(J)]) if minimise_rows else np.concatenate([np.ones(J), np.zeros(J)])
    o = {"disp": False}
    if time_limit is not None:
        o["time_limit"] = float(time_limit)
    res = quiet(milp)(cost, constraints=LinearConstraint(A, np.array(lb), np.array(ub)), integrality=np.ones(2 * J),
                      bounds=Bounds(np.zeros(2 * J), np.concatenate([m.astype(float), s_j * m])), options=o)
    if res.status == 2:
        return "infeasible", None
    if res.x is None:
        return "timeout", None
    z = np.clip(np.round(res.x[:J]).astype(np.int64), 0, m)
    k = np.clip(np.round(res.x[J:]).astype(np.int64), 0, uniq[:, 2] * m)
    # back to cells: the first z_j cells of class j, one row each, the rest filled up to s_j
    per_cell = np.zeros(len(group), dtype=np.int64)
    order = np.argsort(cls, kind="stable")
    first = np.searchsorted(cls[order], np.arange(J))
    for j in np.flatnonzero(k):
        cells = order[first[j]:first[j] + z[j]]
        left = int(k[j]) - len(cells)
        per_cell[cells] = 1
        for cell in cells:
            add = min(left, int(uniq[j, 2]) - 1)
            per_cell[cell] += add
            left -= add
        if left != 0:   # the solver's point broke z_j <= k_j <= s_j z_j (tolerances): its rows do not fit
            per_cell[order[first[j]:first[j] + m[j]]] = uniq[j, 2] + 1    # fails the exact re-check
    return ("optimal" if res.status == 0 else "feasible"), per_cell


def choose_points(cell_of_point: np.ndarray, group_of_point: np.ndarray, sign_of_point: np.ndarray,
                  weight: np.ndarray, n_cells: int, base: np.ndarray, sizes: np.ndarray, c, strict: bool,
                  budget: int, time_limit: float | None = None) -> tuple[str, np.ndarray | None, str]:
    """Full refinement, exactly: each distinct point (``weight`` rows) of the given cells may flip on
    its own; fewest cells changed (z_c >= y_p), every pairwise ratio, changed rows <= budget.
    Returns (status, y) with y the points flipped (HiGHS through scipy), re-checked exactly
    (``tightening``; status "unknown" when no answer passes)."""
    def accept(y) -> bool:
        passing = base.astype(np.int64).copy()
        np.add.at(passing, group_of_point[y].astype(np.int64), (sign_of_point[y] * weight[y]).astype(np.int64))
        return bool(int(weight[y].sum()) <= budget and ratio_ok(passing, sizes, c, strict))

    return tightening(lambda margin, left: _points_milp(cell_of_point, group_of_point, sign_of_point, weight,
                                                        n_cells, base, sizes, c, strict, budget, left, margin),
                      accept, time_limit)


def _points_milp(cell_of_point, group_of_point, sign_of_point, weight, n_cells, base, sizes, c, strict, budget,
                 time_limit, margin):
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array

    P, C = len(weight), n_cells
    data, ri, ci, lb, ub, r = _ratio_rows(group_of_point, (sign_of_point * weight).astype(float), sizes, base, c,
                                          strict, margin=margin)
    data += list(weight.astype(float)); ri += [r] * P; ci += list(range(P)); lb.append(-np.inf); ub.append(budget)
    r += 1
    # y_p - z_cell <= 0
    data += [1.0] * P + [-1.0] * P
    ri += list(range(r, r + P)) * 2
    ci += list(range(P)) + list(P + cell_of_point)
    lb += [-np.inf] * P; ub += [0.0] * P
    r += P
    A = coo_array((np.array(data, float), (np.array(ri), np.array(ci))), shape=(r, P + C)).tocsr()
    o = {"disp": False}
    if time_limit is not None:
        o["time_limit"] = float(time_limit)
    res = quiet(milp)(np.concatenate([np.zeros(P), np.ones(C)]),
                      constraints=LinearConstraint(A, np.array(lb), np.array(ub)),
                      integrality=np.ones(P + C), bounds=Bounds(0, 1), options=o)
    if res.status == 2:
        return "infeasible", None
    if res.x is None:
        return "timeout", None
    return ("optimal" if res.status == 0 else "feasible"), res.x[:P] > 0.5


def exact_minimal(passing, sizes, c) -> Fraction | None:
    """The LP of IV-D for a goal ``>= c`` solved exactly, as a Fraction (share of rows), or None where
    this closed form does not apply (every rate 0, or its optimum would have no passing row).

    Any feasible x has all rates in a band [L, L / c]; clamping each x_g to it costs no more, so the
    optimum is x_g = clamp(r_g, L, min(1, L / c)) for some L, and its cost is convex and piecewise
    linear in L with breaks at 0, the r_g, the c r_g and c: the least of those is the optimum, unless it is
    at L = 0 or has no passing row, where the LP's 'some row passes' binds (None: HiGHS's float is kept)."""
    cf = threshold_of(c)
    n = [_count(x) for x in sizes]
    r = [Fraction(_count(p), k) for p, k in zip(passing, n)]
    N = sum(n)
    if cf <= 0 or N == 0 or max(r) == 0:
        return None
    best, best_x = None, None
    for L in sorted(set([Fraction(0), *r, *(cf * x for x in r), min(cf, Fraction(1))])):
        if not 0 <= L <= 1:
            continue
        U = min(Fraction(1), L / cf)
        x = [min(max(v, L), U) for v in r]
        cost = sum(k * abs(a - v) for k, a, v in zip(n, x, r)) / N
        if best is None or cost < best:
            best, best_x = cost, x
    # L = 0 (no row passes) is the limit of the band, not a repair: 'some row passes' binds there
    if best is None or sum(k * a for k, a in zip(n, best_x)) < 1:
        return None
    return best


def row_budget(alpha, passing, sizes, c, strict: bool, minimal: float) -> tuple[int, Fraction | None, str]:
    """The rows a repair may change, floor(alpha x minimal x N), decided exactly: (budget, the exact
    minimal or None, why it cannot be decided). ``minimal``: the float LP (HiGHS). A goal ``>= c`` takes
    the exact LP (:func:`exact_minimal`, checked against HiGHS's); a strict goal keeps the float, and
    refuses (a reason) when alpha x minimal x N lies within 1e-6 of a whole row, where the float could
    round to the wrong side (a floor with a slack took 4.99999999968 rows as 5)."""
    N = sum(_count(x) for x in sizes)
    a = threshold_of(alpha)
    m = _exact_minimal_strict2(passing, sizes, c) if strict else exact_minimal(passing, sizes, c)
    if m is None and not any(_count(p) for p in passing):
        m = _exact_minimal_none_pass(sizes, c, strict)
    if m is not None and abs(float(m) - minimal) <= 1e-7:
        return math.floor(a * m * N), m, ""
    rows = float(a) * minimal * N
    if abs(rows - round(rows)) <= 1e-6:
        return 0, None, (f"alpha x minimal is {rows:.9f} rows, within the LP solver's tolerance of a whole number of "
                         f"rows, so the bound cannot be decided exactly (a goal >= c is solved exactly; change alpha "
                         f"slightly to decide it)")
    return math.floor(rows), None, ""


def _exact_minimal_strict2(passing, sizes, c) -> Fraction | None:
    """The strict LP (x_l - c x_h >= g, g = 1 / (n_l n_h b)) of two groups exactly, or None. Only the row of the
    lower group against the higher binds; raising x_l costs n_l per unit of it, lowering x_h costs n_h / c, so
    the optimum is the cheaper of the two moves alone (each checked exactly against every row of the LP)."""
    if len(sizes) != 2:
        return None
    cf = threshold_of(c)
    n = [_count(x) for x in sizes]
    r = [Fraction(_count(p), k) for p, k in zip(passing, n)]
    if cf <= 0 or cf >= 1 or 0 in n:
        return None
    g = Fraction(1, n[0] * n[1] * cf.denominator)
    lo, hi = (0, 1) if r[0] <= r[1] else (1, 0)
    need = cf * r[hi] + g - r[lo]
    if need <= 0:
        return None
    # the cheaper move per unit of the row alone (a tie: either); where it leaves [0, 1], a mix is cheaper
    x = {lo: r[lo] + need, hi: r[hi]} if n[lo] * cf <= n[hi] else {lo: r[lo], hi: r[hi] - need / cf}
    ok = all(0 <= x[k] <= 1 for k in (0, 1)) and x[0] - cf * x[1] >= g and x[1] - cf * x[0] >= g \
        and n[0] * x[0] + n[1] * x[1] >= 1
    best = (n[0] * abs(x[0] - r[0]) + n[1] * abs(x[1] - r[1])) / (n[0] + n[1]) if ok else None
    return best


def _exact_minimal_none_pass(sizes, c, strict: bool) -> Fraction | None:
    """No row passes: 'some row passes' (sum n_g x_g >= 1) makes every LP point cost at least 1 / N, and
    every rate 1 / N costs exactly that; it meets x_i >= c x_j (c <= 1), and for ``> c`` where
    (1 - c) / N >= 1 / (n_i n_j b) for every pair. Otherwise None."""
    cf = threshold_of(c)
    n = [_count(x) for x in sizes]
    N = sum(n)
    if N == 0 or cf > 1 or 0 in n:
        return None
    if strict:
        least = min(n)
        second = sorted(n)[1] if len(n) > 1 else least
        if (1 - cf) / N < Fraction(1, least * second * cf.denominator):   # the largest gap: the two smallest groups
            return None
    return Fraction(1, N)
