"""kinds/enum_unread: a declared feature the small-domain enumeration leaves out (the model does not read it, the
pair ties it, no pre-condition reads it) is named in the verdict (details.not_enumerated, the reason), where
before the reason's "N-point domain" was smaller than the spec's with nothing saying why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).parent))
from test_pre_relax import dyadic_net  # noqa: E402

DECLS = ("features F {\n  g : {A, B, C} protected\n  s : bool protected\n  a : int in [0, 9]\n  u : int in [0, 4]\n"
         "  w : bool\n  r : real in [0, 1]\n  n : int in [0, 100000]\n}\n"
         'model m = onnx("m.onnx", score = logit)\nencode F for m {\n  g : onehot\n  s : raw\n  a : raw\n}\n')


def _check(d, req, ensure="label(m(x)) == label(m(x'))"):
    from fairspec.pipeline import check

    (d / "p.fair").write_text(DECLS + "property p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n" + req +
                              f"  ensure {ensure}\n}}\n")
    (v,) = check(d / "p.fair").verdicts
    return v


@pytest.mark.parametrize("seed", [0, 1])
def test_the_features_the_enumeration_leaves_out_are_named(tmp_path, seed):
    dyadic_net(tmp_path / "m.onnx", seed)
    for ensure in ("label(m(x)) == label(m(x'))", "|prob(m(x)) - prob(m(x'))| <= 1"):
        v = _check(tmp_path, "", ensure)
        assert v.status in ("holds", "violated") and "60-point domain" in v.reason, v.reason
        assert v.details["not_enumerated"] == ["u", "w", "r", "n"]
        assert "the features u, w, r, n, which the model does not read and the pair ties, are not enumerated" \
            in v.reason and "the spec's is larger" in v.reason, v.reason
    v = _check(tmp_path, "  require x.u > 2\n")            # u enumerated: its 5 values, 300 points
    assert "300-point domain" in v.reason and v.details["not_enumerated"] == ["w", "r", "n"], v.reason
    v = _check(tmp_path, "  require x.u > 2 and x.w == true\n")
    assert "600-point domain" in v.reason and v.details["not_enumerated"] == ["r", "n"], v.reason
    v = _check(tmp_path, "  require x.u > 2 and x.r < 0.5 and x.n < 7\n")
    # decided on its relaxation (r, n dropped: the relaxed property's enumeration reads neither) and read back
    # against the whole pre-condition: only w is left out of the property's domain
    assert v.details["not_enumerated"] == ["w"], (v.reason, v.details)
    if "-point domain" in v.reason:
        assert "the feature w, which the model does not read and the pair ties, is not enumerated" in v.reason
        assert "(the spec's is 2 times as large)" in v.reason, v.reason


def test_a_tied_feature_the_model_reads_is_not_named(tmp_path):
    dyadic_net(tmp_path / "m.onnx", 0)
    (tmp_path / "p.fair").write_text(DECLS.replace("  u : int in [0, 4]\n  w : bool\n  r : real in [0, 1]\n"
                                                   "  n : int in [0, 100000]\n", "") +
                                     "property p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n"
                                     "  ensure label(m(x)) == label(m(x'))\n}\n")
    from fairspec.pipeline import check

    (v,) = check(tmp_path / "p.fair").verdicts
    assert "not_enumerated" not in (v.details or {}) and "not enumerated" not in v.reason, v.reason


TREE_DECLS = ("features F {\n  g : {A, B, C} protected\n  s : bool protected\n"
              "  a : int in [0, 9]\n  u : int in [0, 4]\n  w : bool\n  r : real in [0, 1]\n}\n"
              'model m = sklearn("m.skops")\nencode F for m {\n  g : onehot\n  s : raw\n  a : raw\n}\n')


@pytest.fixture(scope="module")
def forests(tmp_path_factory):
    """A binary forest and a three-class forest on (g one-hot, s, a): 60 domain points."""
    pytest.importorskip("skops")
    import numpy as np
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier
    from test_pre_relax import _X, _points

    X = np.vstack([_X(_points())] * 3).astype(np.float64)
    out = {}
    for k in (2, 3):
        y = np.random.default_rng(k).integers(0, k, size=X.shape[0])
        d = tmp_path_factory.mktemp(f"enum_unread_trees{k}")
        sio.dump(RandomForestClassifier(n_estimators=3, max_depth=3, random_state=k).fit(X, y), d / "m.skops")
        out[k] = d
    return out


def _tree(d, free, req, ensure):
    from fairspec.pipeline import check

    (d / "p.fair").write_text(TREE_DECLS + f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n"
                              + req + f"  ensure {ensure}\n}}\n")
    (v,) = check(d / "p.fair").verdicts
    return v


@pytest.mark.parametrize("k, ensure", [(2, "label(m(x)) == label(m(x'))"), (2, "|prob(m(x)) - prob(m(x'))| <= 0.5"),
                                       (3, "class(m(x)) == class(m(x'))"),
                                       (3, "forall c: |prob(m(x), c) - prob(m(x'), c)| <= 0.5")])
def test_a_tree_enumeration_names_the_features_it_leaves_out(forests, k, ensure):
    """kinds/tree_pairs (binary posts) and kinds/tree_outputs (class / prob(c) cells) enumerate the encoded
    features only: before, their verdict's 60-point domain said nothing of u, w, r (tied, unread)."""
    d = forests[k]
    v = _tree(d, "s", "", ensure)
    assert v.status in ("holds", "violated") and v.details.get("points") == 60, (v.reason, v.details)
    assert v.details["not_enumerated"] == ["u", "w", "r"], (v.reason, v.details)
    assert "the features u, w, r, which the model does not read and the pair ties, are not enumerated" in v.reason
    assert "the spec's is larger" in v.reason, v.reason
    v = _tree(d, "s", "  require |x.a - x'.a| <= 1\n", ensure)     # a relaxed a: still enumerated
    assert v.details.get("not_enumerated") == ["u", "w", "r"], (v.reason, v.details)
    v = _tree(d, "s", "  require x.a > 2\n", ensure)     # a pre-condition on a read feature: still enumerated
    assert v.details.get("not_enumerated") == ["u", "w", "r"], (v.reason, v.details)


def test_a_tree_enumeration_of_every_feature_names_none(forests):
    from fairspec.pipeline import check

    d = forests[2]
    decls = TREE_DECLS.replace(
        "  u : int in [0, 4]\n  w : bool\n  r : real in [0, 1]\n", "")
    (d / "q.fair").write_text(decls + "property p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n"
                              "  ensure label(m(x)) == label(m(x'))\n}\n")
    (v,) = check(d / "q.fair").verdicts
    assert v.status in ("holds", "violated") and "not_enumerated" not in (v.details or {}), v.reason
    assert "not enumerated" not in v.reason
