"""kinds/pre_search: a pair meeting the whole pre-condition searched for where the relaxation's witness missed
it (session 32), against brute force with FAIRSPEC_ENUMERATE_PAIRS=0 so the MILP / z3 / the tree encodings decide.

Before, a property violated only inside the dropped conjuncts' region was ``unknown`` whenever the solver's pair
of the relaxation lay outside it, and a bound on a tied real (``x.r > 0.45``) was ``unknown`` where the solver's
pair sat at the hull's outward-rounded end. Now such a property is ``violated`` with a witness that meets the
pre-condition read exactly and breaks the post on the runtime; one that holds is never ``violated``."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).parent))
from test_pre_relax import DECLS, _pairs, _point, _points, _X, dyadic_net  # noqa: E402

GN = "ABC"


def _check(path):
    from fairspec.pipeline import check

    (v,) = check(path).verdicts
    return v


def _write(d, free, req, ensure, extra="", decls=DECLS, name="p.fair"):
    (d / name).write_text(decls + f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n"
                                  f"  require {req}\n  ensure {ensure}\n{extra}}}\n")
    return d / name


def _one_cell(lab_or_broken, seed: int):
    """A pre-condition naming one (g, a) cell whose pairs (s flipped) break the post and every cell whose
    pairs do not: the property is violated only in that cell, which the relaxation's pair may miss."""
    pts = _points()
    cells = {}
    for i, j in _pairs("s", lambda x, y: True):
        key = (pts[i]["g"], pts[i]["a"])
        cells[key] = cells.get(key, False) or bool(lab_or_broken(i, j))
    bad = sorted(k for k, b in cells.items() if b)
    calm = sorted(k for k, b in cells.items() if not b)
    if not bad or not calm:
        return None
    rng = np.random.default_rng(seed)
    g, a = bad[int(rng.integers(len(bad)))]
    terms = [f"(x.g == {GN[g]} and x.a == {a})"] + [f"(x.g == {GN[cg]} and x.a == {ca})" for cg, ca in calm[:6]]
    keys = {(g, a), *calm[:6]}
    return " or ".join(terms), (lambda x, y: (x["g"], x["a"]) in keys), (g, a)


def _judge(v, pred, broken, truth):
    pts = _points()
    assert v.status != "holds" or not truth, v.reason
    if truth:
        assert v.status == "violated", v.reason
    if v.status == "violated":
        x, y = _point(v.witness.features), _point(v.witness.features_prime)
        i, j = pts.index(x), pts.index(y)
        assert pred(x, y) and x["s"] != y["s"] and broken(i, j), (x, y)


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    out = []
    for seed in (0, 1, 2, 3):
        d = tmp_path_factory.mktemp(f"search{seed}")
        dyadic_net(d / "m.onnx", seed)
        sess = ort.InferenceSession(str(d / "m.onnx"), providers=["CPUExecutionProvider"])
        out.append((d, sess.run(None, {"x": _X(_points())})[0].reshape(-1)))
    return out


