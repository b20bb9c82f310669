"""FS439: an ONNX classifier declared by its probabilities (output = "probabilities") is decided by them,
and where the classifier node's own label output names another class on an input a property evaluated, check
says so -- a located warning at the model declaration naming the property, how many inputs of how many and
one of them -- never silently. The verdicts stay about the declared output (tests/test_onnx_declared_output.py:
reading the label instead was reverted in session 28)."""

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("skl2onnx")
pytest.importorskip("onnxruntime")

GRID = np.array([[a, b, s] for a in range(6) for b in range(6) for s in range(2)], dtype=np.float32)


def _labels():
    """Grades by a + b and a noise per (a, b), the same for both sexes: the SVC's probabilities decide the
    same class for both, its one-vs-one label disagrees with them at 2 of the 72 grid points."""
    noise = np.random.RandomState(4).randint(0, 3, (6, 6))
    a, b = GRID[:, 0].astype(int), GRID[:, 1].astype(int)
    return ((a + b + noise[a, b]) > 5).astype(int)


def _export(est, path):
    from skl2onnx import to_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(GRID, _labels())
        m = to_onnx(est, GRID[:1], options={"zipmap": False})
    path.write_bytes(m.SerializeToString())
    return est


def _svc(path):
    from sklearn.svm import SVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")               # SVC(probability=True) is deprecated in scikit-learn 1.9
        return _export(SVC(probability=True, random_state=0), path)


def _spec(tmp_path, props, model='onnx("m.onnx", output = "probabilities", index = 1)'):
    y = _labels()
    (tmp_path / "d.csv").write_text("a,b,sex,y\n" + "\n".join(
        f"{int(r[0])},{int(r[1])},{'FM'[int(r[2])]},{t}" for r, t in zip(GRID, y)) + "\n")
    (tmp_path / "s.fair").write_text(
        'data d = csv("d.csv", label = y == 1)\nfeatures F from d {\n  a : int in [0, 5]\n  b : int in [0, 5]\n'
        f"  sex : {{F, M}} protected\n}}\nmodel m = {model}\nencode F for m {{ a, b : raw  sex : code }}\n" + props)
    return tmp_path / "s.fair"


SAME = "property samec { forall x, x' : F  require x.* == x'.* except {sex}  ensure class(m(x)) == class(m(x')) }\n"
SAMEL = "property same { forall x, x' : F  require x.* == x'.* except {sex}  ensure label(m(x)) == label(m(x')) }\n"
PARITY = "property sp { statistical_parity(m, groups sex) <= 0.5 }\n"


def _runtime_disagreement(path):
    """(rows where onnxruntime's label differs from the argmax of its probabilities, in a batch, alone)."""
    import onnxruntime as ort

    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    lab, p = s.run(["label", "probabilities"], {"X": GRID})
    alone = [s.run(["label", "probabilities"], {"X": GRID[i:i + 1]}) for i in range(len(GRID))]
    bad = {i for i in range(len(GRID)) if lab[i] != p[i].argmax()}
    bad |= {i for i, (lb, pb) in enumerate(alone) if lb[0] != pb[0].argmax()}
    return bad


def test_an_svc_whose_label_and_probabilities_disagree_is_said_per_property(tmp_path):
    from fairspec.pipeline import check

    _svc(tmp_path / "m.onnx")
    bad = sorted(_runtime_disagreement(tmp_path / "m.onnx"))
    assert len(bad) == 2, bad                          # the fixture: two grid points of 72 disagree
    spec = _spec(tmp_path, SAME + SAMEL + PARITY)
    rep = check(spec)
    got = {v.name: v for v in rep.verdicts}
    # the verdicts are the declared output's, proved as before: the warning changes none of them
    assert got["samec"].status == "holds" and got["samec"].proof is not None, got["samec"].reason
    assert got["same"].status == "holds" and got["same"].proof is not None, got["same"].reason
    assert got["sp"].status == "holds"
    fs439 = [d for d in rep.diagnostics if d.code == "FS439"]
    assert [d.severity for d in fs439] == ["warning"] * 3
    assert all(d.span.line == 7 for d in fs439)       # at the model declaration
    a, b, s = (int(v) for v in GRID[bad[0]])
    for d, prop in zip(fs439, ("samec", "same", "sp")):
        assert f"property '{prop}' evaluated model 'm' on 72 inputs" in d.message, d.message
        assert "on 2 of them the SVMClassifier node" in d.message, d.message
        assert f"e.g. a = {a}, b = {b}, sex = {'FM'[s]}" in d.message, d.message
        assert "the verdict is about output 'probabilities'" in d.message, d.message
        assert "label(m(x)): the probability in column 1 is the largest" in d.hint


