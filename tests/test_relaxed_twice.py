"""Two tolerance lines on one feature are both required: the pair must meet the tighter one.

A read-only review (session 30) found `require |x.a - x'.a| <= 0` followed by `require |x.a - x'.a| <= 5`
read as the last line alone by the solver lowering and the tree paths (`dict(prop.relaxed)`): a wrong
`violated` whose witness (a = 8 vs a' = 3) breaks the first line. sema now keeps one tolerance per
feature, the tighter (the strict one at an equal bound).
"""

from __future__ import annotations

import numpy as np
import pytest

from onnx_nets import mlp_model

DECLS = """features F {
  g : {A, B, C} protected
  a : int in [0, 9]
}
model m = onnx("lin.onnx", score = logit)
encode F for m {
  g : onehot
  a : raw
}
"""


def _prop(lines):
    req = "".join(f"  require {ln}\n" for ln in lines)
    return ("property p {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n" + req +
            "  ensure label(m(x)) == label(m(x'))\n}\n")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    import onnx

    d = tmp_path_factory.mktemp("lin")
    # logit = a - 7.5: the label never depends on g; pairs with a != a' across 7.5 break it
    m = mlp_model([(np.array([[0, 0, 0, 1]], dtype=np.float32), np.array([-7.5], dtype=np.float32), False)],
                  name="logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(d / "lin.onnx"))
    return d


@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
@pytest.mark.parametrize("lines,status", [
    (["|x.a - x'.a| <= 0", "|x.a - x'.a| <= 5"], "holds"),
    (["|x.a - x'.a| <= 5", "|x.a - x'.a| <= 0"], "holds"),
    (["|x.a - x'.a| <= 1", "|x.a - x'.a| < 1"], "holds"),     # equal bounds: the strict one (a == a')
    (["|x.a - x'.a| < 1", "|x.a - x'.a| <= 1"], "holds"),
    (["|x.a - x'.a| <= 5", "|x.a - x'.a| <= 1"], "violated"),  # a = 7 vs a' = 8 meets both and flips
])
def test_the_tighter_tolerance_is_what_the_pair_meets(folder, monkeypatch, enumerate_pairs, lines, status):
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    (folder / "s.fair").write_text(DECLS + _prop(lines))
    (v,) = check(folder / "s.fair").verdicts
    assert v.status == status, (lines, v.reason)
    if status == "holds":
        assert v.how == "proved"
    else:
        a, b = v.witness.features["a"], v.witness.features_prime["a"]
        assert abs(a - b) <= 1 and (a > 7.5) != (b > 7.5)


def test_one_tolerance_per_feature_in_the_ir(folder):
    from fairspec.pipeline import lint

    (folder / "t.fair").write_text(DECLS + _prop(["|x.a - x'.a| <= 2", "|x.a - x'.a| < 2", "|x.a - x'.a| <= 3"]))
    (prop,) = lint(folder / "t.fair").spec.properties
    assert prop.relaxed == (("a", 2.0),) and prop.relaxed_strict == ("a",)
