"""Individual fairness of a ReLU network, end to end: falsify first, then prove.

1. Counterfactual flips of every data row (the `data` backend's search): most
   violations of real networks fall out here in milliseconds.
2. The pair problem in feature space (scaling folded into the first layer),
   decided by the MILP (HiGHS/SCIP) or SMT (z3) backend: `prove` by default,
   `find` or `maximize` with `mode = ...`.
3. Every witness is mapped back to model-input space and replayed on the real
   loaded model by its independent evaluator before it is reported.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from fairspec import ir
from fairspec.kinds.pair_ties import decide_at_a_tie, maximum_at_a_tie
from fairspec.verdict import Unsupported as NotLowered, Verdict, Witness, unknown

# the multiclass posts a model read neither as trees nor as a network decides on a small domain ("value" goes
# through run_multi's logit rewrite, which tree models skip; certify.enumerate has no "value" post)
_CLASS_POSTS = ("class", "class_prob", "class_logit")


def is_tree_model(ctx, model_name: str) -> bool:
    """Is the loaded model a tree model the tree backends read (without converting it)?"""
    from fairspec.models.trees import SKLEARN_TREES

    try:
        model = ctx.model(model_name)
    except Exception:  # noqa: BLE001 - a load error is reported by the path that needs the model
        return False
    fmt = getattr(model, "format", "")
    if fmt == "sklearn" and _pipeline_booster(model):
        return True
    if fmt == "sklearn" and type(model.raw).__name__ in SKLEARN_TREES:
        from fairspec.models.batching import rounds_by_batch

        # by its fitted attributes too: an init model, 8 classes of HistGradientBoosting round by batch
        return not rounds_by_batch(model)
    return fmt in ("xgboost", "lightgbm")


def _pipeline_booster(model) -> bool:
    """A folded pipeline's XGBClassifier / LGBMClassifier whose trees are read (models.pipeline_boosters)."""
    from fairspec.models.pipeline_boosters import is_booster_classifier
    from fairspec.models.network import UnsupportedModel

    if getattr(model, "folded", None) is None or not is_booster_classifier(model.raw):
        return False
    try:
        return model.tree_ensemble() is not None
    except (UnsupportedModel, ValueError):
        return False


def _booster_final(model) -> bool:
    """A folded pipeline ending in an XGBClassifier / LGBMClassifier (its trees read or not)."""
    from fairspec.models.pipeline_boosters import is_booster_classifier

    folded = getattr(model, "folded", None)
    return folded is not None and is_booster_classifier(getattr(folded, "final", None))


def network_of(ctx, model_name: str, prop=None):
    """The loaded model as the piecewise-linear network of its decision (raises UnsupportedModel):
    the same output column and rule as the loaded model's ``decide`` (fairspec.models.readout); for a ``prob``
    post of two independent sigmoids (``prop``), the network of its probability (kinds/index_flip.sigmoid_column)."""
    from fairspec.models.network import UnsupportedModel

    try:
        return ctx.model(model_name).piecewise_linear()
    except UnsupportedModel:
        from fairspec.kinds.index_flip import sigmoid_column

        net = None if prop is None else sigmoid_column(prop, ctx.model(model_name))
        if net is None:
            raise
        return net


def _small_domain(prop: ir.IndividualFairness, ctx, backend: str, t0: float) -> Verdict | None:
    """Small discrete domains of a network: every pair on the model's runtime, decided by certify
    (fairspec.kinds.pair_enumeration); None when the domain is not small (or the model is a tree
    ensemble, which the tree backends decide)."""
    from fairspec.kinds.pair_enumeration import decide_small
    from fairspec.models.network import UnsupportedModel
    from fairspec.planning import setting

    model = ctx.model(prop.model)
    try:
        if model.tree_ensemble() is not None:
            return None
    except UnsupportedModel:
        # a scikit-learn pipeline evaluated whole (its preprocessing not folded), or a folded one whose
        # XGBClassifier / LGBMClassifier's trees models.pipeline_boosters refuses (its objective, a `missing`
        # value), has no tree ensemble the tree backends read, but its own predict / predict_proba score
        # every point: enumerate them (beyond a small domain: unknown, with the refusal's reason); so does a
        # scikit-learn tree model rounding by batch (a GradientBoosting with an init model, a HistGradientBoosting
        # of 8 classes or more: models.batching.rounds_by_batch), read as its runtime with the assumed spread; and
        # so is a multiclass / regression post (no pair backend decides those without the trees: a
        # HistGradientBoosting with categorical splits was `unknown` on 8 points, session 37 h5)
        from fairspec.models.batching import rounds_by_batch

        if not getattr(model, "unfolded", False) and not _booster_final(model) and not rounds_by_batch(model) and \
                prop.post not in _CLASS_POSTS:
            return None
    from fairspec.kinds.enum_unread import with_not_enumerated

    return with_not_enumerated(decide_small(prop, ctx, backend, setting(prop, "mode", backend), t0), prop, ctx)


def not_yet_decided(prop: ir.IndividualFairness, backend: str) -> Verdict | None:
    """``unknown`` for the issue-25 posts (class, class_prob, class_logit, value) that no pair
    backend decides yet (the pair problem's argmax/softmax/value encodings are being written);
    None for the binary posts."""
    if prop.post not in ir.MULTI_POSTS:
        return None
    return unknown(prop, f"the post-condition '{prop.post}' (issue 25: multiclass and regression outputs) is not "
                         f"yet decided by the {backend} backend", backend=backend, seconds=0.0)


