"""Incremental certification (:class:`TreeBuilder`): certify keeps the tree while an engine (the
bab backend) grows it -- certify derives the children of every split, checks every leaf as it
is closed, and mints the ``bab-certificate`` (or, in bound mode, the bound) when all are."""

from __future__ import annotations

import math

import numpy as np

from fairspec.certify.lp import LinearProgram, upper_bound
from fairspec.certify.proof import Proof, _mint
from fairspec.certify.rounding import up
from fairspec.certify.rounding import sigmoid_down as _sigmoid_low, sigmoid_up as _sigmoid_high
from fairspec.certify.pairlp.nodes import Decisions, NodeState, _holds, _norm_var, node_lp, node_state
from fairspec.certify.pairlp.query import PairQuery
from fairspec.certify.pairlp.tree import Leaf, Split, Tighten, _children, _tightened


class TreeBuilder:
    """A branch-and-bound tree certify keeps and checks as an engine grows it.

    The engine asks for the root of each case (:meth:`root`), for a node's state and LP
    (:meth:`state`, :meth:`lp`: certify's own), splits nodes (:meth:`split`: certify derives the
    children and checks coverage) and closes leaves (:meth:`close`: certify checks the leaf at
    once, with the engine's multipliers). :meth:`proof` mints a ``bab-certificate`` when every
    node of every case is closed. Under a class readout ``("argmax", c)`` (``runtime["readout"]``)
    ``base_net``, the K-output network, must be given and the query's network must be exactly its
    class score (:meth:`PairQuery.class_base`; ValueError otherwise); the proof records its
    fingerprint (``detail["base_net"]``). The finished tree (:meth:`trees`) can be re-checked from
    scratch with :func:`check_tree`.

    ``q.threshold`` None is *bound mode* (maximize): every leaf is closed with the bound its
    certificate gives, and the proof states that the measure is at most the largest of them."""

    def __init__(self, q: PairQuery, bound_mode: bool = False, runtime: dict | None = None, base_net=None):
        self.q = q
        self.bound_mode = bound_mode
        # the runtime claim the query's threshold was moved to (fairspec.certify.claims.runtime_record),
        # recorded in the proof so that proofs of partition boxes can be combined (certify.partitions)
        self.runtime = None if runtime is None else dict(runtime)
        # a class readout ("argmax", c): the K-output network base_net is checked here, where the proof
        # is minted (the query's network must be exactly its class score argmax_layers(base_net, c)), and
        # its fingerprint recorded, so that prove_class_stable sees which network every part is about
        self.base_sha = None
        readout = None if self.runtime is None else self.runtime.get("readout")
        if readout is not None and readout and readout[0] == "argmax":
            self.base_sha = q.class_base(readout, base_net)
            if self.base_sha is None:
                raise ValueError(f"the query's network is not the class score of readout {list(readout)} of the "
                                 f"K-output network given")
        self._nodes: dict[int, list] = {}      # id -> [case, decisions, depth, state, tree node or None]
        self._roots: list[int] = []
        self._open: set[int] = set()
        self._next = 0
        self._trees: dict[int, object] = {}
        self._links: dict[int, tuple] = {}     # id -> (parent id, side)
        self._kids: dict[int, tuple] = {}      # split id -> (low id, high id)
        self.counts = {"empty": 0, "interval": 0, "lp": 0}
        self.depth = 0
        self.bound = -math.inf                 # bound mode: the largest certified leaf bound
        for case in range(len(q.cases)):
            self._roots.append(self._new(case, Decisions(), 0, None))

    def _new(self, case, dec, depth, link) -> int:
        i = self._next
        self._next += 1
        self._nodes[i] = [case, dec, depth, None]
        self._open.add(i)
        if link is not None:
            self._links[i] = link
        self.depth = max(self.depth, depth)
        return i

    def roots(self) -> list[int]:
        return list(self._roots)

    def case(self, node: int) -> int:
        return self._nodes[node][0]

    def decisions(self, node: int) -> Decisions:
        return self._nodes[node][1]

    def state(self, node: int) -> NodeState:
        rec = self._nodes[node]
        if rec[3] is None:
            rec[3] = node_state(self.q, rec[0], rec[1])
        return rec[3]

    def lp(self, node: int) -> LinearProgram | None:
        rec = self._nodes[node]
        if len(rec) < 5:
            lp, _ = node_lp(self.q, rec[0], rec[1], self.state(node))
            rec.append(lp)
        return rec[4]

    def split(self, node: int, var, at=None, high_at=None) -> tuple[int, int]:
        if node not in self._open:
            raise ValueError(f"node {node} is not open")
        case, dec, depth = self._nodes[node][:3]
        s = Split(var, at, None, None, high_at)
        kids, why = _children(self.q, dec, s)
        if kids is None:
            raise ValueError(why)
        self._open.discard(node)
        self._trees[node] = s
        lo = self._new(case, kids[0], depth + 1, (node, 0))
        hi = self._new(case, kids[1], depth + 1, (node, 1))
        self._kids[node] = (lo, hi)
        del self._nodes[node][3:]              # free the parent's state and LP
        self._nodes[node].append(None)
        return lo, hi

    def tighten(self, node: int, bounds: dict, certs: dict) -> int:
        """Replace an open node by one child with pre-activation bounds its LP certificates prove
        (see :class:`Tighten`); raises ValueError when a certificate fails."""
        if node not in self._open:
            raise ValueError(f"node {node} is not open")
        case, dec, depth = self._nodes[node][:3]
        t = Tighten(dict(bounds), dict(certs))
        # the node's state and LP as this builder computed them (node_state / node_lp of the same
        # query, case and decisions), not computed a second time
        st = self.state(node)
        child_dec, why = _tightened(self.q, case, dec, t, st, None if st.empty else self.lp(node))
        if child_dec is None:
            raise ValueError(why)
        self._open.discard(node)
        self._trees[node] = t
        kid = self._new(case, child_dec, depth + 1, (node, 0))
        self._kids[node] = (kid,)
        del self._nodes[node][3:]
        self._nodes[node].append(None)
        return kid

    def leaf_bound(self, node: int, y_ub=None, y_eq=None, farkas: bool = False) -> float:
        """Bound mode: the certified upper bound of the measure over a node (``-inf`` if empty or
        if ``farkas`` and the multipliers prove its LP infeasible)."""
        st = self.state(node)
        if st.empty:
            return -math.inf
        b = _interval_measure(self.q, st)
        if y_ub is not None or y_eq is not None:
            lp = self.lp(node)
            if farkas:
                if upper_bound(lp, y_ub, y_eq, c=np.zeros(lp.n)) < 0:
                    return -math.inf
                return b
            b = min(b, _lp_measure(self.q, st, upper_bound(lp, y_ub, y_eq)))
        return b

    def close(self, node: int, y_ub=None, y_eq=None, farkas: bool | None = None) -> bool:
        """Close a node as a leaf: True when certify accepts it (empty, interval proof, or LP
        certificate with the multipliers), False (and the node stays open) otherwise.
        ``farkas``: try the multipliers as a bound (False), as a Farkas certificate (True) or
        both (None)."""
        if node not in self._open:
            raise ValueError(f"node {node} is not open")
        case, dec, depth = self._nodes[node][:3]
        leaf = Leaf(None if y_ub is None else np.asarray(y_ub, dtype=np.float64),
                    None if y_eq is None else np.asarray(y_eq, dtype=np.float64))
        if self.bound_mode:
            b = self.leaf_bound(node, leaf.y_ub, leaf.y_eq)
            if b != -math.inf and (leaf.y_ub is not None or leaf.y_eq is not None):
                b = min(b, self.leaf_bound(node, leaf.y_ub, leaf.y_eq, farkas=True))
            kind = "empty" if b == -math.inf else ("lp" if leaf.y_ub is not None or leaf.y_eq is not None else "interval")
            self.bound = max(self.bound, b)
        else:
            st = self.state(node)
            if st.empty:
                kind = "empty"
            elif st.interval_ok:
                kind = "interval"
            elif leaf.y_ub is None and leaf.y_eq is None:
                return False
            else:
                lp = self.lp(node)
                if farkas is not True and _holds(upper_bound(lp, leaf.y_ub, leaf.y_eq), self.q.strict, st.target):
                    kind = "lp"
                elif farkas is not False and upper_bound(lp, leaf.y_ub, leaf.y_eq, c=np.zeros(lp.n)) < 0:
                    kind = "lp"
                else:
                    return False
        self.counts[kind] += 1
        self._open.discard(node)
        self._trees[node] = leaf
        del self._nodes[node][3:]
        self._nodes[node].append(None)
        return True

    @property
    def open_nodes(self) -> set[int]:
        return set(self._open)

    def proof(self) -> Proof | None:
        """The ``bab-certificate`` when every node is closed (None otherwise)."""
        if self._open:
            return None
        splits = {"x": 0, "xp": 0, "relu": 0, "out": 0, "tighten": 0}
        for t in self._trees.values():
            if isinstance(t, Split):
                splits[_norm_var(self.q, t.var)[0]] += 1
            elif isinstance(t, Tighten):
                splits["tighten"] += 1
        leaves = sum(self.counts.values())
        detail = dict(leaves=leaves, depth=self.depth, cases=len(self.q.cases), lp_leaves=self.counts["lp"],
                      interval_leaves=self.counts["interval"], empty_leaves=self.counts["empty"], splits=splits,
                      post=self.q.post, strict=self.q.strict, box=self.q.box(), pair=self.q.scope())
        if self.bound_mode:
            m = {"label": "min(z, -z')", "logit": "z - z'", "prob": "sigmoid(z) - sigmoid(z')"}[self.q.post]
            return _mint("bab-certificate", f"{m} <= {self.bound} for every pair of the box "
                                            f"({len(self.q.cases)} protected cases)", bound=self.bound, **detail)
        if self.runtime is not None:
            detail["runtime"] = self.runtime
            if self.runtime.get("readout") is not None:     # which output the proof bounds (a class: ("argmax", c))
                detail["readout"] = list(self.runtime["readout"])
            if self.base_sha is not None:                   # the K-output network, checked in __init__
                detail["base_net"] = self.base_sha
        return _mint("bab-certificate", self.q.describe(), threshold=self.q.threshold, **detail)

    def trees(self) -> list:
        """The finished trees (one per case), as :class:`Split` / :class:`Leaf` objects."""
        def build(i):
            t = self._trees.get(i)
            if isinstance(t, Split):
                lo, hi = self._kids[i]
                return Split(t.var, t.at, build(lo), build(hi), t.high_at)
            if isinstance(t, Tighten):
                return Tighten(t.bounds, t.certs, build(self._kids[i][0]))
            return t
        import sys
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 10 * self.depth + 1000))
        try:
            return [build(r) for r in self._roots]
        finally:
            sys.setrecursionlimit(old)


def _interval_measure(q: PairQuery, st: NodeState) -> float:
    """A rigorous upper bound of the measure over a node from its intervals."""
    if q.post in ("label", "logit"):
        return st.measure_ub
    z1l = float(st.ibp[1][-1][0][0])
    Dz = float(st.diff[-1][1][0])
    a = float(up(_sigmoid_high(st.measure_ub) - _sigmoid_low(z1l)))
    return min(a, float(up(max(Dz, 0.0) / 4.0)))


def _lp_measure(q: PairQuery, st: NodeState, ub: float) -> float:
    """The measure bound an LP bound gives (prob: ``sigmoid(max z) - sigmoid(min z')``)."""
    if q.post in ("label", "logit"):
        return ub
    z1l = float(st.ibp[1][-1][0][0])
    return float(up(_sigmoid_high(ub) - _sigmoid_low(z1l)))
