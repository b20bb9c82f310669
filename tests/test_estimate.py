"""The estimated split of the undecided share (fairspec.backends.estimate), against brute force on
tiny networks biased toward ties (dyadic weights, zero logits) over domains small enough to count
every individual: the sampler draws only from the undecided part, in proportion to measure; the
Clopper-Pearson interval holds the exact unfair share of the undecided part for the fixed seeds
below (deterministic: seeded draws, no timing); the JSON keys, the text line and the HTML row."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from fairspec.backends.estimate import (Estimate, UndecidedBoxes, draw_undecided, estimate_shares,
                                        estimate_undecided, undecided_boxes)
from fairspec.backends.pair import PairProblem, PairResult, Witness, check_witness
from fairspec.backends.quantify import Shares, count_shares, measure
from fairspec.backends.refine import refine_partitions
from conftest import protected_weight_net

pytest.importorskip("scipy")

LO, HI = [0, 0, 0, 0], [7, 6, 5, 1]      # three individual inputs, the protected one last


def _problem(seed, weight, ties, post="label", zero_bias=False):
    eps = {"logit": 0.25, "prob": 0.0625}.get(post, 0.0)
    return PairProblem(protected_weight_net(seed, weight, ties, zero_bias, name="estimate-test"), lo=LO, hi=HI,
                       integer=[True] * 4, free=(3,), post=post, eps=eps)


def _unfair(p, t) -> bool:
    x, xp = np.array([*t, 0.0]), np.array([*t, 1.0])
    return bool(check_witness(p, x, xp, p.net.forward) or check_witness(p, xp, x, p.net.forward))


def _individuals():
    return list(itertools.product(*(range(LO[i], HI[i] + 1) for i in range(3))))


def _in_frame(und: UndecidedBoxes, t) -> bool:
    """Is the individual ``t`` in the undecided part the sampler draws from?"""
    y = np.array([*t, 0.0])
    for k, lo, hi, _m in und.boxes:
        if np.all(y[:3] >= lo[:3]) and np.all(y[:3] <= hi[:3]):
            if any(np.all(y[:3] >= a[:3]) and np.all(y[:3] <= b[:3]) for a, b in und.exclude.get(k, ())):
                return False
            return tuple(float(v) for v in t) not in und.points
    return False


def _decided(p, how, k_parts):
    """A partitioned decision of ``p`` left partly undecided, deterministically: the first partitions
    refined for a fixed number of sub-boxes (``how == "refine"``), or one refuted partition with its
    witness and a box grown around it (``"grown"``), the others not reached."""
    from fairspec.backends.milp.partition import split_widest
    from fairspec.backends.quantify import unfair_boxes

    parts = split_widest(p, k_parts)
    results = [None] * len(parts)
    refined = None
    if how == "refine":
        refined = refine_partitions(p, parts, results, seconds=3600, max_boxes=12, batch=4, enum_points=4)
        sh = count_shares(p, parts, results, refined=refined.decided)
        return parts, results, refined, sh
    truth = [t for t in _individuals() if _unfair(p, t)]
    for k, (lo, hi) in enumerate(parts):
        inside = [t for t in truth if all(lo[i] <= t[i] <= hi[i] for i in range(3))]
        if not inside:
            continue
        x = np.array([*inside[len(inside) // 2], 0.0])
        xp = x.copy()
        xp[3] = 1.0
        grown = unfair_boxes(p, lo, hi, max_nodes=8, witness=x)
        results[k] = PairResult("violated", witness=Witness(list(x), list(xp)),
                                stats={"unfair_boxes": [(a, b, pr) for a, b, pr in grown]})
        break
    unfair = [(k, lo, hi) for k, r in enumerate(results) if r is not None for lo, hi, _ in r.stats["unfair_boxes"]]
    sh = count_shares(p, parts, results, unfair=unfair)
    return parts, results, refined, sh


CASES = [(seed, w, ties, post, how) for seed in (1, 2, 3, 4) for w, ties in ((1.0, True), (3.0, True), (3.0, False))
         for post in ("label", "logit") for how in ("refine", "grown")]


@pytest.mark.parametrize("seed,weight,ties,post,how", CASES)
def test_the_interval_holds_the_exact_unfair_share_of_the_undecided_part(seed, weight, ties, post, how):
    p = _problem(seed, weight, ties, post, zero_bias=seed % 2 == 0)
    parts, results, refined, sh = _decided(p, how, 3)
    if sh.undecided == 0:
        pytest.skip("nothing undecided")
    und = undecided_boxes(p, parts, results, sh, refined)
    assert und is not None and und.unsampled == 0
    frame = [t for t in _individuals() if _in_frame(und, t)]
    # the boxes less the exclusions are exactly the undecided share
    assert len(frame) == und.measure == sh.undecided * sh.domain
    bad = sum(_unfair(p, t) for t in frame)
    total_bad = sum(_unfair(p, t) for t in _individuals())
    assert bad == total_bad - sh.falsified * sh.domain      # falsified individuals are all unfair
    exact = Fraction(bad, len(frame))
    # 99.9% intervals: at 95% about one in twenty of these 96 intervals misses by chance (seen: seed 1 of
    # case 1-3.0-True-logit-refine, 0.830 against [0.741, 0.824]); at 99.9% none of these fixed seeds does
    for s in (0, 1):
        est = estimate_shares(p, parts, results, sh, refined, samples=400, seed=s, confidence=0.999)
        assert est.reason == "" and est.samples == 400 and est.seed == s
        e, lo, hi = est.unfair_of_undecided
        assert lo <= float(exact) <= hi, (seed, s, float(exact), lo, hi)
        # the fair share's interval holds the exact fair share of the undecided part too
        _, flo, fhi = est.fair_of_domain
        fair_domain = sh.certified + Fraction(len(frame) - bad, sh.domain)
        assert flo <= float(fair_domain) <= fhi
        # the estimate is deterministic for a seed
        again = estimate_shares(p, parts, results, sh, refined, samples=400, seed=s, confidence=0.999)
        assert (again.unfair, again.fair) == (est.unfair, est.fair)


def test_the_sampler_draws_only_from_undecided_boxes_in_proportion_to_their_measure():
    p = _problem(1, 1.0, True)
    A = (np.array([0.0, 0, 0, 0]), np.array([3.0, 6, 5, 1]))          # 4 * 7 * 6 = 168 individuals
    B = (np.array([4.0, 0, 0, 0]), np.array([7.0, 1, 5, 1]))          # 4 * 2 * 6 = 48
    C = (np.array([4.0, 2, 0, 0]), np.array([4.0, 2, 0, 1]))          # 1
    ex = (np.array([0.0, 0, 0, 0]), np.array([1.0, 6, 5, 1]))         # 84 of A excluded
    pt = (7.0, 1.0, 5.0)                                              # one point of B excluded
    und = UndecidedBoxes([(0, *A, 168), (1, *B, 48), (1, *C, 1)], {0: [ex]}, {pt}, 168 - 84 + 48 - 1 + 1)
    X = draw_undecided(p, und, 20_000, seed=0)
    assert X.shape == (20_000, 4)
    assert np.all(X == np.round(X)) and np.all(X[:, 3] == 0)
    in_a = np.all((X[:, :3] >= A[0][:3]) & (X[:, :3] <= A[1][:3]), axis=1)
    in_b = np.all((X[:, :3] >= B[0][:3]) & (X[:, :3] <= B[1][:3]), axis=1)
    in_c = np.all((X[:, :3] >= C[0][:3]) & (X[:, :3] <= C[1][:3]), axis=1)
    assert np.all(in_a | in_b | in_c)
    assert not np.any(np.all((X[:, :3] >= ex[0][:3]) & (X[:, :3] <= ex[1][:3]), axis=1))
    assert not np.any(np.all(X[:, :3] == np.array(pt), axis=1))
    # each individual of the 132 left is drawn with probability 1/132 (seed 0: within 4 sigma)
    n = 20_000
    for got, m in ((in_a.sum(), 84), (in_b.sum(), 47), (in_c.sum(), 1)):
        mu = n * m / 132
        assert abs(got - mu) <= 4 * np.sqrt(mu * (1 - m / 132)), (got, mu)
    _, counts = np.unique(X[:, :3], axis=0, return_counts=True)
    assert len(counts) == 132
    # the same seed, the same individuals
    assert np.array_equal(X, draw_undecided(p, und, 20_000, seed=0))


def test_mismatched_boxes_and_relaxed_inputs_give_no_estimate_with_the_reason():
    p = _problem(1, 3.0, True)
    sh = Shares("integer points", 336, Fraction(0), Fraction(0), Fraction(1))
    est = estimate_undecided(p, sh, None, samples=100, seed=0)
    assert est.reason and "no estimate" in est.line() and est.to_json()["estimated"] is False
    rp = PairProblem(p.net, lo=LO, hi=HI, integer=[True] * 4, free=(3,), relaxed=((0, 1.0),))
    und = UndecidedBoxes([(0, rp.lo, rp.hi, 336)], {}, set(), 336)
    assert "relaxed" in estimate_undecided(rp, sh, und, samples=100, seed=0).reason


def test_a_sampled_unfair_individual_counts_only_when_its_pair_replays():
    p = _problem(2, 3.0, True)
    und = UndecidedBoxes([(0, p.lo.copy(), p.hi.copy(), 336)], {}, set(), 336)
    sh = Shares("integer points", 336, Fraction(0), Fraction(0), Fraction(1))
    real = estimate_undecided(p, sh, und, samples=300, seed=3)
    assert real.unfair > 0 and real.counterexample is not None
    x, xp = real.counterexample
    assert check_witness(p, x, xp, p.net.forward)
    none = estimate_undecided(p, sh, und, samples=300, seed=3, replay=lambda a, b: False)
    assert none.unfair == 0 and none.other == real.unfair and none.fair == real.fair


def _estimate():
    return Estimate(samples=10_000, seed=0, confidence=0.95, unfair=2_073, fair=7_927, certified=Fraction(5562, 10_000),
                    falsified=Fraction(0), undecided=Fraction(4438, 10_000), unfair_ci=(0.1994, 0.2154),
                    fair_ci=(0.7846, 0.8006))


def test_estimate_in_json_text_and_html(tmp_path):
    pytest.importorskip("matplotlib")
    from fairspec.pipeline import Report
    from fairspec.report import console, print_text, to_json
    from fairspec.report.html import render
    from fairspec.verdict import Verdict

    sh = Shares("integer points", 10_000, Fraction(5562, 10_000), Fraction(0), Fraction(4438, 10_000))
    est = _estimate()
    details = {"coverage": {"partitions": 4, "proved": 2, "refuted": 2, "undecided": 0,
                            "shares": {**sh.to_json(), "summary": sh.line(), "estimate": est.to_json()}}}
    v = Verdict("ind", "individual_fairness", "violated", backend="milp", reason="a pair", details=details)
    rep = Report(str(tmp_path / "spec.fair"), [], verdicts=[v])
    got = json.loads(to_json(rep))["properties"][0]["details"]["coverage"]["shares"]
    e = got["estimate"]
    assert got["undecided"] == "2219/5000" and e["estimated"] is True and e["samples"] == 10_000 and e["seed"] == 0
    assert e["confidence"] == 0.95 and "Clopper-Pearson" in e["method"]
    u = e["estimated_unfair_in_undecided"]
    assert u["estimate_percent"] == pytest.approx(44.38 * 0.2073) and len(u["interval_percent"]) == 2
    assert e["estimated_unfair_of_undecided"]["estimate_percent"] == pytest.approx(20.73)
    assert {"estimated_fair_in_undecided", "estimated_unfair_of_domain", "estimated_fair_of_domain"} <= set(e)
    c = console(record=True, width=240)
    print_text(rep, c)
    text = " ".join(c.export_text().split())
    assert ("Estimate: undecided 44.38%: estimated 9.20% unfair [8.85, 9.56] and 35.18% fair [34.82, 35.53] of the "
            "domain at 95% (20.73% of the undecided part unfair; 10,000 sampled individuals, seed 0") in text
    page = render(rep)
    assert "estimated, not proved" in page and "10,000 sampled individuals" in page


def test_the_estimate_never_changes_the_verdict_or_the_shares():
    from fairspec.backends import milp
    from fairspec.runtime.executor import SerialExecutor

    p = _problem(2, 3.0, True)
    parts = milp.split_widest(p, 4)
    a = milp.solve_partitioned(p, "prove", parts, time_per_part=60, executor=SerialExecutor(), unfair_nodes=8)
    b = milp.solve_partitioned(p, "prove", parts, time_per_part=60, executor=SerialExecutor(), unfair_nodes=8,
                               estimate=500, seed=1)
    assert a.status == b.status and a.coverage.shares == b.coverage.shares
    assert a.coverage.estimate is None
    if b.coverage.shares.undecided:
        assert isinstance(b.coverage.estimate, Estimate) and b.coverage.estimate.samples == 500


def test_clopper_pearson_is_scipys_exact_interval():
    from scipy.stats import binomtest

    from fairspec.backends.estimate import clopper_pearson

    for k, n, c in ((0, 10, 0.95), (3, 10, 0.95), (10, 10, 0.9), (917, 10_000, 0.95), (1, 400, 0.999)):
        ci = binomtest(k, n).proportion_ci(confidence_level=c, method="exact")
        lo, hi = clopper_pearson(k, n, c)
        assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def test_an_unknown_becomes_violated_only_by_a_replayed_sampled_counterexample():
    from fairspec.backends.estimate import violated_by_sample

    p = _problem(2, 3.0, True)
    und = UndecidedBoxes([(0, p.lo.copy(), p.hi.copy(), 336)], {}, set(), 336)
    sh = Shares("integer points", 336, Fraction(0), Fraction(0), Fraction(1))
    est = estimate_undecided(p, sh, und, samples=300, seed=3)
    unknown = PairResult("unknown", reason="1 of 4 partitions undecided")
    v = violated_by_sample(p, unknown, est, "prove")
    assert v.status == "violated" and v.witness is not None and v.proof is None
    assert check_witness(p, v.witness.x, v.witness.x_prime, p.net.forward)
    assert "sampled from the undecided share" in v.reason
    # no replayed counterexample, maximize, or a decided result: unchanged
    none = estimate_undecided(p, sh, und, samples=300, seed=3, replay=lambda a, b: False)
    assert violated_by_sample(p, unknown, none, "prove") is unknown
    assert violated_by_sample(p, unknown, est, "maximize") is unknown
    held = PairResult("violated", witness=v.witness)
    assert violated_by_sample(p, held, est, "prove") is held


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_tree_ensembles_the_interval_holds_the_exact_unfair_share(seed):
    """A tree ensemble (no batch runtime: its own forward, each unfair individual replayed): the
    sampled estimate's interval holds the exact unfair share of the undecided part."""
    from fairspec.backends.milp.partition import solve_partitioned, split_widest
    from fairspec.backends.pair.certify import replays
    from fairspec.backends.trees.space import fold
    from fairspec.models.trees import random_ensemble
    from fairspec.runtime.executor import SerialExecutor

    lo, hi = np.zeros(3), np.full(3, 12.0)
    ens = random_ensemble(seed, 3, 3, 3, ["identity", "logistic"][seed % 2], lo, hi)
    p = PairProblem(fold(ens, lo, hi, np.ones(3, bool)), lo, hi, np.ones(3, bool), (), (0,))
    parts = split_widest(p, 4)
    res = solve_partitioned(p, "prove", parts, backend="milp", time_per_part=None, executor=SerialExecutor(),
                            estimate=400, seed=seed, confidence=0.999)
    sh, est = res.coverage.shares, res.coverage.estimate
    if sh.undecided == 0:
        pytest.skip("nothing undecided")
    ind = np.array(list(itertools.product(range(13), range(13))), dtype=float)
    Z = np.stack([np.asarray(p.net.forward(np.column_stack([np.full(len(ind), v), ind])), dtype=float).reshape(-1)
                  for v in range(13)])
    unfair = np.any(Z > 0, axis=0) & np.any(Z <= 0, axis=0)   # the label differs between two protected values
    total, bad = len(ind), int(unfair.sum())
    i = int(np.flatnonzero(unfair)[0]) if bad else None
    if i is not None:                                         # the same judgement as the replay's
        a, b = int(np.argmax(Z[:, i])), int(np.argmin(Z[:, i]))
        assert replays(p, np.array([a, *ind[i]]), np.array([b, *ind[i]]))
    # the undecided part is the domain less the certified partitions and the counterexample points,
    # all of which are unfair: its exact unfair share follows from the counts
    und_n = sh.undecided * sh.domain
    exact = (bad - sh.falsified * sh.domain) / und_n
    fair_in_certified = sh.certified * sh.domain
    assert total == sh.domain and fair_in_certified <= total - bad
    _, lo_, hi_ = est.unfair_of_undecided
    assert est.reason == "" and lo_ <= float(exact) <= hi_, (float(exact), lo_, hi_)


