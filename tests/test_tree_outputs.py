"""Individual fairness of tree models with K classes or a regression objective (issue 25,
fairspec/kinds/tree_outputs.py): class, prob(m(x), c), every class's prob, logit(m(x), c) and
value decided by enumeration of cells on the library's runtime, against brute force over every
pair written out here, on small models biased toward ties (integer features, thresholds on grid
points and between them, forests whose votes tie)."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("skops")

FEATS = "  g : int in [0, 2] protected\n  a : int in [0, 4]\n  b : int in [0, 3]"
ENC = "  g : raw\n  a : raw\n  b : raw"


def _data(seed):
    rng = np.random.default_rng(seed)
    X = np.stack([rng.integers(0, 3, 90), rng.integers(0, 5, 90), rng.integers(0, 4, 90)], 1).astype(float)
    y3 = ((X[:, 0] + X[:, 1] + rng.integers(0, 2, 90)) % 3).astype(int)
    yr = np.round(X[:, 0] * 0.5 + X[:, 1] - 0.25 * X[:, 2] + rng.normal(0, 0.5, 90), 1)
    return X, y3, yr


def _grid():
    return np.array(list(itertools.product(range(3), range(5), range(4))), dtype=float)


def _write(tmp_path, est, body: str, fmt: str = "sklearn") -> str:
    if fmt == "sklearn":
        import skops.io as sio

        sio.dump(est, tmp_path / "m.skops")
        decl = 'model m = sklearn("m.skops")'
    elif fmt == "xgboost":
        est.save_model(str(tmp_path / "m.json"))
        decl = 'model m = xgboost("m.json")'
    else:
        est.save_model(str(tmp_path / "m.txt"))
        decl = 'model m = lightgbm("m.txt")'
    p = tmp_path / "s.fair"
    p.write_text(f"features F {{\n{FEATS}\n}}\n{decl}\nencode F for m {{\n{ENC}\n}}\n" + body)
    return str(p)


def _prop(name, ensure, mode=None):
    m = f"  mode = {mode}\n" if mode else ""
    return f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n  ensure {ensure}\n{m}}}\n"


def _verdicts(path):
    from fairspec.pipeline import check

    rep = check(path)
    assert not rep.has_errors, rep.diagnostics
    return {v.name: v for v in rep.verdicts}


def _pairs():
    G = _grid()
    for i, x in enumerate(G):
        for j, y in enumerate(G):
            if x[0] != y[0] and x[1] == y[1] and x[2] == y[2]:
                yield i, j


def _brute(out, op: str, eps: str):
    """(any violation, exact largest |out(x) - out(x')|) over every admissible ordered pair."""
    t = Fraction(eps)                        # the threshold as the spec writes it (a decimal)
    worst, bad = Fraction(0), False
    for i, j in _pairs():
        d = abs(Fraction(float(out[i])) - Fraction(float(out[j])))
        worst = max(worst, d)
        bad |= not (d <= t if op == "<=" else d < t)
    return bad, worst


def _check(v, bad, worst=None):
    if bad:
        assert v.status == "violated", v.reason
        assert v.witness is not None and v.witness.features["g"] != v.witness.features_prime["g"]
    else:
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
    if worst is not None:
        lo, hi = v.bound
        assert Fraction(lo) <= worst <= Fraction(hi)


def _classifiers():
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    X, y3, _ = _data(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y3),
                RandomForestClassifier(n_estimators=4, max_depth=2, random_state=1).fit(X, y3),   # ties between votes
                GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y3)]


