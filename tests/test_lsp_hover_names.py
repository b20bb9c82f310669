"""Hover on the words that name no declaration outside a property's statements: a model or data format
(`onnx`, `csv`), an encoding (`minmax`, `onehot`), a call's clause (`groups`, `over`), and a column named
in a data declaration (`columns = [...]`, `label = income == ...`, `missing = {sex: ...}`): its values
in the first rows of the file as lint reads them (at most 200 rows, cached while the file is unchanged;
never the whole file). Before, all of these answered nothing."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp import analysis as A  # noqa: E402
from fairspec.lsp.client import Session  # noqa: E402

ADULT = EXAMPLES / "adult" / "adult.fair"


def _hover(path, needle: str, offset: int = 0, text: str | None = None) -> str | None:
    text = path.read_text(encoding="utf-8") if text is None else text
    idx = A.analyse(path, {str(path.resolve()): text})
    at = text.index(needle) + offset
    return A.hover(idx, idx.path, text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at))


def test_formats_encodings_and_clauses():
    assert _hover(ADULT, "csv(").startswith("**data format** `csv`: a CSV file")
    assert _hover(ADULT, "onnx(", 1).startswith("**model format** `onnx`: an ONNX model file")
    assert _hover(ADULT, "sklearn(").startswith("**model format** `sklearn`: a scikit-learn estimator")
    assert _hover(ADULT, ": minmax", 3).startswith("**encoding** `minmax`: one column: (v - lo) / (hi - lo)")
    assert _hover(ADULT, ": onehot", 3).startswith("**encoding** `onehot`: one column per category")
    assert _hover(ADULT, "groups sex", 1).startswith("**groups** (a clause of `statistical_parity(...)`): "
                                                     "the groups compared")
    assert _hover(EXAMPLES / "fairify" / "ac1.fair", "over {race, sex}").startswith(
        "**over** (a clause of `k_discrimination(...)`): k_discrimination: the protected features")
    # what the clause applies to is still the declaration's
    assert _hover(ADULT, "groups sex", len("groups ")).startswith("**feature** `sex`")


def test_a_column_of_a_data_declaration():
    assert _hover(ADULT, "columns = [age", len("columns = [")) == (
        "**column** `age` of `adult` (column 1 of 15)\n- whole numbers in the first 201 rows: 17 .. 79")
    assert _hover(ADULT, '"education-num"', 3).startswith("**column** `education-num` of `adult` (column 5 of 15)")
    workclass = _hover(ADULT, "workclass, fnlwgt")
    assert workclass.startswith("**column** `workclass` of `adult` (column 2 of 15)\n- text in the first 201 rows "
                                "(10 missing): 6 distinct: ") and "`Private`" in workclass
    assert _hover(ADULT, "label = income", len("label = ")) == (
        "**column** `income` of `adult` (column 15 of 15)\n- text in the first 201 rows: 2 distinct: `<=50K`, `>50K`")
    assert _hover(ADULT, 'missing = ["?"]', len('missing = [')) is None   # a marker is not a column


def test_only_the_first_rows_are_read_and_an_unreadable_file_says_nothing(tmp_path):
    rows = ["score,grp"] + [f"{i},{'ab'[i % 2]}" for i in range(300)] + ["not a number,c"] * 5
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = ('data d = csv("d.csv", missing = {score: ["-"]}, label = grp == "a")\n'
            "features F from d {\n  score : int in [0, 400]\n  grp : {a, b, c} protected\n}\n")
    path = tmp_path / "s.fair"
    path.write_text(spec, encoding="utf-8")
    # the rows after the 200th (text in a number column) are never read: a bounded look, not a scan
    assert _hover(path, "{score:", 1) == ("**column** `score` of `d` (column 1 of 2)\n"
                                          "- whole numbers in the first 200 rows: 0 .. 199")
    assert _hover(path, "grp ==") == "**column** `grp` of `d` (column 2 of 2)\n- text in the first 200 rows: " \
                                     "2 distinct: `a`, `b`"
    (tmp_path / "d.csv").unlink()
    assert _hover(path, "grp ==") is None   # (lint says what is wrong with the file)


def test_over_stdio():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            for needle, offset, start in (("csv(", 0, "**data format** `csv`"), ("groups sex", 2, "**groups**"),
                                          (": minmax", 4, "**encoding** `minmax`"),
                                          ("income]", 0, "**column** `income` of `adult`"),
                                          ('column "hours-per-week"', 9, "**column** `hours-per-week` of `adult`")):
                h = await s.hover(uri, s.pos(text, needle, offset))
                assert h is not None and h.contents.value.startswith(start), (needle, h)

    asyncio.run(scenario())


def test_the_words_explained_are_the_ones_lint_knows():
    from fairspec.lsp.analysis.completion import ENCODINGS, MODEL_FORMATS
    from fairspec.sema.check_features import ENCODING_KINDS
    from fairspec.sema.check_models import MODEL_FORMATS as KNOWN

    assert tuple(MODEL_FORMATS) == KNOWN and tuple(ENCODINGS) == ENCODING_KINDS


def test_a_column_a_feature_reads():
    """`column "x"` in a features block: the data column it names, as a data declaration's column is
    hovered (the first rows, cached), and the feature's type that reads it; a Parquet file's column
    also its type in the file's schema."""
    got = _hover(ADULT, 'column "education-num"', len('column "'))
    assert got == ("**column** `education-num` of `adult` (column 5 of 15)\n"
                   "- whole numbers in the first 201 rows: 2 .. 16\n"
                   "- read by feature `education_num` of `Applicant` as `int in [1, 16]`"), got
    assert _hover(ADULT, 'column "marital-status"', len('column "') + 2).startswith(
        "**column** `marital-status` of `adult` (column 6 of 15)\n- text in the first 201 rows: ")
    assert not (_hover(ADULT, 'column "marital-status"', 1) or "").startswith("**column**")  # (the keyword)