def test_spec_options_estimate_seed_and_confidence_reach_the_report(tmp_path, monkeypatch):
    """End to end: ``estimate``, ``seed`` and ``confidence`` in a spec with partitions give the JSON
    estimate with those values and the text line; ``estimate = 0`` gives none; ``estimate`` without
    partitions is the FS213 warning (it has no effect there)."""
    pytest.importorskip("onnxruntime")
    from fairspec.pipeline import check, lint
    from test_quantify import E2E_SPEC, _onnx_net

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    _onnx_net(tmp_path / "net.onnx", 3)
    spec = tmp_path / "spec.fair"
    spec.write_text(E2E_SPEC.replace("  timeout = 1h\n", "  timeout = 1h\n  estimate = 500\n  seed = 3\n"
                                                          "  confidence = 0.9\n"))
    v = check(spec).verdicts[0]
    sh = v.details["coverage"]["shares"]
    if Fraction(sh["undecided"]) == 0:
        pytest.skip("nothing undecided")
    e = sh["estimate"]
    assert e["estimated"] and (e["samples"], e["seed"], e["confidence"]) == (500, 3, 0.9)
    assert "at 90% (" in e["summary"] and "500 sampled individuals, seed 3" in e["summary"]
    spec.write_text(E2E_SPEC.replace("  timeout = 1h\n", "  timeout = 1h\n  estimate = 0\n"))
    assert "estimate" not in check(spec).verdicts[0].details["coverage"]["shares"]
    spec.write_text(E2E_SPEC.replace("  partitions = 4\n", "  estimate = 100\n"))
    assert any(d.code == "FS213" and "estimate" in d.message for d in lint(spec).diagnostics)


