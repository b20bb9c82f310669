"""One Proof for a whole domain from one Proof per partition box (:func:`combine_partitions`).

An individual-fairness property over pairs ``(x, x')`` is decided partition by partition
(:mod:`fairspec.backends.milp.partition`): the box of the *tied* inputs -- those x and x' share --
is cut into sub-boxes, and each is decided as the same pair question on its box. This module checks
that the proofs of the parts add up to a proof of the whole property, and mints it.

**Why a pair never straddles two partitions.** A pair of the domain has ``x_i == x'_i`` on every
tied input i; its other inputs (free: the protected ones; relaxed: within a tolerance) range over
the domain's whole range in both copies. Certify accepts only partition boxes that equal the domain
on every input that is not tied (the free and relaxed inputs are read from the whole property's
record, :func:`fairspec.certify.claims.pair_scope`). So the tied part of a pair is one point, which
lies in some partition box B, and the rest of x and of x' lies in B as well: the whole pair is a
pair of B. The boxes are checked to lie inside the domain, to be pairwise disjoint (integral
inputs: no common lattice point; continuous ones: no common interior) and to cover it (integral
inputs counted in lattice points, continuous ones in volume over the inputs whose range is not a
single point; equal totals of disjoint boxes inside the domain leave no lattice point and, the
boxes being closed, no point uncovered). Hence every pair of the domain is a pair of at least one
partition box.

**What each part must prove.** The part proof of box B is accepted only when it records the box
it covers (``detail["box"]``) and that box contains B (a union's proof covers each of its members'
boxes; a claim over a box is a claim over every sub-box), and when it records the claim parameters
that make it "the whole property restricted to its box":

* ``bab-certificate`` (:class:`fairspec.certify.pairlp.TreeBuilder`) and ``exact-smt``
  (:func:`fairspec.certify.smt.prove_unsat`): a real-arithmetic claim ``measure < T`` / ``<= T``
  over the pairs of its box for the network of ``detail["pair"]``; that record (network
  fingerprint, integral inputs, one-hot groups, free, ``must_differ``, relaxed tolerances) must be
  the whole property's, its post-condition the whole property's, and its runtime record
  (``detail["runtime"]``: eps as written, strictness, readout, precision, E) the whole property's
  but for E, with ``(T, strict)`` exactly :func:`fairspec.certify.pairlp.moved_threshold` of it.
  Then no pair of the box violates the property on the runtime (the runtime is within E of the
  real network; E is certify's :func:`fairspec.certify.network.runtime_error_bound` over the part's
  box, computed by the caller: the same trust as a whole-domain bab-certificate).
* ``interval`` / ``enumeration`` from :func:`fairspec.certify.tiling.prove_tiled` (the decision pass
  by refinement): no individual of the box has a counterfactual that breaks the post-condition on
  the runtime, every one of its groups' records (``detail["records"]``) being the whole property's
  post-condition, eps and strictness (or, for a label, its decision threshold), readout and
  precision (where the group bounded a network; an enumeration evaluated the runtime itself, and for
  a class readout ``("argmax", c)`` read class c from the runtime's K outputs itself and names it:
  :func:`fairspec.certify.enumerate.class_scores_of`; an enumeration naming no class is refused), and
  its counterfactuals (``"_relation"``: the cases each group assigned the protected and relaxed
  inputs and the unprotected one-hot groups' categories, the pairs of cases it compared) holding every pair the property admits (:func:`_relation_ok`,
  listed from the whole property's record and the domain: required when there are relaxed inputs,
  checked whenever recorded). An individual of a tile is its tied inputs; its pairs are the cases', so
  "every individual of the box, under every admitted pair of cases" is every pair of the box.

A proof lacking a record, with any parameter not equal to the whole property's (another threshold,
another strictness, another network, another runtime), of another method, or a box that does not
contain its partition -> None: the caller certifies the whole domain as before.

**The combined claim**: no pair (x, x') of the whole domain violates the property on the model's
runtime, because each lies in a partition box whose proof says so. Its method is the parts' method
when they share one, else ``partitioned``; ``detail`` counts the parts per method.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np

from fairspec.certify.claims import exact_text, label_threshold, net_fingerprint, pair_scope, runtime_record, tied_inputs
from fairspec.certify.proof import Proof, _mint

__all__ = ["combine_partitions", "whole_claim", "problem_scope", "covers_domain"]

#: the real-arithmetic proofs moved by the runtime's error
MOVED = ("bab-certificate", "exact-smt")
#: the proofs of the refinement's tilings
TILED = ("interval", "enumeration")


def problem_scope(problem) -> dict:
    """The pair record (:func:`fairspec.certify.claims.pair_scope`) of a pair problem, read by duck
    typing (``net``, ``integer``, ``onehot_groups``, ``free``, ``must_differ``, ``relaxed``): what
    the whole property's part proofs, and the refinement's tilings, record they are about."""
    from fairspec.certify.network import as_layers

    return pair_scope(net_fingerprint(as_layers(problem.net)), problem.integer, problem.onehot_groups, problem.free,
                      problem.must_differ, problem.relaxed)


def whole_claim(problem, *, readout, precision: str, label_readout=None) -> dict:
    """The whole property's claim parameters, from a pair problem (read by duck typing: the fields
    :func:`problem_scope` reads, ``post``, ``eps``, ``eps_strict``) and its runtime's readout and
    precision: what every part proof must record. ``label_readout``: a ``label`` post's other readout of
    the same decision, which a branch-and-bound part may record instead (a scikit-learn linear
    classifier's predict is the sign of its decision_function, ``("logit", 0)``, where ``readout`` reads
    its predict_proba: ``backends.pair.certify.Runtime.label_readout``)."""
    out = {"post": str(problem.post), "eps": exact_text(problem.eps), "eps_strict": bool(problem.eps_strict),
           "readout": _listed(readout), "precision": str(precision), "pair": problem_scope(problem)}
    if label_readout is not None and str(problem.post) == "label":
        out["label_readout"] = _listed(label_readout)
    return out


def _listed(readout) -> list:
    return [v if isinstance(v, str) else int(v) for v in readout]


def _box(rec, n: int):
    try:
        blo = np.asarray(rec[0], dtype=np.float64).reshape(-1)
        bhi = np.asarray(rec[1], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    if blo.shape != (n,) or bhi.shape != (n,) or not (np.all(np.isfinite(blo)) and np.all(np.isfinite(bhi))):
        return None
    return blo, bhi


def _contains(outer, inner, integer) -> bool:
    """Does box ``outer`` hold every point of box ``inner`` (integral inputs: every lattice point)?"""
    (olo, ohi), (ilo, ihi) = outer, inner
    for i in range(olo.shape[0]):
        if integer[i]:
            a, b = math.ceil(ilo[i]), math.floor(ihi[i])
            if a > b:
                return True                 # no lattice point: nothing to hold
            if a < olo[i] or b > ohi[i]:
                return False
        elif ilo[i] < olo[i] or ihi[i] > ohi[i]:
            return False
    return True


def _moved_ok(pr: Proof, expect: dict) -> bool:
    from fairspec.certify.pairlp.query import moved_threshold

    d = pr.detail
    rt = d.get("runtime")
    if not isinstance(rt, dict) or d.get("pair") != expect["pair"] or d.get("post") != expect["post"]:
        return False
    try:
        E = float(rt["runtime_error"])
        if not (math.isfinite(E) and E >= 0):
            return False
        reads = [expect["readout"]] + ([expect["label_readout"]] if expect.get("label_readout") else [])
        if all(runtime_record(expect["eps"], expect["eps_strict"], E, r, expect["precision"]) != rt for r in reads):
            return False
        thr, strict = moved_threshold(expect["post"], Fraction(expect["eps"]), E, expect["eps_strict"])
        return Fraction(d["threshold"]) == thr and d.get("strict") is strict
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return False


def _direct_ok(rec, expect: dict) -> bool:
    """A record of a proof about the runtime's own outputs (:func:`fairspec.certify.claims.direct_record`)."""
    if not isinstance(rec, dict) or rec.get("post") != expect["post"]:
        return False
    if expect["post"] == "label":
        # the readout's own threshold, or the model's 0/1 decisions at 1/2 (count_individuals checked they are)
        if rec.get("decision_threshold") != label_threshold(expect["readout"]) and not (
                rec.get("compared") == "decisions" and rec.get("decision_threshold") == "1/2"):
            return False
    elif rec.get("eps") != expect["eps"] or rec.get("eps_strict") is not expect["eps_strict"]:
        return False
    if "precision" in rec:
        return rec.get("readout") == expect["readout"] and rec.get("precision") == expect["precision"]
    if rec.get("evaluated") != "runtime":
        return False
    if expect["readout"][0] == "argmax" or "readout" in rec:
        # a class part: the enumeration read the class from the runtime's outputs itself
        # (certify.enumerate.class_scores_of) and names it; an enumeration of unnamed scores is refused
        return rec.get("readout") == expect["readout"]
    return True


