"""Pipelines the fold reads as maps (session 32): an OrdinalEncoder grouping infrequent categories (its
codes read off its own transform: the frequent ones numbered among themselves, the infrequent one last),
and ColumnTransformer ``transformer_weights`` (a passthrough number times w, a code table times w, a
scaler's affine map with a power-of-2 w folded in). Each folded encoding is checked bit for bit against
the pipeline's own ``pipeline[:-1].transform`` on every point of the domain (float64, and float32 as an
XGBoost final reads it); two categories sharing a code (several grouped as infrequent, an imputer of a
category) fold since session 33, their witnesses printed as pairs of the property (kinds/shared_codes); what
no encoding expresses stays refused, saying why: a weighted one-hot block, a scaler times a weight other
than a power of 2, an imputer of a number."""

from __future__ import annotations

import warnings
from itertools import product

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler  # noqa: E402

from fairspec.models.sklearn_pipeline import fold  # noqa: E402

CATS = ("c", "a", "e", "b", "d")         # declared in another order than sorted
FEATURES = {"g": CATS, "n": (-2, 4), "k": (0, 3)}


def _domain():
    rows = list(product(CATS, range(-2, 5), range(0, 4)))
    return pd.DataFrame(rows, columns=["g", "n", "k"])


def _fit_frame():
    # counts of g: a 32, b 28, c 29, d 31, e 30 (the domain's 28 each and some again): min_frequency = 29
    # is met exactly by c, not by b, the one infrequent category (coded last, after a c d e)
    dom = _domain()
    extra = pd.concat([dom[dom.g == "a"].head(4), dom[dom.g == "c"].head(1), dom[dom.g == "d"].head(3),
                       dom[dom.g == "e"].head(2)])
    return pd.concat([dom, extra], ignore_index=True)


def _pipe(ct):
    fr = _fit_frame()
    y = (np.arange(len(fr)) * 7 % 5 < 2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", ct), ("clf", LogisticRegression())]).fit(fr, y)


def _encoding(tmp_path, pipe, with_features=False):
    """fairspec's encoding of model m (the pipeline, dumped to m.skops) in a one-property spec s.fair;
    ``with_features``: and the spec's feature set of it, for ``SklearnModel.bind_encoding`` (from the same
    check: a second check_file of the spec was ~40 % of a bit-for-bit test's CPU)."""
    from fairspec.models.sklearn_model import import_skops_io
    from fairspec.sema.check import check_file

    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    (tmp_path / "s.fair").write_text(
        "features F {\n  g : {" + ", ".join(CATS) + "}  protected\n  n : int in [-2, 4]\n  k : int in [0, 3]\n}\n"
        'model m = sklearn("m.skops")\n'
        "property same {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n"
        "  ensure label(m(x)) == label(m(x'))\n}\n")
    res = check_file(tmp_path / "s.fair")
    assert not [d for d in res.diagnostics if d.is_error], res.diagnostics
    enc = res.spec.encoding_for("m")
    return (enc, res.spec.feature_set(enc.features)) if with_features else enc


def _assert_exact(tmp_path, pipe):
    from fairspec.runtime.encoding import encode

    assert fold(pipe).unfoldable == ()
    enc = _encoding(tmp_path, pipe)
    dom = _domain()
    values = {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(), "k": dom.k.to_numpy()}
    mine = encode(enc, values, len(dom))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = np.asarray(pipe[:-1].transform(dom), dtype=np.float64)
    assert mine.shape == theirs.shape
    assert np.array_equal(mine.view(np.int64), theirs.view(np.int64))      # bit for bit (no -0 / 0 slack)
    assert np.array_equal(mine.astype(np.float32), theirs.astype(np.float32))
    return enc


CASES = {
    "ordinal min_frequency met exactly": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(min_frequency=29, handle_unknown="use_encoded_value", unknown_value=-1), ["g"]),
         ("n", "passthrough", ["n", "k"])]),
    "ordinal fraction and max_categories": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(min_frequency=0.19, max_categories=5), ["g"]), ("n", MinMaxScaler(), ["n"]),
         ("k", "passthrough", ["k"])]),
    "weights 0.1 and 3 on codes and passthrough": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(), ["g"]), ("n", "passthrough", ["n"]), ("k", "passthrough", ["k"])],
        transformer_weights={"o": 0.1, "n": 3.0, "k": 0.37}),
    "weights of a power of 2 on scalers": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(min_frequency=29), ["g"]), ("n", StandardScaler(), ["n"]), ("k", MinMaxScaler(), ["k"])],
        transformer_weights={"o": 0.5, "n": 0.25, "k": 2.0}),
    "ordinal max_categories groups three": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(max_categories=3), ["g"]), ("n", "passthrough", ["n", "k"])]),
    "an imputer of a category before an ordinal encoder": lambda: ColumnTransformer(
        [("o", Pipeline([("i", SimpleImputer(missing_values="e", strategy="constant", fill_value="c")),
                         ("e", OrdinalEncoder(categories=[list(CATS)]))]), ["g"]), ("n", "passthrough", ["n", "k"])]),
    "weight on a grouped code table": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(min_frequency=29), ["g"]), ("n", StandardScaler(with_mean=False), ["n", "k"])],
        transformer_weights={"o": 0.1, "n": 4}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_folded_map_is_the_pipelines_own_transform_on_every_domain_point(tmp_path, name):
    _assert_exact(tmp_path, _pipe(CASES[name]()))


