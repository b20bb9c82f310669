"""Individual fairness of a multiclass or regression *network* (issue 25): the posts ``class``,
``class_prob`` and ``value`` of :class:`fairspec.ir.IndividualFairness` on the pair backends.

* ``value`` (a regression, one output, identity readout) is the ``logit`` post's arithmetic on that
  output: the ordinary pair path (:func:`fairspec.kinds.individual_fairness.run_pair`) with the
  post read as ``logit`` -- small domains by enumeration on the runtime, MILP / SMT find / prove /
  maximize ([best replayed, certified bound]), certification unchanged.
* ``class`` of a one-column binary model is its decision (the ``label`` post). Of a K-output network:
  small domains by enumeration (the runtime's predicted classes compared exactly); otherwise the K
  class-score sub-problems of :mod:`fairspec.backends.pair.multiclass` on HiGHS / SCIP or z3, every
  witness replayed on the loaded model (``predict_class``: the first largest column), ``holds`` only
  with certify's joined Proof; a class the solver leaves at a tie is decided by the refinement over the
  whole domain (``pair_ties.decide_at_a_tie``, as the value path), exact on that argmax. A softmax output's class is read from the runtime's float
  probabilities, outside the runtime error model: such a ``holds`` is ``unknown``.
* ``class_logit`` (logit column c, or every column): small domains by enumeration; one column c of an ONNX /
  torch network of logits beyond them by the binary ``logit`` path on the network cut to row c
  (:mod:`fairspec.kinds.logit_column`); ``forall c`` there the conjunction of the K column runs.
* ``class_prob`` for one class or every class (``forall c``, one exact comparison per pair and class):
  small domains by enumeration; larger ones by an attack on the runtime and certify's branch and bound
  over the softmax (:mod:`fairspec.kinds.class_prob`, :mod:`fairspec.certify.class_prob`).

Tree models are decided elsewhere (fairspec.kinds.tree_pairs); this module returns None for them.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from fairspec import ir
from fairspec.verdict import Verdict, Witness, unknown


def run_multi(prop: ir.IndividualFairness, ctx, progress, backend: str, kind) -> Verdict | None:
    """The verdict of an issue-25 post on a network model, or None (trees; posts not handled here).
    ``kind``: the individual-fairness runner's module (fairspec.kinds.individual_fairness, passed in
    so that this module does not import it back): its run_pair and helpers."""
    is_tree_model, run_pair = kind.is_tree_model, kind.run_pair
    if is_tree_model(ctx, prop.model):
        return None
    t0 = time.perf_counter()
    model = ctx.model(prop.model)
    task = getattr(model, "task", None)
    if prop.post == "value":
        return run_pair(replace(prop, post="logit"), ctx, progress, backend)
    if prop.post == "class" and task == "binary" and (model.readout.columns or 1) == 1:
        return run_pair(replace(prop, post="label"), ctx, progress, backend)
    if prop.post not in ("class", "class_prob", "class_logit"):
        return None
    v = _decide(prop, ctx, progress, backend, t0, kind)
    if v.status == "unknown" and prop.pre:
        # a pre-condition the lowering does not read as a box: decided on its relaxation (kinds/pre_relax)
        from fairspec.kinds.pre_relax import relaxed_run

        r = relaxed_run(prop, ctx, progress, backend, t0,
                        lambda p, c, pr, b: _decide(p, c, pr, b, time.perf_counter(), kind), kind._searcher(ctx, prop))
        if r is not None:
            v = r if r.status != "unknown" else replace(v, reason=f"{v.reason}; on its relaxation: {r.reason}")
    from fairspec.planning import setting

    if prop.post == "class" and prop.options.max_rows is not None and not prop.pre and \
            ctx.spec.feature_set(prop.features).data is not None and setting(prop, "mode", backend) != "maximize":
        # lint cannot know the network is multiclass (its FS213 covers prob / logit, no data, maximize, require)
        from fairspec.verdict import with_note

        v = with_note(v, "`max_rows` has no effect here: a multiclass network's class(m(x)) is decided by "
                         "enumeration or the solvers, with no data rows flipped first")
    return _class_prob_rows_unread(prop, ctx, backend, model, v)


def _class_prob_rows_unread(prop, ctx, backend: str, model, v: Verdict) -> Verdict:
    """prob(m(x), c) with max_rows where lint could not tell the network's output width (a torch module other
    than an nn.Sequential: sema.options.output_columns) and the loaded model's width says no data rows were
    flipped first: the verdict's notes say max_rows was unread, as lint's FS213 does where it can tell."""
    from fairspec.planning import setting
    from fairspec.sema.options import no_pre_pass, output_columns

    if prop.post != "class_prob" or prop.options.max_rows is None or setting(prop, "mode", backend) == "maximize":
        return v
    has_data = ctx.spec.feature_set(prop.features).data is not None
    fmt = getattr(model, "format", None)
    try:
        told = output_columns(ctx.spec.model(prop.model))
    except Exception:  # noqa: BLE001 - no declaration to read: lint did not know
        told = None
    columns = getattr(getattr(model, "readout", None), "columns", None)
    if told is not None or columns is None or no_pre_pass(prop, has_data, fmt, None) is not None:
        return v                                    # lint read the width, or said FS213 without it
    why = no_pre_pass(prop, has_data, fmt, columns)
    if why is None:
        return v
    from fairspec.verdict import with_note

    return with_note(v, f"`max_rows` has no effect here: {why} (model '{prop.model}' has {columns} output columns, "
                        "which lint cannot read from its file)")


def _decide(prop, ctx, progress, backend: str, t0: float, kind) -> Verdict:
    _small_domain = kind._small_domain
    small = _small_domain(prop, ctx, backend, t0)
    if small is not None and prop.post == "class_logit":
        # as logit(m(x)), which one class's post (and each column's of forall c) is beyond small domains
        # (kinds/logit_column): the options only
        # the solver path reads (its data flips' max_rows among them) said unread in the verdict's notes
        return kind.unread_by_enumeration(prop, small, ctx, backend, getattr(ctx.model(prop.model), "format", None))
    if small is not None:
        return small
    if prop.post == "class_logit":
        from fairspec.kinds.pair_runtime import outputs_are_logits

        model = ctx.model(prop.model)
        if not outputs_are_logits(model):
            what = ("probabilities (a scikit-learn model's predict_proba)" if model.readout.score == "prob"
                    else "not logits")
            return unknown(prop, f"model '{prop.model}' outputs no logits (its columns are {what}): "
                                 "logit(m(x), c) reads an output of logits only", backend=backend,
                           seconds=time.perf_counter() - t0)
        # one class c of a network of logit columns: the binary logit path on the network cut to row c
        # forall c: the conjunction of the K one-column runs
        from fairspec.kinds.logit_column import run_logit_column, run_logit_columns

        run = run_logit_column if isinstance(prop.cls, int) else run_logit_columns
        v = run(prop, ctx, progress, backend, t0, kind)
        if v is not None:
            return v
        what = ("this model's logit column" if isinstance(prop.cls, int) else "this model's logit columns") + \
            " (an ONNX or torch network whose last layer outputs the logits, no final softmax or sigmoid, is read)"
        return unknown(prop, f"logit(m(x), c) on a domain too large to enumerate is not yet decided by the {backend} "
                             f"backend for {what} (small discrete domains are decided by enumeration)",
                       backend=backend, seconds=time.perf_counter() - t0)
    if prop.post == "class_prob":
        from fairspec.kinds.class_prob import run_class_prob

        return run_class_prob(prop, ctx, progress, backend, t0, kind)
    return _run_class(prop, ctx, progress, backend, t0, kind)


def _run_class(prop, ctx, progress, backend, t0, kind) -> Verdict:
    from fairspec.backends.pair import PairProblem
    from fairspec.backends.pair.certify import Runtime
    from fairspec.backends.pair.multiclass import ClassProblem, attack_class, class_net, solve_class
    from fairspec.certify.network import encoding_from_ir
    _relaxed = kind._relaxed
    from fairspec.kinds.lowering import Unsupported, fold_scaling, lower_pair
    from fairspec.kinds.pair_replay import codes_as_variables
    from fairspec.kinds.pair_runtime import class_networks, encoder, pair_precondition
    from fairspec.models.runtime_layers import runtime_precision
    from fairspec.models.network import UnsupportedModel
    from fairspec.planning import setting
    from fairspec.runtime.encoding import decode_row

    model = ctx.model(prop.model)
    fs = ctx.spec.feature_set(prop.features)
    mode = setting(prop, "mode", backend)
    limit = ctx.remaining(setting(prop, "timeout", backend))

    def no(why):
        return unknown(prop, why, backend=backend, seconds=time.perf_counter() - t0)

    try:
        raw, run = class_networks(model)         # run: the runtime's layers (an identity chain unfolded)
        enc = ctx.encoding(prop.model)
        low = lower_pair(prop, fs, enc)
    except UnsupportedModel as e:
        return no(f"the {backend} backend cannot encode this model: {e}")
    except Unsupported as e:
        return no(str(e))
    K = raw.layers[-1].n_out
    if K < 2:
        return no("the model has one output column: it has no class to compare")
    if raw.final not in ("none", "softmax"):
        return no(f"a {raw.final} over {K} outputs has no argmax the {backend} backend encodes")
    net = fold_scaling(replace(raw, final="none"), low)
    relaxed = _relaxed(prop, fs, enc, low)
    try:
        pre = PairProblem(class_net(net, 0), low.lo, low.hi, low.integer, low.onehot_groups, low.free, None,
                          relaxed, "label")
    except ValueError as e:
        return no(f"no class score for this network: {e}")
    meets_pre = pair_precondition(prop, enc, low, pre)
    encoded = encoder(enc, low)
    from fairspec.kinds.pair_spread import fragile_pair

    def outputs(V):
        return np.asarray(model.outputs(encoded(V)), dtype=np.float64)

    def replay(x, xp):
        if not meets_pre(x, xp):
            return False
        X2 = encoded(np.vstack([x, xp]))
        k = model.predict_class(X2)
        # and, within the runtime's rounding of a class boundary (torch, scikit-learn), also alone and reversed
        if k[0] == k[1]:
            return False
        moved = fragile_pair(prop, model, X2)
        return moved is None or moved["reproduced"]

    try:
        precision = runtime_precision(model)
    except ValueError as e:
        precision, beyond = None, str(e)
    if precision is None:
        rt = Runtime(None, why_not=beyond, replay=replay)
    else:
        # a softmax head: the runtime's class is the first largest of its float probabilities, which the class
        # score of its logits decides within the logits' error bound and the softmax's (certify.argmax)
        head = ("softmax",) if raw.final == "softmax" else ()
        try:
            rt = Runtime([(L.W, L.b, L.relu) for L in run.layers], encoding_from_ir(codes_as_variables(enc)),
                         ("argmax", 0) + head, precision, replay=replay)
        except (ValueError, TypeError) as e:
            rt = Runtime(None, why_not=f"no runtime error bound for this model ({e})", replay=replay)
    from fairspec.kinds.pair_spread import batch_unsure

    # unsure: the individuals whose class another batch of a float runtime may pick otherwise (the refinement's
    # enumeration at a tie leaves them undecided)
    # predict: a library that decides the class itself (scikit-learn's predict), which the outputs' argmax the
    # refinement reads need not agree with (a softmax tie): an individual where they differ is counted unsure
    from fairspec.models.base import LoadedModel

    own = type(model).predict_class is not LoadedModel.predict_class
    cp = ClassProblem(net, pre, "class", runtime=rt, outputs=outputs, unsure=batch_unsure(prop, model, encoded),
                      predict=(lambda V: model.predict_class(encoded(V))) if own else None)

    def at_tie(sub, r, seconds):
        # a class the solver left at a tie (its only candidate pairs at a class score of 0 within its tolerance
        # or the runtime's rounding; or its pair does not change the class on the runtime): the refinement over
        # the whole domain, exact on the runtime's argmax (the first largest column), as the value path does
        from fairspec.backends.milp.partition import at_a_tie
        from fairspec.kinds.pair_ties import decide_at_a_tie

        if r.status == "unknown" and not at_a_tie(r):
            return r
        return decide_at_a_tie(prop, sub, r, seconds, situation="the solver's only candidate pairs lay at a "
                                     "tie between classes within its tolerance or the runtime's rounding")
    engine = "z3" if backend == "smt" else setting(prop, "engine", backend)
    if backend == "smt" and rt.layers is None:
        # z3 proves nothing here, but a class change the attack finds replays on the runtime: violated
        res = attack_class(cp, engine, mode, t0)
        if res is None:
            return no(f"the smt backend cannot bound this model's runtime arithmetic: {rt.why_not}")
    else:
        task = progress.add_task(f"{prop.name}: {backend} {mode} (class)", total=None) if progress else None
        try:
            res = solve_class(cp, mode, engine, limit, at_tie=at_tie)
        finally:
            if progress:
                progress.remove_task(task)
    seconds = time.perf_counter() - t0
    details = {"engine": engine, "mode": mode, "classes": K, "solver_seconds": round(res.seconds, 4),
               "per_class": res.stats.get("per_class")}
    if prop.options.partitions and prop.options.partitions > 1:
        details.setdefault("notes", []).append("`partitions` has no effect here: the class post is solved on the whole domain (one sub-problem per class)")
    extra = {}
    if mode == "maximize" and res.bound is not None and not math.isfinite(res.bound):
        res = replace(res, bound=None)         # a class without a certified bound: no upper end
    value, threshold_note = res.value, None
    if mode == "maximize" and raw.final != "none":
        # the class measure is on the logits, which a softmax runtime does not output: no value, as for a
        # label post on a probability
        res = replace(res, value=None, bound=None)
        value = None
        details["maximum"] = f"no value: the class measure is on logits, and the model's runtime outputs {raw.final}"
    elif mode == "maximize" and res.status != "violated" and value is not None and math.isfinite(value):
        # the lower end is the best pair's measure on the runtime's logits, not the solver's float64 one
        from fairspec.kinds.pair_runtime import runtime_class_value

        b = res.best if res.best is not None else res.witness
        ok = b is not None and meets_pre(np.asarray(b.x), np.asarray(b.x_prime))
        value = runtime_class_value(model.outputs(encoded(np.vstack([b.x, b.x_prime])))) if ok else None
        if value is not None and res.bound is not None and value > res.bound:
            value = None
        res = replace(res, value=value)
        if res.status == "holds" and res.proof is not None and res.bound is None and value is not None:
            # no certified bound of its own: the proof says no pair changes class, so no measure exceeds 0
            from fairspec.kinds.pair_runtime import threshold_interval

            thr, note = threshold_interval("class", None, False, value)
            res = replace(res, bound=thr, value=value if thr is not None else None)
            threshold_note = note
    if mode == "maximize":
        if res.bound is not None and res.value is not None:
            extra["bound"] = (float(res.value), float(res.bound))
            # proved: the best pair and the certified bound meet (a holds' own "proved" is the verdict's)
            met = res.how == "proved" and (res.status == "violated" or
                                           res.bound - res.value <= 1e-7 * max(1.0, abs(res.value)))
            details["maximum"] = ("proved" if met else
                                  "not proved: [best pair replayed on the runtime, certified upper bound]")
            details["measure"] = "max over classes c of min(g_c(x), -g_c(x')), g_c = y_c - max_{j != c} y_j"
            if threshold_note:
                details["maximum"] = threshold_note
        else:
            value = None
    if res.status == "violated" and res.witness is not None:
        w = res.witness
        if not replay(np.asarray(w.x), np.asarray(w.x_prime)):
            return unknown(prop, f"the {backend} witness did not change the class on the model's runtime",
                           backend=backend, seconds=seconds, details=details)
        X2 = encoded(np.vstack([w.x, w.x_prime]))
        k = model.predict_class(X2)
        from fairspec.backends.data.flips import replayer_name

        by = "onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model)
        wit = Witness(tuple(map(float, X2[0])), tuple(map(float, X2[1])), decode_row(enc, fs, X2[0]),
                      decode_row(enc, fs, X2[1]), (float(k[0]), float(k[1])), replayed_by=by)
        if raw.final == "none" and (mode != "maximize" or value is not None):
            # the value is the replayed pair's class measure on the runtime's logits, not the solver's
            # float64 one (a softmax runtime outputs probabilities: its logit measure is the solver's)
            from fairspec.kinds.pair_runtime import runtime_class_value

            rv = runtime_class_value(model.outputs(X2))
            if rv is not None:
                value = rv
                if "bound" in extra:
                    extra["bound"] = (rv, max(float(extra["bound"][1]), rv))
        return Verdict(prop.name, prop.kind, "violated", value=value, witness=wit, backend=backend, seconds=seconds,
                       details=details, reason=(f"the attack before the {backend} solver" if res.stats.get("attack") else
                                               f"the {backend} solver") + " found a pair whose predicted class "
                                               f"changes (class {int(k[0])} vs {int(k[1])})", **extra)
    if res.status == "holds" and res.proof is not None:
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=value, backend=backend, seconds=seconds,
                       details=details, reason=res.reason or None, proof=res.proof, **extra)
    return unknown(prop, res.reason or f"the {backend} solver did not decide the property", backend=backend,
                   seconds=seconds, details=details, value=value, **extra)
