"""How many pairs violate an individual-fairness property, as the reason and the JSON details say it
(``N of the M admissible ordered pairs violate it``): numerator and denominator count the same
ordered pairs (x, x'), against brute force written out here, for a network decided by enumeration
(kinds/pair_enumeration.py) and tree models whose cells are single values (kinds/tree_pairs.py,
kinds/tree_outputs.py). Every post-condition the language states is symmetric, so (x', x) violates
whenever (x, x') does; certify's comparisons are one-directional (certify.enumerate.pair_checks)
and counted them once per unordered pair (audit s17, section 8: 39 reported where 78 violate)."""

from __future__ import annotations

import itertools
import json
import re
from fractions import Fraction

import numpy as np
import pytest

from fairspec.certify.enumerate import ordered_pairs


def test_ordered_pairs_counts_each_pair_and_its_reverse_once():
    assert ordered_pairs([], []) == 0
    assert ordered_pairs([0], [1]) == 2                        # (0, 1) and (1, 0)
    assert ordered_pairs([0, 1], [1, 0]) == 2                  # both orders found: still two
    assert ordered_pairs([0, 0, 2], [1, 1, 1]) == 4            # (0, 1) in two class columns, (2, 1)
    assert ordered_pairs(np.array([3]), np.array([3])) == 1    # (x, x) is one ordered pair


def test_a_one_sided_post_condition_is_refused(tmp_path):
    """The counts rest on every post-condition being symmetric: a one-sided one is not a property."""
    from fairspec.pipeline import lint

    p = tmp_path / "s.fair"
    p.write_text("features F {\n  g : {A, B, C} protected\n  a : int in [0, 3]\n}\n"
                 "model m = rule(a > 1)\n"
                 "property one_sided {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n"
                 "  ensure prob(m(x)) - prob(m(x')) <= 0.1\n}\n")
    assert [d.code for d in lint(p).diagnostics if d.is_error] == ["FS501"]


# ------------------------------------------------------------------ a network, by enumeration

CATS = ("A", "B", "C")
A_MAX = 9


def _points():
    """Every point (g, s, a) of the domain, and its encoding: g one-hot, s and a raw."""
    pts = list(itertools.product(range(3), (0, 1), range(A_MAX + 1)))
    X = np.array([[g == 0, g == 1, g == 2, s, a] for g, s, a in pts], dtype=np.float32)
    return pts, X


def _brute_pairs(pts, free: int):
    """Every admissible ordered pair (i, j): the point indices differ in feature ``free`` only."""
    return [(i, j) for i, p in enumerate(pts) for j, q in enumerate(pts)
            if p[free] != q[free] and all(p[k] == q[k] for k in range(3) if k != free)]


def _sigmoid(z):
    import mpmath

    return Fraction(str(1 / (1 + mpmath.exp(-mpmath.mpf(float(z))))))


def _eps_between(diffs) -> str:
    """A decimal tolerance in the widest gap between the differences: some above it, none near it."""
    d = np.unique(np.asarray(diffs, dtype=np.float64))
    k = int(np.argmax(np.diff(d))) + 1
    eps = f"{(d[k - 1] + d[k]) / 2:.6f}"
    assert np.min(np.abs(d - float(eps))) > 1e-4
    return eps


def _check_json(path):
    from fairspec.pipeline import check
    from fairspec.report import to_json

    rep = check(path)
    assert not rep.has_errors, rep.diagnostics
    return {p["name"]: p for p in json.loads(to_json(rep))["properties"]}


def _counted(v) -> tuple[int, int]:
    """(violating, admissible) as the reason prints them, after checking the JSON details agree."""
    m = re.match(r"(\d[\d,]*) of the (\d[\d,]*) admissible ordered (?:cell )?pairs violate it", v["reason"])
    assert m, v["reason"]
    n, total = (int(g.replace(",", "")) for g in m.groups())
    assert (v["details"]["violating_pairs"], v["details"]["pairs"]) == (n, total), v["details"]
    return n, total


def _prop(name, free, ensure):
    return f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n  ensure {ensure}\n}}\n"


