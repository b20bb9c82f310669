"""Issue 23 item 1: scikit-learn Pipeline + ColumnTransformer saved with skops load directly; the
fitted preprocessing is folded into the encoding (no encode block needed), a hand-written block is
checked against it, and every backend sees the final estimator on the encoded columns."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler  # noqa: E402

from fairspec.models import load_model  # noqa: E402
from fairspec.models.sklearn_model import import_skops_io  # noqa: E402

AGES, HOURS = range(18, 24), range(1, 5)


def _frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.integers(AGES.start, AGES.stop, n), "sex": rng.choice(["F", "M"], n),
                       "race": rng.choice(["A", "B", "C"], n), "edu": rng.choice(["hs", "ba", "ms"], n),
                       "h": rng.integers(HOURS.start, HOURS.stop, n), "junk": rng.normal(size=n)})
    y = (((df.age > 20) & (df.sex == "M")) | (df.h > 3) | ((df.race == "B") & (df.edu == "ms"))).astype(int)
    return df, y


def _pre():
    return ColumnTransformer([("oh", OneHotEncoder(), ["sex", "race"]), ("ord", OrdinalEncoder(), ["edu"]),
                              ("sc", StandardScaler(), ["age"]), ("mm", MinMaxScaler(), ["h"]),
                              ("d", "drop", ["junk"])])


FINALS = {
    "lr": lambda: LogisticRegression(),
    "hgb": lambda: HistGradientBoostingClassifier(max_iter=6, max_depth=3, random_state=0),
    "rf": lambda: RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0),
    "mlp": lambda: MLPClassifier(hidden_layer_sizes=(4,), max_iter=300, random_state=0),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    import warnings

    d = tmp_path_factory.mktemp("pipes")
    df, y = _frame()
    out = df.assign(y=y)
    out.to_csv(d / "people.csv", index=False)
    sio = import_skops_io()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make in FINALS.items():
            pipe = Pipeline([("pre", _pre()), ("clf", make())]).fit(df, y)
            sio.dump(pipe, str(d / f"{name}.skops"))
            sio.dump(pipe.steps[-1][1], str(d / f"{name}_final.skops"))     # the final estimator alone
    return d


FEATURES = f'''data people = csv("people.csv", label = y == 1)
features P from people {{
  age : int in [{AGES.start}, {AGES.stop - 1}]
  sex : {{F, M}} protected
  race : {{A, B, C}}
  edu : {{ba, hs, ms}}
  h : int in [{HOURS.start}, {HOURS.stop - 1}]
}}
'''

PROPS = '''
property parity {
  statistical_parity(m, groups sex) <= 0.1
}
property same {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure label(m(x)) == label(m(x'))
  using BACKEND
}
'''


def _block(pipe_path):
    """The hand-written encode block a user would restate for the final estimator."""
    import skops.io as sio

    pipe = sio.load(str(pipe_path), trusted=sio.get_untrusted_types(file=str(pipe_path)))
    ct = pipe.steps[0][1]
    sc, mm = ct.named_transformers_["sc"], ct.named_transformers_["mm"]
    return (f"encode P for m {{\n  sex, race : onehot\n  edu : code\n"
            f"  age : standard(mean = {float(sc.mean_[0])!r}, std = {float(sc.scale_[0])!r})\n"
            f"  h : minmax(lo = {float(mm.data_min_[0])!r}, hi = {float(mm.data_max_[0])!r})\n}}\n")


def test_the_folded_encoding_reproduces_the_pipelines_transform(project):
    from fairspec.models.sklearn_pipeline import fold

    m = load_model("sklearn", project / "lr.skops")
    f = m.folded
    assert [(c.column, c.kind) for c in f.columns] == [("sex", "onehot"), ("race", "onehot"), ("edu", "code"),
                                                       ("age", "standard"), ("h", "minmax")]
    assert f.dropped == ("junk",) and f.width == 8 and m.input_width == 8
    df, _ = _frame(50, seed=4)
    X = np.zeros((len(df), f.width))
    for c in f.columns:
        v = df[c.column].to_numpy()
        if c.kind == "onehot":
            for j, cat in enumerate(c.categories):
                X[:, c.offset + j] = v == cat
        elif c.kind == "code":
            X[:, c.offset] = [c.categories.index(x) for x in v]
        elif c.kind == "standard":
            X[:, c.offset] = (v - c.mean) / c.std
        else:
            X[:, c.offset] = v * c.scale + c.shift     # MinMaxScaler's own arithmetic: X *= scale_; X += min_
    T = m.pipeline.steps[0][1].transform(df)
    assert np.array_equal(X, T)                        # every column bit for bit, MinMaxScaler's too
    assert np.array_equal(m.score(X), m.pipeline.predict_proba(df)[:, 1])
    assert fold(m.pipeline).columns == f.columns


@pytest.mark.parametrize("name", list(FINALS))
def test_without_an_encode_block_the_verdicts_and_values_are_the_final_estimators_with_a_hand_block(
        project, name):
    from fairspec.pipeline import check

    backend = "milp"
    a = project / f"{name}_auto.fair"
    a.write_text(FEATURES + f'model m = sklearn("{name}.skops")\n' + PROPS.replace("BACKEND", backend))
    b = project / f"{name}_hand.fair"
    b.write_text(FEATURES + f'model m = sklearn("{name}_final.skops")\n' + _block(project / f"{name}.skops")
                 + PROPS.replace("BACKEND", backend))
    auto, hand = check(a).verdicts, check(b).verdicts
    assert [(v.name, v.status, v.how, v.value) for v in auto] == [(v.name, v.status, v.how, v.value) for v in hand]


@pytest.mark.parametrize("name", ["lr", "hgb", "rf"])
@pytest.mark.parametrize("backend", ["milp", "smt"])
def test_exact_backends_on_a_pipeline_agree_with_brute_force_on_its_own_predict(project, name, backend):
    """No data: the solver decides over the whole domain; the truth enumerates every pair
    through the pipeline's own predict (a data frame of raw values)."""
    import skops.io as sio

    from fairspec.pipeline import check

    pipe = sio.load(str(project / f"{name}.skops"), trusted=sio.get_untrusted_types(file=str(project / f"{name}.skops")))
    rows = list(product(AGES, ["A", "B", "C"], ["ba", "hs", "ms"], HOURS))
    frame = lambda sex: pd.DataFrame([{"age": a, "sex": sex, "race": r, "edu": e, "h": h, "junk": 0.0}  # noqa: E731
                                      for a, r, e, h in rows])
    lf, lm = pipe.predict(frame("F")), pipe.predict(frame("M"))
    pf, pm = pipe.predict_proba(frame("F"))[:, 1], pipe.predict_proba(frame("M"))[:, 1]
    eps = float(np.round(np.max(np.abs(pf - pm)) + 0.005, 2))           # a tolerance that holds, not at a tie
    want = {"same": "violated" if np.any(lf != lm) else "holds", "close": "holds"}
    spec = project / f"{name}_{backend}_exact.fair"
    spec.write_text(FEATURES.replace("from people ", "").split("\n", 1)[1] + f'model m = sklearn("{name}.skops")\n'
                    + PROPS.split("property same")[1].join(["property same", ""]).replace("BACKEND", backend)
                    + f"property close {{\n  forall x, x' : P\n  require x.* == x'.* except {{sex}}\n"
                      f"  ensure |prob(m(x)) - prob(m(x'))| <= {eps}\n  using {backend}\n}}\n")
    verdicts = {v.name: v for v in check(spec).verdicts}
    assert verdicts["close"].status == "holds" and verdicts["close"].how == "proved", verdicts["close"].reason
    v = verdicts["same"]
    assert v.status == want["same"], v.reason
    if v.status == "holds":
        assert v.how == "proved"
    else:
        w = v.witness
        one = lambda f: pd.DataFrame([{**{k: f[k] for k in ("age", "sex", "race", "edu", "h")}, "junk": 0.0}])  # noqa: E731
        assert pipe.predict(one(w.features))[0] != pipe.predict(one(w.features_prime))[0]


