"""A regression's binary metric with threshold = t on a data set without target reads the data's
label as the truth: its decision is "the value is >= t". A label cutting the value elsewhere
(salary >= 60000 beside threshold = 50000), the other way round (salary < 60000) or with the other tie
(salary > 60000 beside threshold = 60000) compared two different cuts without a word. It may be meant
(a decision cut below the truth's), so it is the warning FS436, acknowledged with an ignore comment."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec import api

pd = pytest.importorskip("pandas")

SPEC = """data d = csv("t.csv", label = {label}{extra})
features A from d {{
  age : int in [17, 90]
  sex : {{F, M}} protected
}}
model reg = sklearn("reg.skops")
encode A for reg {{ age : raw  sex : code }}  # fairspec: ignore[FS427]
property eo {{ equal_opportunity(reg, groups sex, threshold = {t}) <= 0.9 }}{tail}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    lm = pytest.importorskip("sklearn.linear_model")
    sio = pytest.importorskip("skops.io")
    tmp = tmp_path_factory.mktemp("reg")
    rng = np.random.default_rng(5)
    n = 400
    sex, age = rng.choice(["F", "M"], n), rng.integers(18, 80, n)
    X = np.c_[age, (sex == "M").astype(float)]
    salary = np.round(30000 + 700 * (age - 18) + 8000 * (sex == "M") + rng.normal(0, 9000, n))
    model = lm.LinearRegression().fit(X, salary)
    sio.dump(model, tmp / "reg.skops")
    pd.DataFrame({"age": age, "sex": sex, "salary": salary}).to_csv(tmp / "t.csv", index=False)
    return tmp, sex, salary, model.predict(X)


def run(project, label, t, extra="", tail=""):
    tmp = project[0]
    (tmp / "s.fair").write_text(SPEC.format(label=label, t=t, extra=extra, tail=tail))
    return str(tmp / "s.fair")


@pytest.mark.parametrize("label,t,why", [
    ("salary >= 60000", 50000, "a cut at 60000, not at the threshold 50000"),
    ("salary < 60000", 60000, "the other way round"),
    ("60000 > salary", 60000, "the other way round"),
    ("salary > 60000", 60000, "the other tie"),
    ("salary >= 60000", 60000, None),
    ("60000 <= salary", 60000, None),
])
def test_threshold_against_the_labels_cut(project, label, t, why):
    diags = api.lint(run(project, label, t))
    if why is None:
        assert diags == []
        return
    [d] = diags
    assert (d.code, d.severity, d.span.line) == ("FS436", "warning", 8) and why in d.message, d.message
    assert "target = salary" in d.hint


def test_FS436_is_acknowledged_and_check_measures_the_cuts_as_written(project):
    _, sex, salary, pred = project
    spec = run(project, "salary >= 60000", 50000, tail="  # fairspec: ignore[FS436]")
    assert api.lint(spec) == []
    rep = api.check(spec).to_dict()
    [p] = rep["properties"]
    y, dec = salary >= 60000, pred >= 50000
    tpr = {s: dec[(sex == s) & y].mean() for s in ("F", "M")}
    assert p["value"] == pytest.approx(abs(tpr["M"] - tpr["F"]), abs=1e-9)


def test_a_target_is_no_FS436(project):
    assert api.lint(run(project, "salary >= 60000", 50000, extra=", target = salary")) == []
