"""An XGBoost model file is read once per lint run, and JSON and UBJSON get the same checks.

Lint asks an XGBoost file five things (its trees and width, the input names, the categories, the
rounds, the objective); each used to parse the whole file, and the names peek read JSON only, so a
UBJSON model fit on a data frame -- which the loader evaluates under its recorded names -- got no
FS420/FS421 and an encode block in another order was evaluated on swapped columns. Now
fairspec.models.treefile.read_xgboost parses a file once in a run (fairspec.filecache.per_run) and
every look-up reads that document, UBJSON's names included (the reader is exact: the same names
xgboost reads, checked here against the library)."""

from __future__ import annotations

import pathlib
from itertools import product

import numpy as np
import pytest

from fairspec.models import load_model
from fairspec.models.peek import peek_input_categories, peek_input_names

pd = pytest.importorskip("pandas")
xgb = pytest.importorskip("xgboost")

FORMATS = ["json", "ubj"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """m_names.*: fit on a frame (names a, s, b); m_plain.*: fit on an array (no names);
    m_cats.*: fit on a frame with a categorical column g whose categories are B, C, A."""
    d = tmp_path_factory.mktemp("xgbfiles")
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"a": rng.integers(0, 10, n), "s": rng.integers(0, 2, n), "b": rng.integers(0, 5, n)}).astype(float)
    y = ((df.a + 4 * df.s + rng.normal(0, 2, n)) > 6).astype(int)
    named = xgb.XGBClassifier(n_estimators=8, max_depth=3, random_state=0, n_jobs=1).fit(df, y).get_booster()
    plain = xgb.XGBClassifier(n_estimators=8, max_depth=3, random_state=0, n_jobs=1).fit(df.values, y).get_booster()
    g = rng.choice(["A", "B", "C"], n)
    f0 = rng.integers(0, 4, n)
    frame = pd.DataFrame({"g": pd.Categorical(g, categories=["B", "C", "A"]), "f0": f0})
    cats = xgb.XGBClassifier(n_estimators=3, max_depth=2, enable_categorical=True, n_jobs=1) \
        .fit(frame, ((g == "B") | (f0 >= 2)).astype(int)).get_booster()
    for ext in FORMATS:
        named.save_model(str(d / f"m_names.{ext}"))
        plain.save_model(str(d / f"m_plain.{ext}"))
        cats.save_model(str(d / f"m_cats.{ext}"))
    assert (d / "m_names.ubj").read_bytes()[:1] == b"{" and (d / "m_names.ubj").read_bytes()[1:2] != b'"'
    return d


@pytest.mark.parametrize("ext", FORMATS)
def test_names_and_categories_are_read_from_json_and_ubjson_as_xgboost_reads_them(files, ext):
    assert peek_input_names("xgboost", files / f"m_names.{ext}") == ("a", "s", "b")
    assert load_model("xgboost", files / f"m_names.{ext}").input_names == ("a", "s", "b")
    assert peek_input_names("xgboost", files / f"m_plain.{ext}") is None
    assert load_model("xgboost", files / f"m_plain.{ext}").input_names is None
    assert peek_input_categories("xgboost", files / f"m_plain.{ext}") is None
    assert peek_input_names("xgboost", files / f"m_cats.{ext}") == ("g", "f0")
    assert peek_input_categories("xgboost", files / f"m_cats.{ext}") == {0: ("B", "C", "A")}


SPEC = '''
features P {
  a : int in [0, 9]
  b : int in [0, 4]
  s : {F, M} protected
}
model m = xgboost("FILE")
encode P for m {
ENCODE
}
property same {
  forall x, x' : P
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
}
'''


def _spec(tmp_path: pathlib.Path, files, name: str, encode: str) -> pathlib.Path:
    (tmp_path / name).write_bytes((files / name).read_bytes())
    (tmp_path / "fairspec.toml").write_text("")
    p = tmp_path / "s.fair"
    p.write_text(SPEC.replace("FILE", name).replace("ENCODE", encode))
    return p


def _codes(spec):
    import fairspec

    return [(d.code, d.span.line) for d in fairspec.lint(spec) if d.code.startswith("FS42")]


