"""Cheap look-ups into model files, without importing onnx, torch or scikit-learn.

`fairspec lint` has 0.3 s for everything; `import onnx` alone costs ~0.12 s and
`import sklearn` ~0.8 s, so the input width is read straight from the files.
This module is the dispatch (by the model's format); each file format family has its module:

* ONNX (peek_onnx): a small protobuf wire-format reader walks ModelProto -> graph -> input ->
  type -> tensor_type -> shape -> dim.
* scikit-learn (peek_sklearn): a skops file is a zip; `schema.json` holds the estimator's
  attributes, `n_features_in_` among them; a pickle is read inertly (inert_pickle).
* torch (peek_torch): the archive's data.pkl is read by an unpickler whose every global is an
  inert stub (inert_pickle: nothing from the file is imported or called), and the first Linear
  layer's in_features is taken. Safe without `trust pickle`: no code runs.
* tree libraries (peek_trees): XGBoost and LightGBM model files.
"""

from __future__ import annotations

import json
import pathlib
import zipfile

from fairspec import filecache

from .base import ModelLoadError, recorded_names
from .peek_onnx import (chosen_output, graph_problem, guessed_score_kind, input_problem, missing_external_data,
                        onnx_class_labels, onnx_input_width, onnx_obstacle, output_choice_problem, read_onnx_signature)
from .peek_sklearn import (estimator_obstacle, sklearn_pickle_estimator, sklearn_pickle_head,
                           sklearn_pickle_input_width, skops_final_node, skops_input_names, skops_input_width,
                           skops_n_classes, skops_obstacle)
from .peek_torch import torch_input_width
from .peek_trees import (lightgbm_input_categories, lightgbm_input_names, lightgbm_input_width, xgboost_input_categories,
                         xgboost_input_names, xgboost_input_width)


@filecache.by_file(lambda format, path, **kw: path)
def peek_input_width(format: str, path, *, trust_pickle: bool = False) -> int | None:
    """The model's input width read cheaply from the file (for `fairspec lint`).

    Imports no machine-learning library. Returns None when the file does not say;
    raises ModelLoadError only when the file is missing or clearly not of that format.
    """
    from .base import normalize_format

    fmt = normalize_format(format, path)
    p = pathlib.Path(path)
    if fmt == "onnx":
        sig = read_onnx_signature(p)
        if sig.nonfinite is not None:  # NaN weights read as "every decision negative": refused in lint too
            raise ModelLoadError(f"model {p} has NaN or infinite weights (initializer {sig.nonfinite!r}); a model "
                                 "with weights that are not finite numbers cannot be checked", p)
        if (missing := missing_external_data(sig, p)) is not None:  # check's loader says the same
            raise ModelLoadError(missing, p)
        if (problem := input_problem(sig, p) or graph_problem(sig, p)) is not None:  # check's loader refuses it
            raise ModelLoadError(problem, p)
        return onnx_input_width(sig)
    if fmt == "sklearn":
        suffix = p.suffix.lower()
        if suffix == ".skops":
            return skops_input_width(p)
        return sklearn_pickle_input_width(p)           # read inertly: nothing in the file runs
    if fmt == "xgboost":
        return xgboost_input_width(p)
    if fmt == "lightgbm":
        return lightgbm_input_width(p)
    return torch_input_width(p)                         # torch


def peek_output_columns(format: str, path, output: str | int | None = None) -> int | None:
    """The column count of the model's chosen output, read cheaply (ONNX: the graph output's
    declared shape; a scikit-learn regressor: its ``n_outputs_``); None when the file does not say.
    For lint's readout check (FS413)."""
    from .base import normalize_format

    try:
        fmt = normalize_format(format, path)
        if fmt == "sklearn":                    # a regressor's predict: n_outputs_ columns
            from .peek_sklearn import sklearn_n_outputs

            est = sklearn_n_outputs(path)
            return est[1] if est is not None and sklearn_is_regressor_class(est[0]) else None
        if fmt != "onnx":
            return None
        sig = read_onnx_signature(pathlib.Path(path))
    except ModelLoadError:
        return None
    except Exception:  # noqa: BLE001 - a damaged scikit-learn file: the loader says so at check time
        return None
    chosen = chosen_output(sig, output)        # the one the loader reads (none while several are unnamed)
    if chosen is None or chosen.shape is None:
        return None
    shape = chosen.shape
    if len(shape) == 1:
        return 1
    if len(shape) == 2 and isinstance(shape[1], int) and shape[1] > 0:
        return shape[1]
    return None