@pytest.mark.parametrize("k", range(3), ids=["tree", "forest", "gboost"])
def test_sklearn_multiclass_against_brute_force(tmp_path, k):
    est = _classifiers()[k]
    G = _grid()
    cls = np.searchsorted(est.classes_, est.predict(G))
    P = est.predict_proba(G)
    eps = "0.25"
    body = (_prop("same_class", "class(m(x)) == class(m(x'))")
            + _prop("p1", f"|prob(m(x), 1) - prob(m(x'), 1)| <= {eps}")
            + _prop("p1_strict", f"|prob(m(x), 1) - prob(m(x'), 1)| < {eps}")
            + _prop("p1_max", f"|prob(m(x), 1) - prob(m(x'), 1)| <= {eps}", mode="maximize")
            + _prop("every", f"forall c: |prob(m(x), c) - prob(m(x'), c)| <= {eps}"))
    v = _verdicts(_write(tmp_path, est, body))
    _check(v["same_class"], any(cls[i] != cls[j] for i, j in _pairs()))
    _check(v["p1"], _brute(P[:, 1], "<=", eps)[0])
    _check(v["p1_strict"], _brute(P[:, 1], "<", eps)[0])
    bad, worst = _brute(P[:, 1], "<=", eps)
    _check(v["p1_max"], bad, worst)
    _check(v["every"], any(_brute(P[:, c], "<=", eps)[0] for c in range(3)))


def test_a_forest_vote_tie_is_the_first_class(tmp_path):
    """Two trees voting for different classes: predict_proba ties at 1/2 and the library's
    predict takes the first class; class(m(x)) reads the same."""
    from sklearn.ensemble import RandomForestClassifier

    X, y3, _ = _data(5)
    est = RandomForestClassifier(n_estimators=2, max_depth=1, random_state=0).fit(X, y3)
    G = _grid()
    P = est.predict_proba(G)
    cls = np.searchsorted(est.classes_, est.predict(G))
    assert np.array_equal(cls, np.argmax(P, axis=1))
    v = _verdicts(_write(tmp_path, est, _prop("same_class", "class(m(x)) == class(m(x'))")))
    _check(v["same_class"], any(cls[i] != cls[j] for i, j in _pairs()))


@pytest.mark.parametrize("name", ["DecisionTreeRegressor", "RandomForestRegressor", "GradientBoostingRegressor"])
def test_sklearn_regression_against_brute_force(tmp_path, name):
    import sklearn.ensemble as E
    import sklearn.tree as T

    X, _, yr = _data(7)
    yr = yr + 1.5 * X[:, 0]                 # the protected feature matters
    cls = getattr(E, name, None) or getattr(T, name)
    kw = {"max_depth": 2, "random_state": 0} | ({"n_estimators": 3} if name != "DecisionTreeRegressor" else {})
    est = cls(**kw).fit(X, yr)
    V = est.predict(_grid())
    bad, worst = _brute(V, "<=", "0.5")
    assert worst > 0
    eps = repr(float(worst))            # a decimal within an ulp of the largest difference: ties decided exactly
    body = (_prop("v", "|value(m(x)) - value(m(x'))| <= 0.5")
            + _prop("v_max", "|value(m(x)) - value(m(x'))| <= 0.5", mode="maximize")
            + _prop("v_tie", f"|value(m(x)) - value(m(x'))| <= {eps}")
            + _prop("v_tie_strict", f"|value(m(x)) - value(m(x'))| < {eps}"))
    v = _verdicts(_write(tmp_path, est, body))
    _check(v["v"], bad)
    _check(v["v_max"], bad, worst)
    _check(v["v_tie"], _brute(V, "<=", eps)[0])
    _check(v["v_tie_strict"], _brute(V, "<", eps)[0])


def test_xgboost_multiclass_and_regression(tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, y3, yr = _data(11)
    G = _grid()
    b = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1},
                  xgb.DMatrix(X, label=y3), 3)
    P = np.asarray(b.predict(xgb.DMatrix(G)), dtype=np.float64)
    body = (_prop("same_class", "class(m(x)) == class(m(x'))") + _prop("p2", "|prob(m(x), 2) - prob(m(x'), 2)| <= 0.05")
            + _prop("p2_max", "|prob(m(x), 2) - prob(m(x'), 2)| <= 0.05", mode="maximize"))
    v = _verdicts(_write(tmp_path, b, body, "xgboost"))
    _check(v["same_class"], any(np.argmax(P[i]) != np.argmax(P[j]) for i, j in _pairs()))
    bad, worst = _brute(P[:, 2], "<=", "0.05")
    _check(v["p2"], bad)
    _check(v["p2_max"], bad, worst)
    r = xgb.train({"objective": "reg:squarederror", "max_depth": 2, "nthread": 1}, xgb.DMatrix(X, label=yr), 4)
    (tmp_path / "r").mkdir()
    V = np.asarray(r.predict(xgb.DMatrix(G)), dtype=np.float64)
    v = _verdicts(_write(tmp_path / "r", r, _prop("v_max", "|value(m(x)) - value(m(x'))| <= 0.5", mode="maximize"),
                         "xgboost"))
    bad, worst = _brute(V, "<=", "0.5")
    _check(v["v_max"], bad, worst)


