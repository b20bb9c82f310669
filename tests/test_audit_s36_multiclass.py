"""Session 36 audit (h5): multiclass readouts and XGBoost multi-class boosters.

Truth here is brute force on the library's own runtime: scikit-learn's ``predict`` (the first largest column at a
tie), XGBoost's ``Booster.predict`` (its class for multi:softmax, its float32 probabilities for multi:softprob) and
``output_margin=True`` (the margins ``logit(m(x), c)`` reads)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

GRID = np.array(list(itertools.product(range(4), range(2))), dtype=float)


def _pairs_differ(values) -> bool:
    """Does some pair (a, g=0) / (a, g=1) of GRID differ in ``values`` (one row per GRID point)?"""
    v = np.asarray(values)
    return any(not np.array_equal(v[i], v[i + 1]) for i in range(0, len(GRID), 2))


def _check(spec_path, enumerate_pairs, monkeypatch):
    from fairspec import api

    if enumerate_pairs == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    else:
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    return api.check(str(spec_path)).to_dict()


# ---- XGBoost multi:softmax: its booster computes no probability ------------------------------------------------

XGB_SPEC = """features F {{
  a : int in [0, 3]
  g : int in [0, 1] protected
}}
model m = xgboost("{file}")
encode F for m {{
  a : raw
  g : raw
}}
property pr {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure {post}
}}
"""


def _softmax_booster(tmp_path, ext):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = np.repeat(GRID, 30, axis=0)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, len(X))) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = xgb.train({"objective": "multi:softmax", "num_class": 3, "max_depth": 2, "nthread": 1},
                      xgb.DMatrix(X, label=y), num_boost_round=4)
    path = tmp_path / f"m.{ext}"
    b.save_model(str(path))
    loaded = xgb.Booster()
    loaded.load_model(str(path))
    return path, loaded


@pytest.mark.parametrize("ext", ["json", "ubj"])
def test_multi_softmax_prob_is_refused_in_one_sentence(tmp_path, monkeypatch, ext):
    """prob(m(x), c) of a multi:softmax booster: the booster's predict is the class and it computes no probability
    (the tree engines said so, `unknown`; the other paths read a float64 softmax of the margins, a number no runtime
    computes). Now FS415 at lint, with the hint to compare classes or margins. Failed before (no diagnostic)."""
    path, _ = _softmax_booster(tmp_path, ext)
    spec = tmp_path / "s.fair"
    spec.write_text(XGB_SPEC.format(file=path.name, post="|prob(m(x), 1) - prob(m(x'), 1)| <= 0.5"))
    rep = _check(spec, "", monkeypatch)
    errors = [d for d in rep["diagnostics"] if d["severity"] == "error"]
    assert [d["code"] for d in errors] == ["FS415"], errors
    assert "multi:softmax" in errors[0]["message"] and "multi:softprob" in errors[0]["hint"], errors[0]


@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
@pytest.mark.parametrize("ext", ["json", "ubj"])
def test_multi_softmax_class_and_margin_agree_with_the_booster(tmp_path, monkeypatch, ext, enumerate_pairs):
    """class(m(x)) is Booster.predict (the class), logit(m(x), c) its output_margin column, on both file formats and
    both the enumeration and the solver paths: verdicts as brute force on the booster's own outputs."""
    xgb = pytest.importorskip("xgboost")
    path, b = _softmax_booster(tmp_path, ext)
    cls = b.predict(xgb.DMatrix(GRID))
    margin = b.predict(xgb.DMatrix(GRID), output_margin=True).astype(np.float64)
    for post, differ in (("class(m(x)) == class(m(x'))", _pairs_differ(cls)),
                         ("|logit(m(x), 2) - logit(m(x'), 2)| <= 0", _pairs_differ(margin[:, 2]))):
        spec = tmp_path / "s.fair"
        spec.write_text(XGB_SPEC.format(file=path.name, post=post))
        (p,) = _check(spec, enumerate_pairs, monkeypatch)["properties"]
        assert p["status"] == ("violated" if differ else "holds"), (post, p)


# ---- index = i: "predict is class i", the first maximal column at an exact tie -----------------------------------

ONNX_SPEC = """features F {{
  a : int in [0, {top}]
  g : int in [0, 1] protected
}}
model m = onnx("m.onnx", index = {index})
encode F for m {{
  a : raw
  g : raw
}}
property lb {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
}}
"""


