"""certify.lp: the LP bound from any multipliers is never below the true optimum; with HiGHS's
duals it is tight; with Farkas multipliers it proves infeasibility; a wrong vector only weakens it."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy import sparse

from fairspec.certify.lp import LinearProgram, exact_upper_bound, infeasible, upper_bound


def _random_lp(rng, n=6, m=8, me=2, quarter=False):
    draw = (lambda *s: rng.integers(-8, 9, size=s) / 4.0) if quarter else (lambda *s: rng.standard_normal(s))
    A = draw(m, n)
    x0 = rng.uniform(-1, 1, n)
    b = A @ x0 + rng.uniform(0, 1, m) * (0 if quarter else 1)
    Ae = draw(me, n)
    be = Ae @ x0
    c = draw(n)
    lo, hi = -np.ones(n) * 2, np.ones(n) * 2
    return LinearProgram(c, A, b, Ae, be, lo, hi)


def _highs(lp: LinearProgram):
    res = linprog(-lp.c, A_ub=lp.A_ub, b_ub=lp.b_ub, A_eq=lp.A_eq, b_eq=lp.b_eq,
                  bounds=list(zip(lp.lo, lp.hi)), method="highs")
    return res


def test_bound_matches_highs_and_exact_on_random_lps():
    rng = np.random.default_rng(0)
    for k in range(60):
        lp = _random_lp(rng, quarter=k % 2 == 0)
        res = _highs(lp)
        if res.status != 0:
            continue
        opt = -res.fun
        yu, ye = -res.ineqlin.marginals, -res.eqlin.marginals
        ub = upper_bound(lp, yu, ye)
        ex = exact_upper_bound(lp, yu, ye)
        assert Fraction(ub) >= ex                      # rigorous: never below the exact bound
        assert ub >= opt - 1e-7 and ub <= opt + 1e-6 * (1 + abs(opt))   # tight with good duals
        # the exact bound is a true upper bound of every feasible point (HiGHS's solution included,
        # up to its feasibility tolerance)
        assert ex >= Fraction(float(lp.c @ res.x)) - Fraction(1, 10 ** 6)


def test_wrong_multipliers_never_give_a_bound_below_the_optimum():
    rng = np.random.default_rng(1)
    for _ in range(60):
        lp = _random_lp(rng)
        res = _highs(lp)
        if res.status != 0:
            continue
        opt = -res.fun
        for _ in range(5):
            yu = -res.ineqlin.marginals + rng.standard_normal(lp.m_ub) * rng.choice([1e-12, 1e-3, 1.0])
            ye = -res.eqlin.marginals + rng.standard_normal(lp.m_eq) * rng.choice([1e-12, 1e-3, 1.0])
            ub = upper_bound(lp, yu, ye)
            assert ub >= opt - 1e-9 * (1 + abs(opt))
            assert Fraction(ub) >= exact_upper_bound(lp, yu, ye)


def test_a_vertex_on_the_threshold_exactly():
    # max x + y s.t. x + y <= 1, box [0, 1]^2 -- optimum exactly 1, and the bound is 1 or just above
    lp = LinearProgram([1.0, 1.0], [[1.0, 1.0]], [1.0], None, None, [0, 0], [1, 1])
    ub = upper_bound(lp, [1.0])
    assert ub >= 1.0 and ub - 1.0 < 1e-12
    assert exact_upper_bound(lp, [1.0]) == 1
    # with 0.1 (not exactly one tenth) the bound still covers the exact optimum of the LP of these floats
    lp = LinearProgram([0.1, 0.1], [[0.1, 0.1]], [0.3], None, None, [0, 0], [3, 3])
    ub = upper_bound(lp, [1.0])
    assert Fraction(ub) >= Fraction(0.3)


def test_farkas_certificate_of_infeasibility():
    # x + y <= 1 and x + y >= 1.5 (as -x - y <= -1.5): y = (1, 1) proves it
    lp = LinearProgram([0.0, 0.0], [[1.0, 1.0], [-1.0, -1.0]], [1.0, -1.5], None, None, [0, 0], [5, 5])
    assert infeasible(lp, [1.0, 1.0])
    assert not infeasible(lp, [1.0, 0.0])
    # the same rows touching: x + y <= 1 and x + y >= 1 is feasible; no multiplier proves otherwise
    lp = LinearProgram([0.0, 0.0], [[1.0, 1.0], [-1.0, -1.0]], [1.0, -1.0], None, None, [0, 0], [5, 5])
    assert not infeasible(lp, [1.0, 1.0])
    assert not infeasible(lp, [1.0, 1.0 + 1e-15])


def test_infinite_box_sides_and_sparse_matrices():
    lp = LinearProgram([1.0, 0.0], [[1.0, 1.0]], [1.0], None, None, [-np.inf, -np.inf], [np.inf, np.inf])
    assert upper_bound(lp, [0.0]) == math.inf
    assert upper_bound(lp, [1.0]) == math.inf          # r = (0, -1): y unbounded below -> -(-inf)
    lp2 = LinearProgram([1.0, 1.0], [[1.0, 1.0]], [1.0], None, None, [-np.inf, -np.inf], [np.inf, np.inf])
    # r = 0 up to its rigorous error: an infinite side cannot be multiplied by an uncertain 0
    assert upper_bound(lp2, [1.0]) == math.inf
    lp3 = LinearProgram([1.0, 0.0], [[1.0, 0.0]], [1.0], None, None, [0, -np.inf], [5, np.inf])
    assert 1.0 <= upper_bound(lp3, [1.0]) < 1 + 1e-12     # column 1 untouched: r exactly 0 there
    rng = np.random.default_rng(3)
    lp = _random_lp(rng)
    sp = LinearProgram(lp.c, sparse.csr_matrix(lp.A_ub), lp.b_ub, sparse.csr_matrix(lp.A_eq), lp.b_eq, lp.lo, lp.hi)
    res = _highs(lp)
    yu, ye = -res.ineqlin.marginals, -res.eqlin.marginals
    assert upper_bound(sp, yu, ye) == pytest.approx(upper_bound(lp, yu, ye), rel=1e-12)
    assert Fraction(upper_bound(sp, yu, ye)) >= exact_upper_bound(sp, yu, ye)


def test_sparse_rows_give_the_same_bound():
    from fairspec.certify.lp import SparseRows
    rng = np.random.default_rng(4)
    lp = _random_lp(rng)
    res = _highs(lp)
    yu, ye = -res.ineqlin.marginals, -res.eqlin.marginals
    r, c = np.nonzero(lp.A_ub)
    re_, ce = np.nonzero(lp.A_eq)
    sp = LinearProgram(lp.c, SparseRows(lp.A_ub.shape, r, c, lp.A_ub[r, c]), lp.b_ub,
                       SparseRows(lp.A_eq.shape, re_, ce, lp.A_eq[re_, ce]), lp.b_eq, lp.lo, lp.hi)
    assert upper_bound(sp, yu, ye) == pytest.approx(upper_bound(lp, yu, ye), rel=1e-12)
    assert Fraction(upper_bound(sp, yu, ye)) >= exact_upper_bound(sp, yu, ye)
    assert np.allclose(sp.A_ub.todense(), lp.A_ub)
