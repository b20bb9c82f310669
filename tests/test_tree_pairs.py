"""Exact individual fairness on tree ensembles: MILP (HiGHS, SCIP), SMT (z3) and brute force
agree on random small ensembles; the instant proof; converters reproduce the libraries."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem, brute_force
from fairspec.backends.trees import modes
from fairspec.backends.trees.space import fold, instant_verdict
from fairspec.models.trees import Tree, TreeEnsemble, random_ensemble


def _random_problem(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    link = ["identity", "logistic"][seed % 2]
    lo = np.zeros(n)
    hi = rng.integers(1, 4, size=n).astype(float)
    ens = random_ensemble(seed, n, int(rng.integers(1, 5)), int(rng.integers(1, 4)), link, lo, hi,
                          strict=bool(seed % 3 == 0))
    post = ["label", "prob", "logit"][seed % 3]
    if post == "logit" and link == "identity":
        post = "label"
    eps = float(rng.choice([0.0, 0.05, 0.2])) if post != "label" else 0.0
    relaxed = ((1, 1.0),) if (seed % 4 == 0 and n > 2) else ()
    folded = fold(ens, lo, hi, np.ones(n, bool))
    return ens, PairProblem(folded, lo, hi, np.ones(n, bool), (), (0,), None, relaxed, post, eps)


@pytest.mark.parametrize("block", range(4))
def test_milp_smt_brute_force_agree_on_200_random_ensembles(block):
    """50 ensembles per block, 200 in all: prove by HiGHS and z3 vs brute force on the
    unfolded ensemble; SCIP, find and maximize on every fifth."""
    disagree = []
    for seed in range(50 * block, 50 * block + 50):
        ens, prob = _random_problem(seed)
        bf = brute_force(prob, ens.forward)
        want = "violated" if bf.status == "violated" else "holds"
        # portfolio=False, falsify=False: the exact engines alone, so that the three answers are
        # independent; the default (local search first, then the portfolio) on every fifth
        runs = {"highs": modes.prove(prob, "highs", portfolio=False, falsify=False),
                "z3": modes.prove(prob, "z3", falsify=False)}
        if seed % 5 == 0:
            runs["scip"] = modes.prove(prob, "scip", portfolio=False, falsify=False)
            runs["highs-find"] = modes.find(prob, "highs", portfolio=False, falsify=False)
            runs["z3-find"] = modes.find(prob, "z3", falsify=False)
            runs["highs-max"] = modes.maximize(prob, "highs", portfolio=False)
            runs["portfolio"] = modes.prove(prob, "highs")
            runs["default-find"] = modes.find(prob, "highs")
        for k, r in runs.items():
            if r.status != want:
                disagree.append((seed, k, r.status, r.reason, want))
            if r.status == "violated":
                assert r.witness is not None
            if k.endswith("-max") and want == "violated":
                assert r.value == pytest.approx(bf.value, abs=1e-6), (seed, k)
    assert disagree == []


def _tree(feature, threshold, left, right, value):
    return Tree(feature, threshold, left, right, value)


def test_a_model_that_never_reads_the_protected_input_is_proved_without_a_solver():
    # reads input 1 only; input 0 is protected
    t = _tree([1, -1, -1], [0.5, 0, 0], [1, -1, -1], [2, -1, -1], [0, 0.2, 0.9])
    ens = TreeEnsemble((t,), 2)
    lo, hi = np.zeros(2), np.ones(2)
    prob = PairProblem(fold(ens, lo, hi, np.ones(2, bool)), lo, hi, np.ones(2, bool), (), (0,))
    assert instant_verdict(prob)[0] == "holds"
    res = modes.prove(prob)
    assert res.status == "holds" and res.how == "proved" and res.stats.get("instant")
    assert "solves" not in res.stats


def test_a_split_on_the_protected_input_between_equal_subtrees_is_pruned():
    # the split on input 0 leads to the same function on both sides: pruned, then proved at once
    t = _tree([0, 1, -1, -1, 1, -1, -1], [0.5, 0.5, 0, 0, 0.5, 0, 0], [1, 2, -1, -1, 5, -1, -1],
              [4, 3, -1, -1, 6, -1, -1], [0, 0, 0.1, 0.8, 0, 0.1, 0.8])
    ens = TreeEnsemble((t,), 2)
    lo, hi = np.zeros(2), np.ones(2)
    folded = fold(ens, lo, hi, np.ones(2, bool))
    assert folded.features() == {1}
    prob = PairProblem(folded, lo, hi, np.ones(2, bool), (), (0,))
    assert modes.prove(prob).stats.get("instant")


def test_a_split_on_the_protected_input_outside_the_domain_is_pruned():
    # input 0 in [0, 1] but the split asks x0 <= 5: always left
    t = _tree([0, -1, -1], [5.5, 0, 0], [1, -1, -1], [2, -1, -1], [0, 0.1, 0.9])
    ens = TreeEnsemble((t,), 2)
    lo, hi = np.zeros(2), np.ones(2)
    assert fold(ens, lo, hi, np.ones(2, bool)).features() == set()


def test_folding_the_scaling_is_exact_on_integers():
    # the model reads u = (age - 17) / 73; a split u <= 0.3 is age <= 38.9, i.e. age <= 38
    t = _tree([0, -1, -1], [0.3, 0, 0], [1, -1, -1], [2, -1, -1], [0, 0.1, 0.9])
    ens = TreeEnsemble((t,), 1)
    folded = fold(ens, [17.0], [90.0], [True], scale=[1 / 73], shift=[-17 / 73])
    ages = np.arange(17, 91, dtype=float)[:, None]
    assert np.array_equal(folded.aggregate(ages), ens.aggregate((ages - 17) / 73))
    assert folded.trees[0].threshold[0] == 38.0


def test_logit_bound_on_a_forest_is_unknown_with_a_reason():
    ens = random_ensemble(3, 2, 2, 2, "identity", [0, 0], [2, 2])
    lo, hi = np.zeros(2), np.full(2, 2.0)
    prob = PairProblem(fold(ens, lo, hi, np.ones(2, bool)), lo, hi, np.ones(2, bool), (), (0,), post="logit",
                       eps=0.01)
    res = modes.prove(prob)
    assert res.status in ("unknown", "holds")
    if res.status == "unknown":
        assert "prob(" in res.reason


# ---- end to end from a spec: the shipped Adult decision tree ---------------------------------

ADULT = __import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "adult" / "adult.fair"


def _adult_spec(tmp_path, body: str):
    from pathlib import Path

    text = Path(ADULT).read_text()
    text = text.split("group older")[0]
    text = text.replace('"data/', f'"{ADULT.parent.as_posix()}/data/').replace('"models/', f'"{ADULT.parent.as_posix()}/models/')
    text = text.replace('import "fairspec/policies/four_fifths.fair"\n', "").replace(
        'import "fairspec/policies/individual_fairness.fair"\n', "")
    p = tmp_path / "trees.fair"
    p.write_text(text + body)
    return p


def test_adult_tree_individual_fairness_end_to_end(tmp_path):
    from fairspec.pipeline import check, lint

    p = _adult_spec(tmp_path, '''
property dt_sex {
  forall x, x' : Applicant
  require x.* == x'.* except {sex}
  ensure label(dt(x)) == label(dt(x'))
}
property dt_sex_age {
  forall x, x' : Applicant
  require x.* == x'.* except {sex, race}
  require |x.age - x'.age| <= 2
  ensure label(dt(x)) == label(dt(x'))
  using smt
}
property dt_age_milp {
  forall x, x' : Applicant
  require x.* == x'.* except {sex}
  require |x.age - x'.age| <= 2
  ensure label(dt(x)) == label(dt(x'))
  mode = maximize
  partitions = 3
}
''')
    assert not [d for d in lint(p).diagnostics if d.code == "FS506"]
    v = {x.name: x for x in check(p).verdicts}
    assert v["dt_sex"].status == "holds" and v["dt_sex"].how == "proved"
    assert "never reads" in v["dt_sex"].reason
    for name in ("dt_sex_age", "dt_age_milp"):
        w = v[name].witness
        assert v[name].status == "violated", (name, v[name].reason)
        assert w.replayed_by == "scikit-learn"
        assert (w.outputs[0] > 0.5) != (w.outputs[1] > 0.5)
        assert abs(w.features["age"] - w.features_prime["age"]) <= 2


def test_partitions_agree_with_the_whole_problem_on_random_ensembles():
    """Sub-boxes put split values outside the box (their binaries are then fixed): partitioned
    proofs must agree with the whole problem's verdict and with brute force."""
    from fairspec.backends.milp.partition import solve_partitioned, split_widest

    for seed in range(0, 40):
        lo, hi = np.zeros(3), np.full(3, 12.0)
        ens = random_ensemble(seed, 3, 3, 3, ["identity", "logistic"][seed % 2], lo, hi)
        prob = PairProblem(fold(ens, lo, hi, np.ones(3, bool)), lo, hi, np.ones(3, bool), (), (0,))
        want = brute_force(prob, ens.forward).status
        want = "violated" if want == "violated" else "holds"
        res = solve_partitioned(prob, "prove", split_widest(prob, 4), backend="milp", time_per_part=None,
                                executor=__import__("fairspec.runtime.executor", fromlist=["x"]).SerialExecutor())
        assert res.status == want, (seed, res.status, want)