def _diag_codes(spec):
    from fairspec.sema.check import check_file

    return [(d.code, d.span.line if d.span else None) for d in check_file(spec).diagnostics if d.is_error]


def test_a_hand_block_that_disagrees_with_the_pipeline_is_fs422_at_its_line(project):
    good = _block(project / "lr.skops")
    base = FEATURES + 'model m = sklearn("lr.skops")\n'
    spec = project / "disagree.fair"
    spec.write_text(base + good)
    assert _diag_codes(spec) == []
    spec.write_text(base + good.replace("edu : code", "edu : onehot"))
    assert _diag_codes(spec) == [("FS422", 12)]
    spec.write_text(base + good.replace("h : minmax(lo = 1.0", "h : minmax(lo = 0.0"))
    assert _diag_codes(spec) == [("FS422", 14)]          # another scaling than the pipeline's
    spec.write_text(base + "encode P for m {\n  age : standard\n  sex, race : onehot\n  edu : code\n  h : minmax\n}\n")
    assert _diag_codes(spec) == [("FS422", 12)]          # another order: the pipeline puts sex first
    spec.write_text(base + "encode P for m {\n  sex, race : onehot\n  edu : code\n  age : standard\n  h : minmax\n}\n")
    assert _diag_codes(spec) == []                       # fitted scaling takes the pipeline's parameters


