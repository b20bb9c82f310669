"""Session 28: the workflow of a team that ships scikit-learn pipelines (README: Python API, pytest, pipelines as
saved). Each pipeline is fitted on a data frame, handed to ``fairspec.check`` as the object the team holds, and
its group metrics compared with fairlearn's on the pipeline's own ``predict``; a model retrained with other
columns or categories is a diagnostic, never a check against the wrong inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")
fm = pytest.importorskip("fairlearn.metrics")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler  # noqa: E402

import fairspec  # noqa: E402

COLS = ["age", "income", "sex", "region", "education"]

SPEC = """data test = csv("credit.csv", label = approved == 1)
features A from test {
  age : int in [18, 79]
  income : int in [10, 199]
  sex : {F, M} protected
  region : {east, north, south, west}
  education : {high, low, mid}
}
model clf = sklearn("clf.skops")
property sp { statistical_parity(clf, groups sex x region) <= 0.9  min_group_size = 1 }
property eo { equalized_odds(clf, groups region) <= 0.9  compare = to_overall  min_group_size = 1 }
property di { disparate_impact(clf, groups sex) >= 0.01 }
property fnr { false_negative_rate_difference(clf, groups education) <= 0.9 }
"""


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 1200
    df = pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "income": rng.integers(10, 200, n).astype(float),
        "sex": rng.choice(["F", "M"], n),
        "region": rng.choice(["north", "south", "east", "west"], n, p=[.4, .3, .2, .1]),
        "education": rng.choice(["low", "mid", "high"], n),
        "years": rng.integers(0, 40, n),
    })
    z = (0.03 * (df.age - 40) + 0.02 * (df.income - 100) + (df.sex == "M") * 0.5 + (df.education == "high") * 0.8
         - 0.9 * (df.region == "west") + 0.6 * (df.region == "east"))
    df["approved"] = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)
    return df


@pytest.fixture()
def spec(tmp_path):
    p = tmp_path / "credit.fair"
    p.write_text(SPEC)
    return p


def _fit(df, pre, est, cols=COLS):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", pre), ("clf", est)]).fit(df[cols], df.approved)


def _lr():
    return LogisticRegression(max_iter=1000)


def _hgb():
    return HistGradientBoostingClassifier(max_iter=20, max_depth=4, random_state=0)


PIPELINES = {
    "onehot_ignore": lambda: (ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                                 ("cat", OneHotEncoder(handle_unknown="ignore"),
                                                  ["sex", "region", "education"])]), _lr()),
    "onehot_drop_first_sparse": lambda: (ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                                            ("cat", OneHotEncoder(drop="first", sparse_output=True),
                                                             ["sex", "region", "education"])]), _lr()),
    "onehot_min_frequency": lambda: (ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                                        ("cat", OneHotEncoder(min_frequency=150,
                                                                              handle_unknown="infrequent_if_exist"),
                                                         ["sex", "region", "education"])]), _lr()),
    "ordinal_passthrough_hgb": lambda: (ColumnTransformer([("num", "passthrough", ["age", "income"]),
                                                           ("cat", OrdinalEncoder(), ["sex", "region", "education"])],
                                                          remainder="drop"), _hgb()),
    # max_categories groups east and west into one code (the last): their codes are no longer their
    # positions in categories_ (was folded as if they were: another model than the pipeline's)
    "ordinal_max_categories_hgb": lambda: (ColumnTransformer([("num", "passthrough", ["age", "income"]),
                                                              ("cat", OrdinalEncoder(max_categories=3),
                                                               ["sex", "region", "education"])]), _hgb()),
    # transformer_weights multiplies each entry's output: folded as if it did not, the estimator read other inputs
    "weighted_entries_lr": lambda: (ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                                       ("cat", OneHotEncoder(), ["sex", "region", "education"])],
                                                      transformer_weights={"num": 3.0, "cat": 0.5}),
                                    LogisticRegression(max_iter=1000, C=0.01)),
    "weighted_entries_hgb": lambda: (ColumnTransformer([("num", "passthrough", ["age", "income"]),
                                                        ("cat", OrdinalEncoder(), ["sex", "region", "education"])],
                                                       transformer_weights={"num": 0.37, "cat": 1.5}), _hgb()),
    "ordinal_min_frequency_lr": lambda: (ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                                            ("cat", OrdinalEncoder(min_frequency=250),
                                                             ["sex", "region", "education"])]), _lr()),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_group_metrics_of_a_pipeline_agree_with_fairlearn_on_its_predict(frame, spec, name):
    pipe = _fit(frame, *PIPELINES[name]())
    rep = fairspec.check(spec, models={"clf": pipe}, data={"test": frame})
    assert not [d for d in rep.diagnostics if d.is_error], rep.diagnostics
    y, d = frame.approved, pipe.predict(frame[COLS])
    ref = {"sp": fm.demographic_parity_difference(y, d, sensitive_features=frame.sex + "|" + frame.region),
           "eo": fm.equalized_odds_difference(y, d, sensitive_features=frame.region, method="to_overall"),
           "di": fm.demographic_parity_ratio(y, d, sensitive_features=frame.sex),
           "fnr": fm.false_negative_rate_difference(y, d, sensitive_features=frame.education)}
    got = {v.name: v.value for v in rep}
    assert set(got) == set(ref)
    for k in ref:
        assert abs(got[k] - ref[k]) <= 1e-9, (name, k, got[k], ref[k])


def test_an_ordinal_encoder_grouping_infrequent_categories_folds(frame, spec):
    """Its codes are read off its own transform (session 32); east and west share one, which folds since session 33
    (a witness prints the categories of a shared code that make it the property's pair, kinds/shared_codes): no
    FS423, and the group metrics are fairlearn's (above) on its own predict."""
    from fairspec.models.sklearn_pipeline import fold

    pipe = _fit(frame, *PIPELINES["ordinal_max_categories_hgb"]())
    folded = fold(pipe)
    assert folded.unfoldable == ()
    (region,) = [c for c in folded.columns if c.column == "region"]
    assert region.codes[region.categories.index("east")] == region.codes[region.categories.index("west")]
    rep = fairspec.check(spec, models={"clf": pipe}, data={"test": frame})
    assert [d.code for d in rep.diagnostics] == []


SMALL = SPEC.split("model clf")[0].replace("[18, 79]", "[30, 37]").replace("[10, 199]", "[90, 97]") + \
    """model clf = sklearn("clf.skops")
property same {
  forall x, x' : A
  require x.* == x'.* except {sex}
  ensure label(clf(x)) == label(clf(x'))
}
"""


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_individual_fairness_of_a_pipeline_is_its_own_predicts(frame, tmp_path, name):
    """Every point of the domain through the pipeline's predict: violated with a witness that flips there, or
    holds (proved) when no point flips."""
    from itertools import product

    spec = tmp_path / "small.fair"
    spec.write_text(SMALL)
    pipe = _fit(frame, *PIPELINES[name]())
    grid = pd.DataFrame(list(product(range(30, 38), range(90, 98), ["F", "M"], ["east", "north", "south", "west"],
                                     ["high", "low", "mid"])), columns=COLS)
    grid["income"] = grid.income.astype(float)
    p = pipe.predict(grid).reshape(8, 8, 2, 4, 3)
    flips = int((p[:, :, 0] != p[:, :, 1]).sum())
    v = fairspec.check(spec, models={"clf": pipe}, data={"test": frame})["same"]
    if flips == 0:
        assert (v.status, v.how) == ("holds", "proved"), (v.status, v.reason)
        return
    assert v.status == "violated", (v.status, v.reason)
    w = v.witness
    both = pd.DataFrame([w.features, w.features_prime])[COLS]
    both["income"] = both.income.astype(float)
    a, b = pipe.predict(both)
    assert a != b, (w.features, w.features_prime)
    if "cell pairs" not in v.reason:        # every pair counted (a tree model counts cells of its splits)
        assert v.reason.startswith(f"{2 * flips:,} of the "), (v.reason, 2 * flips)


def test_transformer_weights_are_named_and_the_pipeline_evaluated_whole(frame, spec):
    from fairspec.models.sklearn_pipeline import fold

    pipe = _fit(frame, *PIPELINES["weighted_entries_lr"]())
    # a scaler times 3 (not a power of 2: no one affine map rounds as the product does): still evaluated whole
    # (session 32 folds the others: the one-hot block times 0.5 alone folds into the widened LogisticRegression)
    assert fold(pipe).unfoldable == (
        "StandardScaler 'num' (transformer_weights multiplies its output by 3.0, not a power of 2: the scaled product rounds "
        "otherwise than one affine map of the column)",)
    unit = _fit(frame, ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                          ("cat", OneHotEncoder(), ["sex", "region", "education"])],
                                         transformer_weights={"num": 1, "cat": 1.0}), _lr())
    assert fold(unit).unfoldable == ()      # a weight of 1 changes nothing: folded