def peek_no_probability(format: str, path, output=None, score: str | None = None, name: str = "the model") -> str | None:
    """Why the classifier in the file has no class probability, as the clause after "but" of an FS415
    message (``prob(...)``, ``calibration_gap``, k-discrimination's buckets), or None: a scikit-learn
    classifier without predict_proba (its decision_function is a margin) when the declaration chooses
    neither output nor score, or declared by its decision_function z where predict_proba is not expit(z)
    (:func:`fairspec.models.peek_sklearn.decision_probability`); an XGBoost binary:hinge / binary:logitraw model whatever its declaration
    (fairspec.models.boosted.no_probability: its predict_proba is its decision or its margin)."""
    from .base import normalize_format
    from .peek_sklearn import no_probability, skops_no_probability

    try:
        fmt = normalize_format(format, path)
        p = pathlib.Path(path)
        if fmt == "xgboost":
            from .boosted import no_probability as booster_no_probability
            from .peek_trees import xgboost_objective

            return booster_no_probability("xgboost", xgboost_objective(p), f"'{name}'")
        if fmt == "sklearn" and output is not None and str(output).strip().lower() in ("decision_function", "logit",
                                                                                       "decision"):
            from .peek_sklearn import sklearn_decision_probability

            return sklearn_decision_probability(p, None, score, f"'{name}'")  # expit(z) is predict_proba?
        if fmt != "sklearn" or output is not None or score is not None:
            return None                                    # the declaration says what the output is
        why = skops_no_probability(p) if p.suffix.lower() == ".skops" else None
        if p.suffix.lower() != ".skops":
            est = sklearn_pickle_estimator(p, final=True)  # read inertly: nothing in the file runs
            why = None if est is None else no_probability(est[0])
        return None if why is None else f"{why}: its decision_function is a margin, not a log-odds"
    except Exception:  # noqa: BLE001 - the loader reads the estimator at check time
        return None


def peek_two_logits(format: str, path, output=None) -> str | None:
    """Why ``logit(m(x))`` of the model in the file is ambiguous, as the clause after "but" of an FS415
    message (a GradientBoostingClassifier with the exponential loss: decision_function z or the log-odds
    2 z: :func:`fairspec.models.peek_sklearn.two_logits`; a LightGBM binary sigmoid:k model: its raw score
    r or the log-odds k r, :func:`fairspec.models.boosted.lightgbm_two_logits`), or None, also when the
    declaration reads its output (``output = "decision_function"`` / ``"margin"``: logit(m(x)) is z / r)."""
    from .base import normalize_format

    try:
        fmt = normalize_format(format, path)
        if fmt == "lightgbm":           # binary sigmoid:k: the raw score r or the log-odds k r
            from .boosted import _MARGIN, lightgbm_two_logits
            from .peek_trees import booster_objective

            if output is not None and str(output).strip().lower() in _MARGIN:
                return None
            return lightgbm_two_logits(booster_objective("lightgbm", pathlib.Path(path)))
        if fmt != "sklearn":
            return None
        if output is not None and str(output).strip().lower() in ("decision_function", "logit", "decision"):
            return None
        from .peek_sklearn import sklearn_two_logits

        return sklearn_two_logits(path)
    except Exception:  # noqa: BLE001 - the loader reads the model at check time
        return None


def peek_unstated_decision(format: str, path, output=None, score: str | None = None,
                           name: str = "the model") -> str | None:
    """Why the binary decision of the model in the file depends on a choice its declaration does not
    make, as the clause after "but" of an FS426 message (an XGBoost binary:logitraw model declared
    without output or score: fairspec.models.boosted.unstated_decision), or None."""
    from .base import normalize_format

    try:
        if normalize_format(format, path) != "xgboost":
            return None
        from .boosted import unstated_decision
        from .peek_trees import xgboost_objective

        return unstated_decision("xgboost", xgboost_objective(pathlib.Path(path)), output, score, f"'{name}'")
    except Exception:  # noqa: BLE001 - the loader reads the model at check time
        return None


