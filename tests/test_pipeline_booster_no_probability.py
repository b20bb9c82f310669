"""A Pipeline whose final XGBClassifier has objective binary:hinge or binary:logitraw: its predict_proba is
its 0 / 1 decision or its raw margin, no probability. ``prob(m(x))`` of it was ``unknown`` at check
(``pipeline_boosters.no_probability`` as the model's ``prob_problem``) while lint said nothing; the same
booster saved alone is FS415 at lint. Lint now reads the pipeline it loads anyway (sema/pipelines.py folds its
preprocessing) and says FS415 for prob, k-discrimination's buckets and calibration_gap, as check would.

``label(m(x))`` of such a pipeline is the pipeline's own predict (XGBClassifier's wrapper: class 1 iff the
margin is > 0.5 for binary:logitraw, as scikit-learn users call it), which fairspec decides: no FS415 nor
FS426 for it, and its verdict is checked against ``pipeline.predict`` on every pair of a small grid whose
dyadic leaf values put margins exactly at 0.5 (where the 0.5 cut and a cut at 0 disagree)."""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
xgb = pytest.importorskip("xgboost")

import fairspec  # noqa: E402

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {A, B, C}  protected
  n : int in [0, 4]
}
model m = sklearn("m.skops")
"""


def _pair(name, ensure):
    return f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n  ensure {ensure}\n}}\n"


ROWS = list(itertools.product("ABC", range(5)))


def _pipe(objective, leaves=None, seed=0):
    """ColumnTransformer(one-hot g, n) + XGBClassifier(objective) on the 15-point grid; ``leaves``: every leaf
    value replaced by a draw from it (dyadic: the margins are exact sums), base_score 0."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame = pd.DataFrame(ROWS, columns=["g", "n"])
    y = np.array([int((g == "B") ^ (n >= 2)) for g, n in ROWS])
    pre = ColumnTransformer([("g", OneHotEncoder(sparse_output=False), ["g"]), ("n", "passthrough", ["n"])])
    clf = xgb.XGBClassifier(n_estimators=4, max_depth=2, learning_rate=0.5, n_jobs=1, random_state=0,
                            objective=objective, min_child_weight=0, base_score=0.0 if leaves else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(frame, y)
    if leaves:
        rng = np.random.default_rng(seed)
        doc = json.loads(bytes(clf.get_booster().save_raw("json")))
        for tr in doc["learner"]["gradient_booster"]["model"]["trees"]:
            for i, left in enumerate(tr["left_children"]):
                if left == -1:
                    tr["split_conditions"][i] = tr["base_weights"][i] = float(rng.choice(leaves))
        out = xgb.XGBClassifier(n_jobs=1)
        out.load_model(bytearray(json.dumps(doc).encode()))
        pipe.steps[-1] = ("clf", out)
    return pipe, frame.assign(y=y)


@pytest.mark.parametrize("objective", ["binary:hinge", "binary:logitraw"])
def test_prob_of_a_pipeline_without_probability_is_fs415_at_lint_as_at_check(tmp_path, objective):
    pipe, data = _pipe(objective)
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC + _pair("p", "|prob(m(x)) - prob(m(x'))| <= 0.1")
                    + "property k {\n  k_discrimination(m, over {g}, eps = 0.1) < 2\n}\n"
                    + "property c {\n  calibration_gap(m, groups g) <= 0.1\n}\n")
    lint = fairspec.lint(spec, models={"m": pipe}, data={"d": data})
    errors = [d for d in lint if d.is_error]
    assert [d.code for d in errors] == ["FS415"] * 3, [(d.code, d.message) for d in lint]
    for d in errors:
        assert objective in d.message and "XGBClassifier" in d.message and "'m'" in d.message, d.message
        assert "label(m(x))" in (d.hint or ""), d.hint
    # check refuses the spec with the same diagnostics (it lints first), never a verdict on prob
    rep = fairspec.check(spec, models={"m": pipe}, data={"d": data})
    assert rep.exit_code == 2 and not len(rep), rep.report.to_json()
    # the same final step saved alone: FS415 at lint too (the message it mirrors)
    alone = tmp_path / "alone.json"
    pipe[-1].get_booster().save_model(str(alone))
    spec2 = tmp_path / "s2.fair"
    spec2.write_text('features G {\n  g0 : int in [0, 1]\n  g1 : int in [0, 1]\n  g2 : int in [0, 1]  protected\n'
                     '  n : int in [0, 4]\n}\nmodel m = xgboost("alone.json")\n'
                     "property p {\n  forall x, x' : G\n  require x.* == x'.* except {g2}\n"
                     "  ensure |prob(m(x)) - prob(m(x'))| <= 0.1\n}\n")
    assert "FS415" in [d.code for d in fairspec.lint(spec2)]


