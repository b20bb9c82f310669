"""scikit-learn estimators as piecewise-linear networks (:class:`fairspec.models.network.PLNet`):
``MLPClassifier`` and ``MLPRegressor`` with ``activation`` relu or identity, the linear classifiers
``LogisticRegression``, ``LinearDiscriminantAnalysis`` and ``SGDClassifier`` (:func:`_linear_classifier`), and
the linear regressors of :data:`LINEAR_REGRESSORS` (``LinearRegression``, ``Ridge``, ``Lasso``, ...).

The layers are the estimator's own ``coefs_`` / ``intercepts_`` (``coef_`` / ``intercept_``), as
float64: scikit-learn's ``predict`` multiplies a float64 input by them (float32 weights, of a model fit
on float32 data, are promoted exactly), so the network is the runtime's arithmetic, float64.

* An ``MLPClassifier``'s output is read through its Readout as for any classifier (a binary one's
  logit is ``decision_function``'s, classes_[1] positive).
* An ``MLPRegressor``'s ``predict`` is ``value(m(x))``: its identity output layer, one column; of a
  multi-output regressor (``n_outputs_ > 1``) the column the declaration's ``index`` chooses, and
  without one an error (never column 0 silently). Its ``loss = "poisson"`` output (``exp``) is not
  piecewise-linear and is refused, as are tanh / logistic hidden units.
* A linear regressor's ``predict`` is ``X @ coef_.T + intercept_`` (scikit-learn's ``LinearModel.predict``):
  one product then its bias, one layer of the runtime's own numbers, read as ``value(m(x))`` as an
  MLPRegressor's output (a two-dimensional ``coef_``: one column per output, ``index`` chooses one).
"""

from __future__ import annotations

import numpy as np

from fairspec.models.network import Layer, PLNet, UnsupportedModel, _Chain, _make_net, apply_readout
from fairspec.models.peek_sklearn import LDA_MULTICLASS, LINEAR_REGRESSORS, SGD_HUBER, SGD_MULTICLASS, estimator_obstacle

MLPS = ("MLPClassifier", "MLPRegressor")
#: linear classifiers read as one layer (``decision_function``) and its logistic / softmax head
LINEAR_CLASSIFIERS = ("LogisticRegression", "LinearDiscriminantAnalysis", "SGDClassifier")


def _mlp_layers(est, name: str):
    """The hidden and output affine layers of a fitted MLP (ReLU after every hidden one; none for
    activation='identity'), and why they are not the runtime's own numbers ("" when they are)."""
    act = est.activation
    if act not in ("relu", "identity"):
        raise UnsupportedModel(act, "activation", f"{name} activation {act!r} is not piecewise-linear")
    ch = _Chain(None)
    n = len(est.coefs_)
    for i, (W, b) in enumerate(zip(est.coefs_, est.intercepts_)):
        ch.affine(np.asarray(W, dtype=np.float64).T, np.asarray(b, dtype=np.float64), "matmul")
        if i < n - 1 and act == "relu":
            ch.relu()
    return ch.finish(), ch.foreign, ch


def _linear_layers(est, name: str) -> list[Layer]:
    """The one layer ``coef_ h + intercept_`` of a fitted linear regressor whose predict is scikit-learn's
    (``LinearModel._decision_function``: ``X @ coef_.T + intercept_``, a product then its bias, the
    runtime's own numbers); UnsupportedModel for a subclass that predicts otherwise."""
    predict, dec = (getattr(type(est), f, None) for f in ("predict", "_decision_function"))
    if not str(getattr(predict, "__module__", "")).startswith("sklearn.linear_model") or \
            getattr(dec, "__qualname__", "") not in ("LinearModel._decision_function", "ElasticNet._decision_function"):
        raise UnsupportedModel(name, "predict", f"this {name}'s predict is not scikit-learn's X @ coef_.T + intercept_")
    W = np.asarray(est.coef_, dtype=np.float64)
    W = W.reshape(1, -1) if W.ndim == 1 else W
    b = np.asarray(est.intercept_, dtype=np.float64).reshape(-1)
    if W.ndim != 2 or b.size not in (1, W.shape[0]):
        raise UnsupportedModel(name, "coef_", f"coef_ of shape {np.shape(est.coef_)} and intercept_ of shape "
                                              f"{np.shape(est.intercept_)} are not one linear map")
    return [Layer(W, np.broadcast_to(b, (W.shape[0],)).copy(), False)]


