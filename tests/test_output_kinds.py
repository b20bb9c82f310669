"""Output kinds (issue 25): the readout of binary, multiclass and regression models, the language
that reads them (class, prob(m(x), c), logit(m(x), c), value, ensure forall c: ...), and lint's
FS414-FS418 with carets. Tiny models are built here (onnx.helper, scikit-learn with skops)."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec import ir, pipeline
from fairspec.models.readout import Readout, ReadoutError, resolve_readout
from onnx_nets import gemm_onnx

onnx = pytest.importorskip("onnx")


# ------------------------------------------------------------------ readout

def test_resolve_kinds():
    assert resolve_readout(1, None, "logit").task == "binary"
    assert resolve_readout(3, None, "logit") == Readout("logit", None, 3, "multiclass")
    assert resolve_readout(4, 2, "logit").task == "multiclass"            # 'class 2 against the rest'
    assert resolve_readout(1, None, "value").task == "regression"
    assert resolve_readout(None, None, None, task="regression").score == "value"
    with pytest.raises(ReadoutError, match="2 columns"):
        resolve_readout(2, None, "logit")                                  # still FS413
    with pytest.raises(ReadoutError, match="regression reads one"):
        resolve_readout(3, None, "value")
    with pytest.raises(ReadoutError, match="no one binary score"):
        Readout("logit", None, 3, "multiclass").select(np.zeros((2, 3)))


def test_argmax_ties_go_to_the_first_maximal_column():
    r = Readout("logit", None, 3, "multiclass")
    y = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [3.0, 3.0, 3.0], [0.0, 0.0, 1.0]])
    assert r.predicted_class(y).tolist() == [0, 1, 0, 2]
    torch = pytest.importorskip("torch")
    assert torch.argmax(torch.tensor(y), dim=1).tolist() == [0, 1, 0, 2]   # the runtime's own rule
    # one column: the binary decision (score > threshold)
    assert Readout("logit", None, 1).predicted_class(np.array([0.0, 0.1, -1.0])).tolist() == [0, 1, 0]


def test_class_probabilities_and_labels():
    r = Readout("logit", None, 3, "multiclass", ("lo", "mid", "hi"))
    y = np.array([[0.0, np.log(2.0), np.log(5.0)]])
    p = r.class_probabilities(y)
    assert np.allclose(p, [[1 / 8, 2 / 8, 5 / 8]])
    assert np.allclose(r.class_probability(y, "hi"), [5 / 8]) and np.allclose(r.class_probability(y, 1), [2 / 8])
    assert r.class_logit(y, 2)[0] == np.log(5.0)
    with pytest.raises(ReadoutError, match="no class labelled 'x'"):
        r.class_index("x")
    with pytest.raises(ReadoutError, match="out of range"):
        r.class_index(3)
    with pytest.raises(ReadoutError, match="records no class labels"):
        Readout("logit", None, 3, "multiclass").class_index("hi")
    # integer labels: a whole number is a column, a string a label, never one read as the other
    ri = Readout("prob", None, 3, "multiclass", (1, 2, 3))
    assert ri.class_index(1) == 1 and ri.class_index("1") == 0
    b = Readout("prob", None, 1)
    assert np.allclose(b.class_probabilities(np.array([0.25])), [[0.75, 0.25]])
    assert Readout("value", None, 1, "regression").value(np.array([[1.5], [2.0]])).tolist() == [1.5, 2.0]
    with pytest.raises(ReadoutError):
        Readout("value", None, 1, "regression").predicted_class(np.zeros(2))


# ------------------------------------------------------------------ tiny models and a spec

def _onnx(path, k, name="logits", seed=0):
    gemm_onnx(path, k, 3, name, seed)


HEAD = """\
data d = csv("d.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  sex : {F, M} protected
}
model grade = onnx("grade.onnx")
encode F for grade { a : raw  sex : onehot }
model salary = onnx("salary.onnx", score = value)
encode F for salary { a : raw  sex : onehot }
"""


def _pair(name, ensure):
    return f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{sex}}\n  ensure {ensure}\n}}\n"


@pytest.fixture()
def folder(tmp_path):
    _onnx(tmp_path / "grade.onnx", 3)
    _onnx(tmp_path / "salary.onnx", 1, "y", seed=1)
    rng = np.random.default_rng(0)
    rows = [f"{rng.integers(0, 4)},{'FM'[rng.integers(0, 2)]},{rng.integers(0, 3)}" for _ in range(60)]
    (tmp_path / "d.csv").write_text("a,sex,y\n" + "\n".join(rows) + "\n")
    return tmp_path


def _lint(folder, text):
    p = folder / "s.fair"
    p.write_text(HEAD + text)
    return pipeline.lint(p)


def test_posts_in_the_ir(folder):
    res = _lint(folder, _pair("c", "class(grade(x)) == class(grade(x'))")
                + _pair("p", "|prob(grade(x), 2) - prob(grade(x'), 2)| <= 0.05")
                + _pair("every", "forall c: |prob(grade(x), c) - prob(grade(x'), c)| < 0.1")
                + _pair("lg", "|logit(grade(x), 0) - logit(grade(x'), 0)| <= 1")
                + _pair("v", "|value(salary(x)) - value(salary(x'))| <= 0.5"))
    assert not [d for d in res.diagnostics if d.severity == "error"], res.diagnostics
    props = {p.name: p for p in res.spec.properties}
    assert (props["c"].post, props["c"].cls) == ("class", None)
    assert (props["p"].post, props["p"].cls, props["p"].eps) == ("class_prob", 2, 0.05)
    assert (props["every"].post, props["every"].cls, props["every"].eps_strict) == ("class_prob", ir.EVERY_CLASS, True)
    assert (props["lg"].post, props["lg"].cls) == ("class_logit", 0)
    assert (props["v"].post, props["v"].eps) == ("value", 0.5)
    m = res.spec.model("grade")
    assert (m.task, m.n_classes) == ("multiclass", 3)
    assert res.spec.model("salary").is_regression


@pytest.mark.parametrize("ensure, code, col", [
    ("label(grade(x)) == label(grade(x'))", "FS414", 10),
    ("|prob(grade(x)) - prob(grade(x'))| <= 0.1", "FS416", 11),
    ("|value(grade(x)) - value(grade(x'))| <= 0.1", "FS415", 11),
    ("class(salary(x)) == class(salary(x'))", "FS415", 10),
    ("|prob(grade(x), 3) - prob(grade(x'), 3)| <= 0.1", "FS417", 26),
    ("|prob(grade(x), \"A\") - prob(grade(x'), \"A\")| <= 0.1", "FS417", 26),
    ("forall c: |prob(grade(x), 1) - prob(grade(x'), 1)| <= 0.1", "FS501", 17),
])
def test_output_kind_diagnostics(folder, ensure, code, col):
    res = _lint(folder, _pair("p", ensure))
    errs = [d for d in res.diagnostics if d.severity == "error"]
    assert [d.code for d in errs] == [code], errs
    assert (errs[0].span.line, errs[0].span.column) == (HEAD.count("\n") + 4, col)
    assert errs[0].hint


@pytest.mark.parametrize("prop, code", [
    ("statistical_parity(grade, groups sex) <= 0.1", "FS414"),
    ("disparate_impact(salary, groups sex) >= 0.8", "FS418"),
    # a multiclass model's k-discrimination counts its predicted classes (issue 25 item 3,
    # tests/test_kdisc_multiclass.py); a regression has neither classes nor a decision
    ("k_discrimination(salary, over {sex}) < 2", "FS418"),
])
def test_binary_metrics_need_a_decision(folder, prop, code):
    res = _lint(folder, f"property g {{ {prop} }}\n")
    assert [d.code for d in res.diagnostics if d.severity == "error"] == [code]


def test_check_reports_unknown_until_a_backend_decides(folder):
    p = folder / "s.fair"
    p.write_text(HEAD + _pair("c", "class(grade(x)) == class(grade(x'))")
                 + _pair("v", "|value(salary(x)) - value(salary(x'))| <= 0.5"))
    rep = pipeline.check(p)
    for v in rep.verdicts:
        assert v.status in ("unknown", "violated", "holds"), v
        if v.status == "unknown":
            assert v.reason


def test_format_round_trip():
    from fairspec.syntax.format import format_text
    from fairspec.syntax.parser import parse_text

    text = HEAD + _pair("every", "forall c : |prob(grade(x), c) - prob(grade(x'), c)| <= 0.05")
    once = format_text(text)
    assert format_text(once) == once
    assert "  ensure forall c : |prob(grade(x), c) - prob(grade(x'), c)| <= 0.05\n" in once
    assert format_text(text.replace("forall c :", "forall   c:")) == once
    st = parse_text(once).decls[-1].stmts[-1]
    assert st.kind == "ensure" and st.args[1].id == "c"


def test_loaded_models_read_every_output(folder, tmp_path):
    from fairspec.models import load_model

    X = np.array([[0, 1, 0], [3, 0, 1], [1, 1, 0]], dtype=np.float64)
    g = load_model("onnx", folder / "grade.onnx")
    assert g.task == "multiclass" and g.outputs(X).shape == (3, 3)
    assert g.predict_class(X).tolist() == np.argmax(g.outputs(X), axis=1).tolist()
    s = load_model("onnx", folder / "salary.onnx", score_kind="value")
    assert s.task == "regression" and np.allclose(s.value(X), s.score(X))
    from fairspec.verdict import Unsupported

    with pytest.raises(Unsupported, match="regression"):
        s.decide(X)
    sk = pytest.importorskip("sklearn.linear_model")
    sio = pytest.importorskip("skops.io")
    rng = np.random.default_rng(1)
    Xs = rng.integers(0, 2, (90, 3)).astype(float)
    lr = sk.LogisticRegression().fit(Xs, np.array(["lo", "mid", "hi"])[rng.integers(0, 3, 90)])
    sio.dump(lr, tmp_path / "lr3.skops")
    m = load_model("sklearn", tmp_path / "lr3.skops")
    assert m.readout.classes == ("hi", "lo", "mid") and m.task == "multiclass"
    assert [m.readout.classes[i] for i in m.predict_class(Xs)] == lr.predict(Xs).tolist()
    reg = sk.Ridge().fit(Xs, rng.normal(size=90))
    sio.dump(reg, tmp_path / "ridge.skops")
    m = load_model("sklearn", tmp_path / "ridge.skops")
    assert m.task == "regression" and np.array_equal(m.value(Xs), reg.predict(Xs))


@pytest.mark.parametrize("prop, code", [
    ("statistical_parity(salary, groups sex, class = 1) <= 0.1", "FS415"),
    ("statistical_parity(grade, groups sex, threshold = 0.5) <= 0.1", "FS415"),
    ("statistical_parity(grade, groups sex, class = 3) <= 0.1", "FS417"),
    ("class_distribution_distance(salary, groups sex) <= 0.1", "FS415"),
    ("mean_prediction_difference(grade, groups sex) <= 0.1", "FS415"),
    ("mean_absolute_error_difference(salary, groups sex) <= 0.1", "FS501"),    # no target = COLUMN
    ("multiclass_equalized_odds(salary, groups sex) <= 0.1", "FS415"),      # a classifier's metric
    ("multiclass_equalized_odds(grade, groups sex) <= 0.1", "FS501"),       # no target = COLUMN
    ("mean_prediction_difference(salary, groups sex, loss = square) <= 0.1", "FS208"),
    ("statistical_parity(grade, groups sex, class = 1, threshold = 2) <= 0.1", "FS415"),
])
def test_metric_readings_fit_the_model(folder, prop, code):
    res = _lint(folder, f"property g {{ {prop} }}\n")
    assert [d.code for d in res.diagnostics if d.severity == "error"][:1] == [code], res.diagnostics


def test_metric_readings_in_the_ir(folder):
    res = _lint(folder, "property g { statistical_parity(grade, groups sex, class = 2) <= 0.1 }\n"
                        "property h { disparate_impact(salary, groups sex, threshold = 0.5) >= 0.8 }\n"
                        "property k { ks_distance(salary, groups sex) <= 0.2 }\n")
    assert not [d for d in res.diagnostics if d.severity == "error"], res.diagnostics
    props = {p.name: p for p in res.spec.properties}
    assert props["g"].param("class") == 2 and props["h"].param("threshold") == 0.5


def test_editor_knows_the_output_functions(folder):
    from fairspec.lsp import analysis

    text = HEAD + _pair("c", "class(grade(x)) == class(grade(x'))")
    p = folder / "s.fair"
    p.write_text(text)
    idx = analysis.analyse(p)
    line = text.count("\n") - 1                  # the ensure line
    toks = analysis.semantic_tokens(idx, text, str(p))
    assert any(t[0] == line and t[3] == "function" and t[2] == len("class") for t in toks)
    labels = {c[0] for c in analysis.completions(idx, text, line, 10)}
    assert {"class", "value", "prob", "logit", "label"} <= labels
    model_line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith("model grade"))
    assert "multiclass model (3 classes)" in analysis.hover(idx, str(p), model_line, 8)


def test_onnx_classifier_labels(tmp_path):
    """skl2onnx records the class labels on the classifier node: lint and the loader read them, so
    prob(m(x), "mid") names the column scikit-learn's classes_ gives "mid"."""
    skl2onnx = pytest.importorskip("skl2onnx")
    lm = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, (120, 3)).astype(np.float32)
    y = np.array(["lo", "mid", "hi"])[rng.integers(0, 3, 120)]
    lr = lm.LogisticRegression().fit(X, y)
    onx = skl2onnx.to_onnx(lr, X[:1], options={id(lr): {"zipmap": False}}, target_opset=17)
    (tmp_path / "lr3.onnx").write_bytes(onx.SerializeToString())
    (tmp_path / "d.csv").write_text("a,b,c\n" + "\n".join(f"{r[0]:g},{r[1]:g},{r[2]:g}" for r in X) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv")\nfeatures F from d {\n  a : int in [0, 3]  protected\n'
                    '  b : int in [0, 3]\n  c : int in [0, 3]\n}\n'
                    'model lr = onnx("lr3.onnx", output = "probabilities")\nencode F for lr { a, b, c : raw }\n'
                    + _pair("p", "|prob(lr(x), \"mid\") - prob(lr(x'), \"mid\")| <= 0.1").replace("{sex}", "{a}"))
    res = pipeline.lint(spec)
    assert not [d for d in res.diagnostics if d.severity == "error"], res.diagnostics
    assert res.spec.model("lr").classes == ("hi", "lo", "mid")
    assert res.spec.properties[0].cls == list(lr.classes_).index("mid")
    from fairspec.models import load_model

    m = load_model("onnx", tmp_path / "lr3.onnx", output="probabilities")
    assert m.readout.classes == tuple(lr.classes_)
    assert [m.readout.classes[i] for i in m.predict_class(X.astype(np.float64))] == lr.predict(X).tolist()


