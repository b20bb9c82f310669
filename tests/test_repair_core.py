"""FairRepair's solver core: hypercubes, the LP, the exact choice of flips, refinement, forests,
the patched trees; cross-checked against brute force on small trees."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairspec.backends.repair.core import Problem, RepairUnsupported, model_kind, repair
from fairspec.backends.repair.hypercubes import contains, lex_points, make_cells, subset_boxes
from fairspec.backends.repair.optimise import Options, choose, minimal_change, ratio_ok

SEX_BOXES = [{1: (-np.inf, 0.5)}, {1: (0.5, np.inf)}]


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n)
    a = rng.normal(size=n)
    b = rng.integers(0, 5, n)
    X = np.column_stack([1 - sex, sex, a, b]).astype(float)
    y = ((a + 0.9 * sex + 0.2 * b + rng.normal(size=n) * 0.5) > 1).astype(int)
    return X, y, sex


def _tree(depth=2, **kw):
    from sklearn.tree import DecisionTreeClassifier

    X, y, sex = _data(**kw)
    return DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y), X, sex


def test_subset_boxes_hold_exactly_the_chosen_points():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.integers(0, 3, 60), rng.integers(0, 2, 60), rng.normal(size=60).round(1)]).astype(float)
    P, counts, inv = lex_points(X)
    for _ in range(200):
        mask = rng.random(len(P)) < rng.random()
        inside = np.zeros(len(P), dtype=bool)
        for b in subset_boxes(P, mask):
            hit = contains(b, P)
            assert not (inside & hit).any()   # disjoint
            inside |= hit
        assert inside.tolist() == mask.tolist()


def test_full_refinement_agrees_with_brute_force_over_point_subsets():
    """Cells whose duplicates make only some counts reachable: the fewest changed cells found by
    the optimiser equals the brute-force minimum over every subset of every cell's distinct points."""
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(7)
    for trial in range(6):
        n = 40
        sex = rng.integers(0, 2, n)
        v = rng.integers(0, 3, n).astype(float)
        X = np.column_stack([1 - sex, sex, v])
        est = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, sex)   # one leaf per group
        c, alpha = 0.6 + 0.1 * (trial % 3), 1.0 + 0.5 * (trial // 3)
        out = repair(est, Problem(X, sex, ["F", "M"], SEX_BOXES, c=c, alpha=alpha))
        dec = est.predict(X)
        sizes = np.bincount(sex)
        base = np.bincount(sex, weights=dec)
        lp = minimal_change(base / sizes, sizes, c)
        budget = int(np.floor(alpha * lp.minimal * n + 1e-9))
        # brute force: each group's cell flips any subset of its distinct points
        best = None
        per = []
        for g in (0, 1):
            P, counts, _ = lex_points(X[sex == g])
            per.append(counts)
        for m0 in itertools.product((0, 1), repeat=len(per[0])):
            for m1 in itertools.product((0, 1), repeat=len(per[1])):
                k = [int(np.dot(m0, per[0])), int(np.dot(m1, per[1]))]
                passing = base.copy()
                for g in (0, 1):
                    passing[g] += k[g] if dec[sex == g][0] == 0 else -k[g]
                if sum(k) <= budget and ratio_ok(passing, sizes, c, False):
                    cost = int(k[0] > 0) + int(k[1] > 0)
                    best = cost if best is None else min(best, cost)
        if best is None:
            assert out.status in ("unreachable", "met")
        elif best == 0:
            assert out.status == "met"
        else:
            assert out.status == "repaired" and out.paths_flipped + out.paths_refined == best
            assert np.array_equal(out.estimator.predict(X), out.decisions)


def test_lp_minimal_is_a_lower_bound_and_meets_the_ratio():
    rates, sizes = np.array([0.2, 1.0]), np.array([10, 10])
    lp = minimal_change(rates, sizes, 0.9)
    assert lp.minimal == pytest.approx(0.35)
    assert lp.rates.min() / lp.rates.max() >= 0.9 - 1e-9


def _brute_force(cells, base, sizes, c, budget):
    """Fewest flipped cells meeting every ratio within the budget, by enumerating every assignment."""
    best = None
    for bits in itertools.product((0, 1), repeat=len(cells)):
        f = np.array(bits, dtype=bool)
        passing = base.astype(float).copy()
        sign = np.where(cells.decision == 1, -1, 1)
        np.add.at(passing, cells.group[f], (sign * cells.size)[f])
        if cells.size[f].sum() <= budget and ratio_ok(passing, sizes, c, False):
            best = f.sum() if best is None else min(best, f.sum())
    return best


@pytest.mark.parametrize("c,alpha", [(0.7, 1.05), (0.8, 1.2), (0.9, 1.05), (0.9, 2.0), (0.95, 1.5)])
@pytest.mark.parametrize("solver", ["highs", "scip", "z3", "rc2"])
def test_optimiser_agrees_with_brute_force_on_small_trees(c, alpha, solver):
    est, X, sex = _tree(depth=2, n=400)
    dec = est.predict(X)
    cells = make_cells(est.apply(X.astype(np.float32)).reshape(-1, 1), sex, dec)
    assert len(cells) <= 10
    sizes = np.bincount(sex).astype(np.int64)
    base = np.bincount(sex, weights=dec).astype(np.int64)
    lp = minimal_change(base / sizes, sizes, c)
    budget = int(np.floor(alpha * lp.minimal * len(dec) + 1e-9))
    sign = np.where(cells.decision == 1, -1, 1)
    opts = Options(np.arange(len(cells)), cells.group, sign * cells.size, cells.size.copy(), np.zeros(len(cells), int))
    want = _brute_force(cells, base, sizes, c, budget)
    got = choose(opts, base, sizes, c, False, budget, solver=solver)
    if want is None:
        assert got.status == "infeasible"
    else:
        assert got.status == "optimal" and len(got.chosen) == want
        assert cells.size[opts.cell[got.chosen]].sum() >= lp.minimal * len(dec) - 1e-6   # LP never above achieved


@pytest.mark.parametrize("depth", [3, 6])
def test_tree_repair_meets_goal_within_bound(depth):
    est, X, sex = _tree(depth=depth, n=1500)
    pb = Problem(X, sex, ["F", "M"], SEX_BOXES, c=0.9, alpha=1.2)
    out = repair(est, pb)
    assert out.status == "repaired"
    assert out.after.min() / out.after.max() >= 0.9
    assert out.minimal <= out.achieved <= 1.2 * out.minimal + 1e-12
    assert type(out.estimator) is type(est)
    got = out.estimator.predict(X)
    assert np.array_equal(got, out.decisions)
    assert (got != est.predict(X)).sum() == out.rows_changed


def test_refinement_when_flips_alone_cannot():
    # one leaf per group: flipping a whole cell overshoots, so the goal needs a sub-hypercube
    from sklearn.tree import DecisionTreeClassifier

    X, y, sex = _data(n=800)
    Xr = X[:, :3]
    est = DecisionTreeClassifier(max_depth=1, random_state=0).fit(Xr, sex)   # decides by sex only
    out = repair(est, Problem(Xr, sex, ["F", "M"], SEX_BOXES, c=0.8, alpha=1.05))
    assert out.status == "repaired" and out.stage == "refinement" and out.paths_refined >= 1
    assert out.after.min() / out.after.max() >= 0.8
    assert out.achieved <= 1.05 * out.minimal + 1e-12
    assert np.array_equal(out.estimator.predict(Xr), out.decisions)


def test_goal_already_met_changes_nothing():
    est, X, sex = _tree(depth=3)
    pb = Problem(X, sex, ["F", "M"], SEX_BOXES, c=0.05, alpha=1.2)
    out = repair(est, pb)
    assert out.status == "met" and out.estimator is None


def test_unreachable_with_tight_alpha_says_why():
    # ten rows per group, 2 vs 10 passing: c = 0.85 needs 6.5 rows on the LP, 7 in integers
    from sklearn.tree import DecisionTreeClassifier

    sex = np.repeat([0, 1], 10)
    X = np.column_stack([1 - sex, sex, np.arange(20) % 10]).astype(float)
    y = np.r_[np.arange(10) < 2, np.ones(10)].astype(int)
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    out = repair(est, Problem(X, sex, ["F", "M"], SEX_BOXES, c=0.85, alpha=1.05))
    assert out.status == "unreachable"
    assert out.minimal == pytest.approx(0.325)
    assert out.needed == pytest.approx(0.35)
    assert "0.85" in out.reason and out.best_ratio < 0.85
    out = repair(est, Problem(X, sex, ["F", "M"], SEX_BOXES, c=0.85, alpha=1.1))
    assert out.status == "repaired" and out.rows_changed == 7


def test_forest_repair_flips_the_averaged_vote():
    from sklearn.ensemble import RandomForestClassifier

    X, y, sex = _data(n=1500)
    est = RandomForestClassifier(n_estimators=7, max_depth=5, random_state=0).fit(X, y)
    out = repair(est, Problem(X, sex, ["F", "M"], SEX_BOXES, c=0.9, alpha=1.2))
    assert out.status == "repaired"
    assert type(out.estimator) is RandomForestClassifier and len(out.estimator.estimators_) == 7
    assert np.array_equal(out.estimator.predict(X), out.decisions)
    assert out.after.min() / out.after.max() >= 0.9
    assert out.achieved <= 1.2 * out.minimal + 1e-12


def test_compound_groups():
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(3)
    n = 2000
    sex, race = rng.integers(0, 2, n), rng.integers(0, 3, n)
    a = rng.normal(size=n)
    X = np.column_stack([sex, race, a]).astype(float)      # raw codes
    y = (a + 0.7 * sex + 0.3 * race + rng.normal(size=n) * 0.3 > 1).astype(int)
    est = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y)
    g = sex * 3 + race
    boxes = [{0: (lo_s, hi_s), 1: (lo_r, hi_r)} for (lo_s, hi_s) in ((-np.inf, 0.5), (0.5, np.inf))
             for (lo_r, hi_r) in ((-np.inf, 0.5), (0.5, 1.5), (1.5, np.inf))]
    out = repair(est, Problem(X, g, [f"{s}x{r}" for s in "FM" for r in "ABC"], boxes, c=0.8, alpha=1.2))
    assert out.status == "repaired"
    rates = out.after
    assert rates.min() / rates.max() >= 0.8
    assert np.array_equal(out.estimator.predict(X), out.decisions)


