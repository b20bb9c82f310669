"""``|logit(m(x), c) - logit(m(x'), c)| op eps`` of a network on a domain too large to enumerate
(issue 25, the ``class_logit`` post of one class c), decided by the binary ``logit`` path.

Logit column c of a network whose output holds K logit columns is the one output of the same network
with its last layer cut to row c (final ``none``): the same numbers, so the same float arithmetic
row by row -- the runtime error bound of one output (fairspec.certify.network) is a bound per row,
and it holds of row c inside the K-row layer as it does alone (as a multi-output regression's ``index``
row is read: models.runtime_layers._readout_row). :class:`LogitColumn` is the loaded model seen so: a
one-column binary logit model whose networks (piecewise_linear, runtime_network, runtime_chain,
folded_network) are the model's cut to row c and whose score is column c of the model's own runtime
outputs. The ``logit`` post of it then runs the ordinary pair path (MILP / SMT, find / prove /
maximize, ``partitions``), every ``holds`` certified by fairspec/certify as for any ``logit(m(x))``,
every witness replayed on that runtime. A one-column model's logit column is z for c = 1 and -z for
c = 0; |-z + z'| = |z - z'|, so both are the model's own ``logit(m(x))`` post (its witness's outputs
reported with c's sign).

A further pre-condition that reads the model's own outputs (``require class(m(x)) == 1``) is refused here
(``unknown``, saying why): the cut view answers every request for the model, and would read it on column c
alone; kinds/multi_pairs then tries its relaxation on the model itself (kinds/pre_relax: the conjunct
dropped, a superset of the pairs), which may prove it. ``forall c`` is the conjunction of the K column runs
(:func:`run_logit_columns`). The verdict's witness is replayed once more here with the post as written (:func:`post_scores` of
``class_logit`` on the loaded model itself): a pair that does not break it is not reported.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from fairspec import ir
from fairspec.verdict import Verdict, unknown


class LogitColumn:
    """The loaded network ``model`` read as its logit column ``c`` alone: a one-column binary logit model
    (readout ``logit``, class 1 iff the column is > 0) whose networks are ``model``'s with the last layer
    cut to row ``c``; every other attribute is ``model``'s own (format, precision, path, raw, ...)."""

    def __init__(self, model, c: int):
        from fairspec.models.readout import Readout

        self._model = model
        self._c = int(c)
        self.readout = Readout("logit")
        self.score_kind = "logit"
        self.threshold = 0.0
        self.index = None

    def __getattr__(self, name):          # what is not read through the readout: the model's own
        if name.startswith("__") or name == "_model":    # (copy / pickle probe an instance without __init__)
            raise AttributeError(name)
        return getattr(self._model, name)

    # ---- the networks, cut to row c --------------------------------------------------------------
    def _cut(self, net):
        from fairspec.models.network import Layer, PLNet, UnsupportedModel

        if net.final != "none":
            raise UnsupportedModel("Output", "final", f"a final {net.final} turns the logits into something else")
        last = net.layers[-1]
        if not 0 <= self._c < last.n_out:
            raise UnsupportedModel("Output", "output", f"the network has no logit column {self._c}")
        return PLNet(net.layers[:-1] + (Layer(last.W[self._c:self._c + 1], last.b[self._c:self._c + 1], last.relu),),
                     0, "none", net.source)

    def piecewise_linear(self):
        return self._cut(self._model.folded_network())

    def folded_network(self):
        return self._cut(self._model.folded_network())

    def runtime_network(self):
        return self._cut(self._model.runtime_network())

    def runtime_chain(self):
        return self._cut(self._model.runtime_chain())

    def tree_ensemble(self):
        return None

    # ---- the runtime: column c of the model's own outputs -------------------------------------------
    def outputs(self, X):
        Y = np.asarray(self._model.outputs(X), dtype=np.float64)
        return Y[:, self._c:self._c + 1].copy()

    def score(self, X):
        return self.outputs(X)[:, 0]

    def replay(self, X):
        return self.score(X)

    def decide(self, X):
        return (self.score(X) > 0.0).astype(np.int64)

    def predict_class(self, X, outputs=None):
        y = self.outputs(X) if outputs is None else np.asarray(outputs, dtype=np.float64).reshape(-1, 1)
        return (y[:, 0] > 0.0).astype(np.int64)

    def output_description(self) -> str:
        return f"{self._model.output_description()} logit column {self._c}"

    def describe(self) -> str:
        return f"{self._model.describe()}, read as its logit column {self._c}"


