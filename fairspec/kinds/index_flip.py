"""``label(m(x)) == label(m(x'))`` of a two-column network read with ``index = 0``, on the solvers (session 37).

The model's label is the argmax's class (``Readout.argmax_decision``): class 0 iff ``y_0 >= y_1`` -- an exact tie
is class 0, the first largest column. The solvers encode a decision as ``g > 0``; ``index = 0`` would be
``z_0 - z_1 > 0``, which calls the tie "not class 0" (they refused it: ``pair_runtime.tie_unencoded``). But with two
columns the argmax picks exactly one of them, so class 0 is the NEGATION of class 1, and class 1 is ``y_1 > y_0``
(strict: the tie is not class 1), which ``g = z_1 - z_0 > 0`` encodes exactly (logits, or the logits before a
two-class softmax). A ``label`` post compares two labels for equality, which negating both leaves unchanged: the
property read with ``index = 0`` is the property read with ``index = 1``, pair for pair. So the solvers decide it on
:class:`IndexOne`, the loaded model read with ``index = 1`` (its network, its runtime error model and its replays
all of column 1 against column 0), and certify checks that (negated) question: every ``holds`` is its proof of
"no pair's class-1 decisions differ", which is "no pair's class-0 decisions differ". A witness is replayed once more
on the model as declared (``index = 0``, its own decisions) before it is reported; one that does not break the
post there is not reported (``unknown``).

Two independent sigmoids read with ``index = i`` have no such network of their decision (their argmax ties where
both round to one float, e.g. both 1.0: ``models.network.apply_readout`` refuses them), but ``prob(m(x))`` is
``sigmoid(z_i)``, column i alone: :func:`sigmoid_column` gives that network to a ``prob`` post whose pre-condition
reads none of the model's outputs (no decision is read at all).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fairspec import ir
from fairspec.kinds.logit_column import ViewContext
from fairspec.verdict import Verdict, unknown


def flips_to_index_one(prop: ir.IndividualFairness, model) -> bool:
    """Is this a ``label`` post of a two-column ONNX / torch output read with ``index = 0`` by the argmax?"""
    from fairspec.kinds.pair_runtime import label_by_argmax

    readout = getattr(model, "readout", None)
    return (prop.post == "label" and label_by_argmax(model) and readout.columns == 2 and readout.index == 0
            and getattr(model, "format", "") in ("onnx", "torch"))


def sigmoid_column(prop: ir.IndividualFairness, model):
    """The network of ``prob(m(x))`` of two independent sigmoids read with ``index = i`` -- column i with its final
    sigmoid, ``p_i = sigmoid(z_i)``, the number the runtime's column i is -- for a ``prob`` post reading no decision
    (no pre-condition reads the model's outputs); None otherwise (a label / class post reads the argmax, which no
    sign of one output is)."""
    from fairspec.models.batching import two_probability_argmax
    from fairspec.models.network import PLNet, UnsupportedModel

    if prop.post != "prob" or _reads_outputs(prop) or getattr(model, "format", "") not in ("onnx", "torch") \
            or not two_probability_argmax(model):
        return None
    try:
        net = model.folded_network()
    except UnsupportedModel:
        return None
    if net.final != "sigmoid" or net.layers[-1].n_out != 2:
        return None
    return PLNet(net.layers, int(model.readout.index), "sigmoid", net.source).single_output()


class IndexOne:
    """The loaded two-column network ``model`` read with ``index = 1``: its readout, score, decision and piecewise-
    linear network are column 1's against column 0 (class 1 iff ``y_1 > y_0``, the argmax's class 1); every other
    attribute (format, path, precision, its runtime layers with every column, ...) is ``model``'s own."""

    def __init__(self, model):
        self._model = model
        self.readout = replace(model.readout, index=1)
        self.index = 1

    def __getattr__(self, name):
        if name.startswith("__") or name == "_model":     # copy / pickle probe an instance without __init__
            raise AttributeError(name)
        return getattr(self._model, name)

    def piecewise_linear(self):
        from fairspec.models.network import apply_readout

        return apply_readout(self._model.folded_network(), self.readout)

    def score(self, X):
        return self.readout.select(self._model.outputs(X))

    def replay(self, X):
        return self.score(X)

    def predict_class(self, X, outputs=None):
        return self._model.predict_class(X, outputs)

    def decide(self, X):
        return (np.asarray(self._model.predict_class(X)) == 1).astype(np.int64)

    def output_description(self) -> str:
        return f"{self._model.output_description()} read as index = 1 (class 0 is its negation)"


def _reads_outputs(prop) -> str:
    seen = [f"{x.fn}({x.model}({x.var}))" for e in prop.pre for x in ir.subexpressions(e)
            if isinstance(x, ir.ModelOut) and x.model == prop.model]
    return ", ".join(dict.fromkeys(seen))


def run_flipped(prop: ir.IndividualFairness, ctx, run, backend: str, t0: float) -> Verdict:
    """``run(prop, ctx')`` on the model read as :class:`IndexOne`, its witness replayed on the model as declared."""
    import time

    from fairspec.kinds.pair_runtime import post_scores, runtime_violates

    reads = _reads_outputs(prop)
    if reads:
        # the flipped view answers every request for the model: a pre-condition's class(m(x)) / label(m(x)) would be
        # read with index = 1
        return unknown(prop, f"a pre-condition reads model '{prop.model}''s outputs ({reads}); the solvers decide a "
                             "label of two columns read with index = 0 as its negation, index = 1, which would read "
                             "them too, so it is not decided (declare index = 1, which asks the same label question; "
                             "small discrete domains are decided by enumeration)", backend=backend,
                       seconds=time.perf_counter() - t0)
    model = ctx.model(prop.model)
    v = run(prop, ViewContext(ctx, prop.model, IndexOne(model)))
    details = {**(v.details or {}), "decided_as": "label with index = 1: class 0 of two columns is the negation of "
                                                  "class 1 (y_1 > y_0), so the labels of a pair differ alike"}
    v = replace(v, details=details, seconds=time.perf_counter() - t0)
    if v.status != "violated":
        return v
    w = v.witness
    if w is None:
        return unknown(prop, f"the {backend} backend reported a violation without a pair", backend=backend,
                       seconds=time.perf_counter() - t0, details=details)
    X2 = np.array([w.x, w.x_prime], dtype=np.float64)
    s, _ = post_scores(prop, model, X2)
    if s is None or not bool(runtime_violates(prop, model, s[:1], s[1:], X2=X2)[0]):
        return unknown(prop, f"the {backend} backend's pair did not break the label post on the model read with "
                             "index = 0, so it is not reported", backend=backend, seconds=time.perf_counter() - t0,
                       details=details)
    return replace(v, witness=replace(w, outputs=(float(s[0]), float(s[1]))))
