"""A witness of a code table giving several categories one code (FS438; kinds/shared_codes): the printed pair is
one the property compares -- a feature after ``except`` differing, a tied one the same category on both sides,
the further pre-condition met -- and is the model's input exactly (each printed category's code is the input).

Brute force: every code table of four categories over three codes (each has a shared code), every pair of inputs
of the features, five pre-conditions; and end to end, tree models on small tables decided by the enumeration and
by the data flips, the printed witness parsed back through the grammar and replayed on the model."""

from __future__ import annotations

import warnings
from dataclasses import replace
from itertools import product

import numpy as np
import pytest

from fairspec.kinds.pre_relax import meeting_witness
from fairspec.runtime.encoding import decode_row
from fairspec.verdict import Witness

CATS = ("A", "B", "C", "D")
HEAD = ("features F {\n  g : {A, B, C, D}  protected\n  h : bool  protected\n  n : int in [0, 3]\n}\n"
        'model m = sklearn("m.skops")\nencode F for m {\n  g : code {A = 0, B = 0, C = 1, D = 2}\n  h : raw\n'
        "  n : raw\n}\n")

# (the property's lines, the same as a Python predicate on two points {g, h, n})
VARIANTS = {
    "g, n relaxed": ("require x.* == x'.* except {g}\n  require |x.n - x'.n| <= 1",
                     lambda x, y: x["g"] != y["g"] and x["h"] == y["h"] and abs(x["n"] - y["n"]) <= 1),
    "g, x.g == B": ("require x.* == x'.* except {g}\n  require x.g == B",
                    lambda x, y: x["g"] != y["g"] and x["h"] == y["h"] and x["n"] == y["n"] and x["g"] == "B"),
    "h, g tied in {B, D}": ("require x.* == x'.* except {h}\n  require x.g in {B, D}",
                            lambda x, y: x["h"] != y["h"] and x["g"] == y["g"] and x["n"] == y["n"]
                            and x["g"] in ("B", "D")),
    "g and h, x'.g != A, x.n >= 1": ("require x.* == x'.* except {g, h}\n  require x'.g != A and x.n >= 1",
                                     lambda x, y: (x["g"] != y["g"] or x["h"] != y["h"]) and x["n"] == y["n"]
                                     and y["g"] != "A" and x["n"] >= 1),
    "g, x.g == B or x'.g == C": ("require x.* == x'.* except {g}\n  require x.g == B or x'.g == C",
                                 lambda x, y: x["g"] != y["g"] and x["h"] == y["h"] and x["n"] == y["n"]
                                 and (x["g"] == "B" or y["g"] == "C")),
}


def _spec(tmp_path, lines: str, codes=(0, 0, 1, 2)) -> str:
    table = ", ".join(f"{c} = {k}" for c, k in zip(CATS, codes))
    return (HEAD.replace("code {A = 0, B = 0, C = 1, D = 2}", "code {" + table + "}") +
            "property p {\n  forall x, x' : F\n  " + lines + "\n  ensure label(m(x)) == label(m(x'))\n}\n")


def _model(tmp_path, codes=(0, 0, 1, 2), seed=0):
    """A decision tree that memorises random labels on every input (code, h, n) of the table."""
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.sklearn_model import import_skops_io

    X = np.array([[k, h, n] for k in sorted(set(codes)) for h in (0, 1) for n in range(4)], dtype=float)
    y = np.random.default_rng(seed).integers(0, 2, len(X))
    y[0], y[-1] = 0, 1
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    import_skops_io().dump(est, str(tmp_path / "m.skops"))
    return est


@pytest.fixture(scope="module")
def irs(tmp_path_factory):
    """{variant: (prop, feature set, encoding)} from sema, the code table replaced per case below."""
    from fairspec.sema.check import check_file

    d = tmp_path_factory.mktemp("shared_codes")
    _model(d)
    out = {}
    for name, (lines, _) in VARIANTS.items():
        (d / "s.fair").write_text(_spec(d, lines))
        res = check_file(d / "s.fair")
        assert not [x for x in res.diagnostics if x.is_error], res.diagnostics
        (prop,) = res.spec.properties
        out[name] = (prop, res.spec.feature_set(prop.features), res.spec.encoding_for("m"))
    return out


def _with_codes(enc, codes):
    cols = tuple(replace(c, codes=tuple(float(k) for k in codes)) if c.kind == "code" else c for c in enc.columns)
    return replace(enc, columns=cols)


