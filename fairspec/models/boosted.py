"""XGBoost (JSON / UBJSON model files) and LightGBM (text model files): binary and multiclass
classifiers and regressions.

Both libraries are optional extras (``pip install 'specfair[xgboost]'`` /
``'specfair[lightgbm]'``), imported only here, when such a model is loaded. The model's task
comes from its objective (:func:`task_of`). For a binary classifier the declared output is the
probability of class 1 (``predict``; ``index = 0`` for class 0) or the raw margin
(``output = "margin"`` / ``"logit"``). A multiclass model's output is every class's probability
as the library computes it (``multi:softprob``, LightGBM ``multiclass``: float32 for XGBoost) or
every class's margin (``output = "margin"``, and XGBoost's ``multi:softmax``, whose ``predict``
returns the class: its argmax of the margins); a regression's is its ``predict``. Evaluation and
the replay of witnesses go through the library's own ``predict``.
"""

from __future__ import annotations

import pathlib

from .base import LoadedModel, ModelLoadError, check_score_kind, require_file, short_error

_MARGIN = ("margin", "logit", "raw", "raw_score", "decision_function")
_PROB = ("prob", "probability", "predict", "predict_proba", "proba")
_VALUE = ("value", "predict")

# objectives by task (issue 25); any other (ranking, survival, ...) is refused
_XGB_REGRESSION = ("reg:squarederror", "reg:squaredlogerror", "reg:pseudohubererror", "reg:absoluteerror",
                   "reg:quantileerror", "reg:gamma", "reg:tweedie", "count:poisson", "reg:linear")
_LGB_BINARY = ("binary", "cross_entropy", "xentropy")
# LightGBM objectives near the binary ones whose predict is another transform of the raw score: refused
# with what that transform is, not read as a class probability (cross_entropy's is the plain sigmoid)
_LGB_OTHER_TRANSFORM = {
    "cross_entropy_lambda": "(alias xentlambda), whose predict is log(1 + exp(raw score)), not a class "
                            "probability nor the sigmoid of the raw score; fairspec reads objective binary "
                            "and cross_entropy (xentropy) as binary classifiers",
}
_LGB_MULTICLASS = ("multiclass", "multiclassova", "softmax", "multiclass_ova", "ova", "ovr")
# binary XGBoost objectives whose predict (XGBClassifier.predict_proba[:, 1]) is no probability:
# ``prob`` of such a model is lint error FS415 whatever its declared output (sema.outputs), neither
# the library's number nor the logistic of the margin silently (issue: one meaning of prob)
XGB_NO_PROBABILITY = {
    "binary:hinge": "its predict_proba is its 0 / 1 decision",
    "binary:logitraw": "its predict_proba is its raw margin",
    # the booster's predict is the class; XGBClassifier.predict_proba is scipy's softmax of its float32 margins,
    # computed outside the booster (the tree engines read no probability of it either)
    "multi:softmax": "its predict is the class, the argmax of its margins",
}
# binary XGBoost objectives whose decision depends on which output the declaration reads (nothing
# ambiguous is resolved silently): binary:logitraw's predict is its raw margin, which
# XGBClassifier.predict calls class 1 above 0.5 and the margin reading (output = "margin") above 0.
# ``label`` / ``class`` of such a model, and the group metrics and PBA that read its decisions, are
# lint error FS426 (sema.outputs) until the declaration says which: ``output = "predict"`` (or a
# probability output, or ``score = prob``: > 0.5) or ``output = "margin"`` (or ``score = logit``: > 0).
# binary:hinge is not one: its predict is 1.0 exactly where its margin is > 0, so both readings agree.
XGB_DECISION_UNSTATED = {
    "binary:logitraw": "its predict is its raw margin, class 1 above 0.5 for XGBClassifier.predict and above 0 "
                       "read as a margin, and the declaration says neither",
}


