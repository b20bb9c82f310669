"""logit(m(x), c) reads an output of logits only (README). A scikit-learn pipeline evaluated whole (here: a
second preprocessing step after the ColumnTransformer, or a sparse ColumnTransformer before XGBoost) ending in a
3-class XGBClassifier is read by its predict_proba; its columns were compared as if they were the logits, so
|logit(m(x), c) - logit(m(x'), c)| <= eps was holds (proved) with eps just below the largest margin difference
and violated where the margins of class 0 never differ (review of session 29, branch h3). Now unknown, saying why;
the same classifier folded (dense, one ColumnTransformer) is decided on its margins, as before."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")


def _pipeline(dense_extra_step: bool, sparse: bool):
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    rows, ys = [], []
    for g, a, b in itertools.product("nyz", range(5), range(4)):
        for _ in range(6):
            s = a + 2 * (g == "y") * (b >= 2) + (g == "z") * (a == 4) + rng.integers(0, 3)
            rows.append((g, a, b))
            ys.append(int(s) % 3)
    frame = pd.DataFrame(rows, columns=["g", "a", "b"])
    ct = ColumnTransformer([("oh", OneHotEncoder(), ["g"]), ("p", "passthrough", ["a", "b"])],
                           sparse_threshold=1.0 if sparse else 0.0)
    steps = [("pre", ct)] + ([("id", StandardScaler(with_mean=False, with_std=False))] if dense_extra_step else [])
    clf = xgb.XGBClassifier(n_estimators=4, max_depth=2, learning_rate=0.5, n_jobs=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline(steps + [("clf", clf)]).fit(frame, np.array(ys))
    return pipe, frame.assign(y=ys)


def _largest_margin_gap(pipe, c):
    import pandas as pd

    G = pd.DataFrame(list(itertools.product("nyz", range(5), range(4))), columns=["g", "a", "b"])
    Z = np.asarray(pipe[-1].predict(pipe[:-1].transform(G), output_margin=True), dtype=np.float64)
    by = {}
    for i, (a, b) in enumerate(zip(G.a, G.b)):
        by.setdefault((a, b), []).append(Z[i, c])
    return max(max(Fraction(v) for v in vs) - min(Fraction(v) for v in vs) for vs in by.values())


SPEC = ('data d = csv("d.csv", label = y == 1)\nfeatures F from d {\n  g : {n, y, z}  protected\n'
        '  a : int in [0, 4]\n  b : int in [0, 3]\n}\nmodel m = sklearn("m.skops")\n')


@pytest.mark.parametrize("dense_extra_step, sparse", [(True, False), (False, True)], ids=["unfoldable", "sparse"])
def test_logit_of_a_pipeline_read_by_predict_proba_is_unknown(tmp_path, dense_extra_step, sparse):
    import fairspec

    pipe, frame = _pipeline(dense_extra_step, sparse)
    body = ""
    for c in range(3):
        w = _largest_margin_gap(pipe, c)
        eps = float(w) * 0.999 if w else 0.0
        body += (f"property z{c} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n"
                 f"  ensure |logit(m(x), {c}) - logit(m(x'), {c})| <= {eps!r}\n}}\n")
    (tmp_path / "s.fair").write_text(SPEC + body)
    rep = fairspec.check(tmp_path / "s.fair", models={"m": pipe}, data={"d": frame})
    for c in range(3):
        v = rep[f"z{c}"]
        assert v.status == "unknown", (c, v.status, v.how, v.reason)
        assert "outputs no logits" in v.reason, v.reason


def test_logit_of_the_folded_pipeline_is_its_margin(tmp_path):
    import fairspec

    pipe, frame = _pipeline(False, False)
    body = ""
    for c in (1, 2):
        w = float(_largest_margin_gap(pipe, c))
        body += (f"property below{c} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n"
                 f"  ensure |logit(m(x), {c}) - logit(m(x'), {c})| <= {w * 0.999!r}\n}}\n"
                 f"property above{c} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n"
                 f"  ensure |logit(m(x), {c}) - logit(m(x'), {c})| <= {w * 1.001!r}\n}}\n")
    (tmp_path / "s.fair").write_text(SPEC + body)
    rep = fairspec.check(tmp_path / "s.fair", models={"m": pipe}, data={"d": frame})
    for c in (1, 2):
        assert rep[f"below{c}"].status == "violated", rep[f"below{c}"].reason
        assert rep[f"above{c}"].status == "holds" and rep[f"above{c}"].how == "proved", rep[f"above{c}"].reason
