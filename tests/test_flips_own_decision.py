"""Counterfactual flips on data decide a ``label`` post by the model's own decision
(``LoadedModel.decide``), as the group metrics do: for a binary scikit-learn classifier that is its
``predict`` (``label_by_predict``), not its score against the threshold. An SVC with
``probability=True`` predicts from ``decision_function > 0`` while its score is a Platt-scaled
probability, whose 1/2 lies elsewhere: on the rows between the two, the score said a flip where predict
gives none (a reported witness whose two labels are the same) and no flip where predict changes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

skio = pytest.importorskip("skops.io")

SPEC = """data d = csv("d.csv", label = decision == 1)
features P from d {
  age : real in [0, 10]
  sex : {F, M} protected
}
model m = sklearn("m.skops")
encode P for m {
  age : raw
  sex : code
}
property flips {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure label(m(x)) == label(m(x'))
  using data
}
"""


@pytest.fixture(scope="module")
def svc():
    from sklearn.svm import SVC

    rng = np.random.default_rng(0)
    n = 300
    a, s = rng.uniform(0, 10, n), rng.integers(0, 2, n)
    y = ((a + s + rng.normal(0, 2.5, n)) > 5.5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # probability=True is deprecated from scikit-learn 1.9
        return SVC(kernel="linear", probability=True, random_state=0).fit(np.column_stack([a, s]).astype(float), y)


def _flips(tmp_path, est, ages):
    from fairspec import api

    skio.dump(est, tmp_path / "m.skops")
    with open(tmp_path / "d.csv", "w") as f:
        f.write("age,sex,decision\n")
        for a in ages:
            f.write(f"{a},F,0\n")
    (tmp_path / "spec.fair").write_text(SPEC)
    r = api.check(str(tmp_path / "spec.fair"))
    assert [d.code for d in r.diagnostics] == ["FS427"], r.diagnostics   # fitted on an array: stated
    return r.verdicts[0]


def _disagree(est, age):
    """Per sex (F, M): predict's label and the Platt probability's (> 1/2) at this age."""
    X = np.array([[age, 0.0], [age, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.predict(X).tolist(), (est.predict_proba(X)[:, 1] > 0.5).astype(int).tolist()


def test_no_flip_by_predict_is_not_violated(tmp_path, svc):
    # at 4.45 predict says 0 for both sexes; the Platt probability puts M above 1/2 (a flip by the score)
    assert _disagree(svc, 4.45) == ([0, 0], [0, 1])
    v = _flips(tmp_path, svc, [1.0, 2.0, 4.45, 8.0, 9.0])
    assert v.status == "unknown" and "no counterfactual flip" in v.reason, (v.status, v.reason, v.witness)
    # the reason says how to get a proof (the solver backends exist; it once said "not available yet")
    assert "using milp or using smt" in v.reason and "not available" not in v.reason, v.reason


def test_a_flip_by_predict_is_violated(tmp_path, svc):
    # at 5.93 predict changes with sex (F 0, M 1); the Platt probability is above 1/2 for both
    assert _disagree(svc, 5.93) == ([0, 1], [1, 1])
    v = _flips(tmp_path, svc, [1.0, 2.0, 5.93, 8.0, 9.0])
    assert v.status == "violated", (v.status, v.reason)
    assert v.details["rows_with_flip"] == 1
    # the witness's outputs are the labels predict gives the pair, as the pair kinds report them
    assert v.witness.features["age"] == 5.93 and v.witness.outputs == (0.0, 1.0), v.witness


def test_the_witness_is_the_flip_farthest_from_the_threshold(tmp_path):
    """Session 27 (soundness seed 50, data-batched-50000008-flips): of two rows that flip, the reported
    witness was the one whose score sits at the threshold itself (0.5 exactly in torch's float32), which
    another batching of the runtime decided alike; a flip far from the threshold was there too. Candidates
    are now ranked by how far both decisions lie from the threshold: here the row a = 0 (z = 0 and 4) flips
    at the threshold, the row a = -2 (z = -2 and 2) two units from it, and the witness is the latter."""
    skio = pytest.importorskip("skops.io")
    import fairspec
    from conftest import hand_set_logistic

    skio.dump(hand_set_logistic((4.0, 1.0), 0.0), tmp_path / "m.skops")
    (tmp_path / "d.csv").write_text("sex,a,y\nF,0,1\nF,-2,0\nF,1,1\nM,3,1\n")
    (tmp_path / "s.fair").write_text("""data d = csv("d.csv", label = y == 1)
features P from d {
  sex : {F, M} protected
  a : int in [-3, 3]
}
model m = sklearn("m.skops")
encode P for m {
  sex : code
  a : raw
}
property flips {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure label(m(x)) == label(m(x'))
  using data
}
""")
    (v,) = fairspec.check(tmp_path / "s.fair")
    assert v.status == "violated", v.reason
    assert v.witness.features["a"] == -2 and v.witness.features_prime["a"] == -2, v.witness