def test_categories_the_pipeline_does_not_know_or_orders_differently_are_fs422(project):
    spec = project / "cats.fair"
    spec.write_text(FEATURES.replace("race : {A, B, C}", "race : {A, B, C, D}") + 'model m = sklearn("lr.skops")\n')
    assert [c for c, _ in _diag_codes(spec)] == ["FS422"]
    spec.write_text(FEATURES.replace("race : {A, B, C}", "race : {C, B, A}") + 'model m = sklearn("lr.skops")\n')
    assert [c for c, _ in _diag_codes(spec)] == ["FS422"]
    spec.write_text(FEATURES.replace("edu : {ba, hs, ms}", "edu : {ms, hs, ba}") + 'model m = sklearn("lr.skops")\n')
    assert _diag_codes(spec) == []                       # an ordinal code table may follow any order


def test_a_pipeline_it_cannot_fold_names_the_transformers(tmp_path):
    from sklearn.preprocessing import PolynomialFeatures

    df, y = _frame()
    pipe = Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(drop="first"), ["sex"]),
                                                ("poly", PolynomialFeatures(), ["age", "h"])])),
                     ("clf", LogisticRegression(max_iter=1000))]).fit(df, y)
    import_skops_io().dump(pipe, str(tmp_path / "p.skops"))
    m = load_model("sklearn", tmp_path / "p.skops")
    assert m.unfolded and m.input_width is None
    # OneHotEncoder(drop=...) folds (tests/test_pipeline_onehot_drop.py): only PolynomialFeatures is named
    assert m.folded.unfoldable == ("PolynomialFeatures 'poly'",)


def test_passthrough_is_folded_as_raw():
    from pathlib import Path

    m = load_model("sklearn", Path(__file__).parent / "fixtures" / "models" / "people_pipeline.skops")
    assert [(c.column, c.kind, c.offset) for c in m.folded.columns] == [
        ("sex", "onehot", 0), ("race", "onehot", 2), ("age", "standard", 5), ("score", "raw", 6)]


