"""Session 37 audit (h7): individual fairness of a rule model (``model r = rule(...)``).

The plan sent it to MILP, which cannot read a rule ("a rule model is not a network"): every such property was
``unknown`` even on an 8-point domain, and lint warned FS506. The plan now picks the ``enumerate`` backend
(kinds/rule_pairs): every admissible pair of a small discrete domain, the rule read in exact rationals.
Truth here is brute force: every pair of the domain, the rule written as Python over Fractions."""

from __future__ import annotations

import itertools
from fractions import Fraction as Fr

import pytest

HEAD = """features F {
  a : int in [0, 3]
  b : {X, Y, Z}
  c : bool
  GDECL
}
model r = rule(RULE)
property pr {
  forall x, x' : F
  require x.* == x'.* except {g}
  EXTRA
  ensure label(r(x)) == label(r(x'))
}
"""
A, B, C = range(4), ("X", "Y", "Z"), (False, True)
CAT, NUM = "g : {F, M} protected", "g : int in [0, 1] protected"

# (g's declaration, the rule as written, the same rule in Python over Fractions, a further require line, that
# line in Python)
CASES = [
    (CAT, "a + 1 >= 2 and (g == F or b == X)", lambda a, b, c, g: a + 1 >= 2 and (g == "F" or b == "X"), "", None),
    (CAT, "a >= 2 or c", lambda a, b, c, g: a >= 2 or c, "", None),
    # exact: 0.1 a <= 0.3 for every a in [0, 3] whatever g (holds); in float64 0.1 * 3 = 0.30000000000000004 > 0.3
    # for g = 0 while 0.5 <= 0.5 for g = 1 (a float evaluation of the rule calls it violated)
    (NUM, "0.1 * a + 0.2 * g <= 0.3 + 0.2 * g", lambda a, b, c, g: Fr("0.1") * a + Fr("0.2") * g <= Fr("0.3") + Fr("0.2") * g,
     "", None),
    (NUM, "|a - 2| * 0.5 < 0.75 - 0.25 * g", lambda a, b, c, g: abs(a - 2) * Fr("0.5") < Fr("0.75") - Fr("0.25") * g,
     "", None),
    (CAT, "a >= 2 or g == M", lambda a, b, c, g: a >= 2 or g == "M", "require x.a >= 1 and x'.a >= 1", lambda a: a >= 1),
    (CAT, "a >= 2 or g == M", lambda a, b, c, g: a >= 2 or g == "M", "require x.a >= 2", lambda a: a >= 2),
    (CAT, "not (b in {Y, Z}) or a / 2 > 1", lambda a, b, c, g: b not in ("Y", "Z") or Fr(a, 2) > 1, "", None),
]


def _truth(rule, pre, G):
    """(violating ordered pairs, admissible ordered pairs): every pair differs in g only."""
    bad = total = 0
    for a, b, c in itertools.product(A, B, C):
        for g1, g2 in itertools.permutations(G, 2):
            if pre is not None and not pre(a):
                continue
            total += 1
            bad += bool(rule(a, b, c, g1)) != bool(rule(a, b, c, g2))
    return bad, total


