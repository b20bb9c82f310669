"""The one model interface that every loader (ONNX, torch, scikit-learn) returns.

Nothing here imports numpy or a machine-learning library at module import time:
`fairspec lint` imports this package and must start fast.
"""

from __future__ import annotations

import abc
import contextlib
import pathlib
from typing import TYPE_CHECKING, Any

from fairspec.verdict import Unsupported

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np

SCORE_KINDS = ("logit", "prob", "value")
FORMATS = ("onnx", "torch", "sklearn", "xgboost", "lightgbm")


@contextlib.contextmanager
def unnamed_inputs():
    """scikit-learn's ``UserWarning: X does not have valid feature names, but ... was fitted with
    feature names`` silenced, and only it, while an estimator reads a model-input array: the encoding
    has put the columns in the order of the names the model records (fairspec.sema.names), so the
    warning tells a user nothing, and the values are those a data frame of the same columns gives."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names", category=UserWarning)
        yield


class UnsupportedModel(Unsupported):
    """The model contains something the piecewise-linear IR cannot represent.

    Attributes:
        op_type:   the operator or module type, e.g. ``"Tanh"``.
        node_name: the node (ONNX) or child module path (torch) or attribute (sklearn).
        message:   one sentence for a person.
    """

    def __init__(self, op_type: str, node_name: str, message: str):
        super().__init__(f"{op_type} ({node_name}): {message}")
        self.op_type = op_type
        self.node_name = node_name
        self.message = message


class AmbiguousRuntime(UnsupportedModel):
    """The model's library computes two different outputs for the same input on its two predict paths
    (an XGBoost dart booster: fairspec.models.boosted): no verdict on one is a verdict on the model, so
    the property is ``unknown`` with this sentence (:meth:`LoadedModel._guard` lets it through; the
    other properties keep theirs), never a run-level error."""


def categorical_split_sentence(file: str, tree: int, index: int, name: str | None) -> str:
    """The one sentence for a tree model file with a split by category, the same on lint (FS506,
    fairspec.models.peek_trees.categorical_split) and in check's unknown (fairspec.models.boosted)."""
    what = f"input {index}" + (f" ({name!r})" if name else "")
    return (f"{file} splits {what} by category (tree {tree}), and the exact tree encodings read numeric "
            f"thresholds only: categorical splits are not supported on an input whose declared values are "
            f"not a finite set of whole numbers (an int range, a category's code, a boolean)")


CATEGORY_LIMIT = 1 << 22        # |value| below this: exact in float32, and so is a midpoint of two of them
CATEGORY_VALUES = 1 << 16       # at most this many values of one input split by category


def category_domains(enc, fs) -> dict[int, tuple[int, ...]]:
    """{model input: its declared values, sorted} for each input whose values the spec declares to be
    a finite set of whole numbers: the raw column of an ``int in a..b`` or boolean feature, a
    category's ``code``, a one-hot column (0 / 1). On these, and only these, a split by category of an
    XGBoost / LightGBM tree becomes numeric thresholds (fairspec.models.tree_categories); lint
    (FS506) and check read the same dict, so lint passes no categorical split check refuses."""
    out: dict[int, tuple[int, ...]] = {}
    if enc is None or fs is None:
        return out
    for c in enc.columns:
        f = fs.get(c.feature)
        if f is None:
            continue
        d, kind = f.domain, getattr(f.domain, "kind", "")
        vals = None
        if c.kind == "raw" and c.width == 1:
            if kind == "bool":
                vals = (0, 1)
            elif kind == "int" and d.hi - d.lo < CATEGORY_VALUES:
                vals = tuple(range(int(d.lo), int(d.hi) + 1))
        elif c.kind == "code" and c.width == 1 and c.codes and all(float(v).is_integer() for v in c.codes):
            vals = tuple(sorted({int(v) for v in c.codes}))
        elif c.kind == "onehot":
            for j in range(c.width):
                out[c.offset + j] = (0, 1)
            continue
        if vals and all(abs(v) < CATEGORY_LIMIT for v in vals):
            out[c.offset] = vals
    return out


