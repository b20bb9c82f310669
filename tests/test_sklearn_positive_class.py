"""Which class of a scikit-learn classifier is positive, and whether it has a class probability,
is the file's or the spec's word, never a guess.

Sorted labels say nothing ("approve" / "deny" puts "deny" second, German credit's 1 = good /
2 = bad puts "bad" second): a two-class model whose labels are not {0, 1}, {-1, 1} or
{False, True} needs ``index`` (FS413 naming both). A classifier without predict_proba (a
LinearSVC) has a margin, not a probability: ``prob(...)`` and ``calibration_gap`` of it are
FS415 unless the declaration says ``score = logit``. (An audit found ``violated`` at 0.045 for
a disparate impact of 0.89 read with "deny" as the positive class.)"""

from __future__ import annotations

import numpy as np
import pytest

skio = pytest.importorskip("skops.io")

from fairspec.pipeline import check, lint  # noqa: E402

SPEC = """data d = csv("d.csv", label = {pos})
features P from d {{
  age : int in [18, 30]
  sex : {{F, M}} protected
}}
model clf = sklearn("{file}"{opts})
encode P for clf {{
  age : raw
  sex : code
}}
"""


def _fit(folder, labels, est=None, name="clf.skops", seed=0):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    n = 400
    age, sex = rng.integers(18, 31, n), rng.integers(0, 2, n)
    first = (age + 6 * sex + rng.normal(0, 3, n)) > 26          # labels[0] more often for men
    y = np.where(first, labels[0], labels[1])
    est = (est or LogisticRegression()).fit(np.column_stack([age, sex]).astype(float), y)
    skio.dump(est, folder / name)
    with open(folder / "d.csv", "w") as f:
        f.write("age,sex,decision\n")
        for a, s, t in zip(age, sex, y):
            f.write(f"{a},{'FM'[s]},{t}\n")
    return est, np.column_stack([age, sex]).astype(float)


def _spec(folder, body, opts="", pos='decision == "approve"', file="clf.skops", name="spec.fair"):
    p = folder / name
    p.write_text(SPEC.format(opts=opts, pos=pos, file=file) + body)
    return p


def _errors(path):
    return [(d.code, d.message, d.hint) for d in lint(path).diagnostics if d.is_error]


DI = "property di { disparate_impact(clf, groups sex) >= 0.8 }\n"


@pytest.mark.parametrize("labels, pos", [(("approve", "deny"), 'decision == "approve"'), ((1, 2), "decision == 1")])
def test_labels_that_do_not_say_which_is_positive_are_fs413(tmp_path, labels, pos):
    _fit(tmp_path, labels)
    errs = _errors(_spec(tmp_path, DI, pos=pos))
    assert [c for c, *_ in errs] == ["FS413"], errs
    a, b = (repr(c) for c in labels)
    assert a in errs[0][1] and b in errs[0][1]
    assert errs[0][2] == f"add index = 0 to the model declaration for {a}, or index = 1 for {b}"


@pytest.mark.parametrize("labels", [(0, 1), (False, True), (-1, 1)])
def test_evident_labels_need_no_index(tmp_path, labels):
    _fit(tmp_path, labels)
    assert _errors(_spec(tmp_path, DI, pos='decision == "True"' if labels[1] is True else f"decision == {labels[1]}")) == []


def test_the_named_positive_class_is_the_one_counted(tmp_path):
    """index = 0 makes "approve" (classes_[0]) positive: the disparate impact is the ratio of the
    groups' approval rates by the model's own predict, and the verdict follows it."""
    est, X = _fit(tmp_path, ("approve", "deny"))
    v = check(_spec(tmp_path, DI, opts=", index = 0")).verdicts[0]
    approved = est.predict(X) == "approve"
    rates = [approved[X[:, 1] == s].mean() for s in (0, 1)]
    assert v.value == pytest.approx(min(rates) / max(rates), abs=1e-12)
    assert v.status == ("holds" if min(rates) / max(rates) >= 0.8 else "violated")


PROB = """property prob_sex {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure |prob(clf(x)) - prob(clf(x'))| <= 0.1
}
property calib { calibration_gap(clf, groups sex) <= 0.1 }
"""


def test_a_classifier_without_predict_proba_has_no_probability(tmp_path):
    from sklearn.svm import LinearSVC

    _fit(tmp_path, (0, 1), LinearSVC())
    errs = _errors(_spec(tmp_path, PROB, pos="decision == 1"))
    assert [c for c, *_ in errs] == ["FS415", "FS415"], errs
    assert all("LinearSVC has no predict_proba" in m and "CalibratedClassifierCV" in h for _, m, h in errs)
    assert _errors(_spec(tmp_path, PROB, opts=", score = logit", pos="decision == 1", name="declared.fair")) == []
    label = "property same { forall x, x' : P\n require x.* == x'.* except {sex}\n ensure label(clf(x)) == label(clf(x')) }\n"
    assert _errors(_spec(tmp_path, label, pos="decision == 1", name="label.fair")) == []


def test_a_margin_cannot_make_the_first_class_positive(tmp_path):
    """A LinearSVC's decision_function > 0 is classes_[1]: index = 0 cannot be read from it (its
    predict and its score would disagree), so it is refused naming the class; index = 1 is its own."""
    from sklearn.svm import LinearSVC

    _fit(tmp_path, ("approve", "deny"), LinearSVC())
    report = check(_spec(tmp_path, DI, opts=", index = 0"))
    assert report.has_errors and "cannot make 'approve' the positive class" in (report.error or "") + " ".join(
        d.message for d in report.diagnostics)
    assert _errors(_spec(tmp_path, DI, opts=", index = 1", pos='decision == "deny"', name="deny.fair")) == []