def lightgbm_two_logits(objective: str | None) -> str | None:
    """Why ``logit(m(x))`` of a binary LightGBM model read by its probability names two numbers, as
    the clause after "but" of an FS415 message, or None: objective ``binary sigmoid:k`` with k != 1,
    whose probability is ``1 / (1 + exp(-k r))`` of its raw score r (the log-odds k r); as
    GradientBoosting's exponential loss (fairspec.models.peek_sklearn.two_logits). Declared
    ``output = "margin"``, logit(m(x)) is r."""
    parts = str(objective or "").split()
    if parts[:1] != ["binary"]:
        return None
    k = next((p.split(":", 1)[1] for p in parts[1:] if p.startswith("sigmoid:")), "1")
    try:
        if float(k) == 1.0:
            return None
    except ValueError:
        return None
    return (f"a LightGBM binary model with sigmoid:{k} has two: its raw score r (predict(raw_score = True)) "
            f"and the log-odds {k} r of its probability (1 / (1 + exp(-{k} r)))")


_LGB_REGRESSION = ("regression", "regression_l2", "l2", "mean_squared_error", "mse", "l2_root", "root_mean_squared_error",
                   "rmse", "regression_l1", "l1", "mean_absolute_error", "mae", "huber", "fair", "poisson",
                   "quantile", "mape", "mean_absolute_percentage_error", "gamma", "tweedie")


def task_of(fmt: str, objective: str, num_class: int | None, path) -> tuple[str, int | None]:
    """("binary" | "multiclass" | "regression", K classes or None) of a booster's objective;
    a ModelLoadError for an objective fairspec does not read."""
    name = (objective or "").split()[0] if objective else ""
    if fmt == "XGBoost":
        if name.startswith("binary:") or name == "reg:logistic":
            return "binary", 2
        if name in ("multi:softprob", "multi:softmax"):
            if not num_class or num_class < 2:
                raise ModelLoadError(f"{path} holds an XGBoost {name} model without a number of classes", path)
            return "multiclass", num_class
        if name in _XGB_REGRESSION:
            return "regression", None
    else:
        if name in _LGB_BINARY:
            return "binary", 2
        if name in _LGB_MULTICLASS:
            if not num_class or num_class < 2:
                raise ModelLoadError(f"{path} holds a LightGBM {name} model without a number of classes", path)
            return "multiclass", num_class
        if name in _LGB_REGRESSION:
            return "regression", None
        if name in _LGB_OTHER_TRANSFORM:
            raise ModelLoadError(f"{path} holds a LightGBM model with objective {name!r} "
                                 f"{_LGB_OTHER_TRANSFORM[name]}", path)
    raise ModelLoadError(f"{path} holds a {fmt} model with objective {objective!r}; fairspec reads binary and "
                         "multiclass classifiers and regressions", path)


def no_probability(fmt: str, objective: str | None, name: str = "the model") -> str | None:
    """Why a booster of this objective has no class probability (``XGB_NO_PROBABILITY``), as the
    clause after "but" of an FS415 message; None when its predict is a probability."""
    obj = (objective or "").split()[0] if objective else ""
    why = XGB_NO_PROBABILITY.get(obj) if str(fmt).lower() in ("xgboost", "xgb") else None
    return None if why is None else f"{name} is an XGBoost {obj} model: {why}, not a probability"


def unstated_decision(fmt: str, objective: str | None, output=None, score: str | None = None,
                      name: str = "the model") -> str | None:
    """Why a binary booster's decision is ambiguous (``XGB_DECISION_UNSTATED``: its declaration reads
    no output and no score kind), as the clause after "but" of an FS426 message; None when the
    objective has one decision rule or the declaration states it."""
    obj = (objective or "").split()[0] if objective else ""
    why = XGB_DECISION_UNSTATED.get(obj) if str(fmt).lower() in ("xgboost", "xgb") else None
    if why is None or output is not None or score is not None:
        return None
    return f"{name} is an XGBoost {obj} model: {why}"


