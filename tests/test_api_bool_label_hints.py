"""A pandas bool column given to the Python API is written as the CSV text "True" / "False" (README: in label
and where it is that text). A team's natural labels -- ``label = approved == 1``, ``== true``, ``== True``,
``label = approved`` -- are errors whose hint now says what to write (``approved == "True"``), not only that
the column "holds text"."""

from __future__ import annotations

import pytest

pd = pytest.importorskip("pandas")

import fairspec  # noqa: E402

FRAME = pd.DataFrame({"age": [20, 30, 40, 50] * 10, "approved": [True, False, True, True] * 10})
WANT = 'approved == "True"'


def _lint(tmp_path, label):
    p = tmp_path / "s.fair"
    p.write_text(f'data test = csv("t.csv", label = {label})\n')
    return [d for d in fairspec.lint(p, data={"test": FRAME}) if d.is_error]


@pytest.mark.parametrize("label, code", [("approved == 1", "FS301"), ("approved == true", "FS301"),
                                         ("approved", "FS306")])
def test_a_bool_columns_label_hint_says_to_compare_with_the_text_true(tmp_path, label, code):
    (d,) = _lint(tmp_path, label)
    assert d.code == code and WANT in d.hint, d.hint


def test_an_unquoted_True_is_told_to_be_quoted(tmp_path):
    (d,) = _lint(tmp_path, "approved == True")
    assert d.code == "FS207" and '"True"' in d.hint and "quoted" in d.hint, d.hint


def test_a_text_column_compared_with_a_number_lists_the_few_texts_it_holds(tmp_path):
    p = tmp_path / "s.fair"
    p.write_text('data test = csv("t.csv", label = decision == 1)\n')
    frame = FRAME.assign(decision=["yes", "no"] * 20)
    (d,) = [d for d in fairspec.lint(p, data={"test": frame}) if d.is_error]
    assert d.code == "FS301" and '"no", "yes"' in d.hint, d.hint