@pytest.mark.parametrize("backend", ["milp", "smt"])
@pytest.mark.parametrize("k", range(4))
def test_a_violation_only_inside_the_dropped_conjuncts_is_found(nets, k, backend, monkeypatch):
    """label: violated only in one (g, a) cell of an `or` the relaxation drops whole: violated, the witness in it."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = nets[k]
    lab = z > 0
    got = _one_cell(lambda i, j: lab[i] != lab[j], k)
    if got is None:
        pytest.skip("this network flips everywhere or nowhere")
    req, pred, _ = got
    v = _check(_write(d, "s", req, "label(m(x)) == label(m(x'))", f"  using {backend}\n"))
    truth = any(lab[i] != lab[j] for i, j in _pairs("s", pred))
    assert truth
    _judge(v, pred, lambda i, j: lab[i] != lab[j], truth)


@pytest.mark.parametrize("k", range(4))
def test_at_the_largest_difference_inside_the_region_lt_is_violated_and_le_is_not(nets, k, monkeypatch):
    """logit at exactly the largest difference over the pairs meeting the pre-condition (dyadic weights: exact):
    `<=` holds on those pairs and is never violated; `<` is violated there, with that pair."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = nets[k]
    pts = _points()
    diff = {(i, j): abs(Fraction(float(z[i])) - Fraction(float(z[j]))) for i, j in _pairs("s", lambda x, y: True)}
    # the cell with the smallest non-zero difference: the relaxation's largest pairs lie elsewhere
    by_cell = {}
    for (i, j), dv in diff.items():
        key = (pts[i]["g"], pts[i]["a"])
        by_cell[key] = max(by_cell.get(key, Fraction(0)), dv)
    key = min((c for c in by_cell if by_cell[c] > 0), key=lambda c: by_cell[c], default=None)
    if key is None or by_cell[key] == max(by_cell.values()):
        pytest.skip("no cell below the largest difference")
    top = by_cell[key]
    eps = float(top)
    assert Fraction(eps) == top == Fraction(repr(eps))
    req = f"x.g == {GN[key[0]]} and (x.a == {key[1]} or x.a > 100)"

    def pred(x, y):
        return (x["g"], x["a"]) == key
    for op in ("<=", "<"):
        v = _check(_write(d, "s", req, f"|logit(m(x)) - logit(m(x'))| {op} {eps!r}", "  using milp\n"))

        def broken(i, j, op=op):
            return diff.get((i, j), Fraction(0)) > top if op == "<=" else diff.get((i, j), Fraction(0)) >= top
        truth = any(broken(i, j) for i, j in _pairs("s", pred))
        assert truth == (op == "<")
        _judge(v, pred, broken, truth)


@pytest.fixture(scope="module")
def forests(tmp_path_factory):
    pytest.importorskip("skops")
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    out = []
    for seed in (5, 6):
        rng = np.random.default_rng(seed)
        X = np.vstack([_X(_points())] * 3).astype(np.float64)
        y = rng.integers(0, 2, size=X.shape[0])
        est = RandomForestClassifier(n_estimators=4, max_depth=4, random_state=seed).fit(X, y)
        d = tmp_path_factory.mktemp(f"search_trees{seed}")
        sio.dump(est, d / "m.skops")
        out.append((d, est))
    return out


@pytest.mark.parametrize("k", range(2))
def test_a_forest_s_violation_only_inside_the_dropped_conjuncts_is_found(forests, k, monkeypatch):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, est = forests[k]
    lab = est.predict(_X(_points()).astype(np.float64)) == 1
    got = _one_cell(lambda i, j: lab[i] != lab[j], k)
    if got is None:
        pytest.skip("this forest flips everywhere or nowhere")
    req, pred, _ = got
    decls = DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")')
    v = _check(_write(d, "s", req, "label(m(x)) == label(m(x'))", "  using milp\n", decls))
    _judge(v, pred, lambda i, j: lab[i] != lab[j], True)
    # prob at a threshold no pair reaches: holds on every pair, never violated
    v = _check(_write(d, "s", req, "|prob(m(x)) - prob(m(x'))| <= 1", "  using milp\n", decls))
    assert v.status != "violated", v.reason


REAL_DECLS = ("features F {\n  s : bool protected\n  r : real in [0, 1]\n}\n"
              'model m = onnx("m.onnx", score = logit)\nencode F for m {\n  s : raw\n  r : raw\n}\n')