class ViewContext:
    """The run's context with model ``name`` read as ``view`` (a :class:`LogitColumn` here, kinds/index_flip's
    index = 1 reading there; everything else the context's)."""

    def __init__(self, ctx, name: str, view):
        self._ctx, self._name, self._view = ctx, name, view

    def __getattr__(self, attr):
        if attr.startswith("__") or attr == "_ctx":
            raise AttributeError(attr)
        return getattr(self._ctx, attr)

    def model(self, name: str):
        return self._view if name == self._name else self._ctx.model(name)


def _logit_network(ctx, prop):
    """``(model, its folded network)`` of a network model whose outputs are logits (final none), or None where this
    reduction does not read it (another format; an ONNX graph with one input per column is evaluated, never read
    as a network; a network it cannot read; a final softmax / sigmoid)."""
    from fairspec.models.network import UnsupportedModel

    model = ctx.model(prop.model)
    if getattr(model, "format", "") not in ("onnx", "torch") or getattr(model, "multi", False):
        return None
    try:
        raw = model.folded_network()
    except UnsupportedModel:
        return None
    return None if raw.final != "none" else (model, raw)


def run_logit_column(prop: ir.IndividualFairness, ctx, progress, backend: str, t0: float, kind) -> Verdict | None:
    """The verdict of ``logit(m(x), c)`` (one class c) of a network of logit outputs on the binary ``logit``
    path, or None when the model is not one this reduction reads (another format, a final softmax /
    sigmoid, ``forall c``): the caller then says why it is undecided."""
    c = prop.cls
    if not isinstance(c, int) or isinstance(c, bool):
        return None
    got = _logit_network(ctx, prop)
    if got is None:
        return None
    model, raw = got
    K = raw.layers[-1].n_out
    if K == 1:
        if c not in (0, 1):
            return None
        view, as_ctx = model, ctx          # z (c = 1) or -z (c = 0): |-z + z'| = |z - z'|, the logit post itself
        if (model.readout.columns or 1) != 1 or model.readout.index not in (None, 0) or model.score_kind != "logit":
            return None
    else:
        if not 0 <= c < K:
            return None
        reads = _reads_outputs(prop)
        if reads:
            # the cut view answers every request for the model: a pre-condition's class(m(x)) / prob(m(x), k) /
            # logit(m(x), k) would read column c alone (z_c > 0, sigmoid(z_c)), not the K columns it names
            return unknown(prop, f"a pre-condition reads model '{prop.model}''s outputs ({reads}); logit(m(x), {c}) "
                                 f"beyond small domains is decided on the network cut to its logit column {c}, which "
                                 "does not compute them, so it is not decided (small discrete domains are decided "
                                 "by enumeration)", backend=backend, seconds=time.perf_counter() - t0)
        view = LogitColumn(model, c)
        as_ctx = ViewContext(ctx, prop.model, view)
    as_logit = replace(prop, post="logit", cls=None)
    v = kind.run_pair(as_logit, as_ctx, progress, backend)
    v = replace(v, seconds=time.perf_counter() - t0,
                details={**(v.details or {}), "post": "class_logit", "column": c,
                         "decided_as": (f"logit(m(x)) of the network cut to its logit column {c}" if K > 1 else
                                        f"logit(m(x)) of the one-column model ({'z' if c == 1 else '-z'}: "
                                        "|logit(m(x), c) - logit(m(x'), c)| = |z - z'|)")})
    if v.status == "violated":
        return _replayed(prop, model, v, backend, t0)
    return v


def _reads_outputs(prop) -> str:
    """What the property's further pre-conditions read of its own model's outputs (``class(m(x))``, ``prob(m(x), k)``,
    ``logit(m(x), k)``, ...), written for a reason; "" when they read none."""
    seen = []
    for e in prop.pre:
        for x in ir.subexpressions(e):
            if isinstance(x, ir.ModelOut) and x.model == prop.model:
                arg = f"{x.model}({x.var})" + ("" if x.cls is None else f", {x.cls}")
                seen.append(f"{x.fn}({arg})")
    return ", ".join(dict.fromkeys(seen))


