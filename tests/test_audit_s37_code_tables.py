"""Session 37 audit (h3): a categorical feature whose code table is no progression (``code {A = 1.7, B = 0.3,
C = 5}``) on a tree model. The pair problem's lowering (kinds.lowering.lower_pair) refused every such table
("not evenly spaced"), so individual fairness on the tree engines and k-discrimination (its search setup) were
`unknown`. A tree only compares the fed float with its thresholds: the lowering's variable is the code's rank
and every folded split is decided on the code the runtime's encoder feeds for it (kinds.lowering.encoder_feeds,
backends/trees/space.fold), through the library's own comparison (float32 cast, ``<=`` or XGBoost's ``<``).

Checked against brute force: the folded ensemble over ranks against the ensemble on the encoded inputs, with
thresholds ON the codes, one float either side and where only the float32 cast tells them apart; and verdicts
against the library's predict / predict_proba over the whole domain. A network still refuses such a table (its
input is ``first + step * rank`` in the solver), with the reason saying so."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("sklearn")

TABLES = {"uneven": (1.7, 0.3, 5.0), "gaps": (0.0, 1.0, 5.0, 2.5),
          # 0.3 and float32(0.3) are two codes float32 feeds as one number
          "f32": (0.1, 0.30000001192092896, 0.3, -2.0)}


def _spec(codes, model_line: str, props: str = "") -> str:
    cats = ", ".join(f"C{i}" for i in range(len(codes)))
    table = ", ".join(f"C{i} = {c!r}" for i, c in enumerate(codes))
    return (f"features F {{\n  a : int in [0, 5]\n  g : {{{cats}}} protected\n}}\nmodel m = {model_line}\n"
            f"encode F for m {{ a : raw  g : code {{{table}}} }}\n" + props)


def _grid(codes):
    return np.array([[a, c] for a in range(6) for c in codes], dtype=np.float64)


def _around(x: float) -> list[float]:
    """x, one float64 either side, and float32's neighbours of x: thresholds on and beside a code."""
    f = float(np.float32(x))
    return sorted({x, float(np.nextafter(x, -np.inf)), float(np.nextafter(x, np.inf)), f,
                   float(np.nextafter(np.float32(x), np.float32(-np.inf))),
                   float(np.nextafter(np.float32(x), np.float32(np.inf)))})