def peek_score_problem(format: str, path, output=None, score: str | None = None,
                       name: str = "the model") -> tuple[str, str] | None:
    """(message, hint) when a binary XGBoost / LightGBM declaration's score kind contradicts what its
    output holds (lint FS413; fairspec.models.boosted.score_contradiction, which the loader applies
    too); None otherwise."""
    from .base import normalize_format

    try:
        fmt = normalize_format(format, path)
        if fmt not in ("xgboost", "lightgbm") or score is None:
            return None
        from .boosted import score_contradiction
        from .peek_trees import booster_objective

        return score_contradiction(fmt, booster_objective(fmt, pathlib.Path(path)), output, score, f"'{name}'")
    except Exception:  # noqa: BLE001 - the loader reads the model at check time
        return None


def peek_output_problem(format: str, path, output: str | int | None = None) -> tuple[str, str] | None:
    """(message, hint) when an ONNX declaration does not fix one graph output of scores (lint FS413;
    fairspec.models.peek_onnx.output_choice_problem, which the loader applies too); None otherwise."""
    from .base import normalize_format

    try:
        if normalize_format(format, path) != "onnx":
            return None
        return output_choice_problem(read_onnx_signature(pathlib.Path(path)), output)
    except ModelLoadError:
        return None


@filecache.by_file(lambda format, path, *a, **kw: path)
def piecewise_linear_obstacle(format: str, path, output: str | int | None = None) -> str | None:
    """Why the model file certainly cannot be read as a ReLU network, or None.

    Cheap (no ML library): ONNX operators that feed the chosen output, a skops
    estimator's class and MLP activation. None also when the file does not tell
    (torch, pickles, a damaged file: the loader reports those at check time).
    """
    from .base import normalize_format

    try:
        fmt = normalize_format(format, path)
        p = pathlib.Path(path)
        if fmt == "onnx":
            return onnx_obstacle(read_onnx_signature(p), output)
        if fmt == "sklearn" and p.suffix.lower() == ".skops":
            with zipfile.ZipFile(p) as zf:
                schema = json.loads(zf.read("schema.json"))
            return skops_obstacle(schema, skops_n_classes(p))
        if fmt == "sklearn":
            est = sklearn_pickle_estimator(p, final=True)
            return None if est is None else estimator_obstacle(*est, *sklearn_pickle_head(p))
    except Exception:  # noqa: BLE001 - lint says nothing here; the loader gives the sentence at check time
        return None
    return None


# scikit-learn tree models fairspec.models.trees.from_sklearn reads (the tree encodings)
TREE_SKLEARN = frozenset({"DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier",
                          "GradientBoostingClassifier", "HistGradientBoostingClassifier",
                          # regressors: fairspec.models.tree_columns.sklearn_columns (cells of their split tests)
                          "DecisionTreeRegressor", "RandomForestRegressor", "ExtraTreesRegressor",
                          "GradientBoostingRegressor", "HistGradientBoostingRegressor"})
TREE_FORMATS = ("xgboost", "lightgbm")
#: a folded pipeline's final XGBClassifier / LGBMClassifier, read as its booster's trees
#: (fairspec.models.pipeline_boosters.BOOSTER_CLASSIFIERS): a tree model only as a Pipeline's last step
PIPELINE_BOOSTERS = frozenset({"XGBClassifier", "LGBMClassifier"})


