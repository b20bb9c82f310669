"""A further pre-condition the solvers / tree paths cannot read as a box (a category test, one side of a protected
feature, ``or``, ``not``, arithmetic, ``x.a`` against ``x'.a``): decided on its relaxation (kinds/pre_relax.py),
with the enumeration turned off (FAIRSPEC_ENUMERATE_PAIRS=0) so the MILP / z3 / the tree encodings decide. It was
``unknown`` ("decided by enumeration on a small discrete domain only"). Checked against brute force over every
ordered pair of the 60-point domain: a holds only where no pair meeting the pre-condition breaks the post (and
always where no pair of the relaxation does), a violated's witness meets the pre-condition exactly and breaks the
post, and a relaxation whose only counterexamples miss the pre-condition is ``unknown``, saying so. The network's
weights are dyadic with exact zeros, so logits tie exactly; tolerances are set at exact differences."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

DECLS = ("features F {\n  g : {A, B, C} protected\n  s : bool protected\n  a : int in [0, 9]\n}\n"
         'model m = onnx("m.onnx", score = logit)\n'
         "encode F for m {\n  g : onehot\n  s : raw\n  a : raw\n}\n")
G = {"A": 0, "B": 1, "C": 2}

# (except, require, predicate on (x, x'), kept part as a predicate on x (the relaxation's box))
CASES = [
    ("s", "x.s == true", lambda x, y: x["s"] == 1, lambda x: True),
    ("s", "x.a > 4 and x.g == B", lambda x, y: x["a"] > 4 and x["g"] == 1, lambda x: x["a"] > 4),
    ("s", "x.a >= 2 and (x.a < 4 or x.a > 7)", lambda x, y: x["a"] >= 2 and (x["a"] < 4 or x["a"] > 7),
     lambda x: x["a"] >= 2),
    ("s", "not (x.a < 7)", lambda x, y: not x["a"] < 7, lambda x: True),
    ("s", "x.a * 0.5 > 2 and x.a <= 8", lambda x, y: Fraction(x["a"], 2) > 2 and x["a"] <= 8, lambda x: x["a"] <= 8),
    ("g", "x.g == A and x'.g != A", lambda x, y: x["g"] == 0 and y["g"] != 0, lambda x: True),
    ("g", "x.a + x'.a >= 17", lambda x, y: x["a"] + y["a"] >= 17, lambda x: True),
    ("s", "x'.s == false and x.a < 3", lambda x, y: y["s"] == 0 and x["a"] < 3, lambda x: x["a"] < 3),
]


def _points():
    return [{"g": g, "s": s, "a": a} for g in range(3) for s in (0, 1) for a in range(10)]


def _X(pts):
    return np.array([[1.0 if p["g"] == k else 0.0 for k in range(3)] + [p["s"], p["a"]] for p in pts], dtype=np.float32)


def dyadic_net(path, seed: int):
    """A 5-6-1 ReLU network with weights on a grid of 1/4 (some exactly 0): logits tie exactly."""
    import onnx
    from onnx_nets import mlp_model

    rng = np.random.default_rng(seed)
    W1 = (np.round(rng.normal(size=(6, 5)) * 4) / 4).astype(np.float32)
    W1[:, :4] *= 3
    W1[rng.random(W1.shape) < 0.2] = 0.0
    b1 = (np.round(rng.normal(size=6) * 2) / 4).astype(np.float32)
    W2 = (np.round(rng.normal(size=(1, 6)) * 4) / 4).astype(np.float32)
    b2 = np.array([np.round(rng.normal() * 2) / 4], dtype=np.float32)
    m = mlp_model([(W1, b1, True), (W2, b2, False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    d = tmp_path_factory.mktemp("relax")
    dyadic_net(d / "m.onnx", 3)
    sess = ort.InferenceSession(str(d / "m.onnx"), providers=["CPUExecutionProvider"])
    z = sess.run(None, {"x": _X(_points())})[0].reshape(-1)
    return d, z


@pytest.fixture(scope="module")
def forest(tmp_path_factory):
    pytest.importorskip("skops")
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(5)
    X = np.vstack([_X(_points())] * 3).astype(np.float64)
    y = rng.integers(0, 2, size=X.shape[0])
    est = RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0).fit(X, y)
    d = tmp_path_factory.mktemp("relax_trees")
    sio.dump(est, d / "m.skops")
    return d, est


def _pairs(free, pred):
    """The ordered pairs (i, j) of the domain the pair's `except {free}` admits and ``pred`` keeps."""
    pts = _points()
    tied = [k for k in ("g", "s", "a") if k != free]
    return [(i, j) for i, j in itertools.product(range(len(pts)), repeat=2)
            if pts[i][free] != pts[j][free] and all(pts[i][k] == pts[j][k] for k in tied) and pred(pts[i], pts[j])]