def test_the_one_infrequent_category_is_coded_last_and_one_just_meeting_min_frequency_keeps_its_own(tmp_path):
    enc = _assert_exact(tmp_path, _pipe(CASES["ordinal min_frequency met exactly"]()))
    (g,) = [c for c in enc.columns if c.feature == "g"]
    assert dict(zip(g.categories, g.codes)) == {"a": 0.0, "c": 1.0, "d": 2.0, "e": 3.0, "b": 4.0}


@pytest.mark.parametrize(("ct", "why"), [
    (lambda: ColumnTransformer([("o", OneHotEncoder(), ["g"]), ("n", "passthrough", ["n", "k"])],
                               transformer_weights={"o": 3.0}),
     "OneHotEncoder 'o' (transformer_weights multiplies its output by 3.0, not a power of 2: its one-hot columns become 0 / w, "
     "and an estimator's weights times w would round otherwise)"),
    (lambda: ColumnTransformer([("o", OrdinalEncoder(), ["g"]), ("n", StandardScaler(), ["n", "k"])],
                               transformer_weights={"n": 3.0}),
     "StandardScaler 'n' (transformer_weights multiplies its output by 3.0, not a power of 2: the scaled product rounds "
     "otherwise than one affine map of the column)"),
    (lambda: ColumnTransformer([("o", OrdinalEncoder(), ["g"]),
                                ("n", SimpleImputer(missing_values=0, strategy="mean"), ["n", "k"])]),
     "SimpleImputer 'n' (missing_values=0 replaces a value, not a missing cell)"),
    (lambda: ColumnTransformer([("o", Pipeline([("i", SimpleImputer(missing_values="b", strategy="most_frequent")),
                                                ("e", OneHotEncoder())]), ["g"]), ("n", "passthrough", ["n", "k"])]),
     "SimpleImputer 'o/i' (missing_values='b' replaces a value, not a missing cell)"),
])
def test_what_no_encoding_expresses_stays_refused_and_says_why(ct, why):
    assert fold(_pipe(ct())).unfoldable == (why,)


def WEIGHTED_ONEHOT(drop=None):  # noqa: N802
    return ColumnTransformer(
        [("o", OneHotEncoder(categories=[list(CATS)], drop=drop), ["g"]), ("n", StandardScaler(), ["n"]),
         ("k", "passthrough", ["k"])], transformer_weights={"o": 0.5, "n": 2.0, "k": 0.25})