#: the most counterfactual cases (assignments of the protected and relaxed inputs) :func:`_relation_ok` lists
#: (a count: it compares every two; the refinement enumerates at most quantify.MAX_CASES = 64)
MAX_RELATION = 256


def _relation_ok(rel, scope: dict, lo, hi) -> bool:
    """Does a proof's recorded relation (:func:`fairspec.certify.claims.relation_record`: the cases it
    assigned the protected and relaxed inputs, the ordered pairs of cases it compared) hold every pair
    the property admits on the domain ``[lo, hi]``? Those pairs, listed here from the record of the
    pair question alone: every protected one-hot group's categories (a member whose range reaches 1),
    every integer value of a protected or relaxed input (a real-valued one that is not a single point:
    no finite list, refused); a pair differs on some input of ``must_differ`` and each relaxed input
    lies within its tolerance (as recorded, exactly). An unprotected one-hot group the cases assign
    (the decision pass's tied categories, ``counterfactuals(tie_groups=True)``): every one of its
    categories (a member whose range reaches 1), a pair's two cases in the same one. Comparing more
    pairs than these proves no less."""
    import itertools

    try:
        cases, pairs = rel
        free, must = [int(i) for i in scope["free"]], {int(i) for i in scope["must_differ"]}
        tol = {int(i): Fraction(float(t)) for i, t in scope["relaxed"]}
        grouped = {int(i) for g in scope["onehot_groups"] for i in g}
        assigned = {int(i) for i, _ in cases[0]} if cases else set()
        units, tie = [], set()
        for g in scope["onehot_groups"]:
            if set(g) & set(free) or set(g) <= assigned:
                units.append([tuple((int(i), 1.0 if i == j else 0.0) for i in g) for j in g if hi[int(j)] >= 1])
                if not set(g) & set(free):
                    tie |= {int(i) for i in g}          # a tied group: x and x' in one category
        for i in sorted(set(free) - grouped) + sorted(tol):
            if scope["integer"][i]:
                vals = range(math.ceil(lo[i]), math.floor(hi[i]) + 1)
            elif lo[i] == hi[i]:
                vals = [lo[i]]
            else:
                return False
            if len(vals) > MAX_RELATION:
                return False
            units.append([((i, float(v)),) for v in vals])
        if math.prod(len(u) for u in units) > MAX_RELATION:
            return False
        need = [dict(itertools.chain.from_iterable(c)) for c in itertools.product(*units)]
        have = {(tuple(cases[a]), tuple(cases[b])) for a, b in pairs}
        want = {i for c in need[:1] for i in c}
        if any({int(i) for i, _ in c} != want for c in cases):
            return False                # a case assigns other inputs than the protected and relaxed ones
        for a, b in itertools.product(need, need):
            if not any(a[i] != b[i] for i in must) or any(abs(Fraction(a[i]) - Fraction(b[i])) > t
                                                          for i, t in tol.items()) \
                    or any(a[i] != b[i] for i in tie):
                continue
            if (tuple(sorted(a.items())), tuple(sorted(b.items()))) not in have:
                return False
        return True
    except (KeyError, TypeError, ValueError, IndexError, ArithmeticError):
        return False