def test_a_pipeline_it_cannot_fold_runs_data_properties_through_its_own_predict_proba(tmp_path):
    """PolynomialFeatures cannot be folded: FS423 names it; group
    metrics and data falsification use the pipeline's own predict_proba on a data frame; the
    solvers end unknown with the reason."""
    from sklearn.preprocessing import PolynomialFeatures

    from fairspec.pipeline import check
    from fairspec.sema.check import check_file

    df, y = _frame()
    pipe = Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(drop="first"), ["sex", "race"]),
                                                ("poly", PolynomialFeatures(), ["age", "h"]),
                                                ("d", "drop", ["junk"])])),
                     ("clf", LogisticRegression(max_iter=1000))]).fit(df, y)
    import_skops_io().dump(pipe, str(tmp_path / "p.skops"))
    df.assign(y=y).to_csv(tmp_path / "people.csv", index=False)
    spec = tmp_path / "s.fair"
    spec.write_text(FEATURES.replace("edu : {ba, hs, ms}\n", "") + 'model m = sklearn("p.skops")\n'
                    + PROPS.replace("BACKEND", "milp") + '''
property proof {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure |prob(m(x)) - prob(m(x'))| <= 0.999
  using milp
}
''')
    diags = check_file(spec).diagnostics
    assert [d.code for d in diags] == ["FS423"], [d.message for d in diags]
    assert "PolynomialFeatures 'poly'" in diags[0].message
    got = {v.name: v for v in check(spec).verdicts}
    rates = {s: pipe.predict(df[df.sex == s]).mean() for s in ("F", "M")}
    assert got["parity"].value == pytest.approx(abs(rates["F"] - rates["M"]), abs=1e-12)
    flips = pipe.predict(df.assign(sex="F")) != pipe.predict(df.assign(sex="M"))
    assert got["same"].status == ("violated" if flips.any() else "unknown")
    # a small domain is decided by enumerating it through the pipeline's own predict_proba
    assert (got["proof"].status, got["proof"].how, got["proof"].details.get("engine")) == ("holds", "proved",
                                                                                           "enumeration")


def test_witnesses_replay_through_the_pipelines_own_predict_proba(project):
    """replay() of a folded pipeline turns the encoded columns back into a data frame and runs
    the whole pipeline: the same values as the final estimator on the encoded columns."""
    from fairspec.pipeline import check
    from fairspec.sema.check import check_file

    spec = project / "lr_auto.fair"
    spec.write_text(FEATURES + 'model m = sklearn("lr.skops")\n' + PROPS.replace("BACKEND", "milp"))
    res = check_file(spec)
    enc = res.spec.encodings[0]
    m = load_model("sklearn", project / "lr.skops")
    m.bind_encoding(enc, res.spec.feature_set(enc.features))
    df, _ = _frame(40, seed=7)
    from fairspec.runtime.encoding import encode

    fs = res.spec.feature_set(enc.features)
    values = {f.name: (np.array([f.domain.categories.index(v) for v in df[f.column]]) if f.domain.kind == "cat"
                       else df[f.column].to_numpy(np.float64)) for f in fs.features}
    X = encode(enc, values, len(df))
    assert np.allclose(m.replay(X), m.pipeline.predict_proba(df)[:, 1], rtol=0, atol=1e-15)
    assert np.allclose(m.replay(X), m.score(X), rtol=0, atol=1e-15)
    same = next(v for v in check(spec).verdicts if v.name == "same")
    assert same.status == "violated" and same.witness.replayed_by == "scikit-learn"