@pytest.mark.parametrize(("final", "drop"), [("logistic", None), ("mlp", None), ("logistic", "first")])
def test_a_weighted_one_hot_block_folds_into_a_widened_linear_model_or_mlp_bit_for_bit(tmp_path, final, drop):
    """Columns 0 / w: fairspec encodes 0 / 1 and reads the estimator with its weights times w (a power of 2:
    every product the same float); scores come from the pipeline's own estimator on 0 / w."""
    from sklearn.neural_network import MLPClassifier

    from fairspec.models.network_sklearn import from_sklearn
    from fairspec.models.sklearn_model import SklearnModel
    from fairspec.runtime.encoding import encode

    est = LogisticRegression() if final == "logistic" else MLPClassifier((5,), max_iter=50, random_state=0)
    fr = _fit_frame()
    y = (np.arange(len(fr)) * 7 % 5 < 2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", WEIGHTED_ONEHOT(drop)), ("clf", est)]).fit(fr, y)
    folded = fold(pipe)
    assert folded.unfoldable == () and folded.scale is not None
    enc, features = _encoding(tmp_path, pipe, with_features=True)
    dom = _domain()
    X = encode(enc, {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(), "k": dom.k.to_numpy()},
               len(dom))
    g = [c for c in enc.columns if c.feature == "g"][0]
    assert set(np.unique(X[:, g.offset:g.offset + g.width])) == {0.0, 1.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = pipe[:-1].transform(dom)
        # the columns the pipeline's estimator reads, 0 / 1 times w: the pipeline's 0 / w
        assert np.array_equal(X[:, list(folded.keep)] * np.asarray(folded.scale), theirs)
        m = SklearnModel(tmp_path / "m.skops")
        m.bind_encoding(enc, features)
        assert np.array_equal(m.score(X), pipe.predict_proba(dom)[:, 1])
        if drop is not None:         # a dropped column laid out changes the sums' layout (as for drop alone)
            assert np.allclose(folded.final.decision_function(X), pipe.decision_function(dom), rtol=1e-12)
        elif final == "logistic":    # the widened estimator on 0 / 1: the pipeline's own decision, bit for bit
            assert np.array_equal(folded.final.decision_function(X), pipe.decision_function(dom))
        else:
            assert np.array_equal(folded.final.predict_proba(X), pipe.predict_proba(dom))
        net = from_sklearn(folded.final, readout="raw")
        assert net is not None


@pytest.mark.parametrize("drop", [None, "first"])
def test_a_weighted_one_hot_block_before_a_tree_folds_its_thresholds_read_for_0_and_1(tmp_path, drop):
    """A power-of-2 weight on a one-hot block before a tree (refused until session 34): each split on a 0 / w column
    gets the threshold sending 0 and 1 where it sent 0 and w (sklearn_group_splits), bit for bit the pipeline's."""
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.runtime.encoding import encode

    fr = _fit_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", WEIGHTED_ONEHOT(drop)), ("clf", DecisionTreeClassifier(max_depth=4))]).fit(
            fr, (fr.g.isin(["a", "d"]) ^ (fr.n > 1)).to_numpy().astype(int))
        folded = fold(pipe)
        assert folded.unfoldable == () and folded.scale is not None
        enc = _encoding(tmp_path, pipe)
        dom = _domain()
        X = encode(enc, {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(), "k": dom.k.to_numpy()},
                   len(dom))
        assert np.array_equal(folded.final.predict_proba(X), pipe.predict_proba(dom))


@pytest.mark.parametrize("backend", ["milp", "smt"])
def test_solvers_on_a_weighted_one_hot_pipeline_agree_with_its_own_predict(tmp_path, monkeypatch, backend):
    import fairspec

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the solver paths, not enumeration
    fr = _fit_frame()
    seen = set()
    for seed in range(4):
        y = np.random.default_rng(seed).integers(0, 2, len(fr)) if seed % 2 else (fr.n.to_numpy() >= 1).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pipe = Pipeline([("pre", WEIGHTED_ONEHOT()), ("clf", LogisticRegression(C=10.0 if seed < 2 else 0.01))]
                            ).fit(fr, y)
        _encoding(tmp_path, pipe)
        text = (tmp_path / "s.fair").read_text().replace("property same {", "property same {\n  using " + backend)
        (tmp_path / "s.fair").write_text(text)
        v = fairspec.check(tmp_path / "s.fair")["same"]
        assert v.status in ("holds", "violated"), v.reason
        dom = _domain()
        lab = pipe.predict(dom).reshape(len(CATS), -1)
        if v.status == "holds":
            assert v.how == "proved" and all(np.array_equal(lab[0], r) for r in lab), v.reason
        else:
            one = lambda f: pd.DataFrame([{k: f[k] for k in ("g", "n", "k")}])  # noqa: E731
            assert v.witness.features["g"] != v.witness.features_prime["g"]
            assert pipe.predict(one(v.witness.features))[0] != pipe.predict(one(v.witness.features_prime))[0]
        seen.add(v.status)
    assert seen == {"holds", "violated"}, seen


def test_a_witness_of_a_hand_written_shared_code_table_differs_in_the_protected_feature(tmp_path):
    """``code {A = 0, B = 0, C = 1}`` (warning FS438): (A, n = 2) and (B, n = 1) are admissible (they differ in
    g) and flip; the witness printed is (A, 2) and (A, 1), which differ only in n: not admissible."""
    import fairspec
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.sklearn_model import import_skops_io

    X = np.array([[c, n] for c in (0, 1) for n in range(4)], dtype=float)
    import_skops_io().dump(DecisionTreeClassifier(random_state=0).fit(X, (X[:, 1] >= 2).astype(int)),
                           str(tmp_path / "m.skops"))
    (tmp_path / "s.fair").write_text(
        "features F {\n  g : {A, B, C}  protected\n  n : int in [0, 3]\n}\nmodel m = sklearn(\"m.skops\")\n"
        "encode F for m {\n  g : code {A = 0, B = 0, C = 1}\n  n : raw\n}\n"
        "property p {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n  require |x.n - x'.n| <= 1\n"
        "  ensure label(m(x)) == label(m(x'))\n}\n")
    v = fairspec.check(tmp_path / "s.fair")["p"]
    assert v.status == "violated"
    assert v.witness.features["g"] != v.witness.features_prime["g"], (v.witness.features, v.witness.features_prime)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("final", ["tree", "logistic"])
def test_a_grouping_ordinal_encoder_folds_and_its_witness_is_a_pair_of_the_property(tmp_path, final, grouped):
    """OrdinalEncoder(max_categories=3) codes b, c, e alike (folded since session 33: kinds/shared_codes prints the
    categories of a shared code that make the pair the property's): the verdict is the brute force's over every
    pair of the domain on the pipeline's own predict, and a witness differs in g, n within 1 and k equal, and
    replays on the pipeline as printed. ``grouped``: both g among the grouped b, c, e (one model input)."""
    import fairspec
    from sklearn.tree import DecisionTreeClassifier

    fr = _fit_frame()
    y = (fr.n.to_numpy() >= 2).astype(int)        # g never matters: a pair breaking it may share g's code
    est = DecisionTreeClassifier(random_state=0) if final == "tree" else LogisticRegression(C=100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", ColumnTransformer([("o", OrdinalEncoder(max_categories=3), ["g"]),
                                                    ("n", "passthrough", ["n", "k"])])), ("clf", est)]).fit(fr, y)
    assert fold(pipe).unfoldable == ()
    _encoding(tmp_path, pipe)
    more = "  require x.g in {b, c, e} and x'.g in {b, c, e}\n" if grouped else ""
    text = (tmp_path / "s.fair").read_text().replace("except {g}\n", "except {g}\n  require |x.n - x'.n| <= 1\n" + more)
    (tmp_path / "s.fair").write_text(text)
    v = fairspec.check(tmp_path / "s.fair")["same"]
    dom = _domain()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab = dict(zip(map(tuple, dom.to_numpy().tolist()), pipe.predict(dom)))
    ok = (lambda g, g2: g in "bce" and g2 in "bce") if grouped else (lambda g, g2: True)
    truth = any(a[0] != b[0] and abs(a[1] - b[1]) <= 1 and a[2] == b[2] and ok(a[0], b[0]) and lab[a] != lab[b]
                for a in lab for b in lab)
    assert v.status == ("violated" if truth else "holds"), v.reason
    assert truth                     # the case is built to break: n moves the label, b / c / e share a code
    x, y2 = v.witness.features, v.witness.features_prime
    assert x["g"] != y2["g"] and abs(x["n"] - y2["n"]) <= 1 and x["k"] == y2["k"] and ok(x["g"], y2["g"]), (x, y2)
    assert lab[(x["g"], x["n"], x["k"])] != lab[(y2["g"], y2["n"], y2["k"])], (x, y2)