def test_lint_says_what_tree_models_cannot_do(tmp_path):
    """A logit bound on the Adult tree (it averages probabilities) is FS506 before any solving;
    the same bound on prob(...) and every other property kind on the tree lint clean."""
    from fairspec.pipeline import lint

    p = _adult_spec(tmp_path, '''
property dt_logit {
  forall x, x' : Applicant
  require x.* == x'.* except {sex}
  ensure |logit(dt(x)) - logit(dt(x'))| <= 0.1
}
property dt_prob {
  forall x, x' : Applicant
  require x.* == x'.* except {sex}
  ensure |prob(dt(x)) - prob(dt(x'))| <= 0.1
  using smt
}
property dt_k {
  k_discrimination(dt, over {sex}, eps = 0.05) < 2
}
property dt_pba {
  pba(dt, flip sex, around adult, delta {age: 1})
}
''')
    d = [(x.code, x.severity, x.message) for x in lint(p).diagnostics if x.code != "FS427"]  # array-fitted: stated
    assert [(c, s) for c, s, _ in d] == [("FS506", "warning")], d
    assert "DecisionTreeClassifier" in d[0][2] and "logit bound" in d[0][2]


def test_local_search_finds_only_real_violations_and_most_of_them():
    """The falsifier's pairs are re-checked like a solver's: on 200 random ensembles every pair
    it returns satisfies the pre-condition and violates the post-condition (brute force says
    violated), and with no deadline it finds most of the violated ones."""
    from fairspec.backends.pair import check_witness
    from fairspec.backends.trees.search import falsify

    found = violated = 0
    for seed in range(200):
        ens, prob = _random_problem(seed)
        bf = brute_force(prob, ens.forward)
        pair = falsify(prob, seed=seed)
        if bf.status == "violated":
            violated += 1
        if pair is not None:
            assert bf.status == "violated", seed
            assert check_witness(prob, pair[0], pair[1], ens.forward), seed
            found += 1
    assert violated > 20 and found >= 0.8 * violated, (found, violated)


