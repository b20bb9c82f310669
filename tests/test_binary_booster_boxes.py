"""A binary booster's ``prob`` / ``logit`` / ``label`` that the tree encodings leave uncertified
(a solver's "no violating pair" is no proof) goes to the certified branch and bound over leaf boxes.

The boxes read a binary booster's margin as the columns (0, z): ``prob`` is their softmax, which is
the library's probability where that is the plain sigmoid of z (XGBoost ``binary:logistic``, LightGBM
``binary`` with ``sigmoid:1`` and ``cross_entropy`` / ``xentropy``, whose predict is the same function of
the raw score bit for bit: measured below); ``logit`` is column 1 (z itself); ``label`` is the class post. They
were refused there (``prob`` and ``logit`` of a binary booster, ``label`` under maximize): 12 of the
api-solver family's unknowns at seed 39 x 120. Each verdict here is compared with brute force over the
domain on the library's own predict (the domain is small, but ``FAIRSPEC_ENUMERATE_PAIRS=0`` sends it
to the solvers, as the campaign does): a proof where the property holds (maximize: the exact largest
difference), a replayed violation where it does not. A LightGBM ``sigmoid`` other than 1 stays
unknown on ``prob`` (not the softmax of (0, z)), with the boxes' reason; ``cross_entropy_lambda``
(``log(1 + exp(raw))``) is refused at load with a sentence naming the objective.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

import fairspec
from conftest import run_cli

SPEC = """features F {{
  g : {{a, b}} protected
  x : int in [0, 7]
  w : int in [0, 3]
}}
model m = {decl}
encode F for m {{
  g : code
  x : raw
  w : raw
}}
"""
PROP = """property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure {ensure}
  mode = {mode}
}}
"""
GRID = np.array([[g, x, w] for g in (0.0, 1.0) for x in range(8) for w in range(4)])


def _xy(gw=2.0):
    rng = np.random.default_rng(3)
    n = 300
    X = np.c_[rng.integers(0, 2, n), rng.integers(0, 8, n), rng.integers(0, 4, n)].astype(float)
    y = ((X[:, 1] + gw * X[:, 0] - X[:, 2] + rng.normal(0, 2, n)) > 4).astype(int)
    return X, y


def _xgb(tmp_path, objective, gw=2.0):
    xgb = pytest.importorskip("xgboost")
    X, y = _xy(gw)
    b = xgb.train({"objective": objective, "max_depth": 2, "eta": 0.4, "nthread": 1}, xgb.DMatrix(X, label=y), 5)
    b.save_model(str(tmp_path / "m.json"))
    dm = xgb.DMatrix(GRID)
    return 'xgboost("m.json")', np.asarray(b.predict(dm), np.float64), np.asarray(
        b.predict(dm, output_margin=True), np.float64)


def _lgb(tmp_path, sigmoid=1.0):
    """A LightGBM binary model; ``sigmoid`` its factor, or an objective name (cross_entropy, xentropy)."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _xy()
    obj = {"objective": sigmoid} if isinstance(sigmoid, str) else {"objective": "binary", "sigmoid": sigmoid}
    b = lgb.train({**obj, "num_leaves": 4, "verbose": -1, "min_data_in_leaf": 5,
                   "num_threads": 1}, lgb.Dataset(X, label=y), 6)
    b.save_model(str(tmp_path / "m.txt"))
    return 'lightgbm("m.txt")', np.asarray(b.predict(GRID), np.float64), np.asarray(
        b.predict(GRID, raw_score=True), np.float64)


def _largest(out):
    """The largest |out(x) - out(x')| over the domain's pairs (g flips, x and w tied), exactly."""
    half = len(GRID) // 2
    return max(abs(Fraction(float(out[i])) - Fraction(float(out[i + half]))) for i in range(half))


def _check(tmp_path, monkeypatch, decl, ensure, mode):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")       # the tree encodings, then the boxes
    (tmp_path / "s.fair").write_text(SPEC.format(decl=decl) + PROP.format(ensure=ensure, mode=mode))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    return rep["p"]