GROUPED = {
    "min_frequency alone (b infrequent, its own column)": dict(min_frequency=29),
    "max_categories 3 (three grouped)": dict(max_categories=3),
    "max_categories 3, drop first": dict(max_categories=3, drop="first"),
    "min_frequency, drop first": dict(min_frequency=29, drop="first"),
    "max_categories 2, sparse": dict(max_categories=2, sparse_output=True),
}


def _grouped_pipe(kw, final="logistic", weight=None, y=None):
    from sklearn.neural_network import MLPClassifier

    fr = _fit_frame()
    y = (np.arange(len(fr)) * 7 % 5 < 2).astype(int) if y is None else y(fr)
    est = {"logistic": lambda: LogisticRegression(),
           "mlp": lambda: MLPClassifier((5,), max_iter=50, random_state=0)}[final]() if isinstance(final, str) else final
    ct = ColumnTransformer([("o", OneHotEncoder(categories=[list(CATS)], **kw), ["g"]),
                            ("n", "passthrough", ["n", "k"])], transformer_weights=weight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", ct), ("clf", est)]).fit(fr, y)


@pytest.mark.parametrize("weight", [None, {"o": 0.5}])
@pytest.mark.parametrize("final", ["logistic", "mlp"])
@pytest.mark.parametrize("name", sorted(GROUPED))
def test_a_one_hot_encoder_grouping_infrequent_categories_folds_bit_for_bit(tmp_path, name, final, weight):
    """One column per category in fairspec's encoding; the pipeline's estimator reads each grouped column as the
    sum of its categories' columns (0s and one 1: exact): that input is the pipeline's own transform bit for bit on
    every domain point, and so are the scores; the widened estimator the solvers read (its weights on a group
    copied to each member) has, on every domain point, exactly the pipeline's estimator's sum of products."""
    from fractions import Fraction

    from fairspec.models.sklearn_model import SklearnModel
    from fairspec.runtime.encoding import encode

    pipe = _grouped_pipe(GROUPED[name], final, weight)
    folded = fold(pipe)
    assert folded.unfoldable == ()
    enc, features = _encoding(tmp_path, pipe, with_features=True)
    dom = _domain()
    X = encode(enc, {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(), "k": dom.k.to_numpy()},
               len(dom))
    (g,) = [c for c in enc.columns if c.feature == "g"]
    assert g.kind == "onehot" and g.width == len(CATS)
    m = SklearnModel(tmp_path / "m.skops")
    m.bind_encoding(enc, features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, Xr = m._runtime(X)
        theirs = pipe[:-1].transform(dom)
        theirs = np.asarray(theirs.toarray() if hasattr(theirs, "toarray") else theirs, dtype=np.float64)
        assert np.array_equal(Xr.view(np.int64), theirs.view(np.int64))          # bit for bit, -0 apart
        assert np.array_equal(m.score(X), pipe.predict_proba(dom)[:, 1])
    def first(est):         # the first layer's weights, one row per output
        return np.atleast_2d(est.coef_) if final == "logistic" else np.asarray(est.coefs_[0]).T

    # (weighted: the widened weights are times w on 0 / 1, the pipeline's on 0 / w: the same products)
    W, V = first(folded.final), first(pipe[-1])
    for i in range(len(dom)):                   # exact rationals: the widened sums are the pipeline's own
        for r in range(W.shape[0]):
            a = sum(Fraction(float(w)) * Fraction(float(x)) for w, x in zip(W[r], X[i]))
            b = sum(Fraction(float(w)) * Fraction(float(x)) for w, x in zip(V[r], theirs[i]))
            assert a == b, (name, i, r)


def test_a_tree_splitting_on_a_group_of_infrequent_categories_folds_weighted_or_not():
    """A split on the group's column is rewritten as splits on its categories' columns (session 34,
    tests/test_pipeline_group_splits.py), after a power-of-2 transformer weight too."""
    from sklearn.tree import DecisionTreeClassifier

    split = _grouped_pipe(dict(max_categories=3), DecisionTreeClassifier(random_state=0),
                          y=lambda fr: fr.g.isin(["b", "c", "e"]).to_numpy().astype(int))
    assert fold(split).unfoldable == () and fold(split).merged is not None
    other = _grouped_pipe(dict(max_categories=3), DecisionTreeClassifier(random_state=0),
                          y=lambda fr: (fr.n.to_numpy() >= 1).astype(int))
    assert fold(other).unfoldable == () and fold(other).merged is not None
    weighted = _grouped_pipe(dict(max_categories=3), DecisionTreeClassifier(random_state=0), weight={"o": 0.5},
                             y=lambda fr: fr.g.isin(["b", "c", "e"]).to_numpy().astype(int))
    assert fold(weighted).unfoldable == () and fold(weighted).scale is not None


@pytest.mark.parametrize("backend", ["enumeration", "milp", "smt"])
def test_a_grouped_one_hot_pipeline_is_decided_as_its_own_predict_with_a_replaying_witness(tmp_path, monkeypatch,
                                                                                          backend):
    """The verdict is the brute force's over every pair of the domain on the pipeline's own predict (solvers: holds
    proved, or violated); a witness differs in g and flips on the pipeline as printed."""
    import fairspec

    if backend != "enumeration":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    seen = set()
    for seed in range(4):
        rng = np.random.default_rng(seed)
        pipe = _grouped_pipe(dict(max_categories=3), LogisticRegression(C=10.0 if seed < 2 else 0.01),
                             y=lambda fr: rng.integers(0, 2, len(fr)) if seed % 2 else (fr.n.to_numpy() >= 1).astype(int))
        _encoding(tmp_path, pipe)
        if backend != "enumeration":
            text = (tmp_path / "s.fair").read_text().replace("property same {", "property same {\n  using " + backend)
            (tmp_path / "s.fair").write_text(text)
        v = fairspec.check(tmp_path / "s.fair")["same"]
        dom = _domain()
        lab = pipe.predict(dom).reshape(len(CATS), -1)
        truth = not all(np.array_equal(lab[0], r) for r in lab)
        assert v.status == ("violated" if truth else "holds"), (seed, v.status, v.reason)
        if v.status == "holds":
            assert v.how == "proved", v.reason
        else:
            one = lambda f: pd.DataFrame([{k: f[k] for k in ("g", "n", "k")}])  # noqa: E731
            assert v.witness.features["g"] != v.witness.features_prime["g"]
            assert pipe.predict(one(v.witness.features))[0] != pipe.predict(one(v.witness.features_prime))[0]
        seen.add(v.status)
    assert seen == {"holds", "violated"}, seen


IMPUTERS = {
    "-5, below both domains": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(), ["g"]), ("n", SimpleImputer(missing_values=-5, strategy="mean"), ["n", "k"])]),
    "0.5, no whole number": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(), ["g"]), ("n", SimpleImputer(missing_values=0.5, strategy="median"), ["n", "k"])]),
    "99 before a scaler, weighted": lambda: ColumnTransformer(
        [("o", OrdinalEncoder(), ["g"]),
         ("n", Pipeline([("i", SimpleImputer(missing_values=99, strategy="mean")), ("s", StandardScaler())]), ["n"]),
         ("k", "passthrough", ["k"])], transformer_weights={"n": 0.5}),
}


