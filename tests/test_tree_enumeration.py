"""Tree models on small domains: individual fairness decided by enumeration on the library's own
runtime (fairspec/kinds/tree_pairs.py), ties exactly as the library decides them, against brute
force written out here."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

pytest.importorskip("skops")


def _write(tmp_path, est, body: str, feats: str, enc: str, opts: str = "") -> str:
    import skops.io as sio

    sio.dump(est, tmp_path / "m.skops")
    p = tmp_path / "s.fair"
    p.write_text(f'features F {{\n{feats}\n}}\nmodel m = sklearn("m.skops"{opts})\nencode F for m {{\n{enc}\n}}\n' + body)
    return str(p)


def _prop(name, ensure, extra="", mode=None):
    m = f"  mode = {mode}\n" if mode else ""
    return (f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n{extra}"
            f"  ensure {ensure}\n{m}}}\n")


def _verdicts(path):
    from fairspec.pipeline import check

    rep = check(path)
    assert not rep.has_errors, rep.diagnostics
    return {v.name: v for v in rep.verdicts}


def _gb_with_raw_zero():
    """GradientBoosting whose raw score is exactly 0 where g = 0 and -1 where g = 1."""
    from sklearn.ensemble import GradientBoostingClassifier

    X = np.array([[g, a] for g in (0, 1) for a in range(4)] * 2, dtype=float)
    y = np.array([1, 0, 1, 0, 0, 1, 0, 1] * 2)      # balanced: the initial raw score is log(1) = 0
    est = GradientBoostingClassifier(n_estimators=1, max_depth=1, random_state=0).fit(X, y)
    t = est.estimators_[0, 0].tree_
    t.feature[0] = 0
    t.threshold[0] = 0.5
    t.value[1, 0, 0] = 0.0
    t.value[2, 0, 0] = -1.0 / est.learning_rate
    assert est.decision_function(np.array([[0.0, 0.0]]))[0] == 0.0
    return est


def test_a_raw_score_of_exactly_zero_is_decided_as_the_library_predicts(tmp_path):
    est = _gb_with_raw_zero()
    # scikit-learn: GradientBoosting predicts the positive class at a raw score of exactly 0
    assert list(est.predict(np.array([[0.0, 1.0], [1.0, 1.0]]))) == [1, 0]
    body = _prop("lab", "label(m(x)) == label(m(x'))") + _prop("lab_max", "label(m(x)) == label(m(x'))",
                                                               mode="maximize")
    path = _write(tmp_path, est, body, "  g : bool protected\n  a : int in [0, 3]", "  g : raw\n  a : raw")
    v = _verdicts(path)
    assert v["lab"].status == "violated", v["lab"].reason
    w = v["lab"].witness
    assert {w.features["g"], w.features_prime["g"]} == {False, True}
    assert v["lab_max"].status == "violated"
    # the largest flip margin min(z, -z') over pairs: z = 0 (g = 0), z' = -1 (g = 1) -> 0
    assert v["lab_max"].value == 0.0 and tuple(v["lab_max"].bound) == (0.0, 0.0)


def test_a_forest_with_string_class_labels_is_decided(tmp_path):
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(80, 2)).astype(float)
    y = np.where(X[:, 1] + rng.normal(0, 0.5, 80) > 1.5, "yes", "no")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    body = (_prop("lab", "label(m(x)) == label(m(x'))")
            + _prop("p", "|prob(m(x)) - prob(m(x'))| <= 0.1", mode="maximize"))
    path = _write(tmp_path, est, body, "  g : int in [0, 3] protected\n  a : int in [0, 3]", "  g : raw\n  a : raw",
                  ", index = 1")                         # "yes" is positive: the spec says so (FS413 without)
    v = _verdicts(path)
    pts = np.array(list(itertools.product(range(4), range(4))), dtype=float)
    lab = est.predict(pts) == est.classes_[1]
    p = est.predict_proba(pts)[:, 1]
    # brute force: pairs differ in g, share a
    viol = any(lab[i] != lab[j] for i in range(16) for j in range(16) if pts[i, 1] == pts[j, 1] and i != j)
    best = max(p[i] - p[j] for i in range(16) for j in range(16) if pts[i, 1] == pts[j, 1] and pts[i, 0] != pts[j, 0])
    assert v["lab"].status == ("violated" if viol else "holds")
    assert v["lab"].status != "unknown" and v["p"].status != "unknown"
    assert v["p"].value == pytest.approx(best, abs=0) or v["p"].bound[0] <= best <= v["p"].bound[1]
    assert v["p"].status == ("violated" if best > 0.1 else "holds")
    if v["lab"].status == "holds":
        assert v["lab"].proof is not None and v["lab"].proof.method == "enumeration"


@pytest.mark.parametrize("op,tol", [("<", "1"), ("<=", "1"), ("<", "2"), ("<=", "0.5")])
def test_relaxed_tolerances_keep_their_strictness(tmp_path, op, tol):
    from sklearn.tree import DecisionTreeClassifier

    X = np.array([[g, a] for g in (0, 1) for a in range(5)], dtype=float)
    y = np.array([0, 0, 0, 1, 1, 0, 0, 1, 1, 1])
    est = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    body = _prop("lab", "label(m(x)) == label(m(x'))", extra=f"  require |x.a - x'.a| {op} {tol}\n")
    path = _write(tmp_path, est, body, "  g : bool protected\n  a : int in [0, 4]", "  g : raw\n  a : raw")
    v = _verdicts(path)["lab"]
    lab = est.predict(X)
    t = float(tol)
    ok = (lambda d: d < t) if op == "<" else (lambda d: d <= t)
    viol = any(lab[i] != lab[j] for i in range(10) for j in range(10)
               if X[i, 0] != X[j, 0] and ok(abs(X[i, 1] - X[j, 1])))
    assert v.status == ("violated" if viol else "holds"), v.reason
    if viol:
        d = abs(v.witness.features["a"] - v.witness.features_prime["a"])
        assert ok(d)


def test_enumeration_can_be_switched_off_for_the_harness(tmp_path, monkeypatch):
    est = _gb_with_raw_zero()
    path = _write(tmp_path, est, _prop("lab", "label(m(x)) == label(m(x'))"),
                  "  g : bool protected\n  a : int in [0, 3]", "  g : raw\n  a : raw")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = _verdicts(path)["lab"]
    assert "enumeration" not in (v.reason or "")


def _wide_tree():
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(3)
    X = np.column_stack([rng.integers(0, 2, 400), rng.integers(0, 20001, 400), rng.integers(0, 31, 400)]).astype(float)
    y = ((X[:, 1] > 7000) ^ (X[:, 2] > 12) ^ ((X[:, 0] == 1) & (X[:, 2] == 30))).astype(int)
    return DecisionTreeClassifier(max_depth=6, random_state=0).fit(X, y)


def test_a_wide_domain_is_enumerated_in_cells_of_the_split_tests(tmp_path):
    est = _wide_tree()
    feats = "  g : bool protected\n  a : int in [0, 20000]\n  b : int in [0, 30]"
    body = (_prop("lab", "label(m(x)) == label(m(x'))")
            + _prop("p", "|prob(m(x)) - prob(m(x'))| <= 0.5", extra="  require |x.b - x'.b| < 2\n", mode="maximize"))
    path = _write(tmp_path, est, body, feats, "  g : raw\n  a : raw\n  b : raw")
    v = _verdicts(path)
    # brute force over all 2 x 20001 x 31 points on the library
    a, b = np.meshgrid(np.arange(20001.0), np.arange(31.0), indexing="ij")
    P0 = np.column_stack([np.zeros(a.size), a.ravel(), b.ravel()])
    P1 = P0.copy()
    P1[:, 0] = 1
    lab0, lab1 = est.predict(P0), est.predict(P1)
    assert v["lab"].status == ("violated" if np.any(lab0 != lab1) else "holds")
    assert v["lab"].details["cells"] < 1000 and v["lab"].details["points"] == 2 * 20001 * 31
    p0 = est.predict_proba(P0)[:, 1].reshape(20001, 31)
    p1 = est.predict_proba(P1)[:, 1].reshape(20001, 31)
    best = 0.0
    for d in (-1, 0, 1):                     # |b - b'| < 2
        s0 = p0[:, max(0, d):31 + min(0, d)]
        s1 = p1[:, max(0, -d):31 + min(0, -d)]
        best = max(best, float(np.max(s0 - s1)), float(np.max(s1 - s0)))
    assert v["p"].bound[0] <= best <= v["p"].bound[1]
    assert v["p"].status == ("violated" if best > 0.5 else "holds")


def test_unsound_cells_are_refused():
    from fairspec.certify import Check
    from fairspec.certify.trees import Factor, SplitTest, by_cell_enumeration, check_cells

    U = np.array([[0.0], [1.0], [2.0]])
    tests = [SplitTest(0, 0.5)]
    assert check_cells(tests, [Factor("a", (0,), U, np.array([0, 1, 1]))]) is None
    assert "does not agree" in check_cells(tests, [Factor("a", (0,), U, np.array([0, 0, 1]))])
    # float32 comparisons as the library makes them: 0.1 (float64) cast to float32 is above 0.1
    t32 = SplitTest(0, 0.1, f32=True)
    assert not bool(t32.left(np.array([0.1]))[0]) and bool(SplitTest(0, 0.1).left(np.array([0.1]))[0])
    with pytest.raises(ValueError):
        by_cell_enumeration(tests, [Factor("a", (0,), U, np.array([0, 0, 1]))], Check(np.zeros(1), "<=", 0),
                            count=1, claim="x")


def test_the_solver_path_never_reports_an_uncertified_proof(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = _wide_tree()
    feats = "  g : bool protected\n  a : int in [0, 20000]\n  b : int in [0, 30]"
    body = _prop("lab", "label(m(x)) == label(m(x'))") + _prop("p", "|prob(m(x)) - prob(m(x'))| <= 1")
    path = _write(tmp_path, est, body, feats, "  g : raw\n  a : raw\n  b : raw")
    v = _verdicts(path)
    for name in ("lab", "p"):
        assert not (v[name].status == "holds" and v[name].proof is None), (name, v[name].reason)
    if v["lab"].status == "violated":
        w = v["lab"].witness
        assert est.predict(np.array([w.x]))[0] != est.predict(np.array([w.x_prime]))[0]


def test_leaf_boxes_cover_the_domain_and_fix_every_leaf():
    from fairspec.certify.trees import Factor, SplitTest, TreeNodes, leaf_boxes

    # one tree: x0 <= 1.5 ? (x1 <= 0.5 ? A : B) : C over x0 in 0..3, x1 in 0..2 (x2 fixed per counterfactual)
    t = TreeNodes((SplitTest(0, 1.5), SplitTest(1, 0.5), None, None, SplitTest(2, 0.5), None, None),
                  np.array([1, 2, -1, -1, 5, -1, -1]), np.array([4, 3, -1, -1, 6, -1, -1]))
    f0 = Factor("a", (0,), np.arange(4.0)[:, None], np.array([0, 0, 1, 1]))
    f1 = Factor("b", (1,), np.arange(3.0)[:, None], np.array([0, 1, 1]))
    boxes = leaf_boxes([t], [f0, f1], [{2: 0.0}, {2: 1.0}])
    # x0 in cell 1 needs no split on x1; x0 in cell 0 splits x1: 3 boxes covering 2 x 2 cells
    assert len(boxes) == 3
    covered = sum(int(m[0].sum() * m[1].sum()) for m in boxes.masks)
    assert covered == 4
    with pytest.raises(ValueError):          # cells a test does not respect are refused
        leaf_boxes([t], [Factor("a", (0,), np.arange(4.0)[:, None], np.array([0, 1, 1, 1])), f1], [{2: 0.0}])


@pytest.mark.parametrize("cut", [40, 200])
def test_leaf_boxes_decide_pairs_as_brute_force_does(tmp_path, monkeypatch, cut):
    import fairspec.kinds.tree_pairs as tp

    monkeypatch.setattr(tp, "MAX_POINTS", cut)          # too many cells: leaf boxes
    est = _wide_tree()
    feats = "  g : bool protected\n  a : int in [0, 20000]\n  b : int in [0, 30]"
    body = (_prop("lab", "label(m(x)) == label(m(x'))", extra="  require |x.b - x'.b| <= 1\n")
            + _prop("p", "|prob(m(x)) - prob(m(x'))| < 0.25", mode="maximize")
            + _prop("p_all", "|prob(m(x)) - prob(m(x'))| <= 1"))
    path = _write(tmp_path, est, body, feats, "  g : raw\n  a : raw\n  b : raw")
    v = _verdicts(path)
    assert v["p_all"].status == "holds" and v["p_all"].proof.method == "enumeration"
    if cut == 40:
        assert v["p_all"].details["leaf_boxes"] > 1 and v["p"].details["leaf_boxes"] > 1
    a, b = np.meshgrid(np.arange(20001.0), np.arange(31.0), indexing="ij")
    P0 = np.column_stack([np.zeros(a.size), a.ravel(), b.ravel()])
    P1 = P0.copy()
    P1[:, 0] = 1
    lab0, lab1 = est.predict(P0).reshape(20001, 31), est.predict(P1).reshape(20001, 31)
    viol = False
    for d in (-1, 0, 1):
        s0 = lab0[:, max(0, d):31 + min(0, d)]
        s1 = lab1[:, max(0, -d):31 + min(0, -d)]
        viol |= bool(np.any(s0 != s1))
    p0, p1 = est.predict_proba(P0)[:, 1], est.predict_proba(P1)[:, 1]
    best = float(np.max(np.abs(p0 - p1)))
    for name, want in (("lab", viol), ("p", best >= 0.25)):
        assert v[name].status == ("violated" if want else "holds"), (name, v[name].reason)
        if v[name].status == "holds":
            assert v[name].proof is not None
    assert v["p"].bound[0] <= best <= v["p"].bound[1]
    if v["lab"].status == "violated":
        w = v["lab"].witness
        assert est.predict(np.array([w.x]))[0] != est.predict(np.array([w.x_prime]))[0]
        assert abs(w.features["b"] - w.features_prime["b"]) <= 1


def _walk(compiled, X):
    t = compiled.tree_
    out = []
    for x in X:
        k = 0
        while t.children_left[k] != -1:
            k = t.children_left[k] if x[t.feature[k]] <= t.threshold[k] else t.children_right[k]
        out.append(int(np.argmax(t.value[k, 0])))
    return np.array(out)


def test_the_compiled_decision_is_the_library_predict_at_ties():
    """compile_decision: cuts where the library sends inputs (float32(x) <= 0.1 sends x = 0.1 right),
    boxes at the threshold decided by the library's predict (GradientBoosting: raw 0 -> class 1)."""
    from sklearn.ensemble import RandomForestClassifier

    from fairspec.backends.trees.compile import compile_decision
    from fairspec.models.trees import from_sklearn

    est = _gb_with_raw_zero()
    ens = from_sklearn(est, "predict_proba", 1)
    X = np.array([[g, a] for g in (0.0, 1.0) for a in range(4)])
    lib = est.predict(X)
    c = compile_decision(ens, [-0.5, -0.5], [1.0, 3.0], decide=lambda Z: est.predict(Z))
    assert list(_walk(c, X)) == list(lib)
    assert lib[0] == 1                                 # raw score 0: the positive class

    rng = np.random.default_rng(1)
    Xf = rng.random((60, 2))
    yf = (Xf[:, 0] > 0.5).astype(int)
    rf = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(Xf, yf)
    for m in rf.estimators_:
        t = m.tree_
        for k in range(t.node_count):
            if t.children_left[k] != -1:
                t.threshold[k] = 0.1 if t.feature[k] == 0 else 0.3
    ens = from_sklearn(rf, "predict_proba", 1)
    pts = np.array([[v, w] for v in (0.1, float(np.nextafter(0.1, 0)), 0.09999999776482582, 0.0999999977648259, 0.5)
                    for w in (0.3, 0.30000001192092896, 0.2)])
    c = compile_decision(ens, [-1.0, -1.0], [1.0, 1.0], decide=lambda Z: (rf.predict(Z) == 1).astype(int))
    assert list(_walk(c, pts)) == list((rf.predict(pts) == 1).astype(int))


