"""k-discrimination beyond enumeration (fairspec.certify.kdisc_net): the counting bound and certify's
branch and bound over a ReLU network's individuals, against brute force on tiny networks biased
toward ties (integer weights: many logits exactly 0, probabilities exactly on a bucket boundary).

Until session 23 a network's k-discrimination on a domain too large to enumerate was searched only:
every claim that held was `unknown` (37 of 160 in the kdisc-solver family at seed 41)."""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import tie_net

from fairspec.certify.enumerate import kdisc_by_enumeration
from fairspec.certify.kdisc_net import KDiscQuery, bound_kdisc, max_distinct, prove_by_counting

LO, HI = np.zeros(4), np.array([3.0, 2.0, 2.0, 2.0])       # the last input protected: K = 3


def _net(seed):
    return tie_net(seed, 4, (5, 3))


def _truth(net, eps):
    """Per individual (inputs 0..2) the certain and possible k of its 3 counterfactuals, brute force on
    the runtime (the network in float32, the real logistic of its logit)."""
    pts = np.array(list(itertools.product(*[range(int(h) + 1) for h in HI])), dtype=np.float64)
    z = net.forward(pts, dtype=np.float32).astype(np.float64)
    r = kdisc_by_enumeration(z, K=3, eps=eps, op="<=", k=3, logit=True, claim="truth")
    return pts[::3, :3], r.k_lo, r.k_hi


def _query(net, eps, op, k):
    layers = [(L.W, L.b, L.relu) for L in net.layers]
    return KDiscQuery(layers, ("logit", 0), None, "float32", LO, HI, np.ones(4, dtype=bool), (), (3,),
                      np.array([[0.0], [1.0], [2.0]]), eps, op, k)


def _cases():
    for seed in range(8):
        for eps in ("0.1", "0.25", "0.3"):
            yield seed, eps


@pytest.mark.parametrize("seed,eps", list(_cases()))
def test_branch_and_bound_agrees_with_brute_force(seed, eps):
    net = _net(seed)
    ind, k_lo, k_hi = _truth(net, eps)

    def evaluate(V):
        return net.forward(np.asarray(V, dtype=np.float64), dtype=np.float32).astype(np.float64), None

    decided = 0
    for op in ("<", "<="):
        for c in range(1, 4):
            at = c if op == "<" else c + 1
            r = bound_kdisc(_query(net, eps, op, c), evaluate, max_nodes=5000)
            assert r.k_found <= k_lo.max()                                   # a count some individual has
            if r.status == "proved":
                assert r.proof is not None and r.proof.method == "bab-certificate"
                assert k_hi.max() < at, (seed, eps, op, c, r.stats)        # no individual may break it
                assert k_hi.max() <= r.bound                                # the bound is one
                decided += 1
            elif r.status == "violated":
                i = int(np.flatnonzero((ind == r.point[:3]).all(axis=1))[0])
                assert k_lo[i] >= at, (seed, eps, op, c, r.point)          # a true violation
                decided += 1
            else:
                # open only where a logistic sits within rounding of a bucket boundary
                assert k_lo.max() < at <= k_hi.max(), (seed, eps, op, c, r.reason)
    assert decided >= 4


def test_branch_and_bound_proves_what_the_search_could_not():
    """Over the tie-biased networks, every claim that holds with no undecided individual is proved."""
    holds = proved = 0
    for seed, eps in _cases():
        net = _net(seed)
        _, k_lo, k_hi = _truth(net, eps)
        c = int(k_hi.max()) + 1
        if k_lo.max() != k_hi.max() or c > 3:
            continue                    # undecided, or only the counting bound can say it
        holds += 1

        def evaluate(V, net=net):
            return net.forward(np.asarray(V, dtype=np.float64), dtype=np.float32).astype(np.float64), None

        proved += bound_kdisc(_query(net, eps, "<", c), evaluate, max_nodes=5000).status == "proved"
    assert holds >= 8 and proved == holds, (proved, holds)