@pytest.mark.parametrize("name", sorted(IMPUTERS))
def test_an_imputer_of_a_number_no_domain_point_holds_folds_as_the_identity_bit_for_bit(tmp_path, name):
    """SimpleImputer(missing_values=v) with v no value of the declared domain: the identity on every domain point
    (settle, once the spec's domain is known), so the encoding is the pipeline's own transform bit for bit and the
    scores its own predict_proba."""
    from fairspec.models.sklearn_model import SklearnModel
    from fairspec.models.sklearn_pipeline import settle
    from fairspec.runtime.encoding import encode

    pipe = _pipe(IMPUTERS[name]())
    assert fold(pipe).unfoldable and fold(pipe).unfoldable[0].startswith("SimpleImputer")   # until the domain is known
    enc, features = _encoding(tmp_path, pipe, with_features=True)
    assert settle(fold(pipe), features).unfoldable == ()
    dom = _domain()
    X = encode(enc, {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(), "k": dom.k.to_numpy()},
               len(dom))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = np.asarray(pipe[:-1].transform(dom), dtype=np.float64)
        assert np.array_equal(X.view(np.int64), theirs.view(np.int64))
        m = SklearnModel(tmp_path / "m.skops")
        m.bind_encoding(enc, features)
        assert not m.unfolded
        # the pipeline's own scores bit for bit, in the layout its ColumnTransformer hands over (column-major for
        # this passthrough: models/pipeline_layout)
        assert np.array_equal(m.score(X).view(np.int64), pipe.predict_proba(dom)[:, 1].view(np.int64))


