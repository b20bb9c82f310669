"""FVGM's fairness influence functions in the language: influence(...) from syntax to verdict.

    influence(m, groups P, distribution d, metric = statistical_parity, subsets = [{Q}, {R, S}]) <= 0.05

FIF(S) = Q(D) - Q(D_-S), where D_-S gives the classifier independent uniform
values for the features S (a child of a feature in S keeps depending on the
original value), Q is statistical parity (default) or disparate impact; the
claim's value is max_S |FIF(S)|.  Values are checked against a brute-force
enumeration written here from that definition (not through BayesNet.with_uniform).
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLES, FIXTURES
from fairspec import ir
from fairspec.analyses import group_metrics_exact as gm
from fairspec.kinds import distribution as R
from fairspec.pipeline import check, lint

from fairspec.backends import dp as _dp, ssat as _ssat

ENGINES = {"ssat": _ssat, "dp": _dp, "brute": "brute"}  # the PPV engines the runner would pick

TOL = 1e-9


def spec(tmp_path: Path, text: str, name: str = "spec.fair") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def verdicts(path: Path) -> dict:
    rep = check(path)
    assert not rep.has_errors, [d.message for d in rep.diagnostics] + [rep.error]
    assert not rep.internal_errors, rep.internal_errors
    return {v.name: v for v in rep.verdicts}


# =========================================================================== diagnostics

HEAD = """\
data people = csv("{csv}", label = hired == "yes")

features W {{
  P : bool protected
  Q : bool
  R : bool
  S : bool
  C : {{a, b, c}}
  G : {{F, M}} protected
}}

model m = rule(P + Q + R - S >= 2)

distribution d {{
  p(Q) = 0.4
  p(R) = 0.5
  p(S) = 0.3
}}

