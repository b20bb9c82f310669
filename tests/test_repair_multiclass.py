"""Repair stays binary (issue 25 item 5): a multiclass or regression tree model is refused with
FS506 at lint when the file says its kind (skops, a pickled regressor, XGBoost/LightGBM
objectives), and with an unknown verdict naming the reason when only loading tells (a pickled
multiclass forest) -- never a crash."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("skops")

ROOT = Path(__file__).resolve().parents[1]
GERMAN = ROOT / "examples" / "german"
REPAIR = """
repair fix for grades {
  goal passing_rate_ratio(groups sex) >= 0.8
  write "fixed.skops"
}
"""


def _spec(tmp_path, decl: str) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    shutil.copy(GERMAN / "data" / "german.csv", tmp_path / "data" / "german.csv")
    text = (GERMAN / "grades.fair").read_text().split("# The forest reads")[0]
    enc = "encode Applicant for grades {\n" + "\n".join(
        f"  {f} : {'raw' if f in ('duration', 'amount', 'age') else 'code'}"
        for f in ("checking", "duration", "history", "amount", "savings", "employment", "age", "sex", "housing")) + "\n}\n"
    text = text.replace('model grades = sklearn("models/grades.skops")', f"model grades = {decl}") + enc + REPAIR
    p = tmp_path / "t.fair"
    p.write_text(text)
    return p


def _forest():
    import skops.io as sio

    path = GERMAN / "models" / "grades.skops"
    return sio.load(path, trusted=sio.get_untrusted_types(file=path))


def _codes(rep):
    return [d.code for d in rep.diagnostics if d.severity == "error"]


def test_multiclass_and_regression_files_are_refused_at_lint(tmp_path):
    import skops.io as sio
    from sklearn.tree import DecisionTreeRegressor

    from fairspec.pipeline import check

    shutil.copy(GERMAN / "models" / "grades.skops", tmp_path / "grades.skops")
    rep = check(str(_spec(tmp_path, 'sklearn("grades.skops")')))
    assert "FS506" in _codes(rep) and rep.exit_code == 2
    X = np.random.default_rng(0).random((40, 9))
    sio.dump(DecisionTreeRegressor(max_depth=2).fit(X, X[:, 0]), tmp_path / "reg.skops")
    rep = check(str(_spec(tmp_path, 'sklearn("reg.skops")')))
    assert "FS506" in _codes(rep)


def test_boosters_of_several_classes_are_refused_at_lint(tmp_path):
    xgb = pytest.importorskip("xgboost")
    from fairspec.pipeline import check

    X = np.random.default_rng(1).integers(0, 4, size=(60, 9)).astype(float)
    b = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1},
                  xgb.DMatrix(X, label=np.arange(60) % 3), 2)
    b.save_model(str(tmp_path / "m.json"))
    rep = check(str(_spec(tmp_path, 'xgboost("m.json")')))
    assert "FS506" in _codes(rep) or "FS414" in _codes(rep)


def test_a_pickled_multiclass_forest_is_unknown_with_the_reason(tmp_path):
    from fairspec.pipeline import check

    with open(tmp_path / "grades.pkl", "wb") as fh:
        pickle.dump(_forest(), fh)
    rep = check(str(_spec(tmp_path, 'sklearn("grades.pkl", trust pickle)')))
    assert not rep.has_errors, rep.diagnostics
    v = rep.verdicts[0]
    assert v.status == "unknown" and "binary" in v.reason and "3 classes" in v.reason
    assert not (tmp_path / "fixed.skops").exists()