@pytest.mark.parametrize("k", range(len(CASES)))
def test_rule_individual_fairness_is_enumerated_as_brute_force(tmp_path, k):
    """Failed before: unknown (the milp backend cannot encode this model: a rule model is not a network)."""
    from fairspec import api

    gdecl, text, rule, extra, pre = CASES[k]
    (tmp_path / "s.fair").write_text(HEAD.replace("GDECL", gdecl).replace("RULE", text).replace("EXTRA", extra))
    bad, total = _truth(rule, pre, ("F", "M") if gdecl == CAT else (0, 1))
    (v,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    assert v["backend"] == "enumerate", v
    left = v["details"].get("not_enumerated", [])          # tied features the rule does not read: counted once
    per = {"a": len(A), "b": len(B), "c": len(C)}
    for n in left:
        bad, total = bad // per[n], total // per[n]
        assert "not enumerated" in v["reason"], v
    if bad:
        assert v["status"] == "violated" and v["details"]["violating_pairs"] == bad, (bad, v)
        w = v["witness"]
        fx, fy = w["features"], w["features_prime"]
        args = lambda f: (f["a"], f.get("b", "X"), f.get("c", False), f["g"])  # noqa: E731
        assert bool(rule(*args(fx))) != bool(rule(*args(fy))), w
    else:
        assert (v["status"], v["how"]) == ("holds", "proved"), (total, v)
    if not extra:
        assert v["details"].get("pairs") in (None, total), v


@pytest.mark.parametrize("rule,py,t,op", [
    ("a >= 2 or g == M", lambda a, g: a >= 2 or g == "M", "1", "<="),
    ("a + 0.5 >= 2", lambda a, g: a + Fr("0.5") >= 2, "1", "<"),          # relaxed strictly below 1: a is tied
    ("a * 0.25 >= 0.5", lambda a, g: a * Fr("0.25") >= Fr("0.5"), "0.5", "<="),
    ("a >= 3 and g == F", lambda a, g: a >= 3 and g == "F", "2", "<="),
])
def test_relaxed_feature_as_brute_force(tmp_path, rule, py, t, op):
    """A relaxed feature (|x.a - x'.a| op t) read by the rule: the pairs differing in g or in a within t."""
    from fairspec import api

    spec = (HEAD.replace("GDECL", CAT).replace("RULE", rule).replace("except {g}", "except {g}\n  require |x.a - x'.a| "
                                                                          f"{op} {t}").replace("EXTRA", ""))
    (tmp_path / "s.fair").write_text(spec)
    lim = Fr(t)
    bad = total = 0
    for a1, a2 in itertools.product(A, A):
        d = abs(a1 - a2)
        if not (d <= lim if op == "<=" else d < lim):
            continue
        for g1, g2 in itertools.permutations(("F", "M"), 2):    # an admissible pair differs in g (the free feature)
            total += 1
            bad += bool(py(a1, g1)) != bool(py(a2, g2))
    (v,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    assert v["backend"] == "enumerate" and v["details"]["pairs"] == total, (total, v)
    if bad:
        assert v["status"] == "violated" and v["details"]["violating_pairs"] == bad, (bad, total, v)
    else:
        assert (v["status"], v["how"]) == ("holds", "proved"), (total, v)


def test_a_float_evaluation_would_differ_on_the_exact_case():
    """The third case is one where reading the rule in float64 (evaluate's arithmetic) gives another verdict."""
    f = [0.1 * 3 + 0.2 * g <= 0.3 + 0.2 * g for g in (0, 1)]
    assert f == [False, True]


def test_plan_and_lint_for_rule_models(tmp_path):
    from fairspec.pipeline import lint
    from fairspec.planning import plan

    spec = HEAD.replace("GDECL", CAT).replace("RULE", "a >= 2 or g == M").replace("EXTRA", "")
    (tmp_path / "s.fair").write_text(spec)
    r = lint(str(tmp_path / "s.fair"))
    assert not r.diagnostics, [d.message for d in r.diagnostics]          # FS506 warned before
    (prop,) = r.spec.properties
    p = plan(prop, r.spec)
    assert (p.backend, p.needs) == ("enumerate", ("rule",)), p
    # `using milp` on a rule: FS506 an error, its hint naming what decides it
    (tmp_path / "m.fair").write_text(spec.replace("  ensure", "  using milp\n  ensure"))
    (d,) = [d for d in lint(str(tmp_path / "m.fair")).diagnostics if d.is_error]
    assert d.code == "FS506" and "using enumerate" in d.hint, d
    # `using enumerate` on a model file: an error (FS502 at lint), naming what enumerates it
    from dataclasses import replace

    onnx = replace(r.spec, models=tuple(replace(m, format="onnx", rule=None, path="n.onnx") for m in r.spec.models))
    chosen = replace(prop, options=replace(prop.options, backend="enumerate"))
    p = plan(chosen, onnx)
    assert p.backend is None and p.error and "rule models" in p.error, p
    assert plan(prop, onnx).backend == "milp"


CONT = """features F {
  a : int in [0, 3]
  s : real in [0, 1]
  g : {F, M} protected
}
model r = rule(RULE)
property pr {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(r(x)) == label(r(x'))
}
"""


def test_continuous_features(tmp_path):
    """A rule reading only tied features holds whatever the domain (certify.no_pair.prove_rule_reads_tied); one
    reading the protected feature beside a real one is unknown, saying what would decide it."""
    from fairspec import api

    (tmp_path / "s.fair").write_text(CONT.replace("RULE", "a >= 2 or s > 0.5"))
    (v,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    assert (v["status"], v["how"], v["backend"]) == ("holds", "proved", "enumerate"), v
    (tmp_path / "s.fair").write_text(CONT.replace("RULE", "s > 0.5 or g == M"))
    (v,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    assert v["status"] == "unknown" and "s is continuous" in v["reason"], v
