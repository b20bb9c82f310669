"""FairQuant's certified / falsified / undecided shares of a partitioned individual-fairness decision
(fairspec.backends.quantify), against brute force over small integral domains biased toward ties."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem, PairResult, Witness, check_witness
from fairspec.backends.quantify import Shares, count_shares, measure, unfair_boxes
from fairspec.models.network import PLNet
from conftest import protected_weight_net
from onnx_nets import relu_net

pytest.importorskip("highspy")

from fairspec.backends import milp  # noqa: E402
from fairspec.runtime.executor import SerialExecutor  # noqa: E402

LO, HI = [0, 0, 0, 0], [6, 5, 6, 1]      # three individual inputs, the protected one last


def _net(seed: int, weight: float, ties: bool) -> PLNet:
    """A small ReLU net; the protected input's first-layer weights scaled by ``weight``; with ``ties``
    every weight and bias a multiple of 1/2, so that many logits are exactly 0 on the integer grid."""
    return protected_weight_net(seed, weight, ties, name="quantify-test", hidden=(6, 4), grid=2)


def _truth(p: PairProblem) -> dict[tuple, bool]:
    """Every individual (the three tied inputs) -> is it unfair (some counterfactual flips)?"""
    out = {}
    for t in itertools.product(*(range(int(LO[i]), int(HI[i]) + 1) for i in range(3))):
        x, xp = np.array([*t, 0.0]), np.array([*t, 1.0])
        out[t] = bool(check_witness(p, x, xp, p.net.forward))
    return out


def _points(lo, hi):
    return itertools.product(*(range(int(lo[i]), int(hi[i]) + 1) for i in range(3)))


CASES = [(seed, w, ties) for seed in (1, 3, 5, 7) for w, ties in ((1.0, False), (4.0, False), (4.0, True))]


@pytest.mark.parametrize("seed,weight,ties", CASES)
def test_shares_against_brute_force(seed, weight, ties):
    p = PairProblem(_net(seed, weight, ties), lo=LO, hi=HI, integer=[True] * 4, free=(3,), post="label")
    truth = _truth(p)
    total = len(truth)
    unfair = sum(truth.values())
    parts = milp.split_widest(p, 4)
    res = milp.solve_partitioned(p, "prove", parts, time_per_part=60, executor=SerialExecutor(), unfair_nodes=31)
    sh = res.coverage.shares
    assert isinstance(sh, Shares) and sh.measure == "integer points" and sh.domain == total == measure(p)
    assert sh.certified + sh.falsified + sh.undecided == 1
    assert all(isinstance(q, Fraction) for q in (sh.certified, sh.falsified, sh.undecided))
    assert sh.certified <= Fraction(total - unfair, total)
    assert sh.falsified <= Fraction(unfair, total)
    for (lo, hi), r in zip(parts, res.stats["part_proofs"]):
        if r is not None:                      # a proved-fair box holds no unfair individual
            assert not any(truth[t] for t in _points(lo, hi))
    found = 0
    for k, lo, hi, proof in res.stats["unfair_boxes"]:
        assert proof is not None and proof.method == "interval"
        assert all(truth[t] for t in _points(lo, hi)), "a box proved unfair holds a fair individual"
        found += sum(1 for _ in _points(lo, hi))
    # the falsified share is exactly the proved-unfair boxes plus the distinct counterexample points
    assert sh.falsified * total == found + sh.counterexample_points
    if res.status == "holds":
        assert sh.certified == 1 and unfair == 0


def test_a_box_proved_unfair_holds_only_unfair_individuals_and_is_found():
    """A net the protected input dominates: bisection proves boxes unfair, each checked point by point."""
    found_any = False
    for seed in range(6):
        p = PairProblem(_net(seed, 8.0, False), lo=LO, hi=HI, integer=[True] * 4, free=(3,), post="label")
        truth = _truth(p)
        for lo, hi, proof in unfair_boxes(p, max_nodes=63):
            found_any = True
            assert proof.method == "interval"
            assert all(truth[t] for t in _points(lo, hi))
    assert found_any


def test_a_refuted_box_is_not_falsified_as_a_whole():
    """One counterexample in a box of 10 points: 1 point falsified, 9 undecided (was: the whole box)."""
    p = PairProblem(_net(1, 1.0, False), lo=[0, 0, 0, 0], hi=[9, 0, 0, 1], integer=[True] * 4, free=(3,))
    x = [3.0, 0.0, 0.0, 0.0]
    r = PairResult("violated", witness=Witness(x, [3.0, 0.0, 0.0, 1.0]))
    sh = count_shares(p, [(p.lo, p.hi)], [r], replay=lambda a, b: True)
    assert (sh.certified, sh.falsified, sh.undecided) == (0, Fraction(1, 10), Fraction(9, 10))
    # a witness that does not replay on the runtime counts for nothing
    sh = count_shares(p, [(p.lo, p.hi)], [r], replay=lambda a, b: False)
    assert sh.falsified == 0 and sh.undecided == 1


def test_a_holds_without_a_proof_is_not_certified():
    p = PairProblem(_net(1, 1.0, False), lo=[0, 0, 0, 0], hi=[9, 0, 0, 1], integer=[True] * 4, free=(3,))
    sh = count_shares(p, [(p.lo, p.hi)], [PairResult("holds", "proved")])
    assert sh.certified == 0 and sh.undecided == 1


def test_real_valued_inputs_are_counted_in_volume_where_points_weigh_nothing():
    p = PairProblem(_net(1, 1.0, False), lo=[0, 0, 0, 0], hi=[2, 3, 1, 1], integer=[False, True, True, True],
                    free=(3,))
    assert measure(p) == Fraction(2) * 4 * 2
    lo1, hi1 = p.lo.copy(), p.hi.copy()
    hi1[0] = 0.5
    lo2 = p.lo.copy()
    lo2[0] = 0.5
    w = PairResult("violated", witness=Witness([1.0, 0, 0, 0], [1.0, 0, 0, 1]))
    sh = count_shares(p, [(lo1, hi1), (lo2, p.hi)], [None, w], replay=lambda a, b: True)
    assert sh.measure == "volume" and sh.falsified == 0 and sh.undecided == 1
    assert "volume" in sh.line()


def test_boxes_that_do_not_partition_the_domain_give_no_shares():
    p = PairProblem(_net(1, 1.0, False), lo=[0, 0, 0, 0], hi=[9, 0, 0, 1], integer=[True] * 4, free=(3,))
    half = p.hi.copy()
    half[0] = 4
    assert count_shares(p, [(p.lo, half)], [None]) is None


def test_shares_in_json_text_and_html(tmp_path):
    """The verdict's details carry the exact shares; the text report prints them, the HTML draws them."""
    pytest.importorskip("matplotlib")
    from fairspec.pipeline import Report
    from fairspec.report import console, print_text, to_json
    from fairspec.report.html import render
    from fairspec.verdict import Verdict

    sh = Shares("integer points", 12_000, Fraction(3, 4), Fraction(1, 12_000), Fraction(2_999, 12_000),
                certified_boxes=3, counterexample_points=1)
    details = {"coverage": {"partitions": 4, "proved": 3, "refuted": 1, "undecided": 0,
                            "shares": {**sh.to_json(), "summary": sh.line()}}}
    v = Verdict("ind", "individual_fairness", "violated", backend="milp", reason="a pair", details=details)
    rep = Report(str(tmp_path / "spec.fair"), [], verdicts=[v])
    j = json.loads(to_json(rep))
    got = j["properties"][0]["details"]["coverage"]["shares"]
    assert got["certified"] == "3/4" and got["falsified"] == "1/12000" and got["undecided"] == "2999/12000"
    assert got["measure"] == "integer points" and got["domain"] == "12000"
    assert sum(Fraction(got[k]) for k in ("certified", "falsified", "undecided")) == 1
    c = console(record=True, width=200)
    print_text(rep, c)
    text = c.export_text()
    assert "a pair. Shares: certified 75.00%, falsified 0.01% (1 counterexample point), undecided 24.99% of the " \
           "domain" in " ".join(text.split())
    page = render(rep)
    assert "Shares of the domain" in page and "2999/12000" in page and "<svg" in page


