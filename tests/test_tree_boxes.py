"""The certified branch and bound over leaf boxes (fairspec/certify/treeboxes.py,
fairspec/kinds/tree_boxes.py) against brute force: the small tree models of test_tree_outputs.py
decided with FAIRSPEC_ENUMERATE_PAIRS=0 (no enumeration, as on a domain over the cut), plus random
forests and boosted models biased toward ties (votes that tie, leaf values that sum to exact
ties, thresholds on grid points, a relaxed feature)."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("skops")

import test_tree_outputs as T  # noqa: E402  (the brute-force helpers and models)


@pytest.fixture(autouse=True)
def boxes_only(monkeypatch):
    """No enumeration, and a count of the branch-and-bound runs (each test must use it)."""
    import fairspec.certify.treeboxes as TB

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    calls = []
    real = TB.decide_pairs

    def spy(*a, **k):
        calls.append(k.get("post"))
        return real(*a, **k)

    monkeypatch.setattr(TB, "decide_pairs", spy)
    yield calls
    assert calls, "the branch and bound was not used"


@pytest.mark.parametrize("k", range(3), ids=["tree", "forest", "gboost"])
def test_sklearn_multiclass(tmp_path, k):
    T.test_sklearn_multiclass_against_brute_force(tmp_path, k)


def test_forest_vote_tie(tmp_path):
    T.test_a_forest_vote_tie_is_the_first_class(tmp_path)


@pytest.mark.parametrize("name", ["DecisionTreeRegressor", "RandomForestRegressor", "GradientBoostingRegressor"])
def test_sklearn_regression(tmp_path, name):
    T.test_sklearn_regression_against_brute_force(tmp_path, name)


def test_xgboost(tmp_path):
    T.test_xgboost_multiclass_and_regression(tmp_path)




# ---------------------------------------------------------------------------------------------
# random models over a wider grid, biased toward ties
# ---------------------------------------------------------------------------------------------

FEATS2 = "  g : int in [0, 2] protected\n  a : int in [0, 7]\n  b : int in [0, 6]"
ENC2 = "  g : raw\n  a : raw\n  b : raw"
GRID2 = np.array(list(itertools.product(range(3), range(8), range(7))), dtype=float)


def _spec(tmp_path, decl: str, body: str) -> str:
    p = tmp_path / "s.fair"
    p.write_text(f"features F {{\n{FEATS2}\n}}\n{decl}\nencode F for m {{\n{ENC2}\n}}\n" + body)
    return str(p)


def _prop2(name, ensure, mode=None, relaxed=None):
    m = f"  mode = {mode}\n" if mode else ""
    if relaxed is None:
        pre = "  require x.* == x'.* except {g}\n"
    else:
        pre = f"  require x.* == x'.* except {{g}}\n  require |x.a - x'.a| {relaxed}\n"
    return f"property {name} {{\n  forall x, x' : F\n{pre}  ensure {ensure}\n{m}}}\n"


def _pairs2(relaxed=None):
    for i, x in enumerate(GRID2):
        for j, y in enumerate(GRID2):
            if x[0] == y[0] or x[2] != y[2]:
                continue
            if relaxed is None:
                if x[1] != y[1]:
                    continue
            else:
                op, t = relaxed.split()
                d = abs(x[1] - y[1])
                if not (d <= float(t) if op == "<=" else d < float(t)):
                    continue
            yield i, j


def _brute2(out, op, eps, relaxed=None):
    t = Fraction(eps)
    worst, bad = None, False
    for i, j in _pairs2(relaxed):
        d = Fraction(float(out[i])) - Fraction(float(out[j]))
        worst = d if worst is None else max(worst, d)
        bad |= not (d <= t if op == "<=" else d < t)
    return bad, worst


def _data2(seed, k=3):
    rng = np.random.default_rng(seed)
    X = GRID2[rng.integers(0, len(GRID2), 160)]
    y = ((X[:, 0] * (seed % 2) + X[:, 1] // 2 + rng.integers(0, 2, len(X))) % k).astype(int)
    yr = np.round(4 * (0.5 * X[:, 0] + 0.25 * X[:, 1] - 0.25 * X[:, 2] + rng.normal(0, 0.3, len(X)))) / 4
    return X, y, yr


@pytest.mark.parametrize("seed", range(4))
def test_random_forest_classifier_ties(tmp_path, seed):
    """Forests of an even number of trees (votes tie at 1/2, predict takes the first class), a
    relaxed feature, strict and non-strict tolerances on the exact vote fractions."""
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    X, y, _ = _data2(seed)
    est = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=seed, bootstrap=seed % 2 == 0).fit(X, y)
    sio.dump(est, tmp_path / "m.skops")
    cls = np.searchsorted(est.classes_, est.predict(GRID2))
    P = est.predict_proba(GRID2)
    body = (_prop2("same", "class(m(x)) == class(m(x'))")
            + _prop2("same_relaxed", "class(m(x)) == class(m(x'))", relaxed="<= 1")
            + _prop2("p_le", "|prob(m(x), 1) - prob(m(x'), 1)| <= 0.25")
            + _prop2("p_lt", "|prob(m(x), 1) - prob(m(x'), 1)| < 0.25")
            + _prop2("every", "forall c: |prob(m(x), c) - prob(m(x'), c)| <= 0.5", relaxed="< 2")
            + _prop2("p_max", "|prob(m(x), 2) - prob(m(x'), 2)| <= 0.25", mode="maximize", relaxed="<= 1"))
    v = T._verdicts(_spec(tmp_path, 'model m = sklearn("m.skops")', body))
    T._check(v["same"], any(cls[i] != cls[j] for i, j in _pairs2()))
    T._check(v["same_relaxed"], any(cls[i] != cls[j] for i, j in _pairs2("<= 1")))
    T._check(v["p_le"], _brute2(P[:, 1], "<=", "0.25")[0])
    T._check(v["p_lt"], _brute2(P[:, 1], "<", "0.25")[0])
    T._check(v["every"], any(_brute2(P[:, c], "<=", "0.5", "< 2")[0] for c in range(3)))
    bad, worst = _brute2(P[:, 2], "<=", "0.25", "<= 1")
    T._check(v["p_max"], bad, worst)
    assert v["p_max"].bound[0] == v["p_max"].bound[1] or Fraction(v["p_max"].bound[1]) - Fraction(
        v["p_max"].bound[0]) < Fraction(1, 10 ** 12)


@pytest.mark.parametrize("seed", range(3))
def test_regressors_exact_ties(tmp_path, seed):
    """Leaf values on a grid of quarters: differences tie with eps exactly; maximize is exact."""
    import skops.io as sio
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    X, _, yr = _data2(seed)
    est = [RandomForestRegressor(n_estimators=2, max_depth=3, random_state=seed, bootstrap=False,
                                 max_features=2),
           GradientBoostingRegressor(n_estimators=3, max_depth=2, learning_rate=0.5, random_state=seed),
           RandomForestRegressor(n_estimators=4, max_depth=2, random_state=seed)][seed].fit(X, yr + X[:, 0])
    sio.dump(est, tmp_path / "m.skops")
    Vv = est.predict(GRID2)
    _, worst = _brute2(Vv, "<=", "0")
    tie = repr(float(worst))
    body = (_prop2("v_tie", f"|value(m(x)) - value(m(x'))| <= {tie}")
            + _prop2("v_tie_strict", f"|value(m(x)) - value(m(x'))| < {tie}")
            + _prop2("v_max", "|value(m(x)) - value(m(x'))| <= 0.5", mode="maximize")
            + _prop2("v_rel", "|value(m(x)) - value(m(x'))| <= 1.5", relaxed="<= 2"))
    v = T._verdicts(_spec(tmp_path, 'model m = sklearn("m.skops")', body))
    T._check(v["v_tie"], _brute2(Vv, "<=", tie)[0])
    T._check(v["v_tie_strict"], _brute2(Vv, "<", tie)[0])
    bad, worst = _brute2(Vv, "<=", "0.5")
    T._check(v["v_max"], bad, worst)
    T._check(v["v_rel"], _brute2(Vv, "<=", "1.5", "<= 2")[0])


def test_boosted_multiclass_and_regression(tmp_path):
    """XGBoost multi:softprob and reg:squarederror (float32 sums), LightGBM multiclass and
    regression (float64), HistGradientBoosting multiclass: class, prob and value against brute force."""
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y, yr = _data2(1)
    yr = yr + X[:, 0]
    models = []
    b = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1, "eta": 0.5},
                  xgb.DMatrix(X, label=y), 3)
    b.save_model(str(tmp_path / "x.json"))
    P = np.asarray(b.predict(xgb.DMatrix(GRID2)), dtype=np.float64)
    models.append(('model m = xgboost("x.json")', np.argmax(P, axis=1), P, None))
    r = xgb.train({"objective": "reg:squarederror", "max_depth": 2, "nthread": 1}, xgb.DMatrix(X, label=yr), 3)
    r.save_model(str(tmp_path / "xr.json"))
    models.append(('model m = xgboost("xr.json")', None, None, np.asarray(r.predict(xgb.DMatrix(GRID2)), np.float64)))
    lb = lgb.train({"objective": "multiclass", "num_class": 3, "num_leaves": 4, "min_data_in_leaf": 3, "verbose": -1,
                    "num_threads": 1, "min_data_in_bin": 1}, lgb.Dataset(X, label=y), 3)
    lb.save_model(str(tmp_path / "l.txt"))
    P = np.asarray(lb.predict(GRID2), dtype=np.float64)
    models.append(('model m = lightgbm("l.txt")', np.argmax(P, axis=1), P, None))
    lr = lgb.train({"objective": "regression", "num_leaves": 4, "min_data_in_leaf": 3, "verbose": -1, "num_threads": 1,
                    "min_data_in_bin": 1}, lgb.Dataset(X, label=yr), 3)
    lr.save_model(str(tmp_path / "lr.txt"))
    models.append(('model m = lightgbm("lr.txt")', None, None, np.asarray(lr.predict(GRID2), np.float64)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = HistGradientBoostingClassifier(max_iter=3, max_depth=2, random_state=0).fit(X, y)
    sio.dump(h, tmp_path / "h.skops")
    models.append(('model m = sklearn("h.skops")', np.searchsorted(h.classes_, h.predict(GRID2)),
                   h.predict_proba(GRID2), None))
    for decl, cls, P, Vv in models:
        if cls is not None:
            body = (_prop2("same", "class(m(x)) == class(m(x'))")
                    + _prop2("p_max", "|prob(m(x), 1) - prob(m(x'), 1)| <= 0.05", mode="maximize")
                    + _prop2("every", "forall c: |prob(m(x), c) - prob(m(x'), c)| < 0.3", relaxed="<= 1"))
            v = T._verdicts(_spec(tmp_path, decl, body))
            T._check(v["same"], any(cls[i] != cls[j] for i, j in _pairs2()))
            bad, worst = _brute2(P[:, 1], "<=", "0.05")
            T._check(v["p_max"], bad, worst)
            T._check(v["every"], any(_brute2(P[:, c], "<", "0.3", "<= 1")[0] for c in range(3)))
        else:
            _, worst = _brute2(Vv, "<=", "0")
            body = (_prop2("v_max", "|value(m(x)) - value(m(x'))| <= 0.5", mode="maximize")
                    + _prop2("v_tie", f"|value(m(x)) - value(m(x'))| <= {float(worst)!r}"))
            v = T._verdicts(_spec(tmp_path, decl, body))
            bad, w2 = _brute2(Vv, "<=", "0.5")
            T._check(v["v_max"], bad, w2)
            T._check(v["v_tie"], _brute2(Vv, "<=", repr(float(worst)))[0])


def test_class_logit_of_boosted_multiclass(tmp_path):
    """logit(m(x), c) of XGBoost multi:softprob (float32 margins) and scikit-learn's multiclass
    GradientBoosting (decision_function) against brute force, with a tolerance at the exact largest
    difference (a tie) and maximize."""
    xgb = pytest.importorskip("xgboost")
    import skops.io as sio
    from sklearn.ensemble import GradientBoostingClassifier

    X, y, _ = _data2(2)
    b = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1, "eta": 0.5},
                  xgb.DMatrix(X, label=y), 3)
    b.save_model(str(tmp_path / "x.json"))
    Zx = np.asarray(b.predict(xgb.DMatrix(GRID2), output_margin=True), dtype=np.float64).reshape(len(GRID2), -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    sio.dump(g, tmp_path / "g.skops")
    Zg = np.asarray(g.decision_function(GRID2), dtype=np.float64)
    for decl, Z in (('model m = xgboost("x.json")', Zx), ('model m = sklearn("g.skops")', Zg)):
        _, worst = _brute2(Z[:, 0], "<=", "0")
        tie = repr(float(worst))
        body = (_prop2("l_tie", f"|logit(m(x), 0) - logit(m(x'), 0)| <= {tie}")
                + _prop2("l_tie_strict", f"|logit(m(x), 0) - logit(m(x'), 0)| < {tie}")
                + _prop2("l_max", "|logit(m(x), 2) - logit(m(x'), 2)| <= 0.3", mode="maximize"))
        v = T._verdicts(_spec(tmp_path, decl, body))
        T._check(v["l_tie"], _brute2(Z[:, 0], "<=", tie)[0])
        T._check(v["l_tie_strict"], _brute2(Z[:, 0], "<", tie)[0])
        bad, w2 = _brute2(Z[:, 2], "<=", "0.3")
        T._check(v["l_max"], bad, w2)


# ---------------------------------------------------------------------------------------------
# certify.treeboxes alone: hand-made trees whose leaves tie exactly
# ---------------------------------------------------------------------------------------------

def _stump_scores(values, base=(0.0, 0.0), readout="linear"):
    """One tree on column 0 (tied feature t, cells 0..3) then column 1 (protected g, cells 0/1):
    ``x[0] <= 1.5`` -> node testing g, else a leaf; leaves hold ``values`` (rows: leaf, cols: K)."""
    from fairspec.certify.treeboxes import Scores
    from fairspec.certify.trees import SplitTest, TreeNodes

    tests = (SplitTest(0, 1.5), SplitTest(1, 0.5), None, None, None)
    left = np.array([1, 3, -1, -1, -1])
    right = np.array([2, 4, -1, -1, -1])
    V = np.zeros((5, len(base)))
    V[2], V[3], V[4] = values
    return Scores((TreeNodes(tests, left, right),), (V,), tuple(base), 1.0, readout, "float64")


def _factors():
    from fairspec.certify.trees import Factor

    t = Factor("t", (0,), np.arange(4.0)[:, None], np.array([0, 1, 2, 3]))
    g = Factor("g", (1,), np.array([[0.0], [1.0]]), np.array([0, 1]))
    return [t], [g], np.array([[0], [1]]), np.array([[0, 1], [1, 0]])


def _runtime(sc):
    """The runtime of the hand-made tree, evaluated as a library would (float64 leaf sums)."""

    def out(tc, a):
        t, g = float(tc[0]), float(a)
        leaf = 2 if t > 1.5 else (3 if g <= 0.5 else 4)
        return sc.base + sc.values[0][leaf]

    return out


def test_certify_boxes_exact_ties(boxes_only):
    """Class columns that tie exactly at a leaf (the first class wins), and value differences
    equal to eps: the bounds cannot decide them, the runtime's outputs at the leaf boxes do."""
    from fairspec.certify.treeboxes import decide_pairs

    boxes_only.append("direct")
    tied, varying, combos, pairs = _factors()
    # class: leaf 3 ties (0.5, 0.5) -> class 0, leaf 4 is class 0 with a margin, leaf 2 class 1
    sc = _stump_scores([(0.25, 0.75), (0.5, 0.5), (0.75, 0.25)])
    run = _runtime(sc)

    def classes(points):
        return np.array([[int(np.argmax(run(tc, a))), int(np.argmax(run(tc, b)))] for tc, a, b in points])

    ans = decide_pairs(sc, tied, varying, combos, pairs, post="class", evaluate=classes)
    assert ans.status == "holds" and ans.proof is not None and ans.proof.method == "bab-certificate"
    # the tie goes the other way: class 1 at leaf 3 for a runtime that breaks ties to the last class
    ans = decide_pairs(sc, tied, varying, combos, pairs, post="class",
                       evaluate=lambda pts: np.array([[int(len(r) - 1 - np.argmax(r[::-1])) for r in
                                                       (run(tc, a), run(tc, b))] for tc, a, b in pts]))
    assert ans.status == "violated" and ans.point[0][0] in (0, 1)

    def values(points, c=0):
        return np.array([[[run(tc, a)[c]], [run(tc, b)[c]]] for tc, a, b in points])

    for op, want in (("<=", "holds"), ("<", "violated")):
        ans = decide_pairs(sc, tied, varying, combos, pairs, post="diff", columns=[0], op=op, eps="0.25",
                           evaluate=values)
        assert ans.status == want, (op, ans.reason)
    ans = decide_pairs(sc, tied, varying, combos, pairs, post="diff", columns=[0], op="<=", eps="0.1",
                       evaluate=values, maximize=True)
    assert ans.status == "violated" and ans.best == Fraction(1, 4)


