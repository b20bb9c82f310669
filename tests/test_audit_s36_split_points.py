"""Session 36 audit (h6, round 2): which raw values a compiled split sends right, decided on the floats the
runtime's encoder feeds -- never the split's rounded inverse image.

The distribution backends read a tree model compiled into one decision tree (cuts ``x <= c`` in model-input
units) on the features' raw values. ``c * std + mean`` rounded, then floored for a whole-number feature, sent the
age 60 left where HistGradientBoosting (a float64 ``x <= t``) sends it right: ``standard(mean = 37.3, std =
13.7)`` and a threshold one float below (60 - 37.3) / 13.7. The Boolean tree is checked against the model's own
predict on every row, and one statistical parity against brute force on that predict."""

from __future__ import annotations


import numpy as np
import pytest

pytest.importorskip("sklearn")

from fairspec import ir  # noqa: E402


def _fed(line_mean_std, v):
    m, s = line_mean_std
    return (np.asarray(v, dtype=np.float64) - m) / s


ENCODINGS = {
    "standard-37.3-13.7": ("age : standard(mean = 37.3, std = 13.7)", (37.3, 13.7)),
    "standard-0.1-0.3": ("age : standard(mean = 0.1, std = 0.3)", (0.1, 0.3)),
    "minmax-0.1-99.7": ("age : minmax(lo = 0.1, hi = 99.7)", (0.1, 99.7 - 0.1)),
}


def _spec(tmp_path, ages, groups, enc_line, domain, thresholds, kind="hgb", prop=None, stump=False):
    """A HistGradientBoosting (float64 compare) or a decision tree on [age, grp one-hot] whose age thresholds
    are ``thresholds`` (model-input units), and its spec."""
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.tree import DecisionTreeClassifier

    real = domain.startswith("real")
    rows = ["grp,age"] + [f"{g},{repr(float(a)) if real else int(a)}" for g, a in zip(groups, ages)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    g = np.array([x == "yes" for x in groups], dtype=float)
    X = np.column_stack([np.arange(len(ages), dtype=float), 1 - g, g])
    y = np.arange(len(ages)) % 3 == 0
    if stump:                       # one split, on age: the rows from 55 on are positive
        X[:, 1] = np.arange(len(ages)) % 2
        X[:, 2] = 1 - X[:, 1]
        y = np.arange(len(ages)) >= 55
    if kind == "hgb":
        est = HistGradientBoostingClassifier(max_iter=1 if stump else 12, max_depth=2 if stump else 3,
                                             learning_rate=1.0, random_state=0).fit(X, y)
        sites = [(p.nodes["num_threshold"], i) for it in est._predictors for p in it
                 for i in range(len(p.nodes)) if not p.nodes["is_leaf"][i] and p.nodes["feature_idx"][i] == 0]
    else:
        est = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X, y)
        t = est.tree_
        sites = [(t.threshold, i) for i in range(t.node_count) if t.children_left[i] != -1 and t.feature[i] == 0]
    assert sites
    if not stump:                   # leaves of either class, at random, so that every split can matter
        rng = np.random.default_rng(len(sites))
        if kind == "hgb":
            for it in est._predictors:
                for p in it:
                    leaf = p.nodes["is_leaf"].astype(bool)
                    p.nodes["value"][leaf] = rng.choice([-3.0, 3.0], int(leaf.sum()))
        else:
            t = est.tree_
            for i in range(t.node_count):
                if t.children_left[i] == -1:
                    t.value[i, 0, :] = [1.0, 0.0] if rng.random() < 0.5 else [0.0, 1.0]
    for n, (arr, i) in enumerate(sites):
        arr[i] = thresholds[n % len(thresholds)]
    sio.dump(est, tmp_path / "m.skops")
    text = f"""\
data people = csv("d.csv")
features People from people {{
  grp : {{no, yes}} protected
  age : {domain}
}}
model m = sklearn("m.skops")
encode People for m {{
  {enc_line}
  grp : onehot
}}
property p {{
  {prop or "disparate_impact(m, groups grp, distribution conditional(people)) >= 0.1"}
}}
"""
    (tmp_path / "s.fair").write_text(text)
    return tmp_path / "s.fair"


