"""Individual fairness of a rule model (``model r = rule(...)``): every admissible pair of a small discrete domain.

A rule is a formula over feature values written in the spec; its decision is that formula read in exact
rationals (README: "Rules: exact rational arithmetic"), each constant the decimal the spec writes. The solvers
read networks and tree ensembles, not rules, so the plan sends a rule's individual fairness here (the
``enumerate`` backend). The domain is the features the rule reads, the free and relaxed features and those a
further pre-condition reads, each discrete; the ordered pairs are those of kinds/pair_enumeration
(``admissible``, ``pair_pre``: the same cut, ``T V^2 <= 4,000,000``). The rule is evaluated once per point of
the features it reads (at most 200,000 of them: Python's Fractions), and a pair violates ``label(r(x)) ==
label(r(x'))`` exactly when the two decisions differ. Beyond the cut, or with a continuous feature, the
verdict is ``unknown`` saying what would decide it. Only the ``label`` post: a rule has no score.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from fairspec import ir
from fairspec.runtime.exact_rule import NotExact, exact_value, truth
from fairspec.verdict import Verdict, Witness, unknown

BACKEND = "enumerate"
MAX_RULE_POINTS = 200_000          # points of the rule's own features, each evaluated in Fractions


def exact_rule(expr: ir.Expr, env: dict):
    """The rule's value at one point (``env``: feature -> Fraction), exactly (runtime/exact_rule's evaluator,
    strict: category names only tested for equality, a truth 0 / 1)."""
    def leaf(x):
        if not isinstance(x, ir.FeatureRef):
            raise NotExact(f"the rule uses a {type(x).__name__}")
        return env[x.feature]
    return exact_value(expr, leaf, strict=True)


def _truth(x) -> bool:
    return truth(x, strict=True)


def _rule_features(rule: ir.Expr) -> list[str]:
    return list(dict.fromkeys(x.feature for x in ir.subexpressions(rule) if isinstance(x, ir.FeatureRef)))


def _shown(f: ir.Feature, v: float):
    i = int(round(v))
    d = f.domain
    return d.categories[i] if isinstance(d, ir.Categorical) else bool(i) if isinstance(d, ir.Boolean) else i


def _env_value(v: float):
    """A point's value as the rule reads it: a whole number, 0 / 1, a category's index (sema lowers
    ``g == F`` to the index of F)."""
    return Fraction(int(round(v)))


def run(prop: ir.IndividualFairness, ctx, progress=None) -> Verdict:
    from fairspec.kinds.pair_enumeration import MAX_POINTS, _grid, _max_pairs, _values, admissible
    from fairspec.kinds.pair_pre import pre_features
    from fairspec.planning import setting

    t0 = time.perf_counter()

    def no(reason: str, **kw) -> Verdict:
        return unknown(prop, reason, backend=BACKEND, seconds=time.perf_counter() - t0, **kw)

    m = ctx.spec.model(prop.model)
    if m.format != "rule" or m.rule is None:
        return no(f"the enumerate backend decides rule models only; '{prop.model}' is a model file")
    if prop.post != "label":
        return no(f"a rule model has a decision, no score: write label({prop.model}(x)) == label({prop.model}(x')) "
                  f"(the post-condition '{prop.post}' reads an output a rule does not have)")
    mode = setting(prop, "mode", BACKEND)
    fs = ctx.spec.feature_set(prop.features)
    read = _rule_features(m.rule)
    from fairspec.certify.no_pair import prove_rule_reads_tied

    proof = prove_rule_reads_tied(prop, m.rule)
    if proof is not None:           # whatever its domain: no admissible pair differs in what the rule reads
        return Verdict(prop.name, prop.kind, "holds", how="proved", backend=BACKEND,
                       seconds=time.perf_counter() - t0, proof=proof, reason=proof.claim,
                       details={"engine": "the rule's features", "mode": mode,
                                **({"maximum": "no value: a rule has a decision, no score"} if mode == "maximize"
                                   else {})})
    names = list(dict.fromkeys(read + list(prop.free) + pre_features(prop)))
    rel = dict(prop.relaxed)
    tied, varying, cont = [], [], []
    for n in names:
        f = fs.get(n)
        if f is None:
            return no(f"the rule reads '{n}', which feature set {prop.features} does not declare")
        vals = _values(f)
        if vals is None:
            cont.append(n)
            continue
        (varying if (n in prop.free or n in rel) else tied).append((n, vals))
    what = ("a rule model's pairs are decided by enumerating every point of the features it reads, the free and "
            "relaxed ones and those a further pre-condition reads, when they are discrete (int, bool, category) and "
            f"the ordered pairs at most {_max_pairs():,}")
    if cont:
        return no(f"{what}; {', '.join(cont)} {'is' if len(cont) == 1 else 'are'} continuous or too wide to "
                  f"enumerate (declare {'it' if len(cont) == 1 else 'them'} as int or bins of a category to decide it)")
    T = math.prod(len(v) for _, v in tied)
    V = math.prod(len(v) for _, v in varying)
    R = math.prod(len(_values(fs.get(n))) for n in read)
    if T * V * V > _max_pairs() or T * V > MAX_POINTS or R > MAX_RULE_POINTS:
        return no(f"{what}; here {T * V * V:,} ordered pairs of {T * V:,} points ({R:,} points of the rule's own "
                  f"features, at most {MAX_RULE_POINTS:,}): narrow the features' ranges to decide it")
    vgrid, _ = _grid(varying)
    tgrid, _ = _grid(tied)
    N = T * V
    values = {n: np.repeat(v, V) for n, v in tgrid.items()} if tied else {}
    for n, v in vgrid.items():
        values[n] = np.tile(v, T)
    # the rule once per point of its own features; each domain point's decision looked up by its index there
    rgrid, _ = _grid([(n, _values(fs.get(n))) for n in read])
    lo = {n: float(_values(fs.get(n))[0]) for n in read}
    decision = np.zeros(R, dtype=np.int8)
    budget = setting(prop, "timeout", BACKEND)
    try:
        for k in range(R):
            if k % 1024 == 0 and budget is not None and time.perf_counter() - t0 > budget:
                return no(f"the timeout ({budget:g}s) expired evaluating the rule on {k:,} of its {R:,} points")
            env = {n: _env_value(rgrid[n][k]) for n in read}
            decision[k] = 1 if _truth(exact_rule(m.rule, env)) else 0
    except NotExact as e:
        return no(f"{what}, the rule read exactly; {e}")
    except ZeroDivisionError:
        env_s = ", ".join(f"{n} = {_shown(fs.get(n), rgrid[n][k])}" for n in read)
        return no(f"the rule divides by zero at {env_s}: it decides nothing there")
    idx = np.zeros(N, dtype=np.int64)
    for n in read:
        size = len(_values(fs.get(n)))
        idx = idx * size + (values[n] - lo[n]).astype(np.int64)
    d = decision[idx]
    M = admissible(prop, varying, vgrid, V)
    ia, ib = np.nonzero(M)
    base = (np.arange(T, dtype=np.int64) * V)[:, None]
    a = (base + ia[None, :]).reshape(-1)
    b = (base + ib[None, :]).reshape(-1)
    pairs, pre, adm = int(a.size), None, "admissible ordered pairs"
    if prop.pre:
        from fairspec.kinds.pair_pre import PairPre
        from fairspec.kinds.pre_relax import pre_words
        from fairspec.verdict import Unsupported

        try:
            pre = PairPre(prop, fs, values, readings=True)
            a, b, pairs = pre.closure(a, b)
        except Unsupported as e:
            return no(str(e))
        adm = f"admissible ordered pairs meeting {pre_words()}"
        if pre.parted:      # its constants read two ways: a pair only one reading admits is not decided here
            return no(f"the pre-condition's constants admit other pairs in the float each is stored as than in the "
                      f"decimal it is written as ({pre.parted}); write them exactly")
    bad = d[a] != d[b]
    details = {"engine": "enumeration (exact rationals)", "mode": mode, "points": N, "pairs": pairs,
               "cut": f"T*V^2 <= {_max_pairs():,} ordered pairs", **({"pre_condition": adm} if pre else {})}
    left = [f.name for f in fs.features if f.name not in names]
    said = ""
    if left:        # tied and read by neither the rule nor the pre-condition: no pair's decision depends on them
        details["not_enumerated"] = left
        said = (f"; {', '.join(left)}, which the rule does not read and the pair ties, "
                f"{'is' if len(left) == 1 else 'are'} not enumerated: the domain counted is that of the others and "
                f"the verdict is the same for every value of {'it' if len(left) == 1 else 'them'}")
    if mode == "maximize":
        details["maximum"] = "no value: a rule has a decision, no score"
    seconds = time.perf_counter() - t0
    if not bad.any():
        from fairspec.certify.enumerate import by_enumeration, pair_checks

        checks = pair_checks("label", d[a].astype(np.float64), d[b].astype(np.float64), eps=0.0,
                             decision_threshold=0.5, eps_strict=False)
        res = by_enumeration(checks, count=int(a.size), claim=f"label(r(x)) == label(r(x')) for all {pairs:,} {adm}",
                             unit="pairs", points=N)
        if res.proof is None:           # certify disagrees with the comparison above: never a holds
            return no("certify did not confirm the enumeration's pairs", details=details)
        return Verdict(prop.name, prop.kind, "holds", how="proved", backend=BACKEND, seconds=seconds,
                       details=details, proof=res.proof,
                       reason=f"every one of the {pairs:,} {adm} of the {N:,}-point domain was decided by the "
                              f"rule in exact rationals{said}")
    j = int(np.flatnonzero(bad)[0])
    i1, i2 = int(a[j]), int(b[j])
    feats = [n for n in names]
    fx = {n: _shown(fs.get(n), values[n][i1]) for n in feats}
    fy = {n: _shown(fs.get(n), values[n][i2]) for n in feats}
    w = Witness(tuple(float(values[n][i1]) for n in feats), tuple(float(values[n][i2]) for n in feats), fx, fy,
                (float(d[i1]), float(d[i2])), replayed_by="the rule in exact rationals")
    if pre is not None:
        w = pre.in_order(w, i1, i2)
        violating = pre.ordered_pairs(a[bad], b[bad], False)
    else:
        violating = int(bad.sum())
    details["violating_pairs"] = violating
    return Verdict(prop.name, prop.kind, "violated", witness=w, backend=BACKEND, seconds=seconds, details=details,
                   reason=f"{violating:,} of the {pairs:,} {adm} decide differently (every pair of the {N:,}-point "
                          f"domain decided by the rule in exact rationals){said}")
