"""A pair meeting the whole pre-condition searched for where a relaxation did not give one (session 32).

kinds/pre_relax decides a further pre-condition the solvers cannot lower exactly on its relaxation (whole
conjuncts dropped). A ``violated`` of the relaxation whose witness misses the dropped conjuncts -- or one that
sits at the outward-rounded end of a tied real's hull (``x.r > 0.45`` met by 0.44999999999999996 in neither
reading), or an ``unknown`` of the relaxation -- says nothing of the pairs meeting the pre-condition. Here a
pair that does is searched for, restricted to the pre-condition's region:

1. candidates: the relaxation's pair in both orders, each feature the pre-condition reads moved in turn (a
   real by 1, 2, 4, ... ulps either way: the smallest step into an open region; a discrete feature to each
   value the pre-condition's constants name, and its neighbours), and samples of the admissible pairs of the
   domain (tied features equal, relaxed ones within their tolerance, the protected ones differing), with the
   pre-condition's constants and their neighbours among the values drawn;
2. every candidate scored on the model in batches; those meeting the pre-condition (read in floats: a filter
   only) kept, and a local search moves the best of them (the largest violation of the post-condition) a few
   rounds, within the domain and the pre-condition;
3. a candidate that breaks the post-condition in the floats is reported only after the checks every
   witness passes: in the declared domain and admissible, meeting the whole pre-condition read exactly
   (pre_relax.complete_witness: kinds/pair_pre.PairPre's reading, both readings of each constant), its
   printed values exactly the model's inputs, and replayed on the real model (kinds/pair_replay.flip_replays:
   certify's exact comparison on the runtime, `<` as `<`; a network's pair also alone and reversed,
   kinds/pair_spread.fragile_pair).

The candidates of steps 1 and 2, their float filter and their score on the model are kinds/pre_search_candidates.

The search is bounded by a count of scored pairs (:data:`MAX_SCORED`; the property's time budget stops it
too) and seeded (the property's ``seed``). It only finds: no pair found is ``unknown`` with what was tried,
never ``holds``. Binary posts (label, prob, logit; prob of a logit model guided by the logistic's certain
difference of the logits -- or predict_proba's where the library computes it -- as the witness check compares them,
not by the logits' difference, which ranks saturated pairs first); a tree model's class / prob(c) / logit(c) / value
posts too (replayed on its library as kinds/tree_outputs' data flips are); a network's class post (replayed as
kinds/multi_pairs replays its witnesses) and its prob(c) / logit(c) posts, one class or forall c (replayed as
kinds/class_prob replays its witnesses: certify's exact comparison of the runtime's columns, also alone and
reversed within its rounding; details.class the class shown). A real only the pre-condition reads (the model does
not) is sampled and moved as the others are and its float printed in the witness (pre_relax.complete_witness
takes it only within its range, each end read as stored and as written; its tie or tolerance checked exactly); so
is an int of more than 256 values (complete_witness chooses the values of narrower ones itself), printed as the
whole number, taken only as an int of its range; a narrower discrete one too where the completion cannot choose its
values (more combinations meet the conjuncts on each one alone than it walks: `x.u + x.v == 300`; session 34),
checked by complete_witness in its domain, tied or within its tolerance, and against the whole pre-condition."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fairspec import ir
from fairspec.kinds.pre_search_batches import every_batch
from fairspec.kinds.pre_search_candidates import _Scorer, _Space

#: candidate pairs scored on the model, at most (the search's work bounded by a count, not the machine's speed)
MAX_SCORED = 24_576
#: candidates scored in one batch
BATCH = 2048
#: candidates checked exactly and replayed, at most
MAX_CHECKED = 64
#: local-search rounds from the best candidates
ROUNDS = 8


class Found:
    """The search's answer: ``witness`` (replayed, meeting the pre-condition) and ``value``, or None and ``tried``."""

    def __init__(self, witness=None, value=None, tried: str = "", low=None, extra=None):
        self.witness, self.value, self.tried, self.extra = witness, value, tried, extra or {}
        self.low = self.lower = value if low is None else low   # <= the pair's measure (lower: in every batch)

    def verdict(self, prop, v, details: dict, upper, said: str, backend: str, t0: float):
        return found_verdict(prop, self, v, details, upper, said, backend, t0)


