"""A violated multiclass / regression group metric's reason names the groups its value comes from,
as a binary metric's names its lowest and highest rate: the lowest and highest group of a
difference or ratio between groups, the group of the largest loss, the two groups whose predicted
class distributions are farthest apart. Checked against the per-group means computed here."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fairspec import pipeline
from onnx_nets import gemm_onnx

ort = pytest.importorskip("onnxruntime")
N = 400

HEAD = """\
data d = csv("d.csv", target = y)
data r = csv("d.csv", target = v)
features F from d {
  a : int in [0, 3]
  sex : {F, M} protected
  race : {A, B, C} protected
}
features FR from r {
  a : int in [0, 3]
  sex : {F, M} protected
  race : {A, B, C} protected
}
model grade = onnx("grade.onnx")
encode F for grade { a : raw  sex, race : onehot }
model salary = onnx("salary.onnx", score = value)
encode FR for salary { a : raw  sex, race : onehot }
"""

PROPS = {
    "diff": "mean_prediction_difference(salary, groups race) <= 0",
    "mae": "mean_absolute_error_difference(salary, groups race) <= 0",
    "ratio": "mean_prediction_ratio(salary, groups race) >= 1",
    "loss": "bounded_group_loss(salary, groups race) <= 0",
    "tv": "class_distribution_distance(grade, groups race) <= 0",
    "ks": "ks_distance(salary, groups race) <= 0",
    "meo": "multiclass_equalized_odds(grade, groups race) <= 0",
    "overall": "mean_prediction_difference(salary, groups race) <= 0   compare = to_overall",
}


def _positive_regression(path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    W = np.abs(np.random.default_rng(4).normal(size=(1, 6))).astype(np.float32)
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["y"], transB=1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(np.ones(1, np.float32), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("worst")
    gemm_onnx(folder / "grade.onnx", 3, 6, "logits", 3)
    _positive_regression(folder / "salary.onnx")       # predictions > 0: mean_prediction_ratio is defined
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, N)
    sex = np.array(["F", "M"])[rng.integers(0, 2, N)]
    race = np.array(["A", "B", "C"])[rng.integers(0, 3, N)]
    y = rng.integers(0, 3, N)
    v = np.round(rng.normal(size=N), 3) + 5.0
    (folder / "d.csv").write_text("a,sex,race,y,v\n" + "".join(f"{a[i]},{sex[i]},{race[i]},{y[i]},{v[i]}\n"
                                                              for i in range(N)))
    (folder / "s.fair").write_text(HEAD + "".join(f"property {k} {{ {c}   bootstrap = 20 }}\n"
                                                  for k, c in PROPS.items()))
    rep = pipeline.check(folder / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    X = np.stack([a, sex == "F", sex == "M", race == "A", race == "B", race == "C"], axis=1).astype(np.float32)
    cls = np.argmax(ort.InferenceSession(str(folder / "grade.onnx"), providers=["CPUExecutionProvider"]).run(
        ["logits"], {"x": X})[0], axis=1)
    val = ort.InferenceSession(str(folder / "salary.onnx"), providers=["CPUExecutionProvider"]).run(
        ["y"], {"x": X})[0][:, 0].astype(np.float64)
    return {x.name: x for x in rep.verdicts}, race, cls, val, v, y


def _by_race(q, race):
    return {f"race={r}": float(np.mean(q[race == r])) for r in "ABC"}


def _low_high(reason):
    m = re.search(r"; lowest (\S+) \(([-\d.]+)\), highest (\S+) \(([-\d.]+)\)$", reason)
    assert m, reason
    return m.group(1), float(m.group(2)), m.group(3), float(m.group(4))


@pytest.mark.parametrize("name, quantity", [("diff", "pred"), ("ratio", "pred"), ("mae", "abs_error")])
def test_difference_and_ratio_name_the_lowest_and_highest_group(run, name, quantity):
    verdicts, race, _, val, v, _ = run
    vd = verdicts[name]
    assert vd.status == "violated", vd
    per = _by_race(val if quantity == "pred" else np.abs(val - v), race)
    lo, lv, hi, hv = _low_high(vd.reason)
    assert lo == min(per, key=per.get) and hi == max(per, key=per.get)
    assert abs(lv - per[lo]) < 5e-4 and abs(hv - per[hi]) < 5e-4


def test_bounded_group_loss_names_the_group_of_the_largest_loss(run):
    verdicts, race, _, val, v, _ = run
    vd = verdicts["loss"]
    assert vd.status == "violated", vd
    per = _by_race((val - v) ** 2, race)
    m = re.search(r"; highest (\S+) \(([-\d.]+)\)$", vd.reason)
    assert m and m.group(1) == max(per, key=per.get) and abs(float(m.group(2)) - max(per.values())) < 5e-4


def test_class_distribution_distance_names_the_farthest_pair(run):
    verdicts, race, cls, _, _, _ = run
    vd = verdicts["tv"]
    assert vd.status == "violated", vd
    shares = {f"race={r}": np.array([np.mean(cls[race == r] == k) for k in range(3)]) for r in "ABC"}
    pairs = {(p, q): float(np.abs(shares[p] - shares[q]).sum() / 2) for p in shares for q in shares if p < q}
    best = max(pairs, key=pairs.get)
    m = re.search(r"; farthest apart (\S+) and (\S+) \(([\d.]+)\)$", vd.reason)
    assert m and (m.group(1), m.group(2)) == best and abs(float(m.group(3)) - pairs[best]) < 5e-4
    assert abs(float(m.group(3)) - vd.value) < 5e-4


def test_against_all_rows_no_pair_is_named(run):
    vd = run[0]["overall"]
    assert vd.status == "violated" and "lowest" not in vd.reason, vd


def test_ks_distance_names_the_pair_of_farthest_ecdfs(run):
    from scipy.stats import ks_2samp

    verdicts, race, _, val, _, _ = run
    vd = verdicts["ks"]
    assert vd.status == "violated", vd
    pairs = {(f"race={p}", f"race={q}"): ks_2samp(val[race == p], val[race == q]).statistic
             for p in "ABC" for q in "ABC" if p < q}
    best = max(pairs, key=pairs.get)
    m = re.search(r"; farthest apart (\S+) and (\S+) \(([\d.]+)\)$", vd.reason)
    assert m and (m.group(1), m.group(2)) == best and abs(float(m.group(3)) - vd.value) < 5e-4


def test_multiclass_equalized_odds_names_the_class_rate_and_groups(run):
    verdicts, race, cls, _, _, _ = run
    vd = verdicts["meo"]
    assert vd.status == "violated", vd
    m = re.search(r"; class (\d) (TPR|FPR): lowest (\S+) \(([\d.]+)\), highest (\S+) \(([\d.]+)\)$", vd.reason)
    assert m, vd.reason
    c, rate = int(m.group(1)), m.group(2)
    truth = run[5]
    per = {}
    for r in "ABC":
        s = race == r
        on = truth[s] == c if rate == "TPR" else truth[s] != c
        per[f"race={r}"] = float(np.mean(cls[s][on] == c))
    assert m.group(3) == min(per, key=per.get) and m.group(5) == max(per, key=per.get)
    assert abs(float(m.group(6)) - float(m.group(4)) - vd.value) < 5e-4