def test_continuous_features_are_enumerated_in_intervals_of_the_split_tests(tmp_path):
    """A real feature read by the trees: cells are the intervals between the values where a split
    test changes (bisection on the runtime encoding and the library's float32 comparison)."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(5)
    X = np.column_stack([rng.integers(0, 2, 300), rng.uniform(0, 10, 300), rng.integers(0, 4, 300)]).astype(float)
    y = ((X[:, 1] > 4.2) ^ ((X[:, 0] == 1) & (X[:, 1] > 7.7)) ^ (X[:, 2] == 3)).astype(int)
    X[:, 1] /= 10                                     # the model reads minmax(0, 10) of r
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rf = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    feats = "  g : bool protected\n  r : real in [0, 10]\n  b : int in [0, 3]"
    body = (_prop("lab", "label(m(x)) == label(m(x'))")
            + _prop("lab_r", "label(m(x)) == label(m(x'))", extra="  require |x.r - x'.r| <= 0.5\n")
            + _prop("p", "|prob(m(x)) - prob(m(x'))| <= 0.3", mode="maximize"))
    path = _write(tmp_path, rf, body, feats, "  g : raw\n  r : minmax(lo = 0, hi = 10)\n  b : raw")
    v = _verdicts(path)
    for name in v:
        assert v[name].status != "unknown", (name, v[name].reason)
        assert "cells" in v[name].details or v[name].proof is not None
    # brute force on a fine grid of r (plus the split thresholds themselves and their neighbours)
    ths = [float(t) * 10 for e in rf.estimators_ for t, f in zip(e.tree_.threshold, e.tree_.feature) if f == 1]
    r = np.unique(np.concatenate([np.linspace(0, 10, 2001)] + [[t, np.nextafter(t, 0), np.nextafter(t, 20)]
                                                                   for t in ths]))
    r = r[(r >= 0) & (r <= 10)]
    for name, rel in (("lab", None),):
        viol = False
        for b in range(4):
            P0 = np.column_stack([np.zeros(r.size), r / 10, np.full(r.size, b)])
            P1 = P0.copy()
            P1[:, 0] = 1
            viol |= bool(np.any(rf.predict(P0) != rf.predict(P1)))
        if viol:
            assert v[name].status == "violated"
    if v["lab"].status == "violated":
        w = v["lab"].witness
        assert rf.predict(np.array([w.x]))[0] != rf.predict(np.array([w.x_prime]))[0]
    if v["lab_r"].status == "violated":
        w = v["lab_r"].witness
        assert abs(w.features["r"] - w.features_prime["r"]) <= 0.5 + 1e-12
        assert rf.predict(np.array([w.x]))[0] != rf.predict(np.array([w.x_prime]))[0]
    assert v["p"].bound is not None
    best = 0.0
    for b in range(4):
        P0 = np.column_stack([np.zeros(r.size), r / 10, np.full(r.size, b)])
        P1 = P0.copy()
        P1[:, 0] = 1
        best = max(best, float(np.max(np.abs(rf.predict_proba(P0)[:, 1] - rf.predict_proba(P1)[:, 1]))))
    assert best <= v["p"].bound[1]                    # the grid never beats the exact maximum
    if v["p"].status == "violated":
        w = v["p"].witness
        d = abs(rf.predict_proba(np.array([w.x]))[0, 1] - rf.predict_proba(np.array([w.x_prime]))[0, 1])
        assert d == pytest.approx(v["p"].value, abs=1e-15) and d > 0.3


def test_the_difference_bound_covers_every_pair_of_a_random_forest():
    from fairspec.certify.trees import difference_bound
    from fairspec.models.trees import random_ensemble

    for seed in range(20):
        ens = random_ensemble(seed, 3, 4, 2, "identity", np.zeros(3), np.full(3, 3.0))
        pts = np.array(list(itertools.product(range(4), repeat=3)), dtype=float)
        s = ens.aggregate(pts)
        best = max(s[i] - s[j] for i in range(64) for j in range(64) if pts[i, 1] == pts[j, 1] and pts[i, 2] == pts[j, 2])
        ub, proof = difference_bound([t.value[t.left < 0] for t in ens.trees], [0 in t.features() for t in ens.trees],
                                     divisor=ens.divisor)
        assert best <= ub and proof.method == "interval"


def test_options_the_enumeration_does_not_read_are_said(tmp_path):
    """A small domain enumerated whole reads neither partitions, part_timeout nor timeout: each one the
    spec sets is a note of the verdict ("`X` has no effect here: ..."), not silently dropped."""
    est = _gb_with_raw_zero()
    opts = "  partitions = 3\n  part_timeout = 5s\n  timeout = 30s\n"
    body = _prop("said", "label(m(x)) == label(m(x'))", extra=opts) + _prop("plain", "label(m(x)) == label(m(x'))")
    path = _write(tmp_path, est, body, "  g : bool protected\n  a : int in [0, 3]", "  g : raw\n  a : raw")
    v = _verdicts(path)
    assert v["said"].status == v["plain"].status == "violated", (v["said"].reason, v["plain"].reason)
    notes = v["said"].details["notes"]
    assert [n.split(" has no effect here: ")[0] for n in notes] == ["`partitions`", "`part_timeout`", "`timeout`"]
    assert all("every pair of the small domain is enumerated" in n for n in notes), notes
    assert "notes" not in v["plain"].details
