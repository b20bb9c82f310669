"""Session 37 audit (h7): a row-fixed meta-estimator of tree models behind a PCA, on a split edge.

models/split_edges widened the assumed spread for a pipeline's *tree* final whose input lies on a split edge (session
36), but not for a meta-estimator of trees (models/meta_estimators.row_fixed: a soft vote, a bag, ...), whose members'
trees read the same PCA output. Pipeline(onehot + passthrough, PCA(2), VotingClassifier(soft, [HGB])) with the root
split at a domain point's PCA value that the whole batch and the point alone round one ulp apart: fairspec said
`holds (proved)` while the pipeline's own predict, each point alone, labels the pair differently. Now unknown (or
violated with a witness that replays alone, as a pair and reversed, where this machine's BLAS gives one)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from test_audit_s36_batches import EDGE_SPEC, edge_verdict_is_a_replayed_violation


def test_meta_estimator_behind_a_pca_on_a_split_edge_is_not_proved(tmp_path):
    """Failed before: holds (proved)."""
    pd = pytest.importorskip("pandas")
    skops = pytest.importorskip("skops.io")
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA
    from sklearn.ensemble import HistGradientBoostingClassifier, VotingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from fairspec.pipeline import check

    rng = np.random.default_rng(0)
    cols = ["a", "b", "c", "e"]
    df = pd.DataFrame({"g": rng.choice(["A", "B"], 400), **{k: rng.integers(0, 4, 400) for k in cols}})
    y = ((df.a + df.b - df.c + (df.g == "B") + rng.normal(0, 1, 400)) > 3).astype(int)
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["g"]), ("num", "passthrough", cols)])
    vote = VotingClassifier([("h", HistGradientBoostingClassifier(max_iter=1, max_depth=2))], voting="soft")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("pca", PCA(2)), ("clf", vote)]).fit(df, y)
    dom = pd.DataFrame([dict(g=g, **dict(zip(cols, v))) for g in "AB" for v in itertools.product(range(4), repeat=4)])
    whole = pipe[:-1].transform(dom)[:, 0]
    i = next((i for i in range(len(dom)) if pipe[:-1].transform(dom.iloc[i:i + 1])[0, 0] != whole[i]), None)
    if i is None:
        pytest.skip("this machine's BLAS gives PCA the same value in every batch here")
    alone = pipe[:-1].transform(dom.iloc[i:i + 1])[0, 0]
    nodes = pipe[-1].estimators_[0]._predictors[0][0].nodes
    nodes["feature_idx"][0], nodes["num_threshold"][0] = 0, min(whole[i], alone)      # `<=`: one each side

    def leaves(k, v):
        if nodes["is_leaf"][k]:
            nodes["value"][k] = v
        else:
            leaves(nodes["left"][k], v)
            leaves(nodes["right"][k], v)
    leaves(nodes["left"][0], -5.0)
    leaves(nodes["right"][0], 5.0)
    j = (i + len(dom) // 2) % len(dom)                  # its counterfactual (g flipped)
    by_alone = pipe.predict(dom.iloc[[i]])[0] != pipe.predict(dom.iloc[[j]])[0]
    by_whole = pipe.predict(dom)[i] != pipe.predict(dom)[j]
    if by_alone == by_whole:
        pytest.skip("the edge point's label does not depend on the batch here")
    skops.dump(pipe, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(EDGE_SPEC)
    v = check(str(tmp_path / "s.fair")).verdicts[0]
    if not edge_verdict_is_a_replayed_violation(v, pipe, dom):
        assert v.status == "unknown" and "batched" in v.reason, (v.status, v.how, v.reason)
