"""Issue 20 item 6: the input names a model file records are read, the encode block is mapped
by them, and a disagreement is a diagnostic -- never an evaluation on swapped columns."""

from __future__ import annotations

import json
from itertools import product

import numpy as np
import pytest

from fairspec.models import load_model
from fairspec.models.peek import peek_input_names

pd = pytest.importorskip("pandas")


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.integers(0, 10, n), "s": rng.integers(0, 2, n), "b": rng.integers(0, 5, n)})
    y = ((df.a + 4 * df.s + rng.normal(0, 2, n)) > 6).astype(int)
    return df.astype(float), y


@pytest.fixture(scope="module")
def named_files(tmp_path_factory):
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    from sklearn.linear_model import LogisticRegression

    from fairspec.models.sklearn_model import import_skops_io

    d = tmp_path_factory.mktemp("named")
    df, y = _frame()
    xgb.XGBClassifier(n_estimators=8, max_depth=3, random_state=0, n_jobs=1).fit(df, y).get_booster() \
        .save_model(str(d / "m.json"))
    lgb.LGBMClassifier(n_estimators=8, max_depth=3, random_state=0, n_jobs=1, verbose=-1,
                       min_child_samples=5).fit(df, y).booster_.save_model(str(d / "m.txt"))
    import_skops_io().dump(LogisticRegression().fit(df, y), str(d / "m.skops"))
    return d


FILES = [("xgboost", "m.json"), ("lightgbm", "m.txt"), ("sklearn", "m.skops")]


@pytest.mark.parametrize("fmt,name", FILES)
def test_recorded_names_are_read_cheaply_and_by_the_loader(named_files, fmt, name):
    assert peek_input_names(fmt, named_files / name) == ("a", "s", "b")
    assert load_model(fmt, named_files / name).input_names == ("a", "s", "b")


def test_an_xgboost_model_fit_on_a_data_frame_evaluates(named_files):
    """Before: "data did not contain feature names" (exit 2)."""
    m = load_model("xgboost", named_files / "m.json")
    X = np.array([[3.0, 1.0, 2.0], [7.0, 0.0, 4.0]])
    assert m.score(X).shape == (2,)
    assert np.allclose(m.tree_ensemble().prob(X), m.score(X), atol=1e-6)


SPEC = '''
features P {
  a : int in [0, 9]
  b : int in [0, 4]
  s : {F, M} protected
}
model m = FORMAT("FILE")
encode P for m {
ENCODE
}
property same {
  forall x, x' : P
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
}
'''


def _spec(tmp_path, named_files, fmt, name, encode):
    (tmp_path / name).write_bytes((named_files / name).read_bytes())
    p = tmp_path / "s.fair"
    p.write_text(SPEC.replace("FORMAT", fmt).replace("FILE", name).replace("ENCODE", encode))
    return p


def _diags(spec):
    from fairspec.sema.check import check_file

    return [(d.code, d.span.line if d.span else None) for d in check_file(spec).diagnostics]


@pytest.mark.parametrize("fmt,name", FILES)
def test_the_models_order_is_silent(named_files, tmp_path, fmt, name):
    spec = _spec(tmp_path, named_files, fmt, name, "  a : raw\n  s : code\n  b : raw")
    assert not [c for c, _ in _diags(spec) if c.startswith("FS42")]


@pytest.mark.parametrize("fmt,name", FILES)
def test_another_order_is_mapped_by_name_with_a_warning_and_the_verdict_is_the_models(named_files, tmp_path,
                                                                                       fmt, name):
    """The block lists b before s (the model has a, s, b): FS421 at b's line, and the check
    evaluates the model on its own columns -- the verdict agrees with brute force."""
    from fairspec.pipeline import check

    spec = _spec(tmp_path, named_files, fmt, name, "  a : raw\n  b : raw\n  s : code")
    assert ("FS421", 10) in _diags(spec)
    m = load_model(fmt, named_files / name)
    pts = np.array(list(product(range(10), range(2), range(5))), dtype=float)   # a, s, b: the model's order
    lab = m.decide(pts).reshape(10, 2, 5)
    want = "violated" if np.any(lab[:, 0, :] != lab[:, 1, :]) else "holds"
    (v,) = check(spec).verdicts
    assert v.status == want, v.reason
    if v.status == "violated":                     # the witness, read back in the model's order, is one
        w = v.witness
        def row(f):
            return [float(f["a"]), float(f["s"] == "M"), float(f["b"])]
        assert m.decide(np.array([row(w.features), row(w.features_prime)])).tolist() in ([0, 1], [1, 0])
    from fairspec.sema.check import check_file

    enc = check_file(spec).spec.encodings[0]
    assert {c.feature: c.offset for c in enc.columns} == {"a": 0, "s": 1, "b": 2}