"""
CLAIM_LINE = HEAD.count("\n") + 2     # the claim is on the line after "property p {"


def lint_claim(tmp_path, claim: str, extra: str = ""):
    text = HEAD.format(csv=FIXTURES / "data" / "people.csv") + f"property p {{\n  {claim}\n{extra}}}\n"
    res = lint(spec(tmp_path, text))
    return res, [d for d in res.diagnostics if d.is_error]


@pytest.mark.parametrize("claim, code, at, needle", [
    # no distribution: data alone is not enough
    ("influence(m, groups P) <= 0.05", "FS501", "influence", "needs a distribution"),
    # a protected feature in a subset (one of the groups, or declared protected)
    ("influence(m, groups P, distribution d, subsets = [{Q}, {R, P}]) <= 0.05", "FS501", "P}", "protected"),
    ("influence(m, groups P, distribution d, subsets = [{G}]) <= 0.05", "FS501", "G}", "protected"),
    # an unknown metric: FS307 with the list in the hint
    ("influence(m, groups P, distribution d, metric = equalized_odds) <= 0.05", "FS307", "equalized_odds",
     "cannot measure the metric 'equalized_odds'"),
    # an unknown feature
    ("influence(m, groups P, distribution d, subsets = [{Q, Zed}]) <= 0.05", "FS205", "Zed", "unknown feature 'Zed'"),
    # empty: the list, one subset
    ("influence(m, groups P, distribution d, subsets = []) <= 0.05", "FS501", "[]", "names no feature subset"),
    ("influence(m, groups P, distribution d, subsets = [{Q}, {}]) <= 0.05", "FS501", "{}", "empty subset"),
    # a feature the classifier does not read cannot change the metric
    ("influence(m, groups P, distribution d, subsets = [{C}]) <= 0.05", "FS501", "C}", "does not read 'C'"),
    # not a list of sets
    ("influence(m, groups P, distribution d, subsets = {Q}) <= 0.05", "FS301", "{Q}", "list of feature sets"),
    ("influence(m, groups P, distribution d, subsets = [{Q}, {Q}]) <= 0.05", "FS501", "{Q}]", "listed twice"),
    # the empirical distribution is the data rows themselves
    ("influence(m, groups P, distribution = people) <= 0.05", "FS501", "people", "empirical distribution"),
    # thresholds and claims
    ("influence(m, groups P, distribution d) <= -0.1", "FS507", "-0.1", "below 0"),
    ("influence(m, groups P, distribution d)", "FS501", "influence", "compared with a threshold"),
    ("influence(m, groups P, distribution d, data = people) <= 0.05", "FS208", "data =", "no argument 'data'"),
])
def test_influence_diagnostics(tmp_path, claim, code, at, needle):
    res, errors = lint_claim(tmp_path, claim)
    assert [d.code for d in errors] == [code], [(d.code, d.message) for d in errors]
    d = errors[0]
    assert needle in d.message
    assert (d.span.line, d.span.column) == (CLAIM_LINE, 3 + claim.index(at))
    assert d.hint or code == "FS205"


def test_unknown_metric_lists_the_metrics(tmp_path):
    _, errors = lint_claim(tmp_path, "influence(m, groups P, distribution d, metric = equal_opportunity) <= 0.05")
    assert "statistical_parity" in errors[0].hint and "disparate_impact" in errors[0].hint


def test_missing_distribution_hint_names_the_ways_to_get_one(tmp_path):
    _, errors = lint_claim(tmp_path, "influence(m, groups P) <= 0.05")
    assert "bayes(DATA)" in errors[0].hint and "declared distribution" in errors[0].hint


def test_the_data_backend_is_refused_at_lint_time(tmp_path):
    _, errors = lint_claim(tmp_path, "influence(m, groups P, distribution d) <= 0.05", "  using data\n")
    assert [d.code for d in errors] == ["FS502"]
    assert (errors[0].span.line, errors[0].span.column) == (CLAIM_LINE + 1, 9)
    assert "ssat" in errors[0].hint and "dp" in errors[0].hint


def test_the_ir_carries_the_influence_parameters(tmp_path):
    res, errors = lint_claim(tmp_path, "influence(m, groups P, distribution d, metric = disparate_impact, "
                                       "subsets = [{Q}, R, {R, S}]) < 0.1")
    assert not errors
    p = res.spec.properties[0]
    assert isinstance(p, ir.GroupMetric) and p.kind == "group_metric"
    assert (p.metric, p.influence_metric, p.subsets) == ("influence", "disparate_impact", (("Q",), ("R",), ("R", "S")))
    assert (p.distribution, p.data, p.op, p.threshold) == ("d", None, "<", 0.1)
    res, _ = lint_claim(tmp_path, "influence(m, groups P, distribution d) <= 0.1")
    p = res.spec.properties[0]
    assert (p.influence_metric, p.subsets) == ("statistical_parity", ())
    hash(p)     # frozen, plain data


def test_the_registry_says_influence_needs_a_distribution():
    from fairspec.planning import supports_metric
    assert supports_metric("ssat", "influence") and supports_metric("dp", "influence")
    assert not supports_metric("data", "influence") and not supports_metric("milp", "influence")
    assert supports_metric("data", "statistical_parity")


# =========================================================================== exact values over a declared network

WORLD = """\
features W {{
  P : bool protected
  Q : bool
  R : bool
  S : bool
  C : {{a, b, c}}
}}

model m = rule({rule})

distribution d {{
  p(Q | P) = 0.6
  p(Q | not P) = 0.3
  p(R | Q) = 0.7
  p(R | not Q) = 0.2
  p(S) = 0.3
  p(C = a | P) = 0.2   p(C = b | P) = 0.5
  p(C = a | not P) = 0.5   p(C = b | not P) = 0.1
}}

property sp {{
  influence(m, groups P, distribution d) <= 0.1{using}
}}

