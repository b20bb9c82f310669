"""Tree models: scikit-learn trees, forests and boosting, XGBoost and LightGBM files; their
tree ensembles reproduce the libraries, and the pair problem on them is exact end to end."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.models import ModelLoadError, load_model, peek_input_width
from fairspec.models.trees import from_sklearn


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 10, n), rng.integers(0, 2, n), rng.integers(0, 5, n)]).astype(float)
    y = ((X[:, 0] + 3 * X[:, 1] + rng.normal(0, 2, n)) > 6).astype(int)
    return X, y


@pytest.mark.parametrize("name", ["DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier",
                                  "GradientBoostingClassifier", "HistGradientBoostingClassifier"])
def test_sklearn_tree_models_reproduce_the_library(name):
    import sklearn.ensemble as E
    import sklearn.tree as T

    cls = getattr(T, name, None) or getattr(E, name)
    kw = {"random_state": 0}
    if name in ("RandomForestClassifier", "ExtraTreesClassifier", "GradientBoostingClassifier"):
        kw["n_estimators"] = 7
    if name == "HistGradientBoostingClassifier":
        kw["max_iter"] = 7
    X, y = _data()
    est = cls(**kw).fit(X, y)
    ens = from_sklearn(est)
    grid = np.array(np.meshgrid(np.arange(-1, 11), [0, 1], np.arange(0, 5))).reshape(3, -1).T.astype(float)
    assert np.allclose(ens.prob(grid), est.predict_proba(grid)[:, 1], atol=1e-12)
    if name in ("GradientBoostingClassifier", "HistGradientBoostingClassifier"):
        assert np.allclose(from_sklearn(est, "decision_function").aggregate(grid), est.decision_function(grid))
        assert np.allclose(from_sklearn(est, "predict_proba", 0).prob(grid), est.predict_proba(grid)[:, 0])


@pytest.fixture(scope="module")
def boosted_files(tmp_path_factory):
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    d = tmp_path_factory.mktemp("boosted")
    X, y = _data()
    b = xgb.XGBClassifier(n_estimators=12, max_depth=3, random_state=0, n_jobs=1).fit(X, y).get_booster()
    b.save_model(str(d / "m.json"))
    b.save_model(str(d / "m.ubj"))
    m = lgb.LGBMClassifier(n_estimators=12, max_depth=3, random_state=0, n_jobs=1, verbose=-1,
                           min_child_samples=5).fit(X, y)
    m.booster_.save_model(str(d / "m.txt"))
    return d


@pytest.mark.parametrize("fmt,name", [("xgboost", "m.json"), ("xgboost", "m.ubj"), ("lightgbm", "m.txt")])
def test_boosted_files_load_and_their_trees_reproduce_predict(boosted_files, fmt, name):
    p = boosted_files / name
    m = load_model(fmt, p)
    X, _ = _data(50, seed=3)
    X[::3, 0] += 0.5                       # also points between the integers
    assert m.score_kind == "prob" and m.input_width == 3
    ens = m.tree_ensemble()
    assert np.allclose(ens.prob(X), m.score(X), atol=1e-6)
    margin = load_model(fmt, p, output="margin")
    assert margin.score_kind == "logit"
    assert np.allclose(ens.aggregate(X), margin.score(X), atol=1e-5)
    zero = load_model(fmt, p, index=0)
    assert np.allclose(zero.score(X), 1 - m.score(X))
    assert np.allclose(zero.tree_ensemble().prob(X), 1 - m.score(X), atol=1e-6)
    assert peek_input_width(fmt, p) in (3, None)
    if name != "m.ubj":
        assert peek_input_width(fmt, p) == 3


def test_a_missing_extra_is_one_sentence_naming_the_pip_command(boosted_files, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "xgboost", None)      # import xgboost -> ImportError
    with pytest.raises(ModelLoadError) as e:
        load_model("xgboost", boosted_files / "m.json")
    assert "pip install 'specfair[xgboost]'" in str(e.value) and "m.json" in str(e.value)


def test_a_file_that_is_not_a_model_is_one_sentence(tmp_path):
    pytest.importorskip("xgboost")
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(ModelLoadError) as e:
        load_model("xgboost", p)
    assert "bad.json" in str(e.value)


SPEC = '''
features P {
  a : int in [0, 9]
  b : int in [0, 4]
  s : {F, M} protected
}
model m = FORMAT("FILE")
encode P for m {
  a : raw
  s : code
  b : raw
}
property same {
  forall x, x' : P
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
  using BACKEND
}
property close {
  forall x, x' : P
  require x.* == x'.* except {s}
  ensure |prob(m(x)) - prob(m(x'))| <= 0.1
  using BACKEND
}
'''


@pytest.mark.parametrize("fmt,name", [("xgboost", "m.json"), ("lightgbm", "m.txt")])
def test_boosted_models_end_to_end_milp_and_smt_agree_with_brute_force(boosted_files, tmp_path, fmt, name):
    """No data: the solvers decide. The verdicts of milp and smt agree with enumerating the
    300-point domain on the library's own predict; witnesses are replayed by the library."""
    from itertools import product

    from fairspec.pipeline import check

    m = load_model(fmt, boosted_files / name)
    pts = np.array(list(product(range(10), range(2), range(5))), dtype=float)
    p = m.score(pts).reshape(10, 2, 5)
    want = {"same": "violated" if np.any((p[:, 0, :] > 0.5) != (p[:, 1, :] > 0.5)) else "holds",
            "close": "violated" if np.any(np.abs(p[:, 0, :] - p[:, 1, :]) > 0.1) else "holds"}
    for backend in ("milp", "smt"):
        spec = tmp_path / f"{backend}.fair"
        (tmp_path / name).write_bytes((boosted_files / name).read_bytes())
        spec.write_text(SPEC.replace("FORMAT", fmt).replace("FILE", name)
                        .replace("BACKEND", backend))
        for v in check(spec).verdicts:
            assert v.status == want[v.name], (backend, v.name, v.reason)
            if v.status == "violated":
                assert v.witness.replayed_by == fmt