@pytest.mark.parametrize("fmt,name", FILES)
def test_a_name_the_model_does_not_record_is_an_error_at_its_line(named_files, tmp_path, fmt, name):
    spec = _spec(tmp_path, named_files, fmt, name, "  a : raw\n  s : code\n  b : raw")
    spec.write_text(spec.read_text().replace("b :", "c :").replace("  c : raw\n}", "  c : raw\n}", 1))
    # the feature is renamed c in both the features and the encode block: the model records b
    diags = _diags(spec)
    assert ("FS420", 11) in diags, diags


def test_generic_names_say_nothing(tmp_path):
    xgb = pytest.importorskip("xgboost")
    df, y = _frame()
    xgb.XGBClassifier(n_estimators=3, max_depth=2, n_jobs=1).fit(df.values, y).get_booster() \
        .save_model(str(tmp_path / "m.json"))
    doc = json.loads((tmp_path / "m.json").read_text())
    assert not doc["learner"].get("feature_names")
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("FORMAT", "xgboost").replace("FILE", "m.json")
                    .replace("ENCODE", "  a : raw\n  b : raw\n  s : code"))
    assert not [c for c, _ in _diags(spec) if c.startswith("FS42")]


def test_onehot_blocks_match_get_dummies_names_and_a_reordered_block_is_an_error(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame({"a": rng.integers(0, 10, n).astype(float),
                       "r": rng.choice(["x", "y", "z"], n), "s": rng.integers(0, 2, n).astype(float)})
    X = pd.get_dummies(df, columns=["r"], dtype=float)[["a", "r_x", "r_y", "r_z", "s"]]
    y = ((df.a + 3 * (df.r == "y") + 2 * df.s) > 6).astype(int)
    xgb.XGBClassifier(n_estimators=4, max_depth=3, n_jobs=1).fit(X, y).get_booster().save_model(str(tmp_path / "m.json"))
    base = '''
features P {
  a : int in [0, 9]
  r : {CATS}
  s : {F, M} protected
}
model m = xgboost("m.json")
encode P for m {
  a : raw
  r : onehot
  s : code
}
'''
    spec = tmp_path / "s.fair"
    spec.write_text(base.replace("CATS", "x, y, z"))
    assert not [c for c, _ in _diags(spec) if c.startswith("FS42")]
    spec.write_text(base.replace("CATS", "y, x, z"))
    assert ("FS420", 10) in _diags(spec)
    # the hint's set is the categories in the model's order, as spec text ('x' is a keyword: quoted)
    from fairspec.sema.check import check_file

    (d,) = [d for d in check_file(spec).diagnostics if d.code == "FS420"]
    fragment = d.hint.rsplit(": ", 1)[1]
    assert fragment == '{"x", y, z}', d.hint
    spec.write_text(base.replace("{CATS}", fragment))
    assert not [c for c, _ in _diags(spec) if c.startswith("FS42")]


@pytest.mark.parametrize("labels", [("no", "yes"), (1, 2), (False, True)])
@pytest.mark.parametrize("name", ["DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier",
                                  "GradientBoostingClassifier", "HistGradientBoostingClassifier"])
def test_any_class_label_type_reads_the_trees_exactly(tmp_path, name, labels):
    """Issue 20 item 6: a forest whose classes are strings (or integers other than 0/1) fits its
    members on class indices; its trees are read by index and reproduce predict_proba, so the
    solvers decide (before: 'does not reproduce its predictions', unknown on every property)."""
    import sklearn.ensemble as E
    import sklearn.tree as T

    from fairspec.models.sklearn_model import import_skops_io
    from fairspec.pipeline import check

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 10, 300), rng.integers(0, 2, 300), rng.integers(0, 5, 300)]).astype(float)
    y = np.where(X[:, 0] + 3 * X[:, 1] + rng.normal(0, 2, 300) > 6, labels[1], labels[0])
    cls = getattr(T, name, None) or getattr(E, name)
    kw = {"random_state": 0, "max_depth": 3}
    kw.update({"n_estimators": 5} if name in ("RandomForestClassifier", "ExtraTreesClassifier",
                                              "GradientBoostingClassifier") else {})
    kw.update({"max_iter": 5} if name == "HistGradientBoostingClassifier" else {})
    est = cls(**kw).fit(X, y)
    import_skops_io().dump(est, str(tmp_path / "m.skops"))
    m = load_model("sklearn", tmp_path / "m.skops", index=1)     # labels other than 0/1 name the positive class
    grid = np.array(list(product(range(10), range(2), range(5))), dtype=float)
    assert np.allclose(m.tree_ensemble().prob(grid), est.predict_proba(grid)[:, 1], atol=1e-12)
    spec = tmp_path / "s.fair"
    spec.write_text('''
features P {
  a : int in [0, 99999]
  s : {F, M} protected
  b : int in [0, 9999]
}
model m = sklearn("m.skops", index = 1)
encode P for m {
  a : raw
  s : code
  b : raw
}
property same {
  forall x, x' : P
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
  using milp
}
''')
    (v,) = check(spec).verdicts
    assert v.status != "unknown", v.reason
    if v.status == "violated":                         # the witness flips the library's own decision
        w = v.witness
        assert m.decide(np.array([w.x, w.x_prime])).tolist() in ([0, 1], [1, 0])