def test_patched_estimator_survives_skops(tmp_path):
    from fairspec.models.sklearn_model import import_skops_io

    sio = import_skops_io()

    est, X, sex = _tree(depth=4, n=1000)
    out = repair(est, Problem(X, sex, ["F", "M"], SEX_BOXES, c=0.9, alpha=1.2))
    p = tmp_path / "fixed.skops"
    sio.dump(out.estimator, p)
    back = sio.load(p, trusted=sio.get_untrusted_types(file=p))
    assert np.array_equal(back.predict(X), out.decisions)


def test_unsupported_models_are_named():
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.tree import DecisionTreeRegressor

    X, y, _ = _data(n=100)
    for est in (DecisionTreeRegressor().fit(X, y), GradientBoostingClassifier(n_estimators=2).fit(X, y)):
        with pytest.raises(RepairUnsupported, match="DecisionTreeClassifier and RandomForestClassifier"):
            model_kind(est)


def test_forest_unreachable_within_the_bound_says_why():
    # ten rows per group, 2 vs 10 passing: c = 0.85 needs 7 rows, alpha 1.05 x 6.5 allows 6
    from sklearn.ensemble import RandomForestClassifier

    sex = np.repeat([0, 1], 10)
    X = np.column_stack([1 - sex, sex, np.arange(20) % 10]).astype(float)
    y = np.r_[np.arange(10) < 2, np.ones(10)].astype(int)
    est = RandomForestClassifier(n_estimators=5, bootstrap=False, random_state=0).fit(X, y)
    assert (est.predict(X) == y).all()
    out = repair(est, Problem(X, sex, ["F", "M"], SEX_BOXES, c=0.85, alpha=1.05))
    assert out.status == "unreachable" and out.estimator is None
    assert out.needed == pytest.approx(0.35) and out.best_ratio < 0.85
    assert "no repair changing at most alpha x minimal" in out.reason and "0.85" in out.reason