def _tiled_ok(pr: Proof, expect: dict, lo, hi, memo: dict | None = None) -> bool:
    d = pr.detail
    recs = d.get("records")
    if d.get("side") == "unfair" or not recs or not isinstance(recs, (list, tuple)):
        return False
    if d.get("pair") != expect["pair"]:
        return False
    scope = expect["pair"]
    for r in recs:
        rel = r.get("_relation") if isinstance(r, dict) else None
        if rel is None and scope["relaxed"]:
            return False            # a relaxed property's pairs are checked from the record, or not accepted
        if rel is not None:
            # one check per distinct relation in a call (thousands of partitions share a few records)
            ok = memo.get(rel) if memo is not None else None
            if ok is None:
                ok = _relation_ok(rel, scope, lo, hi)
                if memo is not None:
                    memo[rel] = ok
            if not ok:
                return False
    return all(_direct_ok(r, expect) for r in recs)


def covers_domain(boxes, lo, hi, integer, tied) -> bool:
    """Do the boxes lie inside ``[lo, hi]``, equal it on every input not in ``tied``, and hold each
    of its points exactly once (integral inputs: lattice points; continuous: up to common faces)?"""
    n = lo.shape[0]
    tied = {int(i) for i in tied}
    for blo, bhi in boxes:
        if np.any(blo < lo) or np.any(bhi > hi):
            return False
        for i in range(n):
            if i not in tied and (blo[i] != lo[i] or bhi[i] != hi[i]):
                return False                # a cut on an input x and x' need not share: pairs may straddle
    wide = [i for i in range(n) if integer[i] or hi[i] > lo[i]]

    def measure(a, b):
        out = Fraction(1)
        for i in wide:
            if integer[i]:
                out *= max(0, math.floor(b[i]) - math.ceil(a[i]) + 1)
            else:
                out *= max(Fraction(0), Fraction(float(b[i])) - Fraction(float(a[i])))
        return out

    for k in range(len(boxes)):
        for m in range(k + 1, len(boxes)):
            a = np.maximum(boxes[k][0], boxes[m][0])
            b = np.minimum(boxes[k][1], boxes[m][1])
            disjoint = any((math.floor(b[i]) < math.ceil(a[i])) if integer[i] else (b[i] <= a[i]) for i in wide) \
                or any(b[i] < a[i] for i in range(n))
            if not disjoint:
                return False
    return sum(measure(a, b) for a, b in boxes) == measure(lo, hi)