def _point(feats):
    s = feats["s"]
    return {"g": G[feats["g"]], "s": {"false": 0, "true": 1}[s] if isinstance(s, str) else int(s), "a": int(feats["a"])}


def _spec(d, free, req, ensure, extra="", decls=DECLS):
    (d / "p.fair").write_text(decls + f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n"
                                      f"  require {req}\n  ensure {ensure}\n{extra}}}\n")
    from fairspec.pipeline import check

    (v,) = check(d / "p.fair").verdicts
    return v


def _judge(v, free, pred, kept, broken):
    """``broken(i, j)``: does the ordered pair break the post (brute force on the runtime)?"""
    pts = _points()
    meeting = _pairs(free, pred)
    relaxed = _pairs(free, lambda x, y: kept(x))
    truth = any(broken(i, j) for i, j in meeting)
    assert (v.details or {}).get("engine") != "enumeration"
    if v.status == "holds":
        assert v.how == "proved" and v.proof is not None and not truth, v.reason
        assert "a superset of the pairs meeting the pre-condition" in v.reason
    elif v.status == "violated":
        assert truth
        x, y = _point(v.witness.features), _point(v.witness.features_prime)
        i, j = pts.index(x), pts.index(y)
        assert pred(x, y) and (i, j) in meeting and broken(i, j), (x, y)
    if not any(broken(i, j) for i, j in relaxed):    # the relaxation holds: it is proved
        assert (v.status, v.how) == ("holds", "proved"), v.reason
    return truth