def _gemm_onnx(path, W, b):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])
    Y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, W.shape[1]])
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["logits"])], "g", [X], [Y],
                              [numpy_helper.from_array(W.astype(np.float32), "W"),
                               numpy_helper.from_array(b.astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("k", [2, 3])
def test_onnx_logits_index_reads_the_first_maximal_column_at_a_tie(tmp_path, monkeypatch, k, index, enumerate_pairs):
    """Logits [a, 1 + g/4] (k = 2) or [a, 1 + g/4, -10] (k = 3): at a = 1, g = 0 columns 0 and 1 tie exactly and the
    argmax (onnx ArgMax, class(m(x))) is column 0; at g = 1 it is column 1. label with index = i is "column i is the
    largest", the argmax's class: it changes with g for both i. Before the fix index = 0 read y_0 - max_j y_j > 0, which
    called the tie "not class 0": `holds` (enumeration, and the solver path's refinement for k = 2), truth violated."""
    ort = pytest.importorskip("onnxruntime")
    W = np.array([[1.0, 0.0, 0.0], [0.0, 0.25, 0.0]])[:, :k]
    b = np.array([0.0, 1.0, -10.0])[:k]
    _gemm_onnx(tmp_path / "m.onnx", W, b)
    y = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": GRID.astype(np.float32)})[0]
    truth = "violated" if _pairs_differ(np.argmax(y, axis=1) == index) else "holds"
    assert truth == "violated"
    (tmp_path / "s.fair").write_text(ONNX_SPEC.format(top=3, index=index))
    (p,) = _check(tmp_path / "s.fair", enumerate_pairs, monkeypatch)["properties"]
    if k == 3 and enumerate_pairs == "0":
        assert p["status"] == "unknown", p          # no solver encodes "column i is the largest of 3"
    else:   # k = 2, index = 0 on the solvers: decided as the negation of index = 1 (s37 h2, kinds/index_flip)
        assert p["status"] == truth, p


@pytest.mark.parametrize("index", [0, 1])
def test_smt_two_logits_index_0_is_not_proved_past_a_tie(tmp_path, monkeypatch, index):
    """The SMT backend encodes class `index` of two logits as z_i - z_(1-i) > 0. With index = 0 the runtime's argmax
    calls the tie (a = 1, g = 0) class 0, so the pair (1, 0) / (1, 1) flips the label: before, `holds (proved)` ("the
    exact SMT query with the violated post-condition is unsat"), truth violated. Then (s36) `unknown` naming index = 1;
    now (s37 h2) decided as the negation of index = 1, which asks the same label question: violated."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("z3")
    _gemm_onnx(tmp_path / "m.onnx", np.array([[1.0, 0.0], [0.0, 0.25]]), np.array([0.0, 1.0]))
    spec = ONNX_SPEC.format(top=3, index=index).replace("label(m(x'))\n", "label(m(x'))\n  using smt\n")
    assert "using smt" in spec
    (tmp_path / "s.fair").write_text(spec)
    (p,) = _check(tmp_path / "s.fair", "0", monkeypatch)["properties"]
    assert p["status"] == "violated", p


SK_SPEC = """features F {{
  a : int in [0, 3]
  g : {{A, B}} protected
}}
model m = sklearn("m.skops", index = {index}{score})
encode F for m {{ a : raw  g : code {{A = 0, B = 1}} }}  # fairspec: ignore[FS427]
property lb {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
}}
"""


def _tie_tree():
    """A 3-class DecisionTreeClassifier whose leaf at (a = 1, g = 0) holds classes 0 and 1 equally (predict_proba
    [0.5, 0.5, 0]: predict is class 0, the first largest) and at (a = 1, g = 1) mostly class 1."""
    from sklearn.tree import DecisionTreeClassifier

    rows = []
    for a, g in GRID.astype(int):
        rows += ([(a, g, 0), (a, g, 1)] if (a, g) == (1, 0) else [(a, g, 1)] * 3 + [(a, g, 0)] if a == 1
                 else [(a, g, 2)] * 2)
    R = np.array(rows, dtype=float)
    return DecisionTreeClassifier(random_state=0).fit(R[:, :2], R[:, 2].astype(int))


def _tie_linear():
    """A 3-class LogisticRegression whose decision_function is [a, 1 + g/4, -5 a]: columns 0 and 1 tie exactly at
    (a = 1, g = 0), where predict is class 0."""
    from sklearn.linear_model import LogisticRegression

    m = LogisticRegression().fit(GRID, np.array([0, 1, 2, 0, 1, 2, 0, 1]))
    m.coef_, m.intercept_ = np.array([[1.0, 0.0], [0.0, 0.25], [-5.0, 0.0]]), np.array([0.0, 1.0, 0.0])
    return m


@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
@pytest.mark.parametrize("score", ["", ", score = logit"])
@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("make", [_tie_tree, _tie_linear])
def test_sklearn_multiclass_index_reads_predict(tmp_path, monkeypatch, make, index, score, enumerate_pairs):
    """README: a multiclass scikit-learn classifier with index = i has the binary decision "its own predict is class
    i". Declared by its predict_proba (the default) it was refused (FS413: 'probability of column i > 0.5' is not
    the decision), though the loader's decide() reads predict. Now read, on every path, as brute force on predict:
    an exact tie between columns 0 and 1 is class 0. Failed before (FS413 for score unset)."""
    sio = pytest.importorskip("skops.io")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make()
        pred = est.predict(GRID)
    sio.dump(est, tmp_path / "m.skops")
    truth = "violated" if _pairs_differ(pred == est.classes_[index]) else "holds"
    (tmp_path / "s.fair").write_text(SK_SPEC.format(index=index, score=score))
    rep = _check(tmp_path / "s.fair", enumerate_pairs, monkeypatch)
    assert not [d for d in rep["diagnostics"] if d["severity"] == "error"], rep["diagnostics"]
    (p,) = rep["properties"]
    if enumerate_pairs == "0":
        assert p["status"] in (truth, "unknown"), p     # the solvers read binary classifiers only
    else:
        assert p["status"] == truth, p


MC_DATA_SPEC = """data d = csv("t.csv", label = y == 1)
features F from d {{
  a : int in [0, 3]
  g : {{A, B}} protected
}}
model m = sklearn("m.skops", index = {index})
encode F for m {{ a : raw  g : code {{A = 0, B = 1}} }}  # fairspec: ignore[FS427]
property sp {{ statistical_parity(m, groups g) <= 0 }}
"""


@pytest.mark.parametrize("index", [0, 1])
def test_sklearn_multiclass_index_group_metric_reads_predict(tmp_path, index):
    """A group metric of a multiclass classifier declared with index = i counts predict == classes_[i] per group
    (the data path), exactly as brute force on predict: the tie row (a = 1, group A) is class 0."""
    import pandas as pd

    sio = pytest.importorskip("skops.io")
    from fairspec import api

    est = _tie_tree()
    sio.dump(est, tmp_path / "m.skops")
    a = np.tile([1, 1, 2, 2, 0, 0, 3, 3, 1, 1], 8)        # 40 rows per group (min_group_size is 30)
    g = np.array(["A", "B"] * 40)
    X = np.c_[a, (g == "B").astype(float)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pos = est.predict(X) == est.classes_[index]
    truth = abs(pos[g == "A"].mean() - pos[g == "B"].mean())
    pd.DataFrame({"a": a, "g": g, "y": [0, 1] * 40}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(MC_DATA_SPEC.format(index=index))
    rep = api.check(str(tmp_path / "s.fair")).to_dict()
    assert not [d for d in rep["diagnostics"] if d["severity"] == "error"], rep["diagnostics"]
    (p,) = rep["properties"]
    assert p["status"] == ("holds" if truth <= 0 else "violated"), (p.get("reason"), p, truth)
    assert p["value"] == pytest.approx(truth, abs=1e-12), (p, truth)


# ---- gblinear and dart boosters: never read as trees on the solver paths ----------------------------------------

@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
@pytest.mark.parametrize("booster", ["gblinear", "dart"])
def test_gblinear_and_dart_are_refused_by_the_solvers(tmp_path, monkeypatch, booster, enumerate_pairs):
    """A gblinear booster whose weight on g is 1e-7 (below the 1e-5 self-check) and a dart booster: the solver
    paths (FAIRSPEC_ENUMERATE_PAIRS=0) say `unknown` (only gbtree is encoded), never `holds`; the enumeration reads
    the booster's own predict (brute force). A guard: sound before this session too."""
    import json

    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = np.repeat(GRID, 30, axis=0)
    y = ((X[:, 0] + rng.normal(0, 1, len(X))) > 1.5).astype(int)
    params = {"objective": "binary:logistic", "booster": booster, "nthread": 1}
    if booster == "dart":
        params.update(max_depth=2, rate_drop=0.5, skip_drop=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=4)
    path = tmp_path / "m.json"
    b.save_model(str(path))
    if booster == "gblinear":
        doc = json.loads(path.read_text())
        doc["learner"]["gradient_booster"]["model"]["weights"][1] = 1e-7      # [w_a, w_g, bias]
        path.write_text(json.dumps(doc))
        b = xgb.Booster()
        b.load_model(str(path))
    p = b.predict(xgb.DMatrix(GRID))
    truth = "violated" if _pairs_differ(p) else "holds"
    assert booster == "dart" or truth == "violated"       # the 1e-7 weight moves the float32 probability
    (tmp_path / "s.fair").write_text(XGB_SPEC.format(file="m.json", post="|prob(m(x)) - prob(m(x'))| <= 0"))
    (v,) = _check(tmp_path / "s.fair", enumerate_pairs, monkeypatch)["properties"]
    if enumerate_pairs == "0":
        assert v["status"] == "unknown" and "only gbtree" in v["reason"], v
    else:
        assert v["status"] == truth, (v, truth)