class ModelLoadError(Exception):
    """One clear sentence for a person, naming the file and the problem.

    Raised for every failure to find, parse, load or evaluate a model; the
    underlying library's exception (if any) is kept as ``__cause__`` for
    debugging but is never meant to be shown to users.
    """

    def __init__(self, message: str, path: str | pathlib.Path | None = None, *, code: str | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else pathlib.Path(path)
        self.code = code        # a lint code when the declaration, not the file, is at fault (FS413)
        self.hint = hint

    def __str__(self) -> str:
        return self.message + (f" ({self.hint})" if self.hint else "")


_ANNOUNCED: set[str] = set()


#: a file the Python API writes beside the pickles it makes of the caller's own objects (fairspec.api): one line
#: per pickle, its SHA-256 and file name; only a pickle it names with that hash loads without the stderr line (in
#: worker processes too), since no spec asked to trust it. A stray marker beside a user's own file silences nothing.
OWN_OBJECTS = ".fairspec-own-objects"


def _sha256(path: pathlib.Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mark_own_object(path) -> None:
    """Record ``path`` (a pickle the Python API just wrote of the caller's object) in its folder's marker."""
    path = pathlib.Path(path)
    with open(path.parent / OWN_OBJECTS, "a", encoding="utf-8") as fh:
        fh.write(f"{_sha256(path)} {path.name}\n")


def own_object(path) -> bool:
    """Is ``path`` a pickle the Python API wrote of the caller's own object: named, with its exact SHA-256, in
    the :data:`OWN_OBJECTS` marker beside it?"""
    path = pathlib.Path(path)
    try:
        lines = (path.parent / OWN_OBJECTS).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    named = {line.split(" ", 1)[0] for line in lines if line.split(" ", 1)[1:] == [path.name]}
    if not named:
        return False
    try:
        return _sha256(path) in named
    except OSError:
        return False


@contextlib.contextmanager
def loading_pickle(path):
    """Around the load of a trusted pickle: say once per file, on stderr, that loading it runs the code
    inside it; torch_own records torch's code before that code can patch it (now, or the moment it
    imports torch)."""
    import os
    import sys
    from fairspec.diagnostics.visible import visible_value

    from fairspec.models.torch_own import watching

    key = os.path.realpath(str(path))
    if key not in _ANNOUNCED and not own_object(path):
        _ANNOUNCED.add(key)
        print(f"fairspec: loading {visible_value(path)} runs the code inside the pickle (the spec says `trust pickle`)",
              file=sys.stderr, flush=True)
    with watching(path):
        yield


def default_threshold(score_kind: str) -> float:
    """The decision threshold on a score of this kind: 0 for logits, 1/2 for probabilities."""
    return 0.0 if score_kind == "logit" else 0.5


def check_score_kind(score_kind: str | None, path: pathlib.Path) -> str | None:
    if score_kind is None:
        return None
    kind = str(score_kind).strip().lower()
    if kind in ("probability", "proba", "probs"):
        kind = "prob"
    if kind in ("logits", "score", "margin"):
        kind = "logit"
    if kind not in SCORE_KINDS:
        raise ModelLoadError(
            f"the score kind {score_kind!r} given for model {path} is not one of 'logit', 'prob' or 'value'",
            path,
        )
    return kind


def short_error(exc: BaseException, limit: int = 200) -> str:
    """The first line of a library's error message, trimmed, for use inside one sentence; the last
    line when the message carries a traceback (TorchScript's "The following operation failed in the
    TorchScript interpreter. Traceback of TorchScript ...", whose last line is the error raised:
    "builtins.RuntimeError: boom" is said as "RuntimeError: boom")."""
    if isinstance(exc, SystemExit):  # the code of a trusted pickle ended the process: never fairspec's exit code
        return f"the model's code called sys.exit({exc.code!r})"
    text = str(exc).strip() or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and any(line.startswith("Traceback") for line in lines[1:]):
        text = lines[-1].removeprefix("builtins.")
    elif lines:
        text = lines[0]
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text.rstrip(".")


def readout_for(path: pathlib.Path, columns: int | None, index, score_kind: str, what: str,
                task: str | None = None, classes=None, by_predict: bool = False):
    """The Readout of a loaded model's output of ``columns`` columns (fairspec.models.readout
    decides; ``task``/``classes`` when the file says them); an ambiguous or impossible choice is a
    ModelLoadError naming the file."""
    from .readout import ReadoutError, resolve_readout

    try:
        return resolve_readout(columns, index, score_kind, what, task=task, classes=classes, by_predict=by_predict)
    except ReadoutError as e:
        raise ModelLoadError(e.message, path, code="FS413", hint=e.hint) from None


class LoadedModel(abc.ABC):
    """A model loaded from a file, evaluated one declared scalar output at a time.

    Attributes:
        path:        the model file.
        format:      "onnx" | "torch" | "sklearn" | "xgboost" | "lightgbm".
        input_width: the length of the input vector, or None when the file does not say.
        readout:     which output column(s) the decision reads and by which rule
                     (fairspec.models.readout: the one place that decides it).
        score_kind:  "logit" | "prob": what `score` returns (readout.score).
        threshold:   the decision threshold on the score (readout.threshold).
        raw:         the underlying object (onnxruntime session, torch module, estimator),
                     for analyses that need the model's structure.
        input_names: the input names the file records, in input order (XGBoost, LightGBM,
                     scikit-learn feature_names_in_, multi-input ONNX), or None.
    """

    input_names: tuple[str, ...] | None = None

    path: pathlib.Path
    format: str
    input_width: int | None
    score_kind: str
    threshold: float
    raw: Any

    # ---- to implement -------------------------------------------------------------
    @abc.abstractmethod
    def _score(self, X: "np.ndarray") -> "np.ndarray":
        """Evaluate a checked float64 (n, width) batch with n >= 1; return shape (n,) or (n, 1)."""

    @abc.abstractmethod
    def output_description(self) -> str:
        """The chosen output, e.g. "'logit'[0]" or "predict_proba[:, 1]"."""

    def _piecewise_linear(self):
        """This format's conversion to a PLNet (formats that have one override it)."""
        raise UnsupportedModel(str(self.format), "model", f"a {self.format} model is not a network")

    # ---- the interface ------------------------------------------------------------
    def piecewise_linear(self):
        """This model as the single-logit piecewise-linear network of its decision
        (``fairspec.models.network.PLNet``; the same output, column and rule as ``decide``, see
        fairspec.models.readout): the one path from a loaded model to the network the solvers
        encode (individual fairness, PBA, the search's fast evaluator).  Raises
        ``UnsupportedModel`` (an ``Unsupported``) when the model is not such a network. Read once per
        loaded model, as :meth:`runtime_network` (every replayed pair's runtime layers ask for it)."""
        def read():
            net = self._piecewise_linear()
            require_finite(((f"layer {i + 1}", a) for i, L in enumerate(net.layers) for a in (L.W, L.b)), self.path)
            return net

        return self._read_once("_piecewise_linear_read", read, (UnsupportedModel, ModelLoadError))

    def _read_once(self, key: str, read, errors=(UnsupportedModel,)):
        """``read()`` once per loaded model, kept under ``key``: its network, or the refusal (one of
        ``errors``) raised again on every later call."""
        got = self.__dict__.get(key)
        if got is None:
            try:
                got = (read(), None)
            except errors as e:
                got = (None, e)
            self.__dict__[key] = got
        if got[1] is not None:
            raise got[1]
        return got[0]

    def runtime_network(self):
        """The runtime's own layers as a ``PLNet`` with every output column and no readout applied
        (the numbers in the model file: what ``fairspec.certify.network.runtime_error_bound``
        bounds). Raises ``UnsupportedModel`` when the model is not such a network. Read once per
        loaded model (certification, the batch spreads and the runtime layers' check all ask)."""
        return self._read_once("_runtime_network_read", self._runtime_network)

    def runtime_chain(self):
        """The runtime's layers cut at every rounding (``PLNet``, every output column): as
        :meth:`runtime_network`, but two products with no ReLU between (an identity MLP, a torch or
        ONNX chain of linear layers) are two layers with identity between, not one folded layer whose
        numbers the runtime never rounds with. Raises ``UnsupportedModel`` when one operator rounds
        twice (a Gemm scaled by alpha) or the model is not a network."""
        return self._read_once("_runtime_chain_read", lambda: self._runtime_network(readout="chain"))

    def folded_network(self):
        """Every output column, no readout, as the solvers encode it: :meth:`runtime_network` where the
        runtime's layers are its own numbers, else (an identity MLP, a torch or ONNX chain of linear
        layers) the runtime's products with no ReLU between folded into one layer. Certify bounds the
        runtime on :meth:`runtime_chain` and compares the folded layers with it exactly. Raises
        ``UnsupportedModel`` when the model is not such a network."""
        return self._read_once("_folded_network_read", lambda: self._runtime_network(readout="folded"))

    def _runtime_network(self, readout="raw"):
        raise UnsupportedModel(str(self.format), "model", f"a {self.format} model is not a network")

    @property
    def precision(self) -> str:
        """The floating-point arithmetic the runtime computes the network in: "float64" here
        (scikit-learn), the formats that compute otherwise override it. Certify's runtime error
        model (``fairspec.certify.network``) covers "float16", "float32" and "float64". A scikit-learn model
        holding a GradientBoosting whose init model runs on its float32 input says "float32"
        (:func:`fairspec.models.meta_estimators.float32_inside`: its assumed batch spread is float32's)."""
        if getattr(self, "format", "") == "sklearn":
            from fairspec.models.meta_estimators import float32_inside

            if float32_inside(getattr(self, "raw", None)):
                return "float32"
        return "float64"

    def score(self, X: "np.ndarray") -> "np.ndarray":
        """Evaluate the declared output: float64 (n, width) -> float64 (n,)."""
        import numpy as np

        X = self._check_input(X)
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        return self._finish(self._guard(self._score, X), X.shape[0])

    def decide(self, X: "np.ndarray") -> "np.ndarray":
        """The binary decision: 1 where score > threshold, else 0 (int64, shape (n,)). A regression
        has none (UnsupportedModel: the spec thresholds value(m(x)) itself)."""
        import numpy as np

        if self.readout.threshold is None:
            raise Unsupported(f"model {self.path} is a regression: it has no binary decision "
                              f"(threshold its value: value(m(x)) >= t)")
        if self.readout.argmax_decision:
            # "column index is the largest" is the argmax's class, the FIRST maximal column on a tie (as
            # class(m(x)) reads it): y_i - max_{j != i} y_j > 0 called a tie "not class i" even where i is first
            return (self.predict_class(X) == self.readout.index).astype(np.int64)
        return (self.score(X) > self.threshold).astype(np.int64)

    # ---- the full output (issue 25: class, prob(c), logit(c), value) -------------------
    @property
    def task(self) -> str:
        """"binary" | "multiclass" | "regression" (fairspec.models.readout)."""
        return self.readout.task

    def outputs(self, X: "np.ndarray") -> "np.ndarray":
        """Every column of the declared output: float64 (n, K), (n, 1) for one column; what
        ``readout.predicted_class`` / ``class_probabilities`` / ``class_logit`` / ``value`` read.
        Boosted trees give their library's own output (probabilities or margins of every class)."""
        import numpy as np

        X = self._check_input(X)
        n = X.shape[0]
        if n == 0:
            return np.zeros((0, self.readout.columns or 1), dtype=np.float64)
        self._all_columns = True
        try:
            y = self._guard(self._outputs, X)
        finally:
            self._all_columns = False
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            y = y.reshape(-1, 1)
        if y.ndim != 2 or y.shape[0] != n:
            raise ModelLoadError(f"model {self.path} output {self.output_description()} has shape {y.shape} "
                                 f"for a batch of {n} rows, not one row of numbers per input", self.path)
        if not np.all(np.isfinite(y)):
            raise ModelLoadError(f"model {self.path} output {self.output_description()} is not finite on some "
                                 f"inputs; a model whose outputs are not finite numbers cannot be checked", self.path)
        return y

    def _outputs(self, X):
        """Every output column of a checked batch; by default the loader's own evaluation with the
        readout's column selection switched off (``_read`` returns the whole output)."""
        return self._score(X)

    def predict_class(self, X, outputs=None) -> "np.ndarray":
        """``class(m(x))``: int64 (n,) column indices (the first maximal column on a tie). ``outputs``:
        this batch's :meth:`outputs` when the caller has them (a loader whose library has its own
        ``predict`` reads that instead: :meth:`fairspec.models.sklearn_model.SklearnModel.predict_class`)."""
        Y = self.outputs(X) if outputs is None else outputs
        return self._readout_call(lambda: self.readout.predicted_class(Y))

    def class_probabilities(self, X) -> "np.ndarray":
        """``prob(m(x), c)`` for every class c: float64 (n, K)."""
        self.refuse_prob()
        return self._readout_call(lambda: self.readout.class_probabilities(self.outputs(X)))

    def value(self, X) -> "np.ndarray":
        """``value(m(x))`` of a regression: float64 (n,)."""
        return self._readout_call(lambda: self.readout.value(self.outputs(X)))

    def _readout_call(self, fn):
        from .readout import ReadoutError

        try:
            return fn()
        except ReadoutError as e:
            raise Unsupported(f"model {self.path}: " + e.message + (f" ({e.hint})" if e.hint else "")) from None

    def prob_reader(self):
        """``(X -> scores, logit?)``: what ``prob(m(x))`` of a binary classifier reads, for the paths
        that read it off the declared score (group metrics' scores, k-discrimination's buckets): the
        score, through the logistic when it is a logit. A binary booster declared by its margin reads
        its library's own probability instead (fairspec.models.boosted), as its enumeration and the
        tree engines do (fairspec.backends.trees.runtime.runtime_outputs)."""
        self.refuse_prob()
        self.refuse_classless_prob()
        return self.score, self.score_kind == "logit"

    def refuse_classless_prob(self) -> None:
        """``prob(m(x))`` without a class of K >= 3 columns read with ``index = i``: probabilities (a
        scikit-learn classifier's predict_proba, whose decision is its predict) or logits (an ONNX / torch
        network's, whose decision is the argmax): the score is a margin ``y_i - max_{j != i} y_j``, and no
        probability (the logistic of a logits margin is not the softmax's p_i for K >= 3)."""
        r = self.readout
        if getattr(r, "_prob_margin", False) or (r.argmax_decision and (r.columns or 0) >= 3):
            raise Unsupported(f"prob(m(x)) names no class, and model {self.path} has {r.columns} classes "
                              f"(its index = {r.index} reads the decision 'predict is class {r.index}', a margin "
                              f"between columns, not a probability); name the class: prob(m(x), {r.index})")

    #: why ``prob(m(x))`` read off the declared output is not the library's probability (a scikit-learn
    #: classifier declared by a decision_function whose logistic is not its predict_proba:
    #: fairspec.models.peek_sklearn.decision_probability, lint FS415 where it can read the file), or None
    prob_problem: str | None = None
    #: what to do instead, where the declaration cannot fix ``prob_problem`` (None: declare the probability)
    prob_hint: str | None = None

    def refuse_prob(self) -> None:
        """Raise :class:`fairspec.verdict.Unsupported` (the property's ``unknown``) for a read of
        ``prob`` the model's declaration leaves ambiguous (``prob_problem``)."""
        if self.prob_problem is not None:
            raise Unsupported(f"prob(m(x)) reads a class probability, but {self.prob_problem}; " + (
                self.prob_hint or "declare the model by its probability (output = \"predict_proba\", score = "
                                  "prob), or compare logit(m(x)) or label(m(x))"))

    def replay(self, X: "np.ndarray") -> "np.ndarray":
        """Evaluate the declared output on an independent path where one exists (used to
        replay witnesses); by default the same evaluation as `score`."""
        return self.score(X)

    def tree_ensemble(self):
        """The model as a :class:`fairspec.models.trees.TreeEnsemble` of its declared output, or
        None when it is not a tree model (raises UnsupportedModel for a tree model whose
        structure cannot be read exactly)."""
        return None

    def describe(self) -> str:
        width = "unknown input width" if self.input_width is None else f"{self.input_width} inputs"
        return f"{self.format} model {self.path}, output {self.output_description()} ({self.score_kind}), {width}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.describe()}>"

    # ---- helpers for subclasses ---------------------------------------------------
    def _init_common(self, path: pathlib.Path, fmt: str, input_width: int | None,
                     score_kind: str, raw: Any, readout=None) -> None:
        from .readout import Readout

        self.path = path
        self.format = fmt
        self.input_width = input_width
        self.readout = readout if readout is not None else Readout(score_kind)
        self.score_kind = self.readout.score
        self.threshold = self.readout.threshold
        self.raw = raw

    def _read(self, y, what: str):
        """The score column(s) of one output batch, by the model's Readout."""
        from .readout import Readout, ReadoutError

        if getattr(self, "_all_columns", False):
            return Readout._matrix(y)
        try:
            return self.readout.select(y, what)
        except ReadoutError as e:
            raise ModelLoadError(f"{e.message}" + (f" ({e.hint})" if e.hint else ""), self.path) from None

    def _check_input(self, X: Any) -> "np.ndarray":
        import numpy as np

        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ModelLoadError(
                f"the input given to model {self.path} is not a numeric array ({short_error(exc)})",
                self.path,
            ) from exc
        if X.ndim != 2:
            raise ModelLoadError(
                f"model {self.path} is evaluated on a 2-D batch of shape (n, width) but got an array of shape {X.shape}",
                self.path,
            )
        if self.input_width is not None and X.shape[1] != self.input_width:
            raise ModelLoadError(
                f"model {self.path} expects inputs of width {self.input_width} but got width {X.shape[1]}",
                self.path,
            )
        return X

    def _guard(self, fn, X: "np.ndarray"):
        """Run one evaluation, turning any library failure into a ModelLoadError."""
        try:
            return fn(X)
        except (ModelLoadError, AmbiguousRuntime):
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - every library error (sys.exit too) is one sentence
            raise ModelLoadError(
                f"evaluating {self.format} model {self.path} on a batch of shape {X.shape} failed: {short_error(exc)}",
                self.path,
            ) from exc

    def _finish(self, out: Any, n: int) -> "np.ndarray":
        import numpy as np

        out = np.asarray(out, dtype=np.float64)
        if out.ndim == 2 and out.shape[1] == 1:
            out = out[:, 0]
        if out.shape != (n,):
            raise ModelLoadError(
                f"model {self.path} output {self.output_description()} has shape {out.shape} "
                f"for a batch of {n} rows, not one number per row",
                self.path,
            )
        bad = ~np.isfinite(out)
        if bad.any():  # NaN or infinite weights read as "every decision negative": never a verdict
            nan = int(np.isnan(out).sum())
            inf = int(bad.sum()) - nan
            what = " and ".join(w for w, k in ((f"NaN on {nan}", nan), (f"infinite on {inf}", inf)) if k)
            raise ModelLoadError(
                f"model {self.path} output {self.output_description()} is {what} of {n} "
                f"inputs; a model whose outputs are not finite numbers cannot be checked (are its weights NaN or "
                f"infinite?)",
                self.path,
            )
        return out


def require_finite(named_arrays, path) -> None:
    """ModelLoadError naming the file when any of the (name, array) weights is NaN or infinite."""
    import numpy as np

    for name, a in named_arrays:
        a = np.asarray(a)
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            what = "NaN" if np.isnan(a).any() else "infinite"
            raise ModelLoadError(f"model {path} has {what} weights ({name}); a model with weights that are not "
                                 "finite numbers cannot be checked", path)


_ALIASES = {
    "onnx": "onnx",
    "torch": "torch", "pytorch": "torch", "torchscript": "torch",
    "sklearn": "sklearn", "scikit-learn": "sklearn", "skops": "sklearn",
    "xgboost": "xgboost", "xgb": "xgboost",
    "lightgbm": "lightgbm", "lgbm": "lightgbm", "lgb": "lightgbm",
}


def normalize_format(format: str, path=None) -> str:
    fmt = _ALIASES.get(str(format).strip().lower())
    if fmt is None:
        where = f" for {path}" if path is not None else ""
        raise ModelLoadError(
            f"the model format {format!r}{where} is not one of {', '.join(repr(f) for f in FORMATS)}",
            path,
        )
    return fmt


def require_file(p: pathlib.Path) -> None:
    """A ModelLoadError naming the path when it is missing or not a file."""
    if not p.exists():
        raise ModelLoadError(f"model file {p} does not exist", p)
    if not p.is_file():
        raise ModelLoadError(f"model path {p} is not a file", p)


def recorded_names(seq) -> tuple[str, ...] | None:
    """The names as a tuple of strings, or None (not a non-empty sequence of strings)."""
    if not isinstance(seq, (list, tuple)) or not seq or not all(isinstance(s, str) for s in seq):
        return None
    return tuple(seq)


def loose_name(name: str) -> str:
    """A model input's name as it is matched to a feature when no name is the same exactly
    (fairspec.sema.names.match, a multi-input ONNX model's binding): without its spaces (those around it, and
    a one-hot column's ``sex_ Male`` of a cell read with its space), in one case."""
    return "".join(str(name).split()).casefold()


def declared_order(enc, model) -> str:
    """FS427's sentence (lint's warning for a skops file, check's for a pickle): a scikit-learn model
    recording no input names takes the encode block's columns (``enc``, an ``ir.Encoding``) in its order."""
    cols = ", ".join(c.feature if c.width == 1 else f"{c.feature} ({c.width} columns)" for c in enc.columns)
    n = enc.width
    return (f"model '{model.name}' records no input names (scikit-learn keeps them only for a model fitted on a "
            f"data frame: {model.path} has no feature_names_in_), so its {n} "
            f"input{' is' if n == 1 else 's are'} taken in the encode block's order: {cols}")
