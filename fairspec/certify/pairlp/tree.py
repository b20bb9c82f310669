"""The check of a finished branch-and-bound tree (:func:`check_tree`): splits (:class:`Split`,
:class:`Tighten`) must cover their parents, leaves (:class:`Leaf`) must be empty, proved by
intervals or by an LP certificate below the threshold; then a ``bab-certificate`` is minted."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple, Sequence

import numpy as np

from fairspec.certify.lp import upper_bound
from fairspec.certify.proof import Proof, _mint
from fairspec.certify.pairlp.nodes import Decisions, _holds, _norm_var, node_lp, node_state
from fairspec.certify.pairlp.query import PairQuery


@dataclass(frozen=True, eq=False)
class Split:
    """A binary split of a node. ``var``: ``("x", i)`` / ``("xp", i)`` (an input of copy 1 / 2; at
    ``at``: low ``<= at``, high ``>= high_at``, default ``at``, or ``floor(at) + 1`` for an integral
    input), ``("relu", copy, layer, neuron)`` (low: inactive ``p <= 0``, high: active ``p >= 0``) or
    ``("out", copy)`` (the logit of a copy: low ``<= at``, high ``>= high_at``)."""

    var: tuple
    at: float | None = None
    low: object = None
    high: object = None
    high_at: float | None = None


@dataclass(frozen=True, eq=False)
class Tighten:
    """Bounds on pre-activations proved by LP certificates over the node's own LP: ``bounds``
    ``{(copy, layer, neuron): (lo, hi)}`` and ``certs`` ``{(copy, layer, neuron, "lo" | "hi"):
    (y_ub, y_eq)}`` (multipliers of the node LP with objective ``-p`` / ``p``); every point of the
    node satisfies them, so the one ``child`` with the bounds added covers it."""

    bounds: dict
    certs: dict
    child: object = None


@dataclass(frozen=True, eq=False)
class Leaf:
    """A leaf: multipliers of its node LP (``y_ub``, ``y_eq``), or none when the node is empty or
    its interval bound already proves it."""

    y_ub: np.ndarray | None = None
    y_eq: np.ndarray | None = None


class Checked(NamedTuple):
    proof: Proof | None
    reason: str


def _children(q: PairQuery, dec: Decisions, s: Split):
    """The decisions of the two children of a split, or a reason why the split does not cover."""
    try:
        var = _norm_var(q, s.var)
    except (ValueError, IndexError, TypeError) as e:
        return None, f"bad split variable {s.var!r}: {e}"
    kind = var[0]
    if kind == "relu":
        _, c, k, j = var
        if c not in (0, 1) or not 0 <= k < len(q.layers) or not q.layers[k][2] or not 0 <= j < q.layers[k][0].shape[0]:
            return None, f"split on a neuron that is no ReLU: {var}"
        if s.at is not None or s.high_at is not None:
            return None, "a ReLU split has no split point"
        lo_d = Decisions(dec.inputs, {**dec.phases, (c, k, j): 0}, dec.out, dec.pre)
        hi_d = Decisions(dec.inputs, {**dec.phases, (c, k, j): 1}, dec.out, dec.pre)
        return (lo_d, hi_d), ""
    if s.at is None:
        return None, "a split needs a split point"
    at = float(s.at)
    if not math.isfinite(at):
        return None, f"split point {s.at!r} is not finite"
    if kind in ("x", "xp"):
        i = var[1]
        if not 0 <= i < q.n:
            return None, f"split on input {i} out of range"
        if kind == "xp" and i not in {j for j, _ in q.relaxed} and i not in q.free:
            return None, f"split on x'[{i}] of a tied input"
        integral = bool(q.integer[i])
        lo_end = math.floor(at) if integral else at
        allowed = lo_end + 1 if integral else at
        high_at = allowed if s.high_at is None else float(s.high_at)
        if not high_at <= allowed:
            return None, (f"the split of {var} at {at} does not cover its parent: the high side starts at "
                          f"{high_at} > {allowed}")
        cur = dec.inputs.get(var, (-math.inf, math.inf))
        lo_d = Decisions({**dec.inputs, var: (cur[0], min(cur[1], lo_end))}, dec.phases, dec.out, dec.pre)
        hi_d = Decisions({**dec.inputs, var: (max(cur[0], high_at), cur[1])}, dec.phases, dec.out, dec.pre)
        return (lo_d, hi_d), ""
    if kind == "out":
        c = var[1]
        if c not in (0, 1):
            return None, f"output split on copy {c}"
        high_at = at if s.high_at is None else float(s.high_at)
        if not high_at <= at:
            return None, f"the output split at {at} does not cover its parent (high side from {high_at})"
        cur = dec.out.get(c, (-math.inf, math.inf))
        lo_d = Decisions(dec.inputs, dec.phases, {**dec.out, c: (cur[0], min(cur[1], at))}, dec.pre)
        hi_d = Decisions(dec.inputs, dec.phases, {**dec.out, c: (max(cur[0], high_at), cur[1])}, dec.pre)
        return (lo_d, hi_d), ""
    return None, f"unknown split {var!r}"


def _tightened(q: PairQuery, case: int, dec: Decisions, t: Tighten, state=None, lp=None):
    """The child decisions of a Tighten node, or a reason why its certificates fail. ``state`` /
    ``lp``: the node's own ``node_state(q, case, dec)`` / ``node_lp`` when the caller already holds
    them (TreeBuilder caches both per node; the same computation, not done twice)."""
    st = node_state(q, case, dec) if state is None else state
    if st.empty:
        return Decisions(dec.inputs, dec.phases, dec.out, {**dec.pre, **{k: v for k, v in t.bounds.items()}}), ""
    if lp is None:
        lp, _ = node_lp(q, case, dec, st)
    L = q.layout
    new = dict(dec.pre)
    for key, (blo, bhi) in t.bounds.items():
        try:
            c, k, j = (int(v) for v in key)
            col = int(L.p[c][k][j])
        except (ValueError, TypeError, IndexError):
            return None, f"bad bound key {key!r}"
        blo, bhi = float(blo), float(bhi)
        cur = new.get((c, k, j), (-math.inf, math.inf))
        for side, val, sign in (("hi", bhi, 1.0), ("lo", blo, -1.0)):
            if (side == "hi" and val == math.inf) or (side == "lo" and val == -math.inf):
                continue
            cert = t.certs.get((c, k, j, side))
            if cert is None:
                return None, f"no certificate for the {side} bound of neuron {(c, k, j)}"
            obj = np.zeros(lp.n)
            obj[col] = sign
            ub = upper_bound(lp, cert[0], cert[1], c=obj)
            if not _holds(ub, False, Fraction(sign * val)):
                return None, f"the certificate bounds neuron {(c, k, j)} by {sign * ub}, not {val}"
        new[(c, k, j)] = (max(cur[0], blo), min(cur[1], bhi))
    return Decisions(dec.inputs, dec.phases, dec.out, new), ""


def check_leaf(q: PairQuery, case: int, dec: Decisions, leaf: Leaf) -> tuple[str | None, str]:
    """("empty" | "interval" | "lp", "") when the leaf is certified, else (None, reason)."""
    st = node_state(q, case, dec)
    if st.empty:
        return "empty", ""
    if st.interval_ok:
        return "interval", ""
    if leaf.y_ub is None and leaf.y_eq is None:
        return None, "a leaf with neither an empty box, an interval proof nor LP multipliers"
    lp, _ = node_lp(q, case, dec, st)
    try:
        ub = upper_bound(lp, leaf.y_ub, leaf.y_eq)
    except ValueError as e:
        return None, f"bad multipliers: {e}"
    if _holds(ub, q.strict, st.target):
        return "lp", ""
    # the same multipliers may prove the node's LP infeasible (a Farkas certificate)
    if upper_bound(lp, leaf.y_ub, leaf.y_eq, c=np.zeros(lp.n)) < 0:
        return "lp", ""
    return None, f"the LP certificate bounds the measure by {ub}, not {'<' if q.strict else '<='} {st.target}"


def check_tree(q: PairQuery, trees: Sequence, deadline: float | None = None) -> Checked:
    """Check a branch-and-bound tree per protected case (``trees[i]`` for ``q.cases[i]``); a
    ``bab-certificate`` Proof when every split covers its parent and every leaf is certified."""
    import time

    if len(trees) != len(q.cases):
        return Checked(None, f"{len(trees)} trees for {len(q.cases)} protected cases")
    counts = {"empty": 0, "interval": 0, "lp": 0}
    splits = {"x": 0, "xp": 0, "relu": 0, "out": 0}
    depth = 0
    for case, tree in enumerate(trees):
        stack = [(tree, Decisions(), 0)]
        while stack:
            if deadline is not None and time.monotonic() > deadline:
                return Checked(None, "the certificate check ran out of time")
            node, dec, d = stack.pop()
            depth = max(depth, d)
            if isinstance(node, Split):
                kids, why = _children(q, dec, node)
                if kids is None:
                    return Checked(None, f"case {case}: {why}")
                if node.low is None or node.high is None:
                    return Checked(None, f"case {case}: a split with a missing child does not cover its parent")
                splits[_norm_var(q, node.var)[0]] += 1
                stack.append((node.low, kids[0], d + 1))
                stack.append((node.high, kids[1], d + 1))
            elif isinstance(node, Tighten):
                child, why = _tightened(q, case, dec, node)
                if child is None:
                    return Checked(None, f"case {case}: {why}")
                if node.child is None:
                    return Checked(None, f"case {case}: a tightening without a child")
                splits["tighten"] = splits.get("tighten", 0) + 1
                stack.append((node.child, child, d + 1))
            elif isinstance(node, Leaf):
                kind, why = check_leaf(q, case, dec, node)
                if kind is None:
                    return Checked(None, f"case {case}, leaf at depth {d}: {why}")
                counts[kind] += 1
            else:
                return Checked(None, f"case {case}: {type(node).__name__} is neither a Split nor a Leaf")
    leaves = sum(counts.values())
    proof = _mint("bab-certificate", q.describe(), leaves=leaves, depth=depth, cases=len(q.cases),
                  lp_leaves=counts["lp"], interval_leaves=counts["interval"], empty_leaves=counts["empty"],
                  splits=splits, post=q.post, threshold=q.threshold, strict=q.strict)
    return Checked(proof, "")