def tree_file_class(format: str, path) -> str | None:
    """The tree model a file holds ("XGBoost", "LightGBM" or the scikit-learn estimator's class),
    or None (not a tree model, or the file does not tell). Cheap: no ML library."""
    fmt = str(format).strip().lower()
    if fmt in TREE_FORMATS:
        return {"xgboost": "XGBoost", "lightgbm": "LightGBM"}[fmt]
    p = pathlib.Path(path)
    if fmt in ("sklearn", "scikit-learn", "skops") and p.suffix.lower() == ".skops":
        try:
            with zipfile.ZipFile(p) as zf:
                schema = json.loads(zf.read("schema.json"))
            cls = skops_final_node(schema).get("__class__")
        except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
            return None
        piped = schema.get("__class__") == "Pipeline" and cls in PIPELINE_BOOSTERS
        return cls if cls in TREE_SKLEARN or piped else None
    if fmt in ("sklearn", "scikit-learn", "skops"):
        est = sklearn_pickle_estimator(p, final=True) if p.is_file() else None
        if est is not None and est[0] in PIPELINE_BOOSTERS:
            top = sklearn_pickle_estimator(p)
            return est[0] if top is not None and top[0] == "Pipeline" else None
        return est[0] if est is not None and est[0] in TREE_SKLEARN else None
    return None


# tree models whose output is a probability averaged over trees (not a logit)
AVERAGING_TREES = frozenset({"DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier"})


def is_tree_file(format: str, path) -> bool:
    """Does the file hold a tree model (XGBoost, LightGBM, a scikit-learn tree in a skops file
    or a pickle)?"""
    return tree_file_class(format, path) is not None


# scikit-learn estimators the repair backend (FairRepair) patches
REPAIRABLE_SKLEARN = ("DecisionTreeClassifier", "RandomForestClassifier")


def repair_obstacle(format: str, path) -> str | None:
    """Why the model certainly cannot be repaired (FairRepair patches scikit-learn decision trees and
    random forests), read cheaply: the model's format and a skops file's estimator class.  None when
    the file does not tell (a pickle, a damaged file: check reports those)."""
    from .base import normalize_format

    supported = "repair supports scikit-learn DecisionTreeClassifier and RandomForestClassifier"
    try:
        fmt = normalize_format(format, path)
    except Exception:  # noqa: BLE001 - the loader says what is wrong at check time
        return None
    if fmt in ("onnx", "torch"):
        return f"{supported}; this is a{'n' if fmt == 'onnx' else ''} {fmt.upper() if fmt == 'onnx' else fmt} network"
    if fmt == "rule":
        return f"{supported}; this is a rule model"
    if fmt != "sklearn" or pathlib.Path(path).suffix.lower() != ".skops":
        return None
    try:
        with zipfile.ZipFile(path) as zf:
            cls = skops_final_node(json.loads(zf.read("schema.json"))).get("__class__")   # a Pipeline's estimator
    except Exception:  # noqa: BLE001
        return None
    if not isinstance(cls, str) or cls in REPAIRABLE_SKLEARN:
        return None
    what = ("a regression model" if "Regressor" in cls or cls.endswith("Regression") and cls != "LogisticRegression"
            else "a gradient-boosted ensemble" if "Boosting" in cls
            else "a network" if cls.startswith("MLP") else "not a tree model")
    return f"{supported}; this is a {cls} ({what})"


@filecache.by_file(lambda format, path, **kw: path)
def peek_input_names(format: str, path) -> tuple[str, ...] | None:
    """The input names the model file records, in the model's input order, or None when it
    records none: XGBoost ``feature_names``, LightGBM ``feature_names``, scikit-learn
    ``feature_names_in_`` (skops files; pickles are not read for this), the graph inputs of an
    ONNX model with one input per column. torch files record none. Imports no
    machine-learning library and never raises for a file the width peek accepts."""
    fmt, p = _peekable(format, path)
    if fmt == "xgboost":
        return xgboost_input_names(p)
    if fmt == "lightgbm":
        return lightgbm_input_names(p)
    if fmt == "sklearn" and p.suffix.lower() == ".skops":
        return skops_input_names(p)
    if fmt == "onnx":
        try:
            sig = read_onnx_signature(p)
        except ModelLoadError:
            return None
        return recorded_names([i.name for i in sig.inputs]) if len(sig.inputs) > 1 else None
    return None