def _judge(v, truth_max, eps, replay, mode):
    if truth_max <= Fraction(eps):
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
        if mode == "maximize":
            assert Fraction(v.value) == truth_max or float(truth_max) == v.value, (v.value, float(truth_max))
    else:
        assert v.status == "violated", v.reason
        w = np.array([v.witness.x, v.witness.x_prime])
        o = replay(w)
        assert abs(Fraction(float(o[0])) - Fraction(float(o[1]))) > Fraction(eps)


def _cases():
    return [("xgb", "binary:logistic", "prob"), ("xgb", "binary:logistic", "logit"),
            ("xgb", "binary:logitraw", "logit"), ("lgb", 1.0, "prob"), ("lgb", 1.0, "logit"),
            ("lgb", "cross_entropy", "prob"), ("lgb", "xentropy", "prob"), ("lgb", "cross_entropy", "logit")]


@pytest.mark.parametrize("lib,arg,post", _cases())
def test_prob_and_logit_against_brute_force(tmp_path, monkeypatch, lib, arg, post):
    decl, prob, margin = _xgb(tmp_path, arg) if lib == "xgb" else _lgb(tmp_path, arg)
    if lib == "xgb" and arg == "binary:logitraw":
        decl = decl[:-1] + ', output = "margin")'
    out = prob if post == "prob" else margin
    if lib == "xgb":
        xgb = pytest.importorskip("xgboost")
        b = xgb.Booster(model_file=str(tmp_path / "m.json"))
        replay = (lambda X: b.predict(xgb.DMatrix(X), output_margin=post == "logit"))
    else:
        lgb = pytest.importorskip("lightgbm")
        b = lgb.Booster(model_file=str(tmp_path / "m.txt"))
        replay = (lambda X: b.predict(X, raw_score=post == "logit"))
    top = _largest(out)
    assert top > 0
    # above the largest difference (holds, proved, the exact maximum: a solver's word alone is no
    # proof) and below it (violated, replayed)
    for eps, mode in ((float(top) * 1.5, "maximize"), (float(top) / 2, "prove")):
        v = _check(tmp_path, monkeypatch, decl, f"|{post}(m(x)) - {post}(m(x'))| <= {eps!r}", mode)
        _judge(v, top, eps, replay, mode)
        if v.status == "holds":
            assert "leaf boxes" in v.details.get("decided_by", ""), v.details


@pytest.mark.parametrize("gw", [0.3, 2.0])
def test_label_under_maximize(tmp_path, monkeypatch, gw):
    # gw 0.3: g splits the trees but never flips the label (a proof, no value: nothing to measure)
    decl, prob, margin = _xgb(tmp_path, "binary:logistic", gw)
    half = len(GRID) // 2
    flips = any((prob[i] > 0.5) != (prob[i + half] > 0.5) for i in range(half))
    assert flips == (gw == 2.0)
    v = _check(tmp_path, monkeypatch, decl, "label(m(x)) == label(m(x'))", "maximize")
    assert v.status == ("violated" if flips else "holds"), v.reason
    if v.status == "holds":
        assert v.how == "proved" and v.proof is not None and v.value is None


def test_a_lightgbm_sigmoid_other_than_one_is_not_read_as_softmax(tmp_path, monkeypatch):
    decl, prob, _ = _lgb(tmp_path, 0.5)
    eps = float(_largest(prob)) * 1.5
    v = _check(tmp_path, monkeypatch, decl, f"|prob(m(x)) - prob(m(x'))| <= {eps!r}", "prove")
    assert v.status != "violated"
    if v.status == "unknown":
        assert "class probabilities are not read as trees" in v.reason, v.reason



