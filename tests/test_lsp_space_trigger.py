"""A space is a completion trigger character, but an editor asking because a space was typed gets items
only where the next word comes from a short known list (a backend after `using`, a strategy after
`search`, an option's choices after `mode =`, a feature type after `:`, an encoding, a model format,
the data after `from`, the models after `for`, the policies after `apply`, the feature sets after
`forall x, x' :`); a space inside an expression answered the 80 metrics and names. Ctrl-Space (invoked)
still gets the full list that fits. Also: after `x.` where x's set is a policy's `features` parameter,
the features of the sets the applies pass as that parameter, and `*`."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp import analysis as A  # noqa: E402
from fairspec.lsp.client import Session  # noqa: E402

ADULT = EXAMPLES / "adult" / "adult.fair"
PAIR = "\nproperty p {\n  forall x, x' : Applicant\n"


@pytest.fixture(scope="module")
def adult():
    text = ADULT.read_text(encoding="utf-8")
    return A.analyse(ADULT, {str(ADULT.resolve()): text}), text


def _labels(adult, typed: str, space: bool) -> list[str]:
    idx, text = adult
    new = text + typed
    lines = new.split("\n")
    return [lbl for lbl, _, _ in A.completions(idx, new, len(lines), len(lines[-1]) + 1, space=space)]


@pytest.mark.parametrize("typed", [
    PAIR + "  ensure prob(mlp(x)) ", PAIR + "  ensure prob(mlp(x)) - ", PAIR + "  require x.age >= ",
    "\nproperty p {\n  statistical_parity(mlp, groups sex) <= ", "\ngroup g = ", "\nproperty p {\n  ",
    "\n", "\nproperty p {\n  bootstrap = ", "\nproperty p {\n  nonsense = ",
    "\nfeatures G from adult {\n  a ", "\nencode Applicant for mlp {\n  age, ",
    "\nfeatures G from adult {\n  a : int in [17, ", "\nfeatures G from adult {\n  a : {A, ",
])
def test_a_space_in_an_expression_or_before_free_text_offers_nothing(adult, typed):
    assert _labels(adult, typed, space=True) == []


@pytest.mark.parametrize("typed, expected", [
    ("\nproperty p {\n  using ", {"milp", "smt", "ssat", "data"}),
    ("\nproperty p {\n  search ", {"random", "annealing", "knn"}),
    ("\nproperty p {\n  mode = ", {"prove", "find", "maximize"}),
    ("\nproperty p {\n  compare = ", {"between_groups", "to_overall"}),
    ("\nmodel m = ", {"onnx", "torch", "sklearn", "rule"}),
    ("\nfeatures G from ", {"adult"}),
    ("\nrepair r for ", {"dt", "lr", "mlp"}),
    ("\napply ", {"close_scores", "four_fifths", "same_decision"}),
    ("\nencode Applicant for mlp {\n  age : ", {"raw", "onehot", "minmax", "standard"}),
    ("\nfeatures G from adult {\n  a : ", {"int in [", "real in [", "bool", "{"}),
    ("\nfeatures G from adult {\n  a : int in [17, 90] ", {"protected", "column", "bins"}),
    ("\nfeatures G from adult {\n  a : {A, B} ", {"protected", "column", "bins"}),
    ("\nproperty p {\n  forall x, x' : ", {"Applicant"}),
])
def test_a_space_where_a_short_known_list_comes_next(adult, typed, expected):
    got = _labels(adult, typed, space=True)
    assert set(got) >= expected and "statistical_parity" not in got and len(got) < 20
    assert got == _labels(adult, typed, space=False)  # the same as invoked there


def test_invoked_the_full_fitting_list_is_unchanged(adult):
    assert {"x", "x'", "statistical_parity", "mlp", "sex"} <= set(_labels(adult, PAIR + "  ensure prob(mlp(x)) ",
                                                                         space=False))
    assert {"forall", "bootstrap = "} <= set(_labels(adult, "\nproperty p {\n  ", space=False))


def test_an_option_value_in_a_policy_offers_its_parameters(adult):
    typed = "\npolicy q(m: model, k: int) {\n  property r {\n    bootstrap = "
    assert _labels(adult, typed, space=False) == ["k", "m"]
    assert _labels(adult, typed.replace("bootstrap", "mode"), space=False) == ["prove", "find", "maximize", "k", "m"]


def test_x_dot_when_the_set_is_a_policy_parameter(adult):
    typed = "\npolicy q(m: model, F: features) {\n  property r {\n    forall x, x' : F\n    require x."
    # not applied (yet): every feature of whatever set is passed
    assert _labels(adult, typed, space=False) == ["*"]
    # applied with Applicant (positional or by name): its features, and *
    _, text = adult
    policy = ("\npolicy q(m: model, F: features) {\n  property r {\n    forall x, x' : F\n"
              "    require x.* == x'.* except {sex}\n    ensure label(m(x)) == label(m(x'))\n  }\n}\n")
    for apply in ("apply q(mlp, Applicant)\n", "apply q(m = mlp, F = Applicant)\n"):
        new = text + policy + apply
        idx = A.analyse(ADULT, {str(ADULT.resolve()): new})
        assert not [d for d in idx.diagnostics if d.severity == "error"]
        before = new[:new.index("require x.") + len("require x.")].split("\n")
        got = A.completions(idx, new, len(before), len(before[-1]) + 1)
        assert [lbl for lbl, _, _ in got][:3] == ["age", "capital_gain", "capital_loss"]
        assert got[0][2] == "feature of Applicant" and got[-1][0] == "*" and "sex" in [lbl for lbl, _, _ in got]


def test_over_stdio_the_trigger_kind_decides():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            for typed, spaced in ((PAIR + "  ensure prob(mlp(x)) ", []),
                                  ("\nproperty p {\n  mode = ", ["prove", "find", "maximize"])):
                new = text + typed
                n = s.seen(uri)
                s.change(uri, new)
                await s.diagnostics(uri, n)
                at = T.Position(new.count("\n"), len(new.rsplit("\n", 1)[-1]))
                assert [i.label for i in (await s.completion(uri, at, trigger=" ")).items] == spaced
                invoked = [i.label for i in (await s.completion(uri, at)).items]
                assert set(spaced) <= set(invoked) and len(invoked) >= len(spaced)
                if not spaced:
                    assert {"x", "statistical_parity"} <= set(invoked)
                # another trigger character than a space: unchanged
                assert [i.label for i in (await s.completion(uri, at, trigger="(")).items] == invoked

    asyncio.run(scenario())


def test_over_stdio_x_dot_of_a_policy_parameter():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            new = text + ("\npolicy q(m: model, F: features) {\n  property r {\n    forall x, x' : F\n"
                          "    require x.* == x'.* except {sex}\n    ensure label(m(x)) == label(m(x'))\n  }\n}\n"
                          "apply q(mlp, Applicant)\n")
            n = s.seen(uri)
            s.change(uri, new)
            await s.diagnostics(uri, n)
            c = await s.completion(uri, s.pos(new, "require x.*", len("require x.")))
            labels = [i.label for i in c.items]
            assert labels[0] == "age" and labels[-1] == "*" and "sex" in labels
            assert c.items[0].detail == "feature of Applicant"

    asyncio.run(scenario())
