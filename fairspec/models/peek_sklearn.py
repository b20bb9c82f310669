"""The scikit-learn family of the cheap model-file look-ups (fairspec.models.peek), without importing
scikit-learn, skops or numpy: a skops file is a zip whose `schema.json` holds the estimator's attributes
(`n_features_in_`, `feature_names_in_`, a Pipeline's steps); a pickle is read by the inert unpickler
(fairspec.models.inert_pickle)."""

from __future__ import annotations

import json
import os
import pathlib
import struct
import zipfile

from .base import ModelLoadError, recorded_names, require_file
from .inert_pickle import _load_inert_pickle, _state, _Stub, not_a_pickle


def _attrs(node) -> dict | None:
    """The attribute dict of an ObjectNode-like schema node."""
    if not isinstance(node, dict):
        return None
    content = node.get("content")
    if isinstance(content, dict) and content.get("__loader__") == "DictNode":
        inner = content.get("content")
        return inner if isinstance(inner, dict) else None
    return None


def _npy_int_scalar(zf: zipfile.ZipFile, name: str) -> int | None:
    """An integer scalar saved with np.save, read without numpy."""
    try:
        data = zf.read(name)
    except KeyError:
        return None
    if not data.startswith(b"\x93NUMPY"):
        return None
    major = data[6]
    if major == 1:
        hlen = struct.unpack_from("<H", data, 8)[0]
        hstart = 10
    else:
        hlen = struct.unpack_from("<I", data, 8)[0]
        hstart = 12
    header = data[hstart:hstart + hlen].decode("latin1")
    body = data[hstart + hlen:]
    fmts = {"<i8": "<q", "<i4": "<i", "<u8": "<Q", "<u4": "<I", "|i1": "<b", "|u1": "<B",
            "<i2": "<h", "<u2": "<H", ">i8": ">q", ">i4": ">i"}
    for descr, fmt in fmts.items():
        if f"'descr': '{descr}'" in header and "'shape': ()" in header:
            if len(body) >= struct.calcsize(fmt):
                return int(struct.unpack_from(fmt, body, 0)[0])
    return None


def _schema_int(zf: zipfile.ZipFile, node) -> int | None:
    if not isinstance(node, dict):
        return None
    if node.get("__loader__") == "JsonNode" or node.get("is_json"):
        try:
            val = json.loads(node.get("content"))
        except (TypeError, ValueError):
            return None
        return val if isinstance(val, int) and not isinstance(val, bool) else None
    if node.get("__loader__") == "NdArrayNode" and isinstance(node.get("file"), str):
        return _npy_int_scalar(zf, node["file"])
    return None


_UNANSWERED = object()


def _skops_first_answer(node, own, depth: int = 0):
    """What ``own(attrs)`` answers for a skops schema node (``_UNANSWERED`` when the node does not hold the
    attribute), else for a Pipeline's first step that is not a passthrough (pipelines keep the input's
    width and names on their first step), else the first answer of a search's or wrapper's estimator."""
    if depth > 12:
        return None
    attrs = _attrs(node)
    if attrs is None:
        return None
    answer = own(attrs)
    if answer is not _UNANSWERED:
        return answer
    steps = attrs.get("steps")
    if isinstance(steps, dict) and steps.get("__loader__") == "ListNode":
        for step in steps.get("content") or []:
            pair = step.get("content") if isinstance(step, dict) else None
            if not isinstance(pair, list) or len(pair) != 2:
                return None
            est = pair[1]
            if isinstance(est, dict) and est.get("__loader__") == "JsonNode":
                continue                               # "passthrough" / None
            return _skops_first_answer(est, own, depth + 1)
    for key in ("best_estimator_", "estimator_", "estimator"):
        if key in attrs:
            answer = _skops_first_answer(attrs[key], own, depth + 1)
            if answer is not None:
                return answer
    return None


def _skops_width(zf: zipfile.ZipFile, node) -> int | None:
    """``n_features_in_`` of a skops schema node (a pipeline's first step, a search's estimator)."""
    return _skops_first_answer(
        node, lambda attrs: _schema_int(zf, attrs["n_features_in_"]) if "n_features_in_" in attrs else _UNANSWERED)


