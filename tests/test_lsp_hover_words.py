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
