"""Hostile model files (issue 21, classes 3 and 4): no native crash, no verdict from a model that
is not finite.

Class 3: every malformed XGBoost / LightGBM file of tests/hostile_trees.py (cycles, self-loops,
children out of range, splits beyond the width, NaN leaves, a huge num_leaves, truncated files,
tree_sizes past the end; most of them crash or hang the library) is refused by
fairspec.models.treefile before the library reads it: one sentence naming the file, lint FS401,
check exit 2, never a signal.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_cli
from fairspec.models import ModelLoadError, load_model
from fairspec.pipeline import lint
from hostile_trees import lightgbm_mutations, write_xgboost, xgboost_mutations


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 10, n), rng.integers(0, 2, n), rng.integers(0, 5, n)]).astype(float)
    y = ((X[:, 0] + 3 * X[:, 1] + rng.normal(0, 2, n)) > 6).astype(int)
    return X, y


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    d = tmp_path_factory.mktemp("valid_trees")
    X, y = _data()
    b = xgb.XGBClassifier(n_estimators=3, max_depth=2, random_state=0, n_jobs=1).fit(X, y).get_booster()
    b.save_model(str(d / "m.json"))
    b.save_model(str(d / "m.ubj"))
    m = lgb.LGBMClassifier(n_estimators=3, max_depth=2, random_state=0, n_jobs=1, verbose=-1,
                           min_child_samples=5).fit(X, y)
    m.booster_.save_model(str(d / "m.txt"))
    return d


SPEC = '''
features P {
  a : int in [0, 9]
  b : int in [0, 4]
  s : {F, M} protected
}
model m = FORMAT("FILE")
encode P for m {
  a : raw
  s : code
  b : raw
}
property same {
  forall x, x' : P
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
}
'''


def _spec(tmp_path, fmt, name):
    (tmp_path / "fairspec.toml").write_text("")
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("FORMAT", fmt).replace("FILE", name))
    return spec


def _bad_files(valid, tmp_path):
    out = []
    for name, mutate in xgboost_mutations().items():
        out.append(("xgboost", write_xgboost(valid / "m.json", tmp_path / f"x_{name}.json", mutate)))
    for name, mutate in lightgbm_mutations().items():
        p = tmp_path / f"l_{name}.txt"
        p.write_text(mutate((valid / "m.txt").read_text()))
        out.append(("lightgbm", p))
    return out


def test_the_valid_files_pass_and_ubjson_reads_as_json(valid):
    from fairspec.models.treefile import check_lightgbm, check_xgboost, read_xgboost

    assert check_xgboost(valid / "m.json") == check_xgboost(valid / "m.ubj") == check_lightgbm(valid / "m.txt") == 3
    a, b = read_xgboost(valid / "m.json"), read_xgboost(valid / "m.ubj")
    ta, tb = (d["learner"]["gradient_booster"]["model"]["trees"] for d in (a, b))
    assert len(ta) == len(tb) == 3
    for x, y in zip(ta, tb):
        for k in ("left_children", "right_children", "split_indices"):
            assert list(x[k]) == list(y[k])
        assert np.allclose(x["split_conditions"], y["split_conditions"])


def test_every_malformed_tree_file_is_one_sentence_before_the_library(valid, tmp_path, monkeypatch):
    import lightgbm
    import xgboost

    def never(*a, **k):
        raise AssertionError("the library saw a malformed file")

    monkeypatch.setattr(xgboost.Booster, "load_model", never)
    monkeypatch.setattr(lightgbm, "Booster", never)
    for fmt, p in _bad_files(valid, tmp_path):
        with pytest.raises(ModelLoadError) as e:
            load_model(fmt, p)
        assert p.name in str(e.value) and "\n" not in str(e.value), (p.name, str(e.value))
        spec = _spec(tmp_path, fmt, p.name)
        res = lint(spec)
        errs = [d for d in res.diagnostics if d.is_error]
        assert [d.code for d in errs] == ["FS401"], (p.name, [(d.code, d.message) for d in res.diagnostics])
        assert p.name in errs[0].message and errs[0].span.line == 7


@pytest.mark.parametrize("which", [("xgboost", "x_cycle.json"), ("xgboost", "x_child_out_of_range.json"),
                                   ("lightgbm", "l_tree_sizes_past_the_end.txt"), ("lightgbm", "l_truncated.txt"),
                                   ("lightgbm", "l_cycle.txt")])
def test_check_on_a_crashing_file_exits_2_naming_it(valid, tmp_path, which):
    fmt, name = which
    _bad_files(valid, tmp_path)
    spec = _spec(tmp_path, fmt, name)
    for cmd in ("lint", "check"):
        r = run_cli(cmd, spec, "--format", "json", cwd=tmp_path)
        assert r.returncode == 2, (cmd, r.returncode, r.stderr)
        doc = json.loads(r.stdout)
        assert name in json.dumps(doc), doc
        assert "internal error" not in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- a linear booster (session 27)

def _gblinear(tmp_path, objective, y, **params):
    xgb = pytest.importorskip("xgboost")
    X, _ = _data()
    b = xgb.train({"booster": "gblinear", "objective": objective, **params}, xgb.DMatrix(X, y), 2)
    p = tmp_path / f"lin_{objective.replace(':', '_')}.json"
    b.save_model(str(p))
    return p


def test_a_linear_booster_whose_weights_do_not_fit_is_refused_before_the_library_reads_it(valid, tmp_path):
    """XGBoost reads a gblinear model's weights without looking: none (a gbtree's model renamed gblinear)
    was a segmentation fault in check (exit -11, no report); too few or too many weights for num_feature,
    num_class, num_target read past the array (outputs of garbage: 1.0, NaN, 3e-39)."""
    from fairspec.models.treefile import check_xgboost

    X, y = _data()
    good = [_gblinear(tmp_path, "binary:logistic", y), _gblinear(tmp_path, "multi:softprob", y % 3, num_class=3),
            _gblinear(tmp_path, "reg:squarederror", np.column_stack([y, 1 - y]))]
    assert [check_xgboost(p) for p in good] == [3, 3, 3]            # the library's own files pass
    binary = json.loads(good[0].read_text())
    tree = json.loads((valid / "m.json").read_text())

    def mutant(name, doc, change):
        doc = json.loads(json.dumps(doc))
        change(doc["learner"])
        (tmp_path / name).write_text(json.dumps(doc))
        return tmp_path / name

    cases = {
        "renamed.json": (tree, lambda lr: lr["gradient_booster"].__setitem__("name", "gblinear")),
        "short.json": (binary, lambda lr: lr["gradient_booster"]["model"]["weights"].pop()),
        "long.json": (binary, lambda lr: lr["gradient_booster"]["model"]["weights"].append(0.5)),
        "wider.json": (binary, lambda lr: lr["learner_model_param"].__setitem__("num_feature", "40")),
        "classes.json": (binary, lambda lr: lr["learner_model_param"].__setitem__("num_class", "3")),
        "targets.json": (binary, lambda lr: lr["learner_model_param"].__setitem__("num_target", "3")),
        "text.json": (binary, lambda lr: lr["gradient_booster"]["model"].__setitem__("weights", "abc")),
    }
    for name, (doc, change) in cases.items():
        p = mutant(name, doc, change)
        with pytest.raises(ModelLoadError) as e:
            check_xgboost(p)
        assert name in str(e.value) and "weights" in str(e.value), str(e.value)
    spec = _spec(tmp_path, "xgboost", "renamed.json")
    for cmd in ("lint", "check"):                                    # the one that crashed the library
        r = run_cli(cmd, spec, "--format", "json", cwd=tmp_path)
        assert r.returncode == 2, (cmd, r.returncode, r.stderr)
        assert "renamed.json" in r.stdout and "Traceback" not in r.stderr


# ---------------------------------------------------------------- class 4: NaN and infinite weights

PEOPLE_SPEC = '''
data people = csv("people.csv", label = hired == "yes")
features P from people {
  age : int in [18, 80]
  sex : {F, M} protected
  race : {A, B, C} protected
  member : bool
  score : real in [0, 1]
}
model net = MODEL
encode P for net { age : standard  sex : onehot  race : code  member, score : raw }
property parity {
  statistical_parity(net, groups sex) <= 0.99
}
property same {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure label(net(x)) == label(net(x'))
}
'''


def _poisoned_onnx(tmp_path, value) -> str:
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    from conftest import FIXTURES

    m = onnx.load(str(FIXTURES / "models" / "people6.onnx"))
    init = m.graph.initializer[0]
    a = numpy_helper.to_array(init).copy()
    a.flat[0] = value
    init.CopyFrom(numpy_helper.from_array(a, init.name))
    name = f"poisoned_{'nan' if value != value else 'inf' if value > 0 else 'ninf'}.onnx"
    onnx.save(m, str(tmp_path / name))
    return name


def _people_project(tmp_path, model_decl: str):
    from conftest import FIXTURES

    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    spec = tmp_path / "s.fair"
    spec.write_text(PEOPLE_SPEC.replace("MODEL", model_decl))
    return spec


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_an_onnx_model_with_non_finite_weights_is_an_error_never_a_verdict(tmp_path, value):
    name = _poisoned_onnx(tmp_path, value)
    with pytest.raises(ModelLoadError) as e:
        load_model("onnx", tmp_path / name, output="logit")
    assert name in str(e.value) and ("NaN" in str(e.value) or "infinite" in str(e.value))
    spec = _people_project(tmp_path, f'onnx("{name}", output = "logit")')
    r = run_cli("check", spec, "--format", "json", cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    doc = json.loads(r.stdout)  # refused by lint (the weights read from the file) or by the loader
    said = (doc.get("error") or "") + " ".join(d["message"] for d in doc.get("diagnostics", []))
    assert name in said and not doc.get("properties"), doc


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_torch_model_with_a_nan_weight_is_an_error(tmp_path):
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    with torch.no_grad():
        net[2].bias[0] = float("nan")
    torch.jit.save(torch.jit.script(net), str(tmp_path / "nan.pt"))
    with pytest.raises(ModelLoadError) as e:
        load_model("torch", tmp_path / "nan.pt")
    assert "nan.pt" in str(e.value) and "NaN" in str(e.value)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_model_whose_output_is_not_finite_is_an_error_naming_it(tmp_path):
    """Finite weights, an output that overflows on some inputs: the evaluation says so, naming the file."""
    torch = pytest.importorskip("torch")

    class Exp(torch.nn.Module):
        def forward(self, x):
            return torch.exp(1000.0 * x.sum(dim=1, keepdim=True))

    torch.jit.save(torch.jit.script(Exp()), str(tmp_path / "exp.pt"))
    m = load_model("torch", tmp_path / "exp.pt")
    assert np.isfinite(m.score(np.zeros((2, 3)))).all()
    with pytest.raises(ModelLoadError) as e:
        m.score(np.ones((4, 3)))
    assert "exp.pt" in str(e.value) and "4 of 4" in str(e.value)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_infinite_and_nan_outputs_are_counted_apart(tmp_path):
    """x / 0 is +inf for a positive sum and NaN for 0 / 0: each is said as what it is (all were "NaN")."""
    torch = pytest.importorskip("torch")

    class Div(torch.nn.Module):
        def forward(self, x):
            return x.sum(dim=1, keepdim=True) / 0.0

    torch.jit.save(torch.jit.script(Div()), str(tmp_path / "div.pt"))
    m = load_model("torch", tmp_path / "div.pt")
    with pytest.raises(ModelLoadError) as e:
        m.score(np.array([[1.0, 2.0, 0.0]] * 3 + [[0.0, 0.0, 0.0]]))
    assert "div.pt" in str(e.value) and " is NaN on 1 and infinite on 3 of 4 inputs;" in str(e.value), str(e.value)
    with pytest.raises(ModelLoadError) as e:
        m.score(np.ones((2, 3)))
    assert " is infinite on 2 of 2 inputs;" in str(e.value) and "NaN on" not in str(e.value)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_torchscript_forward_that_raises_says_the_error_it_raised(tmp_path):
    """TorchScript's message begins "The following operation failed in the TorchScript interpreter" and
    ends with the error raised: the sentence keeps the error, one line."""
    torch = pytest.importorskip("torch")

    class Boom(torch.nn.Module):
        def forward(self, x):
            if x.sum() > -1.0e30:
                raise RuntimeError("boom in forward")
            return x

    torch.jit.save(torch.jit.script(Boom()), str(tmp_path / "boom.pt"))
    m = load_model("torch", tmp_path / "boom.pt")
    with pytest.raises(ModelLoadError) as e:
        m.score(np.zeros((2, 3)))
    msg = str(e.value)
    assert "boom.pt" in msg and msg.endswith("failed: RuntimeError: boom in forward"), msg
    assert "\n" not in msg and "TorchScript interpreter" not in msg


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_lint_reads_non_finite_onnx_weights_from_the_file(tmp_path, value):
    name = _poisoned_onnx(tmp_path, value)
    spec = _people_project(tmp_path, f'onnx("{name}", output = "logit")')
    res = lint(spec)
    errs = [d for d in res.diagnostics if d.is_error]
    assert [d.code for d in errs] == ["FS401"] and name in errs[0].message and "weights" in errs[0].message


def test_a_missing_external_data_file_is_named_by_lint_and_check(tmp_path):
    """An initializer whose values are in an external data file that is not there: the sentence names
    the initializer and the file (onnxruntime's was "the graph is not a model onnxruntime can run")."""
    onnx = pytest.importorskip("onnx")
    from conftest import FIXTURES

    m = onnx.load(str(FIXTURES / "models" / "people6.onnx"))
    onnx.save_model(m, str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.bin", size_threshold=0)
    spec = _people_project(tmp_path, 'onnx("ext.onnx", output = "logit")')
    assert not [d for d in lint(spec).diagnostics if d.is_error]      # the file is there: it loads
    load_model("onnx", tmp_path / "ext.onnx", output="logit")
    (tmp_path / "ext.bin").unlink()
    first = m.graph.initializer[0].name
    with pytest.raises(ModelLoadError) as e:
        load_model("onnx", tmp_path / "ext.onnx", output="logit")
    said = str(e.value)
    assert said.endswith(f"keeps the values of initializer {first!r} in the external data file "
                         f"{tmp_path / 'ext.bin'}, which does not exist"), said
    errs = [d for d in lint(spec).diagnostics if d.is_error]
    assert [d.code for d in errs] == ["FS401"] and errs[0].message == said


@pytest.mark.parametrize("mode", ["cycle", "self_loop", "child_out_of_range", "feature_beyond_width", "nan_leaf"])
def test_a_tampered_skops_tree_is_refused_before_scikit_learn_walks_it(tmp_path, mode):
    """scikit-learn walks a tree's node arrays unchecked: a cycle hangs predict, a child out of range
    crashes it, a feature beyond the width reads past the row. Such a .skops file is one sentence."""
    sio = pytest.importorskip("skops.io")
    from sklearn.tree import DecisionTreeClassifier

    X, y = _data()
    est = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    st = est.tree_.__getstate__()
    nodes = st["nodes"].copy()
    inner = [i for i in range(len(nodes)) if nodes["left_child"][i] != -1]
    a, b = inner[1], inner[2] if len(inner) > 2 else inner[1]
    if mode == "cycle":      # an inner node's child is an earlier inner node
        nodes["left_child"][b] = a
    elif mode == "self_loop":
        nodes["right_child"][a] = a
    elif mode == "child_out_of_range":
        nodes["left_child"][a] = 10_000
    elif mode == "feature_beyond_width":
        nodes["feature"][a] = 40
    else:
        st["values"] = st["values"].copy()
        st["values"][-1] = np.nan
    st["nodes"] = nodes
    est.tree_.__setstate__(st)
    sio.dump(est, tmp_path / "dt.skops")
    with pytest.raises(ModelLoadError) as e:
        load_model("sklearn", tmp_path / "dt.skops")
    assert "dt.skops" in str(e.value)


@pytest.mark.parametrize("stamp", ["ir_version", "opset"])
def test_an_onnx_file_newer_than_onnxruntime_says_what_is_too_new(tmp_path, stamp):
    """A file stamped with an IR version or an opset newer than the installed onnxruntime reads: the sentence
    names the file's number and the newest onnxruntime takes (read from onnxruntime, not a table of ours) and
    what to do (it was "the graph is not a model onnxruntime can run")."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from conftest import FIXTURES

    m = onnx.load(str(FIXTURES / "models" / "people6.onnx"))
    if stamp == "ir_version":
        m.ir_version = 99
    else:
        for o in m.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = 99
    onnx.save(m, str(tmp_path / "new.onnx"))
    with pytest.raises(ModelLoadError) as e:
        load_model("onnx", tmp_path / "new.onnx", output="logit")
    said = str(e.value)
    assert str(tmp_path / "new.onnx") in said and ort.__version__ in said, said
    if stamp == "ir_version":
        assert "its IR version is 99" in said and "IR version " in said and "at most" in said, said
    else:
        assert "opset 99 of domain ai.onnx" in said and "at most" in said, said
    assert "re-export it with a lower opset" in said and "upgrade onnxruntime" in said, said
