"""The MILP's answers certified (issue 20 item 2/3): against brute force on small dyadic networks
biased toward ties (thresholds exactly on the optimum, `<` and `<=`), a `holds` carries a certify
Proof, a maximize bound is never below the true maximum, and nothing wrong is reported."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fairspec.backends import milp
from fairspec.backends.pair import brute_force
from test_bab import _problem


@pytest.mark.parametrize("post", ["label", "logit"])
def test_milp_answers_are_certified_at_ties(post, monkeypatch):
    # maximize's certified bound (certify.certified_bound: the best-first search, bab.maximize) runs once
    # per network: it does not read the threshold (test_the_best_first_search_does_not_read_the_threshold),
    # and any of its runs is a certified bound; every threshold's MILP, prove and maximize still run
    _, searched = _once_per_domain(monkeypatch)
    rng = np.random.default_rng({"label": 3, "logit": 4}[post])
    seen_holds = 0
    for k in range(6):
        p = _problem(rng, post, onehot=k % 2 == 1)
        truth = brute_force(p)
        eps = [0.0] if post == "label" else [max(truth.value, 0.0), max(truth.value, 0.0) + 0.25]
        for e in eps:
            for strict in ((False,) if post == "label" else (False, True)):
                q = replace(p, eps=e, eps_strict=strict)
                want = brute_force(q)
                r = milp.prove(q, time_limit=60)
                assert r.status in (want.status, "unknown"), (k, e, strict, r, want.status)
                if r.status == "holds":
                    seen_holds += 1
                    assert r.proof is not None and r.proof.method == "bab-certificate"
                m = milp.maximize(q, time_limit=60)
                assert m.status in (want.status, "unknown"), (k, e, strict, m, want.status)
                if m.bound is not None:
                    assert m.bound >= want.value - 1e-12
                if m.how == "proved":
                    assert abs(m.value - want.value) <= 1e-6
    assert seen_holds
    assert len(searched) == 6                      # one search per network, every one of them run


def test_bench_switch_leaves_holds_uncertified_and_the_gate_refuses_it(monkeypatch):
    # bench/fairify.py --certify-cost times the MILP without certification (FAIRSPEC_BENCH_UNCERTIFIED=1):
    # its "holds" then carries no Proof, and the pipeline's gate makes such a verdict unknown
    from fairspec import pipeline
    from fairspec.verdict import Verdict

    rng = np.random.default_rng(3)
    for _ in range(40):
        p = _problem(rng, "label")
        shipped = milp.prove(p, time_limit=60)
        if shipped.status == "holds":
            break
    else:
        pytest.skip("no instance the MILP proves was drawn")
    assert shipped.proof is not None
    monkeypatch.setenv("FAIRSPEC_BENCH_UNCERTIFIED", "1")
    bare = milp.prove(p, time_limit=60)
    assert bare.status == "holds" and bare.proof is None
    v = Verdict("p", "individual_fairness", "holds", how="proved", backend="milp", proof=bare.proof)
    assert pipeline.certified(v)[0].status == "unknown"


def _once_per_domain(monkeypatch):
    """``bab.maximize`` computed once per network and domain: the best-first search for the largest
    measure reads neither ``eps`` nor ``eps_strict`` (its query's threshold is 0), so every threshold
    tried on one network gets the same search; ``refute_by_max`` still judges and replays its pair
    against each threshold. Returns the cache: {key: (problem searched first, result)}."""
    from fairspec.backends import bab

    real, cache = bab.maximize, {}

    def maximize(sub, deadline, *args, **kwargs):
        key = (id(sub.net), np.asarray(sub.lo).tobytes(), np.asarray(sub.hi).tobytes(), sub.post, args,
               tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = (sub, real(sub, deadline, *args, **kwargs))
        return cache[key][1]

    monkeypatch.setattr(bab, "maximize", maximize)
    return real, cache


def test_the_best_first_search_does_not_read_the_threshold():
    """What _once_per_domain relies on: the same search (nodes, value, pair) whatever eps and strictness."""
    import time

    from fairspec.backends.bab import maximize

    rng = np.random.default_rng(23)
    p = _problem(rng, "prob", eps=0.125)
    runs = [maximize(replace(p, eps=e, eps_strict=s), time.monotonic() + 3600)
            for e, s in ((0.0, False), (0.125, True), (0.5, False))]
    for r in runs[1:]:
        assert r.stats.get("nodes") == runs[0].stats.get("nodes") and r.value == runs[0].value
        assert all(np.array_equal(a, b) for a, b in zip(r.pair, runs[0].pair))


@pytest.mark.parametrize("post", ["label", "logit", "prob"])
def test_refute_by_max_only_refutes_and_its_witness_replays(post, monkeypatch):
    """The partitions' falsifier (``"max"``: the best-first search for the largest violation) against
    brute force on small dyadic networks, thresholds at the true optimum (strict and not) and around it:
    ``violated`` only where brute force finds a violation, with a witness that replays on the network;
    never ``holds``. A node budget's worth of time, not a race: the networks are tiny. The search runs
    once per network (it does not read the threshold: the test above), each threshold judged on it."""
    from fairspec.backends.pair.certify import refute_by_max, replays

    _, searched = _once_per_domain(monkeypatch)
    rng = np.random.default_rng({"label": 21, "logit": 22, "prob": 23}[post])
    found = 0
    for k in range(6):
        p = _problem(rng, post, eps={"label": 0.0, "logit": 0.5, "prob": 0.125}[post], onehot=k % 2 == 1)
        truth = brute_force(p).value
        epss = [0.0] if post == "label" else [max(truth, 0.0), max(truth - 0.0625, 0.0), truth + 0.25]
        for e in epss:
            for strict in ((False,) if post == "label" else (False, True)):
                q = replace(p, eps=e, eps_strict=strict)
                want = brute_force(q)
                r = refute_by_max(q, "prove", 600.0)
                assert r.status in ("violated", "unknown"), r
                if r.status == "violated":
                    found += 1
                    assert want.status == "violated", (k, e, strict, truth)
                    assert replays(q, r.witness.x, r.witness.x_prime)
                    for v in r.witness:
                        assert np.all(q.lo <= np.asarray(v)) and np.all(np.asarray(v) <= q.hi)
    assert found
    assert len(searched) == 6                      # one search per network, every one of them run