@pytest.mark.parametrize(("mv", "column"), [(0, "n"), (4, "n"), (-2, "n")])
def test_an_imputer_of_a_number_the_domain_holds_stays_whole_naming_the_value_the_domain_and_the_statistic(
        tmp_path, mv, column):
    from fairspec.models.sklearn_model import import_skops_io
    from fairspec.sema.check import check_file

    pipe = _pipe(ColumnTransformer([("o", OrdinalEncoder(), ["g"]),
                                    ("i", SimpleImputer(missing_values=mv, strategy="mean"), ["n", "k"])]))
    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    (tmp_path / "s.fair").write_text(
        "features F {\n  g : {" + ", ".join(CATS) + "}  protected\n  n : int in [-2, 4]\n  k : int in [0, 3]\n}\n"
        'model m = sklearn("m.skops")\n')
    res = check_file(tmp_path / "s.fair")
    (d,) = [d for d in res.diagnostics if d.code == "FS423"]
    stat = pipe[0].named_transformers_["i"].statistics_[["n", "k"].index(column)]
    lo, hi = (-2, 4) if column == "n" else (0, 3)
    from fairspec.syntax.literals import number
    assert (f"SimpleImputer 'i' (missing_values={mv} replaces a value the domain of '{column}', [{lo}, {hi}], may hold "
            f"by {number(stat)}: a map of one point, which no encoding expresses)") in d.message, d.message


