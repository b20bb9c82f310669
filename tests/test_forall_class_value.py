"""``forall c : |prob(m(x), c) - prob(m(x'), c)| <= eps`` measures a pair by its largest class difference
(the L-infinity distance of the two probability vectors). A violated verdict's value is that measure of
its witness, and the witness shows that class (``details.class``): the tree enumeration reported the
first class that broke the claim (class 0 before class 1), an understated value -- a model whose pair moved
class 1's probability by 0.066 was reported as 0.065 (class 0)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fairspec

pd = pytest.importorskip("pandas")
ensemble = pytest.importorskip("sklearn.ensemble")

SPEC = """\
data d = csv("d.csv")
features P from d {
  a   : int in [0, 5]
  b   : int in [0, 5]
  sex : {F, M} protected
}
model m = sklearn("m.skops")
# fairspec: ignore[FS427]
encode P for m { a, b : raw  sex : code }
property every_class {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure forall c : |prob(m(x), c) - prob(m(x'), c)| <= 0.02
}
"""


def _largest(P) -> tuple[int, float]:
    diffs = [abs(Fraction(float(P[0, c])) - Fraction(float(P[1, c]))) for c in range(P.shape[1])]
    c = max(range(len(diffs)), key=lambda k: (diffs[k], -k))
    return c, float(diffs[c])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_value_is_the_pairs_largest_class_difference(tmp_path, seed):
    (tmp_path / "s.fair").write_text(SPEC)
    rng = np.random.default_rng(seed)
    n = 3000
    a, b, sex = rng.integers(0, 6, n), rng.integers(0, 6, n), rng.integers(0, 2, n)
    # sex moves class 0's probability a little (0.05), class 2's most (0.15): class 0 breaks the claim
    # first, and class 2 is the pair's measure
    p = np.where(sex[:, None] == 0, [0.4, 0.4, 0.2], [0.35, 0.3, 0.35])
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    X = np.c_[a, b, sex].astype(float)
    clf = ensemble.RandomForestClassifier(n_estimators=8, max_depth=4, random_state=seed).fit(X, y)
    frame = pd.DataFrame({"a": a, "b": b, "sex": np.array(["F", "M"])[sex]})
    v = fairspec.check(tmp_path / "s.fair", models={"m": clf}, data={"d": frame})["every_class"]
    assert v.status == "violated", v.reason
    P = clf.predict_proba(np.array([v.witness.x, v.witness.x_prime]))
    c, measure = _largest(P)
    assert v.value == measure and v.details["class"] == c
    assert v.witness.outputs == (float(P[0, c]), float(P[1, c]))


def test_largest_class_keeps_the_first_on_a_tie():
    from fairspec.certify.enumerate import largest_class

    rows = np.array([[0.5, 0.4], [0.2, 0.3], [0.3, 0.3]])
    assert largest_class(rows, 0) == 0 and largest_class(rows, 1) == 1
    assert largest_class(np.array([[0.5, 0.45], [0.1, 0.3], [0.4, 0.25]]), 0) == 1


def test_the_reports_name_the_class_of_the_outputs(tmp_path):
    """The witness's outputs are one class's probabilities: the text and HTML rows say which."""
    from fairspec.report import output_row
    from fairspec.verdict import Verdict, Witness

    w = Witness((0.0,), (1.0,), {"sex": "F"}, {"sex": "M"}, (0.10181380063295364, 0.16791096329689026), "xgboost")
    v = Verdict("allc", "individual_fairness", "violated", value=0.066, witness=w, details={"class": 1})
    assert output_row(v) == "model output (class 1)"
    assert output_row(Verdict("p", "individual_fairness", "violated", witness=w, details={})) == "model output"
    from fairspec.pipeline import Report
    from fairspec.report.html import render

    # the replayed outputs with the digits that read back as the runtime's float32 outputs (session 35)
    assert "<td>model output (class 1)</td><td>0.1018138</td><td>0.16791096</td>" in render(Report(str(tmp_path / "s.fair"), [], verdicts=[v]))


def test_the_softmax_attacks_witness_shows_the_pairs_largest_class(tmp_path, monkeypatch):
    """A logit network beyond enumeration (kinds.class_prob's softmax attack): sex moves class 0's probability by
    0.121 and class 2's by 0.243. The attack tries class 0 first; the verdict's value is the pair's largest class
    difference and the witness shows class 2. It said class 0, 0.121 (the branch meant for forall c tested
    `cls is None`, which forall c never is: its class is ir.EVERY_CLASS)."""
    onnx = pytest.importorskip("onnx")
    from fairspec import pipeline
    from onnx_nets import mlp_model

    W = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1.0]])
    m = mlp_model([(W, np.zeros(3), False)], "Identity", "logits", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    (tmp_path / "s.fair").write_text("""features F {
  a : int in [0, 300]
  b : int in [0, 400]
  sex : {F, M} protected
}
model m = onnx("m.onnx", score = logit)
encode F for m { a : raw  b : raw  sex : onehot }
property every_class {
  forall x, x' : F
  require x.* == x'.* except {sex}
  ensure forall c : |prob(m(x), c) - prob(m(x'), c)| <= 0.02
  using milp
}
""")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (v,) = pipeline.check(tmp_path / "s.fair").verdicts
    assert v.status == "violated", v.reason
    z = np.array([[0.0, 0.0, v.witness.x[3]], [0.0, 0.0, v.witness.x_prime[3]]])
    P = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    c, measure = _largest(P)
    assert c == 2 and v.details["class"] == 2, (v.details["class"], v.reason)
    assert abs(v.value - measure) < 1e-6 and v.value > 0.24, v.value
