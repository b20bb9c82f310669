"""Algorithm 2: explanation paths recover a planted high-k region."""

import numpy as np

from fairspec.backends.search.explain import (Predicate, category_decoder, describe, explain, format_path,
                                       simplify, to_spec)
from fairspec.backends.search import Box, Protected, Space

K = 8


def synthetic(X):
    """Probabilities: inside x0 <= 30 and x1 > 60 the K counterfactuals spread over K buckets
    (k = K); elsewhere they coincide (k = 1)."""
    X = np.asarray(X, dtype=np.float64)
    inside = (X[:, 0] <= 30) & (X[:, 1] > 60)
    z = X[:, 3]
    return 0.5 + inside * 0.9 * (z - (K - 1) / 2) / (K - 1)


def space():
    box = Box.make([0, 0, 0, 0], [100, 100, 4, K - 1], integer=True)
    return Space(box, [Protected.label(3, range(K), "z")])


def test_paths_recover_the_planted_region():
    sp = space()
    w = np.array([[20.0, 75.0, 2.0, 0.0]])
    e = explain(synthetic, sp, w, scores="prob", n=4000, delta=2.0, seed=0, max_depth=3)
    assert e.k_init == K and e.paths
    best = e.paths[0]
    iv = {p.feature: (p.op, p.threshold) for p in best.predicates if p.op == "<="}
    lo = {p.feature: p.threshold for p in best.predicates if p.op == ">"}
    assert abs(iv[0][1] - 30.5) <= 1.0
    assert abs(lo[1] - 60.5) <= 1.0
    assert 2 not in iv and 2 not in lo            # the irrelevant coordinate stays out
    assert best.mean_k > best.mean_k_negated + 2
    grid = np.array([[a, b, 0, 0] for a in range(0, 101, 5) for b in range(0, 101, 5)], dtype=float)
    truth = (grid[:, 0] <= 30) & (grid[:, 1] > 60)
    assert (best.holds(grid) == truth).mean() > 0.97
    names = ["age", "hours", "job", "z"]
    spec = to_spec(e, names, integer=sp.box.integer)
    assert spec.startswith("require not (x.age <= 30 and x.hours >= 61")
    assert "x.age" in describe(e, names, integer=sp.box.integer)


def test_rendering_with_categories():
    names = ["age", "sex", "workclass"]
    dec = category_decoder(names, {1: ["Female", "Male"], 2: ["Gov", "Private", "Self", "None"]})
    preds = simplify([Predicate(0, "<=", 30.5), Predicate(1, ">", 0.5), Predicate(2, "<=", 1.5),
                      Predicate(0, "<=", 40.0), Predicate(2, ">", -0.5)])
    text = format_path(preds, names, dec, integer=[True, True, True])
    assert text == "x.age <= 30 and x.sex == Male and x.workclass in {Gov, Private}"
    text = format_path([Predicate(2, ">", 0.5)], names, dec)
    assert text == "x.workclass != Gov"
    assert format_path([Predicate(2, "<=", 1.5), Predicate(2, ">", 0.5)], names, dec) == "x.workclass == Private"


def test_no_paths_when_k_is_flat():
    sp = space()
    e = explain(lambda X: np.full(len(X), 0.5), sp, np.array([[20.0, 75.0, 2.0, 0.0]]), scores="prob",
                n=500)
    assert e.paths == () and to_spec(e) == ""


def test_a_guardrail_threshold_reads_back_exactly():
    """A real threshold printed at 6 digits (123456.5 -> 123456, 0.12345678 -> 0.123457) was another
    pre-condition for an auditor copying the guardrail: each prints in the shortest form that reads back."""
    import re

    names = ["income", "rate", "age"]
    preds = [Predicate(0, ">", 123456.5), Predicate(1, "<=", 0.12345678), Predicate(2, "<=", 1e6),
             Predicate(1, ">", 1e-7)]
    text = format_path(preds, names)
    assert text == "x.income > 123456.5 and x.rate > 1e-07 and x.rate <= 0.12345678 and x.age <= 1000000"
    nums = [float(t) for t in re.findall(r"(?<=[<>=] )-?[0-9.e+-]+", text)]
    assert nums == [123456.5, 1e-07, 0.12345678, 1e6]
    assert to_spec([preds], names).startswith("require not (x.income > 123456.5")


def test_literals_number_is_the_shortest_exact_text():
    from fairspec.syntax.literals import number

    assert [number(v) for v in (30.0, -2.0, 0.5, 0.1, 123456.5, 0.12345678, 1e-7, 1e16, 2.5e20, float("inf"))] == \
        ["30", "-2", "0.5", "0.1", "123456.5", "0.12345678", "1e-07", "1e+16", "2.5e+20", "inf"]
    for v in (0.1 + 0.2, 1 / 3, 123456789.25, -7.000001):
        assert float(number(v)) == v


def test_no_path_names_the_delta_as_written():
    sp = space()
    e = explain(lambda X: np.full(len(X), 0.5), sp, np.array([[20.0, 75.0, 2.0, 0.0]]), scores="prob",
                n=200, delta=1.2345678)
    assert "mean-k difference >= 1.2345678" in describe(e)
