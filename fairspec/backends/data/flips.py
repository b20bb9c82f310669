"""Counterfactual flips on data: the data-level form of individual fairness.

Every row x of the declared data set is paired with each counterfactual x'
that changes only the free (protected) features, to every other combination
of their values.  A ``label`` post compares the model's own decision
(``LoadedModel.decide``: a binary scikit-learn classifier's ``predict``), as
the group metrics do.  A pair violating the post-condition is replayed on the
model's own evaluator (onnx's reference evaluator for ONNX) before it is
reported as a witness.  No pair found is not a proof: the verdict is then
unknown, and says that a proof needs a solver backend.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from fairspec import ir
from fairspec.runtime.encoding import decode_row, encode
from fairspec.runtime.evaluate import evaluate
from fairspec.runtime.exact_rule import decide_rule
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly
from fairspec.verdict import Unsupported, Verdict, Witness, unknown

MAX_COMBINATIONS = 512


def _to_prob(s: np.ndarray, kind: str) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-s)) if kind == "logit" else s


def _to_logit(s: np.ndarray, kind: str) -> np.ndarray:
    if kind == "logit":
        return s
    p = np.clip(s, 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def violation(prop: ir.IndividualFairness, model, s: np.ndarray, s2: np.ndarray,
              own: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(violated mask, magnitude) of the post-condition on scores s (x) and s2 (x'); ``own``: s and s2
    are the model's own decisions (0/1, :func:`own_decision`)."""
    if own:
        return s != s2, np.abs(s - s2)
    if prop.post == "label":
        d1, d2 = s > model.threshold, s2 > model.threshold
        return d1 != d2, np.abs(_to_prob(s, model.score_kind) - _to_prob(s2, model.score_kind))
    conv = _to_prob if prop.post == "prob" else _to_logit
    gap = np.abs(conv(s, model.score_kind) - conv(s2, model.score_kind))
    return gap > prop.eps, gap - prop.eps


def own_decision(prop: ir.IndividualFairness, model) -> bool:
    """Does the post-condition compare the model's own decision (``LoadedModel.decide``, as the group
    metrics do), which is not its score against the threshold? A ``label`` post on a binary
    scikit-learn classifier whose label is its ``predict`` (a Platt-scaled SVC's probability puts 1/2
    elsewhere than its ``decision_function``'s 0; GaussianNB's predict is the joint likelihood's argmax)
    or a boosted model's declared rule (``index = 0``)."""
    from fairspec.backends.data.batching import decides_by_score

    return prop.post == "label" and not decides_by_score(model)


def _post_values(model, X: np.ndarray, own: bool) -> np.ndarray:
    """What a replay compares: the model's own decision (0/1) where ``own``, else its score on the
    model's own evaluator."""
    if own:
        return np.asarray(model.decide(X), dtype=np.float64).reshape(-1)
    return np.asarray(model.replay(X), dtype=np.float64)


def _value_lists(fs: ir.FeatureSet, free, values) -> list[np.ndarray]:
    out = []
    for name in free:
        f = fs.get(name)
        if f.is_discrete:
            out.append(np.arange(len(f.values()), dtype=np.float64))
        else:  # a numeric protected attribute: the values that occur in the data
            out.append(np.unique(values[name]))
    return out


def sample_rows(values: dict, n: int, options) -> tuple[dict, int]:
    """The rows a flip search reads: all ``n``, or a seeded sample of ``options.max_rows`` of them (in
    row order) when there are more -- the one reading of ``max_rows`` for every flip on data."""
    max_rows = options.max_rows
    if max_rows is None or n <= max_rows:
        return values, n
    take = np.sort(np.random.default_rng(options.seed).choice(n, max_rows, replace=False))
    return {k: v[take] for k, v in values.items()}, max_rows