def _by_leaf_boxes(prop: ir.IndividualFairness, ctx, mode: str, backend: str, t0: float, before: Verdict):
    """A binary tree classifier's ``label`` or ``prob`` post that the tree encodings left ``unknown``
    on a domain too large to enumerate (a solver's "no violating pair" is no proof): the certified
    branch and bound over leaf boxes (:mod:`fairspec.kinds.tree_boxes`) decides the same post read
    as a class post: ``label`` as ``class(m(x)) == class(m(x'))`` (both are the library's own
    ``predict``: label(x) == label(x') exactly when predict(x) == predict(x')), ``prob`` as
    ``prob(m(x), c)`` of the positive column c (the same ``predict_proba`` column: the same floats and
    maximum), a booster's ``logit`` as ``logit(m(x), 1)`` (positive index 1); maximize's label has no value.
    Its ``holds`` carries a Proof, its violation a pair replayed again on the library as written; otherwise
    ``before``, with why the branch and bound did not decide."""
    from fairspec.backends.trees.runtime import _sk_positive, cell_ensemble, library_task, runtime_outputs
    from fairspec.certify.enumerate import compare_exact
    from fairspec.kinds.tree_boxes import decide_by_boxes

    try:
        model = ctx.model(prop.model)
        task, _ = library_task(model)
        ens = cell_ensemble(model) if task == "binary" else None
        if ens is None:
            return before
        fmt = getattr(model, "format", "")
        # the positive column: predict_proba's (scikit-learn), p or 1 - p and z or -z (boosters)
        pos = int(_sk_positive(model)[2]) if fmt == "sklearn" else (0 if getattr(model, "index", None) == 0 else 1)
        if prop.post == "label":
            as_class = replace(prop, post="class")
        elif prop.post == "logit":      # the margin z (scikit-learn's decision_function): column 1 of (0, z)
            if pos != 1:
                raise NotLowered("the leaf boxes read a binary booster's logit of class 1 only (z; -z is none)")
            as_class = replace(prop, post="class_logit", cls=1)
        else:
            as_class = replace(prop, post="class_prob", cls=pos)
        v, why = decide_by_boxes(as_class, ctx, mode, backend, t0, ens, model)
    except (NotLowered, MemoryError) as e:
        v, why = None, str(e) or "the boxes do not fit in memory"
    if v is None:
        return replace(before, reason=f"{before.reason}; the branch and bound over leaf boxes did not decide it "
                                      f"either ({why})", seconds=time.perf_counter() - t0)
    if v.status == "violated":
        # the witness replayed once more with the post as written: the library's label / prob of both inputs
        XW = np.array([v.witness.x, v.witness.x_prime], dtype=np.float64)
        out = runtime_outputs(model, XW, prop.post)
        if prop.post == "label":
            broken = out is not None and out[0] != out[1]
        else:
            broken = out is not None and not (bool(compare_exact(out[:1], prop.eps_op, prop.eps, minus=out[1:])[0])
                                              and bool(compare_exact(out[1:], prop.eps_op, prop.eps, minus=out[:1])[0]))
        if not broken:
            return replace(before, reason=f"{before.reason}; the branch and bound's pair did not break the post as "
                                          f"written on the library, so it is not reported",
                           seconds=time.perf_counter() - t0)
        v = replace(v, witness=replace(v.witness, outputs=(float(out[0]), float(out[1]))))
        if prop.post == "label" and mode == "maximize":
            v = replace(v, details={**(v.details or {}), "maximum": "no value: the branch and bound over leaf "
                                    "boxes decides the label, not label's measure min(z, -z')"})
    return replace(v, details={**(before.details or {}), **(v.details or {}), "post": prop.post,
                               "decided_by": "branch and bound over leaf boxes, after the tree encodings"})



def unread_by_enumeration(prop: ir.IndividualFairness, v, ctx, backend: str, fmt: str | None):
    """A small domain enumerated whole (a network's here, a binary tree model's in kinds.tree_pairs) reads
    none of partitions, part_timeout, timeout or engine, nor -- no data rows are flipped first -- max_rows,
    nor seed (the rows' sample and the partitions' estimate draw nothing here): each one the spec sets is
    said in the verdict's notes (lint cannot know: the domain's size is known once the model is loaded).
    max_rows and seed are not said again where lint's FS213 said them (sema.options: no data rows, a
    require, maximize; a seed nothing reads); a seed of 0 is the default, and not told from none."""
    from fairspec.planning import setting
    from fairspec.sema.options import no_pre_pass, output_columns, seed_unread
    from fairspec.verdict import with_note

    has_data = ctx.spec.feature_set(prop.features).data is not None
    try:
        columns = output_columns(ctx.spec.model(prop.model))   # as lint read it: its FS213 and these notes agree
    except Exception:  # noqa: BLE001 - no declaration to read: not known
        columns = None
    unread = [k for k in ("partitions", "part_timeout", "timeout", "engine") if prop.options.get(k) is not None]
    if prop.options.max_rows is not None and no_pre_pass(prop, has_data, fmt, columns) is None and \
            setting(prop, "mode", backend) != "maximize":
        unread.append("max_rows")
    if prop.options.seed and seed_unread(prop, backend, has_data, fmt, columns) is None:
        unread.append("seed")
    how = "every pair of the small domain is enumerated on the model's runtime"
    for k in unread:
        v = with_note(v, f"`{k}` has no effect here: {how}, " + (
            "with no data rows flipped first and no random choice" if k in ("max_rows", "seed") else
            "in one pass with no time limit"))
    return v