def combine_partitions(proofs: Sequence, boxes: Sequence, lo, hi, integer, *, expect: dict, claim: str,
                       methods: Sequence[str] = MOVED + TILED) -> Proof | None:
    """One Proof that no pair of the domain ``[lo, hi]`` violates the property, from ``proofs[k]``,
    the proof of partition box ``boxes[k]``; ``expect`` the whole property's claim parameters
    (:func:`whole_claim`); ``methods`` the part methods accepted. None unless every check of the
    module docstring passes."""
    if not isinstance(expect, dict) or not isinstance(expect.get("pair"), dict):
        return None
    lo = np.asarray(lo, dtype=np.float64).reshape(-1)
    hi = np.asarray(hi, dtype=np.float64).reshape(-1)
    n = lo.shape[0]
    integer = np.asarray(integer, dtype=bool).reshape(-1)
    if integer.shape != (n,) or list(map(bool, integer)) != expect["pair"]["integer"]:
        return None
    if len(proofs) != len(boxes) or not boxes or not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return None
    by: dict[str, int] = {}
    B = []
    memo: dict = {}
    for pr, box in zip(proofs, boxes):
        part = _box(box, n)
        if part is None or not isinstance(pr, Proof) or pr.method not in methods:
            return None
        own = _box(pr.detail.get("box") or (), n)
        if own is None or not _contains(own, part, integer):
            return None
        ok = (_moved_ok(pr, expect) if pr.method in MOVED else _tiled_ok(pr, expect, lo, hi, memo) if pr.method in TILED
              else False)
        if not ok:
            return None
        by[pr.method] = by.get(pr.method, 0) + 1
        B.append(part)
    scope = expect["pair"]
    if not covers_domain(B, lo, hi, integer, tied_inputs(n, scope["free"], scope["relaxed"])):
        return None
    method = next(iter(by)) if len(by) == 1 else "partitioned"
    errs = [float(p.detail["runtime"]["runtime_error"]) for p in proofs if p.method in MOVED]
    extra = {}
    if errs:
        extra["runtime_error"] = max(errs)          # the largest E a part's threshold was moved by
    solver = next((p.detail.get("solver") for p in proofs if p.detail.get("solver")), None)
    if solver:
        extra["solver"] = solver
    excluded = sum(int(p.detail.get("excluded", 0)) for p in proofs)
    if excluded:
        extra["excluded"] = excluded                # exact-smt: pairs each compared exactly on the runtime
    extra["readout"] = list(expect["readout"])     # the readout every part was checked against (a class: argmax, c)
    # the K-output network the class parts that record one were checked against (certify minted it): one
    bases = {p.detail["base_net"] for p in proofs if p.detail.get("base_net") is not None}
    if len(bases) > 1:
        return None
    if bases:
        extra["base_net"] = next(iter(bases))
    # what the whole proof is about, as its parts were checked against it (certify.argmax.join_logit_columns
    # reads it): the pair question (network fingerprint included) and the claim
    extra["pair"] = expect["pair"]
    extra["whole"] = {k: expect[k] for k in ("post", "eps", "eps_strict", "readout", "precision")}
    return _mint(method, claim, partitions=len(B), by_method=dict(sorted(by.items())),
                 box=[[float(v) + 0.0 for v in lo], [float(v) + 0.0 for v in hi]], **extra)
