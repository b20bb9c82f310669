"""The one "holds" rule and the Engine interface of fairspec.backends.pair.drivers."""

from __future__ import annotations

import dataclasses

import pytest

from fairspec.backends.pair import PairProblem
from fairspec.backends.pair.drivers import HOLDS_TOL, Engine, holds
from fairspec.models.network import random_net


def test_holds_rule():
    # label: a pair of measure exactly 0 can flip (z > 0, z' = 0)
    assert not holds("label", 0.0, 0.0)
    assert not holds("label", 0.0, -HOLDS_TOL / 2)
    assert holds("label", 0.0, -2 * HOLDS_TOL)
    assert holds("label", 0.0, 0.0, strict=True)          # no pair reaches 0
    assert not holds("label", 0.0, 1e-12, strict=True)
    for post in ("logit", "prob"):                         # a violation needs measure > eps
        assert holds(post, 0.05, 0.05) and holds(post, 0.05, 0.05, strict=True)
        assert not holds(post, 0.05, 0.05 + 1e-12)
    assert not holds("logit", 1.0, None)


def test_milp_and_z3_engines_implement_the_interface():
    from fairspec.backends.milp.modes import MilpEngine
    from fairspec.backends.smt import Z3Engine

    p = PairProblem(random_net(0, 3, (4,)), lo=[0, 0, 0], hi=[4, 3, 1], integer=[True] * 3, free=(2,),
                    post="label", eps=0.0)
    assert isinstance(MilpEngine(p), Engine)
    for name in ("check", "optimize", "remaining", "elapsed"):
        assert callable(getattr(Z3Engine, name))
    assert not Z3Engine.can_optimize and MilpEngine.can_optimize


def test_formula_nodes_are_frozen():
    from fairspec.backends.boolean import And, Not, Test, Threshold

    f = And((Test("sex", frozenset({1})), Not(Threshold("age", ">", 30.0))))
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.args = ()
    assert hash(f) == hash(And((Test("sex", frozenset({1})), Not(Threshold("age", ">", 30.0)))))