def _real_net(path, flips_below: float | None):
    """z = 2s - 1 + r/4 - 1/8 (every pair flips) or, with ``flips_below`` = c, z = s - 1/2 - 8 relu(r - c) (a
    pair flips only where r < c + 1/16)."""
    import onnx
    from onnx_nets import mlp_model

    if flips_below is None:
        layers = [(np.array([[2.0, 0.25]]), np.array([-1.125]), False)]
    else:
        W1 = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
        b1 = np.array([0.0, 1.0, -flips_below])
        layers = [(W1, b1, True), (np.array([[0.5, -0.5, -8.0]]), np.array([0.0]), False)]
    m = mlp_model(layers, "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.mark.parametrize("backend", ["milp", "smt"])
@pytest.mark.parametrize("req", ["x.r > 0.45", "x.r > 0.45 and x.r < 0.7", "0.45 < x'.r", "x.r >= 0.3"])
def test_a_bound_on_a_tied_real_is_violated_inside_its_open_region(tmp_path, req, backend, monkeypatch):
    """Every pair flips: the solver's pair may sit at the hull's outward-rounded end (0.44999999999999996, where
    `x.r > 0.45` holds in neither reading); the search moves it into the open region, which it must meet in both
    readings of the constant."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    _real_net(tmp_path / "m.onnx", None)
    v = _check(_write(tmp_path, "s", req, "label(m(x)) == label(m(x'))", f"  using {backend}\n", REAL_DECLS))
    assert v.status == "violated", v.reason
    a, b = Fraction(v.witness.features["r"]), Fraction(v.witness.features_prime["r"])
    assert a == b
    for c in (Fraction("0.45"), Fraction(0.45)):
        if "0.45" in req:
            assert a > c
    if "0.7" in req:
        assert a < Fraction("0.7") and a < Fraction(0.7)
    if "0.3" in req:
        assert a >= Fraction("0.3") and a >= Fraction(0.3)


@pytest.mark.parametrize("req", ["x.r > 0.5", "x.r >= 0.5625 or x.r > 2", "not (x.r < 0.5625)"])
def test_a_tied_real_that_holds_is_never_violated(tmp_path, req, monkeypatch):
    """Pairs flip only where r < 9/16 (a dyadic threshold): at and above it the property holds and is never
    violated; `x.r > 0.5` is violated just above 1/2."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    _real_net(tmp_path / "m.onnx", 0.5)
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    r = np.linspace(0, 1, 4097, dtype=np.float32)
    X = np.concatenate([np.stack([np.zeros_like(r), r], 1), np.stack([np.ones_like(r), r], 1)]).astype(np.float32)
    z = sess.run(None, {"x": X})[0].reshape(-1)
    flips = r[(z[:r.size] > 0) != (z[r.size:] > 0)]
    assert flips.size and float(flips.max()) < 0.5625
    v = _check(_write(tmp_path, "s", req, "label(m(x)) == label(m(x'))", "  using milp\n", REAL_DECLS))
    if req == "x.r > 0.5":          # r in (0.5, 0.5625) flips: truly violated, by a pair the search reaches
        assert v.status == "violated", v.reason
        assert Fraction(1, 2) < Fraction(v.witness.features["r"]) < Fraction(9, 16)
    else:
        assert v.status != "violated", v.reason


def test_a_search_that_finds_nothing_says_what_it_tried(nets, monkeypatch):
    """The relaxation's pairs all miss a pre-condition on which the property holds: unknown, saying the relaxation
    pair did not meet it and what the search tried; never holds or violated."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = nets[0]
    lab = z > 0
    pts = _points()
    flips = {pts[i]["a"] for i, j in _pairs("s", lambda x, y: True) if lab[i] != lab[j]}
    calm = sorted(set(range(10)) - flips)
    if not flips or not calm:
        pytest.skip("no calm value")
    req = " or ".join(f"x.a == {a}" for a in calm)
    v = _check(_write(d, "s", req, "label(m(x)) == label(m(x'))", "  using milp\n"))
    assert v.status in ("unknown", "holds"), v.reason
    if v.status == "unknown":
        assert "a search restricted to the pre-condition's region" in v.reason and "found none" in v.reason, v.reason


def test_a_tree_output_s_time_out_is_not_retried_on_its_relaxation(tmp_path):
    """pre_relax.or_relaxed: a tree model's class post left unknown with its time budget spent is not decided
    again on the relaxation (which took the budget once more); with time left it is."""
    from fairspec.kinds import pre_relax
    from fairspec.pipeline import lint
    from fairspec.verdict import unknown

    dyadic_net(tmp_path / "m.onnx", 0)
    res = lint(_write(tmp_path, "s", "x.a > 4 or x.g == B", "label(m(x)) == label(m(x'))", "  timeout = 5\n"))
    (prop,) = res.spec.properties
    before = unknown(prop, "the branch and bound over leaf boxes stopped after 9 boxes (time limit)", backend="milp")
    calls = []

    class Spent:
        spec = res.spec

        def remaining(self, limit):
            assert limit == 5
            return 0.0

    v = pre_relax.or_relaxed(prop, Spent(), "milp", 0.0, before, lambda p: calls.append(p))
    assert not calls and v.status == "unknown" and "not tried: the time budget was spent" in v.reason, v.reason

    class Left(Spent):
        def remaining(self, limit):
            return 3.0

    def decide(p):
        calls.append(p)
        raise pre_relax.Unsupported("stub")
    ctx = Left()
    ctx.encoding = lambda name: None
    pre_relax.or_relaxed(prop, ctx, "milp", 0.0, before, decide)
    assert len(calls) == 1


@pytest.mark.parametrize("k", range(2))
def test_a_forest_s_prob_at_the_largest_difference_inside_the_region(forests, k, monkeypatch):
    """prob of a forest (predict_proba) at the largest difference over the pairs meeting the pre-condition, the
    threshold as written (its decimal): just at or below it (`<`) truly violated, and violated with a pair meeting
    the pre-condition; at or above it (`<=`) holding, never violated. Judged against brute force on the library."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, est = forests[k]
    pts = _points()
    p = est.predict_proba(_X(pts).astype(np.float64))[:, 1]
    diff = {(i, j): abs(Fraction(float(p[i])) - Fraction(float(p[j]))) for i, j in _pairs("s", lambda x, y: True)}
    by_cell = {}
    for (i, j), dv in diff.items():
        key = (pts[i]["g"], pts[i]["a"])
        by_cell[key] = max(by_cell.get(key, Fraction(0)), dv)
    key = min((c for c in by_cell if by_cell[c] > 0), key=lambda c: by_cell[c], default=None)
    if key is None or by_cell[key] == max(by_cell.values()):
        pytest.skip("no cell below the largest difference")
    top = by_cell[key]
    f = float(top)
    below = repr(f) if Fraction(repr(f)) <= top else repr(float(np.nextafter(f, 0)))
    above = repr(f) if Fraction(repr(f)) >= top else repr(float(np.nextafter(f, 1)))
    req = f"x.g == {GN[key[0]]} and (x.a == {key[1]} or x.a > 100)"

    def pred(x, y):
        return (x["g"], x["a"]) == key
    decls = DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")')
    for op, eps in (("<", below), ("<=", above)):
        v = _check(_write(d, "s", req, f"|prob(m(x)) - prob(m(x'))| {op} {eps}", "  using milp\n", decls))

        def broken(i, j, op=op, t=Fraction(eps)):
            dv = diff.get((i, j), Fraction(0))
            return dv > t if op == "<=" else dv >= t
        truth = any(broken(i, j) for i, j in _pairs("s", pred))
        assert truth == (op == "<")
        _judge(v, pred, broken, truth)


@pytest.mark.parametrize("k", range(4))
def test_maximize_s_interval_from_a_searched_pair_holds_the_true_maximum(nets, k, monkeypatch):
    """maximize under a dropped pre-condition, violated only inside its region: the searched pair's measure is the
    interval's lower end and the relaxation's certified bound its upper end; the largest difference over the pairs
    meeting the pre-condition (brute force) lies between them."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, z = nets[k]

    def diff(i, j):
        return abs(Fraction(float(z[i])) - Fraction(float(z[j])))
    every = sorted({diff(i, j) for i, j in _pairs("s", lambda x, y: True)})
    t = every[len(every) // 2]                 # some cells above it, some not (dyadic: exact as written)
    got = _one_cell(lambda i, j: diff(i, j) > t, k)
    assert got is not None
    req, pred, _ = got
    diffs = [diff(i, j) for i, j in _pairs("s", pred)]
    v = _check(_write(d, "s", req, f"|logit(m(x)) - logit(m(x'))| <= {float(t)!r}", "  using milp\n  mode = maximize\n"))
    assert v.status == "violated", v.reason
    _judge(v, pred, lambda i, j: diff(i, j) > t, True)
    if v.bound is not None:
        lo, hi = v.bound
        assert Fraction(lo) <= max(diffs) <= Fraction(hi), (v.bound, max(diffs))
        assert v.value is not None and Fraction(v.value) <= max(diffs)
    else:
        assert v.value is None


@pytest.mark.parametrize("k", range(2))
def test_a_forest_s_maximize_from_a_searched_pair_holds_the_true_maximum(forests, k, monkeypatch):
    """A forest's prob under maximize, violated only inside a dropped region: the interval's lower end is a float
    at or below the searched pair's exact difference, and the true maximum over the pairs meeting the
    pre-condition (brute force on predict_proba) lies in the interval."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, est = forests[k]
    p = est.predict_proba(_X(_points()).astype(np.float64))[:, 1]

    def diff(i, j):
        return abs(Fraction(float(p[i])) - Fraction(float(p[j])))
    every = sorted({diff(i, j) for i, j in _pairs("s", lambda x, y: True)})
    t = Fraction(repr(float(every[len(every) // 2])))
    got = _one_cell(lambda i, j: diff(i, j) > t, k)
    assert got is not None
    req, pred, _ = got
    top = max(diff(i, j) for i, j in _pairs("s", pred))
    decls = DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")')
    v = _check(_write(d, "s", req, f"|prob(m(x)) - prob(m(x'))| <= {float(t)!r}", "  using milp\n  mode = maximize\n",
                      decls))
    assert v.status == "violated", v.reason
    _judge(v, pred, lambda i, j: diff(i, j) > t, True)
    if v.bound is not None:
        assert Fraction(v.bound[0]) <= top <= Fraction(v.bound[1]), (v.bound, top)


RELAXED_DECLS = ("features F {\n  s : bool protected\n  r : real in [0, 1]\n  a : int in [0, 9]\n}\n"
                 'model m = onnx("m.onnx", score = logit)\nencode F for m {\n  s : raw\n  r : raw\n  a : raw\n}\n')


@pytest.mark.parametrize("case", range(6))
def test_a_searched_pair_on_a_relaxed_real_meets_everything_exactly(tmp_path, case, monkeypatch):
    """r relaxed (|x.r - x'.r| within a tolerance, `<` or `<=`), dropped conditions on both sides of it: a violated
    witness meets the pre-condition in both readings of every constant, the tolerance and the domain exactly, and
    breaks the post on onnxruntime (float32) as replayed here."""
    import re

    import onnx
    from onnx_nets import mlp_model

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    pres = ["x.r > 0.45 and x'.r < 0.5", "x.r + x'.r >= 1.1", "x.r > x'.r + 0.2", "not (x.r < 0.7) or x.a == 3",
            "x'.r <= 0.3 and x.a > 4", "x.r * 3 > 2 and x.a * 0.5 < 2"]
    rng = np.random.default_rng(case)
    W1, b1 = np.round(rng.normal(size=(5, 3)) * 4) / 4, np.round(rng.normal(size=5) * 2) / 4
    W2, b2 = np.round(rng.normal(size=(1, 5)) * 4) / 4, np.round(rng.normal(size=1) * 2) / 4
    m = mlp_model([(W1, b1, True), (W2, b2, False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    op, tol = ("<", "0.25") if case % 2 else ("<=", "0.5")
    pre = pres[case]
    v = _check(_write(tmp_path, "s", f"|x.r - x'.r| {op} {tol}\n  require {pre}", "label(m(x)) == label(m(x'))",
                      "  using milp\n", RELAXED_DECLS))
    if v.status != "violated":
        return
    x, y = v.witness.features, v.witness.features_prime
    rx, ry, ax = Fraction(x["r"]), Fraction(y["r"]), Fraction(x["a"])
    assert x["a"] == y["a"] and x["s"] != y["s"] and 0 <= rx <= 1 and 0 <= ry <= 1
    assert abs(rx - ry) < Fraction(tol) if op == "<" else abs(rx - ry) <= Fraction(tol)
    text = pre.replace("x'.r", "RY").replace("x.r", "RX").replace("x.a", "AX")
    for read in (Fraction, lambda t: Fraction(float(t))):          # the decimal and the float
        expr = re.sub(r"\d+(\.\d+)?", lambda mm: f"rd('{mm.group(0)}')", text)
        assert eval(expr, {"rd": read, "RX": rx, "RY": ry, "AX": ax}), (pre, x, y)
    X = np.array([[float(x["s"]), float(x["r"]), float(x["a"])], [float(y["s"]), float(y["r"]), float(y["a"])]],
                 dtype=np.float32)
    z = sess.run(None, {"x": X})[0].reshape(-1)
    assert (z[0] > 0) != (z[1] > 0), z


@pytest.fixture(scope="module")
def forests3(tmp_path_factory):
    pytest.importorskip("skops")
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    out = []
    for seed in (7, 8):
        X = _X(_points()).astype(np.float64)
        y = np.random.default_rng(seed).integers(0, 3, size=X.shape[0] * 2)
        est = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=seed).fit(np.vstack([X, X]), y)
        d = tmp_path_factory.mktemp(f"search_trees3_{seed}")
        sio.dump(est, d / "m.skops")
        out.append((d, est))
    return out


@pytest.mark.parametrize("post", ["class", "prob", "every"])
@pytest.mark.parametrize("k", range(2))
def test_a_three_class_forest_s_violation_only_inside_the_dropped_conjuncts_is_found(forests3, k, post, monkeypatch):
    """kinds/tree_outputs (class, prob(c), forall c) under a pre-condition whose only violations lie in one cell of
    a dropped `or`: violated with a pair in it (predict / predict_proba, brute force), else never violated."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    d, est = forests3[k]
    X = _X(_points()).astype(np.float64)
    if post == "class":
        out = est.predict(X)
        ensure = "class(m(x)) == class(m(x'))"

        def breaks(i, j):
            return out[i] != out[j]
    else:
        P = est.predict_proba(X)
        cols = [1] if post == "prob" else range(P.shape[1])
        ensure = ("|prob(m(x), 1) - prob(m(x'), 1)| <= 0.375" if post == "prob" else
                  "forall c: |prob(m(x), c) - prob(m(x'), c)| <= 0.375")

        def breaks(i, j):
            return any(abs(Fraction(float(P[i, c])) - Fraction(float(P[j, c]))) > Fraction(3, 8) for c in cols)
    got = _one_cell(breaks, k)
    if got is None:
        pytest.skip("every cell or none breaks it")
    req, pred, _ = got
    decls = DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")')
    v = _check(_write(d, "s", req, ensure, "", decls))
    _judge(v, pred, breaks, True)
    if post == "every":         # the class whose probabilities break it, as the tree outputs' witnesses say
        x, y = _point(v.witness.features), _point(v.witness.features_prime)
        i, j = _points().index(x), _points().index(y)
        c = v.details["class"]
        assert abs(Fraction(float(P[i, c])) - Fraction(float(P[j, c]))) > Fraction(3, 8)


@pytest.mark.parametrize("seed", range(3))
def test_a_three_class_network_s_violation_only_inside_the_dropped_conjuncts_is_found(tmp_path, seed, monkeypatch):
    """kinds/multi_pairs (a three-class network's class post): violated only in one cell of a dropped `or`: violated
    with a pair in it (onnxruntime's argmax, brute force)."""
    import onnx
    from onnx_nets import mlp_model

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    rng = np.random.default_rng(seed)
    W1, b1 = rng.integers(-4, 5, (6, 5)) / 4.0, rng.integers(-2, 3, 6) / 4.0
    W2, b2 = rng.integers(-4, 5, (3, 6)) / 4.0, rng.integers(-1, 2, 3) / 4.0
    m = mlp_model([(W1, b1, True), (W2, b2, False)], "Identity", "logits", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    cls = np.argmax(sess.run(None, {sess.get_inputs()[0].name: _X(_points())})[0], axis=1)
    got = _one_cell(lambda i, j: cls[i] != cls[j], seed)
    if got is None:
        pytest.skip("every cell or none changes class")
    req, pred, _ = got
    v = _check(_write(tmp_path, "s", req, "class(m(x)) == class(m(x'))", "  using milp\n",
                      DECLS.replace('onnx("m.onnx", score = logit)', 'onnx("m.onnx")')))
    _judge(v, pred, lambda i, j: cls[i] != cls[j], True)



@pytest.mark.parametrize("mode", ["find", "prove", "maximize"])
@pytest.mark.parametrize("req", ["x.a == 7 or x.a == 8", "x.g != A and (x.a == 8 or x.a > 100)"])
@pytest.mark.parametrize("fn", ["prob", "prob(c)"])
def test_a_tree_s_searched_value_is_its_measure_rounded_down(tmp_path, monkeypatch, mode, req, fn):
    """Session 33: a tree model's pair found by the search (the solver path: FAIRSPEC_ENUMERATE_PAIRS=0; the
    relaxation drops the `or`, its pair misses it) reported float(exact difference), the NEAREST float: a decision
    tree's predict_proba 1 and p' (leaf [1, 2^-53 + 2^-60], normalised) differ by 1 - p', whose nearest float lies
    above it. Find and prove now report pair_runtime.pair_measure's float at or below it; maximize's interval
    starts there (its value stays the nearest float, as a tree's enumeration reports a maximum). ``prob(m(x), 1)``:
    the tree outputs' search (pre_search._tree_output)."""
    skops = pytest.importorskip("skops.io")
    from sklearn.tree import DecisionTreeClassifier

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    X = _X(_points()).astype(np.float64)
    est = DecisionTreeClassifier(max_depth=1).fit(X, X[:, 3].astype(int))
    assert list(est.tree_.feature[:1]) == [3]             # the split is on s, the protected feature
    est.tree_.value[1, 0] = (1.0, 2.0 ** -53 + 2.0 ** -60)
    est.tree_.value[2, 0] = (0.0, 1.0)
    p = est.predict_proba(X)[:, 1]
    truth = max(abs(Fraction(float(u)) - Fraction(float(w))) for u in p for w in p)
    assert Fraction(float(truth)) > truth                 # the nearest float lies above the exact measure
    skops.dump(est, tmp_path / "m.skops")
    decls = DECLS.replace('onnx("m.onnx", score = logit)', 'sklearn("m.skops")')
    post = "|prob(m(x)) - prob(m(x'))| <= 0.5" if fn == "prob" else "|prob(m(x), 1) - prob(m(x'), 1)| <= 0.5"
    v = _check(_write(tmp_path, "s", req, post, f"  using milp\n  mode = {mode}\n", decls))
    assert v.status == "violated", v.reason
    assert "search restricted" in v.details.get("witness", ""), v.details      # the path under test
    assert v.witness.features["a"] in (7, 8), v.witness.features
    if mode == "maximize":
        assert v.bound is not None and Fraction(v.bound[0]) <= truth <= Fraction(v.bound[1]), v.bound
    else:
        assert Fraction(v.value) <= truth < Fraction(v.value) + Fraction(2.0 ** -52), v.value