#: (module, class) of what a skops file may hold that is no model (lint said only FS506 of it)
_NO_MODEL = {("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"), ("numpy", "ndarray")}


#: scikit-learn's modules whose estimators have neither predict_proba nor decision_function (transformers,
#: clusterers: check's loader refuses them; sklearn.feature_selection is not here, RFE delegates both)
_NO_SCORE_MODULES = ("sklearn.preprocessing.", "sklearn.cluster.", "sklearn.decomposition.", "sklearn.impute.",
                     "sklearn.manifold.", "sklearn.random_projection.", "sklearn.kernel_approximation.",
                     "sklearn.feature_extraction.")
#: scikit-learn's outlier detectors (predict +1 / -1, no classes_): check's loader refuses them (refuse_no_one_class)
_OUTLIER_DETECTORS = {"IsolationForest", "OneClassSVM", "SGDOneClassSVM", "LocalOutlierFactor", "EllipticEnvelope"}


def _no_classifier(p, schema: dict) -> str | None:
    """What lint says of a skops file whose top object is a scikit-learn transformer, clusterer or outlier
    detector (no model check reads): the sentence check's loader says, so lint and check agree it is an error."""
    mod, cls = str(schema.get("__module__") or ""), str(schema.get("__class__") or "")
    if not mod.startswith("sklearn."):
        return None
    if cls in _OUTLIER_DETECTORS:
        return (f"{p} holds a {cls}, an outlier detector, not a classifier: its predict is +1 (inlier) where its "
                f"decision_function is >= 0 and -1 below, which fairspec does not read as a class; fit a classifier, "
                f"or record its predictions in the data and check them as logged decisions")
    if mod.startswith(_NO_SCORE_MODULES):
        return f"{p} holds a {cls}, which has neither predict_proba nor decision_function"
    return None


def skops_input_width(path: str | os.PathLike) -> int | None:
    p = pathlib.Path(path)
    require_file(p)
    try:
        with zipfile.ZipFile(p) as zf:
            try:
                raw = zf.read("schema.json")
            except KeyError:
                raise ModelLoadError(
                    f"{p} is not a skops file (the zip archive has no schema.json)", p
                ) from None
            try:
                schema = json.loads(raw)
            except ValueError as exc:
                raise ModelLoadError(f"{p} is not a skops file (its schema.json is not valid JSON)", p) from exc
            if isinstance(schema, dict) and (schema.get("__module__"), schema.get("__class__")) in _NO_MODEL:
                # a container or an array, no estimator: check's loader refuses it in these words
                raise ModelLoadError(f"{p} holds a {schema['__class__']}, which has neither predict_proba nor "
                                     "decision_function", p)
            if isinstance(schema, dict) and (said := _no_classifier(p, schema)) is not None:
                raise ModelLoadError(said, p)
            return _skops_width(zf, schema)
    except zipfile.BadZipFile as exc:
        raise ModelLoadError(f"{p} is not a skops file (a skops file is a zip archive and this is not one)", p) from exc
    except OSError as exc:
        raise ModelLoadError(f"model file {p} could not be read ({exc.strerror or exc})", p) from exc
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - zlib.error, NotImplementedError, EOFError from a damaged zip
        raise ModelLoadError(f"{p} is not a readable skops file (its zip archive is damaged)", p) from exc


def _estimator_width(obj, depth: int = 0) -> int | None:
    """n_features_in_ of a stubbed estimator (or of the first step of a pipeline, or of a
    search's best estimator)."""
    if depth > 8 or not isinstance(obj, _Stub):
        return None
    st = _state(obj)
    w = st.get("n_features_in_")
    if isinstance(w, int) and not isinstance(w, bool) and w > 0:
        return w
    steps = st.get("steps")
    if isinstance(steps, list) and steps:
        first = steps[0]
        if isinstance(first, tuple) and len(first) == 2:
            return _estimator_width(first[1], depth + 1)
    for key in ("best_estimator_", "estimator_", "estimator"):
        if key in st:
            w = _estimator_width(st[key], depth + 1)
            if w is not None:
                return w
    return None