def test_a_parquet_column_shows_its_schema_type(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"score": pa.array([1.5, 2.5, None], pa.float64()),
                             "grp-name": pa.array(["a", "b", "a"], pa.string()),
                             "n": pa.array([1, 2, 3], pa.int32())}), tmp_path / "d.parquet")
    spec = ('data d = parquet("d.parquet", label = n >= 2)\n'
            'features F from d {\n  score : real in [0, 10]\n  grp : {a, b} protected column "grp-name"\n'
            '  n : int in [0, 9]\n}\n')
    path = tmp_path / "s.fair"
    path.write_text(spec, encoding="utf-8")
    assert _hover(path, '"grp-name"', 1) == ("**column** `grp-name` of `d` (column 2 of 3)\n"
                                             "- text in the first 3 rows: 2 distinct: `a`, `b`\n"
                                             "- type in the Parquet file: `string`\n"
                                             "- read by feature `grp` of `F` as `{a, b}`")
    assert _hover(path, "label = n", len("label = ")) == ("**column** `n` of `d` (column 3 of 3)\n"
                                                          "- whole numbers in the first 3 rows: 1 .. 3\n"
                                                          "- type in the Parquet file: `int32`")
    # a features block without `from`: the one data set declared is the one it can read
    path.write_text(spec.replace(" from d", ""), encoding="utf-8")
    assert _hover(path, '"grp-name"', 1).endswith("- read by feature `grp` of `F` as `{a, b}` (no `from`: `d` is the "
                                                  "only data set declared)")


def test_a_feature_hover_prints_numbers_a_user_may_copy_exactly():
    """An encoding's parameters and a domain's bounds are numbers a user copies into a spec: ``{:g}``
    printed 17.123456789 as 17.1235 (another encoding); they print in the shortest form that reads back."""
    text = ADULT.read_text(encoding="utf-8")
    text = text.replace("minmax(lo = 17, hi = 90)", "minmax(lo = 17.123456789, hi = 90.00000001)")
    text = text.replace("capital_gain   : int in [0, 99999]", "capital_gain   : real in [0.1234567, 99999.25]")
    age = _hover(ADULT, "age            :", text=text)
    assert "lo = 17.123456789, hi = 90.00000001" in age, age
    gain = _hover(ADULT, "capital_gain   :", text=text)
    assert "real in [0.1234567, 99999.25]" in gain, gain
