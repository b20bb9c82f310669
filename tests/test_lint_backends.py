"""FS506: lint reads a model file cheaply and says when the chosen backend cannot encode it."""

from pathlib import Path

from fairspec.models.peek import piecewise_linear_obstacle
from fairspec.models.peek_onnx import PL_ONNX_OPS
from fairspec.pipeline import check, lint
from conftest import people_decls

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
TANH = (FIX / "errors" / "milp_tanh.fair").read_text()


def _spec(tmp_path, text):
    (tmp_path / "fairspec.toml").write_text("")  # the project: specs/ reads ../data and ../models
    (tmp_path / "data").mkdir()
    (tmp_path / "models").mkdir()
    (tmp_path / "data" / "people.csv").write_bytes((FIX / "data" / "people.csv").read_bytes())
    (tmp_path / "models" / "people6_tanh.onnx").write_bytes((FIX / "models" / "people6_tanh.onnx").read_bytes())
    (tmp_path / "models" / "people6.onnx").write_bytes((FIX / "models" / "people6.onnx").read_bytes())
    sub = tmp_path / "specs"
    sub.mkdir()
    p = sub / "s.fair"
    p.write_text(text)
    return p


def _codes(res):
    return [(d.code, d.severity) for d in res.diagnostics]


def test_default_backend_is_a_warning_and_check_still_falsifies_on_data(tmp_path):
    p = _spec(tmp_path, TANH.replace("  using milp\n", ""))
    assert _codes(lint(p)) == [("FS506", "warning")]
    (v,) = check(p).verdicts
    assert v.status in ("violated", "unknown")
    if v.status == "unknown":
        assert "Tanh" in v.reason


def test_data_backend_needs_no_network(tmp_path):
    p = _spec(tmp_path, TANH.replace("using milp", "using data"))
    assert _codes(lint(p)) == []


def test_relu_networks_and_logistic_models_pass():
    assert piecewise_linear_obstacle("onnx", FIX / "models" / "people6.onnx", "logit") is None
    assert piecewise_linear_obstacle("onnx", ROOT / "examples/adult/models/mlp.onnx", "logit") is None
    assert piecewise_linear_obstacle("sklearn", ROOT / "examples/adult/models/lr.skops") is None


def test_tree_and_tanh_are_named():
    why = piecewise_linear_obstacle("sklearn", ROOT / "examples/adult/models/dt.skops")
    assert "DecisionTreeClassifier" in why
    why = piecewise_linear_obstacle("onnx", FIX / "models" / "people6_tanh.onnx", "logit")
    assert "Tanh" in why and "hidden_tanh" in why


def test_unreadable_files_say_nothing_at_lint():
    assert piecewise_linear_obstacle("onnx", FIX / "models" / "garbage.onnx") is None
    assert piecewise_linear_obstacle("onnx", FIX / "models" / "missing.onnx") is None


def test_the_loader_refuses_exactly_what_lint_refuses():
    """Every operator outside PL_ONNX_OPS is refused by the converter, naming the operator and node."""
    import numpy as np
    import pytest
    from onnx import TensorProto, helper, numpy_helper

    from fairspec.models.network import UnsupportedModel, from_onnx

    for op in ("Tanh", "LeakyRelu", "Abs"):
        assert op not in PL_ONNX_OPS
        W = numpy_helper.from_array(np.ones((2, 1), dtype=np.float32), "W")
        g = helper.make_graph([helper.make_node("Gemm", ["x", "W"], ["z"], name="g"),
                               helper.make_node(op, ["z"], ["y"], name=f"act_{op}")], "t",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])], [W])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        with pytest.raises(UnsupportedModel) as e:
            from_onnx(m)
        assert op in str(e.value) and f"act_{op}" in str(e.value)


# ---------------------------------------------------------------- issue 9, items 4 and 5 (pickles read inertly)

PEOPLE = people_decls() + """\
MODEL
encode People for m {
  age : standard
  sex : onehot
  race : code
  member, score : raw
}
"""


def _people_model(tmp_path, est_name, est, text_tail, model_decl):
    import pickle

    p = _spec(tmp_path, PEOPLE.replace("MODEL", model_decl) + text_tail)
    with open(tmp_path / "models" / est_name, "wb") as f:
        pickle.dump(est, f)
    return p


def _people_xy():
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.random((200, 6))
    return X, (X[:, 0] + X[:, 1] > 1).astype(int)