property di {{
  influence(m, groups P, distribution d, metric = disparate_impact, subsets = {subsets}) <= 0.1{using}
}}
"""

# the rule as the spec states it, the same rule in Python, and the features it reads
RULES = [
    ("P + Q + R - S >= 2", lambda P, Q, R, S, C: P + Q + R - S >= 2, "QRS"),
    ("Q + R + S - 2 * (C == c) + P >= 2", lambda P, Q, R, S, C: Q + R + S - 2 * (C == 2) + P >= 2, "QRSC"),
    ("(not Q or R) and (Q or C == a) and (P or not S)",
     lambda P, Q, R, S, C: ((not Q) or R) and (Q or C == 0) and (P or not S), "QRSC"),
]
K = {"Q": 2, "R": 2, "S": 2, "C": 3}


def cpt(name, value, P, orig):
    """Pr[name = value | its parents] in the declared network above."""
    if name == "Q":
        q = 0.6 if P else 0.3
        return q if value else 1 - q
    if name == "R":
        r = 0.7 if orig["Q"] else 0.2
        return r if value else 1 - r
    if name == "S":
        return 0.3 if value else 0.7
    return ((0.2, 0.5, 0.3) if P else (0.5, 0.1, 0.4))[value]


def brute_ppv(fn, P: int, uniform=()) -> float:
    """Pr[rule | P] under D_-S: every original variable drawn from its table (a child of a
    feature in S sees the original), the classifier reading independent uniform copies of S."""
    names = list(K)
    total = 0.0
    for orig_vals in itertools.product(*[range(K[n]) for n in names]):
        orig = dict(zip(names, orig_vals))
        w = 1.0
        for n in names:
            w *= cpt(n, orig[n], P, orig)
        for copy_vals in itertools.product(*[range(K[n]) for n in uniform]):
            seen = dict(orig)
            seen.update(zip(uniform, copy_vals))
            wc = w * float(np.prod([1.0 / K[n] for n in uniform]))
            if fn(P, seen["Q"], seen["R"], seen["S"], seen["C"]):
                total += wc
    return total


def brute_metric(fn, metric, uniform=()) -> float:
    hi, lo = max(brute_ppv(fn, p, uniform) for p in (0, 1)), min(brute_ppv(fn, p, uniform) for p in (0, 1))
    return hi - lo if metric == "statistical_parity" else lo / hi


def brute_fif(fn, metric, subset) -> float:
    return brute_metric(fn, metric) - brute_metric(fn, metric, tuple(subset))


@pytest.mark.parametrize("rule, fn, reads", RULES, ids=[r[0] for r in RULES])
def test_spec_level_influence_equals_brute_force(tmp_path, rule, fn, reads):
    pairs = [list(p) for p in itertools.combinations(reads, 2)]
    subsets = "[" + ", ".join("{" + ", ".join(p) + "}" for p in pairs) + "]"
    backends = ("dp", "ssat") if "or" not in rule else ("ssat",)
    got = {}
    for backend in backends:
        path = spec(tmp_path, WORLD.format(rule=rule, subsets=subsets, using=f"\n  using {backend}"), f"{backend}.fair")
        v = verdicts(path)
        got[backend] = v
        # the default: each feature the rule reads, alone
        want = {(f,): brute_fif(fn, "statistical_parity", (f,)) for f in reads}
        sp = v["sp"]
        assert sp.backend == backend and sp.details["influence_metric"] == "statistical_parity"
        assert {tuple(i["subset"]): i["fif"] for i in sp.details["influence"]} == \
            {k: pytest.approx(x, abs=TOL) for k, x in want.items()}
        assert sp.value == pytest.approx(max(abs(x) for x in want.values()), abs=TOL)
        assert sp.details["base"]["value"] == pytest.approx(brute_metric(fn, "statistical_parity"), abs=TOL)
        top = max(want, key=lambda k: abs(want[k]))
        assert "{" + ", ".join(top) + "}" in sp.reason
        assert sp.status == ("holds" if sp.value <= 0.1 else "violated")
        assert sp.how == ("proved" if sp.status == "holds" else None)
        # chosen pairs, disparate impact
        di = v["di"]
        want = {tuple(p): brute_fif(fn, "disparate_impact", p) for p in pairs}
        assert [tuple(i["subset"]) for i in di.details["influence"]] == [tuple(p) for p in pairs]
        for i in di.details["influence"]:
            assert i["fif"] == pytest.approx(want[tuple(i["subset"])], abs=TOL)
            assert i["value_without"] == pytest.approx(brute_metric(fn, "disparate_impact", tuple(i["subset"])),
                                                       abs=TOL)
        assert di.value == pytest.approx(max(abs(x) for x in want.values()), abs=TOL)
    if len(got) == 2:   # dp and ssat agree
        for name in ("sp", "di"):
            assert got["dp"][name].value == pytest.approx(got["ssat"][name].value, abs=TOL)
            assert [i["fif"] for i in got["dp"][name].details["influence"]] == \
                pytest.approx([i["fif"] for i in got["ssat"][name].details["influence"]], abs=TOL)


def test_fvgm_example_3_2_by_hand(tmp_path):
    """P -> Q with Pr[Q | P] = 0.6, Pr[Q | not P] = 0.3, Pr[R] = 0.5, Pr[S] = 0.3, rule P + Q + R - S >= 2:
    PPV(P) = 0.5 q + 0.35, PPV(not P) = 0.35 q, so SP = 0.545; Q uniform gives 0.6 and 0.175 (SP 0.425,
    FIF 0.12); S uniform gives 0.55 and 0.075 (SP 0.475, FIF 0.07); R is already uniform (FIF 0)."""
    text = """\
