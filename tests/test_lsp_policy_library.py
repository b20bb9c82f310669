"""`x.` inside a policy library (a spec with policies and no `apply`), x bound to a `features`
parameter F: no set is passed as F in that file, so completion offers what is knowable there -- the
features the policy already reads from F's individuals (any set passed must have them), the features
of F's default set, and, when an open document imports the library and applies the policy, the
features of the sets it passes -- then `*`; never another set's features guessed. Over stdio with a
real client (fairspec/lsp/client.py); waits are guards, never speed requirements."""

from __future__ import annotations

import asyncio
import shutil

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp import analysis as A  # noqa: E402
from fairspec.lsp.client import Session  # noqa: E402

LIBRARY = """\
# a policy library: no apply
policy close_in_age(m: model, F: features, protected: set) {
  property close_in_age {
    forall x, x' : F
    require x.* == x'.* except protected
    require |x.age - x'.age| <= 2 and x'.hours_per_week >= 10
    ensure label(m(x)) == label(m(x'))
  }
}

policy other(m: model, G: features) {
  property other {
    forall u, u' : G
    require u.* == u'.* except {sex}
    require u.capital_gain >= 1
    ensure label(m(u)) == label(m(u'))
  }
}
"""
TYPED = "    require x."
AT = "    require |x.age"


def _typed(text: str) -> str:
    return text.replace(AT, TYPED + "\n" + AT, 1)


def _labels(idx, text: str) -> list[tuple[str, str]]:
    at = text.index(TYPED) + len(TYPED)
    line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    return [(lbl, detail) for lbl, _, detail in A.completions(idx, text, line, col)]


def test_in_a_library_the_features_the_policy_reads_then_star(tmp_path):
    lib = tmp_path / "lib.fair"
    lib.write_text(LIBRARY, encoding="utf-8")
    idx = A.analyse(lib, {str(lib.resolve()): LIBRARY})
    assert not [d for d in idx.diagnostics if d.severity == "error"], idx.diagnostics
    got = _labels(idx, _typed(LIBRARY))
    # (not other's capital_gain: G is another policy's parameter)
    assert got == [("age", "feature close_in_age reads from F"), ("hours_per_week", "feature close_in_age reads from F"),
                   ("*", "every feature of the set passed as F")], got
    # F's default set, declared in the library: its features (a policy header holding a default is a
    # block for completion: before, `= Person` hid it, and x. offered the expression's names)
    text = ("features Person {\n  age : int in [0, 120]\n  sex : {f, m} protected\n}\n"
            + LIBRARY.replace("F: features,", "F: features = Person,"))
    lib.write_text(text, encoding="utf-8")
    idx = A.analyse(lib, {str(lib.resolve()): text})
    assert not [d for d in idx.diagnostics if d.severity == "error"], idx.diagnostics
    got = _labels(idx, _typed(text))
    assert [lbl for lbl, _ in got] == ["age", "sex", "hours_per_week", "*"], got
    assert got[1] == ("sex", "feature of Person (F's default)")


def test_over_stdio_an_open_spec_applying_the_library_tells_its_sets(tmp_path):
    shutil.copytree(EXAMPLES / "adult", tmp_path / "adult", ignore=shutil.ignore_patterns("train.py"))
    lib = tmp_path / "adult" / "lib.fair"
    lib.write_text(LIBRARY, encoding="utf-8")
    spec = tmp_path / "adult" / "adult.fair"
    spec.write_text(spec.read_text(encoding="utf-8").replace(
        'import "fairspec/policies/four_fifths.fair"', 'import "fairspec/policies/four_fifths.fair"\nimport "lib.fair"')
        + "\napply close_in_age(mlp, Applicant, {sex}) as mlp_age\n", encoding="utf-8")

    async def scenario():
        async with Session() as s:
            lib_uri, text, diags = await s.opened(lib)
            assert not [d for d in diags if d.severity == T.DiagnosticSeverity.Error], diags
            typed = _typed(text)
            n = s.seen(lib_uri)
            s.change(lib_uri, typed)
            await s.diagnostics(lib_uri, n)
            at = s.pos(typed, TYPED, len(TYPED))
            got = [(i.label, i.detail) for i in (await s.completion(lib_uri, at)).items]
            assert got == [("age", "feature close_in_age reads from F"),
                           ("hours_per_week", "feature close_in_age reads from F"),
                           ("*", "every feature of the set passed as F")], got
            # the spec applying it is opened: the features of the set it passes as F
            await s.opened(spec)   # (its diagnostics are of the half-typed library's `x.`)
            got = [(i.label, i.detail) for i in (await s.completion(lib_uri, at)).items]
            assert [lbl for lbl, _ in got] == ["age", "capital_gain", "capital_loss", "education_num",
                                               "hours_per_week", "marital_status", "occupation", "race",
                                               "relationship", "sex", "workclass", "*"], got
            assert got[0] == ("age", "feature of Applicant"), got

    asyncio.run(scenario())
