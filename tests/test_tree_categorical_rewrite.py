"""Splits by category of XGBoost and LightGBM trees, rewritten as thresholds over the declared values
of their input (fairspec.models.tree_categories): at every point of small integer domains (negative
values and values past the last category included) each rewritten tree reaches a leaf of the same
value as the booster's own (pred_leaf), bit for bit, and the ensemble's margin and decision are the
booster's; end to end, individual fairness of categorical boosters on the solver paths is `holds
(proved)` / `violated` exactly where brute force over the domain says so."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

import fairspec
from fairspec.models import tree_columns as TC
from fairspec.models import trees as T
from fairspec.pipeline import lint

pd = pytest.importorskip("pandas")
xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

K = 6                                    # categories 0..5 of input 0
DOMAINS = {0: tuple(range(-3, K + 3)), 1: (0, 1, 2, 3), 2: (0, 1)}   # input 0: negatives, past the last category


def _data(seed: int, n: int = 900):
    rng = np.random.default_rng(seed)
    g, f, s = rng.integers(0, K, n), rng.integers(0, 4, n), rng.integers(0, 2, n)
    y = np.where(f >= 2, np.isin(g, [1, 3, 4]) | ((s == 1) & (g == 5)), s == 1).astype(int)   # g only where f >= 2
    return g, f, s, y


def _grid():
    return np.array(list(itertools.product(*DOMAINS.values())), dtype=np.float64)


def _xgb_booster(seed: int, how: str, onehot: int):
    g, f, s, y = _data(seed)
    if how == "pandas":
        frame = pd.DataFrame({"g": pd.Categorical(g, categories=range(K)), "f": f, "s": s})
        return xgb.XGBClassifier(n_estimators=4, max_depth=3, enable_categorical=True, max_cat_to_onehot=onehot,
                                 n_jobs=1, random_state=seed).fit(frame, y).get_booster()
    dm = xgb.DMatrix(np.c_[g, f, s].astype(float), label=y, feature_types=["c", "q", "q"], enable_categorical=True)
    return xgb.train({"objective": "binary:logistic", "max_depth": 3, "max_cat_to_onehot": onehot, "nthread": 1,
                      "seed": seed}, dm, 4)


def _lgb_booster(seed: int, how: str, onehot: int):
    g, f, s, y = _data(seed)
    kw = dict(num_leaves=6, min_data_in_leaf=5, min_data_per_group=5, cat_smooth=1, max_cat_to_onehot=onehot,
              verbose=-1, num_threads=1, seed=seed)
    if how == "pandas":
        frame = pd.DataFrame({"g": pd.Categorical(g, categories=range(K)), "f": f, "s": s})
        return lgb.LGBMClassifier(n_estimators=4, **kw).fit(frame, y).booster_
    return lgb.train({"objective": "binary", **kw}, lgb.Dataset(np.c_[g, f, s].astype(float), label=y,
                                                                 categorical_feature=[0]), num_boost_round=4)


def _xgb_leaf_values(booster, X):
    """(n, trees) the value of the leaf each booster tree reaches (its pred_leaf)."""
    dm = T.xgb_matrix(xgb, booster, X)
    leaf = booster.predict(dm, pred_leaf=True).astype(int).reshape(len(X), -1)
    tj = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    cond = [np.asarray(t["split_conditions"], dtype=np.float32).astype(np.float64) for t in tj]
    return np.stack([cond[k][leaf[:, k]] for k in range(leaf.shape[1])], axis=1)


def _lgb_leaf_values(booster, X):
    leaf = booster.predict(X, pred_leaf=True).astype(int).reshape(len(X), -1)
    values = []
    for info in booster.dump_model()["tree_info"]:
        v = {}

        def walk(nd):
            if "leaf_index" in nd:
                v[nd["leaf_index"]] = float(nd["leaf_value"])
            elif "split_feature" in nd:
                walk(nd["left_child"]), walk(nd["right_child"])
            else:                                   # a tree of one leaf
                v[0] = float(nd["leaf_value"])
        walk(info["tree_structure"])
        values.append(v)
    return np.array([[values[k][int(l)] for k, l in enumerate(row)] for row in leaf])


def _has_category_split(ens_trees_json) -> bool:
    return any(int(s) for t in ens_trees_json for s in t.get("split_type") or ())


@pytest.mark.parametrize("how", ["pandas", "array"])
@pytest.mark.parametrize("onehot", [1, 8])          # partition splits (a set) and one-hot splits (one category)
def test_xgboost_rewritten_trees_are_the_boosters_at_every_domain_point(how, onehot):
    booster = _xgb_booster(3, how, onehot)
    tj = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    assert _has_category_split(tj)
    with pytest.raises(T.CategoricalSplit):
        T.from_xgboost(booster)                                   # no declared domain: refused as before
    with pytest.raises(T.CategoricalSplit):
        T.from_xgboost(booster, domains={1: DOMAINS[1]})          # not the input split by category
    ens = T.from_xgboost(booster, domains=DOMAINS)
    (col,) = TC.xgboost_columns(booster, DOMAINS)
    X = _grid()
    want = _xgb_leaf_values(booster, X)
    for e in (ens, col):
        got = np.stack([t.value[t.apply(X)] for t in e.trees], axis=1)
        assert np.array_equal(got, want)                          # bit for bit, tree by tree
        margin = booster.predict(T.xgb_matrix(xgb, booster, X), output_margin=True).astype(np.float64)
        assert np.allclose(e.aggregate(X), margin, rtol=0, atol=1e-6)
    prob = booster.predict(T.xgb_matrix(xgb, booster, X)).astype(np.float64)
    assert np.array_equal(ens.decide(X), (prob > 0.5).astype(int))


@pytest.mark.parametrize("how", ["pandas", "array"])
@pytest.mark.parametrize("onehot", [1, 8])
def test_lightgbm_rewritten_trees_are_the_boosters_at_every_domain_point(how, onehot):
    booster = _lgb_booster(3, how, onehot)
    assert any(n.get("decision_type") == "==" for n in _lgb_nodes(booster))
    with pytest.raises(T.CategoricalSplit):
        T.from_lightgbm(booster)
    ens = T.from_lightgbm(booster, domains=DOMAINS)
    (col,) = TC.lightgbm_columns(booster, DOMAINS)
    X = _grid()
    want = _lgb_leaf_values(booster, X)
    got = np.stack([t.value[t.apply(X)] for t in col.trees], axis=1)
    assert np.array_equal(got, want)
    raw = np.asarray(booster.predict(X, raw_score=True), dtype=np.float64)
    assert np.allclose(col.aggregate(X), raw, rtol=0, atol=1e-9)
    assert np.allclose(ens.aggregate(X), raw, rtol=0, atol=1e-9)          # binary: sigmoid factor 1
    prob = np.asarray(booster.predict(X), dtype=np.float64)
    assert np.array_equal(ens.decide(X), (prob > 0.5).astype(int))


def _lgb_nodes(booster):
    out = []

    def walk(nd):
        if "split_feature" in nd:
            out.append(nd)
            walk(nd["left_child"]), walk(nd["right_child"])
    for info in booster.dump_model()["tree_info"]:
        walk(info["tree_structure"])
    return out


def test_the_rewrite_keeps_the_sides_each_library_gives_the_set():
    """XGBoost sends its categories right, LightGBM its left; a value outside them (negative, past the
    last category) takes the other side in both; non-members between members make several runs."""
    from fairspec.models.tree_categories import build, runs

    assert runs((-1, 0, 1, 2, 3, 4), frozenset({0, 1, 3})) == [(0, 0, False), (1, 2, True), (3, 3, False),
                                                              (4, 4, True), (5, 5, False)]
    nodes = {0: ("cat", 0, frozenset({1, 3}), 1, 2), 1: ("leaf", 10.0), 2: ("leaf", 20.0)}
    feat, thr, left, right, val = build(0, nodes.__getitem__, {0: (0, 1, 2, 3, 4)}, None)
    tree = T.Tree(feat, thr, left, right, val, strict=True, f32=True)
    assert list(tree.value[tree.apply(np.arange(5.0)[:, None])]) == [20.0, 10.0, 20.0, 10.0, 20.0]


# ---------------------------------------------------------------------------------------------
# end to end: the solver paths (FAIRSPEC_ENUMERATE_PAIRS=0) against brute force over the domain
# ---------------------------------------------------------------------------------------------

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : int in [-3, 8]  protected
  f : int in [0, 3]
  s : int in [0, 1]
}
model m = MODEL
encode F for m {
  g : raw
  f : raw
  s : raw
}
property same {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure |prob(m(x)) - prob(m(x'))| <= EPS
  using milp
}
"""


