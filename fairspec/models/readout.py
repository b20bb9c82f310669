"""The one place that decides which output column a model's decision reads, and by which rule.

A model file's chosen output (``output = ...``) is a vector ``y`` per row: one column, or
one column per class. The spec's ``index = i`` names the positive class's column and
``score = logit | prob`` says what the columns are. From these, :func:`resolve_readout`
fixes a :class:`Readout`; every backend reads the model through it -- the loaded model's
``score``/``decide`` (data, search, k-discrimination, distribution) and the piecewise-linear
network the solvers encode (MILP, SMT, PBA; :func:`fairspec.models.network.apply_readout`):

==========================  ==============================  ======================================
output                      score                           class 1 iff
==========================  ==============================  ======================================
one column, logit           ``y``                           ``y > 0``
one column, prob            ``y``                           ``y > 1/2``
K >= 2 columns, logit       ``y[i] - max_{j != i} y[j]``    column i is the largest (argmax); for
                                                            two columns the score is the log-odds
                                                            ``y[i] - y[1-i]`` a softmax would give
two columns, prob           ``y[i]``                        column i is the largest (argmax: column 0
                                                            at an exact tie, ``[1/2, 1/2]`` is class 0)
==========================  ==============================  ======================================

An output with two columns and no ``index`` is ambiguous: it is an error (lint FS413), never
silently column 0.

**Output kinds** (issue 25). A model is ``binary``, ``multiclass`` (K >= 3 classes) or
``regression`` (:attr:`Readout.task`), known from the file where the file says it
(scikit-learn ``classes_`` / a regressor, tree libraries' objectives, an ONNX/torch output of
K >= 3 columns) and from the spec where it does not: a one-column ONNX/torch output is a binary
logit or probability unless the model declaration says ``score = value`` (a regression). A
multiclass model without ``index`` has no binary score (:meth:`Readout.select` refuses: lint
FS414 says so first); with ``index = i`` its binary score is "class i against the rest" as
above. What the spec's functions read from the full output ``Y`` (shape (n, K), or (n, 1)):

* ``class(m(x))`` -- :meth:`Readout.predicted_class`: the argmax column, the FIRST maximal
  column on a tie (numpy/onnx ``ArgMax``/``torch.argmax``/scikit-learn ``predict`` all break ties
  so); for one column, 1 iff the binary score is above the threshold (the binary decision).
* ``prob(m(x), c)`` -- :meth:`Readout.class_probability`: the probability column c when the
  output holds probabilities, the softmax of the logits when it holds logits (for one column,
  ``[1 - p, p]`` with ``p`` the probability or the sigmoid of the logit).
* ``logit(m(x), c)`` -- :meth:`Readout.class_logit`: logit column c (an output of logits only).
* ``value(m(x))`` -- :meth:`Readout.value`: a regression's one column.

Nothing here imports numpy at module import time.
"""

from __future__ import annotations

from dataclasses import dataclass

from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

SCORE_KINDS = ("logit", "prob", "value")
TASKS = ("binary", "multiclass", "regression")

INDEX_HINT = "add index = 1 to the model declaration for the positive class (the second column), or index = 0 for the first"