@pytest.mark.parametrize("objective", ["cross_entropy", "xentropy"])
def test_lightgbm_cross_entropy_predict_is_the_plain_sigmoid_bit_for_bit(objective):
    # what _plain_sigmoid rests on: LightGBM's cross_entropy predict is binary sigmoid:1's, bit for bit,
    # on the same trees -- a trained model's raw scores, and one tree whose two leaves are set to
    # chosen raw scores (0 and -0, tiny, near exp's overflow, random) -- so the boxes' softmax of
    # (0, z) reads it as they read binary's
    lgb = pytest.importorskip("lightgbm")
    X, y = _xy()
    rng = np.random.default_rng(5)
    params = {"objective": objective, "num_leaves": 4, "verbose": -1, "min_data_in_leaf": 5, "num_threads": 1}
    trained = lgb.train(params, lgb.Dataset(X, label=y), 6).model_to_string()
    assert "objective=cross_entropy\n" in trained

    def as_binary(text):
        return lgb.Booster(model_str=text.replace("objective=cross_entropy\n", "objective=binary sigmoid:1\n"))

    def same(text, pts):
        a, b = lgb.Booster(model_str=text), as_binary(text)
        raw = a.predict(pts, raw_score=True)
        assert raw.view(np.int64).tolist() == b.predict(pts, raw_score=True).view(np.int64).tolist()
        assert a.predict(pts).view(np.int64).tolist() == b.predict(pts).view(np.int64).tolist()
        return raw

    pts = np.c_[rng.integers(0, 2, 2000), rng.uniform(-1, 9, 2000), rng.uniform(-1, 4, 2000)]
    assert len(set(same(trained, pts).tolist())) > 4
    one = lgb.train({**params, "num_leaves": 2, "min_data_in_leaf": 1}, lgb.Dataset(X, label=y), 1)
    text = one.model_to_string()
    j, thr = one.dump_model()["tree_info"][0]["tree_structure"]["split_feature"], \
        one.dump_model()["tree_info"][0]["tree_structure"]["threshold"]
    sides = np.zeros((2, 3))
    sides[0, j], sides[1, j] = thr - 1, thr + 1
    values = [0.0, -0.0, 5e-324, -1e-300, 1e-17, -36.7, 709.0, -745.2, 800.0] + rng.normal(0, 4, 400).tolist()
    seen = set()
    for a, b in zip(values[0::2], values[1::2]):
        edited = re.sub(r"leaf_value=\S+ \S+", f"leaf_value={a!r} {b!r}", text, count=1)
        seen.update(same(edited, sides).tolist())
    assert 0.0 in seen and len(seen) > 200