@pytest.mark.parametrize("ext", FORMATS)
def test_a_block_in_another_order_is_mapped_by_name_for_json_and_ubjson(files, tmp_path, ext):
    """Before, the UBJSON file said nothing and check fed b's values to the model's s input (2 of 40
    cell pairs violated, a witness x = [7, 0, 1] with s = M); now both formats warn FS421 at b's line
    and check's verdict is brute force's on the model's own columns."""
    from fairspec.pipeline import check

    spec = _spec(tmp_path, files, f"m_names.{ext}", "  a : raw\n  b : raw\n  s : code")
    assert _codes(spec) == [("FS421", 10)]
    m = load_model("xgboost", files / f"m_names.{ext}")
    lab = m.decide(np.array(list(product(range(10), range(2), range(5))), dtype=float)).reshape(10, 2, 5)
    unfair = bool(np.any(lab[:, 0, :] != lab[:, 1, :]))
    (v,) = check(spec).verdicts
    assert v.status == ("violated" if unfair else "holds"), v.reason
    if unfair:                                   # the witness, read in the model's order, flips the model
        w = v.witness.features, v.witness.features_prime
        rows = np.array([[f["a"], float(f["s"] == "M"), f["b"]] for f in w], dtype=float)
        assert sorted(m.decide(rows).tolist()) == [0, 1]


@pytest.mark.parametrize("ext", FORMATS)
def test_a_name_the_model_does_not_record_is_fs420_and_check_stops(files, tmp_path, ext):
    from fairspec.pipeline import check

    spec = _spec(tmp_path, files, f"m_names.{ext}", "  a : raw\n  s : code\n  c : raw")
    spec.write_text(spec.read_text().replace("  b : int", "  c : int"))
    assert _codes(spec) == [("FS420", 11)]
    assert check(spec).exit_code == 2


@pytest.mark.parametrize("ext", FORMATS)
def test_a_model_fit_on_an_array_says_nothing_in_either_format(files, tmp_path, ext):
    spec = _spec(tmp_path, files, f"m_plain.{ext}", "  a : raw\n  b : raw\n  s : code")
    assert _codes(spec) == []


@pytest.mark.parametrize("ext", FORMATS)
def test_a_code_table_against_the_recorded_categories_in_either_format(files, tmp_path, ext):
    (tmp_path / f"m.{ext}").write_bytes((files / f"m_cats.{ext}").read_bytes())
    spec = tmp_path / "s.fair"
    text = f'features P {{\n  g : {{A, B, C}} protected\n  f0 : int in [0, 3]\n}}\nmodel m = xgboost("m.{ext}")\n' \
           'encode P for m {\n  g : CODE\n  f0 : raw\n}\n'
    spec.write_text(text.replace("CODE", "code"))
    assert _codes(spec) == [("FS420", 7)]
    spec.write_text(text.replace("CODE", "code {B = 0, C = 1, A = 2}"))
    assert _codes(spec) == []


@pytest.mark.parametrize("ext", FORMATS)
def test_lint_reads_an_xgboost_file_once(files, tmp_path, ext, monkeypatch):
    """One read of the file per lint run for its five look-ups (before: five parses), and again in
    the next run; a damaged file too is read once and gives its one sentence."""
    import fairspec

    spec = _spec(tmp_path, files, f"m_cats.{ext}", "  a : raw\n  b : raw\n  s : code")
    target = (tmp_path / f"m_cats.{ext}").resolve()
    reads = []
    real = pathlib.Path.read_bytes

    def counting(self):
        if self.resolve() == target:
            reads.append(self)
        return real(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", counting)
    fairspec.lint(spec)
    assert len(reads) == 1
    fairspec.lint(spec)
    assert len(reads) == 2
    target.write_bytes(real(target)[: len(real(target)) // 2])       # cut in half
    diags = [d for d in fairspec.lint(spec) if d.is_error]
    assert len(reads) == 3
    assert [d.code for d in diags] == ["FS401"] and "is not a valid XGBoost model file" in diags[0].message