PBA_PROP = """
property bias {
  pba(m, flip sex, around people, delta {age: 1})
}
"""
IF_PROP = """
property same {
  forall x, x' : People
  require x.* == x'.* except {sex}
  ensure label(m(x)) == label(m(x'))
}
"""


def test_a_pickled_tree_or_forest_is_read_as_a_tree(tmp_path):
    """A pickled tree or forest is recognised without running the pickle (PBA and individual fairness
    on trees have their own exact encodings, so lint gives no FS506), and a pickled estimator that is
    neither a tree nor a network is named (below)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.peek import is_tree_file

    X, y = _people_xy()
    for i, est in enumerate((DecisionTreeClassifier(max_depth=5), RandomForestClassifier(n_estimators=10))):
        d = tmp_path / str(i)
        d.mkdir()
        p = _people_model(d, "t.pkl", est.fit(X, y), PBA_PROP, 'model m = sklearn("../models/t.pkl", trust pickle)')
        assert is_tree_file("sklearn", d / "models" / "t.pkl")
        assert not [x for x in lint(p).diagnostics if x.code == "FS506"]


def test_individual_fairness_of_a_pickled_non_network_is_warned(tmp_path):
    from sklearn.svm import SVC

    X, y = _people_xy()
    p = _people_model(tmp_path, "svc.pkl", SVC().fit(X, y), IF_PROP, 'model m = sklearn("../models/svc.pkl", trust pickle)')
    diags = [d for d in lint(p).diagnostics if d.code == "FS506"]
    assert len(diags) == 1 and "SVC" in diags[0].message


def test_pickle_width_is_read_at_lint_without_running_it(tmp_path):
    """A pickled estimator's n_features_in_ is read by the inert unpickler: FS402 at lint."""
    from fairspec.models.peek import peek_input_width
    from sklearn.linear_model import LogisticRegression

    X, y = _people_xy()
    import numpy as np

    wide = LogisticRegression().fit(np.hstack([X, X]), y)
    p = _people_model(tmp_path, "lr.pkl", wide, "", 'model m = sklearn("../models/lr.pkl", trust pickle)')
    assert peek_input_width("sklearn", tmp_path / "models" / "lr.pkl") == 12
    codes = [(d.code, d.span.line) for d in lint(p).diagnostics if d.severity == "error"]
    assert codes == [("FS402", 10)]


def test_a_width_lint_cannot_read_is_fs402_at_check(tmp_path):
    """A joblib file does not say its width without running it: check gives the same FS402, located."""
    import json

    from conftest import run_cli

    p = _spec(tmp_path, PEOPLE.replace("MODEL", 'model m = sklearn("../models/people6.joblib", trust pickle)')
              .replace("  member, score : raw\n", "  member : raw\n")
              + "property parity { statistical_parity(m, groups sex) <= 0.3 }\n")
    (tmp_path / "models" / "people6.joblib").write_bytes((FIX / "models" / "people6.joblib").read_bytes())
    assert [d.code for d in lint(p).diagnostics if d.severity == "error"] == []
    out = run_cli("check", p, "--format", "json")
    assert out.returncode == 2, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "FS402"]
    assert d["line"] == 10 and "5 columns wide" in d["message"] and "takes 6 inputs" in d["message"]
    assert "error" not in doc


def test_max_rows_where_no_data_rows_are_flipped_first_is_a_warning(tmp_path):
    """A pair property on a solver flips its data rows first, the only reader of max_rows there: on a
    feature set without data, or in a maximize run (which flips none), max_rows is FS213, said at it."""
    head = people_decls() + ('model net = onnx("../models/people6.onnx", output = "logit")\n'
                             "encode People for net { age : standard  sex : onehot  race : code  member, "
                             "score : raw }\n")
    prop = ("property pair {\n  forall x, x' : People\n  require x.* == x'.* except {sex}\n"
            "  ensure label(net(x)) == label(net(x'))\n  max_rows = 50\nMODE  using milp\n}\n")

    def fs213(text):
        d = tmp_path / str(len(list(tmp_path.iterdir())))
        d.mkdir()
        res = lint(_spec(d, text))
        return [(d.message, d.span.line) for d in res.diagnostics if d.code == "FS213"]

    assert fs213(head + prop.replace("MODE", "")) == []  # read: the rows are flipped first
    no_data = head.replace("features People from people {", "features People {")
    ((msg, line),) = fs213(no_data + prop.replace("MODE", ""))
    assert msg == ("option 'max_rows' has no effect here: feature set 'People' has no data rows to flip before "
                   "the solver runs") and line == (no_data + prop).splitlines().index("  max_rows = 50") + 1
    ((msg, _),) = fs213(head + prop.replace("MODE", "  mode = maximize\n"))
    assert msg.startswith("option 'max_rows' has no effect here: a maximize run flips no data rows first"), msg
    # a further require condition: the solvers do not take it and no data rows are flipped first
    # (fairspec.kinds.individual_fairness flips them only for a property without one)
    pre = prop.replace("except {sex}\n", "except {sex}\n  require x.age >= 30\n")
    for mode in ("", "  using smt\n"):
        ((msg, line),) = fs213(head + pre.replace("MODE  using milp", mode))
        assert msg == ("option 'max_rows' has no effect here: its further require condition keeps the data rows "
                       "from being flipped before the solver runs"), msg
    assert fs213(head + pre.replace("MODE  using milp", "  using data")) == []  # the data backend reads it


