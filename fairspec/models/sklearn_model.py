"""scikit-learn estimators: .skops files (types checked first), pickles only when trusted."""

from __future__ import annotations

import pathlib

from .base import (LoadedModel, ModelLoadError, check_score_kind, loading_pickle, readout_for, require_file,
                   short_error)
from .forest_threads import order_problem
from .meta_estimators import no_score_hint
from .peek_sklearn import refuse_no_one_class
from .readout import positive_class_problem
# reading the file (fairspec.models.sklearn_files); import_skops_io and leaf_boxes re-exported for their callers
from .sklearn_files import (PICKLE_SUFFIXES, SKOPS_SUFFIXES, _load_pickle, _load_skops, check_fitted,
                            check_tree_structure, import_skops_io, leaf_boxes)

__all__ = ["SklearnModel", "load_sklearn", "import_skops_io", "leaf_boxes", "SKOPS_SUFFIXES", "PICKLE_SUFFIXES"]

_PROB_OUTPUTS = ("predict_proba", "prob", "proba", "probability")
_LOGIT_OUTPUTS = ("decision_function", "logit", "decision")


class SklearnModel(LoadedModel):
    def __init__(self, path: pathlib.Path, *, output: str | int | None = None,
                 index: int | None = None, score_kind: str | None = None, trust_pickle: bool = False):
        kind = check_score_kind(score_kind, path)
        require_file(path)
        suffix = path.suffix.lower()
        if suffix in SKOPS_SUFFIXES:
            est = _load_skops(path)
        elif suffix in PICKLE_SUFFIXES:
            if not trust_pickle:
                raise ModelLoadError(
                    f"{path} is a pickle, and loading a pickle runs code from the file; save the model with "
                    f"skops (.skops) instead, or write `trust pickle` in the spec if you trust it",
                    path,
                )
            with loading_pickle(path):
                est = _load_pickle(path)
        else:
            raise ModelLoadError(
                f"{path} has the extension {suffix or '(none)'!r}; scikit-learn models are read from .skops files "
                f"(or .pkl/.pickle/.joblib with `trust pickle`)",
                path,
            )

        check_fitted(est, path)
        check_tree_structure(est, path)
        self.order_problem = order_problem(est)     # a threaded forest's sums by thread order (forest_threads)
        self.pipeline = None            # a scikit-learn Pipeline whose preprocessing is folded (sklearn_pipeline)
        self.folded = None
        from .sklearn_pipeline import fold, is_pipeline

        if is_pipeline(est):
            try:
                from .pipeline_layout import narrow_handoff

                folded = narrow_handoff(est, fold(est))
            except Exception as exc:  # noqa: BLE001 - an unusual pipeline: one sentence
                raise ModelLoadError(f"the pipeline in {path} could not be read: {short_error(exc)}", path) from exc
            self.pipeline, self.folded = est, folded
            if not folded.unfoldable:
                est = folded.final
        named = _named_categories(est)
        if named:
            raise ModelLoadError(
                f"scikit-learn model {path}: the {type(est).__name__} was fitted on a data frame whose "
                f"{'column' if len(named) == 1 else 'columns'} {', '.join(repr(c) for c in named)} "
                f"{'is a' if len(named) == 1 else 'are'} pandas categorical (native categorical support), which it "
                f"reads by category name through its own encoder, while fairspec feeds a model numbers; fit it on "
                f"number codes (categorical_features on an array), or encode those columns with an "
                f"OrdinalEncoder in a Pipeline's ColumnTransformer", path)
        has_proba, has_dec = _has(est, "predict_proba"), _has(est, "decision_function")
        if _is_regressor(est) and not (has_proba or has_dec):
            self._regressor(path, est, output, index, kind)
            return
        refuse_no_one_class(est, path)      # an outlier detector; classes_ a list of class arrays, one per output
        if not (has_proba or has_dec):
            raise ModelLoadError(f"{path} holds a {type(est).__name__}, which has neither predict_proba nor "
                                 f"decision_function{no_score_hint(est)}", path)
        if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
            raise ModelLoadError(f"the index {index!r} chosen for scikit-learn model {path} is not a non-negative integer", path)

        out = None if output is None else str(output).strip().lower()
        if out is None:
            method = "predict_proba" if has_proba else "decision_function"
        elif out in _PROB_OUTPUTS:
            method = "predict_proba"
        elif out in _LOGIT_OUTPUTS:
            method = "decision_function"
        else:
            raise ModelLoadError(
                f"the output {output!r} chosen for scikit-learn model {path} is not one of "
                f"'predict_proba' (or 'prob') and 'decision_function' (or 'logit')",
                path,
            )
        if method == "predict_proba" and not has_proba:
            raise ModelLoadError(f"{path} holds a {type(est).__name__}, which has no predict_proba", path)
        if method == "decision_function" and not has_dec:
            raise ModelLoadError(f"{path} holds a {type(est).__name__}, which has no decision_function", path)
        self.method = method
        declared, kind = kind, (kind or ("prob" if method == "predict_proba" else "logit"))
        classes = getattr(est, "classes_", None)
        try:
            n_classes = None if classes is None else len(classes)
        except TypeError:
            n_classes = None
        if method == "decision_function":       # is the logistic (softmax) of it predict_proba?
            from .peek_sklearn import decision_probability

            final = est.steps[-1][1] if is_pipeline(est) else est
            self.prob_problem = decision_probability(type(final).__name__, lambda a: getattr(final, a, None),
                                                     n_classes, declared, "the model")
        if self.prob_problem is None:       # a final XGBClassifier of binary:hinge / binary:logitraw
            from .pipeline_boosters import no_probability

            self.prob_problem = no_probability(est.steps[-1][1] if is_pipeline(est) else est)
            if self.prob_problem is not None:
                self.prob_hint = "compare its decisions (label(m(x)))"
        columns = None
        if n_classes is not None:
            columns = n_classes if method == "predict_proba" or n_classes > 2 else 1
        if n_classes == 2:
            problem = positive_class_problem(_labels(classes), index)
            if problem is not None:     # "approve" / "deny": sorted order does not say which is positive
                raise ModelLoadError(f"scikit-learn model {path}: {problem.message}", path, code="FS413",
                                     hint=problem.hint)
            if method == "decision_function" and index is not None:
                if index != 1:          # decision_function > 0 is classes_[1]: no column to choose
                    raise ModelLoadError(
                        f"scikit-learn model {path}: its decision_function scores class {_labels(classes)[1]!r} "
                        f"(positive above 0), so index = {index} cannot make {_labels(classes)[0]!r} the positive "
                        f"class; read predict_proba (output = \"predict_proba\", index = {index}) if the model has "
                        f"it, or fit it with {_labels(classes)[0]!r} as the larger label", path)
                index = None
        if index is None and n_classes == 2 and method == "predict_proba":
            index = 1                   # scikit-learn's own positive class, classes_[1] (as predict() decides)
        self._what = f"{method} of scikit-learn model {path}"
        if n_classes is not None and n_classes > 2 and index is None:
            readout = readout_for(path, columns, index, kind, self._what, task="multiclass",
                                  classes=_labels(classes))
        else:
            readout = readout_for(path, columns, index, kind, self._what,   # K >= 3: decide() reads predict
                                  classes=_labels(classes) if n_classes == 2 else None, by_predict=True)
        self._read_estimator(path, est, kind, readout, classes)

    def _regressor(self, path, est, output, index, kind) -> None:
        """A scikit-learn regressor (``is_regressor``): its ``predict`` is ``value(m(x))``."""
        if output is not None and str(output).strip().lower() not in ("predict", "value"):
            raise ModelLoadError(f"{path} holds a regressor ({type(est).__name__}); its one output is "
                                 f"'predict', not {output!r}", path)
        if kind not in (None, "value"):
            raise ModelLoadError(f"{path} holds a regressor ({type(est).__name__}), whose output is a value, "
                                 f"not a {kind}", path)
        self.method = "predict"
        self._what = f"predict of scikit-learn regressor {path}"
        k = getattr(est, "n_outputs_", None)       # a multi-output regressor: index = i chooses the column
        coef = getattr(est, "coef_", None)          # a linear regressor records its outputs as coef_'s rows
        if k is None and getattr(coef, "ndim", None) == 2:
            k = coef.shape[0]
        k = int(k) if hasattr(k, "__index__") and not isinstance(k, bool) and int(k) >= 1 else None
        readout = readout_for(path, k, index, "value", self._what, task="regression")
        self._read_estimator(path, est, "value", readout, None)

    def _read_estimator(self, path, est, kind, readout, classes) -> None:
        """What classifiers and regressors read alike: the input width (None while the preprocessing
        is not folded: the encoding's, once bound), the classes and the input names."""
        self.index = readout.index
        width = getattr(est, "n_features_in_", None)
        try:
            width = int(width) if width is not None else None
        except (TypeError, ValueError):
            width = None
        self._frame = None
        if self.folded is not None and self.folded.unfoldable:
            width = None                # the encoding's width, once bound (bind_encoding)
        self.classes = None if classes is None else list(classes)
        names = getattr(est, "feature_names_in_", None)
        self.input_names = tuple(str(n) for n in names) if names is not None else None
        self._init_common(path, "sklearn", width, kind, est, readout)

    @property
    def unfolded(self) -> bool:
        """A pipeline evaluated whole on a data frame: its preprocessing could not be folded."""
        return self.folded is not None and bool(self.folded.unfoldable)

    def bind_encoding(self, enc, fs) -> None:
        """For a pipeline evaluated whole: how the encoded columns (raw numbers and category codes,
        fairspec.sema.pipelines.frame_encoding) become the data frame its predict_proba reads."""
        if self.folded is None or enc is None:
            return
        if self.folded.clipped is not None:     # MinMaxScaler(clip=True): as sema decided, on the same feature set
            from .sklearn_pipeline import settle

            folded = settle(self.folded, fs)
            if not folded.unfoldable:
                self._take_folded(folded)
            else:
                self.folded = folded            # its phrase now says where the domain reaches past
        if not self.unfolded:               # folded: the integer features, for replaying through the pipeline
            self._integral = frozenset(
                fs.get(c.feature).column for c in enc.columns
                if fs is not None and fs.get(c.feature) is not None and fs.get(c.feature).domain.kind == "int")
            return
        binding = []
        for c in enc.columns:
            f = fs.get(c.feature) if fs is not None else None
            cats = None
            if c.kind == "code":
                from .pipeline_frame import frame_column

                order = sorted(range(len(c.categories)), key=lambda i: c.codes[i])
                # the objects the pipeline was fitted on (an int 0 for the declared 0), not the names
                cats = frame_column(self.pipeline, f.column if f is not None else c.feature,
                                    [c.categories[i] for i in order], f is not None and f.domain.kind == "bool")
            binding.append((f.column if f is not None else c.feature, c.offset, cats))
        self._frame = binding
        self.input_width = enc.width

    def _take_folded(self, folded) -> None:
        """Read the pipeline as folded from now on (its final estimator on the encoded columns), as
        __init__ reads a pipeline that folds without a domain."""
        self.folded, self.raw, self.input_width = folded, folded.final, int(folded.width)
        self._laid = None                   # its layout probed again (pipeline_layout)
        names = getattr(folded.final, "feature_names_in_", None)
        self.input_names = tuple(str(n) for n in names) if names is not None else None
        self._frame = None

    def replay(self, X):
        """A folded pipeline: the witness's columns turned back into a data frame and run through
        the pipeline's own predict_proba / decision_function (an independent path: it checks the
        folding too); otherwise the same evaluation as score."""
        if self.folded is None or self.unfolded or getattr(self, "_integral", None) is None:
            return self.score(X)
        import warnings

        import numpy as np

        from .sklearn_pipeline import unfold

        X = self._check_input(X)
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)

        def run(X):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y = np.asarray(getattr(self.pipeline, self.method)(unfold(self.folded, X, self._integral)))
            return self._read(y, self._what)

        return self._finish(self._guard(run, X), X.shape[0])

    @property
    def label_by_predict(self) -> bool:
        """A binary classifier: its label is scikit-learn's own ``predict`` (1 where it returns the
        positive class), not the score against a threshold. They differ: a linear model or an SVM
        predicts from ``decision_function > 0`` while its ``predict_proba`` is ``expit`` of it (exactly
        1/2 for a decision in (0, ~2e-16]) or Platt scaling (SVC, which can disagree outright)."""
        if not (self.readout.task == "binary" and self.readout.threshold is not None and self.classes is not None
                and len(self.classes) == 2):
            return False
        if self.score_kind == "logit" and self.method == "decision_function":
            from sklearn.linear_model._base import LinearClassifierMixin

            # a linear model's predict is exactly ``decision_function(X) > 0`` (its own code): the
            # score against 0 is predict, and keeps the logit a label post's maximize measures
            return not isinstance(self.raw, LinearClassifierMixin)
        return True

    def decide(self, X):
        """The binary decision as scikit-learn's ``predict`` makes it (see ``label_by_predict``); of a multiclass
        model with ``index = i`` ("class i against the rest") too: predict's first largest column at a tie."""
        multi = self.readout.task == "multiclass" and self.readout.index is not None and bool(self.classes)
        if not (self.label_by_predict or multi):
            return super().decide(X)
        import warnings

        import numpy as np

        X = self._check_input(X)
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        est = self.raw
        positive = est.classes_[self.readout.index if multi else 0 if self.readout.index == 0 else 1]

        def run(X):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run_est, run_X = self._runtime(X)
                y = self._one_class_per_row(run_est.predict(run_X), X.shape[0])
            return (y == positive).astype(np.float64)

        return self._finish(self._guard(run, X), X.shape[0]).astype(np.int64)

    def predict_class(self, X, outputs=None):
        """``class(m(x))`` of a classifier: the column in ``classes_`` of the label scikit-learn's own
        ``predict`` returns, not the first largest column of the declared output, which it need not be: an
        SVC's predict votes one-vs-one while its predict_proba is Platt scaling (they disagree outright), and
        a linear model or gradient boosting predicts from its decision function, whose softmax can round two
        classes to one probability (a tie predict does not see). ``outputs`` is not read."""
        if self.readout.task == "regression" or not self.classes or len(self.classes) < 2:
            return super().predict_class(X, outputs)
        import warnings

        import numpy as np

        X = self._check_input(X)
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        classes = self.raw.classes_ if hasattr(self.raw, "classes_") else self.classes

        def run(X):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run_est, run_X = self._runtime(X)
                y = self._one_class_per_row(run_est.predict(run_X), X.shape[0])
            col = np.full(y.shape[0], -1.0)
            for i, lab in enumerate(classes):
                col[y == lab] = i
            if (col < 0).any():
                raise ModelLoadError(f"scikit-learn model {self.path}: its predict returned "
                                     f"{y[col < 0][0]!r}, which is none of its classes_", self.path)
            return col

        return self._finish(self._guard(run, X), X.shape[0]).astype(np.int64)

    def _one_class_per_row(self, y, n: int):
        """predict's labels as one per row, or a ModelLoadError naming the file: an XGBClassifier trained with
        objective multi:softprob and num_class = 2 predicts like a multi-label model (a 0 / 1 column per
        class, its probability > 0.5), which reshaped to one column was 2n labels for n rows."""
        import numpy as np

        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.shape != (n,):
            final = self.raw.steps[-1][1] if hasattr(self.raw, "steps") else self.raw
            why = (" (an XGBClassifier with objective multi:softprob and two classes predicts a 0 / 1 column per "
                   "class)" if type(final).__name__ == "XGBClassifier" else "")
            raise ModelLoadError(f"scikit-learn model {self.path}: its predict returns an array of shape {y.shape} "
                                 f"for {n} rows, not one class per row{why}", self.path)
        return y

    @property
    def reads_library_probability(self) -> bool:
        """``prob`` of a classifier declared by its decision_function z whose predict_proba is expit(z)
        (softmax, K classes) in scikit-learn's code (``prob_problem`` None): predict_proba itself, not
        fairspec's logistic of z, which can differ in the last bit (GradientBoosting's and
        HistGradientBoosting's LogitLink against 1 / (1 + exp(-z)))."""
        return self.method == "decision_function" and self.prob_problem is None and \
            hasattr(self.raw, "predict_proba")

    def library_probabilities(self, X):
        """Every class's probability as the classifier's predict_proba computes it: float64 (n, K)."""
        import warnings

        import numpy as np

        X = self._check_input(X)
        if X.shape[0] == 0:
            return np.zeros((0, len(self.classes)), dtype=np.float64)

        def run(A):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est, A = self._runtime(A)
                return np.asarray(est.predict_proba(A), dtype=np.float64)
        return self._guard(run, X)

    def class_probabilities(self, X):
        if self.reads_library_probability:
            return self.library_probabilities(X)
        return super().class_probabilities(X)

    def prob_reader(self):
        """A binary classifier declared by its decision_function reads its predict_proba's class 1
        where that is the logistic of the score (``reads_library_probability``); otherwise the
        base reader, which refuses where it is not (``prob_problem``)."""
        if self.reads_library_probability and self.readout.task == "binary":
            return (lambda X: self.library_probabilities(X)[:, 1]), False
        return super().prob_reader()

    def _as_frame(self, X):
        import numpy as np

        try:
            import pandas as pd
        except ImportError as exc:
            raise ModelLoadError(f"evaluating the pipeline in {self.path} needs pandas, which is not installed",
                                 self.path) from exc
        if self._frame is None:
            raise ModelLoadError(f"the pipeline in {self.path} is evaluated on a data frame, and no encoding "
                                 f"says which feature is which column", self.path)
        n = X.shape[0]
        cols = {name: np.full(n, np.nan) for name in self.folded.inputs}
        for name, offset, cats in self._frame:
            v = X[:, offset]
            cols[name] = v if cats is None else cats[v.astype(np.int64)]
        return pd.DataFrame(cols, columns=list(self.folded.inputs))

    def one_order(self) -> None:
        """AmbiguousRuntime where the model's trees add in the order its threads finish (forest_threads)."""
        if getattr(self, "order_problem", None) is not None:
            from .base import AmbiguousRuntime

            raise AmbiguousRuntime(type(self.raw).__name__, "n_jobs", f"{self.path.name}: {self.order_problem}")

    def _guard(self, fn, X):
        self.one_order()
        return super()._guard(fn, X)

    def tree_ensemble(self):
        from fairspec.models.trees import SKLEARN_TREES, from_sklearn

        self.one_order()

        from .pipeline_boosters import BOOSTER_CLASSIFIERS, booster_trees

        final = type(self.folded.final).__name__ if self.folded is not None else None
        if self.unfolded and final in SKLEARN_TREES + BOOSTER_CLASSIFIERS:
            from .base import UnsupportedModel

            raise UnsupportedModel("Pipeline", "preprocessing",
                                   f"its preprocessing cannot be folded into an encoding "
                                   f"({'; '.join(self.folded.unfoldable)}), so the solvers cannot read its trees")
        if final in BOOSTER_CLASSIFIERS and self.folded.keep is None:
            # a folded pipeline's XGBClassifier / LGBMClassifier: its booster's trees on the encoded columns
            if getattr(self, "_trees", None) is None:
                self._trees = booster_trees(self.raw, self.method, self.index)
            return self._trees
        if type(self.raw).__name__ not in SKLEARN_TREES:
            return None
        task = getattr(self.readout, "task", "binary")
        if task != "binary":
            # one ensemble is one binary score: a multiclass model's classes and probabilities are
            # decided on the library's runtime in cells of every class's trees (kinds/tree_outputs.py)
            from .base import UnsupportedModel

            raise UnsupportedModel(type(self.raw).__name__, "classes_",
                                   f"the exact tree encodings read binary classifiers, and this one has "
                                   f"{len(self.classes or ())} classes")
        if getattr(self, "_trees", None) is None:
            self._trees = from_sklearn(self.raw, self.method, self.index)
        return self._trees

    def _runtime_network(self, readout="raw"):
        from fairspec.models.network_sklearn import from_sklearn

        return from_sklearn(self.raw, readout=readout)

    def _piecewise_linear(self):
        from fairspec.models.network_sklearn import from_sklearn

        if self.unfolded:
            from .base import UnsupportedModel

            raise UnsupportedModel("Pipeline", "preprocessing",
                                   f"its preprocessing cannot be folded into an encoding "
                                   f"({'; '.join(self.folded.unfoldable)}), so the solvers cannot read it")

        return from_sklearn(self.raw, readout=self.readout)

    def output_description(self) -> str:
        col = f"[:, {self.index}]" if self.index is not None else ""
        return f"{self.method}{col}"

    def _score(self, X):
        import warnings

        import numpy as np

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")            # e.g. "X does not have valid feature names"
            est, X = self._runtime(X)
            y = np.asarray(getattr(est, self.method)(X))
        return self._read(y, self._what)

    def _runtime(self, X):
        """The estimator the runtime calls and its input: the pipeline's own estimator on the columns
        it reads (a one-hot block with a dropped category: ``self.raw`` is widened to the whole
        block, sklearn_widen) in the layout the pipeline hands them over (row- or column-major, or CSR:
        pipeline_layout), or on the data frame of a pipeline evaluated whole."""
        from .pipeline_layout import laid_out

        if self.unfolded:
            return self.raw, self._as_frame(X)
        if self.folded is None:
            return self.raw, X
        import numpy as np

        if self.folded.keep is not None:
            if self.folded.merged is not None:      # infrequent categories grouped: a sum of 0s and one 1 at most
                X = np.column_stack(
                    [X[:, m[0]] if len(m) == 1 else X[:, list(m)].sum(axis=1) for m in self.folded.merged])
            else:
                X = X[:, list(self.folded.keep)]
            if self.folded.scale is not None:       # a weighted one-hot block: 0 / w, as the pipeline hands it over
                X = X * np.asarray(self.folded.scale, dtype=np.float64)
        # in the layout the ColumnTransformer hands over (BLAS sums by layout; pipeline_layout)
        return (self.folded.runtime if self.folded.keep is not None else self.raw), laid_out(X, self._layout())

    def own_decision(self, X):
        """decision_function of the estimator the runtime calls, on its own input (``_runtime``)."""
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est, X = self._runtime(X)
            return est.decision_function(X)

    def _layout(self) -> str:
        if getattr(self, "_laid", None) is None:
            from .pipeline_layout import probe

            self._laid = probe(self.pipeline, self.folded)
        return self._laid