def _linear_classifier(est, name: str) -> None:
    """UnsupportedModel unless the classifier's decision_function is scikit-learn's
    ``LinearClassifierMixin.decision_function`` (``X @ coef_.T + intercept_``: one product then its bias;
    LinearDiscriminantAnalysis overrides it only to call it) and its predict_proba, where the network's
    sigmoid / softmax head reads one, is that link of it: an SGDClassifier of two classes only (of more,
    log loss normalizes the one-vs-rest expits, not a softmax) and never with modified_huber loss (its
    predict_proba clips the decision, no logistic); its label (any other loss) is the decision's sign.
    A LinearDiscriminantAnalysis of two classes only (of more, scipy's softmax, untested here)."""
    from sklearn.linear_model._base import LinearClassifierMixin

    dec = getattr(type(est), "decision_function", None)
    own = getattr(dec, "__qualname__", "")
    if not isinstance(est, LinearClassifierMixin) or not (
            own == "LinearClassifierMixin.decision_function"
            or own == "LinearDiscriminantAnalysis.decision_function"
            and str(getattr(dec, "__module__", "")) == "sklearn.discriminant_analysis"):
        raise UnsupportedModel(name, "decision_function",
                               f"this {name}'s decision_function is not scikit-learn's X @ coef_.T + intercept_")
    # the sentences lint gives from the file (peek_sklearn.estimator_obstacle, FS506)
    if name == "SGDClassifier" and len(getattr(est, "classes_", ())) != 2:
        raise UnsupportedModel(name, "classes_", SGD_MULTICLASS)
    if name == "LinearDiscriminantAnalysis" and len(getattr(est, "classes_", ())) != 2:
        # scipy's softmax there, not the one a multinomial LogisticRegression's head was checked against
        raise UnsupportedModel(name, "classes_", LDA_MULTICLASS)
    if name == "SGDClassifier":
        if getattr(est, "loss", None) == "modified_huber":
            raise UnsupportedModel(name, "loss", SGD_HUBER)


def _regressor(est, layers, foreign: str, index, readout, ch, name: str = "MLPRegressor") -> PLNet:
    source = f"sklearn {name}"
    if name == "MLPRegressor" and (why := estimator_obstacle(name, None, est.out_activation_)) is not None:
        raise UnsupportedModel(est.out_activation_, "out_activation_", why)
    if isinstance(readout, str) and readout == "chain" and ch is not None:   # one layer per rounding
        return ch.runtime_chain("none", source, name)
    if isinstance(readout, str) and readout in ("raw", "chain", "folded"):  # every column (raw: the runtime's own)
        if foreign and readout != "folded":
            raise UnsupportedModel(name, "layers", foreign)
        return PLNet(tuple(layers), 0, "none", source)
    i = readout.index if readout is not None else index
    k = layers[-1].n_out
    if k == 1:
        if i not in (None, 0):
            raise UnsupportedModel("Output", "n_outputs_", f"the {name} has one output, so it has no column {i}")
        return PLNet(tuple(layers), 0, "none", source)
    if i is None:
        raise UnsupportedModel("Output", "n_outputs_", f"the {name} has {k} outputs; say which one "
                                                       f"value(m(x)) reads with index = i (0 .. {k - 1}) on the model")
    if not 0 <= i < k:
        raise UnsupportedModel("Output", "n_outputs_", f"output index {i} is out of range for {k} outputs")
    return PLNet(tuple(layers), i, "none", source).single_output()