def test_multi_softprob_index_hint_names_the_margin(tmp_path, monkeypatch):
    """index = i on a multi:softprob booster read by its probabilities stays FS413 (a probability above 0.5 is not
    its argmax), and the hint names what a booster accepts (output = "margin"), not score = logit, which its loader
    refuses; with output = "margin" the label is "margin i is the largest", as brute force on output_margin."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = np.repeat(GRID, 30, axis=0)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, len(X))) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1},
                      xgb.DMatrix(X, label=y), num_boost_round=4)
    b.save_model(str(tmp_path / "m.json"))
    spec = XGB_SPEC.format(file="m.json", post="label(m(x)) == label(m(x'))")
    (tmp_path / "s.fair").write_text(spec.replace('xgboost("m.json")', 'xgboost("m.json", index = 1)'))
    rep = _check(tmp_path / "s.fair", "", monkeypatch)
    errors = [d for d in rep["diagnostics"] if d["severity"] == "error"]
    assert [d["code"] for d in errors] == ["FS413"] and 'output = "margin"' in errors[0]["hint"], errors
    (tmp_path / "s.fair").write_text(spec.replace('xgboost("m.json")', 'xgboost("m.json", output = "margin", index = 1)'))
    margin = b.predict(xgb.DMatrix(GRID), output_margin=True)
    truth = "violated" if _pairs_differ(np.argmax(margin, axis=1) == 1) else "holds"
    (p,) = _check(tmp_path / "s.fair", "", monkeypatch)["properties"]
    assert p["status"] == truth, p


def test_sklearn_multiclass_index_prob_without_class_is_refused(tmp_path, monkeypatch):
    """prob(m(x)) without a class of a 3-class LogisticRegression declared with index = 1: its score is the margin
    p_1 - max_j p_j (the decision 'predict is class 1'), not a probability. Read as one it gave 0.179 where
    prob(m(x), 1) moves by at most 0.096 (a wrong `violated` at eps 0.1); now FS416 at lint or `unknown`, while
    prob(m(x), 1) is decided on predict_proba's column."""
    sio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = np.repeat(GRID, 20, axis=0)
    y = (X[:, 0] + rng.integers(0, 2, len(X))) % 3
    est = LogisticRegression().fit(X, y)
    sio.dump(est, tmp_path / "m.skops")
    P = est.predict_proba(GRID)[:, 1]
    top = float(max(abs(P[i] - P[i + 1]) for i in range(0, len(GRID), 2)))
    spec = SK_SPEC.format(index=1, score="").replace("label(m(x)) == label(m(x'))", "POST")
    (tmp_path / "s.fair").write_text(spec.replace("POST", f"|prob(m(x)) - prob(m(x'))| <= {top + 0.005!r}"))
    rep = _check(tmp_path / "s.fair", "", monkeypatch)
    codes = [d["code"] for d in rep["diagnostics"] if d["severity"] == "error"]
    assert codes == ["FS416"] or [p["status"] for p in rep["properties"]] == ["unknown"], rep
    (tmp_path / "s.fair").write_text(spec.replace("POST", f"|prob(m(x), 1) - prob(m(x'), 1)| <= {top + 0.005!r}"))
    (p,) = _check(tmp_path / "s.fair", "", monkeypatch)["properties"]
    assert p["status"] == "holds", p