def _moves(prob) -> np.ndarray:
    """For each (f, s): max over g, g' of |prob(g, f, s) - prob(g', f, s)|, by brute force over the domain."""
    P = prob(_grid()).reshape(len(DOMAINS[0]), -1)
    return P.max(axis=0) - P.min(axis=0)


def _calm_rows(tmp_path, moves, eps) -> None:
    """Data rows only where no change of g moves the probability by more than eps: the data cannot
    show a violation, and a violated verdict comes from the solver path."""
    rest = list(itertools.product(DOMAINS[1], DOMAINS[2]))
    calm = [rest[k] for k in np.flatnonzero(moves <= eps)]
    assert calm
    rows = [(0, f, s, y) for f, s in calm for y in (0, 1)]
    pd.DataFrame(rows, columns=["g", "f", "s", "y"]).to_csv(tmp_path / "d.csv", index=False)


def _saved(tmp_path, lib):
    """(declaration, the booster's probability) of a model file fit on an array whose input 0 is
    categorical: an XGBoost JSON file, a LightGBM text file."""
    if lib == "xgboost":
        booster = _xgb_booster(5, "array", 1)
        booster.save_model(str(tmp_path / "m.json"))
        return 'xgboost("m.json")', lambda X: booster.predict(T.xgb_matrix(xgb, booster, X)).astype(np.float64)
    booster = _lgb_booster(5, "array", 1)
    booster.save_model(str(tmp_path / "m.txt"))
    return 'lightgbm("m.txt")', lambda X: np.asarray(booster.predict(X), dtype=np.float64)


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_individual_fairness_of_a_categorical_booster_matches_brute_force(tmp_path, monkeypatch, lib):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    decl, prob = _saved(tmp_path, lib)
    moves = _moves(prob)
    worst = float(moves.max())
    assert 0.05 < worst < 0.95
    above, below = math.ceil(worst * 100) / 100 + 0.01, math.floor(worst * 100) / 100 - 0.01
    for eps, status in ((above, "holds"), (below, "violated")):
        _calm_rows(tmp_path, moves, eps)
        spec = tmp_path / f"s_{status}.fair"
        spec.write_text(SPEC.replace("MODEL", decl).replace("EPS", f"{eps:.2f}"))
        assert not [d for d in lint(spec).diagnostics if d.code == "FS506"]
        v = fairspec.check(spec).report.verdicts[0]
        assert v.status == status, (eps, worst, v.status, v.reason)
        if status == "holds":
            assert v.how == "proved", v.reason
        else:                                                 # found by the solver, replayed on the booster
            assert "data rows" not in v.reason, v.reason


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_a_categorical_split_on_a_real_input_is_refused_alike_by_lint_and_check(tmp_path, monkeypatch, lib):
    """An input declared real is no finite set of whole numbers: the refusal sentence, on both."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    decl, prob = _saved(tmp_path, lib)
    moves = _moves(prob)
    eps = math.ceil(moves.min() * 100) / 100 + 0.01
    _calm_rows(tmp_path, moves, eps)
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("MODEL", decl).replace("EPS", f"{eps:.2f}")
                    .replace("g : int in [-3, 8]", "g : real in [-3, 8]"))
    (d,) = [d for d in lint(spec).diagnostics if d.code == "FS506"]
    assert "splits input 0 by category" in d.message and "not a finite set of whole numbers" in d.message
    v = fairspec.check(spec).report.verdicts[0]
    assert v.status == "unknown" and v.reason.endswith(d.message.split(": ", 1)[1]), v.reason


KINDS = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {a, b, c, d, e, f}  protected
  f : int in [0, 3]
  s : {n, y}  protected
}
model m = MODEL
encode F for m {
  g : code
  f : raw
  s : code
}
property kd {
  k_discrimination(m, over {g}, eps = 0.05) < 3
}
property bias {
  pba(m, flip s, around d, delta {f: 1})
}
"""


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_k_discrimination_and_pba_read_the_rewritten_trees(tmp_path, monkeypatch, lib):
    """k-discrimination on the leaf combinations decides as the enumeration on the library does, and
    PBA (refused before: the trees were not readable) is decided."""
    decl, _ = _saved(tmp_path, lib)
    g, f, s, y = _data(5, 200)
    pd.DataFrame({"g": np.array(list("abcdef"))[g], "f": f, "s": np.array(["n", "y"])[s], "y": y}) \
        .to_csv(tmp_path / "d.csv", index=False)
    spec = tmp_path / "s.fair"
    spec.write_text(KINDS.replace("MODEL", decl))
    kd, bias = fairspec.check(spec).report.verdicts
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")         # k-discrimination on the trees
    kd_trees, bias_trees = fairspec.check(spec).report.verdicts
    assert kd.status == kd_trees.status == "holds" and kd.how == kd_trees.how == "proved", kd_trees.reason
    assert "split tests" in kd_trees.reason
    assert bias.status == bias_trees.status and bias.status in ("holds", "violated"), bias.reason