@pytest.mark.parametrize("kw", [dict(min_frequency=29), dict(max_categories=3)])
def test_a_grouping_one_hot_encoder_before_an_estimator_that_cannot_be_widened_stays_whole_and_says_why(kw):
    """A grouping that groups one category alone (its columns only reordered) or several, before an estimator
    fairspec does not widen (a support vector classifier): evaluated whole, saying so (it raised StopIteration)."""
    from sklearn.svm import SVC

    (why,) = fold(_grouped_pipe(kw, SVC())).unfoldable
    assert why.startswith("OneHotEncoder 'o' (it groups infrequent categories") and "SVC is not one" in why, why


@pytest.mark.parametrize(("w", "weighted"), [(3.0, "nk"), (0.1, "nk"), (0.37, "nk"), (1.5, "nk"), (10.0, "nk"),
                                             (7.0, "nk"), (3.0, "k")])
def test_a_scaler_times_a_weight_not_a_power_of_2_folds_only_where_every_int_domain_value_rounds_alike(tmp_path, w,
                                                                                                     weighted):
    """((v - mean) / std) * w (or (v * s + m) * w) is folded as one affine map of the column only where, on every
    value of the int domain, that map gives the pipeline's product bit for bit (checked one by one at settle);
    else FS423 names the step and a value where they differ, which they do there."""
    import re

    from fairspec.models.sklearn_model import import_skops_io
    from fairspec.runtime.encoding import _column_value, encode
    from fairspec.sema.check import check_file

    pipe = _pipe(ColumnTransformer([("o", OrdinalEncoder(), ["g"]), ("n", StandardScaler(), ["n"]),
                                    ("k", MinMaxScaler(), ["k"])], transformer_weights={e: w for e in weighted}))
    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    (tmp_path / "s.fair").write_text(
        "features F {\n  g : {" + ", ".join(CATS) + "}  protected\n  n : int in [-2, 4]\n  k : int in [0, 3]\n}\n"
        'model m = sklearn("m.skops")\n')
    res = check_file(tmp_path / "s.fair")
    dom = _domain()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = np.asarray(pipe[:-1].transform(dom), dtype=np.float64)
    from fairspec.models.sklearn_pipeline import settle

    said = list(settle(fold(pipe), res.spec.feature_set("F")).unfoldable)       # FS423's phrases, whole
    assert bool(said) == any(d.code == "FS423" for d in res.diagnostics)
    if weighted == "k":
        assert not said                 # k in [0, 3] times 3: every value rounds alike
    if not said:
        enc = res.spec.encoding_for("m")
        mine = encode(enc, {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(),
                            "k": dom.k.to_numpy()}, len(dom))
        assert np.array_equal(mine.view(np.int64), theirs.view(np.int64))
        return
    found = re.findall(r"(\w+Scaler) '(\w)' \(transformer_weights multiplies its output by [0-9.]+, not a power of 2: at "
                       r"'(\w)' = (-?\d+) the pipeline's product is (\S+) and one affine map of the column gives (\S+)\)",
                       "; ".join(said))
    assert len(found) == len(said), said
    alt = {c.column: c for c in fold(pipe).clipped.columns}
    for _, step, col, at, prod, mapped in found:
        row = int(np.flatnonzero(dom[col].to_numpy() == int(at))[0])
        j = 1 if col == "n" else 2
        assert theirs[row, j] == float(prod) != float(mapped) == _column_value(alt[col], float(at))