@pytest.mark.parametrize("seed", [3, 11])
def test_a_network_counts_ordered_pairs_as_brute_force_does(tmp_path, seed):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx_nets import relu_net

    relu_net(tmp_path / "m.onnx", seed, heavy=(0, 1, 2, 3))
    pts, X = _points()
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    z = sess.run(None, {"x": X})[0].reshape(-1)
    assert np.min(np.abs(z)) > 1e-4                         # no label within rounding of its threshold
    label = z > 0
    prob = [_sigmoid(v) for v in z]
    by_g, by_s = _brute_pairs(pts, 0), _brute_pairs(pts, 1)
    eps = _eps_between([abs(prob[i] - prob[j]) for i, j in by_g])
    body = (_prop("label_g", "g", "label(m(x)) == label(m(x'))") + _prop("label_s", "s", "label(m(x)) == label(m(x'))")
            + _prop("prob_g", "g", f"|prob(m(x)) - prob(m(x'))| <= {eps}")
            + _prop("logit_s", "s", "|logit(m(x)) - logit(m(x'))| < 0.5"))
    (tmp_path / "s.fair").write_text(
        f"features F {{\n  g : {{{', '.join(CATS)}}} protected\n  s : bool protected\n  a : int in [0, {A_MAX}]\n}}\n"
        'model m = onnx("m.onnx", score = logit)\n'
        "encode F for m {\n  g : onehot\n  s : raw\n  a : raw\n}\n" + body)
    v = _check_json(tmp_path / "s.fair")
    want = {
        "label_g": sum(label[i] != label[j] for i, j in by_g),
        "label_s": sum(label[i] != label[j] for i, j in by_s),
        "prob_g": sum(abs(prob[i] - prob[j]) > Fraction(eps) for i, j in by_g),
        "logit_s": sum(abs(Fraction(float(z[i])) - Fraction(float(z[j]))) >= Fraction("0.5") for i, j in by_s),
    }
    total = {"label_g": len(by_g), "label_s": len(by_s), "prob_g": len(by_g), "logit_s": len(by_s)}
    assert len(by_g) == 6 * 2 * (A_MAX + 1) and len(by_s) == 2 * 3 * (A_MAX + 1)
    for name in want:
        assert v[name]["details"]["engine"] == "enumeration", v[name]
        if not want[name]:
            assert v[name]["status"] == "holds", v[name]
            continue
        assert v[name]["status"] == "violated", v[name]
        assert _counted(v[name]) == (want[name], total[name]), name
    assert want["prob_g"] and want["label_g"] % 2 == 0


def test_a_multiclass_network_counts_ordered_pairs_not_class_comparisons(tmp_path):
    """forall c: one comparison per pair and class; the count is of pairs, any class breaking it."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    rng = np.random.default_rng(4)
    W1, b1 = rng.normal(size=(6, 5)), rng.normal(size=6) * 0.5
    W1[:, :3] *= 3
    W2, b2 = rng.normal(size=(3, 6)), rng.normal(size=3) * 0.5
    m = mlp_model([(W1.astype(np.float32), b1, True), (W2.astype(np.float32), b2, False)], "Identity", "logits",
                  batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    pts, X = _points()
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    Z = sess.run(None, {"x": X})[0].astype(np.float64)
    top = np.sort(Z, axis=1)
    assert np.min(top[:, -1] - top[:, -2]) > 1e-4                # no argmax within rounding of a tie
    cls = np.argmax(Z, axis=1)
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    by_g = _brute_pairs(pts, 0)
    far = [float(np.max(np.abs(P[i] - P[j]))) for i, j in by_g]
    eps = _eps_between(far)
    body = (_prop("class_g", "g", "class(m(x)) == class(m(x'))")
            + _prop("every_g", "g", f"forall c: |prob(m(x), c) - prob(m(x'), c)| <= {eps}"))
    (tmp_path / "s.fair").write_text(
        f"features F {{\n  g : {{{', '.join(CATS)}}} protected\n  s : bool protected\n  a : int in [0, {A_MAX}]\n}}\n"
        'model m = onnx("m.onnx")\n'
        "encode F for m {\n  g : onehot\n  s : raw\n  a : raw\n}\n" + body)
    v = _check_json(tmp_path / "s.fair")
    want = {"class_g": sum(cls[i] != cls[j] for i, j in by_g), "every_g": sum(d > float(eps) for d in far)}
    assert all(want.values()), want
    for name, n in want.items():
        assert v[name]["status"] == "violated" and v[name]["details"]["engine"] == "enumeration", v[name]
        assert _counted(v[name]) == (n, len(by_g)), name


# ------------------------------------------------------------------ tree models, cells of one value each

def _tree_grid():
    return np.array(list(itertools.product(range(3), range(4))), dtype=float)      # g in [0, 2], a in [0, 3]


def _tree_file(tmp_path, est, body: str) -> str:
    import skops.io as sio

    sio.dump(est, tmp_path / "m.skops")
    p = tmp_path / "s.fair"
    p.write_text('features F {\n  g : int in [0, 2] protected\n  a : int in [0, 3]\n}\nmodel m = sklearn("m.skops")\n'
                 "encode F for m {\n  g : raw\n  a : raw\n}\n" + body)
    return str(p)


def _tree_pairs():
    G = _tree_grid()
    return [(i, j) for i in range(len(G)) for j in range(len(G)) if G[i, 0] != G[j, 0] and G[i, 1] == G[j, 1]]


def _one_value_cells(v):
    """The cells of the split tests hold one value each: cell pairs are the domain's pairs."""
    assert v["details"]["cells"] == v["details"]["points"] == 12, v["details"]