def searcher(tree: bool):
    """What kinds/individual_fairness hands kinds/pre_relax (which cannot import this module: its engines import
    pre_relax): ``make(prop, ctx, fs, enc, backend)`` gives ``search(pair) -> Found`` for pre_relax.finish;
    ``tree``: the model is one the tree backends read (individual_fairness.is_tree_model)."""
    def make(prop, ctx, fs, enc, backend):
        return lambda pair: search(prop, ctx, fs, enc, backend, tree, pair)
    return make


def search(prop: ir.IndividualFairness, ctx, fs: ir.FeatureSet, enc: ir.Encoding, backend: str, tree: bool,
           seed_pair=None):
    """A pair meeting ``prop``'s whole pre-condition that breaks its post-condition on the model (the module's
    steps), from the relaxation's witness ``seed_pair`` (or None) and samples of the domain: a :class:`Found`."""
    from fairspec.planning import setting

    if prop.post not in ("label", "prob", "logit", "class", "class_prob", "class_logit") and not tree:
        return Found(tried=f"no search for such a pair: a network's {prop.post} post is not searched")
    try:
        space = _Space(prop, fs, enc)
    except ValueError as e:
        return Found(tried=f"no search for such a pair ({e})")
    left = ctx.remaining(setting(prop, "timeout", backend))
    if left is not None and left <= 0:
        return Found(tried="no search for such a pair: the time budget was spent")
    import time

    deadline = None if left is None else time.perf_counter() + float(left)
    model = ctx.model(prop.model)
    rng = np.random.default_rng(int(setting(prop, "seed", backend) or 0))
    scorer = _Scorer(prop, model, enc, tree)
    pool = []                                   # (margin, A, B) of candidates meeting the pre-condition (floats)
    seen = set()                                # candidates checked exactly already
    scored = checked = 0
    why = ""

    def batch(A, B):
        nonlocal scored, checked, why
        keep = space.admissible(A, B) & space.pre_float(A, B, loose=True)
        A, B = {k: v[keep] for k, v in A.items()}, {k: v[keep] for k, v in B.items()}
        n = int(keep.sum())
        if not n:
            return None
        m = scorer.margin(A, B)
        scored += n
        pool.append((m, A, B))
        # those meeting it on their own values of the features the completion chooses first (space.pre_float)
        strict = space.pre_float(A, B) if space.unread_chosen else np.ones(n, dtype=bool)
        for k in np.lexsort((-m, ~strict)):
            if checked >= MAX_CHECKED:
                break
            if m[k] < -1e-9 * max(1.0, abs(float(m[k]))):
                if strict.all():
                    break           # sorted by margin alone: none after it breaks the post either
                continue
            # a candidate off the filter on its own values of the features the completion chooses is checked by
            # the completion alone: one of them per value of the others
            cols = A if strict[k] else {f: v for f, v in A.items() if f not in space.unread_chosen}
            colsb = B if strict[k] else {f: v for f, v in B.items() if f not in space.unread_chosen}
            key = (bool(strict[k]),) + tuple(float(v[k]) for v in cols.values()) + \
                tuple(float(v[k]) for v in colsb.values())
            if key in seen:
                continue
            seen.add(key)
            checked += 1
            got, whynot = every_batch(_verified(prop, ctx, fs, enc, model, tree, space, A, B, int(k)), prop, model, tree)
            if got is not None:
                return got
            why = why or whynot
        return None

    seeds = space.from_witness(seed_pair) if seed_pair is not None else []
    stages = [("moves", lambda: space.moves(seeds)), *[("samples", lambda: space.samples(rng, BATCH))] * 4]
    for _ in range(ROUNDS):
        stages.append(("local", lambda: space.local(rng, _best(pool, 64), BATCH)))
    stopped = ""
    try:
        for _name, make in stages:
            if scored >= MAX_SCORED or (deadline is not None and time.perf_counter() > deadline):
                break
            cand = make()
            if cand is None:
                continue
            got = batch(*cand)
            if got is not None:
                return got
    except Exception as e:  # noqa: BLE001 - a search that fails finds nothing: the unknown says where it stopped
        stopped = f"; it stopped early ({type(e).__name__}: {e})"
    tried = (f"a search restricted to the pre-condition's region ({'the relaxation pair moved, ' * bool(seeds)}"
             f"samples of the domain and a local search: {scored:,} candidate pairs meeting it, read in floats, "
             f"scored on the model; {checked} checked exactly and replayed) found none that breaks the "
             "post-condition" + (f" (the first checked: {why})" if why else "") + stopped)
    return Found(tried=tried)