def _models(codes, seed: int) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    X = _grid(codes)
    y = np.random.default_rng(seed).integers(0, 2, len(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = DecisionTreeClassifier(random_state=seed).fit(np.repeat(X, 3, 0), np.repeat(y, 3))
        rf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=seed).fit(np.repeat(X, 3, 0),
                                                                                       np.repeat(y, 3))
        hgb = HistGradientBoostingClassifier(max_iter=3, max_depth=3, min_samples_leaf=2,
                                             random_state=seed).fit(np.repeat(X, 3, 0), np.repeat(y, 3))
    # every split on g moved onto a code or beside it (float64 and float32 neighbours): the runtime decides
    rng = np.random.default_rng(100 + seed)
    cuts = [t for c in codes for t in _around(c)]
    for est in (dt, *rf.estimators_):
        t = est.tree_
        for k in range(t.node_count):
            if t.children_left[k] != -1 and t.feature[k] == 1:
                t.threshold[k] = cuts[rng.integers(len(cuts))]
    return {"dt": dt, "rf": rf, "hgb": hgb}


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("seed", [0, 1])
def test_the_folded_ensemble_reads_any_code_table_as_the_runtime_feeds_it(tmp_path, table, seed):
    """fold over the code's rank (any table) agrees with the library on every point of the domain: predict_proba
    of the encoded grid against the folded ensemble at the ranks. Failed before the fix: lower_pair refused
    the table (Unsupported "not evenly spaced")."""
    import skops.io as sio

    from fairspec.backends.trees.space import fold
    from fairspec.kinds.lowering import encoder_feeds, lower_pair
    from fairspec.pipeline import lint
    from fairspec.runtime.context import Context

    codes = TABLES[table]
    prop = ("property p {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n"
            "  ensure label(m(x)) == label(m(x'))\n}\n")
    rank = {c: r for r, c in enumerate(sorted(codes))}
    X = _grid(codes)
    V = np.array([[a, rank[c]] for a, c in X])
    for name, est in _models(codes, seed).items():
        sio.dump(est, tmp_path / f"{name}.skops")
        path = tmp_path / f"{name}.fair"
        path.write_text(_spec(codes, f'sklearn("{name}.skops")', prop))
        sp = lint(path).spec
        ctx = Context(sp)
        enc = ctx.encoding("m")
        low = lower_pair(sp.properties[0], sp.feature_set("F"), enc, any_codes=True)
        assert [c for _, c in low.tables] == [tuple(sorted(codes))]
        assert np.array_equal(low.to_input(V), X) and np.array_equal(low.to_features(X), V)
        ens = ctx.model("m").tree_ensemble()
        folded = fold(ens, low.lo, low.hi, low.integer, low.scale, low.shift, encoder_feeds(enc))
        assert np.array_equal(folded.aggregate(V), ens.aggregate(X)), name
        s = folded.aggregate(V)
        s = 1.0 / (1.0 + np.exp(-s)) if ens.link == "logistic" else s
        assert np.allclose(s, est.predict_proba(X)[:, 1], rtol=0, atol=1e-9), name   # the library, at every point


def test_the_code_feed_is_the_float_the_runtime_compares():
    """One split ``x <= 0.3`` (float64): float64's 0.3 goes left, but scikit-learn compares float32(0.3), which
    is above 0.3 (right). The folded cut over ranks follows the tree's own comparison (the float32 cast or
    none), at every code."""
    from fairspec import ir
    from fairspec.backends.trees.space import fold
    from fairspec.kinds.lowering import encoder_feeds, lower_pair
    from fairspec.models.trees import Tree, TreeEnsemble

    enc = ir.Encoding("F", "m", (ir.ColumnEncoding("g", "code", 0, 1, ("A", "B", "C"), (0.3, 0.1, 0.7)),), 1)
    fs = ir.FeatureSet("F", (ir.Feature("g", ir.Categorical(("A", "B", "C")), True, "g"),), None)
    fake = type("P", (), {"relaxed": (), "free": ("g",), "pre": ()})()
    low = lower_pair(fake, fs, enc, any_codes=True)
    ranks = np.array([[0.0], [1.0], [2.0]])          # codes 0.1, 0.3, 0.7
    assert list(low.to_input(ranks)[:, 0]) == [0.1, 0.3, 0.7]
    for f32, want in ((True, [1.0, 0.0, 0.0]), (False, [1.0, 1.0, 0.0])):
        ens = TreeEnsemble((Tree([0, -1, -1], [0.3, 0, 0], [1, -1, -1], [2, -1, -1], [0.0, 1.0, 0.0], f32=f32),), 1)
        folded = fold(ens, low.lo, low.hi, low.integer, low.scale, low.shift, encoder_feeds(enc))
        assert list(ens.aggregate(low.to_input(ranks))) == want
        assert list(folded.aggregate(ranks)) == want, f32


def test_a_network_still_refuses_such_a_table_and_trees_refuse_repeated_codes():
    from fairspec import ir
    from fairspec.kinds.lowering import lower_pair
    from fairspec.verdict import Unsupported

    fs = ir.FeatureSet("F", (ir.Feature("g", ir.Categorical(("A", "B", "C")), True, "g"),), None)
    fake = type("P", (), {"relaxed": (), "free": ("g",), "pre": ()})()
    uneven = ir.Encoding("F", "m", (ir.ColumnEncoding("g", "code", 0, 1, ("A", "B", "C"), (0.0, 1.0, 3.0)),), 1)
    with pytest.raises(Unsupported, match="not evenly spaced.*a tree model's take any table"):
        lower_pair(fake, fs, uneven)
    twice = ir.Encoding("F", "m", (ir.ColumnEncoding("g", "code", 0, 1, ("A", "B", "C"), (0.0, 1.0, 1.0)),), 1)
    with pytest.raises(Unsupported, match="gives two categories one code"):
        lower_pair(fake, fs, twice, any_codes=True)
    low = lower_pair(fake, fs, uneven, any_codes=True)
    assert low.tables == ((0, (0.0, 1.0, 3.0)),) and list(low.to_input(np.array([[2.0], [1.0]]))[:, 0]) == [3.0, 1.0]


def _exact_top(P, n_codes):
    P = P.reshape(6, n_codes)
    return max(abs(Fraction(float(P[i, g])) - Fraction(float(P[i, h])))
               for i in range(6) for g in range(n_codes) for h in range(n_codes))


@pytest.mark.parametrize("table,seed", [("uneven", 0), ("f32", 1)])
def test_verdicts_on_a_code_table_agree_with_the_library_over_the_domain(tmp_path, monkeypatch, table, seed):
    """Individual fairness (label; prob at the exact largest difference with ``<=`` and ``<``) on the tree
    engines (no enumeration) and k-discrimination over g, against predict / predict_proba at every point.
    Failed before the fix: every property `unknown` ("the code table of g is not evenly spaced")."""
    import skops.io as sio

    import fairspec

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    codes = TABLES[table]
    X = _grid(codes)
    k = len(codes)
    for name, est in _models(codes, seed).items():
        if name == "rf":
            continue
        P = est.predict_proba(X)[:, 1]
        L = est.predict(X).reshape(6, k)
        flips = bool((L.min(axis=1) != L.max(axis=1)).any())
        top = _exact_top(P, k)
        eps = repr(float(top))
        clusters = max(len(set(np.floor(P.reshape(6, k)[i] / 0.05).tolist())) for i in range(6))
        pair = "  forall x, x' : F\n  require x.* == x'.* except {g}\n"
        props = (f"property lab {{\n{pair}  ensure label(m(x)) == label(m(x'))\n}}\n"
                 f"property le {{\n{pair}  ensure |prob(m(x)) - prob(m(x'))| <= {eps}\n}}\n"
                 + (f"property lt {{\n{pair}  ensure |prob(m(x)) - prob(m(x'))| < {eps}\n}}\n" if top else "") +
                 "property kd {\n  k_discrimination(m, over {g}) < 2\n}\n")
        truth = {"lab": not flips, "le": top <= Fraction(eps), "lt": top < Fraction(eps), "kd": clusters < 2}
        sio.dump(est, tmp_path / f"{name}.skops")
        path = tmp_path / f"{name}.fair"
        path.write_text(_spec(codes, f'sklearn("{name}.skops")', props))
        rep = fairspec.check(path).report
        assert not rep.internal_errors and not [d for d in rep.diagnostics if d.is_error], (
            rep.internal_errors, [d.message for d in rep.diagnostics])
        for v in rep.verdicts:
            assert "evenly spaced" not in str(v.reason), (name, v.name, v.reason)
            if v.status == "holds":
                assert truth[v.name], (name, v.name, v.reason)
            elif v.status == "violated":
                assert not truth[v.name], (name, v.name, v.reason)
        assert {v.name for v in rep.verdicts if v.status in ("holds", "violated")} >= {"lab", "kd"}, \
            [(v.name, v.status, v.reason) for v in rep.verdicts]


def test_a_search_witness_over_ranks_is_replayed_at_its_codes():
    """k-discrimination's search replays its witness through ``encode_like_runtime`` (feature space -> model
    inputs): a rank of a table that is no progression was passed through as the model's input (rank 2 fed as
    2.0, not its code 3.0: the model replayed at an input no individual has). Failed before the fix."""
    from fairspec import ir
    from fairspec.backends.smt.runtime import encode_like_runtime

    enc = ir.Encoding("F", "m", (ir.ColumnEncoding("a", "raw", 0, 1),
                                 ir.ColumnEncoding("g", "code", 1, 1, ("A", "B", "C"), (3.0, 0.0, 1.0))), 2)
    X = encode_like_runtime(enc, np.array([[5.0, 2.0], [5.0, 0.0], [5.0, 1.0]]))
    assert X.tolist() == [[5.0, 3.0], [5.0, 0.0], [5.0, 1.0]]
