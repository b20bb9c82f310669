"""Session 36 audit (h6): group metrics over a declared distribution against brute force on the model's own
runtime -- every point of the (small) domain, its probability a product of the declared decimals as Fractions,
the model's own ``predict`` deciding it (scikit-learn's ``classes_[index]``), each group's PPV a Fraction."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("sklearn")


def _check(tmp_path, spec: str, models: dict):
    import fairspec

    (tmp_path / "s.fair").write_text(spec)
    rep = fairspec.check(tmp_path / "s.fair", models=models).report
    assert not [d.message for d in rep.diagnostics if d.is_error] and not rep.internal_errors, (
        [d.message for d in rep.diagnostics], rep.internal_errors)
    return {v.name: v for v in rep.verdicts}


def _props(metric: str, groups: str, value: Fraction, backends=("using ssat", "using elimination")) -> str:
    """The claim at the exact value with each comparison, on each backend."""
    t = f"{float(value):.12g}"
    assert Fraction(t) == value
    out = []
    for b, backend in enumerate(backends):
        for o, op in enumerate(("<", "<=", ">", ">=")):
            out.append(f"property {metric}_{b}_{o} {{\n  {metric}(clf, groups {groups}, distribution d) {op} {t}\n"
                       f"  {backend}\n}}\n")
    return "".join(out)


def _judge(verdicts: dict, value: Fraction):
    for name, v in verdicts.items():
        op = ("<", "<=", ">", ">=")[int(name.rsplit("_", 1)[1])]
        truth = {"<": False, "<=": True, ">": False, ">=": True}[op]
        assert v.status == ("holds" if truth else "violated"), (name, v.status, v.value, v.reason, str(value))
        assert Fraction(v.details["exact_value"]) == value, (name, v.details.get("exact_value"), str(value))


CODED = """features W {
  S : bool protected
  X : bool
  C : {c0, c1, c2}
}
model clf = sklearn("m.skops")
encode W for clf {
  S : raw
  X : code {false = 0.3, true = 1.7}
  C : code {c0 = 0.7, c1 = 0.2, c2 = 2.9}
}
distribution d {
  p(X | S) = 0.3
  p(X | not S) = 0.6
  p(C = c0) = 0.25
  p(C = c1) = 0.35
}
"""


@pytest.mark.parametrize("kind", ["tree", "boosted"])
def test_code_encoded_columns_outside_0_to_k_minus_1_are_compiled_over_their_codes(tmp_path, kind):
    """A code-encoded column whose codes lie outside [0, k - 1] (`code {false = 0.3, true = 1.7}`): the tree
    compiler's box for it was (-0.5, k - 1], so the cuts above k - 1 were dropped and the points coded there
    decided by the wrong side (a GradientBoosting model compiled into ONE leaf: least_favoured `violated` for
    `<= 0` when its true value was 0). Failed before the fix (the tree read as constant: PPVs 0, `holds (proved)`
    of `most_favoured < 0.36`)."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.tree import DecisionTreeClassifier

    xcode, ccode = {0: 0.3, 1: 1.7}, {0: 0.7, 1: 0.2, 2: 2.9}
    grid = list(itertools.product(range(2), range(2), range(3)))
    X = np.array([[s, xcode[x], ccode[c]] for s, x, c in grid], dtype=float)
    y = np.array([int(x == 1 and c == 2) for s, x, c in grid])       # positive iff X and C = c2 (code 2.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = (DecisionTreeClassifier(random_state=0) if kind == "tree"
               else GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0)).fit(np.repeat(X, 3, 0),
                                                                                                  np.repeat(y, 3))
    decided = est.predict(X) == est.classes_[1]
    assert (decided == y.astype(bool)).all()
    pc = {0: Fraction(1, 4), 1: Fraction(35, 100), 2: Fraction(40, 100)}
    px = {1: Fraction(3, 10), 0: Fraction(6, 10)}         # p(X | S = s)
    ppv = {s: sum((px[s] if x else 1 - px[s]) * pc[c] for (s2, x, c), d in zip(grid, decided) if s2 == s and d)
           for s in (0, 1)}
    value = max(ppv.values())
    assert value == Fraction(6, 10) * Fraction(4, 10)
    v = _check(tmp_path, CODED + _props("most_favoured", "S", value), {"clf": est})
    _judge(v, value)


