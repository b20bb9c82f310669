"""XGBoost and LightGBM models that split by category (a pandas categorical column): on an input whose
declared values are whole numbers (here a category's code) the splits are rewritten as thresholds and
the solver paths decide them as the enumeration on the library does (session 23); on any other input
they stay unknown, and say so in one sentence naming the model file, the tree and the input: the same
sentence lint gives as warning FS506 at the property (tests/test_tree_categorical_rewrite.py; a model
fit on a data frame refuses such an input at lint already, FS420)."""

from __future__ import annotations

import numpy as np
import pytest

import fairspec

pd = pytest.importorskip("pandas")

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {a, b, c}
  f0 : int in [0, 3]
  s : int in [0, 1]  protected
}
model m = MODEL
encode F for m {
  g : code
  f0 : raw
  s : raw
}
property same {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
  using milp
}
"""


def _files(tmp_path, lib):
    rng = np.random.default_rng(0)
    n = 600
    g, f0, s = rng.choice(["a", "b", "c"], n), rng.integers(0, 4, n), rng.integers(0, 2, n)
    y = ((g == "a") | ((f0 >= 2) ^ (s == 1))).astype(int)
    frame = pd.DataFrame({"g": pd.Categorical(g, categories=["a", "b", "c"]), "f0": f0, "s": s})
    if lib == "xgboost":
        xgb = pytest.importorskip("xgboost")
        xgb.XGBClassifier(n_estimators=3, max_depth=2, enable_categorical=True, n_jobs=1).fit(frame, y) \
            .get_booster().save_model(str(tmp_path / "m.json"))
        decl = 'xgboost("m.json")'
    else:
        lgb = pytest.importorskip("lightgbm")
        lgb.LGBMClassifier(n_estimators=5, num_leaves=4, min_child_samples=5, min_data_per_group=5, cat_smooth=1,
                           verbose=-1, n_jobs=1).fit(frame, y).booster_.save_model(str(tmp_path / "m.txt"))
        decl = 'lightgbm("m.txt")'
    pd.DataFrame({"g": g, "f0": f0, "s": s, "y": y}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.fair").write_text(SPEC.replace("MODEL", decl))
    return tmp_path / "s.fair", decl.split('"')[1]


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_a_categorical_split_on_a_category_code_is_decided_as_the_library_decides_it(tmp_path, monkeypatch, lib):
    spec, _ = _files(tmp_path, lib)
    by_library = fairspec.check(spec).report.verdicts[0]         # a small domain: enumerated on the library
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")          # the solver path, as on a large domain
    run = fairspec.check(spec)
    assert not [d for d in run.diagnostics if d.code == "FS506"]
    v = run.report.verdicts[0]
    assert by_library.status in ("holds", "violated") and v.status == by_library.status, (v.reason, by_library.reason)
    assert v.how == by_library.how
