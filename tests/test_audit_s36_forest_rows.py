"""Session 36 (h3): group metrics on data of a forest that adds its trees in the order its threads finish.

A RandomForest with n_jobs != 1 whose leaf sums are not exact in every order (forest_threads) was `unknown` for
every metric on data (review r3: too broad). Now each row is read once in the trees' order (n_jobs = 1) and is
*near* when a class probability lies within E (certify.rounding.reorder_error) of the threshold or two classes
within 2E: a row that is not near gets the same label in every order; the metric is decided over every way of
counting the near rows' decisions (backends/data/forest_rows.py). Brute force below: the forest's own predict
with its trees in EVERY order (sklearn with n_jobs = 1 adds the trees in the order of estimators_, so a permuted
estimators_ is that thread-finish order), and fairspec's verdict on each such one-order forest."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("skops")
pd = pytest.importorskip("pandas")

SPEC = """data d = csv("t.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  g : {A, B} protected
}
model m = sklearn("m.skops")  # fairspec: ignore[FS440]
encode F for m { a : raw  g : code {A = 0, B = 1} }  # fairspec: ignore[FS427]
property sp { statistical_parity(m, groups g) CLAIM }
"""
TIE = [0.05, 0.15, 0.3, 0.7, 0.85, 0.95]    # six trees' P(1): 0.5 +- ulps by the order (predict 1 in 84 of 720)
CELLS = [(a, g) for a in range(4) for g in range(2)]


def _frame(seed=0, n=240, tie_rows=None):
    """a, g and a noisy label y (every (a, g) cell mixed, so a fully grown tree has one leaf per cell)."""
    rng = np.random.default_rng(seed)
    a, g = rng.integers(0, 4, n), rng.integers(0, 2, n)
    y = (rng.random(n) < 0.3 + 0.1 * a).astype(int)
    for (ca, cg), k in (tie_rows or {}).items():     # cell (ca, cg) holds exactly k rows
        idx = np.flatnonzero((a == ca) & (g == cg))
        keep = np.ones(n, dtype=bool)
        keep[idx[k:]] = False
        a, g, y = a[keep], g[keep], y[keep]
        if k > idx.size:
            extra = k - idx.size
            a, g = np.r_[a, [ca] * extra], np.r_[g, [cg] * extra]
            y = np.r_[y, [0, 1] * (extra // 2) + [1] * (extra % 2)]
    return a, g, y


def _forest(a, g, y, leaves, n_jobs=2):
    """Six identical fully grown trees (no bootstrap, every feature), one leaf per (a, g) cell; leaf P(1) of
    tree k in cell c is leaves(c)[k]."""
    from sklearn.ensemble import RandomForestClassifier

    X = np.c_[a, g].astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rf = RandomForestClassifier(n_estimators=6, bootstrap=False, max_features=None, random_state=0,
                                    n_jobs=n_jobs).fit(X, y)
    for k, t in enumerate(rf.estimators_):
        for c in CELLS:
            leaf = int(t.apply(np.array([c], dtype=float))[0])
            p = leaves(c)[k]
            t.tree_.value[leaf, 0, :] = [1.0 - p, p]
    return rf, X


def _orders(rf, X):
    """The forest's predict in every order of its trees: the distinct label vectors, with one order giving each.
    Each order summed as sklearn's _accumulate_prediction does (every tree's predict_proba added in that order,
    then divided by the trees), and each distinct vector confirmed on the library itself (estimators_ permuted,
    one thread: the trees add in the list's order)."""
    import copy

    T = [t.predict_proba(X) for t in rf.estimators_]
    out = {}
    for perm in itertools.permutations(range(len(T))):
        s = np.zeros_like(T[0])
        for i in perm:
            s += T[i]
        s /= len(T)
        out.setdefault(tuple(rf.classes_.take(np.argmax(s, axis=1))), perm)
    for labels, perm in out.items():
        r = copy.copy(rf)
        r.estimators_, r.n_jobs = [rf.estimators_[i] for i in perm], 1
        assert tuple(r.predict(X)) == labels
    return out


def _check(tmp_path, rf, a, g, y, claim):
    import skops.io as sio

    from fairspec import api

    sio.dump(rf, tmp_path / "m.skops")
    pd.DataFrame({"a": a, "g": np.where(g == 1, "B", "A"), "y": y}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(SPEC.replace("CLAIM", claim))
    (p,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    return p


def _truth(tmp_path, rf, X, a, g, y, claim):
    """fairspec's verdict on the forest with its trees in each order giving another label vector (one thread)."""
    import copy

    out = set()
    for perm in _orders(rf, X).values():
        r = copy.copy(rf)
        r.estimators_, r.n_jobs = [rf.estimators_[i] for i in perm], 1
        p = _check(tmp_path, r, a, g, y, claim)
        assert "forest_threads" not in (p.get("details") or {})
        out.add(p["status"])
    return out


def test_no_row_near_is_decided_as_with_one_thread(tmp_path):
    """Leaves of order-dependent sums (0.1, 0.2, 0.7 ...) whose means are far from 1/2: every order predicts
    the same (brute force), and the threaded forest is decided as the same forest on one thread -- it was
    `unknown` (AmbiguousRuntime) before."""
    a, g, y = _frame()
    rf, X = _forest(a, g, y, lambda c: [0.1, 0.2, 0.7, 0.3, 0.2, 0.1] if c[1] == 0 or c[0] < 2
                    else [0.9, 0.8, 0.3, 0.7, 0.8, 0.9])
    assert len(_orders(rf, X)) == 1
    from fairspec.models.forest_threads import order_problem

    assert order_problem(rf) is not None
    for claim in ("<= 0.9", "<= 0.05"):
        p = _check(tmp_path, rf, a, g, y, claim)
        assert p["status"] in ("holds", "violated"), p
        assert p["details"]["forest_threads"]["rows_within_E"] == 0
        assert any("same decisions in every order" in n for n in p["details"]["notes"])
        assert {p["status"]} == _truth(tmp_path, rf, X, a, g, y, claim)


def test_near_rows_that_cannot_change_the_verdict(tmp_path):
    """Six rows of cell (a = 3, B) sum to 1/2 +- ulps (label 1 in some orders, 0 in others: brute force), the
    metric's value far from the claim's threshold in every way of counting them: decided, with a note."""
    a, g, y = _frame(tie_rows={(3, 1): 6})
    rf, X = _forest(a, g, y, lambda c: TIE if c == (3, 1) else [0.9] * 6 if c[0] >= 2 else [0.2] * 6)
    assert len(_orders(rf, X)) == 2
    for claim in ("<= 0.9", "<= 0.02"):
        p = _check(tmp_path, rf, a, g, y, claim)
        ft = p["details"]["forest_threads"]
        # the six rows' (group B, label) cells: 0 .. k positive decisions in each
        assert ft["rows_within_E"] == 6
        assert ft["count_vectors"] == np.prod([1 + int(((a == 3) & (g == 1) & (y == v)).sum()) for v in (0, 1)])
        assert p["status"] == ("holds" if claim == "<= 0.9" else "violated"), p
        assert {p["status"]} == _truth(tmp_path, rf, X, a, g, y, claim)


def test_near_rows_that_change_the_verdict_are_unknown(tmp_path):
    """Every row of cell (a = 3, B) and (a = 2, B) at 1/2 +- ulps, every other row decided 0: in the orders
    predicting 0 no row is positive (statistical_parity = 0 in every resample: `<= 0` holds), in the others group
    B's rate is positive (violated). The claim is `<= 0.2`, not `<= 0`: a rate of 0 on a sample is never proved 0
    (the simultaneous Clopper-Pearson interval, backends/data/rate_bounds). fairspec: unknown, naming the rows
    within E."""
    a, g, y = _frame(n=200)
    rf, X = _forest(a, g, y, lambda c: TIE if c in ((3, 1), (2, 1)) else [0.2] * 6)
    assert _truth(tmp_path, rf, X, a, g, y, "<= 0.2") == {"holds", "violated"}
    p = _check(tmp_path, rf, a, g, y, "<= 0.2")
    near = int(((a >= 2) & (g == 1)).sum())
    assert p["status"] == "unknown", p
    assert f"{near} rows of 'd' lie within E" in p["reason"] and "n_jobs = 2" in p["reason"], p["reason"]


def test_too_many_count_vectors_are_unknown(tmp_path, monkeypatch):
    from fairspec.backends.data import forest_rows

    monkeypatch.setattr(forest_rows, "MAX_COUNTS", 3)
    a, g, y = _frame(tie_rows={(3, 1): 6})
    rf, X = _forest(a, g, y, lambda c: TIE if c == (3, 1) else [0.9] * 6 if c[0] >= 2 else [0.2] * 6)
    p = _check(tmp_path, rf, a, g, y, "<= 0.9")
    assert p["status"] == "unknown" and "6 rows of 'd' lie within E" in p["reason"], p


def test_one_thread_is_decided_as_before(tmp_path):
    """n_jobs = 1 (and None): the forest is one function; the per-row reading is not used (no note), and the
    verdict and value are brute force's on its predict."""
    a, g, y = _frame(tie_rows={(3, 1): 6})
    for n_jobs in (1, None):
        rf, X = _forest(a, g, y, lambda c: TIE if c == (3, 1) else [0.9] * 6 if c[0] >= 2 else [0.2] * 6,
                        n_jobs=n_jobs)
        d = rf.predict(X)
        value = abs(d[g == 0].mean() - d[g == 1].mean())
        p = _check(tmp_path, rf, a, g, y, "<= 0.9")
        assert p["status"] == "holds" and "forest_threads" not in p["details"], p
        assert p["value"] == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("trees,seed", [(3, 0), (5, 1), (6, 2), (20, 3)])
def test_robust_rows_are_decided_alike_in_every_order(trees, seed):
    """certify.rounding.near_rows against brute force on fitted forests (bootstrap, impure leaves): a row it
    calls robust predicts one label in every order of the trees (every permutation; 20 trees: 300 random
    orders); and a row at 1/2 +- ulps is near."""
    import copy

    from sklearn.ensemble import RandomForestClassifier

    from fairspec.certify.rounding import near_rows
    from fairspec.models.forest_rows import reorder_bound

    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, (300, 3)).astype(float)
    y = (X.sum(axis=1) + rng.normal(0, 2, 300) > 4.5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rf = RandomForestClassifier(n_estimators=trees, max_depth=3, random_state=seed, n_jobs=2).fit(X, y)
    r1 = copy.copy(rf)
    r1.n_jobs = 1
    near = near_rows(r1.predict_proba(X), reorder_bound(rf), 0.5)
    perms = (itertools.permutations(range(trees)) if trees <= 6 else
             (tuple(rng.permutation(trees)) for _ in range(300)))
    labels = []
    for perm in perms:
        r = copy.copy(rf)
        r.estimators_, r.n_jobs = [rf.estimators_[i] for i in perm], 1
        labels.append(r.predict(X))
    labels = np.array(labels)
    moved = (labels != labels[0]).any(axis=0)
    assert not (moved & ~near).any()
    assert not near.all()
    # each row against its own bound, a row exact in every order never near (models.forest_rows.recording)
    from fairspec.models.forest_rows import recording, row_sums

    with recording([r1]) as calls:
        P1 = r1.predict_proba(X)
    sums = row_sums(calls, [r1], X.shape[0])
    own = near_rows(P1, sums.errors(), 0.5) & ~sums.exact()
    assert not (moved & ~own).any() and not (own & ~near).any()
    P = np.array([[0.5, 0.5], [0.49999999999999994, 0.5], [0.3, 0.7]])
    assert near_rows(P, reorder_bound(rf), 0.5).tolist() == [True, True, False]


def test_weighted_near_rows_and_scores_stay_unknown(tmp_path):
    """Weighted rows with near rows: unknown naming them (the count vectors do not describe weighted cells);
    without near rows a weighted metric is decided. A metric of scores (calibration_gap): unknown, saying that
    scores are not read per row."""
    import skops.io as sio

    from fairspec import api

    a, g, y = _frame(tie_rows={(3, 1): 6})
    w = np.where(np.arange(a.size) % 3 == 0, 2.0, 1.0)
    spec = SPEC.replace("label = y == 1)", "label = y == 1)").replace(
        "property sp { statistical_parity(m, groups g) CLAIM }",
        "property sp { statistical_parity(m, groups g) <= 0.9  weight = w }\n"
        "property cal { calibration_gap(m, groups g) <= 0.9 }")
    for leaves, near in ((lambda c: TIE if c == (3, 1) else [0.9] * 6 if c[0] >= 2 else [0.2] * 6, True),
                         (lambda c: [0.9, 0.8, 0.3, 0.7, 0.8, 0.9] if c[0] >= 2 else [0.2] * 6, False)):
        rf, _ = _forest(a, g, y, leaves)
        sio.dump(rf, tmp_path / "m.skops")
        pd.DataFrame({"a": a, "g": np.where(g == 1, "B", "A"), "y": y, "w": w}).to_csv(tmp_path / "t.csv",
                                                                                      index=False)
        (tmp_path / "s.fair").write_text(spec)
        got = {p["name"]: p for p in api.check(str(tmp_path / "s.fair")).to_dict()["properties"]}
        if near:
            assert got["sp"]["status"] == "unknown" and "6 rows of 'd' lie within E" in got["sp"]["reason"], got["sp"]
        else:
            assert got["sp"]["status"] == "holds", got["sp"]
        assert got["cal"]["status"] == "unknown" and "not decided from the trees' order" in got["cal"]["reason"]


FLIP_SPEC = """data d = csv("t.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  g : {A, B} protected
}
model m = sklearn("m.skops")  # fairspec: ignore[FS440]
encode F for m { a : raw  g : code {A = 0, B = 1} }  # fairspec: ignore[FS427]
property flips {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  using data
}
"""


@pytest.mark.parametrize("tie", [False, True])
def test_label_flips_on_data(tmp_path, tie):
    """Counterfactual flips on data (`using data`) of a threaded forest: a flip whose two rows are decided by more
    than E (cell a = 1: 0.2 for A, 0.1 / 0.2 / 0.7 ... averaging 0.8 for B) is violated in every order (brute
    force), with a note -- unknown before (AmbiguousRuntime); where the only flips are at a tie (a = 3, B at
    1/2 +- ulps: label 1 in some orders only) it is unknown."""
    import skops.io as sio

    from fairspec import api

    a, g, y = _frame(n=120)
    robust = [0.9, 0.8, 0.3, 0.9, 0.95, 0.95]
    rf, X = _forest(a, g, y, lambda c: (TIE if tie else robust) if c == ((3, 1) if tie else (1, 1)) else [0.2] * 6)
    labels = np.array(list(_orders(rf, X)))
    flips_in = [bool((L[(a == (3 if tie else 1)) & (g == 1)] != L[(a == (3 if tie else 1)) & (g == 0)][0]).any())
                for L in labels]
    sio.dump(rf, tmp_path / "m.skops")
    pd.DataFrame({"a": a, "g": np.where(g == 1, "B", "A"), "y": y}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(FLIP_SPEC)
    (p,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    if tie:
        assert set(flips_in) == {True, False}
        assert p["status"] == "unknown" and "n_jobs = 2" in p["reason"], p
    else:
        assert all(flips_in)
        assert p["status"] == "violated", p
        assert any("same in every order" in n for n in p["details"]["notes"]), p["details"]


PURE_TIE = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0]           # pure leaves: P(1) = 3/6 = 1/2 exactly, in every order
THIRDS = [1 / 3, 0.0, 1 / 3, 0.5, 5 / 6, 1.0]       # P(1) = 1/2 +- ulps by the order (both labels: brute force)


def test_pure_leaves_at_an_exact_tie_are_decided_as_predict(tmp_path):
    """Rows of cells (a = 3, B) and (a = 2, B) whose six trees give 0 / 1 (pure leaves) summing to 3: 1/2
    exactly in every order (certify.row_sums: every partial sum exact), so predict's first class at the tie (0)
    in every order, though the forest has an order problem (its other leaves 0.2). Brute force: one label
    vector over every order; fairspec decides it with no near row (before: every such row was within the
    forest-wide E of the tie, counted both ways: unknown)."""
    a, g, y = _frame(n=200)
    rf, X = _forest(a, g, y, lambda c: PURE_TIE if c in ((3, 1), (2, 1)) else [0.2] * 6)
    from fairspec.models.forest_threads import order_problem

    assert order_problem(rf) is not None
    import copy

    r1 = copy.copy(rf)
    r1.n_jobs = 1
    assert (r1.predict_proba(X)[(a >= 2) & (g == 1), 1] == 0.5).all()
    (labels,) = _orders(rf, X)
    assert not any(labels) and (rf.predict(X) == np.array(labels)).all()
    p = _check(tmp_path, rf, a, g, y, "<= 0.2")
    assert p["status"] == "holds", p
    assert p["details"]["forest_threads"]["rows_within_E"] == 0
    assert {p["status"]} == _truth(tmp_path, rf, X, a, g, y, "<= 0.2")


def test_thirds_at_a_tie_stay_counted_both_ways(tmp_path):
    """The same cells with leaves 1/3, 0, 1/3, 1/2, 5/6, 1 (sum 3 up to ulps, both labels by the order: brute
    force): not exact in every order, their own bound keeps them near: unknown, counted both ways."""
    a, g, y = _frame(n=200)
    rf, X = _forest(a, g, y, lambda c: THIRDS if c in ((3, 1), (2, 1)) else [0.2] * 6)
    assert _truth(tmp_path, rf, X, a, g, y, "<= 0.2") == {"holds", "violated"}
    p = _check(tmp_path, rf, a, g, y, "<= 0.2")
    near = int(((a >= 2) & (g == 1)).sum())
    assert p["status"] == "unknown" and f"{near} rows of 'd' lie within E" in p["reason"], p


def test_row_sums_against_every_order():
    """certify.row_sums on small sets of terms: a row called exact sums to one float in every order (every
    permutation, divided by n as the forest does); every row's bound covers the spread of every order's mean;
    dyadic_exponent is the least k with the term a multiple of 2**-k."""
    from fractions import Fraction

    from fairspec.certify.row_sums import RowSums, dyadic_exponent

    for x, k in ((0.5, 1), (0.75, 2), (3.0, 0), (1024.0, -10), (0.1, 55), (2.0 ** -1074, 1074), (-0.375, 3)):
        assert int(dyadic_exponent(np.array([x]))[0]) == k
        q = Fraction(x) * Fraction(2) ** k
        assert q.denominator == 1 and q.numerator % 2 == 1
    rng = np.random.default_rng(0)
    pools = ([0.0, 1.0], [0.0, 0.25, 0.5, 1.0], [1 / 3, 2 / 3, 0.0, 1.0], [0.1, 0.2, 0.7], [1e16, 1.0, 0.5],
             [2.0 ** 52, 0.5, 1.0])
    seen_exact = seen_not = 0
    for pool in pools:
        T = rng.choice(pool, size=(12, 6))
        sums = RowSums()
        for j in range(6):
            sums.add(T[:, j])
        ex, E = sums.exact(), sums.errors()
        for i in range(T.shape[0]):
            means = set()
            for perm in itertools.permutations(T[i]):
                s = 0.0                     # Python floats: IEEE binary64, numpy's arithmetic
                for v in perm:
                    s += float(v)
                means.add(s / 6)
            if ex[i]:
                seen_exact += 1
                assert len(means) == 1 and E[i] == 0
            else:
                seen_not += 1
                assert max(means) - min(means) <= E[i]
    assert seen_exact and seen_not


def test_label_flip_at_an_exact_tie_of_pure_leaves(tmp_path):
    """A flip (using data) whose B row sits at 1/2 exactly from pure leaves (0 / 1: predict's class 0 in every
    order) and whose A row is decided 1 by a wide margin (0.9): the flip is in every order (brute force), so
    violated with the note -- unknown before (the B row was within the forest-wide E of the tie)."""
    import skops.io as sio

    from fairspec import api

    a, g, y = _frame(n=120)
    rf, X = _forest(a, g, y, lambda c: PURE_TIE if c == (3, 1) else [0.9] * 6 if c == (3, 0) else [0.2] * 6)
    for L in _orders(rf, X):
        L = np.array(L)
        assert (L[(a == 3) & (g == 1)] == 0).all() and (L[(a == 3) & (g == 0)] == 1).all()
    sio.dump(rf, tmp_path / "m.skops")
    pd.DataFrame({"a": a, "g": np.where(g == 1, "B", "A"), "y": y}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(FLIP_SPEC)
    (p,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    assert p["status"] == "violated", p
    assert any("same in every order" in n for n in p["details"]["notes"]), p["details"]


def test_recording_restores_the_trees():
    """models.forest_rows.recording: the trees' outputs as the forest's predict_proba calls them, once each even
    when two forests share their trees, and the trees left as they were (no instance attribute)."""
    import copy

    from fairspec.models.forest_rows import recording, row_sums

    a, g, y = _frame(n=60)
    rf, X = _forest(a, g, y, lambda c: THIRDS, n_jobs=1)
    twin = copy.copy(rf)                          # the same tree objects
    with recording([rf, twin]) as calls:
        P = rf.predict_proba(X)
    assert [c[1] for c in calls] == list(range(6)) and {c[0] for c in calls} == {0}
    assert all("predict_proba" not in vars(t) for t in rf.estimators_)
    sums = row_sums(calls, [rf, twin], X.shape[0])
    assert sums is not None and not sums.exact().any() and (sums.errors() > 0).all()
    assert np.array_equal(P, rf.predict_proba(X))


def test_count_vectors_go_through_the_metrics_refusals(tmp_path, monkeypatch):
    """Review r3: group B's only positive decisions are six rows at 1/2 +- ulps (the trees' own order predicts 1).
    In the orders where they are 0, B's PPV is 0/0 and fairspec's verdict on that one-order forest is unknown
    (undefined_reason: fairlearn's zero_division = 0 makes the difference 0.98 > 0.3); every count vector was
    re-decided without that refusal and the threaded forest said holds. Now each count vector goes through the
    metric's own refusals: unknown, as one of the orders is. The simultaneous Clopper-Pearson interval (h7, which
    landed beside this) happens to make the small counts unknown here too; it is switched off so the test is about
    the refusals alone (a metric it does not apply to)."""
    from fairspec.backends.data import metrics

    monkeypatch.setattr(metrics, "_with_box", lambda prop, c, eligible, lo, hi, details: (lo, hi))
    def in_order(vals):
        s = np.zeros((1, 2))
        for p in vals:
            s += np.array([[1.0 - p, p]])
        return s / len(vals)

    perm1 = next(p for p in itertools.permutations(TIE) if in_order(p)[0, 1] > in_order(p)[0, 0])
    rng = np.random.default_rng(5)
    a, g = rng.integers(0, 4, 400), rng.integers(0, 2, 400)
    keep = ~((a == 3) & (g == 1))
    a, g = np.r_[a[keep], [3] * 6], np.r_[g[keep], [1] * 6]
    y = np.where((g == 0) & (a >= 2), (rng.random(a.size) < 0.97).astype(int), (rng.random(a.size) < 0.4).astype(int))
    y[-6:] = 1
    rf, X = _forest(a, g, y, lambda c: list(perm1) if c == (3, 1) else [0.9] * 6 if (c[0] >= 2 and c[1] == 0)
                    else [0.2] * 6)
    global SPEC
    spec = SPEC
    try:
        SPEC = spec.replace("statistical_parity", "predictive_parity_difference")
        truth = _truth(tmp_path, rf, X, a, g, y, "<= 0.3")
        assert "unknown" in truth, truth
        p = _check(tmp_path, rf, a, g, y, "<= 0.3")
    finally:
        SPEC = spec
    assert p["status"] == "unknown", p