def run_pair(prop: ir.IndividualFairness, ctx, progress, backend: str) -> Verdict:
    from fairspec.kinds.forest_margin import decide as by_margin      # a forest adding its trees in thread order

    v = by_margin(prop, ctx, lambda p: _run_pair(p, ctx, progress, backend)) or _run_pair(prop, ctx, progress, backend)
    if v.status == "violated" and v.witness is not None:
        from fairspec.kinds.pre_relax import named_witness, relaxing, with_categories
        from fairspec.kinds.shared_codes import shared_columns

        if not relaxing() and shared_columns(ctx.encoding(prop.model)):
            v = with_categories(prop, ctx, v)      # categories sharing a code printed as the pair the property's
        elif prop.pre:
            v = named_witness(prop, ctx, v)        # a feature only the pre-condition reads, named
    return v


def _searcher(ctx, prop):
    """kinds/pre_search's search for a pair meeting a relaxed pre-condition (kinds/pre_relax takes it from here)."""
    from fairspec.kinds.pre_search import searcher
    return searcher(is_tree_model(ctx, prop.model))


def _run_pair(prop: ir.IndividualFairness, ctx, progress, backend: str) -> Verdict:
    t0 = time.perf_counter()
    if prop.post in ("prob", "class_prob"):     # prob of a decision_function whose expit is no predict_proba
        ctx.model(prop.model).refuse_prob()     # is unknown (FS415 at lint where it reads the file)
    if prop.post in ir.MULTI_POSTS:
        from fairspec.kinds.tree_outputs import decide_outputs, reads_trees

        from fairspec.models.base import AmbiguousRuntime

        try:
            trees = reads_trees(ctx.model(prop.model))
        except AmbiguousRuntime as e:       # a forest adding its trees in thread order (forest_threads)
            return unknown(prop, e.message, backend=backend, seconds=time.perf_counter() - t0)
        except Exception:  # noqa: BLE001 - a load error is reported by the path that needs the model
            trees = False
        if trees:
            # a tree model's class / prob(c) / logit(c) / value: cells on the library's runtime
            from fairspec.planning import setting

            mode_of = setting(prop, "mode", backend)     # the relaxed property's too (its options are the same)

            def outputs(p):
                try:
                    return decide_outputs(p, ctx, mode_of, backend, t0)
                except NotLowered as e:
                    return unknown(p, str(e), backend=backend, seconds=time.perf_counter() - t0)
                except MemoryError:
                    return unknown(p, "the domain's cells do not fit in memory", backend=backend, seconds=time.perf_counter() - t0)
            v = outputs(prop)
            if v.status == "unknown" and prop.pre:      # on the relaxation's cells (kinds/pre_relax)
                from fairspec.kinds.pre_relax import or_relaxed
                v = or_relaxed(prop, ctx, backend, t0, v, outputs, _searcher(ctx, prop))
            return v
        # a network's class / value / class_prob (issue 25): fairspec.kinds.multi_pairs
        import sys

        from fairspec.kinds.multi_pairs import run_multi

        done = run_multi(prop, ctx, progress, backend, sys.modules[__name__])
        if done is not None:
            return done
    if prop.post in _CLASS_POSTS and (small := _small_domain(prop, ctx, backend, t0)) is not None:
        # a model neither read as trees nor as a network (a HistGradientBoosting with categorical splits): its own
        # runtime on a small domain (session 37 h5: `unknown` on 8 points before)
        return unread_by_enumeration(prop, small, ctx, backend, getattr(ctx.model(prop.model), "format", None))
    if (later := not_yet_decided(prop, backend)) is not None:
        return later
    from fairspec.backends.data.flips import replayer_name, run_flips
    from fairspec.kinds.pair_replay import flip_replays, solver_runtime, with_replay
    from fairspec.planning import setting

    if is_tree_model(ctx, prop.model):
        # a tree model on a small domain: every pair on the library's own runtime (kinds/tree_pairs)
        from fairspec.kinds.tree_pairs import decide_by_enumeration

        try:
            v = decide_by_enumeration(prop, ctx, setting(prop, "mode", backend), backend, t0)
        except NotLowered as e:
            return unknown(prop, str(e), backend=backend, seconds=time.perf_counter() - t0)
        except MemoryError:
            v = None                  # the domain's cells do not fit: the exact encodings decide
        if v is not None:
            if "points" in (v.details or {}):    # enumerated (not the split tests' proof): the features left out
                from fairspec.kinds.enum_unread import with_not_enumerated
                v = with_not_enumerated(v, prop, ctx)
            return unread_by_enumeration(prop, v, ctx, backend, getattr(ctx.model(prop.model), "format", None))
    small = _small_domain(prop, ctx, backend, t0)
    if small is not None:
        return unread_by_enumeration(prop, small, ctx, backend, getattr(ctx.model(prop.model), "format", None))
    from fairspec.kinds.pre_relax import relaxed_run, relaxing, shares_of

    if ctx.spec.feature_set(prop.features).data is not None and not prop.pre and not relaxing() and \
            setting(prop, "mode", backend) != "maximize":   # a flip on data is no maximum
        first = run_flips(prop, ctx, progress, timeout=setting(prop, "timeout", "data"))
        if first.status == "violated" and flip_replays(prop, ctx.model(prop.model), first, is_tree_model(ctx, prop.model)):
            return Verdict(**{**first.__dict__, "backend": f"{backend} (falsified on data first)",
                              "seconds": time.perf_counter() - t0})
    from fairspec.kinds.lowering import Unsupported, fold_scaling, lower_pair
    from fairspec.backends.pair import PairProblem, check_witness
    from fairspec.models.network import UnsupportedModel

    fs = ctx.spec.feature_set(prop.features)
    try:
        trees = ctx.model(prop.model).tree_ensemble()
        net = trees if trees is not None else network_of(ctx, prop.model, prop)  # a rule model: UnsupportedModel
        enc = ctx.encoding(prop.model)
        low = lower_pair(prop, fs, enc, any_codes=trees is not None)   # a tree's splits read any code table
        if trees is not None:
            # a tree ensemble: the scaling folded into every split, pruned along its paths
            from fairspec.backends.trees.space import fold

            from fairspec.kinds.lowering import encoder_feeds

            folded = fold(trees, low.lo, low.hi, low.integer, low.scale, low.shift, encoder_feeds(enc))
    except UnsupportedModel as e:
        return unknown(prop, f"the {backend} backend cannot encode this model: {e}", backend=backend,
                       seconds=time.perf_counter() - t0)
    except Unsupported as e:     # a pre-condition the lowering does not read: decided on its relaxation
        relaxed = relaxed_run(prop, ctx, progress, backend, t0, run_pair, _searcher(ctx, prop)) if prop.pre else None
        return relaxed or unknown(prop, str(e), backend=backend, seconds=time.perf_counter() - t0)
    from fairspec.kinds.index_flip import flips_to_index_one, run_flipped

    if trees is None and flips_to_index_one(prop, ctx.model(prop.model)):
        # a label of two columns read with index = 0: class 0 (y_0 >= y_1, the argmax's tie) is the negation of
        # class 1 (y_1 > y_0), which the solvers encode exactly; the pair's labels differ alike (kinds/index_flip)
        return run_flipped(prop, ctx, lambda p, c: _run_pair(p, c, progress, backend), backend, t0)
    from fairspec.kinds.pair_runtime import tie_unencoded

    tie = None if trees is not None else tie_unencoded(prop, ctx.model(prop.model))
    if tie is not None:
        return unknown(prop, tie, backend=backend, seconds=time.perf_counter() - t0)
    eps = prop.eps
    if trees is not None:
        from fairspec.kinds.tree_engine_answers import engine_eps, tree_relaxed

        relaxed = tree_relaxed(prop, enc, low)     # `<` on integral inputs as the spec writes it
        eps = engine_eps(prop, trees)              # in the units of the ensemble's S (LightGBM's sigmoid factor)
    else:
        relaxed = _relaxed(prop, fs, enc, low)
    runtime = None if trees is not None else solver_runtime(prop, ctx.model(prop.model), enc)
    problem = PairProblem(folded if trees is not None else fold_scaling(net, low), low.lo, low.hi, low.integer,
                          low.onehot_groups, low.free, None, relaxed, prop.post, eps,
                          eps_strict=prop.eps_strict, runtime=runtime)
    if runtime is not None:
        runtime = with_replay(runtime, prop, ctx.model(prop.model), enc, low, problem)
        problem = replace(problem, runtime=runtime)

    mode = setting(prop, "mode", backend)
    limit = ctx.remaining(setting(prop, "timeout", backend))  # the budget covers the preparation above too
    kw = {}
    if trees is not None:
        from fairspec.backends.trees import modes as tree_modes

        engine = "z3" if backend == "smt" else setting(prop, "engine", backend)
        if engine == "portfolio":
            engine = "highs"   # the tree engines' own portfolio: z3 first on a third of the budget, then HiGHS

        class engine_mod:  # noqa: N801 - the tree engines behind the milp/smt modes' interface
            find = staticmethod(lambda pr, **kw: tree_modes.find(pr, engine=engine, **kw))
            prove = staticmethod(lambda pr, **kw: tree_modes.prove(pr, engine=engine, **kw))
            maximize = staticmethod(lambda pr, **kw: tree_modes.maximize(pr, engine=engine, **kw))
    elif backend == "smt":
        from fairspec.backends import smt as engine_mod
        from fairspec.backends.smt.runtime import runtime_of

        # the certified SMT modes prove claims about the model's runtime: its layers, readout, encoding, arithmetic
        rt = runtime_of(ctx.model(prop.model), enc, post=prop.post)
        if rt is None:      # the precision first: a float16 chain is refused for its arithmetic, not its shape
            from fairspec.models.runtime_layers import precision_refusal_of
            why = precision_refusal_of(ctx.model(prop.model)) or (
                "not a plain Gemm/MatMul+Add/ReLU chain with a logit, margin, sigmoid or 2-class softmax readout")
            return unknown(prop, "the smt backend cannot bound this model's runtime arithmetic, so it cannot prove "
                                 f"anything about it: {why}", backend=backend, seconds=time.perf_counter() - t0)
        kw.update(runtime=rt, eps_strict=prop.eps_strict,
                  # the problem's integral strict tolerances are already exact (_relaxed: <= ceil(t) - 1);
                  # a continuous one stays <= t in the query and < t on every witness
                  relaxed_strict=tuple(c.offset for c in enc.columns
                                       if c.feature in prop.relaxed_strict and not low.integer[c.offset]))
    else:
        from fairspec.backends import milp as engine_mod

        kw["engine"] = setting(prop, "engine", backend)
    task = progress.add_task(f"{prop.name}: {backend} {mode}", total=None) if progress else None
    if prop.options.partitions and prop.options.partitions > 1:
        # input-space partitioning: each box gets its own budget; the coverage says what was decided
        from fairspec.backends.milp.partition import solve_partitioned, split_widest

        parts = split_widest(problem, prop.options.partitions)
        res = solve_partitioned(problem, mode, parts, backend=backend,
                                time_per_part=setting(prop, "part_timeout", backend) or limit, time_limit=limit,
                                stop_on_violation=(mode == "find"), **kw,
                                # FairQuant's falsified share: a box proved unfair grown around each refuted
                                # partition's witness (12 proof attempts, after every partition is decided)
                                unfair_nodes=12,
                                # FairQuant's refinement inside the partitions left without a proof
                                refine=float(prop.options.get("refine") or 0.0),
                                # the undecided share's estimated split (seeded samples); none of trees: tree_engine_answers._no_estimate
                                estimate=0 if trees is not None else int(setting(prop, "estimate", backend) or 0),
                                seed=int(setting(prop, "seed", backend) or 0),
                                confidence=float(setting(prop, "confidence", backend) or 0.95),
                                # smt: in this process, where the loaded model replays pairs exactly
                                **({"executor": _serial()} if backend == "smt" else {}))
    else:
        res = getattr(engine_mod, mode)(problem, time_limit=limit, **kw)
        if trees is None and runtime is not None and mode in ("find", "prove") and res.status == "unknown":
            from fairspec.backends.milp.partition import at_a_tie

            if at_a_tie(res):
                res = decide_at_a_tie(prop, problem, res, ctx.remaining(setting(prop, "timeout", backend)))
    if trees is None and res.status == "holds" and res.proof is None and res.coverage is not None:
        # every partition proved: their proofs combined by certify (boxes covering the domain, each proof
        # about the whole property restricted to its box: exact-smt, bab-certificate, tilings, any mix);
        # not combinable -> the whole domain below
        from fairspec.backends.pair.certify import runtime_of

        rt = kw["runtime"] if backend == "smt" else runtime_of(problem)
        proof = _combined(prop, problem, parts, res, rt)
        if proof is not None:
            res = replace(res, proof=proof, reason=f"{res.reason}; certified: {proof.summary}")
    if trees is None and res.status == "holds" and res.proof is None:
        # one place: a network's holds without a certify Proof (a partitions' verdict assembled from
        # certified parts; any backend) is certified as a whole by the BaB, or it is not holds
        from fairspec.backends.pair.certify import certify_result

        left = None if limit is None else ctx.remaining_at_least(setting(prop, "timeout", backend), 0.25 * limit)
        res = certify_result(problem, res, left, "the z3 SMT solver" if backend == "smt"
                             else f"the {kw.get('engine', backend)} MILP")
    if trees is None and runtime is not None and mode == "maximize" and res.status == "unknown":
        from fairspec.backends.milp.partition import at_a_tie

        if at_a_tie(res):        # after certify_result: its "within the runtime's rounding" is a tie too
            res = maximum_at_a_tie(prop, problem, res, ctx.remaining(setting(prop, "timeout", backend)),
                                    ctx.model(prop.model), runtime)
    if trees is None and runtime is not None and mode == "maximize" and res.status != "violated":
        res = _replayed_lower_end(prop, ctx.model(prop.model), runtime, res)
        if res.status == "holds" and res.proof is not None and res.value is not None:
            # no certified bound of its own, or a looser one: the proof says no pair exceeds the threshold
            from fairspec.kinds.pair_runtime import threshold_interval, threshold_is_tighter
            if threshold_is_tighter(problem.post, prop.eps, res.bound):
                thr, note = threshold_interval(problem.post, prop.eps, problem.eps_strict, res.value)
                res = replace(res, bound=thr, value=res.value if thr is not None else None,
                              stats={**(res.stats or {}), "maximum": note})
    if progress:
        progress.remove_task(task)
    seconds = time.perf_counter() - t0
    details = {"engine": getattr(res, "engine", backend), "mode": mode, "solver_seconds": round(res.seconds, 4)}
    if (res.stats or {}).get("at_a_tie"):
        details["at_a_tie"] = res.stats["at_a_tie"]      # the refinement after the solver's tie (pair_ties.decide_at_a_tie)
    if getattr(res, "coverage", None) is not None:
        cov = res.coverage
        # partition counts ("proved": with a certify Proof; a holds on a solver's word is "uncertified") and
        # FairQuant's exact shares of the domain (fairspec.backends.quantify.Shares), in place of the partitions'
        # float volumes, whose "refuted" counted a whole box as unfair for one counterexample
        details["coverage"] = {"partitions": cov.partitions, "proved": cov.proved, "refuted": cov.refuted,
                               "undecided": cov.undecided, **({"uncertified": cov.uncertified} if cov.uncertified
                                                              else {})}
        if getattr(cov, "shares", None) is not None:
            details["coverage"]["shares"] = shares_of(prop, fs, {**cov.shares.to_json(), "summary": cov.shares.line()})
            if getattr(cov, "estimate", None) is not None:
                # the undecided share's estimated unfair / fair split (sampled, with its bound): beside
                # the exact shares, never in them (fairspec.backends.estimate)
                details["coverage"]["shares"]["estimate"] = cov.estimate.to_json()
    if trees is not None:
        # a tree model's answer: witnesses re-checked exactly on the library, holds only when certified
        from fairspec.kinds.tree_engine_answers import solver_verdict

        v = solver_verdict(prop, ctx, res, backend, seconds, details)
        if v.status == "unknown" and prop.post in ("label", "prob", "logit"):
            if prop.pre:    # the leaf boxes take no pre-condition: decided with all of it relaxed (kinds/pre_relax)
                from fairspec.kinds.pre_relax import leaf_boxes_relaxed
                return leaf_boxes_relaxed(prop, ctx, backend, t0, lambda p: _by_leaf_boxes(p, ctx, mode, backend, t0, v),
                                          _searcher(ctx, prop))
            return _by_leaf_boxes(prop, ctx, mode, backend, t0, v)
        return v
    outputs = _runtime_label_output(ctx.model(prop.model)) if mode == "maximize" and prop.post == "label" else None
    if outputs is not None:
        # label's measure min(z, -z') is a logit the runtime never outputs (its score is a probability,
        # or its label is its predict): the solver's float64 value is not one the runtime reaches, so
        # none is reported, as the enumeration of the runtime reports none
        res = replace(res, value=None, bound=None)
        details["maximum"] = f"no value: label's measure min(z, -z') is a logit, and the model's runtime outputs {outputs}"
    if mode == "maximize" and res.bound is None and res.value is not None:
        details["best_value"] = res.value      # no certified upper bound: not a maximum
    if mode == "maximize" and (res.stats or {}).get("solver_best_value") is not None:
        details["solver_best_value"] = res.stats["solver_best_value"]   # the solver's float64 measure, unreplayed
    if mode == "maximize" and res.bound is None and (res.stats or {}).get("solver_upper_bound") is not None:
        # the solver's own (floating-point) upper bound: not certified, so never the interval's upper end
        details["solver_upper_bound"] = res.stats["solver_upper_bound"]
        details["maximum"] = ("no certified upper bound; details.solver_upper_bound is the solver's own "
                              "floating-point bound, unverified")
    if backend == "smt":
        extra = _interval(backend, mode, res)
        if mode == "maximize" and "bound" in extra:
            details["maximum"] = ("proved (best replayed and certified bound meet)" if res.how == "proved" and
                                  res.status == "violated" else "[best pair replayed on the runtime, certified upper bound]")
    else:
        extra = {}
        if mode == "maximize" and res.bound is not None and res.value is not None:
            extra["bound"] = (float(res.value), float(res.bound))
            # proved: the best pair and the certified bound meet (a holds' own "proved" is the verdict's)
            met = res.how == "proved" and (res.status == "violated" or _meet(res.value, res.bound))
            details["maximum"] = ("proved" if met else
                                  "not proved: [best pair replayed on the runtime, certified upper bound]")
    if mode == "maximize" and (res.stats or {}).get("maximum") and (res.value is not None or "maximum" not in details):
        details["maximum"] = res.stats["maximum"]        # pair_ties.maximum_at_a_tie's interval, said as it was obtained
    if res.status == "violated" and res.witness is not None:
        model = ctx.model(prop.model)
        if backend == "smt":
            # the smt backend: replayed on the runtime exactly, with the spec's strictness (a partition's
            # worker only emulated the runtime)
            from fairspec.backends.smt.exact import replays
            from fairspec.backends.smt.runtime import encode_like_runtime

            X1 = np.stack([res.witness.x, res.witness.x_prime])
            X2, rt = encode_like_runtime(enc, X1), kw["runtime"]
            ok = replays(problem, rt, res.witness, kw["eps_strict"], kw["relaxed_strict"])
            # a logit post's scores as the runtime replays them (a logistic regression's: decision_function)
            out = None if not ok else model.score(X2) if prop.post != "logit" or not rt.replay else rt.replay(X1)
            replayed_by = "onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model)
        elif runtime is not None:
            ok, X2, out = runtime.replay.full(res.witness.x, res.witness.x_prime)
            replayed_by = "onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model)
        else:
            X2 = np.stack([low.to_input(res.witness.x), low.to_input(res.witness.x_prime)])

            def replay(V):
                return model.replay(np.stack([low.to_input(v) for v in V]))

            ok = check_witness(problem, res.witness.x, res.witness.x_prime, replay, model.score_kind, tol=1e-6)
            out = model.replay(X2) if ok else None
            replayed_by = replayer_name(model)
        # replayed in one batch of two: a runtime that rounds other batches otherwise (torch,
        # scikit-learn) may not reproduce a violation within its rounding of the threshold; such a
        # pair is reported only when it also violates scored alone and reversed (the runtime's replay
        # refuses it otherwise: the note says why)
        fragile = _fragile(prop, model, X2, details) if X2 is not None and out is not None else None
        ok = ok and fragile is None
        if not ok and runtime is not None and runtime.layers is not None and mode != "maximize":
            # a fragile witness (within rounding of the threshold): retried by the certified branch and
            # bound on the runtime -- a proof, or a pair of its own that replays, or unknown
            retry = _retry_fragile(prop, ctx, problem, res, limit)
            if retry is not None:
                if retry.status == "holds":
                    return Verdict(prop.name, prop.kind, "holds", how="proved", backend=backend,
                                   seconds=time.perf_counter() - t0, details=details, reason=retry.reason, proof=retry.proof)
                ok, X2, out = runtime.replay.full(retry.witness.x, retry.witness.x_prime)
                again = _fragile(prop, model, X2, details) if X2 is not None and out is not None else None
                fragile = again or fragile
                ok = ok and again is None
                if ok:
                    details["witness"] = "the solver's pair did not replay; the certified branch and bound's did"
        tie_note = ""
        if not ok and runtime is not None and mode != "maximize":
            # still a tie within rounding: the refinement over the whole domain, exact on the runtime
            from fairspec.backends.pair import PairResult

            probe = PairResult("unknown", reason="", engine=res.engine, mode=res.mode)
            tie = decide_at_a_tie(prop, problem, probe, ctx.remaining(setting(prop, "timeout", backend)),
                                   situation="the solver's witness lies within the runtime's rounding of the threshold")
            details["at_a_tie"] = tie.stats.get("at_a_tie")
            if tie.status == "holds":
                return Verdict(prop.name, prop.kind, "holds", how="proved", backend=backend,
                               seconds=time.perf_counter() - t0, details=details, reason=tie.reason, proof=tie.proof)
            if tie.status == "violated":
                ok2, X2b, outb = runtime.replay.full(tie.witness.x, tie.witness.x_prime)
                again = _fragile(prop, model, X2b, details) if X2b is not None and outb is not None else None
                if ok2 and again is None:
                    ok, X2, out, fragile = True, X2b, outb, None
                    res = replace(res, witness=tie.witness, value=tie.value)
                    details["witness"] = "the solver's pair did not replay; the refinement's did"
            if not ok and tie.status == "unknown":
                tie_note = tie.reason.removeprefix("; ")
        if not ok:
            from fairspec.kinds.pair_fragile import batched_reason

            why = (batched_reason("the witness pair lies", fragile) if fragile else
                   f"the {backend} witness did not reproduce on the model's runtime (it lies within rounding of "
                   "the threshold); not reported as a violation")
            if tie_note:
                why = f"{why}; {tie_note}"
            if mode == "maximize" and runtime is not None and res.value is not None:
                # no witness reported: the lower end is the pair's measure on the runtime, as any unknown's
                res = _replayed_lower_end(prop, model, runtime, replace(res, best=res.witness))
                if (res.stats or {}).get("solver_best_value") is not None:
                    details["solver_best_value"] = res.stats["solver_best_value"]
                extra.pop("bound", None)
                if res.bound is not None and (res.value is not None or backend == "smt"):
                    extra["bound"] = (float("-inf") if res.value is None else res.value, res.bound)
            return unknown(prop, why, backend=backend, seconds=seconds, details=details,
                           value=_value(backend, mode, res), **extra)
        from fairspec.runtime.encoding import decode_row

        x, xp = X2[0], X2[1]
        from fairspec.kinds.pair_runtime import softmax_class_values     # a logit network's prob: exactly rounded

        outs = (float(out[0]), float(out[1]))
        w = Witness(tuple(map(float, x)), tuple(map(float, xp)), decode_row(enc, fs, x), decode_row(enc, fs, xp),
                    softmax_class_values(prop, model, X2, prop.cls, outs) if isinstance(prop.cls, int) else outs,
                    replayed_by=replayed_by)
        value = _value(backend, mode, res)
        # the value (maximize: or the best value without a certified bound) is the reported, replayed
        # pair's measure on the runtime, not the solver's (real or float64) evaluation of it: they differ
        # by the runtime's rounding, and the solver's may lie below the threshold the runtime's pair breaks
        from fairspec.kinds.pair_runtime import runtime_pair_value
        from fairspec.kinds.pre_search_batches import pair_lower_end as every_batch_low

        rv = runtime_pair_value(prop, model, out, X2)
        if rv is not None:
            if mode != "maximize" or value is not None:
                value = rv
                if "bound" in extra:        # its lower end lower in another batch, too (kinds/pre_search_batches)
                    extra["bound"] = (every_batch_low(prop, model, X2, rv), max(float(extra["bound"][1]), rv))
            if "best_value" in details:
                details["best_value"] = rv
        return Verdict(prop.name, prop.kind, "violated", value=value, witness=w, backend=backend,
                       seconds=seconds, details=details, reason=f"the {backend} solver found a counterexample pair",
                       **extra)
    if res.status == "holds" and res.how == "proved":
        extra["proof"] = res.proof
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=_value(backend, mode, res), backend=backend,
                       seconds=seconds, details=details, reason=res.reason or None, **extra)
    return unknown(prop, res.reason or f"the {backend} solver did not decide the property", backend=backend,
                   seconds=seconds, value=_value(backend, mode, res), details=details, **extra)


