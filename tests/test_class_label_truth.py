"""A binary metric of one class (class = c) that compares decisions with the truth, on a data set
without target, reads the data's label as 'the true class is c'. A label that is the truth of
another class (COLUMN == v, v another class of the model) is FS419; a label that names no class
of the model (a range, a Boolean column, a value no class has) is the warning FS429; a label of
class c, or a target, is silent (README 'Group metrics')."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairspec import pipeline

FIX = Path(__file__).parent / "fixtures"

SPEC = """\
data grades = csv("{data}", {decl})
features People from grades {{
  age    : int in [18, 80]
  sex    : {{F, M}}  protected
  race   : {{A, B, C}}  protected
  member : bool
  score  : real in [0, 1]
}}
model grade = onnx("{model}")
encode People for grade {{ age : standard  sex : onehot  race : code  member, score : raw }}
property p {{ {prop} }}{tail}
"""


def _codes(tmp_path, decl, prop, tail=""):
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(data=FIX / "data" / "grades.csv", model=FIX / "models" / "people6_three.onnx",
                             decl=decl, prop=prop, tail=tail))
    res = pipeline.lint(p)
    return [(d.code, d.severity) for d in res.diagnostics if d.code in ("FS419", "FS429")], res


@pytest.mark.parametrize("decl, prop, want", [
    # the label is the truth of class 2, the metric's class is 1: an error
    ("label = grade == 2", "equal_opportunity(grade, groups sex, class = 1) <= 0.1", [("FS419", "error")]),
    ("label = 2 == grade", "equalized_odds(grade, groups sex, class = 0) <= 0.1", [("FS419", "error")]),
    ("label = grade == 2", "predictive_parity_difference(grade, groups sex, class = 1) <= 0.1", [("FS419", "error")]),
    # the label of the metric's own class, or a target: silent
    ("label = grade == 1", "equalized_odds(grade, groups sex, class = 1) <= 0.1", []),
    ("label = grade == 2, target = grade", "equalized_odds(grade, groups sex, class = 1) <= 0.1", []),
    # a metric that reads no truth: silent
    ("label = grade == 2", "statistical_parity(grade, groups sex, class = 1) <= 0.1", []),
    # a label that names no class of the model: a warning (it may be the truth meant)
    ("label = score > 0.5", "equalized_odds(grade, groups sex, class = 1) <= 0.1", [("FS429", "warning")]),
    ("label = grade == 7", "equalized_odds(grade, groups sex, class = 1) <= 0.1", [("FS429", "warning")]),
    ("label = member == \"true\"", "equal_opportunity(grade, groups sex, class = 1) <= 0.1", [("FS429", "warning")]),
])
def test_label_read_as_the_truth_of_a_class(tmp_path, decl, prop, want):
    got, res = _codes(tmp_path, decl, prop)
    assert got == want, res.diagnostics
    if want:
        d = next(d for d in res.diagnostics if d.code == want[0][0])
        assert (d.span.line, d.span.column) == (11, prop.index("class = ") + 14)
        assert "target = " in d.hint


def test_error_names_the_two_classes_and_how_to_say_it(tmp_path):
    _, res = _codes(tmp_path, "label = grade == 2", "equal_opportunity(grade, groups sex, class = 1) <= 0.1")
    d = next(d for d in res.diagnostics if d.code == "FS419")
    assert "grade == 2" in d.message and "class 2" in d.message and "class = 1" in d.message
    assert "target = grade" in d.hint and "label = grade == 1" in d.hint


def test_the_warning_can_be_acknowledged(tmp_path):
    got, res = _codes(tmp_path, "label = score > 0.5", "equalized_odds(grade, groups sex, class = 1) <= 0.1",
                      "  # fairspec: ignore[FS429]")
    assert got == [] and not [d for d in res.diagnostics if d.severity in ("error", "warning")], res.diagnostics


def test_text_labels_of_a_scikit_learn_model(tmp_path):
    """Class labels the file records are matched as text, as the target column's are."""
    lm = pytest.importorskip("sklearn.linear_model")
    sio = pytest.importorskip("skops.io")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    y = np.array(["lo", "mid", "hi"])[rng.integers(0, 3, 60)]
    sio.dump(lm.LogisticRegression().fit(X, y), tmp_path / "lr.skops")
    (tmp_path / "d.csv").write_text("a,sex,grade\n" + "".join(f"{i % 3},{'FM'[i % 2]},{y[i]}\n" for i in range(60)))

    def codes(label, cls):
        p = tmp_path / "s.fair"
        p.write_text(f'data d = csv("d.csv", label = {label})\nfeatures F from d {{\n  a : int in [0, 2]\n'
                     f'  sex : {{F, M}} protected\n}}\nmodel lr = sklearn("lr.skops")\n'
                     f'encode F for lr {{ a : raw  sex : code }}\n'
                     f'property eo {{ equalized_odds(lr, groups sex, class = {cls}) <= 0.1 }}\n')
        return [d.code for d in pipeline.lint(p).diagnostics if d.code in ("FS419", "FS429")]

    assert codes('grade == "hi"', '"mid"') == ["FS419"]
    assert codes('grade == "mid"', '"mid"') == []
    assert codes('grade == "mid"', "2") == []            # column 2 of classes_ ['hi', 'lo', 'mid']
    assert codes('grade == "top"', '"mid"') == ["FS429"]