def score_contradiction(fmt: str, objective: str | None, output=None, score: str | None = None,
                        name: str = "the model") -> tuple[str, str] | None:
    """(message, hint) when a binary booster's declared score kind contradicts what its declared output
    holds, so that the decision would silently compare a probability with 0 (every input class 1)
    or a margin with 1/2: ``score = logit`` on a predict that is a probability, ``score = prob`` on
    the margin (``output = "margin"``). binary:logitraw's predict is its margin, so either score
    kind states one of its two rules (FS426); binary:hinge's predict (0 / 1) is > 0 where it is > 1/2,
    but its margin is not a probability. None when they agree or the declaration gives no score."""
    obj = (objective or "").split()[0] if objective else ""
    kind = None if score is None else str(score).strip().lower()
    kind = "prob" if kind in ("prob", "probability", "proba", "probs") else \
        "logit" if kind in ("logit", "logits", "score", "margin") else None
    if kind is None or obj == "binary:logitraw":
        return None
    fmt = str(fmt).lower()
    margin = output is not None and str(output).strip().lower() in _MARGIN
    what = "an XGBoost" if fmt in ("xgboost", "xgb") else "a LightGBM"
    if margin and kind == "prob":
        return (f"{name} declares output = \"{output}\", its raw margin, but score = {score}, which reads it as a "
                f"probability (class 1 above 0.5)",
                "drop score = prob (output = \"margin\" is read as a margin, class 1 above 0), or drop the output "
                "to read the library's probability")
    if not margin and kind == "logit" and obj not in XGB_NO_PROBABILITY:
        return (f"{name} is {what} {obj} model whose predict is a probability, but score = {score} reads it as "
                f"a logit (class 1 above 0: every input)",
                "declare output = \"margin\" to read its raw margin as the logit, or drop score = logit")
    return None


def _output(output, index, path, fmt, task: str = "binary", k: int | None = 2) -> tuple[bool, int | None]:
    out = None if output is None else str(output).strip().lower()
    if task == "regression":
        if out is not None and out not in _VALUE:
            raise ModelLoadError(f"the output {output!r} chosen for {fmt} model {path} is not 'value': a regression's "
                                 "output is its predict", path)
        if index not in (None, 0) or isinstance(index, bool):
            raise ModelLoadError(f"the index {index!r} chosen for {fmt} model {path} does not fit a regression (one "
                                 "output)", path)
        return False, None
    if out is not None and out not in _MARGIN + _PROB:
        raise ModelLoadError(f"the output {output!r} chosen for {fmt} model {path} is not 'prob' or 'margin'", path)
    if task == "multiclass":
        if index is not None and (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < k):
            raise ModelLoadError(f"the index {index!r} chosen for {fmt} model {path} is not a class of its {k} "
                                 f"(0 .. {k - 1})", path)
        return out in _MARGIN, index
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index not in (0, 1)):
        raise ModelLoadError(f"the index {index!r} chosen for {fmt} model {path} is not 0 or 1 (a binary classifier)",
                             path)
    return out in _MARGIN, 1 if index is None else index


def _need(module: str, extra: str, path: pathlib.Path):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelLoadError(f"loading {path} needs {module}, which is not installed "
                             f"(pip install 'specfair[{extra}]')", path) from exc