def test_lightgbm_multiclass(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    X, y3, _ = _data(13)
    b = lgb.train({"objective": "multiclass", "num_class": 3, "num_leaves": 3, "min_data_in_leaf": 5, "verbose": -1,
                   "num_threads": 1}, lgb.Dataset(X, label=y3), 3)
    G = _grid()
    P = np.asarray(b.predict(G), dtype=np.float64)
    v = _verdicts(_write(tmp_path, b, _prop("same_class", "class(m(x)) == class(m(x'))")
                         + _prop("p0", "|prob(m(x), 0) - prob(m(x'), 0)| <= 0.02"), "lightgbm"))
    _check(v["same_class"], any(np.argmax(P[i]) != np.argmax(P[j]) for i, j in _pairs()))
    _check(v["p0"], _brute(P[:, 0], "<=", "0.02")[0])


def test_a_large_domain_is_falsified_on_data_rows(tmp_path, monkeypatch):
    """No enumeration (FAIRSPEC_ENUMERATE_PAIRS=0, as on a domain over the cut): a data row with its
    protected feature flipped that changes the class is violated, replayed on the library; a
    property no flip breaks goes to the certified branch and bound over leaf boxes (issue 25), which
    proves this loose one."""
    import skops.io as sio

    est = _classifiers()[0]
    sio.dump(est, tmp_path / "m.skops")
    G = _grid()
    rows = G[::3]
    (tmp_path / "d.csv").write_text("g,a,b\n" + "\n".join(",".join(str(int(v)) for v in r) for r in rows) + "\n")
    body = (_prop("same_class", "class(m(x)) == class(m(x'))")
            + _prop("loose", "forall c: |prob(m(x), c) - prob(m(x'), c)| <= 1"))
    p = tmp_path / "s.fair"
    p.write_text('data d = csv("d.csv")\n' + f"features F from d {{\n{FEATS}\n}}\n" + 'model m = sklearn("m.skops")\n'
                 + f"encode F for m {{\n{ENC}\n}}\n" + body)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = _verdicts(str(p))
    cls = np.searchsorted(est.classes_, est.predict(G))
    assert any(cls[i] != cls[j] for i, j in _pairs())
    same = v["same_class"]
    assert same.status == "violated" and "falsified on data" in same.backend
    w = same.witness
    pred = est.predict(np.array([w.x, w.x_prime]))
    assert pred[0] != pred[1] and w.features["g"] != w.features_prime["g"]
    loose = v["loose"]
    assert loose.status == "holds" and loose.how == "proved" and loose.proof is not None, loose.reason
    assert loose.proof.method == "bab-certificate"


def test_the_data_flips_read_max_rows(tmp_path, monkeypatch):
    """max_rows bounds the data rows flipped before the solver runs (the README's options table; lint
    warns FS213 only where none are flipped): the flips of a tree model's class / prob / value post
    (kinds/tree_outputs) flipped every row whatever it said. Now a seeded sample of at most N rows."""
    import sys

    import skops.io as sio

    from fairspec.kinds import tree_outputs

    sio.dump(_classifiers()[0], tmp_path / "m.skops")
    rows = _grid()
    (tmp_path / "d.csv").write_text("g,a,b\n" + "\n".join(",".join(str(int(v)) for v in r) for r in rows) + "\n")
    p = tmp_path / "s.fair"
    p.write_text('data d = csv("d.csv")\n' + f"features F from d {{\n{FEATS}\n}}\n" + 'model m = sklearn("m.skops")\n'
                 + f"encode F for m {{\n{ENC}\n}}\n"
                 + _prop("same_class", "class(m(x)) == class(m(x'))").replace("\n}\n", "\n  max_rows = 7\n}\n"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    seen = []
    real = tree_outputs.__dict__.get("encode")
    import fairspec.runtime.encoding as E

    encode = E.encode

    def spy(enc, values, n):
        if sys._getframe(1).f_code.co_name == "_flip_on_data":  # the flips' rows, and theirs only
            seen.append(n)
        return encode(enc, values, n)

    assert real is None  # imported inside _flip_on_data: the spy replaces the module's function
    monkeypatch.setattr(E, "encode", spy)
    v = _verdicts(str(p))["same_class"]
    assert seen and set(seen) == {7}, seen
    if "falsified on data" in (v.backend or ""):
        assert v.details["rows"] == 7


def test_max_rows_unread_by_a_tree_output_post_is_a_verdict_note(tmp_path, monkeypatch):
    """The flips of a tree model's class / prob / value post (the only reader of max_rows there) run on
    a large domain for a plain "except {protected}" property only: with a relaxed feature, or on a
    small domain enumerated whole, max_rows is read by nothing. Lint cannot know (it loads no model and
    does not size the domain), so check says it in the verdict's notes; where it is read, no note."""
    import skops.io as sio

    from fairspec.pipeline import lint
    from fairspec.report import verdict_notes

    sio.dump(_classifiers()[0], tmp_path / "m.skops")
    (tmp_path / "d.csv").write_text("g,a,b\n" + "\n".join(",".join(str(int(v)) for v in r) for r in _grid()) + "\n")
    plain = _prop("plain", "class(m(x)) == class(m(x'))").replace("\n}\n", "\n  max_rows = 7\n}\n")
    near = plain.replace("property plain", "property near").replace(
        "except {g}\n", "except {g}\n  require |x.a - x'.a| <= 1\n")
    p = tmp_path / "s.fair"
    p.write_text('data d = csv("d.csv")\n' + f"features F from d {{\n{FEATS}\n}}\n" + 'model m = sklearn("m.skops")\n'
                 + f"encode F for m {{\n{ENC}\n}}\n" + plain + near)
    assert [d for d in lint(p).diagnostics if d.code == "FS213"] == []
    small = _verdicts(str(p))  # 60 points: enumerated whole
    for name in ("plain", "near"):
        assert "`max_rows` has no effect here: the small domain is decided whole (every cell pair on the library's " \
               "runtime), with no data rows flipped" in verdict_notes(small[name]), name
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")  # as on a domain over the cut
    large = _verdicts(str(p))
    assert not [n for n in verdict_notes(large["plain"]) if "max_rows" in n]  # its rows were flipped
    assert verdict_notes(large["near"]) == ["`max_rows` has no effect here: a tree model's class post with relaxed "
                                            "features is not falsified on data rows first (a flip sets the "
                                            "protected features only)"]


@pytest.mark.parametrize("enumerate_pairs", [True, False], ids=["enumeration", "leaf-boxes"])
@pytest.mark.parametrize("mode", [None, "prove"])
def test_a_violated_value_is_the_pair_s_measure_rounded_down(tmp_path, monkeypatch, mode, enumerate_pairs):
    """Session 33: a tree model's violated witness reported float(exact difference), the NEAREST float, which may
    lie above it: leaves 1 and -(2^-53 + 2^-60) differ by 1 + 2^-53 + 2^-60, whose nearest float is 1 + 2^-52.
    It is now pair_runtime.pair_measure's, the float at or below (as every reported pair value)."""
    from sklearn.tree import DecisionTreeRegressor

    if not enumerate_pairs:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    G = _grid()
    est = DecisionTreeRegressor(max_depth=1).fit(G, (G[:, 0] > 0).astype(float))
    assert list(est.tree_.feature[:1]) == [0]             # the split is on g, the protected feature
    est.tree_.value[1, 0, 0], est.tree_.value[2, 0, 0] = -(2.0 ** -53 + 2.0 ** -60), 1.0
    truth = Fraction(1) + Fraction(2.0 ** -53 + 2.0 ** -60)
    assert Fraction(float(truth)) > truth
    v = _verdicts(_write(tmp_path, est, _prop("v", "|value(m(x)) - value(m(x'))| <= 0.5", mode=mode)))["v"]
    assert v.status == "violated" and Fraction(v.value) <= truth < Fraction(v.value) + Fraction(2.0 ** -52), v.value