def test_nested_pipelines_with_imputers_fold(tmp_path):
    """Pipeline([SimpleImputer, OneHotEncoder]) inside the ColumnTransformer -- the usual way to
    handle missing values -- folds: the imputer is the identity on every domain point."""
    from sklearn.impute import SimpleImputer

    df, y = _frame()
    cat = Pipeline([("imp", SimpleImputer(strategy="most_frequent")), ("oh", OneHotEncoder())])
    num = Pipeline([("imp", SimpleImputer()), ("sc", StandardScaler())])
    pipe = Pipeline([("pre", ColumnTransformer([("cat", cat, ["sex", "race"]), ("num", num, ["age"]),
                                                ("h", SimpleImputer(), ["h"]), ("d", "drop", ["junk", "edu"])])),
                     ("clf", LogisticRegression(max_iter=1000))]).fit(df, y)
    import_skops_io().dump(pipe, str(tmp_path / "p.skops"))
    m = load_model("sklearn", tmp_path / "p.skops")
    assert not m.unfolded
    assert [(c.column, c.kind, c.offset) for c in m.folded.columns] == [
        ("sex", "onehot", 0), ("race", "onehot", 2), ("age", "standard", 5), ("h", "raw", 6)]
    T = pipe.steps[0][1].transform(df)
    assert np.allclose(m.score(T), pipe.predict_proba(df)[:, 1], rtol=0, atol=0)
    ind = Pipeline([("pre", ColumnTransformer([("imp", SimpleImputer(add_indicator=True), ["age"])])),
                    ("clf", LogisticRegression())]).fit(df.assign(age=df.age.where(df.index % 7 > 0)), y)
    import_skops_io().dump(ind, str(tmp_path / "ind.skops"))
    assert load_model("sklearn", tmp_path / "ind.skops").folded.unfoldable == (
        "SimpleImputer 'imp' (add_indicator=True adds columns)",)


KINDS = '''
distribution d = bayes(people, bins = 3)
property kd {
  k_discrimination(m, over {sex, race}, eps = 0.05) < 3
}
property pb {
  pba(m, flip sex, around people, delta {age: 1, h: 1})
}
property dist {
  statistical_parity(m, groups sex, distribution d) <= 0.1
}
'''


@pytest.mark.parametrize("name", ["lr", "rf"])
def test_every_property_kind_agrees_with_the_hand_written_block(project, name):
    """k-discrimination (search), PBA (milp) and a metric over a learned distribution (dp for the
    linear model, ssat for the forest) give the same verdicts and values on the pipeline without
    an encode block as on its final estimator with the hand-written block."""
    from fairspec.pipeline import check

    a = project / f"{name}_kinds_auto.fair"
    a.write_text(FEATURES + f'model m = sklearn("{name}.skops")\n' + KINDS)
    b = project / f"{name}_kinds_hand.fair"
    b.write_text(FEATURES + f'model m = sklearn("{name}_final.skops")\n' + _block(project / f"{name}.skops") + KINDS)
    auto, hand = check(a).verdicts, check(b).verdicts
    assert len(auto) == 3
    assert [(v.name, v.status, v.value) for v in auto] == [(v.name, v.status, v.value) for v in hand]


def test_repair_of_a_pipeline_writes_the_pipeline_with_its_tree_repaired(tmp_path):
    """FairRepair patches the final tree; the file written is the whole pipeline (its fitted
    preprocessing unchanged), and its own predict on the data frame meets the goal."""
    import skops.io as sio
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.pipeline import check

    df, y = _frame()
    pipe = Pipeline([("pre", _pre()), ("clf", DecisionTreeClassifier(max_depth=4, random_state=0))]).fit(df, y)
    import_skops_io().dump(pipe, str(tmp_path / "dt.skops"))
    df.assign(y=y).to_csv(tmp_path / "people.csv", index=False)
    spec = tmp_path / "r.fair"
    spec.write_text(FEATURES + '''model m = sklearn("dt.skops")
repair fair_dt for m {
  goal  passing_rate_ratio(groups sex) >= 0.8
  bound semantic_difference <= 1.2 * minimal
  write "dt_fair.skops"
}
''')
    (v,) = check(spec).verdicts
    assert (v.status, v.how) == ("holds", "proved"), v.reason
    out = tmp_path / "dt_fair.skops"
    fixed = sio.load(str(out), trusted=sio.get_untrusted_types(file=str(out)))
    assert type(fixed).__name__ == "Pipeline"
    rates = {s: fixed.predict(df[df.sex == s]).mean() for s in ("F", "M")}
    assert min(rates.values()) / max(rates.values()) >= 0.8