def test_certify_boxes_refuse_unsound_cells_and_never_prove_against_the_runtime(boxes_only):
    """Cells a split test does not respect are refused; a runtime that disagrees with the trees
    at a leaf box is believed (a violation), never overruled by the bounds."""
    from fairspec.certify.trees import Factor
    from fairspec.certify.treeboxes import decide_pairs

    boxes_only.append("direct")
    tied, varying, combos, pairs = _factors()
    sc = _stump_scores([(0.25, 0.75), (0.75, 0.25), (0.75, 0.25)])
    bad = [Factor("t", (0,), np.arange(4.0)[:, None], np.array([0, 1, 1, 2]))]      # 1 and 2 split at 1.5
    with pytest.raises(ValueError):
        decide_pairs(sc, bad, varying, combos, pairs, post="class", evaluate=lambda p: None)
    # the trees say every pair is fair (bounds close every box); a concrete pair the runtime
    # evaluates (a seed) that breaks it is a violation all the same: the runtime is believed
    ans = decide_pairs(sc, tied, varying, combos, pairs, post="class", seeds=[((0,), 0, 1)],
                       evaluate=lambda pts: np.array([[0, 1 if tc[0] == 0 else 0] for tc, a, b in pts]))
    assert ans.status == "violated" and ans.point == ((0,), 0, 1)
    ans = decide_pairs(sc, tied, varying, combos, pairs, post="class",
                       evaluate=lambda pts: np.array([[0, 0] for _ in pts]))
    assert ans.status == "holds" and ans.stats["closed_by_bounds"] >= 1


