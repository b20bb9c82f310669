"""A small-domain individual-fairness property whose further pre-condition has a non-dyadic constant
(``x.a * 0.3 >= 0.9``) read two ways -- the float each constant is stored as, and the decimal it is written as
(README, further conditions) -- decided where both readings give one verdict (session 33; it was `unknown`
wherever the readings admitted different pairs, kinds/pair_pre.py).

The rule (kinds/pair_enumeration.decide_small with PairPre(readings=True)): each reading admits its own set of
ordered pairs; certify's enumeration proof is over their union, so ``holds (proved)`` holds in both readings;
``violated`` only with a witness admitted in BOTH readings that breaks the post on the runtime; otherwise
``unknown`` naming where the readings part. Checked here against a brute force that reads every constant
both ways in Fractions, over small ONNX networks with dyadic weights and the runtime's own float32 outputs."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).parent))
from onnx_nets import mlp_model  # noqa: E402

FLOAT, DECIMAL = 0, 1
OPS = {"<": lambda u, v: u < v, "<=": lambda u, v: u <= v, ">": lambda u, v: u > v, ">=": lambda u, v: u >= v,
       "==": lambda u, v: u == v}


def _read(text: str, reading: int) -> Fraction:
    return Fraction(float(text)) if reading == FLOAT else Fraction(text)


def _cond(rng):
    """(text, fn(a, a', reading) -> bool): a bound of x.a or x'.a with non-dyadic constants near a value of the
    domain, where the readings may part (``x.a * 0.3 >= 0.9`` at a = 3: 3 * float(0.3) < float(0.9))."""
    op = str(rng.choice(list(OPS)))
    side = int(rng.integers(0, 2))
    v = ("x", "x'")[side]
    k = int(rng.integers(0, 10))
    form = int(rng.integers(0, 4))
    cmp = OPS[op]
    pick = (lambda a, b: a) if side == 0 else (lambda a, b: b)
    if form == 0:
        c = repr(k / 10)
        return f"{v}.a * 0.1 {op} {c}", lambda a, b, r: cmp(pick(a, b) * _read("0.1", r), _read(c, r))
    if form == 1:
        c = repr(round(0.3 * k, 10))
        return f"{v}.a * 0.3 {op} {c}", lambda a, b, r: cmp(pick(a, b) * _read("0.3", r), _read(c, r))
    if form == 2:
        c = repr(round(0.7 * k, 10))
        return f"{v}.a * 0.7 {op} {c}", lambda a, b, r: cmp(pick(a, b) * _read("0.7", r), _read(c, r))
    d = str(rng.choice(["0.1", "0.2", "0.3"]))
    return (f"x.a * 0.1 {op} x'.a * 0.1 + {d}",
            lambda a, b, r: cmp(a * _read("0.1", r), b * _read("0.1", r) + _read(d, r)))


def _net(path: Path, rng) -> np.ndarray:
    """A 2-h-1 ReLU network of dyadic weights on inputs (s, a); its float32 logits at every point (s, a)."""
    h = int(rng.integers(2, 5))
    W1 = rng.integers(-8, 9, size=(h, 2)) / 4.0
    b1 = rng.integers(-8, 9, size=h) / 4.0
    W2 = rng.integers(-8, 9, size=(1, h)) / 8.0
    m = mlp_model([(W1, b1, True), (W2, np.zeros(1), False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(path))
    X = np.array([[s, a] for s in (0, 1) for a in range(10)], np.float32)
    z = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": X})[0].reshape(-1)
    return z.astype(np.float64)


SPEC = """features F {
  s : bool protected
  a : int in [0, 9]
}
model m = onnx("m.onnx", score = logit)
encode F for m {
  s : raw
  a : raw
}
property p {
  forall x, x' : F
  require x.* == x'.* except {s}
  require |x.a - x'.a| <= 1
  REQ
  ensure POST
}
"""


def _truth(z, conds, eps: Fraction | None):
    """(verdict each reading gives, the pairs violating in both readings, whether the readings admit different
    pairs) by brute force: points (s, a) at index s * 10 + a; ``eps`` None: the label post (z > 0, the logit
    head's label)."""
    pts = [(s, a) for s in (0, 1) for a in range(10)]
    admitted = [set(), set()]
    for i, (s, a) in enumerate(pts):
        for j, (s2, a2) in enumerate(pts):
            if s == s2 or abs(a - a2) > 1:
                continue
            for r in (FLOAT, DECIMAL):
                if all(fn(Fraction(a), Fraction(a2), r) for _, fn in conds):
                    admitted[r].add((i, j))
    bad = {(i, j) for i, j in admitted[0] | admitted[1]
           if ((z[i] > 0) != (z[j] > 0) if eps is None else abs(Fraction(z[i]) - Fraction(z[j])) > eps)}
    per = ["violated" if bad & admitted[r] else "holds" for r in (FLOAT, DECIMAL)]
    return per, bad & admitted[0] & admitted[1], admitted[0] != admitted[1], pts


def _expected(per, both_bad) -> str:
    if per == ["holds", "holds"]:
        return "holds"
    return "violated" if both_bad else "unknown"


@pytest.mark.parametrize("seed", range(40))
def test_both_readings_against_brute_force(tmp_path, seed):
    from fairspec.pipeline import check

    rng = np.random.default_rng([33, seed])
    z = _net(tmp_path / "m.onnx", rng)
    eps = str(rng.choice(["0.25", "0.5", "1", "2", "label"]))
    post = "label(m(x)) == label(m(x'))" if eps == "label" else f"|logit(m(x)) - logit(m(x'))| <= {eps}"
    eps = None if eps == "label" else Fraction(eps)
    for _ in range(100):            # three seeds in four: conditions whose readings admit different pairs
        conds = [_cond(rng) for _ in range(int(rng.integers(1, 3)))]
        if seed % 4 == 0 or _truth(z, conds, eps)[2]:
            break
    (tmp_path / "p.fair").write_text(SPEC.replace("REQ", "\n  ".join(f"require {t}" for t, _ in conds))
                                     .replace("POST", post))
    per, both_bad, parted, pts = _truth(z, conds, eps)
    (v,) = check(tmp_path / "p.fair").verdicts
    want = _expected(per, both_bad)
    assert v.details.get("engine") == "enumeration" or "no pair" in (v.reason or ""), (v.details, v.reason)
    if want == "holds":
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, (per, v.status, v.reason)
    elif want == "violated":
        assert v.status == "violated", (per, v.status, v.reason)
        w = (int(v.witness.features["s"]), int(v.witness.features["a"]))
        wp = (int(v.witness.features_prime["s"]), int(v.witness.features_prime["a"]))
        assert (pts.index(w), pts.index(wp)) in both_bad, (w, wp)     # in the order that meets both readings
    else:
        assert v.status == "unknown" and "enumeration does not choose one reading" in v.reason, v.reason
    return want, parted


def test_readings_part_and_agree_on_holds(tmp_path):
    """x.a * 0.3 >= 0.9 admits a = 3 as written and not as stored (3 * float(0.3) < float(0.9)); a network
    constant in a holds in both readings (every pair of either set within eps): holds (proved), the proof's
    claim about the pairs meeting it in either reading."""
    from fairspec.pipeline import check

    assert 3 * Fraction(0.3) < Fraction(0.9) and 3 * Fraction(3, 10) >= Fraction(9, 10)
    m = mlp_model([(np.array([[0.5, 0.0]]), np.zeros(1), False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    (tmp_path / "p.fair").write_text(SPEC.replace("REQ", "require x.a * 0.3 >= 0.9").replace("POST", "|logit(m(x)) - logit(m(x'))| <= 0.5"))
    (v,) = check(tmp_path / "p.fair").verdicts
    assert v.status == "holds" and v.how == "proved", v.reason
    assert "either reading" in v.proof.claim, v.proof.claim


def _tree(path: Path, rng):
    """A random DecisionTreeClassifier on (s, a): its labels (predict) and probabilities of class 1 at every point."""
    skops = pytest.importorskip("skops.io")
    from sklearn.tree import DecisionTreeClassifier

    X = np.array([[s, a] for s in (0, 1) for a in range(10)] * 3, float)
    y = rng.integers(0, 2, size=len(X))
    y[:2] = (0, 1)
    est = DecisionTreeClassifier(max_depth=int(rng.integers(2, 5)), random_state=0).fit(X, y)
    skops.dump(est, path)
    return est.predict(X[:20]).astype(np.float64) - 0.5, est.predict_proba(X[:20])[:, 1]


def _regression_tree(path: Path, rng):
    """A random DecisionTreeRegressor on (s, a) and its values at every point (kinds/tree_outputs.py's post)."""
    skops = pytest.importorskip("skops.io")
    from sklearn.tree import DecisionTreeRegressor

    X = np.array([[s, a] for s in (0, 1) for a in range(10)] * 3, float)
    est = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, rng.integers(0, 8, size=len(X)) / 8.0)
    skops.dump(est, path)
    return est.predict(X[:20])


@pytest.mark.parametrize("seed", range(24))
def test_a_tree_model_s_readings_against_brute_force(tmp_path, seed):
    """The same rule on tree models' enumeration (kinds/tree_pairs.py: label and prob of a classifier;
    kinds/tree_outputs.py: a regressor's value, one seed in three)."""
    from fairspec.pipeline import check

    rng = np.random.default_rng([34, seed])
    lab, prob = _tree(tmp_path / "m.skops", rng)
    label = seed % 2 == 0 and seed % 3 != 2
    text = str(rng.choice(["0.125", "0.25", "0.5"]))
    eps = None if label else Fraction(text)
    post = "label(m(x)) == label(m(x'))" if label else f"|prob(m(x)) - prob(m(x'))| <= {text}"
    if seed % 3 == 2:
        prob = _regression_tree(tmp_path / "m.skops", rng)
        post = f"|value(m(x)) - value(m(x'))| <= {text}"
    z = lab if label else prob
    for _ in range(100):
        conds = [_cond(rng) for _ in range(int(rng.integers(1, 3)))]
        if seed % 4 == 1 or _truth(z, conds, None)[2]:
            break
    spec = SPEC.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")')
    (tmp_path / "p.fair").write_text(spec.replace("REQ", "\n  ".join(f"require {t}" for t, _ in conds))
                                     .replace("POST", post))
    if label:
        per, both_bad, parted, pts = _truth(z, conds, None)
    else:   # |p - p'| > eps, exactly
        per, both_bad, parted, pts = _truth_prob(prob, conds, eps)
    (v,) = check(tmp_path / "p.fair").verdicts
    want = _expected(per, both_bad)
    if want == "holds":
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, (per, v.status, v.reason)
    elif want == "violated":
        assert v.status == "violated", (per, v.status, v.reason)
        w = (int(v.witness.features["s"]), int(v.witness.features["a"]))
        wp = (int(v.witness.features_prime["s"]), int(v.witness.features_prime["a"]))
        assert (pts.index(w), pts.index(wp)) in both_bad, (w, wp)
    else:
        assert v.status == "unknown" and "enumeration does not choose one reading" in v.reason, v.reason
    return want, parted


def _truth_prob(p, conds, eps: Fraction):
    """_truth for |prob - prob'| <= eps: a pair breaks it when its exact difference exceeds eps."""
    pts = [(s, a) for s in (0, 1) for a in range(10)]
    admitted = [set(), set()]
    for i, (s, a) in enumerate(pts):
        for j, (s2, a2) in enumerate(pts):
            if s != s2 and abs(a - a2) <= 1:
                for r in (FLOAT, DECIMAL):
                    if all(fn(Fraction(a), Fraction(a2), r) for _, fn in conds):
                        admitted[r].add((i, j))
    bad = {(i, j) for i, j in admitted[0] | admitted[1] if abs(Fraction(float(p[i])) - Fraction(float(p[j]))) > eps}
    per = ["violated" if bad & admitted[r] else "holds" for r in (FLOAT, DECIMAL)]
    return per, bad & admitted[0] & admitted[1], admitted[0] != admitted[1], pts


def _admitted(conds):
    """Each reading's admitted ordered pairs (i, j) of the points (s, a) at s * 10 + a."""
    pts = [(s, a) for s in (0, 1) for a in range(10)]
    admitted = [set(), set()]
    for i, (s, a) in enumerate(pts):
        for j, (s2, a2) in enumerate(pts):
            if s != s2 and abs(a - a2) <= 1:
                for r in (FLOAT, DECIMAL):
                    if all(fn(Fraction(a), Fraction(a2), r) for _, fn in conds):
                        admitted[r].add((i, j))
    return admitted


def _check_maximum(v, maxima):
    """A maximize verdict against each reading's exact maximum (-inf: no pair): equal, that value in its
    interval; else no value, an interval holding both, the reason naming each."""
    import math

    lo, hi = (None, None) if v.bound is None else v.bound
    if maxima[0] == maxima[1]:
        T = maxima[0]
        if T == -math.inf:
            assert v.value == -math.inf or v.value is None, (v.value, v.bound)
            return
        # the value: at most the nearest float of T (a tree's is that nearest float: exact_maximum; judge.py's rule)
        assert v.value is not None and Fraction(v.value) <= Fraction(float(T)), (v.value, T)
        assert lo is not None and Fraction(lo) <= T <= Fraction(hi), (v.bound, T)
        return
    assert v.value is None, (v.value, maxima)
    assert v.details["maximum"].startswith("no value"), v.details["maximum"]
    assert lo is not None, (v.bound, v.details)
    for T in maxima:
        assert (lo == -math.inf or Fraction(lo) <= T) and (T == -math.inf or T <= Fraction(hi)), (v.bound, maxima)
    for n in ("float", "decimal"):
        assert f"the {n} reading's largest difference is" in v.reason or f"the {n} reading admits no pair" in v.reason


@pytest.mark.parametrize("seed", range(32))
def test_maximize_where_the_readings_part(tmp_path, seed):
    """mode = maximize (kinds/pre_readings.py): the verdict as prove's (its witness in both readings), each
    reading's exact maximum by brute force (the logit post's |z - z'|, the label post's min(z, -z'), in
    Fractions) inside the reported interval; one value only where both readings' maxima are one."""
    import math

    from fairspec.pipeline import check

    rng = np.random.default_rng([35, seed])
    z = _net(tmp_path / "m.onnx", rng)
    eps = str(rng.choice(["0.25", "0.5", "1", "2", "label"]))
    post = "label(m(x)) == label(m(x'))" if eps == "label" else f"|logit(m(x)) - logit(m(x'))| <= {eps}"
    eps = None if eps == "label" else Fraction(eps)
    for _ in range(100):
        conds = [_cond(rng) for _ in range(int(rng.integers(1, 3)))]
        if seed % 8 == 0 or _truth(z, conds, eps)[2]:
            break
    (tmp_path / "p.fair").write_text(SPEC.replace("REQ", "\n  ".join(f"require {t}" for t, _ in conds))
                                     .replace("POST", post).replace("  ensure", "  mode = maximize\n  ensure"))
    per, both_bad, parted, pts = _truth(z, conds, eps)
    zf = [Fraction(float(x)) for x in z]
    measure = ((lambda i, j: max(min(zf[i], -zf[j]), min(zf[j], -zf[i]))) if eps is None else
               (lambda i, j: abs(zf[i] - zf[j])))
    maxima = [max((measure(i, j) for i, j in adm), default=-math.inf) for adm in _admitted(conds)]
    (v,) = check(tmp_path / "p.fair").verdicts
    want = _expected(per, both_bad)
    assert v.status == ("unknown" if want == "unknown" else want), (per, v.status, v.reason)
    if want == "holds":
        assert v.how == "proved" and v.proof is not None
    if want == "violated":
        w = (int(v.witness.features["s"]), int(v.witness.features["a"]))
        wp = (int(v.witness.features_prime["s"]), int(v.witness.features_prime["a"]))
        assert (pts.index(w), pts.index(wp)) in both_bad, (w, wp)
    _check_maximum(v, maxima)
    return parted, maxima


@pytest.mark.parametrize("seed", range(16))
def test_a_tree_model_s_maximize_where_the_readings_part(tmp_path, seed):
    """The same on tree models: a DecisionTreeClassifier's prob (kinds/tree_pairs.py), a regressor's value
    (kinds/tree_outputs.py, odd seeds)."""
    import math

    from fairspec.pipeline import check

    rng = np.random.default_rng([36, seed])
    _, prob = _tree(tmp_path / "m.skops", rng)
    text = str(rng.choice(["0.125", "0.25", "0.5"]))
    post = f"|prob(m(x)) - prob(m(x'))| <= {text}"
    if seed % 2:
        prob = _regression_tree(tmp_path / "m.skops", rng)
        post = f"|value(m(x)) - value(m(x'))| <= {text}"
    for _ in range(100):
        conds = [_cond(rng) for _ in range(int(rng.integers(1, 3)))]
        if seed % 8 == 0 or _truth(prob, conds, None)[2]:
            break
    spec = SPEC.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")')
    (tmp_path / "p.fair").write_text(spec.replace("REQ", "\n  ".join(f"require {t}" for t, _ in conds))
                                     .replace("POST", post).replace("  ensure", "  mode = maximize\n  ensure"))
    per, both_bad, parted, pts = _truth_prob(prob, conds, Fraction(text))
    pf = [Fraction(float(x)) for x in prob]
    maxima = [max((abs(pf[i] - pf[j]) for i, j in adm), default=-math.inf) for adm in _admitted(conds)]
    (v,) = check(tmp_path / "p.fair").verdicts
    want = _expected(per, both_bad)
    assert v.status == want, (per, v.status, v.reason)
    if want == "violated":
        w = (int(v.witness.features["s"]), int(v.witness.features["a"]))
        wp = (int(v.witness.features_prime["s"]), int(v.witness.features_prime["a"]))
        assert (pts.index(w), pts.index(wp)) in both_bad, (w, wp)
    _check_maximum(v, maxima)
    return parted, maxima


def test_maximize_where_one_reading_admits_no_pair(tmp_path):
    """x.a * 0.3 >= 0.9 and x.a <= 3 admits a = 3 as written and no a as stored: the float reading's maximum is
    -inf (no pair), the decimal reading's 0.75 (z = s/2 + a/4, |a - a'| <= 1); no value, [-inf, 0.75], holds
    (proved) over the union, details.maximum_by_reading naming each."""
    import math

    from fairspec.pipeline import check

    m = mlp_model([(np.array([[0.5, 0.25]]), np.zeros(1), False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    (tmp_path / "p.fair").write_text(SPEC.replace("REQ", "require x.a * 0.3 >= 0.9\n  require x.a <= 3").replace(
        "POST", "|logit(m(x)) - logit(m(x'))| <= 2\n  mode = maximize"))
    (v,) = check(tmp_path / "p.fair").verdicts
    assert v.status == "holds" and v.how == "proved" and "either reading" in v.proof.claim, v.reason
    assert v.value is None and v.bound == (-math.inf, 0.75), (v.value, v.bound)
    assert v.details["maximum_by_reading"] == {"float": {"pairs": 0, "verdict": "holds (proved)"},   # and its verdict
                                               "decimal": {"value": 0.75, "bound": [0.75, 0.75],
                                                           "verdict": "holds (proved)"}}
    assert "the float reading admits no pair" in v.reason and "largest difference is 0.75" in v.reason, v.reason


def _readings_net(tmp_path, layers, post, maximize=False):
    from fairspec.pipeline import check

    m = mlp_model(layers, "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    text = SPEC.replace("  require |x.a - x'.a| <= 1\n", "").replace("REQ", "require x.a * 0.3 >= 0.9")
    text = text.replace("POST", post)
    if maximize:
        text = text.replace("  ensure", "  mode = maximize\n  ensure")
    (tmp_path / "p.fair").write_text(text)
    (v,) = check(tmp_path / "p.fair").verdicts
    return v


def test_the_network_proof_s_unit_says_either_reading(tmp_path):
    """Session 34: the network enumeration's proof unit (its summary) named the pairs meeting the pre-condition
    without "in either reading", where the claim and the tree paths' units said it."""
    v = _readings_net(tmp_path, [(np.array([[0.5, 0.0]]), np.zeros(1), False)], "|logit(m(x)) - logit(m(x'))| <= 0.5")
    assert v.status == "holds" and v.how == "proved", v.reason
    assert "in either reading" in v.proof.summary, v.proof.summary


def test_violating_pairs_are_counted_over_the_same_population(tmp_path):
    """x.a * 0.3 >= 0.9 admits a >= 3 as written (14 ordered pairs) and a >= 4 as stored (12); the label flips
    with s everywhere. The reason counted the 12 pairs violating in both readings "of the 14" meeting it in
    either: now of the 12 meeting it in both, the union's 14 said beside."""
    v = _readings_net(tmp_path, [(np.array([[1.0, 0.0]]), np.array([-0.5]), False)], "label(m(x)) == label(m(x'))")
    assert v.status == "violated", v.reason
    assert v.reason.startswith("12 of the 12 ordered pairs meeting the pre-condition in both readings of its "
                               "constants (of the 14 admissible ordered pairs meeting the pre-condition in either "
                               "reading"), v.reason
    assert "at least" not in v.reason


def test_a_maximize_whose_readings_decide_differently_says_each(tmp_path):
    """z = relu(3 + s - a) - 1/2 flips its label with s at a <= 3 only: the float reading (a >= 4) holds, the
    decimal one (a >= 3) is violated; the union is unknown. Each reading's verdict is in
    details.maximum_by_reading and the reason says why unknown."""
    v = _readings_net(tmp_path, [(np.array([[1.0, -1.0]]), np.array([3.0]), True),
                                 (np.array([[1.0]]), np.array([-0.5]), False)], "label(m(x)) == label(m(x'))",
                      maximize=True)
    assert v.status == "unknown", v.reason
    by = v.details["maximum_by_reading"]
    assert by["float"]["verdict"] == "holds (proved)" and by["decimal"]["verdict"] == "violated", by
    assert v.value is None and v.bound == (-0.5, 0.5), (v.value, v.bound)
    assert ("each reading alone: the float reading's verdict is holds (proved), the decimal reading's verdict is "
            "violated -- the property as both readings read it is neither") in v.reason, v.reason


def test_a_prove_mode_unknown_of_the_readings_carries_no_value(tmp_path):
    """Session 34: the readings' unknown in prove mode carried value 0.5 -- the float largest min(z, -z') over
    the union of both readings' pairs, a measure of nothing the verdict decides (no bound, not maximize's). An
    auditor reads a verdict's value as a certified measure: an unknown outside maximize shows none."""
    import json

    from fairspec.pipeline import check

    v = _readings_net(tmp_path, [(np.array([[1.0, -1.0]]), np.array([3.0]), True),
                                 (np.array([[1.0]]), np.array([-0.5]), False)], "label(m(x)) == label(m(x'))")
    assert v.status == "unknown" and "enumeration does not choose one reading" in v.reason, v.reason
    assert v.value is None and v.bound is None, (v.value, v.bound)
    (tmp_path / "p.fair").write_text((tmp_path / "p.fair").read_text().replace("  ensure", "  mode = find\n  ensure"))
    (v,) = check(tmp_path / "p.fair").verdicts
    assert v.status == "unknown" and v.value is None and v.bound is None, (v.status, v.value, v.bound)
    assert json.loads(json.dumps(v.to_json())).get("value") is None
