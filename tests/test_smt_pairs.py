"""SMT (pysmt + z3) pair backend: agrees with brute force and with the MILP backend."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem, brute_force, check_witness
from fairspec.models.network import random_net

pytest.importorskip("pysmt")
pytest.importorskip("z3")

from fairspec.backends import smt  # noqa: E402

POSTS = (("label", 0.0), ("logit", 0.5), ("prob", 0.05))


def _problem(seed, post, eps, hidden=(4,)):
    net = random_net(seed, 3, hidden)
    return PairProblem(net, lo=[0, 0, 0], hi=[4, 3, 1], integer=[True] * 3, free=(2,), post=post, eps=eps)


@pytest.mark.parametrize("post,eps", POSTS)
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_smt_agrees_with_brute_force_and_milp(seed, post, eps):
    p = _problem(seed, post, eps)
    truth = brute_force(p)
    f = smt.find(p, time_limit=30)
    assert f.status == truth.status
    if f.status == "violated":
        assert check_witness(p, f.witness.x, f.witness.x_prime, p.net.forward)
    else:
        assert f.how == "proved"
    m = smt.maximize(p, time_limit=30)
    assert m.status == truth.status and m.how == "proved"
    assert abs(m.value - truth.value) <= 1e-6
    pytest.importorskip("highspy")
    from fairspec.backends import milp

    mm = milp.maximize(p, time_limit=30)
    assert mm.status == m.status and abs(mm.value - m.value) <= 1e-6


def test_verdicts_cover_both_outcomes():
    assert {brute_force(_problem(s, post, eps)).status for s in (0, 1, 3) for post, eps in POSTS} == {"violated", "holds"}


def test_smt_onehot_group():
    net = random_net(4, 5, (4,))
    p = PairProblem(net, lo=[0] * 5, hi=[1, 2, 1, 1, 1], integer=[True] * 5, onehot_groups=((2, 3, 4),),
                    free=(2, 3, 4), post="logit", eps=0.3)
    truth = brute_force(p)
    res = smt.maximize(p, time_limit=30)
    assert res.status == truth.status and abs(res.value - truth.value) <= 1e-6
    w = res.best
    assert sum(w.x[2:]) == 1 and sum(w.x_prime[2:]) == 1 and w.x[2:] != w.x_prime[2:]


def test_smt_prove_and_time_out():
    p = _problem(1, "label", 0.0)
    assert smt.prove(p, time_limit=30).status == brute_force(p).status
    big = PairProblem(random_net(5, 13, (48, 24)), lo=[0] * 13, hi=[10] * 13, integer=[True] * 13,
                      free=(12,), post="logit", eps=5.0)
    res = smt.prove(big, time_limit=0.3)
    assert res.status != "holds"
    if res.status == "unknown":
        assert res.how is None and "time" in res.reason