def _many_options(seed):
    """Forest-like flip options: many cells of one or two rows, a few large ones, three groups."""
    rng = np.random.default_rng(seed)
    C = 60
    group = rng.integers(0, 3, C)
    size = np.where(rng.random(C) < 0.8, rng.integers(1, 3, C), rng.integers(3, 9, C))
    dec = rng.integers(0, 2, C)
    sizes = np.bincount(group, weights=size, minlength=3).astype(np.int64) + 5
    base = np.bincount(group, weights=size * dec, minlength=3).astype(np.int64) + np.array([0, 5, 2])
    sign = np.where(dec == 1, -1, 1)
    return Options(np.arange(C), group, sign * size, size.copy(), np.zeros(C, int)), base, sizes


@pytest.mark.parametrize("seed", range(6))
def test_option_classes_agree_with_the_milp_over_every_option(seed):
    """The aggregated integer program (one count per class of interchangeable options) has the
    optimum of the MILP with one binary per option (SCIP, not aggregated)."""
    opts, base, sizes = _many_options(seed)
    lp = minimal_change(base / sizes, sizes, 0.8)
    budget = int(np.floor(1.3 * lp.minimal * sizes.sum() + 1e-9))
    a = choose(opts, base, sizes, 0.8, False, budget, solver="highs")
    b = choose(opts, base, sizes, 0.8, False, budget, solver="scip")
    assert a.status == b.status
    if a.status == "optimal":
        assert len(a.chosen) == len(b.chosen)