class _Boosted(LoadedModel):
    """Shared by both. A binary classifier: class-1 probability or margin, flipped for
    ``index = 0``. Multiclass and regression: the library's whole output, read by the readout."""

    task_kind = "binary"
    n_classes = 2

    def _setup(self, path, fmt, width, margin: bool, index, score_kind, raw, task: str = "binary", k=2):
        self.task_kind, self.n_classes = task, k
        self.margin = margin
        self.index = index
        if task == "binary":
            kind = check_score_kind(score_kind, path) or ("logit" if margin else "prob")
            clash = score_contradiction(fmt, getattr(self, "objective", None), "margin" if margin else None,
                                        score_kind, f"model {path}")
            if clash is not None:
                raise ModelLoadError(f"{clash[0]}; {clash[1]}", path)
            self._init_common(path, fmt, width, kind, raw)
            return
        from .base import readout_for

        given = check_score_kind(score_kind, path)
        kind = "value" if task == "regression" else ("logit" if margin else "prob")
        if given is not None and given != kind:
            raise ModelLoadError(f"{path} holds a {task} {fmt} model whose declared output is a {kind}, not a "
                                 f"{given}", path)
        self._what = f"{self.output_description()} of {fmt} model {path}"
        if task == "multiclass" and index is not None and kind == "prob":    # not readout's hint (score = logit)
            raise ModelLoadError(f"{self._what}: 'probability of class {index} > 0.5' is not the model's decision "
                                 f"(argmax) for {k} classes", path, code="FS413",
                                 hint=f"read its margins (output = \"margin\", index = {index}): class {index} is "
                                      f"then 'margin {index} is the largest', or compare class(m(x)) without index")
        readout = readout_for(path, None if task == "regression" else k, index, kind, self._what, task=task)
        self.index = readout.index
        self._init_common(path, fmt, width, kind, raw, readout)

    def output_description(self) -> str:
        if self.task_kind == "regression":
            return "predict (the value)"
        what = "margin" if self.margin else "probability"
        if self.task_kind == "multiclass":
            return f"{what} of every class" if self.index is None else f"{what} of class {self.index} against the rest"
        return f"{what} of class {self.index}"

    def _full(self, X):
        """The library's whole output: (n, K) for a multiclass model, (n,) otherwise."""
        import numpy as np

        y = np.asarray(self._predict(X, self.margin), dtype=np.float64)
        if self.task_kind == "multiclass":
            y = y.reshape(len(X), -1)
        return y

    def _score(self, X):
        if self.task_kind != "binary":
            return self._read(self._full(X), self._what)
        y = self._full(X).reshape(-1)
        if self.index == 0:
            y = -y if self.margin else 1.0 - y
        return y

    def decide(self, X):
        """The binary decision. ``index = 0`` (class 0 positive): every input the declared rule does not
        call class 1 -- as the library's predict, which returns class 0 at a probability of exactly
        1/2 (a margin of 0, or XGBoost's float32 logistic of a margin within ~3e-8 of 0) -- not
        ``1 - p > 0.5`` / ``-margin > 0``, which called neither class positive there (and a
        binary:hinge model's margin of 0 class 1 or not as the declared output chose)."""
        if self.task_kind != "binary" or self.index != 0:
            return super().decide(X)
        import numpy as np

        X = self._check_input(X)
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        y = self._finish(self._guard(lambda A: self._full(A).reshape(-1), X), X.shape[0])
        return (~(y > self.predict_cut)).astype(np.int64)

    def library_probability(self, X):
        """The declared class's probability as the library computes it (its predict without the
        margin: XGBoost's float32 logistic, LightGBM's logistic of its sigmoid factor times the raw
        score), whatever the declared output; flipped for ``index = 0``. Binary models only."""
        import numpy as np

        X = self._check_input(X)
        y = np.asarray(self._guard(lambda A: self._predict(A, False), X), dtype=np.float64).reshape(-1)
        return self._finish(1.0 - y if self.index == 0 else y, X.shape[0])

    def prob_reader(self):
        """A binary booster declared by its margin: ``prob`` is its library's probability (the
        logistic of the margin is not it: LightGBM's sigmoid factor, XGBoost's float32); the objectives
        without one (``XGB_NO_PROBABILITY``) are FS415 at lint."""
        if self.task_kind == "binary" and self.margin and no_probability(self.format, self.objective) is None:
            return self.library_probability, False
        return super().prob_reader()

    def _outputs(self, X):
        """The library's own output: class 1's probability (or margin) as one column, never flipped
        by ``index`` (fairspec.models.readout reads classes from it); every class's probability
        (or margin) of a multiclass model; a regression's value."""
        return self._full(X)

    def _predict(self, X, margin: bool):  # pragma: no cover - abstract
        raise NotImplementedError

    _convert = ""                       # the converter in fairspec.models.trees for this library
    # {input: its declared whole-number values} (fairspec.models.base.category_domains), set from the
    # spec's encoding when the model is loaded for it: the tree converters rewrite splits by category
    # over these; None (no spec) keeps them refused
    category_domains = None

    def bind_encoding(self, enc, fs) -> None:
        from .base import category_domains

        self.category_domains = category_domains(enc, fs)

    @property
    def predict_cut(self) -> float:
        """What the library's class 1 compares the read output with (a binary model): 0 on the margin
        (``output = "margin"``), 1/2 on a probability; binary:logitraw's predict is its margin, and the
        declaration states which of its two rules (XGB_DECISION_UNSTATED): 1/2 as XGBClassifier.predict
        (``output = "predict"``, ``score = prob``), 0 as a margin (``score = logit``), as its threshold."""
        if self.margin:
            return 0.0
        return float(self.threshold) if self._predict_is_margin() else 0.5

    @property
    def decision_margin(self) -> float:
        """The margin above which the model is class 1: :attr:`predict_cut` where the read output is the
        margin (binary:logitraw's predict too), else 0 (a probability above 1/2 is a margin above 0)."""
        return self.predict_cut if self._predict_is_margin() else 0.0

    @property
    def label_cut(self) -> float:
        """:attr:`decision_margin` on the margin as the declared class reads it (negated for ``index = 0``,
        whose margin is the negated raw margin): the cut every tree engine reads (``TreeEnsemble.cut``,
        set from it by :meth:`tree_ensemble`) and ``label``'s maximize measures from
        (``kinds.tree_pairs._label_measure``). Class 1 is above it; with ``index = 0``, the declared
        class is at it or above (the library's class 0 takes the tie)."""
        m = self.decision_margin
        return -m if m and self.index == 0 else m

    def _predict_is_margin(self) -> bool:
        return self.format == "xgboost" and (getattr(self, "objective", None) or "").split()[:1] == ["binary:logitraw"]

    def tree_ensemble(self):
        if self.task_kind != "binary":
            from .base import UnsupportedModel

            raise UnsupportedModel(self.task_kind, "objective", f"the exact tree encodings read binary classifiers; "
                                   f"a {self.task_kind} model is decided on the library's runtime (by enumeration "
                                   f"of the cells of its split tests) where the domain is small")
        if getattr(self, "_trees", None) is None:
            from fairspec.models import trees

            try:
                ens = getattr(trees, self._convert)(self.raw, index=self.index, domains=self.category_domains)
            except trees.CategoricalSplit as e:     # named with the file, as lint names it (FS506)
                from .base import UnsupportedModel, categorical_split_sentence

                raise UnsupportedModel(e.op_type, e.node_name, categorical_split_sentence(
                    self.path.name, e.tree, e.index, e.name)) from None
            if self.decision_margin:
                # the encodings' decision threshold (TreeEnsemble.threshold); index 0's S is the negated margin
                from dataclasses import replace

                ens = replace(ens, cut=self.label_cut)
            self._trees = ens
        return self._trees