# ---- review r5: the data backend reads index = i by the argmax too --------------------------------------------------

DATA_FLIP_SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {{
  a : int in [0, 3]
  g : int in [0, 1] protected
}}
model m = {model}
encode F for m {{
  a : raw
  g : raw
}}
property lb {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
  using data
}}
"""


@pytest.mark.parametrize("k", [2, 3])
def test_data_flips_read_index_by_the_argmax_at_a_tie(tmp_path, monkeypatch, k):
    """Logits [a, 0.75 + g/4] (k = 3: and -10), index = 0, data = the 8 domain points: at a = 1 the rows give [1, 0.75]
    and [1, 1], class 0 both (the first maximal column), so no row flips and the truth is holds. Before, the data
    backend compared y_0 - max_j y_j > 0 (batching.decides_by_score was True for an argmax decision), called the tie
    "not class 0" and said `violated` (2 of 8 rows, a replayed witness by the same rule)."""
    ort = pytest.importorskip("onnxruntime")
    _gemm_onnx(tmp_path / "m.onnx", np.array([[1.0, 0.0, 0.0], [0.0, 0.25, 0.0]])[:, :k],
               np.array([0.0, 0.75, -10.0])[:k])
    y = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": GRID.astype(np.float32)})[0]
    assert not _pairs_differ(np.argmax(y, axis=1) == 0)
    (tmp_path / "d.csv").write_text("a,g,y\n" + "".join(f"{int(a)},{int(g)},{int(a) % 2}\n" for a, g in GRID))
    (tmp_path / "s.fair").write_text(DATA_FLIP_SPEC.format(model='onnx("m.onnx", index = 0)'))
    (p,) = _check(tmp_path / "s.fair", "", monkeypatch)["properties"]
    assert p["status"] == "unknown" and "no counterfactual flip" in p["reason"], p


def test_torch_group_metric_reads_index_by_the_argmax_at_a_tie(tmp_path, monkeypatch):
    """torch logits [a, 1 + g/4], index = 0, 50 rows per domain point: the argmax says class 0 at the exact tie a = 1,
    g = 0, so the positives are 150 (g = 0) and 100 (g = 1), statistical parity 0.25. Before, the batch's decision was
    y_0 - y_1 > 0 (100 and 100, value 0) and the re-decided tie rows were reported as a batch effect."""
    torch = pytest.importorskip("torch")
    lin = torch.nn.Linear(2, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 0.25]]))
        lin.bias.copy_(torch.tensor([0.0, 1.0]))
    torch.jit.save(torch.jit.script(torch.nn.Sequential(lin).eval()), str(tmp_path / "m.pt"))
    rows = np.repeat(GRID, 50, axis=0)
    (tmp_path / "d.csv").write_text("a,g,y\n" + "".join(f"{int(a)},{int(g)},{i % 2}\n" for i, (a, g) in enumerate(rows)))
    (tmp_path / "s.fair").write_text("""data d = csv("d.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  g : int in [0, 1] protected
}
model m = torch("m.pt", index = 0, score = logit)
encode F for m { a : raw  g : raw }
group g1 = g >= 1
property sp { statistical_parity(m, groups g1) <= 0.1
  min_group_size = 1 }