@pytest.mark.parametrize("fmt,name", [("xgboost", "m.json"), ("lightgbm", "m.txt")])
def test_k_discrimination_on_boosted_models_is_exact(boosted_files, tmp_path, fmt, name):
    from itertools import product

    from fairspec.backends.search.kdisc import k_of
    from fairspec.pipeline import check

    m = load_model(fmt, boosted_files / name)
    pts = np.array(list(product(range(10), range(2), range(5))), dtype=float)
    p = m.score(pts).reshape(10, 2, 5)
    want = int(k_of(np.stack([p[:, 0, :].ravel(), p[:, 1, :].ravel()], axis=1), 0.05).max())
    (tmp_path / name).write_bytes((boosted_files / name).read_bytes())     # inside the spec's project
    text = SPEC.split("property same")[0].replace("FORMAT", fmt).replace("FILE", name)
    spec = tmp_path / "k.fair"
    spec.write_text(text + '''
property k2 {
  k_discrimination(m, over {s}, eps = 0.05) < 2
}
''')
    (v,) = check(spec).verdicts
    # exact: the max k of every individual counted on the library (enumeration, certified)
    assert v.details["max_k"] == want
    assert v.status == ("violated" if want >= 2 else "holds")
    if v.status == "holds":
        assert v.proof is not None and v.proof.method == "enumeration"
    if v.status == "violated":
        assert v.witness.replayed_by == fmt


@pytest.mark.parametrize("name", ["DecisionTreeClassifier", "GradientBoostingClassifier"])
def test_a_tree_fitted_on_a_data_frame_is_read_without_the_feature_names_warning(name):
    """The converters check themselves against the library on an array: scikit-learn's "X does not
    have valid feature names" is silenced there (it reached `fairspec check`'s stderr), and the
    trees reproduce the library on a data frame of the same columns."""
    import warnings

    import sklearn.ensemble as E
    import sklearn.tree as T

    from fairspec.models.tree_columns import sklearn_columns

    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=["a", "s", "b"])
    est = (getattr(T, name, None) or getattr(E, name))(random_state=0).fit(frame, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ens = from_sklearn(est)
        sklearn_columns(est)
    assert not [w for w in caught if "feature names" in str(w.message)]
    grid = np.array(np.meshgrid(np.arange(-1, 11), [0, 1], np.arange(0, 5))).reshape(3, -1).T.astype(float)
    assert np.allclose(ens.prob(grid), est.predict_proba(pd.DataFrame(grid, columns=frame.columns))[:, 1], atol=1e-12)