def test_a_boolean_one_hot_block_matches_pandas_spellings(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(2)
    n = 200
    X = pd.DataFrame({"a": rng.integers(0, 10, n).astype(float)})
    m = rng.integers(0, 2, n).astype(bool)
    X["member_False"], X["member_True"] = (~m).astype(float), m.astype(float)
    y = ((X.a > 4) & m).astype(int)
    xgb.XGBClassifier(n_estimators=3, max_depth=2, n_jobs=1).fit(X, y).get_booster().save_model(str(tmp_path / "m.json"))
    spec = tmp_path / "s.fair"
    spec.write_text('''
features P {
  a : int in [0, 9]
  member : bool protected
}
model m = xgboost("m.json")
encode P for m {
  a : raw
  member : onehot
}
''')
    assert not [c for c, _ in _diags(spec) if c.startswith("FS42")]


CATEGORICAL_SPEC = '''data d = csv("d.csv", label = y == 1)
features F from d {
  g : {A, B, C}  protected
  f0 : int in [0, 3]
}
model m = MODEL
encode F for m {
  g : CODE
  f0 : raw
}
property q {
  statistical_parity(m, groups g) <= 0.3
  min_group_size = 1
}
'''


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_a_categorical_column_is_coded_as_the_model_was_fit_on_it(tmp_path, lib):
    """A tree model fit on a data frame whose categorical column lists its categories as B, C, A codes
    B = 0, C = 1, A = 2 (XGBoost 3.1+ records them in `cats`, LightGBM in `pandas_categorical`, and
    both re-code a frame by name in predict). A `code` line that codes them otherwise is FS420 at its
    line; the model's table gives the object's own value. Session 19's api family: the declared order
    was fed as the model's codes, so group B's rows were scored as C's (a value off the object's)."""
    import fairspec

    rng = np.random.default_rng(0)
    n = 600
    g = rng.choice(["A", "B", "C"], n)
    f0 = np.where(g == "A", rng.integers(2, 4, n), rng.integers(0, 4, n))
    y = ((g == "B") | (f0 >= 2)).astype(int)
    frame = pd.DataFrame({"g": pd.Categorical(g, categories=["B", "C", "A"]), "f0": f0})
    if lib == "xgboost":
        xgb = pytest.importorskip("xgboost")
        clf = xgb.XGBClassifier(n_estimators=3, max_depth=2, enable_categorical=True, n_jobs=1).fit(frame, y)
        clf.get_booster().save_model(str(tmp_path / "m.json"))
        decl = 'xgboost("m.json")'
    else:
        lgb = pytest.importorskip("lightgbm")
        clf = lgb.LGBMClassifier(n_estimators=5, num_leaves=4, min_child_samples=5, verbose=-1, n_jobs=1).fit(frame, y)
        clf.booster_.save_model(str(tmp_path / "m.txt"))
        decl = 'lightgbm("m.txt")'
    pred = clf.predict(frame)
    rates = [pred[g == c].mean() for c in "ABC"]
    truth = max(rates) - min(rates)
    data = pd.DataFrame({"g": g, "f0": f0, "y": y})
    data.to_csv(tmp_path / "d.csv", index=False)
    spec = tmp_path / "spec.fair"
    spec.write_text(CATEGORICAL_SPEC.replace("MODEL", decl).replace("CODE", "code"))
    codes = [(d.code, d.span.line, d.hint) for d in fairspec.lint(spec) if d.is_error]
    assert codes == [("FS420", 8, "write the model's codes: g : code {B = 0, C = 1, A = 2}")]
    assert fairspec.check(spec, models={"m": clf}).exit_code == 2       # the API's object: the same
    spec.write_text(CATEGORICAL_SPEC.replace("MODEL", decl).replace("CODE", "code {B = 0, C = 1, A = 2}"))
    assert fairspec.lint(spec) == []
    for rep in (fairspec.check(spec), fairspec.check(spec, models={"m": clf}, data={"d": data})):
        assert rep["q"].value == pytest.approx(truth, abs=1e-12)


def test_the_api_keeps_the_categories_of_an_xgbclassifier_sliced_to_its_best_iteration(tmp_path):
    """An XGBClassifier with early stopping is written sliced to its best iteration (its predict's
    rounds), and xgboost's slice records no categories: the API copies them back, so the code table
    is checked against the object's own coding (FS420) and the matching table gives its value."""
    import fairspec

    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    n = 600
    g = rng.choice(["A", "B", "C"], n)
    f0 = np.where(g == "A", rng.integers(2, 4, n), rng.integers(0, 4, n))
    y = ((g == "B") | (f0 >= 2)).astype(int)
    frame = pd.DataFrame({"g": pd.Categorical(g, categories=["B", "C", "A"]), "f0": f0})
    for seed in range(20):           # early stopping that leaves rounds out
        clf = xgb.XGBClassifier(n_estimators=8, max_depth=2, enable_categorical=True, early_stopping_rounds=2,
                                n_jobs=1, random_state=seed)
        clf.fit(frame, y, eval_set=[(frame, np.random.default_rng(seed).integers(0, 2, n))], verbose=False)
        if clf.best_iteration < clf.get_booster().num_boosted_rounds() - 1:
            break
    assert clf.best_iteration < clf.get_booster().num_boosted_rounds() - 1
    pred = clf.predict(frame)
    rates = [pred[g == c].mean() for c in "ABC"]
    data = pd.DataFrame({"g": g, "f0": f0, "y": y})
    spec = tmp_path / "spec.fair"
    spec.write_text(CATEGORICAL_SPEC.replace("MODEL", 'xgboost("m.json")').replace("CODE", "code"))
    assert [d.code for d in fairspec.lint(spec, models={"m": clf}, data={"d": data}) if d.is_error] == ["FS420"]
    spec.write_text(CATEGORICAL_SPEC.replace("MODEL", 'xgboost("m.json")').replace("CODE", "code {B = 0, C = 1, A = 2}"))
    rep = fairspec.check(spec, models={"m": clf}, data={"d": data})
    assert rep["q"].value == pytest.approx(max(rates) - min(rates), abs=1e-12)


@pytest.mark.parametrize("fmt,name", FILES)
def test_a_feature_is_matched_by_its_data_column_before_its_name(named_files, tmp_path, fmt, name):
    """`a column "b"` beside `b column "a"`: the model's names are the columns of the frame it was
    fitted on, so each feature feeds the input its data column names (as a scikit-learn pipeline and a
    multi-input ONNX graph are matched). Before, each matched whichever of its two names came first
    in the model, both the same input: FS420 'two encoded columns match the same input'."""
    spec = _spec(tmp_path, named_files, fmt, name, "  a : raw\n  s : code\n  b : raw")
    spec.write_text(spec.read_text().replace("  a : int in [0, 9]\n  b : int in [0, 4]\n",
                                             '  a : int in [0, 4]  column "b"\n  b : int in [0, 9]  column "a"\n'))
    assert [c for c, _ in _diags(spec) if c.startswith("FS42")] == ["FS421"]
    from fairspec.sema.check import check_file

    enc = check_file(spec).spec.encodings[0]
    assert {c.feature: c.offset for c in enc.columns} == {"b": 0, "s": 1, "a": 2}