def test_onehot_and_continuous_features(tmp_path):
    """A protected one-hot feature, a continuous tied feature (cells are intervals given by their
    ends) and a one-hot tied feature: a forest's class and probabilities against brute force over a
    grid that holds one value of every interval between the split thresholds (k + 0.5)."""
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(4)
    G = np.array(list(itertools.product(range(3), range(8), range(4))), dtype=float)

    def enc(P):
        out = np.zeros((len(P), 8))
        out[np.arange(len(P)), P[:, 0].astype(int)] = 1
        out[:, 3] = P[:, 1]
        out[np.arange(len(P)), 4 + P[:, 2].astype(int)] = 1
        return out

    P = G[rng.integers(0, len(G), 200)]
    y = ((P[:, 0] == 2) * 1 + (P[:, 1] > 3) + (P[:, 2] == 1) + rng.integers(0, 2, len(P))) % 3
    est = RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0).fit(enc(P), y.astype(int))
    sio.dump(est, tmp_path / "m.skops")
    XG = enc(G)
    cls = np.searchsorted(est.classes_, est.predict(XG))
    Pr = est.predict_proba(XG)
    spec = tmp_path / "s.fair"
    spec.write_text('features F {\n  g : {A, B, C} protected\n  r : real in [0, 7]\n  c : {u, v, w, z}\n}\n'
                    'model m = sklearn("m.skops")\nencode F for m {\n  g : onehot\n  r : raw\n  c : onehot\n}\n'
                    + _prop2("same", "class(m(x)) == class(m(x'))")
                    + _prop2("p", "forall c: |prob(m(x), c) - prob(m(x'), c)| <= 0.5")
                    + _prop2("pm", "|prob(m(x), 0) - prob(m(x'), 0)| <= 0.5", mode="maximize"))
    v = T._verdicts(str(spec))

    def pairs():
        for i, x in enumerate(G):
            for j, x2 in enumerate(G):
                if x[0] != x2[0] and x[1] == x2[1] and x[2] == x2[2]:
                    yield i, j

    T._check(v["same"], any(cls[i] != cls[j] for i, j in pairs()))
    bad = any(abs(Fraction(float(Pr[i, c])) - Fraction(float(Pr[j, c]))) > Fraction(1, 2)
              for i, j in pairs() for c in range(3))
    T._check(v["p"], bad)
    worst = max(Fraction(float(Pr[i, 0])) - Fraction(float(Pr[j, 0])) for i, j in pairs())
    T._check(v["pm"], worst > Fraction(1, 2), worst)