def test_lightgbm_cross_entropy_lambda_is_refused_naming_its_objective(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    X, y = _xy()
    lgb.train({"objective": "xentlambda", "num_leaves": 4, "verbose": -1, "num_threads": 1},
              lgb.Dataset(X, label=y), 3).save_model(str(tmp_path / "m.txt"))
    (tmp_path / "s.fair").write_text(SPEC.format(decl='lightgbm("m.txt")') + PROP.format(
        ensure="|prob(m(x)) - prob(m(x'))| <= 0.1", mode="prove"))
    r = run_cli("check", "s.fair", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    msg = " ".join((r.stdout + r.stderr).split())
    assert "objective 'cross_entropy_lambda'" in msg and "log(1 + exp(raw score))" in msg and "m.txt" in msg


def _logitraw(tmp_path, base):
    """A binary:logitraw booster whose margins are shifted by editing its base score (the margin's
    offset): (the booster, its margins on GRID)."""
    import json

    xgb = pytest.importorskip("xgboost")
    X, y = _xy(0.3)
    b = xgb.train({"objective": "binary:logitraw", "max_depth": 2, "eta": 0.4, "nthread": 1}, xgb.DMatrix(X, label=y), 5)
    doc = json.loads(b.save_raw("json"))
    doc["learner"]["learner_model_param"]["base_score"] = f"[{float(base)!r}]"
    c = xgb.Booster()
    c.load_model(bytearray(json.dumps(doc).encode()))
    c.save_model(str(tmp_path / "m.json"))
    return c, np.asarray(c.predict(xgb.DMatrix(GRID)), np.float64)


@pytest.mark.parametrize("base", [-0.875, -0.25, 0.0, 0.25])
@pytest.mark.parametrize("output, cut", [('output = "predict"', 0.5), ('output = "margin"', 0.0),
                                         ("score = logit", 0.0)])
def test_logitraw_label_by_its_declared_rule(tmp_path, monkeypatch, base, output, cut):
    # binary:logitraw's predict is its margin z: output = "predict" is XGBClassifier.predict's rule
    # (class 1 iff z > 0.5), output = "margin" the margin's (z > 0). The boxes read the margin as the
    # columns (0, z), whose first largest is z > 0: for "predict" they were the wrong rule (api-solver
    # 39000030 p1 / p2: the runtime disagreed with the boxes' certain classes, unknown; base -0.25 here,
    # unknown before, holds now). Declared score = logit (no output) is the margin's rule, z > 0
    # (_Boosted.decision_margin; the boxes cut it at 0.5 before: base 0.25 was unknown). The bases give
    # each rule holding and violated (both, neither, one, the other).
    xgb = pytest.importorskip("xgboost")
    c, z = _logitraw(tmp_path, base)
    half = len(GRID) // 2
    flips = any((z[i] > cut) != (z[i + half] > cut) for i in range(half))
    v = _check(tmp_path, monkeypatch, f'xgboost("m.json", {output})', "label(m(x)) == label(m(x'))",
               "prove")
    if flips:
        assert v.status == "violated", v.reason
        w = c.predict(xgb.DMatrix(np.array([v.witness.x, v.witness.x_prime])))
        assert (w[0] > cut) != (w[1] > cut), (w, cut)
    else:
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason


def _sk_booster(tmp_path, kind, seed, loss="log_loss"):
    """A tiny scikit-learn binary booster (HistGradientBoosting or GradientBoosting) whose leaves are
    reset to dyadic margins from {+-1/2, +-1, +-3/2} (zero baseline): its margins are exact, and many
    pairs have mathematically equal probability differences (sigmoid(a) - sigmoid(b) = sigmoid(-b) -
    sigmoid(-a)) that expit's float64 may or may not round alike -- ties for the spec's <= / <."""
    sio = pytest.importorskip("skops.io")
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier

    X, y = _xy()
    rng = np.random.default_rng(seed)
    dyadic = np.array([-1.5, -1.0, -0.5, 0.5, 1.0, 1.5])
    if kind == "hgb":
        est = HistGradientBoostingClassifier(max_iter=4, max_leaf_nodes=4, learning_rate=0.5,
                                             random_state=0).fit(X, y)
        est._baseline_prediction = np.zeros_like(est._baseline_prediction)
        for (pred,) in est._predictors:
            leaf = pred.nodes["is_leaf"].astype(bool)
            pred.nodes["value"][leaf] = rng.choice(dyadic, int(leaf.sum()))
    else:
        est = GradientBoostingClassifier(n_estimators=4, max_depth=2, learning_rate=0.5, init="zero", loss=loss,
                                         random_state=0).fit(X, y)
        for (t,) in est.estimators_:
            v = t.tree_.value
            leaf = t.tree_.children_left == -1
            v[leaf, 0, 0] = rng.choice(dyadic, int(leaf.sum()))
            assert np.array_equal(t.tree_.value[leaf, 0, 0], v[leaf, 0, 0])     # a view, not a copy
    if tmp_path is not None:
        sio.dump(est, str(tmp_path / "m.skops"))
    return 'sklearn("m.skops")', est


def _decimals_around(top: Fraction) -> tuple[str, str]:
    """The nearest thresholds a spec reads as written at or below / at or above ``top``: shortest
    decimals of floats (a spec's number is its float's ``repr``: ``fairspec.certify.exact.threshold_of``)."""
    f = float(top)
    near = [Fraction(repr(float(g))) for g in (np.nextafter(np.nextafter(f, -1), -1), np.nextafter(f, -1), f,
                                        np.nextafter(f, 2), np.nextafter(np.nextafter(f, 2), 2))]
    lo = max(r for r in near if r <= top)
    hi = min(r for r in near if r >= top)
    return repr(float(lo)), repr(float(hi))


@pytest.mark.parametrize("kind, loss", [("hgb", "log_loss"), ("gb", "log_loss"), ("gb", "exponential")])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cls", [0, 1])
@pytest.mark.parametrize("path", ["solvers", "enumeration"])
def test_sklearn_boosters_prob_next_to_eps(tmp_path, monkeypatch, kind, loss, seed, cls, path):
    # scikit-learn's binary boosters: predict_proba is expit(f * decision_function) in float64 (class 0:
    # 1 - that), f = 1 for the log loss, 2 for GradientBoosting's exponential loss (ExponentialLoss,
    # HalfLogitLink: expit(2 z), 2 z exact), the plain sigmoid of the (0, f z) columns the leaf boxes
    # bound (the milp / smt tree encodings' "no violating pair" was unknown on them: trees-solver seed
    # 44, 11 of 14 unknowns; the exponential loss was refused there before). eps is the largest
    # difference the library's predict_proba shows, or the nearest threshold a spec can write below /
    # above it (an ulp from it, far inside the bounds' error allowance: only the library's own outputs,
    # compared exactly, decide): below it is violated (replayed), above it holds (proved, <= and <),
    # maximize gives it exactly. "enumeration": the small domain enumerated whole on the library
    decl, est = _sk_booster(tmp_path, kind, seed, loss=loss)
    out = est.predict_proba(GRID)[:, cls]
    top = _largest(out)
    assert top > 0
    lo, hi = _decimals_around(top)

    def replay(W):
        return est.predict_proba(W)[:, cls]

    post = f"|prob(m(x), {cls}) - prob(m(x'), {cls})|"
    cases = [("<=", hi, "prove"), ("<", hi, "prove"), ("<=", hi, "maximize"), ("<=", lo, "prove"),
             ("<", lo, "prove")]
    for op, eps, mode in cases:
        if path == "enumeration":
            monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
            (tmp_path / "s.fair").write_text(SPEC.format(decl=decl) + PROP.format(ensure=f"{post} {op} {eps}",
                                                                                  mode=mode))
            v = fairspec.check(tmp_path / "s.fair")["p"]
        else:
            v = _check(tmp_path, monkeypatch, decl, f"{post} {op} {eps}", mode)
        if (top < Fraction(eps)) if op == "<" else (top <= Fraction(eps)):
            assert v.status == "holds" and v.how == "proved" and v.proof is not None, (op, eps, v.reason)
            if path == "solvers":
                assert v.proof.method == "bab-certificate" and "leaf boxes" in v.reason, v.reason
                if mode == "maximize":       # the value is the float of the exact maximum the proof names
                    assert v.value == float(top) and Fraction(v.proof.detail["maximum"]) == top, (v.value, top)
            elif mode == "maximize":
                assert v.value == float(top), (v.value, float(top))
        else:
            assert v.status == "violated", (op, eps, v.reason)
            o = replay(np.array([v.witness.x, v.witness.x_prime]))
            d = abs(Fraction(float(o[0])) - Fraction(float(o[1])))
            assert d > Fraction(eps) if op == "<=" else d >= Fraction(eps)


def test_sklearn_exponential_loss_predict_proba_is_expit_of_twice_the_margin():
    # what the factor 2 rests on, in the installed scikit-learn: predict_proba[:, 1] is expit(2 z) bit
    # for bit (z = decision_function), [:, 0] is 1 - that, and predict is the positive class iff z >= 0
    # (a margin of exactly 0 included: the dyadic leaves reach it)
    from scipy.special import expit

    from fairspec.models.trees import sklearn_link_factor

    for seed in range(4):
        est = _sk_booster(None, "gb", seed, loss="exponential")[1]
        z = est.decision_function(GRID)
        p = est.predict_proba(GRID)
        assert sklearn_link_factor(est) == 2.0
        assert p[:, 1].view(np.int64).tolist() == expit(2 * z).view(np.int64).tolist()
        assert p[:, 0].view(np.int64).tolist() == (1 - expit(2 * z)).view(np.int64).tolist()
        assert (est.predict(GRID) == est.classes_[(z >= 0).astype(int)]).all()
    assert sklearn_link_factor(_sk_booster(None, "gb", 0)[1]) == 1.0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("path", ["solvers", "enumeration"])
def test_sklearn_exponential_loss_label_against_brute_force(tmp_path, monkeypatch, seed, path):
    # label of the exponential loss: predict, class 1 iff z >= 0 (the trees' S = 2 z, tie rule class 1);
    # the dyadic leaves put some margins at exactly 0
    decl, est = _sk_booster(tmp_path, "gb", seed, loss="exponential")
    lab = est.predict(GRID)
    half = len(GRID) // 2
    flips = any(lab[i] != lab[i + half] for i in range(half))
    ensure, mode = "label(m(x)) == label(m(x'))", "prove"
    if path == "enumeration":
        (tmp_path / "s.fair").write_text(SPEC.format(decl=decl) + PROP.format(ensure=ensure, mode=mode))
        v = fairspec.check(tmp_path / "s.fair")["p"]
    else:
        v = _check(tmp_path, monkeypatch, decl, ensure, mode)
    if flips:
        assert v.status == "violated", v.reason
        w = est.predict(np.array([v.witness.x, v.witness.x_prime]))
        assert w[0] != w[1]
    else:
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason


def test_sklearn_exponential_loss_logit_is_ambiguous(tmp_path):
    # logit(m(x)) of the exponential loss names two numbers: decision_function z, or the log-odds 2 z of
    # predict_proba -- lint error FS415 (the loss read from the skops file, nothing run), unless the
    # declaration reads output = "decision_function"; prob and label stay fine
    decl, est = _sk_booster(tmp_path, "gb", 0, loss="exponential")
    for ensure, bad in (("|logit(m(x)) - logit(m(x'))| <= 0.5", True),
                        ("|logit(m(x), 1) - logit(m(x'), 1)| <= 0.5", True),
                        ("|prob(m(x)) - prob(m(x'))| <= 0.5", False), ("label(m(x)) == label(m(x'))", False)):
        (tmp_path / "s.fair").write_text(SPEC.format(decl=decl) + PROP.format(ensure=ensure, mode="prove"))
        errs = [d for d in fairspec.lint(tmp_path / "s.fair") if d.severity == "error"]
        if bad:
            assert [d.code for d in errs] == ["FS415"], errs
            assert "loss = 'exponential'" in errs[0].message and "2 z" in errs[0].message, errs[0].message
            assert 'output = "decision_function"' in (errs[0].hint or ""), errs[0].hint
        else:
            assert not errs, errs
    declared = decl[:-1] + ', output = "decision_function")'
    (tmp_path / "s.fair").write_text(SPEC.format(decl=declared) + PROP.format(
        ensure="|logit(m(x)) - logit(m(x'))| <= 0.5", mode="prove"))
    assert not [d for d in fairspec.lint(tmp_path / "s.fair") if d.severity == "error"]


@pytest.mark.parametrize("ensure", ["|logit(m(x)) - logit(m(x'))| <= 0.5", "|logit(m(x), 1) - logit(m(x'), 1)| <= 0.5"])
@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
def test_sklearn_exponential_loss_logit_refused_at_check_where_lint_cannot_read(tmp_path, monkeypatch, ensure,
                                                                               enumerate_pairs):
    # a pickle whose loss lint does not read: check refuses the same way (unknown with the sentence),
    # on the enumeration and on the solver path
    import pickle

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    _, est = _sk_booster(tmp_path, "gb", 0, loss="exponential")
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(est))
    (tmp_path / "s.fair").write_text(SPEC.format(decl='sklearn("m.pkl", trust pickle)') + PROP.format(
        ensure=ensure, mode="prove"))
    rep = fairspec.check(tmp_path / "s.fair")
    v = rep["p"]
    assert v.status == "unknown" and "2 z" in v.reason and "decision_function" in v.reason, v.reason


@pytest.mark.parametrize("kind, loss", [("hgb", "log_loss"), ("gb", "log_loss"), ("gb", "exponential")])
@pytest.mark.parametrize("seed", [0, 3])
def test_sklearn_boosters_logit_at_exactly_eps(tmp_path, monkeypatch, kind, loss, seed):
    # a scikit-learn binary booster's logit is its decision_function, column 1 of the (0, z) scores the
    # leaf boxes bound (trees-solver seed 44: 3 unknowns, the boxes were not tried on scikit-learn's
    # logit). Dyadic leaves make every difference exact, so eps at the largest one is a true tie: <=
    # holds (proved), < is violated (replayed), maximize gives it exactly. The exponential loss's logit
    # is z only as declared (output = "decision_function"): its boxes read (0, z) there, not (0, 2 z)
    decl, est = _sk_booster(tmp_path, kind, seed, loss=loss) if kind == "gb" else _sk_booster(tmp_path, kind, seed)
    if loss == "exponential":
        decl = decl[:-1] + ', output = "decision_function")'
    z = est.decision_function(GRID)
    top = _largest(z)
    assert top > 0 and Fraction(repr(float(top))) == top
    eps = repr(float(top))
    for op, mode in (("<=", "prove"), ("<", "prove"), ("<=", "maximize"), ("<", "find")):
        v = _check(tmp_path, monkeypatch, decl, f"|logit(m(x)) - logit(m(x'))| {op} {eps}", mode)
        if op == "<=":
            assert v.status == "holds" and v.how == "proved" and v.proof is not None, (op, mode, v.reason)
            assert "leaf boxes" in v.details.get("decided_by", ""), v.details
            if mode == "maximize":
                assert Fraction(v.value) == top, (v.value, float(top))
        else:
            assert v.status == "violated", (op, mode, v.reason)
            o = est.decision_function(np.array([v.witness.x, v.witness.x_prime]))
            assert abs(Fraction(float(o[0])) - Fraction(float(o[1]))) == top


@pytest.mark.parametrize("using", ["milp", "smt"])
def test_partition_coverage_counts_only_certified_holds_as_proved(tmp_path, monkeypatch, using):
    # a tree model's partitions whose holds came from the instant check or a solver's word (no certify
    # Proof) were counted "proved: 3" beside "certified 0%" of the shares; an auditor reads proved
    # literally: they are "uncertified" now, and the verdict's proof is the leaf boxes' (the whole domain)
    decl, est = _sk_booster(tmp_path, "hgb", 0)
    top = _largest(est.predict_proba(GRID)[:, 1])
    prop = PROP.format(ensure=f"|prob(m(x)) - prob(m(x'))| <= {float(top) * 1.5!r}", mode="prove")
    prop = prop.replace("  mode = prove\n", f"  mode = prove\n  using {using}\n  partitions = 3\n")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (tmp_path / "s.fair").write_text(SPEC.format(decl=decl) + prop)
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    v = rep["p"]
    assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
    cov = v.details["coverage"]
    assert cov["partitions"] == 3
    assert cov["proved"] + cov["refuted"] + cov["undecided"] + cov.get("uncertified", 0) == 3, cov
    certified = int(cov["shares"]["certified_boxes"])
    assert cov.get("uncertified", 0) > 0, cov     # here: the instant check's or a solver's holds, no Proof
    assert cov["proved"] == certified, cov        # proved partitions are the ones with a certify Proof


@pytest.mark.parametrize("post", ["label", "prob", "logit"])
@pytest.mark.parametrize("declared", ["", ', output = "margin"'])
def test_a_witness_shows_what_the_post_reads_on_every_tree_path(tmp_path, monkeypatch, post, declared):
    # the leaf boxes' witness showed the post's values (a label's classes) where enumeration and the
    # solvers showed the declared output (a margin, a probability): every path shows the library's
    # label / probability / margin now, the values the post compares
    xgb = pytest.importorskip("xgboost")
    decl, prob, margin = _xgb(tmp_path, "binary:logistic")
    decl = decl[:-1] + declared + ")"
    b = xgb.Booster(model_file=str(tmp_path / "m.json"))
    ensure = {"label": "label(m(x)) == label(m(x'))", "prob": "|prob(m(x)) - prob(m(x'))| <= 0.01",
              "logit": "|logit(m(x)) - logit(m(x'))| <= 0.01"}[post]
    (tmp_path / "s.fair").write_text(SPEC.format(decl=decl) + PROP.format(ensure=ensure, mode="find"))
    for path, env in (("enumeration", "1"), ("solvers", "0")):
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", env)
        v = fairspec.check(tmp_path / "s.fair")["p"]
        assert v.status == "violated", (path, v.reason)
        W = np.array([v.witness.x, v.witness.x_prime])
        p = np.asarray(b.predict(xgb.DMatrix(W)), np.float64)
        want = {"label": (p > 0.5).astype(float), "prob": p,
                "logit": np.asarray(b.predict(xgb.DMatrix(W), output_margin=True), np.float64)}[post]
        assert list(v.witness.outputs) == want.tolist(), (path, v.witness.outputs, want)