def _replayed(prop, model, v: Verdict, backend: str, t0: float) -> Verdict:
    """A violation of the column's logit post, replayed once more on the loaded model with the post as
    written (logit column c of its outputs, compared exactly with the spec's ``<`` / ``<=``); its outputs are
    that column's two logits. Not broken: ``unknown``."""
    from fairspec.kinds.pair_runtime import post_scores, runtime_violates

    w = v.witness
    if w is None:
        return unknown(prop, f"the {backend} backend reported a violation without a pair", backend=backend,
                       seconds=time.perf_counter() - t0, details=v.details)
    X2 = np.array([w.x, w.x_prime], dtype=np.float64)
    s, _ = post_scores(prop, model, X2)
    if s is None or not bool(runtime_violates(prop, model, s[:1], s[1:], X2=X2)[0]):
        return unknown(prop, f"the {backend} backend's pair did not break logit(m(x), {prop.cls}) on the model's "
                             "runtime, so it is not reported", backend=backend, seconds=time.perf_counter() - t0,
                       details=v.details)
    return replace(v, witness=replace(w, outputs=(float(s[0]), float(s[1]))))


def run_logit_columns(prop: ir.IndividualFairness, ctx, progress, backend: str, t0: float, kind) -> Verdict | None:
    """``forall c: |logit(m(x), c) - logit(m(x'), c)| op eps`` of a network of logit outputs beyond small domains:
    the conjunction of the K one-column runs (:func:`run_logit_column`, column c as the binary ``logit`` post of
    the network cut to row c). ``holds (proved)`` only when every column is proved (certify joins the K proofs,
    ``certify.argmax.join_logit_columns``); ``violated`` when one column is, its pair replayed once more on the
    model with the post as written (every column, exactly), the breaking column in ``details["class"]``; else
    ``unknown`` naming the undecided columns. The property's time budget covers the K runs (each column a share of
    what is left); the first violated column ends the run (maximize: every column runs, for the maximum over
    them, reported only when every column has its bound). A one-column model's two columns are z and -z, both
    ``|z - z'|``: its ``logit(m(x))`` post, run once. None: not a model this reduction reads."""
    import contextlib

    from fairspec.planning import setting

    if prop.cls != ir.EVERY_CLASS:
        return None
    got = _logit_network(ctx, prop)
    if got is None:
        return None
    model, raw = got
    K = raw.layers[-1].n_out
    if K == 1:
        v = run_logit_column(replace(prop, cls=1), ctx, progress, backend, t0, kind)
        if v is None:
            return None
        if v.status == "violated":
            v = _replayed_forall(prop, model, v, 1, backend, t0)
        return replace(v, details={**(v.details or {}), "column": None, "columns": 2,
                                   "decided_as": "logit(m(x)) of the one-column model: both its logit columns "
                                                 "(z and -z) move by |z - z'|"})
    reads = _reads_outputs(prop)
    if reads:
        return unknown(prop, f"a pre-condition reads model '{prop.model}''s outputs ({reads}); forall c: logit(m(x), "
                             "c) beyond small domains is decided on the network cut to each logit column, which does "
                             "not compute them, so it is not decided (small discrete domains are decided by "
                             "enumeration)", backend=backend, seconds=time.perf_counter() - t0)
    mode = setting(prop, "mode", backend)
    timeout = setting(prop, "timeout", backend)
    per, proofs, undecided, why = [], {}, [], []
    found = None
    for k, c in enumerate(range(K)):
        left = ctx.remaining(timeout)
        if left is not None and left <= 0.0:
            undecided.extend(range(c, K))
            why.append(f"columns {', '.join(map(str, range(c, K)))}: the time budget is spent")
            break
        share = contextlib.nullcontext() if left is None else ctx.capped(left / (K - k))
        with share:
            v = run_logit_column(replace(prop, cls=c), ctx, progress, backend, time.perf_counter(), kind)
        if v is None:
            return None
        per.append({"column": c, "status": v.status, "how": v.how, "value": v.value, "bound": v.bound,
                    "proof": None if v.proof is None else v.proof.summary, "reason": v.reason})
        if v.status == "violated":
            w = _replayed_forall(prop, model, v, c, backend, t0)
            if w.status == "violated":
                found = found or w
                if mode != "maximize":
                    break
            else:
                undecided.append(c)
                why.append(f"column {c}: {w.reason}")
        elif v.status == "holds" and v.how == "proved" and v.proof is not None:
            proofs[c] = v.proof
        else:
            undecided.append(c)
            why.append(f"column {c}: {v.reason}")
    details = {"post": "class_logit", "columns": K, "mode": mode, "per_column": per,
               "decided_as": f"the {K} logit columns, each as logit(m(x)) of the network cut to it"}
    extra, notes = {}, []
    if mode == "maximize":
        bounds = [p["bound"] for p in per]
        if len(per) == K and all(b is not None for b in bounds):
            extra["bound"] = (max(b[0] for b in bounds), max(b[1] for b in bounds))
            extra["value"] = extra["bound"][0]
            details["maximum"] = "[the largest of the columns' best pairs replayed, the largest certified bound]"
        else:
            lacking = [p["column"] for p in per if p["bound"] is None] + list(range(len(per), K))
            notes.append(f"no maximum over the columns: column{'s' if len(lacking) > 1 else ''} "
                         f"{', '.join(map(str, lacking))} {'have' if len(lacking) > 1 else 'has'} no certified bound")
            details["maximum"] = notes[-1]
            details["notes"] = [*details.get("notes", ()), notes[-1]]      # printed under the verdict
    seconds = time.perf_counter() - t0
    if found is not None:
        w = found
        if mode == "maximize":
            w = replace(w, bound=extra.get("bound"), value=extra.get("value", w.value))
        notes_ = [*(w.details or {}).get("notes", ()), *details.get("notes", ())]
        return replace(w, seconds=seconds, details={**(w.details or {}), **details, "class": w.details["class"],
                                                    **({"notes": notes_} if notes_ else {})})
    if len(proofs) == K:
        from fairspec.certify.argmax import join_logit_columns

        scale, shift = _scaling(prop, ctx)
        proof = None if scale is None else join_logit_columns(proofs, raw, prop.eps, bool(prop.eps_strict), scale, shift)
        if proof is not None:
            return Verdict(prop.name, prop.kind, "holds", how="proved", backend=backend, seconds=seconds,
                           details=details, proof=proof, **extra,
                           reason=f"certified: every one of {K} columns proved (each logit column's post on the "
                                  "network cut to it)")
        why.append("certify did not join the columns' proofs")
    return unknown(prop, f"column{'s' if len(undecided) > 1 else ''} {', '.join(map(str, undecided))} of {K} not "
                         f"decided: " + "; ".join(why) + (f" ({notes[0]})" if notes else ""),
                   backend=backend, seconds=seconds, details=details, **extra)


