"""LinearDiscriminantAnalysis and SGDClassifier as networks (``models.network_sklearn.from_sklearn``,
``LINEAR_CLASSIFIERS``): scikit-learn 1.9.1's decision_function of both is ``LinearClassifierMixin``'s
``X @ coef_.T + intercept_`` (LDA overrides it only to call it), predict its sign, and the binary
predict_proba ``expit`` of it (LDA's ``_expit``, SGD's log loss ``_predict_proba_lr``), as for
LogisticRegression, so they take its one-layer encoding and the solvers (milp, smt, partitions) run on
them. Every verdict is checked against brute force on the model's own ``predict`` over every pair, at a
decision exactly 0 and a few ulps either side, on the solver path (the near tie proved as a
LogisticRegression's is) and the enumeration path (unknown at the near tie, as a LogisticRegression's:
batch rounding); the ``prob``
post's ties are in tests/test_library_logistic_pairs.py (now with the solvers for LDA and SGD too)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from conftest import LABEL_PAIR_PROP

import fairspec
from fairspec.models.network import UnsupportedModel

HEAD = """features F {{
  g : {{A, B, C}} protected
  f0 : int in [17, 20]
}}
model m = sklearn("m.skops"{output})
encode F for m {{
  g : code
  f0 : raw
}}
"""
PROP = LABEL_PAIR_PROP
CASES = ["partitions = 3", "using smt", "using milp\n  partitions = 2", "using milp"]
PROVES = (True, True, True, False)
# declared by decision_function (a hinge loss has no predict_proba): the certified branch and bound has no
# runtime error bound for a sigmoid head read as logit, a LogisticRegression's neither (unknown there); smt proves
PROVES_DECISION = (False, True, False, False)
GRID = np.array([[g, f] for g in range(3) for f in range(17, 21)], dtype=np.float64)
KINDS = ["lda", "sgd-hinge", "sgd-log"]


def _fit(kind, coef, intercept):
    pytest.importorskip("sklearn")
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import SGDClassifier

    est = LinearDiscriminantAnalysis() if kind == "lda" else SGDClassifier(loss=kind[4:].replace("log", "log_loss"),
                                                                          max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(np.array([[0.0, 17.0], [2.0, 20.0], [1.0, 18.0], [0.0, 20.0]]), [0, 1, 0, 1])
    est.coef_, est.intercept_ = np.array([coef], dtype=np.float64), np.array([intercept], dtype=np.float64)
    return est


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("solver_path", [True, False])
@pytest.mark.parametrize("intercept, truth", [
    (-38.5 - 2.0 ** -47, "holds"),        # the largest decision -7.1e-15: no pair at 0
    (-36.75 - 2.0 ** -47, "violated"),    # -7.1e-15 at g + f0 = 21 against 1.75 - 7.1e-15 at 22
    (-38.5 + 2.0 ** -47, "violated"),     # +7.1e-15 at g + f0 = 22 against -1.75 at 21
    (-36.75, "violated"),                 # exactly 0 at g + f0 = 21 (label 0) against 1.75 at 22 (label 1)
    (-38.5, "tie"),                       # exactly 0 at g + f0 = 22 (label 0), below 0 elsewhere: no flip
])
def test_label_of_lda_and_sgd_near_and_at_zero(tmp_path, monkeypatch, kind, solver_path, intercept, truth):
    skio = pytest.importorskip("skops.io")
    if solver_path:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    else:
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    est = _fit(kind, (1.75, 1.75), intercept)
    skio.dump(est, tmp_path / "m.skops")
    lab = {tuple(r): int(p) for r, p in zip(GRID, est.predict(GRID))}
    flips = any(lab[a] != lab[b] for a, b in itertools.product(lab, lab) if a[1] == b[1] and a[0] != b[0])
    assert flips == (truth == "violated")
    output = ', output = "decision_function"' if kind == "sgd-hinge" else ""
    (tmp_path / "s.fair").write_text(HEAD.format(output=output) +
                                     "".join(PROP.format(k=k, using=u) for k, u in enumerate(CASES)))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    for k in range(len(CASES)):
        v = rep[f"p{k}"]
        assert "network encodings take no" not in (v.reason or ""), v.reason
        if truth == "violated":
            assert v.status == "violated", (CASES[k], v.reason)
            w = v.witness
            assert lab[tuple(map(float, w.x))] != lab[tuple(map(float, w.x_prime))]
        else:       # no flip: never violated; holds only with a proof
            assert v.status in ("holds", "unknown"), (CASES[k], v.reason)
            assert v.status != "holds" or (v.how == "proved" and v.proof is not None), (CASES[k], v.reason)
        proves = PROVES_DECISION if output else PROVES     # as a LogisticRegression's (test_label_decision_runtime)
        if solver_path and truth == "holds" and proves[k]:
            assert v.status == "holds", (CASES[k], v.reason)


def test_the_encoding_is_the_decision_function():
    """One layer, coef_ and intercept_ as they are; the sigmoid of it is predict_proba's class 1."""
    from fairspec.models.network_sklearn import from_sklearn

    X = np.array([[0.0, 17.0], [2.0, 19.0], [1.0, 20.0]])
    for kind in ("lda", "sgd-log", "sgd-hinge"):
        est = _fit(kind, (0.375, -0.0625), 0.25)
        net = from_sklearn(est)
        assert len(net.layers) == 1 and net.final == "sigmoid"
        assert np.array_equal(net.layers[0].W, est.coef_) and np.array_equal(net.layers[0].b, est.intercept_)
        assert np.array_equal(X @ net.layers[0].W.T.reshape(-1) + net.layers[0].b, est.decision_function(X))