def xgb_matrix(xgb, booster, X):
    """:func:`fairspec.models.trees.xgb_matrix` (defined there, so that the tree converter does not
    import this module: no import cycle)."""
    from fairspec.models.trees import xgb_matrix as matrix

    return matrix(xgb, booster, X)


class XGBoostModel(_Boosted):
    """``rounds``: "best" (the rounds XGBClassifier.predict uses: 0 .. the file's best_iteration),
    "all" (every round: Booster.predict) or None, which a file recording a best iteration that leaves
    rounds out refuses (:func:`_rounds`). ``rounds_used`` is (rounds evaluated, rounds in the file)."""

    def __init__(self, path: pathlib.Path, *, output=None, index=None, score_kind=None, rounds=None):
        require_file(path)
        xgb = _need("xgboost", "xgboost", path)
        from .treefile import check_xgboost

        check_xgboost(path)  # the library crashes on a malformed tree: checked here first
        try:
            booster = xgb.Booster()
            booster.load_model(str(path))
        except Exception as exc:  # noqa: BLE001
            raise ModelLoadError(f"{path} is not an XGBoost model file xgboost can read: {short_error(exc)}",
                                 path) from exc
        import json

        try:
            learner = json.loads(booster.save_config())["learner"]
            obj = learner["objective"]["name"]
        except Exception:  # noqa: BLE001
            learner, obj = {}, ""
        try:
            ncls = int(learner.get("learner_model_param", {}).get("num_class", 0) or 0)
            targets = int(learner.get("learner_model_param", {}).get("num_target", 1) or 1)
        except (TypeError, ValueError):
            ncls, targets = 0, 1
        if targets > 1:     # read as one output, it crashed the tree encodings (s35 h3)
            raise ModelLoadError(f"{path} holds a multi-target XGBoost model ({targets} outputs per input: num_target "
                                 f"{targets}); fairspec reads a model of one output (a multiclass model's classes "
                                 "included): train one model per target", path)
        task, k = task_of("XGBoost", obj, ncls, path)
        margin, idx = _output(output, index, path, "XGBoost", task, k)
        if obj == "multi:softmax":
            margin = True               # its predict is the class (the argmax of the margins): read the margins
            self.prob_problem = no_probability("xgboost", obj, f"model {path}")     # prob(...): FS415 at lint
            self.prob_hint = ("compare classes (class(m(x))) or a class's margin (logit(m(x), c)); train with "
                              "objective multi:softprob to read its probabilities")
        self.objective = obj
        self._xgb = xgb
        booster = self._rounds(booster, learner, path, rounds)
        self.input_names = tuple(booster.feature_names or ()) or None
        self._setup(path, "xgboost", int(booster.num_features()) or None, margin, idx, score_kind, booster, task, k)

    def _rounds(self, booster, learner, path, rounds):
        """The booster whose every round is the model (module docstring of peek_trees: early
        stopping). Every path (the tree encodings, the cells, certify's boxes, the replay of
        witnesses) reads ``self.raw``, so the choice is made once, here."""
        from .treefile import ROUNDS, ROUNDS_HINT, rounds_ambiguous, rounds_message

        if rounds is not None and rounds not in ROUNDS:
            raise ModelLoadError(f"the rounds {rounds!r} chosen for XGBoost model {path} are not 'best' or 'all'", path)
        total = int(booster.num_boosted_rounds())
        self.rounds_used = (total, total)
        best = booster.attr("best_iteration")
        gb = str(learner.get("gradient_booster", {}).get("name", "gbtree")) if isinstance(learner, dict) else ""
        try:
            best = None if best is None or gb == "gblinear" else int(best)
        except ValueError:
            raise ModelLoadError(f"{path} records a best_iteration {best!r} that is not a whole number", path) from None
        if not rounds_ambiguous(best, total):
            return booster
        if rounds is None:
            raise ModelLoadError(f"{rounds_message(str(path), best, total)}; {ROUNDS_HINT}", path)
        if rounds == "all":
            return booster
        try:
            sliced = booster[: best + 1]        # as XGBClassifier.predict: iteration_range (0, best_iteration + 1)
        except Exception as exc:  # noqa: BLE001
            raise ModelLoadError(f"{path}: xgboost could not keep rounds 0 .. {best} of its {total}: "
                                 f"{short_error(exc)}", path) from exc
        self.rounds_used = (int(sliced.num_boosted_rounds()), total)
        return sliced

    def _predict(self, X, margin):
        out = self.raw.predict(xgb_matrix(self._xgb, self.raw, X), output_margin=margin)
        if self._dart:
            _dart_paths_agree(self, X, margin, out)
        return out

    _convert = "from_xgboost"

    @property
    def _dart(self) -> bool:
        """Is the (possibly sliced, :meth:`_rounds`) booster a dart booster? Read once, from its config."""
        dart = getattr(self, "_dart_cache", None)
        if dart is None:
            import json

            try:
                name = json.loads(self.raw.save_config())["learner"]["gradient_booster"]["name"]
            except Exception:  # noqa: BLE001 - unreadable config: the load gave its sentence
                name = ""
            dart = self._dart_cache = name == "dart"
        return dart


