"""`pba(m, flip A, around DATA, delta {...}, given ...)`: PBA fairness (paper 004) end to end.

1. Points: the rows of DATA read as the model's feature set, kept by ``given`` (and
   ``points = N``: a seeded subset); each row is paired with its counterfactual, the
   flipped attribute set to the other value (a one-hot attribute with more values:
   every other value present among the selected rows, or every other declared value
   when only one is present).
2. Neighbourhood: every feature with a delta moves by at most its delta *in its own
   units*, clipped to its declared domain (whole numbers for int features), jointly in x
   and x'; everything else is fixed (paper 004, Eq. 2-6). The encoding's scaling maps
   the delta to the model-input column (``u = scale * v + shift``).
3. A point is PBA-verified when ``min (l_ci - l_cj)(x) - (l_ci - l_cj)(x') > 0`` over the
   neighbourhood with both predictions equal to its true class c_i (Eq. 1, 3); points
   whose centre pair is not classified as c_i on both sides are excluded. Each point is
   decided by :func:`fairspec.backends.pba.analyse` (bounds, search, branch and bound,
   LP, MILP); every witness is replayed on the real model's independent evaluator.
4. The verdict: without a comparison, ``holds (proved)`` iff every eligible point is
   PBA-verified, ``violated`` with a replayed witness pair as soon as one is refuted;
   compared with a share (``pba(...) >= 0.6``), the share of verified points must meet
   it for every outcome of the unknown points (``bound`` = [share proved, share proved or
   unknown]).

``details``: ``points`` (eligible / proved / refuted / unknown / excluded), ``table`` (per
group: SP, TPR, CFA, RB observed/flipped, PBA observed/flipped with desirable and
undesirable parts and counts; one table per flipped attribute when several), ``stages``
and ``seconds`` per flipped attribute, ``witness_point`` (``row``: the index of the
witness's point among DATA's rows as read for the feature set), ``charts``.

Options: ``timeout`` (the whole run's budget, default 120 s), ``engine`` (``highs``
default, ``scip``, or ``lp`` for the plain LP relaxation without search, branch and
bound or MILP), ``points`` or ``max_rows`` (a seeded subset of N rows), ``workers`` (processes for the LP/MILP
stage), ``seed``, ``chart = "file.png"`` (relative to the spec: the bar chart of the
shares per group, written there and nowhere else).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from fairspec import ir
from fairspec.files import real_path
from fairspec.verdict import Unsupported, Verdict, Witness, unknown
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

BACKEND = "milp"


def _network(ctx, m: ir.Model):
    """The network of the model's decision, g = logit(class 1) - logit(class 0) (class 1 iff g > 0):
    the column and rule of the model's Readout, as every backend reads it."""
    from fairspec.kinds.individual_fairness import network_of
    from fairspec.backends.pba.twin import logit_difference_net

    return logit_difference_net(network_of(ctx, m.name))


def _real(ctx, m: ir.Model):
    """(g, score, replay, decide, replayer name): ``g`` = X -> score - threshold (class 1 iff g > 0,
    what the solvers bound); the model's score and its independent replay as they compute them; its
    own decisions (``LoadedModel.decide``, the library's predict with its tie rule). The verdict's
    decisions are ``decide``'s and its comparisons of confidence the scores' own: ``score - 1/2 > 0``
    is not the library's decision at a tie (``index = 0``: class 0's probability of exactly 1/2 is
    class 0 positive), and ``score - 1/2`` in float64 rounds two distinct tiny probabilities to one."""
    from fairspec.backends.data.flips import replayer_name

    loaded = ctx.model(m.name)
    thr = loaded.threshold
    return (lambda X: loaded.score(X) - thr), loaded.score, loaded.replay, loaded.decide, replayer_name(loaded)


def _default_groups(fs: ir.FeatureSet, flip: str) -> ir.Groups:
    f = fs.get(flip)
    values = tuple(f.domain.categories) if isinstance(f.domain, ir.Categorical) else ("false", "true")
    return ir.Groups((ir.GroupAtom(flip, flip, None, values),))