@pytest.mark.parametrize("suffix", [".joblib", ".pkl"])
def test_a_trusted_pickled_pipeline_needs_no_encode_block(project, suffix):
    """joblib's own format cannot be read inertly; with `trust pickle` and no encode block the file
    is loaded in lint and folded like the skops one: the same verdicts and values."""
    import pickle

    import joblib
    import skops.io as sio

    from fairspec.pipeline import check

    pipe = sio.load(str(project / "lr.skops"), trusted=sio.get_untrusted_types(file=str(project / "lr.skops")))
    target = project / f"lr{suffix}"
    if suffix == ".joblib":
        joblib.dump(pipe, target)
    else:
        target.write_bytes(pickle.dumps(pipe))
    a = project / f"pickled{suffix}.fair"
    a.write_text(FEATURES + f'model m = sklearn("lr{suffix}", trust pickle)\n' + PROPS.replace("BACKEND", "milp"))
    b = project / "skops_again.fair"
    b.write_text(FEATURES + 'model m = sklearn("lr.skops")\n' + PROPS.replace("BACKEND", "milp"))
    got, want = check(a).verdicts, check(b).verdicts
    assert [(v.name, v.status, v.value) for v in got] == [(v.name, v.status, v.value) for v in want]


def test_an_unfitted_pipeline_or_estimator_is_one_sentence(project):
    """A model saved (or passed to the Python API) before fit: one FS401 saying it is not fitted,
    naming the file or the object, not scikit-learn's missing attribute or a temporary file, and no
    follow-on error about its inputs; a trusted pickle, which lint does not load, when it is loaded."""
    import pickle

    import fairspec
    from fairspec.models import ModelLoadError
    from fairspec.sema.check import check_file

    unfitted = {"Pipeline": Pipeline([("pre", _pre()), ("clf", LogisticRegression())]),
                "LogisticRegression": LogisticRegression()}
    for cls, est in unfitted.items():
        import_skops_io().dump(est, str(project / "unfitted.skops"))
        spec = project / "unfitted.fair"
        spec.write_text(FEATURES + 'model m = sklearn("unfitted.skops")\n' + PROPS.replace("BACKEND", "milp"))
        want = f"holds a scikit-learn {cls} that is not fitted (call its fit method on the training data first)"
        errors = [(d.code, d.message) for d in check_file(spec).diagnostics if d.is_error]
        assert errors == [("FS401", f"{project / 'unfitted.skops'} {want}")]
        rep = fairspec.check(spec, models={"m": est})
        assert [(d.code, d.message) for d in rep.diagnostics if d.is_error] == \
            [("FS401", f"the model given for 'm' is a scikit-learn {cls} that is not fitted (call its fit method "
                       f"on the training data first)")]
    (project / "unfitted.pkl").write_bytes(pickle.dumps(LogisticRegression()))
    with pytest.raises(ModelLoadError, match="unfitted.pkl holds a scikit-learn LogisticRegression that is not fitted"):
        load_model("sklearn", project / "unfitted.pkl", trust_pickle=True)


def test_a_pipeline_that_drops_a_protected_column_is_fs424_and_holds(tmp_path):
    """remainder = "drop" leaves race unread: the model is blind to it, so the property over race
    holds; a warning says why (a hand-written block leaving race out is FS403), and the verdict is
    proved."""
    from fairspec.pipeline import check

    df, y = _frame()
    pipe = Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(), ["sex", "edu"]),
                                                ("sc", StandardScaler(), ["age", "h"])], remainder="drop")),
                     ("clf", LogisticRegression())]).fit(df, y)
    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    df.assign(y=y).to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "s.fair").write_text(FEATURES.replace("race : {A, B, C}", "race : {A, B, C} protected")
                                     + 'model m = sklearn("m.skops")\n' + '''
property same_race {
  forall x, x' : P
  require x.* == x'.* except {race}
  ensure label(m(x)) == label(m(x'))
}
''')
    report = check(tmp_path / "s.fair")
    warned = [d for d in report.diagnostics if d.code == "FS424"]
    assert len(warned) == 1 and "'race'" in warned[0].message and not report.has_errors
    assert [d.code for d in report.diagnostics if d.code.startswith("FS42")] == ["FS424"]
    v = report.verdicts[0]
    assert (v.status, v.how) == ("holds", "proved")


