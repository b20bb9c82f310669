"""k-discrimination (HyFair) from the spec: search in feature space, replay, explain.

The search (HyFair Algorithm 1: random walk, simulated annealing, SA + KNN)
runs in *feature space* -- the same space as the solver backends (see
fairspec.kinds.lowering), so integer features stay integral -- and
evaluates the real loaded model on the encoded inputs.  The witness (an
individual and its K counterfactuals) is replayed on the model's independent
evaluator before it is reported.  Search cannot prove that no input reaches
k clusters: a claim that survives the budget is proved only by certify (the
counting bound k <= min(K, buckets), before the search; the branch and bound
over a network's individuals, after it: fairspec.kinds.kdisc_net), else `unknown`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec import ir
from fairspec.kinds.kdisc_witness import replayed_violation
from fairspec.verdict import Verdict, Witness, unknown
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

_METHODS = {None: "sa", "annealing": "sa", "random": "rw", "knn": "sa+knn"}

#: seconds of certify's branch and bound before a network's k-discrimination search (a tenth of the timeout
#: when that is less): a claim it proves at once is not made to wait for the search
EARLY_BAB_SECONDS = 10.0
#: before that branch and bound, the search's first iterations (per restart; at most this many seconds, or a
#: twentieth of the timeout) when it stops at the claim's k: a violation found at once is reported at once
EARLY_SEARCH_ITERATIONS = 5
EARLY_SEARCH_SECONDS = 5.0
#: a search with less time than this runs its restarts in this process: the worker processes' start (each
#: loads the model, the data, scikit-learn for knn) took longer than such a search, and than a short timeout
POOL_SEARCH_SECONDS = 10.0


def _coordinate_names(enc: ir.Encoding, fs: ir.FeatureSet):
    """Names per feature-space coordinate, and a decoder for explanation predicates (category
    names, written so that the fragment parses)."""
    from fairspec.backends.search.explain import category_decoder

    names, codes, onehot = [], {}, {}
    for c in enc.columns:
        if c.kind == "onehot":
            for k, cat in enumerate(c.categories):
                names.append(f"{c.feature}={cat}")
                onehot[c.offset + k] = (c.feature, cat)
        else:
            names.append(c.feature)
            boolean = isinstance(getattr(fs.get(c.feature), "domain", None), ir.Boolean)
            if c.kind == "code":        # the coordinate is the code's rank in the sorted table (lowering)
                codes[c.offset] = tuple(cat for _, cat in sorted(zip((float(x) for x in c.codes), c.categories)))
            elif boolean:               # a raw bool is 0 / 1
                codes[c.offset] = ("false", "true")
            if boolean and c.offset in codes:   # x.f == true (a bool, bare), never x.f >= 1 nor x.f == "true" (FS301)
                codes[c.offset] = tuple(str(v).lower() == "true" for v in codes[c.offset])
    return names, category_decoder(names, codes, onehot)


class _Setup:
    """What the search needs, built from the spec's context (in this process, or once per worker)."""

    def __init__(self, model, low, space, banded, data):
        self.model, self.low, self.space, self.banded, self.data = model, low, space, banded, data

    def evaluate(self, V):
        return self.model.prob_reader()[0](self.low.to_input(V))

    def search_state(self, prop) -> tuple:
        """``(evaluate, space, kwargs)`` for :func:`fairspec.backends.search.kdisc.restart_job`."""
        stop = prop.k if prop.op == "<" else prop.k + 1
        kwargs = {"eps": prop.eps, "scores": "logit" if self.model.prob_reader()[1] else "prob", "method": _METHODS.get(prop.options.search, "sa"),
                  "data": self.data, "stop_at_k": stop}
        return self.evaluate, self.space, kwargs