def _moving(prop: ir.PBA, fs: ir.FeatureSet, enc: ir.Encoding, values: dict, n: int):
    """Moving model-input columns, their scale, the offset box (n, m) and integrality."""
    cols, scale, lo, hi, integer, names, box_a, box_b, ends = [], [], [], [], [], [], [], [], []
    for name, delta in prop.delta:
        if delta <= 0:
            continue
        f = fs.get(name)
        c = enc.column(name)
        if c is None:             # the model does not read it: moving it changes nothing
            continue
        if c.kind == "minmax" and c.scale is not None:
            s = c.scale
        elif c.kind == "minmax":
            s = 1.0 / ((c.hi - c.lo) or 1.0)
        elif c.kind == "standard":
            s = 1.0 / (c.std or 1.0)
        elif c.kind == "raw":
            s = 1.0
        else:
            raise ValueError(f"feature {name} is encoded as {c.kind}; only numerical features move")
        v = np.asarray(values[name], dtype=np.float64)
        dom = f.domain
        is_int = isinstance(dom, ir.IntRange)
        a, b, exact = _exact_box(v, delta, dom, is_int)
        cols.append(c.offset); scale.append(s); integer.append(is_int); names.append(name)
        lo.append(_cover(v, np.minimum(a - v, 0.0), a, -np.inf))
        hi.append(_cover(v, np.maximum(b - v, 0.0), b, np.inf))
        box_a.append(a); box_b.append(b); ends.append(exact)
    m = len(cols)
    lo = np.stack(lo, axis=1) if m else np.zeros((n, 0))
    hi = np.stack(hi, axis=1) if m else np.zeros((n, 0))
    box = (np.stack(box_a, axis=1), np.stack(box_b, axis=1)) if m else (np.zeros((n, 0)), np.zeros((n, 0)))
    box = (*box, ends)          # ends[k][row]: the exact (Fraction) ends of moving feature k, None if v is not finite
    return np.array(cols, dtype=np.int64), np.array(scale), lo, hi, np.array(integer, dtype=bool), names, box


def _cover(v, d, end, away):
    """The offsets ``d`` widened (towards ``away``) until fl(v + d) reaches past ``end`` (at or below it for the
    lower end, at or above for the upper): the offset box the tree cells / solvers search then covers every float
    of the exact neighbourhood (fl(a - v) alone may round inside it); its points outside the neighbourhood are
    never a witness (certify_cases' ``box``)."""
    d = np.array(d, dtype=np.float64)
    for _ in range(64):
        short = (v + d > end) if away < 0 else (v + d < end)
        short &= np.isfinite(v) & np.isfinite(end)
        if not short.any():
            break
        d[short] = np.nextafter(d[short], away)
    return d


def _exact_box(v, delta, dom, is_int: bool):
    """(A, B, ends) per value of ``v``: ``ends`` the exact rational ends max(v - delta, dom.lo) and
    min(v + delta, dom.hi) (None where v is not finite: what certify's share check compares a refutation's
    witness with, certify/pba_share.py); A, B the first and last float64 (whole number for an int feature) w with
    max(v - delta, dom.lo) <= w <= min(v + delta, dom.hi), compared exactly (Fractions of the floats; delta and
    the domain's ends under both readings, the float and the decimal it prints as, the narrower taken): the
    neighbourhood's true ends, which fl(v - delta) or fl(v + offset) may round past. A point outside them is
    not in the neighbourhood (a witness there refutes nothing)."""
    from fractions import Fraction

    def both(x):
        return Fraction(float(x)), Fraction(repr(float(x)))

    d = min(both(delta))
    lo_d, hi_d = max(both(dom.lo)), min(both(dom.hi))
    A, B, ends = np.empty(len(v)), np.empty(len(v)), []
    for j, x in enumerate(v.tolist()):
        if not np.isfinite(x):
            A[j] = B[j] = x
            ends.append(None)
            continue
        a, b = max(Fraction(x) - d, lo_d), min(Fraction(x) + d, hi_d)
        ends.append((a, b))
        if is_int:
            import math

            fa, fb = float(math.ceil(a)), float(math.floor(b))
        else:
            fa, fb = float(a), float(b)
            if Fraction(fa) < a:
                fa = float(np.nextafter(fa, np.inf))
            if Fraction(fb) > b:
                fb = float(np.nextafter(fb, -np.inf))
        A[j], B[j] = fa, fb
    return A, B, ends