def test_hist_gradient_boosting_regressor(tmp_path):
    """HistGradientBoostingRegressor (float64 sums, a baseline): value against brute force."""
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, _, yr = _data2(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = HistGradientBoostingRegressor(max_iter=4, max_depth=2, random_state=0).fit(X, yr + X[:, 0])
    sio.dump(est, tmp_path / "m.skops")
    Vv = est.predict(GRID2)
    _, worst = _brute2(Vv, "<=", "0")
    tie = repr(float(worst))
    body = (_prop2("v_tie", f"|value(m(x)) - value(m(x'))| <= {tie}")
            + _prop2("v_max", "|value(m(x)) - value(m(x'))| <= 0.2", mode="maximize", relaxed="<= 1"))
    v = T._verdicts(_spec(tmp_path, 'model m = sklearn("m.skops")', body))
    T._check(v["v_tie"], _brute2(Vv, "<=", tie)[0])
    bad, w2 = _brute2(Vv, "<=", "0.2", "<= 1")
    T._check(v["v_max"], bad, w2)


@pytest.mark.parametrize("seed,target,kind", [(0, 1, "rf"), (3, 1, "rf"), (2, 1, "gb"), (8, 0, "gb"), (8, 2, "gb")])
def test_binary_label_on_a_large_domain(tmp_path, seed, target, kind):
    """A binary classifier's label post on a domain the enumeration does not take: the tree encodings'
    "no violating pair" is no proof, so the branch and bound over leaf boxes decides it (holds with a
    Proof, or a pair replayed on the library). Every model reads the protected g in some split; the
    labels of some do not change with it (forests of 4 trees, whose vote ties go to the first class;
    gradient boosting), a relaxed feature; every verdict against brute force on the grid."""
    import skops.io as sio
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    X, y, _ = _data2(seed, k=2)
    y = [y, (X[:, 1] // 4).astype(int), ((X[:, 1] + X[:, 2]) >= 7).astype(int)][target]
    est = (RandomForestClassifier(n_estimators=4, max_depth=3, random_state=seed) if kind == "rf"
           else GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=seed)).fit(X, y)
    trees = est.estimators_ if kind == "rf" else est.estimators_.ravel()
    assert any((t.tree_.feature == 0).any() for t in trees)         # the model reads g
    sio.dump(est, tmp_path / "m.skops")
    lab = est.predict(GRID2)
    body = (_prop2("same", "label(m(x)) == label(m(x'))")
            + _prop2("same_relaxed", "label(m(x)) == label(m(x'))", relaxed="< 2"))
    v = T._verdicts(_spec(tmp_path, 'model m = sklearn("m.skops")', body))
    T._check(v["same"], any(lab[i] != lab[j] for i, j in _pairs2()))
    T._check(v["same_relaxed"], any(lab[i] != lab[j] for i, j in _pairs2("< 2")))
    for p in v.values():
        if p.status == "violated":
            assert p.witness.outputs[0] != p.witness.outputs[1]
        else:
            assert "leaf boxes" in p.details.get("decided_by", ""), p.details


@pytest.mark.parametrize("seed,kind,index", [(0, "rf", None), (1, "rf", 0), (2, "tree", None), (3, "rf", None),
                                             (5, "tree", 0), (6, "rf", 0)])
def test_binary_prob_on_a_large_domain(tmp_path, seed, kind, index):
    """A binary forest's / tree's prob post on a domain the enumeration does not take: the tree
    encodings' "no violating pair" is no proof, so the branch and bound over leaf boxes decides it as
    prob(m(x), c) of the positive column c (index = 0 too): thresholds at the shortest decimal of the
    largest difference (either side of it) and at 1 (<= 1 always holds), a relaxed feature, maximize
    with the exact maximum in its interval; every verdict against brute force on the grid, every
    violation the boxes report replayed with the post as written."""
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    X, y, _ = _data2(seed, k=2)
    est = (RandomForestClassifier(n_estimators=4, max_depth=3, random_state=seed) if kind == "rf"
           else DecisionTreeClassifier(max_depth=4, random_state=seed)).fit(X, y)
    sio.dump(est, tmp_path / "m.skops")
    P = est.predict_proba(GRID2)[:, 1 if index is None else index]
    _, worst = _brute2(P, "<=", "0")
    _, worst_r = _brute2(P, "<=", "0", "< 2")
    tie, tie_r = repr(float(worst)), repr(float(worst_r))     # the nearest short decimals: either side of it
    body = (_prop2("le", f"|prob(m(x)) - prob(m(x'))| <= {tie}")
            + _prop2("lt", f"|prob(m(x)) - prob(m(x'))| < {tie}")
            + _prop2("quarter", "|prob(m(x)) - prob(m(x'))| <= 0.25", mode="find")
            + _prop2("le_one", "|prob(m(x)) - prob(m(x'))| <= 1")
            + _prop2("lt_one", "|prob(m(x)) - prob(m(x'))| < 1", relaxed="< 2")
            + _prop2("lt_relaxed", f"|prob(m(x)) - prob(m(x'))| < {tie_r}", relaxed="< 2")
            + _prop2("le_relaxed", f"|prob(m(x)) - prob(m(x'))| <= {tie_r}", relaxed="< 2")
            + _prop2("max", "|prob(m(x)) - prob(m(x'))| <= 0.25", mode="maximize", relaxed="< 2"))
    decl = 'model m = sklearn("m.skops")' if index is None else f'model m = sklearn("m.skops", index = {index})'
    v = T._verdicts(_spec(tmp_path, decl, body))
    T._check(v["le"], _brute2(P, "<=", tie)[0])
    T._check(v["lt"], _brute2(P, "<", tie)[0])
    T._check(v["quarter"], _brute2(P, "<=", "0.25")[0])
    T._check(v["le_one"], False)
    T._check(v["lt_one"], _brute2(P, "<", "1", "< 2")[0])
    T._check(v["lt_relaxed"], _brute2(P, "<", tie_r, "< 2")[0])
    T._check(v["le_relaxed"], _brute2(P, "<=", tie_r, "< 2")[0])
    T._check(v["max"], _brute2(P, "<=", "0.25", "< 2")[0], worst_r)
    for p in v.values():
        if p.status == "holds":        # the tree encodings' answer alone is no proof
            assert "leaf boxes" in p.details.get("decided_by", ""), (p.name, p.reason)
        elif "leaf boxes" in p.details.get("decided_by", ""):
            a, b = p.witness.outputs
            assert (a, b) == tuple(est.predict_proba(np.array([p.witness.x, p.witness.x_prime]))[:, 1 if index is None
                                                                                                   else index])


def test_certify_boxes_softmax_bound_is_a_quarter_of_the_largest_move(boxes_only):
    """K = 3 margins, the protected g moving classes 1 and 2 by 0.4 against class 0 (t > 1.5: one
    leaf whose margins (0, 3, -3) make the box's probability intervals loose): by the mean value
    theorem |p_0(x) - p_0(x')| <= 1/4 max_d |move of z_d - z_0| = 0.1 (the weights p_0 p_d sum to
    p_0 (1 - p_0) <= 1/4), so eps = 0.15 is closed by the bounds in the first box; 1/4 of each move,
    summed (0.2), was not. The true largest move is 1/3 - 1/(1 + 2 e^0.4) = 0.082."""
    from fairspec.certify.treeboxes import decide_pairs

    boxes_only.append("direct")
    tied, varying, combos, pairs = _factors()
    sc = _stump_scores([(0.0, 3.0, -3.0), (0.0, 0.0, 0.0), (0.0, 0.4, 0.4)], base=(0.0, 0.0, 0.0),
                       readout="softmax")
    run = _runtime(sc)

    def probs(points):
        def p(z):
            e = np.exp(z - z.max())
            return e / e.sum()
        return np.array([[p(run(tc, a)), p(run(tc, b))] for tc, a, b in points])[:, :, :1]

    ans = decide_pairs(sc, tied, varying, combos, pairs, post="softmax-diff", columns=[0], op="<=", eps="0.15",
                       evaluate=probs)
    assert ans.status == "holds" and ans.stats["boxes"] == 1 and ans.stats["closed_by_bounds"] == len(pairs), \
        ans.stats
