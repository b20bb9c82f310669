"""MinMaxScaler(clip=True) in a scikit-learn pipeline (session 22): folded when the scaler's float64
results at the ends of the feature's declared domain lie inside its feature_range (the clip never
acts on the domain, so the fold is exact), else evaluated whole with an unknown that names the clip
and where the domain reaches past (sklearn_pipeline.settle, decided the same in sema and on the
loaded model). Checked against brute force through the pipeline's own predict."""

from __future__ import annotations

import warnings
from itertools import product

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

import fairspec  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

SPEC = """features F {
  g : {n, y}  protected
  f0 : int in [LO, HI]
  f1 : {a, b, c}
}
model m = sklearn("m.skops")
ENCODE
property same {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  using BACKEND
}
"""
BLOCK = "encode F for m {\n  g, f1 : onehot\n  f0 : minmax(lo = 0, hi = 4)\n}\n"
FIT = range(0, 5)       # the scaler is fitted on f0 in [0, 4]


def _pipe(final, seed, feature_range=(0, 1)):
    frame = pd.DataFrame([{"g": g, "f0": f0, "f1": f1} for g, f0, f1 in product("ny", FIT, "abc")] * 2)
    y = np.random.default_rng(seed).integers(0, 2, len(frame))
    if seed % 2:                          # a label blind to g: the pipeline's decision mostly is too
        y = ((frame.f0 >= 2) ^ (frame.f1 == "b")).to_numpy().astype(int)
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["g", "f1"]),
                             ("sc", MinMaxScaler(feature_range=feature_range, clip=True), ["f0"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", pre), ("clf", final)]).fit(frame, y)


def _domain(lo, hi):
    return pd.DataFrame([{"g": g, "f0": f0, "f1": f1} for g, f0, f1 in product("ny", range(lo, hi + 1), "abc")])


def _check(tmp_path, pipe, lo, hi, backend="milp", block=False):
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("LO", str(lo)).replace("HI", str(hi)).replace("BACKEND", backend)
                    .replace("ENCODE", BLOCK if block else ""))
    return fairspec.check(spec, models={"m": pipe})


CASES = [(LogisticRegression, "milp", (0, 4), (0, 1)), (LogisticRegression, "smt", (1, 3), (-1, 1)),
         (lambda: DecisionTreeClassifier(max_depth=4, random_state=0), "milp", (1, 4), (0, 1))]


@pytest.mark.parametrize(("final", "backend", "dom", "feature_range"), CASES)
def test_a_domain_inside_the_fitted_range_folds_and_agrees_with_brute_force(tmp_path, monkeypatch, final, backend,
                                                                            dom, feature_range):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the solver paths, not enumeration
    seen = set()
    for seed in (0, 1):                                   # a random label, a label blind to g
        pipe = _pipe(final(), seed, feature_range)
        run = _check(tmp_path, pipe, *dom, backend)
        assert not [d for d in run.diagnostics if d.code == "FS423"], run.diagnostics
        v = run.report.verdicts[0]
        assert v.status in ("holds", "violated"), v.reason
        lab = pipe.predict(_domain(*dom)).reshape(2, -1)
        if v.status == "holds":
            assert v.how == "proved" and np.array_equal(lab[0], lab[1]), v.reason
        else:
            one = lambda f: pd.DataFrame([{k: f[k] for k in ("g", "f0", "f1")}])  # noqa: E731
            assert pipe.predict(one(v.witness.features))[0] != pipe.predict(one(v.witness.features_prime))[0]
        seen.add(v.status)
    assert seen == {"holds", "violated"}, seen          # both branches met


@pytest.mark.parametrize(("lo", "hi", "scaled"), [(0, 5, "[0.0, 1.25]"), (-1, 4, "[-0.25, 1.0]")])
def test_a_domain_past_the_fitted_range_stays_whole_and_says_the_clip_acts(tmp_path, monkeypatch, lo, hi, scaled):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the solvers (enumeration runs the pipeline whole)
    run = _check(tmp_path, _pipe(LogisticRegression(), 0), lo, hi)
    v = run.report.verdicts[0]
    why = (f"MinMaxScaler 'sc' (clip=True, and the domain of 'f0', [{lo}, {hi}], reaches past the range it was "
           f"fitted on, [0, 4], and scales to {scaled}, outside feature_range (0, 1), where the clip acts)")
    assert v.status == "unknown" and why in v.reason, v.reason
    (d,) = [d for d in run.diagnostics if d.code == "FS423"]
    assert why in d.message


def test_the_loaded_model_scores_every_domain_point_as_the_pipeline(tmp_path):
    from fairspec.models.sklearn_model import SklearnModel, import_skops_io
    from fairspec.sema.check import check_file

    pipe = _pipe(LogisticRegression(), 1, (-1, 1))
    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    for (lo, hi), folds in (((1, 3), True), ((0, 6), False)):
        (tmp_path / "s.fair").write_text(SPEC.replace("LO", str(lo)).replace("HI", str(hi))
                                         .replace("BACKEND", "milp").replace("ENCODE", ""))
        spec = check_file(tmp_path / "s.fair").spec
        enc = spec.encoding_for("m")
        m = SklearnModel(tmp_path / "m.skops")
        assert m.unfolded                                     # before the domain is known: whole
        m.bind_encoding(enc, spec.feature_set(enc.features))
        assert m.unfolded is not folds and (m.folded.clipped is None)
        dom = _domain(lo, hi)
        X = np.zeros((len(dom), enc.width))
        for c in enc.columns:
            for i, row in dom.iterrows():
                if c.kind == "onehot":
                    X[i, c.offset + c.categories.index(row[c.feature])] = 1.0
                elif c.kind == "minmax":
                    X[i, c.offset] = row[c.feature] * c.scale + c.shift
                elif c.kind == "code":
                    X[i, c.offset] = c.categories.index(row[c.feature])
                else:
                    X[i, c.offset] = row[c.feature]
        assert np.array_equal(m.score(X), pipe.predict_proba(dom)[:, 1])


def test_an_encode_block_folds_inside_and_is_refused_past_the_fitted_range(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    pipe = _pipe(LogisticRegression(), 0)
    run = _check(tmp_path, pipe, 0, 4, block=True)
    assert run.report.verdicts[0].status in ("holds", "violated"), run.report.verdicts[0].reason
    run = _check(tmp_path, pipe, 0, 5, block=True)
    (d,) = [d for d in run.diagnostics if d.code == "FS423"]
    assert "clip=True, and the domain of 'f0', [0, 5]" in d.message
    assert any(d.code == "FS422" and "evaluated whole" in d.message for d in run.diagnostics)


def test_a_bound_one_rounding_past_the_range_stays_whole_and_other_reasons_keep_the_clip_named():
    """Fitted on [1, 6], 6 * scale_ + min_ is 1.0000000000000002: the clip acts at 6 (the pipeline
    computes 1.0), so the domain [1, 6] does not fold though it is the fitted range. A pipeline
    whole for another reason too still names the clip."""
    from types import SimpleNamespace

    from sklearn.svm import SVC

    from fairspec import ir
    from fairspec.models.sklearn_pipeline import fold, settle

    frame = pd.DataFrame({"f0": [1, 6] * 4, "g": list("nnyy") * 2})
    y = np.array([0, 1, 1, 0] * 2)
    fs = SimpleNamespace(features=(), get=lambda c: SimpleNamespace(domain=ir.IntRange(1, 6)) if c == "f0" else None)
    pipe = Pipeline([("pre", ColumnTransformer([("sc", MinMaxScaler(clip=True), ["f0"]),
                                                ("oh", OneHotEncoder(), ["g"])])), ("clf", LogisticRegression())])
    got = settle(fold(pipe.fit(frame, y)), fs)
    assert got.unfoldable == ("MinMaxScaler 'sc' (clip=True, and the domain of 'f0', [1, 6], lies inside the range "
                              "it was fitted on, [1, 6], and scales to [0.0, 1.0000000000000002], outside "
                              "feature_range (0, 1), where the clip acts)",)
    assert pipe.named_steps["pre"].named_transformers_["sc"].transform(pd.DataFrame({"f0": [6]}))[0, 0] == 1.0
    fs.get = lambda c: SimpleNamespace(domain=ir.IntRange(2, 5)) if c == "f0" else None
    assert not settle(fold(pipe), fs).unfoldable           # inside: folded
    assert settle(fold(pipe), None).unfoldable == ("MinMaxScaler 'sc' (clip=True)",)   # no domain: whole
    pipe = Pipeline([("pre", ColumnTransformer([("sc", MinMaxScaler(clip=True), ["f0"]),
                                                ("oh", OneHotEncoder(drop="first"), ["g"])])), ("clf", SVC())])
    got = fold(pipe.fit(frame, y))
    assert got.clipped is None and got.unfoldable[-1] == "MinMaxScaler 'sc' (clip=True)", got.unfoldable