def sklearn_pickle_estimator(path: str | os.PathLike, final: bool = False) -> tuple[str, str | None, str | None] | None:
    """(class name, MLP activation or None, MLP output activation or None) of a pickled scikit-learn
    estimator, read inertly;
    None when the file does not say. ``final``: of a Pipeline's last step (its estimator)."""
    root = _pickle_root(path, final)
    if root is None:
        return None
    act, out = _state(root).get("activation"), _state(root).get("out_activation_")
    return root._qual[1], act if isinstance(act, str) else None, out if isinstance(out, str) else None


def _pickle_root(path, final: bool):
    """The stubbed estimator of a pickle (``final``: a Pipeline's last step), or None."""
    root = _load_inert_pickle(pathlib.Path(path))
    if not isinstance(root, _Stub):
        return None
    for _ in range(4):
        steps = _state(root).get("steps") if final and root._qual[1] == "Pipeline" else None
        last = steps[-1] if isinstance(steps, list) and steps else None
        if not (isinstance(last, tuple) and len(last) == 2 and isinstance(last[1], _Stub)):
            break
        root = last[1]
    return root


def sklearn_n_outputs(path) -> tuple[str, int | None] | None:
    """(class name, ``n_outputs_`` or None) of the final estimator of a skops file or a pickle (read
    inertly, nothing runs), or None when the file does not say: the columns of a regressor's predict.
    A linear regressor records none: the rows of its two-dimensional ``coef_`` (a skops file's array
    header, a pickled array's recorded shape)."""
    p = pathlib.Path(path)
    if p.suffix.lower() == ".skops":
        with zipfile.ZipFile(p) as zf:
            node = skops_final_node(json.loads(zf.read("schema.json")))
            attrs = _attrs(node) or {}
            cls, k = node.get("__class__"), attrs.get("n_outputs_")
            coef = attrs.get("coef_")
            if k is None and cls in LINEAR_REGRESSORS and isinstance(coef, dict) and \
                    coef.get("__loader__") == "NdArrayNode" and isinstance(coef.get("file"), str):
                shape = _npy_shape(zf, coef["file"])
                if shape is not None and len(shape) == 2:
                    return cls, shape[0] if shape[0] >= 1 else None
        try:
            k = json.loads(k["content"]) if isinstance(k, dict) and k.get("__loader__") == "JsonNode" else None
        except (KeyError, TypeError, ValueError):
            k = None
    else:
        root = _pickle_root(p, True)
        if root is None:
            return None
        cls, k = root._qual[1], _state(root).get("n_outputs_")
        # a pickled numpy array's state is (version, shape, dtype, fortran order, data)
        arr = _state(root).get("coef_") if k is None and cls in LINEAR_REGRESSORS else None
        st = getattr(arr, "_stub_state", None) if isinstance(arr, _Stub) else None
        if isinstance(st, tuple) and len(st) >= 2 and isinstance(st[1], tuple) and len(st[1]) == 2 and \
                str(arr._qual[1]) == "_reconstruct" and str(arr._qual[0]).startswith("numpy"):
            k = st[1][0]
    if not isinstance(cls, str):
        return None
    return cls, k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else None


def sklearn_pickle_input_width(path: str | os.PathLike) -> int | None:
    """``n_features_in_`` of a pickled scikit-learn estimator, read by the inert unpickler
    (every class it names is a stub: nothing from the file is imported or run, so this is
    safe without `trust pickle`). None when the file does not say (joblib's compressed or
    array-interleaved formats, an unusual pickle)."""
    p = pathlib.Path(path)
    require_file(p)
    if (why := not_a_pickle(p)) is not None:  # empty, a CSV, text: lint says so as check would
        raise ModelLoadError(why, p)
    root = _load_inert_pickle(p)
    try:
        return _estimator_width(root)
    except RecursionError:
        return None


# linear regressors whose predict is scikit-learn's LinearModel.predict (X @ coef_.T + intercept_)
LINEAR_REGRESSORS = ("LinearRegression", "Ridge", "RidgeCV", "Lasso", "LassoCV", "ElasticNet", "ElasticNetCV")
# scikit-learn estimators fairspec.models.network_sklearn.from_sklearn reads
PL_SKLEARN = frozenset({"MLPClassifier", "MLPRegressor", "LogisticRegression", "LinearDiscriminantAnalysis",
                        "SGDClassifier", *LINEAR_REGRESSORS})