def test_counting_bound():
    assert prove_by_counting(3, "0.05", "<=", 3, claim="k <= 3").method == "exact-arithmetic"
    assert prove_by_counting(3, "0.05", "<", 3, claim="k < 3") is None
    assert prove_by_counting(6, "0.3", "<", 5, claim="4 buckets") is not None         # ceil(1 / 0.3) = 4
    assert prove_by_counting(6, "0.25", "<", 4, claim="4 buckets, the last closed") is None
    assert max_distinct([(0, 0), (0, 0), (0, 1)]) == 2
    assert max_distinct([(1, 3), (0, 1), (1, 1), (2, 2)]) == 4
    assert max_distinct([(2, 2), (2, 2), (2, 2)]) == 1


SPEC = """features F {
  a : int in [0, 3]
  b : int in [0, 2]
  c : {u, v, w}
  s : {P, Q, R} protected
}
model m = onnx("m.onnx", output = "out", score = logit)
encode F for m {
  a : raw
  b : raw
  c : code
  s : code
}
property k_holds {
  k_discrimination(m, over {s}, eps = EPS) < HOLD
  search random for 0.3s
  timeout = 60s
}
property k_breaks {
  k_discrimination(m, over {s}, eps = EPS) < BREAK
  search random for 0.3s
  timeout = 60s
}
property k_counted {
  k_discrimination(m, over {s}, eps = EPS) <= 3
  search random for 0.3s
}
"""


@pytest.mark.parametrize("seed", [1, 2, 9])
def test_a_network_beyond_enumeration_is_proved_or_replayed(tmp_path, monkeypatch, seed):
    """End to end on ONNX with enumeration switched off (the kdisc-solver family's setting): the claim at
    the brute-force max k + 1 is proved (it was `unknown` before), the one at max k is violated with a
    witness replayed on onnxruntime, k <= K is proved by counting."""
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(Path(__file__).parent))
    from differential.networks import Net, run_onnx

    from fairspec.pipeline import check

    net = tie_net(seed, 4, (5, 3))
    (tmp_path / "m.onnx").write_bytes(Net([L.W for L in net.layers], [L.b for L in net.layers], "logit1").onnx_bytes())
    pts = np.array(list(itertools.product(range(4), range(3), range(3), range(3))), dtype=np.float32)
    z = run_onnx((tmp_path / "m.onnx").read_bytes(), pts)[:, 0].astype(np.float64)
    eps = "0.1"
    r = kdisc_by_enumeration(z, K=3, eps=eps, op="<=", k=3, logit=True, claim="truth")
    if r.k_lo.max() != r.k_hi.max() or r.k_hi.max() >= 3:
        pytest.skip("a logistic on a bucket boundary, or max k = K")
    kmax = int(r.k_hi.max())
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    text = SPEC.replace("EPS", eps).replace("HOLD", str(kmax + 1)).replace("BREAK", str(kmax))
    if kmax == 1:  # k < 1 is never met whatever the model (FS507 at lint): no claim at max k to break
        text = re.sub(r"property k_breaks \{.*?\n\}\n", "", text, flags=re.S)
    (tmp_path / "spec.fair").write_text(text)
    v = {x.name: x for x in check(tmp_path / "spec.fair").verdicts}
    assert v["k_holds"].status == "holds" and v["k_holds"].how == "proved", v["k_holds"].reason
    assert v["k_holds"].proof.method == "bab-certificate"
    assert v["k_holds"].value in (None, kmax)                 # a proved value is the max k itself, else none
    assert v["k_holds"].details["max_k_bound"] >= kmax
    if kmax > 1:
        assert v["k_breaks"].status == "violated" and v["k_breaks"].value >= kmax, v["k_breaks"].reason
        assert v["k_breaks"].witness is not None
    assert v["k_counted"].status == "holds" and v["k_counted"].proof.method == "exact-arithmetic"
    assert v["k_counted"].value is None