def test_an_imputer_of_a_value_is_not_the_identity(frame, tmp_path):
    """SimpleImputer(missing_values=0) replaces a value the domain holds (years 0 = not recorded, to the team):
    evaluated whole, FS423 naming it (was folded as the identity: the estimator read 0 where the pipeline
    reads the fill value)."""
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    from fairspec.models.sklearn_pipeline import fold

    spec = tmp_path / "years.fair"
    spec.write_text(SPEC.replace("  sex : {F, M}", "  years : int in [0, 39]\n  sex : {F, M}"))
    cols = COLS + ["years"]
    pre = ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                             ("yrs", make_pipeline(SimpleImputer(missing_values=0, strategy="constant", fill_value=35),
                                                   StandardScaler()), ["years"]),
                             ("cat", OneHotEncoder(), ["sex", "region", "education"])])
    pipe = _fit(frame, pre, _lr(), cols)
    assert fold(pipe).unfoldable == ("SimpleImputer 'yrs/simpleimputer' (missing_values=0 replaces a value, not a "
                                     "missing cell)",)
    rep = fairspec.check(spec, models={"clf": pipe}, data={"test": frame})
    assert [d.code for d in rep.diagnostics] == ["FS423"]
    d = pipe.predict(frame[cols])
    ref = fm.demographic_parity_difference(frame.approved, d, sensitive_features=frame.sex + "|" + frame.region)
    assert abs(rep["sp"].value - ref) <= 1e-9
    nan = _fit(frame, ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                         ("yrs", make_pipeline(SimpleImputer(), StandardScaler()), ["years"]),
                                         ("cat", OneHotEncoder(), ["sex", "region", "education"])]), _lr(), cols)
    assert fold(nan).unfoldable == ()       # NaN is no domain value: the identity, folded