features W {
  P : bool protected
  Q : bool
  R : bool
  S : bool
}
model clf = rule(P + Q + R - S >= 2)
distribution d {
  p(Q | P) = 0.6
  p(Q | not P) = 0.3
  p(R) = 0.5
  p(S) = 0.3
}
property inf {
  influence(clf, groups P, distribution d) <= 0.1
}
"""
    v = verdicts(spec(tmp_path, text))["inf"]
    assert {i["subset"][0]: i["fif"] for i in v.details["influence"]} == \
        {"Q": pytest.approx(0.12, abs=TOL), "R": pytest.approx(0.0, abs=TOL), "S": pytest.approx(0.07, abs=TOL)}
    assert v.status == "violated" and v.value == pytest.approx(0.12, abs=TOL)
    assert "FIF({Q})" in v.reason and "0.545" in v.reason and "0.425" in v.reason
    assert v.details["largest"]["subset"] == ["Q"]


# =========================================================================== estimated distributions

SYNTH = EXAMPLES / "worked" / "data" / "synthetic_1.csv"
SYNTH_SPEC = """\
data synth = csv("{synth}")

features Person from synth {{
  older   : bool protected
  income  : real in [-1, 2]  bins [0.29, 0.69]
  fitness : real in [-1, 2]  bins [0.61]
}}

model fig1 = rule((fitness >= 0.61 and income >= 0.29) or (fitness < 0.61 and income >= 0.69))

distribution d = conditional(synth)

property sp {{
  statistical_parity(fig1, groups older, distribution d) <= 0.1
}}

property inf {{
  influence(fig1, groups older, distribution d) <= {t}
}}