def test_symbolic_bounds_contain_the_network_and_are_no_wider_than_intervals_in_score_interval():
    """certify.network.symbolic_bounds bounds the exact network on every sampled point and corner;
    score_interval with symbolic=True is inside the interval-only one and still holds every output."""
    from fairspec.certify.network import score_interval, symbolic_bounds

    rng = np.random.default_rng(0)
    for seed in range(60):
        net = _net(seed % 8, 1.0 + seed % 3, ties=seed % 2 == 0)
        lo = rng.integers(-4, 3, size=4).astype(float)
        hi = lo + rng.integers(0, 5, size=4)
        X = np.vstack([rng.uniform(lo, hi, size=(400, 4)), np.array(list(itertools.product(*zip(lo, hi))))])
        h = X
        for lay in net.layers:
            h = h @ lay.W.T + lay.b
            if lay.relu:
                h = np.maximum(h, 0)
        s_lo, s_hi = symbolic_bounds(net, lo, hi)
        assert np.all(h[:, 0] >= s_lo[0]) and np.all(h[:, 0] <= s_hi[0]), seed
        a = score_interval(net, lo, hi, precision="float64")
        b = score_interval(net, lo, hi, precision="float64", symbolic=True)
        assert a[0] <= b[0] <= h[:, 0].min() and h[:, 0].max() <= b[1] <= a[1]