def test_a_scaler_times_a_weight_not_a_power_of_2_on_a_real_domain_stays_whole_saying_why(tmp_path):
    """A real domain cannot be checked value by value, and the pipeline's product ((v - mean) / std) * w differs in
    the last bit from one affine map (v - mean) / (std / w) on many reals (measured here): evaluated whole, FS423
    saying so (README, the pipeline section)."""
    from fairspec.models.sklearn_model import import_skops_io
    from fairspec.models.sklearn_pipeline import settle
    from fairspec.sema.check import check_file

    pipe = _pipe(ColumnTransformer([("o", OrdinalEncoder(), ["g"]), ("n", StandardScaler(), ["n"]),
                                    ("k", "passthrough", ["k"])], transformer_weights={"n": 3.0}))
    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    (tmp_path / "s.fair").write_text(
        "features F {\n  g : {" + ", ".join(CATS) + "}  protected\n  n : real in [-2, 4]\n  k : int in [0, 3]\n}\n"
        'model m = sklearn("m.skops")\n')
    res = check_file(tmp_path / "s.fair")
    (why,) = settle(fold(pipe), res.spec.feature_set("F")).unfoldable
    assert "the domain of 'n' is not a range of whole numbers" in why and "differ in the last bit" in why, why
    sc = pipe[0].named_transformers_["n"]
    mean, std = float(sc.mean_[0]), float(sc.scale_[0])
    v = np.random.default_rng(0).uniform(-2, 4, 10_000)
    assert np.mean((v - mean) / (std / 3.0) != ((v - mean) / std) * 3.0) > 0.1