def _dart_paths_agree(model, X, margin: bool, out) -> None:
    """A dart booster's two predict paths round differently (measured with xgboost 3.2: 1,161 of 20,000
    random points differ in the last bits of the probability; a gbtree booster's, none):
    ``Booster.predict`` on a DMatrix (this loader's) and ``inplace_predict`` (XGBClassifier.predict /
    predict_proba's), so at an exact tie a verdict on one is not a verdict on the other (an equality of
    probabilities proved on one was broken on the other). Every output fairspec reads from such a model
    is its DMatrix output checked equal, bit for bit, to its in-place output on the same rows: where they
    differ it is :class:`~fairspec.models.base.AmbiguousRuntime` (the property is ``unknown``), never one path's
    verdict."""
    import numpy as np

    try:
        other = model.raw.inplace_predict(np.ascontiguousarray(X, dtype=np.float64),
                                          predict_type="margin" if margin else "value")
    except Exception as exc:  # noqa: BLE001 - the in-place path refuses the data (categories): no check possible
        raise ModelLoadError(f"{model.path} is an XGBoost dart model, whose in-place predict (XGBClassifier's) "
                             f"cannot be compared with its Booster.predict here: {short_error(exc)}",
                             model.path) from exc
    a = np.asarray(out).reshape(-1)
    b = np.asarray(other).reshape(-1)
    if a.shape != b.shape or not np.array_equal(a, b):
        from .base import AmbiguousRuntime

        k = int(np.sum(a != b)) if a.shape == b.shape else len(X)
        raise AmbiguousRuntime("XGBoost", "dart", f"{model.path.name} is a dart booster whose two predict paths "
                               f"(Booster.predict on a DMatrix; inplace_predict, which XGBClassifier.predict_proba "
                               f"uses) round differently on {k} of the {len(X)} inputs evaluated, so its output "
                               "there is not one number and no verdict on one path is one on the model; retrain "
                               "it with booster='gbtree' (one predict path) to check it")