@pytest.mark.parametrize("seed", range(6))
def test_greedy_start_meets_the_hard_constraints(seed):
    from fairspec.backends.repair.optimise import greedy_counts, option_classes

    opts, base, sizes = _many_options(seed)
    keys, cls, counts = option_classes(opts)
    assert np.array_equal(keys[cls], np.column_stack([opts.group, opts.delta, opts.rows]))
    lp = minimal_change(base / sizes, sizes, 0.8)
    budget = int(np.floor(1.5 * lp.minimal * sizes.sum() + 1e-9))
    k = greedy_counts(keys, counts, base, sizes, 0.8, False, budget)
    if k is not None:
        assert (0 <= k).all() and (k <= counts).all()
        passing = base + np.bincount(keys[:, 0], weights=keys[:, 1] * k, minlength=3)
        assert ratio_ok(passing, sizes, 0.8, False) and (keys[:, 2] * k).sum() <= budget


def _no_search(monkeypatch):
    """HiGHS stopped before it finds anything (what a time-out looks like, without timing)."""
    import highspy

    monkeypatch.setattr(highspy.Highs, "run", lambda self: None)


def test_solver_stopped_keeps_the_greedy_repair_not_proven_minimal(monkeypatch):
    from sklearn.ensemble import RandomForestClassifier

    X, y, sex = _data(n=1500)
    est = RandomForestClassifier(n_estimators=7, max_depth=5, random_state=0).fit(X, y)
    _no_search(monkeypatch)
    out = repair(est, Problem(X, sex, ["F", "M"], SEX_BOXES, c=0.9, alpha=1.2))
    assert out.status == "repaired" and not out.optimal and out.greedy
    assert np.array_equal(out.estimator.predict(X), out.decisions)
    assert out.after.min() / out.after.max() >= 0.9
    assert out.achieved <= 1.2 * out.minimal + 1e-12


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("minimise_rows", [False, True])
def test_counts_relaxation_agrees_with_brute_force_over_every_cell(seed, minimise_rows):
    """The refinement relaxation, solved over classes of interchangeable cells, has the optimum of
    enumerating every count k_c in [0, n_c] of every cell (cells repeat, as a forest's do)."""
    from fairspec.backends.repair.optimise import choose_counts

    rng = np.random.default_rng(seed)
    group = np.array([0, 0, 1, 0, 0, 1])                       # cells 3..5 repeat cells 0..2
    size = rng.integers(1, 4, 6)
    size[3:] = size[:3]
    dec = np.array([0, 0, 1, 0, 0, 1]) ^ (rng.random(6) < 0.2)
    dec[3:] = dec[:3]
    sign = np.where(dec == 1, -1, 1)
    sizes = np.bincount(group, weights=size, minlength=2).astype(np.int64) + 3
    base = np.bincount(group, weights=size * dec, minlength=2).astype(np.int64) + np.array([1, 2])
    c, budget = 0.7, int(rng.integers(2, 9))
    best = None
    for ks in itertools.product(*[range(n + 1) for n in size]):
        ks = np.array(ks)
        passing = base + np.bincount(group, weights=sign * ks, minlength=2)
        if ks.sum() <= budget and ratio_ok(passing, sizes, c, False):
            val = int(ks.sum()) if minimise_rows else int((ks > 0).sum())
            best = val if best is None else min(best, val)
    st, k, _ = choose_counts(group, sign, size, base, sizes, c, False, budget, minimise_rows=minimise_rows)
    if best is None:
        assert st == "infeasible"
    else:
        assert st == "optimal" and (0 <= k).all() and (k <= size).all()
        passing = base + np.bincount(group, weights=sign * k, minlength=2)
        assert k.sum() <= budget and ratio_ok(passing, sizes, c, False)
        assert (int(k.sum()) if minimise_rows else int((k > 0).sum())) == best


def test_the_refinement_says_it_ran_on_highs_whatever_the_engine():
    """`engine` chooses the solver of the flip stage only (README: refinement runs on HiGHS, through
    scipy): a repair found by the refinement names both, never the engine alone."""
    from sklearn.tree import DecisionTreeClassifier

    X, y, sex = _data(n=800)
    Xr = X[:, :3]
    est = DecisionTreeClassifier(max_depth=1, random_state=0).fit(Xr, sex)   # decides by sex only
    out = repair(est, Problem(Xr, sex, ["F", "M"], SEX_BOXES, c=0.8, alpha=1.05, solver="scip"))
    assert out.status == "repaired" and out.stage == "refinement", (out.status, out.stage)
    assert out.solver == "scip (flips: infeasible), highs (refinement)", out.solver
    out = repair(est, Problem(Xr, sex, ["F", "M"], SEX_BOXES, c=0.8, alpha=1.05))
    assert out.solver == "highs", out.solver
