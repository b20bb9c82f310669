"""XGBoost settings the saved booster does not settle (audit s18/h3, findings 1 and 2), against brute
force on the library's own predict over the whole (small, integer) domain:

* early stopping: a file records ``best_iteration`` and keeps every round; ``XGBClassifier.predict``
  (in memory or after ``load_model``) uses rounds 0 .. best_iteration, ``Booster.predict`` every
  round. The declaration chooses (``rounds = best | all``); without it, FS425. An XGBClassifier
  given to the Python API is checked as its own predict computes.
* ``missing``: a wrapper's ``missing`` is not recorded by ``save_model``; the API refuses one other
  than NaN, and a file is evaluated as xgboost loads it (missing = NaN).
* ``binary:logitraw`` read by its predict (``output = "predict"``): class 1 iff the margin is > 0.5,
  on the solver path too (the branch and bound over leaf boxes and the MILP / SMT encodings compared
  it with 0); declared ``score = logit``: class 1 iff the margin is > 0, for label and class alike.

The models: a first stage fit on labels that depend on (a, b) only, over the full grid (so no tree
splits on s), continued by rounds fit on labels that depend on s; ``best_iteration`` set to the
last round of the first stage, as early stopping records it.
"""

from __future__ import annotations

import json
import re
from itertools import product

import numpy as np
import pytest

from conftest import run_cli

xgb = pytest.importorskip("xgboost")

SPEC = """features F {
  a : int in [0, 3]
  b : int in [0, 3]
  s : {F, M} protected
}
model m = xgboost("m.json"OPTIONS)
encode F for m {
  a, b : raw
  s : code
}
property same {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure CLASS(m(x)) == CLASS(m(x'))
}
"""

GRID = np.array(list(product(range(4), range(4), range(2))), dtype=float)   # a, b, s (s: F = 0, M = 1)


def _fair(pred) -> bool:
    """Does the prediction on GRID ignore s?"""
    p = np.asarray(pred).reshape(4, 4, 2)
    return bool(np.all(p[:, :, 0] == p[:, :, 1]))