class LightGBMModel(_Boosted):
    def __init__(self, path: pathlib.Path, *, output=None, index=None, score_kind=None):
        require_file(path)
        lgb = _need("lightgbm", "lightgbm", path)
        from .treefile import check_lightgbm

        check_lightgbm(path)  # the library crashes on a malformed tree: checked here first
        try:
            booster = lgb.Booster(model_file=str(path))
        except Exception as exc:  # noqa: BLE001
            raise ModelLoadError(f"{path} is not a LightGBM model file lightgbm can read: {short_error(exc)}",
                                 path) from exc
        obj = str(booster.params.get("objective", "") or "")
        if not obj:
            try:
                obj = str(booster.dump_model(num_iteration=0).get("objective", ""))
            except Exception:  # noqa: BLE001
                obj = ""
        ncls = 0
        if obj.split()[:1] and obj.split()[0] in _LGB_MULTICLASS:
            for part in obj.split()[1:]:
                if part.startswith("num_class:"):
                    try:
                        ncls = int(part.split(":", 1)[1])
                    except ValueError:
                        ncls = 0
            if not ncls:
                try:
                    ncls = int(booster.dump_model(num_iteration=0).get("num_class", 0) or 0)
                except Exception:  # noqa: BLE001
                    ncls = 0
        task, k = task_of("LightGBM", obj, ncls, path)
        margin, idx = _output(output, index, path, "LightGBM", task, k)
        self.objective = obj
        names = tuple(booster.feature_name() or ())
        self.input_names = names if names and not all(n.startswith("Column_") for n in names) else None
        self._setup(path, "lightgbm", int(booster.num_feature()) or None, margin, idx, score_kind, booster, task, k)

    def _predict(self, X, margin):
        return self.raw.predict(X, raw_score=margin)

    _convert = "from_lightgbm"


def load_xgboost(path, **kw) -> XGBoostModel:
    """``rounds`` (XGBoostModel) is passed only when given: LightGBM takes no such option."""
    return XGBoostModel(pathlib.Path(path), **kw)


def load_lightgbm(path, **kw) -> LightGBMModel:
    return LightGBMModel(pathlib.Path(path), **kw)