def _scaling(prop, ctx):
    """The encoding's affine scaling ``(scale, shift)`` (model input ``u = scale * v + shift``) each column's run
    folded into its network (kinds.lowering.lower_pair, which reads no pre-condition for it); (None, None) when
    it does not lower."""
    from fairspec.kinds.lowering import Unsupported, lower_pair

    try:
        low = lower_pair(replace(prop, pre=(), post="logit", cls=None), ctx.spec.feature_set(prop.features),
                         ctx.encoding(prop.model))
    except (Unsupported, ValueError):
        return None, None
    return low.scale, low.shift


def _replayed_forall(prop, model, v: Verdict, c: int, backend: str, t0: float) -> Verdict:
    """Column ``c``'s violation replayed once more on the loaded model with the post as written (``forall c``:
    every column compared exactly); the witness shows column c's logits (c breaks it), ``details["class"]`` c.
    Not broken: ``unknown``."""
    from fairspec.kinds.pair_runtime import post_scores, runtime_violates

    w = v.witness
    if w is None:
        return unknown(prop, f"the {backend} backend reported a violation without a pair", backend=backend,
                       seconds=time.perf_counter() - t0, details=v.details)
    X2 = np.array([w.x, w.x_prime], dtype=np.float64)
    s, _ = post_scores(prop, model, X2)
    broken = None if s is None else np.asarray(runtime_violates(prop, model, s[:1], s[1:], X2=X2), dtype=bool)
    if broken is None or broken.shape != (s.shape[1],) or not bool(broken[c]):
        return unknown(prop, f"the {backend} backend's pair did not break forall c: logit(m(x), c) in column {c} on "
                             "the model's runtime, so it is not reported", backend=backend,
                       seconds=time.perf_counter() - t0, details=v.details)
    return replace(v, witness=replace(w, outputs=(float(s[0, c]), float(s[1, c]))),
                   details={**(v.details or {}), "class": c},
                   reason=f"logit column {c} moves beyond eps: {v.reason}")
