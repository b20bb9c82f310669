"""Session 35 audit (h2, round 2): the encode block -- declared feature values to the model's inputs
(fairspec/runtime/encoding.py, sema/check_features.py, sema/names.py) -- compared with brute force on the
model's own runtime fed exactly those inputs."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("skops")
pd = pytest.importorskip("pandas")

IF_SPEC = """features F {{
  a : int in [0, 3]
  g : {{A, B}} protected
}}
model m = sklearn("{file}"{trust})
encode F for m {{ a : raw  g : code {{A = 0, B = 1}} }}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
}}
"""


def _named_lr(columns, coef):
    """A LogisticRegression fit on a data frame with ``columns`` (a 0/1 column, then an int column), its
    coefficients set: label = coef . x > 0.5 (the intercept -0.5)."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = pd.DataFrame({columns[0]: rng.integers(0, 2, 60).astype(float),
                      columns[1]: rng.integers(0, 4, 60).astype(float)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression().fit(X, np.arange(60) % 2)
    m.coef_, m.intercept_ = np.array([coef]), np.array([-0.5])
    return m


@pytest.mark.parametrize("columns", [("G", "A"), ("G", "a")])
def test_input_names_differing_in_case_are_read_by_name(tmp_path, columns):
    """A model fit on a frame whose columns are the features' names in another case ("G", "A" for g, a) and
    in another order than the block's: its label reads the first input (G) only, so changing g changes it --
    violated. The block named none of the names exactly, so its columns were fed in the block's order (a into
    G): the label read a, and individual fairness `holds` with only FS421 said. ("G", "a": FS420, an error.)
    Now a name equal up to case is that input (FS421 says so) and the verdict is the runtime's. Failed before
    the fix (holds; an FS420 error)."""
    import skops.io as sio

    from fairspec import api

    sio.dump(_named_lr(columns, [1.0, 0.0]), tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(IF_SPEC.format(file="m.skops", trust=""))
    rep = api.check(str(tmp_path / "s.fair"))
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    (p,) = rep.to_dict()["properties"]
    assert p["status"] == "violated", p
    assert any(d.code == "FS421" and "differing in case" in d.message for d in rep.diagnostics)


@pytest.mark.parametrize("coef", [[1.0, 0.0], [0.0, 1.0]])
def test_pickle_names_in_another_order_are_refused(tmp_path, coef):
    """A pickled model fit on a frame (g, a) -- lint reads no pickle's names -- under a block listing a, g was fed
    a into g's input: for coef [1, 0] (the label reads g only: violated) fairspec said `holds`, the load entry
    claiming "input_order": "names". Check now matches the names it reads on loading: another order is FS420
    (too late to remap the block), never an evaluation on swapped columns. Failed before the fix (holds)."""
    from fairspec import api

    with open(tmp_path / "m.pkl", "wb") as fh:
        pickle.dump(_named_lr(("g", "a"), coef), fh)
    (tmp_path / "s.fair").write_text(IF_SPEC.format(file="m.pkl", trust=", trust pickle"))
    rep = api.check(str(tmp_path / "s.fair"))
    errors = [d for d in rep.diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == ["FS420"], rep.diagnostics
    assert "g, a" in errors[0].message and errors[0].span is not None
    assert not [p for p in rep.to_dict()["properties"] if p.get("status") in ("holds", "violated")]


def test_pickle_names_in_the_block_order_are_checked_silently(tmp_path):
    """The same pickle under a block in its own order (g, a) is decided: violated (the label reads g)."""
    from fairspec import api

    with open(tmp_path / "m.pkl", "wb") as fh:
        pickle.dump(_named_lr(("g", "a"), [1.0, 0.0]), fh)
    spec = IF_SPEC.format(file="m.pkl", trust=", trust pickle").replace(
        "a : raw  g : code {A = 0, B = 1}", "g : code {A = 0, B = 1}  a : raw")
    (tmp_path / "s.fair").write_text(spec)
    rep = api.check(str(tmp_path / "s.fair"))
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    (p,) = rep.to_dict()["properties"]
    assert p["status"] == "violated", p