@pytest.mark.parametrize("decl, wanted", [("xgboost(\"gbm.json\")", "an XGBoost model"),
                                          ("lightgbm(\"gbm.txt\")", "a LightGBM model"),
                                          ("torch(\"net.pt\")", "a torch module")])
def test_a_pipeline_given_for_another_librarys_declaration_is_one_sentence_saying_what_to_pass(frame, tmp_path,
                                                                                              decl, wanted):
    if decl.startswith("torch"):
        pytest.importorskip("torch")
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace('sklearn("clf.skops")', decl))
    pipe = _fit(frame, *PIPELINES["onehot_ignore"]())
    with pytest.raises(fairspec.FairspecError) as err:
        fairspec.check(spec, models={"clf": pipe}, data={"test": frame})
    fmt = decl.split("(")[0]
    assert str(err.value).startswith(f"model 'clf' is declared {fmt}(...): pass {wanted} (")
    assert str(err.value).endswith(") or a file path, not a Pipeline")
    assert "AttributeError" not in str(err.value)


def test_a_torch_module_subclass_defined_by_the_team_is_written(frame, tmp_path):
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):             # defined here: its type's module is not torch
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(11, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))

        def forward(self, x):
            return self.body(x)

    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace('sklearn("clf.skops")', 'torch("net.pt")') +
                    "encode A for clf {\n  age, income : standard\n  sex, region, education : onehot\n}\n")
    torch.manual_seed(0)
    rep = fairspec.check(spec, models={"clf": Net()}, data={"test": frame}, property="di")
    assert rep["di"].status in ("holds", "violated", "unknown") and rep.exit_code != 2, rep.diagnostics