def _combined(prop, problem, parts, res, rt):
    """One Proof of the whole domain from the partitions' own (``res.stats["part_proofs"]``), when
    certify can combine them (:func:`fairspec.certify.partitions.combine_partitions`: each about the
    whole property restricted to a box holding its partition, the partitions covering the domain once);
    None otherwise."""
    from fairspec.certify.partitions import combine_partitions, whole_claim

    proofs = res.stats.get("part_proofs") or []
    try:
        expect = whole_claim(problem, readout=rt.readout, precision=rt.precision,
                             label_readout=getattr(rt, "label_readout", None) if problem.post == "label" else None)
    except (ValueError, TypeError, AttributeError):
        return None
    counts: dict = {}
    for p in proofs:
        if p is not None:
            counts[p.method] = counts.get(p.method, 0) + 1
    how = ", ".join(f"{m} x {k}" for m, k in sorted(counts.items()))
    claim = (f"no pair violates {prop.name} on the model's runtime: {len(parts)} partitions of the tied inputs, "
             f"each certified ({how})")
    return combine_partitions(proofs, parts, problem.lo, problem.hi, problem.integer, expect=expect, claim=claim)


def _replayed_lower_end(prop, model, runtime, res):
    """maximize's lower end when no witness is reported (holds, unknown): the solver's best pair
    replayed on the runtime and widened by a batch-rounding runtime's spread
    (:func:`fairspec.kinds.pre_search_batches.best_pair_low`), as a violated verdict's bound is; no value when that pair does not replay or its measure is no score the runtime
    outputs. A value of -inf (no pair meets the pre-condition) stays."""
    import math

    if res.value is None or not math.isfinite(res.value):
        return res
    from fairspec.kinds.pre_search_batches import best_pair_low     # lower in another batch, too

    pair = res.best if res.best is not None else res.witness
    rv = best_pair_low(prop, model, runtime.replay.full, pair)
    # the solver's own evaluation, kept apart and labelled (details.solver_best_value), never an end
    stats = {**(res.stats or {}), "solver_best_value": float(res.value)}
    if rv is not None and res.bound is not None and rv > res.bound:
        return replace(res, value=None, bound=None, stats=stats, reason=f"{res.reason}; the best pair measures "
                       f"{rv!r} on the runtime, above the certified bound {res.bound!r}: no interval reported")
    return replace(res, value=rv, stats=stats)


