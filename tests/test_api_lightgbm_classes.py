"""An LGBMClassifier given to the Python API keeps its class labels (``classes_``), which the LightGBM text file
the API writes does not record: its booster's class 1 is ``classes_[1]``. For labels that do not say which is
positive ("approved" / "denied" sorts "denied" second; 1 = good / 2 = bad) the declaration must say, as for a
scikit-learn classifier (FS413 at the declaration), never the sorted second label taken silently."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
lgb = pytest.importorskip("lightgbm")

import fairspec  # noqa: E402

SPEC = """data test = csv("t.csv", label = y == 1)
features A from test {{
  age : int in [18, 22]
  sex : {{0, 1}} protected
}}
model clf = lightgbm("m.txt"{index})
encode A for clf {{
  age : raw
  sex : code
}}
property di {{ disparate_impact(clf, groups sex) >= 0.99  min_group_size = 1 }}
"""


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"age": rng.integers(18, 23, n), "sex": rng.integers(0, 2, n)})
    z = 0.8 * (df.age - 20) + 0.9 * df.sex
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)
    return df


def _spec(tmp_path, index=""):
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(index=index))
    return p


def _di(pred, df, positive):
    rates = [np.mean(pred[(df.sex == s).to_numpy()] == positive) for s in (0, 1)]
    return min(rates) / max(rates)


@pytest.mark.parametrize("labels", [("approved", "denied"), (1, 2)])
def test_labels_that_do_not_say_which_is_positive_are_fs413_at_the_declaration(frame, tmp_path, labels):
    m = lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(frame[["age", "sex"]], np.where(frame.y == 1, *labels))
    rep = fairspec.check(_spec(tmp_path), models={"clf": m}, data={"test": frame})
    errors = [d for d in rep.diagnostics if d.is_error]
    assert [d.code for d in errors] == ["FS413"], [d.message for d in rep.diagnostics]
    assert repr(labels[0]) in errors[0].message and repr(labels[1]) in errors[0].message
    assert errors[0].span.line == 6 and "index = 0" in errors[0].hint
    assert rep.exit_code == 2 and not list(rep)


@pytest.mark.parametrize("index", [0, 1])
def test_the_declared_index_names_the_positive_label(frame, tmp_path, index):
    labels = np.where(frame.y == 1, "approved", "denied")
    m = lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(frame[["age", "sex"]], labels)
    rep = fairspec.check(_spec(tmp_path, f", index = {index}"), models={"clf": m}, data={"test": frame})
    assert not [d for d in rep.diagnostics if d.is_error], [d.message for d in rep.diagnostics]
    want = _di(m.predict(frame[["age", "sex"]]), frame, m.classes_[index])
    assert rep["di"].value == pytest.approx(want, abs=1e-12)


def test_labels_zero_and_one_need_no_index(frame, tmp_path):
    m = lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(frame[["age", "sex"]], frame.y)
    rep = fairspec.check(_spec(tmp_path), models={"clf": m}, data={"test": frame})
    assert not [d for d in rep.diagnostics if d.is_error], [d.message for d in rep.diagnostics]
    assert rep["di"].value == pytest.approx(_di(m.predict(frame[["age", "sex"]]), frame, 1), abs=1e-12)


def test_declared_sklearn_the_object_is_named_once_in_fs413(frame, tmp_path):
    """Declared sklearn(...), the LGBMClassifier is written as a trusted pickle and its classes_ read by the
    scikit-learn loader: FS413 names "the model given for 'clf'" once ("model 'clf': the model given for
    'clf': ..." before)."""
    m = lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(frame[["age", "sex"]],
                                                           np.where(frame.y == 1, "approved", "denied"))
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(index="").replace('lightgbm("m.txt")', 'sklearn("m.skops")'))
    rep = fairspec.check(p, models={"clf": m}, data={"test": frame})
    (d,) = [d for d in rep.diagnostics if d.is_error]
    assert d.code == "FS413" and d.message.count("'clf'") == 1, d.message