def _two_stage(k: int = 2, missing=np.nan, best: bool = True):
    """An XGBClassifier whose first 3 rounds ignore s and whose next 3 depend on it; best_iteration
    2 (the first stage) when ``best``. ``k`` classes (2: binary:logistic; 3: multi:softprob)."""
    X = np.repeat(GRID, 6, axis=0)
    a, b, s = X[:, 0], X[:, 1], X[:, 2]
    y1 = (a + b >= 3).astype(int) if k == 2 else ((a + b) // 2).clip(0, 2).astype(int)
    y2 = y1.copy()
    y2[(a == 1) & (s == 1)] = 1 - y1[(a == 1) & (s == 1)] if k == 2 else (y1[(a == 1) & (s == 1)] + 1) % 3
    kw = dict(max_depth=3, learning_rate=1.0, random_state=0, missing=missing, n_jobs=1)
    first = xgb.XGBClassifier(n_estimators=3, **kw).fit(X, y1)
    clf = xgb.XGBClassifier(n_estimators=3, **kw).fit(X, y2, xgb_model=first.get_booster())
    if best:
        clf.get_booster().set_attr(best_iteration="2")
    return clf


@pytest.fixture(scope="module")
def binary():
    clf = _two_stage(2)
    booster = clf.get_booster()
    assert booster.num_boosted_rounds() == 6 and clf.best_iteration == 2
    wrapper_fair = _fair(clf.predict(GRID))
    booster_fair = _fair(booster.predict(xgb.DMatrix(GRID)) > 0.5)
    # the two runtimes disagree on the property: the case tells which one fairspec computed
    assert wrapper_fair and not booster_fair
    return clf


def _spec(folder, options: str = "", cls: str = "label"):
    (folder / ".git").mkdir(exist_ok=True)
    spec = folder / "spec.fair"
    spec.write_text(SPEC.replace("OPTIONS", options).replace("CLASS", cls))
    return spec


def _verdict(report):
    assert not [d for d in report.diagnostics if d.severity == "error"], report.diagnostics
    (v,) = report.verdicts
    return v


def _assert_truth(v, predict, fair: bool):
    """The verdict is the brute-force truth, and a witness violates on ``predict``."""
    if fair:
        assert (v.status, v.how) == ("holds", "proved"), v.reason
    else:
        assert v.status == "violated", v.reason
        pair = predict(np.array([v.witness.x, v.witness.x_prime], dtype=float))
        assert pair[0] != pair[1], (v.witness, pair)


def _wrapper_predict(path):
    clf = xgb.XGBClassifier()
    clf.load_model(str(path))
    return clf.predict


def _booster_predict(path):
    booster = xgb.Booster()
    booster.load_model(str(path))

    def predict(X):
        y = booster.predict(xgb.DMatrix(X))
        return (y > 0.5).astype(int) if y.ndim == 1 else np.argmax(y, axis=1)
    return predict


@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
def test_rounds_best_and_all_are_the_wrapper_and_the_booster(binary, tmp_path, monkeypatch, enumerate_pairs):
    """A file with early stopping: rounds = best is XGBClassifier.predict after load_model,
    rounds = all is Booster.predict; by enumeration and on the solver path."""
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    binary.save_model(str(tmp_path / "m.json"))
    wrapper, booster = _wrapper_predict(tmp_path / "m.json"), _booster_predict(tmp_path / "m.json")
    for rounds, predict in (("best", wrapper), ("all", booster)):
        v = _verdict(check(_spec(tmp_path, f", rounds = {rounds}")))
        _assert_truth(v, predict, _fair(predict(GRID)))


def test_a_file_with_early_stopping_needs_the_rounds_declared(binary, tmp_path):
    """Without rounds = ..., FS425 at the file (lint and check, through the CLI), with the hint."""
    binary.save_model(str(tmp_path / "m.json"))
    spec = _spec(tmp_path)
    for cmd in ("lint", "check"):
        out = run_cli(cmd, spec, "--format", "json", cwd=tmp_path, timeout=300, env={"COLUMNS": "200"})
        assert out.returncode == 2, (out.stdout, out.stderr)
        doc = json.loads(out.stdout)
        (d,) = [d for d in doc["diagnostics"] if d["code"] == "FS425"]
        assert "best_iteration 2 of its 6 boosting rounds" in d["message"] and d["line"] == 6
        assert "rounds = best" in d["hint"] and "rounds = all" in d["hint"]


def test_the_loader_refuses_an_undeclared_best_iteration(binary, tmp_path):
    from fairspec.models import ModelLoadError, load_model

    binary.save_model(str(tmp_path / "m.json"))
    with pytest.raises(ModelLoadError, match="best_iteration 2 of its 6"):
        load_model("xgboost", tmp_path / "m.json")
    assert load_model("xgboost", tmp_path / "m.json", rounds="best").rounds_used == (3, 6)
    assert load_model("xgboost", tmp_path / "m.json", rounds="all").rounds_used == (6, 6)


def test_a_file_without_best_iteration_needs_nothing(tmp_path):
    """No early stopping (or best_iteration at the last round): no diagnostic, every round."""
    from fairspec.pipeline import check

    clf = _two_stage(2, best=False)
    clf.save_model(str(tmp_path / "m.json"))
    v = _verdict(check(_spec(tmp_path)))
    _assert_truth(v, clf.predict, _fair(clf.predict(GRID)))
    clf.get_booster().set_attr(best_iteration="5")
    clf.save_model(str(tmp_path / "m.json"))
    assert _verdict(check(_spec(tmp_path))).status == v.status


def test_rounds_best_on_a_multiclass_model_is_the_wrapper(tmp_path):
    """multi:softprob (3 trees a round): rounds = best keeps whole rounds, as the wrapper."""
    from fairspec.pipeline import check

    clf = _two_stage(3)
    assert _fair(clf.predict(GRID)) != _fair(np.argmax(clf.get_booster().predict(xgb.DMatrix(GRID)), axis=1))
    clf.save_model(str(tmp_path / "m.json"))
    for rounds, predict in (("best", _wrapper_predict(tmp_path / "m.json")), ("all", _booster_predict(tmp_path / "m.json"))):
        v = _verdict(check(_spec(tmp_path, f", rounds = {rounds}", cls="class")))
        _assert_truth(v, predict, _fair(predict(GRID)))


def test_the_api_checks_an_xgbclassifier_as_its_predict(binary, tmp_path):
    """An XGBClassifier in memory: its predict (rounds 0 .. best_iteration), no declaration needed;
    a declared rounds = all is honoured; a raw Booster (whose predict is the caller's choice of
    iteration_range) is FS425 naming the object, as a file is."""
    import fairspec

    spec = _spec(tmp_path)
    v = fairspec.check(spec, models={"m": binary}).report.verdicts[0]
    _assert_truth(v, binary.predict, True)
    rep = fairspec.check(spec, models={"m": binary.get_booster()})
    (d,) = [d for d in rep.report.diagnostics if d.code == "FS425"]
    assert d.message.startswith("the model given for 'm' records best_iteration 2"), d.message
    booster = binary.get_booster()
    predict = lambda X: (booster.predict(xgb.DMatrix(X)) > 0.5).astype(int)   # noqa: E731
    for obj in (binary, booster):
        v = fairspec.check(_spec(tmp_path, ", rounds = all"), models={"m": obj}).report.verdicts[0]
        _assert_truth(v, predict, False)


def test_the_report_says_which_rounds_were_checked(binary, tmp_path):
    """The rounds evaluated are in the report (the model's load entry, the text line, the HTML page):
    for a file read with rounds = best, and for an XGBClassifier given in memory, whose written file
    keeps rounds 0 .. best_iteration with nothing in the spec to say so. Every round: nothing said."""
    import fairspec

    binary.save_model(str(tmp_path / "m.json"))
    for rep, by in ((fairspec.check(_spec(tmp_path, ", rounds = best")), "rounds = best"),
                    (fairspec.check(_spec(tmp_path), models={"m": binary}),
                     "the XGBClassifier's predict, best_iteration 2")):
        (load,) = [x for x in rep.to_dict()["loads"] if x["what"] == "model"]
        assert load["rounds"] == {"used": 3, "recorded": 6, "chosen_by": by}, load
        line = re.escape(f"(rounds 0 .. 2 of the 6 recorded: {by})")
        assert re.search(rf"loaded .*: model m \d+\.\d\ds {line}", " ".join(str(rep).split())), str(rep)
        assert f"(rounds 0 .. 2 of the 6 recorded: {by})".replace("'", "&#x27;") in rep.to_html()
    for rep in (fairspec.check(_spec(tmp_path, ", rounds = all")),
                fairspec.check(_spec(tmp_path, ", rounds = all"), models={"m": binary})):
        (load,) = [x for x in rep.to_dict()["loads"] if x["what"] == "model"]
        assert "rounds" not in load and "rounds 0 .." not in str(rep)


def test_the_api_refuses_a_missing_value_other_than_nan(tmp_path):
    """XGBClassifier(missing=0.0): its predict sends s = 0 down the default branches, which the
    saved file does not record; refused with one sentence. missing = NaN is checked as usual."""
    import fairspec

    spec = _spec(tmp_path)
    clf = _two_stage(2, missing=0.0, best=False)
    assert not _fair(clf.predict(GRID))         # the file written for it would be fair (the next test)
    with pytest.raises(fairspec.FairspecError, match=r"^model 'm': the XGBoost model given treats 0\.0 as missing") as e:
        fairspec.check(spec, models={"m": clf})
    assert "\n" not in str(e.value)
    clf = _two_stage(2, best=False)
    v = fairspec.check(spec, models={"m": clf}).report.verdicts[0]
    _assert_truth(v, clf.predict, _fair(clf.predict(GRID)))
    clf.set_params(missing=np.float32("nan"))   # NaN of another type is NaN: not refused
    v = fairspec.check(spec, models={"m": clf}).report.verdicts[0]
    _assert_truth(v, clf.predict, _fair(clf.predict(GRID)))


def test_a_file_is_evaluated_with_xgboosts_missing_nan(tmp_path):
    """A model fit with missing = 0.0 and saved: the file does not record it; fairspec's verdict is
    that of the file as xgboost loads it (missing = NaN; no domain point is NaN)."""
    from fairspec.pipeline import check

    clf = _two_stage(2, missing=0.0, best=False)
    clf.save_model(str(tmp_path / "m.json"))
    loaded = _wrapper_predict(tmp_path / "m.json")
    assert np.isnan(xgb.XGBClassifier().missing)
    assert not _fair(clf.predict(GRID)) and _fair(loaded(GRID))     # the object and the file differ
    v = _verdict(check(_spec(tmp_path)))
    _assert_truth(v, loaded, _fair(loaded(GRID)))


def test_rounds_is_an_xgboost_option_with_two_values(binary, tmp_path):
    from fairspec.pipeline import lint

    binary.save_model(str(tmp_path / "m.json"))
    bad = lint(_spec(tmp_path, ", rounds = 3")).diagnostics
    assert [d.code for d in bad] == ["FS307"] and "rounds = best | all" in bad[0].message
    (tmp_path / "m.txt").write_text("")
    spec = _spec(tmp_path, ", rounds = best").read_text().replace('xgboost("m.json"', 'lightgbm("m.txt"')
    (tmp_path / "spec.fair").write_text(spec)
    codes = [(d.code, d.message) for d in lint(tmp_path / "spec.fair").diagnostics]
    assert codes[0] == ("FS208", "rounds is an option of xgboost(...) models (early stopping), not of lightgbm(...)")


def _logitraw(lo: float, hi: float) -> "xgb.XGBClassifier":
    """A binary:logitraw XGBClassifier of two stumps on GRID (base_score 0.5): s adds -0.2 (F) or
    +0.2 (M); a < 3 adds ``lo``, a = 3 ``hi``. Its predict is the margin itself: class 1 above 0.5 for
    XGBClassifier.predict, above 0 read as a margin."""
    X = np.repeat(GRID, 2, axis=0)
    y = ((X[:, 0] == 3) | (X[:, 2] == 1)).astype(int)
    clf = xgb.XGBClassifier(n_estimators=2, max_depth=1, objective="binary:logitraw", learning_rate=1.0,
                            base_score=0.5, reg_lambda=0.0, min_child_weight=0.0, n_jobs=1, random_state=0).fit(X, y)
    doc = json.loads(bytes(clf.get_booster().save_raw("json")))
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    assert [len(t["left_children"]) for t in trees] == [3, 3]
    for t, (feature, cond, lo, hi) in zip(trees, ((2, 0.5, -0.2, 0.2), (0, 2.5, lo, hi))):
        t["split_indices"][0], t["split_conditions"][0] = feature, cond
        t["split_conditions"][1] = t["base_weights"][1] = lo
        t["split_conditions"][2] = t["base_weights"][2] = hi
    out = xgb.XGBClassifier(n_jobs=1)
    out.load_model(bytearray(json.dumps(doc).encode()))
    return out


@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
@pytest.mark.parametrize("lo, hi", [(-0.25, 0.0), (-0.5, 0.5)])
def test_logitraw_read_by_its_predict_is_decided_at_one_half(tmp_path, monkeypatch, enumerate_pairs, lo, hi):
    """binary:logitraw with output = "predict": class 1 iff the margin is > 0.5 (XGBClassifier.predict),
    by enumeration and on the solver path, where the branch and bound over leaf boxes compared the
    margin with 0 (its certain classes disagreed with the library: unknown, "the converted trees do
    not reproduce the library", api-solver-39000030 p1 / p2). (-0.25, 0): the margins 0.05 / 0.45
    (a < 3) and 0.3 / 0.7 (a = 3) cross 0.5 only; (-0.5, 0.5): -0.2 / 0.2 and 0.8 / 1.2 cross 0 only. Each
    against the wrapper's predict (and margin > 0 for output = "margin") at every grid point."""
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    clf = _logitraw(lo, hi)
    clf.save_model(str(tmp_path / "m.json"))
    margin = lambda X: (clf.predict(X, output_margin=True) > 0).astype(int)   # noqa: E731
    assert _fair(clf.predict(GRID)) == (lo == -0.5) and _fair(margin(GRID)) == (lo == -0.25)
    for output, predict in (("predict", clf.predict), ("margin", margin)):
        v = _verdict(check(_spec(tmp_path, f', output = "{output}"')))
        _assert_truth(v, predict, _fair(predict(GRID)))


@pytest.mark.parametrize("engine", ["highs", "z3"])
@pytest.mark.parametrize("index", [1, 0])
@pytest.mark.parametrize("lo, hi", [(-0.25, 0.0), (-0.5, 0.5)])
def test_logitraw_read_by_its_predict_on_the_tree_encodings(tmp_path, engine, index, lo, hi):
    """The MILP / SMT tree encodings (no local search first) compare the ensemble's S with
    TreeEnsemble.threshold: 1/2 on the margin of binary:logitraw read by its predict (-1/2 on the
    negated margin of index = 0), where they compared it with 0. (-0.25, 0) crosses 0.5 only: a
    violating pair, which breaks predict; (-0.5, 0.5) crosses 0 only: no violating pair (the
    candidate that crossed 0 did not break predict)."""
    from fairspec.backends.pair import PairProblem
    from fairspec.backends.trees import modes
    from fairspec.backends.trees.space import fold
    from fairspec.models import load_model

    clf = _logitraw(lo, hi)
    clf.save_model(str(tmp_path / "m.json"))
    model = load_model("xgboost", tmp_path / "m.json", output="predict", index=index)
    ens = model.tree_ensemble()
    assert ens.threshold == (0.5 if index == 1 else -0.5), "the threshold is the cut of predict, not 0"
    assert np.array_equal(ens.decide(GRID), model.decide(GRID))      # no margin of this model is 0.5
    lo, hi = np.zeros(3), np.array([3.0, 3.0, 1.0])
    folded = fold(ens, lo, hi, np.ones(3, bool))                  # as the pipeline does: the cut kept
    problem = PairProblem(folded, lo, hi, np.ones(3, bool), (), (2,), None, (), "label")
    res = modes.prove(problem, engine=engine, portfolio=False, falsify=False)
    if _fair(clf.predict(GRID)):
        assert res.status == "holds", res.reason
    else:
        assert res.status == "violated", res.reason
        pair = clf.predict(np.array([res.witness.x, res.witness.x_prime]))
        assert pair[0] != pair[1], res.witness


@pytest.mark.parametrize("using", ["", "  using smt\n"])
@pytest.mark.parametrize("lo, hi", [(-0.25, 0.0), (-0.5, 0.5)])
def test_logitraw_read_by_its_predict_on_the_solver_path(tmp_path, monkeypatch, using, lo, hi):
    """fairspec check on the solver path with the branch and bound over leaf boxes out of the way:
    a violation is a pair that breaks predict (the encodings find it), and where predict is fair no
    candidate is dropped (the encodings compared the margin with 0 and proposed a pair crossing 0)."""
    from fairspec.kinds import tree_boxes
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    monkeypatch.setattr(tree_boxes, "decide_by_boxes", lambda *a, **k: (None, "off for this test"))
    clf = _logitraw(lo, hi)
    clf.save_model(str(tmp_path / "m.json"))
    spec = _spec(tmp_path, ', output = "predict"')
    spec.write_text(spec.read_text().replace("  ensure", using + "  ensure"))
    v = _verdict(check(spec))
    if _fair(clf.predict(GRID)):
        assert v.status == "unknown" and "found no violating pair" in v.reason, v.reason
    else:
        assert v.status == "violated", v.reason
        pair = clf.predict(np.array([v.witness.x, v.witness.x_prime], dtype=float))
        assert pair[0] != pair[1], (v.witness, pair)


@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
@pytest.mark.parametrize("options", [", score = logit", ", score = logit, index = 0"])
@pytest.mark.parametrize("cls", ["label", "class"])
@pytest.mark.parametrize("lo, hi", [(-0.25, 0.0), (-0.5, 0.5)])
def test_logitraw_declared_score_logit_is_decided_at_zero(tmp_path, monkeypatch, enumerate_pairs, options, cls, lo, hi):
    """binary:logitraw declared ``score = logit`` (no output): its predict is the margin, class 1 iff it is
    > 0 (README: "output = "margin" (> 0; also score = logit)"). Before, class(...) and index 0's label
    compared the margin with 0.5 (the model's margin flag: no output = "margin") while label read > 0: a
    proof of the wrong rule ((-0.5, 0.5): holds (proved), violated on margin > 0). Every verdict, by
    enumeration and on the solver path, against margin > 0 at every grid point: the solver path decides
    every case (its encodings and the leaf boxes cut at _Boosted.decision_margin; the boxes cut at 0.5
    before, and class(...) / a fair label ended unknown, 'the converted trees do not reproduce the
    library')."""
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    clf = _logitraw(lo, hi)
    clf.save_model(str(tmp_path / "m.json"))
    margin = lambda X: (clf.predict(X, output_margin=True) > 0).astype(int)   # noqa: E731
    fair = _fair(margin(GRID))
    assert fair == (lo == -0.25)
    v = _verdict(check(_spec(tmp_path, options, cls)))
    _assert_truth(v, margin, fair)                           # decided, and right


@pytest.mark.parametrize("index", [0, 1])
def test_instant_verdict_leaves_a_tie_at_the_cut_to_the_library(tmp_path, monkeypatch, index):
    """A stump on g whose margins are exactly 0 (g = a) and 0.25 (g = b): the library's class 0 is
    margin <= 0, so g = a is class 0 (index 0's positive) and the label flips with g. Index 0's ensemble
    reads S = -margin, at most 0 = its threshold: the instant verdict said 'every input is decided
    negative (0 <= 0)', holds, where the pair (a, b) violates (the boxes then found it; the instant
    claim was wrong). Now it is strict and leaves S = threshold to the solvers / boxes; every verdict
    against the library's decide on the grid."""
    import json

    import fairspec.backends.trees.space as space
    from fairspec.models import load_model
    from fairspec.pipeline import check

    X = np.array([[g, x] for g in (0, 1) for x in range(4)] * 10, float)
    b = xgb.train({"objective": "binary:logistic", "max_depth": 1, "base_score": 0.5, "nthread": 1},
                  xgb.DMatrix(X, label=X[:, 0].astype(int)), 1)
    doc = json.loads(b.save_raw("json"))
    t = doc["learner"]["gradient_booster"]["model"]["trees"][0]
    assert t["left_children"] == [1, -1, -1] and t["split_indices"][0] == 0
    t["split_conditions"][1:] = t["base_weights"][1:] = [0.0, 0.25]
    c = xgb.Booster()
    c.load_model(bytearray(json.dumps(doc).encode()))
    c.save_model(str(tmp_path / "m.json"))
    G = np.array([[g, x] for g in (0, 1) for x in range(4)], float)
    assert list(c.predict(xgb.DMatrix(G), output_margin=True)) == [0.0] * 4 + [0.25] * 4
    m = load_model("xgboost", tmp_path / "m.json", index=index)
    dec = m.decide(G)
    assert list(dec) == ([1] * 4 + [0] * 4 if index == 0 else [0] * 4 + [1] * 4)
    (tmp_path / "s.fair").write_text(f"""features F {{
  g : {{a, b}} protected
  x : int in [0, 3]
}}
model m = xgboost("m.json", index = {index})
encode F for m {{
  g : code
  x : raw
}}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
  mode = prove
}}
""")
    said = []
    orig = space.instant_verdict
    monkeypatch.setattr(space, "instant_verdict", lambda p: said.append(orig(p)) or said[-1])
    for e in ("", "0"):
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", e)
        v = _verdict(check(str(tmp_path / "s.fair")))
        assert v.status == "violated", v.reason
        pair = m.decide(np.array([v.witness.x, v.witness.x_prime], dtype=float))
        assert pair[0] != pair[1], (v.witness, pair)
    assert not any(s and s[0] == "holds" for s in said), said