def _code(enc, cat):
    c = next(c for c in enc.columns if c.kind == "code")
    return float(c.codes[c.categories.index(cat)])


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_table_and_input_pair_prints_a_pair_of_the_property_exactly_when_one_has_those_inputs(irs, variant):
    """Every table of 4 categories over codes {0, 1, 2} (81, each with a shared code), every pair of inputs whose
    tied features agree: meeting_witness gives a pair meeting the property (in its order) whose categories code to
    the inputs, exactly when some choice of categories with those codes does; else None."""
    prop, fs, enc0 = irs[variant]
    pred = VARIANTS[variant][1]
    tied_g = "g" not in prop.free
    seen = {True: 0, False: 0}
    for codes in product(range(3), repeat=4):
        enc = _with_codes(enc0, codes)
        for u, v, h, hp, n, m in product(sorted(set(codes)), sorted(set(codes)), (0, 1), (0, 1), range(4), range(4)):
            if (tied_g and u != v) or ("h" not in prop.free and h != hp) or abs(n - m) > (1 if prop.relaxed else 0):
                continue
            x, xp = np.array([u, h, n], dtype=float), np.array([v, hp, m], dtype=float)
            w = Witness(tuple(x), tuple(xp), decode_row(enc, fs, x), decode_row(enc, fs, xp))
            got = meeting_witness(prop, fs, enc, w)
            alike = lambda k: [c for c in CATS if _code(enc, c) == k]  # noqa: E731
            exists = any(pred({"g": a, "h": h, "n": n}, {"g": b, "h": hp, "n": m}) or
                         pred({"g": b, "h": hp, "n": m}, {"g": a, "h": h, "n": n})
                         for a in alike(u) for b in alike(v))
            seen[exists] += 1
            if not exists:
                assert got is None, (codes, x, xp, got)
                continue
            assert got is not None, (codes, x, xp)
            fx, fy = got.features, got.features_prime
            assert pred(fx, fy), (codes, fx, fy)
            for f, xs in ((fx, got.x), (fy, got.x_prime)):          # the printed pair is the model's input
                assert _code(enc, f["g"]) == xs[0] and float(f["h"]) == xs[1] and f["n"] == xs[2], (codes, f, xs)
            assert {got.x, got.x_prime} == {w.x, w.x_prime}
    assert seen[True] and seen[False], seen


def _truth(est, codes, pred):
    """Does some pair of the domain meeting ``pred`` get two labels from ``est``?"""
    pts = [{"g": g, "h": h, "n": n} for g in CATS for h in (False, True) for n in range(4)]
    lab = {}
    for p in pts:
        lab[(p["g"], p["h"], p["n"])] = int(est.predict(np.array([[codes[CATS.index(p["g"])], p["h"], p["n"]]],
                                                                 dtype=float))[0])
    return any(pred(a, b) and lab[(a["g"], a["h"], a["n"])] != lab[(b["g"], b["h"], b["n"])]
               for a in pts for b in pts)


def _parsed(features: dict) -> dict:
    from fairspec.report import witness_text
    from fairspec.syntax import ast
    from fairspec.syntax.parser import parse_text

    (decl,) = parse_text(f"group q = {witness_text(features)}\n").decls
    out = {}
    for it in decl.expr.items:
        e = it.value
        out[it.key.id] = e.id if isinstance(e, ast.Name) else e.value if isinstance(e, ast.BoolLit) else int(e.value)
    return out


@pytest.mark.parametrize(("codes", "seed"), [((0, 0, 1, 2), 0), ((1, 0, 0, 1), 1), ((0, 1, 1, 1), 2),
                                             ((2, 0, 2, 0), 3), ((0, 0, 0, 1), 4)])
@pytest.mark.parametrize("backend", ["milp", "data"])
def test_check_prints_a_witness_that_parses_back_meets_the_property_and_replays(tmp_path, codes, seed, backend):
    import fairspec

    pytest.importorskip("skops")
    est = _model(tmp_path, codes, seed)
    if backend == "data":
        import pandas as pd

        rows = [{"g": g, "h": str(h).lower(), "n": n, "y": 1} for g in CATS for h in (False, True) for n in range(4)]
        pd.DataFrame(rows).to_csv(tmp_path / "d.csv", index=False)
    for name, (lines, pred) in VARIANTS.items():
        text = _spec(tmp_path, lines, codes)
        if backend == "data":
            text = 'data d = csv("d.csv", label = y == 1)\n' + text.replace("features F {", "features F from d {")
            text = text[:-2] + "  using data\n}\n"
        (tmp_path / "s.fair").write_text(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = fairspec.check(tmp_path / "s.fair")["p"]
        truth = _truth(est, codes, pred)
        if backend == "milp":           # the enumeration decides it exactly
            assert v.status == ("violated" if truth else "holds"), (name, v.status, v.reason)
        else:                           # the flips find, never prove
            assert v.status in (("violated", "unknown") if truth else ("unknown",)), (name, v.status, v.reason)
        if v.status != "violated":
            continue
        fx, fy = _parsed(v.witness.features), _parsed(v.witness.features_prime)
        assert pred(fx, fy), (name, fx, fy)
        X = np.array([[codes[CATS.index(f["g"])], float(f["h"]), f["n"]] for f in (fx, fy)], dtype=float)
        assert np.array_equal(X, np.array([v.witness.x, v.witness.x_prime])), (name, X, v.witness)
        lab = est.predict(X)
        assert lab[0] != lab[1], (name, fx, fy)