COMPOUND = """features W {
  S : bool protected
  R : {r0, r1, r2} protected
  X : bool
  C : {c0, c1, c2, c3}
}
model clf = sklearn("m.skops", index = 0)
encode W for clf {
  S : onehot
  R : code
  X : raw
  C : onehot
}
distribution d {
  p(X | S, R = r0) = 0.41
  p(X | S, R = r1) = 0.07
  p(X | S, R = r2) = 0.9
  p(X | not S, R = r0) = 0.5
  p(X | not S, R = r1) = 0.333
  p(X | not S, R = r2) = 0
  p(C = c0 | X) = 0.1
  p(C = c1 | X) = 0.2
  p(C = c2 | X) = 0.3
  p(C = c0 | not X) = 0.25
  p(C = c1 | not X) = 0.25
  p(C = c2 | not X) = 0.25
  p(C = c3 | not X) = 0.25
}
"""


def test_linear_model_over_compound_groups_and_correlated_features_dp_and_ssat_agree_with_brute_force(tmp_path):
    """A logistic regression whose positive class is classes_[0] ("no", index = 0), over compound groups S x R
    and a network where X depends on both protected features and C on X: dp (FVGM's DP) and ssat give the value
    brute force gives on the model's own predict, at thresholds placed at the exact value (`<` fails, `<=`
    holds). A cross-check (no defect found here)."""
    from sklearn.linear_model import LogisticRegression

    grid = list(itertools.product(range(2), range(3), range(2), range(4)))
    oh = np.eye(4)
    X = np.array([[1 - s, s, r, x, *oh[c]] for s, r, x, c in grid], dtype=float)
    y = np.array(["yes" if (2 * x + (c in (1, 3)) + r - s) >= 2 else "no" for s, r, x, c in grid])
    est = LogisticRegression(C=10.0).fit(np.repeat(X, 4, 0), np.repeat(y, 4))
    decided = est.predict(X) == est.classes_[0]
    F = Fraction
    px = {(1, 0): F(41, 100), (1, 1): F(7, 100), (1, 2): F(9, 10), (0, 0): F(1, 2), (0, 1): F(333, 1000), (0, 2): F(0)}
    pc = {1: [F(1, 10), F(2, 10), F(3, 10), F(4, 10)], 0: [F(1, 4)] * 4}
    ppv = {}
    for (s, r, x, c), d in zip(grid, decided):
        w = (px[s, r] if x else 1 - px[s, r]) * pc[x][c]
        ppv[s, r] = ppv.get((s, r), F(0)) + (w if d else 0)
    for metric, value in (("statistical_parity", max(ppv.values()) - min(ppv.values())),
                          ("least_favoured", min(ppv.values()))):
        spec = COMPOUND + "".join(
            f"property {metric}_{b}_{o} {{\n  {metric}(clf, groups S x R, distribution d) {op} "
            f"{float(value):.12g}\n  using {backend}\n}}\n"
            for b, backend in enumerate(("dp", "ssat")) for o, op in enumerate(("<", "<=")) if o or value > 0)
        assert F(f"{float(value):.12g}") == value
        v = _check(tmp_path, spec, {"clf": est})
        _judge(v, value)


DECIMALS = """features W {
  S : bool protected
  C : {c0, c1, c2}
}
model clf = sklearn("m.skops")
encode W for clf {
  S : raw
  C : onehot
}
distribution d {
%s
}
"""


