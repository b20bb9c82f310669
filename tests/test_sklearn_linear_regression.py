"""scikit-learn's linear regressors (``LinearRegression``, ``Ridge``, ``Lasso``) are one linear layer the
pair solvers encode: their ``predict`` is ``X @ coef_.T + intercept_`` (one product, then its bias: the
runtime's own numbers, float64), read as ``value(m(x))`` as an MLPRegressor's output is. Before, ``using
milp | smt`` on one was FS506 ("the network encodings take no LinearRegression").

Against brute force on ``predict`` over the whole small domain, every domain sent to the solvers
(``FAIRSPEC_ENUMERATE_PAIRS=0``), on HiGHS, SCIP and z3: ``violated`` below the largest difference and at
it with ``<`` (dyadic coefficients: predict is exact on the grid, so a pair reaches the maximum exactly),
each witness replayed on ``predict``; ``holds (proved)`` above it; maximize's [best, bound] contains it. A
two-output regressor (``coef_`` of two rows) needs ``index`` (FS413 without, at lint and at check); with
it, the column it names. A subclass that predicts otherwise is refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("skops")

from test_sklearn_mlp_regressor import _check, _grid, _lint, _replays, _spec, _truth  # noqa: E402

SOLVERS = {"highs": "using milp", "scip": "using milp\n  engine = scip", "smt": "using smt"}


def _linear(cls_name: str, seed: int, outputs: int = 1):
    """A linear regressor fitted (for its attributes), then given dyadic coefficients (k/8, some exactly 0)
    that read s."""
    from sklearn import linear_model

    rng = np.random.default_rng(seed)
    X = _grid()
    y = X[:, 0] - X[:, 1] + X[:, 3]
    est = getattr(linear_model, cls_name)(**({"alpha": 0.01} if cls_name in ("Ridge", "Lasso") else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, np.stack([y] * outputs, axis=1) if outputs > 1 else y)
    W = rng.integers(-8, 9, (outputs, 4)) / 8.0
    W[rng.random(W.shape) < 0.25] = 0.0
    W[:, 2] = rng.integers(1, 9, outputs) / 8.0          # s weighs: F and M apart by at least 1/8
    W[:, 3] = -rng.integers(1, 9, outputs) / 8.0
    b = rng.integers(-8, 9, outputs) / 8.0
    est.coef_ = W[0] if outputs == 1 else W
    est.intercept_ = float(b[0]) if outputs == 1 else b
    return est


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from fairspec.models.sklearn_model import import_skops_io

    d = tmp_path_factory.mktemp("linreg")
    sio = import_skops_io()
    ests = {"linear": _linear("LinearRegression", 1), "ridge": _linear("Ridge", 2), "lasso": _linear("Lasso", 3),
            "two": _linear("Ridge", 4, outputs=2)}
    for name, est in ests.items():
        sio.dump(est, str(d / f"{name}.skops"))
    return d, ests


@pytest.mark.parametrize("model", ["linear", "ridge", "lasso"])
@pytest.mark.parametrize("solver", list(SOLVERS))
def test_value_on_the_solvers_agrees_with_brute_force(models, model, solver, monkeypatch):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, ests = models
    est = ests[model]
    top = _truth(est)
    assert top >= 0.25
    opts = SOLVERS[solver]
    p = _spec(d, model, [("below", "<=", top - 0.125, "find", opts), ("lt_at", "<", top, "prove", opts),
                         ("le_at", "<=", top, "prove", opts), ("above", "<=", top + 0.25, "prove", opts),
                         ("top", "<=", 1000, "maximize", opts)])
    assert [c for c, _ in _lint(p)] == []          # no FS506: the solvers encode it
    v = _check(p)
    assert v["below"]["status"] == "violated", v["below"]
    _replays(v["below"], est, top - 0.125, False)
    assert v["lt_at"]["status"] == "violated", v["lt_at"]
    _replays(v["lt_at"], est, top, True)
    # <= at the exact maximum (every pair is at it: a linear model): never violated, a holds proved
    assert v["le_at"]["status"] in ("holds", "unknown"), v["le_at"]
    assert v["le_at"]["status"] == "unknown" or v["le_at"]["how"] == "proved", v["le_at"]
    assert v["above"]["status"] == "holds" and v["above"]["how"] == "proved", v["above"]
    t = v["top"]
    assert t["status"] == "holds", t
    lo, hi = t["bound"]
    assert lo <= top <= hi and hi - top < 1e-9, (t["bound"], top)


@pytest.mark.parametrize("solver", ["highs", "smt"])
def test_a_two_output_linear_regressor_reads_the_column_index_names(models, solver, monkeypatch):
    d, ests = models
    est = ests["two"]
    p = _spec(d, "two", [("top", "<=", 1000, "maximize", SOLVERS[solver])])
    found = _lint(p)
    assert [c for c, _ in found] == ["FS413"] and "2 columns" in found[0][1], found
    top0, top1 = _truth(est, 0), _truth(est, 1)
    assert top0 != top1                                   # reading column 0 would give another answer
    opts = SOLVERS[solver]
    p = _spec(d, "two", [("top", "<=", 1000, "maximize", opts), ("lt_at", "<", top1, "prove", opts),
                         ("above", "<=", top1 + 0.125, "prove", opts)], index=1)
    assert _lint(p) == []
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = _check(p)
    lo, hi = v["top"]["bound"]
    assert lo <= top1 <= hi and hi - top1 < 1e-9, (v["top"]["bound"], top1, top0)
    assert v["lt_at"]["status"] == "violated"
    _replays(v["lt_at"], est, top1, True, column=1)
    assert v["above"]["status"] == "holds" and v["above"]["how"] == "proved", v["above"]


def test_the_layer_is_coef_and_intercept_and_a_subclass_that_predicts_otherwise_is_refused():
    from sklearn.linear_model import LinearRegression

    from fairspec.models.network import UnsupportedModel
    from fairspec.models.network_sklearn import from_sklearn

    X = _grid()
    est = _linear("LinearRegression", 5)
    net = from_sklearn(est)
    assert len(net.layers) == 1 and np.array_equal(net.forward(X), est.predict(X))
    two = _linear("Ridge", 6, outputs=2)
    with pytest.raises(UnsupportedModel, match="index"):
        from_sklearn(two)
    assert np.array_equal(from_sklearn(two, index=1).forward(X), two.predict(X)[:, 1])
    assert from_sklearn(two, readout="raw").layers[-1].n_out == 2

    class Clipped(LinearRegression):
        def _decision_function(self, X):
            return np.clip(super()._decision_function(X), 0.0, None)

    Clipped.__name__ = "LinearRegression"
    odd = Clipped().fit(X, X[:, 0] - 1.0)
    with pytest.raises(UnsupportedModel, match="predict"):
        from_sklearn(odd)


def test_lint_reads_a_pickled_two_output_linear_regressor_s_columns(models, tmp_path):
    """A pickle records no n_outputs_ for a linear regressor either: lint reads coef_'s recorded shape
    (inertly, nothing runs), so index = 1 is in range and no index is FS413, as for a skops file."""
    import pickle

    from test_sklearn_mlp_regressor import HEAD

    _, ests = models
    with open(tmp_path / "two.pkl", "wb") as fh:
        pickle.dump(ests["two"], fh)
    prop = "\nproperty p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n" \
           "  ensure |value(m(x)) - value(m(x'))| <= 1\n  using milp\n}\n"
    for index, want in (("", ["FS413"]), (", index = 1", [])):
        p = tmp_path / f"p{len(index)}.fair"
        p.write_text(HEAD.replace('sklearn("MODEL.skops"INDEX)', f'sklearn("two.pkl", trust pickle{index})') + prop)
        assert [c for c, _ in _lint(p)] == want, (index, _lint(p))