def skops_final_node(schema):
    """The schema node of a skops Pipeline's last step (the estimator after the preprocessing);
    the node itself when it is not a Pipeline."""
    for _ in range(4):
        if not (isinstance(schema, dict) and schema.get("__class__") == "Pipeline"):
            return schema
        attrs = _attrs(schema) or {}
        steps = attrs.get("steps")
        content = steps.get("content") if isinstance(steps, dict) else None
        if not content:
            return schema
        pair = content[-1].get("content") if isinstance(content[-1], dict) else None
        if not isinstance(pair, list) or len(pair) != 2:
            return schema
        schema = pair[1]
    return schema


def skops_top_class(path) -> str | None:
    """The class name of the object a skops file holds (e.g. "Pipeline"), or None."""
    try:
        with zipfile.ZipFile(pathlib.Path(path)) as zf:
            cls = json.loads(zf.read("schema.json")).get("__class__")
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None
    return cls if isinstance(cls, str) else None


def not_fitted(path, cls: str) -> str:
    """The sentence for a scikit-learn model file whose estimator was never fitted."""
    return f"{path} holds a scikit-learn {cls} that is not fitted (call its fit method on the training data first)"


def skops_unfitted(path) -> str | None:
    """The class of the object a skops file holds when it is a scikit-learn estimator that was never
    fitted (no attribute ending in an underscore, scikit-learn's own test; a Pipeline: its last step,
    as ``check_is_fitted`` reads one), else None. The loader checks with scikit-learn itself."""
    try:
        with zipfile.ZipFile(pathlib.Path(path)) as zf:
            schema = json.loads(zf.read("schema.json"))
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None
    if not isinstance(schema, dict):
        return None
    node = skops_final_node(schema)
    attrs = _attrs(node)
    if attrs is None or not str(node.get("__module__", "")).startswith("sklearn."):
        return None
    if any(k.endswith("_") and not k.startswith("__") for k in attrs):
        return None
    cls = schema.get("__class__")
    return cls if isinstance(cls, str) else None


def _json_text(attrs: dict, name: str) -> str | None:
    """A string attribute of a skops schema node (a JsonNode holds it JSON-encoded), or None."""
    node = attrs.get(name)
    if not (isinstance(node, dict) and node.get("__loader__") == "JsonNode"):
        return None
    try:
        value = json.loads(node.get("content"))
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, str) else None


def skops_obstacle(schema: dict, n_classes: int | None = None) -> str | None:
    """:func:`estimator_obstacle` of the final estimator of a skops file's schema; ``n_classes``: its
    ``classes_``' length where the caller read it (:func:`skops_n_classes`)."""
    schema = skops_final_node(schema)
    cls = schema.get("__class__")
    if not isinstance(cls, str):
        return None
    attrs = _attrs(schema) or {}
    return estimator_obstacle(cls, _json_text(attrs, "activation"), _json_text(attrs, "out_activation_"),
                              _json_text(attrs, "loss"), n_classes)


def sklearn_pickle_head(path) -> tuple[str | None, int | None]:
    """``(loss, n_classes)`` of a pickled scikit-learn estimator (a Pipeline's last step), read inertly (every
    class a stub: nothing in the file runs): its ``loss`` string and the length of its ``classes_`` array
    (a pickled numpy array's recorded shape); None for what the file does not say."""
    root = _pickle_root(path, True)
    if root is None:
        return None, None
    loss = _state(root).get("loss")
    arr = _state(root).get("classes_")
    st = getattr(arr, "_stub_state", None) if isinstance(arr, _Stub) else None
    k = None
    # a pickled numpy array's state is (version, shape, dtype, fortran order, data)
    if isinstance(st, tuple) and len(st) >= 2 and isinstance(st[1], tuple) and len(st[1]) == 1 and \
            str(arr._qual[1]) == "_reconstruct" and str(arr._qual[0]).startswith("numpy"):
        k = st[1][0] if isinstance(st[1][0], int) and not isinstance(st[1][0], bool) else None
    return loss if isinstance(loss, str) else None, k