def _setup(prop: ir.KDiscrimination, ctx):
    """The lowered property, the search space and the data rows; a Verdict (unknown) when the
    property cannot be searched."""
    from fairspec.kinds.lowering import Unsupported, lower_pair
    from fairspec.backends.search.space import Box, Protected, Space

    spec = ctx.spec
    fs = spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    model = ctx.model(prop.model)
    if getattr(model, "format", None) == "rule":
        return unknown(prop, "k-discrimination searches a model file, not a rule", backend="search")
    # discrete protected features take each of their values; a numeric one declared with bins takes a
    # value inside each of its bands (HyFair's age bands), chosen by the search
    banded = tuple(n for n in prop.over if not fs.get(n).is_discrete)
    discrete = tuple(n for n in prop.over if n not in banded)
    pair = ir.IndividualFairness(prop.name, "individual_fairness", prop.options, model=prop.model,
                                 features=prop.features, free=discrete, post="prob", eps=prop.eps)
    try:
        low = lower_pair(pair, fs, enc, any_codes=_reads_trees(model))   # a tree's splits read any code table
    except Unsupported as e:
        return unknown(prop, str(e), backend="search")
    protected = [Protected(cols, vals, (), name) for cols, vals, name in
                 zip(low.protected_columns, low.protected_values,
                     [c.feature for c in enc.columns if c.feature in discrete])]
    for n in banded:
        col = next(c for c in enc.columns if c.feature == n)
        protected.append(Protected.banded(col.offset, ir.numeric_bands(fs.get(n)), n))
    try:
        space = Space(Box.make(low.lo, low.hi, low.integer, low.onehot_groups), tuple(protected))
    except ValueError as e:             # a domain of one individual (every shared coordinate fixed)
        return unknown(prop, f"the search has nothing to vary ({e}): the domain is decided by enumerating it, "
                             "which did not run", backend="search")
    data = None
    if fs.data is not None:
        rows = ctx.rows(fs.name, fs.data)
        U = ctx.model_input(prop.model, rows.frame.values, rows.frame.n_rows)
        data = np.stack([low.to_features(u) for u in U[:20000]])
    return _Setup(model, low, space, banded, data)


def _reads_trees(model) -> bool:
    """Is the model read as a tree ensemble (its splits decided on the codes the runtime feeds, any table)?"""
    from fairspec.models.network import UnsupportedModel

    try:
        return model.tree_ensemble() is not None
    except (UnsupportedModel, ValueError, TypeError):
        return False


def _worker_search_state(spec, roots, prop) -> tuple:
    """Per worker (the executor's ``init``): the model and the data loaded once, the same space."""
    from fairspec.runtime.context import Context

    s = _setup(prop, Context(spec, roots=roots))
    if isinstance(s, Verdict):
        raise RuntimeError(s.reason)
    return s.search_state(prop)


def _stops_at_claim(prop: ir.KDiscrimination) -> bool:
    """May a violation found before the search proper (its first iterations, the early branch and bound)
    end the property? Not when the spec gives the search a budget (`search ... for 60s`: the search runs
    first, as written) nor when it asks for an explanation (`explain tree` is grown around the individuals
    the search finds). The search itself always stops at the first individual that breaks the claim."""
    return not prop.options.search_budget and not prop.options.explain


def _classes_known_at_load(prop: ir.KDiscrimination, ctx):
    """(the property counting predicted classes, a note) for a model that lint could not tell multiclass (a
    pickle: a pipeline ending in an XGBClassifier / LGBMClassifier is one) and whose loaded readout has K >= 3
    columns and no index: what lint makes of k_discrimination without class = c on a multiclass model
    (sema.individual_properties._kdisc_output), where the binary score it was read as does not exist (its
    scoring failed, and a small domain's error ended the whole check). None otherwise."""
    from dataclasses import replace

    m = ctx.spec.model(prop.model)
    if m is None or m.task is not None or m.n_classes is not None or m.format in ("rule", "predictions"):
        return None
    r = getattr(ctx.model(prop.model), "readout", None)
    if getattr(r, "task", None) != "multiclass" or getattr(r, "index", 0) is not None:
        return None
    k = getattr(r, "n_classes", None) or getattr(r, "columns", None)
    return (replace(prop, output="class", cls=None),
            f"model '{prop.model}' has {k} classes, known once its file is loaded: k-discrimination counts its "
            f"predicted classes, and eps does not apply (add class = c to bucket class c's probability by eps)")