def test_the_warning_is_in_json_and_sarif_and_can_be_acknowledged(tmp_path, capsys):
    from fairspec.cli import main

    _svc(tmp_path / "m.onnx")
    spec = _spec(tmp_path, SAME)
    main(["check", str(spec), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert [(x["code"], x["line"], x["severity"]) for x in doc["diagnostics"] if x["code"] == "FS439"] == \
        [("FS439", 7, "warning")]
    main(["check", str(spec), "--format", "sarif"])
    sarif = json.loads(capsys.readouterr().out)
    results = [r for run in sarif["runs"] for r in run["results"] if r["ruleId"] == "FS439"]
    assert len(results) == 1 and results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 7

    spec = _spec(tmp_path, SAME, model='onnx("m.onnx", output = "probabilities", index = 1)   # fairspec: ignore[FS439]')
    from fairspec.pipeline import check, lint

    assert not [d for d in lint(spec).diagnostics if d.code == "FS216"]   # lint leaves the comment to check
    rep = check(spec)
    assert not [d for d in rep.diagnostics if d.code == "FS439"]
    assert [d.code for d, _ in rep.suppressed] == ["FS439"]
    assert rep.verdicts[0].status == "holds"


def test_a_logistic_regression_whose_label_agrees_gets_no_warning(tmp_path):
    from sklearn.linear_model import LogisticRegression

    from fairspec.pipeline import check

    _export(LogisticRegression(), tmp_path / "m.onnx")
    assert not _runtime_disagreement(tmp_path / "m.onnx")
    rep = check(_spec(tmp_path, SAME + PARITY))
    assert not [d for d in rep.diagnostics if d.code == "FS439"], [d.message for d in rep.diagnostics]
    assert {v.name for v in rep.verdicts} == {"samec", "sp"}


def test_a_post_processed_declared_output_is_not_the_classifier_nodes_own(tmp_path):
    """The model of tests/test_onnx_declared_output.py: 'adjusted' = probabilities + sex * [-0.3, 0.3]
    disagrees with the label on many inputs, but it is not the classifier's output: no FS439, and the
    verdicts are the declared output's (violated, as there)."""
    from test_onnx_declared_output import checked

    from fairspec.models.onnx_agreement import label_sibling
    from fairspec.models.peek_onnx import read_onnx_signature

    _, rep = checked(tmp_path)
    sig = read_onnx_signature(tmp_path / "m.onnx")
    assert label_sibling(sig, "adjusted", 2) is None
    assert label_sibling(sig, "probabilities", 2).label == "label"     # the classifier's own output would be
    assert {v.name: v.status for v in rep.verdicts} == {"same": "violated", "samec": "violated"}
    assert not [d for d in rep.diagnostics if d.code == "FS439"]


def test_label_sibling_follows_the_graph(tmp_path):
    """The SVC's probabilities pass a Cast; a TreeEnsembleClassifier's and LinearClassifier's come straight
    from the node; an output named by position or never a graph output of the label is no sibling."""
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.onnx_agreement import label_sibling
    from fairspec.models.peek_onnx import read_onnx_signature

    _svc(tmp_path / "svc.onnx")
    sib = label_sibling(read_onnx_signature(tmp_path / "svc.onnx"), "probabilities", 2)
    assert (sib.label, sib.op_type, sib.classes) == ("label", "SVMClassifier", (0, 1))
    _export(DecisionTreeClassifier(max_depth=3, random_state=0), tmp_path / "t.onnx")
    sig = read_onnx_signature(tmp_path / "t.onnx")
    assert label_sibling(sig, "probabilities", 2).op_type == "TreeEnsembleClassifier"
    assert label_sibling(sig, "probabilities", 3) is None      # not one class per column
    assert label_sibling(sig, "label", None) is None            # the label itself is no score output

    import onnx

    m = onnx.load(str(tmp_path / "t.onnx"))
    del m.graph.output[0]                                      # the label is no graph output: it cannot be read
    (tmp_path / "t1.onnx").write_bytes(m.SerializeToString())
    assert label_sibling(read_onnx_signature(tmp_path / "t1.onnx"), "probabilities", 2) is None


def test_a_row_that_differs_only_alone_is_counted_as_alone():
    """onnxruntime's SVM label at a vote boundary can differ between a batch and a row run alone: the
    comparison runs the rows nearest a tie alone too, and counts (and names) such a row."""
    from fairspec.models.onnx_agreement import Agreement, LabelSibling
    from fairspec.models.readout import Readout

    agree = Agreement(LabelSibling("label", "SVMClassifier", "SVMc", (0, 1)), Readout("prob", 1, 2, "binary", (0, 1)))
    X = np.array([[0.0], [1.0], [2.0]])
    y = np.array([[0.9, 0.1], [0.49, 0.51], [0.2, 0.8]], dtype=np.float32)
    batch = np.array([0, 1, 1])

    def alone(i):                                   # row 1 alone: the label flips
        return y[i:i + 1], np.array([0 if i == 1 else batch[i]])

    agree.observe(X, y, batch, alone)
    agree.observe(X, y, batch, alone)               # the same inputs again: counted once
    t = agree.take()
    assert (t.rows, t.alone, t.differ) == (3, 3, 1)
    assert t.example[1:] == (0, 1, "alone", "class")
    assert agree.take() is None                     # taken: the next property starts afresh


def test_the_comparison_is_bounded(monkeypatch):
    """At most ROWS distinct inputs a property are compared; the warning then says it was the bound."""
    from fairspec.models import onnx_agreement
    from fairspec.models.readout import Readout

    monkeypatch.setattr(onnx_agreement, "ROWS", 2)
    agree = onnx_agreement.Agreement(onnx_agreement.LabelSibling("label", "SVMClassifier", "SVMc", (0, 1)),
                                     Readout("prob", 1, 2, "binary", (0, 1)))
    y = np.array([[0.9, 0.1], [0.2, 0.8], [0.9, 0.1]], dtype=np.float32)
    agree.observe(np.array([[0.0], [1.0], [2.0]]), y, np.array([0, 1, 1]))   # row 2 disagrees, past the bound
    t = agree.take()
    assert (t.rows, t.differ, t.capped) == (2, 0, True)


def test_a_converted_pipeline_with_one_input_per_column_is_compared_alone_too(tmp_path):
    """A pipeline converted with several graph inputs (tests/test_onnx_multi_input.py): its label is read
    beside its probabilities, rows are fed alone input by input, and a LogisticRegression agrees."""
    import pandas as pd
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from fairspec.models import load_model

    df = pd.DataFrame({"sex": ["F", "M"] * 20, "age": np.arange(40, dtype=np.float32)})
    pipe = Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(), ["sex"]), ("p", "passthrough", ["age"])])),
                     ("clf", LogisticRegression())]).fit(df, (df.age > 20).astype(int))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onx = convert_sklearn(pipe, initial_types=[("sex", StringTensorType([None, 1])),
                                                   ("age", FloatTensorType([None, 1]))],
                              options={id(pipe.steps[-1][1]): {"zipmap": False}})
    (tmp_path / "m.onnx").write_bytes(onx.SerializeToString())
    m = load_model("onnx", tmp_path / "m.onnx", output="probabilities", index=1)
    assert m.multi and m.label_agreement is not None
    m._binding = [(0, 0, ["F", "M"]), (1, 1, None)]
    m.score(np.array([[0.0, 3.0], [1.0, 30.0], [1.0, 3.0]]))
    t = m.label_agreement.take()
    assert (t.rows, t.alone, t.differ) == (3, 3, 0)