def _boolean_vs_predict(path):
    from fairspec.backends.boolean.compile import classifier_form
    from fairspec.kinds.distribution_problem import discretise_rows
    from fairspec.pipeline import lint
    from fairspec.runtime.context import Context

    sp = lint(path).spec
    ctx = Context(sp)
    fs = sp.feature_set("People")
    form = classifier_form(sp.model("m"), ctx, fs)
    rows = ctx.rows("People", "people")
    data, _ = discretise_rows(fs, rows, ["grp", "age"], {}, form.needs, None)
    tree = form.build(data.variables, ctx, rows, data.codes)
    want = ctx.model("m").decide(ctx.model_input("m", rows.frame.values, rows.frame.n_rows)).astype(bool)
    got = tree.predict(data.codes)
    return np.asarray(rows.frame.values["age"])[got != want]


def _around(e: float):
    """e and the floats two steps either side of it."""
    out = [e]
    for d in (np.inf, -np.inf):
        x = e
        for _ in range(2):
            x = float(np.nextafter(x, d))
            out.append(x)
    return out


@pytest.mark.parametrize("kind", ["hgb", "dt"])
@pytest.mark.parametrize("enc", list(ENCODINGS))
def test_int_feature_every_age_where_the_runtime_sends_it(tmp_path, enc, kind):
    """Thresholds on an encoded age's float64 feed and the floats beside it, the domain's ends included
    (int in [5, 60]): the Boolean tree decides every row as predict. Before the fix (HistGradientBoosting):
    the rows of age 60 (and others) sent left, one integer off."""
    line, ms = ENCODINGS[enc]
    ages = np.arange(5, 61).repeat(2)
    groups = ["yes" if i % 2 else "no" for i in range(len(ages))]
    thr = [t for v in (5, 17, 33, 59, 60) for t in _around(float(_fed(ms, [v])[0]))]
    rng = np.random.default_rng(0)
    for seed in range(4):
        rng.shuffle(thr)
        path = _spec(tmp_path, ages, groups, line, "int in [5, 60]   bins [30]", thr, kind)
        bad = _boolean_vs_predict(path)
        assert bad.size == 0, (seed, sorted(set(bad.tolist())))


@pytest.mark.parametrize("enc", list(ENCODINGS))
def test_real_feature_every_row_where_the_runtime_sends_it(tmp_path, enc):
    """A real feature (bins from the data and the splits): thresholds on a data value's feed and beside it."""
    line, ms = ENCODINGS[enc]
    rng = np.random.default_rng(1)
    ages = np.round(rng.uniform(5, 60, 120), 1)
    groups = ["yes" if i % 2 else "no" for i in range(len(ages))]
    for seed in range(4):
        thr = [t for v in rng.choice(ages, 5) for t in _around(float(_fed(ms, [v])[0]))]
        path = _spec(tmp_path, ages, groups, line, "real in [5, 60]   bins [30]", thr)
        bad = _boolean_vs_predict(path)
        assert bad.size == 0, (seed, sorted(set(bad.tolist())))