def run(prop: ir.KDiscrimination, ctx, progress=None) -> Verdict:
    t0 = time.perf_counter()
    if getattr(prop, "output", "score") != "score":
        from fairspec.kinds.kdisc_outputs import run_outputs

        return run_outputs(prop, ctx, t0, _decide_small)
    if (late := _classes_known_at_load(prop, ctx)) is not None:
        from fairspec.kinds.kdisc_outputs import run_outputs
        from fairspec.verdict import with_note

        return with_note(run_outputs(late[0], ctx, t0, _decide_small), late[1])
    from fairspec.runtime.executor import JobError, SerialExecutor, configured_workers, get_executor
    from fairspec.backends.search.kdisc import RESTARTS, kdisc_restarts
    from fairspec.backends.data.flips import replayer_name
    from fairspec.runtime.encoding import decode_row

    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    setup = _setup(prop, ctx)
    if isinstance(setup, Verdict):
        if getattr(ctx.model(prop.model), "format", None) != "rule":
            small = _decide_small(prop, ctx, ctx.model(prop.model), enc, fs, t0)   # no lowering needed
            if isinstance(small, Verdict):
                return unread_before_search(prop, small, "enumerated whole")
        return setup
    model, low, space = setup.model, setup.low, setup.space
    violated_at = prop.k if prop.op == "<" else prop.k + 1
    small = _decide_small(prop, ctx, model, enc, fs, t0)
    if isinstance(small, Verdict):
        return unread_before_search(prop, small, "enumerated whole")
    exact_note = small or ""
    if not setup.banded:
        from fairspec.kinds.tree_kdisc import decide_kdisc

        try:
            cells = decide_kdisc(prop, ctx, model, enc, fs, t0)   # a tree model: in cells of its split tests
        except MemoryError:
            cells = None
        if cells is not None:
            return unread_before_search(prop, cells, "decided in cells of the trees' split tests")
        exact = _exact_on_trees(prop, ctx, model, low, enc, fs, violated_at, t0)
        if isinstance(exact, Verdict):
            return unread_before_search(prop, exact, "decided over the trees' leaf combinations")
        exact_note = exact or ""
    from fairspec.kinds import kdisc_net

    counted = kdisc_net.by_counting(prop, kdisc_net.counterfactuals(space), t0)   # k <= min(K, buckets)
    if counted is not None:
        return unread_before_search(prop, counted, "bounded by counting the counterfactuals")
    evaluate = setup.evaluate
    from fairspec.planning import setting

    limit = setting(prop, "timeout", "search")
    bab = not setup.banded and kdisc_net.applies(model)     # certify's branch and bound follows the search
    method = _METHODS.get(prop.options.search, "sa")
    task = progress.add_task(f"{prop.name}: k-discrimination search", total=None) if progress else None
    # the independent restarts go through the executor: the model and data are loaded once per worker
    ex = get_executor(RESTARTS) if configured_workers() > 1 else SerialExecutor()
    init = None if isinstance(ex, SerialExecutor) else (_worker_search_state, (ctx.spec, ctx.roots, prop))

    def search(seconds, max_iters=None, serial=False):
        serial = serial or (seconds is not None and seconds < POOL_SEARCH_SECONDS)
        return kdisc_restarts(setup.search_state(prop), executor=SerialExecutor() if serial else ex,
                              init=None if serial else init, seed=prop.options.seed or 0,
                              budget_seconds=seconds, max_iters=max_iters)

    res, probed = None, False
    try:
        if bab and limit and not prop.options.search_budget:
            if _stops_at_claim(prop):
                # the search's first iterations (the same seeds: a prefix of the search below): a violation
                # found at once is replayed at once, not after the branch and bound's tenth of the timeout
                budget = ctx.remaining(min(limit / 20, EARLY_SEARCH_SECONDS))
                res = search(budget, EARLY_SEARCH_ITERATIONS, serial=True)    # no worker processes started for it
                probed = res.witness is not None and res.max_k >= violated_at
                res = res if probed else None
            if res is None:
                # a short branch and bound (a tenth of the timeout, at most 10 s): a claim it proves at once
                # does not wait out the search's half of the timeout (a 600 s timeout: 300 s for a proof of
                # 1 s); a violation it finds is replayed as the one after the search is; what it does not
                # decide goes on as before (the search, then the branch and bound with what is left)
                early = kdisc_net.by_branch_and_bound(prop, ctx, model, low, enc, fs, t0,
                                                      ctx.remaining(min(limit / 10, EARLY_BAB_SECONDS)))
                if isinstance(early, Verdict) and (early.status == "holds" or _stops_at_claim(prop)):
                    return unread_before_search(prop, early, "proved by the branch and bound") \
                        if early.status == "holds" else early
        if not probed:
            # without a search budget of its own the search leaves half the timeout to the branch and bound
            budget = ctx.remaining(prop.options.search_budget or (limit / 2 if bab and limit else limit))  # preparation included
            res = search(budget)
    except JobError as e:
        return unknown(prop, f"the search failed: {e}", backend="search", seconds=time.perf_counter() - t0)
    finally:
        ex.close()
        if progress:
            progress.remove_task(task)
    details = {"K": res.K, "max_k": res.max_k, "ids": res.ids, "success_rate": float(res.success_rate),
               "seconds_to_first_id": res.seconds_to_first_id, "seconds_to_max_k": res.seconds_to_max_k,
               "method": method, "budget_seconds": budget, "evaluations": res.evaluations,
               "restarts": RESTARTS}
    if probed:
        details["max_iterations"] = EARLY_SEARCH_ITERATIONS    # the search's first iterations found it
    w = res.witness
    if (w is None or res.max_k < violated_at) and bab:
        # certify's branch and bound over a network's individuals, in what is left of the timeout
        proved = kdisc_net.by_branch_and_bound(prop, ctx, model, low, enc, fs, t0, ctx.remaining(limit))
        if isinstance(proved, Verdict):
            if proved.status == "holds":
                proved.details.update({f"search_{k}": v for k, v in details.items()})
            return proved
        exact_note += proved
    if w is None or res.max_k < violated_at:
        if limit and ctx.spent() >= limit:
            exact_note += f"; the timeout ({_spec_number(limit)}s) is spent: a longer one may decide the claim"
        return unknown(prop, f"the search ({method}, {budget:g}s) found at most k = {res.max_k} of K = {res.K}; "
                             f"search cannot prove that no input reaches k = {violated_at}{exact_note}", backend="search",
                       seconds=time.perf_counter() - t0, value=float(res.max_k), details=details)
    # a witness is a domain point (bounds, integers, one-hot blocks exclusive) or it is not reported
    if not bool(np.all(space.box.contains(np.asarray(w.inputs, dtype=np.float64)))):
        return unknown(prop, f"the search's k = {res.max_k} witness is not a domain point (bounds, integers, "
                             "one-hot blocks); not reported as a violation", backend="search",
                       seconds=time.perf_counter() - t0, details=details)
    # replay the K counterfactuals on the model's own runtime (fairspec's runtime encoder, then the
    # loaded model's score) and count their buckets exactly (certify: floor(p / eps) with eps as
    # written; a logistic within rounding of a bucket boundary counts for the smaller k)
    from fairspec.backends.smt.runtime import encode_like_runtime
    from fairspec.certify.enumerate import kdisc_by_enumeration

    U = encode_like_runtime(enc, np.stack([np.asarray(v, dtype=np.float64) for v in w.inputs]))
    read, logit = model.prob_reader()      # the score, or a margin-declared booster's own probability
    replayed = np.asarray(read(U), dtype=np.float64)
    probs = 1.0 / (1.0 + np.exp(-replayed)) if logit else replayed
    exact = kdisc_by_enumeration(replayed, K=len(U), eps=prop.eps, op=prop.op, k=prop.k,
                                 logit=logit, claim="the witness's k")
    k_replayed = int(exact.k_lo[0])
    if k_replayed < violated_at:
        return unknown(prop, f"the k = {res.max_k} witness replays to k = {k_replayed} on the model's runtime "
                             "(buckets counted exactly); not reported as a violation", backend="search",
                       seconds=time.perf_counter() - t0, details=details)
    # torch / scikit-learn: counterfactuals within rounding of a bucket boundary (kinds/kdisc_rounding.py)
    from fairspec.kinds import kdisc_rounding as kr

    moved = kr.may_move(prop, model, U, replayed, False)
    m = int(moved.sum()) if moved is not None else 0
    if m and k_replayed - m < violated_at:
        details["runtime_rounding"] = {"individuals": 1, "points_not_exact": m}
        if not kr.reproduces(read, U, kr.breaks_claim(prop, len(U), logit)):
            return unknown(prop, kr.batched_reason(1, m), backend="search", seconds=time.perf_counter() - t0,
                           details=details)
        details["runtime_rounding"]["witness"] = kr.WITNESS_NOTE
    lo_i, hi_i = int(np.argmin(probs)), int(np.argmax(probs))
    details["counterfactuals"] = [{"features": {f: decode_row(enc, fs, u)[f] for f in prop.over},
                                   "prob": float(p)} for u, p in zip(U, probs)]
    if prop.options.explain == "tree":
        details.update(_explain(prop, space, evaluate, res, enc, fs, model))
    witness = Witness(tuple(map(float, U[lo_i])), tuple(map(float, U[hi_i])), decode_row(enc, fs, U[lo_i]),
                      decode_row(enc, fs, U[hi_i]), (float(replayed[lo_i]), float(replayed[hi_i])),
                      replayed_by="onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model))
    return Verdict(prop.name, prop.kind, "violated", value=float(k_replayed), witness=witness, backend="search",
                   seconds=time.perf_counter() - t0, details=details,
                   reason=f"an individual whose {res.K} counterfactuals over {' x '.join(prop.over)} fall into "
                          f"k = {k_replayed} clusters of width {_spec_number(prop.eps)} (claim: k {prop.op} {prop.k})")


def _exact_on_trees(prop, ctx, model, low, enc, fs, violated_at: int, t0: float):
    """Max k of a tree model by branch and bound over its leaf combinations
    (:mod:`fairspec.backends.trees.kdisc`): a Verdict when it decides the claim (a proved max
    k or bound, or a replayed witness), else a note for the search's unknown (or None)."""
    import itertools

    from fairspec.backends.data.flips import replayer_name
    from fairspec.backends.trees.kdisc import max_k
    from fairspec.backends.trees.space import fold
    from fairspec.kinds.kdisc_net import in_domain
    from fairspec.models.network import UnsupportedModel
    from fairspec.runtime.encoding import decode_row

    try:
        ens = model.tree_ensemble()
    except UnsupportedModel:
        return None
    if ens is None:
        return None
    combos = list(itertools.product(*low.protected_values))
    cols = low.protected_columns

    def fixed(combo):
        lo, hi = low.lo.copy(), low.hi.copy()
        for cs, vals in zip(cols, combo):
            lo[list(cs)] = vals
            hi[list(cs)] = vals
        return lo, hi

    try:
        from fairspec.kinds.lowering import encoder_feeds

        feeds = encoder_feeds(enc)
        ensembles = [fold(ens, *fixed(c), low.integer, low.scale, low.shift, feeds) for c in combos]
    except UnsupportedModel:
        return None
    free = {i for cs in cols for i in cs}
    groups = [g for g in low.onehot_groups if not free.intersection(g)]
    from fairspec.kinds.tree_engine_answers import encode_features

    read, logit = model.prob_reader()
    read = model.replay if read == model.score else read

    def counterfactuals(point):
        """The K counterfactuals of a feature-space point, encoded as the runtime encodes them."""
        U = []
        for c in combos:
            v = point.copy()
            for cs, vals in zip(cols, c):
                v[list(cs)] = vals
            U.append(v)
        return encode_features(enc, np.stack(U))

    def library_probs(point):
        """The K counterfactuals' probabilities as the library computes them (prob_reader)."""
        z = np.asarray(read(counterfactuals(point)), dtype=np.float64).reshape(-1)
        return 1.0 / (1.0 + np.exp(-z)) if logit else z

    budget = prop.options.timeout or prop.options.search_budget or 60.0
    # the buckets of the library's probabilities (XGBoost's float32 logistic of its float32 sum), not of
    # the float64 logistic of the converted trees' sums: they differ at a bucket boundary
    r = max_k(ensembles, low.lo, low.hi, low.integer, groups, prop.eps,
              max_boxes=int(prop.options.get("max_boxes", 20000)), deadline=time.perf_counter() + budget / 2,
              evaluate=library_probs)
    details = {"K": len(combos), "max_k": r.best_k, "max_k_bound": r.upper, "exact": r.exact,
               "boxes": r.boxes, "method": "tree leaf combinations (branch and bound)"}
    seconds = time.perf_counter() - t0
    if r.best_k >= violated_at and r.point is not None and in_domain(low, r.point):
        U = counterfactuals(r.point)
        replayed = np.asarray(read(U), dtype=np.float64).reshape(-1)
        probs = 1.0 / (1.0 + np.exp(-replayed)) if logit else replayed
        from fairspec.certify.enumerate import kdisc_by_enumeration

        # the replayed buckets counted exactly (eps as written, the real logistic of a logit)
        again = kdisc_by_enumeration(np.asarray(replayed, dtype=np.float64).reshape(-1), K=len(combos), eps=prop.eps,
                                     op=prop.op, k=prop.k, logit=logit, claim="replay")
        k_rep = int(again.k_lo[0])
        if again.proof is None and k_rep >= violated_at:
            lo_i, hi_i = int(np.argmin(probs)), int(np.argmax(probs))
            details["counterfactuals"] = [{"features": {f: decode_row(enc, fs, u)[f] for f in prop.over},
                                           "prob": float(p)} for u, p in zip(U, probs)]
            w = Witness(tuple(map(float, U[lo_i])), tuple(map(float, U[hi_i])), decode_row(enc, fs, U[lo_i]),
                        decode_row(enc, fs, U[hi_i]), (float(replayed[lo_i]), float(replayed[hi_i])),
                        replayed_by=replayer_name(model))
            how = f"max k = {r.best_k} computed exactly" if r.exact else f"k = {r.best_k} found"
            return Verdict(prop.name, prop.kind, "violated", value=float(k_rep), witness=w, backend="search",
                           seconds=seconds, details=details,
                           reason=f"{how} over the tree model's leaf combinations: an individual whose "
                                  f"{len(combos)} counterfactuals over {' x '.join(prop.over)} fall into "
                                  f"k = {k_rep} clusters of width {_spec_number(prop.eps)} (claim: k {prop.op} {prop.k})")
        return None
    # the leaf-combination bound is computed in float64 on the converted trees, not on the library's
    # runtime: evidence, not a certified proof (the cells of fairspec.kinds.tree_kdisc.decide_kdisc are)
    if r.upper < len(combos):
        return (f"; the tree model's leaf combinations bound max k <= {r.upper} in float64 "
                f"({'exact' if r.exact else 'bounded'} over {r.boxes} boxes), not certified on the library's runtime")
    return None


#: the largest domain (individuals x counterfactuals) decided by enumeration on the runtime
MAX_POINTS = 1_000_000


def _enumeration_off() -> bool:
    """``FAIRSPEC_ENUMERATE_PAIRS=0`` (as for individual fairness, kinds/pair_enumeration.py): no
    domain is enumerated, the search and the tree bound decide -- the differential harness's
    ``kdisc-solver`` family judges them that way."""
    import os

    return os.environ.get("FAIRSPEC_ENUMERATE_PAIRS", "").strip() in ("0", "0.0")


def unread_before_search(prop, v: Verdict, how: str) -> Verdict:
    """A verdict decided before any search reads none of the search's options: the strategy (``search``,
    with its budget), its ``seed``, ``explain`` (of the violations the search finds) -- nor, on a small
    domain enumerated whole, ``timeout`` or ``max_boxes``. Each one the spec sets is said in the verdict's
    notes (lint cannot know: the domain's size and the model's trees are known once it is loaded); a
    seed of 0 is the default, not told from none."""
    from fairspec.verdict import with_note

    unread = [k for k, on in (("search", prop.options.search is not None), ("seed", bool(prop.options.seed)),
                              ("explain", prop.options.explain is not None)) if on]
    if how == "enumerated whole":
        unread += [k for k in ("timeout", "max_boxes") if prop.options.get(k) is not None]
    for k in unread:
        v = with_note(v, f"`{k}` has no effect here: the property was {how}, before any search")
    return v


def _decide_small(prop, ctx, model, enc, fs, t0: float, outputs=None):
    """Every individual of a small discrete domain and its K counterfactuals scored on the model's
    runtime (an int attribute declared with bins: every choice of one value per band, the same for every
    combination of the other attributes, an individual of its own); certify counts every individual's buckets exactly
    (``certify.enumerate.kdisc_by_enumeration``): ``holds (proved: enumeration)``, ``violated``
    with a replayed individual (a domain point by construction), or a note (None when the domain
    is not small and discrete)."""
    from fairspec.backends.data.flips import replayer_name
    from fairspec.certify.enumerate import kdisc_by_enumeration
    from fairspec.kinds.pair_enumeration import _grid, _values
    from fairspec.runtime.encoding import encode

    if outputs is None and (getattr(model, "format", None) == "rule"
                            or getattr(model, "score_kind", None) not in ("prob", "logit")):
        return None
    if outputs is None and model.prob_reader()[0] != model.score:
        outputs = (model.prob_reader()[0], False)       # a margin-declared booster: its library's probability
    evaluate, classes = outputs if outputs is not None else (model.score, False)
    if any(fs.get(n) is None for n in prop.over):
        return None
    # an int attribute declared with bins: its counterfactual in band j takes one value of band j, the same
    # for every combination of the other attributes (the search's band representatives); every choice of
    # the representatives is enumerated, each an individual of its own
    bands = {}
    for n in prop.over:
        f = fs.get(n)
        if not f.is_discrete:
            if not isinstance(f.domain, ir.IntRange):
                return None         # a real attribute's bands: the search picks a value inside each band
            bands[n] = [np.arange(int(a), int(b) + 1, dtype=np.float64) for a, b in ir.numeric_bands(f)]
    names = []
    for c in enc.columns:
        if c.feature not in names:
            names.append(c.feature)
    for n in prop.over:
        if n not in names:
            names.append(n)
    others, overs = [], []
    for n in names:
        if n in bands:
            overs.append((("band", n), np.arange(len(bands[n]), dtype=np.int64)))
            continue
        f = fs.get(n)
        vals = None if f is None else _values(f)
        if vals is None:
            return None
        (overs if n in prop.over else others).append((n, vals))
    choices = [((n, j), b) for n, bs in bands.items() for j, b in enumerate(bs)]
    C = math.prod(len(b) for _, b in choices)
    T = math.prod(len(v) for _, v in others) * C
    K = math.prod(len(v) for _, v in overs)
    if T * K > MAX_POINTS or K < 1 or _enumeration_off():
        return None
    tgrid, _ = _grid(others + [(("choice", key), b) for key, b in choices])
    kgrid, _ = _grid(overs)
    N = T * K
    values = {n: np.repeat(v, K) for n, v in tgrid.items() if not isinstance(n, tuple)}
    for n, v in kgrid.items():
        if not isinstance(n, tuple):
            values[n] = np.tile(v, T)
    for n, bs in bands.items():
        j = np.tile(kgrid[("band", n)], T)
        reps = np.stack([np.repeat(tgrid[("choice", (n, i))], K) for i in range(len(bs))])
        values[n] = reps[j, np.arange(N)]
    X = encode(enc, values, N)
    s = np.asarray(evaluate(X), dtype=np.float64).reshape(-1)
    logit = outputs is None and model.score_kind == "logit"
    who = (f"{T:,} individuals" if not bands else
           f"{T // C:,} individuals and each of the {C:,} choices of one value per band ({T:,} in all)")
    claim = (f"k_discrimination over {{{', '.join(prop.over)}}} "
             + ("of the predicted class" if classes else f"with eps = {prop.eps!r}")
             + f" is {prop.op} {prop.k} for all {who}")
    bounder = getattr(evaluate, "bounds", None)       # the real softmax of a logit network (kdisc_outputs)
    bnd = bounder(X) if bounder is not None else None
    res = kdisc_by_enumeration(s, K=K, eps=prop.eps, op=prop.op, k=prop.k, logit=logit, claim=claim, points=N,
                               classes=classes, bounds=bnd)
    seconds = time.perf_counter() - t0
    details = {"engine": "enumeration", "individuals": T, "K": K, "points": N,
               "max_k": int(res.k_hi.max()) if T else 0, "max_k_lower": int(res.k_lo.max()) if T else 0}
    # torch / scikit-learn: a counterfactual within rounding of a bucket boundary may change bucket in
    # another batch, moving its individual's count by one (kinds/kdisc_rounding.py)
    from fairspec.kinds.kdisc_rounding import batched_reason, may_move

    moved = may_move(prop, model, X, s, classes) if T else None
    m = moved.reshape(T, K).sum(axis=1) if moved is not None else np.zeros(T, dtype=np.int64)
    if m.any():
        details["runtime_rounding"] = {"individuals": int(np.count_nonzero(m)), "points_not_exact": int(m.sum())}
        up = res.k_hi + m
        if res.proof is not None and not np.all(up < prop.k if prop.op == "<" else up <= prop.k):
            details["max_k"] = int(up.max())
            return unknown(prop, batched_reason(int(np.count_nonzero(m)), int(m.sum())), backend="search",
                           seconds=seconds, details=details)
    if res.proof is not None:
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=float(details["max_k"]), backend="search",
                       seconds=seconds, details=details, proof=res.proof,
                       reason=f"every one of the {who} and its {K} counterfactuals was evaluated on the "
                              f"model's runtime: max k = {details['max_k']} (claim: k {prop.op} {prop.k})")
    bad = res.k_lo >= prop.k if prop.op == "<" else res.k_lo > prop.k
    low = res.k_lo - m
    robust = bad & (low >= prop.k if prop.op == "<" else low > prop.k)
    # violations no batch rounds away first; then one that reproduces alone and reversed (a note)
    for which, fragile in ((robust, False), (bad & ~robust, True)):
        v = replayed_violation(prop, model, X, which, K, logit, claim, enc, fs, details, t0, replayer_name(model),
                               f"enumerating all {who} on the model's runtime: an individual whose",
                               replay=evaluate if outputs is not None else None, classes=classes, fragile=fragile,
                               k=res.k_lo)
        if v is not None:
            return v
    if m.any() and bad.any():
        return unknown(prop, batched_reason(int(np.count_nonzero(m)), int(m.sum())), backend="search",
                       seconds=seconds, details=details)
    from fairspec.kinds.kdisc_witness import uncertain_bucket

    if bnd is None and logit:
        from fairspec.certify.enumerate import sigmoid_bounds

        bnd = tuple(np.where(s == 0.0, 0.5, b) for b in sigmoid_bounds(s))      # a logit of 0 is exactly 1/2
    why = (f"{uncertain_bucket(prop, X, K, res, bnd, enc, fs)}; the enumeration of all {who} bounds max k in "
           f"[{details['max_k_lower']}, {details['max_k']}]")
    if outputs is not None:         # the outputs' path has nothing else to try (kdisc_outputs.run_outputs)
        return unknown(prop, why, backend="search", seconds=seconds, details=details)
    return f"; {why}"


def _explain(prop, space, evaluate, res, enc, fs, model) -> dict:
    from fairspec.backends.search.explain import describe, explain, format_conditions, to_spec

    names, decoder = _coordinate_names(enc, fs)
    expl = explain(evaluate, space, list(res.top) or [res.witness], eps=prop.eps, scores=model.score_kind,
                   seed=prop.options.seed, n=3000)
    integer = space.box.integer
    return {"explanation": describe(expl, names, decoder, integer),
            "guardrail": to_spec(expl, names, decoder, "x", integer),
            "explanation_paths": len(expl.paths),
            # the kept paths of the explanation tree, for the HTML report's drawing of the tree
            "explanation_tree": [{"conditions": list(format_conditions(p.predicates, names, decoder, "x", integer)),
                                  "mean_k": round(float(p.mean_k), 4), "mean_k_negated": round(float(p.mean_k_negated), 4),
                                  "support": int(p.support), "volume": float(p.volume)} for p in expl.paths]}