#: why a linear classifier's head is no network head (network_sklearn._linear_classifier says the same)
SGD_MULTICLASS = "an SGDClassifier of more than two classes normalizes its one-vs-rest probabilities, which no " \
                 "network head computes"
LDA_MULTICLASS = "the network encodings take a LinearDiscriminantAnalysis of two classes only"
SGD_HUBER = "an SGDClassifier with loss = 'modified_huber' clips its decision into a probability, which no " \
            "network head computes"


def estimator_obstacle(cls: str, activation: str | None, out_activation: str | None = None,
                       loss: str | None = None, n_classes: int | None = None) -> str | None:
    """Why a scikit-learn estimator is not a network the solvers encode (its class, an MLP's hidden
    activation, an MLPRegressor's output activation, an SGDClassifier's loss, a linear classifier's
    number of classes where only two are taken), or None (also when the file does not say;
    network_sklearn.from_sklearn refuses the rest when it reads the estimator)."""
    if cls not in PL_SKLEARN:
        return f"estimator {cls} is not a ReLU MLP, a linear classifier or a linear regression"
    if cls == "SGDClassifier" and n_classes is not None and n_classes > 2:
        return SGD_MULTICLASS
    if cls == "LinearDiscriminantAnalysis" and n_classes is not None and n_classes > 2:
        return LDA_MULTICLASS
    if cls == "SGDClassifier" and loss == "modified_huber":
        return SGD_HUBER
    if cls in ("MLPClassifier", "MLPRegressor") and activation is not None and activation not in ("relu", "identity"):
        return f"{cls} activation {activation!r} is not piecewise-linear"
    if cls == "MLPRegressor" and out_activation not in (None, "identity"):
        why = " (loss = 'poisson' exponentiates the output)" if out_activation == "exp" else ""
        return f"MLPRegressor output activation {out_activation!r} is not piecewise-linear{why}"
    return None


def _feature_names_in(attrs: dict):
    arr = attrs.get("feature_names_in_")
    if not isinstance(arr, dict):
        return _UNANSWERED
    out = []
    for item in arr.get("content") or []:
        if not (isinstance(item, dict) and item.get("__loader__") == "JsonNode"):
            return None
        try:
            out.append(json.loads(item["content"]))
        except (KeyError, TypeError, ValueError):
            return None
    return recorded_names(out)


def _skops_names(node) -> tuple[str, ...] | None:
    """``feature_names_in_`` of a skops schema node (a pipeline's first step, a search's estimator)."""
    return _skops_first_answer(node, _feature_names_in)


def skops_input_names(p: pathlib.Path) -> tuple[str, ...] | None:
    try:
        with zipfile.ZipFile(p) as zf:
            return _skops_names(json.loads(zf.read("schema.json")))
    except Exception:  # noqa: BLE001 - the width peek and the loader report a damaged file
        return None


def _npy_header(data: bytes) -> tuple[dict, int] | None:
    """The header of an array saved with np.save (its ``descr``, ``shape``, ``fortran_order``) and
    where the array's bytes start, read without numpy; None when ``data`` is not such an array."""
    import ast as _ast

    if not data.startswith(b"\x93NUMPY") or len(data) < 12:
        return None
    if data[6] == 1:
        hlen, hstart = struct.unpack_from("<H", data, 8)[0], 10
    else:
        hlen, hstart = struct.unpack_from("<I", data, 8)[0], 12
    try:
        header = _ast.literal_eval(data[hstart:hstart + hlen].decode("latin1"))
    except (ValueError, SyntaxError, TypeError, UnicodeDecodeError):
        return None
    return (header, hstart + hlen) if isinstance(header, dict) else None


def _npy_shape(zf: zipfile.ZipFile, name: str) -> tuple | None:
    """The shape in the header of an array saved with np.save, read without numpy."""
    try:
        with zf.open(name) as f:
            data = f.read(4096)
    except KeyError:
        return None
    head = _npy_header(data)
    if head is None or "shape" not in head[0]:
        return None
    shape = head[0]["shape"]
    return tuple(shape) if isinstance(shape, tuple) and all(isinstance(s, int) for s in shape) else None


