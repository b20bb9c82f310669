"""``class(m(x))`` of an ONNX classifier converted by skl2onnx is the graph's own ``label`` output as onnxruntime
computes it, never fairspec's argmax of the ``probabilities`` output where the two differ:

* a LinearClassifier labels by its raw scores while the probabilities it hands on (float32 softmax / sigmoid)
  round scores 1e-9 apart to one value: at that exact tie the argmax took the first column, the label the larger
  score (binary: probabilities [0.5, 0.5], label 1);
* an SVMClassifier labels by one-vs-one votes while its probabilities are Platt scaling (they disagree outright).

Against fairlearn on onnxruntime's label output (group metrics on data) and brute force over a small domain
(pair enumeration), and ``predict_class`` against the label output itself."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from fairspec import pipeline

fm = pytest.importorskip("fairlearn.metrics")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("skl2onnx")

TOL = 1e-12

SPEC = """\
data d = csv("d.csv", target = grade)
features F from d {{
  a : int in [0, 9]
  b : int in [0, 9]
  sex : {{F, M}} protected
}}
model m = onnx("m.onnx", output = "probabilities")
encode F for m {{ a, b : raw  sex : code }}
property sp {{ statistical_parity(m, groups sex, class = "{c}") <= 1   bootstrap = 10 }}
property eo {{ equalized_odds(m, groups sex, class = "{c}") <= 1   bootstrap = 10 }}
property tv {{ class_distribution_distance(m, groups sex) <= 1   bootstrap = 10 }}
"""


def _data(n=600, seed=4, noise=12):
    rng = np.random.default_rng(seed)
    a, b, s = rng.integers(0, 10, n), rng.integers(0, 10, n), rng.integers(0, 2, n)
    grade = np.array(["hi", "lo", "mid"])[np.clip((a + b + 2 * s + rng.integers(-noise, noise + 1, n)) // 7, 0, 2)]
    return np.stack([a, b, s], axis=1).astype(np.float32), grade


def _save(est, X, path):
    from skl2onnx import to_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path.write_bytes(to_onnx(est, X[:1], options={"zipmap": False}).SerializeToString())
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def run(Z):
        label, prob = sess.run(["label", "probabilities"], {sess.get_inputs()[0].name: np.asarray(Z, np.float32)})
        return np.asarray(label), np.asarray(prob)

    return run


def _group_metrics(tmp_path, est, X, grade, c):
    run = _save(est, X, tmp_path / "m.onnx")
    label, prob = run(X)
    sex = np.array(["F", "M"])[X[:, 2].astype(int)]
    (tmp_path / "d.csv").write_text("a,b,sex,grade\n" + "\n".join(
        f"{int(X[i, 0])},{int(X[i, 1])},{sex[i]},{grade[i]}" for i in range(len(X))) + "\n")
    (tmp_path / "s.fair").write_text(SPEC.format(c=c))
    rep = pipeline.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    v = {v.name: v for v in rep.verdicts}
    classes = list(est.classes_)
    P = np.array([[np.mean(label[sex == s] == k) for k in classes] for s in ("F", "M")])
    want = {"sp": fm.demographic_parity_difference(grade == c, label == c, sensitive_features=sex),
            "eo": fm.equalized_odds_difference(grade == c, label == c, sensitive_features=sex),
            "tv": float(np.abs(P[0] - P[1]).sum() / 2)}
    for name, ref in want.items():
        assert abs(v[name].value - ref) <= TOL, (name, v[name].value, ref)
    return label, prob


def test_linear_classifier_tie_reads_the_label_output(tmp_path):
    """Scores [0, 1e-9, -3 + a/2]: the float32 softmax rounds hi and lo to one probability, whose argmax says hi
    (the first column) where the graph's label says lo."""
    from sklearn.linear_model import LogisticRegression

    X, grade = _data()
    lr = LogisticRegression(max_iter=500).fit(X, grade)
    lr.coef_ = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]])
    lr.intercept_ = np.array([0.0, 1e-9, -3.0])
    label, prob = _group_metrics(tmp_path, lr, X, grade, "lo")
    assert (prob[:, 0] == prob[:, 1]).any() and (label == "lo").any()          # an exact tie in the probabilities
    assert (lr.classes_[prob.argmax(axis=1)] != label).sum() >= 100             # which the label breaks the other way


def test_svm_classifier_reads_its_votes(tmp_path):
    from sklearn.svm import SVC

    X, grade = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = SVC(probability=True, random_state=0).fit(X, grade)
    label, prob = _group_metrics(tmp_path, svc, X, grade, "mid")
    assert (svc.classes_[prob.argmax(axis=1)] != label).sum() >= 3           # votes and Platt scaling disagree


def test_predict_class_is_the_label_output_binary_tie(tmp_path):
    """Binary: score 1e-9 > 0 labels 1, its float32 sigmoid is exactly 1/2 ([0.5, 0.5]: the argmax says 0)."""
    from sklearn.linear_model import LogisticRegression

    from fairspec.models.onnx_model import load_onnx

    X = np.array([[a, b, s] for a in range(3) for b in range(3) for s in range(2)], dtype=np.float32)
    lr = LogisticRegression().fit(X, (X[:, 0] > 0).astype(int))
    lr.coef_ = np.array([[0.0, 0.0, 1e-9]])
    lr.intercept_ = np.array([0.0])
    run = _save(lr, X, tmp_path / "m.onnx")
    label, prob = run(X)
    assert (prob[:, 0] == prob[:, 1]).all() and (label == 1).any() and (label == 0).any()
    m = load_onnx(tmp_path / "m.onnx", output="probabilities", index=1)
    assert np.array_equal(m.predict_class(X), label)
    assert not np.array_equal(m.readout.predicted_class(m.outputs(X)), label)   # the argmax: 0 everywhere


def test_individual_fairness_counts_label_flips(tmp_path):
    """class(m(x)) == class(m(x')) enumerated on a small domain counts the pairs whose label output differs."""
    from sklearn.svm import SVC

    X, grade = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = SVC(probability=True, random_state=0).fit(X, grade)
    run = _save(svc, X, tmp_path / "m.onnx")
    G = np.array(list(itertools.product(range(10), range(10))), dtype=np.float32)
    (lf, pf), (lm, pm) = run(np.c_[G, np.zeros(len(G))]), run(np.c_[G, np.ones(len(G))])
    flips = int((lf != lm).sum())
    assert flips != int((pf.argmax(axis=1) != pm.argmax(axis=1)).sum())     # the fixture: the two readings differ
    (tmp_path / "s.fair").write_text(
        "features F {\n  a : int in [0, 9]\n  b : int in [0, 9]\n  sex : {F, M} protected\n}\n"
        'model m = onnx("m.onnx", output = "probabilities")\nencode F for m { a, b : raw  sex : code }\n'
        "property same { forall x, x' : F  require x.* == x'.* except {sex}  ensure class(m(x)) == class(m(x')) }\n")
    (v,) = pipeline.check(tmp_path / "s.fair").verdicts
    assert v.status == "violated" and f"{2 * flips} of the 200 admissible ordered pairs" in v.reason, v.reason
