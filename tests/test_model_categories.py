"""A categorical model input (XGBoost 3.1+ ``cats``, LightGBM ``pandas_categorical``) is checked against
whatever the encode block feeds it, not only a ``code`` line (fairspec.sema.names.check_codes).

The library reads a number at such an input as a code, the position of a category in the list it was
fit on. A ``raw`` int feature is silent only when its values are the categories and their codes alike
(a model fit on 0, 1, 2); otherwise -- the values of categories the spec never names, read by position
-- it is FS420, as are real values, scaled values and one-hot columns there; a ``raw`` bool codes
false = 0, true = 1 and is checked as that code table. Lint and check agree (check stops, exit 2), and
the spec the hint writes gives the library's own value."""

from __future__ import annotations

import numpy as np
import pytest

import fairspec

pd = pytest.importorskip("pandas")

N = 600


def _fit(lib: str, frame, y, path):
    if lib == "xgboost":
        xgb = pytest.importorskip("xgboost")
        clf = xgb.XGBClassifier(n_estimators=3, max_depth=2, enable_categorical=True, n_jobs=1).fit(frame, y)
        clf.get_booster().save_model(str(path / "m.json"))
        return clf, 'xgboost("m.json")'
    lgb = pytest.importorskip("lightgbm")
    clf = lgb.LGBMClassifier(n_estimators=5, num_leaves=4, min_child_samples=5, verbose=-1, n_jobs=1).fit(frame, y)
    clf.booster_.save_model(str(path / "m.txt"))
    return clf, 'lightgbm("m.txt")'


SPEC = '''data d = csv("d.csv", label = y == 1)
features F from d {
  g : DOMAIN  protected
  f0 : int in [0, 3]
}
model m = MODEL
encode F for m {
  g : ENCODING
  f0 : raw
}
property q {
  statistical_parity(m, groups G) <= 0.3
  min_group_size = 1
}
'''


def _case(tmp_path, lib, values, categories):
    """A model fit on g (a pandas categorical with ``categories`` in that order) and f0; the data file."""
    rng = np.random.default_rng(0)
    g = rng.choice(values, N)
    f0 = np.where(g == values[-1], rng.integers(2, 4, N), rng.integers(0, 4, N))
    y = ((g == values[0]) | (f0 >= 2)).astype(int)
    frame = pd.DataFrame({"g": pd.Categorical(g, categories=categories), "f0": f0})
    clf, decl = _fit(lib, frame, y, tmp_path)
    pd.DataFrame({"g": g, "f0": f0, "y": y}).to_csv(tmp_path / "d.csv", index=False)
    pred = clf.predict(frame)
    rates = [pred[g == v].mean() for v in values]
    return decl, max(rates) - min(rates)


def _write(tmp_path, decl, domain, encoding, groups="g", extra=""):
    spec = tmp_path / "spec.fair"
    spec.write_text(SPEC.replace("MODEL", decl).replace("DOMAIN", domain).replace("ENCODING", encoding)
                    .replace("G", groups) + extra)
    return spec


def _errors(spec):
    """The model errors (FS4xx): a numeric feature over a column of names draws its own data error too
    (FS404 at the feature, lint's sentence for the text it samples), left out here."""
    return [(d.code, d.span.line, d.message, d.hint) for d in fairspec.lint(spec)
            if d.is_error and d.code.startswith("FS4") and d.code != "FS404"]


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_an_int_feature_read_as_codes_of_named_categories_is_fs420_and_the_hint_gives_the_models_value(tmp_path, lib):
    decl, truth = _case(tmp_path, lib, np.array(["A", "B", "C"]), ["B", "C", "A"])
    spec = _write(tmp_path, decl, "int in [0, 2]", "raw")
    ((code, line, message, hint),) = _errors(spec)
    assert (code, line) == ("FS420", 8)
    assert "reads input 0 as a category" in message and "0 would be read as the category B" in message, message
    assert hint == "declare 'g' with the categories the model was fit on, {B, C, A}, and encode it by their codes: " \
                   "g : code {B = 0, C = 1, A = 2}"
    assert fairspec.check(spec).exit_code == 2
    spec = _write(tmp_path, decl, "{A, B, C}", "code {B = 0, C = 1, A = 2}")   # what the hint says
    assert fairspec.lint(spec) == []
    assert fairspec.check(spec)["q"].value == pytest.approx(truth, abs=1e-12)


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_numbers_as_categories(tmp_path, lib):
    """Fit on the numbers 1, 2, 5: a raw int in [1, 5] would be read by position (1 as the category 2,
    5 as no category); declared {1, 2, 5} with the model's code table it is the library's value."""
    decl, truth = _case(tmp_path, lib, np.array([1, 2, 5]), [1, 2, 5])
    spec = _write(tmp_path, decl, "int in [1, 5]", "raw")
    ((code, line, message, hint),) = _errors(spec)
    assert (code, line) == ("FS420", 8) and "1 would be read as the category 2" in message, message
    assert hint.endswith("{1, 2, 5}, and encode it by their codes: g : code {1 = 0, 2 = 1, 5 = 2}"), hint
    assert fairspec.check(spec).exit_code == 2
    spec = _write(tmp_path, decl, "{1, 2, 5}", "code {1 = 0, 2 = 1, 5 = 2}")
    assert fairspec.lint(spec) == []
    assert fairspec.check(spec)["q"].value == pytest.approx(truth, abs=1e-12)


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_an_int_feature_whose_values_are_the_codes_is_silent_and_one_beyond_them_is_fs420(tmp_path, lib):
    decl, truth = _case(tmp_path, lib, np.array([0, 1, 2]), [0, 1, 2])
    one = "group one = g == 1\n"
    spec = _write(tmp_path, decl, "int in [0, 2]", "raw", groups="one", extra=one)
    assert fairspec.lint(spec) == []
    assert fairspec.check(spec)["q"].value is not None
    spec = _write(tmp_path, decl, "int in [0, 3]", "raw", groups="one", extra=one)
    ((code, line, message, _),) = _errors(spec)
    assert (code, line) == ("FS420", 8) and "3 is the code of no category" in message, message


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("domain,encoding,what", [("real in [0, 2]", "raw", "raw real values"),
                                                  ("int in [0, 2]", "minmax(lo = 0, hi = 2)", "values minmax scales"),
                                                  ("real in [0, 2]", "standard(mean = 1, std = 1)",
                                                   "values standard scales")])