def test_a_deep_tree_is_rewritten_without_recursion_and_a_blown_up_one_is_refused():
    """A hostile file's tree may be thousands deep (no recursion limit is met), and runs that alternate
    too often would copy subtrees without end (refused with a sentence: unknown, never a hang)."""
    from fairspec.models.tree_categories import MAX_NODES, TooLarge, build

    n = 5000
    nodes = {i: ("num", 1, 0.5, i + 1, n + 1 + i) for i in range(n)}
    nodes[n] = ("cat", 0, frozenset({1}), 2 * n + 2, 2 * n + 3)
    nodes.update({j: ("leaf", float(j)) for j in range(n + 1, 2 * n + 4)})
    tree = T.Tree(*build(0, nodes.__getitem__, {0: (0, 1, 2)}))
    X = np.array([[v, 0.0] for v in (0, 1, 2)])
    assert list(tree.value[tree.apply(X)]) == [2 * n + 3, 2 * n + 2, 2 * n + 3]
    evens = frozenset(range(0, 60000, 2))
    nodes = {0: ("cat", 0, evens, 1, 2), 1: ("cat", 0, evens, 3, 4), 2: ("leaf", 0.0), 3: ("cat", 0, evens, 5, 6),
             4: ("leaf", 1.0), 5: ("leaf", 2.0), 6: ("leaf", 3.0)}
    with pytest.raises(TooLarge):
        build(0, nodes.__getitem__, {0: tuple(range(60000))})
    assert MAX_NODES < 10 ** 6


