"""A `class` post's witness names the predicted classes by the labels the model records: its outputs
are columns (0 .. K-1), so "model output 1 / 2" of a model whose classes are "high", "low", "mid"
left an auditor to work out which grade each is. JSON keeps ``outputs`` (the columns) and adds
``output_labels``; text, HTML and SARIF show ``low (class 1)``."""

from __future__ import annotations

import numpy as np
import pytest

import fairspec
from fairspec.report import ci

pd = pytest.importorskip("pandas")
tree = pytest.importorskip("sklearn.tree")

SPEC = """\
data d = csv("d.csv", target = grade)
features P from d {
  a   : int in [0, 3]
  sex : {F, M} protected
}
model grade = sklearn("grade.skops")
# fairspec: ignore[FS427]
encode P for grade { a : raw  sex : code }
property same_grade {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure class(grade(x)) == class(grade(x'))
}
property shares { class_distribution_distance(grade, groups sex) <= 0.5 }
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("labels")
    (folder / "s.fair").write_text(SPEC)
    rng = np.random.default_rng(0)
    a, sex = rng.integers(0, 4, 300), rng.integers(0, 2, 300)
    grade = np.where(a + 2 * sex < 2, "low", np.where(a + 2 * sex < 4, "mid", "high"))
    frame = pd.DataFrame({"a": a, "sex": np.array(["F", "M"])[sex], "grade": grade})
    clf = tree.DecisionTreeClassifier(random_state=0).fit(np.c_[a, sex].astype(float), pd.Series(grade, dtype=object))
    assert list(clf.classes_) == ["high", "low", "mid"]
    return fairspec.check(folder / "s.fair", models={"grade": clf}, data={"d": frame}), clf


def test_the_witness_names_its_classes(report):
    rep, clf = report
    v = rep["same_grade"]
    assert v.status == "violated", v.reason
    w = v.witness
    predicted = clf.predict(np.array([w.x, w.x_prime]))
    assert list(w.output_labels) == list(predicted)
    assert [clf.classes_[int(o)] for o in w.outputs] == list(predicted)
    doc = rep.to_dict()["properties"][0]["witness"]
    assert doc["output_labels"] == list(predicted) and doc["outputs"] == [float(o) for o in w.outputs]
    shown = [f"{lab} (class {int(o)})" for lab, o in zip(predicted, w.outputs)]
    text = str(rep)
    assert all(s in text for s in shown), text
    html = rep.to_html()
    assert f"<td>{shown[0]}</td><td>{shown[1]}</td>" in html
    assert f"model output {shown[0]} for x, {shown[1]} for x'" in ci._verdict_message(v)


def test_a_metric_with_no_rate_draws_no_empty_chart(report):
    """class_distribution_distance (and the regression metrics) compare no per-group rate: the HTML
    section drew an empty bar chart ("rate, 0-1", no bars; matplotlib warned "No artists with labels
    found to put in legend" on every render). It says there is no chart; the table carries the numbers."""
    import re
    import warnings

    rep, _ = report
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        page = rep.to_html()
    section = re.search(r"data-property='shares'>(.*?)</section>", page, re.S).group(1)
    assert "<svg" not in section and "No chart: this metric compares no per-group rate" in section
    assert "sex=F" in section


def test_a_test_failure_names_the_classes(report):
    """assert_fair's and the pytest plugin's failure message shows the labels too."""
    from fairspec.pytest_plugin import describe

    rep, clf = report
    v = rep["same_grade"]
    labels, cols = v.witness.output_labels, [int(o) for o in v.witness.outputs]
    assert f"outputs   : {labels[0]} (class {cols[0]}), {labels[1]} (class {cols[1]})" in describe(v)


KD = """\
data d = csv("d.csv")
features P from d {
  a : int in [0, 3]
  g : {A, B, C} protected
}
model grade = sklearn("grade.skops")
# fairspec: ignore[FS427]
encode P for grade { a : raw  g : code }
property kd { k_discrimination(grade, over {g}) < 2 }
"""


def test_k_discrimination_reports_the_individual_at_max_k(tmp_path):
    """The enumeration knows max k: the value and the witness are an individual at it (here 3 grades),
    not the first individual past the claim (2 grades, with details.max_k 3 beside it); its
    counterfactuals' classes are named by label."""
    a = np.repeat(np.arange(4), 30)
    g = np.tile(np.repeat([0, 1, 2], 10), 4)
    # a = 0, 1, 2: grade low for A, mid for B and C (k = 2); a = 3: low, mid, high (k = 3)
    grade = np.where(g == 0, "low", np.where((a == 3) & (g == 2), "high", "mid"))
    clf = tree.DecisionTreeClassifier(random_state=0).fit(np.c_[a, g].astype(float), pd.Series(grade, dtype=object))
    (tmp_path / "s.fair").write_text(KD)
    frame = pd.DataFrame({"a": a, "g": np.array(["A", "B", "C"])[g]})
    v = fairspec.check(tmp_path / "s.fair", models={"grade": clf}, data={"d": frame})["kd"]
    assert v.status == "violated", v.reason
    assert v.value == 3 == v.details["max_k"] and v.witness.features["a"] == 3, (v.value, v.details)
    w = v.witness
    assert list(w.output_labels) == list(clf.predict(np.array([w.x, w.x_prime]))) and w.output_labels[0] != w.output_labels[1]