E2E_SPEC = """
features F {
  a : int in [0, 4]
  b : int in [0, 3]
  s : {F, M} protected
  c : {X, Y, Z}
}
model net = onnx("net.onnx", output = "logit")
encode F for net {
  a : minmax(lo = 0, hi = 4)
  b : raw
  s : onehot
  c : code
}
property same_label {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure label(net(x)) == label(net(x'))
  partitions = 4
  timeout = 1h
}
"""


def _onnx_net(path, seed):
    pytest.importorskip("onnx")
    return relu_net(path, seed, heavy=(2, 3))           # the protected one-hot columns weigh more


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_spec_with_partitions_reports_shares_bounded_by_brute_force(tmp_path, monkeypatch, seed):
    """End to end (the solvers, not enumeration, decide each partition): the verdict's shares are
    exact, sum to 1, and stay within the true fair / unfair shares of the 60 individuals."""
    pytest.importorskip("onnxruntime")
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    W1, b1, W2, b2 = (w.astype(np.float64) for w in _onnx_net(tmp_path / "net.onnx", seed))
    (tmp_path / "spec.fair").write_text(E2E_SPEC)
    v = check(tmp_path / "spec.fair").verdicts[0]
    sh = v.details["coverage"]["shares"]

    def f(X):
        return (np.maximum(np.array(X, dtype=np.float32) @ W1.T.astype(np.float32) + b1.astype(np.float32), 0)
                @ W2.T.astype(np.float32) + b2.astype(np.float32))[:, 0]

    unfair = 0
    for a, b, c in itertools.product(range(5), range(4), range(3)):
        z, zp = f([[a / 4, b, 1, 0, c]]), f([[a / 4, b, 0, 1, c]])
        unfair += bool((z[0] > 0) != (zp[0] > 0))
    assert sh["measure"] == "integer points" and sh["domain"] == "60"
    cert, fals, und = (Fraction(sh[k]) for k in ("certified", "falsified", "undecided"))
    assert cert + fals + und == 1
    assert cert <= Fraction(60 - unfair, 60) and fals <= Fraction(unfair, 60)
    assert (v.status == "violated") == (unfair > 0)
    if unfair:
        assert fals > 0                       # at least the replayed counterexample points
    assert "summary" in sh


def test_an_unbounded_real_input_gives_no_shares_and_no_error():
    p = PairProblem(_net(1, 1.0, False), lo=[0, 0, 0, 0], hi=[np.inf, 3, 1, 1], integer=[False, True, True, True],
                    free=(3,))
    assert count_shares(p, [(p.lo, p.hi)], [None]) is None
