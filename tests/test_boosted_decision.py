"""One decision rule of a binary booster, stated by the spec (nothing ambiguous resolved silently).

An XGBoost ``binary:logitraw`` model's predict is its raw margin: ``XGBClassifier.predict`` calls
class 1 where it is > 0.5, the margin reading (``output = "margin"``) where it is > 0. Its
``label`` once followed whichever the declaration happened to read. Now a decision of such a
model -- ``label`` / ``class`` in a property, a group metric's or PBA's decisions -- is lint error
FS426 (at the use) until the declaration says ``output = "predict"`` or ``output = "margin"``
(or a score kind); then check reads the library's own numbers under that rule. ``binary:hinge``
(predict 1.0 exactly where the margin is > 0) and LightGBM's binary objectives (a logistic of a
positive multiple of the raw score) have one rule whatever the declaration: no FS426. A score kind
that contradicts the declared output (``score = logit`` on a probability, ``score = prob`` on a
margin) once set the decision's threshold silently: FS413 at the declaration, and a load error.
"""

from __future__ import annotations

import numpy as np
import pytest

import fairspec
from fairspec.pipeline import lint
from test_boosted_prob import SPEC, _data, _lgb

SAME = "property same {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n  ensure label(m(x)) == label(m(x'))\n}\n"
CLASS = SAME.replace("same", "cls").replace("label(", "class(")
PAR = "property par {\n  statistical_parity(m, groups g) <= 1\n}\n"
PBA = "property bias {\n  pba(m, flip g, around d, delta {x: 1})\n}\n"
LOGIT = ("property lm {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n"
         "  ensure |logit(m(x)) - logit(m(x'))| <= 100\n}\n")


def _xgb(tmp_path, objective: str, base_score: float | None = None) -> str:
    xgb = pytest.importorskip("xgboost")
    X, y = _data(tmp_path)
    params = {"objective": objective, "max_depth": 2, "eta": 0.3, "nthread": 1}
    if base_score is not None:
        params["base_score"] = base_score
    b = xgb.train(params, xgb.DMatrix(X, label=y), 3)
    name = objective.replace(":", "_") + ".json"
    b.save_model(str(tmp_path / name))
    return name


def _spec(tmp_path, decl: str, props: str, stem: str):
    spec = tmp_path / f"{stem}.fair"
    spec.write_text(SPEC.format(decl=decl) + props)
    return spec


def _errors(res):
    return [d for d in res.diagnostics if d.severity == "error"]


def _rates(tmp_path, decisions: np.ndarray) -> float:
    """statistical parity of 0/1 decisions on d.csv by hand: |P(1 | a) - P(1 | b)|."""
    X, _ = _data(tmp_path)
    g = X[:, 0]
    return abs(decisions[g == 0].mean() - decisions[g == 1].mean())


def test_a_logitraw_decision_without_a_stated_rule_is_fs426_at_its_use(tmp_path):
    name = _xgb(tmp_path, "binary:logitraw")
    for props, line, col in ((SAME, 14, 10), (CLASS, 14, 10), (PAR, 12, 3), (PBA, 12, 3)):
        spec = _spec(tmp_path, f'xgboost("{name}")', props, "s")
        errs = _errors(lint(spec))
        assert [d.code for d in errs] == ["FS426"], (props, errs)
        d = errs[0]
        assert (d.span.line, d.span.column) == (line, col), (props, d.span)
        assert "binary:logitraw" in d.message and "0.5" in d.message
        assert 'output = "predict"' in d.hint and 'output = "margin"' in d.hint
        # check reports the same diagnostic, and nothing runs
        rep = fairspec.check(spec)
        assert [x.code for x in _errors(rep)] == ["FS426"] and not list(rep)
    # its margin alone is no decision: clean
    assert not _errors(lint(_spec(tmp_path, f'xgboost("{name}")', LOGIT, "logit")))


@pytest.mark.parametrize("decl", ['output = "predict"', 'output = "margin"', "score = prob", "score = logit"])
def test_a_stated_rule_lints_clean_and_check_reads_the_library_under_it(tmp_path, decl):
    xgb = pytest.importorskip("xgboost")
    name = _xgb(tmp_path, "binary:logitraw")
    spec = _spec(tmp_path, f'xgboost("{name}", {decl})', SAME + PAR, "s")
    assert not _errors(lint(spec))
    rep = fairspec.check(spec)
    assert not _errors(rep) and {v.name for v in rep} == {"same", "par"}
    X, _ = _data(tmp_path)
    clf = xgb.XGBClassifier()
    clf.load_model(str(tmp_path / name))
    margin = clf.get_booster().predict(xgb.DMatrix(X), output_margin=True)
    predict = clf.predict(X)                          # the library's own decision: margin > 0.5
    assert np.array_equal(predict, margin > 0.5)
    by_margin = (margin > 0).astype(int)
    assert not np.array_equal(predict, by_margin)     # the two rules differ on this model
    want = by_margin if ("margin" in decl or "logit" in decl) else predict
    assert rep["par"].value == pytest.approx(_rates(tmp_path, want), abs=1e-12)