def found_verdict(prop, got: Found, v, details: dict, upper, said: str, backend: str, t0: float):
    """``violated`` with the search's pair (pre_relax.finish, where the relaxation's ``v`` gave no pair meeting
    the pre-condition): its measure the value, maximize's interval [that measure, the relaxation's certified
    upper bound ``upper``] (no value without one: a value alone would claim to be the maximum)."""
    import time

    from fairspec.planning import setting
    from fairspec.verdict import Verdict

    d = {**details, **got.extra}
    # find / prove: the pair's measure rounded down (got.low: pair_runtime.pair_measure, as every reported pair
    # value; a tree's nearest float may lie above it); maximize: the nearest float and [that low, upper], as a
    # tree's enumeration reports its maximum
    value, bound = got.low, None
    if setting(prop, "mode", backend) == "maximize":
        value = got.value
        if upper is not None and value is not None:
            bound = (got.lower, max(value, float(upper[1])))
            d["maximum"] = (f"[the witness's measure, the certified upper bound over {said}]; the witness meets the "
                            "pre-condition (found by a search restricted to it)")
        else:
            if value is not None:
                d["best_value"] = value
            value, bound = None, upper
            d["maximum"] = ("no certified upper bound" if upper is None else
                            f"at most {upper[1]!r}: the certified upper bound over {said}")
    d["witness"] = ("found by a search restricted to the pre-condition's region (kinds/pre_search), checked against "
                    "it exactly and replayed on the model")
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=got.witness,
                   backend=v.backend or backend, seconds=time.perf_counter() - t0, details=d,
                   reason=f"a pair meeting the pre-condition, read exactly, breaks the post-condition on the model's "
                          f"runtime: found by a search restricted to the pre-condition's region after its relaxation "
                          f"({said}) gave none")


def _best(pool, k: int):
    """The ``k`` candidates of ``pool`` with the largest margins (A, B), or None."""
    if not pool:
        return None
    m = np.concatenate([p[0] for p in pool])
    keys = pool[0][1].keys()
    A = {f: np.concatenate([p[1][f] for p in pool]) for f in keys}
    B = {f: np.concatenate([p[2][f] for p in pool]) for f in keys}
    top = np.argsort(-m, kind="stable")[:k]
    del pool[:-1]
    pool[0] = (m[top], {f: v[top] for f, v in A.items()}, {f: v[top] for f, v in B.items()})
    return {f: v[top] for f, v in A.items()}, {f: v[top] for f, v in B.items()}