def test_unsampled_undecided_individuals_widen_only_the_upper_ends():
    """Undecided individuals the boxes cannot reach (an enumerated sub-box's undecided ones) are not
    sampled: they add to every upper end, never to the estimate or a lower end, and the line says so."""
    base = _estimate()
    wide = Estimate(**{**base.__dict__, "unsampled": Fraction(38, 10_000)})
    assert wide.sampled == Fraction(44, 100)
    e, lo, hi = wide.unfair_in_undecided
    assert (e, lo, hi) == pytest.approx((0.44 * 0.2073, 0.44 * 0.1994, 0.44 * 0.2154 + 0.0038))
    e, lo, hi = wide.fair_of_domain
    assert (e, lo, hi) == pytest.approx((0.5562 + 0.44 * 0.7927, 0.5562 + 0.44 * 0.7846, 0.5562 + 0.44 * 0.8006 + 0.0038))
    _, lo, hi = wide.unfair_of_undecided
    assert hi - lo > base.unfair_of_undecided[2] - base.unfair_of_undecided[1]
    assert "of the domain unsampled, in the upper ends" in wide.line()


def test_neither_individuals_are_in_both_upper_ends():
    """A sampled individual neither fair nor unfair (within the runtime's rounding) may be either: the
    fair and the unfair interval each reach the upper end of its decided count plus the neither ones."""
    from fairspec.backends.estimate import clopper_pearson, neither_widened

    (ulo, uhi), (flo, fhi) = neither_widened(0, 6005, 10_000, 0.95)
    assert (flo, ulo) == (clopper_pearson(6005, 10_000, 0.95)[0], 0.0)
    assert fhi == 1.0 and uhi == clopper_pearson(3995, 10_000, 0.95)[1]
    assert neither_widened(20, 80, 100, 0.95) == (clopper_pearson(20, 100, 0.95), clopper_pearson(80, 100, 0.95))