def skops_n_classes(path) -> int | None:
    """K of the classifier a skops file holds (its final estimator's ``classes_``), or None when the
    file does not say (a regressor, a multi-output classifier, an unusual layout). Without numpy."""
    try:
        with zipfile.ZipFile(pathlib.Path(path)) as zf:
            attrs = _attrs(skops_final_node(json.loads(zf.read("schema.json")))) or {}
            node = attrs.get("classes_")
            if isinstance(node, dict) and node.get("__loader__") == "NdArrayNode" and isinstance(node.get("file"), str):
                shape = _npy_shape(zf, node["file"])
                return shape[0] if shape is not None and len(shape) == 1 else None
            labels = _json_vector(node)
            return None if labels is None else len(labels)
    except Exception:  # noqa: BLE001 - the loader reads classes_ at check time
        return None
    return None


def _json_vector(node) -> tuple | None:
    """The values of an object array skops stores inline (``"type": "json"``: each item a JsonNode, as
    for the ``classes_`` of a classifier fitted on a pandas column of text), when every item is a
    plain str, int, float or bool; None otherwise (an item skops stores another way)."""
    if not (isinstance(node, dict) and node.get("__loader__") == "NdArrayNode" and node.get("type") == "json"
            and isinstance(node.get("content"), list)):
        return None
    out = []
    for item in node["content"]:
        if not (isinstance(item, dict) and item.get("__loader__") == "JsonNode"
                and item.get("__module__") == "builtins" and item.get("__class__") in ("str", "int", "float", "bool")):
            return None
        value = json.loads(item.get("content"))
        if type(value).__name__ != item["__class__"]:
            return None
        out.append(value)
    return tuple(out)


def _npy_vector(zf: zipfile.ZipFile, name: str) -> tuple | None:
    """A 1-D array of text (<U n), integers or floats saved with np.save, read without numpy (None for
    other dtypes, e.g. object arrays, which are pickled)."""
    try:
        data = zf.read(name)
    except KeyError:
        return None
    head = _npy_header(data)
    if head is None:
        return None
    header, start = head
    try:
        descr, shape, fortran = header["descr"], header["shape"], header.get("fortran_order", False)
    except KeyError:
        return None
    if not (isinstance(shape, tuple) and len(shape) == 1 and isinstance(shape[0], int)) or fortran:
        return None
    n, body = shape[0], data[start:]
    if isinstance(descr, str) and descr[:2] in ("<U", "|U") and descr[2:].isdigit():
        w = int(descr[2:])
        if len(body) < 4 * w * n:
            return None
        return tuple(body[4 * w * i:4 * w * (i + 1)].decode("utf-32-le").rstrip("\x00") for i in range(n))
    fmts = {"<i8": "q", "<i4": "i", "<i2": "h", "|i1": "b", "<u8": "Q", "<u4": "I", "|u1": "B", "<f8": "d",
            "|b1": "?"}
    if descr in fmts:
        size = struct.calcsize("<" + fmts[descr])
        if len(body) < size * n:
            return None
        return tuple(struct.unpack_from(f"<{n}{fmts[descr]}", body, 0))
    return None


# classifiers that never have predict_proba: their decision_function is a margin, not a log-odds
_NO_PROBA = frozenset({"LinearSVC", "RidgeClassifier", "RidgeClassifierCV", "Perceptron",
                       "PassiveAggressiveClassifier", "NearestCentroid"})
_PROBA_LOSSES = ("log_loss", "log", "modified_huber")   # SGDClassifier losses with predict_proba


def no_probability(cls: str | None, attrs: dict | None = None) -> str | None:
    """Why a scikit-learn classifier of class ``cls`` (its skops attribute nodes ``attrs`` when known)
    has no predict_proba, or None when it has one or the file does not say."""
    def js(name):
        n = (attrs or {}).get(name)
        if isinstance(n, dict) and n.get("__loader__") == "JsonNode":
            try:
                return json.loads(n.get("content"))
            except (TypeError, ValueError):
                return None
        return None

    if cls in _NO_PROBA:
        return f"a {cls} has no predict_proba"
    if cls in ("SVC", "NuSVC") and False in (js("_effective_probability"), js("probability")):
        return f"a {cls} fitted without probability = True has no predict_proba"
    if cls == "SGDClassifier" and isinstance(js("loss"), str) and js("loss") not in _PROBA_LOSSES:
        return f"an SGDClassifier with loss = {js('loss')!r} has no predict_proba"
    return None