def _verified(prop, ctx, fs, enc, model, tree, space, A, B, k):
    """Candidate ``k`` as a replayed Found, or (None, why not): the checks of the module's step 3."""
    from fairspec.kinds.pair_replay import flip_replays
    from fairspec.kinds.pre_relax import complete_witness
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.verdict import Unsupported, Witness

    vals = {f: np.array([A[f][k], B[f][k]], dtype=np.float64) for f in space.encoded}
    X2 = encode(enc, vals, 2)
    fx, fy = decode_row(enc, fs, X2[0]), decode_row(enc, fs, X2[1])
    for n in space.unread_given:        # a real / wide int only the pre-condition reads: the search's, printed
        num = float if space.dom[n][0] == "real" else int
        fx[n], fy[n] = num(A[n][k]), num(B[n][k])
    w = Witness(tuple(map(float, X2[0])), tuple(map(float, X2[1])), fx, fy)
    why = space.outside(w)
    if why:
        return None, why
    try:
        got = complete_witness(prop, fs, enc, w)
    except Unsupported as e:
        got = None
        if space.unread_chosen:     # the completion could not choose them: the candidate's own values, checked
            try:
                got = complete_witness(prop, fs, enc, replace(w, features={**fx, **space.given(A, k)},
                                                              features_prime={**fy, **space.given(B, k)}))
            except Unsupported:
                got = None
        if got is None:
            return None, f"the pre-condition is not read exactly on it: {e}"
    if got is None:
        return None, "it does not meet the pre-condition read exactly"
    X2 = np.array([got.x, got.x_prime], dtype=np.float64)

    class _V:
        witness = got
    if tree and prop.post not in ("label", "prob", "logit"):
        broke = _tree_output(prop, model, X2)
        if broke is None:
            return None, "it does not break the post-condition on the library's runtime"
        out, value, low, by, extra = broke
        return Found(replace(got, outputs=out, replayed_by=by), value,
                     "a search restricted to the pre-condition's region", low, extra), None
    if prop.post == "class" and not tree:
        return _network_class(prop, model, got, X2)
    if prop.post in ("class_prob", "class_logit") and not tree:
        return _network_columns(prop, model, got, X2)
    if not flip_replays(prop, model, _V, tree):
        return None, "it does not break the post-condition on the model's runtime"
    if not tree:
        from fairspec.kinds.pair_spread import fragile_pair

        moved = fragile_pair(prop, model, X2)
        if moved and not moved["reproduced"]:
            return None, "it lies within the runtime's rounding of the threshold (another batch may decide it)"
    out, value, low, by = _outputs(prop, model, X2, tree)
    return Found(replace(got, outputs=out, replayed_by=by), value,
                 "a search restricted to the pre-condition's region", low), None


def _network_class(prop, model, got, X2):
    """A network's class post on the encoded pair ``X2`` replayed as kinds/multi_pairs replays its witnesses: the
    runtime's predicted classes (``predict_class``, the first largest column) differ, also alone and reversed
    within its rounding of a class boundary. (Found, None), or (None, why not)."""
    from fairspec.backends.data.flips import replayer_name
    from fairspec.kinds.pair_spread import fragile_pair

    k = model.predict_class(X2)
    if k[0] == k[1]:
        return None, "its predicted classes do not differ on the model's runtime"
    moved = fragile_pair(prop, model, X2)
    if moved and not moved["reproduced"]:
        return None, "it lies within the runtime's rounding of a class boundary (another batch may decide it)"
    by = "onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model)
    return Found(replace(got, outputs=(float(k[0]), float(k[1])), replayed_by=by), None,
                 "a search restricted to the pre-condition's region"), None


def _network_columns(prop, model, got, X2):
    """A network's prob(c) / logit(c) post (forall c: every column) on the encoded pair ``X2`` replayed as
    kinds/class_prob replays its witnesses: the runtime's probabilities (``class_probabilities``) or logit columns
    compared exactly by certify (``<`` as ``<``) in both orders, a pair within the runtime's rounding of the
    threshold also alone and reversed; forall c, the class whose exact difference is the largest of those that break
    it (details.class). (Found, None), or (None, why not)."""
    from fractions import Fraction

    from fairspec.backends.data.flips import replayer_name
    from fairspec.certify.enumerate import largest_class
    from fairspec.certify.rounding import float_down
    from fairspec.kinds.pair_runtime import (post_scores, real_softmax, runtime_violates, softmax_class_values,
                                             softmax_pair_value)
    from fairspec.kinds.pair_spread import fragile_pair

    S, _ = post_scores(prop, model, X2)
    if S is None:
        return None, f"the model's runtime gives no {prop.post} columns"
    S = np.asarray(S, dtype=np.float64).reshape(2, -1)
    one = isinstance(prop.cls, int)
    classes = [int(prop.cls)] if one else list(range(S.shape[1]))
    broke = []
    for c in classes:
        col = 0 if one else c
        pc = replace(prop, cls=c)
        if not runtime_violates(pc, model, S[:1, col], S[1:, col], X2=X2)[0]:     # prob of logits: the real softmax
            continue
        moved = fragile_pair(pc, model, X2)
        if moved and not moved["reproduced"]:
            continue
        broke.append((c, col))
    if not broke:
        return None, "it does not break the post-condition on the model's runtime (or only within its rounding)"
    c, col = broke[0]
    if not one:             # the class of largest difference among those that break it (its measure)
        top = largest_class(S.T, col)
        if any(k == top for k, _ in broke):
            c, col = top, top
    if real_softmax(prop, model):       # the real softmax's exact difference rounded down, not its floats'
        value = softmax_pair_value(prop, model, X2, c)
    else:
        value = float_down(abs(Fraction(float(S[0, col])) - Fraction(float(S[1, col]))))
    by = "onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model)
    outputs = softmax_class_values(prop, model, X2, c, S[:, col])     # a logit network's: exactly rounded
    return Found(replace(got, outputs=outputs, replayed_by=by), value,
                 "a search restricted to the pre-condition's region", value, {"class": c}), None