def test_real_and_scaled_values_at_a_categorical_input_are_fs420(tmp_path, lib, domain, encoding, what):
    decl, _ = _case(tmp_path, lib, np.array(["A", "B", "C"]), ["B", "C", "A"])
    spec = _write(tmp_path, decl, domain, encoding, groups="f0")
    ((code, line, message, _),) = _errors(spec)
    assert (code, line) == ("FS420", 8) and f"feeds it the {what} of 'g'" in message, message
    assert fairspec.check(spec).exit_code == 2


def test_a_one_hot_block_at_a_categorical_input_is_fs420_and_a_wider_block_only_fs402(tmp_path):
    decl, _ = _case(tmp_path, "xgboost", np.array(["A", "B", "C"]), ["B", "C", "A"])
    spec = tmp_path / "spec.fair"          # a bool one-hot block spans the model's two inputs (g, f0)
    spec.write_text('features F {\n  member : bool protected\n}\nmodel m = ' + decl +
                    '\nencode F for m {\n  member : onehot\n}\n')
    ((code, line, message, _),) = _errors(spec)
    assert (code, line) == ("FS420", 6) and "one-hot encodes 'member' over inputs 0 .. 1" in message, message
    spec = _write(tmp_path, decl, "{A, B, C}", "onehot")            # 4 columns for 2 inputs
    assert [c for c, *_ in _errors(spec)] == ["FS402"]


@pytest.mark.parametrize("order,ok", [(["False", "True"], True), (["True", "False"], False)])
def test_a_raw_bool_is_checked_as_the_code_table_false_0_true_1(tmp_path, order, ok):
    """LightGBM fit on a bool categorical (XGBoost refuses one): recorded as false, true in the frame's
    category order; raw codes false = 0, true = 1."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    b = rng.integers(0, 2, N).astype(bool)
    f0 = rng.integers(0, 4, N)
    y = (b | (f0 >= 2)).astype(int)
    frame = pd.DataFrame({"g": pd.Categorical(b, categories=[c == "True" for c in order]), "f0": f0})
    clf = lgb.LGBMClassifier(n_estimators=5, num_leaves=4, min_child_samples=5, verbose=-1, n_jobs=1).fit(frame, y)
    clf.booster_.save_model(str(tmp_path / "m.txt"))
    pd.DataFrame({"g": b, "f0": f0, "y": y}).to_csv(tmp_path / "d.csv", index=False)
    spec = _write(tmp_path, 'lightgbm("m.txt")', "bool", "raw")
    if ok:
        assert fairspec.lint(spec) == []
        pred = clf.predict(frame)
        assert fairspec.check(spec)["q"].value == pytest.approx(abs(pred[b].mean() - pred[~b].mean()), abs=1e-12)
    else:
        ((code, line, _, hint),) = _errors(spec)
        assert (code, line, hint) == ("FS420", 8, 'write the model\'s codes: g : code {"true" = 0, "false" = 1}')
        assert fairspec.check(spec).exit_code == 2
        spec = _write(tmp_path, 'lightgbm("m.txt")', "bool", hint.split("g : ", 1)[1])    # what the hint says
        assert fairspec.lint(spec) == []
        pred = clf.predict(frame)
        assert fairspec.check(spec)["q"].value == pytest.approx(abs(pred[b].mean() - pred[~b].mean()), abs=1e-12)