def _peekable(format: str, path) -> tuple[str | None, pathlib.Path]:
    """(the model format, the path) of a file the name peeks may read; (None, path) when the format is
    not one fairspec knows or the path is not a file."""
    from .base import normalize_format

    p = pathlib.Path(path)
    try:
        fmt = normalize_format(format, path)
    except ModelLoadError:
        return None, p
    return (fmt if p.is_file() else None), p


def peek_input_categories(format: str, path) -> dict[int, tuple[str, ...]] | None:
    """{input index: its categories in the model's code order} of a tree model fit on a data frame
    with categorical columns (XGBoost 3.1+ ``cats``, LightGBM ``pandas_categorical``): code i is the
    i-th recorded category, and the library re-codes a data frame by these names before predicting.
    None when the file records none. Imports no machine-learning library and never raises."""
    fmt, p = _peekable(format, path)
    if fmt == "xgboost":
        return xgboost_input_categories(p)
    if fmt == "lightgbm":
        return lightgbm_input_categories(p)
    return None


# scikit-learn regressors whose class name does not end in "Regressor"
_SKLEARN_REGRESSORS = frozenset({"LinearRegression", "Ridge", "RidgeCV", "Lasso", "LassoCV", "ElasticNet",
                                 "ElasticNetCV", "Lars", "LassoLars", "BayesianRidge", "ARDRegression", "SVR",
                                 "LinearSVR", "NuSVR", "KernelRidge", "TheilSenRegressor", "QuantileRegressor",
                                 "TransformedTargetRegressor"})


def sklearn_is_regressor_class(cls: str | None) -> bool:
    return bool(cls) and (cls.endswith("Regressor") or cls in _SKLEARN_REGRESSORS)


@filecache.by_file(lambda format, path, *a, **kw: path)
def peek_output_kind(format: str, path, output: str | int | None = None,
                     score: str | None = None) -> tuple[str | None, int | None, tuple | None]:
    """(task, n_classes, classes) of the model's chosen output, read cheaply for lint
    (fairspec.models.readout decides the same at load time): task "binary" | "multiclass" |
    "regression" or None when the file does not say (torch, an ONNX output of unknown shape, a
    pickle); n_classes K of a classifier when known; classes the class labels when the file
    records them (None: not read here). ``score = value`` makes an ONNX/torch output a regression;
    a file that says it holds a classifier stays one (the readout then refuses score = value: FS413)."""
    from .base import normalize_format

    value = ("regression", None, None) if score == "value" else (None, None, None)
    try:
        fmt = normalize_format(format, path)
        p = pathlib.Path(path)
        if score == "value" and fmt in ("onnx", "torch"):   # the declaration says what the file cannot
            return value
        if fmt == "onnx":
            sig = read_onnx_signature(p)
            out = chosen_output(sig, output)
            if score is None and out is not None and guessed_score_kind(sig, out) == "value":
                return "regression", None, None        # an ai.onnx.ml regressor's output
            k = peek_output_columns(format, path, output)
            if k is None:
                return None, None, None
            labels = onnx_class_labels(sig, k)
            return ("multiclass", k, labels) if k >= 3 else ("binary", 2, labels)
        if fmt == "sklearn" and p.suffix.lower() == ".skops":
            with zipfile.ZipFile(p) as zf:
                schema = json.loads(zf.read("schema.json"))
            cls = skops_final_node(schema).get("__class__")
            if sklearn_is_regressor_class(cls):
                return "regression", None, None
            from .peek_sklearn import skops_n_classes

            k = skops_n_classes(p)
            if k is None or k < 2:
                return value
            from .peek_sklearn import skops_classes

            labels = skops_classes(p)
            labels = labels if labels is not None and len(labels) == k else None
            return ("multiclass", k, labels) if k >= 3 else ("binary", 2, labels)
        if fmt == "sklearn":
            est = sklearn_pickle_estimator(p, final=True)
            if est is not None and sklearn_is_regressor_class(est[0]):
                return "regression", None, None
        if fmt in ("xgboost", "lightgbm"):
            from .peek_trees import booster_output_kind

            task, k = booster_output_kind(fmt, p)
            return (task, k, None) if task is not None else value
    except Exception:  # noqa: BLE001 - lint says nothing here; the loader decides at check time
        return value
    return value
