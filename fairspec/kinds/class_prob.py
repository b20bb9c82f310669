"""``|prob(m(x), c) - prob(m(x'), c)| op eps`` (one class, or ``forall c``) of a K-output network on a
domain too large to enumerate (issue 25).

1. An **attack** on the runtime: random domain points, each with every combination of the protected
   values (and random relaxed offsets), scored by the loaded model (``class_probabilities``: the
   runtime's softmax, or fairspec's float64 softmax of its float32 logits), then a local search from
   the best points. A pair that breaks the post-condition on the runtime (certify's exact
   comparison, the pre-condition checked) is ``violated``.
2. certify's **branch and bound** over the softmax (:func:`fairspec.certify.class_prob.bound_class_prob`):
   ``proved`` (one bab-certificate per class, joined for ``forall c``), ``violated`` (a probed pair,
   replayed here), or out of budget: ``unknown`` with the certified bound it reached.

``maximize``: the largest ``|p_c(x) - p_c(x')|`` as [best replayed, certified bound].
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from fairspec import ir
from fairspec.verdict import Verdict, Witness, unknown

#: at most this many combinations of the protected values (the B&B scores them per node)
MAX_COMBOS = 256


def _random_points(rng, k, lo, hi, integer, groups, shared_scalar):
    X = np.tile(lo, (k, 1))
    for i in shared_scalar:
        if hi[i] > lo[i]:
            X[:, i] = rng.integers(int(lo[i]), int(hi[i]) + 1, size=k) if integer[i] else \
                rng.uniform(lo[i], hi[i], size=k)
    for g in groups:
        allowed = [j for j in g if hi[j] >= 1.0]
        X[:, list(g)] = 0.0
        pick = rng.integers(0, len(allowed), size=k)
        X[np.arange(k), np.array(allowed)[pick]] = 1.0
    return X


def _attack(pre, combos, free, relaxed, evaluate, classes, admissible, rng, seconds: float,
            stop_above: float | None = None):
    """Per class ``c``: the best pair found, ``(value, x, x')`` (value the float difference p_c(x) - p_c(x'));
    the search stops early once a difference is above ``stop_above`` (the caller replays it)."""
    t_end = time.monotonic() + seconds
    n = pre.n
    lo, hi, integer = np.asarray(pre.lo), np.asarray(pre.hi), np.asarray(pre.integer)
    fset = set(free)
    grouped = {j for g in pre.onehot_groups for j in g}
    groups = [g for g in pre.onehot_groups if not fset.intersection(g)]
    scalar = [i for i in range(n) if i not in fset and i not in grouped]
    V = combos.shape[0]
    ia, ib = np.nonzero(admissible)
    best = {c: (-math.inf, None, None) for c in classes}

    def score(S):
        k = S.shape[0]
        X = np.repeat(S, V, axis=0)
        if free:
            X[:, list(free)] = np.tile(combos, (k, 1))
        XP = X.copy()
        for i, t in relaxed:
            if integer[i]:
                off = rng.integers(-math.floor(t), math.floor(t) + 1, size=X.shape[0]).astype(np.float64)
            else:
                off = rng.uniform(-t, t, size=X.shape[0])
            XP[:, i] = np.clip(X[:, i] + off, lo[i], hi[i])
        P = np.asarray(evaluate(np.vstack([X, XP])), dtype=np.float64)
        Px, Pp = P[:X.shape[0]].reshape(k, V, -1), P[X.shape[0]:].reshape(k, V, -1)
        per = np.full(k, -math.inf)
        for c in classes:
            D = Px[:, ia, c] - Pp[:, ib, c]              # (k, admissible pairs)
            if not D.size:
                continue
            j = np.argmax(D, axis=1)
            v = D[np.arange(k), j]
            per = np.maximum(per, v)
            s = int(np.argmax(v))
            if v[s] > best[c][0]:
                r = s * V
                best[c] = (float(v[s]), X[r + ia[j[s]]].copy(), XP[r + ib[j[s]]].copy())
        return per

    S = _random_points(rng, 256, lo, hi, integer, groups, scalar)
    per = score(S)
    top = S[np.argsort(-per)[:4]]
    top_v = np.sort(per)[::-1][:4]
    movable = scalar + [("g", g) for g in groups]
    def done():
        return stop_above is not None and any(b[0] > stop_above for b in best.values())

    while time.monotonic() < t_end and movable and not done():
        nb = np.repeat(top, 16, axis=0)
        for r in range(nb.shape[0]):
            for _ in range(int(rng.integers(1, 3))):
                m = movable[int(rng.integers(0, len(movable)))]
                if isinstance(m, tuple):
                    g = m[1]
                    allowed = [j for j in g if hi[j] >= 1.0]
                    nb[r, list(g)] = 0.0
                    nb[r, allowed[int(rng.integers(0, len(allowed)))]] = 1.0
                elif integer[m]:
                    step = max(1, int((hi[m] - lo[m]) * float(rng.choice([0.02, 0.1, 0.5]))))
                    nb[r, m] = np.clip(nb[r, m] + rng.integers(-step, step + 1), lo[m], hi[m])
                else:
                    nb[r, m] = np.clip(nb[r, m] + rng.normal() * (hi[m] - lo[m]) * float(rng.choice([0.01, 0.1])),
                                       lo[m], hi[m])
        v = score(nb)
        for q in range(top.shape[0]):
            blk = v[q * 16:(q + 1) * 16]
            j = int(np.argmax(blk))
            if blk[j] > top_v[q]:
                top[q], top_v[q] = nb[q * 16 + j], blk[j]
    return best


def _pair_value(prop, c, model, w) -> float | None:
    """A violated verdict's value: the reported pair's measure |p_c - p_c'| as the runtime computed it (of a logit
    network: the real softmax of its logits, exactly, rounded down)."""
    from dataclasses import replace

    from fairspec.kinds.pair_runtime import runtime_pair_value

    return runtime_pair_value(replace(prop, cls=c), model, w.outputs, np.array([w.x, w.x_prime]))


def run_class_prob(prop: ir.IndividualFairness, ctx, progress, backend: str, t0: float, kind) -> Verdict:
    from dataclasses import replace
    from fractions import Fraction

    from fairspec.backends.pair import PairProblem, precondition_holds
    from fairspec.certify.class_prob import ClassProbQuery, bound_class_prob, join_class_prob
    from fairspec.certify.rounding import float_down
    from fairspec.models.runtime_layers import runtime_precision
    from fairspec.certify.network import encoding_from_ir
    from fairspec.kinds.lowering import Unsupported, lower_pair
    from fairspec.kinds.pair_runtime import class_networks, encoder, pair_precondition, real_softmax, runtime_violates
    from fairspec.models.network import Layer, PLNet, UnsupportedModel
    from fairspec.planning import setting
    from fairspec.runtime.encoding import decode_row

    model = ctx.model(prop.model)
    fs = ctx.spec.feature_set(prop.features)
    mode = setting(prop, "mode", backend)
    limit = ctx.remaining(setting(prop, "timeout", backend))

    def no(why, **kw):
        return unknown(prop, why, backend=backend, seconds=time.perf_counter() - t0, **kw)

    try:
        # the runtime's layers, one rounding each (an identity chain unfolded): certify's branch and bound
        # bounds the softmax on them
        _, raw = class_networks(model)
        enc = ctx.encoding(prop.model)
        low = lower_pair(prop, fs, enc)
    except UnsupportedModel as e:
        return no(f"the {backend} backend cannot bound this model's softmax: {e}")
    except Unsupported as e:
        return no(str(e))
    K = raw.layers[-1].n_out
    score_kind = getattr(model.readout, "score", None)
    if K < 2:
        return _binary_column(prop, ctx, progress, backend, kind, model, no)
    if not ((raw.final == "none" and score_kind == "logit") or (raw.final == "softmax" and score_kind == "prob")):
        return no(f"a {raw.final} head read as {score_kind} is not a softmax of the network's logits: no bound "
                  f"on its class probabilities")
    if raw.layers[-1].relu:
        return no("a ReLU on the output logits is outside the runtime error model")
    try:
        precision = runtime_precision(model)
    except ValueError as e:
        return no(str(e))
    from fairspec.kinds.pair_replay import codes_as_variables

    try:
        encoding = encoding_from_ir(codes_as_variables(enc))
    except ValueError as e:
        return no(f"no runtime error bound for this encoding ({e})")
    relaxed = kind._relaxed(prop, fs, enc, low)
    n = enc.width
    dummy = PLNet((Layer(np.zeros((1, n)), np.zeros(1), False),), 0, "none", "")
    try:
        pre = PairProblem(dummy, low.lo, low.hi, low.integer, low.onehot_groups, low.free, None, relaxed, "label")
    except ValueError as e:
        return no(f"the pair domain is empty or malformed: {e}")
    free = tuple(i for cols in low.protected_columns for i in cols)
    combos = [tuple(v for part in c for v in part) for c in itertools.product(*low.protected_values)]
    if len(combos) > MAX_COMBOS:
        return no(f"the protected features have {len(combos):,} value combinations; the softmax branch and bound "
                  f"scores at most {MAX_COMBOS} per box")
    C = np.array(combos, dtype=np.float64).reshape(len(combos), len(free))
    M = np.any(C[:, None, :] != C[None, :, :], axis=2) if free else np.ones((C.shape[0], C.shape[0]), dtype=bool)
    meets_pre = pair_precondition(prop, enc, low, pre)
    encoded = encoder(enc, low)

    def evaluate(V):
        return np.asarray(model.class_probabilities(encoded(V)), dtype=np.float64)

    def logits(V):      # prob(m(x), c) of a logit network: the REAL softmax of these (pair_runtime.real_softmax)
        return np.asarray(model.outputs(encoded(V)), dtype=np.float64)

    classes = [int(prop.cls)] if isinstance(prop.cls, int) else list(range(K))
    op = "<" if prop.eps_strict else "<="
    from fairspec.backends.data.flips import replayer_name

    by = "onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model)

    from fairspec.kinds.pair_spread import fragile_pair

    def replay(x, xp, c):
        """(the witness, its class), or (None, c): the pair meets the pre-condition and breaks the post
        on the runtime. Under ``forall c`` the witness shows the pair's class of largest difference (its
        measure, the L-infinity distance), which also breaks the post when class c does."""
        if not meets_pre(x, xp):
            return None, c
        X2 = encoded(np.vstack([x, xp]))
        P_all = np.asarray(model.class_probabilities(X2), dtype=np.float64)
        P = P_all[:, c]
        if not runtime_violates(replace(prop, cls=c), model, P[:1], P[1:], X2=X2)[0]:
            return None, c
        moved = fragile_pair(replace(prop, cls=c), model, X2)
        if moved is not None and not moved["reproduced"]:     # within rounding: also alone and reversed
            return None, c
        if prop.cls == ir.EVERY_CLASS:
            from fairspec.certify.enumerate import largest_class

            top = largest_class(P_all.T, c)
            if top != c and runtime_violates(replace(prop, cls=top), model, P_all[:1, top], P_all[1:, top],
                                             X2=X2)[0]:
                c, P = top, P_all[:, top]
        from fairspec.kinds.pair_runtime import softmax_class_values     # a logit network's: exactly rounded

        return Witness(tuple(map(float, X2[0])), tuple(map(float, X2[1])), decode_row(enc, fs, X2[0]),
                       decode_row(enc, fs, X2[1]), softmax_class_values(prop, model, X2, c, P), replayed_by=by), c

    deadline = None if limit is None else time.monotonic() + max(0.0, float(limit) - (time.perf_counter() - t0))
    details = {"engine": "softmax-bab", "mode": mode, "classes": K, "combinations": int(C.shape[0])}
    if prop.options.partitions and prop.options.partitions > 1:
        details.setdefault("notes", []).append("`partitions` has no effect here: the softmax branch and bound splits the domain itself")
    task = progress.add_task(f"{prop.name}: softmax branch and bound", total=None) if progress else None
    try:
        rng = np.random.default_rng(int(prop.options.seed or 0))  # the spec's seed (default 0)
        budget = 0.5 if deadline is None else max(0.05, min(0.5, 0.05 * (deadline - time.monotonic())))
        stop = None if mode == "maximize" else float(prop.eps) * (1.0 + 1e-9)
        best = _attack(pre, C, free, relaxed, evaluate, classes, M, rng, budget, stop_above=stop)
        best_val, best_near, best_at = -math.inf, -math.inf, None
        for c in classes:
            v, x, xp = best[c]
            if x is None:
                continue
            w, c = replay(x, xp, c)
            if w is not None and mode != "maximize":
                details["attack"], details["class"] = f"class {c}", c
                wv = _pair_value(prop, c, model, w)
                moves = abs(w.outputs[0] - w.outputs[1]) if wv is None else wv
                return Verdict(prop.name, prop.kind, "violated", value=wv, witness=w,
                               backend=backend, seconds=time.perf_counter() - t0, details=details,
                               reason=f"class {c}'s probability moves by {moves:.6g} "
                                      f"(found by the attack on the runtime)")
        proofs, reasons, bounds, per = {}, [], [], []
        viol_w = None
        for k, c in enumerate(classes):
            dl = None if deadline is None else time.monotonic() + max(0.0, deadline - time.monotonic()) / (len(classes) - k)
            q = ClassProbQuery([(L.W, L.b, L.relu) for L in raw.layers], c, encoding, precision, raw.final,
                               pre.lo, pre.hi, pre.integer, pre.onehot_groups, free, C, M, relaxed,
                               prop.eps, op)
            try:
                r = bound_class_prob(q, evaluate, mode="maximize" if mode == "maximize" else "prove", deadline=dl,
                                     logits=logits if real_softmax(prop, model) else None)
            except (ValueError, TypeError) as e:
                return no(f"no certified bound for class {c}'s probability ({e})", details=details)
            rv = r.value
            if rv is not None and r.pair is not None and r.pair[0] is not None and real_softmax(prop, model):
                from fairspec.kinds.pair_runtime import softmax_pair_value     # its pair's exact measure, down

                rv = softmax_pair_value(prop, model, encoded(np.vstack(r.pair)), c)
            per.append({"class": c, "status": r.status, "bound": r.bound, "value": rv, **{
                k2: r.stats.get(k2) for k2 in ("nodes", "interval_leaves", "point_leaves", "seconds")}})
            bounds.append(r.bound if r.bound is not None else math.inf)
            # the lower end: the best pair of the attack and of the search, replayed
            for v, pair in ((best[c][0], best[c][1:]), (r.value, r.pair)):
                if v is None or pair is None or pair[0] is None:
                    continue
                X2 = encoded(np.vstack(pair))
                P = np.asarray(model.class_probabilities(X2), dtype=np.float64)[:, c]
                ok, _ = precondition_holds(pre, pair[0], pair[1], tol=0.0)
                if ok and abs(float(P[0] - P[1])) > best_near:
                    # the lower end is the float at or below the exact difference (the nearest, the
                    # value, may lie above every pair's)
                    best_near = abs(float(P[0] - P[1]))
                    best_val = float_down(abs(Fraction(float(P[0])) - Fraction(float(P[1]))))
                    if real_softmax(prop, model):       # the real softmax's exact measure, rounded down
                        from fairspec.kinds.pair_runtime import softmax_pair_value

                        best_val = softmax_pair_value(prop, model, X2, c)
                        best_val = -math.inf if best_val is None else best_val
                    best_at = (c, X2)
            if r.status == "violated" and r.pair is not None:
                w, wc = replay(r.pair[0], r.pair[1], c)
                if w is None:
                    reasons.append(f"class {c}: the search's pair does not break the post-condition on replay")
                elif viol_w is None:
                    viol_w, viol_c = w, wc
                    if mode != "maximize":
                        break
            elif r.status == "proved":
                proofs[c] = r.proof
            else:
                reasons.append(f"class {c}: {r.reason}")
    finally:
        if progress:
            progress.remove_task(task)
    details["per_class"] = per
    seconds = time.perf_counter() - t0
    extra, value = {}, None
    if mode == "maximize" and math.isfinite(best_val):
        bound = max(bounds) if len(bounds) == len(classes) else math.inf
        bound = max(bound, best_val)
        value = best_val if real_softmax(prop, model) else best_near   # the real softmax: its certain lower end
        # the best pair was scored in a batch of its own two rows: another batch may score it (and every pair)
        # lower on a runtime that rounds by batch (a torch 5-8-3 net: 0.10769955526840867 as a pair, every pair
        # at most 0.1076995549004625 in the whole domain's batch), so the lower end is widened by the runtime's
        # spread (kinds/pre_search_batches.lower_end, as the enumeration's)
        from fairspec.kinds.pre_search_batches import lower_end

        best_val = lower_end(replace(prop, cls=best_at[0]), model, best_at[1], best_val, False)
        if math.isfinite(bound):
            extra["bound"] = (best_val, bound)
            details["maximum"] = "[best pair replayed, certified upper bound]"
    if viol_w is not None:
        details["class"] = viol_c
        if mode != "maximize":
            value = _pair_value(prop, viol_c, model, viol_w)
        wv = _pair_value(prop, viol_c, model, viol_w) if mode == "maximize" else value
        moves = abs(viol_w.outputs[0] - viol_w.outputs[1]) if wv is None else wv
        return Verdict(prop.name, prop.kind, "violated", value=value, witness=viol_w, backend=backend,
                       seconds=seconds, details=details, **extra,
                       reason=f"a class probability moves by {moves:.6g} "
                              f"on the runtime (found by the softmax branch and bound)")
    if len(proofs) == len(classes):
        proof = proofs[classes[0]] if len(classes) == 1 else join_class_prob(proofs, K, prop.eps, op)
        if proof is not None and mode == "maximize" and value is not None and "bound" not in extra:
            # a class without a certified bound: the proof says no pair moves a probability beyond eps
            from fairspec.kinds.pair_runtime import threshold_interval

            thr, details["maximum"] = threshold_interval("prob", prop.eps, op == "<", best_val)
            extra = {} if thr is None else {"bound": (best_val, thr)}
            value = value if thr is not None else None
        if proof is not None:
            return Verdict(prop.name, prop.kind, "holds", how="proved", value=value, backend=backend,
                           seconds=seconds, details=details, proof=proof, **extra,
                           reason="certified: rigorous bounds of the softmax over every box of the domain")
    return no("; ".join(reasons) or "the softmax branch and bound did not decide the property", details=details,
              value=value, **extra)


def _binary_column(prop, ctx, progress, backend: str, kind, model, no) -> Verdict:
    """``prob(m(x), c)`` of a binary classifier the solvers encode by one logit (a LogisticRegression whose
    classes_ are ["no", "yes"]): the positive class's column is what ``prob(m(x))`` reads -- the same runtime
    column (predict_proba's column ``index``, classes_[1] without one), so the same post, decided on its path.
    The other column (the runtime's 1 - p, rounded) is not that post to the last bit: ``unknown``, saying
    what to write. It was ``unknown`` for both ("one output column: no class probabilities to bound")."""
    from dataclasses import replace

    readout = model.readout
    if getattr(readout, "task", None) != "binary" or getattr(model, "prob_problem", None) is not None:
        return no("the model has one output column: it has no class probabilities to bound")
    pos = readout.index if readout.index is not None else 1
    if prop.cls == pos:
        return kind.run_pair(replace(prop, post="prob", cls=None), ctx, progress, backend)
    labels = readout.classes
    name = (lambda i: repr(labels[i]) if labels else str(i))
    what = "every class" if prop.cls == ir.EVERY_CLASS else f"class {name(prop.cls)}"
    from fairspec.kinds.pair_runtime import real_softmax

    if real_softmax(prop, model):       # a one-output logit network: [1 - p, p], p the REAL logistic
        too = " too" if prop.cls == ir.EVERY_CLASS else ""
        return no(f"the {backend} backend decides prob(m(x), c) of this one-output logit network for its positive "
                  f"class {name(pos)} only (prob(m(x)): p, the real logistic of its logit); {what} reads 1 - p{too}, "
                  f"whose pair differences are p's exactly (|(1 - p) - (1 - p')| = |p - p'| in the reals): write "
                  f"|prob(m(x)) - prob(m(x'))|, decided the same way, or decide it on a domain small enough to "
                  f"enumerate")
    column = (f"predict_proba's column {pos}" if getattr(model, "format", None) not in ("onnx", "torch")
              else "its one output")
    return no(f"the {backend} backend decides prob(m(x), c) of this binary model for its positive class "
              f"{name(pos)} only (prob(m(x)), {column}); {what} reads the other column too, whose runtime value "
              f"1 - p is rounded apart from the positive one's: write |prob(m(x)) - prob(m(x'))| (the same "
              f"differences to 2^-53), or decide it on a domain small enough to enumerate")