""")
    (p,) = _check(tmp_path / "s.fair", "", monkeypatch)["properties"]
    assert sorted(g["positives"] for g in p["details"]["groups"]) == [100, 150], p
    assert p["value"] == pytest.approx(0.25), p
    assert "batch" not in (p["reason"] or ""), p


def _linear_torch(path, W, b):
    torch = pytest.importorskip("torch")
    lin = torch.nn.Linear(W.shape[1], W.shape[0])
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(W, dtype=torch.float32))
        lin.bias.copy_(torch.tensor(b, dtype=torch.float32))
    torch.jit.save(torch.jit.script(torch.nn.Sequential(lin).eval()), str(path))


PROB_SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {{
  a : int in [0, 3]
  g : bool protected
}}
model m = {model}
encode F for m {{
  a : raw
  g : code {{false = 0, true = 1}}
}}
group g1 = g
property pr {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |prob(m(x){cls}) - prob(m(x'){cls})| <= 0.06
  {using}
}}
"""


@pytest.mark.parametrize("using", ["", "using data"])
@pytest.mark.parametrize("fmt", ["onnx", "torch"])
def test_network_k3_logits_index_prob_without_class_is_refused(tmp_path, monkeypatch, fmt, using):
    """Logits [a, 1 + g/4, 1] read with index = 0: prob(m(x)) without a class was the logistic of the margin
    y_0 - max_j y_j (0.2689 at a = 0, where the softmax's p_0 is 0.1554), which moves by 0.0622 > 0.06 with g:
    `violated`, though the model's probability of class 0 moves by at most 0.0327. Now FS416 at lint (ONNX: its
    width is known) or `unknown` (torch), and so are k_discrimination / calibration_gap, which read the same score;
    prob(m(x), 0) stays decided (holds)."""
    W, b = np.array([[1.0, 0.0], [0.0, 0.25], [0.0, 0.0]]), np.array([0.0, 1.0, 1.0])
    if fmt == "onnx":
        _gemm_onnx(tmp_path / "m.onnx", W.T, b)
        model = 'onnx("m.onnx", index = 0)'
    else:
        _linear_torch(tmp_path / "m.pt", W, b)
        model = 'torch("m.pt", index = 0, score = logit)'
    (tmp_path / "d.csv").write_text("a,g,y\n" + "".join(f"{int(a)},{'true' if g else 'false'},{i % 2}\n"
                                                      for i, (a, g) in enumerate(np.repeat(GRID, 5, axis=0))))
    spec = PROB_SPEC.format(model=model, cls="", using=using)
    spec += ("property kd { k_discrimination(m, over {g}, eps = 0.05) < 2 }\n"
             "property cg { calibration_gap(m, groups g1) <= 0.5 }\n")
    (tmp_path / "s.fair").write_text(spec)
    rep = _check(tmp_path / "s.fair", "", monkeypatch)
    codes = [d["code"] for d in rep["diagnostics"] if d["severity"] == "error"]
    if fmt == "onnx":
        assert codes == ["FS416"], rep
    else:
        assert codes == [] and [p["status"] for p in rep["properties"]] == ["unknown"] * 3, rep
        assert all("names no class" in p["reason"] for p in rep["properties"]), rep
    (tmp_path / "s.fair").write_text(PROB_SPEC.format(model=model, cls=", 0", using=using))
    (p,) = _check(tmp_path / "s.fair", "", monkeypatch)["properties"]
    assert p["status"] == ("holds" if not using else "unknown"), p