def test_the_rewritten_size_is_counted_without_building():
    """tree_categories.tree_size (what lint counts, no numpy) is the number of nodes build writes, on
    random trees mixing numeric splits and splits by category over domains with negatives and gaps."""
    from fairspec.models.tree_categories import build, tree_size

    rng = np.random.default_rng(0)
    for _ in range(400):
        nodes: dict = {}
        doms = {0: tuple(sorted(rng.choice(np.arange(-3, 12), int(rng.integers(1, 9)), replace=False).tolist())),
                1: (0, 1)}

        def grow(depth):
            k = len(nodes)
            nodes[k] = None
            r = rng.random()
            if depth == 0 or r < 0.25:
                nodes[k] = ("leaf", float(k))
            elif r < 0.6:
                nodes[k] = ("num", 1, 0.5, grow(depth - 1), grow(depth - 1))
            else:
                members = frozenset(rng.choice(12, int(rng.integers(0, 7)), replace=False).tolist())
                nodes[k] = ("cat", int(rng.integers(0, 2)), members, grow(depth - 1), grow(depth - 1))
            return k

        grow(int(rng.integers(0, 6)))
        assert tree_size(0, nodes.__getitem__, doms) == len(build(0, nodes.__getitem__, doms)[0])


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_lint_and_check_say_the_same_sentence_at_the_node_cap(tmp_path, monkeypatch, lib):
    """A tree whose rewritten splits pass MAX_NODES (here lowered, so that a small model's first
    tree with a split by category passes it): lint's FS506 counts it from the file and check's unknown
    names the same tree in the same sentence."""
    from fairspec.models import tree_categories as C

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    decl, prob = _saved(tmp_path, lib)
    eps = math.ceil(_moves(prob).max() * 100) / 100 + 0.01
    _calm_rows(tmp_path, _moves(prob), eps)
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("MODEL", decl).replace("EPS", f"{eps:.2f}"))
    assert not [d for d in lint(spec).diagnostics if d.code == "FS506"]
    seen = set()
    for cap in (6, 12, 24, 48, 96):
        monkeypatch.setattr(C, "MAX_NODES", cap)
        said = [d.message.split(": ", 1)[1] for d in lint(spec).diagnostics if d.code == "FS506"]
        v = fairspec.check(spec).report.verdicts[0]
        if not said:
            assert v.status == "holds", (cap, v.reason)
            continue
        assert said[0].startswith("tree ") and f"would have more than {cap} nodes" in said[0], said
        assert v.status == "unknown" and v.reason.endswith(said[0]), (said, v.reason)
        seen.add(said[0].split(",")[0])
    assert "tree 0" in seen