@pytest.mark.parametrize("seed", [0, 1])
def test_tree_models_count_ordered_pairs_as_brute_force_does(tmp_path, seed):
    pytest.importorskip("skops")
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    G = _tree_grid()
    rng = np.random.default_rng(seed)
    y2 = np.array([1, 0] * 6)[rng.permutation(12)]
    y3 = rng.integers(0, 3, 12)
    y3[:3] = (0, 1, 2)
    yr = rng.integers(0, 8, 12) / 4.0
    # every point its own leaf (split thresholds between all neighbouring values); three rows a point,
    # so that its probability is 0, 1/3, 2/3 or 1
    binary = DecisionTreeClassifier(random_state=0).fit(np.tile(G, (3, 1)),
                                                       np.concatenate([y2, y2, rng.integers(0, 2, 12)]))
    multi = DecisionTreeClassifier(random_state=0).fit(G, y3)
    reg = DecisionTreeRegressor(random_state=0).fit(G, yr)
    pairs = _tree_pairs()
    P = binary.predict_proba(G)[:, list(binary.classes_).index(1)]
    lab = binary.predict(G)
    checks = [
        (binary, _prop("label_g", "g", "label(m(x)) == label(m(x'))"), sum(lab[i] != lab[j] for i, j in pairs)),
        (binary, _prop("prob_g", "g", "|prob(m(x)) - prob(m(x'))| <= 0.5"),
         sum(abs(Fraction(float(P[i])) - Fraction(float(P[j]))) > Fraction("0.5") for i, j in pairs)),
        (multi, _prop("class_g", "g", "class(m(x)) == class(m(x'))"),
         sum(multi.predict(G)[i] != multi.predict(G)[j] for i, j in pairs)),
        (multi, _prop("every_g", "g", "forall c: |prob(m(x), c) - prob(m(x'), c)| <= 0.5"),
         sum(bool(np.any(np.abs(multi.predict_proba(G)[i] - multi.predict_proba(G)[j]) > 0.5)) for i, j in pairs)),
        (reg, _prop("value_g", "g", "|value(m(x)) - value(m(x'))| <= 0.5"),
         sum(abs(Fraction(float(reg.predict(G)[i])) - Fraction(float(reg.predict(G)[j]))) > Fraction("0.5")
             for i, j in pairs)),
    ]
    for k, (est, body, want) in enumerate(checks):
        folder = tmp_path / str(k)
        folder.mkdir()
        (v,) = _check_json(_tree_file(folder, est, body)).values()
        assert len(pairs) == 24
        if not want:
            assert v["status"] == "holds", v
            continue
        assert v["status"] == "violated", v
        _one_value_cells(v)
        assert _counted(v) == (want, len(pairs)), (v["name"], v["reason"])