def test_max_rows_on_a_network_class_output_is_a_warning(tmp_path):
    """A network's prob(m(x), c) post is decided by kinds/multi_pairs and class_prob, which flip no data rows first:
    max_rows there is read by nothing, FS213 (logit(m(x), c), of one class or forall c, is the logit post of each
    column, its data rows flipped first). A tree model's (flipped by kinds/tree_outputs) and a binary network's label
    post are not warned."""
    head = people_decls() + ('model net = onnx("../models/people6_three.onnx")\n'
                             "encode People for net { age : standard  sex : onehot  race : code  member, "
                             "score : raw }\n")

    def fs213(ensure):
        d = tmp_path / str(len(list(tmp_path.iterdir())))
        d.mkdir()
        p = _spec(d, head + "property pair {\n  forall x, x' : People\n  require x.* == x'.* except {sex}\n"
                          f"  ensure {ensure}\n  max_rows = 50\n}}\n")
        (d / "models" / "people6_three.onnx").write_bytes((FIX / "models" / "people6_three.onnx").read_bytes())
        res = lint(p)
        assert not [x for x in res.diagnostics if x.is_error], res.diagnostics
        return [x.message for x in res.diagnostics if x.code == "FS213"]

    for post in ("|prob(net(x), 1) - prob(net(x'), 1)| <= 0.1", "forall c: |prob(net(x), c) - prob(net(x'), c)| <= 0.1"):
        assert fs213(post) == ["option 'max_rows' has no effect here: a network's prob(m(x), c) is decided without "
                               "flipping data rows first"], post
    # one class c beyond small domains: the logit post of column c (kinds/logit_column), its data rows flipped first;
    # forall c (session 35): each column's run flips them first
    assert fs213("forall c: |logit(net(x), c) - logit(net(x'), c)| <= 0.5") == []
    assert fs213("|logit(net(x), 1) - logit(net(x'), 1)| <= 0.5") == []


def test_max_rows_unread_by_a_multiclass_class_post_is_a_verdict_note(tmp_path):
    """class(m(x)): a binary network's is a label post (its data rows flipped first, max_rows read), a
    multiclass one's is decided by kinds/multi_pairs, which flips none. Lint cannot know which (it does
    not count the model's outputs), so check says it: the verdict's note, as other options' notes are."""
    from fairspec.report import verdict_notes

    head = people_decls() + ('model net = onnx("../models/people6_three.onnx")\n'
                             "encode People for net { age : standard  sex : onehot  race : code  member, "
                             "score : raw }\n")
    p = _spec(tmp_path, head + "property pair {\n  forall x, x' : People\n  require x.* == x'.* except {sex}\n"
                               "  ensure class(net(x)) == class(net(x'))\n  max_rows = 50\n  timeout = 20\n}\n")
    (tmp_path / "models" / "people6_three.onnx").write_bytes((FIX / "models" / "people6_three.onnx").read_bytes())
    assert [d for d in lint(p).diagnostics if d.code == "FS213"] == []
    (v,) = check(p).verdicts  # whatever the verdict (a time-out included), the option was read by nothing
    assert "`max_rows` has no effect here: a multiclass network's class(m(x)) is decided by enumeration or the " \
           "solvers, with no data rows flipped first" in verdict_notes(v), (v.status, v.reason, v.details)