def test_statistical_parity_at_the_float_below_an_age(tmp_path):
    """End to end: group yes is aged 60, group no 5..59; one split one float below the feed of 60. The runtime
    sends 60 right (its class differs from every younger age's), so statistical parity over the data's
    conditional distribution is the difference of the groups' shares of predict on their rows: 1. Before the fix
    the Boolean form sent 60 left: the value 0 (an estimate from 75 rows, so its bound keeps it unknown)."""
    import fairspec

    ms = (37.3, 13.7)
    t = float(np.nextafter(_fed(ms, [60.0])[0], -np.inf))
    ages = np.r_[np.arange(5, 60), np.full(20, 60)]
    groups = ["no"] * 55 + ["yes"] * 20
    path = _spec(tmp_path, ages, groups, ENCODINGS["standard-37.3-13.7"][0], "int in [5, 60]   bins [30]", [t],
                 prop="statistical_parity(m, groups grp, distribution conditional(people)) <= 0.5\n  using ssat",
                 stump=True)
    from fairspec.pipeline import lint
    from fairspec.runtime.context import Context

    sp = lint(path).spec
    ctx = Context(sp)
    rows = ctx.rows("People", "people")
    pred = ctx.model("m").decide(ctx.model_input("m", rows.frame.values, rows.frame.n_rows)).astype(bool)
    g = np.array(groups) == "yes"
    truth = abs(pred[g].mean() - pred[~g].mean())
    assert pred[g].all() != pred[~g].any() or truth > 0.5, "the model must tell 60 apart"
    rep = fairspec.check(path).report
    v = {x.name: x for x in rep.verdicts}["p"]
    assert not rep.internal_errors
    assert truth == 1.0 and v.value is not None and abs(v.value - truth) < 1e-9, (v.status, v.value, truth)
    assert v.status != "holds", (v.status, v.value, v.reason)


@pytest.mark.parametrize("enc", list(ENCODINGS))
def test_raw_cut_against_every_integer(enc):
    """raw_cut(c) is the largest age the encoder feeds at most c, for c on and beside every age's feed."""
    from fairspec.backends.boolean.split_points import box, fed, raw_cut

    line, ms = ENCODINGS[enc]
    col = {"standard-37.3-13.7": ir.ColumnEncoding("age", "standard", 0, 1, mean=37.3, std=13.7),
           "standard-0.1-0.3": ir.ColumnEncoding("age", "standard", 0, 1, mean=0.1, std=0.3),
           "minmax-0.1-99.7": ir.ColumnEncoding("age", "minmax", 0, 1, lo=0.1, hi=99.7)}[enc]
    f = ir.Feature("age", ir.IntRange(5, 60), False, "age")
    ages = np.arange(5, 61, dtype=np.float64)
    feeds = fed(col, ages)
    assert np.array_equal(feeds, _fed(ms, ages))
    lo, hi = box(col, f)
    assert lo < feeds[0] and lo == np.nextafter(feeds[0], -np.inf) and hi == feeds[-1]
    for v in ages:
        for c in _around(float(_fed(ms, [v])[0])):
            r = raw_cut(col, f, c)
            want = ages[feeds <= c]
            assert r == (want.max() if want.size else 4.0), (v, c, r)


@pytest.mark.parametrize("domain", ["int in [5, 60]", "real in [5, 60]"])
def test_tree_engines_fold_splits_on_the_encoders_feeds(tmp_path, domain):
    """The tree engines (MILP / SMT / local search of individual fairness, k-discrimination's leaf bound) read
    a tree model folded into feature space (backends/trees/space.fold). A split was placed at
    ``(t - shift) / scale`` (a real feature) or found by evaluating ``scale * v + shift`` (an int one), which
    is not the runtime's ``(v - mean) / std``: thresholds one float from an age's feed put ages on the wrong
    side (a candidate pair that does not replay, or a violation missed: never a proof, the engines' holds
    is unknown). With the encoder's feeds (kinds.lowering.encoder_feeds) the folded ensemble agrees with the
    ensemble on the encoded inputs at every age tried; without them it does not (checked here too)."""
    from fairspec.backends.trees.space import fold
    from fairspec.kinds.lowering import encoder_feeds, lower_pair
    from fairspec.pipeline import lint
    from fairspec.runtime.context import Context
    from fairspec.runtime.encoding import encode

    line, ms = ENCODINGS["standard-37.3-13.7"]
    ages = np.arange(5, 61).repeat(2)
    groups = ["yes" if i % 2 else "no" for i in range(len(ages))]
    at = (5.0, 17.0, 33.0, 59.0, 60.0) if domain.startswith("int") else (5.0, 17.3, 33.7, 59.9, 60.0)
    thr = [t for v in at for t in _around(float(_fed(ms, [v])[0]))]
    vals = sorted({x for v in at for x in _around(v) if 5 <= x <= 60})
    if domain.startswith("int"):
        vals = list(range(5, 61))
    prop = "forall x, x' : People\n  require x.* == x'.* except {grp}\n  ensure label(m(x)) == label(m(x'))"
    wrong_before = 0
    for seed in range(3):
        np.random.default_rng(seed).shuffle(thr)
        path = _spec(tmp_path, ages, groups, line, domain, thr, "hgb", prop=prop)
        sp = lint(path).spec
        ctx = Context(sp)
        enc = ctx.encoding("m")
        low = lower_pair(sp.properties[0], sp.feature_set("People"), enc)
        ens = ctx.model("m").tree_ensemble()
        V = np.array([[a, 1.0 - g, g] for a in vals for g in (0.0, 1.0)])
        want = ens.aggregate(encode(enc, {"age": V[:, 0], "grp": V[:, 2]}, len(V)))
        got = fold(ens, low.lo, low.hi, low.integer, low.scale, low.shift, encoder_feeds(enc)).aggregate(V)
        assert np.array_equal(got, want), (seed, sorted(set(V[got != want, 0].tolist())))
        old = fold(ens, low.lo, low.hi, low.integer, low.scale, low.shift).aggregate(V)
        wrong_before += int(not np.array_equal(old, want))
    assert wrong_before, "the thresholds no longer tell the two readings apart"


