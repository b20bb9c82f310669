"""A team hands fairspec.check the fitted GridSearchCV it tuned the pipeline with. Its predict is its
best_estimator_'s, so the API checks that estimator (FS501 "no encode block" twice before, for a pipeline
that gives its inputs); one fitted with refit=False predicts nothing: one sentence. A skops file holding the
search gets a hint saying to save best_estimator_."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
sio = pytest.importorskip("skops.io")

from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder  # noqa: E402

import fairspec  # noqa: E402

SPEC = """features A {
  age : int in [18, 22]
  sex : {F, M} protected
  region : {east, north}
}
model clf = sklearn("clf.skops")
property ind {
  forall x, x' : A
  require x.* == x'.* except {sex}
  ensure label(clf(x)) == label(clf(x'))
}
"""


def _search(refit=True):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.integers(18, 23, 200), "sex": rng.choice(["F", "M"], 200),
                      "region": rng.choice(["east", "north"], 200)})
    y = (X.age + (X.sex == "M") * 2 + rng.normal(0, 1, 200) > 21).astype(int)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "region"]), remainder="passthrough"),
                         LogisticRegression())
    return GridSearchCV(pipe, {"logisticregression__C": [0.1, 1.0]}, cv=3, refit=refit).fit(X, y)


def test_a_fitted_search_is_checked_as_its_best_estimator(tmp_path):
    search = _search()
    p = tmp_path / "s.fair"
    p.write_text(SPEC)
    rep = fairspec.check(p, models={"clf": search})
    assert not [d for d in rep.diagnostics if d.is_error], [d.message for d in rep.diagnostics]
    grid = pd.DataFrame([(a, s, r) for a in range(18, 23) for s in "FM" for r in ("east", "north")],
                        columns=["age", "sex", "region"])
    flips = int(np.sum(search.predict(grid) != search.predict(grid.assign(sex=np.where(grid.sex == "F", "M", "F")))))
    assert rep["ind"].status == ("violated" if flips else "holds"), rep["ind"]
    if flips:
        assert rep["ind"].reason.startswith(f"{flips} of the 20 admissible"), rep["ind"].reason


def test_a_search_without_refit_is_one_sentence(tmp_path):
    p = tmp_path / "s.fair"
    p.write_text(SPEC)
    with pytest.raises(fairspec.FairspecError, match="refit=False"):
        fairspec.check(p, models={"clf": _search(refit=False)})


def test_a_skops_file_of_a_search_is_told_to_save_its_best_estimator(tmp_path):
    sio.dump(_search(), tmp_path / "clf.skops")
    p = tmp_path / "s.fair"
    p.write_text(SPEC)
    errors = [d for d in fairspec.lint(p) if d.is_error]
    assert errors and all(d.code == "FS501" and "best_estimator_" in d.hint for d in errors), \
        [(d.code, d.message, d.hint) for d in errors]