class ReadoutError(Exception):
    """The declared output/index/score do not fix one binary decision; ``hint`` says what to write."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


def positive_class_problem(classes, index) -> ReadoutError | None:
    """A binary classifier's positive class must be evident or named: classes {0, 1}, {-1, 1} or
    {False, True} make the larger one positive (scikit-learn's ``classes_[1]``, which ``predict``
    and ``decision_function > 0`` follow); for other labels ("approve" / "deny" sorts "deny" second,
    German credit's 1 = good / 2 = bad) sorted order says nothing, so without ``index`` it is an
    error naming both choices. None when evident, named, or not a two-label classifier."""
    if index is not None or classes is None or len(classes) != 2:
        return None
    try:
        if set(classes) in ({0, 1}, {-1, 1}) and all(not isinstance(c, str) for c in classes):
            return None                                # bool is an int: {False, True} == {0, 1}
    except TypeError:
        pass
    a, b = (repr(c) for c in classes)
    return ReadoutError(f"the classes are {a} and {b}, and the declaration does not say which is the positive "
                        f"class (the decision that properties and group metrics count as positive)",
                        f"add index = 0 to the model declaration for {a}, or index = 1 for {b}")


@dataclass(frozen=True)
class Readout:
    """How a model's output becomes one score and one decision.

    score:   "logit" | "prob" | "value": what the columns are ("value": a regression's output).
    index:   the positive class's column of a multi-column output; None for a one-column output
             and for a multiclass model read only through class/prob/logit(m(x), c).
    columns: the output's column count when known (None: one column, or not known before a run).
    task:    "binary" | "multiclass" | "regression" (see the module docstring).
    classes: the class labels in column order when the file records them (scikit-learn
             ``classes_``, ONNX class labels, ...), else None: classes are then named by column.
    """

    score: str
    index: int | None = None
    columns: int | None = None
    task: str = "binary"
    classes: tuple | None = None

    @property
    def threshold(self) -> float | None:
        """Class 1 iff the score is above this: 0 for logits (and logit margins), 1/2 for
        probabilities; None for a regression (no decision without a threshold the spec gives)."""
        if self.score == "value":
            return None
        return 0.0 if self.score == "logit" or self._prob_margin else 0.5

    @property
    def _prob_margin(self) -> bool:
        """K >= 3 columns of probabilities with ``index = i`` (a scikit-learn classifier's predict_proba, whose
        decision is its own predict): the score is ``y[i] - max_{j != i} y[j]``, against 0, as for logits."""
        return self.score == "prob" and self.index is not None and self.columns is not None and self.columns >= 3

    @property
    def has_decision(self) -> bool:
        """Does the model have one binary score and decision (:meth:`select`)? Not a regression,
        not a multiclass model without ``index``."""
        return self.task == "binary" or (self.task == "multiclass" and self.index is not None)

    @property
    def argmax_decision(self) -> bool:
        """Is the binary decision "column ``index`` is the largest" of K >= 2 columns of logits? Then it is
        the argmax's class (:meth:`predicted_class`: the first maximal column on a tie), not ``select > 0``,
        which differs exactly at a tie (column i tied first with another is class i)."""
        return ((self.score == "logit" or self._prob_margin or self._two_probabilities) and self.index is not None
                and self.columns is not None and self.columns >= 2 and self.task in ("binary", "multiclass"))

    @property
    def _two_probabilities(self) -> bool:
        """Two columns of probabilities read with ``index = i``: the decision is the argmax's class too (session 37),
        ``p_0 >= p_1`` for ``index = 0`` ([0.5, 0.5] is class 0, as ``class(m(x))`` reads it), ``p_1 > p_0`` for
        ``index = 1``; the score stays the probability ``y[i]`` (against 1/2), which ``p_i > 1/2`` read before."""
        return self.score == "prob" and self.index is not None and self.columns == 2

    @property
    def n_classes(self) -> int | None:
        """K for a classifier (2 for binary), None for a regression or when not known."""
        if self.task == "regression":
            return None
        if self.task == "binary":
            return 2 if self.columns is not None else None
        return self.columns

    def class_index(self, c) -> int:
        """The column of class ``c``. A whole number is a column (0 .. K-1); a string is a class
        label, matched against :attr:`classes` as text (so a model with integer labels 1, 2, 3
        names its first class ``"1"`` or column ``0``: never one read as the other). Raises
        ReadoutError for an unknown class (lint: FS417)."""
        k = self.n_classes
        if isinstance(c, str):
            if self.classes is None:
                raise ReadoutError(f"the model file records no class labels, so the label {c!r} names no column",
                                   f"name the class by its column{f': 0 .. {k - 1}' if k else ''}")
            for i, lab in enumerate(self.classes):
                if str(lab) == c:
                    return i
            raise ReadoutError(f"the model has no class labelled {c!r}; its classes are "
                               f"{', '.join(repr(str(x)) for x in self.classes)}",
                               "name a class by its label (a string) or by its column (a whole number)")
        if isinstance(c, bool) or not isinstance(c, int):
            raise ReadoutError(f"the class {c!r} is neither a column (a whole number) nor a label (a string)")
        if c < 0:
            raise ReadoutError(f"class {c} is negative", "classes are columns counted from 0")
        if k is not None and c >= k:
            raise ReadoutError(f"class {c} is out of range: the model has {k} classes",
                               f"classes are columns counted from 0: 0 .. {k - 1}")
        return c

    def describe(self) -> str:
        if self.task == "regression":
            return "the value" if self.index is None else f"the value in column {self.index}"
        if self.task == "multiclass" and self.index is None:
            return f"the class: the largest of {self.columns} columns (argmax; the first on a tie)"
        if self.index is None:
            return f"the {self.score} > {_spec_number(self.threshold)}"
        if self.score == "logit" or self._prob_margin:
            return f"column {self.index} is the largest (score: column {self.index} minus the largest other column)"
        return (f"the probability in column {self.index} is the largest (argmax; column 0 at an exact tie; "
                f"score: the probability in column {self.index})")

    def select(self, y, what: str = "the model's output"):
        """The score vector (n,) of an output batch y of shape (n,) or (n, K)."""
        import numpy as np

        y = np.asarray(y, dtype=np.float64)
        if self.task == "multiclass" and self.index is None:
            raise ReadoutError(f"{what} has {self.columns} columns, one per class: it has no one binary score",
                               "read it with class(m(x)) / prob(m(x), c), or add index = i for 'class i "
                               "against the rest'")
        if y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1):
            if self.index not in (None, 0):
                raise ReadoutError(f"{what} has one column, so index {self.index} is out of range",
                                   "drop index = ..., or choose another output")
            return y.reshape(-1) if y.ndim == 2 else y
        if y.ndim != 2:
            raise ReadoutError(f"{what} has {y.ndim} dimensions; fairspec reads outputs of shape [N] or [N, K]")
        k = y.shape[1]
        r = resolve_readout(k, self.index, self.score, what, task=self.task, by_predict=self._prob_margin)
        i = r.index
        if i is None:
            raise ReadoutError(f"{what} has {k} columns, one per class: it has no one binary score",
                               "read it with class(m(x)) / prob(m(x), c), or add index = i for 'class i "
                               "against the rest'")
        if r.score == "value" or r.score == "prob" and k < 3:
            return y[:, i].copy()
        others = np.delete(y, i, axis=1)
        return y[:, i] - others.max(axis=1)

    # ---- the full output: class, prob(c), logit(c), value (issue 25) --------------------------
    @staticmethod
    def _matrix(y):
        import numpy as np

        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1:
            y = y.reshape(-1, 1)
        if y.ndim != 2:
            raise ReadoutError(f"the model's output has {y.ndim} dimensions; fairspec reads outputs of shape "
                               f"[N] or [N, K]")
        return y

    def predicted_class(self, y):
        """``class(m(x))`` for an output batch y (n,) or (n, K): int64 (n,) column indices.
        K >= 2 columns: the argmax, the first maximal column on a tie (as numpy, onnx ArgMax,
        torch.argmax and scikit-learn's predict break ties). One column: 1 iff the score is above
        the threshold (> 0 for a logit, > 1/2 for a probability), the binary decision."""
        import numpy as np

        if self.task == "regression":
            raise ReadoutError("a regression model has no class", "read it with value(m(x))")
        y = self._matrix(y)
        if y.shape[1] == 1:
            return (y[:, 0] > self.threshold).astype(np.int64)
        return np.argmax(y, axis=1).astype(np.int64)

    def class_probabilities(self, y):
        """Every class's probability, float64 (n, K): the columns of a probability output, the
        softmax of a logit output (computed stably in float64); one column p (or the sigmoid of a
        logit z): [1 - p, p]."""
        import numpy as np

        if self.task == "regression":
            raise ReadoutError("a regression model has no class probabilities", "read it with value(m(x))")
        y = self._matrix(y)
        if y.shape[1] == 1:
            p = y[:, 0] if self.score == "prob" else 1.0 / (1.0 + np.exp(-y[:, 0]))
            return np.stack([1.0 - p, p], axis=1)
        if self.score == "prob":
            return y.copy()
        z = y - y.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def class_probability(self, y, c):
        """``prob(m(x), c)``: float64 (n,), c a column index or a class label."""
        p = self.class_probabilities(y)
        return p[:, self._column(c, p.shape[1])]

    def _column(self, c, k: int) -> int:
        i = self.class_index(c)
        if i >= k:
            raise ReadoutError(f"class {c!r} is out of range: the model's output has {k} classes",
                               f"classes are columns counted from 0: 0 .. {k - 1}")
        return i

    def class_logit(self, y, c):
        """``logit(m(x), c)``: logit column c (n,) of an output of logits (for one column: the
        logit for c = 1, its negation for c = 0)."""
        if self.task == "regression" or self.score != "logit":
            raise ReadoutError("logit(m(x), c) reads an output of logits",
                               "use prob(m(x), c) for an output of probabilities")
        y = self._matrix(y)
        i = self._column(c, max(2, y.shape[1]))
        if y.shape[1] == 1:
            return y[:, 0].copy() if i == 1 else -y[:, 0]
        return y[:, i].copy()

    def value(self, y):
        """``value(m(x))`` of a regression: float64 (n,)."""
        if self.task != "regression":
            raise ReadoutError("value(m(x)) reads a regression model's output",
                               "read a classifier with class(m(x)) or prob(m(x), c)")
        y = self._matrix(y)
        if y.shape[1] == 1:
            return y[:, 0].copy()
        if self.index is None:
            raise ReadoutError(f"the output has {y.shape[1]} columns; a regression reads one",
                               "add index = i for the column of the value")
        return y[:, self.index].copy()


def resolve_readout(columns: int | None, index, score: str | None, what: str = "the model's output",
                    task: str | None = None, classes=None, by_predict: bool = False) -> Readout:
    """Check ``index``/``score`` against an output of ``columns`` columns (None: not known).

    ``task`` is what the model file says it is ("binary" | "multiclass" | "regression"; None:
    the file does not say, e.g. ONNX/torch: then ``score = value`` makes it a regression, K >= 3
    columns multiclass, else binary). ``classes``: the class labels the file records, in column
    order. ``by_predict``: the model's decision is its library's own predict (a scikit-learn classifier), so
    K >= 3 columns of probabilities with ``index = i`` read "predict is class i" (argmax, the first maximal
    column on a tie; the score ``y[i] - max_{j != i} y[j]`` against 0); without it they are refused.
    Raises ReadoutError for an ambiguous or impossible choice. ``score`` None means "not
    given" (lint, before the loader guesses it from the output's name): only the column
    checks run.
    """
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        raise ReadoutError(f"the index {index!r} chosen for {what} is not a whole number")
    if index is not None and index < 0:
        raise ReadoutError(f"the index {index} chosen for {what} is negative", "columns count from 0")
    if score is not None and score not in SCORE_KINDS:
        raise ReadoutError(f"the score kind {score!r} given for {what} is not one of 'logit', 'prob' or 'value'",
                           "score = logit | prob | value")
    if task is not None and task not in TASKS:
        raise ValueError(f"unknown task {task!r}")
    classes = tuple(classes) if classes is not None else None
    if task == "regression" or score == "value":
        if task is not None and task != "regression":
            raise ReadoutError(f"{what} is a {task} classifier's, so score = value (a regression) does not fit it",
                               "drop score = value; read the classifier with class(m(x)) or prob(m(x), c)")
        if columns is not None and columns > 1:
            if index is None:
                raise ReadoutError(f"{what} has {columns} columns and a regression reads one",
                                   f"add index = i (0 .. {columns - 1}) for the column of the value")
            if index >= columns:
                raise ReadoutError(f"{what} has {columns} columns, so index {index} is out of range",
                                   f"columns count from 0: index = 0 .. {columns - 1}")
            return Readout("value", index, columns, "regression")
        if index not in (None, 0):
            raise ReadoutError(f"{what} has one column, so index {index} is out of range",
                               "drop index = ..., or choose another output")
        return Readout("value", None, columns if columns is None else 1, "regression")
    kind = score or "logit"
    if columns is None:
        t = task or "binary"
        if t == "multiclass" and classes is not None:
            columns = len(classes)
        else:
            return Readout(kind, index, None, t, classes)
    if columns <= 1:
        if task == "multiclass":
            raise ReadoutError(f"{what} has one column, but the model has {len(classes or ()) or 'several'} classes")
        if index not in (None, 0):
            raise ReadoutError(f"{what} has one column, so index {index} is out of range",
                               "drop index = ..., or choose another output")
        return Readout(kind, None, 1, "binary", classes)
    t = "multiclass" if columns >= 3 else "binary"
    if index is None:
        if t == "multiclass":
            return Readout(kind, None, columns, t, classes)
        raise ReadoutError(f"{what} has {columns} columns, one per class, and the spec does not say which "
                           f"is the positive class", INDEX_HINT)
    if index >= columns:
        raise ReadoutError(f"{what} has {columns} columns, so index {index} is out of range",
                           f"columns count from 0: index = 0 .. {columns - 1}")
    if score == "prob" and columns > 2 and not by_predict:
        raise ReadoutError(f"{what} has {columns} columns of probabilities: 'probability of column {index} > 0.5' "
                           f"is not the model's decision (argmax) for more than two classes",
                           "read the logits instead (score = logit): class 1 is then 'column index is the largest'")
    return Readout(kind, index, columns, t, classes)