def _cases(values: dict, n: int, fs: ir.FeatureSet, flip: str):
    """(row of each case, flipped value of each case)."""
    f = fs.get(flip)
    k = len(f.values())
    own = values[flip].astype(np.int64)
    present = np.unique(own)
    pool = present if len(present) >= 2 else np.arange(k)
    rows, targets = [], []
    for v in pool:
        sel = np.flatnonzero(own != v)
        rows.append(sel); targets.append(np.full(len(sel), v))
    rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    targets = np.concatenate(targets) if targets else np.zeros(0, dtype=np.int64)
    order = np.lexsort((targets, rows))
    return rows[order], targets[order].astype(np.float64)


def run(prop: ir.PBA, ctx, progress=None) -> Verdict:
    t0 = time.perf_counter()
    try:
        v = _run(prop, ctx, progress, t0)
    except Unsupported as e:
        return unknown(prop, str(e), backend=BACKEND, seconds=time.perf_counter() - t0, details=e.details)
    failed = (v.details or {}).get("chart_error")
    if failed and v.status == "holds":  # the chart asked for was not written: not a clean "holds"
        return unknown(prop, f"{v.label} was decided, but {failed}", value=v.value, bound=v.bound, backend=v.backend,
                       details=v.details, seconds=v.seconds)
    return v  # a violation stays one (its witness was replayed); the warning says the chart is missing