def skops_no_probability(path) -> str | None:
    """:func:`no_probability` of the classifier a skops file holds (read from its schema)."""
    try:
        with zipfile.ZipFile(pathlib.Path(path)) as zf:
            node = skops_final_node(json.loads(zf.read("schema.json")))
        return no_probability(node.get("__class__"), _attrs(node))
    except Exception:  # noqa: BLE001 - the loader reads the estimator at check time
        return None


def skops_classes(path) -> tuple | None:
    """The class labels (``classes_``) of the classifier a skops file holds, read without numpy or
    scikit-learn; None when the file does not record them in a readable form."""
    try:
        with zipfile.ZipFile(pathlib.Path(path)) as zf:
            attrs = _attrs(skops_final_node(json.loads(zf.read("schema.json")))) or {}
            node = attrs.get("classes_")
            if isinstance(node, dict) and node.get("__loader__") == "NdArrayNode" and isinstance(node.get("file"), str):
                return _npy_vector(zf, node["file"])
            return _json_vector(node)
    except Exception:  # noqa: BLE001 - the loader reads classes_ at check time
        return None
    return None



def two_logits(cls: str | None, loss) -> str | None:
    """Why ``logit(m(x))`` of a scikit-learn classifier of class ``cls`` fitted with ``loss`` names two
    numbers, as the clause after "but" of an FS415 message, or None: GradientBoosting's exponential
    loss, whose ``predict_proba`` is ``expit(2 z)`` of its ``decision_function`` z (the log-odds 2 z;
    :func:`fairspec.models.trees.sklearn_link_factor`)."""
    if cls == "GradientBoostingClassifier" and loss == "exponential":
        return ("a GradientBoostingClassifier with loss = 'exponential' has two: its decision_function z and "
                "the log-odds 2 z of its predict_proba (expit(2 z))")
    return None


def sklearn_two_logits(path) -> str | None:
    """:func:`two_logits` of the final estimator of a skops file or a pickle (read inertly: nothing runs)."""
    try:
        p = pathlib.Path(path)
        if p.suffix.lower() == ".skops":
            with zipfile.ZipFile(p) as zf:
                node = skops_final_node(json.loads(zf.read("schema.json")))
            n = (_attrs(node) or {}).get("loss")
            loss = json.loads(n["content"]) if isinstance(n, dict) and n.get("__loader__") == "JsonNode" else None
            return two_logits(node.get("__class__"), loss)
        root = _pickle_root(p, True)
        return None if root is None else two_logits(root._qual[1], _state(root).get("loss"))
    except Exception:  # noqa: BLE001 - the loader reads the estimator at check time
        return None


# classifiers whose predict_proba is the logistic (binary) or the softmax (multiclass) of their
# decision_function in scikit-learn's own code (1.9.1: LogisticRegression and LinearDiscriminantAnalysis
# expit / softmax of decision_function, SGDClassifier's log loss _predict_proba_lr = expit for two
# classes, the boosters' log loss LogitLink / softmax of the raw prediction decision_function returns)
_PROBA_IS_LINK = frozenset({"LogisticRegression", "LogisticRegressionCV", "LinearDiscriminantAnalysis",
                            "HistGradientBoostingClassifier"})