@pytest.mark.parametrize("fmt", ["hinge", "lightgbm"])
def test_objectives_with_one_decision_rule_need_no_statement(tmp_path, fmt):
    if fmt == "hinge":
        xgb = pytest.importorskip("xgboost")
        name, call = _xgb(tmp_path, "binary:hinge"), "xgboost"
    else:
        name, call = _lgb(tmp_path, 2.0), "lightgbm"
    values = []
    for out in ("", ', output = "margin"'):
        spec = _spec(tmp_path, f'{call}("{name}"{out})', SAME + PAR, "s")
        assert not _errors(lint(spec))
        rep = fairspec.check(spec)
        values.append((rep["same"].status, rep["par"].value))
    assert values[0] == values[1]
    if fmt == "hinge":
        X, _ = _data(tmp_path)
        clf = xgb.XGBClassifier()
        clf.load_model(str(tmp_path / name))
        assert values[0][1] == pytest.approx(_rates(tmp_path, clf.predict(X)), abs=1e-12)


CLASH = [("binary:logistic", "score = logit"), ("binary:logistic", 'output = "margin", score = prob'),
         ("binary:hinge", 'output = "margin", score = prob'), ("lightgbm", "score = logit"),
         ("lightgbm", 'output = "margin", score = prob')]


@pytest.mark.parametrize("objective,decl", CLASH)
def test_a_score_kind_contradicting_the_output_is_fs413(tmp_path, objective, decl):
    # score = logit on a probability compared it with 0 (every input class 1: statistical parity 0,
    # "holds"); score = prob on a margin compared the margin with 0.5
    from fairspec.models import load_model
    from fairspec.models.base import ModelLoadError

    call, name = ("lightgbm", _lgb(tmp_path, 1.0)) if objective == "lightgbm" else ("xgboost", _xgb(tmp_path, objective))
    spec = _spec(tmp_path, f'{call}("{name}", {decl})', PAR, "s")
    (d,) = _errors(lint(spec))
    assert d.code == "FS413" and (d.span.line, d.span.column) == (6, 1) and "score = " in d.message, d
    assert [x.code for x in _errors(fairspec.check(spec))] == ["FS413"]
    kw = {"score_kind": decl.rsplit("= ", 1)[1]}
    if "margin" in decl:
        kw["output"] = "margin"
    with pytest.raises(ModelLoadError, match="score = "):      # the loader refuses it too (the Python API)
        load_model(call, tmp_path / name, **kw)


@pytest.mark.parametrize("objective,decl", [("binary:logistic", "score = prob"),
                                            ("binary:logistic", 'output = "margin", score = logit'),
                                            ("binary:hinge", "score = logit"),
                                            ("binary:logitraw", 'output = "margin", score = prob')])
def test_a_score_kind_agreeing_with_the_output_is_clean(tmp_path, objective, decl):
    spec = _spec(tmp_path, f'xgboost("{_xgb(tmp_path, objective)}", {decl})', PAR, "s")
    assert not _errors(lint(spec))
    assert fairspec.check(spec)["par"].status in ("holds", "violated")


@pytest.mark.parametrize("objective", ["binary:logistic", "binary:hinge"])
@pytest.mark.parametrize("output", [None, "margin"])
def test_index_0_labels_what_the_library_does_not_call_class_1(tmp_path, objective, output):
    # a margin of exactly 0 (probability 1/2): XGBClassifier.predict returns class 0 there, so with
    # index = 0 (class 0 positive) its label is 1; it was 0 (1 - p > 0.5, -margin > 0 call neither class
    # positive), and a binary:hinge model's was 1 or 0 as the declared output chose
    import json

    xgb = pytest.importorskip("xgboost")
    from fairspec.backends.trees.runtime import runtime_outputs
    from fairspec.models import load_model

    X = np.array([[g, x] for g in (0.0, 1.0) for x in range(4)])
    b = xgb.train({"objective": objective, "max_depth": 1, "nthread": 1, "base_score": 0.5},
                  xgb.DMatrix(X, label=X[:, 0]), 1)
    doc = json.loads(b.save_raw("json"))
    doc["learner"]["learner_model_param"]["base_score"] = "5E-1" if objective == "binary:logistic" else "0E0"
    leaves = doc["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"]
    leaves[1], leaves[2] = 0.0, 0.3                       # g = 0: margin 0; g = 1: margin 0.3
    path = tmp_path / "tie.json"
    path.write_text(json.dumps(doc))
    clf = xgb.XGBClassifier()
    clf.load_model(str(path))
    assert np.array_equal(clf.get_booster().predict(xgb.DMatrix(X), output_margin=True), np.float32(np.repeat([0.0, 0.3], 4)))
    library = clf.predict(X)                              # class 0 at the margin of 0
    assert np.array_equal(library, np.repeat([0, 1], 4))
    one = load_model("xgboost", path, output=output)
    zero = load_model("xgboost", path, output=output, index=0)
    assert np.array_equal(runtime_outputs(one, X, "label"), library)
    assert np.array_equal(runtime_outputs(zero, X, "label"), 1 - library)
    assert np.array_equal(zero.decide(X), 1 - library) and zero.decide(X[:0]).shape == (0,)
