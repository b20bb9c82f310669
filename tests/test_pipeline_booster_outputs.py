"""An XGBClassifier / LGBMClassifier as a folded pipeline's final step on the class / class_prob posts
(fairspec.models.pipeline_boosters.booster_columns: one group of trees per class, checked against the
classifier's own margins; backends/trees/runtime.cell_ensemble and kinds/tree_boxes.output_scores read
them): before, a multiclass pipeline's class / prob(m(x), c) was unknown ("the milp backend cannot encode
this model") and a binary one's "not yet decided", where the same booster saved on its own was proved or
violated. Against brute force on a small integer domain: every x and x' enumerated, the pipeline's own
predict / predict_proba on data frames the oracle; by cell enumeration and, with FAIRSPEC_ENUMERATE_PAIRS=0,
by the branch and bound over leaf boxes. The models are biased toward ties: labels that repeat across
classes (equal leaves in several classes' trees, so margins tie and predict takes the first class),
XGBoost's base_score 0.5, integer features (thresholds on grid points)."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("xgboost")
pytest.importorskip("lightgbm")

import fairspec  # noqa: E402

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {n, y, z}  protected
  a : int in [0, 4]
  b : int in [0, 3]
}
model m = sklearn("m.skops")
"""


def _prop(name, ensure, mode=None):
    m = f"  mode = {mode}\n" if mode else ""
    return f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n  ensure {ensure}\n{m}}}\n"


def _data(k):
    """Every grid point once per class-0 and class-1 copy (so those two classes' gradients, trees and margins
    are equal everywhere: a tie, which predict gives class 0), plus 0 .. 3 copies of the last class by a
    pattern that reads g on part of the domain (b >= 2)."""
    rows, ys = [], []
    for g, a, b in itertools.product("nyz", range(5), range(4)):
        extra = (a + 2 * (g == "y") * (b >= 2) + (g == "z") * (a == 4)) % 4
        labels = ([0, 1] if k == 3 else [0, 1, 1][: 1 + (extra > 1)] + [0]) + [k - 1] * extra
        rows += [(g, a, b)] * len(labels)
        ys += labels
    return pd.DataFrame(rows, columns=["g", "a", "b"]), pd.Series(ys, dtype=int)


def _pipe(lib, k):
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame, y = _data(k)
    if lib == "xgb":
        final = xgb.XGBClassifier(n_estimators=3, max_depth=2, learning_rate=0.5, base_score=0.5, n_jobs=1,
                                  random_state=0)
    else:
        final = lgb.LGBMClassifier(n_estimators=3, num_leaves=4, min_child_samples=3, learning_rate=0.5,
                                   verbose=-1, n_jobs=1)
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["g"]), ("p", "passthrough", ["a", "b"])], sparse_threshold=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", final)]).fit(frame, y)
    return pipe, frame.assign(y=y)


def _grid():
    rows = list(itertools.product("nyz", range(5), range(4)))
    return pd.DataFrame(rows, columns=["g", "a", "b"])


def _pairs(G):
    for i, j in itertools.permutations(range(len(G)), 2):
        if G.g[i] != G.g[j] and G.a[i] == G.a[j] and G.b[i] == G.b[j]:
            yield i, j