def decision_probability(cls: str | None, get, n_classes: int | None = None, score: str | None = None,
                         name: str = "the model") -> str | None:
    """Why ``prob(m(x))`` of a classifier of class ``cls`` declared by its decision_function z is not
    its library's probability, as the clause after "but" of an FS415 message, or None when
    ``predict_proba`` is ``expit(z)`` (two classes) or ``softmax(z)`` there (``_PROBA_IS_LINK``; the
    log loss of GradientBoosting and, for two classes, SGDClassifier), or ``cls`` is unknown (None).
    ``get(name)``: the estimator's attribute or None. A classifier with no predict_proba reads the
    logistic of its margin only as declared (``score = logit``: ``score``)."""
    if cls is None or cls in _PROBA_IS_LINK:
        return None
    loss = get("loss")
    if cls == "GradientBoostingClassifier" and loss in ("log_loss", "deviance"):
        return None
    if cls == "SGDClassifier" and loss in ("log_loss", "log") and n_classes in (None, 2):
        return None
    read = f"{name} is read by its decision_function"
    attrs = {k: {"__loader__": "JsonNode", "content": json.dumps(get(k))}
             for k in ("loss", "probability", "_effective_probability") if isinstance(get(k), (str, bool))}
    why = no_probability(cls, attrs)
    if why is not None:
        # declared score = logit: the logistic of its margin is the spec's own probability
        return None if score == "logit" else f"{read}, and {why}: its decision_function is a margin, not a log-odds"
    if two_logits(cls, loss):
        return (f"{read} z, and the predict_proba of a GradientBoostingClassifier with loss = 'exponential' "
                f"is expit(2 z), not expit(z)")
    what = "Platt scaling, fitted apart from it" if cls in ("SVC", "NuSVC") else "not the logistic of it"
    return f"{read}, and the predict_proba of a {cls} is {what}"


def sklearn_decision_probability(path, n_classes: int | None = None, score: str | None = None,
                                 name: str = "the model") -> str | None:
    """:func:`decision_probability` of the final estimator of a skops file or a pickle (read inertly)."""
    try:
        p = pathlib.Path(path)
        if p.suffix.lower() == ".skops":
            with zipfile.ZipFile(p) as zf:
                node = skops_final_node(json.loads(zf.read("schema.json")))
            attrs = _attrs(node) or {}

            def get(k):
                n = attrs.get(k)
                return json.loads(n["content"]) if isinstance(n, dict) and n.get("__loader__") == "JsonNode" else None
            return decision_probability(node.get("__class__"), get, n_classes, score, name)
        root = _pickle_root(p, True)
        return None if root is None else decision_probability(root._qual[1], _state(root).get, n_classes, score, name)
    except Exception:  # noqa: BLE001 - the loader reads the estimator at check time
        return None


def refuse_no_one_class(est, path) -> None:
    """An outlier detector (IsolationForest, OneClassSVM, EllipticEnvelope, LocalOutlierFactor: no classes_)
    predicts +1 (inlier) where its decision_function is >= 0 and -1 below, which no readout's "score > 0"
    decides (a row at exactly 0 is an inlier): a ModelLoadError naming the file.
    A classifier of several outputs -- fit on a label matrix (a DecisionTreeClassifier's ``n_outputs_`` > 1),
    a MultiOutputClassifier or a ClassifierChain: ``classes_`` a list of one class array per output, and
    ``predict`` a label column per output -- has no one class per row: a ModelLoadError naming the file (it
    was numpy's "can only convert an array of size 1 to a Python scalar")."""
    try:
        from sklearn.base import is_outlier_detector

        outlier = bool(is_outlier_detector(est))
    except Exception:  # noqa: BLE001 - an older scikit-learn, or an estimator it cannot tag
        outlier = getattr(est, "_estimator_type", None) == "outlier_detector"
    if outlier:
        raise ModelLoadError(
            f"{path} holds a {type(est).__name__}, an outlier detector, not a classifier: its predict is +1 (inlier) "
            f"where its decision_function is >= 0 and -1 below, which fairspec does not read as a class; fit a "
            f"classifier, or record its predictions in the data and check them as logged decisions", path)
    try:
        classes = getattr(est, "classes_", None)
    except Exception:  # noqa: BLE001 - an estimator whose classes_ is a property that fails: not this case
        return
    if not isinstance(classes, (list, tuple)) or not any(
            getattr(c, "ndim", 0) >= 1 or isinstance(c, (list, tuple)) for c in classes):
        return
    k = len(classes)
    raise ModelLoadError(
        f"{path} holds a {type(est).__name__} with {k} outputs (a label column each, every output with its own "
        f"classes); fairspec reads a classifier of one output: save one output's classifier (e.g. one of a "
        f"MultiOutputClassifier's estimators_) as its own file", path)