def test_a_torch_regression_is_declared(folder):
    """A torch file does not say it is a regression: value(...) without score = value is FS415,
    with it the spec lints and the loaded model reads its value."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(torch.nn.Linear(3, 1)), str(folder / "lin.pt"))
    enc = "encode F for lin { a : raw  sex : onehot }\n"
    post = _pair("v", "|value(lin(x)) - value(lin(x'))| <= 0.5")
    res = _lint(folder, 'model lin = torch("lin.pt")\n' + enc + post)
    assert [d.code for d in res.diagnostics if d.severity == "error"] == ["FS415"]
    res = _lint(folder, 'model lin = torch("lin.pt", score = value)\n' + enc + post)
    assert not [d for d in res.diagnostics if d.severity == "error"], res.diagnostics
    from fairspec.models import load_model

    m = load_model("torch", folder / "lin.pt", score_kind="value")
    assert m.task == "regression" and m.value(np.zeros((2, 3))).shape == (2,)


def test_score_value_on_a_classifier_file_is_refused(folder, tmp_path):
    lm = pytest.importorskip("sklearn.linear_model")
    sio = pytest.importorskip("skops.io")
    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, (60, 3)).astype(float)
    sio.dump(lm.LogisticRegression().fit(X, rng.integers(0, 3, 60)), folder / "lr3.skops")
    res = _lint(folder, 'model lr = sklearn("lr3.skops", score = value)\nencode F for lr { a : raw  sex : onehot }\n')
    errs = [d for d in res.diagnostics if d.severity == "error"]
    assert [d.code for d in errs] == ["FS413"] and "multiclass classifier" in errs[0].message


def test_skops_labels_of_a_text_column(tmp_path):
    """A classifier fitted on a pandas column of text has an object ``classes_``, which skops stores
    inline as JSON items (not an .npy file): lint reads those labels too, so ``class = "mid"`` and
    ``prob(m(x), "mid")`` name the column, where they were FS417 "cannot read class labels ... before
    it is loaded" (the Python API's usual case: a pipeline fitted on a data frame)."""
    pd = pytest.importorskip("pandas")
    lm = pytest.importorskip("sklearn.linear_model")
    sio = pytest.importorskip("skops.io")
    from fairspec.models.peek_sklearn import skops_classes, skops_n_classes

    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, (120, 2)).astype(float)
    y = pd.Series(np.array(["lo", "mid", "hi"])[rng.integers(0, 3, 120)], dtype=object)
    lr = lm.LogisticRegression().fit(X, y)
    assert lr.classes_.dtype == object
    sio.dump(lr, tmp_path / "lr3.skops")
    assert skops_classes(tmp_path / "lr3.skops") == ("hi", "lo", "mid")
    assert skops_n_classes(tmp_path / "lr3.skops") == 3
    (tmp_path / "d.csv").write_text("a,b,y\n" + "\n".join(f"{r[0]:g},{r[1]:g},{t}" for r, t in zip(X, y)) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv", target = y)\nfeatures F from d {\n  a : int in [0, 3]  protected\n'
                    '  b : int in [0, 3]\n}\nmodel lr = sklearn("lr3.skops")\n'
                    '# fairspec: ignore[FS427]\nencode F for lr { a, b : raw }\n'
                    'group high_a = a >= 2\n'
                    'property sp { statistical_parity(lr, groups high_a, class = "mid") <= 0.5 }\n'
                    + _pair("p", "|prob(lr(x), \"mid\") - prob(lr(x'), \"mid\")| <= 0.1").replace("{sex}", "{a}"))
    res = pipeline.lint(spec)
    assert not [d for d in res.diagnostics if d.severity == "error"], res.diagnostics
    assert res.spec.model("lr").classes == ("hi", "lo", "mid")
    assert res.spec.properties[-1].cls == 2