def _own(pipe, frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(pipe.predict(frame)), np.asarray(pipe.predict_proba(frame), dtype=np.float64)


def _around(q: Fraction) -> tuple[str, ...]:
    """Spec numbers at q: the shortest forms of the float nearest q and of its two neighbours (a spec number is
    a float's shortest form, compared as written)."""
    w = float(q)
    return tuple(repr(float(v)) for v in (np.nextafter(w, -np.inf), w, np.nextafter(w, np.inf)))


def _worst(P, G):
    return max(abs(Fraction(float(P[i])) - Fraction(float(P[j]))) for i, j in _pairs(G))


def _breaks_on_pipe(pipe, v, post, cls=None, op="<=", eps=None):
    pair = pd.DataFrame([v.witness.features, v.witness.features_prime])[["g", "a", "b"]].astype({"a": int, "b": int})
    labels, P = _own(pipe, pair)
    if post == "class":
        return labels[0] != labels[1]
    cols = range(P.shape[1]) if cls is None else [cls]
    t = Fraction(eps)
    for c in cols:
        d = abs(Fraction(float(P[0, c])) - Fraction(float(P[1, c])))
        if not (d <= t if op == "<=" else d < t):
            return True
    return False


CASES = [("xgb", 3), ("lgb", 3), ("xgb", 2), ("lgb", 2)]


@pytest.mark.parametrize("boxes", [False, True], ids=["cells", "boxes"])
@pytest.mark.parametrize("lib,k", CASES, ids=[f"{a}{b}" for a, b in CASES])
def test_a_pipelines_booster_class_and_class_prob_against_brute_force(tmp_path, monkeypatch, lib, k, boxes):
    calls = []
    if boxes:       # no enumeration: the branch and bound over leaf boxes decides (counted)
        import fairspec.certify.treeboxes as TB

        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
        real = TB.decide_pairs
        monkeypatch.setattr(TB, "decide_pairs", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    pipe, data = _pipe(lib, k)
    G = _grid()
    labels, P = _own(pipe, G)
    pairs = list(_pairs(G))
    class_bad = any(labels[i] != labels[j] for i, j in pairs)
    worst = [_worst(P[:, c], G) for c in range(k)]
    body = _prop("same_class", "class(m(x)) == class(m(x'))")
    expect = {"same_class": ("class", None, "<=", None, class_bad)}
    for c in range(k):
        # the brute-force maximum to 17 digits from below and above, with <= and <: the tie decides
        for side, eps in zip(("below", "at", "above"), _around(worst[c])):
            for op, tag in (("<=", "le"), ("<", "lt")):
                name = f"p{c}_{tag}_{side}"
                body += _prop(name, f"|prob(m(x), {c}) - prob(m(x'), {c})| {op} {eps}")
                t = Fraction(eps)
                expect[name] = ("class_prob", c, op, eps, not (worst[c] <= t if op == "<=" else worst[c] < t))
    body += _prop("every", "forall c: |prob(m(x), c) - prob(m(x'), c)| <= 0.05")
    expect["every"] = ("class_prob", None, "<=", "0.05", any(w > Fraction("0.05") for w in worst))
    body += _prop("p1_max", "|prob(m(x), 1) - prob(m(x'), 1)| <= 0.05", mode="maximize")
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC + body)
    rep = fairspec.check(spec, models={"m": pipe}, data={"d": data})
    assert rep.exit_code != 4 and not rep.report.internal_errors, rep.report.internal_errors
    assert len(rep) == len(expect) + 1, rep.report.to_json()["diagnostics"]
    assert any(worst) and class_bad, "the model should read g somewhere"
    for name, (post, cls, op, eps, bad) in expect.items():
        v = rep[name]
        if bad:
            assert v.status == "violated", (name, v.status, v.reason)
            assert _breaks_on_pipe(pipe, v, post, cls, op, eps), name
        else:
            assert v.status == "holds" and v.how is not None and v.how.startswith("proved"), (name, v.status, v.reason)
            assert v.proof is not None, name
    assert bool(calls) == boxes
    v = rep["p1_max"]
    assert v.status in ("holds", "violated"), v.reason
    assert (v.status == "violated") == (worst[1] > Fraction("0.05"))
    lo, hi = v.bound
    assert Fraction(lo) <= worst[1] <= Fraction(hi), (lo, hi, float(worst[1]))


def test_a_pipelines_multiclass_booster_reads_every_class_and_its_own_margins():
    from fairspec.models.pipeline_boosters import booster_columns, own_margin

    pipe, data = _pipe("xgb", 3)
    cols = booster_columns(pipe[-1])
    assert len(cols) == 3 and all(len(c.trees) == 3 for c in cols)     # one tree per class per round
    X = pipe[0].transform(data.drop(columns="y"))
    got = np.stack([c.aggregate(X) for c in cols], axis=1)
    assert np.allclose(got, own_margin(pipe[-1], X), rtol=1e-6, atol=1e-6)
    pipe, _ = _pipe("lgb", 3)
    assert len(booster_columns(pipe[-1])) == 3


@pytest.mark.parametrize("boxes", [False, True], ids=["cells", "boxes"])
@pytest.mark.parametrize("lib", ["xgb", "lgb"])
def test_a_pipelines_binary_booster_logit_against_brute_force(tmp_path, monkeypatch, lib, boxes):
    # logit(m(x)) of a binary booster pipeline is its own margin (predict(output_margin / raw_score = True) of
    # the encoded rows); it was "the library of model 'm' has no logit output" (no decision_function)
    if boxes:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    pipe, data = _pipe(lib, 2)
    G = _grid()
    X = pipe[0].transform(G)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"output_margin": True} if lib == "xgb" else {"raw_score": True}
        z = np.asarray(pipe[-1].predict(X, **kw), dtype=np.float64)
    worst = _worst(z, G)
    assert worst > 0
    body, expect = "", {}
    for side, eps in zip(("below", "at", "above"), _around(worst)):
        for op, tag in (("<=", "le"), ("<", "lt")):
            body += _prop(f"z_{tag}_{side}", f"|logit(m(x)) - logit(m(x'))| {op} {eps}")
            t = Fraction(eps)
            expect[f"z_{tag}_{side}"] = (op, t, not (worst <= t if op == "<=" else worst < t))
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC + body)
    rep = fairspec.check(spec, models={"m": pipe}, data={"d": data})
    assert len(rep) == len(expect), rep.report.to_json()["diagnostics"]
    for name, (op, t, bad) in expect.items():
        v = rep[name]
        if bad:
            assert v.status == "violated", (name, v.status, v.reason)
            pair = pd.DataFrame([v.witness.features, v.witness.features_prime])[["g", "a", "b"]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                zz = np.asarray(pipe[-1].predict(pipe[0].transform(pair.astype({"a": int, "b": int})), **kw),
                                dtype=np.float64)
            d = abs(Fraction(float(zz[0])) - Fraction(float(zz[1])))
            assert not (d <= t if op == "<=" else d < t), name
        else:
            assert v.status == "holds" and v.how is not None and v.how.startswith("proved"), (name, v.status, v.reason)


KD_SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {n, y, z}  protected
  a : int in [0, A]
  b : int in [0, 3]
}
model m = sklearn("m.skops")
property k2 { k_discrimination(m, over {g}) < 2 }
property k3 { k_discrimination(m, over {g}) < 3 }
property c2 { k_discrimination(m, over {g}, class = 2, eps = 0.1) < 2 }
"""


@pytest.mark.parametrize("wide", [False, True], ids=["small", "cells"])
@pytest.mark.parametrize("lib", ["xgb", "lgb"])
def test_k_discrimination_of_a_multiclass_booster_pipeline_counts_its_classes(tmp_path, lib, wide):
    # the pipeline is written as a pickle (skops refuses XGBoost / LightGBM types), whose classes lint cannot
    # read: k_discrimination(m, over {g}) was read as the binary score, and scoring it failed ('has 3 columns,
    # one per class: it has no one binary score'), on a small domain as an error that ended the whole check
    pipe, data = _pipe(lib, 3)
    hi = 4000 if wide else 4
    rows = pd.DataFrame(list(itertools.product(range(hi + 1), range(4))), columns=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        per_g = [pipe.predict(rows.assign(g=g)[["g", "a", "b"]]) for g in "nyz"]
        p2 = [pipe.predict_proba(rows.assign(g=g)[["g", "a", "b"]])[:, 2] for g in "nyz"]
    k_class = max(len(set(t)) for t in zip(*per_g))
    k_prob = max(len({int(np.floor(Fraction(float(p)) / Fraction("0.1"))) for p in t}) for t in zip(*p2))
    spec = tmp_path / "s.fair"
    spec.write_text(KD_SPEC.replace("A", str(hi)))
    rep = fairspec.check(spec, models={"m": pipe}, data={"d": data})
    assert len(rep) == 3 and not rep.report.internal_errors, rep.report.to_json().get("error")
    for name, k, limit in (("k2", k_class, 2), ("k3", k_class, 3), ("c2", k_prob, 2)):
        v = rep[name]
        assert v.status == ("holds" if k < limit else "violated"), (name, v.status, v.reason, k)
        if v.status == "holds":
            assert v.how is not None and v.how.startswith("proved"), (name, v.reason)
    assert any("predicted classes" in n for n in (rep["k2"].details or {}).get("notes", [])), rep["k2"].details
