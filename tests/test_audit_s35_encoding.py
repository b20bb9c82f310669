"""Session 35 audit (h2, round 2): the encode block -- declared feature values to the model's inputs
(fairspec/runtime/encoding.py, sema/check_features.py, sema/names.py) -- compared with brute force on the
model's own runtime fed exactly those inputs."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("skops")
pd = pytest.importorskip("pandas")

IF_SPEC = """features F {{
  a : int in [0, 3]
  g : {{A, B}} protected
}}
model m = sklearn("{file}"{trust})
encode F for m {{ a : raw  g : code {{A = 0, B = 1}} }}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
}}
"""


def _named_lr(columns, coef):
    """A LogisticRegression fit on a data frame with ``columns`` (a 0/1 column, then an int column), its
    coefficients set: label = coef . x > 0.5 (the intercept -0.5)."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = pd.DataFrame({columns[0]: rng.integers(0, 2, 60).astype(float),
                      columns[1]: rng.integers(0, 4, 60).astype(float)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression().fit(X, np.arange(60) % 2)
    m.coef_, m.intercept_ = np.array([coef]), np.array([-0.5])
    return m


@pytest.mark.parametrize("columns", [("G", "A"), ("G", "a"), (" g", " a"), ("g ", "a ")])
def test_input_names_differing_in_case_are_read_by_name(tmp_path, columns):
    """A model fit on a frame whose columns are the features' names in another case ("G", "A" for g, a) and
    in another order than the block's: its label reads the first input (G) only, so changing g changes it --
    violated. The block named none of the names exactly, so its columns were fed in the block's order (a into
    G): the label read a, and individual fairness `holds` with only FS421 said. ("G", "a": FS420, an error.)
    Now a name equal up to case is that input (FS421 says so) and the verdict is the runtime's. Failed before
    the fix (holds; an FS420 error). So for names with spaces around them (" g": pandas keeps the spaces of a
    header like Adult's ", sex", which fairspec strips from the data's): holds before."""
    import skops.io as sio

    from fairspec import api

    sio.dump(_named_lr(columns, [1.0, 0.0]), tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(IF_SPEC.format(file="m.skops", trust=""))
    rep = api.check(str(tmp_path / "s.fair"))
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    (p,) = rep.to_dict()["properties"]
    assert p["status"] == "violated", p
    assert any(d.code == "FS421" and "differing in case or spaces" in d.message for d in rep.diagnostics)


@pytest.mark.parametrize("coef", [[1.0, 0.0], [0.0, 1.0]])
def test_pickle_names_in_another_order_are_refused(tmp_path, coef):
    """A pickled model fit on a frame (g, a) -- lint reads no pickle's names -- under a block listing a, g was fed
    a into g's input: for coef [1, 0] (the label reads g only: violated) fairspec said `holds`, the load entry
    claiming "input_order": "names". Check now matches the names it reads on loading: another order is FS420
    (too late to remap the block), never an evaluation on swapped columns. Failed before the fix (holds)."""
    from fairspec import api

    with open(tmp_path / "m.pkl", "wb") as fh:
        pickle.dump(_named_lr(("g", "a"), coef), fh)
    (tmp_path / "s.fair").write_text(IF_SPEC.format(file="m.pkl", trust=", trust pickle"))
    rep = api.check(str(tmp_path / "s.fair"))
    errors = [d for d in rep.diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == ["FS420"], rep.diagnostics
    assert "g, a" in errors[0].message and errors[0].span is not None
    assert not [p for p in rep.to_dict()["properties"] if p.get("status") in ("holds", "violated")]


def test_pickle_names_in_the_block_order_are_checked_silently(tmp_path):
    """The same pickle under a block in its own order (g, a) is decided: violated (the label reads g)."""
    from fairspec import api

    with open(tmp_path / "m.pkl", "wb") as fh:
        pickle.dump(_named_lr(("g", "a"), [1.0, 0.0]), fh)
    spec = IF_SPEC.format(file="m.pkl", trust=", trust pickle").replace(
        "a : raw  g : code {A = 0, B = 1}", "g : code {A = 0, B = 1}  a : raw")
    (tmp_path / "s.fair").write_text(spec)
    rep = api.check(str(tmp_path / "s.fair"))
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    (p,) = rep.to_dict()["properties"]
    assert p["status"] == "violated", p


FIT_SPEC = """data d = csv("t.csv", label = y == 1)
features F from d {{
  a : int in [{lo}, {hi}]
  g : {{A, B}} protected
}}
model m = sklearn("m.skops")
encode F for m {{ a : standard  g : code {{A = 0, B = 1}} }}  # fairspec: ignore[FS427]
property sp {{ statistical_parity(m, groups g) <= 0.5 }}
"""


@pytest.mark.parametrize("batch", [1 << 16, 64])
def test_standard_fitted_on_a_streamed_file_is_the_in_memory_fit(tmp_path, monkeypatch, batch):
    """`standard` without parameters is fitted on the data: numpy's mean and std of the rows in memory, and, for a
    file too large to hold (streamed), the sum and the sum of squares less n mean^2 -- which loses every digit of
    a feature whose spread is small beside its mean: a in 10^8 .. 10^8 + 3 (std 1.125) was fitted std 0 (read as
    1), so the model was fed other inputs than in memory and parity came out 0.008 instead of 0.037. Now each
    batch is taken two-pass and the batches combined pairwise (Chan et al.). Failed before the fix (0.008)."""
    import warnings

    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    from fairspec import api
    from fairspec.runtime import columnar

    base, n = 100_000_000, 400
    rng = np.random.default_rng(0)
    a, g = base + rng.integers(0, 4, n), rng.choice(["A", "B"], n)
    z = (a - a.astype(float).mean()) / a.astype(float).std()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression().fit(np.c_[z, g == "B"], (z > 0).astype(int))
    m.coef_, m.intercept_ = np.array([[1.0, 0.0]]), np.array([-0.35])    # encoded a=base+2 is 0.34: negative
    pred = m.predict(np.c_[z, g == "B"])
    truth = abs(pred[g == "A"].mean() - pred[g == "B"].mean())
    sio.dump(m, tmp_path / "m.skops")
    pd.DataFrame({"a": a, "g": g, "y": pred}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(FIT_SPEC.format(lo=base, hi=base + 3))
    got = {}
    for stream in (False, True):
        if stream:
            monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
            monkeypatch.setattr(columnar, "BATCH_ROWS", batch)
        (p,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
        got[stream] = p["value"]
    assert got[False] == pytest.approx(truth, abs=1e-12)
    assert got[True] == pytest.approx(truth, abs=1e-12), got


def test_batch_stats_combine_as_numpy_reads_the_whole():
    """The streamed mean and std of batches agree with numpy's of all the values (to rounding; session 36:
    they are the exact ones correctly rounded, the same for every batching)."""
    from fairspec.runtime.encoding import _standard_scale, batch_stats

    rng = np.random.default_rng(1)
    v = 1e9 + rng.integers(0, 7, 1000).astype(float) + rng.random(1000)
    for size in (1000, 333, 64, 1):
        st = batch_stats({"a"}, ({"a": v[i:i + size]} for i in range(0, v.size, size)))["a"]
        lo, hi, n = st[:3]
        mean, std = _standard_scale(*st[2:])
        assert (lo, hi, n) == (v.min(), v.max(), v.size)
        assert mean == pytest.approx(v.mean(), rel=1e-15)
        assert std == pytest.approx(v.std(), rel=1e-6)     # the mean of 10^9s is exact to 2^-23


CONST_SPEC = """data d = csv("t.csv", label = y == 1)
features F from d {{
  r : real in [0, 1]
  g : {{A, B}} protected
}}
model m = sklearn("m.skops")
encode F for m {{ r : standard  g : code {{A = 0, B = 1}} }}  # fairspec: ignore[FS427]
property sp {{ statistical_parity(m, groups g) <= 0.5 }}
"""


@pytest.mark.parametrize("stream", [False, True])
def test_standard_fitted_on_a_constant_column_scales_by_one(tmp_path, monkeypatch, stream):
    """A real feature constant in the data (every row 1/3): its std is 0, read as 1 (README: `(v - mean) / std`,
    a zero std read as 1, as scikit-learn's StandardScaler does), and every row encodes to 0. numpy's mean of the
    400 copies is 1/3 less an ulp and its std 5.6e-17, so each row was fed (1/3 - mean) / 5.6e-17 = 1, not 0:
    label = enc + 0.6 [g = B] - 0.3 > 0 put both groups positive (parity 0) where the model the spec describes
    separates them (parity 1). Now a column StandardScaler calls constant (runtime.encoding.fit_batches: its
    variance within scikit-learn's _is_constant_feature bound) is fitted mean = that value (the exact mean of the
    rows, rounded) and std 1.0, in memory and streamed. Failed before the fix (value 0)."""
    import warnings

    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    from fairspec import api
    from fairspec.runtime import columnar

    n, c = 400, 1 / 3
    rng = np.random.default_rng(0)
    g = rng.choice(["A", "B"], n)
    X = np.c_[np.zeros(n), g == "B"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression().fit(X, g == "B")
    m.coef_, m.intercept_ = np.array([[1.0, 0.6]]), np.array([-0.3])
    pred = m.predict(X)                         # every row's r encodes to (c - c) / 1 = 0
    truth = abs(pred[g == "A"].mean() - pred[g == "B"].mean())
    assert truth == 1.0
    sio.dump(m, tmp_path / "m.skops")
    pd.DataFrame({"r": np.full(n, c), "g": g, "y": pred.astype(int)}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(CONST_SPEC.format())
    if stream:
        monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
        monkeypatch.setattr(columnar, "BATCH_ROWS", 64)
    rep = api.check(str(tmp_path / "s.fair"))
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    (p,) = rep.to_dict()["properties"]
    assert p["value"] == pytest.approx(truth, abs=1e-12), p


def _two_input_onnx(path, names, w):
    """A graph of two float [N, 1] inputs ``names``: logit = w . (in0, in1) - 0.5."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, 1]) for n in names]
    W = numpy_helper.from_array(np.array(w, np.float32).reshape(2, 1), "W")
    B = numpy_helper.from_array(np.array([-0.5], np.float32), "B")
    nodes = [helper.make_node("Concat", list(names), ["x"], axis=1), helper.make_node("MatMul", ["x", "W"], ["xw"]),
             helper.make_node("Add", ["xw", "B"], ["logit"])]
    g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("logit", TensorProto.FLOAT, [None, 1])],
                          [W, B])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


@pytest.mark.parametrize("table", ["{0 = -1, 1 = 1}", "{0 = 2, 1 = 1}", "{0 = 0, 1 = 0.5}", "{0 = 1, 1 = 0}"])
def test_multi_input_onnx_code_table_feeds_each_category(tmp_path, table):
    """A graph with one input per column takes a category as itself (README, Multi-input ONNX): the feature
    g in {0, 1} feeds the float input g its number. The encoded column holds the category's code, which was
    read as a position in the categories sorted by code: {0 = -1, 1 = 1} fed both groups 1 (cats[-1], cats[1]):
    parity 0, `holds` where the graph (logit = g - 0.5) separates them (parity 1); {0 = 0, 1 = 0.5} fed 0 to
    both; {0 = 2, 1 = 1} failed (index 2 out of bounds). Now the code is looked up in the table. Failed before
    the fix (holds 0.0; an error)."""
    pytest.importorskip("onnxruntime")
    from fairspec import api

    _two_input_onnx(tmp_path / "m.onnx", ("g", "a"), [1.0, 0.0])
    rng = np.random.default_rng(0)
    a, g = rng.integers(0, 4, 200), rng.integers(0, 2, 200)
    pd.DataFrame({"a": a, "g": g, "y": a % 2}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(f"""data d = csv("t.csv", label = y == 1)
features F from d {{
  a : int in [0, 3]
  g : {{0, 1}} protected
}}
model m = onnx("m.onnx", output = "logit")
encode F for m {{ g : code {table}  a : raw }}
property p {{ statistical_parity(m, groups g) <= 0.5 }}
""")
    rep = api.check(str(tmp_path / "s.fair"))
    (p,) = rep.to_dict()["properties"]
    assert (p["status"], p["value"]) == ("violated", 1.0), p


def test_multi_input_onnx_names_differing_in_case_are_fed_by_name(tmp_path):
    """The graph's inputs G and A (the features g and a): lint maps them by name (FS421 says the case differs),
    and the runtime feeds them so -- it refused before ('feeds g, which is none of them')."""
    pytest.importorskip("onnxruntime")
    from fairspec import api

    _two_input_onnx(tmp_path / "m.onnx", ("G", "A"), [1.0, 0.0])
    rng = np.random.default_rng(0)
    a, g = rng.integers(0, 4, 200), rng.integers(0, 2, 200)
    pd.DataFrame({"a": a, "g": g, "y": a % 2}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text("""data d = csv("t.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  g : {0, 1} protected
}
model m = onnx("m.onnx", output = "logit")
encode F for m { a : raw  g : code }
property p { statistical_parity(m, groups g) <= 0.5 }
""")
    rep = api.check(str(tmp_path / "s.fair"))
    (p,) = rep.to_dict()["properties"]
    assert (p["status"], p["value"]) == ("violated", 1.0), (p, rep.to_dict().get("error"))


def test_one_hot_names_of_cells_read_with_their_space_are_read_by_name(tmp_path):
    """pandas.get_dummies of cells read with their leading space (Adult's " Male") names the columns
    "sex_ Male": a block `sex : onehot  race : onehot` over a model recording race_ *, sex_ * named none of them
    exactly, so it was fed in the block's order -- race's columns into sex's inputs -- and the model, which reads
    sex only, `held`. Names are now also compared without their spaces: mapped by name, violated. Failed before
    the fix (holds)."""
    import warnings

    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    from fairspec import api

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"race": rng.choice([" Black", " White"], 60), "sex": rng.choice([" Female", " Male"], 60)})
    X = pd.get_dummies(df).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression().fit(X, np.arange(60) % 2)
    m.coef_, m.intercept_ = np.array([[0.0, 0.0, -1.0, 1.0]]), np.array([0.0])      # sex_ Female, sex_ Male only
    sio.dump(m, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text("""features F {
  race : {Black, White}
  sex : {Female, Male} protected
}
model m = sklearn("m.skops")
encode F for m { sex : onehot  race : onehot }
property p {
  forall x, x' : F
  require x.* == x'.* except {sex}
  ensure label(m(x)) == label(m(x'))
}
""")
    rep = api.check(str(tmp_path / "s.fair"))
    (p,) = rep.to_dict()["properties"]
    assert p["status"] == "violated", (p, rep.diagnostics)


def test_multi_input_onnx_refused_binding_refuses_every_property(tmp_path):
    """A code table giving both categories one code cannot feed a graph its categories: refused on loading, and no
    property on the model is decided. (A regression guard: the model was cached before its binding, so a caller
    that caught the error would have got it unbound, fed by position; a model whose binding or load-time check
    fails is no longer cached. The run stops at the load error, so this passed before the change too.)"""
    pytest.importorskip("onnxruntime")
    from fairspec import api

    _two_input_onnx(tmp_path / "m.onnx", ("g", "a"), [1.0, 0.0])
    rng = np.random.default_rng(0)
    a, g = rng.integers(0, 4, 200), rng.integers(0, 2, 200)
    pd.DataFrame({"a": a, "g": g, "y": a % 2}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text("""data d = csv("t.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  g : {0, 1} protected
}
model m = onnx("m.onnx", output = "logit")
encode F for m { g : code {0 = 1, 1 = 1}  a : raw }
property p { statistical_parity(m, groups g) <= 0.5 }
property q { statistical_parity(m, groups g) <= 0.6 }
""")
    doc = api.check(str(tmp_path / "s.fair")).to_dict()
    assert not [p for p in doc["properties"] if p.get("status") in ("holds", "violated")], doc["properties"]


def test_a_loose_name_that_spells_two_encoded_columns_is_refused(tmp_path):
    """Review r2: model names ['sex_ Male', 'sexMale', 'sex_ Female'] and features `sex {Male, Female}` (onehot) and
    `sex_Male` (raw): 'sex_ Male' is, without spaces and case, a spelling of both sex=Male and the feature sex_Male.
    The loose match bound it to sex_Male and gave holds (proved) where the get_dummies reading (the model reads
    'sex_ Male' only) violates; now FS420 (the test failed before: holds)."""
    import warnings

    import pandas as pd
    sio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    from fairspec import api

    names = ["sex_ Male", "sexMale", "sex_ Female"]
    X = pd.DataFrame({n: np.r_[np.zeros(5), np.ones(5)] for n in names})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression().fit(X, np.arange(10) % 2)
    m.coef_, m.intercept_ = np.array([[1.0, 0.0, 0.0]]), np.array([-0.5])
    sio.dump(m, str(tmp_path / "m.skops"))
    (tmp_path / "s.fair").write_text("""features F {
  sex : {Male, Female} protected
  sex_Male : int in [0, 1]
}
model m = sklearn("m.skops")
encode F for m { sex : onehot  sex_Male : raw }
property p {
  forall x, x' : F
  require x.* == x'.* except {sex}
  ensure label(m(x)) == label(m(x'))
}
""")
    rep = api.check(tmp_path / "s.fair")
    assert not [p for p in rep.to_dict()["properties"] if p["status"] == "holds"]
    assert any(d.code == "FS420" and "sex_ Male" in d.message for d in rep.diagnostics), rep.diagnostics
