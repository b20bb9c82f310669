"""FS439: an ONNX classifier node's own label against what fairspec reads from the declared output.

skl2onnx writes a classifier as one ai.onnx.ml node (LinearClassifier, SVMClassifier,
TreeEnsembleClassifier) with two outputs: its label and its scores (``probabilities``). A spec
declaring ``output = "probabilities"`` is decided by that output -- class(m(x)) is the argmax of its
columns, label(m(x)) the decision rule on its column ``index`` -- and the spec says so, so the verdict
stays about it. But the model's own runtime answer is its label output, and the two can disagree: an
SVC's label is its one-vs-one vote, its probabilities Platt's calibration of it (scikit-learn's
``predict`` and ``predict_proba`` disagree the same way); and an SVM's float32 vote at a boundary can
differ between a batch and a row run alone. Reading the label instead was tried and reverted
(tests/test_onnx_declared_output.py): the decision stays the declared output's, and the disagreement
is said, never resolved silently.

:func:`label_sibling` finds the case in the graph (the declared output is the classifier node's score
output, directly or through nodes that pass it on unchanged, and the same node's label is a graph
output); :class:`Agreement` is then kept by the loaded model (fairspec.models.onnx_model): every batch
onnxruntime evaluates fetches the label beside the declared output (the node computes it anyway), and
the distinct inputs evaluated (at most :data:`ROWS`), a bounded number of them also run alone
(:data:`ALONE`), are compared. fairspec.runtime.label_agreement turns what one property's evaluations
found into the located warning FS439 at the model's declaration.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .peek_onnx import _SAME_VALUES, OnnxSignature

#: distinct inputs compared per property (each batch's rows, until this many were seen)
ROWS = 50_000
#: inputs also run alone per property (onnxruntime's SVM label can differ alone and in a batch)
ALONE = 512
_FLOAT_CASTS = frozenset({1, 10, 11, 16})     # Cast to float, float16, double, bfloat16: the same scores


@dataclass(frozen=True)
class LabelSibling:
    """The classifier node computing the declared output, and the graph output holding its label."""
    label: str              # the graph output holding the node's label
    op_type: str            # the node's operator (SVMClassifier, ...)
    node: str               # the node's name (or its first output's)
    classes: tuple          # its class labels, in the order of its score columns


def label_sibling(sig: OnnxSignature, output: str, columns: int | None) -> LabelSibling | None:
    """The classifier node whose score output ``output`` is (through Identity, Reshape, ..., and a Cast to
    a float type), when the same node's label output is a graph output (through such nodes) and its class
    labels are one per column of ``output`` (two for a one-column output); else None."""
    producer = {o: n for n in sig.nodes for o in n.outputs}
    name, seen = output, set()
    node = None
    while name in producer and name not in seen:
        seen.add(name)
        n = producer[name]
        passes = n.op_type in _SAME_VALUES or (n.op_type == "Cast" and n.ints.get("to") in _FLOAT_CASTS)
        if n.domain in ("", "ai.onnx") and passes and n.inputs:
            name = n.inputs[0]
            continue
        node = n
        break
    if node is None or node.domain != "ai.onnx.ml" or not node.class_labels or len(node.outputs) < 2 \
            or name != node.outputs[1] or not node.outputs[0]:
        return None
    k = len(node.class_labels)
    if columns is not None and not (columns == k or (columns == 1 and k == 2)):
        return None
    for o in sig.outputs:
        if _passes_on(sig, o.name, producer) == node.outputs[0] and not o.not_tensor:
            return LabelSibling(o.name, node.op_type, node.name or node.outputs[0], tuple(node.class_labels))
    return None


def _passes_on(sig, name: str, producer) -> str:
    """The value graph value ``name`` hands on unchanged (through Identity, Reshape, ...)."""
    seen = set()
    while name in producer and name not in seen:
        seen.add(name)
        n = producer[name]
        if n.domain not in ("", "ai.onnx") or n.op_type not in _SAME_VALUES or not n.inputs:
            break
        name = n.inputs[0]
    return name


@dataclass(frozen=True)
class Tally:
    """What one property's evaluations showed: ``rows`` distinct inputs compared (``capped``: a batch
    reached the bound ROWS), ``alone`` of them also run alone, ``differ`` of them where the label's class is not
    the class read from the declared output; ``example``: (input, label's class, class read, "alone" or
    "batch", "class" or "label") of the first such input."""
    rows: int
    alone: int
    differ: int
    capped: bool
    example: tuple | None


class Agreement:
    """The running comparison of a loaded ONNX classifier's label output with its declared output."""

    def __init__(self, sibling: LabelSibling, readout):
        self.sibling = sibling
        self.readout = readout
        self._column = {c: j for j, c in enumerate(sibling.classes)}
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._seen: set = set()
        self._alone = 0
        self._differ = 0
        self._capped = False
        self._example = None

    def take(self) -> Tally | None:
        """What was compared since the last take (None: nothing), and start afresh."""
        with self._lock:
            if not self._seen:
                return None
            t = Tally(len(self._seen), self._alone, self._differ, self._capped, self._example)
            self._reset()
            return t

    # ---- the comparison ------------------------------------------------------------------------
    def _read(self, y):
        """(argmax column, the decision rule's column or None) of a declared output batch: what
        class(m(x)) and, for a binary classifier, label(m(x)) read."""
        import numpy as np

        from .readout import Readout

        Y = Readout._matrix(y)
        cls = self.readout.predicted_class(Y)
        dec = None
        if self.readout.task == "binary" and self.readout.threshold is not None and Y.shape[1] <= 2:
            i = self.readout.index if self.readout.index is not None else 1
            # two logits read with index: the argmax's class (LoadedModel.decide), the first maximal
            # column at a tie -- y_i - y_j > 0 calls a tie "not class i" where i = 0 is first
            positive = (cls == i) if self.readout.argmax_decision else self.readout.select(Y) > self.readout.threshold
            dec = np.where(positive, i, 1 - i).astype(np.int64)
        return cls, dec

    def _label_columns(self, labels):
        """The column of each label (-1: a label that is none of the node's classes)."""
        import numpy as np

        flat = np.asarray(labels).reshape(-1)
        if flat.size == 0:
            return np.zeros(0, dtype=np.int64)
        values, back = np.unique(flat, return_inverse=True)
        cols = np.array([self._column.get(v.item() if hasattr(v, "item") else v, -1) for v in values], dtype=np.int64)
        return cols[back.reshape(-1)]

    def _differs(self, y, labels):
        """(per row: does the label's column differ from a column read, the column read, "class" | "label")."""
        import numpy as np

        cls, dec = self._read(y)
        lab = self._label_columns(labels)
        bad = lab != cls
        read = cls.copy()
        rule = np.full(len(cls), "class", dtype=object)
        if dec is not None:
            other = (lab != dec) & ~bad
            read[other] = dec[other]
            rule[other] = "label"
            bad |= other
        return bad, lab, read, rule

    def observe(self, X, y, labels, alone=None) -> None:
        """Compare one evaluated batch: ``X`` the encoded inputs (n, w), ``y`` the declared output and
        ``labels`` the label output onnxruntime gave for them in that run; ``alone(i)`` (None: not
        possible) runs row i by itself and gives (declared output, label output) of that run."""
        import numpy as np

        X = np.ascontiguousarray(X, dtype=np.float64)
        with self._lock:
            seen = self._seen
            room = ROWS - len(seen)
            if X.shape[0] > room:                      # the rows past the bound are not compared
                self._capped = True
            if room <= 0 or X.shape[1] == 0:
                return
            keys = X[:room].view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel().tolist()
            first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))   # each key's first row
            new = sorted(i for k, i in first.items() if k not in seen)
            seen.update(keys[i] for i in new)
            if not new:
                return
            new = np.asarray(new)
            Y = np.asarray(y)
            Y = Y.reshape(-1, 1)[new] if Y.ndim == 1 else Y[new]
            bad, lab, read, rule = self._differs(Y, np.asarray(labels).reshape(-1)[new])
            how = np.full(len(new), "batch", dtype=object)
            budget = ALONE - self._alone
            if alone is not None and budget > 0:
                candidates = np.flatnonzero(~bad)
                order = candidates[np.argsort(_margins(Y, self.readout.threshold)[candidates], kind="stable")][:budget]
                if len(order):
                    runs = [alone(int(new[j])) for j in order]
                    self._alone += len(order)
                    ys = [np.asarray(r[0]) for r in runs]
                    b1, lab1, read1, rule1 = self._differs(np.concatenate([a.reshape(1, -1) for a in ys]),
                                                           np.concatenate([np.asarray(r[1]).reshape(-1) for r in runs]))
                    for k in np.flatnonzero(b1):
                        j = order[k]
                        bad[j], lab[j], read[j], rule[j], how[j] = True, lab1[k], read1[k], rule1[k], "alone"
            hits = np.flatnonzero(bad)
            self._differ += len(hits)
            if len(hits) and self._example is None:
                j = int(hits[0])
                self._example = (X[new[j]].copy(), int(lab[j]), int(read[j]), how[j], rule[j])


def _margins(y, threshold):
    """Per row, how near the declared output is to a change of the class read (the two largest columns'
    gap; a one-column output's distance from the threshold): the rows run alone are the nearest first."""
    import numpy as np

    Y = np.asarray(y, dtype=np.float64)
    if Y.ndim == 1 or Y.shape[1] == 1:
        return np.abs(Y.reshape(-1) - (threshold or 0.0))
    top = np.sort(Y, axis=1)
    return top[:, -1] - top[:, -2]