def test_what_no_network_head_computes_is_refused():
    """SGDClassifier's modified_huber predict_proba (a clipped decision) and its multiclass one-vs-rest
    normalization are no sigmoid / softmax head: refused, not encoded; a multiclass LDA (scipy's softmax)
    is not taken either."""
    from sklearn.linear_model import SGDClassifier

    from fairspec.models.network_sklearn import from_sklearn

    with pytest.raises(UnsupportedModel, match="modified_huber"):
        from_sklearn(_fit("sgd-modified_huber", (0.5, 0.5), 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SGDClassifier(loss="log_loss", max_iter=5).fit(np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]), [0, 1, 2])
    with pytest.raises(UnsupportedModel, match="one-vs-rest"):
        from_sklearn(est)
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    lda = LinearDiscriminantAnalysis().fit(np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [0.5, 1.5], [1.5, 0.25],
                                                     [2.5, 2.25]]), [0, 1, 2, 0, 1, 2])
    with pytest.raises(UnsupportedModel, match="two classes only"):
        from_sklearn(lda)


def test_modified_huber_is_refused_when_the_spec_is_checked(tmp_path):
    """FS506 from the skops file itself (peek_sklearn.estimator_obstacle reads the loss), before any solving."""
    skio = pytest.importorskip("skops.io")
    skio.dump(_fit("sgd-modified_huber", (0.5, 0.5), 0.0), tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(HEAD.format(output="") + PROP.format(k=0, using="using milp"))
    rep = fairspec.check(tmp_path / "s.fair")
    assert [d.code for d in rep.diagnostics if d.severity == "error"] == ["FS506"]
    assert "modified_huber" in next(d.message for d in rep.diagnostics if d.code == "FS506")


@pytest.mark.parametrize("fmt", ["skops", "pkl"])
@pytest.mark.parametrize("kind, why", [("lda", "LinearDiscriminantAnalysis of two classes only"),
                                       ("sgd-log", "SGDClassifier of more than two classes"),
                                       ("sgd-modified_huber", "modified_huber")])
def test_lint_refuses_what_no_network_head_computes_from_the_file(tmp_path, fmt, kind, why):
    """FS506 at lint, read inertly from a skops file or a pickle (nothing in it runs): a multiclass LDA or
    SGDClassifier (its classes_' length), an SGDClassifier's modified_huber loss, in the sentence check's
    loader gives (network_sklearn._linear_classifier). Lint said nothing of a pickle of any of them, nor of a
    multiclass one in a skops file."""
    import pickle

    from fairspec.models.network_sklearn import from_sklearn

    if kind == "sgd-modified_huber":
        est = _fit(kind, (0.5, 0.5), 0.0)
    else:
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
        from sklearn.linear_model import SGDClassifier

        est = LinearDiscriminantAnalysis() if kind == "lda" else SGDClassifier(loss="log_loss", max_iter=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(GRID[:, :2] * [1, 0.25], [int(g) for g in GRID[:, 0]])
    if fmt == "skops":
        pytest.importorskip("skops.io").dump(est, tmp_path / "m.skops")
    else:
        (tmp_path / "m.pkl").write_bytes(pickle.dumps(est))
    head = HEAD.format(output="").replace('"m.skops"', '"m.pkl", trust pickle' if fmt == "pkl" else '"m.skops"')
    prop = PROP.format(k=0, using="using milp")
    if kind != "sgd-modified_huber":    # a multiclass model's label is FS414: its class
        prop = prop.replace("label(m(x)) == label(m(x'))", "class(m(x)) == class(m(x'))")
        assert "class(m(x))" in prop
    (tmp_path / "s.fair").write_text(head + prop)
    errors = [d for d in fairspec.lint(tmp_path / "s.fair") if d.severity == "error"]
    assert [d.code for d in errors] == ["FS506"] and why in errors[0].message, errors
    with pytest.raises(UnsupportedModel) as refused:          # check's loader: the same sentence
        from_sklearn(est)
    assert why in str(refused.value)
