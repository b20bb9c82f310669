"""A folded pipeline is scored in the layout its ColumnTransformer hands its estimator (models/pipeline_layout):
column-major for numbers selected from a data frame, row-major after a dense one-hot block, CSR for a sparse
output. Row-major everywhere, a LogisticRegression's / LinearSVC's / MLP's scores differed from the pipeline's own
in the last bit on some domain points (BLAS sums by layout); enumerations and replays compare exact floats."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from test_pipeline_fold_maps import CATS, _domain, _encoding, _fit_frame  # noqa: E402

OH = {"categories": [list(CATS)]}
CTS = {
    "passthrough": (lambda: ColumnTransformer([("o", OrdinalEncoder(), ["g"]), ("p", "passthrough", ["n", "k"])]), "F"),
    "scaled": (lambda: ColumnTransformer([("o", OrdinalEncoder(), ["g"]), ("s", StandardScaler(), ["n", "k"])]), "F"),
    "one-hot dense": (lambda: ColumnTransformer([("o", OneHotEncoder(sparse_output=False, **OH), ["g"]),
                                                 ("s", StandardScaler(), ["n", "k"])]), "C"),
    "one-hot sparse": (lambda: ColumnTransformer([("o", OneHotEncoder(**OH), ["g"]), ("s", StandardScaler(), ["n", "k"])],
                                                 sparse_threshold=1.0), "csr"),
    "one-hot drop": (lambda: ColumnTransformer([("o", OneHotEncoder(drop="first", sparse_output=False, **OH), ["g"]),
                                                ("s", MinMaxScaler(), ["n", "k"])]), "C"),
}
FINALS = {"logistic": (lambda: LogisticRegression(C=7.3), "predict_proba"),
          "mlp": (lambda: MLPClassifier((7,), max_iter=300, random_state=0), "predict_proba"),
          "linear svc": (lambda: LinearSVC(), "decision_function"),
          "forest": (lambda: RandomForestClassifier(n_estimators=5, random_state=0), "predict_proba")}


def _model(tmp_path, ct, final):
    from fairspec.models.sklearn_model import SklearnModel
    from fairspec.runtime.encoding import encode

    fr = _fit_frame()
    y = (np.arange(len(fr)) * 7 % 5 < 2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", ct), ("clf", final)]).fit(fr, y)
    enc, features = _encoding(tmp_path, pipe, with_features=True)
    dom = _domain()
    X = encode(enc, {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(), "k": dom.k.to_numpy()},
               len(dom))
    m = SklearnModel(tmp_path / "m.skops", output="decision_function" if isinstance(final, LinearSVC) else None)
    m.bind_encoding(enc, features)
    return pipe, m, X, dom


def _column(v):
    v = np.asarray(v, dtype=np.float64)
    return v[:, 1] if v.ndim == 2 else v


@pytest.mark.parametrize("final", sorted(FINALS))
@pytest.mark.parametrize("ct", sorted(CTS))
def test_a_folded_pipeline_scores_bit_for_bit_its_own_on_every_domain_point(tmp_path, ct, final):
    from fairspec.models.pipeline_layout import probe
    from fairspec.models.sklearn_pipeline import unfold

    make, layout = CTS[ct]
    est, method = FINALS[final]
    pipe, m, X, dom = _model(tmp_path, make(), est())
    assert not m.unfolded
    assert probe(pipe, m.folded) == layout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for frame in (dom, unfold(m.folded, X, m._integral)):     # the domain's int frame and the replay's
            theirs = _column(getattr(pipe, method)(frame))
            assert np.array_equal(m.score(X).view(np.int64), theirs.view(np.int64))
            assert np.array_equal(m.score(X[::-1]).view(np.int64), theirs[::-1].view(np.int64))
            assert np.array_equal(m.decide(X), (pipe.predict(frame) == pipe.classes_[1]).astype(np.int64))
        _, Xr = m._runtime(X)
        t = pipe[:-1].transform(dom)
        if layout == "csr":
            assert Xr.format == "csr" and np.array_equal(Xr.indptr, t.indptr) and np.array_equal(Xr.indices, t.indices)
        else:
            assert Xr.flags.f_contiguous == t.flags.f_contiguous and Xr.flags.c_contiguous == t.flags.c_contiguous


def test_scored_row_major_a_column_major_pipeline_differed_in_the_last_bit():
    """The measurement behind the fix: the same rows row-major and column-major give a LinearSVC on the scaled
    block other floats on some domain points (were all equal, the layout would not matter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fr = _fit_frame()
        pipe = Pipeline([("pre", CTS["scaled"][0]()), ("clf", LinearSVC())]).fit(
            fr, (np.arange(len(fr)) * 7 % 5 < 2).astype(int))
        t = pipe[:-1].transform(_domain())
        assert t.flags.f_contiguous and not t.flags.c_contiguous
        assert (pipe[-1].decision_function(np.ascontiguousarray(t)) != pipe[-1].decision_function(t)).any()


TIE_SPEC = """features F {
  g : {c, a, e, b, d}
  n : int in [-2, 4]
  k : int in [0, 3]  protected
}
model m = sklearn("m.skops")
property same {
  forall x, x' : F
  require x.* == x'.* except {k}
  require x.g == e and x.n == 3 and x'.k == 2
  ensure label(m(x)) == label(m(x'))
}
"""


def test_a_tie_the_layout_decides_is_decided_as_the_pipeline_and_the_verdict_stays_unknown(tmp_path):
    """0.9 * 2 - 0.4 * 3 - 0.2 * 3 is 0 exactly at (e, 3, 3); with an intercept of 2e-16 the pipeline's own
    predict on the whole domain (column-major) says 0 there, row-major said 1 (and the point alone says 1): fairspec
    now decides every domain point as the pipeline's predict. The verdict was and is unknown: the point lies within
    certify's runtime spread of the threshold (about 5e-15, a bound for every summation order), so no layout could
    make a wrong one; the enumeration now sees the violating pair the pipeline's batch makes."""
    import json
    import subprocess
    import sys

    from fairspec.models.sklearn_model import SklearnModel, import_skops_io
    from fairspec.runtime.encoding import encode
    from fairspec.sema.check import check_file

    fr = _fit_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", ColumnTransformer([("o", OrdinalEncoder(categories=[list(CATS)]), ["g"]),
                                                    ("p", "passthrough", ["n", "k"])])),
                         ("clf", LogisticRegression())]).fit(fr, (np.arange(len(fr)) * 7 % 5 < 2).astype(int))
    pipe[-1].coef_, pipe[-1].intercept_ = np.array([[0.9, -0.4, -0.2]]), np.array([2e-16])
    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    (tmp_path / "s.fair").write_text(TIE_SPEC)
    dom = _domain()
    tie = int(np.flatnonzero((dom.g == "e") & (dom.n == 3) & (dom.k == 3))[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        own = pipe.predict(dom)
        # where this was written (an Intel Xeon) the batch decided the tie: 0 in the whole domain, 1 alone and
        # row-major (as fairspec decided it before); on an AMD EPYC it is 0 every way. Measured, not asserted:
        t = np.asarray(pipe[:-1].transform(dom), dtype=np.float64)
        seen = {"whole": int(own[tie]), "alone": int(pipe.predict(dom.iloc[[tie]])[0]),
                "row-major": int(pipe[-1].predict(np.ascontiguousarray(t))[tie])}
        spec = check_file(tmp_path / "s.fair").spec
        enc = spec.encoding_for("m")
        X = encode(enc, {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(),
                         "k": dom.k.to_numpy()}, len(dom))
        m = SklearnModel(tmp_path / "m.skops")
        m.bind_encoding(enc, spec.feature_set(enc.features))
        assert np.array_equal(m.decide(X), own.astype(np.int64))
    out = subprocess.run([sys.executable, "-m", "fairspec", "check", str(tmp_path / "s.fair"), "--format", "json"],
                         capture_output=True, text=True, timeout=300)
    (res,) = json.loads(out.stdout)["properties"]
    assert res["status"] != "holds", (res, seen)
    if res["status"] == "violated":
        # only with a witness the pipeline's own predict labels apart alone, as a pair and reversed
        w = res["witness"]
        pair = pd.DataFrame([w["features"], w["features_prime"]])[list(dom.columns)].astype(dom.dtypes.to_dict())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = {"alone": [pipe.predict(pair.iloc[[k]])[0] for k in (0, 1)], "pair": list(pipe.predict(pair)),
                      "reversed": list(pipe.predict(pair.iloc[::-1]))[::-1]}
        assert all(a != b for a, b in labels.values()), (labels, w, seen)
        return
    assert res["status"] == "unknown" and res["details"]["runtime_rounding"]["spread"] > 1e-15, (res, seen)
    assert "every violating pair lies within the runtime's rounding" in res["reason"]


@pytest.mark.parametrize("ct", ["passthrough", "scaled", "one-hot drop", "one-hot sparse"])
def test_the_smt_runtime_reads_the_pipelines_own_decision_function(tmp_path, ct):
    """certify's exact SMT path replays a label / logit post of a logistic regression on its decision_function:
    the pipeline's own (its estimator on the columns it reads, in its layout), not the widened copy row-major."""
    from fairspec.backends.smt.runtime import runtime_of

    pipe, m, X, dom = _model(tmp_path, CTS[ct][0](), LogisticRegression(C=7.3))
    enc = m_enc(tmp_path)
    rt = runtime_of(m, enc, "label")
    assert rt is not None and rt.score_kind == "logit"
    V = X.copy()                # the problem space: a scaled feature's own values
    for c in enc.columns:
        if c.kind in ("standard", "minmax"):
            V[:, c.offset] = dom[c.feature].to_numpy(dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = np.asarray(pipe.decision_function(dom), dtype=np.float64)
    assert np.array_equal(np.asarray(rt.replay(V)).view(np.int64), theirs.view(np.int64))


def m_enc(tmp_path):
    from fairspec.sema.check import check_file

    return check_file(tmp_path / "s.fair").spec.encoding_for("m")


@pytest.mark.parametrize("ct", ["passthrough", "one-hot drop", "one-hot sparse"])
def test_the_logit_a_probability_model_is_decided_on_is_the_pipelines_own_decision_function(tmp_path, ct):
    """models/runtime_layers.logit_scores (what predict thresholds, for a model declared by predict_proba): the
    pipeline's own decision_function bit for bit, not the widened copy's row-major one."""
    from fairspec.models.runtime_layers import logit_scores

    pipe, m, X, dom = _model(tmp_path, CTS[ct][0](), LogisticRegression(C=7.3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = np.asarray(pipe.decision_function(dom), dtype=np.float64)
    assert np.array_equal(logit_scores(m, X).view(np.int64), theirs.view(np.int64))