def run_flips(prop: ir.IndividualFairness, ctx, progress=None, *, timeout: float | None) -> Verdict:
    """Counterfactual flips of every data row; ``timeout`` (seconds, None: no limit) is the option its
    runner resolved (the data backend's ``timeout``), on the property's clock (``Context.remaining``:
    its own work, loads apart; on a Dask worker the cluster's clock of the job starts), looked at
    before each combination after the first."""
    t0 = time.perf_counter()
    spec = ctx.spec
    fs = spec.feature_set(prop.features)
    needs_proof = ("the data backend finds violations and proves none: a proof needs using milp or using smt "
                   "(ReLU networks, linear models, tree ensembles)")
    if fs.data is None:
        return unknown(prop, f"feature set {fs.name} has no data to search for counterfactual flips; {needs_proof}",
                       backend="data")
    model = ctx.model(prop.model)
    if getattr(model, "format", None) == "rule":
        return unknown(prop, "counterfactual flips need a model file, not a rule", backend="data")
    if prop.post == "prob" and hasattr(model, "refuse_classless_prob"):
        try:                # K >= 3 columns read with index: the score is a margin, no probability
            model.refuse_classless_prob()
        except Unsupported as e:
            return unknown(prop, str(e), backend="data")
    rows = ctx.rows(fs.name, fs.data)
    values, n = sample_rows(rows.frame.values, rows.frame.n_rows, prop.options)
    enc = ctx.encoding(prop.model)
    X = encode(enc, values, n)
    own = own_decision(prop, model)
    if own:             # the decisions, and what they threshold (ranks the candidates: the farthest first)
        from fairspec.backends.data.batching import decide_and_score

        d, s, thr = decide_and_score(model, X)
    else:
        s = model.score(X)
        thr = model.threshold
    lists = _value_lists(fs, prop.free, values)
    combos = list(itertools.product(*lists))
    if len(combos) > MAX_COMBINATIONS:
        return unknown(prop, f"{len(combos)} combinations of {', '.join(prop.free)} are too many to flip on data "
                             f"(at most {MAX_COMBINATIONS})", backend="data")

    def lookup_pair(vals2):
        def lookup(e):
            if isinstance(e, ir.FeatureRef):
                return (values if e.var == prop.var else vals2)[e.feature]
            raise TypeError(type(e).__name__)
        return lookup

    found_rows = np.zeros(n, dtype=bool)
    best_mag = np.full(n, -np.inf)
    best_combo = np.full(n, -1)
    pairs = 0
    task = progress.add_task(f"{prop.name}: flips", total=len(combos)) if progress else None
    limit = timeout
    cut = None  # combinations tried when the time budget ran out
    for ci, combo in enumerate(combos):
        if limit is not None and ci and ctx.remaining(limit) <= 0:
            cut = ci
            break
        vals2 = dict(values)
        differs = np.zeros(n, dtype=bool)
        for name, v in zip(prop.free, combo):
            differs |= values[name] != v
            vals2[name] = np.full(n, v)
        mask = differs
        for pre in prop.pre:
            # a witness meets the pre-condition in both readings (README, further conditions): in float64 and
            # as written (exact near a tie: 0.1 * x.a > 0.3 is false at a = 3, true in float64)
            mask &= evaluate(pre, lookup_pair(vals2), n).astype(bool) & decide_rule(pre, lookup_pair(vals2), n)
        if mask.any():
            pairs += int(mask.sum())
            X2 = encode(enc, vals2, n)
            if own:
                d2, s2, _ = decide_and_score(model, X2)
                bad, mag = d != d2, np.abs(s - s2)
            else:
                s2 = model.score(X2)
                bad, mag = violation(prop, model, s, s2)
            if prop.post == "label":
                # a decision flip is ranked by how far both decisions lie from the threshold, the farthest
                # first: the witness reported is then one no other batching moves where there is one (a
                # score at the threshold itself flips in the batchings fairspec replays, not in every one)
                mag = np.minimum(np.abs(np.asarray(s, dtype=np.float64) - thr),
                                 np.abs(np.asarray(s2, dtype=np.float64) - thr))
            bad &= mask
            better = bad & (mag > best_mag)
            best_mag[better] = mag[better]
            best_combo[better] = ci
            found_rows |= bad
        if progress:
            progress.advance(task)
    details = {"rows": int(n), "pairs": pairs, "rows_with_flip": int(found_rows.sum()),
               "counterfactuals_per_row": len(combos) - 1}
    if cut is not None:
        details["timed_out_after_combinations"] = cut
    if not found_rows.any():
        spent = "" if cut is None else f"; the time budget ({_spec_number(limit)}s) ran out after {cut} of {len(combos)} combinations"
        return unknown(prop, f"no counterfactual flip among {n} data rows ({pairs} pairs){spent}; {needs_proof}",
                       backend="data", seconds=time.perf_counter() - t0, details=details)
    # replay the strongest candidates on the model's own evaluator; a runtime that rounds by batch
    # (batching.checked) replays each as a pair, reversed and each point alone, and reports it only if
    # every one of them breaks the post-condition (a pair at a batch tie breaks it in some batches only)
    from fairspec.backends.data.batching import checked
    from fairspec.models.batching import BATCHED

    by_batch = checked(model)
    tied = near = 0
    order = np.argsort(-np.where(found_rows, best_mag, -np.inf))[: min(20, int(found_rows.sum()))]
    for r in order:
        combo = combos[int(best_combo[r])]
        one = {k: v[r:r + 1] for k, v in values.items()}
        one2 = dict(one)
        for name, v in zip(prop.free, combo):
            one2[name] = np.array([v])
        x, x2 = encode(enc, one, 1)[0], encode(enc, one2, 1)[0]
        replayed = _post_values(model, np.stack([x, x2]), own)
        bad, _ = violation(prop, model, replayed[:1], replayed[1:], own)
        if by_batch and not (bad[0] and _breaks_in_every_batching(prop, model, x, x2, own)):
            tied += 1                   # broke in the data's batch: not in this one
            continue
        if by_batch and bad[0] and (_decided_within_rounding(model, x, x2, own) if prop.post == "label"
                                    else _apart_within_rounding(prop, model, x, x2)):
            near += 1                   # a decision (a difference past eps) another batching may move back
            continue
        if bad[0]:
            if by_batch:
                details["batching"] = {"replayed": "as a pair, reversed and each point alone",
                                       "candidates_batch_dependent": tied}
            w = Witness(tuple(float(v) for v in x), tuple(float(v) for v in x2),
                        decode_row(enc, fs, x, {k: v[0] for k, v in one.items()}),
                        decode_row(enc, fs, x2, {k: v[0] for k, v in one2.items()}), (float(replayed[0]), float(replayed[1])),
                        replayed_by=replayer_name(model))
            share = float(found_rows.mean())
            return Verdict(prop.name, prop.kind, "violated", value=float(share), witness=w, backend="data",
                           seconds=time.perf_counter() - t0, details=details,
                           reason=f"{int(found_rows.sum())} of {n} data rows {_broken(prop)} under a counterfactual "
                                  f"change of {', '.join(prop.free)}")
    if near:
        what = ("have a decision within the runtime's rounding of the threshold: another batching of the model may "
                "decide them otherwise" if prop.post == "label" else
                f"exceed eps ({prop.eps:g}) by no more than the runtime's rounding: another batching of the model "
                f"may put them at or below eps")
        return unknown(prop, f"the counterfactual flips found ({near} replayed) each {what}; {BATCHED}",
                       backend="data", seconds=time.perf_counter() - t0,
                       details={**details, "batching": {"candidates_batch_dependent": tied,
                                                        "candidates_within_rounding": near}})
    if tied:
        return unknown(prop, f"{tied} candidate pair{'s' if tied != 1 else ''} of data rows break"
                             f"{'s' if tied == 1 else ''} it in the data's batch and not in another (as a pair, "
                             f"reversed, or each point alone): {BATCHED}", backend="data",
                       seconds=time.perf_counter() - t0,
                       details={**details, "batching": {"candidates_batch_dependent": tied}})
    return unknown(prop, "candidate witnesses did not reproduce on the model's reference evaluator "
                         "(a fairspec bug: please report it)", backend="data", seconds=time.perf_counter() - t0,
                   details=details)