def test_fs439_reads_two_logits_index_0_by_the_argmax(tmp_path, monkeypatch):
    """skl2onnx LogisticRegression with raw scores [-z, z], z = a - 1 + g/4, read as output = "probabilities", index = 0,
    score = logit: at a = 1, g = 0 the scores tie at [0, 0]; the graph's label, the argmax and LoadedModel.decide all say
    class 0. FS439 read the tie as y0 - y1 > 0 ("class 1") and warned the node's label disagrees with label(m(x)):
    untrue. Now no FS439, and the verdict stays violated (the label flips with g at a = 1)."""
    pytest.importorskip("onnxruntime")
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.linear_model import LogisticRegression

    G = GRID.astype(np.float32)
    lr = LogisticRegression().fit(G, (G[:, 0] >= 2).astype(int))
    lr.coef_, lr.intercept_ = np.array([[1.0, 0.25]]), np.array([-1.0])
    onx = skl2onnx.to_onnx(lr, G[:1], options={id(lr): {"zipmap": False, "raw_scores": True}}, target_opset=15)
    (tmp_path / "m.onnx").write_bytes(onx.SerializeToString())
    (tmp_path / "s.fair").write_text(ONNX_SPEC.format(top=3, index=0).replace(
        'onnx("m.onnx", index = 0)', 'onnx("m.onnx", output = "probabilities", index = 0, score = logit)'))
    rep = _check(tmp_path / "s.fair", "", monkeypatch)
    assert "FS439" not in [d["code"] for d in rep["diagnostics"]], rep["diagnostics"]
    assert [p["status"] for p in rep["properties"]] == ["violated"], rep