def _run(prop: ir.PBA, ctx, progress, t0) -> Verdict:
    from fairspec.backends.data.groups import assign
    from fairspec.backends.pba import CaseSet, aggregate, analyse, write_chart
    from fairspec.models.network import UnsupportedModel
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.runtime.exact_rule import decide_rule   # given: its comparisons as written near a tie

    spec = ctx.spec
    fs = spec.feature_set(prop.features)
    m = spec.model(prop.model)
    opts = prop.options
    if m.format == "rule":
        raise Unsupported(f"pba needs a network; model {m.name} is a rule")
    rows = ctx.rows(fs.name, prop.around)
    if rows.labels is None:
        raise Unsupported(f"data {prop.around} declares no label: PBA compares each point with its true class "
                       f"(declare label = ... on the data)")
    values, n = rows.frame.values, rows.frame.n_rows
    keep = np.ones(n, dtype=bool)
    if prop.given is not None:
        keep &= decide_rule(prop.given, lambda e: values[e.feature], n)
    if not keep.any():
        raise Unsupported(f"empty point selection: no row of {prop.around} satisfies the given condition "
                       f"({n} rows read)", {"rows": int(n), "selected": 0})
    sel = np.flatnonzero(keep)
    from fairspec.planning import setting

    # `points = N` or `max_rows = N`: a seeded subset of N of the selected rows
    limits = [int(x) for x in (opts.get("points"), opts.max_rows) if x is not None]
    n_points = min(limits) if limits else None
    if n_points is not None and len(sel) > int(n_points):
        sel = np.sort(np.random.default_rng(opts.seed).choice(sel, int(n_points), replace=False))
    values = {k: v[sel] for k, v in values.items()}
    labels = np.asarray(rows.labels, dtype=bool)[sel]
    n = len(sel)
    enc = ctx.encoding(prop.model)
    try:
        trees = ctx.model(m.name).tree_ensemble()
        net = trees if trees is not None else _network(ctx, m)
    except UnsupportedModel as e:
        raise Unsupported(f"the PBA backend cannot encode this model: {e}")
    from fairspec.runtime.executor import configured_workers

    score, raw_score, replay, decide, replayer = _real(ctx, m)
    engine = setting(prop, "engine", "milp")
    mode = "lp" if engine == "lp" else "exact"
    if engine not in ("highs", "scip", "lp"):
        raise Unsupported(f"unknown engine {engine!r} for pba (highs, scip, or lp for the plain LP relaxation)")
    engine = "highs" if engine == "lp" else engine
    budget = float(ctx.remaining(setting(prop, "timeout", "milp")))  # the budget covers the preparation too
    workers = int(getattr(prop.options, "workers", None) or configured_workers())
    groups = prop.report_by
    try:
        cols, scale, lo_r, hi_r, integer, moving, (box_a, box_b, exact_ends) = _moving(prop, fs, enc, values, n)
    except ValueError as e:
        raise Unsupported(str(e))
    U_rows = encode(enc, values, n)
    row_pred = np.asarray(decide(U_rows), dtype=int).reshape(-1)
    verdict_parts, tables, details = [], {}, {"rows": int(rows.frame.n_rows), "selected": int(n),
                                               "moving": moving, "engine": engine if mode == "exact" else "lp"}
    per_flip = budget / max(1, len(prop.flip))
    from fairspec.backends.pba.certified import Evidence, batch_spread, certify_cases, verdict_proof

    evidence = Evidence()
    spread = batch_spread(ctx.model(m.name), _exact(ctx.model(m.name)))
    row_tied = None
    if spread is not None and n:        # the table's SP, TPR (and CFA) count the rows' centre decisions
        row_tied = spread.threshold(U_rows, np.asarray(raw_score(U_rows), dtype=np.float64).reshape(-1))
        if row_tied.any():
            from fairspec.models.batching import BATCHED

            details.setdefault("notes", []).append(
                f"{int(row_tied.sum())} of the {n} rows are decided within the runtime's rounding of the threshold: "
                f"{BATCHED}, so the table's SP, TPR and CFA of their groups are ranges over both decisions "
                "(details.table rows' sp_range, tpr_range, cfa_range)")
        else:
            row_tied = None
    for flip in prop.flip:
        R, T = _cases(values, n, fs, flip)
        if len(R) == 0:
            raise Unsupported(f"no counterfactual for {flip}: the selected rows leave no other value to flip to")
        vals_x = {k: v[R] for k, v in values.items()}
        vals_p = dict(vals_x)
        vals_p[flip] = T
        P = len(R)
        U, Up = encode(enc, vals_x, P), encode(enc, vals_p, P)
        # the neighbourhood's points fed as the encoder feeds x + D (split_points.fed), not U + D * scale
        from fairspec.backends.boolean.split_points import fed

        raw = np.column_stack([np.asarray(vals_x[name], dtype=np.float64) for name in moving]) if moving else None
        feeds = tuple((lambda c: (lambda v: fed(c, v)))(enc.column(name)) for name in moving)
        cs = CaseSet(net, U, Up, cols, scale, lo_r[R], hi_r[R], integer, labels[R].astype(int), raw=raw,
                     feeds=feeds if moving else None)
        first_case = np.unique(R, return_index=True)[1]
        if trees is not None:
            # a tree model: each point decided exactly over its neighbourhood's leaf combinations
            from fairspec.backends.trees.pba import analyse_trees

            def encode_at(idx, D, vals=(vals_x, vals_p)):
                """Model inputs of cases idx moved by offsets D, the moved values encoded by the runtime."""
                out = []
                for side in vals:
                    v = {f: np.asarray(col)[idx] for f, col in side.items()}
                    for k, name in enumerate(moving):
                        v[name] = v[name].astype(np.float64) + D[:, k]
                    out.append(encode(enc, v, len(idx)))
                return out[0], out[1]

            res = analyse_trees(cs, score=raw_score, replay=replay, decide=decide, rb_rows=first_case,
                                max_cells=int(opts.get("max_cells", 4096)), encode_at=encode_at)
        else:
            res = analyse(cs, score=score, replay=replay, mode=mode, engine=engine,
                          time_limit=max(1.0, 0.75 * per_flip), case_limit=min(10.0, max(0.5, per_flip / 10)),
                          workers=workers, rb=True, rb_rows=first_case, rb_time=0.2 * per_flip, seed=opts.seed,
                          progress=progress, decide=decide)
        # every verdict rests on certify: each eligible case's neighbourhood on the runtime, compared exactly
        evidence.part = flip        # the proved cases' keys: (flip, case)
        certify_cases(res, values_x=vals_x, values_p=vals_p, moving=moving, lo=lo_r[R], hi=hi_r[R], integer=integer,
                      cls=labels[R].astype(int), enc=enc, score=raw_score, decide=decide, evidence=evidence,
                      rb_rows=first_case, recheck=trees is None, spread=spread, box=(box_a[R], box_b[R]))
        grp = groups or _default_groups(fs, flip)
        gx, names = assign(grp, fs, vals_x, P)
        gp, _ = assign(grp, fs, vals_p, P)
        grow, _ = assign(grp, fs, values, n)
        rb_x_rows = np.full(n, "unknown", dtype=object)
        rb_x_rows[R[first_case]] = res.rb_x
        agg = aggregate(names, row_group=grow, row_label=labels, row_pred=row_pred, case_row=R, case_group_x=gx,
                        case_group_p=gp, case_class=labels[R].astype(int), case_eligible=res.eligible,
                        case_same=res.pred_x == res.pred_p, obs_status=res.observed, flip_status=res.flipped,
                        rb_x=rb_x_rows, rb_p=res.rb_p, row_tied=row_tied,
                        case_tied=None if spread is None else _cases_tied(spread, row_tied, R, Up, raw_score))
        tables[flip] = agg.to_json()
        verdict_parts.append((flip, res, cs, vals_x, vals_p, R))
        details.setdefault("seconds", {})[flip] = res.seconds
        details.setdefault("stages", {})[flip] = res.counts
        if res.notes:
            details.setdefault("notes", []).extend(res.notes)
    details["table"] = tables if len(tables) > 1 else next(iter(tables.values()))
    chart = opts.get("chart")
    if chart:  # through the one confined, atomic writer (fairspec.files.safe_write); lint checked the path
        from fairspec.files import CHART_SUFFIXES, PathError, check_spec_output, safe_write

        path = real_path(spec.file).parent / str(chart)
        try:
            for flip, t in tables.items():
                name = str(chart) if len(tables) == 1 else str(Path(str(chart)).with_name(
                    f"{Path(str(chart)).stem}_{flip}{Path(str(chart)).suffix}"))
                out = check_spec_output(name, real_path(spec.file).parent, ctx.roots, "chart file",
                                        suffixes=CHART_SUFFIXES, protect=spec.inputs)
                title = f"{prop.name}: PBA by {t['groups'] and (groups.label if groups else flip)}"
                safe_write(out, lambda tmp, t=t, title=title: write_chart(t, tmp, title=title, fmt=out.suffix[1:].lower()),
                           ctx.roots, what="chart file", suffixes=CHART_SUFFIXES, protect=spec.inputs)
                details.setdefault("charts", []).append(str(out))
        except (PathError, OSError, ValueError) as e:
            details["chart_error"] = f"the chart {chart} could not be written: {e}"
            ctx.warnings.append(f"{prop.name}: could not write the chart {path}: {e}")
        except ImportError:
            details["chart_error"] = f"the chart {chart} could not be written: matplotlib is not installed"
            ctx.warnings.append(f"{prop.name}: the chart {path} needs matplotlib, which is not installed "
                                f"(pip install 'specfair[report]')")

    # ---- the verdict over the observed setting
    obs = np.concatenate([r.observed for _, r, *_ in verdict_parts])
    elig = obs != "excluded"
    n_el = int(elig.sum())
    proved = int((obs == "proved").sum())
    refuted = int((obs == "refuted").sum())
    unk = int((obs == "unknown").sum())
    details["points"] = {"eligible": n_el, "proved": proved, "refuted": refuted, "unknown": unk,
                         "excluded": int((~elig).sum())}
    seconds = time.perf_counter() - t0
    if n_el == 0:
        return unknown(prop, f"no selected point is classified as its true class with its counterfactual "
                             f"({n} rows selected): PBA has no point to verify", backend=BACKEND, seconds=seconds,
                       details=details)

    def witness(only=None):
        """The replayed witness of the refutation with the lowest objective (among the keys ``only``)."""
        best = None
        for flip, r, cs, vx, vp, R in verdict_parts:
            for i, (x, xp) in r.witness_obs.items():
                if only is not None and (flip, int(i)) not in only:
                    continue
                f = float(np.nan_to_num(r.f_obs[i], nan=0.0))
                if best is None or f < best[0]:
                    best = (f, x[0], xp[0], flip, int(sel[R[i]]), r.stage_obs[i])
        if best is None:
            return None
        f, x, xp, flip, row, stage = best
        loaded = ctx.model(m.name)
        out = loaded.replay(np.stack([x, xp]))
        what_out = f"the model's score on x and x' (replayed; class 1 iff {loaded.readout.describe()})"
        details["witness_point"] = {"row": row, "flip": flip, "objective": float(f), "found_by": stage,
                                    "outputs": what_out}
        return Witness(tuple(map(float, x)), tuple(map(float, xp)), decode_row(enc, fs, x), decode_row(enc, fs, xp),
                       (float(out[0]), float(out[1])), replayed_by=replayer)

    share = proved / n_el
    hi_share = (proved + unk) / n_el
    bound = (float(share), float(hi_share))
    from fractions import Fraction

    # the exact shares, which the reports round from (outward for the bound: 1/3 is above 0.3333333333333333)
    details["exact_value"] = str(Fraction(proved, n_el))
    details["exact_bound"] = [str(Fraction(proved, n_el)), str(Fraction(proved + unk, n_el))]
    common = dict(backend=BACKEND, seconds=seconds, details=details)
    what = f"{proved} of {n_el} eligible points PBA-verified, {refuted} refuted, {unk} unknown"
    if prop.threshold is None:
        if refuted:
            from fairspec.certify.pba_share import witnessed_inside

            # violated on a refutation whose runtime witness certify finds inside its exact neighbourhood
            inside = {r.row for r in _refutations(verdict_parts, exact_ends, integer) if witnessed_inside(r)}
            w = witness(only=inside) if inside else None
            if w is None:
                return unknown(prop, f"{what}, but no refutation has a runtime witness inside its exact "
                                     "neighbourhood", value=float(share), bound=bound, **common)
            return Verdict(prop.name, prop.kind, "violated", value=float(share), bound=bound, witness=w,
                           reason=f"{what}: a point is not persistently more confident than its counterfactual",
                           **common)
        if unk:
            return unknown(prop, f"{what} ({_unknown_cause(verdict_parts)})", value=float(share), bound=bound,
                           **common)
        from fairspec.certify.pba_share import certify_every_point

        got = certify_every_point(eligible=n_el, proved=proved, refuted=refuted, unknown=unk,
                                  proved_rows=_rows_of(verdict_parts, "proved"), points_proof=verdict_proof(evidence))
        if got.status != "holds":
            return unknown(prop, f"{what}, but certify did not confirm the proved points: {got.reason}",
                           value=float(share), bound=bound, **common)
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=1.0, bound=bound, reason=what,
                       proof=got.proof, **common)
    op, thr = prop.op, prop.threshold
    from fairspec.certify.exact import decide

    # the shares are exact ratios of counts, compared with the threshold as written (< is not <=)
    ok = lambda v: decide(v, op, thr)  # noqa: E731
    share_x, hi_x = Fraction(int(proved), int(n_el)), Fraction(int(proved + unk), int(n_el))
    low_side, high_side = (share_x, hi_x) if op in (">=", ">") else (hi_x, share_x)
    from fairspec.certify.pba_share import certify_share

    claim = f"the share of PBA-verified points {op} {_spec_number(thr)} for every outcome of the unknown points"
    # the proved points' enumeration proof, where the verdict rests on them (any holds; a <= / < violated)
    points = ok(low_side) or (op in ("<=", "<") and not ok(high_side))
    got = certify_share(eligible=n_el, proved=proved, refuted=refuted, unknown=unk, op=op, threshold=thr,
                        proved_rows=_rows_of(verdict_parts, "proved"),
                        points_proof=verdict_proof(evidence) if points else None,
                        refutations=_refutations(verdict_parts, exact_ends, integer), claim=claim)
    if got.status == "holds":
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=float(share), bound=bound,
                       reason=f"{what}; share {op} {_spec_number(thr)} for every outcome of the unknown points",
                       proof=got.proof, **common)
    if got.status == "violated":
        w = witness() if op in (">=", ">") else None
        return Verdict(prop.name, prop.kind, "violated", value=float(share), bound=bound, witness=w,
                       reason=f"{what}; the share of verified points cannot be {op} {_spec_number(thr)}", **common)
    if ok(low_side) or not ok(high_side):       # decided by the counts, but not on what certify confirmed
        return unknown(prop, f"{what}, but certify did not confirm the share: {got.reason}", value=float(share),
                       bound=bound, **common)
    return unknown(prop, f"{what}; the share {op} {_spec_number(thr)} depends on the unknown points "
                         f"({_unknown_cause(verdict_parts)})", value=float(share),
                   bound=bound, **common)