def test_pba_tree_neighbourhood_is_fed_as_the_encoder_feeds_it(tmp_path):
    """PBA on a tree model: the point at offset d of a row aged a is the encoder's feed of a + d. It was the
    encoded centre moved by d * (1 / std): (40 - 37.3) / 13.7 + 20 / 13.7 is one float above the feed of 60.
    One split at t = feed(60) (``x <= t``: class 0): every age 20..60 is class 0 on the runtime, so every row's
    robustness holds; before the fix the rows aged 40 were refuted at a model input no age is fed as (RB obs
    50%). Checked against predict at every age of every neighbourhood."""
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier

    import fairspec

    m, s = 37.3, 13.7
    f60 = (60 - m) / s
    assert (40 - m) / s + 20 * (1 / s) > f60
    ages = np.array([40] * 10 + [50] * 10)
    grp = np.array([0, 1] * 10)
    est = HistGradientBoostingClassifier(max_iter=1, max_depth=2, learning_rate=1.0, min_samples_leaf=1,
                                         random_state=0).fit(np.column_stack([np.arange(20.0), grp, 1 - grp]),
                                                             np.arange(20) >= 10)
    nd = est._predictors[0][0].nodes
    root = int(np.flatnonzero(~nd["is_leaf"].astype(bool))[0])
    nd["feature_idx"][root], nd["num_threshold"][root] = 0, f60
    nd["value"][nd["left"][root]], nd["value"][nd["right"][root]] = -5.0, 5.0
    est._baseline_prediction[:] = 0.0
    sio.dump(est, tmp_path / "m.skops")
    (tmp_path / "d.csv").write_text("grp,age,y\n" + "".join(f"{'yes' if g else 'no'},{a},0\n"
                                                             for g, a in zip(grp, ages)))
    (tmp_path / "s.fair").write_text('''data d = csv("d.csv", label = y == 1)
features F from d {
  grp : {no, yes} protected
  age : int in [5, 60]
}
model m = sklearn("m.skops")
encode F for m {
  age : standard(mean = 37.3, std = 13.7)
  grp : onehot
}
property bias {
  pba(m, flip grp, around d, delta {age: 20})
}
''')
    # brute force: every row's neighbourhood [a - 20, a + 20] within [5, 60], fed as the encoder feeds it
    robust = []
    for a, g in zip(ages, grp):
        nb = np.arange(max(5, a - 20), min(60, a + 20) + 1, dtype=np.float64)
        X = np.column_stack([(nb - m) / s, np.full(nb.size, 1 - g), np.full(nb.size, g)])
        robust.append(bool((est.predict(X) == 0).all()))
    assert all(robust)
    v = fairspec.check(tmp_path / "s.fair").report.verdicts[0]
    for row in v.details["table"]["rows"]:
        assert row["rb_observed"] == 1.0 and row["rb_flipped"] == 1.0, row