def _meet(lo, hi) -> bool:
    """The two ends of a maximize interval meet (within 1e-7, relative beyond 1: milp.maximize's)."""
    return hi - lo <= 1e-7 * max(1.0, abs(lo))


def _fragile(prop, model, X2, details: dict) -> dict | None:
    """A replayed witness another batch may round away (:func:`fairspec.kinds.pair_spread.fragile_pair`),
    noted in the details; returned when it does not reproduce alone, as a pair and reversed either:
    it is then not reported."""
    from fairspec.kinds.pair_fragile import rounding_details
    from fairspec.kinds.pair_spread import fragile_pair

    moved = fragile_pair(prop, model, X2)
    if moved:
        details["runtime_rounding"] = rounding_details(moved)
    return moved if moved and not moved["reproduced"] else None


def _retry_fragile(prop, ctx, problem, res, limit):
    """The certified BaB on the whole problem after a witness that did not replay: a ``holds`` with its
    Proof, a ``violated`` whose pair replays on the runtime, or None."""
    from fairspec.backends.pair import PairResult
    from fairspec.backends.pair.certify import certify_result
    from fairspec.planning import setting

    left = None if limit is None else ctx.remaining_at_least(setting(prop, "timeout", "milp"), 0.25 * limit)
    probe = PairResult("holds", "proved", reason="the solver's witness did not replay", engine=res.engine,
                       mode=res.mode)
    out = certify_result(problem, probe, left, "the solver")
    if out.status == "holds" and out.proof is not None:
        return replace(out, reason="the solver's witness lies within rounding of the threshold and does not "
                                   "replay; the certified branch and bound proves the property on the runtime: "
                                   + out.proof.summary)
    if out.status == "violated" and out.witness is not None:
        return out
    return None