property inf_di {{
  influence(fig1, groups older, distribution d, metric = disparate_impact, subsets = [{{income, fitness}}]) >= 0.5
}}
"""


def test_an_estimated_distribution_widens_by_twice_the_metric_bound(tmp_path):
    v = verdicts(spec(tmp_path, SYNTH_SPEC.format(synth=SYNTH, t=0.5)))
    inf, sp = v["inf"], v["sp"]
    # the base is the statistical parity the other property measures, with the same bound
    assert inf.details["base"]["value"] == pytest.approx(sp.value, abs=TOL)
    add = sp.details["error_bound"]["value_additive"]
    assert inf.details["error_bound"]["influence_additive"] == pytest.approx(2 * add, abs=TOL)
    assert inf.bound == pytest.approx((max(0.0, inf.value - 2 * add), min(1.0, inf.value + 2 * add)))
    fifs = {i["subset"][0]: i["fif"] for i in inf.details["influence"]}
    assert set(fifs) == {"income", "fitness"}
    assert inf.value == pytest.approx(max(abs(x) for x in fifs.values()), abs=TOL)
    assert inf.status == "holds" and inf.how == "estimated"          # ~0.36 + 0.085 < 0.5
    assert "FIF({fitness})" in inf.reason and "twice the 95% error bound" in inf.reason
    # both features uniform: the decision no longer depends on the group, so DI moves to 1
    di = v["inf_di"]
    assert di.details["influence"][0]["value_without"] == pytest.approx(1.0, abs=TOL)
    assert di.status == "holds" and di.how == "estimated"
    # the threshold inside the interval: unknown, with the interval and the subset
    u = verdicts(spec(tmp_path, SYNTH_SPEC.format(synth=SYNTH, t=0.38)))["inf"]
    assert u.status == "unknown" and "lies inside" in u.reason and "FIF({fitness})" in u.reason
    w = verdicts(spec(tmp_path, SYNTH_SPEC.format(synth=SYNTH, t=0.2)))["inf"]
    assert w.status == "violated" and w.how is None


def test_the_data_backend_and_an_empirical_distribution_give_unknown(tmp_path):
    from fairspec.kinds.on_data import run as data_run
    from fairspec.runtime.context import Context
    path = spec(tmp_path, SYNTH_SPEC.format(synth=SYNTH, t=0.5))
    sp = lint(path).spec
    prop = next(p for p in sp.properties if p.name == "inf")
    ctx = Context(sp)
    forced = dataclasses.replace(prop, options=dataclasses.replace(prop.options, backend="data"))
    v = data_run(forced, ctx)
    assert v.status == "unknown" and "fairness influence needs a distribution" in v.reason
    emp = ir.Distribution("emp", "empirical", "synth")
    sp2 = dataclasses.replace(sp, distributions=sp.distributions + (emp,))
    v = R.run(dataclasses.replace(prop, distribution="emp"), Context(sp2))
    assert v.status == "unknown" and "fairness influence needs a distribution" in v.reason


# =========================================================================== the elimination path


def test_elimination_influence_agrees_with_enumeration_and_ssat():
    from test_distribution_runner import random_instance
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(25):
        bn, tree = random_instance(rng)
        feats = [f for f in tree.features if f != "A"]
        if not feats:
            continue
        subsets = [(f,) for f in feats] + ([tuple(feats[:2])] if len(feats) > 1 else [])
        pb = R.Problem(bn, tree, ("A",), None, True)
        for metric in ("statistical_parity", "disparate_impact"):
            prop = ir.GroupMetric("p", "group_metric", ir.Options(), None, metric="influence", model="m",
                                  features="F", distribution="d", influence_metric=metric)
            got = R.compute_influence(prop, pb, "elimination", "enumerate", 0.05, 60.0, subsets)
            for backend in ("brute", "ssat"):
                ref = gm.fairness_influence(tree, bn, ["A"], subsets, metric, backend=ENGINES[backend])
                if ref.status != "ok" or got.status != "ok":
                    continue
                assert [s for s, _ in got.influence] == [s for s, _ in ref.influence]
                assert [x for _, x in got.influence] == pytest.approx([x for _, x in ref.influence], abs=1e-9,
                                                                      nan_ok=True)
                checked += 1
    assert checked >= 20


def test_a_tree_over_a_learned_network_by_elimination_and_by_ssat(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("skops")
    from test_distribution_runner import sklearn_spec
    claim = ("influence(m, groups grp, distribution bayes(people, max_parents = 2), "
             "subsets = [{age}, {score, member}]) <= 1")
    path = sklearn_spec(tmp_path, "tree", claim)
    v = verdicts(path)["p"]
    assert v.details["backend"] == "elimination" and v.details["distribution"]["edges"]
    path.write_text(path.read_text().replace("<= 1\n", "<= 1\n  using ssat\n"))
    w = verdicts(path)["p"]
    assert w.details["backend"] == "ssat"
    assert [i["fif"] for i in v.details["influence"]] == \
        pytest.approx([i["fif"] for i in w.details["influence"]], abs=TOL)
    assert v.value == pytest.approx(w.value, abs=TOL)