def _named_categories(est) -> list[str]:
    """The columns a HistGradientBoosting model fitted on a data frame with pandas categoricals of text
    reads by category name (its fitted ``_preprocessor``'s OrdinalEncoder maps the names to codes; a
    number there is no name, and predict fails); [] for any other estimator."""
    pre, cat = getattr(est, "_preprocessor", None), getattr(est, "is_categorical_", None)
    if pre is None or cat is None:
        return []
    try:
        import numpy as np

        enc = pre.named_transformers_["encoder"]
        names = getattr(est, "feature_names_in_", None)
        cols = np.flatnonzero(np.asarray(cat, dtype=bool))
        return [str(names[i]) if names is not None else f"column {i}"
                for i, cats in zip(cols, enc.categories_) if not np.issubdtype(np.asarray(cats).dtype, np.number)]
    except Exception:  # noqa: BLE001 - an estimator of another layout: evaluated as it is
        return []


def _is_regressor(est) -> bool:
    try:
        from sklearn.base import is_regressor

        return bool(is_regressor(est))
    except Exception:  # noqa: BLE001 - an estimator scikit-learn cannot tag
        return getattr(est, "_estimator_type", None) == "regressor"


def _labels(classes):
    """scikit-learn classes_ as plain Python values (numpy scalars made int/float/str/bool)."""
    if classes is None:
        return None
    return tuple(c.item() if hasattr(c, "item") else c for c in classes)


def _has(est, name: str) -> bool:
    try:
        return callable(getattr(est, name, None))
    except Exception:  # noqa: BLE001 - available_if raises AttributeError; be safe with others
        return False


def load_sklearn(path: pathlib.Path, *, output=None, index=None, score_kind=None, trust_pickle=False) -> SklearnModel:
    return SklearnModel(path, output=output, index=index, score_kind=score_kind, trust_pickle=trust_pickle)
