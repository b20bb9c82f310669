"""Completion offers what may be typed at the cursor, not everything in scope: nothing where a new name
is typed (a declaration's, `apply ... as`, a property's forall variables) nor right after a block's `{`
(`{` is a trigger character, and an editor accepting the first item on Enter would otherwise put a
metric's name there), the features of x's feature set after `x.`,
feature sets after `forall x, x' :`, data after `features F from`, models after `repair r for`,
policies after `apply`. Read from the text the client has now (it need not parse)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp import analysis as A  # noqa: E402
from fairspec.lsp.client import Session  # noqa: E402

ADULT = EXAMPLES / "adult" / "adult.fair"
FEATURES = ["age", "capital_gain", "capital_loss", "education_num", "hours_per_week", "marital_status",
            "occupation", "race", "relationship", "sex", "workclass"]


@pytest.fixture(scope="module")
def adult():
    text = ADULT.read_text(encoding="utf-8")
    return A.analyse(ADULT, {str(ADULT.resolve()): text}), text


def _labels(adult, typed: str) -> list[str]:
    """The labels offered at the end of ``typed``, added at the end of the adult spec (the index is the
    spec's own, as while the typed text does not parse)."""
    idx, text = adult
    new = text + typed
    lines = new.split("\n")
    return [lbl for lbl, _, _ in A.completions(idx, new, len(lines), len(lines[-1]) + 1)]


@pytest.mark.parametrize("typed", [
    "\nproperty ", "\nproperty pr", "\ngroup ", "\nmodel ", "\ndata d", "\nfeatures ", "\ndistribution ",
    "\npolicy ", "\nrepair ", "\napply four_fifths(mlp, groups = sex) as ", "\nproperty p {\n  forall ",
    "\nproperty p {\n  forall x, ", "\nproperty p {\n  forall x, x' : Applicant\n  ensure forall ",
    "\npolicy q(m: model) {\n  property ", "\nproperty p {", "\nproperty p { ", "\nfeatures G from adult {",
    "\nencode Applicant for mlp {", "\npolicy q(m: model) {\n  property r {",
])
def test_nothing_is_offered_where_a_new_name_is_typed(adult, typed):
    assert _labels(adult, typed) == []


def test_after_x_dot_the_features_of_its_set(adult):
    head = "\nproperty p {\n  forall x, x' : Applicant\n"
    assert _labels(adult, head + "  require x.") == FEATURES + ["*"]
    assert _labels(adult, head + "  require x.* == x'.") == FEATURES + ["*"]
    assert _labels(adult, head + "  ensure prob(mlp(x'.ag") == FEATURES + ["*"]
    # a name that is not a variable of the property: the usual items
    assert "statistical_parity" in _labels(adult, head + "  ensure mlp.")


def test_what_a_declaration_names_next(adult):
    assert _labels(adult, "\nproperty p {\n  forall x, x' : ") == ["Applicant"]  # not the policies' parameters
    assert _labels(adult, "\nfeatures G from ") == ["adult"]
    assert _labels(adult, "\nrepair r for ") == ["dt", "lr", "mlp"]
    assert _labels(adult, "\napply ") == ["close_scores", "four_fifths", "same_decision"]
    # unchanged: a statement's start, an expression
    assert {"forall", "require", "bootstrap = ", "statistical_parity"} <= set(_labels(adult, "\nproperty p {\n  "))
    # a metric's arguments: its model first, then what `groups` takes
    assert _labels(adult, "\nproperty p {\n  statistical_parity(") == ["dt", "lr", "mlp"]
    assert {"sex", "older"} <= set(_labels(adult, "\nproperty p {\n  statistical_parity(mlp, groups sex x "))
    assert {"sex", "race"} <= set(_labels(adult, "\nproperty p {\n  forall x, x' : Applicant\n"
                                                 "  require x.* == x'.* except {"))   # a set's brace


def test_over_stdio_x_dot_while_the_property_is_half_typed():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            half = text + "\nproperty p {\n  forall a, a' : Applicant\n  require a.* == a'.* except {sex}\n" \
                          "  ensure |prob(mlp(a)) - prob(mlp(a'.a"
            n = s.seen(uri)
            s.change(uri, half)
            assert [d for d in await s.diagnostics(uri, n) if d.severity == T.DiagnosticSeverity.Error]
            c = await s.completion(uri, T.Position(half.count("\n"), len(half.rsplit("\n", 1)[-1])))
            assert [(i.label, i.kind) for i in c.items] == [(f, T.CompletionItemKind.Field) for f in FEATURES + ["*"]]
            assert c.items[0].detail == "feature of Applicant"

    asyncio.run(scenario())


@pytest.mark.parametrize("typed, expected", [
    # an apply's arguments: the policy's parameters not given yet, then what an argument names; no metric
    ("\napply four_fifths(", ["m = ", "groups = ", "threshold = ", "min_size = ", "dt", "lr", "mlp", "Applicant"]),
    ("\napply same_decision(mlp, ", ["F = ", "protected = ", "dt", "lr", "mlp", "Applicant"]),
    ("\napply same_decision(mlp, Applicant, {", ["age", "capital_gain"]),
    ("\napply four_fifths(mlp, groups = sex x ", ["dt", "lr", "mlp", "Applicant", "older", "age"]),
    # a data declaration's: its argument names, its columns after label / where
    ('\ndata d = csv("data/adult.data", ', ["header = ", "sep = ", "columns = ", "missing = ", "where = "]),
    ('\ndata d = csv("data/adult.data", header = ', ["true", "false"]),
    # a model's, an encoding's parameters, a group's expression
    ('\nmodel m = onnx("m.onnx", ', ["output = ", "index = ", "score = ", "rounds = "]),
    ('\nmodel m = onnx("m.onnx", score = ', ["logit", "prob", "value"]),
    ("\nencode Applicant for mlp {\n  age : minmax(lo = 17, ", ["hi = "]),
    ("\ngroup g = ", ["older", "age", "capital_gain"]),
    # the features that may differ, in except {...}
    ("\nproperty p {\n  forall x, x' : Applicant\n  require x.* == x'.* except {sex, ", ["age", "capital_gain"]),
    ("\nproperty p {\n  equalized_odds(mlp, groups ", ["age", "capital_gain"]),
])
def test_arguments_are_offered_what_they_take_not_metrics(adult, typed, expected):
    got = _labels(adult, typed)
    assert got[:len(expected)] == expected and "statistical_parity" not in got, got


def test_a_data_declarations_label_is_offered_its_columns(adult):
    idx, text = adult
    at = text.index("label = ") + len("label = ")
    got = A.completions(idx, text, text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at))
    assert [lbl for lbl, _, _ in got][:6] == ["age", "workclass", "fnlwgt", "education", 'col("education-num")',
                                               'col("marital-status")'], got


def test_nothing_in_a_comment(adult):
    """Ctrl-Space in a comment offered the top level's keywords (the comment is blanked out as prose)."""
    assert _labels(adult, "\n# the older applicants ") == []
    assert _labels(adult, "\ngroup g = age >= 40  # the older ") == []
    assert _labels(adult, '\ndata d = csv("a#b.csv", ')[:2] == ["header = ", "sep = "]  # (a # inside a string)
