"""From helper 3a's solver-neutral ``PairProblem`` to the search space, and back.

    res = falsify_problem(problem, data=rows, budget_seconds=2)      # search first
    if res.violated: seeds for the MILP: res.witnesses[0].x, .x_prime

The network's ``forward`` (float64 logits) is the evaluator unless one is given.
"""

from __future__ import annotations

import numpy as np

from .falsify import SearchResult, falsify
from .post import Post
from .space import Box, Protected, Space


def space_of(problem, max_codes: int = 64, continuous_points: int = 9) -> Space:
    """The Space of a PairProblem: its box, its free inputs as protected attributes (a free
    one-hot group: its unit vectors; a free integer input: all its codes, or ``max_codes``
    evenly spaced ones; a free continuous input: ``continuous_points`` evenly spaced values),
    and its relaxed inputs."""
    box = Box.make(problem.lo, problem.hi, problem.integer, problem.onehot_groups)
    free = set(problem.free)
    prot = []
    for g in problem.onehot_groups:
        if free.intersection(g):
            prot.append(Protected.onehot(g, f"group{g[0]}"))
            free -= set(g)
    for i in sorted(free):
        lo, hi = float(box.lo[i]), float(box.hi[i])
        if box.integer[i]:
            n = int(hi - lo) + 1
            vals = np.arange(lo, hi + 1) if n <= max_codes else np.unique(np.round(np.linspace(lo, hi, max_codes)))
        else:
            vals = np.linspace(lo, hi, continuous_points)
        prot.append(Protected.label(i, [float(v) for v in vals], f"x{i}"))
    return Space(box, prot, dict(problem.relaxed))


def post_of(problem) -> Post:
    if problem.post == "label":
        return Post.label()
    if problem.post == "prob":
        return Post.prob(problem.eps)
    return Post.logit(problem.eps)


def falsify_problem(problem, data: np.ndarray | None = None, evaluate=None, **kw) -> SearchResult:
    """``falsify`` on a PairProblem (``kw`` as for ``falsify``). Witnesses satisfy the
    problem's pre-condition; check them with ``pair.check_witness`` before reporting."""
    if evaluate is None:
        net = problem.net
        evaluate = lambda X: net.forward(X)  # noqa: E731
    return falsify(evaluate, space_of(problem), post_of(problem), data=data,
                   must_differ=bool(problem.must_differ), **kw)
