"""Every property kind against every model kind (issue 10, item 7): each cell is run or is a
diagnostic (lint) or an `unknown` with its reason, never an internal error.

Models over the same six features of tests/fixtures/data/people.csv: an ONNX ReLU network, a
TorchScript network, scikit-learn logistic regression (trusted pickle), MLP, decision tree and
random forest (skops), and a rule. Budgets are small (a cell may well end `unknown`): the test is
about not crashing, the backends' own tests are about their answers.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import FIXTURES, people_decls
from fairspec.pipeline import check

PEOPLE = FIXTURES / "data" / "people.csv"

BASE = "\n" + people_decls(PEOPLE, "P") + """\
distribution bn = bayes(people, max_parents = 1, bins = 2)
"""

ENCODE = "encode P for m {{ age : minmax(lo = 18, hi = 80)  sex : onehot  race : code  member, score : raw }}"

KINDS = {
    "group_metric_data": "property c { statistical_parity(m, groups sex) <= 0.9  min_group_size = 1 }",
    "group_metric_distribution": "property c { statistical_parity(m, groups sex, distribution = bn) <= 0.9  timeout = 20s }",
    "individual_default": ("property c { forall x, x' : P  require x.* == x'.* except {sex}\n"
                           "  ensure label(m(x)) == label(m(x'))  timeout = 10s }"),
    "individual_milp": ("property c { forall x, x' : P  require x.* == x'.* except {sex}\n"
                        "  ensure label(m(x)) == label(m(x'))  using milp  timeout = 10s }"),
    "individual_smt": ("property c { forall x, x' : P  require x.* == x'.* except {sex}\n"
                       "  ensure label(m(x)) == label(m(x'))  using smt  timeout = 10s }"),
    "individual_prob": ("property c { forall x, x' : P  require x.* == x'.* except {sex}\n"
                        "  ensure |prob(m(x)) - prob(m(x'))| <= 0.1  timeout = 10s }"),
    "k_discrimination": "property c { k_discrimination(m, over {race, sex}, eps = 0.05) < 3  search annealing for 3s }",
    "pba": "property c { pba(m, flip sex, around people, delta {age: 2}) >= 0.5  points = 20  timeout = 20s }",
    "repair": ("repair c for m {\n  goal passing_rate_ratio(m, groups sex) >= 0.8\n"
               "  timeout = 20s\n}"),
}


def _train(tmp_path_factory):
    """The model files (trained once on the fixture's rows; small and deterministic)."""
    d = tmp_path_factory.mktemp("models")
    import csv

    rows = list(csv.DictReader(PEOPLE.open()))
    X = np.array([[(float(r["age"]) - 18) / 62, r["sex"] == "F", r["sex"] == "M", "ABC".index(r["race"]),
                   r["member"] == "true", float(r["score"])] for r in rows], dtype=np.float64)
    y = np.array([r["hired"] == "yes" for r in rows], dtype=int)
    files = {}
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier
    import skops.io as sio

    for name, est in (("mlp", MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0)),
                      ("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
                      ("forest", RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0))):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        sio.dump(est, d / f"{name}.skops")
        files[name] = f'sklearn("{d / (name + ".skops")}")'
    try:
        import torch

        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        torch.jit.save(torch.jit.script(net), str(d / "net.pt"))
        files["torch"] = f'torch("{d / "net.pt"}")'
    except ImportError:  # pragma: no cover
        pass
    files["onnx"] = f'onnx("{FIXTURES / "models" / "people6.onnx"}", output = "logit")'
    files["lr"] = f'sklearn("{FIXTURES / "models" / "people6.pkl"}", trust pickle, score = prob)'
    return files, d


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return _train(tmp_path_factory)


MODEL_KINDS = ["onnx", "torch", "lr", "mlp", "tree", "forest", "rule"]


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("model", MODEL_KINDS)
def test_every_kind_on_every_model_runs_or_is_a_diagnostic(tmp_path, models, monkeypatch, model, kind):
    files, folder = models
    monkeypatch.setenv("FAIRSPEC_ALLOW_PATH", f"{FIXTURES.parents[1]}:{folder}")
    if model == "rule":
        decl = "model m = rule(member and score >= 0.5)\n"
    else:
        if model not in files:
            pytest.skip(f"{model} is not installed")
        decl = f"model m = {files[model]}\n" + ENCODE + "\n"
    spec = tmp_path / "cell.fair"
    spec.write_text(BASE + decl + KINDS[kind] + "\n")
    rep = check(spec)
    assert not rep.internal_errors, rep.internal_errors
    if rep.has_errors:  # refused by lint: a diagnostic at a span, or one sentence naming a file
        assert rep.error or all(d.span is not None for d in rep.diagnostics if d.is_error)
        return
    (v,) = rep.verdicts
    assert v.status in ("holds", "violated", "unknown")
    if v.status == "unknown":
        assert v.reason and "internal error" not in v.reason, v.reason
    if v.status == "violated" and v.witness is not None:
        assert v.witness.features != v.witness.features_prime