def test_local_search_respects_one_hot_groups_and_relaxed_inputs():
    """A protected one-hot group, a relaxed input and tied inputs: every returned pair keeps
    the groups one-hot, the relaxed distance and the tied inputs equal."""
    from fairspec.backends.pair import precondition_holds
    from fairspec.backends.trees.search import falsify

    hits = 0
    for seed in range(40):
        n = 6
        lo, hi = np.zeros(n), np.array([1, 1, 1, 9, 9, 9], dtype=float)
        ens = random_ensemble(seed, n, 4, 3, ["identity", "logistic"][seed % 2], lo, hi)
        prob = PairProblem(fold(ens, lo, hi, np.ones(n, bool)), lo, hi, np.ones(n, bool), ((0, 1, 2),),
                           (0, 1, 2), None, ((4, 2.0),), "label", 0.0)
        pair = falsify(prob, seed=seed)
        if pair is not None:
            hits += 1
            ok, why = precondition_holds(prob, *pair)
            assert ok, (seed, why)
            assert brute_force(prob, ens.forward).status == "violated"
    assert hits > 0


def test_witnesses_are_centred_in_their_split_intervals():
    """A continuous value on a threshold (float32 rounding could send the library's tree the
    other way) is moved to the middle of its interval: same leaves, same outputs."""
    from fairspec.backends.trees.modes import centred

    t = _tree([1, -1, 0, -1, -1], [0.25, 0, 0.5, 0, 0], [1, -1, 3, -1, -1], [2, -1, 4, -1, -1],
              [0, 0.1, 0, 0.2, 0.9])
    ens = TreeEnsemble((t,), 2)
    lo, hi = np.zeros(2), np.ones(2)
    prob = PairProblem(ens, lo, hi, np.array([True, False]), (), (0,))
    x, xp = np.array([0.0, 0.5]), np.array([1.0, 0.5])
    cx, cxp = centred(prob, x, xp)
    assert cx[1] == cxp[1] == pytest.approx(0.625)
    assert cx[0] == 0.0 and cxp[0] == 1.0                  # integral inputs untouched
    assert np.array_equal(ens.aggregate(np.vstack([x, xp])), ens.aggregate(np.vstack([cx, cxp])))
    assert centred(prob, np.array([0.0, 0.0]), xp)[0][1] == pytest.approx(0.125)