@pytest.mark.parametrize("objective", ["binary:hinge", "binary:logitraw", "binary:logistic"])
def test_label_of_such_a_pipeline_lints_clean(tmp_path, objective):
    pipe, data = _pipe(objective)
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC + _pair("l", "label(m(x)) == label(m(x'))") + _pair("c", "class(m(x)) == class(m(x'))"))
    lint = fairspec.lint(spec, models={"m": pipe}, data={"d": data})
    assert not [d for d in lint if d.is_error or d.code == "FS426"], [(d.code, d.message) for d in lint]


def _truth(pipe, frame, cut=None):
    """'violated' iff some pair differing in g only gets two labels: pipeline.predict, or margin > cut."""
    X = frame[["g", "n"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab = pipe.predict(X) if cut is None else (pipe[-1].predict(pipe[0].transform(X), output_margin=True) > cut)
    return "violated" if any(ROWS[i][1] == ROWS[j][1] and lab[i] != lab[j]
                             for i, j in itertools.permutations(range(len(ROWS)), 2)) else "holds"


LEAVES = (-0.5, -0.25, 0.0, 0.25, 0.5)


def _tie_seeds(want: int):
    """Seeds whose edited logitraw pipeline has margins exactly 0.5 and whose truth under predict (> 0.5)
    differs from the truth under a cut at 0 (so the test tells the two readings apart)."""
    out = []
    for seed in range(200):
        pipe, data = _pipe("binary:logitraw", LEAVES, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = pipe[-1].predict(pipe[0].transform(data[["g", "n"]]), output_margin=True)
        if (z == 0.5).any() and _truth(pipe, data) != _truth(pipe, data, cut=0.0):
            out.append(seed)
            if len(out) == want:
                break
    return out


def test_label_of_a_logitraw_pipeline_is_its_own_predict_at_margins_of_exactly_one_half(tmp_path):
    seeds = _tie_seeds(4)
    assert len(seeds) == 4
    for seed in seeds:
        pipe, data = _pipe("binary:logitraw", LEAVES, seed)
        X = pipe[0].transform(data[["g", "n"]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = pipe[-1].predict(X, output_margin=True)
            lab = pipe.predict(data[["g", "n"]])
        assert np.array_equal(lab, (z > 0.5).astype(int))      # XGBClassifier.predict of logitraw: margin > 0.5
        truth = _truth(pipe, data)
        spec = tmp_path / f"s{seed}.fair"
        spec.write_text(SPEC + _pair("l", "label(m(x)) == label(m(x'))"))
        rep = fairspec.check(spec, models={"m": pipe}, data={"d": data})
        assert not rep.report.internal_errors, rep.report.internal_errors
        v = rep["l"]
        assert v.status == truth, (seed, truth, v.status, v.reason)
        if truth == "violated":
            a, b = (pd.DataFrame([{"g": str(w["g"]), "n": int(w["n"])}])
                    for w in (v.witness.features, v.witness.features_prime))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert pipe.predict(a)[0] != pipe.predict(b)[0], v.witness


@pytest.mark.parametrize("shape", ["no-column-transformer", "bare"])
def test_prob_of_an_unfolded_or_bare_xgb_classifier_without_probability_is_fs415_too(tmp_path, shape):
    """The same without a ColumnTransformer to fold (a Pipeline of array transformers with an encode block) and
    an XGBClassifier declared sklearn on its own: check's model reads the same no_probability, lint loads the
    (trusted) file once and says FS415."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.array([[a, b] for a in range(4) for b in range(4)], dtype=float)
    y = (X[:, 0] + X[:, 1] > 3).astype(int)
    clf = xgb.XGBClassifier(objective="binary:hinge", n_estimators=3, max_depth=2, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = (Pipeline([("s", StandardScaler()), ("c", clf)]) if shape != "bare" else clf).fit(X, y)
    spec = tmp_path / "s.fair"
    spec.write_text("features G {\n  a : int in [0, 3]  protected\n  b : int in [0, 3]\n}\n"
                    'model m = sklearn("m.skops")\nencode G for m {\n  a, b : raw\n}\n'
                    + _pair("p", "|prob(m(x)) - prob(m(x'))| <= 0.1").replace(": F", ": G").replace("{g}", "{a}")
                    + _pair("l", "label(m(x)) == label(m(x'))").replace(": F", ": G").replace("{g}", "{a}"))
    lint = fairspec.lint(spec, models={"m": model})
    errors = [(d.code, d.message) for d in lint if d.is_error]
    assert [c for c, _ in errors] == ["FS415"], errors
    assert "binary:hinge" in errors[0][1] and "'m'" in errors[0][1], errors