@pytest.mark.parametrize("block", [False, True])
def test_an_ordinal_pipeline_retrained_on_a_new_category_is_fs437_at_the_feature(frame, tmp_path, block):
    """A category added (the team's data now has region 'central'): a one-hot block is FS422 (its width is
    the pipeline's), an ordinal code keeps the declared categories' codes but the properties no longer
    cover the model's inputs: warning FS437 at the feature, which an ignore comment acknowledges."""
    from fairspec.pipeline import lint

    import skops.io as sio

    more = frame.copy()
    more.loc[more.index[:150], "region"] = "central"
    pipe = _fit(more, *PIPELINES["ordinal_passthrough_hgb"]())
    sio.dump(pipe, tmp_path / "clf.skops")
    frame.to_csv(tmp_path / "credit.csv", index=False)
    text = SPEC + ("encode A for clf {\n  age, income : raw\n  sex : code\n"
                   "  region : code {east = 1, north = 2, south = 3, west = 4}\n  education : code\n}\n" if block else "")
    spec = tmp_path / "credit.fair"
    spec.write_text(text)
    got = [(d.code, d.severity, d.span.line) for d in lint(spec).diagnostics]
    assert got == [("FS437", "warning", 6)], got
    d = lint(spec).diagnostics[0]
    assert "central (OrdinalEncoder 'cat')" in d.message and "region : {central, east, north, south, west}" in d.hint
    spec.write_text(text.replace("  region :", "  # fairspec: ignore[FS437]\n  region :", 1))
    assert [d.code for d in lint(spec).diagnostics] == []
    one_hot = _fit(more, *PIPELINES["onehot_ignore"]())
    rep = fairspec.check(tmp_path / "credit.fair", models={"clf": one_hot}, data={"test": frame})
    assert [d.code for d in rep.diagnostics] == ["FS422"] and rep.exit_code == 2


@pytest.mark.parametrize("name", ["onehot_ignore", "onehot_min_frequency"])     # folded; evaluated whole
def test_a_frame_without_a_column_the_pipeline_reads_is_that_one_error(frame, spec, name):
    """The data frame lacks 'region' (FS207 at the feature) or has no rows (FS404): that is the error, not
    also FS422 saying no feature set declares the columns the pipeline reads -- the feature set does."""
    pipe = _fit(frame, *PIPELINES[name]())
    rep = fairspec.check(spec, models={"clf": pipe}, data={"test": frame.drop(columns=["region"])})
    assert [d.code for d in rep.diagnostics if d.is_error] == ["FS207"], [(d.code, d.message) for d in rep.diagnostics]
    rep = fairspec.check(spec, models={"clf": pipe}, data={"test": frame.iloc[:0]})
    assert [d.code for d in rep.diagnostics if d.is_error] == ["FS404"], [(d.code, d.message) for d in rep.diagnostics]
    spec.write_text(SPEC.replace("  region : {east, north, south, west}\n", ""))   # a feature not declared: FS422
    rep = fairspec.check(spec, models={"clf": pipe}, data={"test": frame})
    assert [d.code for d in rep.diagnostics if d.is_error] == ["FS422"], [(d.code, d.message) for d in rep.diagnostics]