def _breaks_in_every_batching(prop, model, x, x2, own: bool = False) -> bool:
    """Does the pair break the post-condition scored (``own``: decided) reversed and each point alone, as
    well (a runtime that rounds by batch)?"""
    rev = _post_values(model, np.stack([x2, x]), own)
    one, two = _post_values(model, x[None, :], own), _post_values(model, x2[None, :], own)
    return bool(violation(prop, model, rev[1:], rev[:1], own)[0][0] and violation(prop, model, one, two, own)[0][0])


def _decided_within_rounding(model, x, x2, own: bool = False) -> bool:
    """Does a decision of the pair lie within the runtime's rounding of its threshold (the spread of
    :func:`fairspec.backends.data.batching.spread`: twice certify's error bound where it covers the model,
    else the assumed one), where a batching other than those replayed may decide it otherwise?"""
    from fairspec.backends.data.batching import decide_and_score, decision_spread, spread

    X = np.stack([x, x2])
    if own:
        _, z, thr = decide_and_score(model, X)
    else:
        z, thr = np.asarray(model.score(X), dtype=np.float64), float(model.threshold)
    z = np.asarray(z, dtype=np.float64).reshape(-1)
    if z.size != 2:                     # not one score per point: no threshold to be near
        return False
    width, _ = decision_spread(model, X, z) if own else spread(model, X, z)
    with np.errstate(invalid="ignore"):
        return not bool(np.all(np.abs(z - thr) > width))


def _apart_within_rounding(prop, model, x, x2) -> bool:
    """Might another batching put the pair's difference (a ``prob`` / ``logit`` post) at or below eps? Each
    point's score may lie anywhere within the runtime's spread of this batch's
    (:func:`fairspec.backends.data.batching.spread`, as :func:`_decided_within_rounding`); the post's
    conversion of a score is monotone, so the smallest difference over those intervals is that of their
    nearest ends (0 where they overlap)."""
    from fairspec.backends.data.batching import spread

    X = np.stack([x, x2])
    z = np.asarray(model.score(X), dtype=np.float64).reshape(-1)
    if z.size != 2:                     # not one score per point: nothing bounds its rounding
        return True
    width, _ = spread(model, X, z)
    conv = _to_prob if prop.post == "prob" else _to_logit
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lo, hi = conv(z - width, model.score_kind), conv(z + width, model.score_kind)
        nearest = max(lo[0], lo[1]) - min(hi[0], hi[1])
    return not bool(nearest > prop.eps)


def _broken(prop) -> str:
    if prop.post == "label":
        return "change decision"
    what = {"prob": "probability", "value": "value"}.get(prop.post, "logit")     # a regression's value: not a logit
    from fairspec.syntax.literals import number

    # `< eps` is broken at eps itself: "by at least"; the threshold as the spec writes it (not {:g})
    return f"move their {what} by {'at least' if getattr(prop, 'eps_op', '<=') == '<' else 'more than'} {number(prop.eps)}"


def replayer_name(model) -> str:
    return {"onnx": "onnx.reference.ReferenceEvaluator", "torch": "torch", "sklearn": "scikit-learn",
            "xgboost": "xgboost", "lightgbm": "lightgbm"}.get(
        getattr(model, "format", ""), "model")
