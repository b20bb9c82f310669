"""The pair query of individual fairness as linear programs certify builds itself, and the check
of a branch-and-bound tree over it (``bab-certificate``).

A :class:`PairQuery` is a pure description (numpy only): the network the proof reasons about
(``(W, b, relu)`` layers ending in one logit ``z``), the box ``[lo, hi]`` of its inputs, the
integral inputs, the one-hot groups, the inputs that are tied (one variable for both copies),
free (the protected ones: fixed per *case*) and relaxed (``|x_i - x'_i| <= t``), the
post-condition and its threshold, exact and already moved outward by the runtime's error:

=======  ===================================  ==============================================
post     the claim proved for every pair       with the runtime (error E, see network.py)
=======  ===================================  ==============================================
label    ``min(z, -z') < T`` (strict)          T = -E: no pair with ``z > -E`` and ``z' <= E``
logit    ``z - z' <= T``                       T = eps - 2E
prob     ``sigmoid(z) - sigmoid(z') <= T``     T = eps - 2E (E in probability units)
=======  ===================================  ==============================================

(or ``<`` / ``<=`` as ``strict`` says). The *cases* are every ordered pair ``(a, a')`` of values
of the free inputs that differ on ``must_differ``: certify enumerates them itself from the box.

The LP of a node (:func:`node_lp`) has both copies: the inputs (tied inputs one variable; free
inputs fixed to the case; relaxed pairs within ``t``), for every layer the pre-activations ``p``
(``p - W h = b``, the network's own float numbers: exact rows) and the post-activations ``h``
with ``h >= p``, ``h >= 0`` and the triangle ``h <= s (p - l)`` (``s`` rounded up, so the row
contains the true graph of the ReLU on ``[l, u]``), every variable boxed by certify's own rigorous
interval bounds under the node's decisions, the rigorous difference bounds between the copies
(``h - h'``), and the violated post-condition as the objective. Every constant is computed here:
nothing from the caller is trusted but the multipliers, and a wrong multiplier only weakens the
bound.

:func:`check_tree` re-derives every node's box and phases from the splits, checks that each
split covers its parent (integral inputs may skip the open gap between k and k+1), and checks
every leaf: an empty box, an interval bound below the threshold, or an LP certificate
(:func:`fairspec.certify.lp.upper_bound`) below it.

The package: :mod:`.query` (the query and the claim's threshold), :mod:`.nodes` (a node's
boxes, interval bounds and LP), :mod:`.tree` (the check of a finished tree) and :mod:`.builder`
(the tree certify keeps while an engine grows it).
"""

from fairspec.certify.pairlp.builder import TreeBuilder
from fairspec.certify.pairlp.nodes import Decisions, NodeState, node_lp, node_state, prob_threshold_low
from fairspec.certify.pairlp.query import POSTS, PairQuery, moved_threshold
from fairspec.certify.pairlp.tree import Checked, Leaf, Split, Tighten, check_tree

__all__ = ["PairQuery", "Decisions", "NodeState", "Split", "Tighten", "Leaf", "Checked", "node_state", "node_lp",
           "check_tree", "POSTS", "prob_threshold_low", "TreeBuilder", "moved_threshold"]