def _tree_output(prop, model, X2):
    """A tree model's class / prob(c) / logit(c) / value post on the encoded pair ``X2``, replayed on the library
    and compared exactly in both orders as kinds/tree_outputs' data flips are: (outputs, value, a float at or
    below it, who replayed it, details) when it breaks the post, else None; forall c: the class breaking it the
    most (details.class, as kinds/tree_boxes says it)."""
    from fractions import Fraction

    from fairspec.certify.enumerate import compare_exact, largest_class
    from fairspec.kinds.pair_runtime import pair_measure
    from fairspec.kinds.tree_outputs import _outputs as library_outputs
    from fairspec.kinds.tree_pairs import runtime_name

    sw = library_outputs(model, X2, prop.post, prop.cls)
    if sw is None:
        return None

    def kept(r):
        return bool(compare_exact(r[:1], prop.eps_op, prop.eps, minus=r[1:])[0]
                    and compare_exact(r[1:], prop.eps_op, prop.eps, minus=r[:1])[0])
    sw, extra = np.asarray(sw), {}
    if sw.ndim == 2:
        cols = [c for c, r in enumerate(sw) if not kept(r)]
        if not cols:
            return None
        extra["class"] = int(largest_class(sw, cols[0]))
        sw = sw[extra["class"]]
    elif prop.post == "class" and sw[0] == sw[1] or prop.post != "class" and kept(sw):
        return None
    value = low = None
    if prop.post != "class":        # the nearest float of the exact measure, and it rounded down (pair_measure)
        value, low = float(abs(Fraction(float(sw[0])) - Fraction(float(sw[1])))), pair_measure("value", "", *sw)
    return (float(sw[0]), float(sw[1])), value, low, runtime_name(model), extra


def _outputs(prop, model, X2, tree):
    """The pair's outputs as the witness shows them, its measure (maximize's value: the nearest float, and a float
    at or below it exactly) and who replayed it."""
    if tree:
        from fractions import Fraction

        from fairspec.backends.trees.runtime import runtime_outputs
        from fairspec.kinds.pair_runtime import pair_measure
        from fairspec.kinds.tree_pairs import runtime_name

        o = runtime_outputs(model, X2, prop.post)
        ex = abs(Fraction(float(o[0])) - Fraction(float(o[1])))      # nearest float, and rounded down (pair_measure)
        value, low = (None, None) if prop.post == "label" else (float(ex), pair_measure("value", "", o[0], o[1]))
        return (float(o[0]), float(o[1])), value, low, runtime_name(model)
    from fairspec.backends.data.flips import replayer_name
    from fairspec.kinds.pair_runtime import post_scores, runtime_pair_value

    s, _ = post_scores(prop, model, X2)
    by = "onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model)
    value = runtime_pair_value(prop, model, s, X2)      # as a solver witness's value (kinds/individual_fairness)
    if isinstance(prop.cls, int):                       # a logit network's prob(m(x), c): exactly rounded
        from fairspec.kinds.pair_runtime import softmax_class_values

        return softmax_class_values(prop, model, X2, prop.cls, s), value, value, by
    return (float(s[0]), float(s[1])), value, value, by