def _rows_of(verdict_parts, status: str) -> list:
    """The keys (flip, case) of the cases of the observed setting with ``status``."""
    return [(flip, int(i)) for flip, r, *_ in verdict_parts for i in np.flatnonzero(r.observed == status)]


def _refutations(verdict_parts, exact_ends, integer) -> list:
    """Each counted refutation of the observed setting for certify's share check (certify/pba_share.py): its
    runtime witness as the moving features' values (certify_cases' ``witness_values``; None without a runtime
    witness) and its row's exact neighbourhood (``_exact_box``'s Fraction ends, per moving feature)."""
    from fairspec.certify.pba_share import Refutation

    out = []
    for flip, r, _cs, _vx, _vp, R in verdict_parts:
        for i in np.flatnonzero(r.observed == "refuted"):
            w = r.witness_values.get(int(i)) if int(i) in r.witness_obs else None
            ends = [e[int(R[i])] for e in exact_ends]
            out.append(Refutation((flip, int(i)), w, tuple(e[0] if e else None for e in ends),
                                  tuple(e[1] if e else None for e in ends), tuple(bool(x) for x in integer)))
    return out


def _unknown_cause(verdict_parts) -> str:
    """Why the unknown points are unknown, by what left them so (the certify stage, else the solvers)."""
    from collections import Counter

    from fairspec.models.batching import BATCHED

    stages = Counter(str(r.stage_obs[i]) for _, r, *_ in verdict_parts for i in np.flatnonzero(r.observed == "unknown"))
    words = {"runtime rounding": f"within the runtime's rounding of the threshold or of each other: {BATCHED}",
             "not certified": "not certified on the runtime (a neighbourhood beyond the evaluation budget, or a "
                              "continuous feature moves)",
             "runtime decision": "eligible only on the runtime's own decision, not analysed",
             "runtime encoding": "refuted only at a point no runtime input of the exact neighbourhood reaches (a cell "
                                 "representative or solver offset past the domain, past v +- delta, or between encoded "
                                 "values); not proved either"}
    parts = [f"{n} {words.get(stage, 'time budget or solver limits')}" for stage, n in stages.most_common()]
    return "; ".join(parts) if parts else "time budget or solver limits"


def _exact(model):
    """``exact(X, scores)``: per encoded row, does the runtime compute its score exactly in every batch size
    and order, as ``scores`` (:func:`fairspec.kinds.pair_spread.points_exact`)? For PBA's batch check."""
    from fairspec.kinds.pair_spread import points_exact, runtime_spread
    from fairspec.models.batching import elementwise_sigmoid_head

    kind = getattr(model, "score_kind", "logit")

    def exact(X, scores):
        X = np.asarray(X, dtype=np.float64)
        runtime = runtime_spread(kind, None, model, X, kind)
        if runtime[1] is None:
            return np.zeros(len(X), dtype=bool)
        return points_exact(runtime, X, np.arange(len(X)), scores, elementwise_sigmoid_head(model))

    return exact


def _cases_tied(spread, row_tied, R, Up, raw_score):
    """Per case: is its x's (``row_tied``) or its x''s decision within the runtime's rounding of the threshold
    (``spread``: backends/pba/certified.batch_spread)? None when none is."""
    out = spread.threshold(Up, np.asarray(raw_score(Up), dtype=np.float64).reshape(-1))
    if row_tied is not None:
        out = out | row_tied[R]
    return out if out.any() else None
