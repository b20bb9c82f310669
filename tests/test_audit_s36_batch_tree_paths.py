"""Session 36 audit (h8, round 3): the other tree paths for scikit-learn tree models that round by batch.

A HistGradientBoosting of 8 classes or more (its softmax sums one row's column-major scores in another order
for one row than for many) and a GradientBoosting with a LogisticRegression init (a float32 dot product) are
no tree model a tie may be decided on from one batch (models.meta_estimators.tree_why_not,
models.batching.rounds_by_batch). k-discrimination's cells (kinds/tree_kdisc, kinds/kdisc_outputs: through
backends/trees/runtime.cell_ensemble) and PBA (through SklearnModel.tree_ensemble) already refuse them; the
individual-fairness boxes' output columns (kinds/tree_boxes.output_scores) read the 9-class model's trees by
its class name -- refused here too, by its fitted attributes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
skio = pytest.importorskip("skops.io")


def _fit(which):
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    n = 600
    X = np.c_[np.zeros(n), rng.integers(0, 200, n), rng.integers(0, 200, n)].astype(float)    # g never read
    s = X[:, 1] / 20 + X[:, 2] / 40 + rng.normal(0, 1, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if which == "hgb9":
            return HistGradientBoostingClassifier(max_iter=5, random_state=0).fit(X, np.clip(s.astype(int), 0, 8))
        if which == "hgb3":
            return HistGradientBoostingClassifier(max_iter=5, random_state=0).fit(X, np.clip(s.astype(int) // 3, 0, 2))
        return GradientBoostingClassifier(n_estimators=5, init=LogisticRegression(), random_state=0).fit(
            X, (s > 7).astype(int))


def _load(tmp_path, which):
    from fairspec.models import load_model

    skio.dump(_fit(which), tmp_path / "m.skops")
    return load_model("sklearn", tmp_path / "m.skops")


def test_box_output_columns_refuse_a_model_rounding_by_batch(tmp_path):
    """Before: output_scores read the 9-class HistGradientBoosting's trees (its class name is a tree model's)
    and the boxes would have decided its class ties on one batch's softmax; a 3-class one is still read."""
    from fairspec.backends.trees.runtime import cell_ensemble
    from fairspec.kinds.tree_boxes import output_scores
    from fairspec.models.batching import rounds_by_batch

    m9 = _load(tmp_path, "hgb9")
    assert rounds_by_batch(m9)
    assert cell_ensemble(m9) is None
    assert output_scores(m9) is None
    (tmp_path / "b").mkdir()
    m3 = _load(tmp_path / "b", "hgb3")
    assert not rounds_by_batch(m3) and output_scores(m3) is not None


@pytest.mark.parametrize("which", ["hgb9", "gb-logistic-init"])
def test_pba_and_kdisc_tree_encodings_refuse_a_model_rounding_by_batch(tmp_path, which):
    """PBA and k-discrimination's binary tree paths read SklearnModel.tree_ensemble: it refuses both (multiclass;
    a non-constant init), so neither decides a tie from one batch's scores (this passed before: pinned)."""
    from fairspec.kinds.tree_cells import tree_ensemble
    from fairspec.models.network import UnsupportedModel

    m = _load(tmp_path, which)
    with pytest.raises(UnsupportedModel):
        m.tree_ensemble()
    assert tree_ensemble(m) is None


SPEC = """features F {
  g : {a, b} protected
  x : int in [0, HI]
  z : int in [0, HI]
}
model m = sklearn("m.skops")
encode F for m {
  g : code
  x : raw
  z : raw
}
PROPS
"""


def _run(tmp_path, which, hi, props):
    import fairspec

    skio.dump(_fit(which), tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(SPEC.replace("HI", str(hi)).replace("PROPS", props))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not rep.report.internal_errors, rep.report.internal_errors
    return rep


def test_kdisc_of_a_9_class_hist_gradient_boosting_beyond_enumeration_is_not_proved_on_cells(tmp_path):
    """g is never read: every individual ties. Beyond a small domain the cells (cell_ensemble) refuse the
    9-class model, so no `holds (proved)` rests on one batch's softmax (passed before: pinned)."""
    rep = _run(tmp_path, "hgb9", 4999, "property kc {\n  k_discrimination(m, over {g}) < 2\n}\n"
               "property kp {\n  k_discrimination(m, over {g}, class = 1, eps = 0.25) < 2\n}")
    for name in ("kc", "kp"):
        v = rep[name]
        assert (v.status.value if hasattr(v.status, "value") else str(v.status)) == "unknown", (name, v.reason)