def _runtime_label_output(model) -> str | None:
    """What the runtime outputs instead of the logit a label post's measure reads ("its predict", "a
    probability"), or None when it outputs that logit."""
    from fairspec.kinds.pair_runtime import label_by_predict

    if label_by_predict(model):
        return "its predict"
    return None if getattr(model, "score_kind", "logit") == "logit" else "a probability"


def _value(backend, mode, res):
    """maximize reports a value only with its certified interval (``bound``): a value alone would
    claim to be the maximum (e.g. partitions whose budget ran out before some part was bounded)."""
    if mode == "maximize" and res.bound is None:
        return None
    return res.value


def _serial():
    from fairspec.runtime.executor import SerialExecutor
    return SerialExecutor()


def _interval(backend, mode, res) -> dict:
    """The smt backend's certificate and maximize interval: ``proof`` (certify's, for holds) and
    ``bound`` = [best value replayed on the runtime, certified upper bound]."""
    if backend != "smt":
        return {}
    out = {}
    if res.status == "holds" and getattr(res, "proof", None) is not None:
        out["proof"] = res.proof
    if mode == "maximize" and res.bound is not None:
        out["bound"] = (res.value if res.value is not None else float("-inf"), res.bound)
    return out


def _relaxed(prop, fs, enc, low):
    """:func:`fairspec.kinds.lowering.pair_relaxed` (``fs`` unused: the kinds' common signature)."""
    from fairspec.kinds.lowering import pair_relaxed

    return pair_relaxed(prop, enc, low)


def run_milp(prop, ctx, progress=None) -> Verdict:
    return run_pair(prop, ctx, progress, "milp")


def run_smt(prop, ctx, progress=None) -> Verdict:
    return run_pair(prop, ctx, progress, "smt")