def _blinded(tmp_path, monkeypatch, text=None):
    """A tie network with max k >= 2 (its file in tmp_path), the search blinded (it returns no witness:
    its calls recorded as (budget seconds, iterations per restart)), enumeration off; the spec written
    (``text(SPEC)`` when given): (max k, the search's calls)."""
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(Path(__file__).parent))
    from dataclasses import replace

    from differential.networks import Net, run_onnx

    import fairspec.backends.search.kdisc as search

    real, calls = search.kdisc_restarts, []

    def blinded(*a, **kw):
        calls.append((kw.get("budget_seconds"), kw.get("max_iters")))
        return replace(real(*a, **dict(kw, max_iters=min(kw.get("max_iters") or 30, 30))), witness=None, max_k=1)

    monkeypatch.setattr(search, "kdisc_restarts", blinded)
    for seed in (2, 3, 5):
        net = tie_net(seed, 4, (5, 3))
        (tmp_path / "m.onnx").write_bytes(Net([L.W for L in net.layers], [L.b for L in net.layers],
                                              "logit1").onnx_bytes())
        pts = np.array(list(itertools.product(range(4), range(3), range(3), range(3))), dtype=np.float32)
        z = run_onnx((tmp_path / "m.onnx").read_bytes(), pts)[:, 0].astype(np.float64)
        r = kdisc_by_enumeration(z, K=3, eps="0.1", op="<=", k=3, logit=True, claim="truth")
        if int(r.k_lo.max()) >= 2:
            break
    else:
        pytest.skip("no tie network with max k >= 2")
    kmax = int(r.k_lo.max())
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    spec = SPEC.replace("EPS", "0.1").replace("HOLD", str(kmax + 1)).replace("BREAK", str(kmax))
    (tmp_path / "spec.fair").write_text(text(spec) if text else spec)
    return kmax, calls


def test_a_violation_the_search_misses_is_found_by_the_branch_and_bound_and_replayed(tmp_path, monkeypatch):
    """The search blinded (it returns no witness): the branch and bound reaches the violating individual,
    whose count the runner replays on onnxruntime before it reports it (kdisc_witness.replayed_violation)."""
    from differential.networks import run_onnx

    from fairspec.pipeline import check

    kmax, _ = _blinded(tmp_path, monkeypatch)
    v = {x.name: x for x in check(tmp_path / "spec.fair", only="k_breaks").verdicts}["k_breaks"]
    assert v.status == "violated" and v.details["engine"] == "kdisc-bab", v.reason
    assert v.reason.startswith("certified branch and bound") and v.witness is not None
    assert v.value >= kmax and v.witness.replayed_by          # the independent evaluator (model.replay)
    assert sorted(c["features"]["s"] for c in v.details["counterfactuals"]) == ["P", "Q", "R"]
    # the reported individual's counterfactuals, scored again here on onnxruntime, break the claim
    w = v.witness.features
    ind = [float(w["a"]), float(w["b"]), float("uvw".index(w["c"]))]
    U = np.array([ind + [float(s)] for s in range(3)], dtype=np.float32)
    zz = run_onnx((tmp_path / "m.onnx").read_bytes(), U)[:, 0].astype(np.float64)
    assert int(kdisc_by_enumeration(zz, K=3, eps="0.1", op="<", k=kmax, logit=True, claim="replay").k_lo[0]) >= kmax


def test_the_early_branch_and_bound_reports_a_violation_it_replays(tmp_path, monkeypatch):
    """No `search ... for` (timeout = 600s), the search blinded: the search's first iterations find
    nothing, the short branch and bound before the search finds the violating individual and it is
    replayed and reported there -- the search's half of the timeout never starts."""
    from fairspec.kinds.k_discrimination import EARLY_SEARCH_ITERATIONS
    from fairspec.pipeline import check

    def no_budget(spec):
        return spec.replace("  search random for 0.3s\n  timeout = 60s\n", "  timeout = 600s\n")

    kmax, calls = _blinded(tmp_path, monkeypatch, no_budget)
    # a tenth of the timeout (60 s), not 10 s: a slow preparation on a loaded machine leaves it time
    monkeypatch.setattr("fairspec.kinds.k_discrimination.EARLY_BAB_SECONDS", 60.0)
    v = {x.name: x for x in check(tmp_path / "spec.fair", only="k_breaks").verdicts}["k_breaks"]
    assert v.status == "violated" and v.details["engine"] == "kdisc-bab", v.reason
    assert v.value >= kmax and v.witness is not None and v.witness.replayed_by
    assert [it for _, it in calls] == [EARLY_SEARCH_ITERATIONS]      # only the first iterations ran