def from_sklearn(est, index: int | None = None, readout=None) -> PLNet:
    """MLPClassifier, MLPRegressor (activation='relu' or 'identity'), a linear classifier
    (:data:`LINEAR_CLASSIFIERS`) or a linear regressor (:data:`LINEAR_REGRESSORS`) as a PLNet.

    index: the class (column of ``predict_proba``) whose probability is the output;
    default 1 for a binary classifier. For a binary model the logit for class 0 is the
    negated decision function. Of a multi-output MLPRegressor: the column of ``predict``.
    readout: the loaded model's Readout (it decides the output instead of ``index``), or "raw":
    the runtime's own layers with every output column, or "chain": the same, one layer per product
    (an identity MLP's layers unfolded); "folded": every column, an identity MLP's products folded into
    one layer (the solvers' network; certify bounds the runtime on the "chain").
    """
    name = type(est).__name__
    if hasattr(est, "steps"):
        raise UnsupportedModel("Pipeline", name, "pipelines are not supported; pass the final estimator")
    if name in LINEAR_REGRESSORS:
        return _regressor(est, _linear_layers(est, name), "", index, readout, None, name)
    if name in MLPS:
        layers, foreign, ch = _mlp_layers(est, name)
        if name == "MLPRegressor":
            return _regressor(est, layers, foreign, index, readout, ch)
        out_act = est.out_activation_
        n_classes = len(est.classes_)
        if out_act == "logistic" and layers[-1].n_out != 1:
            # fit on a label-indicator matrix: one independent logistic output per label, predict a 0/1
            # column each -- not one class per row (its classes_ are the label positions 0 .. k-1)
            raise UnsupportedModel("MLPClassifier", "out_activation_",
                                   f"a multi-label MLPClassifier ({layers[-1].n_out} independent logistic outputs, "
                                   f"one per label) predicts a 0/1 column per label, not one class")
        if out_act == "logistic":
            final = "sigmoid"
        elif out_act == "softmax":
            final = "softmax"
        elif out_act == "identity":
            final = "none"
        else:
            raise UnsupportedModel(out_act, "out_activation_", f"output activation {out_act!r} is not supported")
    elif name in LINEAR_CLASSIFIERS:
        _linear_classifier(est, name)
        W = np.asarray(est.coef_, dtype=np.float64)
        b = np.asarray(est.intercept_, dtype=np.float64)
        layers = [Layer(W, b, False)]
        foreign, ch = "", None
        n_classes = len(est.classes_)
        final = "sigmoid" if W.shape[0] == 1 else "softmax"
    else:
        raise UnsupportedModel(name, "estimator", f"the network encodings take no {name} (only MLPClassifier, "
                                                  f"MLPRegressor, {', '.join(LINEAR_CLASSIFIERS)}, "
                                                  f"{', '.join(LINEAR_REGRESSORS)})")
    if isinstance(readout, str) and readout == "chain" and ch is not None:   # one layer per rounding
        return ch.runtime_chain(final, f"sklearn {name}", name)
    if isinstance(readout, str) and readout in ("raw", "chain", "folded"):   # every column (raw: the runtime's own)
        if foreign and readout != "folded":
            raise UnsupportedModel(name, "layers", foreign)
        return PLNet(tuple(layers), 0, final, f"sklearn {name}")
    if readout is not None:
        if final == "sigmoid" and n_classes == 2:
            index = 1 if readout.index is None else readout.index   # decision_function: classes_[1]
        else:
            return apply_readout(PLNet(tuple(layers), 0, final, f"sklearn {name}"), readout)
    if final == "sigmoid" and n_classes == 2:
        idx = 1 if index is None else index
        if idx not in (0, 1, -1, -2):
            raise UnsupportedModel("Output", "index", f"class index {idx} out of range for 2 classes")
        if idx in (0, -2):
            last = layers[-1]
            layers = layers[:-1] + [Layer(-last.W, -last.b, False)]
        return PLNet(tuple(layers), 0, "sigmoid", f"sklearn {name}")
    return _make_net(list(layers), index, final, f"sklearn {name}", "predict_proba")