@pytest.mark.parametrize("with_mean, with_std", [(False, True), (True, False), (False, False)])
def test_a_standard_scaler_without_mean_or_std_folds_as_it_transforms(with_mean, with_std):
    """StandardScaler(with_mean=False) still fits mean_ but its transform does not subtract it (and
    with_std=False leaves scale_ None): the folded column is the transform's, bit for bit. Session 19's
    api family: the fold subtracted mean_ anyway, so every verdict on such a pipeline was about another
    model (false proofs, witnesses that were no encoding of their features)."""
    import pandas as pd

    from fairspec.models.sklearn_pipeline import fold

    df = pd.DataFrame({"s": ["F", "M"] * 6, "age": [17, 19, 20, 23, 30, 41] * 2})
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["s"]),
                             ("sc", StandardScaler(with_mean=with_mean, with_std=with_std), ["age"])])
    pipe = Pipeline([("pre", pre), ("clf", LogisticRegression())]).fit(df, np.arange(12) % 2)
    (c,) = [c for c in fold(pipe).columns if c.column == "age"]
    assert c.kind == "standard"
    v = df["age"].to_numpy(dtype=np.float64)
    assert np.array_equal((v - c.mean) / c.std, pre.transform(df)[:, c.offset])


def test_a_witness_lists_the_features_in_the_specs_order_not_the_column_transformers(project):
    """The ColumnTransformer puts sex, race, edu before age (the spec's first feature): the witness
    pair is still read against the spec, so every writer (text, JSON, HTML, SARIF) lists it in the
    spec's order, its values unchanged; x and x' stay in the model's column order."""
    import io
    import json
    import re

    from fairspec.pipeline import check
    from fairspec.report import console, print_text, to_json
    from fairspec.report.ci import to_sarif
    from fairspec.report.html import render

    spec = project / "lr_order.fair"
    spec.write_text(FEATURES + 'model m = sklearn("lr.skops")\n' + PROPS.replace("BACKEND", "milp"))
    report = check(spec, only="same")
    (v,) = report.verdicts
    order = ["age", "sex", "race", "edu", "h"]
    assert load_model("sklearn", project / "lr.skops").folded.columns[3].column == "age"   # the model's order
    assert v.status == "violated" and list(v.witness.features) == order == list(v.witness.features_prime)
    w = json.loads(to_json(report))["properties"][0]["witness"]
    assert list(w["features"]) == order == list(w["features_prime"]) and w["features"]["sex"] != \
        w["features_prime"]["sex"]
    assert w["x"][6] == w["x_prime"][6] and len(w["x"]) == 8        # age's column: 7th of the model's 8
    con = console(record=True, width=200, file=io.StringIO())
    print_text(report, con)
    text = con.export_text()
    rows = [ln.split("│")[1].strip() for ln in text.splitlines() if ln.count("│") == 4]
    assert rows[:5] == order, text
    page = render(report).split("<table class=witness>")[1].split("</table>")[0]
    # the HTML lists the differing feature first, then the rest in the spec's order
    assert re.findall(r"<tr(?: class=differs)?><td>([a-z]+)</td>", page) == ["sex", "age", "race", "edu", "h"]
    msg = json.loads(to_sarif([], report.verdicts, report.property_spans))["runs"][0]["results"][0]["message"]
    assert re.search(r"witness x = \{age: \d+, sex: [FM], race: ", msg["text"]), msg   # spec text, not a dict