def test_a_pipeline_ending_in_an_xgboost_classifier_is_checked_in_memory(frame, spec, tmp_path, capfd):
    """skops refuses a file holding XGBoost's types, so the API wrote one the check then refused (FS401, 'save
    it as a pickle and add trust pickle': advice for a file, not for an object the caller holds); the
    caller's own object is written as a pickle the check trusts, without the stderr line a declared
    `trust pickle` file gets, and its verdicts are its predict's."""
    xgb = pytest.importorskip("xgboost")
    from itertools import product

    pipe = _fit(frame, ColumnTransformer([("num", "passthrough", ["age", "income"]),
                                          ("cat", OneHotEncoder(), ["sex", "region", "education"])]),
                xgb.XGBClassifier(n_estimators=15, max_depth=3, random_state=0))
    capfd.readouterr()
    rep = fairspec.check(spec, models={"clf": pipe}, data={"test": frame})
    assert not [d for d in rep.diagnostics if d.is_error], [(d.code, d.message) for d in rep.diagnostics]
    assert "runs the code inside the pickle" not in capfd.readouterr().err
    d = pipe.predict(frame[COLS])
    assert abs(rep["di"].value - fm.demographic_parity_ratio(frame.approved, d, sensitive_features=frame.sex)) <= 1e-9
    small = tmp_path / "small.fair"
    small.write_text(SMALL)
    v = fairspec.check(small, models={"clf": pipe}, data={"test": frame})["same"]
    grid = pd.DataFrame(list(product(range(30, 38), range(90, 98), ["F", "M"], ["east", "north", "south", "west"],
                                     ["high", "low", "mid"])), columns=COLS).astype({"income": float})
    p = pipe.predict(grid).reshape(8, 8, 2, 4, 3)
    flips = int((p[:, :, 0] != p[:, :, 1]).sum())
    assert v.status == ("violated" if flips else "holds"), (v.status, v.reason, flips)
    two = tmp_path / "two.fair"          # two properties: decided in two worker processes, each loading the model
    two.write_text(SMALL + SMALL.split("model clf")[1].split("\n", 1)[1].replace("property same", "property again"))
    capfd.readouterr()
    par = fairspec.check(two, models={"clf": pipe}, data={"test": frame}, workers=2)
    assert par["same"].status == par["again"].status == v.status
    assert "runs the code inside the pickle" not in capfd.readouterr().err
    plain = _fit(frame, *PIPELINES["onehot_ignore"]())      # scikit-learn's own types: a skops file, as before
    from fairspec.api import _Substitutes

    with _Substitutes(spec, {"clf": plain}, None) as sub:
        assert sub.files[("model", "clf")].suffix == ".skops" and ("trusted", "clf") not in sub.files


def test_weighted_group_metrics_of_a_pipeline_agree_with_fairlearn(frame, tmp_path):
    """``weight = COLUMN`` through a pipeline the team holds: fairlearn's sample_weight on its predict."""
    spec = tmp_path / "w.fair"
    spec.write_text(SPEC.split("property")[0] + "property a { accuracy_ratio(clf, groups region) >= 0.1  weight = w }\n"
                    "property b { equalized_odds(clf, groups sex x education) <= 0.9  weight = w  compare = to_overall }"
                    "\nproperty c { statistical_parity(clf, groups region) <= 0.9  weight = w }\n")
    data = frame.assign(w=frame.years + 0.5)
    pipe = _fit(frame, ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                          ("cat", OneHotEncoder(drop="if_binary"), ["sex", "region", "education"])]),
                _lr())
    rep = fairspec.check(spec, models={"clf": pipe}, data={"test": data})
    y, d, w = data.approved, pipe.predict(data[COLS]), data.w
    ref = {"a": fm.accuracy_score_ratio(y, d, sensitive_features=data.region, sample_weight=w),
           "b": fm.equalized_odds_difference(y, d, sensitive_features=data.sex + "|" + data.education, sample_weight=w,
                                             method="to_overall"),
           "c": fm.demographic_parity_difference(y, d, sensitive_features=data.region, sample_weight=w)}
    for k, r in ref.items():
        assert abs(rep[k].value - r) <= 1e-9, (k, rep[k].value, r)


def test_an_array_fitted_model_retrained_with_a_column_added_is_fs402_alone(frame, tmp_path):
    """A LogisticRegression fitted on an array of 11 columns against a block of 10: FS402 says the widths
    differ; FS427 ('its 10 inputs are taken in the encode block's order') would misstate the model."""
    from fairspec.pipeline import lint

    import skops.io as sio

    X = pd.concat([frame[["age", "income", "years"]].astype(float),
                   pd.get_dummies(frame[["sex", "region", "education"]], dtype=float)], axis=1).to_numpy()
    sio.dump(_lr().fit(X, frame.approved), tmp_path / "clf.skops")
    frame.to_csv(tmp_path / "credit.csv", index=False)
    spec = tmp_path / "credit.fair"
    spec.write_text(SPEC + "encode A for clf {\n  age, income : raw\n  sex, region, education : onehot\n}\n")
    assert [d.code for d in lint(spec).diagnostics] == ["FS402"]
    sio.dump(_lr().fit(X[:, [0, 1] + list(range(3, 12))], frame.approved), tmp_path / "clf.skops")
    assert [d.code for d in lint(spec).diagnostics] == ["FS427"]        # as wide: stated, as before
