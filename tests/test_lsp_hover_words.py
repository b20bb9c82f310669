"""Hover on the words of a property that name no declaration: an option (`bootstrap = 500`: what it
means, its bounds or choices, the default of the backend planned for the property), a backend
(`using ssat`) and a model output (`prob(m(x))`). Before, these answered nothing."""

from __future__ import annotations

import pytest

pytest.importorskip("pygls")

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp import analysis as A  # noqa: E402


def _hover(path, needle: str, offset: int = 0, text: str | None = None) -> str | None:
    text = path.read_text(encoding="utf-8") if text is None else text
    idx = A.analyse(path, {str(path.resolve()): text})
    at = text.index(needle) + offset
    return A.hover(idx, idx.path, text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at))


def test_an_option_a_backend_and_a_model_output():
    adult, grades = EXAMPLES / "adult" / "adult.fair", EXAMPLES / "german" / "grades.fair"
    assert _hover(adult, "bootstrap = 500") == ("**option** `bootstrap`: the number of bootstrap resamples\n"
                                                "- int in [1, 100000]\n- default for this property's backend: `1000`")
    assert _hover(grades, "mode = maximize", 2) == (
        "**option** `mode`: prove (decide the property), find (stop at the first violation) or maximize "
        "(the largest violation)\n- one of `prove`, `find`, `maximize`\n- default for this property's backend: `prove`")
    assert _hover(grades, "mode = maximize", len("mode = ")) is None  # the value: nothing said
    assert _hover(EXAMPLES / "worked" / "fvgm_3_1.fair", "using ssat", len("using ")) == \
        "**backend** `ssat`: exact stochastic SAT over the classifier's Boolean form"
    assert _hover(adult, "prob(lr(x))").startswith("**prob**: a probability: prob(m(x)) (binary)")
    assert _hover(grades, "class(grades(x))").startswith("**class**: the predicted class")


def test_an_option_the_property_may_not_take_is_still_explained():
    """(lint says, in a diagnostic, that the backend does not take it)"""
    adult = EXAMPLES / "adult" / "adult.fair"
    text = adult.read_text(encoding="utf-8").replace("  bootstrap = 500\n", "  bootstrap = 500\n  max_rows = 10\n")
    assert _hover(adult, "max_rows", text=text) == ("**option** `max_rows`: look at a random sample of at most N "
                                                    "data rows\n- int in [1, 100000000]")


def test_in_a_policy_an_option_and_an_applys_argument_name():
    """Inside a policy's property an option is explained (its own doc: the backend is planned once the
    policy is applied); an apply's `name = value` names the policy's parameter: hover, definition and
    references are the parameter's, and renaming the parameter renames it there (before, nothing
    answered, and the rename left `eps = ...` naming no parameter)."""
    lib = EXAMPLES.parent / "specs" / "policies" / "four_fifths.fair"
    assert _hover(lib, "min_group_size").startswith("**option** `min_group_size`: ")
    adult = EXAMPLES / "adult" / "adult.fair"
    assert _hover(adult, "min_size = 50") == "**parameter** `min_size: int = 30` of policy `four_fifths`"
    text = adult.read_text(encoding="utf-8") + (
        "\npolicy tight(m: model, F: features, eps: real = 0.1) {\n  property tight {\n    forall x, x' : F\n"
        "    require x.* == x'.* except {sex}\n    ensure |prob(m(x)) - prob(m(x'))| <= eps\n  }\n}\n"
        "apply tight(lr, Applicant, eps = 0.02) as lr_tight\n")
    idx = A.analyse(adult, {str(adult.resolve()): text})
    assert not [d for d in idx.diagnostics if d.severity == "error"], idx.diagnostics
    at = text.index("eps = 0.02")
    pos = (text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at))
    decl = A.definition(idx, idx.path, *pos)
    assert (decl.line, decl.column) == (text[:text.index("eps: real")].count("\n") + 1, len("policy tight(m: model, F: features, ") + 1)
    assert len(A.references(idx, idx.path, *pos)) == 3   # the parameter, <= eps, eps = 0.02
    edits = A.rename(idx, idx.path, *pos, "tolerance", idx.path)
    assert sorted(new for _, new in edits) == ["tolerance"] * 3