@pytest.mark.parametrize("backend", ["milp", "smt"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_solvers_decide_a_relaxed_pre_condition_as_brute_force_does(net, case, backend, monkeypatch):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = net
    free, req, pred, kept = CASES[case]
    lab = z > 0
    v = _spec(d, free, req, "label(m(x)) == label(m(x'))", f"  using {backend}\n")
    assert v.status != "unknown" or "does not meet" in v.reason, v.reason
    _judge(v, free, pred, kept, lambda i, j: lab[i] != lab[j])
    # logit at the largest difference over the pairs meeting it: `<=` holds there, `<` does not
    P = _pairs(free, pred)
    top = max(abs(Fraction(float(z[i])) - Fraction(float(z[j]))) for i, j in P)
    eps = float(top)
    assert Fraction(eps) == top == Fraction(repr(eps))      # dyadic: the float and its decimal are the same
    for op in ("<=", "<"):
        v = _spec(d, free, req, f"|logit(m(x)) - logit(m(x'))| {op} {eps!r}", f"  using {backend}\n")

        def broken(i, j, op=op):
            diff = abs(Fraction(float(z[i])) - Fraction(float(z[j])))
            return diff > top if op == "<=" else diff >= top
        _judge(v, free, pred, kept, broken)
        if op == "<":
            assert v.status in ("violated", "unknown"), v.reason


@pytest.mark.parametrize("backend", ["milp", "smt"])
@pytest.mark.parametrize("case", [0, 7])
def test_a_boolean_read_back_as_text_is_its_value_in_the_witness_check(net, case, backend, monkeypatch):
    """A boolean feature encoded `code` comes back from the model's input as the text "true" / "false"
    (encoding.decode_row): the witness check against the whole pre-condition read any text as true
    (``bool("false")``), so a pair whose x.s is false met `x.s == true` and was reported violated (soundness
    campaign, vacuous-solver 83000004: `x'.g == true` met by x'.g = false)."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = net
    free, req, pred, kept = CASES[case]
    lab = z > 0
    v = _spec(d, free, req, "label(m(x)) == label(m(x'))", f"  using {backend}\n",
              decls=DECLS.replace("s : raw", "s : code"))
    assert v.status != "unknown" or "does not meet" in v.reason, v.reason
    _judge(v, free, pred, kept, lambda i, j: lab[i] != lab[j])


def test_a_counterexample_that_misses_the_pre_condition_is_unknown_and_says_what_was_found(net, monkeypatch):
    """Every label flip of the relaxation lies where the pre-condition does not hold: no violated, no holds."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = net
    lab = z > 0
    pts = _points()
    flips = {pts[i]["a"] for i, j in _pairs("s", lambda x, y: True) if lab[i] != lab[j]}
    assert flips and len(flips) < 10
    calm = sorted(set(range(10)) - flips)
    req = " or ".join(f"x.a == {a}" for a in calm)
    v = _spec(d, "s", req, "label(m(x)) == label(m(x'))", "  using milp\n")
    assert v.status == "unknown", v.reason
    assert "does not meet the pre-condition" in v.reason and "not reported" in v.reason


def test_maximize_over_a_relaxation_is_an_upper_bound(net, monkeypatch):
    """maximize: the certified bound over the relaxation bounds the largest difference over the pairs meeting the
    pre-condition from above; no value is presented as that maximum without a witness that meets it."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = net
    free, req, pred, _ = CASES[1]
    P = _pairs(free, pred)
    best = max(abs(float(z[i]) - float(z[j])) for i, j in P)
    v = _spec(d, free, req, "|logit(m(x)) - logit(m(x'))| <= 100", "  using milp\n  mode = maximize\n")
    assert (v.status, v.how) == ("holds", "proved"), v.reason
    assert v.value is None and v.bound is not None and v.bound[1] >= best - 1e-6
    assert "upper bound" in v.details["maximum"]


@pytest.mark.parametrize("case", [0, 1, 3, 5, 7])
def test_a_forest_decides_a_relaxed_pre_condition_as_brute_force_does(forest, case, monkeypatch):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, est = forest
    free, req, pred, kept = CASES[case]
    lab = est.predict(_X(_points()).astype(np.float64)) == 1
    (d / "p.fair").write_text(DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")') +
                              f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n"
                              f"  require {req}\n  ensure label(m(x)) == label(m(x'))\n  using milp\n}}\n")
    from fairspec.pipeline import check

    (v,) = check(d / "p.fair").verdicts
    assert v.status != "unknown" or "does not meet" in v.reason or "superset" in v.reason, v.reason
    pts = _points()
    meeting = _pairs(free, pred)
    truth = any(lab[i] != lab[j] for i, j in meeting)
    if v.status == "holds":
        assert v.how == "proved" and not truth
    elif v.status == "violated":
        x, y = _point(v.witness.features), _point(v.witness.features_prime)
        assert pred(x, y) and (pts.index(x), pts.index(y)) in meeting and lab[pts.index(x)] != lab[pts.index(y)]


@pytest.mark.parametrize("req, said", [("x.a > 4", "shares of the box the pre-condition's bounds `x.a > 4` narrow"),
                                       ("x.a > 4 and x.g == B", "`x.g == B` not used")])
def test_partition_shares_say_they_are_shares_of_the_narrowed_box(net, req, said, monkeypatch):
    """Partitions under a further pre-condition split the box its tied int bounds narrow: the shares (and their
    summary, which the text report prints) say so, and what a relaxation did not use."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, _ = net
    v = _spec(d, "s", req, "label(m(x)) == label(m(x'))", "  using milp\n  partitions = 4\n")
    shares = v.details["coverage"]["shares"]
    assert said in shares["of"] and said in shares["summary"], shares


@pytest.mark.parametrize("case", list(range(len(CASES))) + ["tied"])
def test_a_forest_s_leaf_boxes_decide_with_the_whole_pre_condition_relaxed(forest, case, monkeypatch):
    """The leaf boxes (kinds/tree_boxes) take no pre-condition: a forest's prob post is decided with all of it
    relaxed -- tied int bounds too, which the tree encodings alone left unknown -- against its predict_proba, at
    the largest difference over the pairs meeting it (`<=` holds there unless a pair of the whole domain breaks
    it)."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, est = forest
    free, req, pred, kept = CASES[case] if case != "tied" else ("s", "x.a > 4", lambda x, y: x["a"] > 4, None)
    p = est.predict_proba(_X(_points()).astype(np.float64))[:, 1]
    meeting = _pairs(free, pred)
    # the threshold as written: its decimal (certify.exact.threshold_of), not the float it rounds to
    top = Fraction(repr(float(max(abs(Fraction(float(p[i])) - Fraction(float(p[j]))) for i, j in meeting))))
    whole = max(abs(Fraction(float(p[i])) - Fraction(float(p[j]))) for i, j in _pairs(free, lambda x, y: True))
    from fairspec.pipeline import check

    for op in ("<=", "<"):
        (d / "p.fair").write_text(DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")') +
                                  f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n"
                                  f"  require {req}\n  ensure |prob(m(x)) - prob(m(x'))| {op} {float(top)!r}\n"
                                  "  using milp\n}\n")
        (v,) = check(d / "p.fair").verdicts
        def breaks(i, j, op=op):
            diff = abs(Fraction(float(p[i])) - Fraction(float(p[j])))
            return diff > top if op == "<=" else diff >= top
        if v.status == "holds":
            assert v.how == "proved" and "a superset of the pairs meeting" in v.reason
            assert not any(breaks(i, j) for i, j in meeting)
        elif v.status == "violated":
            x, y = _point(v.witness.features), _point(v.witness.features_prime)
            i, j = _points().index(x), _points().index(y)
            diff = abs(Fraction(float(p[i])) - Fraction(float(p[j])))
            assert (i, j) in meeting and (diff > top if op == "<=" else diff >= top)
        else:       # the relaxation was decided and said so (it was "a further pre-condition" refused)
            assert "a superset of the pairs meeting" in v.reason, v.reason
        if op == "<=" and whole <= top:
            assert (v.status, v.how) == ("holds", "proved"), v.reason


@pytest.fixture(scope="module")
def forest3(tmp_path_factory):
    pytest.importorskip("skops")
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    X = _X(_points()).astype(np.float64)
    y = np.random.default_rng(7).integers(0, 3, size=X.shape[0] * 2)
    est = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=1).fit(np.vstack([X, X]), y)
    d = tmp_path_factory.mktemp("relax_trees3")
    sio.dump(est, d / "m.skops")
    return d, est


@pytest.mark.parametrize("post", ["class", "prob"])
@pytest.mark.parametrize("case", list(range(len(CASES))) + ["tied"])
def test_a_three_class_forest_decides_a_relaxed_pre_condition_on_its_cells(forest3, case, post, monkeypatch):
    """kinds/tree_outputs (class, prob(c)) under a pre-condition on a domain it does not enumerate: on the
    relaxation's cells, against the forest's predict / predict_proba over the pairs meeting it."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, est = forest3
    free, req, pred, _ = CASES[case] if case != "tied" else ("s", "x.a > 4", lambda x, y: x["a"] > 4, None)
    X = _X(_points()).astype(np.float64)
    if post == "class":
        out, ensure = est.predict(X), "class(m(x)) == class(m(x'))"

        def breaks(i, j):
            return out[i] != out[j]
    else:
        out, ensure = est.predict_proba(X)[:, 1], "|prob(m(x), 1) - prob(m(x'), 1)| <= 0.375"

        def breaks(i, j):
            return abs(Fraction(float(out[i])) - Fraction(float(out[j]))) > Fraction(3, 8)
    (d / "p.fair").write_text(DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")') +
                              f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n"
                              f"  require {req}\n  ensure {ensure}\n}}\n")
    from fairspec.pipeline import check

    (v,) = check(d / "p.fair").verdicts
    pts, meeting = _points(), _pairs(free, pred)
    if v.status == "holds":
        assert v.how == "proved" and "a superset of the pairs meeting" in v.reason
        assert not any(breaks(i, j) for i, j in meeting)
    elif v.status == "violated":
        x, y = _point(v.witness.features), _point(v.witness.features_prime)
        assert (pts.index(x), pts.index(y)) in meeting and breaks(pts.index(x), pts.index(y))
    else:
        assert "relaxation" in v.reason, v.reason
    if not any(breaks(i, j) for i, j in _pairs(free, lambda x, y: True)):
        assert (v.status, v.how) == ("holds", "proved"), v.reason


@pytest.mark.parametrize("free, req, want", [("s, z", "x.z > x'.z + 2", lambda a, b: (a, b) == (3, 0)),
                                             ("s", "x.z >= 2", lambda a, b: a == b and a >= 2)])
def test_a_solver_witness_names_a_feature_only_the_pre_condition_reads(net, free, req, want, monkeypatch):
    """z is declared but not encoded for the model: the solvers' pair has no value of it; the witness is given
    one of its domain that meets the pre-condition, and says it (as the enumeration's witness does)."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = net
    lab = z > 0
    decls = DECLS.replace("a : int in [0, 9]\n}", "a : int in [0, 9]\n  z : int in [0, 3]\n}")
    (d / "z.fair").write_text(decls + f"property q {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n"
                                      f"  require {req}\n  ensure label(m(x)) == label(m(x'))\n  using milp\n}}\n")
    from fairspec.pipeline import check

    (v,) = check(d / "z.fair").verdicts
    broken = any(lab[i] != lab[j] for i, j in _pairs("s", lambda x, y: True))
    assert v.status == ("violated" if broken else "holds"), v.reason
    if broken:
        assert want(v.witness.features["z"], v.witness.features_prime["z"]), v.witness


def test_maximize_s_value_comes_only_from_a_pair_meeting_the_pre_condition(net, monkeypatch):
    """maximize under a relaxed pre-condition: a violated's value is its witness's measure, the witness meeting
    the pre-condition (x.s == true: the pair in the order that meets it), below the certified upper bound; where
    the relaxation's best pair misses it (not (x.a < 7)), unknown with no value, the upper bound kept."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = net
    pts = _points()
    for case in (0, 3):
        free, req, pred, _ = CASES[case]
        P = _pairs(free, pred)
        best = max(abs(Fraction(float(z[i])) - Fraction(float(z[j]))) for i, j in P)
        v = _spec(d, free, req, "|logit(m(x)) - logit(m(x'))| <= 0.125", "  using milp\n  mode = maximize\n")
        if v.status == "violated":
            x, y = _point(v.witness.features), _point(v.witness.features_prime)
            assert (pts.index(x), pts.index(y)) in P and pred(x, y)
            assert Fraction(v.value) <= best <= Fraction(v.bound[1])
        else:
            assert v.status == "unknown" and v.value is None and "does not meet" in v.reason, v.reason
            assert v.bound is None or Fraction(v.bound[1]) >= best
        if case == 0:
            assert v.status == "violated", v.reason


F = Fraction
_UP3 = float(np.nextafter(0.3, 1)) if F(0.3) < F("0.3") else 0.3


@pytest.mark.parametrize("req, box, meets", [
    ("x.score > 0.5", (0.5, 1.0), lambda a, b: a > F("0.5")),             # dyadic: the float is the decimal
    ("x.score >= 0.9", (float(np.nextafter(0.9, 0)), 1.0), lambda a, b: a >= F("0.9")),  # float(0.9) > 9/10
    ("x.score < 0.1", (0.0, 0.1), lambda a, b: a < F("0.1")),             # float(0.1) > 1/10: itself
    ("x'.score <= 0.3", (0.0, _UP3), lambda a, b: b <= F("0.3")),          # float(0.3) < 3/10: the next float up
    ("0.25 < x.score and x.score < 0.75", (0.25, 0.75), lambda a, b: F("0.25") < a < F("0.75")),
    ("x.score == 0.7", (float(np.nextafter(0.7, 0)) if F(0.7) > F("0.7") else 0.7,
                        0.7 if F(0.7) > F("0.7") else float(np.nextafter(0.7, 1))), lambda a, b: a == F("0.7")),
])
def test_a_bound_on_a_tied_real_narrows_the_box_to_its_closed_hull_rounded_outward(tmp_path, req, box, meets):
    """A bound on a real the pair ties is no exact box (`>` is open, a decimal no float): the relaxation keeps its
    closed hull, each end the float at or beyond the constant in both readings, so the box holds every pair meeting
    it; the claim says so, and a witness meets the bound as written."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_no_pair import _spec

    from fairspec.kinds.pre_relax import _conjuncts, real_hull
    from fairspec.pipeline import check, lint

    res = lint(_spec(tmp_path, f"require {req}"))
    (prop,) = res.spec.properties
    fs = res.spec.feature_sets[0]

    class Enc:
        columns = [type("C", (), {"feature": f.name, "kind": "raw"})() for f in fs.features]
    (got,) = real_hull(prop, fs, Enc, [a for e in prop.pre for a in _conjuncts(e)])
    assert got == ("score", *box)
    for q in (F(t) for t in req.replace("x'.", "x.").split() if t[0].isdigit()):
        assert F(got[1]) <= q <= F(got[2])
    (v,) = check(_spec(tmp_path, f"require {req}")).verdicts
    if v.status == "holds" and "no pair meets" in (v.reason or ""):
        return
    assert v.status in ("holds", "violated") and "score in [" in v.reason, v.reason
    if v.status == "violated":
        a, b = F(v.witness.features["score"]), F(v.witness.features_prime["score"])
        assert a == b and meets(a, b), (a, b)


@pytest.fixture(scope="module")
def grades(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    import onnx
    from onnx_nets import mlp_model

    d = tmp_path_factory.mktemp("relax_mc")
    rng = np.random.default_rng(0)
    W1 = rng.integers(-4, 5, (6, 4)) / 4.0
    b1 = rng.integers(-2, 3, 6) / 4.0
    fair = W1.copy()
    fair[:, 2:] = 0.0                         # the one-hot sex columns read by no neuron
    W2 = rng.integers(-4, 5, (3, 6)) / 4.0
    for name, w, b2 in (("grade", W1, rng.integers(-1, 2, 3) / 4.0), ("fairgrade", fair, np.zeros(3))):
        m = mlp_model([(w, b1, True), (W2, b2, False)], "Identity", "logits", batch="N")
        m.ir_version = 8
        onnx.save(m, str(d / f"{name}.onnx"))
    return d


@pytest.mark.parametrize("model", ["grade", "fairgrade"])
@pytest.mark.parametrize("req, pred", [("x.b > 10 or x.a == 2", lambda x, y: x["b"] > 10 or x["a"] == 2),
                                       ("x.sex == F and x.a <= 1", lambda x, y: x["sex"] == 0 and x["a"] <= 1),
                                       ("x.a + x.b >= 40", lambda x, y: x["a"] + x["b"] >= 40)])
def test_a_network_s_class_post_decides_a_relaxed_pre_condition(grades, model, req, pred, monkeypatch):
    """kinds/multi_pairs (a three-class network's class post) under a pre-condition the lowering does not read:
    on its relaxation, against onnxruntime's argmax over the pairs meeting it."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    from fairspec.pipeline import check

    pts = [{"a": a, "b": b, "sex": s} for a in range(4) for b in range(50) for s in range(2)]
    X = np.array([[p["a"], p["b"], 1.0 - p["sex"], float(p["sex"])] for p in pts], dtype=np.float32)
    sess = ort.InferenceSession(str(grades / f"{model}.onnx"), providers=["CPUExecutionProvider"])
    cls = np.argmax(sess.run(None, {sess.get_inputs()[0].name: X})[0], axis=1)
    idx = {(p["a"], p["b"], p["sex"]): k for k, p in enumerate(pts)}
    meeting = [(i, idx[(p["a"], p["b"], 1 - p["sex"])]) for i, p in enumerate(pts)
               if pred(p, pts[idx[(p["a"], p["b"], 1 - p["sex"])]])]
    (grades / "s.fair").write_text(
        "features F {\n  a : int in [0, 3]\n  b : int in [0, 49]\n  sex : {F, M} protected\n}\n"
        f'model g = onnx("{model}.onnx")\nencode F for g {{ a : raw  b : raw  sex : onehot }}\n'
        f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{sex}}\n  require {req}\n"
        "  ensure class(g(x)) == class(g(x'))\n  using milp\n}\n")
    (v,) = check(grades / "s.fair").verdicts
    truth = any(cls[i] != cls[j] for i, j in meeting)
    if v.status == "holds":
        assert v.how == "proved" and not truth and "a superset of the pairs meeting" in v.reason
    elif v.status == "violated":
        w = v.witness
        p = {"a": int(w.features["a"]), "b": int(w.features["b"]), "sex": "FM".index(w.features["sex"])}
        q = {"a": int(w.features_prime["a"]), "b": int(w.features_prime["b"]), "sex": "FM".index(w.features_prime["sex"])}
        assert (idx[tuple(p.values())], idx[tuple(q.values())]) in meeting and cls[idx[tuple(p.values())]] != \
            cls[idx[tuple(q.values())]]
    else:
        assert "relaxation" in v.reason, v.reason
    if model == "fairgrade":
        assert (v.status, v.how) == ("holds", "proved"), v.reason


# -- the relaxation decided by the small-domain enumeration (the default: FAIRSPEC_ENUMERATE_PAIRS unset) ----------

REQ_UNREAD = "x.a >= 1 and (x.a == 9 or x.r > 2)"     # r: read by no model, so the original is not enumerated


def _softmax_net(path):
    """A 5-6-3 ReLU network with a softmax output ``p`` (dyadic weights)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    W1 = (np.round(rng.normal(size=(6, 5)) * 4) / 4).astype(np.float32)
    b1 = (np.round(rng.normal(size=6) * 2) / 4).astype(np.float32)
    W2 = (np.round(rng.normal(size=(3, 6)) * 4) / 4).astype(np.float32)
    b2 = (np.round(rng.normal(size=3) * 2) / 4).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["z"], transB=1),
             helper.make_node("Softmax", ["z"], ["p"], axis=1)]
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


def _largest(out, points, tied, pred):
    """The largest |out[i] - out[j]| over the ordered pairs differing in s only whose x meets ``pred``."""
    idx = {tuple(p[k] for k in ("s", *tied)): i for i, p in enumerate(points)}
    return max(abs(Fraction(float(out[i])) - Fraction(float(out[idx[(1 - p["s"], *(p[k] for k in tied))]])))
               for i, p in enumerate(points) if pred(p))


def _enumerated(d, decls, req, ensure, extra):
    (d / "e.fair").write_text(decls + f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n"
                                      f"  require {req}\n  ensure {ensure}\n  using milp\n{extra}}}\n")
    from fairspec.pipeline import check

    (v,) = check(d / "e.fair").verdicts
    return v


def _relaxed_enumeration(v, truth, meeting: int):
    """``v`` decided the relaxation by enumeration, read back: its maximum contains ``truth`` (the largest
    measure over the pairs meeting the pre-condition) or is an upper bound only; its claims count the relaxed
    pre-condition's pairs as those, not as the ``meeting`` pairs of the property's."""
    assert (v.proof.method if v.proof is not None else (v.details or {}).get("engine")) == "enumeration", v.details
    assert "a superset of the pairs meeting the pre-condition" in v.reason, v.reason
    if v.bound is not None:
        lo, hi = v.bound
        assert Fraction(hi) >= truth, (v.bound, truth)
        assert v.value is None and lo == -math.inf or Fraction(lo) <= truth <= Fraction(hi), (v.value, v.bound)
    if v.proof is not None:
        assert "meeting the pre-condition" not in v.proof.claim and "the relaxed pre-condition `x.a >= 1`" in \
            v.proof.claim, v.proof.claim
        assert f"{meeting} " not in v.proof.claim
    assert "pairs meeting the pre-condition of" not in v.reason, v.reason


@pytest.mark.parametrize("mode", ["maximize", "prove"])
def test_an_enumerated_relaxation_of_a_network_s_logit_is_read_back(net, tmp_path, mode, monkeypatch):
    """Review rev4 c1: the relaxed property (`x.a >= 1`) enumerated, its maximum 8.625 was reported as the
    property's, proved, with a bound [8.625, 8.625] that misses the true 5.8125 over the 6 pairs with a = 9."""
    monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    d, z = net
    (tmp_path / "m.onnx").write_bytes((d / "m.onnx").read_bytes())
    decls = DECLS.replace("  a : int in [0, 9]\n", "  a : int in [0, 9]\n  r : real in [0, 1]\n")
    truth = _largest(z, _points(), ("g", "a"), lambda p: p["a"] == 9)
    assert truth == Fraction(93, 16)
    eps, extra = (100, "  mode = maximize\n") if mode == "maximize" else (9, "")
    v = _enumerated(tmp_path, decls, REQ_UNREAD, f"|logit(m(x)) - logit(m(x'))| <= {eps}", extra)
    assert (v.status, v.how) == ("holds", "proved"), v.reason
    _relaxed_enumeration(v, truth, 6)
    if mode == "maximize":
        assert v.bound is not None and v.value is None


def test_an_enumerated_relaxation_of_a_forest_s_prob_is_read_back(forest, tmp_path, monkeypatch):
    """Review rev4 c2: a forest's prob maximum over the relaxation (tree_pairs' enumeration) is an upper bound."""
    monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    d, est = forest
    (tmp_path / "m.skops").write_bytes((d / "m.skops").read_bytes())
    decls = DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")').replace(
        "  a : int in [0, 9]\n", "  a : int in [0, 9]\n  r : real in [0, 1]\n")
    P = est.predict_proba(_X(_points()).astype(np.float64))[:, 1]
    truth = _largest(P, _points(), ("g", "a"), lambda p: p["a"] == 9)
    v = _enumerated(tmp_path, decls, REQ_UNREAD, "|prob(m(x)) - prob(m(x'))| <= 1", "  mode = maximize\n")
    assert (v.status, v.how) == ("holds", "proved"), v.reason
    _relaxed_enumeration(v, truth, 6)
    assert v.bound is not None and v.value is None


def test_an_enumerated_relaxation_of_a_three_class_network_s_prob_is_read_back(tmp_path, monkeypatch):
    """Review rev4 c4: prob(m(x), 1) of a softmax network (kinds/multi_pairs' enumeration): its bound's lower
    end was the relaxation's, above the true maximum."""
    monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    _softmax_net(tmp_path / "m.onnx")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    P = sess.run(None, {"x": _X(_points())})[0][:, 1]
    truth = _largest(P, _points(), ("g", "a"), lambda p: p["a"] == 9)
    decls = DECLS.replace('score = logit', 'output = "p", score = prob').replace(
        "  a : int in [0, 9]\n", "  a : int in [0, 9]\n  r : real in [0, 1]\n")
    v = _enumerated(tmp_path, decls, REQ_UNREAD, "|prob(m(x), 1) - prob(m(x'), 1)| <= 1", "  mode = maximize\n")
    assert (v.status, v.how) == ("holds", "proved"), v.reason
    _relaxed_enumeration(v, truth, 6)


@pytest.mark.parametrize("eps", [100, 5])
def test_an_enumerated_relaxation_with_two_unread_ints_is_read_back(net, tmp_path, eps, monkeypatch):
    """Review rev4 c7: two ints only the pre-condition reads make the original too large to enumerate (a in
    [0, 99]); the relaxation (`x.a >= 1`, 594 pairs) is: its maximum 8.625 is an upper bound of the 6 pairs'
    5.8125; at eps 5 (truly violated, by a pair with a = 9) never holds, a violated's witness meets it."""
    monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    d, _ = net
    (tmp_path / "m.onnx").write_bytes((d / "m.onnx").read_bytes())
    pts = [{"g": g, "s": s, "a": a} for g in range(3) for s in (0, 1) for a in range(100)]
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    z = sess.run(None, {"x": _X(pts)})[0].reshape(-1)
    truth = _largest(z, pts, ("g", "a"), lambda p: p["a"] == 9)
    decls = DECLS.replace("  a : int in [0, 9]\n", "  a : int in [0, 99]\n  u1 : int in [0, 59]\n"
                                                   "  u2 : int in [0, 59]\n")
    v = _enumerated(tmp_path, decls, "x.a >= 1 and (x.a == 9 or x.u1 > 500) and x.u2 >= 0",
                    f"|logit(m(x)) - logit(m(x'))| <= {eps}", "  mode = maximize\n")
    if eps == 100:
        assert (v.status, v.how) == ("holds", "proved"), v.reason
    assert v.status != "holds" or truth <= eps
    if v.status == "violated":
        assert int(v.witness.features["a"]) == 9
    _relaxed_enumeration(v, truth, 6)


def test_a_violated_maximum_whose_witness_is_not_the_relaxation_s_largest_keeps_the_upper_bound_only(net, tmp_path):
    """pre_relax.finish on the enumeration's violated maximum where its witness is not the relaxation's largest
    pair (details.domain_maximum: the largest is a pair another batch may round away): that pair may miss the
    pre-condition, so its measure is no lower end of the property's maximum; the witness (meeting it) is kept."""
    from fairspec.kinds.pre_relax import finish, relax
    from fairspec.sema.check import check_file
    from fairspec.verdict import Verdict, Witness

    (tmp_path / "m.onnx").write_bytes((net[0] / "m.onnx").read_bytes())
    (tmp_path / "p.fair").write_text(
        DECLS.replace("  a : int in [0, 9]\n", "  a : int in [0, 9]\n  u : int in [0, 3]\n") +
        "property p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n"
        "  require x.a >= 1 and (x.a == 9 or x.u > 2)\n  ensure |logit(m(x)) - logit(m(x'))| <= 1\n  mode = maximize\n}\n")
    res = check_file(tmp_path / "p.fair")
    spec = res.spec
    (prop,) = spec.properties
    fs, enc = spec.feature_set(prop.features), spec.encoding_for(prop.model)
    rel = relax(prop, fs, enc)
    assert [str(e) for e in rel.kept] and rel.dropped
    w = Witness((0.0, 1.0, 0.0, 0.0, 9.0), (0.0, 1.0, 0.0, 1.0, 9.0), {"g": "B", "s": False, "a": 9},
                {"g": "B", "s": True, "a": 9}, (1.0, -1.5), replayed_by="onnxruntime")
    for extra, lower in (({"witness_value": 2.5, "domain_maximum": 4.0}, None), ({}, 2.5)):
        value = 4.0 if extra else 2.5
        v = Verdict("p", prop.kind, "violated", value=value, bound=(value, 4.5), witness=w, backend="milp",
                    details={"engine": "enumeration", "pre_condition": "admissible ordered pairs meeting x", **extra})
        got = finish(prop, rel, v, fs, enc, "milp", 0.0)
        assert got.status == "violated" and got.witness.features["a"] == 9
        if lower is None:
            assert got.value is None and got.bound == (-math.inf, 4.5), (got.value, got.bound)
            assert "another pair's" in got.details["maximum"]
        else:
            assert got.value == 2.5 and got.bound == (2.5, 4.5)
        assert isinstance(got.details["pre_condition"], dict)


@pytest.mark.parametrize("req", ["(x.a + 1) * 2 > 3 or x.g == C", "x.a - (x'.a - 2) >= 1 and not (x.s == true)",
                                 "x.a / 2 < 3 and (x.g in {A, B} or x.a * 3 - 1 <= x'.a)"])
def test_a_pre_condition_printed_in_a_reason_parses_back_to_the_same_condition(tmp_path, req):
    """The conjuncts named in a relaxation's reason (pre_relax.text) are fairspec: written back into the spec
    they give the same IR (arithmetic nested as written, categories by name)."""
    from fairspec.kinds.pre_relax import text
    from fairspec.pipeline import lint

    dyadic_net(tmp_path / "m.onnx", 0)

    def pre_of(r):
        _spec(tmp_path, "s", r, "label(m(x)) == label(m(x'))")
        res = lint(tmp_path / "p.fair")
        assert res.spec is not None, [d.message for d in res.diagnostics]
        (prop,) = res.spec.properties
        return prop.pre, res.spec.feature_set(prop.features)

    pre, fs = pre_of(req)
    printed = " and ".join(text(e, fs) for e in pre)
    assert pre_of(printed)[0] == pre, (req, printed)