def test_decimal_probabilities_are_read_as_written_or_refused(tmp_path):
    """A tree positive on C in {c0, c1}: with p(c0) = 0.1, p(c1) = 0.2 written, the value is 3/10 exactly (float64
    sums 0.30000000000000004, above 0.3): `<= 0.3` holds (proved) and `< 0.3` is violated on every backend; the
    rows 0.1 + 0.2 + 0.7 sum to 1 in rationals (1.0000000000000002 in float64) and are one distribution. 1/3
    written as 0.3333 three times sums to 0.9999: refused (FS310), never proved about some other distribution."""
    from sklearn.tree import DecisionTreeClassifier

    X = np.array([[s, *np.eye(3)[c]] for s in range(2) for c in range(3)], dtype=float)
    y = np.array([int(c < 2) for s in range(2) for c in range(3)])
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert (est.predict(X) == y).all()
    value = Fraction(3, 10)
    for rows in ("  p(C = c0) = 0.1\n  p(C = c1) = 0.2", "  p(C = c0) = 0.1\n  p(C = c1) = 0.2\n  p(C = c2) = 0.7"):
        v = _check(tmp_path, DECIMALS % rows + _props("most_favoured", "S", value), {"clf": est})
        _judge(v, value)
        assert all(x.how == "proved" for x in v.values() if x.status == "holds")
    import fairspec

    (tmp_path / "s.fair").write_text(DECIMALS % "  p(C = c0) = 0.3333\n  p(C = c1) = 0.3333\n  p(C = c2) = 0.3333"
                                     + "property q {\n  most_favoured(clf, groups S, distribution d) >= 0.6\n}\n")
    rep = fairspec.check(tmp_path / "s.fair", models={"clf": est}).report
    assert [d.code for d in rep.diagnostics if d.is_error] == ["FS310"], [d.message for d in rep.diagnostics]


TIES = """features W {
  S : bool protected
  X : bool
  C : {c0, c1, c2}
}
model clf = sklearn("m.skops", index = 0)
encode W for clf {
  S : raw
  X : raw
  C : code
}
distribution d {
  p(X | S) = 0.3
  p(X | not S) = 0.6
  p(C = c0) = 0.25
  p(C = c1) = 0.35
}
"""


def test_linear_model_whose_positive_class_is_classes_0_keeps_predicts_tie():
    """A linear model with dyadic weights whose score is exactly 0 on some points (predict gives classes_[0]
    there), read with index = 0: FVGM's rule for classes_[0] was `-score >= T` strict (T = floor + 1), which
    calls the tie points negative where predict calls them positive; every such point disagreed, so the rule
    never stood for the model: `unknown` with the rule's value 0.3 (the model's is 16/25). Now the rule of
    classes_[0] is `-score >= ceil(...)`, predict's tie side: holds (proved) / violated at the exact value, on dp
    and ssat. Failed before the fix (unknown)."""
    import tempfile
    from pathlib import Path

    from sklearn.linear_model import LogisticRegression

    grid = list(itertools.product(range(2), range(2), range(3)))
    X = np.array(grid, dtype=float)
    est = LogisticRegression().fit(X, (X[:, 1] > 0).astype(int))
    est.coef_, est.intercept_ = np.array([[0.5, 1.0, -0.5]]), np.array([0.0])
    decided = est.predict(X) == est.classes_[0]
    pc = {0: Fraction(1, 4), 1: Fraction(35, 100), 2: Fraction(40, 100)}
    px = {1: Fraction(3, 10), 0: Fraction(6, 10)}
    ppv = {s: sum((px[s] if x else 1 - px[s]) * pc[c] for (s2, x, c), d in zip(grid, decided) if s2 == s and d)
           for s in (0, 1)}
    value = max(ppv.values())
    assert value == Fraction(16, 25)
    with tempfile.TemporaryDirectory() as tmp:
        v = _check(Path(tmp), TIES + _props("most_favoured", "S", value, backends=("using dp", "using ssat")),
                   {"clf": est})
    _judge(v, value)