def test_fetching_the_label_leaves_the_declared_output_as_it_was(tmp_path):
    """The comparison reads the label beside the declared output in the same run: what fairspec decides
    (the declared scores, every class read from them) is bit for bit what it was without it."""
    from fairspec.models import load_model

    _svc(tmp_path / "m.onnx")
    m = load_model("onnx", tmp_path / "m.onnx", output="probabilities", index=1)
    X = GRID.astype(np.float64)
    with_label = m.score(X), m.outputs(X), m.predict_class(X)
    agree, m.label_agreement = m.label_agreement, None
    without = m.score(X), m.outputs(X), m.predict_class(X)
    for a, b in zip(with_label, without):
        assert np.array_equal(a, b)
    assert agree.take().differ == 2


def test_assert_fair_and_the_plugin_show_the_warning_of_a_property_that_holds(tmp_path):
    """A holding property's FS439 (the CLI prints it above its table) is its item's FairspecNote warning, as
    its notes are: pytest --fairspec and assert_fair said nothing of it."""
    import warnings

    from fairspec.pipeline import check
    from fairspec.pytest_plugin import FairspecNote, warn_warnings
    from fairspec.testing import assert_fair

    _svc(tmp_path / "m.onnx")
    spec = _spec(tmp_path, SAME + PARITY)
    rep = check(spec)
    assert {v.name: v.status for v in rep.verdicts} == {"samec": "holds", "sp": "holds"}
    assert {v.name: v.thresholds for v in rep.verdicts} == {"samec": (), "sp": (0.5,)}   # what a report prints near
    said = {k: [d.code for d in ds] for k, ds in rep.property_warnings.items()}
    assert said == {"samec": ["FS439"], "sp": ["FS439"]}, said
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        warn_warnings(rep, rep.verdicts[0])
    assert [type(w.message) for w in got] == [FairspecNote]
    assert "samec: holds; warning FS439: property 'samec' evaluated model 'm'" in str(got[0].message)
    with pytest.warns(FairspecNote, match="sp: holds; warning FS439"):
        assert_fair(spec, property="sp")
