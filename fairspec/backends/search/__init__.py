"""Batched falsification: search for violating pairs before (and after) any solver.

    from fairspec.backends.search import Box, Protected, Space, Post, falsify
    space = Space(Box.make(lo, hi, integer), [Protected.label(8, [0, 1], "sex")])
    res = falsify(evaluate, space, Post.label(), data=rows, budget_seconds=5, seed=0)
    res.status, res.witnesses[0].x, res.witnesses[0].x_prime, res.ids, res.seconds_to_first

Only numpy is imported here; evaluators import onnx/onnxruntime when built.
"""

from .falsify import PairScores, SearchResult, Witness, falsify, pair_scores, replay
from .post import Post, sigmoid
from .space import Box, Gene, Protected, Space

__all__ = ["Box", "Protected", "Space", "Gene", "Post", "sigmoid", "falsify", "replay",
           "pair_scores", "PairScores", "SearchResult", "Witness"]