def _tie_torch_spec(torch, tmp_path):
    """A float32 torch net with dyadic weights and logits exactly 0 at ties, z = relu(0.5a - 0.25b + 0.25s - 1)
    - relu(0.5 - 0.5a), and a partitioned label property over it: the spec's path."""
    net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[0.5, -0.25, 0.25], [-0.5, 0.0, 0.0]]))
        net[0].bias.copy_(torch.tensor([-1.0, 0.5]))
        net[2].weight.copy_(torch.tensor([[1.0, -1.0]]))
        net[2].bias.zero_()
    torch.jit.script(net).save(str(tmp_path / "m.pt"))
    spec = tmp_path / "spec.fair"
    spec.write_text("features F {\n  a : int in [0, 5]\n  b : int in [0, 3]\n  s : {F, M} protected\n}\n"
                    'model m = torch("m.pt")\nencode F for m {\n  a, b : raw\n  s : code\n}\n'
                    "property lab {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n"
                    "  ensure label(m(x)) == label(m(x'))\n  partitions = 4\n  timeout = 10min\n}\n")
    return spec


def test_exact_ties_do_not_push_the_fair_interval_below_the_truth(tmp_path, monkeypatch):
    """Audit s19 engines #4: a float32 torch net with dyadic weights and logits exactly 0 at ties; the
    sampled ties were 'neither' and the fair interval (of the decided ones only) was 24.62-25.42% where
    the true fair share is 41.67%. Whatever the solver decides, the interval holds the truth."""
    torch = pytest.importorskip("torch")
    from fairspec.pipeline import check

    spec = _tie_torch_spec(torch, tmp_path)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = check(spec).verdicts[0]
    assert v.status in ("violated", "unknown")
    # the spec's 10 min cannot run out on a sane machine (~4 s of CPU): the partitions report, and the ties keep
    # some undecided (a loaded machine's default budget left no coverage at all, and this test was skipped)
    shares = v.details["coverage"]["shares"]
    assert shares["estimate"]["estimated"] and Fraction(shares["undecided"]) > 0, shares
    z = lambda a, b, s: max(0.5 * a - 0.25 * b + 0.25 * s - 1, 0) - max(0.5 - 0.5 * a, 0)   # noqa: E731
    fair = sum((z(a, b, 0) > 0) == (z(a, b, 1) > 0) for a in range(6) for b in range(4))
    lo, hi = shares["estimate"]["estimated_fair_of_domain"]["interval_percent"]
    assert lo <= 100 * fair / 24 <= hi, (fair, lo, hi)


def test_a_budget_spent_before_the_partitions_still_reports_their_coverage(tmp_path, monkeypatch):
    """The flake of the test above under load: the preparation (loading torch, lowering) took the whole
    timeout, so each partition's budget was 0 and solve_partitioned divided by it (an internal error: an
    unknown with no coverage). The clock is stopped at 0 left here, whatever the machine's speed: the
    partitions are reported, undecided or refuted, never an internal error."""
    torch = pytest.importorskip("torch")
    from fairspec.pipeline import check
    from fairspec.runtime.context import Context

    spec = _tie_torch_spec(torch, tmp_path)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    monkeypatch.setattr(Context, "remaining", lambda self, limit: None if limit is None else 0.0)
    res = check(spec)
    v = res.verdicts[0]
    assert "internal error" not in (v.reason or ""), v.reason
    assert v.status in ("violated", "unknown"), (v.status, v.reason)
    assert v.details["coverage"]["partitions"] == 4, v.details
